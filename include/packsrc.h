/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_PACKSRC_H
#define SHARDFS_PACKSRC_H

/*
 * What `shardfs pack` reads: a local directory tree or the objects under
 * an S3 prefix. Two jobs:
 *
 *  1. packsrc_scan() walks the source once and adds every member to a
 *     plan (packplan.h). What cannot be packed is reported through WARN
 *     and left out: unreadable files and directories, names that are not
 *     valid UTF-8, paths or link targets too long for tar or the dataset
 *     index, special files (fifos, sockets, devices), and with
 *     dereference, symbolic link loops and dangling links; for S3, keys
 *     that are not clean relative paths ("a//b", "./a", "../a") and an
 *     object whose key is also a prefix of other keys (the directory
 *     wins). Each member carries a version string (local: mtime in
 *     nanoseconds and inode number; S3: the ETag), so that a file that
 *     changes later is noticed.
 *
 *  2. Reading the members' bytes in pack order: packsrc_start() once,
 *     then for each regular file packsrc_open_item(), packsrc_read()
 *     until it has the planned size, packsrc_close_item(). A file whose
 *     size or version differs from the scan (changed meanwhile, or while
 *     it is being read) is an error (-ESTALE) with a message: the planned
 *     shard can no longer be written. For S3 the reads run ahead of the
 *     consumer: ranged GETs of up to 8 MiB with If-Match (the listed ETag)
 *     are kept in flight within a byte budget, so a stream of small
 *     objects is not one round trip per object.
 *
 * Local sources: symbolic links are stored as links, not followed (no
 * loop can arise), unless `dereference` is set: then links are followed
 * as `tar -h` does, and a link to one of its own ancestors (a loop) is
 * skipped with a warning. Hard links are stored as separate copies.
 * Mode bits are kept; owners are not (members are owned by 0:0).
 * Objects of an S3 source become files of mode 0644 with their
 * LastModified as mtime; keys ending in '/' are directories (0755).
 *
 * Threading: one thread (the caller's) uses a packsrc; for S3, GET
 * completions arrive on the engine's I/O thread and are handed over under
 * a lock. STOP, when it becomes non-zero, makes waits return -EINTR.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "packplan.h"
#include "store.h"

struct packsrc;

/* A member left out: PATH (raw bytes, may be invalid UTF-8: escape before
 * printing) and why. */
typedef void packsrc_warn_fn(void *arg, const char *path, const char *why);

struct packsrc_conf {
	bool dereference;	/* local: follow symbolic links */
	uint64_t read_budget;	/* S3: bytes of GETs in flight */
	unsigned max_reads;	/* S3: GETs in flight at most */
	const atomic_int *stop; /* borrowed; may be NULL */
	packsrc_warn_fn *warn;
	void *warn_arg;
};

/*
 * A local directory DIR. On failure (missing, not a directory,
 * unreadable) a negative errno and one line in MSG.
 */
int packsrc_open_local(const struct packsrc_conf *conf, const char *dir,
		       struct packsrc **out, char *msg, size_t msglen);

/*
 * The objects under PREFIX of BUCKET, read through STORE (a store made by
 * store_s3_new() for the same BUCKET and PREFIX; borrowed, must outlive
 * the packsrc). No request is made here.
 */
int packsrc_open_s3(const struct packsrc_conf *conf, struct store *store,
		    const char *bucket, const char *prefix,
		    struct packsrc **out);

void packsrc_free(struct packsrc *s);

/* What the walk saw, besides the members it added. */
struct packsrc_scan_info {
	uint64_t skipped; /* inputs reported through warn */
	bool has_root;	  /* root_mode and root_mtime are known */
	uint32_t root_mode;
	int64_t root_mtime;
};

/*
 * Adds every member of the source to PLAN. 0 (with skips counted in
 * INFO), or a negative errno with one line in MSG when the source as a
 * whole cannot be read (S3 listing failed, -EINTR when stopped, -ENOMEM).
 */
int packsrc_scan(struct packsrc *s, struct packplan *plan,
		 struct packsrc_scan_info *info, char *msg, size_t msglen);

/*
 * Prepares reading PLAN (finished; borrowed) in pack order. SKIP, when
 * not NULL, has one flag per shard: members of skipped shards are never
 * read (borrowed until packsrc_free()).
 */
int packsrc_start(struct packsrc *s, const struct packplan *plan,
		  const bool *skip);

/* Opens item I (a regular file of a shard not skipped, in pack order). */
int packsrc_open_item(struct packsrc *s, size_t i);

/*
 * Reads up to LEN bytes of the open item into BUF. Returns the bytes
 * read (> 0), 0 once the planned size has been read, or a negative
 * errno (-ESTALE: the file changed; -EINTR: stopped; -EIO ...).
 */
ssize_t packsrc_read(struct packsrc *s, void *buf, size_t len);

/* Closes the item; -ESTALE when it changed while it was read. */
int packsrc_close_item(struct packsrc *s);

/* The message of the last error ("" when none). Borrowed. */
const char *packsrc_errmsg(const struct packsrc *s);

/* Escapes PATH for a message: bytes that are not printable UTF-8 become
 * \xNN. Writes a NUL-terminated string into OUT (cut to OUTLEN). */
void packsrc_escape(const char *path, char *out, size_t outlen);

#endif
