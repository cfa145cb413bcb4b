/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_PACKPLAN_H
#define SHARDFS_PACKPLAN_H

/*
 * The pack planner (pure: no I/O, no threads, no globals): from the list
 * of what a source tree holds (files, directories, symbolic links with
 * their sizes, modes and times) it decides, before a byte is read, the
 * order of the members, the shard of each member, each member's exact
 * offsets in its shard, each shard's name and exact size, and a
 * fingerprint of each shard's planned contents. `shardfs pack` then only
 * streams bytes into the planned places, builds the dataset index from the
 * plan, and can resume by comparing fingerprints.
 *
 * Samples (as in WebDataset): the files and symbolic links of one
 * directory whose names agree up to the first dot ("0001.jpg",
 * "0001.cls", "0001.seg.png" are sample "0001"; a leading dot does not
 * count, so ".a.b" is sample ".a"; a name without a dot is its own
 * stem) form one sample. A directory entry is a sample of its own. A
 * sample is never split: its members are adjacent, in byte order of their
 * names, in one shard.
 *
 * Order: samples sorted by (directory, stem, files before a directory
 * entry of the same name), where directories compare component by
 * component ('/' sorts before every other byte), so a directory's own
 * files come before its subdirectories' contents and a directory's entry
 * before what it holds. With a shuffle seed the samples are put in a
 * pseudo-random order that depends only on the seed and the sorted list
 * (Fisher-Yates over splitmix64), so the same input and seed always give
 * the same shards.
 *
 * Shards: samples fill a shard in order; a sample that would push the
 * shard (end-of-archive marker included) past shard_size starts a new
 * one, and a shard that reached shard_size is closed, so a sample (or a
 * single member) larger than shard_size gets a shard of its own and no
 * shard holds more than one such sample. Shard bytes are exactly what
 * tarhdr_write() writes for each member (ustar, pax where needed), the
 * member data padded to 512 bytes, and the two-block end marker.
 *
 * Names: a pattern such as "shard-{n}.tar" (the default) where
 *   {n}     is the shard number, zero-padded to 6 digits,
 *   {n:W}   the same padded to W digits (1..12),
 *   {hash}  4 hexadecimal digits derived from the shard number alone,
 *           which spreads keys over S3 index partitions when put first
 *           ("{hash}-shard-{n}.tar" or "{hash}/shard-{n}.tar").
 * Other characters are taken as they are and must be among A-Z a-z 0-9
 * . _ - / ; {n} must appear exactly once; the name must end in ".tar";
 * and every name must be a valid relative key (no leading or trailing
 * '/', no empty, "." or ".." segment).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PACKPLAN_DEFAULT_PATTERN "shard-{n}.tar"
#define PACKPLAN_NAME_MAX	 1024 /* bytes of a shard key */
#define PACKPLAN_FP_HEX		 65   /* fingerprint: 64 hex digits + NUL */

enum packplan_kind {
	PACKPLAN_FILE = 1,
	PACKPLAN_DIR,
	PACKPLAN_SYMLINK,
};

/* What a source adds: strings are copied by packplan_add(). */
struct packplan_input {
	const char *path; /* relative, normalised: no leading or
			     trailing '/', no empty, "." or ".."
			     component; at most 4096 bytes */
	const char *link; /* SYMLINK: target, 1..4095 bytes; else NULL */
	enum packplan_kind kind;
	uint32_t mode;	     /* permission bits (07777) */
	int64_t mtime;	     /* seconds (tar keeps whole seconds) */
	uint64_t size;	     /* FILE: bytes; others 0 */
	const char *version; /* names this version of the source object
				for fingerprints (e.g. mtime in ns and
				inode, or an ETag); NULL = "" */
};

/* A member in pack order; strings owned by the plan. */
struct packplan_item {
	const char *path;
	const char *link;
	const char *version;
	enum packplan_kind kind;
	uint32_t mode;
	int64_t mtime;
	uint64_t size;
	uint32_t sample;      /* sample number, in pack order */
	uint32_t shard;	      /* shard number */
	uint32_t hdr_len;     /* header bytes (pax + ustar) */
	uint64_t offset;      /* first header byte in the shard */
	uint64_t data_offset; /* offset + hdr_len */
};

struct packplan_shard {
	const char *key;	  /* owned by the plan */
	uint64_t size;		  /* bytes of the tar, end marker included */
	size_t first, nitems;	  /* items [first, first + nitems) */
	uint64_t files;		  /* regular files among them */
	uint64_t data_bytes;	  /* sum of their sizes */
	char fp[PACKPLAN_FP_HEX]; /* fingerprint of the planned bytes */
};

struct packplan_conf {
	uint64_t shard_size; /* target bytes per shard, >= 1 MiB */
	const char *pattern; /* NULL: PACKPLAN_DEFAULT_PATTERN; copied */
	bool shuffle;	     /* seeded random sample order */
	uint64_t seed;
};

struct packplan;

/*
 * A new, empty plan. -EINVAL when the pattern is invalid or shard_size
 * too small (ERR, ERRLEN: one line saying why), -ENOMEM.
 */
int packplan_new(const struct packplan_conf *conf, struct packplan **out,
		 char *err, size_t errlen);
void packplan_free(struct packplan *p);

/*
 * Adds one member. Checked at once, so that the plan can never fail
 * later: -EINVAL (bad path, kind or link), -ENAMETOOLONG (path or link
 * too long for tar or the dataset index), -E2BIG (more than 2^32 - 2
 * members), -ENOMEM. Duplicate paths are the caller's to avoid.
 */
int packplan_add(struct packplan *p, const struct packplan_input *in);

/*
 * Orders, groups and assigns shards. Call once, after the last add; then
 * the accessors below work. 0, -E2BIG (too many shards or samples), or
 * -ENOMEM.
 */
int packplan_finish(struct packplan *p);

size_t packplan_nitems(const struct packplan *p);
/* Item I in pack order (I < nitems), borrowed until packplan_free(). */
const struct packplan_item *packplan_item(const struct packplan *p, size_t i);
uint32_t packplan_nshards(const struct packplan *p);
const struct packplan_shard *packplan_shard(const struct packplan *p,
					    uint32_t i);
/* Sums over every shard. */
uint64_t packplan_total_bytes(const struct packplan *p);
uint64_t packplan_total_files(const struct packplan *p);
uint32_t packplan_nsamples(const struct packplan *p);

/*
 * Appends the tar header(s) of IT (exactly IT->hdr_len bytes: pax when
 * needed, then ustar) to OUT; the member's data and padding are the
 * caller's. 0 or buf errors.
 */
int packplan_write_header(const struct packplan_item *it, struct buf *out);

/* The source's root directory, for the index (unknown for S3). */
struct packplan_root {
	bool known;
	uint32_t mode; /* permission bits */
	int64_t mtime;
};

/*
 * Builds the dataset index (dsidx.h) of the finished plan P and appends
 * it to OUT: every shard with ETAGS[i] (NULL: none recorded, as for a
 * local directory) and its planned size; every directory entry (with
 * ROOT's mode and time for the root when known), file (at its planned
 * data offset) and symbolic link, with its mode and mtime. CREATED is
 * the index's creation time. 0 or a dsidx builder error.
 */
int packplan_build_index(const struct packplan *p, const char *const *etags,
			 const struct packplan_root *root, int64_t created,
			 struct buf *out);

/* ---- helpers, exposed for tests and for the sources ---- */

/*
 * Checks PATTERN (see the top of this file). 0 or -EINVAL with one line
 * in ERR.
 */
int packplan_check_pattern(const char *pattern, char *err, size_t errlen);

/*
 * Writes shard N's name by PATTERN (checked) into OUT. 0, -ERANGE when
 * OUTLEN is too small, -EINVAL for a bad pattern.
 */
int packplan_format_name(const char *pattern, uint32_t n, char *out,
			 size_t outlen);

/*
 * The sample of a member at PATH: *DIRLEN bytes of directory (without
 * the '/'; 0 at the top) and the stem, which starts at PATH + *DIRLEN
 * (+ 1 when *DIRLEN > 0) and is *STEMLEN bytes long.
 */
void packplan_sample_of(const char *path, size_t *dirlen, size_t *stemlen);

/* True when the LEN bytes at S are valid UTF-8 (no overlongs, no
 * surrogates, nothing above U+10FFFF). */
bool packplan_utf8_ok(const char *s, size_t len);

#endif
