// SPDX-License-Identifier: GPL-2.0
/* NUL bytes in a protobuf message's strings, on the wire (pbstrings.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pbstrings.h"

#define DEPTH_MAX 32

/* A varint at *p (before end) into *v, *p past it; false when it is cut or too long. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The field's name after what names its message, in field. */
static void name(char *field, size_t fieldlen, size_t at, const char *n)
{
	if (at < fieldlen)
		snprintf(field + at, fieldlen - at, "%s%s", at ? "." : "", n);
}

static int scan(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
		unsigned depth, char *field, size_t fieldlen)
{
	const ProtobufCFieldDescriptor *f;
	size_t at = strnlen(field, fieldlen);
	uint64_t key, n;
	int r;

	if (depth > DEPTH_MAX)
		return -EBADMSG;
	while (p < end) {
		if (!varint(&p, end, &key))
			return -EBADMSG;
		switch (key & 7) {
		case PROTOBUF_C_WIRE_TYPE_VARINT:
			if (!varint(&p, end, &n))
				return -EBADMSG;
			continue;
		case PROTOBUF_C_WIRE_TYPE_64BIT:
			if (end - p < 8)
				return -EBADMSG;
			p += 8;
			continue;
		case PROTOBUF_C_WIRE_TYPE_32BIT:
			if (end - p < 4)
				return -EBADMSG;
			p += 4;
			continue;
		case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED:
			break;
		default:
			return -EBADMSG;
		}
		if (!varint(&p, end, &n) || n > (uint64_t)(end - p))
			return -EBADMSG;
		f = key >> 3 <= UINT32_MAX ?
			    protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) :
			    NULL;
		if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, '\0', n)) {
			name(field, fieldlen, at, f->name);
			return -EINVAL;
		}
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
			name(field, fieldlen, at, f->name);
			r = scan(f->descriptor, p, p + n, depth + 1, field, fieldlen);
			if (r < 0)
				return r;
			field[at < fieldlen ? at : fieldlen - 1] = '\0';
		}
		p += n;
	}
	return 0;
}

int pb_strings_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     char *field, size_t fieldlen)
{
	if (!fieldlen)
		return -EINVAL;
	field[0] = '\0';
	return scan(d, buf, buf + len, 0, field, fieldlen);
}
