// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "agent.h"
#include "log.h"

static void test_labels(void **state)
{
	char *keys[] = { "role", "dc" }, *values[] = { "web", "fra 1" };
	struct agent_config c = { .labels = { keys, values, 2 } };

	(void)state;
	log_set_max_level(LOG_EMERG);
	assert_int_equal(agent_config_check(&c), 0);
	/* what kmemd would refuse in every report is refused here, at start */
	keys[1] = "d c";
	assert_int_equal(agent_config_check(&c), -EINVAL);
	keys[1] = "dc";
	values[1] = "fra\n1";
	assert_int_equal(agent_config_check(&c), -EINVAL);
	values[1] = "fra\xff";
	assert_int_equal(agent_config_check(&c), -EINVAL);
	values[1] = "fra 1";
	c.host_id = "web 1";
	assert_int_equal(agent_config_check(&c), -EINVAL);
	c.host_id = "web-1";
	assert_int_equal(agent_config_check(&c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
