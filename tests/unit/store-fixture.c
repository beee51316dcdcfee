// SPDX-License-Identifier: GPL-2.0
#include <libpq-fe.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "store-fixture.h"

const char *test_store_url(void)
{
	return getenv("KMEM_STORE_URL");
}

const char *test_store_where(const char *path)
{
	return test_store_url() ?: path;
}

void test_store_sql(const char *sql)
{
	PGconn *c = PQconnectdb(test_store_url());
	PGresult *r;

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
}

void test_store_wipe(const char *path)
{
	if (test_store_url())
		test_store_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
	else
		unlink(path);
}
