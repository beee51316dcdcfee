// SPDX-License-Identifier: GPL-2.0
/*
 * The module's one livepatch. Livepatch names a patch after its module, so
 * a module holds one patch: it carries every replaced function of every
 * mitigation, is enabled when the first livepatched mitigation goes on and
 * disabled when the last goes off. Each replacement runs the kernel's
 * original logic while its mitigation is off, so mode flips need no
 * transition.
 *
 * Only klp_enable_patch() is exported; a patch is disabled through its own
 * sysfs "enabled" file, and a disabled patch cannot be enabled again, so
 * every enable gets fresh structures. Livepatch holds a module reference
 * while a patch is enabled: rmmod waits for every mitigation to be off.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/livepatch.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/slab.h>

#include "kmem.h"

#define PATCH_DIR "/sys/kernel/livepatch/" KBUILD_MODNAME
#define ENABLED_PATH PATCH_DIR "/enabled"

/* One enable's worth of structures; livepatch may use them until rmmod. */
struct lp_instance {
	struct klp_patch patch;
	struct klp_object objs[2];
	struct klp_func funcs[KMEM_LP_FUNCS + 1];
	struct lp_instance *older;
};

/* Every fix's replacements, in one patch. */
static const struct kmem_lp_func *const fixes[] = {
	kmem_lp_rstat_funcs,
};

static void fill_funcs(struct klp_func *funcs)
{
	const struct kmem_lp_func *f;
	int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(fixes); i++)
		for (f = fixes[i]; f->old_name; f++) {
			funcs[n].old_name = f->old_name;
			funcs[n].new_func = f->new_func;
			n++;
		}
}

static DEFINE_MUTEX(lp_lock);
static unsigned int lp_users;
static struct lp_instance *lp_last;

static bool patch_dir_exists(void)
{
	struct path path;

	if (kern_path(PATCH_DIR, 0, &path))
		return false;
	path_put(&path);
	return true;
}

int kmem_livepatch_get(void)
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
	goto out;

err_users:
	lp_users--;
out:
	mutex_unlock(&lp_lock);
	return ret;
}

void kmem_livepatch_put(void)
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
	filp_close(f, NULL);
out:
	mutex_unlock(&lp_lock);
}

/* Runs at module exit, when livepatch has let go of every instance. */
void kmem_livepatch_exit(void)
{
	struct lp_instance *lp;

	while ((lp = lp_last)) {
		lp_last = lp->older;
		kfree(lp);
	}
}
