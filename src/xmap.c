// SPDX-License-Identifier: MIT
/*
 * The ordered map of xmap.h: a sorted array of sorted chunks. A full
 * chunk splits in two; an empty one is removed. Every chunk holds at
 * least one entry, so the first key of chunk i is a lower bound of all
 * its keys and binary search over the chunks finds the one to look in.
 * A chunk starts with room for a few entries and doubles up to
 * XMAP_CHUNK: most maps (a loose object's extents) hold one entry.
 */
#include "xmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct xmap_item {
	uint64_t key;
	void *val;
};

struct xmap_chunk {
	size_t n, cap;
	struct xmap_item it[];
};

#define XMAP_FIRST_CAP 2

static struct xmap_chunk *chunk_alloc(size_t cap)
{
	struct xmap_chunk *c =
	    malloc(sizeof(*c) + cap * sizeof(struct xmap_item));

	if (c) {
		c->n = 0;
		c->cap = cap;
	}
	return c;
}

void xmap_init(struct xmap *m)
{
	memset(m, 0, sizeof(*m));
}

void xmap_release(struct xmap *m)
{
	for (size_t i = 0; i < m->nc; i++)
		free(m->c[i]);
	free(m->c);
	memset(m, 0, sizeof(*m));
}

/* The index of the last chunk whose first key is <= K, or -1. */
static long chunk_floor(const struct xmap *m, uint64_t k)
{
	size_t lo = 0, hi = m->nc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->c[mid]->it[0].key <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The number of items of C with a key <= K. */
static size_t item_upper(const struct xmap_chunk *c, uint64_t k)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->it[mid].key <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Inserts chunk C at index AT of the chunk array. 0 or -ENOMEM. */
static int chunk_insert(struct xmap *m, size_t at, struct xmap_chunk *c)
{
	if (m->nc == m->alloc) {
		size_t na = m->alloc ? m->alloc * 2 : 4;
		struct xmap_chunk **p = realloc(m->c, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->c = p;
		m->alloc = na;
	}
	memmove(&m->c[at + 1], &m->c[at], (m->nc - at) * sizeof(*m->c));
	m->c[at] = c;
	m->nc++;
	return 0;
}

/* Splits the full chunk at CI into two halves. 0 or -ENOMEM. */
static int chunk_split(struct xmap *m, size_t ci)
{
	struct xmap_chunk *a = m->c[ci], *b = chunk_alloc(XMAP_CHUNK);
	size_t half = a->n / 2;

	if (!b)
		return -ENOMEM;
	b->n = a->n - half;
	memcpy(b->it, &a->it[half], b->n * sizeof(b->it[0]));
	if (chunk_insert(m, ci + 1, b) != 0) {
		free(b);
		return -ENOMEM;
	}
	a->n = half;
	return 0;
}

int xmap_insert(struct xmap *m, uint64_t key, void *val)
{
	long ci = chunk_floor(m, key);
	struct xmap_chunk *c;
	size_t i;

	if (m->nc == 0) {
		c = chunk_alloc(XMAP_FIRST_CAP);
		if (!c || chunk_insert(m, 0, c) != 0) {
			free(c);
			return -ENOMEM;
		}
		ci = 0;
	}
	if (ci < 0)
		ci = 0; /* before every key: the first chunk takes it */
	c = m->c[ci];
	i = item_upper(c, key);
	if (i > 0 && c->it[i - 1].key == key)
		return -EEXIST;
	if (c->n == c->cap && c->cap < XMAP_CHUNK) {
		size_t cap = c->cap * 2 < XMAP_CHUNK ? c->cap * 2 : XMAP_CHUNK;
		struct xmap_chunk *g =
		    realloc(c, sizeof(*c) + cap * sizeof(c->it[0]));

		if (!g)
			return -ENOMEM;
		g->cap = cap;
		m->c[ci] = c = g;
	}
	if (c->n == XMAP_CHUNK) {
		if (chunk_split(m, (size_t)ci) != 0)
			return -ENOMEM;
		if (i > c->n) { /* the key goes into the new second half */
			i -= c->n;
			c = m->c[++ci];
		}
	}
	memmove(&c->it[i + 1], &c->it[i], (c->n - i) * sizeof(c->it[0]));
	c->it[i].key = key;
	c->it[i].val = val;
	c->n++;
	m->n++;
	return 0;
}

void *xmap_remove(struct xmap *m, uint64_t key)
{
	long ci = chunk_floor(m, key);
	struct xmap_chunk *c;
	size_t i;
	void *val;

	if (ci < 0)
		return NULL;
	c = m->c[ci];
	i = item_upper(c, key);
	if (i == 0 || c->it[i - 1].key != key)
		return NULL;
	i--;
	val = c->it[i].val;
	memmove(&c->it[i], &c->it[i + 1], (c->n - i - 1) * sizeof(c->it[0]));
	c->n--;
	m->n--;
	if (c->n == 0) {
		free(c);
		memmove(&m->c[ci], &m->c[ci + 1],
			(m->nc - (size_t)ci - 1) * sizeof(*m->c));
		m->nc--;
	}
	return val;
}

bool xmap_floor(const struct xmap *m, uint64_t k, uint64_t *key, void **val)
{
	long ci = chunk_floor(m, k);
	const struct xmap_chunk *c;
	size_t i;

	if (ci < 0)
		return false;
	c = m->c[ci];
	i = item_upper(c, k); /* >= 1: the chunk's first key is <= K */
	*key = c->it[i - 1].key;
	*val = c->it[i - 1].val;
	return true;
}

bool xmap_higher(const struct xmap *m, uint64_t k, uint64_t *key,
		 void **val)
{
	long ci = chunk_floor(m, k);
	const struct xmap_chunk *c;
	size_t i = 0;

	if (ci < 0) {
		if (m->nc == 0)
			return false;
		ci = 0;
	} else {
		i = item_upper(m->c[ci], k);
		if (i == m->c[ci]->n) {
			if ((size_t)ci + 1 == m->nc)
				return false;
			ci++;
			i = 0;
		}
	}
	c = m->c[ci];
	*key = c->it[i].key;
	*val = c->it[i].val;
	return true;
}
