// SPDX-License-Identifier: GPL-2.0
/*
 * kmt_lockhold.ko: how long one irq-disabling spinlock is held, observed
 * from outside the code under test (kmemctl's own probes and mitigations).
 *
 * Load with lock=<address> (e.g. cgroup_rstat_lock's, from /proc/kallsyms).
 * A hold starts when _raw_spin_lock_irq(), _raw_spin_lock_irqsave() or a
 * successful _raw_spin_trylock() of that lock returns, and ends at
 * _raw_spin_unlock_irq() or _raw_spin_unlock_irqrestore() of it. Interrupts
 * are off in between, so the holder cannot migrate and the start is kept
 * per CPU. /sys/kernel/kmt_lockhold/: count, total_ns, max_ns (read-only),
 * reset (write 1), and irqs_off (read-only): the holds whose release left
 * interrupts off (_raw_spin_unlock_irqrestore() of flags without IF: the
 * caller had them off before it took the lock).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kobject.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <asm/processor-flags.h>

static unsigned long lock;
module_param(lock, ulong, 0444);
MODULE_PARM_DESC(lock, "address of the spinlock to watch (required)");

static DEFINE_PER_CPU(u64, held_since);
static atomic64_t holds, total_ns, max_ns, irqs_off;
static struct kobject *kmt_kobj;

static int lock_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return regs_get_kernel_argument(regs, 0) != lock;
}

static int lock_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	this_cpu_write(held_since, ktime_get_mono_fast_ns());
	return 0;
}

static int trylock_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (regs_return_value(regs))
		this_cpu_write(held_since, ktime_get_mono_fast_ns());
	return 0;
}

/* irqs_after: interrupts are on once the lock is released */
static void unlocked(struct pt_regs *regs, bool irqs_after)
{
	u64 since, hold, old;

	if (regs_get_kernel_argument(regs, 0) != lock)
		return;
	since = this_cpu_read(held_since);
	if (!since)
		return;
	this_cpu_write(held_since, 0);
	hold = ktime_get_mono_fast_ns() - since;
	atomic64_inc(&holds);
	atomic64_add(hold, &total_ns);
	if (!irqs_after)
		atomic64_inc(&irqs_off);
	old = atomic64_read(&max_ns);
	while (hold > old && !atomic64_try_cmpxchg(&max_ns, &old, hold))
		;
}

static int unlock_irq_pre(struct kprobe *kp, struct pt_regs *regs)
{
	unlocked(regs, true);
	return 0;
}

static int unlock_irqrestore_pre(struct kprobe *kp, struct pt_regs *regs)
{
	unlocked(regs, regs_get_kernel_argument(regs, 1) & X86_EFLAGS_IF);
	return 0;
}

static struct kretprobe lock_rps[] = {
	{
		.kp.symbol_name = "_raw_spin_lock_irq",
		.entry_handler = lock_entry,
		.handler = lock_ret,
	},
	{
		.kp.symbol_name = "_raw_spin_lock_irqsave",
		.entry_handler = lock_entry,
		.handler = lock_ret,
	},
	{
		.kp.symbol_name = "_raw_spin_trylock",
		.entry_handler = lock_entry,
		.handler = trylock_ret,
	},
};

static struct kretprobe *lock_rp_list[] = { &lock_rps[0], &lock_rps[1], &lock_rps[2] };

static struct kprobe unlock_kps[] = {
	{ .symbol_name = "_raw_spin_unlock_irq", .pre_handler = unlock_irq_pre },
	{ .symbol_name = "_raw_spin_unlock_irqrestore", .pre_handler = unlock_irqrestore_pre },
};

static struct kprobe *unlock_kp_list[] = { &unlock_kps[0], &unlock_kps[1] };

static ssize_t count_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&holds));
}

static ssize_t total_ns_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&total_ns));
}

static ssize_t max_ns_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&max_ns));
}

static ssize_t irqs_off_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&irqs_off));
}

static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			   size_t count)
{
	bool yes;

	if (kstrtobool(buf, &yes) || !yes)
		return -EINVAL;
	atomic64_set(&holds, 0);
	atomic64_set(&total_ns, 0);
	atomic64_set(&max_ns, 0);
	atomic64_set(&irqs_off, 0);
	return count;
}

static struct kobj_attribute count_attr = __ATTR_RO(count);
static struct kobj_attribute total_ns_attr = __ATTR_RO(total_ns);
static struct kobj_attribute max_ns_attr = __ATTR_RO(max_ns);
static struct kobj_attribute irqs_off_attr = __ATTR_RO(irqs_off);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *kmt_attrs[] = {
	&count_attr.attr,    &total_ns_attr.attr, &max_ns_attr.attr,
	&irqs_off_attr.attr, &reset_attr.attr,	  NULL,
};

static const struct attribute_group kmt_group = {
	.attrs = kmt_attrs,
};

static int __init kmt_lockhold_init(void)
{
	int ret;

	if (!lock) {
		pr_err("lock=<address> is required\n");
		return -EINVAL;
	}
	kmt_kobj = kobject_create_and_add("kmt_lockhold", kernel_kobj);
	if (!kmt_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kmt_kobj, &kmt_group);
	if (ret)
		goto err_kobj;
	ret = register_kprobes(unlock_kp_list, ARRAY_SIZE(unlock_kp_list));
	if (ret)
		goto err_kobj;
	ret = register_kretprobes(lock_rp_list, ARRAY_SIZE(lock_rp_list));
	if (ret)
		goto err_unlock;
	return 0;

err_unlock:
	unregister_kprobes(unlock_kp_list, ARRAY_SIZE(unlock_kp_list));
err_kobj:
	kobject_put(kmt_kobj);
	return ret;
}

static void __exit kmt_lockhold_exit(void)
{
	unregister_kretprobes(lock_rp_list, ARRAY_SIZE(lock_rp_list));
	unregister_kprobes(unlock_kp_list, ARRAY_SIZE(unlock_kp_list));
	kobject_put(kmt_kobj);
}

module_init(kmt_lockhold_init);
module_exit(kmt_lockhold_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM tests: hold time of one irq-disabling spinlock");
