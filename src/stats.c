// SPDX-License-Identifier: MIT
/*
 * The statistics of a mount as JSON (see stats.h for the keys). Each
 * section asks one module for a snapshot of its counters and prints it;
 * nothing is cached here. Keys are fixed ASCII strings, so no escaping is
 * needed. Decimals are printed with "%.3f" / "%.4f": in the C locale
 * (a mount never calls setlocale()), so always with a '.'.
 *
 * Threading: none of its own; see stats.h.
 */
#include "stats.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ns.h"
#include "rd.h"
#include "store.h"

int64_t stats_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Bucket B of a latency histogram covers [lo, hi) microseconds. */
static void bucket_bounds(size_t b, double *lo, double *hi)
{
	*lo = b == 0 ? 0.0 : ldexp(1.0, (int)b);
	*hi = ldexp(1.0, (int)b + 1);
}

double stats_lat_quantile_ms(const uint64_t *hist, uint64_t count, double q)
{
	double rank, before = 0, lo, hi;

	if (count == 0)
		return 0;
	/* The rank of the request at Q, 1-based: at least the first (the
	 * slack keeps 0.9 * 100 from becoming rank 91). */
	rank = ceil(q * (double)count - 1e-9);
	if (rank < 1)
		rank = 1;
	if (rank > (double)count)
		rank = (double)count;
	for (size_t b = 0; b < STORE_LAT_BUCKETS; b++) {
		if (hist[b] == 0 || before + (double)hist[b] < rank) {
			before += (double)hist[b];
			continue;
		}
		bucket_bounds(b, &lo, &hi);
		return (lo + (hi - lo) * (rank - before) / (double)hist[b]) /
		       1000.0;
	}
	return stats_lat_max_ms(hist); /* COUNT was more than the sum */
}

double stats_lat_max_ms(const uint64_t *hist)
{
	double lo, hi;

	for (size_t b = STORE_LAT_BUCKETS; b-- > 0;) {
		if (hist[b]) {
			bucket_bounds(b, &lo, &hi);
			return hi / 1000.0;
		}
	}
	return 0;
}

static int store_part(const struct store_stats *s, const struct rd_stats *r,
		      struct buf *out)
{
	return buf_printf(out,
			  "  \"requests\": {\"get\": %" PRIu64
			  ", \"list\": %" PRIu64 ", \"head\": %" PRIu64
			  ", \"put\": %" PRIu64 ", \"other\": %" PRIu64 "},\n"
			  "  \"retries\": %" PRIu64 ",\n"
			  "  \"errors\": %" PRIu64 ",\n"
			  "  \"bytes_fetched\": %" PRIu64 ",\n"
			  "  \"bytes_sent\": %" PRIu64 ",\n"
			  "  \"bytes_served\": %" PRIu64 ",\n"
			  "  \"in_flight\": %" PRIu64 ",\n"
			  "  \"queued\": %" PRIu64 ",\n"
			  "  \"connections_opened\": %" PRIu64 ",\n",
			  s->gets, s->lists, s->heads, s->puts, s->others,
			  s->retries, s->errors, s->bytes_in, s->bytes_out,
			  r->bytes_served, s->in_flight, s->queued,
			  s->connects);
}

static int latency_part(const struct store_stats *s, struct buf *out)
{
	static const double qs[] = {0.50, 0.90, 0.99};
	static const char *const names[] = {"p50", "p90", "p99"};
	int rc;

	if (!s->lat_known)
		return buf_append_str(out, "  \"latency_ms\": null,\n");
	rc = buf_printf(out, "  \"latency_ms\": {\"requests\": %" PRIu64,
			s->lat_count);
	if (rc == 0 && s->lat_count == 0)
		rc = buf_append_str(out, ", \"mean\": null");
	else if (rc == 0)
		rc = buf_printf(out, ", \"mean\": %.3f",
				(double)s->lat_us_sum / (double)s->lat_count /
				    1000.0);
	for (size_t i = 0; rc == 0 && i < 3; i++) {
		if (s->lat_count == 0)
			rc = buf_printf(out, ", \"%s\": null", names[i]);
		else
			rc = buf_printf(out, ", \"%s\": %.3f", names[i],
					stats_lat_quantile_ms(
					    s->lat_hist, s->lat_count, qs[i]));
	}
	if (rc == 0 && s->lat_count == 0)
		rc = buf_append_str(out, ", \"max_bucket\": null},\n");
	else if (rc == 0)
		rc = buf_printf(out, ", \"max_bucket\": %.3f},\n",
				stats_lat_max_ms(s->lat_hist));
	return rc;
}

static int reads_part(const struct rd_stats *r, struct buf *out)
{
	return buf_printf(
	    out,
	    "  \"reads\": {\"calls\": %" PRIu64 ", \"served\": %" PRIu64
	    ", \"bytes_served\": %" PRIu64 ", \"errors\": %" PRIu64
	    ", \"requests\": %" PRIu64 ", \"joined\": %" PRIu64
	    ", \"in_flight\": %" PRIu64 "},\n",
	    r->reads, r->served, r->bytes_served, r->errors, r->requests,
	    r->joined, r->inflight);
}

static int cache_part(const struct rd_stats *r, struct buf *out)
{
	uint64_t asked = r->hits + r->misses + r->joined;
	char rate[32] = "null";

	if (asked)
		snprintf(rate, sizeof(rate), "%.4f",
			 (double)r->hits / (double)asked);
	return buf_printf(
	    out,
	    "  \"cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	    ", \"joined\": %" PRIu64 ", \"hit_rate\": %s"
	    ", \"budget_bytes\": %" PRIu64 ", \"held_bytes\": %" PRIu64
	    ", \"extents\": %" PRIu64 ", \"evictions\": %" PRIu64
	    ", \"evicted_bytes\": %" PRIu64 ", \"shard_fetches\": %" PRIu64
	    ", \"prefetch_bytes\": %" PRIu64 ", \"bytes_fetched\": %" PRIu64
	    ", \"disk_hits\": %" PRIu64 ", \"disk_bytes_read\": %" PRIu64
	    ", \"inflight_bytes\": %" PRIu64 "},\n",
	    r->hits, r->misses, r->joined, rate, r->cache_budget,
	    r->cache_bytes, r->cache_extents, r->evictions, r->evicted_bytes,
	    r->shard_fetches, r->prefetch_bytes, r->bytes, r->disk_hits,
	    r->disk_bytes_read, r->inflight_bytes);
}

static int ns_part(const struct stats_src *src, struct buf *out)
{
	struct ns_stats n;

	memset(&n, 0, sizeof(n));
	if (src->ns)
		ns_get_stats(src->ns, &n);
	return buf_printf(
	    out,
	    "  \"namespace\": {\"inodes\": %" PRIu64
	    ", \"dirs_listed\": %" PRIu64 "},\n"
	    "  \"shards\": {\"indexed\": %" PRIu64 ", \"scanned\": %" PRIu64
	    ", \"from_cache\": %" PRIu64 ", \"damaged\": %" PRIu64
	    ", \"failed\": %" PRIu64 "},\n"
	    "  \"dataset_index\": {\"loaded\": %s, \"bytes\": %" PRIu64
	    ", \"shards\": %" PRIu64 ", \"dirs\": %" PRIu64
	    ", \"members\": %" PRIu64 "}\n",
	    n.inodes, n.dirs_listed, n.shards_indexed, n.shards_scanned,
	    n.shards_cached, n.shards_damaged, n.shards_failed,
	    n.index_loaded ? "true" : "false", n.index_bytes, n.index_shards,
	    n.index_dirs, n.index_members);
}

int stats_json(const struct stats_src *src, struct buf *out)
{
	int64_t up = stats_now_ns() - src->started_ns;
	struct store_stats s;
	struct rd_stats r;
	int rc;

	/* One snapshot of each module, so that the sections agree. */
	memset(&s, 0, sizeof(s));
	if (src->store && src->store->ops->stats)
		src->store->ops->stats(src->store, &s);
	memset(&r, 0, sizeof(r));
	if (src->rd)
		rd_get_stats(src->rd, &r);
	if (up < 0)
		up = 0;
	rc = buf_printf(out,
			"{\n  \"version\": %d,\n"
			"  \"uptime_seconds\": %" PRId64 ".%03" PRId64 ",\n",
			STATS_VERSION, up / 1000000000, up / 1000000 % 1000);
	if (rc == 0)
		rc = store_part(&s, &r, out);
	if (rc == 0)
		rc = latency_part(&s, out);
	if (rc == 0)
		rc = reads_part(&r, out);
	if (rc == 0)
		rc = cache_part(&r, out);
	if (rc == 0)
		rc = ns_part(src, out);
	if (rc == 0)
		rc = buf_append_str(out, "}\n");
	return rc;
}

int stats_ns_gen(void *arg, struct buf *out)
{
	return stats_json(arg, out);
}
