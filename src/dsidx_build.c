// SPDX-License-Identifier: MIT
/*
 * The dataset index builder and serialiser (shardfs-index(5)); the reader
 * is src/dsidx.c, the shared layout and helpers include/dsidx_fmt.h.
 *
 * Every add is appended to flat arrays (struct buf, so growth is bounded
 * by the conf's limits), strings to one arena. Directories are found
 * through a small hash table keyed by (parent, name); adding a member
 * probes no table that grows with the member count (one is built only for
 * hard links), so adds stay in the cache. finish() orders dirs
 * breadth-first with siblings by name, and shards by key; it sorts each
 * directory's member adds by name, stably, keeps the last add of each
 * name (last wins) and drops names that are subdirectories (directories
 * win), then writes the file in one pass. The output is canonical: the
 * same final entries give the same bytes whatever the order of the adds.
 *
 * Sparse members (1.1) are ordinary member adds with a private mode bit;
 * their segments live in a side array, found from the add's index by a
 * binary search (adds are numbered in order). An index with no sparse
 * member is written as 1.0.
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "dsidx.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsidx_fmt.h"

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
#define B_SPARSE 0x80000000u /* bmem.mode: a sparse add (see bsparse) */

struct bmem {
	uint32_t dir, name_off; /* the link target follows the name */
	uint16_t name_len, link_len;
	uint32_t shard, mode, nsec;
	uint64_t offset, size;
	int64_t mtime;
};

/* The segments of the sparse member add MEM (hard links share them). */
struct bsparse {
	uint32_t mem;	/* add index; ascending in the array */
	uint32_t nsegs; /* segments at segs[seg] */
	uint64_t seg;
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
	struct buf sparse; /* struct bsparse[], by add index */
	struct buf segs;   /* struct dsidx_segment[] */
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

static inline const struct bsparse *sparse_at(const struct dsidx_builder *b,
					      size_t i)
{
	return (const struct bsparse *)(void *)b->sparse.data + i;
}

static inline const struct dsidx_segment *seg_at(const struct dsidx_builder *b,
						 uint64_t i)
{
	return (const struct dsidx_segment *)(void *)b->segs.data + i;
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
	buf_init(&b->sparse, cap_for(conf->max_members, DSIDX_MAX_MEMBERS,
				     sizeof(struct bsparse)));
	buf_init(&b->segs,
		 cap_for(DSIDX_MAX_SEGMENTS, 0, sizeof(struct dsidx_segment)));
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
	buf_release(&b->sparse);
	buf_release(&b->segs);
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
	return dsidx_name_ok((const uint8_t *)s, n) ? 0 : -EINVAL;
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
	if (!dsidx_key_ok((const uint8_t *)key, kl) ||
	    !dsidx_etag_ok((const uint8_t *)etag, el))
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

	if (b->finished || (mode & ~(S_IFMT | DSIDX_PERM_BITS)) ||
	    mtime_nsec >= DSIDX_NSEC_PER_SEC)
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

/* The segments of sparse add MEM (which must be one). */
static const struct bsparse *sparse_of(const struct dsidx_builder *b,
				       uint32_t mem)
{
	size_t lo = 0, hi = b->sparse.len / sizeof(struct bsparse);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sparse_at(b, mid)->mem < mem)
			lo = mid + 1;
		else
			hi = mid;
	}
	assert(lo < b->sparse.len / sizeof(struct bsparse) &&
	       sparse_at(b, lo)->mem == mem);
	return sparse_at(b, lo);
}

/*
 * Appends member M (a sparse add) at PATH with the NSEGS segments at
 * segs[SEG]. The sparse record's room is reserved first, so that nothing
 * can fail after member_put() has added the member.
 */
static int sparse_put(struct dsidx_builder *b, const char *path, struct bmem *m,
		      uint64_t seg, uint32_t nsegs)
{
	struct bsparse sp = {count_of(&b->mems, sizeof(*m)), nsegs, seg};
	int rc = buf_reserve(&b->sparse, sizeof(sp));

	if (!rc)
		rc = member_put(b, path, m, NULL);
	if (rc)
		return rc;
	buf_append(&b->sparse, &sp, sizeof(sp)); /* reserved: cannot fail */
	return 0;
}

int dsidx_builder_add_sparse(struct dsidx_builder *b, const char *path,
			     uint32_t shard, uint64_t data_offset,
			     uint64_t size, const struct dsidx_segment *segs,
			     uint32_t nsegs, uint32_t mode, int64_t mtime,
			     uint32_t mtime_nsec)
{
	struct bmem m = {.mode = mode | B_SPARSE,
			 .mtime = mtime,
			 .nsec = mtime_nsec,
			 .shard = shard,
			 .offset = data_offset,
			 .size = size};
	uint64_t first = b->segs.len / sizeof(*segs), ss;
	uint32_t bad;
	int rc;

	if (b->finished || (mode & S_IFMT) != S_IFREG ||
	    (mode & ~(S_IFMT | DSIDX_PERM_BITS)) ||
	    mtime_nsec >= DSIDX_NSEC_PER_SEC ||
	    shard >= count_of(&b->shards, sizeof(struct bshard)) ||
	    (nsegs && !segs))
		return -EINVAL;
	ss = shard_at(b, shard)->size;
	if (data_offset > ss || !dsidx_segments_ok(segs, nsegs, sizeof(*segs),
						   false, size, ss, &bad))
		return -EINVAL;
	if ((uint64_t)nsegs * sizeof(*segs) > b->segs.cap - b->segs.len)
		return -E2BIG;
	rc = buf_append(&b->segs, segs, (size_t)nsegs * sizeof(*segs));
	if (!rc)
		rc = sparse_put(b, path, &m, first, nsegs);
	if (rc)
		b->segs.len = (size_t)first * sizeof(*segs);
	return rc;
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
	if (m.mode & B_SPARSE) {
		const struct bsparse *sp = sparse_of(b, idx);

		return sparse_put(b, path, &m, sp->seg, sp->nsegs);
	}
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
	    (mode & ~(S_IFMT | DSIDX_PERM_BITS)) ||
	    mtime_nsec >= DSIDX_NSEC_PER_SEC)
		return -EINVAL;
	rc = dir_walk(b, path, strlen(path), true, &idx);
	if (rc)
		return rc;
	d = dir_at(b, idx);
	d->explicit_dir = true;
	d->mode = S_IFDIR | (mode & DSIDX_PERM_BITS);
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
	return dsidx_name_cmp(strs + x->off, x->len, strs + y->off, y->len);
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
	uint32_t nsparse;   /* sparse members in the file */
	uint64_t nsegs;	    /* their segments */
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
		       (c = dsidx_name_cmp(b->arena.data + sub[si].off,
					   sub[si].len, name, w->keys[k].len)) <
			   0;
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
		if (mem_at(b, last->id)->mode & B_SPARSE) {
			p->nsparse++;
			p->nsegs += sparse_of(b, last->id)->nsegs;
		}
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
		st32(r + MR_MODE, m->mode & ~B_SPARSE);
		st32(r + MR_NAME_OFF, off);
		st16(r + MR_NAME_LEN, m->name_len);
		st16(r + MR_LINK_LEN, m->link_len);
		off += (uint32_t)m->name_len + m->link_len;
	}
	str_put(w, p->mstr.data, p->mstr.len);
}

/* The sparse records (R) of the sparse members in file order, and their
 * segments (G). */
static void write_sparse(const struct dsidx_builder *b, const struct plan *p,
			 uint8_t *r, uint8_t *g)
{
	uint32_t first = 0;

	for (uint32_t i = 0; i < p->nmems && p->nsparse; i++) {
		const struct bsparse *sp;

		if (!(mem_at(b, p->ids[i])->mode & B_SPARSE))
			continue;
		sp = sparse_of(b, p->ids[i]);
		st32(r + XR_MEMBER, i);
		st32(r + XR_FIRST_SEG, first);
		st32(r + XR_NSEGS, sp->nsegs);
		st32(r + XR_NSEGS + 4, 0);
		r += DSIDX_SPARSE_REC_LEN;
		for (uint32_t k = 0; k < sp->nsegs; k++) {
			const struct dsidx_segment *s = seg_at(b, sp->seg + k);

			st64(g + GR_OFFSET, s->offset);
			st64(g + GR_LENGTH, s->length);
			st64(g + GR_ARCHIVE, s->archive_offset);
			g += DSIDX_SEG_REC_LEN;
		}
		first += sp->nsegs;
	}
}

/* Where each section goes: the 1.0 layout, with the two 1.1 tables
 * between the members and the strings when there are sparse members. */
struct layout {
	uint32_t hlen;
	uint64_t shard_off, dir_off, mem_off, sparse_off, seg_off, str_off;
	uint64_t total;
};

static void layout_plan(const struct plan *p, struct layout *l)
{
	l->hlen = p->nsparse ? DSIDX_HEADER_LEN_1_1 : DSIDX_HEADER_LEN;
	l->shard_off = l->hlen;
	l->dir_off = l->shard_off + (uint64_t)p->nshards * DSIDX_SHARD_REC_LEN;
	l->mem_off = l->dir_off + (uint64_t)p->ndirs * DSIDX_DIR_REC_LEN;
	l->sparse_off = l->mem_off + (uint64_t)p->nmems * DSIDX_MEMBER_REC_LEN;
	l->seg_off =
	    l->sparse_off + (uint64_t)p->nsparse * DSIDX_SPARSE_REC_LEN;
	l->str_off = l->seg_off + p->nsegs * DSIDX_SEG_REC_LEN;
	l->total = l->str_off + p->strings;
}

static void write_header(const struct plan *p, const struct layout *l,
			 int64_t created, uint8_t *h)
{
	memset(h, 0, l->hlen);
	memcpy(h, DSIDX_MAGIC, 8);
	st16(h + H_MAJOR, DSIDX_VERSION_MAJOR);
	/* The lowest version that describes the file: 1.0 unless sparse. */
	st16(h + H_MINOR, p->nsparse ? 1 : 0);
	st32(h + H_HLEN, l->hlen);
	st64(h + H_TOTAL, l->total);
	st32(h + H_FLAGS, p->nsparse ? DSIDX_FLAG_SPARSE : 0);
	st64(h + H_CREATED, (uint64_t)created);
	put_table(h + H_SHARDS, l->shard_off, p->nshards, DSIDX_SHARD_REC_LEN);
	put_table(h + H_DIRS, l->dir_off, p->ndirs, DSIDX_DIR_REC_LEN);
	put_table(h + H_MEMBERS, l->mem_off, p->nmems, DSIDX_MEMBER_REC_LEN);
	st64(h + H_STR_OFF, l->str_off);
	st64(h + H_STR_LEN, p->strings);
	if (!p->nsparse)
		return;
	put_table(h + H_SPARSE, l->sparse_off, p->nsparse,
		  DSIDX_SPARSE_REC_LEN);
	put_table(h + H_SEGMENTS, l->seg_off, (uint32_t)p->nsegs,
		  DSIDX_SEG_REC_LEN);
}

static int write_index(const struct dsidx_builder *b, const struct plan *p,
		       int64_t created, struct buf *out)
{
	struct layout l;
	struct strw w;
	uint8_t *h;
	int rc;

	layout_plan(p, &l);
	if (p->strings > DSIDX_MAX_STRINGS || p->nsegs > DSIDX_MAX_SEGMENTS ||
	    l.total > SIZE_MAX)
		return -E2BIG;
	rc = buf_reserve(out, (size_t)l.total);
	if (rc)
		return rc;
	h = (uint8_t *)out->data + out->len;
	write_header(p, &l, created, h);
	w = (struct strw){h + l.str_off, 0};
	write_shards(b, p, h + l.shard_off, &w);
	write_dirs(b, p, created, h + l.dir_off, &w);
	write_members(b, p, h + l.mem_off, &w);
	write_sparse(b, p, h + l.sparse_off, h + l.seg_off);
	assert(w.cur == p->strings);
	rc = dsidx_reseal(h, (size_t)l.total);
	assert(rc == 0);
	out->len += (size_t)l.total;
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
