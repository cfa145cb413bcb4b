// SPDX-License-Identifier: MIT
/*
 * Tar header writer (the tarhdr_write* half of tarhdr.h). Produces POSIX
 * ustar headers, preceded by a pax 'x' header only for what ustar cannot
 * hold, so that the output is plain ustar for ordinary trees and still
 * exact for long names, big files, odd times and ids. Every field is a
 * function of the entry alone (no user or group names, no atime/ctime, a
 * fixed pax header name), so the same tree always packs to the same bytes.
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "tarhdr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BLOCK TARHDR_BLOCK

#define OCT7  (UINT64_C(1) << 21) /* 8^7: largest 8-byte field + 1 */
#define OCT11 (UINT64_C(1) << 33) /* 8^11: largest 12-byte field + 1 */

/* What goes into the ustar block. */
struct whdr {
	const char *name, *prefix, *link;
	size_t nlen, plen, llen;
	char type;
	uint32_t mode;
	uint64_t uid, gid, size, mtime;
};

/* N-1 zero-padded octal digits and a NUL; V must fit. */
static void put_octal(unsigned char *f, size_t n, uint64_t v)
{
	f[n - 1] = '\0';
	for (size_t i = n - 1; i-- > 0; v >>= 3)
		f[i] = (unsigned char)('0' + (v & 7));
}

static void ustar_block(unsigned char *h, const struct whdr *w)
{
	unsigned sum = 0;

	memset(h, 0, BLOCK);
	memcpy(h, w->name, w->nlen);
	put_octal(h + 100, 8, w->mode);
	put_octal(h + 108, 8, w->uid);
	put_octal(h + 116, 8, w->gid);
	put_octal(h + 124, 12, w->size);
	put_octal(h + 136, 12, w->mtime);
	h[156] = (unsigned char)w->type;
	if (w->llen)
		memcpy(h + 157, w->link, w->llen);
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	put_octal(h + 329, 8, 0); /* devmajor */
	put_octal(h + 337, 8, 0); /* devminor */
	if (w->plen)
		memcpy(h + 345, w->prefix, w->plen);
	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < BLOCK; i++)
		sum += h[i];
	put_octal(h + 148, 7, sum);
	h[155] = ' ';
}

/* "LEN key=value\n", LEN counting itself. */
static int pax_rec(struct buf *b, const char *key, const char *val, size_t vlen)
{
	size_t base = strlen(key) + vlen + 3, d = 1, len;
	char num[24];
	int rc;

	while (snprintf(num, sizeof(num), "%zu", base + d) != (int)d)
		d++;
	len = base + d;
	rc = buf_printf(b, "%zu %s=", len, key);
	if (!rc)
		rc = buf_append(b, val, vlen);
	if (!rc)
		rc = buf_append(b, "\n", 1);
	return rc;
}

static int pax_rec_u64(struct buf *b, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	return pax_rec(b, key, num, strlen(num));
}

/* Seconds with the fraction, floor semantics: -1.5 is (-2, 500000000). */
static int pax_rec_time(struct buf *b, int64_t sec, uint32_t nsec)
{
	char num[48];
	size_t n;

	if (!nsec)
		snprintf(num, sizeof(num), "%" PRId64, sec);
	else if (sec >= 0)
		snprintf(num, sizeof(num), "%" PRId64 ".%09" PRIu32, sec, nsec);
	else
		snprintf(num, sizeof(num), "-%" PRIu64 ".%09" PRIu32,
			 (uint64_t)(-(sec + 1)), 1000000000u - nsec);
	n = strlen(num);
	while (nsec && num[n - 1] == '0')
		n--;
	return pax_rec(b, "mtime", num, n);
}

/* A normalised, safe path: no empty, "." or ".." components. */
static bool path_ok(const char *p, size_t n)
{
	size_t i = 0;

	if (n == 0 || n > TARHDR_PATH_MAX)
		return false;
	while (i < n) {
		size_t j = i;

		while (j < n && p[j] != '/')
			j++;
		if (j == i || (j - i == 1 && p[i] == '.') ||
		    (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return p[n - 1] != '/';
}

static int check_entry(const struct tarhdr_wentry *e, size_t *plen)
{
	size_t n;

	if (!e->path || e->mtime_nsec >= 1000000000u ||
	    e->uid > (uint64_t)INT64_MAX || e->gid > (uint64_t)INT64_MAX ||
	    (e->type == TARHDR_REG && e->size > (uint64_t)INT64_MAX))
		return -EINVAL;
	n = strlen(e->path);
	if (e->type == TARHDR_DIR && n > 1 && e->path[n - 1] == '/')
		n--;
	*plen = n;
	if (n > TARHDR_PATH_MAX)
		return -ENAMETOOLONG;
	if (!path_ok(e->path, n))
		return -EINVAL;
	switch (e->type) {
	case TARHDR_REG:
	case TARHDR_DIR:
		return 0;
	case TARHDR_SYMLINK:
		if (!e->link || !*e->link)
			return -EINVAL;
		return strlen(e->link) > TARHDR_PATH_MAX ? -ENAMETOOLONG : 0;
	case TARHDR_HARDLINK:
		if (!e->link)
			return -EINVAL;
		n = strlen(e->link);
		if (n > TARHDR_PATH_MAX)
			return -ENAMETOOLONG;
		return path_ok(e->link, n) ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

/* Splits NAME (N bytes) into prefix <= 155 and name <= 100 at a '/'. */
static bool split_name(const char *name, size_t n, struct whdr *w)
{
	size_t lo = n > 101 ? n - 101 : 0;

	for (size_t p = lo; p < n - 1 && p <= 155; p++) {
		if (name[p] != '/' || p == 0)
			continue;
		w->prefix = name;
		w->plen = p;
		w->name = name + p + 1;
		w->nlen = n - p - 1;
		return true;
	}
	return false;
}

/* Fills W and the pax records PAX needs for entry E named NAME. */
static int plan(const struct tarhdr_wentry *e, const char *name, size_t n,
		struct whdr *w, struct buf *pax)
{
	static const char types[] = {[TARHDR_REG] = '0',
				     [TARHDR_DIR] = '5',
				     [TARHDR_SYMLINK] = '2',
				     [TARHDR_HARDLINK] = '1'};
	int rc = 0;

	memset(w, 0, sizeof(*w));
	w->type = types[e->type];
	w->mode = e->mode & 07777;
	w->name = name;
	w->nlen = n;
	if (n > 100 && !split_name(name, n, w)) {
		w->nlen = 100; /* placeholder: the pax path holds it */
		rc = pax_rec(pax, "path", name, n);
	}
	if (e->link) {
		w->link = e->link;
		w->llen = strlen(e->link);
		if (!rc && w->llen > 100) {
			w->llen = 100;
			rc = pax_rec(pax, "linkpath", e->link, strlen(e->link));
		}
	}
	w->size = e->type == TARHDR_REG ? e->size : 0;
	if (!rc && w->size >= OCT11) {
		rc = pax_rec_u64(pax, "size", w->size);
		w->size = 0;
	}
	if (e->mtime >= 0 && (uint64_t)e->mtime < OCT11)
		w->mtime = (uint64_t)e->mtime;
	else
		w->mtime = e->mtime < 0 ? 0 : OCT11 - 1;
	if (!rc && (e->mtime_nsec || w->mtime != (uint64_t)e->mtime))
		rc = pax_rec_time(pax, e->mtime, e->mtime_nsec);
	w->uid = e->uid < OCT7 ? e->uid : 0;
	if (!rc && e->uid >= OCT7)
		rc = pax_rec_u64(pax, "uid", e->uid);
	w->gid = e->gid < OCT7 ? e->gid : 0;
	if (!rc && e->gid >= OCT7)
		rc = pax_rec_u64(pax, "gid", e->gid);
	return rc;
}

/* The pax 'x' header and its records (padded). */
static int put_pax(const struct buf *pax, struct buf *out)
{
	static const char pname[] = "././@PaxHeader";
	struct whdr w = {.name = pname,
			 .nlen = sizeof(pname) - 1,
			 .type = 'x',
			 .mode = 0644,
			 .size = pax->len};
	unsigned char h[BLOCK];
	int rc;

	ustar_block(h, &w);
	rc = buf_append(out, h, BLOCK);
	if (!rc)
		rc = buf_append(out, pax->data, pax->len);
	if (!rc)
		rc = tarhdr_write_pad(pax->len, out);
	return rc;
}

int tarhdr_write(const struct tarhdr_wentry *e, struct buf *out)
{
	char name[TARHDR_PATH_MAX + 2];
	unsigned char h[BLOCK];
	struct whdr w;
	struct buf pax;
	size_t n, old = out->len;
	int rc = check_entry(e, &n);

	if (rc)
		return rc;
	memcpy(name, e->path, n);
	if (e->type == TARHDR_DIR)
		name[n++] = '/';
	buf_init(&pax, 4 * TARHDR_PATH_MAX);
	rc = plan(e, name, n, &w, &pax);
	if (!rc && pax.len)
		rc = put_pax(&pax, out);
	if (!rc) {
		ustar_block(h, &w);
		rc = buf_append(out, h, BLOCK);
	}
	buf_release(&pax);
	if (rc && out->data) {
		out->len = old;
		out->data[old] = '\0';
	}
	return rc;
}

size_t tarhdr_pad_len(uint64_t size)
{
	return (size_t)((BLOCK - size % BLOCK) % BLOCK);
}

int tarhdr_write_pad(uint64_t size, struct buf *out)
{
	static const unsigned char zero[BLOCK];

	return buf_append(out, zero, tarhdr_pad_len(size));
}

int tarhdr_write_end(struct buf *out)
{
	static const unsigned char zero[2 * BLOCK];

	return buf_append(out, zero, sizeof(zero));
}
