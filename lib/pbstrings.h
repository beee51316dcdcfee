/* SPDX-License-Identifier: GPL-2.0 */
/*
 * protobuf-c gives each string field as a C string: one holding a NUL
 * byte would be read as less than was sent ("h2\0h1" as "h2"). This reads
 * a message's wire bytes, as its descriptor says, before it is unpacked,
 * and refuses any string field, at any depth, that holds a NUL. Malformed
 * wire bytes are the unpacker's to refuse: here they end the scan.
 */
#ifndef KMEM_PBSTRINGS_H
#define KMEM_PBSTRINGS_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/*
 * 0 when no string field of the message of type d in buf (len bytes)
 * holds a NUL; -EINVAL when one does, its name (dotted from the top
 * message, "facts.host_id") in field; -EBADMSG when the bytes are not a
 * message or nest deeper than 32.
 */
int pb_strings_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     char *field, size_t fieldlen);

#endif
