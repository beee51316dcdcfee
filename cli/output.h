/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemctl's output: aligned tables for people (colour only on a terminal,
 * never with NO_COLOR or --color=never) and, with -j, JSON objects that
 * carry a "schema" version so scripts can rely on their shape.
 */
#ifndef KMEMCTL_OUTPUT_H
#define KMEMCTL_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Bumped on any incompatible change to a -j output; docs/cli.md lists the shapes. */
#define KMEMCTL_JSON_SCHEMA 1

/* Whether stdout gets colour: --color=always|never|auto (a TTY and no NO_COLOR). */
void out_color_setup(const char *when, bool *color);

/* o (stolen) with "schema" set, one line (-j) or indented (-p). */
void out_json(json_t *o, bool pretty);

/* A member of a reply kmemd or the agent sent: "" or 0 when it is missing. */
const char *str(json_t *o, const char *key);
long long num(json_t *o, const char *key);

struct table;

struct table *table_new(const char *const *heads);
/* The next cell, left to right, row after row. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A state word (pass, fail, on, tripped...), coloured by what it means. */
void table_state(struct table *t, const char *word);
/* Prints the table with columns aligned, and frees it. */
void table_print(struct table *t, FILE *out, bool color);

/* "3s ago", "5m ago", "2h ago", "4d ago" from a unix time in ms; "never" for 0. */
const char *out_ago(long long unix_ms, char *buf, size_t len);

/* The time now, unix ms. */
long long out_now_ms(void);
/* "in 12 days", "in 5 hours", "expired" from a unix time in ms. */
const char *out_until(long long unix_ms, char *buf, size_t len);

/* A duration for people: "850 ns", "12.5 us", "3.2 ms", "1.50 s". */
const char *out_ns(unsigned long long ns, char *buf, size_t len);

#endif
