// SPDX-License-Identifier: GPL-2.0
/*
 * fleet-sim: a simulated fleet for bench/fleet. Each of N hosts has a key
 * and a host certificate of its own (issued here by the fleet CA, as
 * enrollment would), its own source address (127.x.y.z, so kmemd's
 * per-address limits see a fleet, not one client), one keep-alive TLS
 * connection, and reports on its interval through the real report path:
 * facts that vary by host (kernel, CPUs, role, zone), the five
 * mitigations, six probe histograms, counters. What kmemd's reply says to
 * run, the host runs and reports from then on (the bundle's signature is
 * not checked: this is a simulator, not an agent); a reply that says the
 * fleet is stopped turns its mitigations off there, as an agent does (the
 * status counts them, with when the last one stopped or resumed). A host that runs the
 * policy named by -b has -L soft lockups in each report, as a canary of a
 * bad policy would. Given several kmemd, a host whose report gets no
 * answer turns to another and sends again, as kmem-agent does; the hosts
 * of a kmemd that died spread over the others. A fleet larger than the
 * descriptors one process may hold is several fleet-sim: -f is the
 * first host's number, so that each runs hosts of their own. Hosts first
 * report spread over the interval, or over -r RAMP_S when that is longer:
 * a fleet joins over time, and a handshake costs more CPU than many
 * reports (on shared cores, a fleet that all connects at once times out
 * in kmemd's backlog and connects again, faster than kmemd can finish).
 *
 *   fleet-sim -s HOST:PORT[,HOST:PORT...] -C CA.crt -K CA.key -n HOSTS -i INTERVAL_S
 *             [-f FIRST] [-r RAMP_S] [-t SECONDS] [-b BAD_POLICY] [-L LOCKUPS]
 *             [-o STATUS_FILE]
 *
 * Every 5 s it writes STATUS_FILE (and stdout): key=value lines, with the
 * hosts running each policy (policy=NAME@VERSION hosts=N).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"
#include "hostport.h"
#include "kmemctl/v1/policy.pb-c.h"
#include "kmemctl/v1/report.pb-c.h"
#include "pki.h"
#include "tls.h"

#define POLICY_MAX 64

struct host {
	int n; /* its number in the fleet */
	char id[24];
	char addr[24];
	EVP_PKEY *key;
	X509 *cert;
	struct evhttp_connection *conn;
	struct event *timer;
	/*
	 * the kmemd it reports to: servers[order[pos]], as kmem-agent picks,
	 * back to order[0] HOSTPORT_FAILBACK_REPORTS reports after leaving it
	 */
	uint8_t order[HOSTPORT_LIST_MAX], pos, away;
	bool in_flight, reconnect;
	uint64_t seq, soft_lockups;
	char policy[POLICY_MAX];
	uint64_t version;
	bool stopped; /* its last reply said the fleet is stopped: every mitigation off */
};

static struct event_base *base;
static SSL_CTX *ctx;
static struct hostport servers[HOSTPORT_LIST_MAX];
static unsigned nservers;
static struct host *hosts;
static int nhosts, interval_s = 60, lockups = 3;
static const char *bad_policy = "";
static uint64_t acked, failed, late, failovers, policies_taken;
/* hosts the fleet stop holds, and when the last one stopped or resumed (unix ms) */
static int stopped;
static int64_t stop_changed_ms;
static uint8_t buf[16384];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What a fleet has: a few kernels, CPU counts, roles and zones, mixed. */
static const char *const kernels[] = { "6.1.0-57-amd64", "6.1.0-58-amd64", "6.12.38+deb13-amd64",
				       "6.12.48+deb13-amd64" };
static const unsigned cpus[] = { 8, 16, 32, 64, 96, 128 };
static const char *const roles[] = { "web", "db", "cache", "batch" };
static const char *const zones[] = { "a", "b", "c" };

static size_t report(const struct host *h, int i, int64_t t)
{
	static const char *const mit[] = { "kasan-flush-batch", "kasan-quarantine", "rstat-yield",
					   "tlb-gen", "usercopy-fastpath" };
	static const char *const probe[] = { "rstat-flush",   "rstat-flush-irqoff",
					     "tlb-shootdown", "usercopy-vmalloc",
					     "vmap-purge",    "vmap-purge-flushes" };
	static char *stack[] = { "__purge_vmap_area_lazy+0x1a4/0x3c0",
				 "drain_vmap_area_work+0x24/0x40" };
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__HostFacts__LabelsEntry le[2], *lep[2];
	Kmemctl__V1__MitigationState ms[5], *msp[5];
	Kmemctl__V1__ProbeSample ps[6], *psp[6];
	Kmemctl__V1__Histogram hs[6];
	Kmemctl__V1__KernelEvent ev[16], *evp[16];
	Kmemctl__V1__Counters c = KMEMCTL__V1__COUNTERS__INIT;
	uint64_t counts[6] = { 12, 40, 7, 3, 1, 1 };
	int k, n = 0;

	f.host_id = (char *)h->id;
	f.hostname = (char *)h->id;
	f.kernel_release = (char *)kernels[i % 4];
	f.kernel_build_id = "e4f18d9dc1d0e6fc2b17e93e885a647b3c0a6fc1";
	f.possible_cpus = cpus[i % 6];
	f.online_cpus = cpus[i % 6];
	f.mem_total_bytes = (uint64_t)cpus[i % 6] << 32;
	f.module_version = "0.1.0";
	for (k = 0; k < 2; k++) {
		kmemctl__v1__host_facts__labels_entry__init(&le[k]);
		lep[k] = &le[k];
	}
	le[0].key = "role";
	le[0].value = (char *)roles[(i / 7) % 4];
	le[1].key = "zone";
	le[1].value = (char *)zones[i % 3];
	f.n_labels = 2;
	f.labels = lep;
	for (k = 0; k < 5; k++) {
		kmemctl__v1__mitigation_state__init(&ms[k]);
		ms[k].id = (char *)mit[k];
		ms[k].state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_OFF;
		ms[k].mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_OFF;
		ms[k].source = KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT;
		ms[k].reason = "off: supported on this kernel";
		msp[k] = &ms[k];
	}
	for (k = 0; k < 6; k++) {
		kmemctl__v1__probe_sample__init(&ps[k]);
		kmemctl__v1__histogram__init(&hs[k]);
		hs[k].first_bucket = 12;
		hs[k].n_counts = 6;
		hs[k].counts = counts;
		hs[k].count = 64;
		hs[k].sum_ns = 1234567;
		hs[k].max_ns = 100000;
		ps[k].probe = (char *)probe[k];
		ps[k].start_unix_ms = t - (int64_t)interval_s * 1000;
		ps[k].end_unix_ms = t;
		ps[k].hist = &hs[k];
		psp[k] = &ps[k];
	}
	/* a canary of the bad policy: soft lockups in every interval */
	if (*bad_policy && !strcmp(h->policy, bad_policy))
		for (n = 0; n < lockups && n < 16; n++) {
			kmemctl__v1__kernel_event__init(&ev[n]);
			ev[n].kind = KMEMCTL__V1__EVENT_KIND__EVENT_KIND_SOFT_LOCKUP;
			ev[n].unix_ms = t - n;
			ev[n].cpu = n;
			ev[n].duration_ns = 22000000000ULL;
			ev[n].comm = "kworker/u16:3";
			ev[n].pid = 1000 + n;
			ev[n].n_stack_top = 2;
			ev[n].stack_top = stack;
			ev[n].message = "watchdog: BUG: soft lockup - CPU#0 stuck for 22s!";
			evp[n] = &ev[n];
		}
	c.soft_lockups = h->soft_lockups + (uint64_t)n;
	c.uptime_ms = h->seq * (uint64_t)interval_s * 1000;
	rep.seq = h->seq;
	rep.unix_ms = t;
	rep.facts = &f;
	rep.n_mitigations = 5;
	rep.mitigations = msp;
	rep.n_probes = 6;
	rep.probes = psp;
	rep.counters = &c;
	rep.n_events = (size_t)n;
	rep.events = evp;
	rep.policy_name = (char *)h->policy;
	rep.policy_version = h->version;
	rep.off = h->stopped ? KMEMCTL__V1__OFF__OFF_FLEET_STOP : KMEMCTL__V1__OFF__OFF_NONE;
	return kmemctl__v1__report__pack(&rep, buf);
}

static int connect_host(struct host *h)
{
	const struct hostport *sv = &servers[h->order[h->pos]];
	struct bufferevent *bev;
	SSL *ssl;

	if (h->conn)
		evhttp_connection_free(h->conn);
	h->conn = NULL;
	if (tls_client_ssl(ctx, sv->host, &ssl) < 0)
		return -ENOMEM;
	if (SSL_use_certificate(ssl, h->cert) != 1 || SSL_use_PrivateKey(ssl, h->key) != 1) {
		SSL_free(ssl);
		return -EINVAL;
	}
	bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	h->conn = evhttp_connection_base_bufferevent_new(base, NULL, bev, sv->host, sv->port);
	if (!h->conn)
		return -ENOMEM;
	evhttp_connection_set_local_address(h->conn, h->addr);
	/* evhttp closes a connection idle this long: kept from report to report */
	evhttp_connection_set_timeout(h->conn, interval_s + 30);
	return 0;
}

/* The policy kmemd says to run, from its reply: the host runs it from now on. */
static void take_policy(struct host *h, struct evbuffer *body)
{
	size_t len = evbuffer_get_length(body);
	Kmemctl__V1__ReportReply *rep;
	Kmemctl__V1__PolicyPayload *p;

	if (!len || len > sizeof(buf))
		return;
	evbuffer_copyout(body, buf, len);
	rep = kmemctl__v1__report_reply__unpack(NULL, len, buf);
	if (!rep)
		return;
	/* an agent turns every mitigation off (or applies its policy again) right here */
	if (rep->fleet_stop != h->stopped) {
		struct timespec now;

		h->stopped = rep->fleet_stop;
		stopped += h->stopped ? 1 : -1;
		clock_gettime(CLOCK_REALTIME, &now);
		stop_changed_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	}
	/* and, stopped, takes no policy */
	if (rep->policy && !rep->fleet_stop) {
		p = kmemctl__v1__policy_payload__unpack(NULL, rep->policy->payload.len,
							rep->policy->payload.data);
		if (p) {
			snprintf(h->policy, sizeof(h->policy), "%s", p->name);
			h->version = p->version;
			policies_taken++;
			kmemctl__v1__policy_payload__free_unpacked(p, NULL);
		}
	}
	kmemctl__v1__report_reply__free_unpacked(rep, NULL);
}

static void on_reply(struct evhttp_request *req, void *arg)
{
	struct host *h = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;

	h->in_flight = false;
	if (code == 200) {
		acked++;
		h->soft_lockups +=
			*bad_policy && !strcmp(h->policy, bad_policy) ? (uint64_t)lockups : 0;
		take_policy(h, evhttp_request_get_input_buffer(req));
		return;
	}
	failed++;
	ERR_clear_error();
	/*
	 * no answer, or a refusal to resend later: another kmemd, with the same
	 * report; the hosts of one kmemd spread over all the others
	 */
	h->seq--;
	if (nservers > 1) {
		h->pos = (uint8_t)((h->pos + 1) % nservers);
		h->away = 0;
		failovers++;
	}
	h->reconnect = true;
}

static void post(struct host *h)
{
	struct evhttp_request *req;
	size_t len;

	if (h->in_flight) {
		late++;
		return;
	}
	if (h->pos && ++h->away > HOSTPORT_FAILBACK_REPORTS) {
		h->pos = 0;
		h->reconnect = true;
	}
	if ((h->reconnect || !h->conn) && connect_host(h) < 0) {
		failed++;
		return;
	}
	h->reconnect = false;
	req = evhttp_request_new(on_reply, h);
	h->seq++;
	len = report(h, h->n, now_ms());
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host",
			  servers[h->order[h->pos]].host);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-protobuf");
	evbuffer_add(evhttp_request_get_output_buffer(req), buf, len);
	h->in_flight = true;
	if (evhttp_make_request(h->conn, req, EVHTTP_REQ_POST, "/v1/agent/report") < 0) {
		h->in_flight = false;
		failed++;
		h->reconnect = true;
		return;
	}
	http_one_record(h->conn);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	post(arg);
}

/* A host's first report, at its phase of the interval; then one every interval. */
static void on_first(evutil_socket_t fd, short what, void *arg)
{
	struct host *h = arg;

	(void)fd;
	(void)what;
	post(h);
	event_add(h->timer, &(struct timeval){ .tv_sec = interval_s });
}

static const char *status_path;
static struct timespec started;

static int by_policy(const void *a, const void *b)
{
	const struct host *x = *(struct host *const *)a, *y = *(struct host *const *)b;
	int c = strcmp(x->policy, y->policy);

	return c ? c : (x->version > y->version) - (x->version < y->version);
}

/* key=value lines: the counts, then the hosts running each policy. */
static void status(FILE *out, struct host **sorted)
{
	struct timespec now;
	int i, n;

	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(out,
		"seconds=%ld hosts=%d acked=%llu failed=%llu late=%llu failovers=%llu stopped=%d "
		"stop_changed_ms=%lld\n",
		(long)(now.tv_sec - started.tv_sec), nhosts, (unsigned long long)acked,
		(unsigned long long)failed, (unsigned long long)late, (unsigned long long)failovers,
		stopped, (long long)stop_changed_ms);
	for (i = 0; i < nhosts; i++)
		sorted[i] = &hosts[i];
	qsort(sorted, (size_t)nhosts, sizeof(*sorted), by_policy);
	for (i = 0; i < nhosts; i += n) {
		for (n = 1; i + n < nhosts && !by_policy(&sorted[i], &sorted[i + n]); n++)
			;
		fprintf(out, "policy=%s@%llu hosts=%d\n",
			*sorted[i]->policy ? sorted[i]->policy : "-",
			(unsigned long long)sorted[i]->version, n);
	}
}

static void on_status(evutil_socket_t fd, short what, void *arg)
{
	static struct host **sorted;
	char tmp[4096];
	FILE *f;

	(void)fd;
	(void)what;
	(void)arg;
	if (!sorted)
		sorted = calloc((size_t)nhosts, sizeof(*sorted));
	if (!sorted)
		return;
	status(stdout, sorted);
	fflush(stdout);
	if (!status_path)
		return;
	/* whole or not at all, for the script that polls it */
	snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	status(f, sorted);
	if (fclose(f) == 0)
		rename(tmp, status_path);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

static int parse_servers(const char *list)
{
	size_t n = 0;

	if (hostport_list(list, servers, HOSTPORT_LIST_MAX, &n) < 0)
		return -EINVAL;
	nservers = (unsigned)n;
	return 0;
}

/* Host number i: its id, address, key and certificate from the fleet CA. */
static int make_host(struct host *h, int i, X509 *ca, EVP_PKEY *ca_key)
{
	struct pki_subject subj = { .role = PKI_ROLE_HOST,
				    .not_before = -3600,
				    .not_after = 30 * 86400 };

	h->n = i;
	snprintf(h->id, sizeof(h->id), "sim-%06d", i);
	hostport_order(h->id, servers, nservers, h->order);
	/* 127.0.0.0/16 left to the servers: hosts from 127.1.0.0 on */
	snprintf(h->addr, sizeof(h->addr), "127.%d.%d.%d", 1 + (i >> 16), (i >> 8) & 255, i & 255);
	subj.cn = h->id;
	if (pki_keygen(PKI_ROLE_HOST, &h->key) < 0 ||
	    pki_issue(ca, ca_key, h->key, &subj, &h->cert) < 0)
		return -EINVAL;
	snprintf(h->policy, sizeof(h->policy), "%s", "");
	return 0;
}

int main(int argc, char **argv)
{
	const char *list = NULL, *ca_path = NULL, *ca_key_path = NULL;
	struct tls_config tc = { 0 };
	double secs = 0;
	struct event *stop = NULL, *st;
	EVP_PKEY *ca_key = NULL;
	X509 *ca = NULL;
	int c, i, first = 0, ramp_s = 0;

	while ((c = getopt(argc, argv, "s:C:K:n:i:f:r:t:b:L:o:")) != -1) {
		switch (c) {
		case 's':
			list = optarg;
			break;
		case 'C':
			ca_path = optarg;
			break;
		case 'K':
			ca_key_path = optarg;
			break;
		case 'n':
			nhosts = atoi(optarg);
			break;
		case 'i':
			interval_s = atoi(optarg);
			break;
		case 'f':
			first = atoi(optarg);
			break;
		case 'r':
			ramp_s = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'b':
			bad_policy = optarg;
			break;
		case 'L':
			lockups = atoi(optarg);
			break;
		case 'o':
			status_path = optarg;
			break;
		default:
			return 2;
		}
	}
	/* 2^22 hosts: well inside 127.0.0.0/8's addresses */
	if (!list || !ca_path || !ca_key_path || nhosts < 1 || first < 0 || ramp_s < 0 ||
	    nhosts > (1 << 22) - first || interval_s < 1 || lockups < 0 ||
	    parse_servers(list) < 0) {
		fprintf(stderr, "usage: fleet-sim -s HOST:PORT[,HOST:PORT...] -C CA.crt -K CA.key "
				"-n HOSTS -i INTERVAL_S [-f FIRST] [-r RAMP_S] [-t SECONDS] "
				"[-b BAD_POLICY] [-L LOCKUPS] [-o STATUS_FILE]\n");
		return 2;
	}
	if (pki_read_cert(ca_path, &ca) < 0 || pki_read_key(ca_key_path, &ca_key) < 0) {
		fprintf(stderr, "fleet-sim: cannot read the CA's certificate or key\n");
		return 1;
	}
	tc.ca = ca_path;
	if (tls_client_ctx(&tc, &ctx) < 0) {
		fprintf(stderr, "fleet-sim: no TLS context\n");
		return 1;
	}
	/* kmemd closing a connection is a failed report, not our end */
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	hosts = calloc((size_t)nhosts, sizeof(*hosts));
	if (!base || !hosts)
		return 1;
	for (i = 0; i < nhosts; i++) {
		if (make_host(&hosts[i], first + i, ca, ca_key) < 0) {
			fprintf(stderr, "fleet-sim: host %d: no key or certificate\n", first + i);
			return 1;
		}
	}
	printf("certificates=%d\n", nhosts);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &started);
	/* each host on its own phase of the interval (or the ramp): a steady load, as a fleet's */
	for (i = 0; i < nhosts; i++) {
		int64_t us =
			(int64_t)(ramp_s > interval_s ? ramp_s : interval_s) * 1000000 * i / nhosts;
		struct timeval phase = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };

		hosts[i].timer = event_new(base, -1, EV_PERSIST, on_timer, &hosts[i]);
		if (!hosts[i].timer ||
		    event_base_once(base, -1, EV_TIMEOUT, on_first, &hosts[i], &phase) < 0)
			return 1;
	}
	st = event_new(base, -1, EV_PERSIST, on_status, NULL);
	event_add(st, &(struct timeval){ .tv_sec = 5 });
	if (secs > 0) {
		stop = evtimer_new(base, on_stop, NULL);
		evtimer_add(stop, &(struct timeval){ .tv_sec = (time_t)secs });
	}
	event_base_dispatch(base);
	on_status(-1, 0, NULL);
	return 0;
}
