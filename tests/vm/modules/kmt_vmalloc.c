// SPDX-License-Identifier: GPL-2.0
/*
 * kmt_vmalloc.ko: lazy vmap purge workload for the VM tests.
 *
 * /sys/kernel/kmt_vmalloc/run (write-only): writing N does N vmalloc(size) /
 * vfree() pairs, each leaving a lazily freed vmap area behind, then calls
 * vm_unmap_aliases(), which purges them all (__purge_vmap_area_lazy() and
 * flush_tlb_kernel_range()). The write returns when the purge is done.
 * /sys/kernel/kmt_vmalloc/purges (read-only) counts completed run writes.
 *
 * With `churn` set, a kthread repeats the same (KMT_CHURN_BATCH pairs, then a
 * purge) until `churn` is cleared or the module is unloaded; with
 * `churn_purge` cleared it leaves purging to the kernel's lazy threshold.
 *
 * `keep` (load time) holds that many one-page vmalloc() areas until unload,
 * as the vmap stacks of a host's threads do: the vmap-area tree then has a
 * busy host's depth for every lookup in it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/kobject.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>

#define KMT_MAX_SIZE (64UL << 20)
#define KMT_MAX_RUN 10000000U
#define KMT_CHURN_BATCH 256

static unsigned long size = 4 * PAGE_SIZE;
module_param(size, ulong, 0644);
MODULE_PARM_DESC(size, "bytes per vmalloc(), 1..64 MiB (default 4 pages)");

static bool churn_purge = true;
module_param(churn_purge, bool, 0644);
MODULE_PARM_DESC(churn_purge, "0: the churn kthread does not purge after each batch (default 1)");

static unsigned int keep;
module_param(keep, uint, 0444);
MODULE_PARM_DESC(keep, "one-page vmalloc() areas held until unload, 0..65536 (default 0)");

static void **kmt_kept;

static bool churn;
static DEFINE_MUTEX(kmt_churn_lock);
static struct task_struct *kmt_churn_task;
static bool kmt_ready;

static atomic_long_t kmt_purges = ATOMIC_LONG_INIT(0);
static struct kobject *kmt_kobj;

/* N vmalloc()/vfree() pairs, then a purge of the lazily freed areas. */
static int kmt_run(unsigned int n, bool stop_on_kthread)
{
	unsigned long sz = READ_ONCE(size);
	unsigned int i;
	int ret = 0;

	if (sz == 0 || sz > KMT_MAX_SIZE)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		void *p = vmalloc(sz);

		if (!p) {
			ret = -ENOMEM;
			break;
		}
		vfree(p);
		if (stop_on_kthread ? kthread_should_stop() : fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
	if (!stop_on_kthread || READ_ONCE(churn_purge))
		vm_unmap_aliases();
	return ret;
}

static int kmt_churn_fn(void *data)
{
	while (!kthread_should_stop()) {
		if (kmt_run(KMT_CHURN_BATCH, true) == -ENOMEM)
			schedule_timeout_interruptible(HZ / 10);
	}
	return 0;
}

/* Called with kmt_churn_lock held. */
static int kmt_churn_start(void)
{
	struct task_struct *t;

	t = kthread_run(kmt_churn_fn, NULL, "kmt_vm_churn");
	if (IS_ERR(t))
		return PTR_ERR(t);
	kmt_churn_task = t;
	return 0;
}

/* Called with kmt_churn_lock held. */
static void kmt_churn_stop(void)
{
	if (!kmt_churn_task)
		return;
	kthread_stop(kmt_churn_task);
	kmt_churn_task = NULL;
}

static int churn_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
	mutex_lock(&kmt_churn_lock);
	if (kmt_ready) {
		if (on && !kmt_churn_task)
			ret = kmt_churn_start();
		else if (!on)
			kmt_churn_stop();
	}
	if (!ret)
		churn = on;
	mutex_unlock(&kmt_churn_lock);
	return ret;
}

static const struct kernel_param_ops churn_ops = {
	.set = churn_set,
	.get = param_get_bool,
};
module_param_cb(churn, &churn_ops, &churn, 0644);
MODULE_PARM_DESC(churn, "1: run a kthread doing vmalloc()/vfree() and purges");

static ssize_t run_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			 size_t count)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(buf, 0, &n);
	if (ret)
		return ret;
	if (n > KMT_MAX_RUN)
		return -EINVAL;
	ret = kmt_run(n, false);
	if (ret)
		return ret;
	atomic_long_inc(&kmt_purges);
	return count;
}

static ssize_t purges_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&kmt_purges));
}

static struct kobj_attribute run_attr = __ATTR_WO(run);
static struct kobj_attribute purges_attr = __ATTR_RO(purges);

static struct attribute *kmt_attrs[] = {
	&run_attr.attr,
	&purges_attr.attr,
	NULL,
};

static const struct attribute_group kmt_group = {
	.attrs = kmt_attrs,
};

static void kmt_release_kept(void)
{
	unsigned int i;

	if (!kmt_kept)
		return;
	for (i = 0; i < keep; i++)
		vfree(kmt_kept[i]);
	kvfree(kmt_kept);
	kmt_kept = NULL;
}

static int kmt_keep_areas(void)
{
	unsigned int i;

	if (keep > 65536)
		return -EINVAL;
	if (!keep)
		return 0;
	kmt_kept = kvcalloc(keep, sizeof(*kmt_kept), GFP_KERNEL);
	if (!kmt_kept)
		return -ENOMEM;
	for (i = 0; i < keep; i++) {
		kmt_kept[i] = vmalloc(PAGE_SIZE);
		if (!kmt_kept[i]) {
			kmt_release_kept();
			return -ENOMEM;
		}
	}
	return 0;
}

static int __init kmt_vmalloc_init(void)
{
	int ret;

	ret = kmt_keep_areas();
	if (ret)
		return ret;
	kmt_kobj = kobject_create_and_add("kmt_vmalloc", kernel_kobj);
	if (!kmt_kobj) {
		kmt_release_kept();
		return -ENOMEM;
	}
	ret = sysfs_create_group(kmt_kobj, &kmt_group);
	if (ret)
		goto err_kobj;

	mutex_lock(&kmt_churn_lock);
	kmt_ready = true;
	ret = churn ? kmt_churn_start() : 0;
	if (ret)
		kmt_ready = false;
	mutex_unlock(&kmt_churn_lock);
	if (ret)
		goto err_kobj;
	return 0;

err_kobj:
	kobject_put(kmt_kobj);
	kmt_release_kept();
	return ret;
}

static void __exit kmt_vmalloc_exit(void)
{
	kobject_put(kmt_kobj);
	mutex_lock(&kmt_churn_lock);
	kmt_ready = false;
	kmt_churn_stop();
	mutex_unlock(&kmt_churn_lock);
	kmt_release_kept();
}

module_init(kmt_vmalloc_init);
module_exit(kmt_vmalloc_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM tests: vmalloc()/vfree() and lazy vmap purges");
