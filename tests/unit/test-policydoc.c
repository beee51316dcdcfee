// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "macro.h"
#include "policydoc.h"

static int parse(const char *json, struct policy_doc *doc, char *err, size_t errlen)
{
	return policy_doc_parse(json, strlen(json), doc, err, errlen);
}

static void test_good(void **state)
{
	static const char json[] =
		"{\"mitigations\": {"
		"  \"rstat-yield\": {\"mode\": \"on\", \"params\": {\"every_cpus\": 2}},"
		"  \"kasan-quarantine\": {\"params\": {\"batch_bytes\": 65536, \"max_fraction\": 64}},"
		"  \"usercopy-fastpath\": {\"mode\": \"off\"},"
		"  \"from-a-newer-module\": {}"
		"}, \"probes\": {"
		"  \"vmap-purge\": {\"enabled\": true, \"threshold_ns\": 1000000},"
		"  \"tlb-shootdown\": {\"enabled\": false}"
		"}}";
	struct policy_doc doc;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(json, &doc, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(doc.nmitigations, 4);
	assert_string_equal(doc.mitigations[0].id, "rstat-yield");
	assert_int_equal(doc.mitigations[0].mode, POLICY_MODE_ON);
	assert_int_equal(doc.mitigations[0].nparams, 1);
	assert_string_equal(doc.mitigations[0].params[0].key, "every_cpus");
	assert_int_equal(doc.mitigations[0].params[0].value, 2);
	assert_int_equal(doc.mitigations[1].mode, POLICY_MODE_KEEP);
	assert_int_equal(doc.mitigations[1].nparams, 2);
	assert_int_equal(doc.mitigations[1].params[1].value, 64);
	assert_int_equal(doc.mitigations[2].mode, POLICY_MODE_OFF);
	assert_string_equal(doc.mitigations[3].id, "from-a-newer-module");
	assert_int_equal(doc.nprobes, 2);
	assert_int_equal(doc.probes[0].enabled, 1);
	assert_int_equal(doc.probes[0].threshold_ns, 1000000);
	assert_int_equal(doc.probes[1].enabled, 0);
	assert_int_equal(doc.probes[1].threshold_ns, -1);

	assert_int_equal(parse("{}", &doc, err, sizeof(err)), 0);
	assert_int_equal(doc.nmitigations + doc.nprobes, 0);
}

static void test_bad(void **state)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "{\"mitigations\": {", "not JSON" },
		{ "[]", "not a JSON object" },
		{ "{\"mitigation\": {}}", "document: unknown key \"mitigation\"" },
		{ "{\"mitigations\": []}", "mitigations: not an object" },
		{ "{\"mitigations\": {\"../../x\": {}}}", "mitigations: bad id \"../../x\"" },
		{ "{\"mitigations\": {\"Rstat\": {}}}", "bad id" },
		{ "{\"mitigations\": {\"-x\": {}}}", "bad id" },
		{ "{\"mitigations\": {\"\": {}}}", "bad id" },
		{ "{\"mitigations\": {\"a-very-long-mitigation-id-over-32-chars\": {}}}",
		  "bad id" },
		{ "{\"mitigations\": {\"x\": 1}}", "mitigations.x: not an object" },
		{ "{\"mitigations\": {\"x\": {\"mode\": \"yes\"}}}", "mitigations.x.mode" },
		{ "{\"mitigations\": {\"x\": {\"mode\": true}}}", "mitigations.x.mode" },
		{ "{\"mitigations\": {\"x\": {\"mod\": \"on\"}}}",
		  "mitigations.x: unknown key \"mod\"" },
		{ "{\"mitigations\": {\"x\": {\"params\": [1]}}}",
		  "mitigations.x.params: not an object" },
		{ "{\"mitigations\": {\"x\": {\"params\": {\"a\": -1}}}}",
		  "mitigations.x.params.a" },
		{ "{\"mitigations\": {\"x\": {\"params\": {\"a\": 1.5}}}}",
		  "mitigations.x.params.a" },
		{ "{\"mitigations\": {\"x\": {\"params\": {\"a\": \"1\"}}}}",
		  "mitigations.x.params.a" },
		{ "{\"mitigations\": {\"x\": {\"params\": {\"a=1 b\": 1}}}}", "bad key" },
		{ "{\"mitigations\": {\"x\": {\"params\": {\"a\": 99999999999999999999}}}}",
		  "not JSON" },
		{ "{\"mitigations\": {\"x\": {}, \"x\": {}}}", "not JSON" },
		{ "{\"probes\": {\"p\": {\"enabled\": 1}}}", "probes.p.enabled" },
		{ "{\"probes\": {\"p\": {\"threshold_ns\": -5}}}", "probes.p.threshold_ns" },
		{ "{\"probes\": {\"p\": {\"threshold\": 5}}}", "probes.p: unknown key" },
		{ "{\"probes\": {\"p/q\": {}}}", "probes: bad id" },
		{ "{\"probes\": 3}", "probes: not an object" },
	};
	struct policy_doc doc;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_int_equal(parse(bad[i].json, &doc, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].why))
			fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, bad[i].why);
		assert_true(err[0] != '\0');
	}
}

static void test_limits(void **state)
{
	char json[4096], err[256];
	struct policy_doc doc;
	size_t n = 0;
	int i;

	(void)state;
	n += (size_t)snprintf(json + n, sizeof(json) - n, "{\"probes\": {");
	for (i = 0; i < POLICY_MAX_ENTRIES + 1; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "%s\"p%d\": {}", i ? "," : "", i);
	snprintf(json + n, sizeof(json) - n, "}}");
	assert_int_equal(parse(json, &doc, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 16"));

	n = (size_t)snprintf(json, sizeof(json), "{\"mitigations\": {\"m\": {\"params\": {");
	for (i = 0; i < POLICY_MAX_PARAMS + 1; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "%s\"k%d\": 1", i ? "," : "", i);
	snprintf(json + n, sizeof(json) - n, "}}}}");
	assert_int_equal(parse(json, &doc, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 8"));

	/* a short err buffer is cut, never overrun */
	assert_int_equal(parse("{\"mitigations\": {\"x\": {\"mode\": 1}}}", &doc, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
}

/* kmemd's check on upload: what this release's module has, in its ranges. */
static void test_known(void **state)
{
	static const struct {
		const char *json, *err;
	} cases[] = {
		{ "{\"mitigations\": {\"from-a-newer-module\": {}}}",
		  "mitigations: unknown mitigation \"from-a-newer-module\" (known: kasan-flush-batch, "
		  "tlb-gen, rstat-yield, usercopy-fastpath, kasan-quarantine)" },
		{ "{\"mitigations\": {\"rstat-yield\": {\"params\": {\"every_cpu\": 2}}}}",
		  "mitigations.rstat-yield.params: unknown param \"every_cpu\"" },
		{ "{\"mitigations\": {\"tlb-gen\": {\"params\": {\"every_cpus\": 2}}}}",
		  "mitigations.tlb-gen.params: unknown param \"every_cpus\"" },
		{ "{\"mitigations\": {\"rstat-yield\": {\"params\": {\"every_cpus\": 0}}}}",
		  "mitigations.rstat-yield.params.every_cpus: 0 is out of range [1, 4096]" },
		{ "{\"mitigations\": {\"kasan-quarantine\": {\"params\": {\"max_fraction\": 4097}}}}",
		  "mitigations.kasan-quarantine.params.max_fraction: 4097 is out of range [4, 4096]" },
		{ "{\"mitigations\": {\"kasan-quarantine\": {\"params\": {\"batch_bytes\": 4095}}}}",
		  "mitigations.kasan-quarantine.params.batch_bytes: 4095 is out of range [4096, "
		  "1073741824]" },
		{ "{\"mitigations\": {\"usercopy-fastpath\": {\"params\": {\"trip_call_ms\": 0}}}}",
		  "mitigations.usercopy-fastpath.params.trip_call_ms: 0 is out of range [1, 600000]" },
		{ "{\"mitigations\": {\"kasan-flush-batch\": {\"params\": {\"trip_call_ms\": 600001}}}}",
		  "mitigations.kasan-flush-batch.params.trip_call_ms: 600001 is out of range [1, "
		  "600000]" },
		{ "{\"mitigations\": {\"tlb-gen\": {\"params\": {\"trip_call_ms\": 100}}}}",
		  "mitigations.tlb-gen.params: unknown param \"trip_call_ms\"" },
		{ "{\"probes\": {\"vmap-purge-flushes\": {\"enabled\": true}}}",
		  "probes: unknown probe \"vmap-purge-flushes\" (known: rstat-flush, "
		  "usercopy-vmalloc, vmap-purge, kasan-reduce, tlb-shootdown)" },
	};
	static const char good[] =
		"{\"mitigations\": {"
		"  \"rstat-yield\": {\"mode\": \"on\","
		"    \"params\": {\"every_cpus\": 4096, \"trip_call_ms\": 5000}},"
		"  \"kasan-quarantine\": {\"params\": {\"batch_bytes\": 4096, \"max_fraction\": 4,"
		"    \"trip_call_ms\": 600000}},"
		"  \"usercopy-fastpath\": {\"mode\": \"off\", \"params\": {\"trip_call_ms\": 1}},"
		"  \"kasan-flush-batch\": {\"params\": {\"trip_call_ms\": 1}}"
		"}, \"probes\": {\"vmap-purge\": {\"threshold_ns\": 1000000}}}";
	struct policy_doc doc;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the agent takes each (a newer module may have it); kmemd does not */
		assert_int_equal(parse(cases[i].json, &doc, err, sizeof(err)), 0);
		assert_int_equal(policy_doc_check_known(&doc, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, cases[i].err);
	}
	assert_int_equal(parse(good, &doc, err, sizeof(err)), 0);
	assert_int_equal(policy_doc_check_known(&doc, err, sizeof(err)), 0);
}

/* A rollback policy must state everything the rolled out one changed. */
static void test_undoes(void **state)
{
	static const struct {
		const char *doc, *back, *err;
	} cases[] = {
		{ "{\"mitigations\": {\"a\": {\"mode\": \"on\"}}}",
		  "{\"mitigations\": {\"a\": {\"mode\": \"off\"}}}", NULL },
		{ "{\"mitigations\": {\"a\": {\"mode\": \"on\"}, \"b\": {\"mode\": \"off\"}}}",
		  "{\"mitigations\": {\"a\": {\"mode\": \"off\"}}}",
		  "mitigations.b: the mode is not stated" },
		{ "{\"mitigations\": {\"a\": {\"params\": {\"k\": 1}}}}",
		  "{\"mitigations\": {\"a\": {\"params\": {\"k\": 2}}}}",
		  "mitigations.a: the mode is not stated" },
		{ "{\"mitigations\": {\"a\": {}}}", "{}", NULL },
		{ "{\"probes\": {\"p\": {\"enabled\": true}}}", "{\"probes\": {\"p\": {}}}",
		  "probes.p: enabled is not stated" },
		{ "{\"probes\": {\"p\": {\"threshold_ns\": 5}}}", "{}", NULL },
		{ "{\"probes\": {\"p\": {\"enabled\": false}}}",
		  "{\"probes\": {\"p\": {\"enabled\": true}}}", NULL },
	};
	struct policy_doc doc, back;
	char err[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(parse(cases[i].doc, &doc, err, sizeof(err)), 0);
		assert_int_equal(parse(cases[i].back, &back, err, sizeof(err)), 0);
		err[0] = '\0';
		assert_int_equal(policy_doc_undoes(&doc, &back, err, sizeof(err)),
				 cases[i].err ? -EINVAL : 0);
		assert_string_equal(err, cases[i].err ? cases[i].err : "");
	}
}

/* kmemd's rule for policy names, which kmemctl and the agent share. */
static void test_name(void **state)
{
	static const char *const good[] = {
		"a",
		"base",
		"Web-1.base_2",
		"...",
		"-x",
		"123456789012345678901234567890123456789012345678901234567890123", /* 63 */
	};
	static const char *const bad[] = {
		"", /* empty */
		"1234567890123456789012345678901234567890123456789012345678901234", /* 64 */
		"web base",
		"web/base",
		"base\n",
		"tab\tx",
		"ba$e",
		"b\xc3\xa4se",
		"\"q\"",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++)
		if (!policy_name_valid(good[i]))
			fail_msg("\"%s\" refused", good[i]);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		if (policy_name_valid(bad[i]))
			fail_msg("\"%s\" taken", bad[i]);
	assert_false(policy_name_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),   cmocka_unit_test(test_bad),
		cmocka_unit_test(test_limits), cmocka_unit_test(test_known),
		cmocka_unit_test(test_undoes), cmocka_unit_test(test_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
