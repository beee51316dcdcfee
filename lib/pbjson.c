// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbjson.h"

/* The length of the UTF-8 sequence at s as JSON allows it (RFC 3629), 0 if none. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	/* a NUL ends the loop as a bad continuation byte: nothing is read past it */
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)))
		return 0;
	if (n == 4 && (c < 0x10000 || c > 0x10ffff))
		return 0;
	return n;
}

/*
 * Strings come from outside too (task names, kernel lines), and need not
 * be UTF-8, which JSON requires and jansson enforces: a byte that is not
 * is written as "\xNN", as the kernel escapes bytes in /dev/kmsg.
 * Returns a malloc'ed copy, or NULL when out of memory.
 */
static char *escape(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *buf = malloc(strlen(s) * 4 + 1);
	size_t off = 0, n;

	if (!buf)
		return NULL;
	for (; *p; p += n) {
		n = utf8_len(p);
		if (n) {
			memcpy(buf + off, p, n);
			off += n;
		} else {
			off += (size_t)sprintf(buf + off, "\\x%02x", *p);
			n = 1;
		}
	}
	buf[off] = '\0';
	return buf;
}

static json_t *string(const char *s)
{
	json_t *j = json_string(s);
	char *e;

	if (j)
		return j;
	e = escape(s);
	j = e ? json_string(e) : NULL;
	free(e);
	return j;
}

static json_t *scalar(const ProtobufCFieldDescriptor *f, const void *p)
{
	const ProtobufCEnumValue *ev;
	uint64_t u;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_integer(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		u = *(const uint64_t *)p;
		return json_integer(u > INT64_MAX ? INT64_MAX : (json_int_t)u);
	case PROTOBUF_C_TYPE_FLOAT:
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	case PROTOBUF_C_TYPE_STRING:
		return string(*(char *const *)p ? *(char *const *)p : "");
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p ?
			       pbjson_from_message(*(ProtobufCMessage *const *)p) :
			       json_null();
	default:
		return NULL; /* bytes */
	}
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* A map<> field: repeated entries of a message with fields key and value. */
static bool is_map(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;

	return f->label == PROTOBUF_C_LABEL_REPEATED && f->type == PROTOBUF_C_TYPE_MESSAGE &&
	       d->n_fields == 2 && !strcmp(d->fields[0].name, "key") &&
	       !strcmp(d->fields[1].name, "value") && d->fields[0].type == PROTOBUF_C_TYPE_STRING;
}

static json_t *map(const ProtobufCFieldDescriptor *f, ProtobufCMessage *const *entries, size_t n)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	json_t *o = json_object(), *v;
	const char *e, *key;
	char *k;
	size_t i;
	int r;

	for (i = 0; o && i < n; i++) {
		e = (const char *)entries[i];
		key = *(char *const *)(e + d->fields[0].offset);
		k = escape(key ? key : "");
		v = scalar(&d->fields[1], e + d->fields[1].offset);
		/* json_object_set_new() takes v even when it fails */
		r = k ? json_object_set_new(o, k, v) : -1;
		free(k);
		if (!v || r < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *pbjson_from_message(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object(), *v;
	const char *base = (const char *)m;
	unsigned int i;
	size_t j, n;

	for (i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *p = base + f->offset;

		if (f->type == PROTOBUF_C_TYPE_BYTES)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)(base + f->quantifier_offset);
			p = *(char *const *)p;
			if (is_map(f)) {
				v = map(f, (ProtobufCMessage *const *)p, n);
			} else {
				v = json_array();
				for (j = 0; v && j < n; j++)
					if (json_array_append_new(
						    v, scalar(f, p + j * elem_size(f->type))) < 0) {
						json_decref(v);
						v = NULL;
					}
			}
		} else {
			v = scalar(f, p);
		}
		if (!v || json_object_set_new(o, f->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
