// SPDX-License-Identifier: MIT
/*
 * dsidx_bench [MEMBERS [SHARDS [sorted|shuffled]]]: builds a dataset index
 * of an ImageNet-like tree (train/<wnid>/<wnid>_<n>.JPEG, 1000 classes)
 * packed into SHARDS tar shards, serialises it, parses and verifies it,
 * resolves every path, and prints the times and the size per member.
 * "sorted" adds members in tree order (what `shardfs pack` does),
 * "shuffled" in a random order (shards of shuffled samples). Defaults:
 * 1000000 members, 1000 shards, both orders.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "buf.h"
#include "dsidx.h"

#define NCLASSES 1000

struct sample {
	char *path;
	uint32_t shard;
	uint64_t offset, size;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Samples in tree order, with shard, offset and size as pack lays them. */
static struct sample *make_samples(uint32_t n, uint32_t nshards,
				   uint64_t *shard_size)
{
	struct sample *v = calloc(n, sizeof(*v));
	uint32_t per_shard = (n + nshards - 1) / nshards, wnid = 1440764;
	uint32_t num = 0;
	char path[128];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t cls = (uint32_t)((uint64_t)i * NCLASSES / n), s;

		if (i == 0 ||
		    cls != (uint32_t)((uint64_t)(i - 1) * NCLASSES / n))
			wnid += 1 + rnd(20000), num = rnd(100);
		num += 1 + rnd(10);
		snprintf(path, sizeof(path), "train/n%08u/n%08u_%u.JPEG", wnid,
			 wnid, num);
		v[i].path = strdup(path);
		s = i / per_shard;
		v[i].shard = s;
		v[i].size = 20000 + rnd(200000);
		v[i].offset = shard_size[s] + 512;
		shard_size[s] += 512 + ((v[i].size + 511) & ~511ull);
	}
	return v;
}

static int run(struct sample *v, uint32_t n, uint32_t nshards,
	       const uint64_t *shard_size, const char *order)
{
	struct dsidx_builder *b;
	struct buf out;
	struct dsidx *x;
	struct dsidx_ref ref;
	struct dsidx_member_view m;
	uint32_t *handle = calloc(nshards, sizeof(*handle));
	char key[64], err[256];
	double t0, t1, t2, t3, t4;
	uint64_t bad = 0;
	int rc;

	buf_init(&out, DSIDX_SUGGESTED_CAP);
	t0 = now();
	rc = dsidx_builder_new(NULL, &b);
	for (uint32_t s = 0; !rc && s < nshards; s++) {
		snprintf(key, sizeof(key), "shard-%06u.tar", s);
		rc = dsidx_builder_add_shard(
		    b, key, "\"9b2cf535f27731c974343645a3985328\"",
		    shard_size[s], &handle[s]);
	}
	for (uint32_t i = 0; !rc && i < n; i++)
		rc = dsidx_builder_add_member(
		    b, v[i].path, handle[v[i].shard], v[i].offset, v[i].size,
		    S_IFREG | 0644, 1767225600, 0, NULL);
	t1 = now();
	if (!rc)
		rc = dsidx_builder_finish(b, 1767225600, &out);
	t2 = now();
	dsidx_builder_free(b);
	if (rc) {
		fprintf(stderr, "build: %s\n", strerror(-rc));
		return 1;
	}
	rc = dsidx_open(out.data, out.len, &x, err, sizeof(err));
	t3 = now();
	if (rc) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (dsidx_lookup_path(x, v[i].path, strlen(v[i].path), &ref) ||
		    ref.kind != DSIDX_KIND_MEMBER ||
		    dsidx_member(x, ref.idx, &m) || m.size != v[i].size ||
		    m.offset != v[i].offset)
			bad++;
	}
	t4 = now();
	printf("%-8s members %u shards %u: build %.3f s, serialise %.3f s, "
	       "open+verify %.3f s, %u path lookups %.3f s; index %zu bytes, "
	       "%.1f bytes/member%s\n",
	       order, n, nshards, t1 - t0, t2 - t1, t3 - t2, n, t4 - t3,
	       out.len, (double)out.len / n, bad ? " LOOKUPS FAILED" : "");
	dsidx_free(x);
	buf_release(&out);
	free(handle);
	return bad ? 1 : 0;
}

/*
 * Shuffles the samples and moves each path next to its neighbour in the
 * new order: a tar scanner hands the builder a path that is hot in the
 * cache, and the benchmark should time the builder, not its own misses.
 */
static void shuffle(struct sample *v, uint32_t n, char **arena)
{
	size_t used = 0;

	*arena = malloc((size_t)n * 64);
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = rnd(i + 1);
		struct sample t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(v[i].path) + 1;

		memcpy(*arena + used, v[i].path, len);
		free(v[i].path);
		v[i].path = *arena + used;
		used += len;
	}
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000;
	uint32_t nshards =
	    argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000;
	const char *order = argc > 3 ? argv[3] : "both";
	uint64_t *shard_size;
	struct sample *v;
	char *arena = NULL;
	int rc = 0;

	if (n == 0 || nshards == 0 || nshards > n) {
		fprintf(stderr, "usage: dsidx_bench [MEMBERS [SHARDS "
				"[sorted|shuffled]]]\n");
		return 2;
	}
	shard_size = calloc(nshards, sizeof(*shard_size));
	v = make_samples(n, nshards, shard_size);
	if (strcmp(order, "shuffled"))
		rc |= run(v, n, nshards, shard_size, "sorted");
	if (strcmp(order, "sorted")) {
		shuffle(v, n, &arena);
		rc |= run(v, n, nshards, shard_size, "shuffled");
	}
	for (uint32_t i = 0; !arena && i < n; i++)
		free(v[i].path);
	free(arena);
	free(v);
	free(shard_size);
	return rc;
}
