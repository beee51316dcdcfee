// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl.ko: module init and the top of /sys/kernel/kmemctl/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "uapi/kmemctl.h"

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

	kmemctl_kobj = kobject_create_and_add("kmemctl", kernel_kobj);
	if (!kmemctl_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kmemctl_kobj, &kmemctl_group);
	if (ret)
		goto err_kobj;
	pr_info("version %s loaded (abi %d)\n", KMEMCTL_MODULE_VERSION, KMEMCTL_ABI);
	return 0;

err_kobj:
	kobject_put(kmemctl_kobj);
	return ret;
}

static void __exit kmemctl_exit(void)
{
	kobject_put(kmemctl_kobj);
	pr_info("unloaded\n");
}

module_init(kmemctl_init);
module_exit(kmemctl_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Run-time mitigations and probes for memory-management stalls");
MODULE_VERSION(KMEMCTL_MODULE_VERSION);
