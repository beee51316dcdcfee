// SPDX-License-Identifier: GPL-2.0
/* agent/states.c on the fixture tree's captured kmemctl.ko sysfs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"
#include "kmemctl/v1/report.pb-c.h"
#include "states.h"

static Kmemctl__V1__ModeSource source(const char *id, void *arg)
{
	(void)arg;
	return strcmp(id, "rstat-yield") ? KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT :
					   KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY;
}

static void test_fixture(void **state)
{
	Kmemctl__V1__Report rep = KMEMCTL__V1__REPORT__INIT, *back;
	static struct states s;
	struct rootfs rfs;
	char root[4096];
	uint8_t *buf;
	size_t len, i;

	(void)state;
	snprintf(root, sizeof(root), "%s/../fixtures/host-6.1", getenv("KMEM_TEST_DATA"));
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(states_collect(&rfs, &s, source, NULL), 5);
	assert_int_equal(s.unreadable, 0);
	rootfs_close(&rfs);

	/* through the wire and back, as kmemd sees it */
	rep.n_mitigations = s.n;
	rep.mitigations = s.pbp;
	len = kmemctl__v1__report__get_packed_size(&rep);
	buf = malloc(len);
	assert_non_null(buf);
	kmemctl__v1__report__pack(&rep, buf);
	back = kmemctl__v1__report__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(back);
	assert_int_equal(back->n_mitigations, 5);
	for (i = 0; i < back->n_mitigations; i++)
		if (!strcmp(back->mitigations[i]->id, "rstat-yield"))
			break;
	assert_true(i < back->n_mitigations);
	assert_int_equal(back->mitigations[i]->state,
			 KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON);
	assert_int_equal(back->mitigations[i]->mode,
			 KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON);
	assert_int_equal(back->mitigations[i]->source,
			 KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_POLICY);
	assert_string_equal(back->mitigations[i]->reason, "on: enacted");
	assert_int_equal(back->mitigations[i]->n_params, 1);
	assert_string_equal(back->mitigations[i]->params[0]->key, "every_cpus");
	assert_string_equal(back->mitigations[i]->params[0]->value, "2");
	assert_int_equal(back->mitigations[i]->n_stats, 3);
	assert_string_equal(back->mitigations[i]->stats[0]->key, "enables");
	assert_int_equal(back->mitigations[i]->stats[0]->value, 1);
	assert_int_equal(back->mitigations[0]->state,
			 KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_UNSUPPORTED);
	assert_int_equal(back->mitigations[0]->source,
			 KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT);
	kmemctl__v1__report__free_unpacked(back, NULL);
}

/* A mitigation waiting for a build record names itself, and the build file comes along. */
static void test_waiting_for_record(void **state)
{
	static const char build[] =
		"build_id 00aa\nrelease 6.1.0-58-amd64\nversion #1\n"
		"copy usercopy-fastpath u.c:x 0011223344556677\n"
		"func usercopy-fastpath __check_object_size 544 14121efd66dc2284\n";
	static struct states s;
	struct rootfs rfs;
	char root[4096];

	(void)state;
	assert_int_equal(fixture_copy("states-waiting", root, sizeof(root)), 0);
	assert_int_equal(rootfs_open_root(&rfs, root), 0);
	assert_int_equal(states_collect(&rfs, &s, NULL, NULL), 5);
	assert_int_equal(s.nwaiting, 0);
	assert_string_equal(s.build_file, "");

	fixture_put(root, "/sys/kernel/kmemctl/mitigations/usercopy-fastpath/state",
		    "unsupported\n");
	fixture_put(root, "/sys/kernel/kmemctl/mitigations/usercopy-fastpath/reason",
		    "unsupported: build 00aa (6.1.0-58-amd64) not verified: no record has "
		    "__check_object_size\n");
	/* unsupported for another reason: not waiting for a record */
	fixture_put(root, "/sys/kernel/kmemctl/mitigations/kasan-quarantine/state",
		    "unsupported\n");
	fixture_put(root, "/sys/kernel/kmemctl/mitigations/kasan-quarantine/reason",
		    "unsupported: CONFIG_KASAN_GENERIC is not set\n");
	fixture_put(root, "/sys/kernel/kmemctl/build", build);
	assert_int_equal(states_collect(&rfs, &s, NULL, NULL), 5);
	assert_int_equal(s.nwaiting, 1);
	assert_string_equal(s.waiting[0], "usercopy-fastpath");
	assert_string_equal(s.build_file, build);

	/* a build file that cannot be read is left out, the waiting ids are not */
	assert_int_equal(unlink(strcat(root, "/sys/kernel/kmemctl/build")), 0);
	assert_int_equal(states_collect(&rfs, &s, NULL, NULL), 5);
	assert_int_equal(s.nwaiting, 1);
	assert_string_equal(s.build_file, "");
	rootfs_close(&rfs);
}

static void test_no_module(void **state)
{
	static struct states s;
	struct rootfs rfs;

	(void)state;
	assert_int_equal(rootfs_open_root(&rfs, getenv("KMEM_TEST_DATA")), 0);
	assert_int_equal(states_collect(&rfs, &s, NULL, NULL), -ENOENT);
	assert_int_equal(s.n, 0);
	rootfs_close(&rfs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_waiting_for_record),
		cmocka_unit_test(test_no_module),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
