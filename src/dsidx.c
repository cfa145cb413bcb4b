// SPDX-License-Identifier: MIT
/*
 * The dataset index: the verifying zero-copy reader of the format
 * specified in shardfs-index(5), and what the reader and the builder
 * (src/dsidx_build.c) share: CRC-32C, the name, key, ETag and sparse
 * segment rules (declared in include/dsidx_fmt.h).
 *
 * dsidx_open() checks the header, both CRCs and every record once;
 * afterwards accessors trust the verified bytes and only bounds-check the
 * caller's indexes. Multi-byte fields are assembled from bytes, so
 * neither the host's endianness nor the data's alignment matter.
 *
 * Version 1.1 (required flag DSIDX_FLAG_SPARSE): a sparse table, one
 * record per sparse member sorted by member index, each naming a range of
 * the segment table. Checked in the same linear pass as the members.
 *
 * Pure: no I/O, no threads, no globals. The slicing-by-8 CRC tables (8 KiB)
 * are built on the stack per call (a few microseconds), which keeps the
 * module free of mutable static state.
 */
#include "dsidx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsidx_fmt.h"

/* ---- bytes, CRC-32C, names ------------------------------------------ */

void dsidx_crc_tab_init(struct dsidx_crc_tab *ct)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		ct->t[0][n] = c;
	}
	for (int k = 1; k < 8; k++)
		for (uint32_t n = 0; n < 256; n++) {
			uint32_t c = ct->t[k - 1][n];

			ct->t[k][n] = (c >> 8) ^ ct->t[0][c & 0xff];
		}
}

uint32_t dsidx_crc_run(const struct dsidx_crc_tab *ct, uint32_t crc,
		       const uint8_t *p, size_t n)
{
	const uint32_t(*t)[256] = ct->t;

	crc = ~crc;
	for (; n >= 8; p += 8, n -= 8) {
		uint32_t lo = ld32(p) ^ crc, hi = ld32(p + 4);

		crc = t[7][lo & 0xff] ^ t[6][lo >> 8 & 0xff] ^
		      t[5][lo >> 16 & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
		      t[2][hi >> 8 & 0xff] ^ t[1][hi >> 16 & 0xff] ^
		      t[0][hi >> 24];
	}
	while (n--)
		crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

uint32_t dsidx_crc32c(uint32_t crc, const void *data, size_t len)
{
	struct dsidx_crc_tab ct;

	dsidx_crc_tab_init(&ct);
	return dsidx_crc_run(&ct, crc, data, len);
}

uint32_t dsidx_header_crc(const struct dsidx_crc_tab *ct, const uint8_t *p,
			  uint32_t hlen)
{
	static const uint8_t zero[4];
	uint32_t c = dsidx_crc_run(ct, 0, p, H_HCRC);

	c = dsidx_crc_run(ct, c, zero, sizeof(zero));
	return dsidx_crc_run(ct, c, p + H_HCRC + 4, hlen - (H_HCRC + 4));
}

int dsidx_reseal(void *data, size_t len)
{
	uint8_t *p = data;
	struct dsidx_crc_tab ct;
	uint32_t hlen;

	if (len < DSIDX_HEADER_LEN || memcmp(p, DSIDX_MAGIC, 8))
		return -EBADMSG;
	hlen = ld32(p + H_HLEN);
	if (hlen < DSIDX_HEADER_LEN || hlen > len || ld64(p + H_TOTAL) != len)
		return -EBADMSG;
	dsidx_crc_tab_init(&ct);
	/* The body CRC lives in the header, so it goes first. */
	st32(p + H_BCRC, dsidx_crc_run(&ct, 0, p + hlen, len - hlen));
	st32(p + H_HCRC, dsidx_header_crc(&ct, p, hlen));
	return 0;
}

bool dsidx_name_ok(const uint8_t *s, size_t n)
{
	if (n == 0 || n > DSIDX_MAX_NAME)
		return false;
	if (s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.')))
		return false;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

/* Strict UTF-8: no overlong forms, surrogates, or NUL. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		uint32_t cp, min;
		size_t k;

		if (c > 0 && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1, cp = c & 0x1fu, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			k = 2, cp = c & 0x0fu, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3, cp = c & 0x07u, min = 0x10000;
		else
			return false;
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3fu);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

bool dsidx_key_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || n > DSIDX_MAX_KEY || !utf8_ok(s, n))
		return false;
	while (i <= n) {
		const uint8_t *e = memchr(s + i, '/', n - i);
		size_t len = e ? (size_t)(e - (s + i)) : n - i;

		if (len == 0 || (s[i] == '.' &&
				 (len == 1 || (len == 2 && s[i + 1] == '.'))))
			return false;
		i += len + 1;
	}
	return true;
}

bool dsidx_etag_ok(const uint8_t *s, size_t n)
{
	if (n > DSIDX_MAX_ETAG)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static void seg_load(const void *seg, uint32_t i, size_t rec_len, bool raw,
		     struct dsidx_segment *out)
{
	const uint8_t *r = (const uint8_t *)seg + (size_t)i * rec_len;

	if (!raw) {
		memcpy(out, r, sizeof(*out));
		return;
	}
	out->offset = ld64(r + GR_OFFSET);
	out->length = ld64(r + GR_LENGTH);
	out->archive_offset = ld64(r + GR_ARCHIVE);
}

bool dsidx_segments_ok(const void *seg, uint32_t n, size_t rec_len, bool raw,
		       uint64_t size, uint64_t shard_size, uint32_t *bad)
{
	uint64_t end = 0; /* of the previous segment in the file */

	for (uint32_t i = 0; i < n; i++) {
		struct dsidx_segment s;

		seg_load(seg, i, rec_len, raw, &s);
		*bad = i;
		if (s.length == 0 || s.offset < end || s.offset > size ||
		    s.length > size - s.offset ||
		    s.archive_offset > shard_size ||
		    s.length > shard_size - s.archive_offset)
			return false;
		end = s.offset + s.length;
	}
	return true;
}

/* ---- reader --------------------------------------------------------- */

struct dsidx {
	const uint8_t *shards, *dirs, *mems, *str; /* into the caller's data */
	const uint8_t *sparse, *segs;		   /* 1.1; NULL without */
	uint32_t shard_rl, dir_rl, mem_rl;	   /* record lengths */
	uint32_t sparse_rl, seg_rl;
	uint64_t str_len;
	struct dsidx_info info;
};

/* Where an error message goes. */
struct errbuf {
	char *s;
	size_t n;
};

__attribute__((format(printf, 3, 4))) static int fail(struct errbuf *e, int rc,
						      const char *fmt, ...)
{
	va_list ap;

	if (e->s && e->n) {
		va_start(ap, fmt);
		vsnprintf(e->s, e->n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static inline const uint8_t *shard_rec(const struct dsidx *x, uint32_t i)
{
	return x->shards + (size_t)i * x->shard_rl;
}

static inline const uint8_t *dir_rec(const struct dsidx *x, uint32_t i)
{
	return x->dirs + (size_t)i * x->dir_rl;
}

static inline const uint8_t *mem_rec(const struct dsidx *x, uint32_t i)
{
	return x->mems + (size_t)i * x->mem_rl;
}

static inline const uint8_t *sparse_rec(const struct dsidx *x, uint32_t i)
{
	return x->sparse + (size_t)i * x->sparse_rl;
}

static inline const uint8_t *dir_name(const struct dsidx *x, uint32_t i,
				      uint32_t *len)
{
	const uint8_t *r = dir_rec(x, i);

	*len = ld32(r + DR_NAME_LEN);
	return x->str + ld32(r + DR_NAME_OFF);
}

static inline const uint8_t *mem_name(const struct dsidx *x, uint32_t i,
				      uint32_t *len)
{
	const uint8_t *r = mem_rec(x, i);

	*len = ld16(r + MR_NAME_LEN);
	return x->str + ld32(r + MR_NAME_OFF);
}

/* Magic, version, lengths and both checksums. */
static int check_preamble(const uint8_t *p, size_t len, struct errbuf *e)
{
	struct dsidx_crc_tab ct;
	uint32_t hlen;
	uint64_t total;

	if (len && memcmp(p, DSIDX_MAGIC, len < 8 ? len : 8))
		return fail(e, -EBADMSG, "not a shardfs index (bad magic)");
	if (len < H_HCRC)
		return fail(e, -EBADMSG, "truncated: %zu bytes", len);
	if (ld16(p + H_MAJOR) != DSIDX_VERSION_MAJOR)
		return fail(e, -EPROTONOSUPPORT,
			    "format version %u.%u not supported (major %u)",
			    ld16(p + H_MAJOR), ld16(p + H_MINOR),
			    DSIDX_VERSION_MAJOR);
	hlen = ld32(p + H_HLEN);
	if (hlen < DSIDX_HEADER_LEN)
		return fail(e, -EBADMSG, "header length %u below %u", hlen,
			    DSIDX_HEADER_LEN);
	if (hlen > len)
		return fail(e, -EBADMSG, "truncated: %zu bytes, header %u", len,
			    hlen);
	dsidx_crc_tab_init(&ct);
	if (dsidx_header_crc(&ct, p, hlen) != ld32(p + H_HCRC))
		return fail(e, -EBADMSG, "header checksum mismatch");
	total = ld64(p + H_TOTAL);
	if (total > SIZE_MAX)
		return fail(e, -E2BIG, "index of %llu bytes too large here",
			    (unsigned long long)total);
	if (total != len)
		return fail(e, -EBADMSG, "%s: %zu bytes, header says %llu",
			    len < total ? "truncated" : "trailing data", len,
			    (unsigned long long)total);
	if (dsidx_crc_run(&ct, 0, p + hlen, len - hlen) != ld32(p + H_BCRC))
		return fail(e, -EBADMSG, "body checksum mismatch");
	if (ld32(p + H_FLAGS) & DSIDX_REQUIRED_FLAGS & ~DSIDX_KNOWN_REQUIRED)
		return fail(e, -EPROTONOSUPPORT, "unknown required flags 0x%x",
			    ld32(p + H_FLAGS) & DSIDX_REQUIRED_FLAGS &
				~DSIDX_KNOWN_REQUIRED);
	if ((ld32(p + H_FLAGS) & DSIDX_FLAG_SPARSE) &&
	    hlen < DSIDX_HEADER_LEN_1_1)
		return fail(e, -EBADMSG,
			    "header length %u below %u with the sparse flag",
			    hlen, DSIDX_HEADER_LEN_1_1);
	return 0;
}

struct section {
	uint64_t off, len;
};

/* One table's descriptor at header offset AT; its bytes in *S. */
static int table(const uint8_t *p, size_t at, uint32_t minrl, const char *what,
		 struct section *s, uint32_t *count, uint32_t *rl,
		 struct errbuf *e)
{
	uint64_t hlen = ld32(p + H_HLEN), total = ld64(p + H_TOTAL);

	s->off = ld64(p + at);
	*count = ld32(p + at + 8);
	*rl = ld32(p + at + 12);
	if (*rl < minrl)
		return fail(e, -EBADMSG, "%s record length %u below %u", what,
			    *rl, minrl);
	s->len = (uint64_t)*count * *rl;
	if (s->off < hlen || s->off > total || s->len > total - s->off)
		return fail(e, -EBADMSG, "%s table outside the file", what);
	return 0;
}

/* The 1.1 tables, when the header has DSIDX_FLAG_SPARSE. */
static int sparse_sections(struct dsidx *x, const uint8_t *p, struct section *s,
			   struct errbuf *e)
{
	struct dsidx_info *in = &x->info;
	int rc;

	if (!(in->flags & DSIDX_FLAG_SPARSE))
		return 0;
	rc = table(p, H_SPARSE, DSIDX_SPARSE_REC_LEN, "sparse", &s[0],
		   &in->nsparse, &x->sparse_rl, e);
	if (!rc)
		rc = table(p, H_SEGMENTS, DSIDX_SEG_REC_LEN, "segment", &s[1],
			   &in->nsegments, &x->seg_rl, e);
	if (rc)
		return rc;
	x->sparse = p + s[0].off;
	x->segs = p + s[1].off;
	return 0;
}

static int check_sections(struct dsidx *x, const uint8_t *p, struct errbuf *e)
{
	struct section s[6] = {{0}};
	struct dsidx_info *in = &x->info;
	int rc;

	rc = table(p, H_SHARDS, DSIDX_SHARD_REC_LEN, "shard", &s[0],
		   &in->nshards, &x->shard_rl, e);
	if (!rc)
		rc = table(p, H_DIRS, DSIDX_DIR_REC_LEN, "directory", &s[1],
			   &in->ndirs, &x->dir_rl, e);
	if (!rc)
		rc = table(p, H_MEMBERS, DSIDX_MEMBER_REC_LEN, "member", &s[2],
			   &in->nmembers, &x->mem_rl, e);
	if (!rc)
		rc = sparse_sections(x, p, &s[4], e);
	if (rc)
		return rc;
	s[3].off = ld64(p + H_STR_OFF);
	s[3].len = x->str_len = ld64(p + H_STR_LEN);
	if (s[3].off < ld32(p + H_HLEN) || s[3].off > in->size ||
	    s[3].len > in->size - s[3].off)
		return fail(e, -EBADMSG, "string table outside the file");
	for (int i = 0; i < 6; i++)
		for (int j = i + 1; j < 6; j++)
			if (s[i].len && s[j].len &&
			    s[i].off < s[j].off + s[j].len &&
			    s[j].off < s[i].off + s[i].len)
				return fail(e, -EBADMSG, "sections overlap");
	if (in->ndirs == 0)
		return fail(e, -EBADMSG, "no root directory");
	x->shards = p + s[0].off;
	x->dirs = p + s[1].off;
	x->mems = p + s[2].off;
	x->str = p + s[3].off;
	return 0;
}

/*
 * The sparse records: members ascending, in range, and segment ranges in
 * order without gaps (prefix sums). Their contents are checked with the
 * members (check_sparse_member()).
 */
static int check_sparse(const struct dsidx *x, struct errbuf *e)
{
	uint64_t next = 0;

	for (uint32_t i = 0; i < x->info.nsparse; i++) {
		const uint8_t *r = sparse_rec(x, i);
		uint32_t m = ld32(r + XR_MEMBER);

		if (m >= x->info.nmembers)
			return fail(e, -EBADMSG,
				    "sparse %u: member %u out of range", i, m);
		if (i && m <= ld32(sparse_rec(x, i - 1) + XR_MEMBER))
			return fail(e, -EBADMSG,
				    "sparse %u: members unsorted or duplicated",
				    i);
		if (ld32(r + XR_FIRST_SEG) != next)
			return fail(e, -EBADMSG,
				    "sparse %u: segment range not contiguous",
				    i);
		next += ld32(r + XR_NSEGS);
		if (next > x->info.nsegments)
			return fail(e, -EBADMSG,
				    "sparse %u: segments out of range", i);
	}
	if (next != x->info.nsegments)
		return fail(e, -EBADMSG,
			    "sparse ranges do not cover every segment");
	return 0;
}

static int check_shards(struct dsidx *x, struct errbuf *e)
{
	const uint8_t *prev = NULL;
	uint32_t prev_len = 0;

	for (uint32_t i = 0; i < x->info.nshards; i++) {
		const uint8_t *r = shard_rec(x, i), *key;
		uint32_t kl = ld16(r + SR_KEY_LEN), el = ld16(r + SR_ETAG_LEN);

		if ((uint64_t)ld32(r + SR_KEY_OFF) + kl + el > x->str_len)
			return fail(e, -EBADMSG,
				    "shard %u: key outside the string table",
				    i);
		key = x->str + ld32(r + SR_KEY_OFF);
		if (!dsidx_key_ok(key, kl))
			return fail(e, -EBADMSG, "shard %u: invalid key", i);
		if (!dsidx_etag_ok(key + kl, el))
			return fail(e, -EBADMSG, "shard %u: invalid ETag", i);
		if (prev && dsidx_name_cmp(prev, prev_len, key, kl) >= 0)
			return fail(e, -EBADMSG,
				    "shard %u: keys unsorted or duplicated", i);
		prev = key, prev_len = kl;
		x->info.shard_bytes =
		    dsidx_sat_add(x->info.shard_bytes, ld64(r + SR_SIZE));
	}
	return 0;
}

/* Next expected first child directory and first member (prefix sums). */
struct cursor {
	uint32_t dirs, mems;
};

static int check_dir_ranges(const struct dsidx *x, uint32_t i, struct cursor *c,
			    struct errbuf *e)
{
	const uint8_t *r = dir_rec(x, i);
	uint32_t nd = ld32(r + DR_NDIRS), nm = ld32(r + DR_NMEMS);
	uint32_t mode = ld32(r + DR_MODE);

	if ((mode & S_IFMT) != S_IFDIR || (mode & ~(S_IFMT | DSIDX_PERM_BITS)))
		return fail(e, -EBADMSG, "directory %u: bad mode 0%o", i, mode);
	if (ld32(r + DR_NSEC) >= DSIDX_NSEC_PER_SEC)
		return fail(e, -EBADMSG, "directory %u: bad nanoseconds", i);
	if (ld32(r + DR_FIRST_DIR) != c->dirs || nd > x->info.ndirs - c->dirs)
		return fail(
		    e, -EBADMSG,
		    "directory %u: child directory range not contiguous", i);
	if (ld32(r + DR_FIRST_MEM) != c->mems ||
	    nm > x->info.nmembers - c->mems)
		return fail(e, -EBADMSG,
			    "directory %u: member range not contiguous", i);
	c->dirs += nd;
	c->mems += nm;
	return 0;
}

static int check_dir(const struct dsidx *x, uint32_t i, struct errbuf *e)
{
	const uint8_t *r = dir_rec(x, i), *pr, *name, *prev;
	uint32_t parent = ld32(r + DR_PARENT), len = ld32(r + DR_NAME_LEN);
	uint32_t first, prev_len;

	if (i == 0 && (parent || len || ld32(r + DR_NAME_OFF)))
		return fail(e, -EBADMSG,
			    "directory 0: root with a parent or "
			    "a name");
	if (i == 0)
		return 0;
	if (parent >= i)
		return fail(e, -EBADMSG, "directory %u: parent %u not below it",
			    i, parent);
	if ((uint64_t)ld32(r + DR_NAME_OFF) + len > x->str_len)
		return fail(e, -EBADMSG,
			    "directory %u: name outside the string table", i);
	name = x->str + ld32(r + DR_NAME_OFF);
	if (!dsidx_name_ok(name, len))
		return fail(e, -EBADMSG, "directory %u: invalid name", i);
	pr = dir_rec(x, parent);
	first = ld32(pr + DR_FIRST_DIR);
	if (i < first || i - first >= ld32(pr + DR_NDIRS))
		return fail(e, -EBADMSG,
			    "directory %u: outside its parent's range", i);
	if (i > first) {
		prev = dir_name(x, i - 1, &prev_len);
		if (dsidx_name_cmp(prev, prev_len, name, len) >= 0)
			return fail(e, -EBADMSG,
				    "directory %u: names unsorted or "
				    "duplicated",
				    i);
	}
	return 0;
}

static int check_dirs(const struct dsidx *x, struct errbuf *e)
{
	struct cursor c = {1, 0};
	int rc;

	for (uint32_t i = 0; i < x->info.ndirs; i++) {
		rc = check_dir_ranges(x, i, &c, e);
		if (!rc)
			rc = check_dir(x, i, e);
		if (rc)
			return rc;
	}
	if (c.dirs != x->info.ndirs || c.mems != x->info.nmembers)
		return fail(e, -EBADMSG,
			    "directory ranges do not cover every entry");
	return 0;
}

/* Type-specific fields of member I (record R, target LINK). */
/* The segments of sparse member I (record SP) in shard SHARD of SS bytes. */
static int check_sparse_member(const struct dsidx *x, uint32_t i,
			       const uint8_t *r, const uint8_t *sp, uint64_t ss,
			       struct errbuf *e)
{
	uint32_t bad;

	if (ld64(r + MR_OFFSET) > ss)
		return fail(e, -EBADMSG,
			    "member %u: data past the end of "
			    "shard %u",
			    i, ld32(r + MR_SHARD));
	if (!dsidx_segments_ok(x->segs +
				   (size_t)ld32(sp + XR_FIRST_SEG) * x->seg_rl,
			       ld32(sp + XR_NSEGS), x->seg_rl, true,
			       ld64(r + MR_SIZE), ss, &bad))
		return fail(e, -EBADMSG, "member %u: bad sparse segment %u", i,
			    ld32(sp + XR_FIRST_SEG) + bad);
	return 0;
}

/* Type-specific fields of member I (record R, target LINK; SP its sparse
 * record or NULL). */
static int check_member_data(struct dsidx *x, uint32_t i, const uint8_t *r,
			     const uint8_t *link, const uint8_t *sp,
			     struct errbuf *e)
{
	uint32_t mode = ld32(r + MR_MODE), shard = ld32(r + MR_SHARD);
	uint32_t ll = ld16(r + MR_LINK_LEN);
	uint64_t off = ld64(r + MR_OFFSET), size = ld64(r + MR_SIZE), ss;

	if ((mode & ~(S_IFMT | DSIDX_PERM_BITS)) ||
	    ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFLNK))
		return fail(e, -EBADMSG, "member %u: bad mode 0%o", i, mode);
	if (ld32(r + MR_NSEC) >= DSIDX_NSEC_PER_SEC)
		return fail(e, -EBADMSG, "member %u: bad nanoseconds", i);
	if ((mode & S_IFMT) == S_IFLNK) {
		if (shard != DSIDX_NONE || off || size)
			return fail(e, -EBADMSG, "member %u: symlink with data",
				    i);
		if (ll == 0 || ll > DSIDX_MAX_LINK || memchr(link, 0, ll))
			return fail(e, -EBADMSG,
				    "member %u: bad symlink target", i);
		if (sp)
			return fail(e, -EBADMSG, "member %u: sparse symlink",
				    i);
		return 0;
	}
	if (ll)
		return fail(e, -EBADMSG,
			    "member %u: regular file with a link target", i);
	if (shard >= x->info.nshards)
		return fail(e, -EBADMSG, "member %u: shard %u out of range", i,
			    shard);
	ss = ld64(shard_rec(x, shard) + SR_SIZE);
	if (sp) {
		x->info.member_bytes =
		    dsidx_sat_add(x->info.member_bytes, size);
		return check_sparse_member(x, i, r, sp, ss, e);
	}
	if (off > ss || size > ss - off)
		return fail(e, -EBADMSG,
			    "member %u: data past the end of shard %u", i,
			    shard);
	x->info.member_bytes = dsidx_sat_add(x->info.member_bytes, size);
	return 0;
}

/* Member I; *SPI is the first sparse record not yet matched. */
static int check_member(struct dsidx *x, uint32_t i, uint32_t *spi,
			struct errbuf *e)
{
	const uint8_t *r = mem_rec(x, i), *dr, *name, *prev, *sp = NULL;
	uint32_t dir = ld32(r + MR_DIR), len = ld16(r + MR_NAME_LEN);
	uint32_t first, prev_len;

	if (dir >= x->info.ndirs)
		return fail(e, -EBADMSG, "member %u: directory %u out of range",
			    i, dir);
	dr = dir_rec(x, dir);
	first = ld32(dr + DR_FIRST_MEM);
	if (i < first || i - first >= ld32(dr + DR_NMEMS))
		return fail(e, -EBADMSG,
			    "member %u: outside directory %u's range", i, dir);
	if ((uint64_t)ld32(r + MR_NAME_OFF) + len + ld16(r + MR_LINK_LEN) >
	    x->str_len)
		return fail(e, -EBADMSG,
			    "member %u: name outside the string table", i);
	name = x->str + ld32(r + MR_NAME_OFF);
	if (!dsidx_name_ok(name, len))
		return fail(e, -EBADMSG, "member %u: invalid name", i);
	if (i > first) {
		prev = mem_name(x, i - 1, &prev_len);
		if (dsidx_name_cmp(prev, prev_len, name, len) >= 0)
			return fail(e, -EBADMSG,
				    "member %u: names unsorted or duplicated",
				    i);
	}
	if (*spi < x->info.nsparse &&
	    ld32(sparse_rec(x, *spi) + XR_MEMBER) == i)
		sp = sparse_rec(x, (*spi)++);
	return check_member_data(x, i, r, name + len, sp, e);
}

/* A directory's subdirectories and members never share a name. */
static int check_collisions(const struct dsidx *x, uint32_t d, struct errbuf *e)
{
	const uint8_t *r = dir_rec(x, d), *a, *b;
	uint32_t i = ld32(r + DR_FIRST_DIR), iend = i + ld32(r + DR_NDIRS);
	uint32_t j = ld32(r + DR_FIRST_MEM), jend = j + ld32(r + DR_NMEMS);
	uint32_t al, bl;
	int c;

	while (i < iend && j < jend) {
		a = dir_name(x, i, &al);
		b = mem_name(x, j, &bl);
		c = dsidx_name_cmp(a, al, b, bl);
		if (c == 0)
			return fail(e, -EBADMSG,
				    "directory %u and member %u share a name",
				    i, j);
		if (c < 0)
			i++;
		else
			j++;
	}
	return 0;
}

int dsidx_open(const void *data, size_t len, struct dsidx **out, char *err,
	       size_t errlen)
{
	struct errbuf e = {err, errlen};
	const uint8_t *p = data;
	struct dsidx *x;
	uint32_t spi = 0;
	int rc = check_preamble(p, len, &e);

	if (rc)
		return rc;
	x = calloc(1, sizeof(*x));
	if (!x)
		return fail(&e, -ENOMEM, "out of memory");
	x->info.major = ld16(p + H_MAJOR);
	x->info.minor = ld16(p + H_MINOR);
	x->info.flags = ld32(p + H_FLAGS);
	x->info.created = (int64_t)ld64(p + H_CREATED);
	x->info.size = len;
	rc = check_sections(x, p, &e);
	if (!rc)
		rc = check_shards(x, &e);
	if (!rc)
		rc = check_dirs(x, &e);
	if (!rc)
		rc = check_sparse(x, &e);
	for (uint32_t i = 0; !rc && i < x->info.nmembers; i++)
		rc = check_member(x, i, &spi, &e);
	for (uint32_t d = 0; !rc && d < x->info.ndirs; d++)
		rc = check_collisions(x, d, &e);
	if (rc) {
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void dsidx_free(struct dsidx *x)
{
	free(x);
}

const struct dsidx_info *dsidx_info(const struct dsidx *x)
{
	return &x->info;
}

int dsidx_shard(const struct dsidx *x, uint32_t i, struct dsidx_shard_view *v)
{
	const uint8_t *r;

	if (i >= x->info.nshards)
		return -ENOENT;
	r = shard_rec(x, i);
	v->key = (const char *)x->str + ld32(r + SR_KEY_OFF);
	v->key_len = ld16(r + SR_KEY_LEN);
	v->etag = v->key + v->key_len;
	v->etag_len = ld16(r + SR_ETAG_LEN);
	v->size = ld64(r + SR_SIZE);
	return 0;
}

int dsidx_dir(const struct dsidx *x, uint32_t i, struct dsidx_dir_view *v)
{
	const uint8_t *r;

	if (i >= x->info.ndirs)
		return -ENOENT;
	r = dir_rec(x, i);
	v->parent = ld32(r + DR_PARENT);
	v->name = (const char *)dir_name(x, i, &v->name_len);
	v->mode = ld32(r + DR_MODE);
	v->flags = ld32(r + DR_FLAGS);
	v->mtime = (int64_t)ld64(r + DR_MTIME);
	v->mtime_nsec = ld32(r + DR_NSEC);
	v->first_dir = ld32(r + DR_FIRST_DIR);
	v->ndirs = ld32(r + DR_NDIRS);
	v->first_member = ld32(r + DR_FIRST_MEM);
	v->nmembers = ld32(r + DR_NMEMS);
	return 0;
}

/* The sparse record of member I, or NULL. */
static const uint8_t *sparse_find(const struct dsidx *x, uint32_t i)
{
	uint32_t lo = 0, hi = x->info.nsparse;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, m;

		m = ld32(sparse_rec(x, mid) + XR_MEMBER);
		if (m == i)
			return sparse_rec(x, mid);
		if (m < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int dsidx_member(const struct dsidx *x, uint32_t i, struct dsidx_member_view *v)
{
	const uint8_t *r;

	if (i >= x->info.nmembers)
		return -ENOENT;
	r = mem_rec(x, i);
	v->dir = ld32(r + MR_DIR);
	v->name = (const char *)mem_name(x, i, &v->name_len);
	v->mode = ld32(r + MR_MODE);
	v->shard = ld32(r + MR_SHARD);
	v->offset = ld64(r + MR_OFFSET);
	v->size = ld64(r + MR_SIZE);
	v->mtime = (int64_t)ld64(r + MR_MTIME);
	v->mtime_nsec = ld32(r + MR_NSEC);
	v->link = v->name + v->name_len;
	v->link_len = ld16(r + MR_LINK_LEN);
	v->sparse = x->info.nsparse && sparse_find(x, i);
	return 0;
}

int dsidx_member_segments(const struct dsidx *x, uint32_t i, uint32_t *first,
			  uint32_t *n)
{
	const uint8_t *sp = i < x->info.nmembers ? sparse_find(x, i) : NULL;

	if (!sp)
		return -ENOENT;
	*first = ld32(sp + XR_FIRST_SEG);
	*n = ld32(sp + XR_NSEGS);
	return 0;
}

int dsidx_segment(const struct dsidx *x, uint32_t seg,
		  struct dsidx_segment *out)
{
	if (seg >= x->info.nsegments)
		return -ENOENT;
	seg_load(x->segs, seg, x->seg_rl, true, out);
	return 0;
}

int dsidx_segment_find(const struct dsidx *x, uint32_t i, uint64_t off,
		       uint32_t *seg)
{
	uint32_t first, n, lo, hi;
	struct dsidx_segment s;

	if (dsidx_member_segments(x, i, &first, &n))
		return -ENOENT;
	/* Segments are ascending and disjoint, so are their ends: find the
	 * first end past OFF. */
	lo = first, hi = first + n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		seg_load(x->segs, mid, x->seg_rl, true, &s);
		if (s.offset + s.length <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first + n)
		return -ENOENT;
	*seg = lo;
	return 0;
}

enum table_kind { T_SHARD, T_DIR, T_MEMBER };

static const uint8_t *name_of(const struct dsidx *x, enum table_kind t,
			      uint32_t i, uint32_t *len)
{
	const uint8_t *r;

	switch (t) {
	case T_DIR:
		return dir_name(x, i, len);
	case T_MEMBER:
		return mem_name(x, i, len);
	default:
		r = shard_rec(x, i);
		*len = ld16(r + SR_KEY_LEN);
		return x->str + ld32(r + SR_KEY_OFF);
	}
}

/* Binary search of NAME among entries [LO, LO + N) of table T. */
static int search(const struct dsidx *x, enum table_kind t, uint32_t lo,
		  uint32_t n, const char *name, size_t len, uint32_t *idx)
{
	uint32_t hi = lo + n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, ml;
		const uint8_t *mn = name_of(x, t, mid, &ml);
		int c = dsidx_name_cmp(mn, ml, name, len);

		if (c == 0) {
			*idx = mid;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int dsidx_find_shard(const struct dsidx *x, const char *key, size_t len,
		     uint32_t *idx)
{
	return search(x, T_SHARD, 0, x->info.nshards, key, len, idx);
}

int dsidx_lookup_dir(const struct dsidx *x, uint32_t dir, const char *name,
		     size_t len, uint32_t *idx)
{
	const uint8_t *r;

	if (dir >= x->info.ndirs)
		return -ENOENT;
	r = dir_rec(x, dir);
	return search(x, T_DIR, ld32(r + DR_FIRST_DIR), ld32(r + DR_NDIRS),
		      name, len, idx);
}

int dsidx_lookup_member(const struct dsidx *x, uint32_t dir, const char *name,
			size_t len, uint32_t *idx)
{
	const uint8_t *r;

	if (dir >= x->info.ndirs)
		return -ENOENT;
	r = dir_rec(x, dir);
	return search(x, T_MEMBER, ld32(r + DR_FIRST_MEM), ld32(r + DR_NMEMS),
		      name, len, idx);
}

int dsidx_lookup(const struct dsidx *x, uint32_t dir, const char *name,
		 size_t len, struct dsidx_ref *ref)
{
	if (dsidx_lookup_dir(x, dir, name, len, &ref->idx) == 0) {
		ref->kind = DSIDX_KIND_DIR;
		return 0;
	}
	ref->kind = DSIDX_KIND_MEMBER;
	return dsidx_lookup_member(x, dir, name, len, &ref->idx);
}

int dsidx_lookup_path(const struct dsidx *x, const char *path, size_t len,
		      struct dsidx_ref *ref)
{
	struct dsidx_ref cur = {DSIDX_KIND_DIR, 0};
	size_t i = 0;

	while (i < len) {
		const char *s = path + i, *e = memchr(s, '/', len - i);
		size_t n = e ? (size_t)(e - s) : len - i;

		i += n + 1;
		if (n == 0)
			continue;
		if (cur.kind != DSIDX_KIND_DIR ||
		    dsidx_lookup(x, cur.idx, s, n, &cur))
			return -ENOENT;
	}
	*ref = cur;
	return 0;
}

int dsidx_child(const struct dsidx *x, uint32_t dir, uint64_t pos,
		struct dsidx_ref *ref)
{
	const uint8_t *r;
	uint32_t nd;

	if (dir >= x->info.ndirs)
		return -ENOENT;
	r = dir_rec(x, dir);
	nd = ld32(r + DR_NDIRS);
	if (pos < nd) {
		ref->kind = DSIDX_KIND_DIR;
		ref->idx = ld32(r + DR_FIRST_DIR) + (uint32_t)pos;
		return 0;
	}
	if (pos - nd >= ld32(r + DR_NMEMS))
		return -ENOENT;
	ref->kind = DSIDX_KIND_MEMBER;
	ref->idx = ld32(r + DR_FIRST_MEM) + (uint32_t)(pos - nd);
	return 0;
}
