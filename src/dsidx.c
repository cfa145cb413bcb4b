// SPDX-License-Identifier: MIT
/*
 * The dataset index: builder, serialiser and verifying zero-copy reader of
 * the format specified in shardfs-index(5).
 *
 * Builder: every add is appended to flat arrays (struct buf, so growth is
 * bounded by the conf's limits), strings to one arena. Directories are
 * found through a small hash table keyed by (parent, name); adding a
 * member probes no table that grows with the member count (one is built
 * only for hard links), so adds stay in the cache. finish() orders dirs
 * breadth-first with siblings by name, and shards by key; it sorts each
 * directory's member adds by name, stably, keeps the last add of each
 * name (last wins) and drops names that are subdirectories (directories
 * win), then writes the file in one pass. The output is canonical: the
 * same final entries give the same bytes whatever the order of the adds.
 *
 * Reader: dsidx_open() checks the header, both CRCs and every record
 * once; afterwards accessors trust the verified bytes and only bounds-check
 * the caller's indexes. Multi-byte fields are assembled from bytes, so
 * neither the host's endianness nor the data's alignment matter.
 *
 * Pure: no I/O, no threads, no globals. The slicing-by-8 CRC tables (8 KiB)
 * are built on the stack per call (a few microseconds), which keeps the
 * module free of mutable static state.
 */
#include "dsidx.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(S_IFMT == 0170000 && S_IFREG == 0100000 && S_IFDIR == 0040000 &&
		   S_IFLNK == 0120000,
	       "the format uses the traditional Unix file type bits");

#define NSEC_PER_SEC   1000000000u
#define REQUIRED_FLAGS 0xffffu /* header flags a reader must know */
#define PERM_BITS      07777u

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

/* ---- bytes, CRC-32C, names ------------------------------------------ */

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

/* t[k][n]: CRC register after byte n followed by k zero bytes. */
struct crc_tab {
	uint32_t t[8][256];
};

static void crc_tab_init(struct crc_tab *ct)
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

static uint32_t crc_run(const struct crc_tab *ct, uint32_t crc,
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
	struct crc_tab ct;

	crc_tab_init(&ct);
	return crc_run(&ct, crc, data, len);
}

/* CRC of the header's HLEN bytes with the header_crc field read as 0. */
static uint32_t header_crc(const struct crc_tab *ct, const uint8_t *p,
			   uint32_t hlen)
{
	static const uint8_t zero[4];
	uint32_t c = crc_run(ct, 0, p, H_HCRC);

	c = crc_run(ct, c, zero, sizeof(zero));
	return crc_run(ct, c, p + H_HCRC + 4, hlen - (H_HCRC + 4));
}

int dsidx_reseal(void *data, size_t len)
{
	uint8_t *p = data;
	struct crc_tab ct;
	uint32_t hlen;

	if (len < DSIDX_HEADER_LEN || memcmp(p, DSIDX_MAGIC, 8))
		return -EBADMSG;
	hlen = ld32(p + H_HLEN);
	if (hlen < DSIDX_HEADER_LEN || hlen > len || ld64(p + H_TOTAL) != len)
		return -EBADMSG;
	crc_tab_init(&ct);
	/* The body CRC lives in the header, so it goes first. */
	st32(p + H_BCRC, crc_run(&ct, 0, p + hlen, len - hlen));
	st32(p + H_HCRC, header_crc(&ct, p, hlen));
	return 0;
}

/* Byte order of names: memcmp, then the shorter first. */
static int name_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

/* A path component: 1..DSIDX_MAX_NAME bytes, no '/' or NUL, not . or .. */
static bool name_ok(const uint8_t *s, size_t n)
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

/* A shard key: UTF-8, '/'-separated segments, none empty, "." or "..". */
static bool key_ok(const uint8_t *s, size_t n)
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

/* An ETag goes into If-Match headers: visible ASCII only. */
static bool etag_ok(const uint8_t *s, size_t n)
{
	if (n > DSIDX_MAX_ETAG)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- builder: entries and the path tables --------------------------- */

struct bshard {
	uint32_t key_off; /* arena; the ETag follows the key */
	uint16_t key_len, etag_len;
	uint64_t size;
};

struct bdir {
	uint32_t parent; /* builder index, smaller than this one's */
	uint32_t name_off;
	uint16_t name_len;
	bool explicit_dir;
	uint32_t mode, nsec; /* valid when explicit_dir */
	int64_t mtime;
};

/* Every add, in add order; finish() decides which ones are kept. */
struct bmem {
	uint32_t dir, name_off; /* the link target follows the name */
	uint16_t name_len, link_len;
	uint32_t shard, mode, nsec;
	uint64_t offset, size;
	int64_t mtime;
};

/*
 * Open addressing with linear probing. A slot is SLOT_EMPTY or
 * (hash << 32 | index); the hash bits give the home position, so growth
 * needs no rehashing of names. Index UINT32_MAX never occurs (the limits
 * stop below it). Nothing is ever deleted.
 */
#define SLOT_EMPTY UINT64_MAX

struct htab {
	uint64_t *slots; /* NULL: not built */
	size_t mask;	 /* number of slots - 1 */
	size_t used;
};

struct dsidx_builder {
	struct buf arena;  /* every string: key+ETag, name+link target */
	struct buf shards; /* struct bshard[] */
	struct buf dirs;   /* struct bdir[]; [0] is the root */
	struct buf mems;   /* struct bmem[] */
	struct htab dht;   /* (parent, name) -> directory */
	/*
	 * (directory, name) -> latest member add, for hard links only: built
	 * by the first add_hardlink(), kept up to date from then on. Without
	 * hard links an add touches no table that grows with the members.
	 */
	struct htab mht;
	struct buf lastdir; /* directory path of the last member added */
	uint32_t lastdir_idx;
	bool lastdir_ok;
	bool finished;
	struct dsidx_build_stats stats; /* set by finish() */
};

static inline struct bshard *shard_at(const struct dsidx_builder *b, uint32_t i)
{
	return (struct bshard *)(void *)b->shards.data + i;
}

static inline struct bdir *dir_at(const struct dsidx_builder *b, uint32_t i)
{
	return (struct bdir *)(void *)b->dirs.data + i;
}

static inline struct bmem *mem_at(const struct dsidx_builder *b, uint32_t i)
{
	return (struct bmem *)(void *)b->mems.data + i;
}

static inline uint32_t count_of(const struct buf *v, size_t size)
{
	return (uint32_t)(v->len / size);
}

/* 32 hash bits of (parent, name). */
static uint32_t name_hash(uint32_t parent, const char *s, size_t n)
{
	uint64_t h = (parent + 1ull) * 0x9e3779b97f4a7c15ull ^ n, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x9fb21c651e98df25ull;
		h ^= h >> 28;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0x9fb21c651e98df25ull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h >> 32);
}

static int ht_init(struct htab *t)
{
	t->mask = 1023;
	t->used = 0;
	t->slots = malloc((t->mask + 1) * sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	memset(t->slots, 0xff, (t->mask + 1) * sizeof(*t->slots));
	return 0;
}

/* Whether slot S of the directory (DIRS) or member table is the key. */
static bool slot_matches(const struct dsidx_builder *b, bool dirs, uint64_t s,
			 uint32_t parent, const char *name, size_t n)
{
	uint32_t p, off, len;

	if (dirs) {
		const struct bdir *d = dir_at(b, (uint32_t)s);

		p = d->parent, off = d->name_off, len = d->name_len;
	} else {
		const struct bmem *m = mem_at(b, (uint32_t)s);

		p = m->dir, off = m->name_off, len = m->name_len;
	}
	return p == parent && len == n && !memcmp(b->arena.data + off, name, n);
}

/* The slot of (PARENT, NAME): its entry, or the empty slot to fill. */
static uint64_t *ht_find(const struct dsidx_builder *b, bool dirs,
			 uint32_t parent, const char *name, size_t n,
			 uint32_t hash)
{
	const struct htab *t = dirs ? &b->dht : &b->mht;
	size_t pos = hash & t->mask;

	for (;; pos = (pos + 1) & t->mask) {
		uint64_t s = t->slots[pos];

		if (s == SLOT_EMPTY ||
		    ((uint32_t)(s >> 32) == hash &&
		     slot_matches(b, dirs, s, parent, name, n)))
			return &t->slots[pos];
	}
}

/* Room for one more entry at a load factor of at most 0.7. */
static int ht_reserve(struct htab *t)
{
	size_t nslots = (t->mask + 1) * 2, nmask = nslots - 1;
	uint64_t *ns;

	if ((t->used + 1) * 10 <= (t->mask + 1) * 7)
		return 0;
	if (nslots - 1 > UINT32_MAX || nslots > SIZE_MAX / sizeof(*ns))
		return -E2BIG; /* positions come from 32 hash bits */
	ns = malloc(nslots * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	memset(ns, 0xff, nslots * sizeof(*ns));
	for (size_t i = 0; i <= t->mask; i++) {
		uint64_t s = t->slots[i];
		size_t pos;

		if (s == SLOT_EMPTY)
			continue;
		pos = (size_t)(s >> 32) & nmask;
		while (ns[pos] != SLOT_EMPTY)
			pos = (pos + 1) & nmask;
		ns[pos] = s;
	}
	free(t->slots);
	t->slots = ns;
	t->mask = nmask;
	return 0;
}

/* Stores entry IDX in SLOT (empty, or the same key's) of table T. */
static void ht_set(struct htab *t, uint64_t *slot, uint32_t hash, uint32_t idx)
{
	if (*slot == SLOT_EMPTY)
		t->used++;
	*slot = (uint64_t)hash << 32 | idx;
}

static size_t cap_for(uint32_t limit, uint32_t dflt, size_t size)
{
	uint64_t n = limit ? limit : dflt;

	return n > SIZE_MAX / size ? SIZE_MAX : (size_t)(n * size);
}

int dsidx_builder_new(const struct dsidx_builder_conf *conf,
		      struct dsidx_builder **out)
{
	static const struct dsidx_builder_conf dflt;
	struct dsidx_builder *b = calloc(1, sizeof(*b));
	struct bdir root = {.mode = DSIDX_IMPLICIT_MODE};

	if (!conf)
		conf = &dflt;
	if (!b)
		return -ENOMEM;
	buf_init(&b->arena, DSIDX_MAX_STRINGS);
	buf_init(&b->shards, cap_for(conf->max_shards, DSIDX_MAX_SHARDS,
				     sizeof(struct bshard)));
	buf_init(&b->dirs,
		 cap_for(conf->max_dirs, DSIDX_MAX_DIRS, sizeof(struct bdir)));
	buf_init(&b->mems, cap_for(conf->max_members, DSIDX_MAX_MEMBERS,
				   sizeof(struct bmem)));
	buf_init(&b->lastdir, 1u << 20);
	if (ht_init(&b->dht) || buf_append(&b->dirs, &root, sizeof(root))) {
		dsidx_builder_free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

void dsidx_builder_free(struct dsidx_builder *b)
{
	if (!b)
		return;
	buf_release(&b->arena);
	buf_release(&b->shards);
	buf_release(&b->dirs);
	buf_release(&b->mems);
	buf_release(&b->lastdir);
	free(b->dht.slots);
	free(b->mht.slots);
	free(b);
}

uint64_t dsidx_builder_shadowed(const struct dsidx_builder *b)
{
	return b->stats.shadowed;
}

void dsidx_builder_stats(const struct dsidx_builder *b,
			 struct dsidx_build_stats *out)
{
	*out = b->stats;
}

static int check_component(const char *s, size_t n)
{
	if (n > DSIDX_MAX_NAME)
		return -ENAMETOOLONG;
	return name_ok((const uint8_t *)s, n) ? 0 : -EINVAL;
}

static int dir_new(struct dsidx_builder *b, uint32_t parent, const char *name,
		   size_t n, uint32_t *idx)
{
	struct bdir d = {.parent = parent, .name_len = (uint16_t)n};
	int rc;

	d.name_off = (uint32_t)b->arena.len;
	rc = buf_append(&b->dirs, &d, sizeof(d));
	if (rc)
		return rc;
	rc = buf_append(&b->arena, name, n);
	if (rc) {
		b->dirs.len -= sizeof(d);
		return rc;
	}
	*idx = count_of(&b->dirs, sizeof(d)) - 1;
	return 0;
}

/* The child directory NAME of PARENT; created when CREATE, else -ENOENT. */
static int dir_child(struct dsidx_builder *b, uint32_t parent, const char *name,
		     size_t n, bool create, uint32_t *out)
{
	uint32_t hash = name_hash(parent, name, n), idx;
	uint64_t *slot;
	int rc = create ? ht_reserve(&b->dht) : 0;

	if (rc)
		return rc;
	slot = ht_find(b, true, parent, name, n, hash);
	if (*slot != SLOT_EMPTY) {
		*out = (uint32_t)*slot;
		return 0;
	}
	if (!create)
		return -ENOENT;
	rc = dir_new(b, parent, name, n, &idx);
	if (rc)
		return rc;
	ht_set(&b->dht, slot, hash, idx);
	*out = idx;
	return 0;
}

/* Calls check_component() (CHECK) or dir_child() on each component. */
static int walk(struct dsidx_builder *b, const char *path, size_t len,
		bool check, bool create, uint32_t *cur)
{
	size_t i = 0;
	int rc;

	while (len) {
		const char *s = path + i, *e = memchr(s, '/', len - i);
		size_t n = e ? (size_t)(e - s) : len - i;

		rc = check ? check_component(s, n)
			   : dir_child(b, *cur, s, n, create, cur);
		if (rc)
			return rc;
		if (!e)
			break;
		i += n + 1;
	}
	return 0;
}

/*
 * Walks the LEN-byte directory PATH from the root ("" is the root). The
 * whole path is checked first, so that a malformed one changes nothing.
 */
static int dir_walk(struct dsidx_builder *b, const char *path, size_t len,
		    bool create, uint32_t *out)
{
	int rc = walk(b, path, len, true, false, out);

	*out = 0;
	return rc ? rc : walk(b, path, len, false, create, out);
}

/* Directory of a member, with a one-entry cache (tar order is local). */
static int member_dir(struct dsidx_builder *b, const char *path, size_t dlen,
		      uint32_t *out)
{
	int rc;

	if (dlen == 0) {
		*out = 0;
		return 0;
	}
	if (b->lastdir_ok && b->lastdir.len == dlen &&
	    !memcmp(b->lastdir.data, path, dlen)) {
		*out = b->lastdir_idx;
		return 0;
	}
	rc = dir_walk(b, path, dlen, true, out);
	if (rc)
		return rc;
	buf_reset(&b->lastdir);
	b->lastdir_ok = buf_append(&b->lastdir, path, dlen) == 0;
	b->lastdir_idx = *out;
	return 0;
}

/* Splits PATH into its directory part and its validated last component. */
static int split_path(const char *path, size_t *dlen, const char **base,
		      size_t *blen)
{
	const char *slash = strrchr(path, '/');

	if (slash == path)
		return -EINVAL;
	*dlen = slash ? (size_t)(slash - path) : 0;
	*base = slash ? slash + 1 : path;
	*blen = strlen(*base);
	return check_component(*base, *blen);
}

/* Appends member M (all but dir and name set) at PATH, LINK after it. */
static int member_put(struct dsidx_builder *b, const char *path, struct bmem *m,
		      const char *link)
{
	uint32_t idx = count_of(&b->mems, sizeof(*m)), hash = 0;
	const char *base;
	size_t dlen, n;
	int rc = split_path(path, &dlen, &base, &n);

	if (rc)
		return rc;
	if (b->mems.len + sizeof(*m) > b->mems.cap)
		return -E2BIG;
	rc = member_dir(b, path, dlen, &m->dir);
	if (!rc)
		rc = buf_reserve(&b->arena, n + m->link_len);
	if (!rc && b->mht.slots)
		rc = ht_reserve(&b->mht);
	if (rc)
		return rc;
	m->name_off = (uint32_t)b->arena.len;
	m->name_len = (uint16_t)n;
	rc = buf_append(&b->mems, m, sizeof(*m));
	if (rc)
		return rc;
	buf_append(&b->arena, base, n); /* reserved above: cannot fail */
	buf_append(&b->arena, link, m->link_len);
	if (b->mht.slots) {
		hash = name_hash(m->dir, base, n);
		ht_set(&b->mht, ht_find(b, false, m->dir, base, n, hash), hash,
		       idx);
	}
	return 0;
}

int dsidx_builder_add_shard(struct dsidx_builder *b, const char *key,
			    const char *etag, uint64_t size,
			    uint32_t *shard_idx)
{
	size_t kl = strlen(key), el = etag ? strlen(etag) : 0;
	struct bshard s = {.size = size};
	int rc;

	if (b->finished)
		return -EINVAL;
	if (kl > DSIDX_MAX_KEY || el > DSIDX_MAX_ETAG)
		return -ENAMETOOLONG;
	if (!key_ok((const uint8_t *)key, kl) ||
	    !etag_ok((const uint8_t *)etag, el))
		return -EINVAL;
	s.key_off = (uint32_t)b->arena.len;
	s.key_len = (uint16_t)kl;
	s.etag_len = (uint16_t)el;
	rc = buf_reserve(&b->arena, kl + el);
	if (!rc)
		rc = buf_append(&b->shards, &s, sizeof(s));
	if (rc)
		return rc;
	buf_append(&b->arena, key, kl);
	buf_append(&b->arena, etag, el);
	*shard_idx = count_of(&b->shards, sizeof(s)) - 1;
	return 0;
}

int dsidx_builder_add_member(struct dsidx_builder *b, const char *path,
			     uint32_t shard, uint64_t offset, uint64_t size,
			     uint32_t mode, int64_t mtime, uint32_t mtime_nsec,
			     const char *link_target)
{
	struct bmem m = {.mode = mode, .mtime = mtime, .nsec = mtime_nsec};
	size_t ll;

	if (b->finished || (mode & ~(S_IFMT | PERM_BITS)) ||
	    mtime_nsec >= NSEC_PER_SEC)
		return -EINVAL;
	if ((mode & S_IFMT) == S_IFLNK) {
		ll = link_target ? strlen(link_target) : 0;
		if (ll == 0)
			return -EINVAL;
		if (ll > DSIDX_MAX_LINK)
			return -ENAMETOOLONG;
		m.shard = DSIDX_NONE;
		m.link_len = (uint16_t)ll;
	} else if ((mode & S_IFMT) == S_IFREG && !link_target) {
		const struct bshard *s;

		if (shard >= count_of(&b->shards, sizeof(*s)))
			return -EINVAL;
		s = shard_at(b, shard);
		if (offset > s->size || size > s->size - offset)
			return -EINVAL;
		m.shard = shard, m.offset = offset, m.size = size;
	} else {
		return -EINVAL;
	}
	return member_put(b, path, &m, link_target);
}

/* Builds the member table from every add so far (later adds win). */
static int mht_build(struct dsidx_builder *b)
{
	uint32_t n = count_of(&b->mems, sizeof(struct bmem));
	int rc = ht_init(&b->mht);

	for (uint32_t i = 0; !rc && i < n; i++) {
		const struct bmem *m = mem_at(b, i);
		const char *name = b->arena.data + m->name_off;
		uint32_t hash = name_hash(m->dir, name, m->name_len);

		rc = ht_reserve(&b->mht);
		if (!rc)
			ht_set(
			    &b->mht,
			    ht_find(b, false, m->dir, name, m->name_len, hash),
			    hash, i);
	}
	if (rc) {
		free(b->mht.slots);
		b->mht.slots = NULL;
	}
	return rc;
}

/*
 * The member at PATH now: the latest add there, unless PATH is a
 * directory. -ENOENT, or -EINVAL for a malformed path.
 */
static int member_find(struct dsidx_builder *b, const char *path, uint32_t *idx)
{
	const char *base;
	size_t dlen, n;
	uint32_t dir, hash;
	uint64_t s;
	int rc = split_path(path, &dlen, &base, &n);

	if (!rc)
		rc = dir_walk(b, path, dlen, false, &dir);
	if (rc)
		return rc;
	hash = name_hash(dir, base, n);
	if (*ht_find(b, true, dir, base, n, hash) != SLOT_EMPTY)
		return -ENOENT;
	s = *ht_find(b, false, dir, base, n, hash);
	if (s == SLOT_EMPTY)
		return -ENOENT;
	*idx = (uint32_t)s;
	return 0;
}

int dsidx_builder_add_hardlink(struct dsidx_builder *b, const char *path,
			       const char *target)
{
	char link[DSIDX_MAX_LINK];
	struct bmem m;
	uint32_t idx;
	int rc;

	if (b->finished)
		return -EINVAL;
	rc = b->mht.slots ? 0 : mht_build(b);
	if (!rc)
		rc = member_find(b, target, &idx);
	if (rc)
		return rc;
	/* Copied: adding may move the arena the target's link lives in. */
	m = *mem_at(b, idx);
	memcpy(link, b->arena.data + m.name_off + m.name_len, m.link_len);
	return member_put(b, path, &m, link);
}

int dsidx_builder_add_dir(struct dsidx_builder *b, const char *path,
			  uint32_t mode, int64_t mtime, uint32_t mtime_nsec)
{
	struct bdir *d;
	uint32_t idx;
	int rc;

	if (b->finished || ((mode & S_IFMT) && (mode & S_IFMT) != S_IFDIR) ||
	    (mode & ~(S_IFMT | PERM_BITS)) || mtime_nsec >= NSEC_PER_SEC)
		return -EINVAL;
	rc = dir_walk(b, path, strlen(path), true, &idx);
	if (rc)
		return rc;
	d = dir_at(b, idx);
	d->explicit_dir = true;
	d->mode = S_IFDIR | (mode & PERM_BITS);
	d->mtime = mtime;
	d->nsec = mtime_nsec;
	return 0;
}

/* ---- builder: ordering and serialisation ---------------------------- */

/*
 * A name to sort: LEN bytes at OFF of some string buffer, for entry ID,
 * followed there by LINK bytes (members' link targets).
 */
struct skey {
	uint32_t off;
	uint16_t len, link;
	uint32_t id;
};

/* Records read in a random order are fetched this many entries ahead. */
#define PREFETCH_AHEAD 8

#define SORT_RUN 16

static inline int skey_cmp(const char *strs, const struct skey *x,
			   const struct skey *y)
{
	return name_cmp(strs + x->off, x->len, strs + y->off, y->len);
}

static void skey_isort(const char *strs, struct skey *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct skey k = v[i];
		size_t j = i;

		for (; j > 0 && skey_cmp(strs, &v[j - 1], &k) > 0; j--)
			v[j] = v[j - 1];
		v[j] = k;
	}
}

static void skey_merge(const char *strs, const struct skey *a, size_t na,
		       const struct skey *b, size_t nb, struct skey *out)
{
	while (na && nb) {
		if (skey_cmp(strs, b, a) < 0)
			*out++ = *b++, nb--;
		else
			*out++ = *a++, na--;
	}
	memcpy(out, a, na * sizeof(*a));
	memcpy(out + na, b, nb * sizeof(*b));
}

/* Stable bottom-up merge sort by name; TMP holds N keys. */
static void skey_sort(const char *strs, struct skey *v, size_t n,
		      struct skey *tmp)
{
	struct skey *src = v, *dst = tmp, *t;
	size_t i;

	for (i = 1; i < n && skey_cmp(strs, &v[i - 1], &v[i]) <= 0; i++)
		;
	if (i >= n)
		return; /* tar order is often sorted already */
	for (i = 0; i < n; i += SORT_RUN)
		skey_isort(strs, v + i, n - i < SORT_RUN ? n - i : SORT_RUN);
	for (size_t w = SORT_RUN; w < n; w *= 2) {
		for (i = 0; i < n; i += 2 * w) {
			size_t na = n - i < w ? n - i : w;
			size_t nb = n - i - na < w ? n - i - na : w;

			skey_merge(strs, src + i, na, src + i + na, nb,
				   dst + i);
		}
		t = src, src = dst, dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

/* Everything finish() computes before it writes. */
struct plan {
	uint32_t nshards, ndirs, nmems; /* in the file */
	struct skey *shards;		/* file order; id: builder shard */
	uint32_t *shard_new;		/* builder shard -> file index */
	uint32_t *dir_order;		/* file index -> builder dir */
	uint32_t *dir_new;		/* builder dir -> file index */
	uint32_t *nchild;		/* builder dir -> child dirs */
	struct skey *dkeys; /* children of builder dir d, by name, end */
	uint32_t *dend;	    /* at dkeys[dend[d]] (names in the arena) */
	uint32_t *nmem;	    /* builder dir -> members in the file */
	uint32_t *ids;	    /* members in the file (builder indexes) */
	struct buf mstr;    /* their names + link targets, file order */
	uint64_t strings;   /* bytes of the whole string table */
	struct dsidx_build_stats stats;
};

static void *alloc_array(size_t n, size_t size)
{
	return n > SIZE_MAX / size - 1 ? NULL : malloc((n + 1) * size);
}

static void plan_release(struct plan *p)
{
	free(p->shards);
	free(p->shard_new);
	free(p->dir_order);
	free(p->dir_new);
	free(p->nchild);
	free(p->dkeys);
	free(p->dend);
	free(p->nmem);
	free(p->ids);
	buf_release(&p->mstr);
}

static int plan_shards(const struct dsidx_builder *b, struct plan *p)
{
	uint32_t n = count_of(&b->shards, sizeof(struct bshard));
	struct skey *tmp = alloc_array(n, sizeof(*tmp));

	p->nshards = n;
	p->shards = alloc_array(n, sizeof(*p->shards));
	p->shard_new = alloc_array(n, sizeof(*p->shard_new));
	if (!tmp || !p->shards || !p->shard_new) {
		free(tmp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct bshard *s = shard_at(b, i);

		p->shards[i] = (struct skey){s->key_off, s->key_len, 0, i};
		p->strings += (uint64_t)s->key_len + s->etag_len;
	}
	skey_sort(b->arena.data, p->shards, n, tmp);
	free(tmp);
	for (uint32_t i = 0; i < n; i++) {
		if (i &&
		    !skey_cmp(b->arena.data, &p->shards[i - 1], &p->shards[i]))
			return -EEXIST;
		p->shard_new[p->shards[i].id] = i;
	}
	return 0;
}

/*
 * Breadth-first from the root, each directory's children sorted by name
 * and numbered consecutively: parents come before children, and the
 * children of each directory form a range, in the order of the parents.
 */
static int plan_dirs(const struct dsidx_builder *b, struct plan *p)
{
	uint32_t nd = count_of(&b->dirs, sizeof(struct bdir)), next = 1;
	struct skey *tmp = alloc_array(nd, sizeof(*tmp)), *g;

	p->ndirs = nd;
	p->nchild = calloc((size_t)nd + 1, sizeof(*p->nchild));
	p->dend = alloc_array(nd, sizeof(*p->dend));
	p->dkeys = alloc_array(nd, sizeof(*p->dkeys));
	p->dir_order = alloc_array(nd, sizeof(*p->dir_order));
	p->dir_new = alloc_array(nd, sizeof(*p->dir_new));
	if (!tmp || !p->nchild || !p->dend || !p->dkeys || !p->dir_order ||
	    !p->dir_new) {
		free(tmp);
		return -ENOMEM;
	}
	for (uint32_t d = 1; d < nd; d++) {
		p->nchild[dir_at(b, d)->parent]++;
		p->strings += dir_at(b, d)->name_len;
	}
	for (uint32_t d = 0, s = 0; d < nd; s += p->nchild[d], d++)
		p->dend[d] = s;
	for (uint32_t d = 1; d < nd; d++) {
		const struct bdir *bd = dir_at(b, d);

		p->dkeys[p->dend[bd->parent]++] =
		    (struct skey){bd->name_off, bd->name_len, 0, d};
	}
	p->dir_order[0] = p->dir_new[0] = 0;
	for (uint32_t i = 0; i < nd; i++) {
		uint32_t d = p->dir_order[i], c = p->nchild[d];

		g = p->dkeys + p->dend[d] - c;
		skey_sort(b->arena.data, g, c, tmp);
		for (uint32_t k = 0; k < c; k++, next++) {
			p->dir_order[next] = g[k].id;
			p->dir_new[g[k].id] = next;
		}
	}
	free(tmp);
	assert(next == nd); /* builder parents precede their children */
	return 0;
}

/* Where plan_group() works: keys and a copy of one directory's names. */
struct group_work {
	struct skey *keys, *tmp;
	struct buf strs;
};

/*
 * Orders the CNT adds IDS (add order) of builder directory D: sorted by
 * name, stably, so the last add of a name ends its run and wins; a name
 * that is also a subdirectory's is dropped. Kept members are appended to
 * p->ids and p->mstr. The names are first copied next to each other, so
 * sorting never chases the arena.
 */
static int plan_group(const struct dsidx_builder *b, struct plan *p, uint32_t d,
		      const uint32_t *ids, uint32_t cnt, struct group_work *w)
{
	const struct skey *sub = p->dkeys + p->dend[d] - p->nchild[d];
	uint32_t nsub = p->nchild[d], si = 0, kept = 0, run;
	int rc = 0, c = 1;

	buf_reset(&w->strs);
	for (uint32_t k = 0; !rc && k < cnt; k++) {
		const struct bmem *m = mem_at(b, ids[k]);

		if (k + PREFETCH_AHEAD < cnt)
			__builtin_prefetch(mem_at(b, ids[k + PREFETCH_AHEAD]));
		w->keys[k] = (struct skey){(uint32_t)w->strs.len, m->name_len,
					   m->link_len, ids[k]};
		rc = buf_append(&w->strs, b->arena.data + m->name_off,
				(size_t)m->name_len + m->link_len);
	}
	if (rc)
		return rc;
	skey_sort(w->strs.data, w->keys, cnt, w->tmp);
	for (uint32_t k = 0; k < cnt; k += run) {
		const struct skey *last;
		const char *name = w->strs.data + w->keys[k].off;

		for (run = 1;
		     k + run < cnt &&
		     !skey_cmp(w->strs.data, &w->keys[k], &w->keys[k + run]);
		     run++)
			;
		for (; si < nsub &&
		       (c = name_cmp(b->arena.data + sub[si].off, sub[si].len,
				     name, w->keys[k].len)) < 0;
		     si++)
			;
		if (si < nsub && c == 0) {
			p->stats.dir_conflicts += run;
			continue;
		}
		p->stats.shadowed += run - 1;
		last = &w->keys[k + run - 1];
		p->ids[p->nmems++] = last->id;
		kept++;
		rc = buf_append(&p->mstr, w->strs.data + last->off,
				(size_t)last->len + last->link);
		if (rc)
			return rc;
	}
	p->nmem[d] = kept;
	return 0;
}

/* Members grouped by directory in file order, each group planned. */
static int plan_members(const struct dsidx_builder *b, struct plan *p)
{
	uint32_t nm = count_of(&b->mems, sizeof(struct bmem)), maxg = 0;
	uint32_t *end = alloc_array(p->ndirs, sizeof(*end));
	struct group_work w = {0};
	int rc = -ENOMEM;

	buf_init(&w.strs, DSIDX_MAX_STRINGS);
	p->nmem = calloc((size_t)p->ndirs + 1, sizeof(*p->nmem));
	p->ids = alloc_array(nm, sizeof(*p->ids));
	if (!end || !p->nmem || !p->ids)
		goto out;
	for (uint32_t i = 0; i < nm; i++)
		p->nmem[mem_at(b, i)->dir]++;
	for (uint32_t i = 0, s = 0; i < p->ndirs; i++) {
		uint32_t n = p->nmem[p->dir_order[i]];

		end[p->dir_order[i]] = s;
		s += n;
		maxg = n > maxg ? n : maxg;
	}
	for (uint32_t i = 0; i < nm; i++)
		p->ids[end[mem_at(b, i)->dir]++] = i;
	w.keys = alloc_array(maxg, sizeof(*w.keys));
	w.tmp = alloc_array(maxg, sizeof(*w.tmp));
	if (!w.keys || !w.tmp)
		goto out;
	rc = 0;
	/* Kept ids are written at or before their group: no overlap. */
	for (uint32_t i = 0; !rc && i < p->ndirs; i++) {
		uint32_t d = p->dir_order[i], n = p->nmem[d];

		rc = plan_group(b, p, d, p->ids + end[d] - n, n, &w);
	}
	p->strings += p->mstr.len;
out:
	free(end);
	free(w.keys);
	free(w.tmp);
	buf_release(&w.strs);
	return rc;
}

/* Where the string table is being written. */
struct strw {
	uint8_t *base;
	uint32_t cur;
};

static uint32_t str_put(struct strw *w, const void *s, size_t n)
{
	uint32_t off = w->cur;

	if (n)
		memcpy(w->base + off, s, n);
	w->cur += (uint32_t)n;
	return off;
}

static void put_table(uint8_t *h, uint64_t off, uint32_t count, uint32_t rl)
{
	st64(h, off);
	st32(h + 8, count);
	st32(h + 12, rl);
}

static void write_shards(const struct dsidx_builder *b, const struct plan *p,
			 uint8_t *r, struct strw *w)
{
	for (uint32_t i = 0; i < p->nshards; i++, r += DSIDX_SHARD_REC_LEN) {
		const struct bshard *s = shard_at(b, p->shards[i].id);

		st32(r + SR_KEY_OFF, str_put(w, b->arena.data + s->key_off,
					     (size_t)s->key_len + s->etag_len));
		st16(r + SR_KEY_LEN, s->key_len);
		st16(r + SR_ETAG_LEN, s->etag_len);
		st64(r + SR_SIZE, s->size);
	}
}

static void write_dirs(const struct dsidx_builder *b, const struct plan *p,
		       int64_t created, uint8_t *r, struct strw *w)
{
	uint32_t first_dir = 1, first_mem = 0;

	for (uint32_t i = 0; i < p->ndirs; i++, r += DSIDX_DIR_REC_LEN) {
		uint32_t bd = p->dir_order[i];
		const struct bdir *d = dir_at(b, bd);
		bool ex = d->explicit_dir;

		st32(r + DR_PARENT, p->dir_new[d->parent]);
		st32(r + DR_NAME_OFF,
		     i ? str_put(w, b->arena.data + d->name_off, d->name_len)
		       : 0);
		st32(r + DR_NAME_LEN, i ? d->name_len : 0);
		st32(r + DR_FLAGS, ex ? DSIDX_DIR_EXPLICIT : 0);
		st32(r + DR_MODE, ex ? d->mode : DSIDX_IMPLICIT_MODE);
		st32(r + DR_NSEC, ex ? d->nsec : 0);
		st64(r + DR_MTIME, (uint64_t)(ex ? d->mtime : created));
		st32(r + DR_FIRST_DIR, first_dir);
		st32(r + DR_NDIRS, p->nchild[bd]);
		st32(r + DR_FIRST_MEM, first_mem);
		st32(r + DR_NMEMS, p->nmem[bd]);
		first_dir += p->nchild[bd];
		first_mem += p->nmem[bd];
	}
}

static void write_members(const struct dsidx_builder *b, const struct plan *p,
			  uint8_t *r, struct strw *w)
{
	uint32_t off = w->cur;

	for (uint32_t i = 0; i < p->nmems; i++, r += DSIDX_MEMBER_REC_LEN) {
		const struct bmem *m = mem_at(b, p->ids[i]);

		if (i + PREFETCH_AHEAD < p->nmems)
			__builtin_prefetch(
			    mem_at(b, p->ids[i + PREFETCH_AHEAD]));
		st32(r + MR_DIR, p->dir_new[m->dir]);
		st32(r + MR_SHARD, m->shard == DSIDX_NONE
				       ? DSIDX_NONE
				       : p->shard_new[m->shard]);
		st64(r + MR_OFFSET, m->offset);
		st64(r + MR_SIZE, m->size);
		st64(r + MR_MTIME, (uint64_t)m->mtime);
		st32(r + MR_NSEC, m->nsec);
		st32(r + MR_MODE, m->mode);
		st32(r + MR_NAME_OFF, off);
		st16(r + MR_NAME_LEN, m->name_len);
		st16(r + MR_LINK_LEN, m->link_len);
		off += (uint32_t)m->name_len + m->link_len;
	}
	str_put(w, p->mstr.data, p->mstr.len);
}

static int write_index(const struct dsidx_builder *b, const struct plan *p,
		       int64_t created, struct buf *out)
{
	uint64_t shard_off = DSIDX_HEADER_LEN;
	uint64_t dir_off =
	    shard_off + (uint64_t)p->nshards * DSIDX_SHARD_REC_LEN;
	uint64_t mem_off = dir_off + (uint64_t)p->ndirs * DSIDX_DIR_REC_LEN;
	uint64_t str_off = mem_off + (uint64_t)p->nmems * DSIDX_MEMBER_REC_LEN;
	uint64_t total = str_off + p->strings;
	struct strw w;
	uint8_t *h;
	int rc;

	if (p->strings > DSIDX_MAX_STRINGS || total > SIZE_MAX)
		return -E2BIG;
	rc = buf_reserve(out, (size_t)total);
	if (rc)
		return rc;
	h = (uint8_t *)out->data + out->len;
	memset(h, 0, DSIDX_HEADER_LEN);
	memcpy(h, DSIDX_MAGIC, 8);
	st16(h + H_MAJOR, DSIDX_VERSION_MAJOR);
	st16(h + H_MINOR, DSIDX_VERSION_MINOR);
	st32(h + H_HLEN, DSIDX_HEADER_LEN);
	st64(h + H_TOTAL, total);
	st64(h + H_CREATED, (uint64_t)created);
	put_table(h + H_SHARDS, shard_off, p->nshards, DSIDX_SHARD_REC_LEN);
	put_table(h + H_DIRS, dir_off, p->ndirs, DSIDX_DIR_REC_LEN);
	put_table(h + H_MEMBERS, mem_off, p->nmems, DSIDX_MEMBER_REC_LEN);
	st64(h + H_STR_OFF, str_off);
	st64(h + H_STR_LEN, p->strings);
	w = (struct strw){h + str_off, 0};
	write_shards(b, p, h + shard_off, &w);
	write_dirs(b, p, created, h + dir_off, &w);
	write_members(b, p, h + mem_off, &w);
	assert(w.cur == p->strings);
	rc = dsidx_reseal(h, (size_t)total);
	assert(rc == 0);
	out->len += (size_t)total;
	out->data[out->len] = '\0';
	return 0;
}

int dsidx_builder_finish(struct dsidx_builder *b, int64_t created,
			 struct buf *out)
{
	struct plan p = {0};
	int rc;

	if (b->finished)
		return -EINVAL;
	b->finished = true;
	buf_init(&p.mstr, DSIDX_MAX_STRINGS);
	rc = plan_shards(b, &p);
	if (!rc)
		rc = plan_dirs(b, &p);
	if (!rc)
		rc = plan_members(b, &p);
	if (!rc) {
		b->stats = p.stats;
		rc = write_index(b, &p, created, out);
	}
	plan_release(&p);
	return rc;
}

/* ---- reader --------------------------------------------------------- */

struct dsidx {
	const uint8_t *shards, *dirs, *mems, *str; /* into the caller's data */
	uint32_t shard_rl, dir_rl, mem_rl;	   /* record lengths */
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
	struct crc_tab ct;
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
	crc_tab_init(&ct);
	if (header_crc(&ct, p, hlen) != ld32(p + H_HCRC))
		return fail(e, -EBADMSG, "header checksum mismatch");
	total = ld64(p + H_TOTAL);
	if (total > SIZE_MAX)
		return fail(e, -E2BIG, "index of %llu bytes too large here",
			    (unsigned long long)total);
	if (total != len)
		return fail(e, -EBADMSG, "%s: %zu bytes, header says %llu",
			    len < total ? "truncated" : "trailing data", len,
			    (unsigned long long)total);
	if (crc_run(&ct, 0, p + hlen, len - hlen) != ld32(p + H_BCRC))
		return fail(e, -EBADMSG, "body checksum mismatch");
	if (ld32(p + H_FLAGS) & REQUIRED_FLAGS)
		return fail(e, -EPROTONOSUPPORT, "unknown required flags 0x%x",
			    ld32(p + H_FLAGS) & REQUIRED_FLAGS);
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

static int check_sections(struct dsidx *x, const uint8_t *p, struct errbuf *e)
{
	struct section s[4] = {{0}};
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
	if (rc)
		return rc;
	s[3].off = ld64(p + H_STR_OFF);
	s[3].len = x->str_len = ld64(p + H_STR_LEN);
	if (s[3].off < ld32(p + H_HLEN) || s[3].off > in->size ||
	    s[3].len > in->size - s[3].off)
		return fail(e, -EBADMSG, "string table outside the file");
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
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
		if (!key_ok(key, kl))
			return fail(e, -EBADMSG, "shard %u: invalid key", i);
		if (!etag_ok(key + kl, el))
			return fail(e, -EBADMSG, "shard %u: invalid ETag", i);
		if (prev && name_cmp(prev, prev_len, key, kl) >= 0)
			return fail(e, -EBADMSG,
				    "shard %u: keys unsorted or duplicated", i);
		prev = key, prev_len = kl;
		x->info.shard_bytes =
		    sat_add(x->info.shard_bytes, ld64(r + SR_SIZE));
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

	if ((mode & S_IFMT) != S_IFDIR || (mode & ~(S_IFMT | PERM_BITS)))
		return fail(e, -EBADMSG, "directory %u: bad mode 0%o", i, mode);
	if (ld32(r + DR_NSEC) >= NSEC_PER_SEC)
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
	if (!name_ok(name, len))
		return fail(e, -EBADMSG, "directory %u: invalid name", i);
	pr = dir_rec(x, parent);
	first = ld32(pr + DR_FIRST_DIR);
	if (i < first || i - first >= ld32(pr + DR_NDIRS))
		return fail(e, -EBADMSG,
			    "directory %u: outside its parent's range", i);
	if (i > first) {
		prev = dir_name(x, i - 1, &prev_len);
		if (name_cmp(prev, prev_len, name, len) >= 0)
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
static int check_member_data(struct dsidx *x, uint32_t i, const uint8_t *r,
			     const uint8_t *link, struct errbuf *e)
{
	uint32_t mode = ld32(r + MR_MODE), shard = ld32(r + MR_SHARD);
	uint32_t ll = ld16(r + MR_LINK_LEN);
	uint64_t off = ld64(r + MR_OFFSET), size = ld64(r + MR_SIZE), ss;

	if ((mode & ~(S_IFMT | PERM_BITS)) ||
	    ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFLNK))
		return fail(e, -EBADMSG, "member %u: bad mode 0%o", i, mode);
	if (ld32(r + MR_NSEC) >= NSEC_PER_SEC)
		return fail(e, -EBADMSG, "member %u: bad nanoseconds", i);
	if ((mode & S_IFMT) == S_IFLNK) {
		if (shard != DSIDX_NONE || off || size)
			return fail(e, -EBADMSG, "member %u: symlink with data",
				    i);
		if (ll == 0 || ll > DSIDX_MAX_LINK || memchr(link, 0, ll))
			return fail(e, -EBADMSG,
				    "member %u: bad symlink target", i);
		return 0;
	}
	if (ll)
		return fail(e, -EBADMSG,
			    "member %u: regular file with a link target", i);
	if (shard >= x->info.nshards)
		return fail(e, -EBADMSG, "member %u: shard %u out of range", i,
			    shard);
	ss = ld64(shard_rec(x, shard) + SR_SIZE);
	if (off > ss || size > ss - off)
		return fail(e, -EBADMSG,
			    "member %u: data past the end of shard %u", i,
			    shard);
	x->info.member_bytes = sat_add(x->info.member_bytes, size);
	return 0;
}

static int check_member(struct dsidx *x, uint32_t i, struct errbuf *e)
{
	const uint8_t *r = mem_rec(x, i), *dr, *name, *prev;
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
	if (!name_ok(name, len))
		return fail(e, -EBADMSG, "member %u: invalid name", i);
	if (i > first) {
		prev = mem_name(x, i - 1, &prev_len);
		if (name_cmp(prev, prev_len, name, len) >= 0)
			return fail(e, -EBADMSG,
				    "member %u: names unsorted or duplicated",
				    i);
	}
	return check_member_data(x, i, r, name + len, e);
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
		c = name_cmp(a, al, b, bl);
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
	for (uint32_t i = 0; !rc && i < x->info.nmembers; i++)
		rc = check_member(x, i, &e);
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
		int c = name_cmp(mn, ml, name, len);

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
