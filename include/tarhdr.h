/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_TARHDR_H
#define SHARDFS_TARHDR_H

/*
 * Tar headers (pure: no I/O, no threads, no globals).
 *
 * Reading is a pull-style scanner: the caller holds a window of the shard
 * (bytes it fetched with a range GET) and asks for the next member; the
 * scanner either returns it, or says which bytes it needs, or says the
 * archive ended, or says what is damaged and where. It never reads member
 * data except the few things that are headers in disguise (pax records,
 * GNU long names, the pax 1.0 sparse map), so the caller can jump over
 * large members.
 *
 * Formats read: POSIX ustar (prefix + name; star's 131-byte prefix), GNU
 * ("ustar  ": 'L' long names, 'K' long link targets, base-256 numbers,
 * old sparse 'S' with extension blocks), pax ('x' per member and 'g'
 * global headers; Solaris 'X' is read as 'x'; GNU sparse 0.0, 0.1 and 1.0)
 * and v7 (no magic).
 *
 * Rules (where tar implementations differ, the choice is written here):
 *  - Checksums: the stored value must equal the unsigned or the signed sum
 *    of the header (GNU tar accepts both).
 *  - Numeric fields: base-256 when the first byte has its high bit set
 *    (bit 6 is the sign, two's complement, as GNU tar writes), otherwise
 *    octal: leading spaces, then octal digits ended by the end of the
 *    field, a NUL or a space; anything after that terminator is ignored.
 *    A field with no digits (all NULs or spaces) is 0, as GNU tar and
 *    Python read an all-NUL field. Any other character, or a value that
 *    does not fit (negative where it must not be, or beyond 2^63 - 1), is
 *    damage.
 *  - Pax records are "LEN key=value\n" with LEN decimal counting the whole
 *    record. A bad LEN, a missing space, '=' or '\n', an empty key, a
 *    record running past the header data, or a malformed number for a key
 *    we use is damage; NUL bytes after the last record are tolerated.
 *    A value is cut at its first NUL (as C tar implementations do). An
 *    empty value deletes the key: in 'x' the ustar/GNU value applies again
 *    for that member, in 'g' the global value is removed. Precedence for
 *    a field: 'x' record, then 'g' record, then GNU 'L'/'K', then the ustar
 *    header. Keys used: path, linkpath, size, mtime (seconds with an
 *    optional '-' and fraction), uid, gid, GNU.sparse.*; others ignored.
 *  - Data follows a header (size bytes, padded to 512) for every type but
 *    hard links, symlinks, devices, directories ('5') and fifos, whose
 *    size is taken as 0 (POSIX ustar; Python's tarfile does the same).
 *  - Types: '0', '\0', '7' and types tar does not know are regular files
 *    (GNU tar and Python extract unknown types as regular files); a
 *    regular file whose stored name ends with '/' is a directory, and
 *    GNU 'D' (dumpdir) is a directory; '3', '4', '6', 'V' (volume label),
 *    'M' (multi-volume continuation) and 'N' (old GNU long names) are
 *    TARHDR_OTHER with a note.
 *  - End of archive: the first zero block ends the archive, as in GNU tar
 *    and Python (later bytes are ignored). See enum tarhdr_end for how the
 *    end looked; an archive that just ends at tar_size on a header boundary
 *    is accepted and flagged.
 *  - Damage (a negative return, sticky): bad checksum, a header or member
 *    data past tar_size (truncation), an extended header not followed by
 *    a member, malformed fields, pax records, sparse maps. Limits exceeded
 *    (-E2BIG, also sticky): see struct tarhdr_limits.
 *
 * Writing appends deterministic ustar (+ pax when needed) headers to a
 * struct buf; see tarhdr_write().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define TARHDR_BLOCK 512

/* Defaults of struct tarhdr_limits. */
#define TARHDR_PATH_MAX	  4096u	     /* normalised path, link target */
#define TARHDR_EXT_MAX	  (1u << 20) /* pax header / GNU long name data */
#define TARHDR_CHAIN_MAX  8u	     /* extension headers before a member */
#define TARHDR_SPARSE_MAX 65536u     /* sparse segments kept per member */

/* Return values of tarhdr_scan_next() besides negative errnos. */
#define TARHDR_END   0
#define TARHDR_ENTRY 1
#define TARHDR_NEED  2

struct tarhdr_limits {
	size_t path_max;    /* longest path or link target (bytes, after
			       normalisation): longer is -E2BIG */
	size_t ext_max;	    /* largest pax header or GNU long-name data:
			       larger is -E2BIG */
	unsigned chain_max; /* most extension headers ('x', 'g', 'L', 'K')
			       in a row before a member: more is -E2BIG */
	size_t sparse_max;  /* most sparse data segments kept for a member:
			       a larger map makes it TARHDR_OTHER (not
			       damage: where its data ends is still known) */
};

enum tarhdr_type {
	TARHDR_REG = 1,
	TARHDR_DIR,
	TARHDR_SYMLINK,
	TARHDR_HARDLINK,
	TARHDR_OTHER, /* devices, fifos, ...: skip it (entry.note says why) */
};

enum tarhdr_end {
	TARHDR_END_NONE = 0,  /* not at the end (yet) */
	TARHDR_END_MARKER,    /* two zero blocks: the normal end */
	TARHDR_END_ZERO_EOF,  /* one zero block, then exactly tar_size */
	TARHDR_END_LONE_ZERO, /* one zero block followed by non-zero bytes:
				 ended there, as GNU tar does ("A lone zero
				 block"); flagged in end_note */
	TARHDR_END_NO_MARKER, /* tar_size reached on a header boundary with
				 no zero block; flagged in end_note */
};

/* One data segment of a sparse member: file bytes [offset, offset +
 * length) are stored at [archive_offset, archive_offset + length) of the
 * shard. Bytes of the file outside every segment are zeros. */
struct tarhdr_sparse {
	uint64_t offset;
	uint64_t length; /* > 0 */
	uint64_t archive_offset;
};

/*
 * A member. Every pointer is borrowed from the scan and valid until the
 * next tarhdr_scan_next() or tarhdr_scan_release() (the take functions
 * below hand them over).
 */
struct tarhdr_entry {
	const char *path; /* normalised: no leading "/" or "./", no empty
			     or "." components, no trailing '/'; "" for
			     the archive root ("./"). Never NULL. Raw
			     bytes: not checked as UTF-8, may hold control
			     characters (escape it before logging). */
	const char *link; /* SYMLINK: the target as stored; HARDLINK: the
			     target normalised like path; NULL otherwise */
	enum tarhdr_type type;
	char typeflag;	  /* the raw typeflag ('S' for old GNU sparse) */
	bool unsafe;	  /* path (or a hard link's target) was absolute
			     or has a ".." component: skip the member */
	const char *note; /* static text: why TARHDR_OTHER, or a remark
			     (unknown type read as a regular file);
			     NULL when there is nothing to say */
	uint32_t mode;	  /* permission bits (07777) */
	uint64_t uid;
	uint64_t gid;
	int64_t mtime;		/* seconds since the epoch, may be negative */
	uint32_t mtime_nsec;	/* 0 .. 999999999 (pax only) */
	uint64_t size;		/* bytes of the extracted file: the real size
				   for sparse files; 0 for links, directories
				   and devices */
	uint64_t header_offset; /* first header of the member, including its
				   pax / GNU long name headers */
	uint64_t data_offset;	/* first data byte (after the pax 1.0 sparse
				   map for sparse members) */
	uint64_t stored_size;	/* bytes stored from data_offset: == size
				   for regular files that are not sparse;
				   may be > 0 for members whose data the
				   caller ignores (GNU dumpdir, OTHER) */
	bool is_sparse;		/* a sparse file: its bytes are the map's
				   segments, zeros elsewhere (an empty map
				   is all zeros) */
	const struct tarhdr_sparse *sparse; /* the map: ascending, not
					       overlapping; NULL when
					       nsparse == 0 */
	size_t nsparse;
};

/* Pax values of one 'x' or 'g' header. Private to tarhdr.c. */
struct tarhdr_pax {
	unsigned has;	 /* keys set (bits private to tarhdr.c) */
	unsigned del;	 /* keys deleted by an empty value */
	struct buf path; /* raw values (path also from GNU.sparse.name) */
	struct buf link;
	uint64_t size, uid, gid;
	int64_t mtime;
	uint32_t mtime_nsec;
	uint64_t sp_realsize; /* GNU.sparse.realsize / GNU.sparse.size */
	uint64_t sp_major, sp_minor;
	uint64_t sp_offset; /* pending GNU.sparse.offset (format 0.0) */
};

/*
 * Scanner state. Embed it, tarhdr_scan_init() it, and do not copy it. The
 * fields above "private" may be read by the caller.
 */
struct tarhdr_scan {
	const char *err_msg;  /* after a negative return: what and where
				 (points into the scan); NULL otherwise */
	enum tarhdr_end end;  /* how it ended, once TARHDR_END was returned */
	const char *end_note; /* LONE_ZERO / NO_MARKER: a line for the log
				 (points into the scan); NULL otherwise */

	/* private */
	struct tarhdr_limits lim;
	uint64_t tar_size;
	uint64_t next;	     /* offset of the next block to read */
	int state;	     /* what that block is */
	int err;	     /* sticky result once damaged */
	bool returned;	     /* an entry is out: reset it on the next call */
	bool prefixed;	     /* 'x', 'L' or 'K' seen for the next member */
	unsigned chain;	     /* extension headers before the next member */
	uint64_t member_off; /* its first header, when prefixed */
	struct tarhdr_pax glob, pend;
	bool has_longname, has_longlink;
	struct buf longname, longlink; /* GNU 'L' / 'K' data (raw) */
	struct buf path, link;	       /* the entry's strings */
	struct buf sparse;	       /* struct tarhdr_sparse array */
	int sp_kind;		       /* sparse format of the member */
	bool sparse_over;	       /* the map outgrew sparse_max */
	bool sparse_done;	       /* old GNU map ended (empty entry) */
	uint64_t sp_real;	       /* real size of a sparse member */
	uint64_t data_start;	       /* member data start (before a map) */
	uint64_t data_size;	       /* bytes stored after the header(s) */
	uint64_t map_count, map_nread, map_val, map_off; /* pax 1.0 map */
	unsigned map_digits;
	struct tarhdr_entry cur; /* the member being built */
	uint64_t zero_at;	 /* the first zero block */
	char msg[192];
};

/*
 * Starts a scan of a shard of TAR_SIZE bytes (sizes above 2^63 are
 * clamped) with the limits LIM (copied; NULL: the defaults above, and any
 * 0 field takes its default).
 */
void tarhdr_scan_init(struct tarhdr_scan *s, uint64_t tar_size,
		      const struct tarhdr_limits *lim);

/* Frees what the scan holds; s may be initialised again. */
void tarhdr_scan_release(struct tarhdr_scan *s);

/*
 * Advances the scan. WIN holds the shard's bytes [WIN_OFF, WIN_OFF +
 * WINLEN) (borrowed for this call only; WIN may be NULL when WINLEN is 0).
 * Returns:
 *   TARHDR_ENTRY  *OUT is the next member (pointers borrowed, see struct
 *                 tarhdr_entry); extension headers are folded into it.
 *   TARHDR_NEED   the bytes [*NEED_OFF, *NEED_OFF + *NEED_LEN) are needed
 *                 and not all in WIN: call again with a window that
 *                 starts at *NEED_OFF and holds at least *NEED_LEN bytes
 *                 (more is better: the following headers come next).
 *                 NEED_LEN can exceed a usual window (a pax header of up
 *                 to ext_max bytes + 512) and never goes past tar_size.
 *   TARHDR_END    the archive ended (s->end says how); repeated calls
 *                 return TARHDR_END again.
 *   -EBADMSG      damage or not a tar at all; -E2BIG a limit was exceeded;
 *   -ENOMEM.      s->err_msg says what and at which offset. Sticky: later
 *                 calls return the same error. Members returned before
 *                 the error are good.
 * *OUT, *NEED_OFF and *NEED_LEN are written only for the matching result.
 */
int tarhdr_scan_next(struct tarhdr_scan *s, const unsigned char *win,
		     size_t winlen, uint64_t win_off, struct tarhdr_entry *out,
		     uint64_t *need_off, uint64_t *need_len);

/*
 * Hand the last entry's path, link target or sparse map over to the
 * caller (free() it); the entry's pointer stays valid as the caller's.
 * Call after TARHDR_ENTRY, before the next tarhdr_scan_next(). Return
 * NULL (and *N = 0) when the entry has none, or on allocation failure.
 */
char *tarhdr_scan_take_path(struct tarhdr_scan *s);
char *tarhdr_scan_take_link(struct tarhdr_scan *s);
struct tarhdr_sparse *tarhdr_scan_take_sparse(struct tarhdr_scan *s, size_t *n);

/*
 * Normalises the member name RAW (LEN bytes, cut at a NUL) into OUT
 * (appended): empty and "." components dropped, a leading '/' dropped,
 * ".." kept. *UNSAFE is set when RAW was absolute or has a ".." component
 * (and left alone otherwise). 0 or buf_append()'s errors.
 */
int tarhdr_normalize(const char *raw, size_t len, struct buf *out,
		     bool *unsafe);

/* ---- Writing (src/tarwrite.c) ---- */

/* One member to write. */
struct tarhdr_wentry {
	const char *path;      /* normalised (see tarhdr_normalize), safe,
				  non-empty, <= TARHDR_PATH_MAX bytes; a
				  directory may end with '/' (added when
				  missing) */
	const char *link;      /* SYMLINK: target (non-empty, stored as is,
				  <= TARHDR_PATH_MAX); HARDLINK: a path
				  like PATH; NULL otherwise */
	enum tarhdr_type type; /* REG, DIR, SYMLINK or HARDLINK */
	uint32_t mode;	       /* permission bits; others are ignored */
	uint64_t uid, gid;
	int64_t mtime;
	uint32_t mtime_nsec; /* < 1000000000 */
	uint64_t size;	     /* REG only (others write 0) */
};

/*
 * Appends the header block(s) of E to OUT: one ustar header when the
 * name fits (<= 100 bytes, or split at a '/' into prefix <= 155 and name
 * <= 100), the link fits (<= 100), size < 8 GiB, 0 <= mtime < 8^11,
 * mtime_nsec == 0 and uid, gid < 8^7; otherwise a pax 'x' header
 * ("././@PaxHeader") with the records needed (path, linkpath, size, mtime,
 * uid, gid, in that order) first, and placeholder values in the ustar
 * fields. uname/gname are empty; no atime/ctime: the same entry always
 * gives the same bytes. The member's data (REG: size bytes, then
 * tarhdr_write_pad()) is the caller's to append.
 * 0, -EINVAL (bad entry), -ENAMETOOLONG, or buf errors (-E2BIG, -ENOMEM);
 * OUT is unchanged on failure.
 */
int tarhdr_write(const struct tarhdr_wentry *e, struct buf *out);

/* Bytes of zero padding that follow SIZE data bytes (0 .. 511). */
size_t tarhdr_pad_len(uint64_t size);

/* Appends tarhdr_pad_len(SIZE) zero bytes. 0 or buf errors. */
int tarhdr_write_pad(uint64_t size, struct buf *out);

/* Appends the end-of-archive marker (two zero blocks). 0 or buf errors. */
int tarhdr_write_end(struct buf *out);

#endif
