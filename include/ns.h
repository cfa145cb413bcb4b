/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_NS_H
#define SHARDFS_NS_H

/*
 * The namespace: the inode table and the directory entries of a mount.
 *
 * Inodes are numbered from NS_ROOT_INO (1, the FUSE root) upwards and
 * never reused within a mount. A directory is a key prefix of the store;
 * it is listed with store->ops->list on its first lookup or readdir and
 * the result is kept for the life of the mount, or for METADATA_TTL
 * seconds when that is set (a relist keeps the inode number of every name
 * that still exists with the same kind). Sizes and mtimes come from the
 * listing; the namespace never calls head().
 *
 * Lifetime: an inode lives while it is an entry of a listed directory
 * ("linked") or while the kernel holds lookups on it (ns_lookup() adds
 * one, ns_forget() removes them), whichever is longer. The root and the
 * control directory never die.
 *
 * Names that the store returns and that cannot be file names are handled
 * deterministically and each is logged once per mount (warn level):
 *  - an empty name (keys like "a//b" or a "dir/" marker object), ".", "..",
 *    a name containing '/', or a name longer than NS_NAME_MAX bytes:
 *    skipped;
 *  - a name that is both an object and a prefix ("x" and "x/y"): the
 *    directory wins and the object is hidden;
 *  - ".shardfs" at the root: hidden behind the control directory.
 * Each directory's entries are kept sorted by the byte order of names, so
 * readdir order does not depend on the store's order.
 *
 * The control directory NS_CTL_NAME answers lookups at the root but is
 * never returned by readdir (loaders treat every listed directory as a
 * class). It holds "version" ("shardfs <version>\n").
 *
 * Threading: every function may be called from any thread. One mutex
 * protects the tables and every inode; it is never held while calling the
 * store. A directory being listed is marked so, and other threads that
 * need it wait on a condition variable instead of listing it again.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define NS_ROOT_INO 1
#define NS_NAME_MAX 255
#define NS_CTL_NAME ".shardfs"

enum ns_kind {
	NS_DIR,	     /* a prefix of the store (the root is one) */
	NS_OBJECT,   /* an object of the store, shown as a file */
	NS_CTL_DIR,  /* the control directory .shardfs */
	NS_CTL_FILE, /* a file of the control directory, served from memory */
};

static inline bool ns_kind_is_dir(enum ns_kind k)
{
	return k == NS_DIR || k == NS_CTL_DIR;
}

struct ns_conf {
	struct store *store;   /* borrowed; must outlive the namespace */
	unsigned metadata_ttl; /* seconds a listing is kept; 0 = forever */
};

struct ns;

/* The attributes of one inode, copied out. */
struct ns_attr {
	uint64_t ino;
	enum ns_kind kind;
	uint64_t size; /* bytes (0 for directories) */
	int64_t mtime; /* seconds since the epoch */
};

/* What the read path needs of a file, copied out (ns_file_release()). */
struct ns_file {
	enum ns_kind kind; /* NS_OBJECT or NS_CTL_FILE */
	uint64_t size;
	char *key;  /* owned; the store key (NS_OBJECT), else NULL */
	char *etag; /* owned; the listing's ETag or NULL */
	char *data; /* owned; the contents (NS_CTL_FILE), else NULL */
};

/* One entry of a directory snapshot. */
struct ns_dirent {
	uint64_t ino;
	enum ns_kind kind;
	const char *name; /* points into the snapshot */
};

/* A snapshot of a directory's entries, for one opendir..releasedir. */
struct ns_dir {
	uint64_t ino;	 /* the directory */
	uint64_t parent; /* its parent (the root's parent is the root) */
	size_t n;
	struct ns_dirent *ents; /* sorted by name; owned */
	char *names;		/* owned storage of the names */
};

/* 0 or -ENOMEM. *OUT is freed with ns_free(). */
int ns_new(const struct ns_conf *conf, struct ns **out);

/* Frees every inode. No other call may be running. NULL is a no-op. */
void ns_free(struct ns *ns);

/*
 * Lists the root now (used by mount to check the source before mounting).
 * 0 or a negative errno with the store's message in MSG.
 */
int ns_prime(struct ns *ns, char *msg, size_t msglen);

/*
 * Looks NAME up in the directory PARENT, listing it first when needed,
 * and on success adds one kernel lookup to the child and fills *OUT.
 * -ENOENT (no such name), -ENOTDIR, -ENAMETOOLONG, or the listing's
 * error (-EIO and others; logged once here).
 */
int ns_lookup(struct ns *ns, uint64_t parent, const char *name,
	      struct ns_attr *out);

/* Removes NLOOKUP kernel lookups from INO (FUSE forget). */
void ns_forget(struct ns *ns, uint64_t ino, uint64_t nlookup);

/* 0 or -ENOENT (an inode the kernel should not know). */
int ns_getattr(struct ns *ns, uint64_t ino, struct ns_attr *out);

/* Copies what reading INO needs. 0, -EISDIR, -ENOENT or -ENOMEM. */
int ns_file(struct ns *ns, uint64_t ino, struct ns_file *out);
void ns_file_release(struct ns_file *f);

/*
 * Snapshots the entries of directory INO, listing it first when needed.
 * The control directory is not among the root's entries. 0, -ENOTDIR,
 * -ENOENT, -ENOMEM or the listing's error. Free with ns_dir_free().
 */
int ns_opendir(struct ns *ns, uint64_t ino, struct ns_dir **out);
void ns_dir_free(struct ns_dir *d);

/* Number of inodes in the table (for statfs and tests). */
size_t ns_count(struct ns *ns);

/* Kernel lookups currently held on INO (tests); 0 for an unknown INO. */
uint64_t ns_nlookup(struct ns *ns, uint64_t ino);

#endif
