// SPDX-License-Identifier: MIT
/*
 * The read path: the extent cache of rd.h.
 *
 * Objects (key + ETag) are in a hash table; each holds its extents in an
 * ordered map (xmap) by offset, never overlapping. A read is turned into
 * pieces (object ranges; zeros between the segments of a sparse file),
 * and each piece is covered, under the lock, by the extents already
 * there and by new extents for the gaps (sized by fetch_size()). Ready
 * extents are pinned and copied from after the lock is dropped; for
 * extents in flight the read adds a waiter. New extents are then issued
 * (the disk cache first, then the store), and the read is answered when
 * its last extent has arrived (rq->pending counts the extents awaited
 * plus one for the issuing call, so that inline completions cannot
 * finish it early).
 *
 * A read answered by a single extent is answered straight from the
 * extent's buffer (which stays pinned until DONE returns); others are
 * assembled in a zeroed buffer of their own.
 *
 * Lifetime: an extent is alive while it is indexed (in its object's map
 * and in an eviction queue) or pinned (by the fetch in flight, or by a
 * read copying from it). Eviction only takes unpinned ready extents, so
 * it frees them at once; a failed fetch unindexes its extent, which the
 * completion frees when it unpins it. An object lives while it has
 * extents; it then leaves the table (forgetting that it was fetched
 * whole).
 *
 * Threading: rd->lock protects everything in struct rd and every
 * extent's and object's mutable fields (marked "lock"). A read's err and
 * msg are written under rd->lock; its buffer is written by the threads
 * that complete its extents, at disjoint places.
 */
#include "rd.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "dcache.h"
#include "xmap.h"

enum { Q_NONE, Q_SMALL, Q_MAIN };

struct rd_wait {
	struct rd_wait *next;
	struct rd_rq *rq;
};

struct rd_ext {
	struct rd_obj *obj;	   /* immutable; counted in obj->nref */
	uint64_t off, len;	   /* immutable: the object's bytes */
	char *data;		   /* lock: NULL until ready, then fixed */
	bool ready;		   /* lock */
	bool indexed;		   /* lock: in obj->map and a queue */
	bool from_disk;		   /* owned by the fetch */
	uint8_t q, freq;	   /* lock: queue and S3-FIFO frequency */
	unsigned pins;		   /* lock: fetch in flight + readers */
	struct rd_ext *prev, *next; /* lock: queue links */
	struct rd_wait *waiters;   /* lock: reads waiting (in flight) */
};

struct rd_obj {
	UT_hash_handle hh; /* rd->objs */
	struct rd *rd;	   /* immutable */
	struct xmap map;   /* lock: extents by offset */
	unsigned nref;	   /* lock: extents alive */
	bool whole;	   /* lock: fetched whole (or being fetched) */
	uint64_t size;	   /* lock: the object's size, 0 until known */
	const char *key;   /* into hkey, immutable */
	const char *etag;  /* into hkey or NULL, immutable */
	size_t hkeylen;
	char hkey[]; /* key NUL etag NUL */
};

/* A piece of a read: LEN bytes at OUT_OFF of the answer are the object's
 * bytes at OBJ_OFF. */
struct rd_piece {
	uint64_t out_off, len, obj_off;
};

struct rd_rq {
	struct rd *rd;
	rd_done_fn *done;
	void *arg;
	char *buf;		  /* the assembled answer, or NULL */
	struct rd_ext *direct;	  /* answered from this (pinned), or NULL */
	size_t len;		  /* immutable */
	struct rd_piece *pieces;  /* immutable, owned */
	size_t npieces;
	_Atomic unsigned pending; /* extents awaited + the issuing call */
	bool is_direct;		  /* immutable once planned */
	int err;		  /* rd->lock */
	char msg[160];		  /* rd->lock */
};

struct rd_queue {
	struct rd_ext *head, *tail; /* head: newest */
	uint64_t bytes;
	size_t count;
};

#define RD_STREAMS 64
struct rd_stream {
	uint64_t id;
	uint64_t next;	 /* file offset a sequential read starts at */
	uint64_t window; /* bytes */
};

struct rd {
	struct store *store;   /* borrowed, immutable */
	struct dcache *dcache; /* borrowed or NULL, immutable */
	const char *store_id;  /* immutable, for disk cache names */
	uint64_t budget, inflight_max, window_max, dataset_bytes;
	enum rd_prefetch prefetch;
	pthread_mutex_t lock;
	pthread_cond_t idle;	     /* inflight reached 0 */
	struct rd_obj *objs;	     /* lock */
	struct rd_queue small, main; /* lock */
	uint64_t *ghost;	     /* lock: fingerprints, direct-mapped */
	size_t ghost_mask;
	uint64_t whole_bytes; /* lock: sizes of the shards fetched whole */
	struct rd_stream streams[RD_STREAMS]; /* lock */
	struct rd_stats stats;		      /* lock */
};

/* ---- objects and extents (all under rd->lock) ---- */

static size_t obj_hkey(char *dst, const char *key, const char *etag)
{
	size_t kl = strlen(key) + 1, el = strlen(etag ? etag : "") + 1;

	if (dst) {
		memcpy(dst, key, kl);
		memcpy(dst + kl, etag ? etag : "", el);
	}
	return kl + el;
}

static struct rd_obj *obj_get(struct rd *rd, const char *key,
			      const char *etag)
{
	size_t n = obj_hkey(NULL, key, etag);
	char stackkey[512], *hk = n <= sizeof(stackkey) ? stackkey : malloc(n);
	struct rd_obj *o = NULL;

	if (!hk)
		return NULL;
	obj_hkey(hk, key, etag);
	HASH_FIND(hh, rd->objs, hk, n, o);
	if (!o) {
		o = calloc(1, sizeof(*o) + n);
		if (o) {
			memcpy(o->hkey, hk, n);
			o->rd = rd;
			o->hkeylen = n;
			o->key = o->hkey;
			o->etag = etag ? o->hkey + strlen(key) + 1 : NULL;
			xmap_init(&o->map);
			HASH_ADD_KEYPTR(hh, rd->objs, o->hkey, o->hkeylen, o);
		}
	}
	if (hk != stackkey)
		free(hk);
	return o;
}

/* Frees O when no extent refers to it any more. */
static void obj_maybe_free(struct rd *rd, struct rd_obj *o)
{
	if (o->nref > 0)
		return;
	HASH_DEL(rd->objs, o);
	xmap_release(&o->map);
	free(o);
}

static void q_push(struct rd_queue *q, struct rd_ext *e, uint8_t which)
{
	e->prev = NULL;
	e->next = q->head;
	if (q->head)
		q->head->prev = e;
	q->head = e;
	if (!q->tail)
		q->tail = e;
	q->bytes += e->len;
	q->count++;
	e->q = which;
}

static void q_del(struct rd_queue *q, struct rd_ext *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		q->tail = e->prev;
	q->bytes -= e->len;
	q->count--;
	e->prev = e->next = NULL;
	e->q = Q_NONE;
}

static struct rd_queue *q_of(struct rd *rd, struct rd_ext *e)
{
	return e->q == Q_MAIN ? &rd->main : &rd->small;
}

static uint64_t fingerprint(const struct rd_obj *o, uint64_t off)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < o->hkeylen; i++)
		h = (h ^ (unsigned char)o->hkey[i]) * 1099511628211ull;
	h ^= off * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	return h | 1; /* 0 marks an empty ghost slot */
}

static void ext_unindex(struct rd *rd, struct rd_ext *e)
{
	if (!e->indexed)
		return;
	xmap_remove(&e->obj->map, e->off);
	q_del(q_of(rd, e), e);
	e->indexed = false;
}

/* Frees E if nothing holds it any more. */
static void ext_maybe_free(struct rd *rd, struct rd_ext *e)
{
	struct rd_obj *o = e->obj;

	if (e->indexed || e->pins > 0)
		return;
	rd->stats.cache_bytes -= e->len;
	rd->stats.cache_extents--;
	free(e->data);
	free(e);
	o->nref--;
	obj_maybe_free(rd, o);
}

static void ext_unpin(struct rd *rd, struct rd_ext *e)
{
	e->pins--;
	ext_maybe_free(rd, e);
}

/* A new extent in flight, indexed and pinned by its fetch, or NULL. */
static struct rd_ext *ext_new(struct rd *rd, struct rd_obj *o, uint64_t off,
			      uint64_t len)
{
	struct rd_ext *e = calloc(1, sizeof(*e));
	uint64_t fp;
	size_t slot;

	if (!e)
		return NULL;
	e->obj = o;
	e->off = off;
	e->len = len;
	e->pins = 1;
	if (xmap_insert(&o->map, off, e) != 0) {
		free(e);
		return NULL;
	}
	e->indexed = true;
	o->nref++;
	/* S3-FIFO: a ghost (evicted from small unread, lately) goes
	 * straight to main; anything else starts in small. */
	fp = fingerprint(o, off);
	slot = (size_t)fp & rd->ghost_mask;
	if (rd->ghost[slot] == fp) {
		rd->ghost[slot] = 0;
		q_push(&rd->main, e, Q_MAIN);
	} else {
		q_push(&rd->small, e, Q_SMALL);
	}
	rd->stats.cache_bytes += len;
	rd->stats.cache_extents++;
	rd->stats.inflight_bytes += len;
	return e;
}

/* ---- eviction ---- */

static void evict(struct rd *rd, struct rd_ext *e, bool ghost)
{
	if (ghost) {
		uint64_t fp = fingerprint(e->obj, e->off);

		rd->ghost[(size_t)fp & rd->ghost_mask] = fp;
	}
	rd->stats.evictions++;
	rd->stats.evicted_bytes += e->len;
	ext_unindex(rd, e);
	ext_maybe_free(rd, e);
}

/*
 * Evicts one extent of Q (small when SMALL) by S3-FIFO, looking at each
 * extent at most a few times; false when none can go. Extents read since
 * they entered small move to main instead of leaving; main's extents
 * read since their last turn go round again.
 */
static bool evict_from(struct rd *rd, struct rd_queue *q, bool small)
{
	size_t tries = q->count * (small ? 1 : 4) + 1;

	while (tries-- > 0 && q->count > 0) {
		struct rd_ext *e = q->tail;

		if (e->pins > 0 || !e->ready) {
			q_del(q, e); /* busy: look at the next one */
			q_push(q, e, small ? Q_SMALL : Q_MAIN);
			continue;
		}
		if (e->freq > 0) {
			q_del(q, e);
			e->freq = small ? 0 : e->freq - 1;
			q_push(&rd->main, e, Q_MAIN);
			continue;
		}
		evict(rd, e, small);
		return true;
	}
	return false;
}

/*
 * Evicts one extent: from small while it holds more than a tenth of the
 * budget, else from main; from the other queue when the first has
 * nothing that can go (and from main again after small: small may have
 * moved its read extents there, where they can go). False when every
 * extent is pinned or in flight.
 */
static bool evict_one(struct rd *rd)
{
	bool small = rd->small.bytes > rd->budget / 10 || rd->main.count == 0;

	if (small)
		return evict_from(rd, &rd->small, true) ||
		       evict_from(rd, &rd->main, false);
	return evict_from(rd, &rd->main, false) ||
	       evict_from(rd, &rd->small, true) ||
	       evict_from(rd, &rd->main, false);
}

/* Evicts until NEED more bytes fit the budget; false if they cannot. */
static bool make_room(struct rd *rd, uint64_t need)
{
	while (rd->stats.cache_bytes + need > rd->budget)
		if (!evict_one(rd))
			return false;
	return true;
}

static void rd_dcache_write(struct rd *rd, struct rd_ext *e);

/* ---- life cycle and counters ---- */

int rd_new(const struct rd_conf *conf, struct rd **out)
{
	struct rd *rd = calloc(1, sizeof(*rd));
	size_t g = 4096;

	if (!rd)
		return -ENOMEM;
	rd->store = conf->store;
	rd->dcache = conf->dcache;
	rd->budget = conf->cache_bytes ? conf->cache_bytes : RD_DEFAULT_CACHE;
	rd->inflight_max = conf->inflight_max;
	if (!rd->inflight_max) {
		rd->inflight_max = rd->budget / 2;
		if (rd->inflight_max > (1ull << 30))
			rd->inflight_max = 1ull << 30;
	}
	rd->window_max = conf->window_max ? conf->window_max
					  : RD_WINDOW_MAX_DEFAULT;
	if (rd->window_max < RD_WINDOW_MIN)
		rd->window_max = RD_WINDOW_MIN;
	rd->prefetch = conf->prefetch;
	rd->dataset_bytes = conf->dataset_bytes;
	/* About one ghost slot per 16 KiB of budget: enough to remember
	 * what left small lately, bounded (2 MiB at most). */
	while (g < (1u << 18) && (uint64_t)g * 16384 < rd->budget)
		g *= 2;
	rd->ghost = calloc(g, sizeof(*rd->ghost));
	if (!rd->ghost) {
		free(rd);
		return -ENOMEM;
	}
	rd->ghost_mask = g - 1;
	rd->store_id = rd->store && rd->store->ops->cache_id
			       ? rd->store->ops->cache_id(rd->store)
			       : "";
	rd->stats.cache_budget = rd->budget;
	pthread_mutex_init(&rd->lock, NULL);
	pthread_cond_init(&rd->idle, NULL);
	*out = rd;
	return 0;
}

void rd_free(struct rd *rd)
{
	struct rd_obj *o, *tmp;

	if (!rd)
		return;
	pthread_mutex_lock(&rd->lock);
	while (rd->stats.inflight > 0)
		pthread_cond_wait(&rd->idle, &rd->lock);
	/* Nothing is pinned now: every extent is indexed and unpinned. */
	while (rd->small.tail)
		evict(rd, rd->small.tail, false);
	while (rd->main.tail)
		evict(rd, rd->main.tail, false);
	HASH_ITER(hh, rd->objs, o, tmp) {
		HASH_DEL(rd->objs, o);
		xmap_release(&o->map);
		free(o);
	}
	pthread_mutex_unlock(&rd->lock);
	pthread_cond_destroy(&rd->idle);
	pthread_mutex_destroy(&rd->lock);
	free(rd->ghost);
	free(rd);
}

void rd_get_stats(struct rd *rd, struct rd_stats *out)
{
	pthread_mutex_lock(&rd->lock);
	*out = rd->stats;
	pthread_mutex_unlock(&rd->lock);
}

/* ---- answering reads ---- */

static void rq_free(struct rd_rq *rq)
{
	free(rq->pieces);
	free(rq->buf);
	free(rq);
}

/* Records the first error of RQ (rd->lock held). */
static void rq_fail_locked(struct rd_rq *rq, int err, const char *msg)
{
	if (rq->err)
		return;
	rq->err = err;
	snprintf(rq->msg, sizeof(rq->msg), "%s", msg ? msg : "");
}

/* Answers RQ and frees it. */
static void rq_answer(struct rd_rq *rq)
{
	struct rd *rd = rq->rd;
	struct rd_ext *d = rq->direct;
	const char *data = rq->buf;

	pthread_mutex_lock(&rd->lock);
	if (rq->err) {
		rd->stats.errors++;
	} else {
		rd->stats.served++;
		rd->stats.bytes_served += rq->len;
	}
	pthread_mutex_unlock(&rd->lock);
	if (d && !rq->err)
		data = d->data + (rq->pieces[0].obj_off - d->off);
	if (rq->err)
		rq->done(rq->arg, rq->err, NULL, 0, rq->msg);
	else
		rq->done(rq->arg, 0, data, rq->len, NULL);
	if (d) {
		pthread_mutex_lock(&rd->lock);
		ext_unpin(rd, d);
		pthread_mutex_unlock(&rd->lock);
	}
	rq_free(rq);
}

static void rq_put(struct rd_rq *rq)
{
	if (atomic_fetch_sub(&rq->pending, 1) == 1)
		rq_answer(rq);
}

/* Copies into RQ's buffer the pieces that extent E (ready) holds. */
static void rq_copy(struct rd_rq *rq, const struct rd_ext *e)
{
	if (rq->is_direct || !rq->buf)
		return; /* a direct answer, or failed already */
	for (size_t i = 0; i < rq->npieces; i++) {
		const struct rd_piece *p = &rq->pieces[i];
		uint64_t a = p->obj_off, b = p->obj_off + p->len;

		if (a < e->off)
			a = e->off;
		if (b > e->off + e->len)
			b = e->off + e->len;
		if (a >= b)
			continue;
		memcpy(rq->buf + p->out_off + (a - p->obj_off),
		       e->data + (a - e->off), (size_t)(b - a));
	}
}

/* ---- completion of a fetch ---- */

static void count_done(struct rd *rd)
{
	if (--rd->stats.inflight == 0)
		pthread_cond_broadcast(&rd->idle);
}

/*
 * The store's (or the disk cache's) answer for extent E, which its fetch
 * pins. DATA is taken. STORE: the answer of a store request, which is
 * counted here (bytes fetched, requests in flight) in the same locked
 * sections. Waiters are answered outside the lock; a direct waiter pins
 * E until its DONE has returned.
 */
static void ext_done(struct rd_ext *e, int err, char *data, size_t len,
		     const char *msg, bool store)
{
	struct rd *rd = e->obj->rd;
	struct rd_wait *w, *next;
	uint64_t fetched = store && !err ? len : 0;

	if (!err && len != e->len) {
		/* Never hand out a short answer as the file's bytes. */
		err = -EIO;
		msg = "store returned a short range";
	}
	pthread_mutex_lock(&rd->lock);
	rd->stats.bytes += fetched;
	rd->stats.inflight_bytes -= e->len;
	w = e->waiters;
	e->waiters = NULL;
	if (err) {
		ext_unindex(rd, e);
		for (struct rd_wait *x = w; x; x = x->next)
			rq_fail_locked(x->rq, err, msg);
	} else {
		e->data = data;
		data = NULL;
		e->ready = true;
		for (struct rd_wait *x = w; x; x = x->next) {
			if (x->rq->is_direct) {
				x->rq->direct = e;
				e->pins++;
			}
		}
	}
	pthread_mutex_unlock(&rd->lock);
	free(data);
	if (!err && !e->from_disk && rd->dcache && e->obj->etag)
		rd_dcache_write(rd, e);
	for (; w; w = next) {
		next = w->next;
		if (!err)
			rq_copy(w->rq, e);
		rq_put(w->rq);
		free(w);
	}
	pthread_mutex_lock(&rd->lock);
	ext_unpin(rd, e);
	if (store)
		count_done(rd); /* last: rd_free() may go on after it */
	pthread_mutex_unlock(&rd->lock);
}

static void on_range(void *arg, int err, char *data, size_t len,
		     const char *msg)
{
	ext_done(arg, err, data, len, msg, true);
}

/* ---- issuing fetches ---- */

/* The disk cache's name of O: the store's id and the key. Caller frees. */
static char *dc_name(const struct rd *rd, const struct rd_obj *o)
{
	size_t n = strlen(rd->store_id) + strlen(o->key) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s|%s", rd->store_id, o->key);
	return s;
}

/* Hands a copy of E's bytes (E is ready and pinned) to the disk cache. */
static void rd_dcache_write(struct rd *rd, struct rd_ext *e)
{
	char *name = dc_name(rd, e->obj);

	if (name)
		dcache_write(rd->dcache, name, e->obj->etag, e->off, e->len,
			     e->data);
	free(name);
}

/* Answers E from the disk cache when it holds the bytes. */
static bool try_disk(struct rd *rd, struct rd_ext *e)
{
	char *name, *data = NULL;
	int rc;

	if (!rd->dcache || !e->obj->etag)
		return false;
	name = dc_name(rd, e->obj);
	rc = name ? dcache_read(rd->dcache, name, e->obj->etag, e->off,
				e->len, &data)
		  : -ENOMEM;
	free(name);
	if (rc != 0)
		return false;
	e->from_disk = true;
	pthread_mutex_lock(&rd->lock);
	rd->stats.disk_hits++;
	rd->stats.disk_bytes_read += e->len;
	pthread_mutex_unlock(&rd->lock);
	ext_done(e, 0, data, (size_t)e->len, NULL, false);
	return true;
}

/* Fetches the bytes of extent E (in flight, pinned by this fetch). */
static void issue(struct rd *rd, struct rd_ext *e)
{
	bool whole;
	int rc;

	if (try_disk(rd, e))
		return;
	pthread_mutex_lock(&rd->lock);
	rd->stats.requests++;
	rd->stats.inflight++;
	whole = e->off == 0 && e->len == e->obj->size;
	pthread_mutex_unlock(&rd->lock);
	/* A whole object: one plain GET, checked on arrival, costs the
	 * server less than a conditional range. */
	if (whole && rd->store->ops->get_whole)
		rc = rd->store->ops->get_whole(rd->store, e->obj->key, e->len,
					       e->obj->etag, on_range, e);
	else
		rc = rd->store->ops->get_range(rd->store, e->obj->key, e->off,
					       e->len, e->obj->etag, on_range,
					       e);
	if (rc) {
		/* on_range() will not be called: answer for it. */
		ext_done(e, rc, NULL, 0, "the store refused the request",
			 true);
	}
}

/* ---- planning a read (under rd->lock) ---- */

/* What planning one read collects. */
struct plan {
	struct rd_ext **fresh; /* new extents, to issue after the lock */
	size_t nfresh, afresh;
	struct rd_ext **ready; /* pinned ready extents, to copy from */
	size_t nready, aready;
	struct rd_ext *last; /* the extent covered last (no duplicates) */
	size_t ncover;
	bool joined; /* waits for an extent another read fetches */
	/* How to size fetches for this file: */
	bool small;	 /* fetch [lo, hi) whole */
	bool seq;	 /* a sequential stream: windows */
	uint64_t lo, hi; /* the file's range in the object */
	uint64_t window;
	uint64_t sid; /* the stream (seq only) */
};

static int push_ext(struct rd_ext ***arr, size_t *n, size_t *alloc,
		    struct rd_ext *e)
{
	if (*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 8;
		struct rd_ext **p = realloc(*arr, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*arr = p;
		*alloc = na;
	}
	(*arr)[(*n)++] = e;
	return 0;
}

/* A new extent [A, B) of O, to be issued. NULL on ENOMEM. */
static struct rd_ext *plan_new(struct rd *rd, struct plan *pl,
			       struct rd_obj *o, uint64_t a, uint64_t b)
{
	struct rd_ext *e = ext_new(rd, o, a, b - a);

	if (!e)
		return NULL;
	if (push_ext(&pl->fresh, &pl->nfresh, &pl->afresh, e) != 0) {
		/* Not issued: take it back out. */
		ext_unindex(rd, e);
		rd->stats.inflight_bytes -= e->len;
		ext_unpin(rd, e);
		return NULL;
	}
	return e;
}

/* RQ will be answered with bytes of E. 0 or -ENOMEM. */
static int cover(struct rd *rd, struct plan *pl, struct rd_rq *rq,
		 struct rd_ext *e, bool mine)
{
	struct rd_wait *w;

	if (e == pl->last)
		return 0;
	pl->last = e;
	pl->ncover++;
	if (e->ready) {
		if (push_ext(&pl->ready, &pl->nready, &pl->aready, e) != 0)
			return -ENOMEM;
		e->pins++;
		if (e->freq < 3)
			e->freq++;
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rq = rq;
	w->next = e->waiters;
	e->waiters = w;
	atomic_fetch_add(&rq->pending, 1);
	if (!mine)
		pl->joined = true;
	(void)rd;
	return 0;
}

/* The extent of O that holds POS, or NULL; LO and HI: the free gap
 * around POS otherwise (HI: UINT64_MAX when nothing follows). */
static struct rd_ext *find(const struct rd_obj *o, uint64_t pos,
			   uint64_t *lo, uint64_t *hi)
{
	uint64_t k;
	void *v;
	struct rd_ext *e;

	*lo = 0;
	*hi = UINT64_MAX;
	if (xmap_floor(&o->map, pos, &k, &v)) {
		e = v;
		if (pos < e->off + e->len)
			return e;
		*lo = e->off + e->len;
	}
	if (xmap_higher(&o->map, pos, &k, &v))
		*hi = k;
	return NULL;
}

/*
 * The fetch for the gap [POS, NEED) (free space [LO, HI)): the gap, grown
 * by the file's rules when the budget and the bytes in flight allow.
 */
static void fetch_range(struct rd *rd, const struct plan *pl, uint64_t pos,
			uint64_t need, uint64_t lo, uint64_t hi, uint64_t *fa,
			uint64_t *fb)
{
	uint64_t a = pos, b = need;

	if (pl->small) {
		a = a < pl->lo ? a : pl->lo;
		b = b > pl->hi ? b : pl->hi;
	} else if (pl->seq && pos + pl->window > b) {
		b = pos + pl->window < pl->hi ? pos + pl->window : pl->hi;
		b = b > need ? b : need;
	}
	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	if (b - a > need - pos &&
	    (rd->stats.inflight_bytes + (b - a) > rd->inflight_max ||
	     !make_room(rd, b - a))) {
		a = pos;
		b = need;
	}
	if (a == pos && b == need)
		make_room(rd, b - a); /* best effort: a read always goes */
	rd->stats.prefetch_bytes += (b - a) - (need - pos);
	*fa = a;
	*fb = b;
}

/* Covers the object bytes [A, B) for RQ. 0 or -ENOMEM. */
static int cover_range(struct rd *rd, struct plan *pl, struct rd_rq *rq,
		       struct rd_obj *o, uint64_t a, uint64_t b)
{
	uint64_t pos = a;

	while (pos < b) {
		uint64_t lo, hi, fa, fb;
		struct rd_ext *e = find(o, pos, &lo, &hi);
		bool mine = false;
		int rc;

		if (!e) {
			fetch_range(rd, pl, pos, b < hi ? b : hi, lo, hi, &fa,
				    &fb);
			e = plan_new(rd, pl, o, fa, fb);
			if (!e)
				return -ENOMEM;
			mine = true;
		}
		rc = cover(rd, pl, rq, e, mine);
		if (rc)
			return rc;
		pos = e->off + e->len;
	}
	return 0;
}

/* Whether a shard of SIZE bytes is to be fetched whole. */
static bool want_whole(const struct rd *rd, uint64_t size)
{
	if (size == 0 || size > rd->budget / 2)
		return false; /* it would push out half the cache */
	switch (rd->prefetch) {
	case RD_PREFETCH_SHARD:
		return true;
	case RD_PREFETCH_MEMBER:
		return false;
	case RD_PREFETCH_AUTO:
	default:
		if (rd->dataset_bytes)
			return rd->dataset_bytes <= rd->budget;
		return rd->whole_bytes + size <= rd->budget / 2;
	}
}

/* The bytes of [0, SIZE) of O that no extent holds. */
static uint64_t gap_bytes(const struct rd_obj *o, uint64_t size)
{
	uint64_t pos = 0, sum = 0, lo, hi;

	while (pos < size) {
		struct rd_ext *e = find(o, pos, &lo, &hi);

		if (e) {
			pos = e->off + e->len;
			continue;
		}
		hi = hi < size ? hi : size;
		sum += hi - pos;
		pos = hi;
	}
	return sum;
}

/*
 * Whole-shard mode: fetches every gap of shard O (SIZE bytes) in ranges
 * aligned to a fixed size (the same ranges on every mount, which the
 * disk cache relies on), when the bytes in flight and the budget allow;
 * otherwise the read goes on with member fetches and a later read of the
 * shard tries again.
 */
static void plan_whole(struct rd *rd, struct plan *pl, struct rd_obj *o,
		       uint64_t size)
{
	uint64_t r = (size / 4 + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
	uint64_t gaps = gap_bytes(o, size), pos = 0, lo, hi;

	if (r < RD_SHARD_RANGE_MIN)
		r = RD_SHARD_RANGE_MIN;
	if (r > RD_SHARD_RANGE_MAX)
		r = RD_SHARD_RANGE_MAX;
	if (gaps > 0 && (rd->stats.inflight_bytes + gaps > rd->inflight_max ||
			 !make_room(rd, gaps)))
		return;
	o->whole = true;
	rd->whole_bytes += size;
	rd->stats.shard_fetches++;
	rd->stats.prefetch_bytes += gaps;
	while (pos < size) {
		struct rd_ext *e = find(o, pos, &lo, &hi);
		uint64_t end = (pos / r + 1) * r;

		if (e) {
			pos = e->off + e->len;
			continue;
		}
		end = end < hi ? end : hi;
		end = end < size ? end : size;
		if (!plan_new(rd, pl, o, pos, end))
			return; /* out of memory: members will be fetched */
		pos = end;
	}
}

static struct rd_stream *stream_of(struct rd *rd, uint64_t id)
{
	return &rd->streams[(id * 0x9e3779b97f4a7c15ull) >> 58 &
			    (RD_STREAMS - 1)];
}

/* The sequential state of a stream, updated for a read at OFF of LEN. */
static void plan_stream(struct rd *rd, struct plan *pl, uint64_t id,
			uint64_t off, uint64_t len)
{
	struct rd_stream *st = stream_of(rd, id);
	bool seq;

	if (st->id != id) {
		st->id = id;
		st->next = UINT64_MAX;
		st->window = RD_WINDOW_MIN;
	}
	/* Sequential: at the start, or near where the last read ended (the
	 * kernel's readahead reads may arrive slightly out of order). */
	seq = off == 0 || (st->next != UINT64_MAX &&
			   off + RD_WINDOW_MIN >= st->next &&
			   off <= st->next + RD_WINDOW_MIN);
	if (!seq) {
		st->window = RD_WINDOW_MIN;
		st->next = off + len;
	} else if (st->next == UINT64_MAX || off + len > st->next) {
		st->next = off + len;
	}
	pl->seq = seq;
	pl->window = st->window;
	pl->sid = id;
}

/*
 * Sequential readahead: when less than half a window is held ahead of
 * the read's end END (an object offset), fetches the next window and
 * doubles the window (up to the cap).
 */
static void plan_ahead(struct rd *rd, struct plan *pl, struct rd_obj *o,
		       uint64_t end)
{
	struct rd_stream *st = stream_of(rd, pl->sid);
	uint64_t id = pl->sid;
	uint64_t c = end, lo, hi, b;

	for (int i = 0; i < 64; i++) {
		struct rd_ext *e = find(o, c, &lo, &hi);

		if (!e)
			break;
		c = e->off + e->len;
	}
	if (c >= pl->hi || c - end >= pl->window / 2)
		return;
	if (find(o, c, &lo, &hi))
		return; /* more than 64 extents ahead: plenty */
	b = c + pl->window;
	b = b < pl->hi ? b : pl->hi;
	b = b < hi ? b : hi;
	if (rd->stats.inflight_bytes + (b - c) > rd->inflight_max ||
	    !make_room(rd, b - c))
		return;
	if (!plan_new(rd, pl, o, c, b))
		return;
	rd->stats.prefetch_bytes += b - c;
	if (st->id == id && st->window < rd->window_max)
		st->window = st->window * 2 < rd->window_max ? st->window * 2
							     : rd->window_max;
}

/* ---- reads ---- */

/*
 * The pieces of SEGS that fall in [OFF, OFF + LEN), as answer offsets.
 * Returns their number (0 when the range is all zeros), or -ENOMEM.
 */
static long cut_pieces(const struct rd_seg *segs, size_t nsegs, uint64_t off,
		       uint64_t len, struct rd_piece **out)
{
	uint64_t end = off + len;
	struct rd_piece *p = NULL;
	size_t n = 0, alloc = 0;

	for (size_t i = 0; i < nsegs; i++) {
		const struct rd_seg *s = &segs[i];
		uint64_t a = s->file_off, b = s->file_off + s->len;

		if (b <= off || a >= end || s->len == 0)
			continue;
		a = a < off ? off : a;
		b = b > end ? end : b;
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 4;
			struct rd_piece *q = realloc(p, na * sizeof(*q));

			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			alloc = na;
		}
		p[n].out_off = a - off;
		p[n].len = b - a;
		p[n].obj_off = s->obj_off + (a - s->file_off);
		n++;
	}
	*out = p;
	return (long)n;
}

/* How fetches for file F are sized (see rd.h). */
static void plan_file(struct rd *rd, struct plan *pl, const struct rd_file *f,
		      const struct rd_seg *segs, size_t nsegs, uint64_t off,
		      uint64_t len)
{
	uint64_t id = f->stream;

	if (f->hint_len) {
		pl->lo = f->hint_off;
		pl->hi = f->hint_off + f->hint_len;
	} else {
		pl->lo = segs[0].obj_off;
		pl->hi = segs[nsegs - 1].obj_off + segs[nsegs - 1].len;
	}
	pl->small = f->size <= RD_SMALL;
	if (pl->small || nsegs > 1)
		return; /* whole, or a sparse file: exact fetches */
	if (!id) {
		/* No inode: the key names the stream. */
		for (const char *p = f->key; *p; p++)
			id = (id ^ (unsigned char)*p) * 1099511628211ull;
	}
	plan_stream(rd, pl, id | 1, off, len);
}

/*
 * Plans RQ (its pieces cut) under rd->lock: covers every piece, starts
 * what is missing, and decides how RQ is answered. 0 or -ENOMEM.
 */
static int plan_read(struct rd *rd, struct plan *pl, struct rd_rq *rq,
		     const struct rd_file *f, const struct rd_seg *segs,
		     size_t nsegs, uint64_t off)
{
	struct rd_obj *o = obj_get(rd, f->key, f->etag);
	int rc = 0;

	if (!o)
		return -ENOMEM;
	o->nref++; /* eviction may empty it while we plan */
	if (!o->size)
		o->size = f->obj_size;
	plan_file(rd, pl, f, segs, nsegs, off, rq->len);
	if (f->member && f->obj_size && !o->whole &&
	    want_whole(rd, f->obj_size))
		plan_whole(rd, pl, o, f->obj_size);
	for (size_t i = 0; i < rq->npieces && rc == 0; i++) {
		const struct rd_piece *p = &rq->pieces[i];

		rc = cover_range(rd, pl, rq, o, p->obj_off, p->obj_off + p->len);
	}
	if (rc == 0 && pl->seq && rq->npieces > 0) {
		const struct rd_piece *p = &rq->pieces[rq->npieces - 1];

		plan_ahead(rd, pl, o, p->obj_off + p->len);
	}
	o->nref--;
	obj_maybe_free(rd, o);
	return rc;
}

/*
 * Copies RQ's ready extents into its buffer (or keeps the one a direct
 * answer uses: the only one, set as rq->direct when planned) and unpins
 * them. rq->direct is not read here: for an extent in flight, its
 * completion sets it under the lock meanwhile.
 */
static void finish_ready(struct rd *rd, struct plan *pl, struct rd_rq *rq)
{
	if (rq->is_direct || pl->nready == 0)
		return; /* a direct answer covers one extent, pinned */
	for (size_t i = 0; i < pl->nready; i++)
		rq_copy(rq, pl->ready[i]);
	pthread_mutex_lock(&rd->lock);
	for (size_t i = 0; i < pl->nready; i++)
		ext_unpin(rd, pl->ready[i]);
	pthread_mutex_unlock(&rd->lock);
}

void rd_read_file(struct rd *rd, const struct rd_file *f, uint64_t off,
		  size_t size, rd_done_fn *done, void *arg)
{
	struct rd_seg whole = {0, f->size, 0};
	const struct rd_seg *segs = f->segs ? f->segs : &whole;
	size_t nsegs = f->segs ? f->nsegs : 1;
	struct rd_file ff = *f;
	struct plan pl;
	struct rd_rq *rq;
	uint64_t len = off >= f->size ? 0 : f->size - off;
	long n;
	int rc;

	if (ff.etag && !ff.etag[0])
		ff.etag = NULL; /* never an empty conditional header */
	len = len < size ? len : size;
	rq = calloc(1, sizeof(*rq));
	n = len && rq ? cut_pieces(segs, nsegs, off, len, &rq->pieces) : 0;
	if (!rq || n < 0) {
		pthread_mutex_lock(&rd->lock);
		rd->stats.reads++;
		rd->stats.errors++;
		pthread_mutex_unlock(&rd->lock);
		done(arg, -ENOMEM, NULL, 0, "out of memory");
		free(rq);
		return;
	}
	rq->rd = rd;
	rq->done = done;
	rq->arg = arg;
	rq->len = (size_t)len;
	rq->npieces = (size_t)n;
	atomic_init(&rq->pending, 1);
	memset(&pl, 0, sizeof(pl));
	pthread_mutex_lock(&rd->lock);
	rd->stats.reads++;
	rc = n > 0 ? plan_read(rd, &pl, rq, &ff, segs, nsegs, off) : 0;
	if (rc)
		rq_fail_locked(rq, rc, "out of memory");
	if (pl.ncover == 1 && rq->npieces == 1 && rq->pieces[0].len == len) {
		rq->is_direct = true;
		if (pl.nready == 1)
			rq->direct = pl.ready[0];
	} else if (len && !(rq->buf = calloc(1, (size_t)len))) {
		rq_fail_locked(rq, -ENOMEM, "out of memory");
	}
	if (pl.nfresh > 0)
		rd->stats.misses++;
	else if (pl.joined)
		rd->stats.joined++;
	else if (pl.ncover > 0)
		rd->stats.hits++;
	pthread_mutex_unlock(&rd->lock);
	for (size_t i = 0; i < pl.nfresh; i++)
		issue(rd, pl.fresh[i]);
	finish_ready(rd, &pl, rq);
	free(pl.fresh);
	free(pl.ready);
	rq_put(rq);
}

void rd_read(struct rd *rd, const char *key, const char *etag, uint64_t off,
	     size_t size, uint64_t file_size, rd_done_fn *done, void *arg)
{
	struct rd_file f = {.key = key, .etag = etag, .size = file_size,
			    .obj_size = file_size};

	rd_read_file(rd, &f, off, size, done, arg);
}

void rd_read_segs(struct rd *rd, const char *key, const char *etag,
		  const struct rd_seg *segs, size_t nsegs, uint64_t file_size,
		  uint64_t off, size_t size, rd_done_fn *done, void *arg)
{
	struct rd_file f = {.key = key, .etag = etag, .size = file_size,
			    .segs = segs, .nsegs = nsegs};

	rd_read_file(rd, &f, off, size, done, arg);
}
