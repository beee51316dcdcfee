// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl.ko: module init and the top of /sys/kernel/kmemctl/.
 *
 * Nothing a kernel lacks fails the load: missing symbols, Kconfig or
 * kprobe support, or a build no record verifies, only leave the affected
 * mitigations and probes unsupported, each with its reason in sysfs and
 * dmesg. Verification measures kernel text before the mitigations and
 * probes may touch it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "kmem.h"

static bool probes = true;
module_param(probes, bool, 0444);
MODULE_PARM_DESC(probes, "Enable every supported probe at load (default: on)");

static struct kobject *kmemctl_kobj;

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", KMEMCTL_MODULE_VERSION);
}

static ssize_t abi_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", KMEMCTL_ABI);
}

static struct kobj_attribute version_attr = __ATTR_RO(version);
static struct kobj_attribute abi_attr = __ATTR_RO(abi);

static struct attribute *kmemctl_attrs[] = {
	&version_attr.attr,
	&abi_attr.attr,
	NULL,
};

static const struct attribute_group kmemctl_group = {
	.attrs = kmemctl_attrs,
};

static int __init kmemctl_init(void)
{
	int ret;

	kmem_symbols_init();
	kmem_fingerprint_init();
	kmem_verify_init();
	ret = kmem_events_init();
	if (ret)
		return ret;
	kmemctl_kobj = kobject_create_and_add("kmemctl", kernel_kobj);
	if (!kmemctl_kobj) {
		ret = -ENOMEM;
		goto err_events;
	}
	ret = sysfs_create_group(kmemctl_kobj, &kmemctl_group);
	if (ret)
		goto err_kobj;
	ret = kmem_breaker_init();
	if (ret)
		goto err_kobj;
	ret = kmem_mitigations_init(kmemctl_kobj);
	if (ret)
		goto err_breaker;
	/* a record written re-gates the mitigations, so they come first */
	ret = sysfs_create_group(kmemctl_kobj, &kmem_verify_group);
	if (ret)
		goto err_mitigations;
	ret = kmem_probes_init(kmemctl_kobj, probes);
	if (ret)
		goto err_verify;
	kmem_watchdog_init();
	pr_info("version %s loaded (abi %d)\n", KMEMCTL_MODULE_VERSION, KMEMCTL_ABI);
	return 0;

err_verify:
	sysfs_remove_group(kmemctl_kobj, &kmem_verify_group);
err_mitigations:
	kmem_mitigations_exit();
err_breaker:
	kmem_breaker_exit();
err_kobj:
	kobject_put(kmemctl_kobj);
err_events:
	kmem_events_exit();
	kmem_verify_exit();
	return ret;
}

static void __exit kmemctl_exit(void)
{
	kmem_watchdog_exit();
	kmem_probes_exit();
	sysfs_remove_group(kmemctl_kobj, &kmem_verify_group);
	kmem_mitigations_exit();
	kmem_breaker_exit();
	kobject_put(kmemctl_kobj);
	kmem_events_exit();
	kmem_livepatch_exit();
	kmem_verify_exit();
	pr_info("unloaded\n");
}

module_init(kmemctl_init);
module_exit(kmemctl_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Run-time mitigations and probes for memory-management stalls");
MODULE_VERSION(KMEMCTL_MODULE_VERSION);
MODULE_INFO(livepatch, "Y");
