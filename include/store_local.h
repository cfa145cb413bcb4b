/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_STORE_LOCAL_H
#define SHARDFS_STORE_LOCAL_H

/*
 * The store over a local directory (SOURCE = file://DIR or a plain path),
 * so that the namespace, the read path and the mount can be used and
 * tested without a server.
 *
 * Mapping onto the store contract (store.h):
 *  - list(DIR): the entries of ROOT/DIR, sorted by the byte order of their
 *    names, without "." and "..". Symbolic links are followed to classify
 *    them; a dangling link, and anything that is neither a regular file
 *    nor a directory (fifo, socket, device), is skipped (debug log).
 *  - head(KEY): stat of a regular file; -ENOENT for a missing key and for
 *    a directory (a prefix is not an object).
 *  - get_range(): pread of exactly [OFF, OFF + LEN); DONE is called on the
 *    caller's thread before get_range() returns, with a malloc'd buffer.
 *    An object shorter than OFF + LEN is -EIO.
 *  - ETag: synthesised from (size, mtime in ns, inode number) and quoted,
 *    e.g. "\"1f-17a2b3c4d5e6f708-83a1\"", so that a file replaced or
 *    rewritten in place is detected through IF_MATCH (-ESTALE).
 *  - put(KEY): written to a temporary file in the key's directory, then
 *    renamed over KEY; missing parent directories are created (0755).
 *  - put_async(), upload_*() (pack): done inline, on the caller's thread.
 *    An upload is a temporary file next to KEY, renamed over KEY by
 *    upload_complete(); parts are written at their offsets, and parts
 *    that are all zeros are left as holes. del() unlinks KEY.
 *
 * Confinement: keys are resolved with openat() relative to a descriptor
 * of the root, and a key that starts with '/', that has a ".." component,
 * or that is longer than PATH_MAX is rejected with -EINVAL before any
 * file system access. Symbolic links inside the tree are followed (a
 * dataset may be a tree of links, as its owner arranged it); no key can
 * name a path outside the root by itself.
 *
 * Threading: every operation may run concurrently from any thread; the
 * store has no mutable state after store_local_new().
 */

#include <stddef.h>

#include "store.h"

/*
 * Opens DIR (which must exist and be a directory) as a store. On success
 * *OUT is a new store (free it with store_free()). On failure returns a
 * negative errno and writes one line into MSG (MSGLEN bytes, may be 0),
 * e.g. "/data/x: No such file or directory".
 */
int store_local_new(const char *dir, struct store **out, char *msg,
		    size_t msglen);

/*
 * The key check used by every operation: 0 when KEY is acceptable, else
 * -EINVAL. Exposed for the unit tests.
 */
int store_local_check_key(const char *key);

#endif
