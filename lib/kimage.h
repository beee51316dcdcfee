/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A kernel image's patch-site tables, for /sys/kernel/kmemctl/sites
 * (kmod/uapi/kmemctl.h, docs/kmod.md "Patch sites"): the sections that say
 * where the kernel rewrites its own text at boot for the CPU and hypervisor
 * it runs on (alternatives, 6.1's paravirt sites, SMP lock prefixes), which
 * it frees with init memory. The image is Debian's /boot/vmlinuz (a bzImage
 * whose payload is gzip, xz, zstd or lz4's legacy frame) or an uncompressed
 * vmlinux.
 */
#ifndef KMEMCTL_KIMAGE_H
#define KMEMCTL_KIMAGE_H

#include <stddef.h>
#include <stdint.h>

#define KIMAGE_ERR_MAX 256
/* a decompressed kernel larger than this is not one */
#define KIMAGE_VMLINUX_MAX (1024u << 20)

struct kimage_sites {
	uint8_t *blob; /* struct kmemctl_sites_header and what follows */
	size_t len;
	char build_id[41]; /* hex */
};

/*
 * The sites of the image in image[0, len): 0, or -EBADMSG (not an x86-64
 * kernel image, corrupt, or without alternatives), -EOPNOTSUPP (a
 * compression other than gzip, xz, zstd and lz4), -ENOMEM; err says why.
 */
int kimage_sites(const uint8_t *image, size_t len, struct kimage_sites *out,
		 char err[KIMAGE_ERR_MAX]);
void kimage_sites_free(struct kimage_sites *s);

#endif
