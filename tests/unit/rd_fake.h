/* SPDX-License-Identifier: MIT */
/*
 * What the read path's unit tests (test_rd.c, test_rd_cache.c) share:
 * object bytes that are a pseudo-random function of (key, ETag, offset),
 * so that a misplaced or stale byte is caught; a fake store whose
 * get_range() requests wait in a queue (oldest first) until the test
 * completes them, on its own thread or on another one as an I/O thread
 * would; readers that keep a copy of their answer; small helpers.
 */
#ifndef SHARDFS_TEST_RD_FAKE_H
#define SHARDFS_TEST_RD_FAKE_H

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rd.h"
#include "store.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

/* ---- object bytes ---- */

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The seed of object KEY version ETAG (NULL and "" are the same). */
static inline uint64_t obj_seed(const char *key, const char *etag)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = etag ? etag : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

/* The LEN bytes at OFF of object SEED, into DST. */
static inline void gen_fill(uint64_t seed, uint64_t off, uint64_t len,
			    char *dst)
{
	uint64_t w = 0, wi = UINT64_MAX;

	for (uint64_t i = 0; i < len; i++) {
		uint64_t x = off + i;

		if (x / 8 != wi) {
			wi = x / 8;
			w = mix64(seed ^ (wi * 0xd6e8feb86659fd93ull));
		}
		dst[i] = (char)(w >> (8 * (x % 8)));
	}
}

/* The number of bytes of P (LEN) that differ from object SEED at OFF. */
static inline uint64_t gen_diff(uint64_t seed, uint64_t off, const char *p,
				uint64_t len)
{
	char buf[4096];
	uint64_t bad = 0;

	for (uint64_t i = 0; i < len; i += sizeof(buf)) {
		uint64_t n = len - i < sizeof(buf) ? len - i : sizeof(buf);

		gen_fill(seed, off + i, n, buf);
		for (uint64_t j = 0; j < n; j++)
			bad += buf[j] != p[i + j];
	}
	return bad;
}

/* A tiny deterministic generator (xorshift64*). */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* ---- a fake store: requests wait until the test completes them ---- */

struct fake_req {
	struct fake_req *next;
	char key[64];
	char etag[64];
	bool has_etag;
	uint64_t off, len;
	store_done_fn *done;
	void *arg;
};

struct fake {
	struct store base;
	pthread_mutex_t lock;
	pthread_cond_t queued;	      /* a request was queued */
	struct fake_req *head, *tail; /* lock: oldest first */
	int calls;		      /* lock: get_range() calls accepted */
	int refuse;		      /* errno get_range() returns, or 0 */
};

static inline int fake_get_range(struct store *s, const char *key, uint64_t off,
				 uint64_t len, const char *if_match,
				 store_done_fn *done, void *arg)
{
	struct fake *f = (struct fake *)s;
	struct fake_req *r;

	if (f->refuse)
		return -f->refuse;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->etag, sizeof(r->etag), "%s", if_match ? if_match : "");
	r->has_etag = if_match != NULL;
	r->off = off;
	r->len = len;
	r->done = done;
	r->arg = arg;
	pthread_mutex_lock(&f->lock);
	if (f->tail)
		f->tail->next = r;
	else
		f->head = r;
	f->tail = r;
	f->calls++;
	pthread_cond_signal(&f->queued);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static const struct store_ops fake_ops = {
    .get_range = fake_get_range,
};

static inline void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->base.ops = &fake_ops;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->queued, NULL);
}

static inline void fake_release(struct fake *f)
{
	CHECK(f->head == NULL); /* every request was completed */
	pthread_cond_destroy(&f->queued);
	pthread_mutex_destroy(&f->lock);
}

static inline int fake_calls(struct fake *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The oldest request waiting, or NULL. */
static inline struct fake_req *fake_take(struct fake *f)
{
	struct fake_req *r;

	pthread_mutex_lock(&f->lock);
	r = f->head;
	if (r) {
		f->head = r->next;
		if (!f->head)
			f->tail = NULL;
		r->next = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* Answers R (with the object's bytes, or ERR) on this thread. */
static inline void fake_complete(struct fake_req *r, int err)
{
	if (err) {
		r->done(r->arg, err, NULL, 0, "HTTP 500 from the fake");
	} else {
		char *data = malloc(r->len ? r->len : 1);

		gen_fill(obj_seed(r->key, r->etag), r->off, r->len, data);
		r->done(r->arg, 0, data, r->len, NULL);
	}
	free(r);
}

/* Completes every request waiting (and those they cause) with ERR. */
static inline int fake_drain(struct fake *f, int err)
{
	struct fake_req *r;
	int n = 0;

	while ((r = fake_take(f)) != NULL) {
		fake_complete(r, err);
		n++;
	}
	return n;
}

struct completer {
	struct fake_req *r;
	int err;
};

static inline void *complete_thread(void *p)
{
	struct completer *c = p;

	usleep(5 * 1000);
	fake_complete(c->r, c->err);
	return NULL;
}

/* Completes R from another thread, as an I/O thread would. */
static inline void complete_async(struct fake_req *r, int err)
{
	struct completer c = {r, err};
	pthread_t th;

	pthread_create(&th, NULL, complete_thread, &c);
	pthread_join(th, NULL);
}

/* Takes the next request and checks its range; NULL when none. */
#define TAKE_REQ(f, q, o, l)                                                   \
	do {                                                                   \
		(q) = fake_take(f);                                            \
		CHECK((q) != NULL);                                            \
		if (q) {                                                       \
			CHECK_INT((q)->off, (o));                              \
			CHECK_INT((q)->len, (l));                              \
		}                                                              \
	} while (0)

/* ---- readers ---- */

struct reader {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;      /* lock */
	int err;       /* lock */
	size_t len;    /* lock */
	char *data;    /* lock: a copy of the answer */
	char msg[128]; /* lock */
};

static inline void reader_done(void *arg, int err, const char *data, size_t len,
			       const char *msg)
{
	struct reader *r = arg;

	pthread_mutex_lock(&r->lock);
	r->done++;
	r->err = err;
	r->len = len;
	free(r->data);
	r->data = malloc(len ? len : 1);
	if (r->data && len)
		memcpy(r->data, data, len);
	snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static inline void reader_init(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static inline void reader_reset(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	free(r->data);
	r->data = NULL;
	r->done = r->err = 0;
	r->len = 0;
	r->msg[0] = '\0';
	pthread_mutex_unlock(&r->lock);
}

static inline void reader_release(struct reader *r)
{
	free(r->data);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
}

static inline int reader_count(struct reader *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->done;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static inline void reader_wait(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->done == 0)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

/* Whether R was answered once, with the LEN bytes at OFF of SEED. */
static inline bool got(struct reader *r, uint64_t seed, uint64_t off,
		       size_t len)
{
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = r->done == 1 && r->err == 0 && r->len == len &&
	     gen_diff(seed, off, r->data, len) == 0;
	if (!ok)
		fprintf(stderr,
			"  answer: done %d err %d len %zu (want %zu bytes at "
			"%llu)\n",
			r->done, r->err, r->len, len, (unsigned long long)off);
	pthread_mutex_unlock(&r->lock);
	return ok;
}

/* Whether R was answered once, with the LEN bytes WANT. */
static inline bool got_bytes(struct reader *r, const char *want, size_t len)
{
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = r->done == 1 && r->err == 0 && r->len == len &&
	     (len == 0 || memcmp(r->data, want, len) == 0);
	if (!ok)
		fprintf(stderr, "  answer: done %d err %d len %zu (want %zu)\n",
			r->done, r->err, r->len, len);
	pthread_mutex_unlock(&r->lock);
	return ok;
}

/* Whether R was answered once, with error ERR. */
static inline bool got_err(struct reader *r, int err)
{
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = r->done == 1 && r->err == err && r->len == 0;
	if (!ok)
		fprintf(stderr, "  answer: done %d err %d (want %d)\n", r->done,
			r->err, err);
	pthread_mutex_unlock(&r->lock);
	return ok;
}

static inline struct rd_stats stats_of(struct rd *rd)
{
	struct rd_stats st;

	rd_get_stats(rd, &st);
	return st;
}

static inline struct rd *new_rd(const struct rd_conf *conf)
{
	struct rd *rd = NULL;

	CHECK_INT(rd_new(conf, &rd), 0);
	return rd;
}

/*
 * Frees RD once no request is left waiting in F (a test that failed may
 * leave some: they are failed, and counted as a failure, rather than
 * leaving rd_free() waiting for them forever).
 */
static inline void rd_free_drained(struct rd *rd, struct fake *f)
{
	CHECK_INT(fake_drain(f, -EIO), 0);
	rd_free(rd);
}

/* A tar member: one segment of its shard. Not to be copied by value. */
struct member {
	struct rd_seg seg;
	struct rd_file f;
};

static inline void member_init(struct member *m, const char *shard,
			       const char *etag, uint64_t shard_size,
			       uint64_t base, uint64_t size)
{
	memset(m, 0, sizeof(*m));
	m->seg = (struct rd_seg){0, size, base};
	m->f.key = shard;
	m->f.etag = etag;
	m->f.size = size;
	m->f.obj_size = shard_size;
	m->f.segs = &m->seg;
	m->f.nsegs = 1;
	m->f.member = true;
	m->f.stream = base + 1;
}

/* Reads OBJ (SIZE bytes, no ETag) [OFF, OFF + LEN) into R, reset first. */
static inline void read_obj(struct rd *rd, const char *key, const char *etag,
			    uint64_t size, uint64_t off, size_t len,
			    struct reader *r)
{
	reader_reset(r);
	rd_read(rd, key, etag, off, len, size, reader_done, r);
}

static inline void read_member(struct rd *rd, struct member *m, uint64_t off,
			       size_t len, struct reader *r)
{
	reader_reset(r);
	rd_read_file(rd, &m->f, off, len, reader_done, r);
}

static inline int rm_one(const char *path, const struct stat *sb, int flag,
			 struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void rm_tree(const char *dir)
{
	CHECK_INT(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

#endif
