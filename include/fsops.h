/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_FSOPS_H
#define SHARDFS_FSOPS_H

/*
 * The FUSE low-level adapter: decodes each request, asks the namespace
 * (ns) or the read path (rd), and replies exactly once. No parsing and
 * no I/O of its own.
 *
 * What the kernel sees:
 *  - files 0444, directories 0555, symlinks 0777 (members of a tar
 *    shard or a dataset index; readlink gives the target as stored);
 *    nlink 1 ("unknown", so no tool infers a count of subdirectories);
 *    owned by CONF->uid / CONF->gid; mtimes from the listing or the
 *    index, the mount time for listed directories;
 *  - entry, attribute and negative-entry timeouts of CONF->timeout
 *    seconds, but attribute timeout 0 for generated control files (the
 *    kernel then asks again, and drops its cached pages, at every
 *    read(2)); FOPEN_KEEP_CACHE; readdirplus; asynchronous reads; no
 *    splice; with the kernel's no-open support (FUSE_CAP_NO_OPEN_SUPPORT)
 *    open answers ENOSYS once and the kernel stops sending open/release;
 *  - reads are answered from rd's completion (the store's thread): no
 *    FUSE worker waits for the network on a read (a tar member is a
 *    range of its shard, a sparse member several, zeros between); a
 *    failed read replies EIO and logs one line with the key and the
 *    cause, except a member whose shard changed (-ESTALE), which is
 *    logged once per shard (ns_log_shard_changed());
 *  - every write operation replies EROFS (the mount is also read-only);
 *    getxattr/listxattr reply ENOSYS (the kernel then stops asking).
 *
 * Threading: the callbacks run on libfuse's worker threads and on the
 * store's completion thread; struct fsops is immutable after init()
 * except the no_open flag, which init() sets before any other request.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "ns.h"
#include "rd.h"

struct fuse_lowlevel_ops;

/* The one place that sets the largest read: init() sets conn->max_read
 * and the mount passes "-o max_read=" with the same value (libfuse 3.14
 * refuses a difference). 1 MiB = 256 pages, libfuse's largest buffer. */
#define FSOPS_MAX_READ (1024u * 1024u)

struct fsops_conf {
	struct ns *ns; /* borrowed; outlives the fsops */
	struct rd *rd; /* borrowed; outlives the fsops */
	uid_t uid;     /* owner shown for every inode */
	gid_t gid;
	double timeout;		 /* entry/attr timeout, seconds */
	unsigned metadata_ttl;	 /* 0: listings never change, so the
				    kernel may cache directories */
	unsigned max_read;	 /* bytes; FSOPS_MAX_READ unless told */
	unsigned max_background; /* kernel's background requests */
	bool use_no_open;	 /* use the no-open capability if offered */
};

struct fsops;

/* 0 or -ENOMEM. Free with fsops_free() after the session is destroyed. */
int fsops_new(const struct fsops_conf *conf, struct fsops **out);
void fsops_free(struct fsops *fs);

/*
 * The operations table for fuse_session_new(); the session's userdata
 * must be the struct fsops. Static storage.
 */
const struct fuse_lowlevel_ops *fsops_lowlevel_ops(void);
size_t fsops_lowlevel_ops_size(void);

#endif
