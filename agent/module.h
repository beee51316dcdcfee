/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading kmemctl.ko, in the root parent, through libkmod: by name, as
 * modprobe finds it under /lib/modules/$(uname -r) (DKMS installs it
 * there), or from a path to a .ko file.
 */
#ifndef KMEM_AGENT_MODULE_H
#define KMEM_AGENT_MODULE_H

/*
 * Returns 1 when the module was loaded already, 0 when it is loaded now,
 * or a negative errno: -ENOENT no such module for this kernel, -ENOEXEC
 * built for another kernel, or what init_module() failed with.
 */
int module_load(const char *spec);

#endif
