/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_SHARD_H
#define SHARDFS_SHARD_H

/*
 * Indexing one tar shard over the store: the member list of a .tar object
 * read with range GETs, without downloading the shard.
 *
 * Headers are read in windows of SHARD_WINDOW bytes (small members lie
 * next to each other, so one window holds many headers); a member whose
 * data runs past the window is jumped over: the next window starts at the
 * next header. Memory is bounded whatever the shard's size: one window
 * (or one extension header of at most TARHDR_EXT_MAX + 512 bytes) plus
 * what the tarhdr scanner keeps (struct tarhdr_limits).
 *
 * Every GET carries If-Match: ETAG (when not NULL), so a shard replaced
 * during the scan is an error (-ESTALE), never a mix of two versions.
 *
 * Damage (bad checksum, truncation, malformed headers, a .tar that is not
 * a tar at all, limits exceeded) is not an error of these functions: the
 * members before it are kept, RES says what and where, and one warning is
 * logged naming the shard. Members that cannot be shown (unsafe names:
 * absolute or with "..", TARHDR_OTHER types such as devices and fifos)
 * are skipped, each logged once at info level.
 *
 * Threading: blocking. The functions wait for the asynchronous
 * get_range() on a mutex and condition variable, so they may run on any
 * thread but the store's own I/O thread (the S3 engine's), e.g. FUSE
 * worker threads or command threads; any number of scans may run at once
 * on one store.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dsidx.h"
#include "store.h"
#include "tarhdr.h"

/* Bytes asked for per header window. */
#define SHARD_WINDOW (1u << 20)

struct shard_scan_result {
	bool damaged;	  /* scanning stopped at damage; members before
			     it are kept */
	char damage[256]; /* one line: what and where (offset), when
			     damaged; "" otherwise */
	uint64_t members; /* members kept */
	uint64_t skipped; /* unsafe names, TARHDR_OTHER types (each logged
			     once at info) */
	uint64_t gets;	  /* range GETs issued */
	uint64_t bytes_fetched;
};

/*
 * Called for each kept member with the tarhdr entry (path normalised and
 * safe, type REG, DIR, SYMLINK or HARDLINK; pointers valid during the
 * call only). The archive root entry ("./", path "") is passed as a DIR
 * with path "". Return 0 to go on, or a negative errno to stop (returned
 * by shard_scan_members()).
 */
typedef int shard_member_fn(const struct tarhdr_entry *e, void *arg);

/*
 * Scans KEY (SIZE bytes, ETag ETAG or NULL) of ST and calls FN for each
 * member in archive order. RES (may not be NULL) is filled in every case.
 * Returns 0 when the scan ended (at the end marker, or at damage: see
 * RES->damaged), the negative errno FN returned, or a negative errno when
 * the shard could not be read (a GET failed; -ESTALE when the ETag
 * changed): MSG (MSGLEN bytes, may be 0) then says why in one line.
 */
int shard_scan_members(struct store *st, const char *key, uint64_t size,
		       const char *etag, shard_member_fn *fn, void *arg,
		       struct shard_scan_result *res, char *msg, size_t msglen);

/*
 * Scans KEY and appends to OUT a dataset index (dsidx image, see dsidx.h)
 * holding that one shard (key as given, ETAG, SIZE) and its members under
 * their paths inside the shard: regular files, directories (explicit
 * entries), symlinks, hard links (resolved with
 * dsidx_builder_add_hardlink(); a link to a missing member is skipped and
 * counted in RES->skipped) and sparse files (dsidx_builder_add_sparse()).
 * Returns 0 also when damaged (see RES); a negative errno when the shard
 * could not be read at all (a GET failed: MSG says why) or the index
 * could not be built (-ENOMEM, -E2BIG: OUT's cap); OUT is unchanged then.
 * KEY must be a valid dsidx shard key (-EINVAL otherwise).
 */
int shard_scan(struct store *st, const char *key, uint64_t size,
	       const char *etag, struct buf *out, struct shard_scan_result *res,
	       char *msg, size_t msglen);

/*
 * Adds the member E (as shard_member_fn receives it) of the shard whose
 * builder handle is SHARD to B, as shard_scan() does: a directory with
 * dsidx_builder_add_dir(), a symlink or a regular file with
 * dsidx_builder_add_member(), a sparse file with
 * dsidx_builder_add_sparse(), a hard link with
 * dsidx_builder_add_hardlink(). For `shardfs index`, which merges many
 * shards into one builder. Returns the builder's result: -EINVAL,
 * -ENAMETOOLONG or -ENOENT (a hard link to nothing) for a member the
 * index cannot hold (leave it out and go on), -ENOMEM or -E2BIG.
 */
int shard_builder_add(struct dsidx_builder *b, uint32_t shard,
		      const struct tarhdr_entry *e);

#endif
