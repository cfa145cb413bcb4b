// SPDX-License-Identifier: MIT
/*
 * Tar header scanner. A small state machine over 512-byte blocks: the
 * state says what the block at s->next is (a header, the block after a
 * zero block, an old GNU sparse extension block, a block of a pax 1.0
 * sparse map), and each step either consumes blocks and goes on, or stops
 * with an entry, a request for bytes, the end or an error. Extension
 * headers (pax, GNU long names) are parsed in place from the caller's
 * window, so they are asked for whole (header + data, bounded by
 * ext_max); everything else moves one block at a time, so the state never
 * holds more than the limits allow whatever the input.
 *
 * Invariants: s->next only grows and never passes tar_size + 511; every
 * step that returns SCAN_GO consumed at least one block, so a call ends
 * after at most (window bytes / 512) + 1 steps. Errors are sticky.
 *
 * Pure: no I/O, no threads, no globals. Writing is in tarwrite.c.
 */
#include "tarhdr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK TARHDR_BLOCK

/* ustar header fields: offset, length */
#define H_NAME	   0
#define H_MODE	   100
#define H_UID	   108
#define H_GID	   116
#define H_SIZE	   124
#define H_MTIME	   136
#define H_CHKSUM   148
#define H_TYPE	   156
#define H_LINK	   157
#define H_MAGIC	   257
#define H_PREFIX   345
#define H_STARMAG  508
#define H_GNU_SP   386 /* old GNU: 4 sparse entries */
#define H_GNU_EXT  482 /* old GNU: isextended */
#define H_GNU_REAL 483 /* old GNU: realsize */
#define SP_ENTRY   24  /* offset[12] numbytes[12] */
#define SPX_COUNT  21  /* entries in an extension block */
#define SPX_EXT	   504 /* isextended in an extension block */

/* step results besides TARHDR_* and negative errnos: keep going */
#define SCAN_GO 100

enum { ST_HDR, ST_ZERO2, ST_SPARSE_EXT, ST_SPARSE_MAP, ST_END };

enum { SP_NONE, SP_OLD, SP_PAX0, SP_PAX1, SP_UNSUPPORTED };

/* pax keys (struct tarhdr_pax has/del bits) */
enum {
	PX_PATH = 1u << 0,
	PX_LINK = 1u << 1,
	PX_SIZE = 1u << 2,
	PX_MTIME = 1u << 3,
	PX_UID = 1u << 4,
	PX_GID = 1u << 5,
	PX_SP_REAL = 1u << 6,
	PX_SP_MAJOR = 1u << 7,
	PX_SP_MINOR = 1u << 8,
	PX_SP_MAP = 1u << 9, /* 0.0 / 0.1 map records seen */
	PX_SP_OFF = 1u << 10 /* a 0.0 offset waits for its numbytes */
};

/* The caller's window and where to put a request. */
struct win {
	const unsigned char *p;
	size_t len;
	uint64_t off;
	uint64_t *need_off, *need_len;
};

__attribute__((format(printf, 3, 4))) static void
scan_failf(struct tarhdr_scan *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
	va_end(ap);
	s->err = err;
	s->err_msg = s->msg;
}

/* Records the error (sticky) and evaluates to ERR. */
#define scan_fail(s, err, ...) (scan_failf((s), (err), __VA_ARGS__), (err))

static uint64_t round_block(uint64_t n)
{
	return (n + BLOCK - 1) / BLOCK * BLOCK;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static struct tarhdr_sparse *sparse_segs(const struct tarhdr_scan *s, size_t *n)
{
	*n = s->sparse.len / sizeof(struct tarhdr_sparse);
	return (struct tarhdr_sparse *)(void *)s->sparse.data;
}

/* ---- numbers ---- */

/* Octal: leading spaces, digits, then the end, a NUL or a space. */
static int num_octal(const unsigned char *f, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (uint64_t)INT64_MAX >> 3)
			return -EBADMSG;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != '\0' && f[i] != ' ')
		return -EBADMSG;
	*out = (int64_t)v;
	return 0;
}

/* Base-256: bit 7 of the first byte marks it, bit 6 is the sign. */
static int num_b256(const unsigned char *f, size_t n, int64_t *out)
{
	int64_t v = f[0] & 0x3f;

	if (f[0] & 0x40)
		v -= 0x40;
	for (size_t i = 1; i < n; i++) {
		if (v > INT64_MAX / 256 || v < INT64_MIN / 256)
			return -EBADMSG;
		v = v * 256 + f[i];
	}
	*out = v;
	return 0;
}

static int num_field(const unsigned char *f, size_t n, int64_t *out)
{
	return (f[0] & 0x80) ? num_b256(f, n, out) : num_octal(f, n, out);
}

/* A header field that must parse (and be >= 0 unless SIGNED): 0 or
 * -EBADMSG. */
static int hdr_num(struct tarhdr_scan *s, const unsigned char *h, size_t off,
		   size_t len, bool is_signed, int64_t *out)
{
	static const struct {
		size_t off;
		const char *name;
	} names[] = {{H_MODE, "mode"},	 {H_UID, "uid"},
		     {H_GID, "gid"},	 {H_SIZE, "size"},
		     {H_MTIME, "mtime"}, {H_GNU_REAL, "sparse real size"}};
	const char *what = "numeric";

	if (num_field(h + off, len, out) == 0 && (is_signed || *out >= 0))
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].off == off)
			what = names[i].name;
	return scan_fail(s, -EBADMSG,
			 "bad %s field in the header at offset %" PRIu64, what,
			 s->next);
}

/* Decimal digits only, at most INT64_MAX. */
static int dec_num(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (n == 0)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EBADMSG;
		if (x > ((uint64_t)INT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return -EBADMSG;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* "[-]SECONDS[.FRACTION]": nanoseconds kept, floor semantics for < 0. */
static int pax_time(const char *v, size_t n, int64_t *sec, uint32_t *nsec)
{
	size_t i = 0, d;
	uint64_t whole;
	uint32_t ns = 0, digits = 0;
	bool neg = n > 0 && v[0] == '-';

	i = neg;
	for (d = i; d < n && v[d] != '.'; d++)
		;
	if (dec_num(v + i, d - i, &whole) || whole == (uint64_t)INT64_MAX)
		return -EBADMSG;
	for (i = d + 1; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EBADMSG;
		if (digits < 9) {
			ns = ns * 10 + (uint32_t)(v[i] - '0');
			digits++;
		}
	}
	for (; digits < 9; digits++)
		ns *= 10;
	if (neg && ns) {
		whole++;
		ns = 1000000000u - ns;
	}
	*sec = neg ? -(int64_t)whole : (int64_t)whole;
	*nsec = ns;
	return 0;
}

/* ---- paths ---- */

int tarhdr_normalize(const char *raw, size_t len, struct buf *out, bool *unsafe)
{
	size_t n = strnlen(raw, len), i = 0, start = out->len;

	if (n > 0 && raw[0] == '/')
		*unsafe = true;
	while (i < n) {
		size_t j = i, cl;
		int rc;

		while (j < n && raw[j] != '/')
			j++;
		cl = j - i;
		if (cl == 2 && raw[i] == '.' && raw[i + 1] == '.')
			*unsafe = true;
		if (cl > 1 || (cl == 1 && raw[i] != '.')) {
			rc = out->len > start ? buf_append(out, "/", 1) : 0;
			if (!rc)
				rc = buf_append(out, raw + i, cl);
			if (rc)
				return rc;
		}
		i = j + 1;
	}
	return 0;
}

/* The name of a ustar, GNU or v7 header into NAME (>= 257 bytes). */
static size_t header_name(const unsigned char *h, char *name)
{
	size_t n = 0, pl, nl;

	if (memcmp(h + H_MAGIC, "ustar\0", 6) == 0) {
		pl = memcmp(h + H_STARMAG, "tar\0", 4) == 0 ? 131 : 155;
		pl = strnlen((const char *)h + H_PREFIX, pl);
		if (pl) {
			memcpy(name, h + H_PREFIX, pl);
			name[pl] = '/';
			n = pl + 1;
		}
	}
	nl = strnlen((const char *)h + H_NAME, 100);
	memcpy(name + n, h + H_NAME, nl);
	return n + nl;
}

/* ---- sparse maps ---- */

/* Appends a segment (empty ones are dropped). 0 or -EBADMSG, -ENOMEM. */
static int sparse_add(struct tarhdr_scan *s, uint64_t off, uint64_t len)
{
	struct tarhdr_sparse seg = {off, len, 0}, *segs;
	size_t n;

	if (len == 0 || s->sparse_over)
		return 0;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EBADMSG;
	segs = sparse_segs(s, &n);
	if (n && off < segs[n - 1].offset + segs[n - 1].length)
		return -EBADMSG;
	if (n >= s->lim.sparse_max) {
		s->sparse_over = true;
		return 0;
	}
	return buf_append(&s->sparse, &seg, sizeof(seg));
}

/* "off,len,off,len,..." (pax sparse 0.1). */
static int sparse_map01(struct tarhdr_scan *s, const char *v, size_t n)
{
	uint64_t num[2];
	size_t i = 0, k = 0;

	while (i < n) {
		size_t j = i;
		int rc;

		while (j < n && v[j] != ',')
			j++;
		rc = dec_num(v + i, j - i, &num[k]);
		if (!rc && k == 1)
			rc = sparse_add(s, num[0], num[1]);
		if (rc)
			return rc;
		k ^= 1;
		i = j + 1;
		if (j < n && i == n)
			return -EBADMSG; /* trailing comma */
	}
	return k ? -EBADMSG : 0;
}

/* Old GNU entries (N of them at P) until an empty one. */
static int sparse_old(struct tarhdr_scan *s, const unsigned char *p, int n)
{
	for (int i = 0; i < n && !s->sparse_done; i++) {
		const unsigned char *e = p + i * SP_ENTRY;
		int64_t off, len;
		int rc;

		if (e[12] == '\0') {
			s->sparse_done = true;
			break;
		}
		if (num_field(e, 12, &off) || num_field(e + 12, 12, &len) ||
		    off < 0 || len < 0)
			rc = -EBADMSG;
		else
			rc = sparse_add(s, (uint64_t)off, (uint64_t)len);
		if (rc)
			return scan_fail(
			    s, rc,
			    "bad sparse map in the block at offset %" PRIu64,
			    s->next);
	}
	return 0;
}

/* Checks the map against the data and places it in the archive. */
static int sparse_finish(struct tarhdr_scan *s, struct tarhdr_entry *e)
{
	size_t n;
	struct tarhdr_sparse *segs = sparse_segs(s, &n);
	uint64_t total = 0;

	e->size = s->sp_real;
	if (s->sparse_over) {
		e->type = TARHDR_OTHER;
		e->note = "sparse file with more segments than the limit";
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (segs[i].offset + segs[i].length > s->sp_real ||
		    segs[i].length > e->stored_size - total)
			return scan_fail(
			    s, -EBADMSG,
			    "sparse map of the member at offset %" PRIu64
			    " does not fit its data",
			    e->header_offset);
		segs[i].archive_offset = e->data_offset + total;
		total += segs[i].length;
	}
	e->is_sparse = true;
	e->sparse = n ? segs : NULL;
	e->nsparse = n;
	return 0;
}

/* ---- pax records ---- */

static bool key_is(const char *k, size_t kl, const char *want)
{
	return kl == strlen(want) && memcmp(k, want, kl) == 0;
}

static int pax_str(struct tarhdr_pax *px, unsigned bit, struct buf *b,
		   const char *v, size_t vl)
{
	int rc;

	buf_reset(b);
	px->has &= ~bit;
	px->del &= ~bit;
	if (vl == 0) {
		px->del |= bit;
		return 0;
	}
	rc = buf_append(b, v, vl);
	if (!rc)
		px->has |= bit;
	return rc;
}

static int pax_num(struct tarhdr_pax *px, unsigned bit, uint64_t *dst,
		   const char *v, size_t vl)
{
	px->has &= ~bit;
	px->del &= ~bit;
	if (vl == 0) {
		px->del |= bit;
		return 0;
	}
	if (dec_num(v, vl, dst))
		return -EBADMSG;
	px->has |= bit;
	return 0;
}

/* GNU.sparse.* keys (member headers only); K is the part after "GNU.". */
static int pax_sparse(struct tarhdr_scan *s, struct tarhdr_pax *px,
		      const char *k, size_t kl, const char *v, size_t vl)
{
	uint64_t x;
	int rc;

	if (key_is(k, kl, "sparse.major"))
		return pax_num(px, PX_SP_MAJOR, &px->sp_major, v, vl);
	if (key_is(k, kl, "sparse.minor"))
		return pax_num(px, PX_SP_MINOR, &px->sp_minor, v, vl);
	if (key_is(k, kl, "sparse.realsize") || key_is(k, kl, "sparse.size"))
		return pax_num(px, PX_SP_REAL, &px->sp_realsize, v, vl);
	if (key_is(k, kl, "sparse.offset")) {
		if (dec_num(v, vl, &px->sp_offset))
			return -EBADMSG;
		px->has |= PX_SP_OFF;
		return 0;
	}
	if (key_is(k, kl, "sparse.numbytes")) {
		if (!(px->has & PX_SP_OFF) || dec_num(v, vl, &x))
			return -EBADMSG;
		px->has = (px->has & ~PX_SP_OFF) | PX_SP_MAP;
		return sparse_add(s, px->sp_offset, x);
	}
	if (key_is(k, kl, "sparse.map")) {
		rc = sparse_map01(s, v, vl);
		px->has |= PX_SP_MAP;
		return rc;
	}
	return 0;
}

static int pax_apply(struct tarhdr_scan *s, struct tarhdr_pax *px, bool global,
		     const char *k, size_t kl, const char *v, size_t vl)
{
	const char *nul = memchr(v, '\0', vl);

	if (nul)
		vl = (size_t)(nul - v);
	if (key_is(k, kl, "path") ||
	    (!global && key_is(k, kl, "GNU.sparse.name")))
		return pax_str(px, PX_PATH, &px->path, v, vl);
	if (key_is(k, kl, "linkpath"))
		return pax_str(px, PX_LINK, &px->link, v, vl);
	if (key_is(k, kl, "size"))
		return pax_num(px, PX_SIZE, &px->size, v, vl);
	if (key_is(k, kl, "uid"))
		return pax_num(px, PX_UID, &px->uid, v, vl);
	if (key_is(k, kl, "gid"))
		return pax_num(px, PX_GID, &px->gid, v, vl);
	if (key_is(k, kl, "mtime")) {
		px->has &= ~PX_MTIME;
		px->del &= ~PX_MTIME;
		if (vl == 0) {
			px->del |= PX_MTIME;
			return 0;
		}
		if (pax_time(v, vl, &px->mtime, &px->mtime_nsec))
			return -EBADMSG;
		px->has |= PX_MTIME;
		return 0;
	}
	if (global || kl < 4 || memcmp(k, "GNU.", 4) != 0)
		return 0;
	return pax_sparse(s, px, k + 4, kl - 4, v, vl);
}

/* One pax record, split. */
struct pax_rec {
	size_t len; /* of the whole record */
	const char *key, *val;
	size_t klen, vlen;
};

/* Splits the record at D[0..N): NULL, or what is wrong with it. */
static const char *pax_record(const unsigned char *d, size_t n,
			      struct pax_rec *r)
{
	const char *rec = (const char *)d, *eq;
	size_t i = 0, len = 0;

	while (i < n && i < 19 && d[i] >= '0' && d[i] <= '9')
		len = len * 10 + (size_t)(d[i++] - '0');
	if (i == 0 || i >= n || d[i] != ' ' || len < i + 4)
		return "bad record length";
	if (len > n)
		return "record runs past the header data";
	if (d[len - 1] != '\n')
		return "record does not end with a newline";
	r->key = rec + i + 1;
	eq = memchr(r->key, '=', len - i - 2);
	if (!eq || eq == r->key)
		return "record has no key=value";
	r->len = len;
	r->klen = (size_t)(eq - r->key);
	r->val = eq + 1;
	r->vlen = (size_t)(rec + len - 1 - r->val);
	return NULL;
}

/* How much of a key to put in a message: printable ASCII, at most MAX. */
static int printable_len(const char *k, size_t n, size_t max)
{
	size_t i = 0;

	while (i < n && i < max && k[i] >= 0x20 && k[i] < 0x7f)
		i++;
	return (int)i;
}

static int pax_parse(struct tarhdr_scan *s, struct tarhdr_pax *px, bool global,
		     const unsigned char *d, size_t n)
{
	uint64_t at = s->next + BLOCK;
	size_t pos = 0;

	while (pos < n && !all_zero(d + pos, n - pos)) {
		struct pax_rec r;
		const char *why = pax_record(d + pos, n - pos, &r);
		int rc;

		if (why)
			return scan_fail(
			    s, -EBADMSG,
			    "bad pax header: %s at offset %" PRIu64, why,
			    at + pos);
		rc = pax_apply(s, px, global, r.key, r.klen, r.val, r.vlen);
		if (rc)
			return scan_fail(s, rc,
					 "bad pax header: malformed '%.*s' "
					 "value at offset %" PRIu64,
					 printable_len(r.key, r.klen, 40),
					 r.key, at + pos);
		pos += r.len;
	}
	return 0;
}

static void pax_init(struct tarhdr_pax *px, size_t cap)
{
	memset(px, 0, sizeof(*px));
	buf_init(&px->path, cap);
	buf_init(&px->link, cap);
}

static void pax_reset(struct tarhdr_pax *px)
{
	px->has = 0;
	px->del = 0;
	buf_reset(&px->path);
	buf_reset(&px->link);
}

/* Which pax header gives field BIT: 'x', else 'g' unless 'x' deleted it. */
static const struct tarhdr_pax *pax_pick(const struct tarhdr_scan *s,
					 unsigned bit)
{
	if (s->pend.has & bit)
		return &s->pend;
	if (!(s->pend.del & bit) && (s->glob.has & bit))
		return &s->glob;
	return NULL;
}

/* ---- windows ---- */

/* Points *P at shard bytes [OFF, OFF + LEN): 0, TARHDR_NEED, damage. */
static int span(struct tarhdr_scan *s, const struct win *w, uint64_t off,
		uint64_t len, const unsigned char **p, const char *what)
{
	if (len > s->tar_size || off > s->tar_size - len)
		return scan_fail(s, -EBADMSG,
				 "truncated: %s at offset %" PRIu64
				 " runs past the end of the shard (%" PRIu64
				 " bytes)",
				 what, off, s->tar_size);
	if (w->p && off >= w->off && off - w->off <= w->len &&
	    len <= w->len - (off - w->off)) {
		*p = w->p + (off - w->off);
		return 0;
	}
	*w->need_off = off;
	*w->need_len = len;
	return TARHDR_NEED;
}

/* ---- members ---- */

static enum tarhdr_type member_type(char tf, const char **note)
{
	static const struct {
		char tf;
		enum tarhdr_type type;
		const char *note;
	} types[] = {
	    {'0', TARHDR_REG, NULL},
	    {'\0', TARHDR_REG, NULL},
	    {'7', TARHDR_REG, NULL}, /* contiguous file */
	    {'S', TARHDR_REG, NULL}, /* old GNU sparse */
	    {'1', TARHDR_HARDLINK, NULL},
	    {'2', TARHDR_SYMLINK, NULL},
	    {'5', TARHDR_DIR, NULL},
	    {'D', TARHDR_DIR, NULL}, /* GNU dumpdir */
	    {'3', TARHDR_OTHER, "character device"},
	    {'4', TARHDR_OTHER, "block device"},
	    {'6', TARHDR_OTHER, "fifo"},
	    {'V', TARHDR_OTHER, "GNU volume label"},
	    {'M', TARHDR_OTHER, "GNU multi-volume continuation"},
	    {'N', TARHDR_OTHER, "old GNU long-name header"},
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (types[i].tf == tf) {
			*note = types[i].note;
			return types[i].type;
		}
	}
	*note = "unknown type, read as a regular file (as tar does)";
	return TARHDR_REG;
}

/* POSIX: no data records for links, devices, directories and fifos. */
static bool has_data(char tf)
{
	return !(tf >= '1' && tf <= '6');
}

static int member_nums(struct tarhdr_scan *s, const unsigned char *h,
		       struct tarhdr_entry *e, uint64_t *stored)
{
	const struct tarhdr_pax *p;
	int64_t v;

	if (hdr_num(s, h, H_MODE, 8, false, &v))
		return -EBADMSG;
	e->mode = (uint32_t)(v & 07777);
	if ((p = pax_pick(s, PX_UID)))
		e->uid = p->uid;
	else if (hdr_num(s, h, H_UID, 8, false, &v))
		return -EBADMSG;
	else
		e->uid = (uint64_t)v;
	if ((p = pax_pick(s, PX_GID)))
		e->gid = p->gid;
	else if (hdr_num(s, h, H_GID, 8, false, &v))
		return -EBADMSG;
	else
		e->gid = (uint64_t)v;
	if ((p = pax_pick(s, PX_MTIME))) {
		e->mtime = p->mtime;
		e->mtime_nsec = p->mtime_nsec;
	} else if (hdr_num(s, h, H_MTIME, 12, true, &e->mtime)) {
		return -EBADMSG;
	}
	if ((p = pax_pick(s, PX_SIZE)))
		*stored = p->size;
	else if (hdr_num(s, h, H_SIZE, 12, false, &v))
		return -EBADMSG;
	else
		*stored = (uint64_t)v;
	return 0;
}

/* Raw name or link: 'x' / 'g' value, else GNU long name, else header. */
static void member_raw(const struct tarhdr_scan *s, unsigned bit,
		       const struct buf *gnu, bool has_gnu, const char *hdr,
		       size_t hdrlen, const char **raw, size_t *len)
{
	const struct tarhdr_pax *p = pax_pick(s, bit);

	if (p) {
		gnu = bit == PX_PATH ? &p->path : &p->link;
		has_gnu = true;
	}
	if (has_gnu) {
		*raw = buf_str(gnu);
		*len = gnu->len;
	} else {
		*raw = hdr;
		*len = strnlen(hdr, hdrlen);
	}
}

static int member_path(struct tarhdr_scan *s, const unsigned char *h,
		       struct tarhdr_entry *e)
{
	char name[BLOCK];
	const char *raw;
	size_t len = header_name(h, name);
	int rc;

	member_raw(s, PX_PATH, &s->longname, s->has_longname, name, len, &raw,
		   &len);
	buf_reset(&s->path);
	rc = tarhdr_normalize(raw, len, &s->path, &e->unsafe);
	if (!rc)
		rc = buf_append(&s->path, "", 0); /* "" has memory */
	if (rc == -E2BIG)
		return scan_fail(s, rc,
				 "name of the member at offset %" PRIu64
				 " is longer than %zu bytes",
				 e->header_offset, s->lim.path_max);
	if (rc)
		return scan_fail(s, rc, "out of memory");
	if (len && raw[len - 1] == '/' &&
	    (e->typeflag == '0' || e->typeflag == '\0' || e->typeflag == '7'))
		e->type = TARHDR_DIR;
	return 0;
}

static int member_link(struct tarhdr_scan *s, const unsigned char *h,
		       struct tarhdr_entry *e)
{
	const char *raw;
	size_t len;
	int rc;

	if (e->type != TARHDR_SYMLINK && e->type != TARHDR_HARDLINK)
		return 0;
	member_raw(s, PX_LINK, &s->longlink, s->has_longlink,
		   (const char *)h + H_LINK, 100, &raw, &len);
	buf_reset(&s->link);
	if (e->type == TARHDR_SYMLINK)
		rc = buf_append(&s->link, raw, len);
	else
		rc = tarhdr_normalize(raw, len, &s->link, &e->unsafe);
	if (!rc)
		rc = buf_append(&s->link, "", 0);
	if (rc == -E2BIG)
		return scan_fail(s, rc,
				 "link target of the member at offset %" PRIu64
				 " is longer than %zu bytes",
				 e->header_offset, s->lim.path_max);
	if (rc)
		return scan_fail(s, rc, "out of memory");
	return 0;
}

/* Which sparse format the member uses; the real size into s->sp_real. */
static int member_sparse_kind(struct tarhdr_scan *s, const unsigned char *h,
			      const struct tarhdr_entry *e)
{
	const struct tarhdr_pax *px = &s->pend;
	int64_t v;
	int kind;

	s->sp_real = px->sp_realsize;
	if (e->type != TARHDR_REG)
		return SP_NONE;
	if (e->typeflag == 'S') {
		if (hdr_num(s, h, H_GNU_REAL, 12, false, &v))
			return -EBADMSG;
		s->sp_real = (uint64_t)v;
		return SP_OLD;
	}
	if (px->has & (PX_SP_MAJOR | PX_SP_MINOR)) {
		if (!(px->has & PX_SP_MAJOR) || !(px->has & PX_SP_MINOR) ||
		    px->sp_major != 1 || px->sp_minor != 0)
			return SP_UNSUPPORTED;
		kind = SP_PAX1;
	} else if (px->has & (PX_SP_MAP | PX_SP_REAL)) {
		kind = SP_PAX0;
	} else {
		return SP_NONE;
	}
	if (px->has & PX_SP_REAL)
		return kind;
	return scan_fail(s, -EBADMSG,
			 "pax sparse member at offset %" PRIu64
			 " has no real size",
			 e->header_offset);
}

/* The member's data is [DOFF, DOFF + STORED): done with it. */
static int member_finish(struct tarhdr_scan *s, uint64_t doff, uint64_t stored)
{
	struct tarhdr_entry *e = &s->cur;
	int rc;

	if (doff > s->tar_size || stored > s->tar_size - doff)
		return scan_fail(
		    s, -EBADMSG,
		    "truncated: the data of the member at offset %" PRIu64
		    " (%" PRIu64
		    " bytes) runs past the end of the shard (%" PRIu64
		    " bytes)",
		    e->header_offset, stored, s->tar_size);
	e->data_offset = doff;
	e->stored_size = stored;
	if (e->type == TARHDR_REG)
		e->size = stored;
	if (s->sp_kind != SP_NONE && s->sp_kind != SP_UNSUPPORTED) {
		rc = sparse_finish(s, e);
		if (rc)
			return rc;
	}
	e->path = buf_str(&s->path);
	if (e->type == TARHDR_SYMLINK || e->type == TARHDR_HARDLINK)
		e->link = buf_str(&s->link);
	s->next = doff + round_block(stored);
	s->state = ST_HDR;
	return TARHDR_ENTRY;
}

/* Where the data goes once the header is understood. */
static int member_layout(struct tarhdr_scan *s, const unsigned char *h,
			 uint64_t stored)
{
	uint64_t doff = s->next + BLOCK;
	int rc;

	if (stored > s->tar_size - doff)
		return member_finish(s, doff, stored); /* reports it */
	s->data_start = doff;
	s->data_size = stored;
	if (s->sp_kind != SP_PAX0) { /* drop stray pax 0.x records */
		buf_reset(&s->sparse);
		s->sparse_over = false;
	}
	switch (s->sp_kind) {
	case SP_OLD:
		rc = sparse_old(s, h + H_GNU_SP, 4);
		if (rc)
			return rc;
		if (!h[H_GNU_EXT] || s->sparse_done)
			return member_finish(s, doff, stored);
		s->next = doff;
		s->state = ST_SPARSE_EXT;
		return SCAN_GO;
	case SP_PAX1:
		s->map_count = s->map_nread = s->map_val = 0;
		s->map_digits = 0;
		s->next = doff;
		s->state = ST_SPARSE_MAP;
		return SCAN_GO;
	case SP_UNSUPPORTED:
		s->cur.type = TARHDR_OTHER;
		s->cur.note = "unsupported GNU sparse format version";
		break;
	default:
		break;
	}
	return member_finish(s, doff, stored);
}

static int on_member(struct tarhdr_scan *s, const unsigned char *h)
{
	struct tarhdr_entry *e = &s->cur;
	uint64_t stored = 0;
	int rc;

	memset(e, 0, sizeof(*e));
	e->typeflag = (char)h[H_TYPE];
	e->header_offset = s->prefixed ? s->member_off : s->next;
	e->type = member_type(e->typeflag, &e->note);
	rc = member_nums(s, h, e, &stored);
	if (!rc)
		rc = member_path(s, h, e);
	if (!rc)
		rc = member_link(s, h, e);
	if (rc)
		return rc;
	s->sp_kind = member_sparse_kind(s, h, e);
	if (s->sp_kind < 0)
		return s->sp_kind;
	if (!has_data(e->typeflag))
		stored = 0;
	pax_reset(&s->pend);
	s->has_longname = s->has_longlink = false;
	s->prefixed = false;
	s->chain = 0;
	return member_layout(s, h, stored);
}

/* ---- extension headers ---- */

/* The data of the extension header at s->next (whole, in the window). */
static int ext_data(struct tarhdr_scan *s, const struct win *w,
		    const unsigned char *h, const unsigned char **d, size_t *n)
{
	int64_t v;
	int rc;

	if (hdr_num(s, h, H_SIZE, 12, false, &v))
		return -EBADMSG;
	if ((uint64_t)v > s->lim.ext_max)
		return scan_fail(s, -E2BIG,
				 "extended header at offset %" PRIu64
				 " holds %" PRId64 " bytes (limit %zu)",
				 s->next, v, s->lim.ext_max);
	rc = span(s, w, s->next, BLOCK + (uint64_t)v, d, "extended header");
	if (rc)
		return rc;
	if (s->chain >= s->lim.chain_max)
		return scan_fail(
		    s, -E2BIG,
		    "more than %u extended headers in a row at offset %" PRIu64,
		    s->lim.chain_max, s->next);
	s->chain++;
	*d += BLOCK;
	*n = (size_t)v;
	return 0;
}

static void ext_done(struct tarhdr_scan *s, size_t n, bool member)
{
	if (member && !s->prefixed) {
		s->prefixed = true;
		s->member_off = s->next;
	}
	s->next += BLOCK + round_block(n);
}

static int on_pax(struct tarhdr_scan *s, const struct win *w,
		  const unsigned char *h, bool global)
{
	const unsigned char *d = NULL;
	size_t n = 0;
	int rc = ext_data(s, w, h, &d, &n);

	if (!rc)
		rc = pax_parse(s, global ? &s->glob : &s->pend, global, d, n);
	if (rc)
		return rc;
	ext_done(s, n, !global);
	return SCAN_GO;
}

static int on_long(struct tarhdr_scan *s, const struct win *w,
		   const unsigned char *h, struct buf *b, bool *has)
{
	const unsigned char *d = NULL;
	size_t n = 0;
	int rc = ext_data(s, w, h, &d, &n);

	if (rc)
		return rc;
	buf_reset(b);
	rc = buf_append(b, d, strnlen((const char *)d, n));
	if (rc)
		return scan_fail(s, rc, "out of memory");
	*has = true;
	ext_done(s, n, true);
	return SCAN_GO;
}

/* ---- steps ---- */

static int scan_end(struct tarhdr_scan *s, enum tarhdr_end how)
{
	s->state = ST_END;
	s->end = how;
	if (how == TARHDR_END_LONE_ZERO) {
		snprintf(s->msg, sizeof(s->msg),
			 "lone zero block at offset %" PRIu64
			 ": the rest of the shard is ignored",
			 s->zero_at);
		s->end_note = s->msg;
	} else if (how == TARHDR_END_NO_MARKER) {
		snprintf(s->msg, sizeof(s->msg),
			 "no end-of-archive marker: the shard ends at offset "
			 "%" PRIu64,
			 s->tar_size);
		s->end_note = s->msg;
	}
	return TARHDR_END;
}

static int check_sum(struct tarhdr_scan *s, const unsigned char *h)
{
	int64_t want, usum = 0, ssum = 0;

	for (size_t i = 0; i < BLOCK; i++) {
		int c = (i >= H_CHKSUM && i < H_CHKSUM + 8) ? ' ' : h[i];

		usum += c;
		ssum += c < 128 ? c : c - 256;
	}
	if (num_octal(h + H_CHKSUM, 8, &want) == 0 &&
	    (want == usum || want == ssum))
		return 0;
	if (s->next == 0)
		return scan_fail(
		    s, -EBADMSG,
		    "not a tar archive (bad header checksum at offset 0)");
	return scan_fail(s, -EBADMSG, "bad header checksum at offset %" PRIu64,
			 s->next);
}

static int on_zero(struct tarhdr_scan *s)
{
	if (s->prefixed)
		return scan_fail(s, -EBADMSG,
				 "extended header at offset %" PRIu64
				 " is followed by a zero block",
				 s->member_off);
	s->zero_at = s->next;
	s->next += BLOCK;
	if (s->next > s->tar_size - BLOCK)
		return scan_end(s, TARHDR_END_ZERO_EOF);
	s->state = ST_ZERO2;
	return SCAN_GO;
}

static int step_header(struct tarhdr_scan *s, const struct win *w)
{
	const unsigned char *h = NULL;
	int rc;

	if (s->next >= s->tar_size) {
		if (s->prefixed)
			return scan_fail(
			    s, -EBADMSG,
			    "truncated: extended header at offset %" PRIu64
			    " is not followed by a member",
			    s->member_off);
		return scan_end(s, TARHDR_END_NO_MARKER);
	}
	rc = span(s, w, s->next, BLOCK, &h, "header");
	if (rc)
		return rc;
	if (all_zero(h, BLOCK))
		return on_zero(s);
	rc = check_sum(s, h);
	if (rc)
		return rc;
	switch (h[H_TYPE]) {
	case 'x':
	case 'X':
		return on_pax(s, w, h, false);
	case 'g':
		return on_pax(s, w, h, true);
	case 'L':
		return on_long(s, w, h, &s->longname, &s->has_longname);
	case 'K':
		return on_long(s, w, h, &s->longlink, &s->has_longlink);
	default:
		return on_member(s, h);
	}
}

static int step_zero2(struct tarhdr_scan *s, const struct win *w)
{
	const unsigned char *b = NULL;
	int rc = span(s, w, s->next, BLOCK, &b, "end-of-archive block");

	if (rc)
		return rc;
	return scan_end(s, all_zero(b, BLOCK) ? TARHDR_END_MARKER
					      : TARHDR_END_LONE_ZERO);
}

static int step_sparse_ext(struct tarhdr_scan *s, const struct win *w)
{
	const unsigned char *b = NULL;
	int rc = span(s, w, s->next, BLOCK, &b, "sparse extension header");

	if (!rc)
		rc = sparse_old(s, b, SPX_COUNT);
	if (rc)
		return rc;
	s->next += BLOCK;
	if (b[SPX_EXT] && !s->sparse_done)
		return SCAN_GO;
	return member_finish(s, s->next, s->data_size);
}

/* One number of a pax 1.0 map: 1 when the map is complete. */
static int map_number(struct tarhdr_scan *s, uint64_t v)
{
	int rc;

	if (s->map_nread++ == 0) {
		s->map_count = v;
		if (v > s->lim.sparse_max)
			s->sparse_over = true;
		return v == 0 || s->sparse_over;
	}
	if (s->map_nread % 2 == 0) {
		s->map_off = v;
		return 0;
	}
	rc = sparse_add(s, s->map_off, v);
	if (rc)
		return rc;
	return s->map_nread == 2 * s->map_count + 1;
}

/* Feeds one block of the map: 1 done, 0 more, negative damage. */
static int map_feed(struct tarhdr_scan *s, const unsigned char *b)
{
	for (size_t i = 0; i < BLOCK; i++) {
		int rc;

		if (b[i] >= '0' && b[i] <= '9') {
			if (s->map_digits++ >= 19)
				return -EBADMSG;
			s->map_val = s->map_val * 10 + (b[i] - '0');
			continue;
		}
		if (b[i] != '\n' || s->map_digits == 0)
			return -EBADMSG;
		rc = map_number(s, s->map_val);
		s->map_val = 0;
		s->map_digits = 0;
		if (rc)
			return rc;
	}
	return 0;
}

static int step_sparse_map(struct tarhdr_scan *s, const struct win *w)
{
	const unsigned char *b = NULL;
	uint64_t used = s->next - s->data_start;
	int rc;

	if (used >= s->data_size)
		return scan_fail(s, -EBADMSG,
				 "sparse map of the member at offset %" PRIu64
				 " runs past its data",
				 s->cur.header_offset);
	rc = span(s, w, s->next, BLOCK, &b, "sparse map");
	if (rc)
		return rc;
	rc = map_feed(s, b);
	if (rc < 0)
		return scan_fail(
		    s, rc, "bad sparse map in the block at offset %" PRIu64,
		    s->next);
	s->next += BLOCK;
	if (!rc)
		return SCAN_GO;
	if (s->sparse_over)
		return member_finish(s, s->data_start, s->data_size);
	used += BLOCK;
	return member_finish(s, s->next,
			     used < s->data_size ? s->data_size - used : 0);
}

/* ---- API ---- */

void tarhdr_scan_init(struct tarhdr_scan *s, uint64_t tar_size,
		      const struct tarhdr_limits *lim)
{
	memset(s, 0, sizeof(*s));
	if (lim)
		s->lim = *lim;
	if (!s->lim.path_max)
		s->lim.path_max = TARHDR_PATH_MAX;
	if (!s->lim.ext_max)
		s->lim.ext_max = TARHDR_EXT_MAX;
	if (!s->lim.chain_max)
		s->lim.chain_max = TARHDR_CHAIN_MAX;
	if (!s->lim.sparse_max)
		s->lim.sparse_max = TARHDR_SPARSE_MAX;
	if (s->lim.sparse_max > SIZE_MAX / 2 / sizeof(struct tarhdr_sparse))
		s->lim.sparse_max = SIZE_MAX / 2 / sizeof(struct tarhdr_sparse);
	s->tar_size =
	    tar_size > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : tar_size;
	pax_init(&s->glob, s->lim.ext_max);
	pax_init(&s->pend, s->lim.ext_max);
	buf_init(&s->longname, s->lim.ext_max);
	buf_init(&s->longlink, s->lim.ext_max);
	buf_init(&s->path, s->lim.path_max);
	buf_init(&s->link, s->lim.path_max);
	buf_init(&s->sparse, s->lim.sparse_max * sizeof(struct tarhdr_sparse));
	s->state = ST_HDR;
}

void tarhdr_scan_release(struct tarhdr_scan *s)
{
	buf_release(&s->glob.path);
	buf_release(&s->glob.link);
	buf_release(&s->pend.path);
	buf_release(&s->pend.link);
	buf_release(&s->longname);
	buf_release(&s->longlink);
	buf_release(&s->path);
	buf_release(&s->link);
	buf_release(&s->sparse);
}

static void entry_reset(struct tarhdr_scan *s)
{
	buf_reset(&s->path);
	buf_reset(&s->link);
	buf_reset(&s->sparse);
	s->sparse_over = false;
	s->sparse_done = false;
	s->sp_kind = SP_NONE;
	memset(&s->cur, 0, sizeof(s->cur));
	s->returned = false;
}

int tarhdr_scan_next(struct tarhdr_scan *s, const unsigned char *win,
		     size_t winlen, uint64_t win_off, struct tarhdr_entry *out,
		     uint64_t *need_off, uint64_t *need_len)
{
	struct win w = {win, win ? winlen : 0, win_off, need_off, need_len};
	int rc;

	if (s->err)
		return s->err;
	if (s->returned)
		entry_reset(s);
	do {
		switch (s->state) {
		case ST_HDR:
			rc = step_header(s, &w);
			break;
		case ST_ZERO2:
			rc = step_zero2(s, &w);
			break;
		case ST_SPARSE_EXT:
			rc = step_sparse_ext(s, &w);
			break;
		case ST_SPARSE_MAP:
			rc = step_sparse_map(s, &w);
			break;
		default:
			rc = TARHDR_END;
			break;
		}
	} while (rc == SCAN_GO);
	if (rc == TARHDR_ENTRY) {
		*out = s->cur;
		s->returned = true;
	}
	return rc;
}

char *tarhdr_scan_take_path(struct tarhdr_scan *s)
{
	return s->returned ? buf_detach(&s->path, NULL) : NULL;
}

char *tarhdr_scan_take_link(struct tarhdr_scan *s)
{
	if (!s->returned || !s->cur.link)
		return NULL;
	return buf_detach(&s->link, NULL);
}

struct tarhdr_sparse *tarhdr_scan_take_sparse(struct tarhdr_scan *s, size_t *n)
{
	*n = 0;
	if (!s->returned || !s->cur.sparse)
		return NULL;
	*n = s->cur.nsparse;
	return (struct tarhdr_sparse *)(void *)buf_detach(&s->sparse, NULL);
}
