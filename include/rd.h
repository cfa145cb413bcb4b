/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_RD_H
#define SHARDFS_RD_H

/*
 * The read path. For now: each read becomes one store get_range() of
 * exactly the bytes needed (clamped to the file size), and concurrent
 * reads of the same (key, ETag, offset, length) join one request in
 * flight. A later issue grows this module into the cache (fetch sizing,
 * neighbours, whole-shard mode) behind the same small API.
 *
 * Threading: rd_read() may be called from any thread and never blocks on
 * the store; DONE runs on the store's completion thread (or on the
 * caller's thread before rd_read() returns, for an empty read or a store
 * that completes inline). One mutex protects the table of requests in
 * flight; it is never held while calling the store or a DONE callback.
 */

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct rd;

struct rd_conf {
	struct store *store; /* borrowed; must outlive the rd */
};

/* Counters, for tests and the statistics of a mount. */
struct rd_stats {
	uint64_t reads;	   /* rd_read() calls */
	uint64_t requests; /* get_range() calls made */
	uint64_t joined;   /* reads answered by another read's request */
	uint64_t errors;   /* reads answered with an error */
	uint64_t bytes;	   /* bytes fetched from the store */
	uint64_t inflight; /* requests in flight now */
};

/*
 * Completion of rd_read(). ERR is 0 or a negative errno. DATA holds LEN
 * bytes on success (LEN may be 0, DATA may then be NULL); it is borrowed
 * for the duration of the call only. MSG is a short cause on error (from
 * the store), borrowed, or NULL.
 */
typedef void rd_done_fn(void *arg, int err, const char *data, size_t len,
			const char *msg);

/* 0 or -ENOMEM. Free with rd_free(). */
int rd_new(const struct rd_conf *conf, struct rd **out);

/*
 * Waits until every request in flight has completed (and its readers
 * were answered), then frees RD. NULL is a no-op.
 */
void rd_free(struct rd *rd);

/*
 * Reads up to SIZE bytes at OFF of KEY, whose size is FILE_SIZE and whose
 * ETag (may be NULL) the object must still have. The read is clamped to
 * FILE_SIZE; a read of a 0-byte file or at or past the end answers 0
 * bytes without any request. DONE is called exactly once. KEY and ETAG
 * are copied.
 */
void rd_read(struct rd *rd, const char *key, const char *etag, uint64_t off,
	     size_t size, uint64_t file_size, rd_done_fn *done, void *arg);

void rd_get_stats(struct rd *rd, struct rd_stats *out);

#endif
