// SPDX-License-Identifier: GPL-2.0
/*
 * lib/kimage.c: a kernel image's patch-site tables, read from a file an
 * operator or a host names. A small x86-64 ELF "vmlinux" is built here
 * with libelf, alone and inside a bzImage whose payload is gzip, xz, zstd
 * or lz4's legacy frame; every broken image is refused with a reason.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lz4.h>
#include <lzma.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <cmocka.h>

#include "kimage.h"
#include "uapi/kmemctl.h"

#define TEXT 0xffffffff81000000ULL
#define ALT 0xffffffff82000000ULL
#define REPL 0xffffffff82001000ULL

static const uint8_t build_id[20] = { 0x6a, 0x2b, 0x4a, 0xc7, 0x75, 0x85, 0xb8, 0xcf, 0x10, 0x2b,
				      0xcb, 0xa7, 0x71, 0x30, 0x0e, 0x57, 0x3c, 0x84, 0x89, 0xb6 };
static const uint8_t orig[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const uint8_t repl[3] = { 0x0f, 0x01, 0xcb };

struct sec {
	const char *name;
	uint32_t type;
	uint64_t addr;
	const void *data;
	size_t size;
};

/* An ELF file of the sections, malloc'ed into *out. */
static size_t elf_of(const struct sec *secs, size_t n, uint8_t **out)
{
	char names[256] = "";
	size_t off[16], len = 1, size;
	int fd = memfd_create("vmlinux", 0);
	Elf_Scn *scn;
	Elf_Data *d;
	Elf64_Shdr *sh;
	Elf64_Ehdr *eh;
	Elf *e;

	assert_true(fd >= 0 && n < 15);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(e);
	eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = ET_EXEC;
	eh->e_version = EV_CURRENT;
	for (size_t i = 0; i <= n; i++) {
		const char *name = i < n ? secs[i].name : ".shstrtab";

		off[i] = len;
		memcpy(names + len, name, strlen(name) + 1);
		len += strlen(name) + 1;
	}
	for (size_t i = 0; i <= n; i++) {
		scn = elf_newscn(e);
		d = elf_newdata(scn);
		d->d_type = ELF_T_BYTE;
		d->d_align = 1;
		d->d_buf = i < n ? (void *)secs[i].data : names;
		d->d_size = i < n ? secs[i].size : len;
		sh = elf64_getshdr(scn);
		sh->sh_name = (Elf64_Word)off[i];
		sh->sh_type = i < n ? secs[i].type : SHT_STRTAB;
		sh->sh_flags = i < n ? SHF_ALLOC : 0;
		sh->sh_addr = i < n ? secs[i].addr : 0;
		if (i == n)
			eh->e_shstrndx = (Elf64_Half)elf_ndxscn(scn);
	}
	assert_true(elf_update(e, ELF_C_WRITE) > 0);
	elf_end(e);
	size = (size_t)lseek(fd, 0, SEEK_END);
	*out = malloc(size);
	assert_int_equal(pread(fd, *out, size, 0), (ssize_t)size);
	close(fd);
	return size;
}

struct kernel {
	uint8_t text[64], notes[36], alt[14];
	char rodata[64];
	int alt_size;
};

/* A vmlinux of release: one alternative, orig at .text+16, repl in its section. */
static size_t vmlinux(const char *release, int alt_size, uint8_t **out)
{
	static struct kernel k;
	int32_t instr = (int32_t)(TEXT + 16 - ALT), r = (int32_t)(REPL - (ALT + 4));
	uint32_t note[3] = { 4, 20, 3 };
	struct sec secs[] = {
		{ ".text", SHT_PROGBITS, TEXT, k.text, sizeof(k.text) },
		{ ".notes", SHT_NOTE, TEXT + 0x100000, k.notes, sizeof(k.notes) },
		{ ".rodata", SHT_PROGBITS, TEXT + 0x200000, k.rodata, sizeof(k.rodata) },
		{ ".altinstructions", SHT_PROGBITS, ALT, k.alt, (size_t)alt_size },
		{ ".altinstr_replacement", SHT_PROGBITS, REPL, repl, sizeof(repl) },
	};

	memset(&k, 0, sizeof(k));
	memset(k.text, 0xcc, sizeof(k.text));
	memcpy(k.text + 16, orig, sizeof(orig));
	memcpy(k.notes, note, sizeof(note));
	memcpy(k.notes + 12, "GNU", 4);
	memcpy(k.notes + 16, build_id, sizeof(build_id));
	snprintf(k.rodata, sizeof(k.rodata), "Linux version %s (kmemctl@test) #1", release);
	memcpy(k.alt, &instr, 4);
	memcpy(k.alt + 4, &r, 4);
	k.alt[alt_size - 2] = sizeof(orig);
	k.alt[alt_size - 1] = sizeof(repl);
	return elf_of(secs, sizeof(secs) / sizeof(secs[0]), out);
}

static const struct kmemctl_sites_section *section(const struct kimage_sites *s, const char *name)
{
	const struct kmemctl_sites_header *h = (const void *)s->blob;
	const struct kmemctl_sites_section *sec = (const void *)(h + 1);

	for (uint32_t i = 0; i < h->nsections; i++)
		if (!strcmp(sec[i].name, name))
			return &sec[i];
	return NULL;
}

static void assert_sites(const uint8_t *image, size_t len, uint32_t alt_size)
{
	const struct kmemctl_sites_section *sec;
	const struct kmemctl_sites_header *h;
	char err[KIMAGE_ERR_MAX];
	struct kimage_sites s;

	assert_int_equal(kimage_sites(image, len, &s, err), 0);
	h = (const void *)s.blob;
	assert_memory_equal(h->magic, KMEMCTL_SITES_MAGIC, 8);
	assert_string_equal(s.build_id, "6a2b4ac77585b8cf102bcba771300e573c8489b6");
	assert_int_equal(h->build_id_len, 20);
	assert_memory_equal(h->build_id, build_id, 20);
	assert_int_equal(h->alt_size, alt_size);
	assert_true(h->text_addr == TEXT);
	assert_int_equal(h->nsections, 3);
	sec = section(&s, ".altinstructions");
	assert_non_null(sec);
	assert_true(sec->addr == ALT);
	assert_int_equal(sec->size, alt_size);
	sec = section(&s, ".altinstr_replacement");
	assert_non_null(sec);
	assert_memory_equal(s.blob + sec->offset, repl, sizeof(repl));
	/* what the image has at the site, before any CPU patched it */
	sec = section(&s, "kmemctl.orig");
	assert_non_null(sec);
	assert_int_equal(sec->size, sizeof(orig));
	assert_memory_equal(s.blob + sec->offset, orig, sizeof(orig));
	assert_true(sec->offset + sec->size <= s.len);
	kimage_sites_free(&s);
}

static void refused(const uint8_t *image, size_t len, int want, const char *why)
{
	char err[KIMAGE_ERR_MAX];
	struct kimage_sites s;

	assert_int_equal(kimage_sites(image, len, &s, err), want);
	assert_true(err[0]);
	if (!strstr(err, why))
		fail_msg("error '%s' does not say '%s'", err, why);
	assert_null(s.blob);
}

static void test_vmlinux(void **state)
{
	uint8_t *v;
	size_t n;

	(void)state;
	n = vmlinux("6.1.0-57-amd64", 12, &v);
	assert_sites(v, n, 12);
	free(v);
	n = vmlinux("6.12.118+deb12-amd64", 14, &v);
	assert_sites(v, n, 14);
	free(v);
}

static void test_bad_vmlinux(void **state)
{
	uint8_t *v;
	size_t n;

	(void)state;
	/* a 6.12 kernel's entries are 14 bytes: 12 of them is not a table */
	n = vmlinux("6.12.118+deb12-amd64", 12, &v);
	refused(v, n, -EBADMSG, "not entries of 14");
	free(v);
	n = vmlinux("5.10.0-30-amd64", 12, &v);
	refused(v, n, -EOPNOTSUPP, "kernel 5.10");
	free(v);
	n = vmlinux("6.1.0-57-amd64", 12, &v);
	v[0x12] = 0xb7; /* EM_AARCH64 */
	v[0x13] = 0;
	refused(v, n, -EBADMSG, "not x86-64");
	refused(v, 40, -EBADMSG, "");
	free(v);
	refused((const uint8_t *)"", 0, -EBADMSG, "neither an ELF vmlinux nor a bzImage");
	refused((const uint8_t *)"#!/bin/sh\necho hello\n", 21, -EBADMSG, "no \"HdrS\"");
}

/* A bzImage around payload: setup_sects 1, the version string at 0x300. */
static size_t bzimage(const uint8_t *payload, size_t len, const char *release, uint8_t **out)
{
	size_t size = 1024 + len;
	uint8_t *b = calloc(1, size);
	uint32_t plen = (uint32_t)len;

	b[0x1f1] = 1;
	memcpy(b + 0x202, "HdrS", 4);
	b[0x20e] = 0x00;
	b[0x20f] = 0x01;
	snprintf((char *)b + 0x300, 64, "%s (kmemctl@test) #1", release);
	memcpy(b + 0x24c, &plen, 4);
	memcpy(b + 1024, payload, len);
	*out = b;
	return size;
}

/*
 * lz4's legacy frame as `lz4 -l` writes it, into buf: the magic, then blocks
 * of at most block bytes of in, each after its compressed length; frames > 1
 * starts a frame again (the magic) before each part, as concatenated output
 * has it. Returns its length.
 */
static size_t lz4_legacy(const uint8_t *in, size_t len, uint8_t *buf, size_t block, int frames)
{
	size_t n = 0, part = (len + (size_t)frames - 1) / (size_t)frames;
	uint32_t magic = 0x184c2102, chunk;

	for (size_t at = 0; at < len;) {
		if (at % part == 0) {
			memcpy(buf + n, &magic, 4);
			n += 4;
		}
		size_t take = len - at < block ? len - at : block;

		if (take > part - at % part)
			take = part - at % part;
		chunk = (uint32_t)LZ4_compress_default((const char *)in + at, (char *)buf + n + 4,
						       (int)take, LZ4_compressBound((int)take));
		assert_true(chunk > 0);
		memcpy(buf + n, &chunk, 4);
		n += 4 + chunk;
		at += take;
	}
	return n;
}

/* The kernel's payloads: gzip has its size trailer; the others get one appended. */
static size_t compress_as(const char *format, const uint8_t *in, size_t len, uint8_t **out)
{
	size_t cap = len + 4096, n = 0;
	uint32_t size = (uint32_t)len;
	uint8_t *buf = malloc(cap);

	if (!strcmp(format, "gzip")) {
		z_stream z = { 0 };

		assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8,
					      Z_DEFAULT_STRATEGY),
				 Z_OK);
		z.next_in = (Bytef *)in;
		z.avail_in = (uInt)len;
		z.next_out = buf;
		z.avail_out = (uInt)cap;
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		n = z.total_out;
		deflateEnd(&z);
		*out = buf;
		return n;
	}
	if (!strcmp(format, "lz4"))
		n = lz4_legacy(in, len, buf, 8u << 20, 1);
	else if (!strcmp(format, "xz"))
		assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, len, buf,
							 &n, cap),
				 LZMA_OK);
	else
		n = ZSTD_compress(buf, cap, in, len, 19);
	memcpy(buf + n, &size, 4);
	*out = buf;
	return n + 4;
}

static void test_bzimage(void **state)
{
	static const char *const formats[] = { "gzip", "xz", "zstd", "lz4" };
	/* 16 bytes of a format, then the size trailer: 64 */
	static const uint8_t lzo[20] = { 0x89, 'L', 'Z', 'O', [16] = 64 };
	static const uint8_t unknown[20] = { 0x13, 0x37, [16] = 64 };
	uint8_t *v, *p, *b;
	size_t n, pn, bn;

	(void)state;
	n = vmlinux("ignored: the bzImage says", 14, &v);
	for (size_t i = 0; i < 4; i++) {
		pn = compress_as(formats[i], v, n, &p);
		/* the setup header's version, 6.12, says the entries are 14 bytes */
		bn = bzimage(p, pn, "6.12.118+deb12-amd64", &b);
		assert_sites(b, bn, 14);
		/* the payload cut short */
		memcpy(b + 0x24c, &(uint32_t){ (uint32_t)pn / 2 }, 4);
		refused(b, bn, -EBADMSG, "");
		/* beyond the file */
		memcpy(b + 0x24c, &(uint32_t){ (uint32_t)pn + 1 }, 4);
		refused(b, bn, -EBADMSG, "not inside");
		/* corrupt bytes in the middle of the stream */
		memcpy(b + 0x24c, &(uint32_t){ (uint32_t)pn }, 4);
		memset(b + 1024 + pn / 2, 0x55, 16);
		refused(b, bn, -EBADMSG, formats[i]);
		free(b);
		free(p);
	}
	free(v);
	bn = bzimage(lzo, sizeof(lzo), "6.1.0", &b);
	refused(b, bn, -EOPNOTSUPP, "lzo");
	free(b);
	bn = bzimage(unknown, sizeof(unknown), "6.1.0", &b);
	refused(b, bn, -EOPNOTSUPP, "none kmemctl knows");
	free(b);
}

static uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* a bzImage of vmlinux v with an lz4 legacy payload of p[0, pn) */
static size_t lz4_bzimage(const uint8_t *p, size_t pn, size_t vn, uint8_t **out)
{
	uint8_t *q = malloc(pn + 8);
	uint32_t size = (uint32_t)vn;
	size_t bn;

	memcpy(q, p, pn);
	memcpy(q + pn, &size, 4);
	bn = bzimage(q, pn + 4, "6.1.0-57-cloud-amd64", out);
	free(q);
	return bn;
}

/*
 * Debian's cloud images are lz4's legacy frame: blocks after blocks, and
 * frames after frames when lz4 concatenates; what does not add up to the
 * size the image says is refused.
 */
static void test_lz4(void **state)
{
	uint8_t *v, *p, *b;
	size_t n, pn, bn;

	(void)state;
	n = vmlinux("ignored", 12, &v);
	p = malloc(2 * n + 4096);
	/* many small blocks in three frames */
	pn = lz4_legacy(v, n, p, 512, 3);
	bn = lz4_bzimage(p, pn, n, &b);
	assert_sites(b, bn, 12);
	free(b);

	/* the last block's length runs past the payload */
	bn = lz4_bzimage(p, pn - 7, n, &b);
	refused(b, bn, -EBADMSG, "lz4: a block of");
	free(b);
	/* the frame cut after its first block */
	bn = lz4_bzimage(p, 8 + le32_at(p + 4), n, &b);
	refused(b, bn, -EBADMSG, "lz4: truncated after 256 of 768");
	free(b);
	pn = lz4_legacy(v, n, p, 8u << 20, 1);
	/* a literal run longer than the block */
	bn = lz4_bzimage(p, pn, n, &b);
	memset(b + 1024 + 8, 0xff, 8);
	refused(b, bn, -EBADMSG, "lz4: corrupt block at 4");
	free(b);
	/* more than the image says it holds */
	bn = lz4_bzimage(p, pn, n - 1, &b);
	refused(b, bn, -EBADMSG, "lz4: corrupt block");
	free(b);
	/* bytes left over before the size trailer */
	memcpy(p + pn, "\0\0\0\0", 4);
	bn = lz4_bzimage(p, pn + 4, n, &b);
	refused(b, bn, -EBADMSG, "lz4: 4 bytes after the last block");
	free(b);
	free(p);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vmlinux),
		cmocka_unit_test(test_bad_vmlinux),
		cmocka_unit_test(test_bzimage),
		cmocka_unit_test(test_lz4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
