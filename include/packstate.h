/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_PACKSTATE_H
#define SHARDFS_PACKSTATE_H

/*
 * The pack state object (pure: no I/O, no threads, no globals):
 * PACKSTATE_OBJECT_NAME, next to the shards, records every shard that
 * `shardfs pack` finished, so that `shardfs pack --resume` can skip a
 * shard without reading its source files again: a shard is skipped when
 * the state has its key with the fingerprint the new plan computes (same
 * members, same source versions, same layout) and the store still holds
 * the object with the recorded size and ETag.
 *
 * Text, one record a line, fields separated by one space:
 *   shardfs-pack-state 1
 *   KEY SIZE ETAG FINGERPRINT
 * KEY is a shard name (no spaces: packplan.h restricts them), SIZE
 * decimal bytes, ETAG as the store reported it (bytes 0x21-0x7E, "-"
 * when the store has none), FINGERPRINT 64 hex digits. Lines that do not
 * parse are ignored (a damaged state only costs re-uploads).
 */

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PACKSTATE_OBJECT_NAME "shardfs.pack-state"
#define PACKSTATE_MAX	      (256u << 20) /* largest state accepted */

struct packstate_entry {
	char *key;  /* owned */
	char *etag; /* owned; "" when unknown */
	uint64_t size;
	char fp[65];
};

struct packstate {
	struct packstate_entry *e; /* owned array */
	size_t n, alloc;
};

void packstate_init(struct packstate *s);
void packstate_release(struct packstate *s);

/* Parses LEN bytes (a missing header line gives an empty state). 0 or
 * -ENOMEM. */
int packstate_parse(const char *data, size_t len, struct packstate *out);

/* Appends the text to OUT. 0 or buf errors. */
int packstate_format(const struct packstate *s, struct buf *out);

/* The entry for KEY or NULL. Borrowed until the state changes. */
const struct packstate_entry *packstate_find(const struct packstate *s,
					     const char *key);

/*
 * Adds or replaces KEY's entry. -EINVAL for a key or ETag that the
 * format cannot hold (spaces, control bytes, empty key, bad fingerprint),
 * -ENOMEM.
 */
int packstate_set(struct packstate *s, const char *key, uint64_t size,
		  const char *etag, const char *fp);

/* Removes KEY's entry (absent: no-op). */
void packstate_remove(struct packstate *s, const char *key);

#endif
