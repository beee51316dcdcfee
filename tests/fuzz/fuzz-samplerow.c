// SPDX-License-Identifier: GPL-2.0
/*
 * A report_samples row as kmemd's readers decode it (schema 8,
 * daemon/store-rows.c): the file may have been written by an
 * older or broken kmemd, or edited. Input: the probes column's length
 * (u16, little-endian), the probes column, then the counts column. A row
 * rs_open() accepts must read back probe by probe within its columns, use
 * every byte of counts, and encode again to the same bytes.
 */
#include "fuzz.h"
#include "store-sqlite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf probes = { 0 }, counts = { 0 };
	const uint8_t *p, *c;
	size_t plen, clen, room = 1, used = 0;
	struct rs_probe x[64];
	struct rs_row row;
	const char *why;
	unsigned n = 0;
	struct hist h;

	if (size < 2)
		return 0;
	plen = data[0] | (size_t)data[1] << 8;
	if (plen > size - 2)
		return 0;
	p = data + 2;
	c = p + plen;
	clen = size - 2 - plen;
	if (rs_open(&row, p, plen, c, clen, &why) < 0) {
		FUZZ_CHECK(why && *why);
		return 0;
	}
	while (n < 64 && rs_next(&row, &x[n])) {
		FUZZ_CHECK(x[n].name_len <= RS_NAME_MAX);
		FUZZ_CHECK(x[n].first_bucket + x[n].nbuckets <= HIST_BUCKETS);
		FUZZ_CHECK(x[n].buckets >= c && x[n].buckets + 8 * x[n].nbuckets <= c + clen);
		rs_hist(&x[n], &h);
		FUZZ_CHECK(rs_is(&x[n], "") == (x[n].name_len == 0));
		used += 8 * x[n].nbuckets;
		room += rs_room(x[n].name_len);
		n++;
	}
	if (n == 64)
		return 0;
	FUZZ_CHECK(used == clen);
	FUZZ_CHECK(buf_reserve(&probes, room) == 0 && buf_reserve(&counts, clen ?: 1) == 0);
	rs_begin(&probes, &counts);
	for (unsigned i = 0; i < n; i++)
		rs_add(&probes, &counts, &x[i]);
	FUZZ_CHECK(probes.len == plen && !memcmp(probes.p, p, plen));
	FUZZ_CHECK(counts.len == clen && (!clen || !memcmp(counts.p, c, clen)));
	free(probes.p);
	free(counts.p);
	return 0;
}
