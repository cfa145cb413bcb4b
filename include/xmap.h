/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_XMAP_H
#define SHARDFS_XMAP_H

/*
 * An ordered map from 64-bit keys to pointers, for the extents of one
 * object in the read cache (keyed by offset). Lookups are by floor (the
 * largest key <= K) and by successor (the smallest key > K), which is
 * what finding the extent that covers an offset and the gap after it
 * needs. O(log n) per operation: entries live in sorted chunks of up to
 * XMAP_CHUNK, found by binary search over the chunks' first keys, so an
 * insertion moves at most one chunk's entries (a plain sorted array
 * would move half the map, which hurts on shards of 100,000 members).
 *
 * Pure: no I/O, no locks; the owner serialises access. Values are
 * borrowed: the map never frees them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XMAP_CHUNK 128

struct xmap_chunk;

/* Embedded; zero-initialised is an empty map. */
struct xmap {
	struct xmap_chunk **c; /* sorted, none empty */
	size_t nc, alloc;
	size_t n; /* entries */
};

void xmap_init(struct xmap *m);
/* Frees the map's memory (not the values). */
void xmap_release(struct xmap *m);

/* Adds KEY -> VAL. 0, -EEXIST (KEY present; nothing changed) or -ENOMEM. */
int xmap_insert(struct xmap *m, uint64_t key, void *val);

/* Removes KEY and returns its value, or NULL when KEY is absent. */
void *xmap_remove(struct xmap *m, uint64_t key);

/* The entry with the largest key <= K, into KEY and VAL; false if none. */
bool xmap_floor(const struct xmap *m, uint64_t k, uint64_t *key, void **val);

/* The entry with the smallest key > K, into KEY and VAL; false if none. */
bool xmap_higher(const struct xmap *m, uint64_t k, uint64_t *key,
		 void **val);

static inline size_t xmap_count(const struct xmap *m)
{
	return m->n;
}

#endif
