// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel image's patch-site tables (kimage.h). The bzImage's setup header
 * says where its payload is (Documentation/arch/x86/boot.rst: setup_sects,
 * "HdrS", payload_offset, payload_length); the payload is the ELF vmlinux,
 * stripped of symbols but with its section headers, compressed, with the
 * uncompressed size in its last four bytes whatever the format.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lz4.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "kimage.h"
#include "uapi/kmemctl.h"

#define SETUP_SECTS 0x1f1
#define HDRS 0x202
#define KERNEL_VERSION 0x20e
#define PAYLOAD_OFFSET 0x248
#define PAYLOAD_LENGTH 0x24c
#define NT_GNU_BUILD_ID_TYPE 3

/* What /sys/kernel/kmemctl/sites takes; the first is in every x86-64 kernel. */
static const char *const wanted[] = {
	".altinstructions",
	".altinstr_replacement",
	".parainstructions",
	".smp_locks",
};

static __attribute__((format(printf, 3, 4))) int fail(char *err, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, KIMAGE_ERR_MAX, fmt, ap);
	va_end(ap);
	return ret;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int unxz(const uint8_t *in, size_t len, uint8_t *out, size_t cap, char *err)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r = lzma_stream_decoder(&s, UINT64_MAX, 0);

	if (r != LZMA_OK)
		return fail(err, r == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL, "xz: error %d", r);
	s.next_in = in;
	s.avail_in = len;
	s.next_out = out;
	s.avail_out = cap;
	r = lzma_code(&s, LZMA_FINISH);
	lzma_end(&s);
	if (r == LZMA_MEM_ERROR)
		return fail(err, -ENOMEM, "xz: out of memory");
	if (r != LZMA_STREAM_END || s.total_out != cap)
		return fail(err, -EBADMSG, "xz: corrupt payload (error %d, %llu of %zu bytes)", r,
			    (unsigned long long)s.total_out, cap);
	return 0;
}

static int unzstd(const uint8_t *in, size_t len, uint8_t *out, size_t cap, char *err)
{
	size_t frame = ZSTD_findFrameCompressedSize(in, len), n;

	if (ZSTD_isError(frame))
		return fail(err, -EBADMSG, "zstd: %s", ZSTD_getErrorName(frame));
	n = ZSTD_decompress(out, cap, in, frame);
	if (ZSTD_isError(n))
		return fail(err, -EBADMSG, "zstd: %s", ZSTD_getErrorName(n));
	if (n != cap)
		return fail(err, -EBADMSG, "zstd: %zu bytes, the image says %zu", n, cap);
	return 0;
}

static int gunzip(const uint8_t *in, size_t len, uint8_t *out, size_t cap, char *err)
{
	z_stream z = { 0 };
	int r;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return fail(err, -ENOMEM, "gzip: out of memory");
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	r = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (r != Z_STREAM_END || z.total_out != cap)
		return fail(err, -EBADMSG, "gzip: corrupt payload (%s, %lu of %zu bytes)",
			    z.msg ?: "short", z.total_out, cap);
	return 0;
}

#define LZ4_LEGACY_MAGIC 0x184c2102u
#define LZ4_LEGACY_BLOCK (8u << 20)

/*
 * lz4's legacy frame (`lz4 -l`, what the kernel's Makefile makes): the magic,
 * then blocks, each a 4-byte compressed length and an lz4 block of up to
 * 8 MiB; a magic again starts another frame. The kernel's decompressor stops
 * at the end of its input, which the bzImage ends with the size trailer.
 */
static int unlz4(const uint8_t *in, size_t len, uint8_t *out, size_t cap, char *err)
{
	size_t pos = 4, done = 0, chunk, room;
	int n;

	len -= 4; /* the size trailer, which payload() read */
	while (done < cap) {
		if (len - pos < 4)
			return fail(err, -EBADMSG, "lz4: truncated after %zu of %zu bytes", done,
				    cap);
		chunk = le32(in + pos);
		pos += 4;
		if (chunk == LZ4_LEGACY_MAGIC)
			continue;
		if (chunk > (size_t)LZ4_compressBound(LZ4_LEGACY_BLOCK) || chunk > len - pos)
			return fail(err, -EBADMSG, "lz4: a block of %zu bytes at %zu, past the end",
				    chunk, pos - 4);
		room = cap - done < LZ4_LEGACY_BLOCK ? cap - done : LZ4_LEGACY_BLOCK;
		n = LZ4_decompress_safe((const char *)in + pos, (char *)out + done, (int)chunk,
					(int)room);
		if (n <= 0)
			return fail(err, -EBADMSG, "lz4: corrupt block at %zu", pos - 4);
		pos += chunk;
		done += (size_t)n;
	}
	if (pos != len)
		return fail(err, -EBADMSG, "lz4: %zu bytes after the last block", len - pos);
	return 0;
}

/* The bzImage's payload, decompressed, into *out. */
static int payload(const uint8_t *image, size_t len, uint8_t **out, size_t *out_len,
		   char release[65], char *err)
{
	static const struct {
		const char *name;
		const uint8_t magic[6];
		size_t n;
		int (*unpack)(const uint8_t *, size_t, uint8_t *, size_t, char *);
	} formats[] = {
		{ "gzip", { 0x1f, 0x8b }, 2, gunzip },
		{ "xz", { 0xfd, '7', 'z', 'X', 'Z', 0 }, 6, unxz },
		{ "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4, unzstd },
		{ "lz4", { 0x02, 0x21, 0x4c, 0x18 }, 4, unlz4 },
		{ "lzma", { 0x5d, 0, 0 }, 3, NULL },
		{ "bzip2", { 'B', 'Z', 'h' }, 3, NULL },
		{ "lzo", { 0x89, 'L', 'Z', 'O' }, 4, NULL },
	};
	size_t setup, off, plen, size;
	const uint8_t *p;
	uint8_t *buf;
	int r;

	if (len < PAYLOAD_LENGTH + 4 || memcmp(image + HDRS, "HdrS", 4))
		return fail(err, -EBADMSG, "neither an ELF vmlinux nor a bzImage (no \"HdrS\")");
	setup = image[SETUP_SECTS] ? image[SETUP_SECTS] : 4;
	/* kernel_version: "6.1.0-57-amd64 (...) #1 SMP ...", less 0x200 */
	off = (size_t)image[KERNEL_VERSION] | (size_t)image[KERNEL_VERSION + 1] << 8;
	if (off && off + 0x200 < len)
		snprintf(release, 65, "%.*s",
			 (int)strnlen((const char *)image + off + 0x200, len - off - 0x200),
			 image + off + 0x200);
	off = (setup + 1) * 512 + le32(image + PAYLOAD_OFFSET);
	plen = le32(image + PAYLOAD_LENGTH);
	if (plen < 16 || off > len || plen > len - off)
		return fail(err, -EBADMSG,
			    "the payload (%zu bytes at %zu) is not inside the %zu-byte image", plen,
			    off, len);
	p = image + off;
	size = le32(p + plen - 4);
	if (size < 64 || size > KIMAGE_VMLINUX_MAX)
		return fail(err, -EBADMSG, "the payload says it holds %zu bytes", size);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (memcmp(p, formats[i].magic, formats[i].n))
			continue;
		if (!formats[i].unpack)
			return fail(err, -EOPNOTSUPP,
				    "the payload is %s; kmemctl reads gzip, xz, zstd and lz4",
				    formats[i].name);
		buf = malloc(size);
		if (!buf)
			return fail(err, -ENOMEM, "out of memory for %zu bytes", size);
		r = formats[i].unpack(p, plen, buf, size, err);
		if (r < 0) {
			free(buf);
			return r;
		}
		*out = buf;
		*out_len = size;
		return 0;
	}
	return fail(err, -EOPNOTSUPP,
		    "the payload's compression is none kmemctl knows (%02x %02x %02x %02x)", p[0],
		    p[1], p[2], p[3]);
}

static int build_id_of(Elf_Data *d, struct kimage_sites *out)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr n;

	while ((off = gelf_getnote(d, off, &n, &name_off, &desc_off)) > 0) {
		if (n.n_type != NT_GNU_BUILD_ID_TYPE || n.n_namesz != 4 ||
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) || !n.n_descsz ||
		    n.n_descsz > 20)
			continue;
		for (size_t i = 0; i < n.n_descsz; i++)
			snprintf(out->build_id + 2 * i, 3, "%02x",
				 ((const uint8_t *)d->d_buf)[desc_off + i]);
		return (int)n.n_descsz;
	}
	return 0;
}

/*
 * sizeof(struct alt_instr) of the kernel whose release ("6.1.0-57-amd64
 * ...") is given: 6.3 made the 16-bit feature a 32-bit word of feature
 * and flags. Both end in instrlen, replacementlen.
 */
static int alt_size_of(const char *release, char *err)
{
	unsigned int major, minor;

	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return fail(err, -EBADMSG, "no kernel version in the image");
	if (major < 6 || (major == 6 && minor < 1))
		return fail(err, -EOPNOTSUPP,
			    "kernel %u.%u: kmemctl knows the alternatives of 6.1 on", major, minor);
	return major == 6 && minor < 3 ? 12 : 14;
}

struct image {
	Elf *elf;
	size_t nsecs;
	struct section {
		const char *name;
		GElf_Shdr sh;
		Elf_Data *data;
	} * secs;
	const char *release; /* NULL: read it from .rodata */
};

static const struct section *section_named(const struct image *im, const char *name)
{
	for (size_t i = 0; i < im->nsecs; i++)
		if (!strcmp(im->secs[i].name, name))
			return &im->secs[i];
	return NULL;
}

/* The image's bytes at [addr, addr + n), or NULL. */
static const uint8_t *bytes_at(const struct image *im, uint64_t addr, size_t n)
{
	for (size_t i = 0; i < im->nsecs; i++) {
		const struct section *s = &im->secs[i];

		if (s->sh.sh_type == SHT_PROGBITS && s->data && addr >= s->sh.sh_addr &&
		    addr - s->sh.sh_addr <= s->data->d_size &&
		    n <= s->data->d_size - (addr - s->sh.sh_addr))
			return (const uint8_t *)s->data->d_buf + (addr - s->sh.sh_addr);
	}
	return NULL;
}

static int read_sections(struct image *im, char *err)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, n;
	GElf_Ehdr eh;

	if (elf_kind(im->elf) != ELF_K_ELF || !gelf_getehdr(im->elf, &eh) ||
	    gelf_getclass(im->elf) != ELFCLASS64)
		return fail(err, -EBADMSG, "not a 64-bit ELF file");
	if (eh.e_machine != EM_X86_64)
		return fail(err, -EBADMSG, "an ELF file for machine %u, not x86-64", eh.e_machine);
	if (elf_getshdrstrndx(im->elf, &shstrndx) || elf_getshdrnum(im->elf, &n))
		return fail(err, -EBADMSG, "ELF: %s", elf_errmsg(-1));
	im->secs = calloc(n, sizeof(*im->secs));
	if (!im->secs)
		return fail(err, -ENOMEM, "out of memory");
	while ((scn = elf_nextscn(im->elf, scn)) && im->nsecs < n) {
		struct section *s = &im->secs[im->nsecs];

		if (!gelf_getshdr(scn, &s->sh))
			return fail(err, -EBADMSG, "ELF: %s", elf_errmsg(-1));
		s->name = elf_strptr(im->elf, shstrndx, s->sh.sh_name);
		if (!s->name)
			continue;
		if (s->sh.sh_type != SHT_NOBITS) {
			s->data = elf_getdata(scn, NULL);
			if (!s->data || s->data->d_size != s->sh.sh_size)
				return fail(err, -EBADMSG,
					    "section %s: its bytes are not in the file", s->name);
		}
		im->nsecs++;
	}
	return 0;
}

/* "6.1.0-57-amd64 ..." from .rodata's "Linux version 6.1.0-57-amd64 ...". */
static const char *release_in_rodata(const struct image *im)
{
	static const char banner[] = "Linux version ";
	const struct section *s = section_named(im, ".rodata");
	const char *p;

	if (!s || !s->data)
		return NULL;
	p = memmem(s->data->d_buf, s->data->d_size, banner, sizeof(banner) - 1);
	return p ? p + sizeof(banner) - 1 : NULL;
}

/* What the image has at each alternative site: the "kmemctl.orig" section. */
static int originals(const struct image *im, const struct section *alt, size_t alt_size,
		     uint8_t **orig, size_t *len, char *err)
{
	const uint8_t *e = alt->data->d_buf, *code;
	size_t n = alt->sh.sh_size / alt_size, total = 0;
	uint64_t instr;
	int32_t rel;

	if (alt->sh.sh_size % alt_size)
		return fail(err, -EBADMSG, ".altinstructions: %llu bytes, not entries of %zu",
			    (unsigned long long)alt->sh.sh_size, alt_size);
	for (size_t i = 0; i < n; i++)
		total += e[i * alt_size + alt_size - 2];
	*orig = malloc(total ? total : 1);
	if (!*orig)
		return fail(err, -ENOMEM, "out of memory");
	*len = 0;
	for (size_t i = 0; i < n; i++, e += alt_size) {
		memcpy(&rel, e, sizeof(rel));
		instr = alt->sh.sh_addr + i * alt_size + (uint64_t)(int64_t)rel;
		code = bytes_at(im, instr, e[alt_size - 2]);
		if (!code) {
			free(*orig);
			return fail(err, -EBADMSG,
				    "alternative %zu at %llx is in no section of the image", i,
				    (unsigned long long)instr);
		}
		memcpy(*orig + *len, code, e[alt_size - 2]);
		*len += e[alt_size - 2];
	}
	return 0;
}

struct part {
	const char *name;
	uint64_t addr;
	const void *bytes;
	size_t size;
};

/* The blob of the parts. */
static int blob_of(struct kimage_sites *out, const struct kmemctl_sites_header *h,
		   const struct part *parts, size_t n, char *err)
{
	struct kmemctl_sites_section *sec;
	size_t total = sizeof(*h) + n * sizeof(*sec), off = total;

	for (size_t i = 0; i < n; i++)
		total += parts[i].size;
	if (total > KMEMCTL_SITES_MAX)
		return fail(err, -EBADMSG,
			    "the tables take %zu bytes, more than the module takes (%u)", total,
			    KMEMCTL_SITES_MAX);
	out->blob = calloc(1, total);
	if (!out->blob)
		return fail(err, -ENOMEM, "out of memory");
	memcpy(out->blob, h, sizeof(*h));
	sec = (struct kmemctl_sites_section *)(out->blob + sizeof(*h));
	for (size_t i = 0; i < n; i++, sec++) {
		snprintf(sec->name, sizeof(sec->name), "%s", parts[i].name);
		sec->addr = parts[i].addr;
		sec->offset = (uint32_t)off;
		sec->size = (uint32_t)parts[i].size;
		memcpy(out->blob + off, parts[i].bytes, parts[i].size);
		off += parts[i].size;
	}
	out->len = total;
	return 0;
}

static int sites_of(struct image *im, struct kimage_sites *out, char *err)
{
	struct kmemctl_sites_header h = { 0 };
	struct part parts[sizeof(wanted) / sizeof(wanted[0]) + 1];
	const struct section *text, *notes, *alt, *s;
	const char *release = im->release;
	uint8_t *orig = NULL;
	size_t n = 0, orig_len = 0;
	int r, id_len;

	r = read_sections(im, err);
	if (r < 0)
		return r;
	text = section_named(im, ".text");
	notes = section_named(im, ".notes");
	alt = section_named(im, wanted[0]);
	if (!text || !alt || !alt->data)
		return fail(err, -EBADMSG, "no .text or .altinstructions section: not a kernel");
	id_len = notes && notes->sh.sh_type == SHT_NOTE ? build_id_of(notes->data, out) : 0;
	if (!id_len)
		return fail(err, -EBADMSG, "no GNU build id in .notes");
	if (!release)
		release = release_in_rodata(im);
	r = alt_size_of(release ? release : "", err);
	if (r < 0)
		return r;
	memcpy(h.magic, KMEMCTL_SITES_MAGIC, sizeof(h.magic));
	h.build_id_len = (uint32_t)id_len;
	for (int i = 0; i < id_len; i++)
		sscanf(out->build_id + 2 * i, "%2hhx", &h.build_id[i]);
	h.alt_size = (uint32_t)r;
	h.text_addr = text->sh.sh_addr;
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		s = section_named(im, wanted[i]);
		if (!s || !s->data)
			continue;
		if (s->sh.sh_type != SHT_PROGBITS)
			return fail(err, -EBADMSG, "section %s: type %u", s->name, s->sh.sh_type);
		parts[n++] = (struct part){ s->name, s->sh.sh_addr, s->data->d_buf, s->sh.sh_size };
	}
	r = originals(im, alt, h.alt_size, &orig, &orig_len, err);
	if (r < 0)
		return r;
	parts[n++] = (struct part){ "kmemctl.orig", 0, orig, orig_len };
	h.nsections = (uint32_t)n;
	r = blob_of(out, &h, parts, n, err);
	free(orig);
	return r;
}

int kimage_sites(const uint8_t *image, size_t len, struct kimage_sites *out,
		 char err[KIMAGE_ERR_MAX])
{
	struct image im = { 0 };
	uint8_t *vmlinux = NULL;
	char release[65] = "";
	size_t vlen = len;
	int r;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	if (len < SELFMAG || memcmp(image, ELFMAG, SELFMAG)) {
		r = payload(image, len, &vmlinux, &vlen, release, err);
		if (r < 0)
			return r;
		if (vlen < SELFMAG || memcmp(vmlinux, ELFMAG, SELFMAG)) {
			free(vmlinux);
			return fail(err, -EBADMSG, "the payload is not an ELF file");
		}
		im.release = release[0] ? release : NULL;
	}
	elf_version(EV_CURRENT);
	im.elf = elf_memory((char *)(vmlinux ? vmlinux : image), vlen);
	if (!im.elf) {
		free(vmlinux);
		return fail(err, -EBADMSG, "ELF: %s", elf_errmsg(-1));
	}
	r = sites_of(&im, out, err);
	if (r < 0)
		kimage_sites_free(out);
	free(im.secs);
	elf_end(im.elf);
	free(vmlinux);
	return r;
}

void kimage_sites_free(struct kimage_sites *s)
{
	free(s->blob);
	s->blob = NULL;
	s->len = 0;
}
