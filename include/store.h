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
	/* Writes a whole object (used by pack and index). Blocking. */
	int (*put)(struct store *s, const char *key, const void *data,
		   size_t len, char *msg, size_t msglen);
	/* A short description for logs: "s3://bucket/prefix" or a path. */
	const char *(*describe)(struct store *s);
	/*
	 * A string naming where the data lives, for cache keys: the endpoint
	 * URL, bucket and prefix for S3 ("http://host:port/bucket/prefix/"),
	 * "file://" and the real path of the root for a directory.
	 */
	const char *(*cache_id)(struct store *s);
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
