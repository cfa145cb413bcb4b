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
 * Threading: rd->lock protects the table, the counters and the list of
 * waiters of each request in the table. A request removed from the table
 * belongs to the thread that removed it.
 */
#include "rd.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

struct rd_waiter {
	struct rd_waiter *next;
	rd_done_fn *done;
	void *arg;
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
		if (err)
			rd->stats.errors++;
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

void rd_read(struct rd *rd, const char *key, const char *etag, uint64_t off,
	     size_t size, uint64_t file_size, rd_done_fn *done, void *arg)
{
	struct rd_waiter *w;
	struct rd_req *r;
	uint64_t len;
	int rc;

	if (etag && !etag[0])
		etag = NULL; /* never an empty conditional header */
	len = off >= file_size ? 0 : file_size - off;
	if (len > size)
		len = size;
	pthread_mutex_lock(&rd->lock);
	rd->stats.reads++;
	pthread_mutex_unlock(&rd->lock);
	if (len == 0) {
		done(arg, 0, NULL, 0, NULL);
		return;
	}
	w = calloc(1, sizeof(*w));
	r = req_new(rd, key, etag, off, len);
	if (!w || !r) {
		free(w);
		free(r);
		done(arg, -ENOMEM, NULL, 0, "out of memory");
		return;
	}
	w->done = done;
	w->arg = arg;
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
