/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_DSIDX_FMT_H
#define SHARDFS_DSIDX_FMT_H

/*
 * Private to the dsidx module (src/dsidx.c, the reader, and
 * src/dsidx_build.c, the builder): the byte layout of shardfs-index(5),
 * little-endian loads and stores, CRC-32C and the rules for names, keys
 * and ETags that both the builder and the reader enforce. Nothing here is
 * part of the module's interface; other modules include dsidx.h only.
 *
 * The non-inline functions are defined in src/dsidx.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "dsidx.h"

_Static_assert(S_IFMT == 0170000 && S_IFREG == 0100000 && S_IFDIR == 0040000 &&
		   S_IFLNK == 0120000,
	       "the format uses the traditional Unix file type bits");

#define DSIDX_NSEC_PER_SEC   1000000000u
#define DSIDX_REQUIRED_FLAGS 0xffffu /* header flags a reader must know */
#define DSIDX_KNOWN_REQUIRED DSIDX_FLAG_SPARSE
#define DSIDX_PERM_BITS	     07777u

/* Header fields (shardfs-index(5), "HEADER"). */
enum {
	H_MAJOR = 8,
	H_MINOR = 10,
	H_HLEN = 12,
	H_HCRC = 16,
	H_BCRC = 20,
	H_TOTAL = 24,
	H_FLAGS = 32,
	H_CREATED = 40,
	H_SHARDS = 48, /* each table: u64 offset, u32 count, u32 rec len */
	H_DIRS = 64,
	H_MEMBERS = 80,
	H_STR_OFF = 96,
	H_STR_LEN = 104,
	H_SPARSE = 112,	  /* 1.1, with DSIDX_FLAG_SPARSE */
	H_SEGMENTS = 128, /* 1.1, with DSIDX_FLAG_SPARSE */
};
/* Shard record. */
enum { SR_KEY_OFF = 0, SR_KEY_LEN = 4, SR_ETAG_LEN = 6, SR_SIZE = 8 };
/* Directory record. */
enum {
	DR_PARENT = 0,
	DR_NAME_OFF = 4,
	DR_NAME_LEN = 8,
	DR_FLAGS = 12,
	DR_MODE = 16,
	DR_NSEC = 20,
	DR_MTIME = 24,
	DR_FIRST_DIR = 32,
	DR_NDIRS = 36,
	DR_FIRST_MEM = 40,
	DR_NMEMS = 44,
};
/* Member record. */
enum {
	MR_DIR = 0,
	MR_SHARD = 4,
	MR_OFFSET = 8,
	MR_SIZE = 16,
	MR_MTIME = 24,
	MR_NSEC = 32,
	MR_MODE = 36,
	MR_NAME_OFF = 40,
	MR_NAME_LEN = 44,
	MR_LINK_LEN = 46,
};
/* Sparse record (1.1). */
enum { XR_MEMBER = 0, XR_FIRST_SEG = 4, XR_NSEGS = 8 };
/* Segment record (1.1). */
enum { GR_OFFSET = 0, GR_LENGTH = 8, GR_ARCHIVE = 16 };

static inline uint16_t ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t ld64(const uint8_t *p)
{
	return ld32(p) | (uint64_t)ld32(p + 4) << 32;
}

static inline void st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void st32(uint8_t *p, uint32_t v)
{
	st16(p, (uint16_t)v);
	st16(p + 2, (uint16_t)(v >> 16));
}

static inline void st64(uint8_t *p, uint64_t v)
{
	st32(p, (uint32_t)v);
	st32(p + 4, (uint32_t)(v >> 32));
}

/* Byte order of names: memcmp, then the shorter first. */
static inline int dsidx_name_cmp(const void *a, size_t an, const void *b,
				 size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

static inline uint64_t dsidx_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Slicing-by-8 tables: t[k][n] is the CRC register after byte n followed
 * by k zero bytes. 8 KiB: built on the caller's stack per use. */
struct dsidx_crc_tab {
	uint32_t t[8][256];
};

void dsidx_crc_tab_init(struct dsidx_crc_tab *ct);
uint32_t dsidx_crc_run(const struct dsidx_crc_tab *ct, uint32_t crc,
		       const uint8_t *p, size_t n);
/* CRC of the header's HLEN bytes with the header_crc field read as 0. */
uint32_t dsidx_header_crc(const struct dsidx_crc_tab *ct, const uint8_t *p,
			  uint32_t hlen);

/* A path component: 1..DSIDX_MAX_NAME bytes, no '/' or NUL, not . or .. */
bool dsidx_name_ok(const uint8_t *s, size_t n);
/* A shard key: UTF-8, '/'-separated segments, none empty, "." or "..". */
bool dsidx_key_ok(const uint8_t *s, size_t n);
/* An ETag goes into If-Match headers: visible ASCII only. */
bool dsidx_etag_ok(const uint8_t *s, size_t n);

/*
 * Whether the N segments SEG (records of REC_LEN bytes in the file's
 * layout when RAW, else struct dsidx_segment) describe a sparse file of
 * SIZE bytes in a shard of SHARD_SIZE bytes: lengths > 0, ascending, not
 * overlapping, inside both. On failure *BAD is the failing segment.
 */
bool dsidx_segments_ok(const void *seg, uint32_t n, size_t rec_len, bool raw,
		       uint64_t size, uint64_t shard_size, uint32_t *bad);

#endif
