/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_PACKUP_H
#define SHARDFS_PACKUP_H

/*
 * packup: streams tar shards into a store, part by part, with several
 * parts (of one or several shards) in flight and a fixed memory budget.
 *
 * Memory model: the only large allocations are NBUFS part buffers of
 * PART_SIZE bytes each, made on first use and reused. A buffer is filled
 * by the producer (the caller's thread), sealed (hashed, submitted) when
 * full or at the end of its shard, and returns to the pool when the
 * store has answered for it. When every buffer is in flight the producer
 * waits. So memory is NBUFS * PART_SIZE however large the shards are and
 * however many shards are in flight (a shard needs no buffer of its own
 * beyond the parts it has in flight), and requests in flight are at most
 * NBUFS (the engine further caps them at --max-connections).
 *
 * Shards: a shard of at most PART_SIZE bytes is one PUT (put_async);
 * a larger one is a multipart upload (upload_begin when the shard
 * starts; parts of exactly PART_SIZE bytes but the last). When a shard's
 * last part has been answered, it is completed (upload_complete), its
 * size and ETag are read back with HEAD, and ON_SHARD is called with
 * the ETag the store reports. With ETAGS set, the MD5 of every part is
 * computed while the part is sealed, and the expected ETag (the MD5 for
 * one PUT, MD5 of the part MD5s and "-N" for multipart) is compared with
 * HEAD's; a mismatch is logged once (servers with encryption or other
 * ETag schemes differ), the size must match.
 *
 * Failures: the store (the engine) retries a part as it retries any
 * request; a part that still fails fails its shard and the whole run
 * (packup_err()). packup_cancel() then waits for what is in flight and
 * aborts every upload not completed, so no parts are left behind.
 *
 * Threading: all calls from one thread (the producer). Store completions
 * arrive on any thread and only queue the part and signal.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define PACKUP_MIN_PART	 (UINT64_C(5) << 20) /* S3's smallest part */
#define PACKUP_MAX_PARTS 10000u		     /* S3's most parts */

struct packup;

/* Shard ID is stored: SIZE bytes with ETAG ("" when the store has none).
 * Called on the producer's thread from inside a packup_* call. Returns 0
 * or a negative errno, which fails the run. */
typedef int packup_shard_fn(void *arg, uint32_t id, const char *etag);

struct packup_conf {
	struct store *store;	/* borrowed */
	uint64_t part_size;	/* bytes per part, >= PACKUP_MIN_PART */
	unsigned nbufs;		/* part buffers, >= 2 */
	bool etags;		/* compute MD5 ETags and check them */
	const atomic_int *stop; /* non-zero: stop waiting (-EINTR) */
	packup_shard_fn *on_shard;
	void *arg;
};

int packup_new(const struct packup_conf *conf, struct packup **out);

/* Frees everything; call packup_finish() or packup_cancel() first. */
void packup_free(struct packup *u);

/*
 * Starts shard ID named KEY (copied) of exactly SIZE bytes; the previous
 * shard must have ended. Blocking for a multipart upload's creation.
 */
int packup_begin(struct packup *u, uint32_t id, const char *key, uint64_t size);

/* Appends LEN bytes to the current shard. */
int packup_write(struct packup *u, const void *data, size_t len);

/*
 * A span of at least 1 byte of the current part buffer to fill in place
 * (e.g. with read(2)); then packup_commit() the bytes filled. The span
 * never runs past the shard's planned size.
 */
int packup_span(struct packup *u, void **p, size_t *len);
int packup_commit(struct packup *u, size_t n);

/* The current shard got all its SIZE bytes: seals its last part. */
int packup_end(struct packup *u);

/* Handles answers that arrived, without waiting. 0 or the run's error. */
int packup_poll(struct packup *u);

/* Waits until every shard begun is stored. 0 or the run's error. */
int packup_finish(struct packup *u);

/*
 * After an error (or to stop): waits for every part in flight, then
 * aborts every upload that was not completed. Shards already stored stay.
 */
void packup_cancel(struct packup *u);

/* The run's first error (0 when none) and its message. */
int packup_err(const struct packup *u);
const char *packup_errmsg(const struct packup *u);

/* Bytes the store has acknowledged (parts answered with success). */
uint64_t packup_acked(const struct packup *u);

#endif
