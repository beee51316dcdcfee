// SPDX-License-Identifier: GPL-2.0
/*
 * kmt_kasan.ko: KASAN quarantine workload for the VM tests.
 *
 * /sys/kernel/kmt_kasan/churn (write-only): writing N does kmalloc(size) /
 * kfree() pairs with GFP_KERNEL until N bytes were freed. Each kfree()
 * puts the object in the quarantine and each kmalloc() may reduce it.
 * /sys/kernel/kmt_kasan/stats (read-only): "allocs N\nsum_ns N\nmax_ns N"
 * over every churn since load or the last write to reset: how long
 * kmalloc() took, reductions included.
 *
 * /sys/kernel/kmt_kasan/uaf (write-only): writing N frees a 64-byte object,
 * churns N bytes, then reads the freed object. On a KASAN kernel that read
 * is reported as a use-after-free while the object is still quarantined.
 * Only built to do so on KASAN kernels.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#define KMT_MAX_CHURN SZ_1G

static unsigned int size = 1024;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "bytes per kmalloc() of churn, 8..65536 (default 1024)");

static DEFINE_MUTEX(kmt_lock); /* the counters */
static u64 kmt_allocs, kmt_sum_ns, kmt_max_ns;
static struct kobject *kmt_kobj;

static int kmt_churn(unsigned long bytes)
{
	unsigned long done;
	u64 start, ns;
	void *p;

	for (done = 0; done < bytes; done += size) {
		start = ktime_get_ns();
		p = kmalloc(size, GFP_KERNEL);
		ns = ktime_get_ns() - start;
		if (!p)
			return -ENOMEM;
		kfree(p);
		mutex_lock(&kmt_lock);
		kmt_allocs++;
		kmt_sum_ns += ns;
		kmt_max_ns = max(kmt_max_ns, ns);
		mutex_unlock(&kmt_lock);
		cond_resched();
	}
	return 0;
}

static ssize_t churn_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			   size_t count)
{
	unsigned long bytes;
	int ret;

	if (kstrtoul(buf, 0, &bytes) || !bytes || bytes > KMT_MAX_CHURN)
		return -EINVAL;
	ret = kmt_churn(bytes);
	return ret ? ret : count;
}

static ssize_t uaf_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			 size_t count)
{
	unsigned long bytes;
	char *p;
	int ret;

	if (!IS_ENABLED(CONFIG_KASAN))
		return -EOPNOTSUPP;
	if (kstrtoul(buf, 0, &bytes) || bytes > KMT_MAX_CHURN)
		return -EINVAL;
	p = kmalloc(64, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	memset(p, 0x5a, 64);
	kfree(p);
	ret = bytes ? kmt_churn(bytes) : 0;
	if (ret)
		return ret;
	/* the use-after-free KASAN must report */
	pr_info("reading a freed object: %d\n", READ_ONCE(p[8]));
	return count;
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	ssize_t len;

	mutex_lock(&kmt_lock);
	len = sysfs_emit(buf, "allocs %llu\nsum_ns %llu\nmax_ns %llu\n", kmt_allocs, kmt_sum_ns,
			 kmt_max_ns);
	mutex_unlock(&kmt_lock);
	return len;
}

static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr, const char *buf,
			   size_t count)
{
	mutex_lock(&kmt_lock);
	kmt_allocs = 0;
	kmt_sum_ns = 0;
	kmt_max_ns = 0;
	mutex_unlock(&kmt_lock);
	return count;
}

static struct kobj_attribute churn_attr = __ATTR_WO(churn);
static struct kobj_attribute uaf_attr = __ATTR_WO(uaf);
static struct kobj_attribute stats_attr = __ATTR_RO(stats);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *kmt_attrs[] = {
	&churn_attr.attr, &uaf_attr.attr, &stats_attr.attr, &reset_attr.attr, NULL,
};

static const struct attribute_group kmt_group = {
	.attrs = kmt_attrs,
};

static int __init kmt_init(void)
{
	int ret;

	if (size < 8 || size > 65536)
		return -EINVAL;
	kmt_kobj = kobject_create_and_add("kmt_kasan", kernel_kobj);
	if (!kmt_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kmt_kobj, &kmt_group);
	if (ret)
		kobject_put(kmt_kobj);
	return ret;
}

static void __exit kmt_exit(void)
{
	kobject_put(kmt_kobj);
}

module_init(kmt_init);
module_exit(kmt_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM test: KASAN quarantine churn and a use-after-free");
