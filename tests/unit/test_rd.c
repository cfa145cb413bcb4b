// SPDX-License-Identifier: MIT
/*
 * Unit tests of the read path (rd.h), through the fake store of
 * rd_fake.h (every request's exact range and every counter checked) and
 * the local store: fetch sizing (small files whole, members grown to
 * their hint but never past neighbouring extents, sequential windows
 * that double up to window_max and reset on a jump, prefetch shrinking
 * under the bytes-in-flight bound), joining of concurrent reads (same and
 * overlapping bytes), errors reaching every waiter once and never cached,
 * ETag separation, sparse files and assembled answers, clamping and
 * 0-byte reads; and stress runs on several threads through both stores,
 * every answer's bytes and the budget checked (the TSan build runs this
 * file). The cache itself (budget, eviction, whole shards, the disk
 * cache) is tested in test_rd_cache.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "rd.h"
#include "rd_fake.h"
#include "store_local.h"

/* ---- fetch sizing ---- */

/* Small files are fetched whole, once; later reads are hits. */
static void test_small_whole(void)
{
	static const char *etag = "\"s1\"";
	uint64_t seed = obj_seed("small", etag);
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	rd = new_rd(&conf);
	read_obj(rd, "small", etag, 100000, 0, 10000, &r);
	CHECK_INT(fake_calls(&f), 1);
	CHECK_INT(reader_count(&r), 0);
	TAKE_REQ(&f, q, 0, 100000);
	if (q) {
		CHECK_STR(q->key, "small");
		CHECK_STR(q->etag, etag);
		fake_complete(q, 0);
	}
	CHECK(got(&r, seed, 0, 10000));
	for (uint64_t off = 10000; off < 100000; off += 10000) {
		read_obj(rd, "small", etag, 100000, off, 10000, &r);
		CHECK(got(&r, seed, off, 10000)); /* at once */
	}
	CHECK_INT(fake_calls(&f), 1);
	st = stats_of(rd);
	CHECK_INT(st.reads, 10);
	CHECK_INT(st.served, 10);
	CHECK_INT(st.bytes_served, 100000);
	CHECK_INT(st.hits, 9);
	CHECK_INT(st.misses, 1);
	CHECK_INT(st.joined, 0);
	CHECK_INT(st.requests, 1);
	CHECK_INT(st.bytes, 100000);
	CHECK_INT(st.prefetch_bytes, 90000);
	CHECK_INT(st.inflight, 0);
	CHECK_INT(st.inflight_bytes, 0);
	CHECK_INT(st.cache_bytes, 100000);
	CHECK_INT(st.cache_extents, 1);
	CHECK_INT(st.evictions, 0);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/*
 * The first fetch of a file, by size and offset: whole up to RD_SMALL,
 * the first window at 0 beyond it, else exactly the read (clamped); and
 * the read alone when the bytes in flight would pass inflight_max.
 */
static void test_first_fetch(void)
{
	static const struct {
		uint64_t size, off, len, inflight_max;
		uint64_t want_off, want_len;
	} cases[] = {
	    {100000, 50000, 100, 0, 0, 100000},
	    {RD_SMALL, 4096, 100, 0, 0, RD_SMALL},
	    {RD_SMALL + 1, 4096, 100, 0, 4096, 100},
	    {RD_SMALL + 1, 0, 100, 0, 0, RD_WINDOW_MIN},
	    {3 * MiB, 3 * MiB - 50, 4096, 0, 3 * MiB - 50, 50},
	    {100000, 50000, 100, 64 * KiB, 50000, 100},
	    {8 * MiB, 0, 100, 512 * KiB, 0, 100},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f;
		struct rd_conf conf = {0};
		struct rd *rd;
		struct reader r;
		struct fake_req *q;
		uint64_t len = cases[i].len;
		int failed = check_failed;

		if (cases[i].off + len > cases[i].size)
			len = cases[i].size - cases[i].off;
		fake_init(&f);
		reader_init(&r);
		conf.store = &f.base;
		conf.inflight_max = cases[i].inflight_max;
		rd = new_rd(&conf);
		read_obj(rd, "obj", NULL, cases[i].size, cases[i].off,
			 cases[i].len, &r);
		CHECK_INT(fake_calls(&f), 1);
		TAKE_REQ(&f, q, cases[i].want_off, cases[i].want_len);
		if (q) {
			CHECK(!q->has_etag);
			fake_complete(q, 0);
		}
		CHECK(got(&r, obj_seed("obj", NULL), cases[i].off, len));
		CHECK_INT(stats_of(rd).prefetch_bytes, cases[i].want_len - len);
		if (check_failed > failed)
			fprintf(stderr, "  (case %zu)\n", i);
		rd_free_drained(rd, &f);
		reader_release(&r);
		fake_release(&f);
	}
}

/*
 * Members: a cold read fetches the hint (the member and its sample's
 * neighbours), a neighbour is then a hit; a fetch never overlaps the
 * extents already held.
 */
static void test_member_hint(void)
{
	static const char *shard = "s.tar", *etag = "\"t\"";
	uint64_t seed = obj_seed(shard, etag);
	struct member m1, m2, m3, m4, m5;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.prefetch = RD_PREFETCH_MEMBER;
	rd = new_rd(&conf);
	member_init(&m1, shard, etag, 10 * MiB, 5120, 3000);
	m1.f.hint_off = 4608; /* m1's header .. the end of m2 */
	m1.f.hint_len = 9216;
	member_init(&m2, shard, etag, 10 * MiB, 8704, 5000);
	member_init(&m3, shard, etag, 10 * MiB, 20480, 700);
	member_init(&m4, shard, etag, 10 * MiB, 13824, 2048);
	m4.f.hint_off = 13312; /* its header is held already */
	m4.f.hint_len = 2560;
	member_init(&m5, shard, etag, 10 * MiB, 19000, 1000);
	m5.f.hint_off = 18944; /* runs into m3's extent */
	m5.f.hint_len = 2560;

	read_member(rd, &m1, 0, 3000, &r);
	TAKE_REQ(&f, q, 4608, 9216);
	if (q) {
		CHECK_STR(q->etag, etag);
		fake_complete(q, 0);
	}
	CHECK(got(&r, seed, 5120, 3000));
	read_member(rd, &m2, 100, 100, &r);
	CHECK(got(&r, seed, 8804, 100));
	read_member(rd, &m1, 2000, 4096, &r);
	CHECK(got(&r, seed, 7120, 1000));
	CHECK_INT(fake_calls(&f), 1);
	st = stats_of(rd);
	CHECK_INT(st.hits, 2);
	CHECK_INT(st.prefetch_bytes, 9216 - 3000);

	read_member(rd, &m3, 0, 700, &r); /* no hint: the member */
	TAKE_REQ(&f, q, 20480, 700);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, seed, 20480, 700));
	read_member(rd, &m4, 0, 2048, &r);
	TAKE_REQ(&f, q, 13824, 2048);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, seed, 13824, 2048));
	read_member(rd, &m5, 0, 1000, &r);
	TAKE_REQ(&f, q, 18944, 20480 - 18944);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, seed, 19000, 1000));
	st = stats_of(rd);
	CHECK_INT(st.requests, 4);
	CHECK_INT(st.misses, 4);
	CHECK_INT(st.shard_fetches, 0);
	CHECK_INT(st.cache_extents, 4);
	CHECK_INT(st.cache_bytes, 9216 + 700 + 2048 + 1536);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/* One read of a sequential run and the request it should issue. */
struct seq_req {
	uint64_t at, off, len;
};

/*
 * Sequential windows on a 32 MiB object, window_max 4 MiB, 128 KiB
 * reads: the first window at 0, the next one fetched when less than half
 * a window is left ahead, doubling to the cap; a jump is an exact fetch
 * and resets the window; the last window is cut at the end.
 */
static void test_seq_windows(void)
{
	static const struct {
		uint64_t from, to;
	} runs[] = {{0, 11 * MiB},
		    {20 * MiB, 21 * MiB + 256 * KiB},
		    {30 * MiB, 32 * MiB}};
	static const struct seq_req want[] = {
	    {0, 0, MiB},
	    {512 * KiB, MiB, MiB},
	    {MiB, 2 * MiB, 2 * MiB},
	    {2 * MiB, 4 * MiB, 4 * MiB},
	    {6 * MiB, 8 * MiB, 4 * MiB},
	    {10 * MiB, 12 * MiB, 4 * MiB},
	    {20 * MiB, 20 * MiB, 128 * KiB},
	    {20 * MiB + 128 * KiB, 20 * MiB + 128 * KiB, MiB},
	    {20 * MiB + 640 * KiB, 21 * MiB + 128 * KiB, MiB},
	    {21 * MiB + 128 * KiB, 22 * MiB + 128 * KiB, 2 * MiB},
	    {30 * MiB, 30 * MiB, 128 * KiB},
	    {30 * MiB + 128 * KiB, 30 * MiB + 128 * KiB, MiB},
	    {30 * MiB + 640 * KiB, 31 * MiB + 128 * KiB, 896 * KiB},
	};
	enum { NWANT = sizeof(want) / sizeof(want[0]), NLOG = 64 };
	uint64_t seed = obj_seed("big", NULL), bytes = 0, bad = 0;
	struct seq_req seen[NLOG];
	size_t nlog = 0;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.window_max = 4 * MiB;
	rd = new_rd(&conf);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		for (uint64_t at = runs[i].from; at < runs[i].to;
		     at += 128 * KiB) {
			read_obj(rd, "big", NULL, 32 * MiB, at, 128 * KiB, &r);
			while ((q = fake_take(&f)) != NULL) {
				if (nlog < NLOG)
					seen[nlog++] = (struct seq_req){
					    at, q->off, q->len};
				bytes += q->len;
				fake_complete(q, 0);
			}
			bad += !got(&r, seed, at, 128 * KiB);
		}
	}
	CHECK_INT(bad, 0);
	CHECK_INT(nlog, NWANT);
	for (size_t i = 0; i < nlog && i < NWANT; i++) {
		CHECK_INT(seen[i].at, want[i].at);
		CHECK_INT(seen[i].off, want[i].off);
		CHECK_INT(seen[i].len, want[i].len);
	}
	st = stats_of(rd);
	CHECK_INT(st.requests, NWANT);
	CHECK_INT(st.bytes, bytes);
	CHECK_INT(st.misses, NWANT); /* one request per miss */
	CHECK_INT(st.reads, st.hits + st.misses);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/*
 * What counts as sequential: a read up to RD_WINDOW_MIN behind or ahead
 * of where the stream's reads ended (readahead reads arrive out of
 * order) gets a window, one further away is a jump (an exact fetch).
 */
static void test_seq_slack(void)
{
	static const struct seq_req want[] = {
	    {0, 0, MiB},
	    {3 * MiB, 3 * MiB, 128 * KiB}, /* a jump */
	    /* 640 KiB behind: a window, cut at the next extent */
	    {3 * MiB - 512 * KiB, 3 * MiB - 512 * KiB, 512 * KiB},
	    /* just RD_WINDOW_MIN ahead of the end */
	    {4 * MiB + 128 * KiB, 4 * MiB + 128 * KiB, MiB},
	    /* a byte further */
	    {5 * MiB + 256 * KiB + 1, 5 * MiB + 256 * KiB + 1, 128 * KiB},
	};
	uint64_t seed = obj_seed("big", NULL);
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	rd = new_rd(&conf);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		read_obj(rd, "big", NULL, 32 * MiB, want[i].at, 128 * KiB, &r);
		TAKE_REQ(&f, q, want[i].off, want[i].len);
		if (q)
			fake_complete(q, 0);
		CHECK_INT(fake_calls(&f), i + 1);
		CHECK(got(&r, seed, want[i].at, 128 * KiB));
	}
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/* ---- joining, errors, ETags ---- */

/*
 * Reads of bytes in flight join the fetch: one request, every reader
 * answered with its bytes; a read overlapping a fetch in flight fetches
 * only the rest.
 */
static void test_join(void)
{
	/* A 4 MiB sparse file: exact fetches (no whole, no window). */
	static const struct rd_seg segs[] = {{0, 2 * MiB, 0},
					     {3 * MiB, MiB, 2 * MiB}};
	struct rd_file sp = {.key = "sp",
			     .etag = "\"j\"",
			     .size = 4 * MiB,
			     .segs = segs,
			     .nsegs = 2};
	uint64_t seed = obj_seed("k/obj", "\"etag\""),
		 sseed = obj_seed("sp", "\"j\"");
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r[5], other, a, b, c;
	struct rd_stats st;
	struct fake_req *q, *qa, *qb;

	fake_init(&f);
	conf.store = &f.base;
	rd = new_rd(&conf);
	for (int i = 0; i < 5; i++) {
		reader_init(&r[i]);
		read_obj(rd, "k/obj", "\"etag\"", 100, 10, 20, &r[i]);
	}
	reader_init(&other);
	read_obj(rd, "k/obj", "\"etag\"", 100, 30, 20, &other);
	st = stats_of(rd);
	CHECK_INT(st.reads, 6);
	CHECK_INT(st.requests, 1);
	CHECK_INT(st.misses, 1);
	CHECK_INT(st.joined, 5);
	CHECK_INT(st.inflight, 1);
	TAKE_REQ(&f, q, 0, 100);
	for (int i = 0; i < 5; i++)
		CHECK_INT(reader_count(&r[i]), 0);
	if (q)
		complete_async(q, 0);
	for (int i = 0; i < 5; i++)
		CHECK(got(&r[i], seed, 10, 20));
	CHECK(got(&other, seed, 30, 20));

	reader_init(&a);
	reader_init(&b);
	reader_init(&c);
	reader_reset(&a);
	rd_read_file(rd, &sp, 1000, 1000, reader_done, &a);
	reader_reset(&b);
	rd_read_file(rd, &sp, 1500, 1500, reader_done, &b);
	reader_reset(&c);
	rd_read_file(rd, &sp, 1200, 600, reader_done, &c);
	TAKE_REQ(&f, qa, 1000, 1000);
	TAKE_REQ(&f, qb, 2000, 1000);
	st = stats_of(rd);
	CHECK_INT(st.misses, 3);
	CHECK_INT(st.joined, 6);
	if (qb)
		complete_async(qb, 0); /* b still waits for a's */
	CHECK_INT(reader_count(&b), 0);
	if (qa)
		complete_async(qa, 0);
	CHECK(got(&a, sseed, 1000, 1000));
	CHECK(got(&b, sseed, 1500, 1500));
	CHECK(got(&c, sseed, 1200, 600));
	st = stats_of(rd);
	CHECK_INT(st.requests, 3);
	CHECK_INT(st.inflight, 0);
	CHECK_INT(st.served, 9);
	rd_free_drained(rd, &f);
	for (int i = 0; i < 5; i++)
		reader_release(&r[i]);
	reader_release(&other);
	reader_release(&a);
	reader_release(&b);
	reader_release(&c);
	fake_release(&f);
}

/*
 * An error reaches every waiter once and is not cached; a read needing
 * two fetches fails once when one fails, and the other's bytes stay; a
 * refused request still answers once.
 */
static void test_errors(void)
{
	static const struct rd_seg segs[] = {{0, 2 * MiB, 0},
					     {3 * MiB, MiB, 2 * MiB}};
	struct rd_file sp = {
	    .key = "sp", .size = 4 * MiB, .segs = segs, .nsegs = 2};
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r[3];
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	conf.store = &f.base;
	rd = new_rd(&conf);
	for (int i = 0; i < 3; i++) {
		reader_init(&r[i]);
		read_obj(rd, "bad", NULL, 10, (uint64_t)i, 5, &r[i]);
	}
	CHECK_INT(fake_calls(&f), 1);
	TAKE_REQ(&f, q, 0, 10);
	if (q)
		complete_async(q, -EIO);
	for (int i = 0; i < 3; i++) {
		CHECK(got_err(&r[i], -EIO));
		CHECK_STR(r[i].msg, "HTTP 500 from the fake");
	}
	st = stats_of(rd);
	CHECK_INT(st.errors, 3);
	CHECK_INT(st.served, 0);
	CHECK_INT(st.cache_bytes, 0);
	CHECK_INT(st.cache_extents, 0);
	CHECK_INT(st.inflight_bytes, 0);

	read_obj(rd, "bad", NULL, 10, 2, 5, &r[0]); /* not cached */
	TAKE_REQ(&f, q, 0, 10);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r[0], obj_seed("bad", NULL), 2, 5));

	/* Two fetches, the second fails: one error; the first stays. */
	reader_reset(&r[0]);
	rd_read_file(rd, &sp, 2 * MiB - 100, MiB + 200, reader_done, &r[0]);
	TAKE_REQ(&f, q, 2 * MiB - 100, 100);
	if (q)
		complete_async(q, 0);
	CHECK_INT(reader_count(&r[0]), 0);
	TAKE_REQ(&f, q, 2 * MiB, 100);
	if (q)
		complete_async(q, -ESTALE);
	CHECK(got_err(&r[0], -ESTALE));
	CHECK_STR(r[0].msg, "HTTP 500 from the fake");
	reader_reset(&r[0]);
	rd_read_file(rd, &sp, 2 * MiB - 50, 50, reader_done, &r[0]);
	CHECK(got(&r[0], obj_seed("sp", NULL), 2 * MiB - 50, 50));
	st = stats_of(rd);
	CHECK_INT(st.errors, 4);
	CHECK_INT(st.hits, 1);
	CHECK_INT(st.cache_extents, 2);

	f.refuse = EINVAL; /* get_range() fails: DONE still runs once */
	read_obj(rd, "bad2", NULL, 10, 0, 10, &r[0]);
	CHECK(got_err(&r[0], -EINVAL));
	st = stats_of(rd);
	CHECK_INT(st.inflight, 0);
	CHECK_INT(st.inflight_bytes, 0);
	CHECK_INT(st.errors, 5);
	rd_free_drained(rd, &f);
	for (int i = 0; i < 3; i++)
		reader_release(&r[i]);
	fake_release(&f);
}

/*
 * One key, several ETags: separate cache entries, each request with its
 * If-Match; no ETag and "" are one entry, without If-Match.
 */
static void test_etag(void)
{
	static const struct {
		const char *etag, *want_etag; /* want: NULL for a hit */
		const char *data_etag;
	} steps[] = {
	    {"\"e1\"", "\"e1\"", "\"e1\""},
	    {"\"e2\"", "\"e2\"", "\"e2\""},
	    {"\"e1\"", NULL, "\"e1\""},
	    {NULL, "", NULL},
	    {"", NULL, NULL},
	    {"\"e2\"", NULL, "\"e2\""},
	};
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct fake_req *q;
	int calls = 0;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	rd = new_rd(&conf);
	CHECK(obj_seed("k", "\"e1\"") != obj_seed("k", "\"e2\""));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		read_obj(rd, "k", steps[i].etag, 1000, 100, 50, &r);
		if (steps[i].want_etag) {
			CHECK_INT(fake_calls(&f), ++calls);
			TAKE_REQ(&f, q, 0, 1000);
			if (q) {
				CHECK(q->has_etag ==
				      (steps[i].want_etag[0] != 0));
				CHECK_STR(q->etag, steps[i].want_etag);
				fake_complete(q, 0);
			}
		}
		CHECK_INT(fake_calls(&f), calls);
		CHECK(got(&r, obj_seed("k", steps[i].data_etag), 100, 50));
	}
	CHECK_INT(stats_of(rd).cache_extents, 3);
	CHECK_INT(stats_of(rd).hits, 3);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/* ---- sparse files, clamping ---- */

/* The LEN bytes at OFF of a file of segments SEGS of object SEED. */
static void file_bytes(const struct rd_seg *segs, size_t nsegs, uint64_t seed,
		       uint64_t off, uint64_t len, char *out)
{
	memset(out, 0, len);
	for (size_t i = 0; i < nsegs; i++) {
		uint64_t a = segs[i].file_off, b = a + segs[i].len;

		a = a < off ? off : a;
		b = b > off + len ? off + len : b;
		if (a < b)
			gen_fill(seed, segs[i].obj_off + (a - segs[i].file_off),
				 b - a, out + (a - off));
	}
}

static void test_segments(void)
{
	/* A small file: bytes [0,10) [20,30) [40,50) of 60, whose data is
	 * fetched once, from the first segment to the end of the last. */
	static const struct rd_seg segs[] = {
	    {0, 10, 100}, {20, 10, 110}, {40, 10, 500}};
	/* A large one: exact fetches of each run. */
	static const struct rd_seg big[] = {{0, MiB, 0},
					    {2 * MiB, MiB, 5 * MiB}};
	uint64_t seed = obj_seed("shard", "\"e\"");
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;
	char want[256];

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	rd = new_rd(&conf);
	reader_reset(&r);
	rd_read_segs(rd, "shard", "\"e\"", segs, 3, 60, 5, 100, reader_done,
		     &r);
	TAKE_REQ(&f, q, 100, 410);
	CHECK_INT(reader_count(&r), 0);
	if (q)
		complete_async(q, 0);
	file_bytes(segs, 3, seed, 5, 55, want);
	CHECK(got_bytes(&r, want, 55));
	CHECK(memcmp(want + 50, "\0\0\0\0\0", 5) == 0);

	reader_reset(&r); /* inside one segment: a hit */
	rd_read_segs(rd, "shard", "\"e\"", segs, 3, 60, 42, 4, reader_done, &r);
	CHECK(got(&r, seed, 502, 4));
	reader_reset(&r); /* only a hole: zeros */
	rd_read_segs(rd, "shard", "\"e\"", segs, 3, 60, 11, 8, reader_done, &r);
	CHECK(got_bytes(&r, "\0\0\0\0\0\0\0\0", 8));
	CHECK_INT(fake_calls(&f), 1);

	reader_reset(&r); /* across a hole of the large file */
	rd_read_segs(rd, "shard", "\"e\"", big, 2, 3 * MiB, MiB - 100,
		     MiB + 200, reader_done, &r);
	TAKE_REQ(&f, q, MiB - 100, 100);
	if (q)
		fake_complete(q, 0);
	TAKE_REQ(&f, q, 5 * MiB, 100);
	if (q)
		fake_complete(q, 0);
	{
		char *w = malloc(MiB + 200);

		file_bytes(big, 2, seed, MiB - 100, MiB + 200, w);
		CHECK(got_bytes(&r, w, MiB + 200));
		free(w);
	}
	st = stats_of(rd);
	CHECK_INT(st.reads, 4);
	CHECK_INT(st.served, 4);
	CHECK_INT(st.bytes_served, 55 + 4 + 8 + MiB + 200);
	CHECK_INT(st.hits, 1); /* a hole alone is neither hit nor miss */
	CHECK_INT(st.misses, 2);
	CHECK_INT(st.requests, 3);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

static void test_clamp_and_empty(void)
{
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	rd = new_rd(&conf);
	read_obj(rd, "empty", NULL, 0, 0, 4096, &r); /* a 0-byte file */
	CHECK(got_bytes(&r, "", 0));
	read_obj(rd, "obj", NULL, 100, 100, 4096, &r); /* at EOF */
	CHECK(got_bytes(&r, "", 0));
	read_obj(rd, "obj", NULL, 100, 5000, 4096, &r); /* past it */
	CHECK(got_bytes(&r, "", 0));
	read_obj(rd, "obj", NULL, 100, 10, 0, &r); /* 0 bytes */
	CHECK(got_bytes(&r, "", 0));
	CHECK_INT(fake_calls(&f), 0);

	read_obj(rd, "obj", "", 100, 90, 4096, &r); /* clamped */
	TAKE_REQ(&f, q, 0, 100);
	if (q) {
		CHECK(!q->has_etag); /* never an empty conditional header */
		fake_complete(q, 0);
	}
	CHECK(got(&r, obj_seed("obj", NULL), 90, 10));
	st = stats_of(rd);
	CHECK_INT(st.reads, 5);
	CHECK_INT(st.served, 5);
	CHECK_INT(st.bytes_served, 10);
	CHECK_INT(st.hits + st.misses + st.joined, 1);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/* ---- the local store ---- */

static void write_obj(const char *dir, const char *key, uint64_t size)
{
	char path[4200];
	char *p = malloc(size ? size : 1);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	gen_fill(obj_seed(key, NULL), 0, size, p);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, p, size) == (ssize_t)size);
	if (fd >= 0)
		close(fd);
	free(p);
}

static void test_local_inline(void)
{
	char tmpl[] = "/tmp/test_rd.XXXXXX", msg[256];
	const char *dir = mkdtemp(tmpl);
	static const struct rd_seg segs[] = {{0, 3, 2}, {5, 2, 7}};
	uint64_t seed = obj_seed("f", NULL);
	struct store *st = NULL;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	char want[9];

	CHECK(dir != NULL);
	if (!dir)
		return;
	write_obj(dir, "f", 10);
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	reader_init(&r);
	conf.store = st;
	rd = new_rd(&conf);
	read_obj(rd, "f", NULL, 10, 3, 4, &r);
	CHECK(got(&r, seed, 3, 4));
	reader_reset(&r); /* segments: holes as zeros */
	rd_read_segs(rd, "f", NULL, segs, 2, 9, 0, 100, reader_done, &r);
	file_bytes(segs, 2, seed, 0, 9, want);
	CHECK(got_bytes(&r, want, 9));
	/* The listing said 20 bytes: the store finds a short object. */
	read_obj(rd, "f", NULL, 20, 8, 10, &r);
	CHECK(got_err(&r, -EIO));
	/* A wrong ETag: the object changed. */
	read_obj(rd, "f", "\"stale\"", 10, 0, 4, &r);
	CHECK(got_err(&r, -ESTALE));
	/* Keys never leave the root. */
	read_obj(rd, "../f", NULL, 10, 0, 4, &r);
	CHECK(got_err(&r, -EINVAL));
	CHECK_INT(stats_of(rd).requests, 4);
	rd_free(rd);
	store_free(st);
	reader_release(&r);
	rm_tree(dir);
}

/* ---- several threads ---- */

#define ST_THREADS 3
#define ST_OBJS	   32

struct stress {
	struct rd *rd;
	uint64_t budget;
	uint64_t sizes[ST_OBJS];
	_Atomic uint64_t bad, over, reads;
};

struct stress_arg {
	struct stress *s;
	uint64_t seed;
	int nreads;
};

/* One read of the stress run, checked. */
static void stress_read(struct stress *s, struct reader *r, uint64_t k,
			uint64_t off, size_t len)
{
	uint64_t size = s->sizes[k];
	struct rd_stats st;
	char key[16];

	if (off + len > size)
		len = (size_t)(size - off);
	snprintf(key, sizeof(key), "obj%02llu", (unsigned long long)k);
	read_obj(s->rd, key, NULL, size, off, len, r);
	reader_wait(r);
	pthread_mutex_lock(&r->lock);
	if (r->done != 1 || r->err || r->len != len ||
	    gen_diff(obj_seed(key, NULL), off, r->data, len) != 0)
		atomic_fetch_add(&s->bad, 1);
	pthread_mutex_unlock(&r->lock);
	rd_get_stats(s->rd, &st);
	if (st.cache_bytes > s->budget)
		atomic_fetch_add(&s->over, 1);
	atomic_fetch_add(&s->reads, 1);
}

/* Random reads, a quarter of them runs of 8 sequential 64 KiB reads. */
static void *stress_reader(void *p)
{
	struct stress_arg *a = p;
	struct stress *s = a->s;
	struct reader r;

	reader_init(&r);
	for (int i = 0; i < a->nreads; i++) {
		uint64_t k = rnd(&a->seed) % ST_OBJS;
		uint64_t off = rnd(&a->seed) % s->sizes[k];
		size_t len = 1 + rnd(&a->seed) % (64 * KiB);

		if (rnd(&a->seed) % 4 != 0) {
			stress_read(s, &r, k, off, len);
			continue;
		}
		off -= off % (64 * KiB);
		for (int j = 0; j < 8 && off < s->sizes[k]; j++) {
			stress_read(s, &r, k, off, 64 * KiB);
			off += 64 * KiB;
		}
	}
	reader_release(&r);
	return NULL;
}

/* Sizes: mostly small files, a quarter larger than RD_SMALL. */
static void stress_init(struct stress *s, struct rd *rd, uint64_t budget)
{
	uint64_t seed = 7;

	memset(s, 0, sizeof(*s));
	s->rd = rd;
	s->budget = budget;
	for (int k = 0; k < ST_OBJS; k++)
		s->sizes[k] = k % 4 == 0 ? MiB + 1 + rnd(&seed) % (2 * MiB)
					 : 1 + rnd(&seed) % (200 * KiB);
}

static void stress_run(struct stress *s, int nreads)
{
	struct stress_arg args[ST_THREADS];
	pthread_t th[ST_THREADS];

	for (int t = 0; t < ST_THREADS; t++) {
		args[t] = (struct stress_arg){s, 1000 + (uint64_t)t, nreads};
		pthread_create(&th[t], NULL, stress_reader, &args[t]);
	}
	for (int t = 0; t < ST_THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK_INT(atomic_load(&s->bad), 0);
	CHECK_INT(atomic_load(&s->over), 0);
	CHECK(atomic_load(&s->reads) >= (uint64_t)ST_THREADS * nreads);
}

/*
 * The budget: pinned extents (reads copying, fetches in flight: at most
 * inflight_max of prefetch, plus what each thread's read needs) stay far
 * below it, so eviction can always make room and it is never passed.
 */
static const struct rd_conf stress_conf = {
    .cache_bytes = 12 * MiB,
    .inflight_max = 2 * MiB,
    .window_max = RD_WINDOW_MIN,
};

/* Threads reading through the local store (completes inline). */
static void test_stress_local(void)
{
	char tmpl[] = "/tmp/test_rd_st.XXXXXX", msg[256], key[16];
	const char *dir = mkdtemp(tmpl);
	struct store *store = NULL;
	struct rd_conf conf = stress_conf;
	struct stress s;
	struct rd *rd;
	struct rd_stats st;

	CHECK(dir != NULL);
	if (!dir)
		return;
	CHECK_INT(store_local_new(dir, &store, msg, sizeof(msg)), 0);
	conf.store = store;
	rd = new_rd(&conf);
	stress_init(&s, rd, conf.cache_bytes);
	for (int k = 0; k < ST_OBJS; k++) {
		snprintf(key, sizeof(key), "obj%02d", k);
		write_obj(dir, key, s.sizes[k]);
	}
	stress_run(&s, 400);
	st = stats_of(rd);
	CHECK(st.evictions > 0);
	CHECK(st.hits > 0);
	CHECK_INT(st.errors, 0);
	CHECK_INT(st.inflight, 0);
	rd_free(rd);
	store_free(store);
	rm_tree(dir);
}

struct drainer {
	struct fake *f;
	atomic_bool stop;
	int n;
};

/* An I/O thread: completes requests until told to stop and idle. */
static void *drainer_thread(void *p)
{
	struct drainer *d = p;
	struct fake *f = d->f;

	for (;;) {
		struct fake_req *r = fake_take(f);

		if (r) {
			fake_complete(r, 0);
			d->n++;
			continue;
		}
		if (atomic_load(&d->stop))
			break;
		pthread_mutex_lock(&f->lock);
		if (!f->head) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&f->queued, &f->lock, &ts);
		}
		pthread_mutex_unlock(&f->lock);
	}
	return NULL;
}

/* Threads reading through the fake store, completed by an I/O thread. */
static void test_stress_fake(void)
{
	struct fake f;
	struct rd_conf conf = stress_conf;
	struct drainer d;
	struct stress s;
	struct rd *rd;
	struct rd_stats st;
	pthread_t th;

	fake_init(&f);
	conf.store = &f.base;
	rd = new_rd(&conf);
	stress_init(&s, rd, conf.cache_bytes);
	d.f = &f;
	atomic_init(&d.stop, false);
	d.n = 0;
	pthread_create(&th, NULL, drainer_thread, &d);
	stress_run(&s, 400);
	/* Prefetches nobody waited for may still be queued. */
	atomic_store(&d.stop, true);
	pthread_join(th, NULL);
	fake_drain(&f, 0);
	st = stats_of(rd);
	CHECK(st.evictions > 0);
	CHECK(st.hits > 0);
	CHECK(st.joined + st.hits + st.misses == st.reads);
	CHECK_INT(st.errors, 0);
	CHECK_INT(st.inflight, 0);
	CHECK_INT(st.requests, fake_calls(&f));
	rd_free_drained(rd, &f);
	fake_release(&f);
}

int main(void)
{
	log_set_level(LOG_LVL_ERROR);
	test_small_whole();
	test_first_fetch();
	test_member_hint();
	test_seq_windows();
	test_seq_slack();
	test_join();
	test_errors();
	test_etag();
	test_segments();
	test_clamp_and_empty();
	test_local_inline();
	test_stress_local();
	test_stress_fake();
	return check_summary("test_rd");
}
