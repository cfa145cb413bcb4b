/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_SHARDCACHE_H
#define SHARDFS_SHARDCACHE_H

/*
 * The on-disk cache of shard indexes, so that a second mount does not
 * scan the same tar shards again.
 *
 * Directory: --cache-dir DIR, else $XDG_CACHE_HOME/shardfs/shards, else
 * $HOME/.cache/shardfs/shards (created 0700 with missing parents).
 * One file per shard version, named by the lowercase hex SHA-256 of
 * "CACHE_ID\0KEY\0ETAG\0SIZE" (CACHE_ID from store->ops->cache_id(), SIZE
 * in decimal), holding the dsidx image that shard_scan() wrote. Files are
 * written atomically (a 0600 temporary file in the directory, fsync,
 * rename), so concurrent mounts and crashes never leave a partial entry.
 *
 * Loading verifies the entry: dsidx_open() (checksums and every record),
 * exactly one shard whose key, ETag and size are the ones asked for. A
 * corrupt or mismatching file is logged at debug, ignored, and replaced
 * by a new scan.
 *
 * What is never cached: a shard without an ETag (nothing would tell a
 * rewritten shard from the old one), and the partial index of a damaged
 * shard, so that a repaired shard (which gets a new ETag anyway) or a
 * transient cause is looked at again on the next mount. Failing to write
 * an entry (disk full, read-only) is logged at debug and not an error.
 *
 * Threading: an open cache may be used from any number of threads at once
 * (it holds no mutable state).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "shard.h"
#include "store.h"

struct shardcache;

/*
 * Opens (creating it if needed) the cache in DIR, or in the default
 * directory when DIR is NULL. 0 and *OUT (free with shardcache_close()),
 * or a negative errno with one line in MSG (e.g. no $HOME, a file in the
 * way, no permission).
 */
int shardcache_open(const char *dir, struct shardcache **out, char *msg,
		    size_t msglen);

/* NULL is a no-op. */
void shardcache_close(struct shardcache *c);

/* The cache's directory (borrowed until shardcache_close()). */
const char *shardcache_dir(const struct shardcache *c);

/*
 * The dsidx image of shard KEY (SIZE bytes, ETAG or NULL) of ST, appended
 * to OUT: from the cache when it holds a valid entry (*FROM_CACHE true,
 * no GET; RES zeroed but for members: the index's files, links and
 * directories, the root excepted), else by shard_scan() (*FROM_CACHE
 * false), then stored unless the shard has no ETag or was damaged. C may
 * be NULL (no cache: always a scan). FROM_CACHE may be NULL. Results and
 * errors as shard_scan().
 */
int shard_index_cached(struct store *st, struct shardcache *c, const char *key,
		       uint64_t size, const char *etag, struct buf *out,
		       struct shard_scan_result *res, bool *from_cache,
		       char *msg, size_t msglen);

#endif
