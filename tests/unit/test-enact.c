// SPDX-License-Identifier: GPL-2.0
/*
 * agent/enact.c: documents and single changes applied to a copy of the
 * fixture tree's kmemctl.ko sysfs (test-kernel.c), through the intent
 * journal and the boot confirmation records, each change logged with its
 * old and new mode and params (the log goes to a file the tests read).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "enact.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"

#define BOOT "5f0c2a9e-8d1b-4e7a-9c3f-2b6d8e1a4c70"
#define MIT "/sys/kernel/kmemctl/mitigations/"

static char root[4096], statedir[4096], logpath[4096];
static const struct policy_version base3 = { .name = "base", .version = 3 };

static int setup(void **state)
{
	_cleanup_free_ char *cmd = NULL;

	(void)state;
	snprintf(statedir, sizeof(statedir), "%s/enact-state", getenv("KMEM_TEST_TMP"));
	snprintf(logpath, sizeof(logpath), "%s/enact.log", getenv("KMEM_TEST_TMP"));
	if (fixture_copy("enact-root", root, sizeof(root)) < 0 ||
	    asprintf(&cmd, "rm -rf '%s' && mkdir '%s'", statedir, statedir) < 0 || system(cmd) != 0)
		return -1;
	/* the changes' log, to read back */
	if (!freopen(logpath, "w+", stderr))
		return -1;
	log_setup("test-enact", LOG_TARGET_STDERR);
	return 0;
}

static void file_is(const char *rel, const char *want)
{
	_cleanup_free_ char *path = NULL;
	char buf[512] = "";
	FILE *f;
	size_t n;

	assert_true(asprintf(&path, "%s%s", root, rel) > 0);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, want);
}

/* The log since the last call, which starts the next one afresh. */
static char *log_taken(void)
{
	static char buf[16384];
	size_t n;

	fflush(stderr);
	rewind(stderr);
	n = fread(buf, 1, sizeof(buf) - 1, stderr);
	buf[n] = '\0';
	assert_int_equal(ftruncate(fileno(stderr), 0), 0);
	rewind(stderr);
	return buf;
}

static int open_state(void)
{
	int fd = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static bool intent_left(int dirfd)
{
	return faccessat(dirfd, "intent", F_OK, 0) == 0;
}

static void parse(const char *json, struct policy_doc *doc)
{
	char err[256];

	assert_int_equal(policy_doc_parse(json, strlen(json), doc, err, sizeof(err)), 0);
}

static struct enactor enactor(struct rootfs *rfs, int dirfd, const char *boot_id)
{
	struct enactor e = { .rfs = rfs, .state_dirfd = dirfd };

	assert_int_equal(rootfs_open_root(rfs, root), 0);
	snprintf(e.boot_id, sizeof(e.boot_id), "%s", boot_id);
	return e;
}

static void test_doc(void **state)
{
	static const char json[] =
		"{\"mitigations\": {"
		"  \"rstat-yield\": {\"mode\": \"on\", \"params\": {\"every_cpus\": 2}},"
		"  \"usercopy-fastpath\": {\"mode\": \"on\"},"
		"  \"kasan-quarantine\": {\"mode\": \"on\"},"
		"  \"tlb-gen\": {\"mode\": \"on\"},"
		"  \"from-a-newer-module\": {\"mode\": \"on\"},"
		"  \"kasan-flush-batch\": {\"params\": {\"batch\": 3}}"
		"}, \"probes\": {"
		"  \"vmap-purge\": {\"threshold_ns\": 5000000},"
		"  \"kasan-reduce\": {\"enabled\": true},"
		"  \"rstat-flush\": {\"enabled\": true}"
		"}}";
	static const enum policy_result want[] = {
		POLICY_UNCHANGED, POLICY_APPLIED, POLICY_SKIPPED, POLICY_SKIPPED,   POLICY_SKIPPED,
		POLICY_FAILED,	  POLICY_APPLIED, POLICY_SKIPPED, POLICY_UNCHANGED,
	};
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	struct policy_doc doc;
	struct rootfs rfs;
	int dirfd = open_state();
	struct enactor e = enactor(&rfs, dirfd, BOOT);
	const char *log;
	size_t n, i;

	(void)state;
	log_taken();
	parse(json, &doc);
	assert_int_equal(enact_doc(&e, &doc, ENACT_POLICY, &base3, NULL, out, &n), 0);
	assert_int_equal(n, ARRAY_SIZE(want));
	for (i = 0; i < n; i++)
		if (out[i].result != want[i])
			fail_msg("%s: result %d, want %d (%s)", out[i].id, out[i].result, want[i],
				 out[i].why);
	assert_string_equal(out[2].why, "unsupported: CONFIG_KASAN_GENERIC is not set");
	assert_string_equal(out[3].why, "native: fixed since 6.0");
	assert_string_equal(out[4].why, "this kmemctl.ko has no such mitigation");
	assert_string_equal(out[5].why, "no param \"batch\" here");
	file_is(MIT "usercopy-fastpath/mode", "on");
	file_is("/sys/kernel/kmemctl/probes/vmap-purge/threshold_ns", "5000000");
	assert_false(intent_left(dirfd));
	/* the one change, logged with what it was and what it is */
	log = log_taken();
	assert_non_null(strstr(log, "policy base/3: usercopy-fastpath applied: on (was off)"));
	assert_non_null(strstr(log, " MITIGATION=usercopy-fastpath POLICY=base/3 MODE=on OLD=off "
				    "NEW=on SOURCE=policy"));
	assert_null(strstr(log, "MITIGATION=rstat-yield"));

	/* a changed param is written; a quarantined mitigation is left alone */
	static const char json2[] =
		"{\"mitigations\": {\"rstat-yield\": {\"params\": {\"every_cpus\": 8}},"
		"  \"usercopy-fastpath\": {\"mode\": \"off\"}}}";
	static const char *const quarantined[] = { "usercopy-fastpath", NULL };

	parse(json2, &doc);
	assert_int_equal(enact_doc(&e, &doc, ENACT_LOCAL, &base3, quarantined, out, &n), 0);
	assert_int_equal(out[0].result, POLICY_APPLIED);
	assert_int_equal(out[1].result, POLICY_SKIPPED);
	assert_string_equal(out[1].why, "quarantined under this policy version");
	file_is(MIT "rstat-yield/params", "every_cpus=8\n");
	file_is(MIT "usercopy-fastpath/mode", "on");
	log = log_taken();
	assert_non_null(strstr(log, "local override: rstat-yield on every_cpus=8 (was on "
				    "every_cpus=2)"));
	assert_non_null(strstr(log, "OLD=on every_cpus=2 NEW=on every_cpus=8 SOURCE=local"));
	rootfs_close(&rfs);
	close(dirfd);
}

/* A write that left the mitigation tripped did not apply. */
static void test_verify(void **state)
{
	static const char on[] = "{\"mitigations\": {\"usercopy-fastpath\": {\"mode\": \"on\"}}}";
	static const char off[] = "{\"mitigations\": {\"usercopy-fastpath\": {\"mode\": \"off\"}}}";
	struct policy_outcome out[2 * POLICY_MAX_ENTRIES];
	struct policy_doc doc;
	struct rootfs rfs;
	size_t n;
	int dirfd = open_state();
	struct enactor e = enactor(&rfs, dirfd, BOOT);

	(void)state;
	parse(off, &doc);
	assert_int_equal(enact_doc(&e, &doc, ENACT_POLICY, &base3, NULL, out, &n), 0);
	assert_int_not_equal(out[0].result, POLICY_FAILED);

	/* the module turned it off by itself as it went on: the reset went first */
	fixture_put(root, MIT "usercopy-fastpath/reset", "");
	fixture_put(root, MIT "usercopy-fastpath/state", "tripped\n");
	fixture_put(root, MIT "usercopy-fastpath/reason", "tripped: 3 faults in the fast path\n");
	parse(on, &doc);
	assert_int_equal(enact_doc(&e, &doc, ENACT_POLICY, &base3, NULL, out, &n), 0);
	assert_int_equal(out[0].result, POLICY_FAILED);
	assert_string_equal(out[0].why, "tripped: 3 faults in the fast path");
	file_is(MIT "usercopy-fastpath/reset", "1");

	assert_false(intent_left(dirfd));
	fixture_put(root, MIT "usercopy-fastpath/state", "off\n");
	fixture_put(root, MIT "usercopy-fastpath/mode", "off\n");
	fixture_put(root, MIT "usercopy-fastpath/reason", "off: supported on this kernel\n");
	assert_int_equal(unlinkat(dirfd, CONFIRM_FILE, 0), 0);
	rootfs_close(&rfs);
	close(dirfd);
}

/* An intent left by a run that died names the change to quarantine. */
static void test_recover(void **state)
{
	char id[POLICY_ID_MAX + 1];
	int dirfd = open_state(), fd;

	(void)state;
	assert_int_equal(enact_recover(dirfd, id, sizeof(id)), 0);
	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "rstat-yield mode on\n", 20), 20);
	close(fd);
	assert_int_equal(enact_recover(dirfd, id, sizeof(id)), 1);
	assert_string_equal(id, "rstat-yield");
	assert_false(intent_left(dirfd));
	assert_int_equal(enact_recover(dirfd, id, sizeof(id)), 0);

	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "../../x mode on\n", 16), 16);
	close(fd);
	assert_int_equal(enact_recover(dirfd, id, sizeof(id)), -EBADMSG);
	assert_false(intent_left(dirfd));
	fd = openat(dirfd, "intent", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	close(fd);
	assert_int_equal(enact_recover(dirfd, id, sizeof(id)), -EBADMSG);
	assert_false(intent_left(dirfd));
	close(dirfd);
}

static struct policy_mitigation mitigation(const char *id, enum policy_mode mode)
{
	struct policy_mitigation m = { .mode = mode };

	snprintf(m.id, sizeof(m.id), "%s", id);
	return m;
}

/*
 * `mode on` only with its boot confirmation record on disk first; off
 * removes it. Without this boot's id nothing is turned on.
 */
static void test_confirmation(void **state)
{
	struct policy_mitigation on = mitigation("usercopy-fastpath", POLICY_MODE_ON);
	struct policy_mitigation off = mitigation("usercopy-fastpath", POLICY_MODE_OFF);
	struct policy_outcome o;
	struct confirm c;
	struct rootfs rfs;
	int dirfd = open_state();
	struct enactor e = enactor(&rfs, dirfd, "");

	(void)state;
	assert_int_equal(enact(&e, &on, ENACT_POLICY, &base3, NULL, &o), 0);
	assert_int_equal(o.result, POLICY_FAILED);
	assert_string_equal(o.why, "recording its boot confirmation failed (this boot's id is "
				   "unknown)");
	file_is(MIT "usercopy-fastpath/mode", "off\n");
	assert_int_equal(faccessat(dirfd, CONFIRM_FILE, F_OK, 0), -1);

	strcpy(e.boot_id, BOOT);
	assert_int_equal(enact(&e, &on, ENACT_POLICY, &base3, NULL, &o), 0);
	assert_int_equal(o.result, POLICY_APPLIED);
	file_is(MIT "usercopy-fastpath/mode", "on");
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.e[0].id, "usercopy-fastpath");
	assert_false(c.e[0].confirmed);
	assert_string_equal(c.e[0].boot_id, BOOT);
	assert_string_equal(c.e[0].policy.name, "base");
	assert_int_equal(c.e[0].policy.version, 3);

	/* on already: no second record, the window runs from the first */
	c.e[0].since_ms = 7;
	assert_int_equal(confirm_save(dirfd, &c), 0);
	assert_int_equal(enact(&e, &on, ENACT_POLICY, &base3, NULL, &o), 0);
	assert_int_equal(o.result, POLICY_UNCHANGED);
	assert_int_equal(confirm_load(dirfd, &c), 0);
	assert_int_equal(c.e[0].since_ms, 7);

	assert_int_equal(enact(&e, &off, ENACT_POLICY, &base3, NULL, &o), 0);
	assert_int_equal(o.result, POLICY_APPLIED);
	file_is(MIT "usercopy-fastpath/mode", "off");
	assert_int_equal(faccessat(dirfd, CONFIRM_FILE, F_OK, 0), -1);
	log_taken();
	rootfs_close(&rfs);
	close(dirfd);
}

/*
 * The agent's own acts are logged even when the module had it off
 * already; a trip is the module's change, logged, never written.
 */
static void test_sources(void **state)
{
	struct policy_mitigation off = mitigation("usercopy-fastpath", POLICY_MODE_OFF);
	struct policy_mitigation on = mitigation("usercopy-fastpath", POLICY_MODE_ON);
	struct policy_outcome o;
	struct rootfs rfs;
	int dirfd = open_state();
	struct enactor e = enactor(&rfs, dirfd, BOOT);
	const char *log;

	(void)state;
	log_taken();
	assert_int_equal(enact(&e, &off, ENACT_KILL_SWITCH, &base3, "kmemctl disable", &o), 0);
	assert_int_equal(o.result, POLICY_UNCHANGED);
	assert_string_equal(log_taken(), "");
	assert_int_equal(enact(&e, &off, ENACT_CONFIRMATION, &base3,
			       "the host restarted while it was new", &o),
			 0);
	log = log_taken();
	assert_non_null(strstr(log, "usercopy-fastpath quarantined under policy base/3: the host "
				    "restarted while it was new (off, was off)"));
	assert_non_null(strstr(log, "SOURCE=confirmation REASON=the host restarted"));

	assert_int_equal(enact(&e, &on, ENACT_POLICY, &base3, NULL, &o), 0);
	assert_int_equal(enact(&e, &off, ENACT_GUARD, &base3, "soft lockup", &o), 0);
	assert_int_equal(o.result, POLICY_APPLIED);
	file_is(MIT "usercopy-fastpath/mode", "off");
	log = log_taken();
	assert_non_null(strstr(log, "guard: usercopy-fastpath reverted: a soft lockup in the guard "
				    "window (off, was on)"));
	assert_non_null(strstr(log, "OLD=on NEW=off SOURCE=guard"));

	/* the module's breaker: tripped and off; nothing is written to it */
	fixture_put(root, MIT "usercopy-fastpath/state", "tripped\n");
	fixture_put(root, MIT "usercopy-fastpath/reset", "");
	fixture_put(root, MIT "usercopy-fastpath/mode", "off\n");
	assert_int_equal(enact(&e, &off, ENACT_TRIP, &base3, "soft lockup", &o), 0);
	assert_int_equal(o.result, POLICY_APPLIED);
	file_is(MIT "usercopy-fastpath/reset", "");
	file_is(MIT "usercopy-fastpath/mode", "off\n");
	log = log_taken();
	assert_non_null(strstr(log, "kmemctl.ko tripped usercopy-fastpath: soft lockup (off, was "
				    "on)"));
	assert_non_null(strstr(log, "SOURCE=trip"));
	assert_false(intent_left(dirfd));
	fixture_put(root, MIT "usercopy-fastpath/state", "off\n");
	rootfs_close(&rfs);
	close(dirfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc),	cmocka_unit_test(test_verify),
		cmocka_unit_test(test_recover), cmocka_unit_test(test_confirmation),
		cmocka_unit_test(test_sources),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
