/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_STATS_H
#define SHARDFS_STATS_H

/*
 * The statistics of a mount, as one JSON object: the control file
 * .shardfs/stats (generated afresh on every read, see ns.h) and, later,
 * `shardfs stats MOUNTPOINT`. The module gathers counters from the store,
 * the namespace and the read path; it keeps none of its own, so growing
 * it means adding a source here and a few lines in stats_json().
 *
 * The object (version 1; new keys may be added, existing keys keep their
 * meaning; all numbers are integers unless said otherwise):
 *
 *   version              1
 *   uptime_seconds       since the mount started (a decimal number)
 *   requests             {get, list, head, put, other}: store requests
 *                        completed, by kind (S3: LIST pages; a ranged
 *                        GET and a whole-object GET are both "get")
 *   retries              attempts beyond the first
 *   errors               requests that completed with an error
 *   bytes_fetched        response body bytes received
 *   bytes_sent           request body bytes sent
 *   in_flight, queued    requests on the wire / waiting for a connection
 *   connections_opened   connections opened (S3; 0 for a directory)
 *   reads                {calls, served, bytes_served, errors, requests,
 *                        joined, in_flight}: the read path (requests:
 *                        GETs it issued; joined: reads that shared one)
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

/* Appends the JSON object (and a newline) to OUT. 0 or buf's errors. */
int stats_json(const struct stats_src *src, struct buf *out);

/* The same, shaped as an ns_stats_fn (ns.h): ARG is a struct stats_src. */
int stats_ns_gen(void *arg, struct buf *out);

#endif
