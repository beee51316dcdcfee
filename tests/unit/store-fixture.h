/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The store a test runs on: the SQLite file it names, or with
 * KMEM_STORE_URL (tests/pg/with-cluster) that PostgreSQL database, so
 * that one suite runs on both backends.
 */
#ifndef KMEM_TEST_STORE_FIXTURE_H
#define KMEM_TEST_STORE_FIXTURE_H

/* KMEM_STORE_URL, or NULL: the tests' SQLite files. */
const char *test_store_url(void);
/* Where to open the store: the URL, else path. */
const char *test_store_where(const char *path);
/* Everything stored goes: path unlinked, or every table of the database dropped. */
void test_store_wipe(const char *path);
/* SQL on a connection of the test's own; the test fails if it does. */
void test_store_sql(const char *sql);

#endif
