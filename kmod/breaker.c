// SPDX-License-Identifier: GPL-2.0
/*
 * The breaker: the module turns a mitigation off by itself when it sees
 * the harm the mitigation could cause, with no agent involved.
 *
 * What trips a mitigation while it is armed (mode on, transition included):
 * - one call of its replacement running longer than its trip_call_ms,
 *   counting only the time it ran (kmem_call_ran()), seen when the call
 *   returns or, for a call still running, by a timer on each CPU every
 *   CHECK_PERIOD_MS that looks at the task it interrupted: a hard-irq
 *   hrtimer as the soft-lockup watchdog's, since a timer softirq deferred
 *   to ksoftirqd waits out a CPU spinning with preemption off, and local,
 *   since only there is the task's own accounting safe to read and fresh;
 * - a soft or hard lockup, RCU stall or hung task the kernel reports
 *   (watchdog.c): on a task inside its replacement, at once; on any other
 *   task, when it went on within breaker_window_s;
 * - a livepatch transition it started stalling past livepatch_reverse_ms
 *   (livepatch.c), which turns every livepatched mitigation off.
 *
 * Detection runs wherever the kernel reports, NMI included, so it only
 * fills a per-mitigation request and queues work; the switch-off runs from
 * a high-priority unbound workqueue, since the system may be stalling on
 * some CPU. Requests made in NMI, where no work can be queued, are picked
 * up by the timer, or by an irq_work once the CPU takes interrupts again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpuhotplug.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "kmem.h"

bool kmem_breaker_enabled = true;
module_param_named(breaker, kmem_breaker_enabled, bool, 0644);
MODULE_PARM_DESC(breaker,
		 "turn a mitigation off when it harms the kernel; 0 also stops timing calls (default 1)");

static unsigned int breaker_window_s = 600;
module_param(breaker_window_s, uint, 0644);
MODULE_PARM_DESC(breaker_window_s,
		 "a lockup, stall or hung task outside any replacement trips the mitigations that went on this recently (default 600)");

/* Well under a quarter of a second, so a call that never returns is off within one. */
#define CHECK_PERIOD_MS 200

DEFINE_PER_CPU(struct kmem_call[KMEMCTL_MIT_COUNT], kmem_calls);
bool kmem_breaker_armed[KMEMCTL_MIT_COUNT];
u64 kmem_breaker_limit[KMEMCTL_MIT_COUNT];
u64 kmem_call_max[KMEMCTL_MIT_COUNT];
static unsigned long armed_at[KMEMCTL_MIT_COUNT];

enum { REQ_FREE, REQ_FILLING, REQ_READY };

/* One trip request per mitigation; the first cause wins until it is carried out. */
static struct {
	atomic_t state;
	struct kmem_trip trip;
} requests[KMEMCTL_MIT_COUNT];

static struct workqueue_struct *trip_wq;
static DEFINE_PER_CPU(struct hrtimer, check_timers);
static int online_state;
static struct irq_work nmi_kick;

#define CAUSE_NAME(e, n, name)	\
	[n] = name,
static const char *const cause_names[] = {
	KMEMCTL_TRIP_CAUSES(CAUSE_NAME)
};

static void trip_fn(struct work_struct *work)
{
	struct kmem_trip trip;
	int id;

	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		/* pairs with request_done() */
		if (atomic_read_acquire(&requests[id].state) != REQ_READY)
			continue;
		trip = requests[id].trip;
		kmem_mitigation_trip(id, &trip);
		atomic_set_release(&requests[id].state, REQ_FREE);
	}
}

static DECLARE_WORK(trip_work, trip_fn);

static void kick(void)
{
	if (in_nmi())
		irq_work_queue(&nmi_kick);
	else
		queue_work(trip_wq, &trip_work);
}

static void nmi_kick_fn(struct irq_work *work)
{
	queue_work(trip_wq, &trip_work);
}

/* Claims id's request, or returns NULL when the mitigation is not armed or one is pending. */
static struct kmem_trip *request_claim(int id)
{
	if (!READ_ONCE(kmem_breaker_armed[id]) || !READ_ONCE(trip_wq))
		return NULL;
	if (atomic_cmpxchg(&requests[id].state, REQ_FREE, REQ_FILLING) != REQ_FREE)
		return NULL;
	return &requests[id].trip;
}

static void request_done(int id)
{
	atomic_set_release(&requests[id].state, REQ_READY);
}

static void request_task(struct kmem_trip *t, struct task_struct *task)
{
	t->pid = task ? task_pid_nr(task) : 0;
	if (task)
		strscpy(t->comm, task->comm, sizeof(t->comm));
	else
		t->comm[0] = '\0';
}

void kmem_breaker_slow(enum kmemctl_mitigation id, const char *func, u64 ran, int cpu)
{
	u64 limit = READ_ONCE(kmem_breaker_limit[id]);
	struct kmem_trip *t;

	if (!READ_ONCE(kmem_breaker_enabled))
		return;
	t = request_claim(id);
	if (!t)
		return;
	t->cause = KMEMCTL_TRIP_SLOW_CALL;
	t->value = ran;
	t->threshold = limit;
	request_task(t, current);
	if (cpu < 0)
		snprintf(t->reason, sizeof(t->reason),
			 "tripped: a %s replacement call ran %llu ms, limit %llu ms", func,
			 div_u64(ran, NSEC_PER_MSEC), div_u64(limit, NSEC_PER_MSEC));
	else
		snprintf(t->reason, sizeof(t->reason),
			 "tripped: a %s replacement call on CPU %d has run %llu ms, limit %llu ms",
			 func, cpu, div_u64(ran, NSEC_PER_MSEC), div_u64(limit, NSEC_PER_MSEC));
	request_done(id);
	kick();
}

/* The longest call yet; a race between CPUs may keep the other's. */
void kmem_call_max_seen(enum kmemctl_mitigation id, u64 ran)
{
	u64 max = READ_ONCE(kmem_call_max[id]);

	while (ran > max) {
		u64 was = cmpxchg64(&kmem_call_max[id], max, ran);

		if (was == max)
			break;
		max = was;
	}
}

/*
 * The call the interrupted task is inside, if it began on this CPU. A
 * call that migrated is measured when it returns; a lockup it causes
 * where it moved is the kernel's report to make (kmem_breaker_report()).
 * On a healthy kernel, nothing is past its limit.
 */
static enum hrtimer_restart check_fn(struct hrtimer *timer)
{
	int id, cpu = smp_processor_id();
	bool armed = false, queued = false;
	struct kmem_call *c;
	u64 ran;

	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		if (!READ_ONCE(kmem_breaker_armed[id]))
			continue;
		armed = true;
		if (atomic_read(&requests[id].state) == REQ_READY) {
			/* made in NMI, where no work could be queued */
			queued = true;
			continue;
		}
		c = this_cpu_ptr(&kmem_calls[id]);
		/* pairs with kmem_call_begin(): the owner's fields come first */
		if (smp_load_acquire(&c->owner) != current || c->owner_start != current->start_time)
			continue;
		ran = kmem_call_ran(c);
		if (ran > READ_ONCE(kmem_breaker_limit[id]))
			kmem_breaker_slow(id, c->func, ran, cpu);
	}
	if (queued)
		queue_work(trip_wq, &trip_work);
	if (!armed)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ms_to_ktime(CHECK_PERIOD_MS));
	return HRTIMER_RESTART;
}

static void check_start(void *unused)
{
	hrtimer_start(this_cpu_ptr(&check_timers), ms_to_ktime(CHECK_PERIOD_MS),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static bool any_armed(void)
{
	int id;

	for (id = 0; id < KMEMCTL_MIT_COUNT; id++)
		if (READ_ONCE(kmem_breaker_armed[id]))
			return true;
	return false;
}

/* A CPU that comes online while a mitigation is armed is checked too. */
static int check_online(unsigned int cpu)
{
	if (any_armed())
		check_start(NULL);
	return 0;
}

/* Else the timer would move to another CPU and check its tasks twice. */
static int check_offline(unsigned int cpu)
{
	hrtimer_cancel(this_cpu_ptr(&check_timers));
	return 0;
}

/* The replaced function task is inside for mitigation id, or NULL. */
static const char *inside(int id, int cpu, struct task_struct *task)
{
	struct kmem_call *c;
	int i;

	if (!task) {
		/* the task is unknown: whatever runs on its CPU */
		if (cpu < 0)
			return NULL;
		c = per_cpu_ptr(&kmem_calls[id], cpu);
		/* pairs with kmem_call_begin(): the func is the owner's */
		return smp_load_acquire(&c->owner) ? READ_ONCE(c->func) : NULL;
	}
	/* it may have migrated since its call began */
	for_each_possible_cpu(i) {
		c = per_cpu_ptr(&kmem_calls[id], i);
		/* pairs with kmem_call_begin(), as above */
		if (smp_load_acquire(&c->owner) == task)
			return READ_ONCE(c->func);
	}
	return NULL;
}

static int describe(char *buf, size_t len, u32 cause, int cpu, struct task_struct *task)
{
	if (cause == KMEMCTL_TRIP_HUNG_TASK)
		return scnprintf(buf, len, "hung task %s:%d", task->comm, task_pid_nr(task));
	if (cpu < 0)
		return scnprintf(buf, len, "%s", cause_names[cause]);
	if (!task)
		return scnprintf(buf, len, "%s on CPU %d", cause_names[cause], cpu);
	return scnprintf(buf, len, "%s on CPU %d (%s)", cause_names[cause], cpu, task->comm);
}

/*
 * A report on a task inside a replacement trips that mitigation alone: the
 * kernel named the culprit. Any other report cannot be pinned on one, so
 * it trips every mitigation that went on within breaker_window_s.
 */
void kmem_breaker_report(u32 cause, int cpu, struct task_struct *task)
{
	unsigned long window = (unsigned long)READ_ONCE(breaker_window_s) * HZ;
	const char *funcs[KMEMCTL_MIT_COUNT];
	bool attributed = false, kicked = false;
	struct kmem_trip *t;
	char what[64];
	int id;

	if (!READ_ONCE(kmem_breaker_enabled) || cause >= ARRAY_SIZE(cause_names) ||
	    !cause_names[cause])
		return;
	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		funcs[id] = READ_ONCE(kmem_breaker_armed[id]) ? inside(id, cpu, task) : NULL;
		attributed |= !!funcs[id];
	}
	describe(what, sizeof(what), cause, cpu, task);
	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		if (attributed ? !funcs[id] :
				 !READ_ONCE(kmem_breaker_armed[id]) ||
				 time_after(jiffies, READ_ONCE(armed_at[id]) + window))
			continue;
		t = request_claim(id);
		if (!t)
			continue;
		t->cause = cause;
		t->value = 0;
		t->threshold = 0;
		request_task(t, task);
		if (attributed)
			snprintf(t->reason, sizeof(t->reason),
				 "tripped: %s inside a %s replacement call", what, funcs[id]);
		else
			snprintf(t->reason, sizeof(t->reason),
				 "tripped: %s within %u s of mode on", what,
				 READ_ONCE(breaker_window_s));
		request_done(id);
		kicked = true;
	}
	if (kicked)
		kick();
}

/*
 * The stalled transition holds back every livepatched mitigation that is
 * on, not only the one that started it: they share the patch, and turning
 * them all off is what reverses it.
 */
void kmem_breaker_livepatch_stall(u64 busy_ms, u64 limit_ms, const char *why, pid_t pid,
				  const char *comm)
{
	struct kmem_trip *t;
	bool kicked = false;
	int id;

	for (id = 0; id < KMEMCTL_MIT_COUNT; id++) {
		if (!kmem_mitigation_livepatched(id))
			continue;
		t = request_claim(id);
		if (!t)
			continue;
		t->cause = KMEMCTL_TRIP_LIVEPATCH_STALL;
		t->value = busy_ms * NSEC_PER_MSEC;
		t->threshold = limit_ms * NSEC_PER_MSEC;
		t->pid = pid;
		strscpy(t->comm, comm, sizeof(t->comm));
		snprintf(t->reason, sizeof(t->reason),
			 "tripped: livepatch patching stalled for %llu ms, limit %llu ms, reversed: %s",
			 busy_ms, limit_ms, why);
		request_done(id);
		kicked = true;
	}
	if (kicked)
		kick();
}

void kmem_call_abandon(enum kmemctl_mitigation id)
{
	struct kmem_call *c;
	int cpu;

	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(&kmem_calls[id], cpu);
		if (READ_ONCE(c->owner) == current)
			WRITE_ONCE(c->owner, NULL);
	}
}

void kmem_breaker_set_limit(enum kmemctl_mitigation id, u64 limit_ms)
{
	WRITE_ONCE(kmem_breaker_limit[id], limit_ms * NSEC_PER_MSEC);
}

void kmem_breaker_arm(enum kmemctl_mitigation id, u64 limit_ms)
{
	int cpu;

	/* a task that died inside a replacement never freed its slot */
	for_each_possible_cpu(cpu)
		WRITE_ONCE(per_cpu_ptr(&kmem_calls[id], cpu)->owner, NULL);
	kmem_breaker_set_limit(id, limit_ms);
	WRITE_ONCE(kmem_call_max[id], 0);
	WRITE_ONCE(armed_at[id], jiffies);
	WRITE_ONCE(kmem_breaker_armed[id], true);
	/*
	 * Each CPU starts its own timer, as pinned timers start where they
	 * are started; one coming online after the flag is set starts its own
	 * in check_online().
	 */
	on_each_cpu(check_start, NULL, 1);
}

void kmem_breaker_disarm(enum kmemctl_mitigation id)
{
	WRITE_ONCE(kmem_breaker_armed[id], false);
}

int kmem_breaker_init(void)
{
	int cpu;

	/* not WQ_MEM_RECLAIM: a trip flushes livepatch's and ftrace's own work */
	trip_wq = alloc_workqueue("kmemctl_breaker", WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!trip_wq)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct hrtimer *timer = per_cpu_ptr(&check_timers, cpu);

		hrtimer_init(timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		timer->function = check_fn;
	}
	init_irq_work(&nmi_kick, nmi_kick_fn);
	online_state = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "kmemctl/breaker:online",
						 check_online, check_offline);
	if (online_state < 0) {
		destroy_workqueue(trip_wq);
		trip_wq = NULL;
		return online_state;
	}
	return 0;
}

/* After the mitigations are off and the kernel's reports are unhooked. */
void kmem_breaker_exit(void)
{
	int cpu;

	cpuhp_remove_state_nocalls(online_state);
	for_each_possible_cpu(cpu)
		hrtimer_cancel(per_cpu_ptr(&check_timers, cpu));
	irq_work_sync(&nmi_kick);
	destroy_workqueue(trip_wq);
	trip_wq = NULL;
}
