// SPDX-License-Identifier: MIT
/*
 * Unit tests of the read path: clamping, reads that need no request,
 * joining of concurrent identical reads onto one request (with a fake
 * store whose get_range() completes later from another thread), errors
 * reaching every waiter, and the local store completing inline; reads of
 * segmented files (tar members, sparse members): one request per run of
 * segments contiguous in the object, holes as zeros, an error of one run
 * failing the whole read once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "rd.h"
#include "store_local.h"

/* ---- a fake store: requests wait until the test completes them ---- */

struct fake_req {
	struct fake_req *next;
	char key[64];
	uint64_t off, len;
	bool has_etag;
	store_done_fn *done;
	void *arg;
};

struct fake {
	struct store base;
	pthread_mutex_t lock;
	struct fake_req *queue; /* lock */
	int calls;		/* lock */
	int refuse;		/* errno get_range() returns, or 0 */
};

static int fake_get_range(struct store *s, const char *key, uint64_t off,
			  uint64_t len, const char *if_match,
			  store_done_fn *done, void *arg)
{
	struct fake *f = (struct fake *)s;
	struct fake_req *r;

	if (f->refuse)
		return -f->refuse;
	r = calloc(1, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->off = off;
	r->len = len;
	r->has_etag = if_match != NULL;
	r->done = done;
	r->arg = arg;
	pthread_mutex_lock(&f->lock);
	r->next = f->queue;
	f->queue = r;
	f->calls++;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static const struct store_ops fake_ops = {
    .get_range = fake_get_range,
};

static struct fake_req *fake_take(struct fake *f)
{
	struct fake_req *r;

	pthread_mutex_lock(&f->lock);
	r = f->queue;
	if (r)
		f->queue = r->next;
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* Completes R from another thread, as an I/O thread would. */
struct completer {
	struct fake_req *r;
	int err;
};

static void *complete_thread(void *p)
{
	struct completer *c = p;
	struct fake_req *r = c->r;

	usleep(20 * 1000);
	if (c->err) {
		r->done(r->arg, c->err, NULL, 0, "HTTP 500 from the fake");
	} else {
		char *data = malloc(r->len);

		for (uint64_t i = 0; i < r->len; i++)
			data[i] = (char)('a' + (r->off + i) % 26);
		r->done(r->arg, 0, data, r->len, NULL);
	}
	free(r);
	return NULL;
}

static void complete_async(struct fake_req *r, int err)
{
	struct completer c = {r, err};
	pthread_t th;

	pthread_create(&th, NULL, complete_thread, &c);
	pthread_join(th, NULL);
}

/* ---- readers ---- */

struct reader {
	pthread_mutex_t lock;
	int done;	/* lock */
	int err;	/* lock */
	size_t len;	/* lock */
	char data[256]; /* lock */
	char msg[128];	/* lock */
};

static void reader_done(void *arg, int err, const char *data, size_t len,
			const char *msg)
{
	struct reader *rd = arg;

	pthread_mutex_lock(&rd->lock);
	rd->done++;
	rd->err = err;
	rd->len = len;
	if (data && len <= sizeof(rd->data))
		memcpy(rd->data, data, len);
	snprintf(rd->msg, sizeof(rd->msg), "%s", msg ? msg : "");
	pthread_mutex_unlock(&rd->lock);
}

static void reader_init(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->base.ops = &fake_ops;
	pthread_mutex_init(&f->lock, NULL);
}

static void test_join(void)
{
	struct fake f;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r[5], other;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	conf.store = &f.base;
	CHECK_INT(rd_new(&conf, &rd), 0);
	for (int i = 0; i < 5; i++) {
		reader_init(&r[i]);
		rd_read(rd, "k/obj", "\"etag\"", 10, 20, 100, reader_done,
			&r[i]);
	}
	reader_init(&other);
	rd_read(rd, "k/obj", "\"etag\"", 30, 20, 100, reader_done, &other);
	CHECK_INT(f.calls, 2); /* one per distinct range */
	rd_get_stats(rd, &st);
	CHECK_INT(st.reads, 6);
	CHECK_INT(st.requests, 2);
	CHECK_INT(st.joined, 4);
	CHECK_INT(st.inflight, 2);
	for (int i = 0; i < 5; i++)
		CHECK_INT(r[i].done, 0);

	while ((q = fake_take(&f)) != NULL) {
		CHECK_STR(q->key, "k/obj");
		CHECK(q->has_etag);
		CHECK_INT(q->len, 20);
		complete_async(q, 0);
	}
	for (int i = 0; i < 5; i++) {
		CHECK_INT(r[i].done, 1);
		CHECK_INT(r[i].err, 0);
		CHECK_INT(r[i].len, 20);
		CHECK(memcmp(r[i].data, "klmnopqrstuvwxyzabcd", 20) == 0);
	}
	CHECK_INT(other.done, 1);
	CHECK(memcmp(other.data, "efghijklmnopqrstuvwx", 20) == 0);

	/* After completion the same read is a new request. */
	rd_read(rd, "k/obj", "\"etag\"", 10, 20, 100, reader_done, &r[0]);
	CHECK_INT(f.calls, 3);
	/* A different ETag is a different request. */
	rd_read(rd, "k/obj", "\"other\"", 10, 20, 100, reader_done, &r[1]);
	CHECK_INT(f.calls, 4);
	while ((q = fake_take(&f)) != NULL)
		complete_async(q, 0);
	CHECK_INT(r[0].done, 2);
	CHECK_INT(r[1].done, 2);
	rd_get_stats(rd, &st);
	CHECK_INT(st.inflight, 0);
	rd_free(rd);
}

static void test_clamp_and_empty(void)
{
	struct fake f;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r;
	struct fake_req *q;

	fake_init(&f);
	conf.store = &f.base;
	CHECK_INT(rd_new(&conf, &rd), 0);

	reader_init(&r); /* a 0-byte file */
	rd_read(rd, "empty", NULL, 0, 4096, 0, reader_done, &r);
	CHECK_INT(r.done, 1);
	CHECK_INT(r.err, 0);
	CHECK_INT(r.len, 0);
	reader_init(&r); /* at EOF, and past it */
	rd_read(rd, "obj", NULL, 100, 4096, 100, reader_done, &r);
	rd_read(rd, "obj", NULL, 5000, 4096, 100, reader_done, &r);
	CHECK_INT(r.done, 2);
	CHECK_INT(r.len, 0);
	CHECK_INT(f.calls, 0);

	reader_init(&r); /* clamped to the file size */
	rd_read(rd, "obj", "", 90, 4096, 100, reader_done, &r);
	CHECK_INT(f.calls, 1);
	q = fake_take(&f);
	CHECK(q != NULL);
	if (q) {
		CHECK_INT(q->off, 90);
		CHECK_INT(q->len, 10);
		CHECK(!q->has_etag); /* never an empty conditional header */
		complete_async(q, 0);
	}
	CHECK_INT(r.done, 1);
	CHECK_INT(r.len, 10);
	rd_free(rd);
}

static void test_errors(void)
{
	struct fake f;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r[3];
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	conf.store = &f.base;
	CHECK_INT(rd_new(&conf, &rd), 0);
	for (int i = 0; i < 3; i++) {
		reader_init(&r[i]);
		rd_read(rd, "bad", NULL, 0, 10, 10, reader_done, &r[i]);
	}
	q = fake_take(&f);
	CHECK(q != NULL);
	if (q)
		complete_async(q, -EIO);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(r[i].done, 1);
		CHECK_INT(r[i].err, -EIO);
		CHECK_STR(r[i].msg, "HTTP 500 from the fake");
	}
	rd_get_stats(rd, &st);
	CHECK_INT(st.errors, 3);

	f.refuse = EINVAL; /* get_range() fails: DONE still runs once */
	reader_init(&r[0]);
	rd_read(rd, "bad", NULL, 0, 10, 10, reader_done, &r[0]);
	CHECK_INT(r[0].done, 1);
	CHECK_INT(r[0].err, -EINVAL);
	rd_get_stats(rd, &st);
	CHECK_INT(st.inflight, 0);
	rd_free(rd);
}

static void test_local_inline(void)
{
	char tmpl[] = "/tmp/test_rd.XXXXXX", path[4200], msg[256];
	const char *dir = mkdtemp(tmpl);
	struct store *st = NULL;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r;
	int fd;

	CHECK(dir != NULL);
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(write(fd, "0123456789", 10) == 10);
	close(fd);
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	conf.store = st;
	CHECK_INT(rd_new(&conf, &rd), 0);
	reader_init(&r);
	rd_read(rd, "f", NULL, 3, 4, 10, reader_done, &r);
	CHECK_INT(r.done, 1);
	CHECK_INT(r.len, 4);
	CHECK(memcmp(r.data, "3456", 4) == 0);
	/* The listing said 20 bytes: the store finds a short object. */
	reader_init(&r);
	rd_read(rd, "f", NULL, 8, 10, 20, reader_done, &r);
	CHECK_INT(r.err, -EIO);
	/* A wrong ETag: the object changed. */
	reader_init(&r);
	rd_read(rd, "f", "\"stale\"", 0, 4, 10, reader_done, &r);
	CHECK_INT(r.err, -ESTALE);
	/* Keys never leave the root. */
	reader_init(&r);
	rd_read(rd, "../f", NULL, 0, 4, 10, reader_done, &r);
	CHECK_INT(r.err, -EINVAL);
	rd_free(rd);
	store_free(st);
	unlink(path);
	rmdir(dir);
}

static char obj_byte(uint64_t off)
{
	return (char)('a' + off % 26);
}

static void test_segments(void)
{
	/* File bytes [0,10) [20,30) [40,50) of 60; the first two are
	 * contiguous in the object. */
	static const struct rd_seg segs[] = {
	    {0, 10, 100}, {20, 10, 110}, {40, 10, 500}};
	struct fake f;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;
	char want[50];

	fake_init(&f);
	conf.store = &f.base;
	CHECK_INT(rd_new(&conf, &rd), 0);
	reader_init(&r);
	rd_read_segs(rd, "shard", "\"e\"", segs, 3, 60, 5, 100, reader_done,
		     &r);
	CHECK_INT(f.calls, 2); /* [105,120) and [500,510) */
	while ((q = fake_take(&f)) != NULL) {
		CHECK(q->has_etag);
		CHECK((q->off == 105 && q->len == 15) ||
		      (q->off == 500 && q->len == 10));
		CHECK_INT(r.done, 0);
		complete_async(q, 0);
	}
	memset(want, 0, sizeof(want));
	for (int i = 0; i < 5; i++)
		want[i] = obj_byte(105 + (uint64_t)i);
	for (int i = 0; i < 10; i++) {
		want[15 + i] = obj_byte(110 + (uint64_t)i);
		want[35 + i] = obj_byte(500 + (uint64_t)i);
	}
	CHECK_INT(r.done, 1);
	CHECK_INT(r.err, 0);
	CHECK_INT(r.len, 55);
	CHECK(memcmp(r.data, want, 50) == 0);
	CHECK(memcmp(r.data + 50, "\0\0\0\0\0", 5) == 0);

	/* Inside one segment: one exact request, answered directly. */
	reader_init(&r);
	rd_read_segs(rd, "shard", NULL, segs, 3, 60, 42, 4, reader_done, &r);
	q = fake_take(&f);
	CHECK(q != NULL && q->off == 502 && q->len == 4);
	if (q)
		complete_async(q, 0);
	CHECK_INT(r.len, 4);
	CHECK(memcmp(r.data, "ijkl", 4) == 0);

	/* Only a hole: zeros, no request. */
	reader_init(&r);
	rd_read_segs(rd, "shard", NULL, segs, 3, 60, 11, 8, reader_done, &r);
	CHECK_INT(f.calls, 3);
	CHECK_INT(r.done, 1);
	CHECK_INT(r.len, 8);
	CHECK(memcmp(r.data, "\0\0\0\0\0\0\0\0", 8) == 0);

	/* One run fails: the read fails once, with that cause. */
	reader_init(&r);
	rd_read_segs(rd, "shard", NULL, segs, 3, 60, 0, 60, reader_done, &r);
	CHECK_INT(f.calls, 5);
	q = fake_take(&f);
	if (q)
		complete_async(q, -ESTALE);
	q = fake_take(&f);
	if (q)
		complete_async(q, 0);
	CHECK_INT(r.done, 1);
	CHECK_INT(r.err, -ESTALE);
	CHECK_STR(r.msg, "HTTP 500 from the fake");
	rd_get_stats(rd, &st);
	CHECK_INT(st.reads, 4);
	CHECK_INT(st.served, 3);
	CHECK_INT(st.bytes_served, 55 + 4 + 8);
	CHECK_INT(st.errors, 1);
	CHECK_INT(st.inflight, 0);
	rd_free(rd);
}

/* Segments through the local store, which completes inline. */
static void test_segments_inline(void)
{
	static const struct rd_seg segs[] = {{0, 3, 2}, {5, 2, 7}};
	char tmpl[] = "/tmp/test_rd_segs.XXXXXX", path[4200], msg[256];
	const char *dir = mkdtemp(tmpl);
	struct store *st = NULL;
	struct rd *rd;
	struct rd_conf conf;
	struct reader r;
	int fd;

	CHECK(dir != NULL);
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(write(fd, "0123456789", 10) == 10);
	close(fd);
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	conf.store = st;
	CHECK_INT(rd_new(&conf, &rd), 0);
	reader_init(&r);
	rd_read_segs(rd, "f", NULL, segs, 2, 9, 0, 100, reader_done, &r);
	CHECK_INT(r.done, 1);
	CHECK_INT(r.err, 0);
	CHECK_INT(r.len, 9);
	CHECK(memcmp(r.data, "234\0\0" "78\0\0", 9) == 0);
	rd_free(rd);
	store_free(st);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	log_set_level(LOG_LVL_ERROR);
	test_join();
	test_clamp_and_empty();
	test_errors();
	test_local_inline();
	test_segments();
	test_segments_inline();
	return check_summary("test_rd");
}
