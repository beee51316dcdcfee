// SPDX-License-Identifier: GPL-2.0
/*
 * kmt_lockup.ko: CPU hogs for the VM tests.
 *
 * /sys/kernel/kmt_lockup/spin (write-only): writing S (0..60) spins S
 * seconds on the writer's CPU with preemption disabled; with
 * kernel.watchdog_thresh=1 that gives "BUG: soft lockup" after ~2 s.
 * /sys/kernel/kmt_lockup/spin_irqoff (write-only): the same with interrupts
 * disabled, S in 0..5.
 * /sys/kernel/kmt_lockup/sleep_d (write-only): writing S (0..60) sleeps S
 * seconds uninterruptibly (D state), which the hung-task detector reports
 * after kernel.hung_task_timeout_secs.
 * /sys/kernel/kmt_lockup/release (write-only): writing anything ends every
 * spin under way, for a test that holds a CPU until it has seen what the
 * hold causes, however slowly a busy host runs the guest.
 * The write returns when the spin or sleep is over. Time is measured with
 * ktime_get_ns(), not jiffies, which need not advance while this CPU has
 * interrupts off.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/kobject.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/processor.h>
#include <linux/smp.h>
#include <linux/sysfs.h>
#include <linux/time64.h>

#define KMT_SPIN_MAX 60
#define KMT_SPIN_IRQOFF_MAX 5

static struct kobject *kmt_kobj;
static atomic_t kmt_releases = ATOMIC_INIT(0);

/*
 * Sum the forward steps of the clock rather than compare with a deadline: with
 * interrupts off on the CPU that does the timekeeping updates, a short
 * clocksource (acpi_pm wraps every 4.7 s) can make ktime_get_ns() jump back.
 */
static void kmt_spin(unsigned int secs)
{
	u64 limit = (u64)secs * NSEC_PER_SEC;
	u64 prev = ktime_get_ns();
	u64 spun = 0;
	int releases = atomic_read(&kmt_releases);

	while (spun < limit && atomic_read(&kmt_releases) == releases) {
		u64 now;

		cpu_relax();
		now = ktime_get_ns();
		if (now > prev)
			spun += now - prev;
		prev = now;
	}
}

static int kmt_parse(const char *buf, unsigned int max, unsigned int *secs)
{
	int ret;

	ret = kstrtouint(buf, 0, secs);
	if (ret)
		return ret;
	return *secs > max ? -EINVAL : 0;
}

static ssize_t spin_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			  size_t count)
{
	unsigned int secs;
	int ret;

	ret = kmt_parse(buf, KMT_SPIN_MAX, &secs);
	if (ret)
		return ret;
	preempt_disable();
	pr_info("spinning %u s on cpu %d with preemption disabled\n", secs, smp_processor_id());
	kmt_spin(secs);
	preempt_enable();
	return count;
}

static ssize_t spin_irqoff_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	unsigned long flags;
	unsigned int secs;
	int ret;

	ret = kmt_parse(buf, KMT_SPIN_IRQOFF_MAX, &secs);
	if (ret)
		return ret;
	local_irq_save(flags);
	pr_info("spinning %u s on cpu %d with interrupts disabled\n", secs, smp_processor_id());
	kmt_spin(secs);
	local_irq_restore(flags);
	return count;
}

static ssize_t sleep_d_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			     size_t count)
{
	unsigned int secs;
	int ret;

	ret = kmt_parse(buf, KMT_SPIN_MAX, &secs);
	if (ret)
		return ret;
	pr_info("sleeping %u s in D state\n", secs);
	msleep(secs * MSEC_PER_SEC);
	return count;
}

static ssize_t release_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			     size_t count)
{
	atomic_inc(&kmt_releases);
	return count;
}

static struct kobj_attribute spin_attr = __ATTR_WO(spin);
static struct kobj_attribute release_attr = __ATTR_WO(release);
static struct kobj_attribute spin_irqoff_attr = __ATTR_WO(spin_irqoff);
static struct kobj_attribute sleep_d_attr = __ATTR_WO(sleep_d);

static struct attribute *kmt_attrs[] = {
	&spin_attr.attr, &release_attr.attr, &spin_irqoff_attr.attr, &sleep_d_attr.attr, NULL,
};

static const struct attribute_group kmt_group = {
	.attrs = kmt_attrs,
};

static int __init kmt_lockup_init(void)
{
	int ret;

	kmt_kobj = kobject_create_and_add("kmt_lockup", kernel_kobj);
	if (!kmt_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kmt_kobj, &kmt_group);
	if (ret)
		goto err_kobj;
	return 0;

err_kobj:
	kobject_put(kmt_kobj);
	return ret;
}

static void __exit kmt_lockup_exit(void)
{
	kobject_put(kmt_kobj);
}

module_init(kmt_lockup_init);
module_exit(kmt_lockup_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM tests: spin with preemption or irqs off, sleep in D state");
