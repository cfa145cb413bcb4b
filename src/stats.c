// SPDX-License-Identifier: MIT
/*
 * The statistics of a mount as JSON (see stats.h for the keys). Each
 * section asks one module for a snapshot of its counters and prints it;
 * nothing is cached here. Keys are fixed ASCII strings, so no escaping is
 * needed.
 *
 * Threading: none of its own; see stats.h.
 */
#include "stats.h"

#include <inttypes.h>
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

static int store_part(const struct stats_src *src, struct buf *out)
{
	struct store_stats s;

	memset(&s, 0, sizeof(s));
	if (src->store && src->store->ops->stats)
		src->store->ops->stats(src->store, &s);
	return buf_printf(out,
			  "  \"requests\": {\"get\": %" PRIu64
			  ", \"list\": %" PRIu64 ", \"head\": %" PRIu64
			  ", \"put\": %" PRIu64 ", \"other\": %" PRIu64 "},\n"
			  "  \"retries\": %" PRIu64 ",\n"
			  "  \"errors\": %" PRIu64 ",\n"
			  "  \"bytes_fetched\": %" PRIu64 ",\n"
			  "  \"bytes_sent\": %" PRIu64 ",\n"
			  "  \"in_flight\": %" PRIu64 ",\n"
			  "  \"queued\": %" PRIu64 ",\n"
			  "  \"connections_opened\": %" PRIu64 ",\n",
			  s.gets, s.lists, s.heads, s.puts, s.others, s.retries,
			  s.errors, s.bytes_in, s.bytes_out, s.in_flight,
			  s.queued, s.connects);
}

static int rd_part(const struct stats_src *src, struct buf *out)
{
	struct rd_stats r;

	memset(&r, 0, sizeof(r));
	if (src->rd)
		rd_get_stats(src->rd, &r);
	return buf_printf(
	    out,
	    "  \"reads\": {\"calls\": %" PRIu64 ", \"served\": %" PRIu64
	    ", \"bytes_served\": %" PRIu64 ", \"errors\": %" PRIu64
	    ", \"requests\": %" PRIu64 ", \"joined\": %" PRIu64
	    ", \"in_flight\": %" PRIu64 "},\n",
	    r.reads, r.served, r.bytes_served, r.errors, r.requests, r.joined,
	    r.inflight);
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
	int rc;

	if (up < 0)
		up = 0;
	rc = buf_printf(out,
			"{\n  \"version\": 1,\n"
			"  \"uptime_seconds\": %" PRId64 ".%03" PRId64 ",\n",
			up / 1000000000, up / 1000000 % 1000);
	if (rc == 0)
		rc = store_part(src, out);
	if (rc == 0)
		rc = rd_part(src, out);
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
