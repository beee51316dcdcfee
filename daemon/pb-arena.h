/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An arena for one report's life in kmemd: protobuf-c unpacks it into the
 * arena, its pending reply lives there too, and one free ends them all.
 * A report unpacked with malloc cost a malloc and a free per string,
 * submessage and array: a fifth of the event loop's time.
 */
#ifndef KMEMD_PB_ARENA_H
#define KMEMD_PB_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

struct pb_arena;

/* An arena whose first block holds hint bytes; NULL when out of memory. */
struct pb_arena *pb_arena_new(size_t hint);
/* An arena for a message of len bytes encoded: what it unpacks to is about twice that. */
struct pb_arena *pb_arena_for(size_t len);
/* n bytes aligned for any type, or NULL; freed with the arena only. */
void *pb_arena_alloc(struct pb_arena *a, size_t n);
/* For protobuf_c_message_unpack(): its frees are no-ops. */
ProtobufCAllocator *pb_arena_allocator(struct pb_arena *a);
void pb_arena_free(struct pb_arena *a);

#endif
