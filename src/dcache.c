// SPDX-License-Identifier: MIT
/*
 * The disk cache of object byte ranges (dcache.h: the layout, the rules).
 *
 * The index: a uthash table of objects keyed by OBJ, each with its one
 * live ETag and its entries sorted by (off, len); entries may overlap, so
 * a lookup takes the last entry starting at or before the read and looks
 * back a few (COVER_SCAN). Every entry is also on the LRU list (head: the
 * most recently used); eviction takes the tail.
 *
 * Invariants (dc->lock): an entry is indexed (in its object's array and
 * on the LRU list) exactly when its file is believed to exist, and
 * stats.entries/bytes count them; an object in the table has entries;
 * stats.bytes <= max_bytes (the writer evicts before writing); qbytes
 * counts the bytes of writes reserved, queued or being written.
 *
 * Removing an entry takes two steps: any thread detaches it from the
 * index under the lock and chains it on dc->trash (through ->next); the
 * writer thread unlinks the files in the trash before it writes anything
 * else. The writer is thus the only thread that changes the directory, so
 * an unlink can never remove a newer file of the same name: that name is
 * only written again once the range is not indexed, after the trash that
 * holds the old entry was emptied. Readers read files without the lock:
 * an entry evicted meanwhile is either gone (ENOENT: a miss) or still read
 * whole through the open descriptor. A reader that finds a bad entry
 * detaches it by serial number, never a newer entry of the same range.
 *
 * Threading: dc->lock protects the fields marked "lock"; it is never held
 * during a file operation, a log message or a copy of data.
 */
#include "dcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <uthash.h>

#include "fdio.h"
#include "log.h"

#define MAGIC	       "SFSDCENT"
#define VERSION	       1u
#define HDR_FIXED      48u
#define HDR_MAX	       (16u * 1024u * 1024u) /* 2 Mi blocks: 128 GiB */
#define SCAN_READ      4096u /* first read of a header when scanning */
#define ID_LEN	       32u   /* SHA-256 */
#define NAME_LEN       (2u * ID_LEN)
#define PATH_LEN       (3u + NAME_LEN + 5u) /* "XX/" NAME ".tmp" NUL */
#define COVER_SCAN     8u /* entries looked at before the last start */
#define CLOSE_DRAIN_NS (2 * 1000000000ll)

struct dc_obj;

struct dc_ent {
	uint64_t off;		    /* immutable */
	uint64_t len;		    /* immutable */
	uint64_t serial;	    /* immutable: unique in this dcache */
	int64_t mtime;		    /* immutable: ns; scanned entries only */
	struct dc_obj *o;	    /* lock: the owner, NULL when detached */
	struct dc_ent *prev, *next; /* lock: LRU list; next: dc->trash */
	unsigned char id[ID_LEN];   /* immutable: names the file */
};

struct dc_obj {
	const char *obj;   /* immutable, in str: the key */
	const char *etag;  /* immutable, in str */
	size_t obj_len;	   /* immutable */
	size_t etag_len;   /* immutable */
	struct dc_ent **v; /* lock, owned: sorted by (off, len) */
	size_t n, cap;	   /* lock */
	int64_t newest;	   /* scan only: the newest entry's mtime */
	UT_hash_handle hh; /* dc->objs */
	char str[];	   /* obj and etag, NUL-terminated */
};

/* A queued write; obj, etag and the bytes follow in the same allocation. */
struct dc_item {
	struct dc_item *next;
	uint64_t off, len;
	const char *obj, *etag;
	char data[];
};

struct dcache {
	char *dir;	    /* immutable, owned */
	int dfd;	    /* immutable: DIR/data */
	int lockfd;	    /* immutable: holds the flock */
	uint64_t max_bytes; /* immutable */
	uint64_t queue_max; /* immutable */
	pthread_t writer;   /* immutable once started */
	bool started;	    /* immutable: the writer runs */
	pthread_mutex_t lock;
	pthread_cond_t work;	/* the writer: an item, or stopping */
	pthread_cond_t idle;	/* flush: qbytes reached 0 */
	struct dc_obj *objs;	/* lock */
	struct dc_ent lru;	/* lock: sentinel; lru.next newest */
	struct dc_item *qhead;	/* lock */
	struct dc_item **qtail; /* lock */
	uint64_t qbytes;	/* lock */
	struct dc_ent *trash;	/* lock: detached entries to unlink */
	bool unlinking;		/* lock: the writer empties the trash */
	bool stopping;		/* lock */
	int64_t deadline;	/* lock: monotonic ns, once stopping */
	uint64_t serial;	/* lock: the last serial given */
	bool warned;		/* lock: an I/O error was logged */
	struct dcache_stats st; /* lock */
};

__attribute__((format(printf, 3, 4))) static void
set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (msg && msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---- Little-endian numbers and XXH64 ------------------------------------- */

/* N-byte little-endian numbers. */
static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

/* Written out: compilers make it one load (the hash's inner loop). */
static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static uint64_t rotl64(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static uint64_t xxh_round(uint64_t acc, uint64_t in)
{
	return rotl64(acc + in * P2, 31) * P1;
}

static uint64_t xxh_merge(uint64_t h, uint64_t v)
{
	return (h ^ xxh_round(0, v)) * P1 + P4;
}

uint64_t dcache_xxh64(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *p = data, *end = p + n;
	uint64_t h;

	if (n >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed,
			 v4 = seed - P1;

		for (; end - p >= 32; p += 32) {
			v1 = xxh_round(v1, get64(p));
			v2 = xxh_round(v2, get64(p + 8));
			v3 = xxh_round(v3, get64(p + 16));
			v4 = xxh_round(v4, get64(p + 24));
		}
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) +
		    rotl64(v4, 18);
		h = xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v1), v2), v3),
			      v4);
	} else {
		h = seed + P5;
	}
	h += n;
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ xxh_round(0, get64(p)), 27) * P1 + P4;
	if (end - p >= 4) {
		h = rotl64(h ^ get_le(p, 4) * P1, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ *p * P5, 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ h >> 32;
}

/* ---- Names --------------------------------------------------------------- */

/* ID: SHA-256 of OBJ "\0" ETAG "\0" OFF LEN (lengths checked by callers). */
static int entry_id(const char *obj, size_t obj_len, const char *etag,
		    size_t etag_len, uint64_t off, uint64_t len,
		    unsigned char *id)
{
	unsigned char b[DCACHE_OBJ_MAX + DCACHE_ETAG_MAX + 18];
	unsigned int mdlen = 0;
	size_t n = 0;

	memcpy(b, obj, obj_len);
	n += obj_len;
	b[n++] = 0;
	memcpy(b + n, etag, etag_len);
	n += etag_len;
	b[n++] = 0;
	put_le(b + n, off, 8);
	put_le(b + n + 8, len, 8);
	n += 16;
	if (!EVP_Digest(b, n, id, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != ID_LEN)
		return -EIO;
	return 0;
}

/* PATH (PATH_LEN bytes): "XX/NAME", with ".tmp" when TMP. */
static void entry_path(const unsigned char *id, bool tmp, char *path)
{
	static const char hex[] = "0123456789abcdef";
	char *p = path + 3;

	for (unsigned i = 0; i < ID_LEN; i++) {
		*p++ = hex[id[i] >> 4];
		*p++ = hex[id[i] & 15];
	}
	path[0] = path[3];
	path[1] = path[4];
	path[2] = '/';
	strcpy(p, tmp ? ".tmp" : "");
}

/* Whether S is N lowercase hex digits. */
static bool is_hex(const char *s, size_t n)
{
	return strspn(s, "0123456789abcdef") == n && s[n] == '\0';
}

/* Unlinks the file of entry ID; a failure is only logged. */
static void unlink_id(struct dcache *dc, const unsigned char *id)
{
	char path[PATH_LEN];

	entry_path(id, false, path);
	if (unlinkat(dc->dfd, path, 0) != 0 && errno != ENOENT)
		log_debug("disk cache %s: cannot remove data/%s: %s", dc->dir,
			  path, strerror(errno));
}

/* Unlinks and frees the entries chained from D. No lock held. */
static void unlink_list(struct dcache *dc, struct dc_ent *d)
{
	while (d) {
		struct dc_ent *next = d->next;

		unlink_id(dc, d->id);
		free(d);
		d = next;
	}
}

/* ---- The index (everything here under dc->lock) -------------------------- */

static void lru_unlink(struct dc_ent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct dcache *dc, struct dc_ent *e)
{
	e->next = dc->lru.next;
	e->prev = &dc->lru;
	dc->lru.next->prev = e;
	dc->lru.next = e;
}

/* The number of entries of O starting before OFF (AT: or at OFF). */
static size_t count_before(const struct dc_obj *o, uint64_t off, bool at)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->v[mid]->off < off || (at && o->v[mid]->off == off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* An entry of O covering [OFF, OFF + LEN), or NULL. */
static struct dc_ent *find_cover(const struct dc_obj *o, uint64_t off,
				 uint64_t len)
{
	size_t i = count_before(o, off, true);

	for (unsigned k = 0; i > 0 && k < COVER_SCAN; k++, i--) {
		const struct dc_ent *e = o->v[i - 1];

		if (e->len >= off - e->off + len)
			return o->v[i - 1];
	}
	return NULL;
}

static struct dc_obj *obj_find(struct dcache *dc, const char *obj)
{
	struct dc_obj *o = NULL;

	HASH_FIND_STR(dc->objs, obj, o);
	return o;
}

/* A new empty object in the table, or NULL (no memory). */
static struct dc_obj *obj_add(struct dcache *dc, const char *obj,
			      const char *etag)
{
	size_t olen = strlen(obj), elen = strlen(etag);
	struct dc_obj *o = calloc(1, sizeof(*o) + olen + elen + 2);

	if (!o)
		return NULL;
	o->obj = memcpy(o->str, obj, olen + 1);
	o->etag = memcpy(o->str + olen + 1, etag, elen + 1);
	o->obj_len = olen;
	o->etag_len = elen;
	o->newest = INT64_MIN;
	HASH_ADD_KEYPTR(hh, dc->objs, o->obj, o->obj_len, o);
	return o;
}

static void obj_del(struct dcache *dc, struct dc_obj *o)
{
	HASH_DEL(dc->objs, o);
	free(o->v);
	free(o);
}

/* Puts E (detached, e->o unset) into O and the LRU list. 0 or -ENOMEM. */
static int ent_insert(struct dcache *dc, struct dc_obj *o, struct dc_ent *e)
{
	size_t i = count_before(o, e->off, true);

	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 4;
		struct dc_ent **v = realloc(o->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	/* Equal starts: shorter first, so the last one is the longest. */
	while (i > 0 && o->v[i - 1]->off == e->off && o->v[i - 1]->len > e->len)
		i--;
	memmove(o->v + i + 1, o->v + i, (o->n - i) * sizeof(*o->v));
	o->v[i] = e;
	o->n++;
	e->o = o;
	lru_push(dc, e);
	dc->st.entries++;
	dc->st.bytes += e->len;
	return 0;
}

/*
 * Takes E out of the index (freeing its object when it was the last one)
 * and puts it in the trash.
 */
static void ent_detach(struct dcache *dc, struct dc_ent *e)
{
	struct dc_obj *o = e->o;
	size_t i = count_before(o, e->off, false);

	while (o->v[i] != e)
		i++;
	memmove(o->v + i, o->v + i + 1, (o->n - i - 1) * sizeof(*o->v));
	o->n--;
	lru_unlink(e);
	e->o = NULL;
	e->next = dc->trash;
	dc->trash = e;
	dc->st.entries--;
	dc->st.bytes -= e->len;
	if (o->n == 0)
		obj_del(dc, o);
}

/* Takes every entry of O (a dead ETag) out of the index. */
static void obj_detach(struct dcache *dc, struct dc_obj *o)
{
	while (o->n > 1)
		ent_detach(dc, o->v[o->n - 1]);
	ent_detach(dc, o->v[0]); /* frees O */
}

/* Evicts least recently used entries until NEED more bytes fit. */
static void evict(struct dcache *dc, uint64_t need)
{
	while (dc->st.bytes > dc->max_bytes - need &&
	       dc->lru.prev != &dc->lru) {
		ent_detach(dc, dc->lru.prev);
		dc->st.evictions++;
	}
}

/* Wakes the writer when there is trash to unlink. */
static void trash_signal(struct dcache *dc)
{
	if (dc->trash)
		pthread_cond_signal(&dc->work);
}

/* Wakes dcache_flush() when the writer has nothing left to do. */
static void idle_signal(struct dcache *dc)
{
	if (dc->qbytes == 0 && !dc->trash && !dc->unlinking)
		pthread_cond_broadcast(&dc->idle);
}

/* ---- Entry files --------------------------------------------------------- */

/* What a header says; obj and etag point into the header bytes. */
struct dc_hdr {
	uint64_t off, len, nblocks;
	const char *etag, *obj;
	uint32_t etag_len, obj_len;
	size_t hdr_len; /* up to and including the header checksum */
};

static uint64_t nblocks_of(uint64_t len)
{
	return len / DCACHE_BLOCK + (len % DCACHE_BLOCK != 0);
}

static uint64_t cks_off(size_t etag_len, size_t obj_len)
{
	return HDR_FIXED + etag_len + obj_len;
}

/* Parses the fixed part (N >= HDR_FIXED bytes at P). 0 or -EBADMSG. */
static int hdr_parse(const unsigned char *p, struct dc_hdr *h)
{
	uint64_t len = get64(p + 24), off = get64(p + 16);

	h->off = off;
	h->len = len;
	h->etag_len = get_le(p + 32, 4);
	h->obj_len = get_le(p + 36, 4);
	h->nblocks = get64(p + 40);
	h->etag = (const char *)p + HDR_FIXED;
	h->obj = h->etag + h->etag_len;
	if (memcmp(p, MAGIC, 8) != 0 || get_le(p + 8, 4) != VERSION ||
	    get_le(p + 12, 4) != DCACHE_BLOCK || len == 0 || off + len < off ||
	    h->etag_len == 0 || h->etag_len > DCACHE_ETAG_MAX ||
	    h->obj_len == 0 || h->obj_len > DCACHE_OBJ_MAX ||
	    h->nblocks != nblocks_of(len) || h->nblocks > HDR_MAX / 8)
		return -EBADMSG;
	h->hdr_len =
	    (size_t)(cks_off(h->etag_len, h->obj_len) + 8 * h->nblocks + 8);
	return h->hdr_len <= HDR_MAX ? 0 : -EBADMSG;
}

/* The header of IT's entry (malloc'd, *HLEN bytes), or NULL. */
static unsigned char *hdr_build(const struct dc_item *it, size_t *hlen)
{
	size_t elen = strlen(it->etag), olen = strlen(it->obj);
	uint64_t nb = nblocks_of(it->len);
	size_t n = (size_t)(cks_off(elen, olen) + 8 * nb + 8);
	unsigned char *h = malloc(n), *c;

	if (!h)
		return NULL;
	memcpy(h, MAGIC, 8);
	put_le(h + 8, VERSION, 4);
	put_le(h + 12, DCACHE_BLOCK, 4);
	put_le(h + 16, it->off, 8);
	put_le(h + 24, it->len, 8);
	put_le(h + 32, elen, 4);
	put_le(h + 36, olen, 4);
	put_le(h + 40, nb, 8);
	memcpy(h + HDR_FIXED, it->etag, elen);
	memcpy(h + HDR_FIXED + elen, it->obj, olen);
	c = h + cks_off(elen, olen);
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t bo = b * DCACHE_BLOCK, bl = it->len - bo;

		bl = bl < DCACHE_BLOCK ? bl : DCACHE_BLOCK;
		put_le(c + 8 * b, dcache_xxh64(it->data + bo, (size_t)bl, b),
		       8);
	}
	put_le(h + n - 8, dcache_xxh64(h, n - 8, DCACHE_HDR_SEED), 8);
	*hlen = n;
	return h;
}

/*
 * Opens the temporary file TMP (making its XX directory when missing).
 * The writer is the only one writing in the directory (the lock), so a
 * file already there is a stale one: truncated and reused.
 */
static int create_tmp(struct dcache *dc, const char *tmp)
{
	const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
	char sub[3] = {tmp[0], tmp[1], '\0'};
	int fd = openat(dc->dfd, tmp, flags, 0600);

	if (fd < 0 && errno == ENOENT &&
	    (mkdirat(dc->dfd, sub, 0700) == 0 || errno == EEXIST))
		fd = openat(dc->dfd, tmp, flags, 0600);
	return fd < 0 ? -errno : fd;
}

/* Writes IT's entry file ID. 0 or a negative errno (nothing left). */
static int write_entry(struct dcache *dc, const struct dc_item *it,
		       const unsigned char *id)
{
	char tmp[PATH_LEN], path[PATH_LEN];
	size_t hlen = 0;
	unsigned char *h = hdr_build(it, &hlen);
	int fd, rc;

	if (!h)
		return -ENOMEM;
	entry_path(id, true, tmp);
	entry_path(id, false, path);
	fd = create_tmp(dc, tmp);
	if (fd < 0) {
		free(h);
		return fd;
	}
	rc = fdio_write_all(fd, h, hlen);
	if (!rc)
		rc = fdio_write_all(fd, it->data, (size_t)it->len);
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dc->dfd, tmp, dc->dfd, path) != 0)
		rc = -errno;
	if (rc)
		unlinkat(dc->dfd, tmp, 0);
	free(h);
	return rc;
}

/* Reads N bytes at OFF, all of them: 0, -EIO at the end, or -errno. */
static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
	char *c = p;

	while (n > 0) {
		ssize_t r = pread(fd, c, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		c += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Errors that say nothing about an entry (it is kept). */
static bool transient(int rc)
{
	return rc == -ENOMEM || rc == -EMFILE || rc == -ENFILE;
}

/* ---- Scanning at open ---------------------------------------------------- */

/*
 * Reads and checks the header of entry file FD, named NAME: *H (pointing
 * into *HB, caller frees), and its ID.
 */
static int scan_hdr(int fd, const char *name, unsigned char **hb,
		    struct dc_hdr *h, struct stat *st, unsigned char *id)
{
	char path[PATH_LEN];
	unsigned char *b = NULL;
	size_t n;
	int rc;

	if (fstat(fd, st) != 0)
		return -errno;
	if (!S_ISREG(st->st_mode) || st->st_size < (off_t)HDR_FIXED)
		return -EBADMSG;
	n = st->st_size < SCAN_READ ? (size_t)st->st_size : SCAN_READ;
	b = malloc(n);
	if (!b)
		return -ENOMEM;
	rc = pread_all(fd, b, n, 0);
	if (!rc)
		rc = hdr_parse(b, h);
	if (!rc && (uint64_t)st->st_size - h->len != h->hdr_len)
		rc = -EBADMSG; /* short, long, or len overflows the size */
	if (!rc && h->hdr_len > n) {
		unsigned char *nb = realloc(b, h->hdr_len);

		rc = nb ? pread_all(fd, nb + n, h->hdr_len - n, n) : -ENOMEM;
		b = nb ? nb : b;
	}
	*hb = b;
	if (rc)
		return rc;
	hdr_parse(b, h); /* again: the pointers into the (moved) bytes */
	if (dcache_xxh64(b, h->hdr_len - 8, DCACHE_HDR_SEED) !=
		get64(b + h->hdr_len - 8) ||
	    memchr(h->etag, 0, h->etag_len) || memchr(h->obj, 0, h->obj_len))
		return -EBADMSG;
	rc = entry_id(h->obj, h->obj_len, h->etag, h->etag_len, h->off, h->len,
		      id);
	if (!rc)
		entry_path(id, false, path);
	return rc || strcmp(path + 3, name) == 0 ? rc : -EBADMSG;
}

/*
 * Indexes a checked entry. Of one object's ETags the one with the newest
 * entry wins; the entries of the others go to the trash.
 */
static int scan_add(struct dcache *dc, const struct dc_hdr *h,
		    const unsigned char *id, int64_t mtime)
{
	char obj[DCACHE_OBJ_MAX + 1], etag[DCACHE_ETAG_MAX + 1];
	struct dc_ent *e = calloc(1, sizeof(*e));
	struct dc_obj *o;

	if (!e)
		return -ENOMEM;
	memcpy(obj, h->obj, h->obj_len);
	obj[h->obj_len] = '\0';
	memcpy(etag, h->etag, h->etag_len);
	etag[h->etag_len] = '\0';
	e->off = h->off;
	e->len = h->len;
	e->mtime = mtime;
	e->serial = ++dc->serial;
	memcpy(e->id, id, ID_LEN);
	o = obj_find(dc, obj);
	if (o && strcmp(o->etag, etag) != 0) {
		if (o->newest > mtime) {
			e->next = dc->trash;
			dc->trash = e;
			return 0;
		}
		obj_detach(dc, o);
		o = NULL;
	}
	if (!o)
		o = obj_add(dc, obj, etag);
	if (!o || ent_insert(dc, o, e) != 0) {
		if (o && o->n == 0)
			obj_del(dc, o);
		free(e);
		return -ENOMEM;
	}
	if (mtime > o->newest)
		o->newest = mtime;
	return 0;
}

/* Looks at file NAME in DIR/data/XX (descriptor SFD). */
static int scan_file(struct dcache *dc, int sfd, const char *xx,
		     const char *name)
{
	unsigned char id[ID_LEN], *hb = NULL;
	struct dc_hdr h;
	struct stat st;
	int fd, rc;

	if (strspn(name, "0123456789abcdef") == NAME_LEN &&
	    strcmp(name + NAME_LEN, ".tmp") == 0) {
		unlinkat(sfd, name, 0); /* a write cut short */
		return 0;
	}
	if (!is_hex(name, NAME_LEN) || memcmp(name, xx, 2) != 0)
		return 0; /* not ours */
	fd = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return 0;
	rc = fd < 0 ? -errno : scan_hdr(fd, name, &hb, &h, &st, id);
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		rc = scan_add(dc, &h, id,
			      (int64_t)st.st_mtim.tv_sec * 1000000000ll +
				  st.st_mtim.tv_nsec);
	free(hb);
	if (transient(rc))
		return rc;
	if (rc) {
		/* Bad (or unreadable, a symlink...): never served, removed. */
		log_debug("disk cache %s: removing bad entry data/%s/%s: %s",
			  dc->dir, xx, name, strerror(-rc));
		unlinkat(sfd, name, 0);
		dc->st.errors++;
	}
	return 0;
}

/* Scans DIR/data/XX. */
static int scan_sub(struct dcache *dc, const char *xx)
{
	int sfd = openat(dc->dfd, xx,
			 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (sfd < 0)
		return errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
	d = fdopendir(sfd);
	if (!d) {
		rc = -errno;
		close(sfd);
		return rc;
	}
	while (!rc && (errno = 0, de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || strlen(de->d_name) > 2)
			rc = scan_file(dc, dirfd(d), xx, de->d_name);
	if (!rc && errno != 0)
		rc = -errno;
	closedir(d);
	return rc;
}

static int cmp_mtime(const void *a, const void *b)
{
	const struct dc_ent *x = *(struct dc_ent *const *)a,
			    *y = *(struct dc_ent *const *)b;

	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Rebuilds the LRU list in mtime order (the newest at the head). */
static int scan_order(struct dcache *dc)
{
	struct dc_ent **all = malloc((dc->st.entries + 1) * sizeof(*all));
	size_t n = 0;

	if (!all)
		return -ENOMEM;
	for (struct dc_ent *e = dc->lru.next; e != &dc->lru; e = e->next)
		all[n++] = e;
	qsort(all, n, sizeof(*all), cmp_mtime);
	dc->lru.next = dc->lru.prev = &dc->lru;
	for (size_t i = 0; i < n; i++)
		lru_push(dc, all[i]);
	free(all);
	return 0;
}

/* Indexes every entry, then evicts down to max_bytes. Single-threaded. */
static int scan(struct dcache *dc, char *msg, size_t msglen)
{
	int dfd = dup(dc->dfd), rc = 0;
	struct dirent *de;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d) {
		rc = -errno;
		if (dfd >= 0)
			close(dfd);
		goto out;
	}
	while (!rc && (errno = 0, de = readdir(d)) != NULL)
		if (is_hex(de->d_name, 2))
			rc = scan_sub(dc, de->d_name);
	if (!rc && errno != 0)
		rc = -errno;
	closedir(d);
	if (!rc)
		rc = scan_order(dc);
	if (!rc)
		evict(dc, 0);
out:
	unlink_list(dc, dc->trash); /* no writer yet */
	dc->trash = NULL;
	if (rc)
		set_msg(msg, msglen, "disk cache %s/data: cannot scan: %s",
			dc->dir, strerror(-rc));
	return rc;
}

/* ---- Open and close ------------------------------------------------------ */

/* Creates and opens DIR/data. */
static int open_dirs(struct dcache *dc, char *msg, size_t msglen)
{
	char *data = NULL;
	int rc = asprintf(&data, "%s/data", dc->dir) < 0 ? -ENOMEM : 0;

	if (!rc)
		rc = fdio_mkdirs(data, 0700);
	if (!rc) {
		dc->dfd = open(data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = dc->dfd < 0 ? -errno : 0;
	}
	if (rc)
		set_msg(msg, msglen, "disk cache directory %s: %s",
			data ? data : dc->dir, strerror(-rc));
	free(data);
	return rc;
}

/* Takes the flock on DIR/data/lock and writes the pid into it. */
static int take_lock(struct dcache *dc, char *msg, size_t msglen)
{
	char pid[32] = "";
	int n, rc = 0;

	dc->lockfd = openat(dc->dfd, "lock",
			    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (dc->lockfd < 0)
		rc = -errno;
	else if (flock(dc->lockfd, LOCK_EX | LOCK_NB) != 0)
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (rc == -EBUSY) {
		n = (int)pread(dc->lockfd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		set_msg(msg, msglen,
			"%s is in use by another shardfs mount (pid %ld)",
			dc->dir, strtol(pid, NULL, 10));
		return rc;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (!rc && ftruncate(dc->lockfd, 0) != 0)
		rc = -errno;
	if (!rc && pwrite(dc->lockfd, pid, (size_t)n, 0) != n)
		rc = errno ? -errno : -EIO;
	if (rc)
		set_msg(msg, msglen, "disk cache lock %s/data/lock: %s",
			dc->dir, strerror(-rc));
	return rc;
}

static void *writer_main(void *arg);

int dcache_open(const struct dcache_conf *conf, struct dcache **out, char *msg,
		size_t msglen)
{
	struct dcache *dc;
	int rc;

	if (!conf->dir || !conf->dir[0] || conf->max_bytes == 0) {
		set_msg(msg, msglen, "disk cache: %s",
			conf->max_bytes ? "no directory" : "size 0");
		return -EINVAL;
	}
	dc = calloc(1, sizeof(*dc));
	if (!dc || !(dc->dir = strdup(conf->dir))) {
		free(dc);
		set_msg(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	dc->dfd = dc->lockfd = -1;
	dc->max_bytes = conf->max_bytes;
	dc->queue_max =
	    conf->queue_max ? conf->queue_max : DCACHE_QUEUE_DEFAULT;
	dc->lru.next = dc->lru.prev = &dc->lru;
	dc->qtail = &dc->qhead;
	pthread_mutex_init(&dc->lock, NULL);
	pthread_cond_init(&dc->work, NULL);
	pthread_cond_init(&dc->idle, NULL);
	rc = open_dirs(dc, msg, msglen);
	if (!rc)
		rc = take_lock(dc, msg, msglen);
	if (!rc)
		rc = scan(dc, msg, msglen);
	if (!rc) {
		rc = -pthread_create(&dc->writer, NULL, writer_main, dc);
		if (rc)
			set_msg(msg, msglen, "disk cache: no writer thread: %s",
				strerror(-rc));
	}
	if (rc) {
		dcache_close(dc);
		return rc;
	}
	dc->started = true;
	log_debug("disk cache %s: %" PRIu64 " entries, %" PRIu64 " bytes",
		  dc->dir, dc->st.entries, dc->st.bytes);
	*out = dc;
	return 0;
}

void dcache_close(struct dcache *dc)
{
	struct dc_obj *o, *tmp;

	if (!dc)
		return;
	if (dc->started) {
		pthread_mutex_lock(&dc->lock);
		dc->stopping = true;
		dc->deadline = now_ns() + CLOSE_DRAIN_NS;
		pthread_cond_signal(&dc->work);
		pthread_mutex_unlock(&dc->lock);
		pthread_join(dc->writer, NULL);
	}
	/* Free the index without touching the files. */
	HASH_ITER(hh, dc->objs, o, tmp)
	{
		for (size_t i = 0; i < o->n; i++)
			free(o->v[i]);
		obj_del(dc, o);
	}
	if (dc->lockfd >= 0)
		close(dc->lockfd); /* releases the flock */
	if (dc->dfd >= 0)
		close(dc->dfd);
	pthread_cond_destroy(&dc->idle);
	pthread_cond_destroy(&dc->work);
	pthread_mutex_destroy(&dc->lock);
	free(dc->dir);
	free(dc);
}

/* ---- Reading ------------------------------------------------------------- */

/* What a reader needs of an entry, copied under the lock. */
struct dc_span {
	unsigned char id[ID_LEN];
	uint64_t off, len, serial;
	uint64_t cks_off, data_off;
};

/* Checks the blocks B0.. of BUF (N bytes) against the checksums CK. */
static bool blocks_ok(const char *buf, size_t n, uint64_t b0,
		      const unsigned char *ck)
{
	for (size_t i = 0; (uint64_t)i * DCACHE_BLOCK < n; i++) {
		size_t bo = i * DCACHE_BLOCK, bl = n - bo;

		bl = bl < DCACHE_BLOCK ? bl : DCACHE_BLOCK;
		if (dcache_xxh64(buf + bo, bl, b0 + i) != get64(ck + 8 * i))
			return false;
	}
	return true;
}

/* Reads [OFF, OFF + LEN) out of entry S into *OUT, checking its blocks. */
static int span_read(struct dcache *dc, const struct dc_span *s, uint64_t off,
		     uint64_t len, char **out)
{
	uint64_t r0 = off - s->off, b0 = r0 / DCACHE_BLOCK,
		 b1 = (r0 + len - 1) / DCACHE_BLOCK;
	uint64_t from = b0 * DCACHE_BLOCK, to = (b1 + 1) * DCACHE_BLOCK;
	unsigned char *ck = NULL;
	char path[PATH_LEN], *buf = NULL;
	int fd, rc;

	to = to < s->len ? to : s->len;
	if (to - from > SIZE_MAX / 2)
		return -ENOMEM;
	entry_path(s->id, false, path);
	fd = openat(dc->dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ck = malloc((size_t)(b1 - b0 + 1) * 8);
	buf = malloc((size_t)(to - from));
	rc = ck && buf ? 0 : -ENOMEM;
	if (!rc)
		rc = pread_all(fd, ck, (size_t)(b1 - b0 + 1) * 8,
			       s->cks_off + 8 * b0);
	if (!rc)
		rc =
		    pread_all(fd, buf, (size_t)(to - from), s->data_off + from);
	close(fd);
	if (!rc && !blocks_ok(buf, (size_t)(to - from), b0, ck))
		rc = -EIO;
	free(ck);
	if (rc) {
		free(buf);
		return rc;
	}
	memmove(buf, buf + (r0 - from), (size_t)len);
	*out = buf;
	return 0;
}

/*
 * Under the lock: finds the entry for a read and copies it to *S.
 * 0, or -ENOENT (a dead ETag's entries go to the trash).
 */
static int read_find(struct dcache *dc, const char *obj, const char *etag,
		     uint64_t off, uint64_t len, struct dc_span *s)
{
	struct dc_obj *o = obj_find(dc, obj);
	struct dc_ent *e;

	if (o && strcmp(o->etag, etag) != 0) {
		obj_detach(dc, o);
		o = NULL;
	}
	e = o ? find_cover(o, off, len) : NULL;
	if (!e)
		return -ENOENT;
	lru_unlink(e);
	lru_push(dc, e);
	memcpy(s->id, e->id, ID_LEN);
	s->off = e->off;
	s->len = e->len;
	s->serial = e->serial;
	s->cks_off = cks_off(o->etag_len, o->obj_len);
	s->data_off = s->cks_off + 8 * nblocks_of(e->len) + 8;
	return 0;
}

/* Under the lock: drops the entry S of OBJ if it is still indexed. */
static bool read_drop(struct dcache *dc, const char *obj,
		      const struct dc_span *s)
{
	struct dc_obj *o = obj_find(dc, obj);
	size_t i = o ? count_before(o, s->off, false) : 0;

	for (; o && i < o->n && o->v[i]->off == s->off; i++) {
		if (o->v[i]->serial == s->serial) {
			ent_detach(dc, o->v[i]);
			return true;
		}
	}
	return false;
}

int dcache_read(struct dcache *dc, const char *obj, const char *etag,
		uint64_t off, uint64_t len, char **out)
{
	struct dc_span s;
	bool dropped = false;
	int rc;

	if (!obj || !obj[0] || !etag || !etag[0] || off + len < off)
		return -EINVAL;
	if (len == 0 || strlen(obj) > DCACHE_OBJ_MAX ||
	    strlen(etag) > DCACHE_ETAG_MAX)
		return -ENOENT;
	pthread_mutex_lock(&dc->lock);
	rc = read_find(dc, obj, etag, off, len, &s);
	if (rc)
		dc->st.misses++;
	trash_signal(dc);
	pthread_mutex_unlock(&dc->lock);
	if (rc)
		return rc;
	rc = span_read(dc, &s, off, len, out);
	pthread_mutex_lock(&dc->lock);
	if (rc == 0) {
		dc->st.hits++;
		dc->st.bytes_read += len;
	} else if (!transient(rc)) {
		/* ENOENT: evicted meanwhile, unless still indexed. */
		dropped = read_drop(dc, obj, &s);
		dc->st.misses += rc == -ENOENT;
		dc->st.errors += rc != -ENOENT || dropped;
		trash_signal(dc);
	}
	pthread_mutex_unlock(&dc->lock);
	if (rc && rc != -ENOENT)
		log_debug("disk cache %s: entry of %s [%" PRIu64 ", +%" PRIu64
			  "): %s%s",
			  dc->dir, obj, s.off, s.len, strerror(-rc),
			  dropped ? " (removed)" : "");
	return rc;
}

/* ---- Writing ------------------------------------------------------------- */

void dcache_write(struct dcache *dc, const char *obj, const char *etag,
		  uint64_t off, uint64_t len, const char *data)
{
	size_t olen, elen;
	struct dc_item *it = NULL;
	struct dc_obj *o;
	bool ok;

	if (len == 0)
		return;
	olen = obj ? strlen(obj) : 0;
	elen = etag ? strlen(etag) : 0;
	ok = olen && elen && olen <= DCACHE_OBJ_MAX &&
	     elen <= DCACHE_ETAG_MAX && off + len >= off &&
	     len <= dc->max_bytes && len < SIZE_MAX - olen - elen - 2 * 64;
	pthread_mutex_lock(&dc->lock);
	o = ok ? obj_find(dc, obj) : NULL;
	if (o && strcmp(o->etag, etag) == 0 && find_cover(o, off, len))
		ok = false;
	if (ok &&
	    (dc->qbytes > dc->queue_max || len > dc->queue_max - dc->qbytes))
		ok = false;
	if (ok)
		dc->qbytes += len; /* reserved while copying */
	else
		dc->st.writes_dropped++;
	pthread_mutex_unlock(&dc->lock);
	if (!ok)
		return;
	it = malloc(sizeof(*it) + (size_t)len + olen + elen + 2);
	if (it) {
		it->next = NULL;
		it->off = off;
		it->len = len;
		memcpy(it->data, data, (size_t)len);
		it->obj = memcpy(it->data + len, obj, olen + 1);
		it->etag = memcpy(it->data + len + olen + 1, etag, elen + 1);
	}
	pthread_mutex_lock(&dc->lock);
	if (it) {
		*dc->qtail = it;
		dc->qtail = &it->next;
		pthread_cond_signal(&dc->work);
	} else {
		dc->qbytes -= len;
		dc->st.writes_dropped++;
		idle_signal(dc);
	}
	pthread_mutex_unlock(&dc->lock);
}

/*
 * Under the lock, before writing IT: whether it is still worth writing.
 * Dead ETags and the entries evicted to make room go to the trash.
 */
static bool write_prepare(struct dcache *dc, const struct dc_item *it)
{
	struct dc_obj *o = obj_find(dc, it->obj);

	if (o && strcmp(o->etag, it->etag) != 0) {
		obj_detach(dc, o);
		o = NULL;
	}
	if (o && find_cover(o, it->off, it->len)) {
		dc->st.writes_dropped++;
		return false;
	}
	evict(dc, it->len);
	return true;
}

/* Under the lock, after writing IT's file ID: indexes it. 0 or -ENOMEM. */
static int write_commit(struct dcache *dc, const struct dc_item *it,
			const unsigned char *id)
{
	struct dc_obj *o = obj_find(dc, it->obj);
	struct dc_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->off = it->off;
	e->len = it->len;
	e->serial = ++dc->serial;
	memcpy(e->id, id, ID_LEN);
	if (o && strcmp(o->etag, it->etag) != 0) {
		obj_detach(dc, o); /* a reader's ETag, meanwhile */
		o = NULL;
	}
	if (!o)
		o = obj_add(dc, it->obj, it->etag);
	if (!o || ent_insert(dc, o, e) != 0) {
		if (o && o->n == 0)
			obj_del(dc, o);
		free(e);
		return -ENOMEM;
	}
	dc->st.bytes_written += it->len;
	evict(dc, 0);
	return 0;
}

/* Under the lock: takes the trash (to unlink without the lock). */
static struct dc_ent *trash_take(struct dcache *dc)
{
	struct dc_ent *t = dc->trash;

	dc->trash = NULL;
	return t;
}

/*
 * Writes one item (taken off the queue) and indexes it, unlinking the
 * trash first. Called and returns without the lock.
 */
static void write_one(struct dcache *dc, struct dc_item *it)
{
	unsigned char id[ID_LEN];
	struct dc_ent *t;
	bool go, written = false, warn = false;
	int rc = 0;

	pthread_mutex_lock(&dc->lock);
	go = write_prepare(dc, it);
	t = trash_take(dc);
	pthread_mutex_unlock(&dc->lock);
	unlink_list(dc, t);
	if (go)
		rc = entry_id(it->obj, strlen(it->obj), it->etag,
			      strlen(it->etag), it->off, it->len, id);
	if (go && !rc)
		rc = write_entry(dc, it, id);
	written = go && !rc;
	pthread_mutex_lock(&dc->lock);
	if (written && write_commit(dc, it, id) != 0)
		rc = -ENOMEM;
	if (rc) {
		dc->st.errors++;
		warn = !dc->warned;
		dc->warned = true;
	}
	pthread_mutex_unlock(&dc->lock);
	if (written && rc)
		unlink_id(dc, id); /* not indexed: no one else knows it */
	if (rc)
		log_msg(warn ? LOG_LVL_WARN : LOG_LVL_DEBUG,
			"disk cache %s: cannot write an entry of %s: %s%s",
			dc->dir, it->obj, strerror(-rc),
			warn ? " (further errors at debug level)" : "");
	pthread_mutex_lock(&dc->lock);
	dc->qbytes -= it->len; /* the trash of the commit is done next */
	idle_signal(dc);
	pthread_mutex_unlock(&dc->lock);
	free(it);
}

/* Under the lock: drops what is queued (closing, past the deadline). */
static void drop_queue(struct dcache *dc)
{
	while (dc->qhead) {
		struct dc_item *it = dc->qhead;

		dc->qhead = it->next;
		dc->qbytes -= it->len;
		dc->st.writes_dropped++;
		free(it);
	}
	dc->qtail = &dc->qhead;
	idle_signal(dc);
}

/* Under the lock: unlinks the trash, releasing the lock meanwhile. */
static void empty_trash(struct dcache *dc)
{
	struct dc_ent *t = trash_take(dc);

	dc->unlinking = true;
	pthread_mutex_unlock(&dc->lock);
	unlink_list(dc, t);
	pthread_mutex_lock(&dc->lock);
	dc->unlinking = false;
	idle_signal(dc);
}

static void *writer_main(void *arg)
{
	struct dcache *dc = arg;

	pthread_mutex_lock(&dc->lock);
	for (;;) {
		struct dc_item *it;

		while (!dc->qhead && !dc->trash && !dc->stopping)
			pthread_cond_wait(&dc->work, &dc->lock);
		if (dc->trash) {
			empty_trash(dc);
			continue;
		}
		if (dc->stopping && dc->qhead && now_ns() > dc->deadline)
			drop_queue(dc);
		if (!dc->qhead)
			break;
		it = dc->qhead;
		dc->qhead = it->next;
		if (!dc->qhead)
			dc->qtail = &dc->qhead;
		pthread_mutex_unlock(&dc->lock);
		write_one(dc, it);
		pthread_mutex_lock(&dc->lock);
	}
	pthread_mutex_unlock(&dc->lock);
	return NULL;
}

void dcache_flush(struct dcache *dc)
{
	pthread_mutex_lock(&dc->lock);
	while (dc->qbytes > 0 || dc->trash || dc->unlinking)
		pthread_cond_wait(&dc->idle, &dc->lock);
	pthread_mutex_unlock(&dc->lock);
}

void dcache_get_stats(struct dcache *dc, struct dcache_stats *out)
{
	pthread_mutex_lock(&dc->lock);
	*out = dc->st;
	pthread_mutex_unlock(&dc->lock);
}
