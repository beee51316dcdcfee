// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl.h"

static int parse(const char *s, struct ctl_request *req, char *err)
{
	return ctl_parse_request(s, strlen(s), req, err, 256);
}

static void test_requests(void **state)
{
	struct ctl_request req;
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"cmd\":\"status\"}", &req, err), 0);
	assert_int_equal(req.cmd, CTL_STATUS);
	assert_int_equal(parse("{\"cmd\":\"watch\"}", &req, err), 0);
	assert_int_equal(req.cmd, CTL_WATCH);
	assert_int_equal(parse("{\"cmd\":\"set\",\"policy\":{\"mitigations\":{\"rstat-yield\":"
			       "{\"mode\":\"on\",\"params\":{\"every_cpus\":2}}}}}",
			       &req, err),
			 0);
	assert_int_equal(req.cmd, CTL_SET);
	assert_int_equal(req.doc.nmitigations, 1);
	assert_string_equal(req.doc.mitigations[0].id, "rstat-yield");
	assert_int_equal(req.doc.mitigations[0].mode, POLICY_MODE_ON);
	assert_int_equal(req.doc.mitigations[0].params[0].value, 2);
}

/* Each bad request: -EINVAL, no command, and a reason naming the fault. */
static void test_bad_requests(void **state)
{
	static const struct {
		const char *req, *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "{\"cmd\":\"status\"", "not JSON" },
		{ "[\"status\"]", "a request is a JSON object" },
		{ "{}", "\"cmd\" must be" },
		{ "{\"cmd\":\"reboot\"}", "\"cmd\" must be" },
		{ "{\"cmd\":1}", "unknown key or wrong type: \"cmd\"" },
		{ "{\"cmd\":\"status\",\"cmd\":\"watch\"}", "not JSON" },
		{ "{\"cmd\":\"status\",\"verbose\":true}",
		  "unknown key or wrong type: \"verbose\"" },
		{ "{\"cmd\":\"set\"}", "\"policy\" goes with \"set\"" },
		{ "{\"cmd\":\"status\",\"policy\":{}}", "\"policy\" goes with \"set\"" },
		{ "{\"cmd\":\"set\",\"policy\":[]}", "unknown key or wrong type: \"policy\"" },
		{ "{\"cmd\":\"set\",\"policy\":{\"mitigations\":{\"../x\":{\"mode\":\"on\"}}}}",
		  "bad id" },
		{ "{\"cmd\":\"set\",\"policy\":{\"mitigations\":{\"a\":{\"mode\":\"maybe\"}}}}",
		  "mode" },
	};
	struct ctl_request req;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse(bad[i].req, &req, err), -EINVAL);
		assert_int_equal(req.cmd, 0);
		if (!strstr(err, bad[i].why))
			fail_msg("request '%s': reason '%s' lacks '%s'", bad[i].req, err,
				 bad[i].why);
	}
	/* a request with a NUL inside is not JSON either */
	assert_int_equal(ctl_parse_request("{\"cmd\":\"st\0atus\"}", 17, &req, err, sizeof(err)),
			 -EINVAL);
}

static void test_peers(void **state)
{
	struct ucred root = { .uid = 0, .gid = 0 }, user = { .uid = 65534, .gid = 65534 };

	(void)state;
	assert_true(ctl_peer_allowed(&root, (gid_t)-1));
	assert_false(ctl_peer_allowed(&user, (gid_t)-1));
	/* the primary group counts */
	assert_true(ctl_peer_allowed(&user, 65534));
	/* uid 65534 (nobody) is in no group 4242 */
	assert_false(ctl_peer_allowed(&user, 4242));
}

static void test_listen(void **state)
{
	char dir[] = "/tmp/test-ctl.XXXXXX", path[128];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/run/ctl.sock", dir);
	fd = ctl_listen(path, (gid_t)-1);
	assert_true(fd >= 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	strcpy(sa.sun_path, path);
	c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(c);
	close(fd);
	/* a stale socket from an earlier run is replaced */
	fd = ctl_listen(path, (gid_t)-1);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run", dir);
	rmdir(path);
	rmdir(dir);
	assert_int_equal(
		ctl_listen("/tmp/a-path-longer-than-sun_path-allows/"
			   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/ctl.sock",
			   (gid_t)-1),
		-ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
