/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_RD_H
#define SHARDFS_RD_H

/*
 * The read path, between fsops and the store: a memory cache with one
 * byte budget, fetch sizing, whole-shard prefetch, sequential windows,
 * joining of reads onto fetches in flight, and an optional disk cache
 * (dcache) below the memory cache.
 *
 * What is cached: extents, ranges [off, off + len) of one object version
 * (key + ETag). The extents of one object never overlap: a fetch is
 * always cut to the gap between the extents already held or in flight,
 * so a read is answered by the extents that cover it, each found by a
 * binary search. An extent is either in flight (readers wait on it) or
 * ready (its bytes are in memory).
 *
 * How big a fetch is (the gap that a read needs is always fetched; these
 * rules only grow it, never past the neighbouring extents):
 *  - a file or member of at most RD_SMALL bytes: the whole file, once,
 *    grown to the caller's hint (rd_file.hint_off/hint_len: the member
 *    with the other members of its sample adjacent in the shard, when the
 *    extra bytes are small; ns computes it);
 *  - whole-shard mode (a member, prefetch SHARD, or AUTO when the dataset
 *    fits the budget): the first read of a shard fetches the whole shard
 *    in ranges of RD_SHARD_RANGE_MIN..RD_SHARD_RANGE_MAX bytes (about
 *    four), all in flight at once;
 *  - a larger file read sequentially: a window per stream (inode) that
 *    starts at RD_WINDOW_MIN and doubles while reads stay sequential, up
 *    to conf->window_max; a read elsewhere resets it. The next window is
 *    fetched when less than half a window is left ahead of the reader.
 * Prefetched bytes (beyond the read) are only fetched while the bytes in
 * flight stay under conf->inflight_max and the cache can make room for
 * them; otherwise the fetch shrinks to what the read needs.
 *
 * Eviction is S3-FIFO (scan resistant): new extents enter a small FIFO
 * (a tenth of the budget); those read again before they reach its end
 * move to the main FIFO, the others leave and are remembered as ghosts;
 * an extent fetched again while a ghost goes straight to main. Main
 * evicts its oldest extent that was not read since it last passed the
 * end (read ones go round again). An epoch larger than the cache thus
 * keeps a stable part of the dataset instead of evicting everything
 * (plain LRU). Extents in flight or being copied out are never freed;
 * the budget counts ready and in-flight bytes.
 *
 * A file need not be a whole object: a tar member is one segment of its
 * shard, a sparse member several, with zeros between them.
 *
 * Threading: rd_read*() may be called from any thread and never waits for
 * the network (the disk cache, when there is one, is read on the calling
 * thread). DONE runs on the store's completion thread, or on the caller's
 * thread before rd_read*() returns (cache hits, the local store). One
 * mutex protects the cache; it is never held while calling the store,
 * the disk cache or a DONE callback.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct rd;
struct dcache;

/* Files up to this size (and members) are fetched whole on first read. */
#define RD_SMALL (1024u * 1024u)
/* Sequential windows: the first window, and the default cap. */
#define RD_WINDOW_MIN (1024u * 1024u)
#define RD_WINDOW_MAX_DEFAULT (64u * 1024u * 1024u)
/* Whole-shard fetches are cut into about four ranges of this size. */
#define RD_SHARD_RANGE_MIN (8u * 1024u * 1024u)
#define RD_SHARD_RANGE_MAX (64u * 1024u * 1024u)

enum rd_prefetch {
	RD_PREFETCH_AUTO = 0, /* SHARD when the dataset fits, else MEMBER */
	RD_PREFETCH_SHARD,    /* members: fetch the whole shard */
	RD_PREFETCH_MEMBER,   /* members: fetch the member (and sample) */
};

struct rd_conf {
	struct store *store;	/* borrowed; must outlive the rd */
	struct dcache *dcache;	/* borrowed, or NULL: no disk cache */
	uint64_t cache_bytes;	/* memory budget; 0: RD_DEFAULT_CACHE */
	uint64_t inflight_max;	/* prefetch bound; 0: budget/2, <= 1 GiB */
	uint64_t window_max;	/* 0: RD_WINDOW_MAX_DEFAULT */
	enum rd_prefetch prefetch;
	/*
	 * AUTO: the total size of the shards when known (dataset index),
	 * else 0 (then a shard is fetched whole while the shards fetched
	 * whole so far, with it, fit in half the budget).
	 */
	uint64_t dataset_bytes;
};

/* Used when rd_conf.cache_bytes is 0 (unit tests). */
#define RD_DEFAULT_CACHE (256u * 1024u * 1024u)

/*
 * One data segment of a file: the file's bytes [file_off, file_off + len)
 * are the object's bytes [obj_off, obj_off + len).
 */
struct rd_seg {
	uint64_t file_off;
	uint64_t len;
	uint64_t obj_off;
};

/* What rd needs to know of a file for one read. All borrowed. */
struct rd_file {
	const char *key;	   /* the object (a member: its shard) */
	const char *etag;	   /* the ETag reads must match, or NULL */
	uint64_t size;		   /* the file's size */
	uint64_t obj_size;	   /* the object's size; 0: unknown */
	const struct rd_seg *segs; /* NULL: the file is the whole object */
	size_t nsegs;
	bool member;		   /* a member of a tar shard */
	uint64_t hint_off;	   /* object range worth fetching with the */
	uint64_t hint_len;	   /* file on a cold read (0: none) */
	uint64_t stream;	   /* identifies the file (inode); 0: none */
};

/* Counters, for tests and the statistics of a mount. */
struct rd_stats {
	uint64_t reads;	       /* rd_read*() calls */
	uint64_t served;       /* reads answered with data (0 bytes too) */
	uint64_t bytes_served; /* bytes handed to readers */
	uint64_t errors;       /* reads answered with an error */
	uint64_t hits;	       /* reads answered from memory at once */
	uint64_t misses;       /* reads that started a fetch */
	uint64_t joined;       /* reads that waited for others' fetches */
	uint64_t requests;     /* get_range() calls made */
	uint64_t bytes;	       /* bytes fetched from the store */
	uint64_t inflight;     /* get_range() calls in flight now */
	uint64_t inflight_bytes;
	uint64_t shard_fetches;	 /* shards fetched whole */
	uint64_t prefetch_bytes; /* bytes fetched ahead of reads (a shard
				    fetched whole counts whole) */
	uint64_t cache_budget;	 /* bytes */
	uint64_t cache_bytes;	 /* bytes held now (ready + in flight) */
	uint64_t cache_extents;	 /* extents held now */
	uint64_t evictions;	 /* extents evicted */
	uint64_t evicted_bytes;
	uint64_t disk_hits;	  /* fetches answered by the disk cache */
	uint64_t disk_bytes_read; /* bytes read from the disk cache */
};

/*
 * Completion of a read. ERR is 0 or a negative errno. DATA holds LEN
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
 * were answered), then frees RD and everything cached. NULL is a no-op.
 */
void rd_free(struct rd *rd);

/*
 * Reads up to SIZE bytes at OFF of file F. The read is clamped to
 * F->size; a read of a 0-byte file or at or past the end answers 0 bytes
 * without any request. DONE is called exactly once. F and what it points
 * to are borrowed for the call only. An error of any fetch the read
 * needs fails the whole read (never a partial answer).
 */
void rd_read_file(struct rd *rd, const struct rd_file *f, uint64_t off,
		  size_t size, rd_done_fn *done, void *arg);

/* rd_read_file() of the whole object KEY (FILE_SIZE bytes), no hints. */
void rd_read(struct rd *rd, const char *key, const char *etag, uint64_t off,
	     size_t size, uint64_t file_size, rd_done_fn *done, void *arg);

/*
 * rd_read_file() of a file of FILE_SIZE bytes whose data is the NSEGS
 * segments SEGS of object KEY (ascending by file_off, not overlapping,
 * inside [0, FILE_SIZE)); the file's bytes outside every segment are
 * zeros. SEGS may describe only the part around [OFF, OFF + SIZE).
 */
void rd_read_segs(struct rd *rd, const char *key, const char *etag,
		  const struct rd_seg *segs, size_t nsegs, uint64_t file_size,
		  uint64_t off, size_t size, rd_done_fn *done, void *arg);

void rd_get_stats(struct rd *rd, struct rd_stats *out);

#endif
