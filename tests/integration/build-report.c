// SPDX-License-Identifier: GPL-2.0
/*
 * A host's reports about its build, and kmemd's replies, for builds-kmemd.sh:
 *
 *   build-report report HOST SEQ BUILD_ID RELEASE BUILD_FILE [MITIGATION...] >REPORT
 *	a report of HOST on that build (its facts), whose module waits for a
 *	record for each MITIGATION (usercopy-fastpath "unsupported ... not
 *	verified") and then sends BUILD_FILE; none: it waits for nothing
 *	and sends no build file
 *   build-report reply REPLY PREFIX
 *	prints the reply's status and how many records it carries, each
 *	written to PREFIX.N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kmemctl/v1/report.pb-c.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = f ? malloc(1 << 20) : NULL;

	*len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	if (buf)
		buf[*len] = '\0';
	if (f)
		fclose(f);
	return buf;
}

static int report(int argc, char **argv)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT;
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;
	Kmemctl__V1__MitigationState m = KMEMCTL__V1__MITIGATION_STATE__INIT, *mp[] = { &m };
	char *file = NULL;
	size_t len;
	uint8_t *buf;

	f.host_id = f.hostname = argv[2];
	f.kernel_build_id = argv[4];
	f.kernel_release = argv[5];
	f.possible_cpus = f.online_cpus = 4;
	f.mem_total_bytes = 8ULL << 30;
	f.module_version = "0.1.0";
	rep.seq = strtoull(argv[3], NULL, 10);
	rep.unix_ms = (int64_t)time(NULL) * 1000;
	rep.facts = &f;
	m.id = "usercopy-fastpath";
	m.mode = KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON;
	m.source = KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY;
	rep.mitigations = mp;
	rep.n_mitigations = 1;
	if (argc > 7) {
		m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_UNSUPPORTED;
		m.reason = "build not verified";
		rep.waiting_for_record = argv + 7;
		rep.n_waiting_for_record = (size_t)argc - 7;
		rep.build_file = file = slurp(argv[6], &len);
		if (!file)
			return 1;
	} else {
		m.state = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON;
	}
	len = kmemctl__v1__report__get_packed_size(&rep);
	buf = malloc(len ?: 1);
	if (!buf)
		return 1;
	kmemctl__v1__report__pack(&rep, buf);
	fwrite(buf, 1, len, stdout);
	free(buf);
	free(file);
	return 0;
}

static int reply(char **argv)
{
	Kmemctl__V1__ReportReply *rr;
	char path[4096];
	size_t len, i;
	char *buf = slurp(argv[2], &len);

	rr = buf ? kmemctl__v1__report_reply__unpack(NULL, len, (uint8_t *)buf) : NULL;
	free(buf);
	if (!rr) {
		fprintf(stderr, "%s: not a ReportReply\n", argv[2]);
		return 1;
	}
	printf("status %d records %zu\n", rr->status, rr->n_build_records);
	for (i = 0; i < rr->n_build_records; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s.%zu", argv[3], i);
		f = fopen(path, "wb");
		if (!f || fwrite(rr->build_records[i].data, 1, rr->build_records[i].len, f) !=
				  rr->build_records[i].len) {
			perror(path);
			return 1;
		}
		fclose(f);
	}
	kmemctl__v1__report_reply__free_unpacked(rr, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 7 && !strcmp(argv[1], "report"))
		return report(argc, argv);
	if (argc == 4 && !strcmp(argv[1], "reply"))
		return reply(argv);
	fprintf(stderr, "usage: build-report report HOST SEQ BUILD_ID RELEASE BUILD_FILE "
			"[MITIGATION...] | reply REPLY PREFIX\n");
	return 2;
}
