// SPDX-License-Identifier: MIT
/*
 * stats: latency percentiles from log2 histograms (a table), and the
 * JSON of a mount with a fake store, read back with jsonflat: valid,
 * version 2, the keys of version 1 kept, the new ones present, null where
 * nothing is known.
 */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "jsonflat.h"
#include "store.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct bucket {
	unsigned b;
	uint64_t n;
};

struct lat_case {
	struct bucket fill[3]; /* n == 0 ends the list */
	double q;
	double want_ms;
};

static const struct lat_case lat_cases[] = {
    /* One bucket, [1024, 2048) us: linear inside it. */
    {{{10, 100}}, 0.50, 1.536},
    {{{10, 100}}, 0.90, 1.9456},
    {{{10, 100}}, 0.99, 2.03776},
    {{{10, 100}}, 1.00, 2.048},
    {{{10, 100}}, 0.0001, 1.03424}, /* the first request's rank */
    /* Bucket 0 holds 0 and 1 us: [0, 2). */
    {{{0, 10}}, 0.50, 0.001},
    /* 90 fast, 10 slow requests. */
    {{{3, 90}, {20, 10}}, 0.50, 0.012444},
    {{{3, 90}, {20, 10}}, 0.90, 0.016},
    {{{3, 90}, {20, 10}}, 0.91, 1153.4336},
    {{{3, 90}, {20, 10}}, 0.99, 1992.2944},
    /* Empty buckets in between are skipped. */
    {{{1, 1}, {5, 1}, {9, 2}}, 0.50, 0.064},
    {{{1, 1}, {5, 1}, {9, 2}}, 0.75, 0.768},
    /* The last bucket (2^31 us and more) ends at 2^32 us. */
    {{{31, 1}}, 1.00, 4294967.296},
};

static void fill_hist(const struct bucket *fill, uint64_t *hist,
		      uint64_t *count)
{
	memset(hist, 0, STORE_LAT_BUCKETS * sizeof(*hist));
	*count = 0;
	for (size_t i = 0; i < 3 && fill[i].n; i++) {
		hist[fill[i].b] += fill[i].n;
		*count += fill[i].n;
	}
}

static void test_quantiles(void)
{
	uint64_t hist[STORE_LAT_BUCKETS], count;

	for (size_t i = 0; i < ARRAY_SIZE(lat_cases); i++) {
		const struct lat_case *c = &lat_cases[i];
		double got;

		fill_hist(c->fill, hist, &count);
		got = stats_lat_quantile_ms(hist, count, c->q);
		if (fabs(got - c->want_ms) > 1e-6 * (1 + c->want_ms)) {
			CHECK(!"quantile");
			fprintf(stderr,
				"  case %zu: q %g: got %.6f ms, want "
				"%.6f\n",
				i, c->q, got, c->want_ms);
		} else {
			CHECK(1);
		}
	}
	memset(hist, 0, sizeof(hist));
	CHECK(stats_lat_quantile_ms(hist, 0, 0.5) == 0);
	CHECK(stats_lat_max_ms(hist) == 0);
	hist[3] = 90;
	hist[20] = 10;
	CHECK(fabs(stats_lat_max_ms(hist) - 2097.152) < 1e-9);
	/* COUNT larger than the sum (a torn snapshot): bounded, no crash. */
	CHECK(fabs(stats_lat_quantile_ms(hist, 1000, 0.99) - 2097.152) < 1e-9);
}

/* ---- the JSON, with a fake store ---- */

struct fake_store {
	struct store base;
	struct store_stats s;
};

static void fake_stats(struct store *s, struct store_stats *out)
{
	*out = ((struct fake_store *)s)->s;
}

static const struct store_ops fake_ops = {.stats = fake_stats};

static int json_of(struct fake_store *fs, struct jsonflat *j)
{
	struct stats_src src = {.store = &fs->base,
				.started_ns = stats_now_ns()};
	struct buf out;
	char msg[128];
	int rc;

	buf_init(&out, 1 << 20);
	rc = stats_json(&src, &out);
	CHECK_INT(rc, 0);
	rc = jsonflat_parse(buf_str(&out), out.len, j, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "invalid JSON (%s):\n%s", msg, buf_str(&out));
	buf_release(&out);
	return rc;
}

static uint64_t u64_at(const struct jsonflat *j, const char *path)
{
	uint64_t v = UINT64_MAX;

	if (jsonflat_u64(j, path, &v) < 0)
		fprintf(stderr, "  no integer at %s\n", path);
	return v;
}

static bool is_null(const struct jsonflat *j, const char *path)
{
	const struct jsonflat_item *it = jsonflat_get(j, path);

	return it && it->type == JSONFLAT_NULL;
}

static void test_json_keys(void)
{
	static const char *const v1_keys[] = {
	    "uptime_seconds",
	    "requests.get",
	    "requests.list",
	    "requests.head",
	    "requests.put",
	    "requests.other",
	    "retries",
	    "errors",
	    "bytes_fetched",
	    "bytes_sent",
	    "in_flight",
	    "queued",
	    "connections_opened",
	    "reads.calls",
	    "reads.served",
	    "reads.bytes_served",
	    "reads.errors",
	    "reads.requests",
	    "reads.joined",
	    "reads.in_flight",
	    "namespace.inodes",
	    "namespace.dirs_listed",
	    "shards.indexed",
	    "shards.scanned",
	    "shards.from_cache",
	    "shards.damaged",
	    "shards.failed",
	    "dataset_index.loaded",
	    "dataset_index.bytes",
	    "dataset_index.shards",
	    "dataset_index.dirs",
	    "dataset_index.members",
	};
	static const char *const v2_keys[] = {
	    "bytes_served",	    "cache.hits",
	    "cache.misses",	    "cache.joined",
	    "cache.budget_bytes",   "cache.held_bytes",
	    "cache.extents",	    "cache.evictions",
	    "cache.evicted_bytes",  "cache.shard_fetches",
	    "cache.prefetch_bytes", "cache.bytes_fetched",
	    "cache.disk_hits",	    "cache.disk_bytes_read",
	    "cache.inflight_bytes",
	};
	struct fake_store fs = {.base = {.ops = &fake_ops}};
	struct jsonflat j;
	double d;

	fs.s.gets = 12;
	fs.s.lists = 3;
	fs.s.bytes_in = 4096;
	fs.s.retries = 2;
	/* A store without latencies: latency_ms is null. */
	CHECK_INT(json_of(&fs, &j), 0);
	CHECK_INT(u64_at(&j, "version"), 2);
	for (size_t i = 0; i < ARRAY_SIZE(v1_keys); i++)
		if (!jsonflat_get(&j, v1_keys[i])) {
			CHECK(!"a version 1 key is missing");
			fprintf(stderr, "  missing: %s\n", v1_keys[i]);
		}
	for (size_t i = 0; i < ARRAY_SIZE(v2_keys); i++)
		if (!jsonflat_get(&j, v2_keys[i])) {
			CHECK(!"a version 2 key is missing");
			fprintf(stderr, "  missing: %s\n", v2_keys[i]);
		}
	CHECK_INT(u64_at(&j, "requests.get"), 12);
	CHECK_INT(u64_at(&j, "requests.list"), 3);
	CHECK_INT(u64_at(&j, "bytes_fetched"), 4096);
	CHECK_INT(u64_at(&j, "retries"), 2);
	CHECK_INT(u64_at(&j, "bytes_served"), 0);
	CHECK(is_null(&j, "latency_ms"));
	CHECK(is_null(&j, "cache.hit_rate")); /* no reads yet */
	CHECK(jsonflat_double(&j, "uptime_seconds", &d) == 0 && d >= 0);
	jsonflat_release(&j);

	/* Measured, but no request yet: the numbers are null. */
	fs.s.lat_known = true;
	CHECK_INT(json_of(&fs, &j), 0);
	CHECK_INT(u64_at(&j, "latency_ms.requests"), 0);
	CHECK(is_null(&j, "latency_ms.p50"));
	CHECK(is_null(&j, "latency_ms.p99"));
	CHECK(is_null(&j, "latency_ms.max_bucket"));
	CHECK(is_null(&j, "latency_ms.mean"));
	jsonflat_release(&j);

	/* 100 requests in [1024, 2048) us. */
	fs.s.lat_hist[10] = 100;
	fs.s.lat_count = 100;
	fs.s.lat_us_sum = 150000;
	CHECK_INT(json_of(&fs, &j), 0);
	CHECK_INT(u64_at(&j, "latency_ms.requests"), 100);
	CHECK(jsonflat_double(&j, "latency_ms.p50", &d) == 0 &&
	      fabs(d - 1.536) < 1e-9);
	CHECK(jsonflat_double(&j, "latency_ms.p90", &d) == 0 &&
	      fabs(d - 1.946) < 1e-9); /* printed with 3 decimals */
	CHECK(jsonflat_double(&j, "latency_ms.p99", &d) == 0 &&
	      fabs(d - 2.038) < 1e-9);
	CHECK(jsonflat_double(&j, "latency_ms.max_bucket", &d) == 0 &&
	      fabs(d - 2.048) < 1e-9);
	CHECK(jsonflat_double(&j, "latency_ms.mean", &d) == 0 &&
	      fabs(d - 1.5) < 1e-9);
	jsonflat_release(&j);
}

/* Nothing to ask at all: still valid JSON, all zeros. */
static void test_json_empty(void)
{
	struct stats_src src = {.started_ns = stats_now_ns()};
	struct jsonflat j;
	struct buf out;

	buf_init(&out, 1 << 20);
	CHECK_INT(stats_json(&src, &out), 0);
	CHECK_INT(jsonflat_parse(buf_str(&out), out.len, &j, NULL, 0), 0);
	CHECK_INT(u64_at(&j, "requests.get"), 0);
	CHECK(is_null(&j, "latency_ms"));
	jsonflat_release(&j);
	/* A buffer too small for it: the error, not a truncated object. */
	buf_release(&out);
	buf_init(&out, 100);
	CHECK_INT(stats_json(&src, &out), -E2BIG);
	buf_release(&out);
}

int main(void)
{
	test_quantiles();
	test_json_keys();
	test_json_empty();
	return check_summary("test_stats");
}
