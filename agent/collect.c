// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "macro.h"
#include "procstat.h"

static const char *const names[] = {
	[COLLECT_PROBES] = "probes",	 [COLLECT_STATES] = "mitigations",
	[COLLECT_FACTS] = "facts",	 [COLLECT_TLB] = "interrupts",
	[COLLECT_PRESSURE] = "pressure", [COLLECT_MEMSTAT] = "memory.stat",
};

/* Where to time memory.stat when the configuration names none. */
static const char *const memstat_paths[] = {
	"/sys/fs/cgroup/system.slice/memory.stat",
	"/sys/fs/cgroup/memory.stat",
};

const char *collect_name(enum collector c)
{
	return c < COLLECT_N ? names[c] : "?";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

int collect_memstat(const struct rootfs *rfs, const char *path, uint64_t *ns)
{
	char buf[8192];
	uint64_t t0 = now_ns();
	ssize_t n;
	int fd, r = 0;

	fd = rootfs_open(rfs, path, O_RDONLY);
	if (fd < 0)
		return fd;
	do
		n = read(fd, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
	if (n < 0)
		r = negative_errno();
	close(fd);
	*ns = now_ns() - t0;
	return r;
}

static int memstat(struct collect *c)
{
	size_t i;
	int r = -ENOENT;

	if (c->cfg->memstat)
		return collect_memstat(c->rfs, c->cfg->memstat, &c->out.memstat_ns);
	for (i = 0; i < ARRAY_SIZE(memstat_paths) && r == -ENOENT; i++)
		r = collect_memstat(c->rfs, memstat_paths[i], &c->out.memstat_ns);
	return r;
}

static int run(struct collect *c, enum collector which)
{
	struct collect_out *o = &c->out;

	switch (which) {
	case COLLECT_PROBES:
		return telemetry_read(c->rfs, &o->probes);
	case COLLECT_STATES:
		/* who set each mode is the loop's to fill in */
		return states_collect(c->rfs, &o->states, NULL, NULL);
	case COLLECT_FACTS:
		return facts_collect(c->rfs, c->cfg, &o->facts);
	case COLLECT_TLB:
		return procstat_tlb_shootdowns(c->rfs, &o->tlb_shootdowns);
	case COLLECT_PRESSURE:
		return procstat_memory_pressure(c->rfs, &o->psi_some, &o->psi_full);
	case COLLECT_MEMSTAT:
		return memstat(c);
	default:
		return -EINVAL;
	}
}

/* A round, cut short between two collectors when the thread is to stop. */
static void round_run(struct collect *c)
{
	uint64_t one = 1;
	int i;

	for (i = 0; i < COLLECT_N && !atomic_load(&c->stopping); i++) {
		atomic_store_explicit(&c->running, i, memory_order_relaxed);
		c->out.rc[i] = run(c, (enum collector)i);
		atomic_fetch_or_explicit(&c->done, 1U << i, memory_order_release);
	}
	atomic_store_explicit(&c->running, -1, memory_order_relaxed);
	/* the counter is far from full; a failed write has nothing to undo */
	if (write(c->efd, &one, sizeof(one)) < 0)
		return;
}

static void *thread_main(void *arg)
{
	struct collect *c = arg;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (!c->request && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		c->request = false;
		pthread_mutex_unlock(&c->lock);
		round_run(c);
	}
}

int collect_init(struct collect *c, const struct rootfs *rfs, const struct agent_config *cfg)
{
	int r;

	c->rfs = rfs;
	c->cfg = cfg;
	c->started = c->request = c->stop = false;
	atomic_init(&c->stopping, false);
	atomic_init(&c->done, (1U << COLLECT_N) - 1);
	atomic_init(&c->running, -1);
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0)
		return negative_errno();
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	r = -pthread_create(&c->thread, NULL, thread_main, c);
	if (r < 0) {
		close(c->efd);
		c->efd = -1;
		return r;
	}
	c->started = true;
	return 0;
}

int collect_start(struct collect *c)
{
	if (collect_done(c) != (1U << COLLECT_N) - 1)
		return -EBUSY;
	atomic_store_explicit(&c->done, 0, memory_order_relaxed);
	pthread_mutex_lock(&c->lock);
	c->request = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int collect_stop(struct collect *c, uint64_t grace_ms)
{
	struct timespec until;
	int r;

	if (!c->started)
		return 0;
	atomic_store(&c->stopping, true);
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(grace_ms / 1000);
	until.tv_nsec += (long)(grace_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	r = pthread_timedjoin_np(c->thread, NULL, &until);
	if (r == ETIMEDOUT)
		return -EBUSY;
	c->started = false;
	return -r;
}

void collect_free(struct collect *c)
{
	if (c->efd >= 0)
		close(c->efd);
	c->efd = -1;
}
