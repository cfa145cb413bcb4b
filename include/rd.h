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
 * A file need not be a whole object: rd_read_segs() reads a file whose
 * bytes are segments of an object (a tar member is one segment of its
 * shard; a sparse member several, with zeros between them). A read that
 * spans several segments is served by one get_range() per run of
 * segments that are contiguous in the object (a sparse tar stores its
 * segments back to back, so that is usually one), and the answer is
 * assembled, with the holes zeroed, before DONE is called.
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

/*
 * One data segment of a file: the file's bytes [file_off, file_off + len)
 * are the object's bytes [obj_off, obj_off + len).
 */
struct rd_seg {
	uint64_t file_off;
	uint64_t len;
	uint64_t obj_off;
};

/* Counters, for tests and the statistics of a mount. */
struct rd_stats {
	uint64_t reads;	   /* rd_read() and rd_read_segs() calls */
	uint64_t served;   /* reads answered with data (0 bytes included) */
	uint64_t bytes_served; /* bytes handed to readers */
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

/*
 * Reads up to SIZE bytes at OFF of a file of FILE_SIZE bytes whose data
 * is the NSEGS segments SEGS of object KEY (ascending by file_off, not
 * overlapping, inside [0, FILE_SIZE)); the file's bytes outside every
 * segment are zeros. SEGS may describe the whole file or only the part
 * around [OFF, OFF + SIZE) (segments outside it are ignored); it is
 * borrowed for the call only, KEY and ETAG are copied. Clamping, ETag
 * and DONE as rd_read(); an error of any of the requests fails the whole
 * read (the first error is reported), never a partial answer.
 */
void rd_read_segs(struct rd *rd, const char *key, const char *etag,
		  const struct rd_seg *segs, size_t nsegs, uint64_t file_size,
		  uint64_t off, size_t size, rd_done_fn *done, void *arg);

void rd_get_stats(struct rd *rd, struct rd_stats *out);

#endif
