// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

/* Run fn with stderr redirected to a pipe and return what it wrote. */
static char *capture(void (*fn)(void))
{
	static char buf[4096];
	int p[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	fflush(stderr);
	dup2(p[1], STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int returned;

static void emit_levels(void)
{
	log_set_max_level(LOG_INFO);
	log_debug("hidden %d", 1);
	log_info("shown %s", "info");
	returned = log_error_errno(-ENOENT, "open '%s' failed: %m", "/etc/x");
}

static void test_stderr(void **state)
{
	char *out;

	(void)state;
	log_setup("kmem-test", LOG_TARGET_STDERR);
	assert_false(log_to_journal());
	out = capture(emit_levels);
	assert_string_equal(out,
			    "kmem-test: shown info\n"
			    "kmem-test: open '/etc/x' failed: No such file or directory [err]\n");
	assert_int_equal(returned, -ENOENT);
}

static void emit_event(void)
{
	static const char *const fields[] = { "MITIGATION=rstat-yield", "OLD=off", "NEW=on", NULL };

	log_event(LOG_NOTICE, "3f7d67cc0198446a82197c924055d173", fields, "mitigation %s on",
		  "rstat-yield");
}

static void test_event_fields(void **state)
{
	(void)state;
	log_setup("kmem-test", LOG_TARGET_STDERR);
	assert_string_equal(capture(emit_event), "kmem-test: mitigation rstat-yield on "
						 "MITIGATION=rstat-yield OLD=off NEW=on\n");
}

/* A peer's value can hold anything: each entry stays one line, its fields one each. */
static void emit_hostile(void)
{
	static const char *const fields[] = { "HOST_ID=web\nMITIGATION=forged", "DETAIL=\x1b[2J",
					      NULL };

	log_event(LOG_NOTICE, NULL, fields, "report from '%s' refused",
		  "h\nkmem-test: all is well");
}

static void test_hostile_values(void **state)
{
	(void)state;
	log_setup("kmem-test", LOG_TARGET_STDERR);
	assert_string_equal(capture(emit_hostile),
			    "kmem-test: report from 'h\\nkmem-test: all is well' refused "
			    "HOST_ID=web\\nMITIGATION=forged DETAIL=\\x1b[2J\n");
}

static void test_auto_target(void **state)
{
	(void)state;
	/* JOURNAL_STREAM naming another stream must not divert stderr. */
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_setup("kmem-test", LOG_TARGET_AUTO);
	assert_false(log_to_journal());
	setenv("JOURNAL_STREAM", "garbage", 1);
	log_setup("kmem-test", LOG_TARGET_AUTO);
	assert_false(log_to_journal());
	unsetenv("JOURNAL_STREAM");
}

static void test_levels(void **state)
{
	(void)state;
	assert_int_equal(log_level_from_string("debug"), LOG_DEBUG);
	assert_int_equal(log_level_from_string("err"), LOG_ERR);
	assert_int_equal(log_level_from_string("loud"), -EINVAL);
	assert_string_equal(log_level_to_string(LOG_WARNING), "warning");
	assert_string_equal(log_level_to_string(99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stderr),	       cmocka_unit_test(test_event_fields),
		cmocka_unit_test(test_hostile_values), cmocka_unit_test(test_auto_target),
		cmocka_unit_test(test_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
