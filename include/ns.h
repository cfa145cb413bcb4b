/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_NS_H
#define SHARDFS_NS_H

/*
 * The namespace: the inode table and the directory entries of a mount.
 *
 * Two modes, chosen at ns_new():
 *
 *  - Listing mode (no dataset index): a directory is a key prefix of the
 *    store; it is listed with store->ops->list on its first lookup or
 *    readdir and the result is kept for the life of the mount, or for
 *    METADATA_TTL seconds when that is set (a relist keeps the inode
 *    number of every name that still exists with the same kind, size
 *    and ETag). Sizes and mtimes come from the listing; the namespace
 *    never calls head(). With TAR_DIRS, an object whose name ends in
 *    ".tar" is a shard directory (NS_SHARD): on its first lookup or
 *    readdir, CONF->index_shard() produces its member index (a dsidx
 *    image, dsidx.h; one call per shard at a time, others wait as for
 *    listings) and the members show as a tree inside it.
 *
 *  - Dataset index mode (CONF->index): the whole tree is the index's
 *    merged tree, the root is its directory 0; no LIST and no HEAD ever.
 *
 * Inside an index (a shard's or the dataset's), inodes are made lazily:
 * a lookup (or a readdirplus entry) makes the inode of that one name by a
 * binary search of the index; it lives while the kernel holds lookups
 * on it and is freed at the last forget. Readdir reads names straight
 * from the index. Nothing is allocated per member up front.
 *
 * Lifetime (listing mode): an inode lives while it is an entry of a
 * listed directory ("linked") or while the kernel holds lookups on it
 * (ns_lookup() adds one, ns_forget() removes them), whichever is longer.
 * The root and the control directory never die.
 *
 * Names that cannot be file names are handled deterministically and each
 * is logged once per mount (warn level):
 *  - from a listing: an empty name (keys like "a//b" or a "dir/" marker
 *    object), ".", "..", a name containing '/', or a name longer than
 *    NS_NAME_MAX bytes: skipped; a name that is both an object and a
 *    prefix ("x" and "x/y"): the directory wins and the object is hidden;
 *  - from an index (names are already checked by dsidx): a name longer
 *    than NS_NAME_MAX bytes: skipped;
 *  - ".shardfs" at the root: hidden behind the control directory.
 * Each directory's entries are in the byte order of names, so readdir
 * order does not depend on the store's order.
 *
 * Shard directories (listing mode):
 *  - a damaged shard (bad checksum, truncation, not a tar) shows the
 *    members before the damage; logged once (warn);
 *  - a shard that cannot be read at all (GET failed, changed ETag)
 *    answers EIO to lookups and readdir in it, logged once per shard
 *    (error) with the cause; it is tried again on an access at least
 *    NS_SHARD_RETRY seconds after the failure (until then EIO at once,
 *    without a request).
 *
 * The control directory NS_CTL_NAME answers lookups at the root but is
 * never returned by readdir (loaders treat every listed directory as a
 * class). It holds "version" ("shardfs <version>\n") and, when
 * CONF->stats_fn is set, "stats": that function's text (JSON), generated
 * afresh on every lookup and getattr of the file (so on every read(2),
 * see ns_attr.volatile_attr) and padded with spaces to a multiple of
 * 4096 bytes, so that its size does not change between the getattr that
 * tells the kernel the size and the read that follows.
 *
 * Threading: every function may be called from any thread. One mutex
 * protects the tables and every inode; it is never held while calling the
 * store, CONF->index_shard or CONF->stats_fn. A directory being listed (a
 * shard being indexed) is marked so, and other threads that need it wait
 * on a condition variable instead of listing it again.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "rd.h"
#include "store.h"

#define NS_ROOT_INO    1
#define NS_NAME_MAX    255
#define NS_CTL_NAME    ".shardfs"
#define NS_SHARD_RETRY 30 /* seconds before a failed shard is tried again */

enum ns_kind {
	NS_DIR,	     /* a prefix of the store (the listing-mode root) */
	NS_OBJECT,   /* an object of the store, shown as a file */
	NS_SHARD,    /* a .tar object shown as a directory */
	NS_IDIR,     /* a directory of an index (dataset-mode root too) */
	NS_MEMBER,   /* a regular file of an index (a tar member) */
	NS_SYMLINK,  /* a symbolic link of an index */
	NS_CTL_DIR,  /* the control directory .shardfs */
	NS_CTL_FILE, /* a file of the control directory, served from memory */
};

static inline bool ns_kind_is_dir(enum ns_kind k)
{
	return k == NS_DIR || k == NS_SHARD || k == NS_IDIR || k == NS_CTL_DIR;
}

/* What CONF->index_shard() says about a shard besides its index. */
struct ns_shard_info {
	bool damaged;	  /* only the members before the damage */
	char damage[256]; /* what and where, when damaged */
	bool from_cache;  /* loaded from the disk cache, not scanned */
};

/*
 * Appends to OUT the dsidx image (one shard: KEY, ETAG, SIZE; its members
 * under their paths in the shard) of the tar object KEY of the store.
 * Blocking; called from FUSE worker threads without any ns lock. 0 (also
 * for a damaged shard: *INFO says so), or a negative errno with MSG.
 */
typedef int ns_index_shard_fn(void *arg, const char *key, uint64_t size,
			      const char *etag, struct buf *out,
			      struct ns_shard_info *info, char *msg,
			      size_t msglen);

/*
 * Appends the text of the control file "stats" to OUT. Called without
 * any ns lock; it may call ns_get_stats(). 0 or a negative errno.
 */
typedef int ns_stats_fn(void *arg, struct buf *out);

/* A dataset index handed to ns_new(). */
struct ns_index {
	char *bytes;	 /* taken (free()d with the namespace) */
	size_t len;
	struct dsidx *x; /* taken: opened on BYTES (dsidx_free()d) */
};

struct ns_conf {
	struct store *store;   /* borrowed; must outlive the namespace */
	unsigned metadata_ttl; /* seconds a listing is kept; 0 = forever */
	/* Listing mode: .tar objects are directories when TAR_DIRS and
	 * INDEX_SHARD is set, else files. */
	bool tar_dirs;
	ns_index_shard_fn *index_shard;
	void *index_arg;
	/* Dataset index mode when INDEX.x is set (taken even on failure). */
	struct ns_index index;
	/* The control file "stats" when set. */
	ns_stats_fn *stats_fn;
	void *stats_arg;
};

struct ns;

/* The attributes of one inode, copied out. */
struct ns_attr {
	uint64_t ino;
	enum ns_kind kind;
	uint64_t size;	     /* bytes (0 for directories; a symlink: the
				length of its target) */
	int64_t mtime;	     /* seconds since the epoch */
	uint32_t mtime_nsec; /* < 1000000000 */
	bool volatile_attr;  /* changes at every getattr: cache for 0 s */
};

/* What the read path needs of a file, copied out (ns_file_release()). */
struct ns_file {
	enum ns_kind kind; /* NS_OBJECT, NS_MEMBER or NS_CTL_FILE */
	uint64_t size;
	char *key;     /* owned; the object, or the member's shard */
	char *etag;    /* owned; the ETag reads must match, or NULL */
	uint64_t base; /* NS_MEMBER: the shard offset of byte 0 */
	bool sparse;   /* NS_MEMBER: data in segments, see ns_file_segs() */
	uint64_t obj_size; /* the object's (the shard's) size */
	/*
	 * NS_MEMBER: the shard range worth fetching when the member is first
	 * read: the member and the other members of its sample (same
	 * directory, same name up to the first dot, adjacent in the shard)
	 * while all together stay within RD_SMALL bytes; just the member
	 * when it is larger; 0, 0 for a sparse member.
	 */
	uint64_t hint_off, hint_len;
	char *data;    /* owned; the contents (NS_CTL_FILE), else NULL */
	/* private */
	struct ns_img *img;
	uint32_t member;
};

/* One entry of a directory (ns_dir_get()). */
struct ns_dirent {
	uint64_t ino; /* 0 when the entry has no inode yet (index dirs) */
	enum ns_kind kind;
	char name[NS_NAME_MAX + 1];
};

/* A snapshot of a directory for one opendir..releasedir (opaque). */
struct ns_dir;

/* 0 or -ENOMEM (CONF->index is freed then). *OUT: free with ns_free(). */
int ns_new(const struct ns_conf *conf, struct ns **out);

/* Frees every inode. No other call may be running. NULL is a no-op. */
void ns_free(struct ns *ns);

/*
 * Lists the root now (used by mount to check the source before mounting).
 * 0 or a negative errno with the store's message in MSG. Dataset index
 * mode: 0 at once (the index is the check).
 */
int ns_prime(struct ns *ns, char *msg, size_t msglen);

/*
 * Looks NAME up in the directory PARENT, listing (indexing) it first when
 * needed, and on success adds one kernel lookup to the child and fills
 * *OUT. -ENOENT (no such name), -ENOTDIR, -ENAMETOOLONG, or the listing's
 * error (-EIO and others; logged here).
 */
int ns_lookup(struct ns *ns, uint64_t parent, const char *name,
	      struct ns_attr *out);

/* Removes NLOOKUP kernel lookups from INO (FUSE forget). */
void ns_forget(struct ns *ns, uint64_t ino, uint64_t nlookup);

/* 0 or -ENOENT (an inode the kernel should not know). */
int ns_getattr(struct ns *ns, uint64_t ino, struct ns_attr *out);

/* Copies what reading INO needs. 0, -EISDIR, -EINVAL (a symlink),
 * -ENOENT or -ENOMEM. */
int ns_file(struct ns *ns, uint64_t ino, struct ns_file *out);
void ns_file_release(struct ns_file *f);

/*
 * The data segments of the sparse member F that fall in [OFF, OFF +
 * LEN), as file offset, length and shard offset, into *OUT (caller
 * frees; *N may be 0: all zeros). 0, -EINVAL (F is not sparse), -ENOMEM,
 * or -E2BIG (more than 65536 segments in the range).
 */
int ns_file_segs(const struct ns_file *f, uint64_t off, uint64_t len,
		 struct rd_seg **out, size_t *n);

/*
 * The target of symlink INO into *OUT (NUL-terminated, caller frees).
 * 0, -EINVAL (not a symlink), -ENOENT or -ENOMEM.
 */
int ns_readlink(struct ns *ns, uint64_t ino, char **out);

/*
 * Snapshots directory INO, listing (indexing) it first when needed. The
 * control directory is not among the root's entries. 0, -ENOTDIR,
 * -ENOENT, -ENOMEM or the listing's error. Free with ns_dir_free().
 */
int ns_opendir(struct ns *ns, uint64_t ino, struct ns_dir **out);
void ns_dir_free(struct ns_dir *d);

/* The directory's inode, its parent (the root's is the root) and the
 * number of positions (entries, skipped ones included). */
uint64_t ns_dir_ino(const struct ns_dir *d);
uint64_t ns_dir_parent(const struct ns_dir *d);
size_t ns_dir_count(const struct ns_dir *d);

/*
 * Entry at position I (0-based, "." and ".." not included) into *OUT:
 * 0; 1 when the position holds a name that cannot be shown (skip it);
 * -ENOENT past the end.
 */
int ns_dir_get(struct ns *ns, const struct ns_dir *d, size_t i,
	       struct ns_dirent *out);

/* Counters of the namespace, for the statistics of a mount. */
struct ns_stats {
	uint64_t inodes;	   /* in the table now */
	uint64_t dirs_listed;	   /* directory listings done */
	uint64_t shards_indexed;   /* shard indexes made (scan or cache) */
	uint64_t shards_scanned;   /* ... by scanning the shard */
	uint64_t shards_cached;	   /* ... from the disk cache */
	uint64_t shards_damaged;   /* ... of damaged shards */
	uint64_t shards_failed;	   /* attempts that failed (EIO) */
	bool index_loaded;	   /* dataset index mode */
	uint64_t index_bytes;	   /* size of the dataset index */
	uint64_t index_shards;	   /* shards, directories, members in it */
	uint64_t index_dirs;
	uint64_t index_members;
};

void ns_get_stats(struct ns *ns, struct ns_stats *out);

/*
 * Logs once per mount (error level) that shard KEY no longer matches its
 * index (a read got -ESTALE), naming the shard; later calls for the same
 * key are silent. For the read path's completion (takes a leaf lock).
 */
void ns_log_shard_changed(struct ns *ns, const char *key, const char *msg);

/* Number of inodes in the table (for statfs and tests). */
size_t ns_count(struct ns *ns);

/* Kernel lookups currently held on INO (tests); 0 for an unknown INO. */
uint64_t ns_nlookup(struct ns *ns, uint64_t ino);

#endif
