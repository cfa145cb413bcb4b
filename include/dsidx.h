/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_DSIDX_H
#define SHARDFS_DSIDX_H

/*
 * The dataset index (pure: no I/O, no threads, no globals).
 *
 * One object, DSIDX_OBJECT_NAME, stored next to a dataset's tar shards
 * (in the same prefix), lists every shard (key, ETag, size) and every
 * member (path, shard, data offset, size, mode, mtime, symlink target), so
 * that a mount costs one GET. The byte format is specified in
 * shardfs-index(5) (man/shardfs-index.5): little-endian, fixed-size
 * records, one string table, CRC-32C over the header and over the body,
 * a major.minor version.
 *
 * Version 1.1 adds sparse files (tar's GNU sparse members): a sparse
 * member's bytes are a list of data segments stored in the shard, zeros
 * elsewhere. An index holding one sets the required header flag
 * DSIDX_FLAG_SPARSE, so that a 1.0 reader refuses it instead of reading
 * holes as data; an index without sparse members is written as 1.0,
 * byte for byte what a 1.0 writer writes.
 *
 * Building: dsidx_builder_* collects shards and members in any order and
 * dsidx_builder_finish() writes the canonical index: the same final set
 * of entries gives the same bytes whatever the order of the adds.
 *
 * Reading: dsidx_open() verifies everything once (checksums, bounds, sort
 * order, names) and keeps a pointer to the caller's bytes; every accessor
 * afterwards is O(1) or a binary search and returns views into those
 * bytes (zero-copy). Strings in views are NOT NUL-terminated: use the
 * lengths. An open index is immutable and may be read from any number of
 * threads at once.
 *
 * Errors are negative errno values:
 *   -EINVAL          a builder argument is invalid (path, name, mode, ...)
 *   -ENAMETOOLONG    a name, key, ETag or link target exceeds its limit
 *   -E2BIG           a count or size limit (DSIDX_MAX_*, builder conf,
 *                    the output buffer's cap) would be exceeded
 *   -EEXIST          two shards with the same key (finish)
 *   -ENOENT          lookups: no such entry; hard links: no target
 *   -EBADMSG         dsidx_open(): the bytes are not a valid index
 *                    (truncated, bad checksum, any out-of-range value)
 *   -EPROTONOSUPPORT dsidx_open(): unknown major version or required flag
 *   -ENOMEM
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Object name of the index, in the same prefix as the shards. */
#define DSIDX_OBJECT_NAME "shardfs.idx"

/* Format constants (shardfs-index(5)). */
#define DSIDX_MAGIC	     "SHARDIDX" /* 8 bytes, no NUL in the file */
#define DSIDX_VERSION_MAJOR  1
#define DSIDX_VERSION_MINOR  1	 /* newest minor read and written */
#define DSIDX_HEADER_LEN     112 /* header bytes written by 1.0 */
#define DSIDX_HEADER_LEN_1_1 144 /* ... by 1.1 with DSIDX_FLAG_SPARSE */
#define DSIDX_SHARD_REC_LEN  16	 /* shard record bytes written by 1.0 */
#define DSIDX_DIR_REC_LEN    48	 /* directory record bytes, 1.0 */
#define DSIDX_MEMBER_REC_LEN 48	 /* member record bytes, 1.0 */
#define DSIDX_SPARSE_REC_LEN 16	 /* sparse record bytes, 1.1 */
#define DSIDX_SEG_REC_LEN    24	 /* segment record bytes, 1.1 */
#define DSIDX_FLAG_SPARSE                                                      \
	1u			     /* required header flag (1.1): the        \
					sparse and segment tables are there */
#define DSIDX_DIR_EXPLICIT  1u	     /* dir flag: the tar had an entry for it */
#define DSIDX_IMPLICIT_MODE 0040555u /* S_IFDIR | 0555 */
#define DSIDX_NONE	    UINT32_MAX /* shard of a symlink */

/* Limits (the reader rejects larger values, the builder refuses them). */
#define DSIDX_MAX_NAME	   1024u /* bytes of one path component */
#define DSIDX_MAX_LINK	   4095u /* bytes of a symlink target */
#define DSIDX_MAX_KEY	   1024u /* bytes of a shard key (S3 limit) */
#define DSIDX_MAX_ETAG	   256u	 /* bytes of an ETag */
#define DSIDX_MAX_SHARDS   (UINT32_MAX - 1) /* DSIDX_NONE is reserved */
#define DSIDX_MAX_DIRS	   UINT32_MAX
#define DSIDX_MAX_MEMBERS  UINT32_MAX
#define DSIDX_MAX_STRINGS  UINT32_MAX /* bytes of the string table */
#define DSIDX_MAX_SEGMENTS UINT32_MAX /* sparse data segments in all */

/*
 * Suggested cap for the buffer an index object is read into (about 30
 * million members at ImageNet-like name lengths).
 */
#define DSIDX_SUGGESTED_CAP ((size_t)2 << 30)

/*
 * CRC-32C (Castagnoli; reflected, polynomial 0x1EDC6F41, init and final
 * XOR 0xFFFFFFFF), continued from CRC (0 to start), zlib-style:
 * dsidx_crc32c(dsidx_crc32c(0, a, n), b, m) is the CRC of a followed by b.
 * dsidx_crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t dsidx_crc32c(uint32_t crc, const void *data, size_t len);

/*
 * Recomputes both checksums of the index in DATA (LEN bytes) in place, for
 * tests and tools that patch a field. 0, or -EBADMSG when the magic,
 * header_len or total_len do not describe LEN bytes.
 */
int dsidx_reseal(void *data, size_t len);

/* ---- Building ---------------------------------------------------------- */

struct dsidx_builder;

/*
 * One data segment of a sparse member: the file's bytes [offset, offset +
 * length) are the shard's bytes [archive_offset, archive_offset +
 * length). The file's bytes outside every segment are zeros. (The same
 * layout as struct tarhdr_sparse.)
 */
struct dsidx_segment {
	uint64_t offset;	 /* in the file */
	uint64_t length;	 /* > 0 */
	uint64_t archive_offset; /* in the shard */
};

/* Limits of one builder; 0 means the format's maximum. */
struct dsidx_builder_conf {
	uint32_t max_shards;  /* add_shard calls */
	uint32_t max_dirs;    /* directories, the root included */
	uint32_t max_members; /* member adds, shadowed ones included */
};

/*
 * Member adds that are not in the index, counted by finish() (zero
 * before): each such add is counted once, in dir_conflicts when a
 * directory has its path, else in shadowed (a later add of the same path
 * won). The counts do not depend on the order of the adds.
 */
struct dsidx_build_stats {
	uint64_t shadowed;	/* replaced by a later add of the same path */
	uint64_t dir_conflicts; /* dropped: a directory has the same path */
};

/* CONF may be NULL (format maximums). Caller frees with _free(). */
int dsidx_builder_new(const struct dsidx_builder_conf *conf,
		      struct dsidx_builder **out);
void dsidx_builder_free(struct dsidx_builder *b);

/*
 * Adds a shard. KEY is relative to the index's prefix: UTF-8, at most
 * DSIDX_MAX_KEY bytes, no leading or trailing '/', no empty, "." or ".."
 * segment. ETAG is as the server reports it, quotes included
 * ("\"9b2c...\"", "\"...-12\""), bytes 0x21-0x7E only, or "" / NULL when
 * unknown. *SHARD_IDX receives the handle that add_member() takes; the
 * file orders shards by key, so handles are not file indexes. Two shards
 * with the same key make finish() fail with -EEXIST.
 */
int dsidx_builder_add_shard(struct dsidx_builder *b, const char *key,
			    const char *etag, uint64_t size,
			    uint32_t *shard_idx);

/*
 * Adds a member at PATH, relative and normalised by the caller ("a/b/c":
 * no leading, trailing or doubled '/', no "." or ".." component, each
 * component at most DSIDX_MAX_NAME bytes). Missing directories on the way
 * are created implicitly (mode DSIDX_IMPLICIT_MODE, mtime = created).
 *
 * MODE is S_IFREG or S_IFLNK with permission bits (07777).
 *  - S_IFREG: the data is SIZE bytes at OFFSET of shard handle SHARD,
 *    inside the shard's size; LINK_TARGET must be NULL.
 *  - S_IFLNK: LINK_TARGET is the target as stored (1..DSIDX_MAX_LINK
 *    bytes); SHARD, OFFSET and SIZE are ignored (stored as DSIDX_NONE,
 *    0, 0).
 * MTIME_NSEC < 1000000000.
 *
 * Same path added twice: the later add replaces the earlier one
 * (stats.shadowed). A path that is also a directory, whenever the
 * directory appears: the directory wins and the member is dropped
 * (stats.dir_conflicts): "a" then "a/b" drops file "a"; "a/b" then "a"
 * drops the new "a". Both return 0; finish() applies and counts them.
 *
 * On -E2BIG or -ENOMEM, directories on the way may have been created;
 * on any other error the builder is unchanged.
 */
int dsidx_builder_add_member(struct dsidx_builder *b, const char *path,
			     uint32_t shard, uint64_t offset, uint64_t size,
			     uint32_t mode, int64_t mtime, uint32_t mtime_nsec,
			     const char *link_target);

/*
 * Adds a sparse file at PATH (rules of PATH, shadowing and conflicts as
 * add_member()): SIZE is its apparent size (st_size, may exceed the
 * shard's), its data the NSEGS segments SEGS (copied; ascending by
 * offset, not overlapping, each of length > 0, inside [0, SIZE) and with
 * its archive bytes inside shard SHARD); NSEGS 0 is a file of SIZE zero
 * bytes. DATA_OFFSET is where the member's stored data begins in the
 * shard (<= the shard's size; tarhdr's data_offset), kept for readers
 * that fetch a member whole. MODE is S_IFREG with permission bits.
 * -EINVAL for a bad argument (unsorted or overlapping segments, ...),
 * -E2BIG past DSIDX_MAX_SEGMENTS. The index is then version 1.1 with
 * DSIDX_FLAG_SPARSE (dsidx_member_view.sparse, dsidx_member_segments()).
 */
int dsidx_builder_add_sparse(struct dsidx_builder *b, const char *path,
			     uint32_t shard, uint64_t data_offset,
			     uint64_t size, const struct dsidx_segment *segs,
			     uint32_t nsegs, uint32_t mode, int64_t mtime,
			     uint32_t mtime_nsec);

/*
 * Adds a hard link PATH to the member at TARGET (normalised like PATH) as
 * it is now: the new member copies the latest add at TARGET (shard,
 * offset, size, mode, mtime, symlink target), as tar extraction would; a
 * later add at TARGET does not change the link. Readers need nothing
 * special: a hard link is an ordinary member. -ENOENT when no member was
 * added at TARGET or TARGET is now a directory (the builder is then
 * unchanged). Shadowing and conflicts as add_member(). The first hard
 * link builds a (directory, name) table of all members, so that later
 * adds each cost one more hash probe.
 */
int dsidx_builder_add_hardlink(struct dsidx_builder *b, const char *path,
			       const char *target);

/*
 * Adds an explicit directory (a tar directory entry): creates it and its
 * parents if needed and sets its MODE (permission bits, with or without
 * S_IFDIR) and mtime; a later add of the same directory overrides them.
 * PATH "" is the root. A member at PATH or at a parent path is dropped
 * (stats.dir_conflicts).
 */
int dsidx_builder_add_dir(struct dsidx_builder *b, const char *path,
			  uint32_t mode, int64_t mtime, uint32_t mtime_nsec);

/* stats.shadowed (counted by finish()). */
uint64_t dsidx_builder_shadowed(const struct dsidx_builder *b);
void dsidx_builder_stats(const struct dsidx_builder *b,
			 struct dsidx_build_stats *out);

/*
 * Serialises the index and appends it to OUT (its cap must hold the whole
 * index, else -E2BIG; on failure OUT is unchanged). CREATED (Unix seconds)
 * is recorded in the header and is the mtime of implicit directories.
 * One call per builder: afterwards (success or not) only _stats(),
 * _shadowed() and _free() may be used (-EINVAL otherwise).
 */
int dsidx_builder_finish(struct dsidx_builder *b, int64_t created,
			 struct buf *out);

/* ---- Reading ----------------------------------------------------------- */

struct dsidx;

struct dsidx_info {
	uint16_t major, minor; /* of the file (minor may be newer) */
	uint32_t flags;	       /* header flags */
	int64_t created;       /* Unix seconds */
	uint32_t nshards, ndirs, nmembers; /* ndirs >= 1 (the root) */
	uint64_t size;			   /* bytes of the index */
	uint64_t shard_bytes;		   /* sum of shard sizes, saturating */
	uint64_t member_bytes;		   /* sum of member sizes, saturating */
	uint32_t nsparse;		   /* sparse members (1.1) */
	uint32_t nsegments;		   /* their data segments (1.1) */
};

/* Pointers borrow the index's bytes; strings are not NUL-terminated. */
struct dsidx_shard_view {
	const char *key; /* relative to the index's prefix */
	uint32_t key_len;
	const char *etag; /* quoted; etag_len 0 when unknown */
	uint32_t etag_len;
	uint64_t size;
};

struct dsidx_dir_view {
	uint32_t parent;  /* the root's parent is itself, 0 */
	const char *name; /* "" (name_len 0) for the root */
	uint32_t name_len;
	uint32_t mode;	/* S_IFDIR | permissions */
	uint32_t flags; /* DSIDX_DIR_EXPLICIT, or 0 */
	int64_t mtime;
	uint32_t mtime_nsec;
	uint32_t first_dir, ndirs;	 /* children: dirs [first, first+n) */
	uint32_t first_member, nmembers; /* members [first, first+n) */
};

struct dsidx_member_view {
	uint32_t dir; /* directory index */
	const char *name;
	uint32_t name_len;
	uint32_t mode;	       /* S_IFREG or S_IFLNK | permissions */
	uint32_t shard;	       /* DSIDX_NONE for a symlink */
	uint64_t offset, size; /* data in the shard; 0, 0 for a symlink;
				  sparse: see below */
	int64_t mtime;
	uint32_t mtime_nsec;
	/* Symlink target, never NULL; link_len 0 for a regular file. A
	 * symlink's st_size is link_len. */
	const char *link;
	uint32_t link_len;
	/*
	 * A sparse file (1.1): SIZE is its apparent size (st_size) and its
	 * bytes are NOT [offset, offset + size) of the shard but the
	 * segments of dsidx_member_segments(), zeros elsewhere; OFFSET is
	 * where its stored data begins in the shard. Costs a binary search
	 * over the sparse members (none in most indexes).
	 */
	bool sparse;
};

enum dsidx_kind { DSIDX_KIND_DIR = 1, DSIDX_KIND_MEMBER = 2 };

struct dsidx_ref {
	enum dsidx_kind kind;
	uint32_t idx; /* directory or member index */
};

/*
 * Verifies LEN bytes at DATA and returns the index in *OUT (caller frees
 * with dsidx_free()). DATA is borrowed: it must stay valid and unchanged
 * until dsidx_free(). On failure ERR (ERRLEN bytes, may be NULL/0)
 * receives one line saying what is wrong (indexes only, never file
 * contents); -EBADMSG, -EPROTONOSUPPORT, -E2BIG (larger than this
 * machine's address space) or -ENOMEM.
 */
int dsidx_open(const void *data, size_t len, struct dsidx **out, char *err,
	       size_t errlen);
void dsidx_free(struct dsidx *x);

/* Borrowed until dsidx_free(). */
const struct dsidx_info *dsidx_info(const struct dsidx *x);

/* Views by index: 0, or -ENOENT when I is out of range. */
int dsidx_shard(const struct dsidx *x, uint32_t i, struct dsidx_shard_view *v);
int dsidx_dir(const struct dsidx *x, uint32_t i, struct dsidx_dir_view *v);
int dsidx_member(const struct dsidx *x, uint32_t i,
		 struct dsidx_member_view *v);

/*
 * The segments of sparse member I: 0 and the range [*FIRST, *FIRST + *N)
 * of the segment table (*N may be 0: all zeros), or -ENOENT when I is not
 * a sparse member (or out of range). O(log of the sparse members).
 */
int dsidx_member_segments(const struct dsidx *x, uint32_t i, uint32_t *first,
			  uint32_t *n);

/* Segment SEG of the segment table: 0, or -ENOENT out of range. */
int dsidx_segment(const struct dsidx *x, uint32_t seg,
		  struct dsidx_segment *out);

/*
 * For reading sparse member I from file offset OFF: *SEG is the first of
 * its segments that ends after OFF (offset + length > OFF; it may start
 * after OFF: the bytes before it are zeros). -ENOENT when none does (the
 * rest of the file is zeros) or I is not sparse. A binary search.
 */
int dsidx_segment_find(const struct dsidx *x, uint32_t i, uint64_t off,
		       uint32_t *seg);

/* Binary searches. 0 and *IDX, or -ENOENT (also for a bad DIR). */
int dsidx_find_shard(const struct dsidx *x, const char *key, size_t len,
		     uint32_t *idx);
int dsidx_lookup_dir(const struct dsidx *x, uint32_t dir, const char *name,
		     size_t len, uint32_t *idx);
int dsidx_lookup_member(const struct dsidx *x, uint32_t dir, const char *name,
			size_t len, uint32_t *idx);
/* Either kind (names are unique within a directory across both kinds). */
int dsidx_lookup(const struct dsidx *x, uint32_t dir, const char *name,
		 size_t len, struct dsidx_ref *ref);
/*
 * Resolves a '/'-separated PATH (LEN bytes) from the root; empty
 * components are skipped, so "" and "/" are the root. "." and ".." are
 * not interpreted (no entry has those names).
 */
int dsidx_lookup_path(const struct dsidx *x, const char *path, size_t len,
		      struct dsidx_ref *ref);

/*
 * The child at POS of directory DIR, for iteration and readdir offsets:
 * positions [0, ndirs) are its directories, then [ndirs, ndirs +
 * nmembers) its members, each group in name order. -ENOENT past the end.
 */
int dsidx_child(const struct dsidx *x, uint32_t dir, uint64_t pos,
		struct dsidx_ref *ref);

#endif
