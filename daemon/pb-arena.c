// SPDX-License-Identifier: GPL-2.0
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pb-arena.h"

struct block {
	struct block *next;
	size_t used, cap;
	alignas(max_align_t) unsigned char data[];
};

/* at the start of its first block's data */
struct pb_arena {
	ProtobufCAllocator pa;
	struct block *head; /* the block allocated from; older ones follow, the first last */
};

#define ALIGN alignof(max_align_t)

static void *pa_alloc(void *data, size_t n)
{
	return pb_arena_alloc(data, n);
}

static void pa_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

struct pb_arena *pb_arena_new(size_t hint)
{
	struct block *b;
	struct pb_arena *a;

	if (hint > SIZE_MAX / 2)
		return NULL;
	b = malloc(sizeof(*b) + sizeof(*a) + hint);
	if (!b)
		return NULL;
	*b = (struct block){ .used = sizeof(*a), .cap = sizeof(*a) + hint };
	a = (struct pb_arena *)b->data;
	a->pa = (ProtobufCAllocator){ .alloc = pa_alloc, .free = pa_free, .allocator_data = a };
	a->head = b;
	return a;
}

struct pb_arena *pb_arena_for(size_t len)
{
	return len > SIZE_MAX / 4 ? NULL : pb_arena_new(2 * len + 4096);
}

void *pb_arena_alloc(struct pb_arena *a, size_t n)
{
	struct block *b = a->head;
	size_t at = (b->used + ALIGN - 1) & ~(ALIGN - 1), cap;

	if (n > SIZE_MAX / 2 - ALIGN)
		return NULL;
	if (at > b->cap || n > b->cap - at) {
		cap = b->cap * 2 > n ? b->cap * 2 : n;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		*b = (struct block){ .next = a->head, .cap = cap };
		a->head = b;
		at = 0;
	}
	b->used = at + n;
	return b->data + at;
}

ProtobufCAllocator *pb_arena_allocator(struct pb_arena *a)
{
	return &a->pa;
}

void pb_arena_free(struct pb_arena *a)
{
	struct block *b, *next;

	if (!a)
		return;
	/* the first block, which holds a, goes last */
	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
}
