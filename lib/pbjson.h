/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Any protobuf-c message as JSON, by its descriptor, following proto3's
 * JSON mapping where it matters to readers: field names as in the .proto,
 * enums by name, 64-bit integers as numbers (jansson's json_int_t; values
 * above INT64_MAX are clamped), maps as objects, bytes left out. Used for
 * what the agent shows locally (kmemctl status, watch) so the CLI needs no
 * second copy of each message's layout.
 */
#ifndef KMEMCTL_PBJSON_H
#define KMEMCTL_PBJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* A new reference, or NULL when out of memory. */
json_t *pbjson_from_message(const ProtobufCMessage *m);

#endif
