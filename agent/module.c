// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <libkmod.h>
#include <string.h>

#include "macro.h"
#include "module.h"

/* The module's name in the kernel, whatever file it came from. */
#define MODULE_NAME "kmemctl"

static int loaded(struct kmod_ctx *ctx)
{
	struct kmod_module *mod = NULL;
	int r = kmod_module_new_from_name(ctx, MODULE_NAME, &mod);

	if (r < 0)
		return r;
	r = kmod_module_get_initstate(mod) == KMOD_MODULE_LIVE;
	kmod_module_unref(mod);
	return r;
}

static int load(struct kmod_ctx *ctx, const char *spec)
{
	struct kmod_list *list = NULL, *l;
	struct kmod_module *mod = NULL;
	int r;

	if (strchr(spec, '/')) {
		r = kmod_module_new_from_path(ctx, spec, &mod);
		if (r < 0)
			return r;
		r = kmod_module_insert_module(mod, 0, NULL);
		kmod_module_unref(mod);
		return r;
	}
	r = kmod_module_new_from_lookup(ctx, spec, &list);
	if (r < 0)
		return r;
	if (!list)
		return -ENOENT;
	r = -ENOENT;
	kmod_list_foreach(l, list)
	{
		mod = kmod_module_get_module(l);
		r = kmod_module_probe_insert_module(mod, 0, NULL, NULL, NULL, NULL);
		kmod_module_unref(mod);
		if (r == 0)
			break;
	}
	kmod_module_unref_list(list);
	return r;
}

int module_load(const char *spec)
{
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	int r;

	if (!ctx)
		return -ENOMEM;
	r = loaded(ctx);
	if (r == 0) {
		r = load(ctx, spec);
		if (r == -EEXIST)
			r = 1; /* loaded meanwhile by someone else */
	}
	kmod_unref(ctx);
	return r;
}
