/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_STATS_H
#define SHARDFS_STATS_H

/*
 * The statistics of a mount, as one JSON object: the control file
 * .shardfs/stats (generated afresh on every read, see ns.h), which
 * `shardfs stats MOUNTPOINT` (cmd_stats.c) reads and shows. The module
 * gathers counters from the store, the namespace and the read path; it
 * keeps none of its own, so growing it means adding a source here and a
 * few lines in stats_json().
 *
 * The object (version 2; new keys may be added, existing keys keep their
 * meaning; numbers are integers unless said otherwise):
 *
 *   version              2 (1 had everything but bytes_served,
 *                        latency_ms and cache)
 *   uptime_seconds       since the mount started (decimal, 3 places)
 *   requests             {get, list, head, put, other}: store requests
 *                        completed, by kind (S3: LIST pages; a ranged
 *                        GET and a whole-object GET are both "get")
 *   retries              attempts beyond the first
 *   errors               requests that completed with an error
 *   bytes_fetched        response body bytes received (all requests)
 *   bytes_sent           request body bytes sent
 *   bytes_served         bytes handed to readers (= reads.bytes_served)
 *   in_flight, queued    requests on the wire / waiting for a connection
 *   connections_opened   connections opened (S3; 0 for a directory)
 *   latency_ms           latency of the store's requests, all kinds
 *                        (GET, LIST, HEAD, ...), from submission to
 *                        completion (retries and backoff included), in
 *                        milliseconds (decimals):
 *                        {requests (integer: how many were measured),
 *                        mean, p50, p90, p99, max_bucket}. The store
 *                        keeps a histogram of log2 buckets of
 *                        microseconds; a percentile is interpolated
 *                        linearly inside its bucket, max_bucket is the
 *                        upper bound of the highest non-empty bucket
 *                        (the slowest request took less than that).
 *                        The numbers are null before the first request;
 *                        latency_ms itself is null when the store does
 *                        not measure latencies (a local directory).
 *   reads                {calls, served, bytes_served, errors, requests,
 *                        joined, in_flight}: the read path (requests:
 *                        GETs it issued; joined: reads that shared one)
 *   cache                the read path's cache (rd_stats in rd.h):
 *                        {hits, misses, joined, hit_rate, budget_bytes,
 *                        held_bytes, extents, evictions, evicted_bytes,
 *                        shard_fetches, prefetch_bytes, bytes_fetched,
 *                        disk_hits, disk_bytes_read, inflight_bytes}.
 *                        hit_rate = hits / (hits + misses + joined), a
 *                        decimal in [0, 1], null before the first read;
 *                        held_bytes counts ready and in-flight extents;
 *                        bytes_fetched: by the read path only (the
 *                        top-level bytes_fetched adds listings and the
 *                        dataset index); disk_hits: fetches answered by
 *                        the disk cache
 *   namespace            {inodes, dirs_listed}
 *   shards               {indexed, scanned, from_cache, damaged, failed}:
 *                        tar shard indexes made for shard directories
 *   dataset_index        {loaded (true/false), bytes, shards, dirs,
 *                        members}
 *
 * Threading: stats_json() may be called from any thread; it takes the
 * locks of the modules it asks, one at a time, and no lock of its own.
 */

#include <stdint.h>

#include "buf.h"

/* The "version" key of the object. */
#define STATS_VERSION 2

struct ns;
struct rd;
struct store;

/* Where the numbers come from. Every pointer is borrowed and may be NULL
 * (that part is then zero). */
struct stats_src {
	struct store *store;
	struct ns *ns;
	struct rd *rd;
	int64_t started_ns; /* CLOCK_MONOTONIC at mount start, nanoseconds */
};

/* Monotonic nanoseconds, for stats_src.started_ns. */
int64_t stats_now_ns(void);

/*
 * The latency below which a fraction Q (0 < Q <= 1) of the COUNT requests
 * of HIST lie, in milliseconds, interpolated linearly inside the log2
 * bucket that holds it (HIST as store_stats.lat_hist). COUNT must be the
 * sum of HIST; 0 when COUNT is 0.
 */
double stats_lat_quantile_ms(const uint64_t *hist, uint64_t count, double q);

/* The upper bound of HIST's highest non-empty bucket, in milliseconds;
 * 0 when HIST is empty. */
double stats_lat_max_ms(const uint64_t *hist);

/* Appends the JSON object (and a newline) to OUT. 0 or buf's errors. */
int stats_json(const struct stats_src *src, struct buf *out);

/* The same, shaped as an ns_stats_fn (ns.h): ARG is a struct stats_src. */
int stats_ns_gen(void *arg, struct buf *out);

#endif
