// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "selector.h"

static Kmemctl__V1__HostFacts__LabelsEntry role = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT,
					   zone = KMEMCTL__V1__HOST_FACTS__LABELS_ENTRY__INIT;
static Kmemctl__V1__HostFacts__LabelsEntry *labels[] = { &role, &zone };

static Kmemctl__V1__HostFacts facts(void)
{
	Kmemctl__V1__HostFacts f = KMEMCTL__V1__HOST_FACTS__INIT;

	role.key = "role";
	role.value = "web";
	zone.key = "zone";
	zone.value = "eu-1";
	f.host_id = "web-0421";
	f.kernel_release = "6.1.0-57-amd64";
	f.kernel_build_id = "e4f18d9d";
	f.possible_cpus = 64;
	f.kasan = 0;
	f.n_labels = 2;
	f.labels = labels;
	return f;
}

static bool matches(const char *json)
{
	Kmemctl__V1__HostFacts f = facts();
	struct selector s;
	char err[256];

	if (selector_parse(json, strlen(json), &s, err, sizeof(err)) < 0)
		fail_msg("'%s' did not parse: %s", json, err);
	return selector_match(&s, &f);
}

static void test_match(void **state)
{
	(void)state;
	assert_true(matches("{\"all\": true}"));
	assert_true(matches("{\"host\": \"web-0421\"}"));
	assert_false(matches("{\"host\": \"web-0422\"}"));
	assert_true(matches("{\"labels\": {\"role\": \"web\"}}"));
	assert_true(matches("{\"labels\": {\"role\": \"web\", \"zone\": \"eu-1\"}}"));
	assert_false(matches("{\"labels\": {\"role\": \"web\", \"zone\": \"us-1\"}}"));
	assert_false(matches("{\"labels\": {\"rack\": \"7\"}}"));
	assert_true(matches("{\"kernel_release\": \"6.1.0-57-amd64\", \"kasan\": false}"));
	assert_false(matches("{\"kernel_release\": \"6.12.117+deb12-amd64\"}"));
	/* a pattern */
	assert_true(matches("{\"kernel_release\": \"6.1.0-*-amd64\"}"));
	assert_true(matches("{\"kernel_release\": \"6.1.?-5[0-9]-*\"}"));
	assert_false(matches("{\"kernel_release\": \"6.12.*\"}"));
	assert_false(matches("{\"kernel_release\": \"6.1.0-57\"}"));
	assert_false(matches("{\"kasan\": true}"));
	assert_true(matches("{\"build_id\": \"e4f18d9d\"}"));
	assert_true(matches("{\"min_cpus\": 64, \"max_cpus\": 64}"));
	assert_false(matches("{\"min_cpus\": 65}"));
	assert_false(matches("{\"max_cpus\": 32}"));
	/* every key must match */
	assert_false(matches("{\"labels\": {\"role\": \"web\"}, \"kasan\": true}"));
}

static void test_bad(void **state)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "", "a selector is a JSON object" },
		{ "[]", "a selector is a JSON object" },
		{ "{\"labels\": {\"role\": \"web\"}", "a selector is a JSON object" },
		{ "{}", "empty selector" },
		{ "{\"all\": false}", "\"all\" can only be true" },
		{ "{\"all\": true, \"host\": \"a\"}", "\"all\" goes alone" },
		{ "{\"role\": \"web\"}", "unknown key \"role\"" },
		{ "{\"host\": \"\"}", "\"host\" must be a string" },
		{ "{\"host\": 7}", "\"host\" must be a string" },
		{ "{\"labels\": {}}", "\"labels\" must be a non-empty object" },
		{ "{\"labels\": {\"role\": 1}}", "\"role\" must be a string" },
		{ "{\"kasan\": \"no\"}", "\"kasan\" must be true or false" },
		{ "{\"min_cpus\": 0}", "\"min_cpus\" must be a positive integer" },
		{ "{\"max_cpus\": -4}", "\"max_cpus\" must be a positive integer" },
		{ "{\"min_cpus\": 8, \"max_cpus\": 4}", "above" },
		{ "{\"host\": \"a\", \"host\": \"b\"}", "a selector is a JSON object" },
	};
	struct selector s;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(selector_parse(bad[i].json, strlen(bad[i].json), &s, err,
						sizeof(err)),
				 -EINVAL);
		if (!strstr(err, bad[i].why))
			fail_msg("'%s': '%s' lacks '%s'", bad[i].json, err, bad[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
