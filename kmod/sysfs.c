// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs directories for mitigations and probes. Each is a kobject embedded
 * in a kmem_node that points back at its owner, so one set of attribute
 * functions serves every mitigation (or every probe).
 */
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "kmem.h"

static void kmem_node_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct kmem_node, kobj));
}

static const struct kobj_type kmem_node_type = {
	.release = kmem_node_release,
	.sysfs_ops = &kobj_sysfs_ops,
};

struct kmem_node *kmem_node_create(const char *name, struct kobject *parent, void *owner,
				   const struct attribute_group *group)
{
	struct kmem_node *node;
	int ret;

	node = kzalloc(sizeof(*node), GFP_KERNEL);
	if (!node)
		return ERR_PTR(-ENOMEM);
	node->owner = owner;
	ret = kobject_init_and_add(&node->kobj, &kmem_node_type, parent, "%s", name);
	if (ret)
		goto err_put;
	ret = sysfs_create_group(&node->kobj, group);
	if (ret)
		goto err_put;
	return node;

err_put:
	kobject_put(&node->kobj);
	return ERR_PTR(ret);
}

/* Removal waits for readers and writers still inside an attribute. */
void kmem_node_destroy(struct kmem_node *node)
{
	if (!IS_ERR_OR_NULL(node))
		kobject_put(&node->kobj);
}

void *kmem_node_owner(struct kobject *kobj)
{
	return container_of(kobj, struct kmem_node, kobj)->owner;
}
