// SPDX-License-Identifier: MIT
/*
 * The read path, minimal version: exact range fetches with coalescing of
 * identical reads in flight.
 *
 * A request in flight is keyed by (offset, length, key, ETag) packed into
 * one byte string. The first reader creates it, adds itself as a waiter
 * and calls the store; later readers of the same bytes only add a waiter.
 * The store's completion removes the request from the table under the
 * lock, then answers every waiter, in arrival order, without the lock.
 * Because the request leaves the table before its waiters are answered,
 * a reader arriving after that starts a new request (it never joins one
 * whose answer has already been handed out).
 *
 * A read of several segments (rd_read_segs()) is an "assembly": one
 * zeroed buffer for the whole answer and one waiter per run of segments
 * that are contiguous in the object; each run's completion copies its
 * segments into place, and the last one (counted in asm->pending, which
 * also holds one count for the issuing call, so that inline completions
 * cannot finish it early) answers the reader.
 *
 * Threading: rd->lock protects the table, the counters and the list of
 * waiters of each request in the table. A request removed from the table
 * belongs to the thread that removed it. An assembly's error fields are
 * protected by asm->lock; its buffer regions are disjoint per run.
 */
#include "rd.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

struct rd_waiter {
	struct rd_waiter *next;
	rd_done_fn *done;
	void *arg;
	bool is_read; /* answers a whole read: counted in the stats */
};

/* A piece of an assembled read: LEN bytes at OUT_OFF of the answer are
 * the object's bytes at OBJ_OFF. */
struct rd_piece {
	uint64_t out_off, len, obj_off;
};

struct rd_asm {
	struct rd *rd;		  /* immutable */
	rd_done_fn *done;	  /* immutable */
	void *arg;		  /* immutable */
	char *buf;		  /* the answer, zeroed; runs fill their parts */
	size_t len;		  /* immutable */
	_Atomic unsigned pending; /* runs not answered + the issuing call */
	pthread_mutex_t lock;
	int err;       /* lock: the first error */
	char msg[256]; /* lock: its cause */
	struct rd_piece *pieces; /* immutable, owned */
};

/* One run: pieces [first, first + n) of an assembly, contiguous in the
 * object from OBJ_OFF. */
struct rd_run {
	struct rd_asm *a;
	size_t first, n;
	uint64_t obj_off;
};

struct rd_req {
	UT_hash_handle hh;	   /* rd->inflight */
	struct rd *rd;		   /* immutable */
	_Atomic unsigned refs;	   /* the completion + the issuing call */
	struct rd_waiter *waiters; /* rd->lock while in the table */
	struct rd_waiter **tail;   /* rd->lock while in the table */
	const char *key;	   /* points into hkey */
	const char *etag;	   /* points into hkey, or NULL */
	uint64_t off, len;	   /* immutable */
	size_t hkeylen;		   /* immutable */
	unsigned char hkey[];	   /* off, len, key NUL, etag NUL */
};

struct rd {
	struct store *store; /* borrowed, immutable */
	pthread_mutex_t lock;
	pthread_cond_t idle;	 /* signalled when inflight drops to 0 */
	struct rd_req *inflight; /* lock */
	struct rd_stats stats;	 /* lock */
};

int rd_new(const struct rd_conf *conf, struct rd **out)
{
	struct rd *rd = calloc(1, sizeof(*rd));

	if (!rd)
		return -ENOMEM;
	rd->store = conf->store;
	pthread_mutex_init(&rd->lock, NULL);
	pthread_cond_init(&rd->idle, NULL);
	*out = rd;
	return 0;
}

void rd_free(struct rd *rd)
{
	if (!rd)
		return;
	pthread_mutex_lock(&rd->lock);
	while (rd->stats.inflight > 0)
		pthread_cond_wait(&rd->idle, &rd->lock);
	pthread_mutex_unlock(&rd->lock);
	pthread_cond_destroy(&rd->idle);
	pthread_mutex_destroy(&rd->lock);
	free(rd);
}

static void count_error(struct rd *rd)
{
	pthread_mutex_lock(&rd->lock);
	rd->stats.errors++;
	pthread_mutex_unlock(&rd->lock);
}

void rd_get_stats(struct rd *rd, struct rd_stats *out)
{
	pthread_mutex_lock(&rd->lock);
	*out = rd->stats;
	pthread_mutex_unlock(&rd->lock);
}

/* Packs the table key of a request; returns its length. */
static size_t pack_key(unsigned char *dst, const char *key, const char *etag,
		       uint64_t off, uint64_t len)
{
	size_t kl = strlen(key) + 1, el = etag ? strlen(etag) + 1 : 0;

	if (dst) {
		memcpy(dst, &off, sizeof(off));
		memcpy(dst + 8, &len, sizeof(len));
		memcpy(dst + 16, key, kl);
		if (etag)
			memcpy(dst + 16 + kl, etag, el);
	}
	return 16 + kl + el;
}

static struct rd_req *req_new(struct rd *rd, const char *key, const char *etag,
			      uint64_t off, uint64_t len)
{
	size_t n = pack_key(NULL, key, etag, off, len);
	struct rd_req *r = calloc(1, sizeof(*r) + n);

	if (!r)
		return NULL;
	pack_key(r->hkey, key, etag, off, len);
	r->hkeylen = n;
	r->rd = rd;
	r->key = (const char *)r->hkey + 16;
	r->etag = etag ? r->key + strlen(key) + 1 : NULL;
	r->off = off;
	r->len = len;
	r->tail = &r->waiters;
	atomic_init(&r->refs, 2);
	return r;
}

/* Answers and frees every waiter of R (which is out of the table). */
static void answer_all(struct rd_waiter *w, int err, const char *data,
		       size_t len, const char *msg)
{
	while (w) {
		struct rd_waiter *next = w->next;

		w->done(w->arg, err, data, len, msg);
		free(w);
		w = next;
	}
}

/* Takes R out of the table and returns its waiters. */
static struct rd_waiter *req_finish(struct rd_req *r, int err, size_t len)
{
	struct rd *rd = r->rd;
	struct rd_waiter *w;

	pthread_mutex_lock(&rd->lock);
	HASH_DEL(rd->inflight, r);
	w = r->waiters;
	for (struct rd_waiter *x = w; x; x = x->next) {
		if (!x->is_read)
			continue;
		if (err) {
			rd->stats.errors++;
		} else {
			rd->stats.served++;
			rd->stats.bytes_served += len;
		}
	}
	if (!err)
		rd->stats.bytes += len;
	pthread_mutex_unlock(&rd->lock);
	return w;
}

/*
 * Drops one reference to R (which is out of the table); the last one
 * frees it and lets rd_free() proceed. The issuing call keeps R alive
 * until get_range() has returned, even when the store completes inline.
 */
static void req_put(struct rd_req *r)
{
	struct rd *rd = r->rd;

	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	free(r);
	pthread_mutex_lock(&rd->lock);
	if (--rd->stats.inflight == 0)
		pthread_cond_broadcast(&rd->idle);
	pthread_mutex_unlock(&rd->lock);
}

static void on_range(void *arg, int err, char *data, size_t len,
		     const char *msg)
{
	struct rd_req *r = arg;
	struct rd_waiter *w;

	if (!err && len != r->len) {
		/* The store broke its contract; never hand out a short
		 * answer as if it were the file's bytes. */
		err = -EIO;
		msg = "store returned a short range";
	}
	w = req_finish(r, err, len);
	answer_all(w, err, err ? NULL : data, err ? 0 : len, msg);
	free(data);
	req_put(r);
}

/*
 * Adds W to the request in flight for the same bytes as R and returns
 * true, or puts R (with W as its first waiter) in the table and returns
 * false.
 */
static bool join_or_add(struct rd *rd, struct rd_req *r, struct rd_waiter *w)
{
	struct rd_req *other = NULL;

	pthread_mutex_lock(&rd->lock);
	HASH_FIND(hh, rd->inflight, r->hkey, r->hkeylen, other);
	if (other) {
		*other->tail = w;
		other->tail = &w->next;
		rd->stats.joined++;
	} else {
		r->waiters = w;
		r->tail = &w->next;
		HASH_ADD_KEYPTR(hh, rd->inflight, r->hkey, r->hkeylen, r);
		rd->stats.requests++;
		rd->stats.inflight++;
	}
	pthread_mutex_unlock(&rd->lock);
	return other != NULL;
}

/*
 * Fetches LEN (> 0) bytes at OFF of KEY and answers DONE, joining a
 * request in flight for the same bytes. IS_READ: DONE answers a whole
 * read (counted in the stats).
 */
static void fetch(struct rd *rd, const char *key, const char *etag,
		  uint64_t off, uint64_t len, bool is_read, rd_done_fn *done,
		  void *arg)
{
	struct rd_waiter *w;
	struct rd_req *r;
	int rc;

	w = calloc(1, sizeof(*w));
	r = req_new(rd, key, etag, off, len);
	if (!w || !r) {
		free(w);
		free(r);
		if (is_read)
			count_error(rd);
		done(arg, -ENOMEM, NULL, 0, "out of memory");
		return;
	}
	w->done = done;
	w->arg = arg;
	w->is_read = is_read;
	if (join_or_add(rd, r, w)) {
		free(r); /* never shared */
		return;
	}
	rc = rd->store->ops->get_range(rd->store, r->key, off, len, r->etag,
				       on_range, r);
	if (rc) {
		/* DONE will not be called: answer for it. */
		w = req_finish(r, rc, 0);
		answer_all(w, rc, NULL, 0, "the store refused the request");
		req_put(r);
	}
	req_put(r);
}

/* Counts a read at its start; returns the bytes to read (clamped). */
static uint64_t read_begin(struct rd *rd, uint64_t off, size_t size,
			   uint64_t file_size)
{
	uint64_t len = off >= file_size ? 0 : file_size - off;

	if (len > size)
		len = size;
	pthread_mutex_lock(&rd->lock);
	rd->stats.reads++;
	if (len == 0)
		rd->stats.served++;
	pthread_mutex_unlock(&rd->lock);
	return len;
}

void rd_read(struct rd *rd, const char *key, const char *etag, uint64_t off,
	     size_t size, uint64_t file_size, rd_done_fn *done, void *arg)
{
	struct rd_seg whole = {0, file_size, 0};

	rd_read_segs(rd, key, etag, &whole, 1, file_size, off, size, done,
		     arg);
}

/* ---- assembled reads ---- */

static void asm_free(struct rd_asm *a)
{
	pthread_mutex_destroy(&a->lock);
	free(a->pieces);
	free(a->buf);
	free(a);
}

/* Drops one pending count; the last one answers the reader. */
static void asm_put(struct rd_asm *a)
{
	struct rd *rd = a->rd;

	if (atomic_fetch_sub(&a->pending, 1) != 1)
		return;
	pthread_mutex_lock(&rd->lock);
	if (a->err) {
		rd->stats.errors++;
	} else {
		rd->stats.served++;
		rd->stats.bytes_served += a->len;
	}
	pthread_mutex_unlock(&rd->lock);
	if (a->err)
		a->done(a->arg, a->err, NULL, 0, a->msg);
	else
		a->done(a->arg, 0, a->buf, a->len, NULL);
	asm_free(a);
}

static void asm_fail(struct rd_asm *a, int err, const char *msg)
{
	pthread_mutex_lock(&a->lock);
	if (!a->err) {
		a->err = err;
		snprintf(a->msg, sizeof(a->msg), "%s", msg ? msg : "");
	}
	pthread_mutex_unlock(&a->lock);
}

static void on_run(void *arg, int err, const char *data, size_t len,
		   const char *msg)
{
	struct rd_run *run = arg;
	struct rd_asm *a = run->a;

	(void)len; /* fetch() answers exactly the bytes asked for */
	if (err) {
		asm_fail(a, err, msg);
	} else {
		for (size_t i = run->first; i < run->first + run->n; i++) {
			const struct rd_piece *p = &a->pieces[i];

			memcpy(a->buf + p->out_off, data + (p->obj_off -
							    run->obj_off),
			       (size_t)p->len);
		}
	}
	free(run);
	asm_put(a);
}

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
		if (a < off)
			a = off;
		if (b > end)
			b = end;
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 8;
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

/* Issues one fetch per run of pieces contiguous in the object. */
static void asm_issue(struct rd_asm *a, size_t npieces, const char *key,
		      const char *etag)
{
	size_t i = 0;

	while (i < npieces) {
		struct rd_run *run = calloc(1, sizeof(*run));
		uint64_t span;
		size_t j = i + 1;

		while (j < npieces && a->pieces[j].obj_off ==
					  a->pieces[j - 1].obj_off +
					      a->pieces[j - 1].len)
			j++;
		span = a->pieces[j - 1].obj_off + a->pieces[j - 1].len -
		       a->pieces[i].obj_off;
		if (!run) {
			asm_fail(a, -ENOMEM, "out of memory");
			break;
		}
		run->a = a;
		run->first = i;
		run->n = j - i;
		run->obj_off = a->pieces[i].obj_off;
		atomic_fetch_add(&a->pending, 1);
		fetch(a->rd, key, etag, run->obj_off, span, false, on_run, run);
		i = j;
	}
	asm_put(a); /* the issuing call's count */
}

/* Answers a read that spans several pieces (or only zeros). */
static void read_assembled(struct rd *rd, const char *key, const char *etag,
			   struct rd_piece *pieces, size_t npieces,
			   uint64_t len, rd_done_fn *done, void *arg)
{
	struct rd_asm *a = calloc(1, sizeof(*a));
	char *buf = calloc(1, (size_t)len);

	if (!a || !buf) {
		free(a);
		free(buf);
		free(pieces);
		count_error(rd);
		done(arg, -ENOMEM, NULL, 0, "out of memory");
		return;
	}
	a->rd = rd;
	a->done = done;
	a->arg = arg;
	a->buf = buf;
	a->len = (size_t)len;
	a->pieces = pieces;
	pthread_mutex_init(&a->lock, NULL);
	atomic_init(&a->pending, 1);
	asm_issue(a, npieces, key, etag);
}

void rd_read_segs(struct rd *rd, const char *key, const char *etag,
		  const struct rd_seg *segs, size_t nsegs, uint64_t file_size,
		  uint64_t off, size_t size, rd_done_fn *done, void *arg)
{
	struct rd_piece *p = NULL;
	uint64_t len;
	long n;

	if (etag && !etag[0])
		etag = NULL; /* never an empty conditional header */
	len = read_begin(rd, off, size, file_size);
	if (len == 0) {
		done(arg, 0, NULL, 0, NULL);
		return;
	}
	n = cut_pieces(segs, nsegs, off, len, &p);
	if (n < 0) {
		count_error(rd);
		done(arg, (int)n, NULL, 0, "out of memory");
		return;
	}
	if (n == 1 && p[0].out_off == 0 && p[0].len == len) {
		/* The common case: one range, answered straight from the
		 * request's buffer. */
		uint64_t obj_off = p[0].obj_off;

		free(p);
		fetch(rd, key, etag, obj_off, len, true, done, arg);
		return;
	}
	read_assembled(rd, key, etag, p, (size_t)n, len, done, arg);
}
