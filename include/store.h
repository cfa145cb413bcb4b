/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_STORE_H
#define SHARDFS_STORE_H

/*
 * The backend interface: a small vtable that the namespace and the read
 * path use, with one implementation per kind of SOURCE (store_s3 over the
 * HTTP engine, store_local over a directory) and room for wrappers (fault
 * injection in tests). Keys are relative to the store's root (the S3
 * prefix or the local directory), never start with '/', and use '/' as
 * the separator.
 *
 * Threading: every operation may be called from any thread, concurrently.
 * list() and head() block the calling thread until the answer is known.
 * get_range() is asynchronous: DONE is called exactly once, on a thread of
 * the store's choosing (the engine's I/O thread for S3, possibly the
 * caller's own thread before get_range() returns for the local store), so
 * callers must not hold a lock across get_range() that DONE also takes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct store_entry {
	char *name;    /* owned; relative to the listed directory; a prefix
			  has no trailing '/' */
	uint64_t size; /* bytes; 0 for prefixes */
	int64_t mtime; /* seconds since the epoch, UTC */
	char *etag;    /* owned; quoted as the server sends it, or NULL */
	bool is_dir;   /* a common prefix (S3) or a directory (local) */
};

struct store_listing {
	struct store_entry *entries; /* owned array */
	size_t n;
};

/* Buckets of store_stats.lat_hist (log2 of microseconds). */
#define STORE_LAT_BUCKETS 32

/*
 * Request counters of a store, for the statistics of a mount (stats op).
 * Requests are counted when they complete; retries are extra attempts of
 * a request, not requests.
 */
struct store_stats {
	uint64_t gets;	    /* object reads: ranged GETs and get_object */
	uint64_t lists;	    /* LIST pages (S3) or directory listings */
	uint64_t heads;
	uint64_t puts;
	uint64_t others;    /* anything else (multipart, deletes, ...) */
	uint64_t retries;   /* attempts beyond the first */
	uint64_t errors;    /* requests that failed (not "no such key") */
	uint64_t bytes_in;  /* response body bytes received */
	uint64_t bytes_out; /* request body bytes sent */
	uint64_t in_flight; /* requests on the wire now */
	uint64_t queued;    /* requests waiting for a connection */
	uint64_t connects;  /* connections opened */
	/*
	 * Latency of completed requests (all kinds, retries and backoff
	 * included: from submission to completion), when the store measures
	 * it (lat_known; the S3 store does, the local store does not).
	 * lat_hist[b] counts requests that took [2^b, 2^(b+1)) microseconds;
	 * bucket 0 also counts 0 and 1 us, the last bucket everything longer.
	 * lat_count is the sum of the buckets.
	 */
	bool lat_known;
	uint64_t lat_count;
	uint64_t lat_us_sum;
	uint64_t lat_hist[STORE_LAT_BUCKETS];
};

void store_listing_release(struct store_listing *l);
void store_entry_release(struct store_entry *e);

/*
 * Completion of get_range(). ERR is 0 or a negative errno. On success DATA
 * holds LEN bytes and is handed over to the callee, which must free() it
 * (or keep it); on error DATA is NULL. MSG is a short human-readable cause
 * ("HTTP 503 SlowDown after 5 attempts"), borrowed for the call only, or
 * NULL.
 */
typedef void store_done_fn(void *arg, int err, char *data, size_t len,
			   const char *msg);

/*
 * Writing objects asynchronously and in parts (shardfs pack).
 *
 * Completion of put_async() and upload_part(): ERR is 0 or a negative
 * errno, MSG a one-line cause on error (borrowed for the call) or NULL.
 * Called exactly once, on a thread of the store's choosing (the engine's
 * I/O thread for S3; the caller's own thread, before the call returns,
 * for the local store). Must not block.
 */
typedef void store_put_done_fn(void *arg, int err, const char *msg);

/* One object being written in parts (opaque, per store). */
struct store_upload;

struct store_ops {
	/*
	 * Lists the direct children of DIR ("" for the root, else a key
	 * prefix ending in '/'), following pagination to the end. Entries
	 * come in the store's order (byte order of keys for S3). 0 or a
	 * negative errno; MSG (may be NULL) receives a message on error.
	 */
	int (*list)(struct store *s, const char *dir, struct store_listing *out,
		    char *msg, size_t msglen);
	/* Size, mtime and ETag of one key. -ENOENT when absent. */
	int (*head)(struct store *s, const char *key, struct store_entry *out,
		    char *msg, size_t msglen);
	/*
	 * Reads LEN bytes at OFF of KEY (LEN may be 0: DONE gets an empty
	 * buffer without any request). IF_MATCH, when not NULL, is an ETag
	 * that the object must still have (412 -> -ESTALE). A short result
	 * (object shorter than OFF + LEN) is an error (-EIO). Returns 0 when
	 * the request was accepted (DONE will be called) or a negative errno
	 * (DONE will not be called).
	 */
	int (*get_range)(struct store *s, const char *key, uint64_t off,
			 uint64_t len, const char *if_match,
			 store_done_fn *done, void *arg);
	/*
	 * Optional (NULL: use get_range()): reads all of KEY, known to be
	 * LEN (> 0) bytes with ETag ETAG (NULL: unknown), with one plain GET:
	 * no Range and no condition, which costs the server less (Ceph RGW
	 * serves about 17 % more small GETs without Range and If-Match). The
	 * answer is checked instead: another length, or an ETag header that
	 * differs from ETAG, is -ESTALE (the object changed). Returns and
	 * DONE as get_range().
	 */
	int (*get_whole)(struct store *s, const char *key, uint64_t len,
			 const char *etag, store_done_fn *done, void *arg);
	/* Writes a whole object (used by pack and index). Blocking. */
	int (*put)(struct store *s, const char *key, const void *data,
		   size_t len, char *msg, size_t msglen);
	/*
	 * Reads the whole object KEY with one request (a GET without Range
	 * for S3), blocking, into *DATA (LEN bytes, NUL-terminated, caller
	 * frees). An object larger than CAP bytes is -E2BIG. -ENOENT when
	 * KEY does not exist (S3 NoSuchKey); a missing bucket is -ENXIO
	 * (S3 NoSuchBucket), never -ENOENT. Other errors as list(). MSG
	 * (may be NULL) receives a message on error.
	 */
	int (*get_object)(struct store *s, const char *key, size_t cap,
			  char **data, size_t *len, char *msg, size_t msglen);
	/*
	 * Fills *OUT with the store's request counters (a snapshot). May
	 * be NULL in stores without counters (test fakes).
	 */
	void (*stats)(struct store *s, struct store_stats *out);
	/* A short description for logs: "s3://bucket/prefix" or a path. */
	const char *(*describe)(struct store *s);
	/*
	 * A string naming where the data lives, for cache keys: the endpoint
	 * URL, bucket and prefix for S3 ("http://host:port/bucket/prefix/"),
	 * "file://" and the real path of the root for a directory.
	 */
	const char *(*cache_id)(struct store *s);
	/*
	 * Writing (shardfs pack). Optional: NULL in stores that cannot
	 * write. DATA is borrowed until DONE is called.
	 *
	 * put_async(): writes the whole object KEY (LEN bytes). 0 when
	 * accepted (DONE will be called) or a negative errno (it will not).
	 *
	 * upload_begin(): starts writing KEY in parts (S3: a multipart
	 * upload). Blocking. Nothing is visible at KEY until
	 * upload_complete(). *OUT is freed by upload_complete() on success
	 * or by upload_abort().
	 *
	 * upload_part(): part NUMBER (1..10000, each number once, any order,
	 * several in flight at once) holds the LEN bytes at OFFSET of the
	 * object (S3 ignores OFFSET; parts but the last must be >= 5 MiB).
	 * Asynchronous like put_async(). The store retries as it does any
	 * request; a failed DONE means the part is lost.
	 *
	 * upload_complete(): once every part's DONE reported success, makes
	 * the object parts 1..NPARTS, in order. Blocking. On failure the
	 * upload still exists: call upload_abort().
	 *
	 * upload_abort(): discards the upload and every part it stored, so
	 * nothing is left behind, and frees U. Blocking; call it only when
	 * no part is in flight. 0, or a negative errno with MSG when the
	 * store could not confirm it (parts may then remain).
	 *
	 * del(): deletes KEY; an absent KEY is not an error. Blocking.
	 */
	int (*put_async)(struct store *s, const char *key, const void *data,
			 size_t len, store_put_done_fn *done, void *arg);
	int (*upload_begin)(struct store *s, const char *key,
			    struct store_upload **out, char *msg,
			    size_t msglen);
	int (*upload_part)(struct store *s, struct store_upload *u,
			   uint32_t number, uint64_t offset, const void *data,
			   size_t len, store_put_done_fn *done, void *arg);
	int (*upload_complete)(struct store *s, struct store_upload *u,
			       uint32_t nparts, char *msg, size_t msglen);
	int (*upload_abort)(struct store *s, struct store_upload *u,
			    char *msg, size_t msglen);
	int (*del)(struct store *s, const char *key, char *msg, size_t msglen);
	void (*free)(struct store *s);
};

struct store {
	const struct store_ops *ops;
};

static inline void store_free(struct store *s)
{
	if (s)
		s->ops->free(s);
}

#endif
