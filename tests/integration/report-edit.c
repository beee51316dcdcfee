// SPDX-License-Identifier: GPL-2.0
/*
 * report-edit IN OUT PROBE COUNT: a real report with one probe sample
 * added that decodes fine but no agent sends (a name that is no name, or a
 * histogram whose count is not the sum of its one bucket, 1), for kmemd's
 * validation to refuse.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kmemctl/v1/report.pb-c.h"

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	Kmemctl__V1__ProbeSample p = KMEMCTL__V1__PROBE_SAMPLE__INIT, *pp[1] = { &p };
	Kmemctl__V1__Histogram h = KMEMCTL__V1__HISTOGRAM__INIT;
	uint64_t one = 1;
	Kmemctl__V1__ProbeSample **probes;
	Kmemctl__V1__Report *rep;
	size_t len, n;
	FILE *f;

	if (argc != 5) {
		fprintf(stderr, "usage: report-edit IN OUT PROBE COUNT\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	len = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	rep = kmemctl__v1__report__unpack(NULL, len, buf);
	if (!rep) {
		fprintf(stderr, "report-edit: '%s' is not a report\n", argv[1]);
		return 1;
	}
	h.first_bucket = 20;
	h.n_counts = 1;
	h.counts = &one;
	h.count = strtoull(argv[4], NULL, 10);
	p.probe = argv[3];
	p.hist = &h;
	n = rep->n_probes;
	probes = rep->probes;
	rep->n_probes = 1;
	rep->probes = pp;
	len = kmemctl__v1__report__pack(rep, buf);
	/* what unpack made is freed as it was made */
	rep->n_probes = n;
	rep->probes = probes;
	kmemctl__v1__report__free_unpacked(rep, NULL);
	f = fopen(argv[2], "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "report-edit: cannot write '%s'\n", argv[2]);
		return 1;
	}
	return 0;
}
