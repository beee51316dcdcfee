// SPDX-License-Identifier: GPL-2.0
/*
 * tlbstorm: remote TLB flushes of a user mm.
 *
 *   tlbstorm [-i ITER] [-t THREADS] [-p PAGES] [-m munmap|mprotect]
 *
 * THREADS threads of one process, each pinned to a different CPU of the
 * process's affinity mask (the first THREADS of them). The main thread, on the
 * first CPU, does ITER times: mmap PAGES anonymous pages, write to each and
 * munmap them (-m mprotect: write to PAGES pages mapped once, mprotect them
 * read-only and back to read-write). The other THREADS - 1 threads spin in
 * user space on their CPUs, so the mm stays live there and every munmap or
 * mprotect sends TLB-flush IPIs to them. Prints
 *   iterations=<n> elapsed_ns=<n>
 * timing the main loop only.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

const char *prog = "tlbstorm";

static atomic_int stop;
static atomic_int ready;

static void usage(void)
{
	printf("usage: tlbstorm [-i ITER] [-t THREADS] [-p PAGES] [-m munmap|mprotect]\n"
	       "Pin THREADS threads (default 2) to different CPUs; the first loops ITER times\n"
	       "(default 1000) over PAGES pages (default 1): mmap, write, munmap (or mprotect\n"
	       "read-only and back), while the others spin, receiving TLB-flush IPIs.\n"
	       "Prints iterations=<n> elapsed_ns=<n>.\n");
}

static void *spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		__builtin_ia32_pause();
	return NULL;
}

static int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void touch(char *p, size_t pages, size_t ps, uint64_t i)
{
	for (size_t j = 0; j < pages; j++)
		*(volatile char *)(p + j * ps) = (char)i;
}

static int run(uint64_t iter, size_t pages, int use_mprotect)
{
	size_t ps = sysconf(_SC_PAGESIZE), len = pages * ps;
	char *p = NULL;
	uint64_t i;

	if (use_mprotect) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			warn_errno(errno, "mmap");
			return -1;
		}
	}
	for (i = 0; i < iter; i++) {
		if (!use_mprotect) {
			p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
				 0);
			if (p == MAP_FAILED) {
				warn_errno(errno, "mmap");
				return -1;
			}
			touch(p, pages, ps, i);
			if (munmap(p, len) < 0) {
				warn_errno(errno, "munmap");
				return -1;
			}
			continue;
		}
		touch(p, pages, ps, i);
		if (mprotect(p, len, PROT_READ) < 0 ||
		    mprotect(p, len, PROT_READ | PROT_WRITE) < 0) {
			warn_errno(errno, "mprotect");
			munmap(p, len);
			return -1;
		}
	}
	if (use_mprotect)
		munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t iter = 1000, t0, t1;
	unsigned int nthreads = 2, started = 0;
	size_t pages = 1;
	int use_mprotect = 0;
	int cpus[CPU_SETSIZE];
	unsigned int ncpus = 0;
	pthread_t *threads;
	cpu_set_t set;
	int opt, ret = 1, err;

	while ((opt = getopt(argc, argv, ":i:t:p:m:h")) != -1) {
		switch (opt) {
		case 'i':
			iter = parse_num(optarg, opt, 1, 1000000000);
			break;
		case 't':
			nthreads = parse_num(optarg, opt, 1, CPU_SETSIZE);
			break;
		case 'p':
			pages = parse_num(optarg, opt, 1, 65536);
			break;
		case 'm':
			if (!strcmp(optarg, "mprotect"))
				use_mprotect = 1;
			else if (strcmp(optarg, "munmap"))
				usage_error("-m: '%s' is not munmap or mprotect", optarg);
			break;
		case 'h':
			usage();
			return 0;
		default:
			bad_option(opt);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);

	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		warn_errno(errno, "sched_getaffinity");
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpus++] = c;
	if (ncpus < nthreads) {
		fprintf(stderr, "%s: %u threads need %u cpus, only %u available\n", prog, nthreads,
			nthreads, ncpus);
		return 1;
	}
	threads = calloc(nthreads, sizeof(*threads));
	if (!threads) {
		warn_errno(ENOMEM, "calloc");
		return 1;
	}
	if (pin_self(cpus[0]) < 0) {
		warn_errno(errno, "pin to cpu %d", cpus[0]);
		goto out;
	}
	for (started = 0; started + 1 < nthreads; started++) {
		pthread_attr_t attr;
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpus[started + 1], &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		err = pthread_create(&threads[started], &attr, spin, NULL);
		pthread_attr_destroy(&attr);
		if (err) {
			warn_errno(err, "thread on cpu %d", cpus[started + 1]);
			goto out;
		}
	}
	while (atomic_load(&ready) < (int)started)
		sched_yield();

	t0 = now_ns();
	if (run(iter, pages, use_mprotect) < 0)
		goto out;
	t1 = now_ns();
	printf("iterations=%" PRIu64 " elapsed_ns=%" PRIu64 "\n", iter, t1 - t0);
	ret = 0;
out:
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return ret;
}
