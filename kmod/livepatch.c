// SPDX-License-Identifier: GPL-2.0
/*
 * The module's one livepatch. Livepatch names a patch after its module, so
 * a module holds one patch: it carries the replacements of every fix that
 * passed its gates, is enabled when the first livepatched mitigation goes
 * on and disabled when the last goes off. Each replacement runs the
 * kernel's original logic while its mitigation is off, so mode flips while
 * the patch is in place need no transition.
 *
 * Only klp_enable_patch() is exported; a patch is disabled through its own
 * sysfs "enabled" file, and a disabled patch cannot be enabled again, so
 * every enable gets fresh structures. Livepatch holds a module reference
 * while a patch is enabled: rmmod waits for every mitigation to be off.
 *
 * Livepatch switches tasks over in the background and waits for as long as
 * a task keeps an old function on its stack or keeps running in the
 * kernel. A watcher follows each transition through the patch's sysfs
 * files, says how far it got, and reports one that takes longer than
 * livepatch_stall_ms in dmesg and as a KMEMCTL_EV_LIVEPATCH_STALL event.
 * A patching transition still under way after livepatch_reverse_ms is
 * reversed, as kpatch does: the breaker trips every livepatched mitigation
 * that is on, and the last one off writes 0 to "enabled", which turns the
 * transition back. A removal cannot be turned back; it is only reported.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/livepatch.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kmem.h"

#define PATCH_DIR "/sys/kernel/livepatch/" KBUILD_MODNAME
#define ENABLED_PATH PATCH_DIR "/enabled"
#define TRANSITION_PATH PATCH_DIR "/transition"
#define KMEM_LP_FIXES 2
#define WATCH_PERIOD msecs_to_jiffies(500)

static unsigned int livepatch_stall_ms = 10000;
module_param(livepatch_stall_ms, uint, 0644);
MODULE_PARM_DESC(livepatch_stall_ms,
		 "report a livepatch transition still under way after this long (default 10000)");

static unsigned int livepatch_reverse_ms = 60000;
module_param(livepatch_reverse_ms, uint, 0644);
MODULE_PARM_DESC(livepatch_reverse_ms,
		 "reverse a patching transition still under way after this long, 0: never (default 60000)");

/* One enable's worth of structures; livepatch may use them until rmmod. */
struct lp_instance {
	struct klp_patch patch;
	struct klp_object objs[2];
	struct klp_func funcs[KMEM_LP_FUNCS + 1];
	struct lp_instance *older;
};

/* The fixes that passed their gates, in the order they were added. */
static const struct kmem_lp_fix *fixes[KMEM_LP_FIXES];
static unsigned int nr_fixes;

static void fill_funcs(struct klp_func *funcs)
{
	const struct kmem_lp_func *f;
	int i, n = 0;

	for (i = 0; i < nr_fixes; i++)
		for (f = fixes[i]->funcs; f->old_name; f++) {
			funcs[n].old_name = f->old_name;
			funcs[n].new_func = f->new_func;
			n++;
		}
}

static DEFINE_MUTEX(lp_lock);
static unsigned int lp_users;
static struct lp_instance *lp_last;

/* The transition under way, under lp_lock. */
static struct {
	bool busy;
	bool patching;
	bool reported;
	bool reversing;		/* the breaker was asked to turn it back */
	u16 source;		/* the mitigation whose mode write started it */
	unsigned long start;	/* jiffies */
	unsigned int waiting;
	pid_t pid;
	char comm[TASK_COMM_LEN];
} watch;

static void watch_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(watch_work, watch_fn);

int kmem_livepatch_add(const struct kmem_lp_fix *fix)
{
	const struct kmem_lp_func *f;
	int ret, n = 0, i;

	for (i = 0; i < nr_fixes; i++)
		for (f = fixes[i]->funcs; f->old_name; f++)
			n++;
	for (f = fix->funcs; f->old_name; f++)
		n++;
	if (WARN_ON(nr_fixes == KMEM_LP_FIXES || n > KMEM_LP_FUNCS))
		return -ENOSPC;
	ret = fix->prepare();
	if (ret)
		return ret;
	mutex_lock(&lp_lock);
	/* the patch in place was made without it (a record admitted it since) */
	if (lp_users)
		ret = -EBUSY;
	else
		fixes[nr_fixes++] = fix;
	mutex_unlock(&lp_lock);
	return ret;
}

static bool patch_dir_exists(void)
{
	struct path path;

	if (kern_path(PATCH_DIR, 0, &path))
		return false;
	path_put(&path);
	return true;
}

/* The patch's "transition" file: 1 while livepatch is switching tasks. */
static bool in_transition(void)
{
	struct file *f;
	loff_t pos = 0;
	char c = '0';

	f = filp_open(TRANSITION_PATH, O_RDONLY, 0);
	if (IS_ERR(f))
		return false;
	if (kernel_read(f, &c, 1, &pos) != 1)
		c = '0';
	filp_close(f, NULL);
	return c == '1';
}

/*
 * Tasks livepatch has yet to switch: their patch_state is not the target
 * yet. Idle tasks are not on the task list; they switch on their next
 * pass through the idle loop.
 */
static void find_waiting(void)
{
	int target = watch.patching ? KMEM_KLP_PATCHED : KMEM_KLP_UNPATCHED;
	struct task_struct *g, *t;

	watch.waiting = 0;
	watch.pid = 0;
	watch.comm[0] = '\0';
	rcu_read_lock();
	for_each_process_thread(g, t) {
		if (READ_ONCE(t->patch_state) == target)
			continue;
		if (!watch.waiting++) {
			watch.pid = task_pid_nr(t);
			get_task_comm(watch.comm, t);
		}
	}
	rcu_read_unlock();
}

/* Under lp_lock: true, and the watch over, once the transition is done. */
static bool transition_done(void)
{
	if (!watch.busy)
		return true;
	if (watch.patching ? in_transition() : patch_dir_exists())
		return false;
	watch.busy = false;
	if (watch.reported)
		pr_info("livepatch: %s done after %u ms\n", watch.patching ? "patching" : "removal",
			jiffies_to_msecs(jiffies - watch.start));
	return true;
}

/* Under lp_lock, after find_waiting(): asks the breaker to turn the patching back. */
static void reverse(unsigned long busy_ms, unsigned int limit_ms)
{
	char why[80];

	watch.reversing = true;
	if (watch.waiting)
		snprintf(why, sizeof(why), "%u tasks not switched, first %s:%d", watch.waiting,
			 watch.comm, watch.pid);
	else
		snprintf(why, sizeof(why), "every task switched, waiting for RCU tasks");
	pr_warn("livepatch: patching stalled for %lu ms, past livepatch_reverse_ms %u: reversing it (%s)\n",
		busy_ms, limit_ms, why);
	kmem_breaker_livepatch_stall(busy_ms, limit_ms, why, watch.pid, watch.comm);
}

static void watch_fn(struct work_struct *work)
{
	unsigned int reverse_ms = READ_ONCE(livepatch_reverse_ms);
	unsigned long busy_ms;

	mutex_lock(&lp_lock);
	if (transition_done())
		goto out;
	busy_ms = jiffies_to_msecs(jiffies - watch.start);
	/* Walking every task is for a stall's report, not for every tick. */
	if (busy_ms < READ_ONCE(livepatch_stall_ms) &&
	    (!watch.patching || !reverse_ms || busy_ms < reverse_ms))
		goto again;
	find_waiting();
	if (watch.patching && reverse_ms && busy_ms >= reverse_ms && !watch.reversing)
		reverse(busy_ms, reverse_ms);
	if (busy_ms >= READ_ONCE(livepatch_stall_ms) && !watch.reported) {
		watch.reported = true;
		if (watch.waiting)
			pr_warn("livepatch: %s stalled for %lu ms: %u tasks not switched, first %s:%d\n",
				watch.patching ? "patching" : "removal", busy_ms, watch.waiting,
				watch.comm, watch.pid);
		else
			pr_warn("livepatch: %s stalled for %lu ms: every task switched, waiting for an RCU-tasks grace period\n",
				watch.patching ? "patching" : "removal", busy_ms);
		kmem_event_queue_task(KMEMCTL_EV_LIVEPATCH_STALL, watch.source,
				      (u64)busy_ms * NSEC_PER_MSEC,
				      (u64)READ_ONCE(livepatch_stall_ms) * NSEC_PER_MSEC,
				      watch.patching, watch.pid, watch.comm);
	}
again:
	queue_delayed_work(system_unbound_wq, &watch_work, WATCH_PERIOD);
out:
	mutex_unlock(&lp_lock);
}

static void watch_start(u16 source, bool patching)
{
	watch.busy = true;
	watch.patching = patching;
	watch.reported = false;
	watch.reversing = false;
	watch.source = source;
	watch.start = jiffies;
	/*
	 * Unbound: what stalls a transition is often a task spinning with
	 * preemption off, and a per-CPU worker on its CPU would wait it out.
	 */
	mod_delayed_work(system_unbound_wq, &watch_work, WATCH_PERIOD);
}

void kmem_livepatch_status(struct kmem_lp_status *st)
{
	mutex_lock(&lp_lock);
	st->busy = !transition_done();
	st->patching = watch.patching;
	st->stalled = watch.reported;
	st->busy_ms = jiffies_to_msecs(jiffies - watch.start);
	st->waiting = watch.waiting;
	st->pid = watch.pid;
	strscpy(st->comm, watch.comm, sizeof(st->comm));
	mutex_unlock(&lp_lock);
}

/* source: the mitigation asking, named in a stall event. */
int kmem_livepatch_get(u16 source)
{
	struct lp_instance *lp;
	int ret = 0;

	mutex_lock(&lp_lock);
	if (lp_users++)
		goto out;
	/* The last patch's sysfs directory must be gone before a new one. */
	if (lp_last && patch_dir_exists()) {
		pr_info("livepatch: the previous patch is still being removed\n");
		ret = -EBUSY;
		goto err_users;
	}
	lp = kzalloc(sizeof(*lp), GFP_KERNEL);
	if (!lp) {
		ret = -ENOMEM;
		goto err_users;
	}
	fill_funcs(lp->funcs);
	lp->objs[0].funcs = lp->funcs;
	lp->patch.mod = THIS_MODULE;
	lp->patch.objs = lp->objs;
	ret = klp_enable_patch(&lp->patch);
	if (ret) {
		pr_warn("livepatch: enable failed (%d)\n", ret);
		kfree(lp);
		goto err_users;
	}
	lp->older = lp_last;
	lp_last = lp;
	watch_start(source, true);
	goto out;

err_users:
	lp_users--;
out:
	mutex_unlock(&lp_lock);
	return ret;
}

/*
 * Writing 0 to "enabled" starts the removal, or turns back a patching
 * transition still under way.
 */
void kmem_livepatch_put(u16 source)
{
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	mutex_lock(&lp_lock);
	if (--lp_users)
		goto out;
	f = filp_open(ENABLED_PATH, O_WRONLY, 0);
	if (IS_ERR(f)) {
		pr_err("livepatch: cannot open %s (%ld); the patch stays\n", ENABLED_PATH,
		       PTR_ERR(f));
		goto out;
	}
	n = kernel_write(f, "0", 1, &pos);
	if (n != 1)
		pr_err("livepatch: disabling failed (%zd); the patch stays\n", n);
	else
		watch_start(source, false);
	filp_close(f, NULL);
out:
	mutex_unlock(&lp_lock);
}

/* Runs at module exit, when livepatch has let go of every instance. */
void kmem_livepatch_exit(void)
{
	struct lp_instance *lp;

	cancel_delayed_work_sync(&watch_work);
	while ((lp = lp_last)) {
		lp_last = lp->older;
		kfree(lp);
	}
}
