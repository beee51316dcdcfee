// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel image's patch-site tables (lib/kimage.c), read from a file an
 * operator names or a host's /boot: an ELF vmlinux or a bzImage with a
 * gzip, xz or zstd payload. What it makes is written to the module, so it
 * must be a blob the module's own checks (kmod/sites.c) would take apart
 * the same way: magic, a build id of its stated length, at most the
 * sections the format allows, each inside the blob.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "kimage.h"
#include "uapi/kmemctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct kmemctl_sites_section *sec;
	const struct kmemctl_sites_header *h;
	char err[KIMAGE_ERR_MAX];
	struct kimage_sites s;
	int ret;

	ret = kimage_sites(data, size, &s, err);
	if (ret) {
		FUZZ_CHECK(ret == -EBADMSG || ret == -EOPNOTSUPP || ret == -ENOMEM);
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) && err[0] && !s.blob);
		return 0;
	}
	FUZZ_CHECK(s.blob && s.len >= sizeof(*h) && s.len <= KMEMCTL_SITES_MAX);
	h = (const void *)s.blob;
	FUZZ_CHECK(!memcmp(h->magic, KMEMCTL_SITES_MAGIC, sizeof(h->magic)));
	FUZZ_CHECK(h->build_id_len && h->build_id_len <= sizeof(h->build_id));
	FUZZ_CHECK(strlen(s.build_id) == 2u * h->build_id_len);
	FUZZ_CHECK(h->nsections && h->nsections <= KMEMCTL_SITES_SECTIONS);
	FUZZ_CHECK(sizeof(*h) + h->nsections * sizeof(*sec) <= s.len);
	sec = (const void *)(h + 1);
	for (uint32_t i = 0; i < h->nsections; i++) {
		FUZZ_CHECK(memchr(sec[i].name, '\0', sizeof(sec[i].name)));
		FUZZ_CHECK(sec[i].offset <= s.len && sec[i].size <= s.len - sec[i].offset);
	}
	kimage_sites_free(&s);
	return 0;
}
