// SPDX-License-Identifier: MIT
/*
 * Unit tests of the read path's cache (rd.h), through the fake store of
 * rd_fake.h: whole-shard mode (the aligned ranges, readers of other
 * members waiting on them, AUTO/MEMBER/SHARD and the budget/2 rule, the
 * bytes-in-flight bound delaying a shard fetch); the budget (never
 * exceeded over a long random workload, nor when main's extents are all
 * hot or small holds only fetches in flight); S3-FIFO (scan resistance
 * on a cyclic scan of twice the budget, promotion of re-read extents and
 * of ghosts); and the disk cache below (written after a fetch, answering
 * a new rd without any request).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dcache.h"
#include "log.h"
#include "rd.h"
#include "rd_fake.h"

/* ---- whole-shard mode ---- */

/*
 * The first member read of a shard: the whole shard in aligned ranges
 * (size/4 rounded up to 1 MiB, within 8..64 MiB), all issued at once, or
 * only the member, by mode, budget and dataset size.
 */
static void test_whole_modes(void)
{
	static const struct {
		enum rd_prefetch pf;
		uint64_t budget, inflight, dataset, shard;
		uint64_t range; /* 0: the member only */
	} cases[] = {
	    {RD_PREFETCH_SHARD, 256 * MiB, 0, 0, 40 * MiB, 10 * MiB},
	    {RD_PREFETCH_SHARD, 256 * MiB, 0, 0, 41 * MiB, 11 * MiB},
	    {RD_PREFETCH_SHARD, 256 * MiB, 0, 0, 3 * MiB, 8 * MiB},
	    {RD_PREFETCH_SHARD, 256 * MiB, 0, 0, 100 * MiB, 25 * MiB},
	    {RD_PREFETCH_SHARD, 1024 * MiB, 0, 0, 400 * MiB, 64 * MiB},
	    {RD_PREFETCH_SHARD, 4096 * MiB, 0, 0, 1000 * MiB, 64 * MiB},
	    /* inflight_max defaults to budget/2, at most 1 GiB */
	    {RD_PREFETCH_SHARD, 4096 * MiB, 0, 0, 1536 * MiB, 0},
	    {RD_PREFETCH_SHARD, 256 * MiB, 32 * MiB, 0, 40 * MiB, 0},
	    {RD_PREFETCH_SHARD, 64 * MiB, 0, 0, 32 * MiB, 8 * MiB},
	    /* more than half the budget, even with room in flight */
	    {RD_PREFETCH_SHARD, 64 * MiB, 64 * MiB, 0, 40 * MiB, 0},
	    {RD_PREFETCH_MEMBER, 256 * MiB, 0, 0, 40 * MiB, 0},
	    {RD_PREFETCH_AUTO, 256 * MiB, 0, 100 * MiB, 40 * MiB, 10 * MiB},
	    {RD_PREFETCH_AUTO, 256 * MiB, 0, 256 * MiB, 40 * MiB, 10 * MiB},
	    {RD_PREFETCH_AUTO, 256 * MiB, 0, 300 * MiB, 40 * MiB, 0},
	    {RD_PREFETCH_AUTO, 256 * MiB, 0, 0, 40 * MiB, 10 * MiB},
	    {RD_PREFETCH_AUTO, 256 * MiB, 256 * MiB, 0, 130 * MiB, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t shard = cases[i].shard, range = cases[i].range;
		uint64_t base = shard / 2 + 1000, n = 0, bad = 0;
		struct member m;
		struct fake f;
		struct rd_conf conf = {0};
		struct rd *rd;
		struct reader r;
		struct rd_stats st;
		struct fake_req *q;
		int failed = check_failed;

		fake_init(&f);
		reader_init(&r);
		conf.store = &f.base;
		conf.cache_bytes = cases[i].budget;
		conf.inflight_max = cases[i].inflight;
		conf.dataset_bytes = cases[i].dataset;
		conf.prefetch = cases[i].pf;
		rd = new_rd(&conf);
		member_init(&m, "sh", "\"e\"", shard, base, 4096);
		read_member(rd, &m, 0, 4096, &r);
		st = stats_of(rd);
		if (range == 0) {
			CHECK_INT(st.requests, 1);
			CHECK_INT(st.shard_fetches, 0);
			TAKE_REQ(&f, q, base, 4096);
			if (q)
				fake_complete(q, 0);
			CHECK(got(&r, obj_seed("sh", "\"e\""), base, 4096));
		} else {
			uint64_t want = (shard + range - 1) / range;

			CHECK_INT(st.requests, want);
			CHECK_INT(st.inflight, want); /* all at once */
			CHECK_INT(st.inflight_bytes, shard);
			CHECK_INT(st.shard_fetches, 1);
			while ((q = fake_take(&f)) != NULL) {
				uint64_t end = (n + 1) * range;

				bad += q->off != n * range;
				bad += q->len !=
				       (end < shard ? end : shard) - n * range;
				n++;
				/* An error: no need to allocate the bytes. */
				fake_complete(q, -EIO);
			}
			CHECK_INT(bad, 0);
			CHECK_INT(n, want);
			CHECK(got_err(&r, -EIO));
		}
		if (check_failed > failed)
			fprintf(stderr, "  (case %zu)\n", i);
		rd_free_drained(rd, &f);
		reader_release(&r);
		fake_release(&f);
	}
}

/*
 * A shard fetched whole: other members wait on its ranges (no request)
 * and get their bytes, one spanning two ranges too; later reads are hits.
 */
static void test_whole_readers(void)
{
	static const char *etag = "\"w\"";
	uint64_t seed = obj_seed("w.tar", etag);
	struct member m1, m2, m3;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r1, r2, r3;
	struct rd_stats st;
	struct fake_req *q[4];

	fake_init(&f);
	reader_init(&r1);
	reader_init(&r2);
	reader_init(&r3);
	conf.store = &f.base;
	conf.prefetch = RD_PREFETCH_SHARD;
	rd = new_rd(&conf);
	member_init(&m1, "w.tar", etag, 40 * MiB, 12 * MiB + 512, 4096);
	member_init(&m2, "w.tar", etag, 40 * MiB, 31 * MiB + 5, 5000);
	member_init(&m3, "w.tar", etag, 40 * MiB, 10 * MiB - 100, 300);
	read_member(rd, &m1, 0, 4096, &r1);
	for (int i = 0; i < 4; i++)
		TAKE_REQ(&f, q[i], (uint64_t)i * 10 * MiB, 10 * MiB);
	read_member(rd, &m2, 0, 5000, &r2);
	read_member(rd, &m3, 0, 300, &r3);
	CHECK_INT(fake_calls(&f), 4);
	st = stats_of(rd);
	CHECK_INT(st.misses, 1);
	CHECK_INT(st.joined, 2);
	CHECK_INT(st.shard_fetches, 1);
	CHECK_INT(st.prefetch_bytes, 40 * MiB);
	CHECK_INT(st.cache_bytes, 40 * MiB);
	CHECK_INT(st.cache_extents, 4);
	for (int i = 3; i >= 0; i--) { /* r3 waits for q[1] and q[0] */
		CHECK_INT(reader_count(&r3), 0);
		if (q[i])
			complete_async(q[i], 0);
	}
	CHECK(got(&r1, seed, 12 * MiB + 512, 4096));
	CHECK(got(&r2, seed, 31 * MiB + 5, 5000));
	CHECK(got(&r3, seed, 10 * MiB - 100, 300));
	read_member(rd, &m3, 50, 100, &r3);
	CHECK(got(&r3, seed, 10 * MiB - 50, 100));
	st = stats_of(rd);
	CHECK_INT(st.hits, 1);
	CHECK_INT(st.requests, 4);
	CHECK_INT(st.bytes, 40 * MiB);
	rd_free_drained(rd, &f);
	reader_release(&r1);
	reader_release(&r2);
	reader_release(&r3);
	fake_release(&f);
}

/*
 * AUTO without a dataset size: shards are fetched whole while those
 * fetched whole so far fit in half the budget.
 */
static void test_whole_auto_total(void)
{
	struct member a, b;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.cache_bytes = 100 * MiB;
	rd = new_rd(&conf);
	member_init(&a, "a.tar", NULL, 40 * MiB, 0, 4096);
	member_init(&b, "b.tar", NULL, 40 * MiB, 0, 4096);
	read_member(rd, &a, 0, 4096, &r);
	CHECK_INT(fake_calls(&f), 4);
	CHECK_INT(fake_drain(&f, -EIO), 4);
	read_member(rd, &b, 0, 4096, &r); /* 80 MiB > 50 MiB */
	TAKE_REQ(&f, q, 0, 4096);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, obj_seed("b.tar", NULL), 0, 4096));
	CHECK_INT(stats_of(rd).shard_fetches, 1);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/*
 * The bytes-in-flight bound: a second shard is not fetched whole while
 * the first one's ranges are in flight (the member is), and is on a
 * later read, in ranges around the member's extent.
 */
static void test_whole_inflight(void)
{
	static const char *etag = "\"b\"";
	uint64_t seed = obj_seed("b.tar", etag);
	struct member a, b1, b2;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader ra, r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&ra);
	reader_init(&r);
	conf.store = &f.base;
	conf.prefetch = RD_PREFETCH_SHARD;
	conf.inflight_max = 48 * MiB;
	rd = new_rd(&conf);
	member_init(&a, "a.tar", etag, 40 * MiB, MiB, 4096);
	member_init(&b1, "b.tar", etag, 40 * MiB, 5 * MiB, 100 * KiB);
	member_init(&b2, "b.tar", etag, 40 * MiB, 25 * MiB, 4096);
	read_member(rd, &a, 0, 4096, &ra);
	CHECK_INT(fake_calls(&f), 4);
	read_member(rd, &b1, 0, 100 * KiB, &r);
	CHECK_INT(fake_calls(&f), 5);
	st = stats_of(rd);
	CHECK_INT(st.shard_fetches, 1);
	CHECK_INT(st.inflight_bytes, 40 * MiB + 100 * KiB);
	for (int i = 0; i < 4; i++) {
		TAKE_REQ(&f, q, (uint64_t)i * 10 * MiB, 10 * MiB);
		if (q)
			fake_complete(q, -EIO); /* a's bytes are not needed */
	}
	CHECK(got_err(&ra, -EIO));
	CHECK_INT(reader_count(&r), 0);
	TAKE_REQ(&f, q, 5 * MiB, 100 * KiB);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, seed, 5 * MiB, 100 * KiB));

	read_member(rd, &b2, 0, 4096, &r);
	st = stats_of(rd);
	CHECK_INT(st.shard_fetches, 2);
	CHECK_INT(st.requests, 10);
	TAKE_REQ(&f, q, 0, 5 * MiB);
	if (q)
		fake_complete(q, 0);
	TAKE_REQ(&f, q, 5 * MiB + 100 * KiB, 5 * MiB - 100 * KiB);
	if (q)
		fake_complete(q, 0);
	for (int i = 1; i < 4; i++) {
		TAKE_REQ(&f, q, (uint64_t)i * 10 * MiB, 10 * MiB);
		if (q)
			fake_complete(q, 0);
	}
	CHECK(got(&r, seed, 25 * MiB, 4096));
	read_member(rd, &b1, 1000, 100, &r);
	CHECK(got(&r, seed, 5 * MiB + 1000, 100));
	CHECK_INT(stats_of(rd).cache_bytes, 40 * MiB);
	rd_free_drained(rd, &f);
	reader_release(&ra);
	reader_release(&r);
	fake_release(&f);
}

/* ---- budget and eviction ---- */

/*
 * A long random workload over 64 small objects (a hot eighth read half
 * the time) with a 256 KiB budget: the budget is never exceeded, objects
 * are evicted, hot ones hit, every answer is right.
 */
static void test_budget_random(void)
{
	const uint64_t budget = 256 * KiB;
	uint64_t s = 42, bad = 0, over = 0, max = 0;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	char key[16];

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	rd = new_rd(&conf);
	for (int i = 0; i < 3000; i++) {
		uint64_t k = rnd(&s) % 2 ? rnd(&s) % 8 : rnd(&s) % 64;
		uint64_t size = 1000 + (k * 7919) % 15000;
		uint64_t off = rnd(&s) % size, len = 1 + rnd(&s) % 4096;

		snprintf(key, sizeof(key), "o%02llu", (unsigned long long)k);
		len = off + len > size ? size - off : len;
		read_obj(rd, key, "\"x\"", size, off, (size_t)len, &r);
		fake_drain(&f, 0);
		bad += !got(&r, obj_seed(key, "\"x\""), off, (size_t)len);
		st = stats_of(rd);
		over += st.cache_bytes > budget;
		max = st.cache_bytes > max ? st.cache_bytes : max;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(over, 0);
	st = stats_of(rd);
	CHECK(max > budget - 16 * KiB); /* it does fill */
	CHECK(st.evictions > 100);
	CHECK(st.hits > 1000);
	CHECK_INT(st.reads, 3000);
	CHECK_INT(st.hits + st.misses, 3000);
	CHECK_INT(st.requests, st.misses);
	CHECK_INT(st.inflight_bytes, 0);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/* Reads all of objects PREFIX<from..to> (SIZE bytes each), NTIMES. */
static void read_all(struct rd *rd, struct fake *f, const char *prefix,
		     int from, int to, uint64_t size, int ntimes)
{
	struct reader r;
	char key[32];
	uint64_t bad = 0;

	reader_init(&r);
	for (int i = from; i < to; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		for (int t = 0; t < ntimes; t++) {
			read_obj(rd, key, NULL, size, 0, (size_t)size, &r);
			fake_drain(f, 0);
			bad += !got(&r, obj_seed(key, NULL), 0, (size_t)size);
		}
	}
	CHECK_INT(bad, 0);
	reader_release(&r);
}

/*
 * Main holds only extents read often (frequency 3) and small holds one
 * cold extent, at its tenth of the budget: a new fetch must still make
 * room (a bounded scan that gave up after two rounds of main let the
 * cache pass the budget here).
 */
static void test_budget_hot_main(void)
{
	const uint64_t budget = 100 * KiB, sz = 10 * KiB;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	rd = new_rd(&conf);
	read_all(rd, &f, "g", 0, 20, sz, 1); /* g0..g9 leave as ghosts */
	st = stats_of(rd);
	CHECK_INT(st.evictions, 10);
	read_all(rd, &f, "g", 0, 9, sz, 1); /* ghosts: straight to main */
	st = stats_of(rd);
	CHECK_INT(st.evictions, 19); /* g10..g18 left small */
	CHECK_INT(st.cache_bytes, budget);
	read_all(rd, &f, "g", 0, 9, sz, 3); /* main: all hits */
	st = stats_of(rd);
	CHECK_INT(st.requests, 29);
	read_obj(rd, "c", NULL, sz, 0, (size_t)sz, &r);
	TAKE_REQ(&f, q, 0, sz);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, obj_seed("c", NULL), 0, (size_t)sz));
	st = stats_of(rd);
	CHECK_INT(st.cache_bytes, budget);
	CHECK_INT(st.evictions, 20);
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/*
 * Small is over its tenth with nothing but a shard's ranges in flight,
 * main holds ready extents: a new fetch must evict from main (looking at
 * small alone found nothing to evict, so the fetch shrank to the read
 * and the cache passed the budget).
 */
static void test_budget_busy_small(void)
{
	const uint64_t budget = 40 * MiB;
	struct member m;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r, rm;
	struct rd_stats st;
	struct fake_req *q;

	fake_init(&f);
	reader_init(&r);
	reader_init(&rm);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	conf.prefetch = RD_PREFETCH_SHARD;
	rd = new_rd(&conf);
	read_all(rd, &f, "o", 0, 30, MiB, 2); /* 30 MiB, all read twice */
	member_init(&m, "s.tar", NULL, 16 * MiB, MiB, 4096);
	read_member(rd, &m, 0, 4096, &rm);
	st = stats_of(rd);
	CHECK_INT(st.shard_fetches, 1);
	CHECK_INT(st.cache_bytes, budget);
	CHECK_INT(st.evictions, 6);
	read_obj(rd, "n", NULL, MiB, 0, 4096, &r);
	st = stats_of(rd);
	CHECK(st.cache_bytes <= budget);
	CHECK_INT(fake_calls(&f), 30 + 2 + 1);
	TAKE_REQ(&f, q, 0, 8 * MiB);
	if (q)
		fake_complete(q, -EIO);
	TAKE_REQ(&f, q, 8 * MiB, 8 * MiB);
	if (q)
		fake_complete(q, -EIO);
	TAKE_REQ(&f, q, 0, MiB); /* n whole, not only the read */
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, obj_seed("n", NULL), 0, 4096));
	CHECK(got_err(&rm, -EIO));
	rd_free_drained(rd, &f);
	reader_release(&r);
	reader_release(&rm);
	fake_release(&f);
}

/*
 * The other way round: main holds only fetches in flight (ghosts fetched
 * again), small one extent read twice, at its tenth of the budget. Small
 * sends it to main, where it must then go (it did not: main had been
 * looked at already, so the fetch passed the budget).
 */
static void test_budget_busy_main(void)
{
	const uint64_t budget = 100 * KiB, sz = 10 * KiB;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader g[9], r;
	struct rd_stats st;
	struct fake_req *q;
	char key[16];
	uint64_t bad = 0;

	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	rd = new_rd(&conf);
	read_all(rd, &f, "g", 0, 20, sz, 1); /* g0..g9 leave as ghosts */
	for (int i = 0; i < 9; i++) {	     /* to main, left in flight */
		snprintf(key, sizeof(key), "g%d", i);
		reader_init(&g[i]);
		read_obj(rd, key, NULL, sz, 0, (size_t)sz, &g[i]);
	}
	read_obj(rd, "g19", NULL, sz, 0, (size_t)sz, &r); /* a hit */
	CHECK(got(&r, obj_seed("g19", NULL), 0, (size_t)sz));
	st = stats_of(rd);
	CHECK_INT(st.evictions, 19);
	CHECK_INT(st.cache_bytes, budget);
	CHECK_INT(st.inflight, 9);
	read_obj(rd, "c", NULL, sz, 0, (size_t)sz, &r);
	st = stats_of(rd);
	CHECK(st.cache_bytes <= budget);
	CHECK_INT(st.evictions, 20);
	for (int i = 0; i < 9; i++) {
		snprintf(key, sizeof(key), "g%d", i);
		TAKE_REQ(&f, q, 0, sz);
		if (q)
			fake_complete(q, 0);
		bad += !got(&g[i], obj_seed(key, NULL), 0, (size_t)sz);
		reader_release(&g[i]);
	}
	CHECK_INT(bad, 0);
	TAKE_REQ(&f, q, 0, sz);
	if (q)
		fake_complete(q, 0);
	CHECK(got(&r, obj_seed("c", NULL), 0, (size_t)sz));
	rd_free_drained(rd, &f);
	reader_release(&r);
	fake_release(&f);
}

/*
 * A cyclic scan over twice the budget (each object read once per pass):
 * LRU (and FIFO) would never hit. S3-FIFO keeps part of the set in main:
 * about 30% of the reads hit after the first pass, though unevenly (the
 * passes go 0 3 28 3 28 23 11 28 of 64).
 */
static void test_scan_resistance(void)
{
	enum { NOBJ = 64, PASSES = 8 };
	const uint64_t budget = 256 * KiB, sz = 8 * KiB;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	uint64_t hits[PASSES], prev = 0, later = 0;
	struct rd_stats st;
	int failed = check_failed;

	fake_init(&f);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	rd = new_rd(&conf);
	for (int p = 0; p < PASSES; p++) {
		read_all(rd, &f, "scan", 0, NOBJ, sz, 1);
		st = stats_of(rd);
		hits[p] = st.hits - prev;
		prev = st.hits;
		later += p > 0 ? hits[p] : 0;
		CHECK(st.cache_bytes <= budget);
		CHECK(p == 0 || hits[p] > 0);
	}
	CHECK_INT(hits[0], 0);
	CHECK(later * 5 >= (PASSES - 1) * NOBJ); /* at least 20% */
	if (check_failed > failed) {
		fprintf(stderr, "scan hits per pass of %d:", NOBJ);
		for (int p = 0; p < PASSES; p++)
			fprintf(stderr, " %llu", (unsigned long long)hits[p]);
		fprintf(stderr, "\n");
	}
	rd_free_drained(rd, &f);
	fake_release(&f);
}

/*
 * An object read twice before it reaches the end of small moves to main
 * and outlives a flood of objects read once; one read once does not,
 * but its next fetch (a ghost) goes to main and then outlives a flood.
 */
static void test_promotion(void)
{
	const uint64_t budget = 256 * KiB, sz = 8 * KiB;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct rd_stats st;

	fake_init(&f);
	conf.store = &f.base;
	conf.cache_bytes = budget;
	rd = new_rd(&conf);
	read_all(rd, &f, "p", 0, 1, sz, 2);
	read_all(rd, &f, "q", 0, 1, sz, 1);
	read_all(rd, &f, "f", 0, 100, sz, 1);
	st = stats_of(rd);
	CHECK_INT(st.requests, 102);
	read_all(rd, &f, "p", 0, 1, sz, 1);
	CHECK_INT(stats_of(rd).requests, 102); /* p: a hit */
	read_all(rd, &f, "q", 0, 1, sz, 1);
	CHECK_INT(stats_of(rd).requests, 103); /* q: fetched again */
	read_all(rd, &f, "r", 0, 1, sz, 1);
	read_all(rd, &f, "f", 100, 200, sz, 1);
	read_all(rd, &f, "q", 0, 1, sz, 1);
	CHECK_INT(stats_of(rd).requests, 204); /* q (ghost -> main): hit */
	read_all(rd, &f, "r", 0, 1, sz, 1);
	CHECK_INT(stats_of(rd).requests, 205); /* r (read once): gone */
	read_all(rd, &f, "p", 0, 1, sz, 1);
	CHECK_INT(stats_of(rd).requests, 205);
	CHECK(stats_of(rd).cache_bytes <= budget);
	rd_free_drained(rd, &f);
	fake_release(&f);
}

/* ---- the disk cache ---- */

/*
 * The disk cache: a fetch's bytes are written below; a new rd over the
 * same disk cache answers from it (no request); another ETag, or none,
 * goes to the store (and no ETag is never written).
 */
static void test_dcache(void)
{
	char tmpl[] = "/tmp/test_rd_dc.XXXXXX", msg[256] = "";
	const char *dir = mkdtemp(tmpl);
	uint64_t s1 = obj_seed("obj", "\"d1\""), s2 = obj_seed("obj", "\"d2\"");
	struct dcache_conf dconf = {0};
	struct dcache *dc = NULL;
	struct dcache_stats ds;
	struct fake f;
	struct rd_conf conf = {0};
	struct rd *rd;
	struct reader r;
	struct rd_stats st;
	struct fake_req *q;

	CHECK(dir != NULL);
	if (!dir)
		return;
	dconf.dir = dir;
	dconf.max_bytes = MiB;
	CHECK_INT(dcache_open(&dconf, &dc, msg, sizeof(msg)), 0);
	if (!dc)
		return;
	fake_init(&f);
	reader_init(&r);
	conf.store = &f.base;
	conf.dcache = dc;
	rd = new_rd(&conf);
	read_obj(rd, "obj", "\"d1\"", 10000, 100, 100, &r);
	TAKE_REQ(&f, q, 0, 10000);
	if (q)
		complete_async(q, 0);
	CHECK(got(&r, s1, 100, 100));
	CHECK_INT(stats_of(rd).disk_hits, 0);
	dcache_flush(dc);
	dcache_get_stats(dc, &ds);
	CHECK_INT(ds.entries, 1);
	CHECK_INT(ds.bytes, 10000);
	CHECK_INT(ds.bytes_written, 10000);
	rd_free_drained(rd, &f);

	rd = new_rd(&conf); /* as after a remount */
	read_obj(rd, "obj", "\"d1\"", 10000, 300, 100, &r);
	CHECK(got(&r, s1, 300, 100)); /* at once, from disk */
	read_obj(rd, "obj", "\"d1\"", 10000, 9900, 100, &r);
	CHECK(got(&r, s1, 9900, 100)); /* from memory */
	st = stats_of(rd);
	CHECK_INT(fake_calls(&f), 1);
	CHECK_INT(st.requests, 0);
	CHECK_INT(st.disk_hits, 1);
	CHECK_INT(st.disk_bytes_read, 10000);
	CHECK_INT(st.hits, 1);
	read_obj(rd, "obj", "\"d2\"", 10000, 300, 100, &r);
	TAKE_REQ(&f, q, 0, 10000);
	if (q) {
		CHECK_STR(q->etag, "\"d2\"");
		fake_complete(q, 0);
	}
	CHECK(got(&r, s2, 300, 100));
	read_obj(rd, "obj", NULL, 10000, 300, 100, &r);
	TAKE_REQ(&f, q, 0, 10000);
	if (q) {
		CHECK(!q->has_etag);
		fake_complete(q, 0);
	}
	CHECK(got(&r, obj_seed("obj", NULL), 300, 100));
	dcache_flush(dc);
	dcache_get_stats(dc, &ds);
	CHECK_INT(ds.bytes_written, 20000);
	st = stats_of(rd);
	CHECK_INT(st.disk_hits, 1);
	CHECK_INT(st.requests, 2);
	rd_free_drained(rd, &f);
	dcache_close(dc);
	reader_release(&r);
	fake_release(&f);
	rm_tree(dir);
}

int main(void)
{
	log_set_level(LOG_LVL_ERROR);
	test_whole_modes();
	test_whole_readers();
	test_whole_auto_total();
	test_whole_inflight();
	test_budget_random();
	test_budget_hot_main();
	test_budget_busy_small();
	test_budget_busy_main();
	test_scan_resistance();
	test_promotion();
	test_dcache();
	return check_summary("test_rd_cache");
}
