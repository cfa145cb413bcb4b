// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the dataset index reader. Each input is opened twice: as it
 * is (the checksums nearly always fail, which exercises the header
 * checks) and as a copy whose checksums dsidx_reseal() has fixed, so that
 * mutations reach the record checks. An accepted index is walked entirely
 * and its documented invariants are checked; a violation aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsidx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_shards(const struct dsidx *x)
{
	const struct dsidx_info *in = dsidx_info(x);
	struct dsidx_shard_view v;
	uint32_t idx;

	for (uint32_t i = 0; i < in->nshards; i++) {
		if (dsidx_shard(x, i, &v) || v.key_len == 0 ||
		    v.key[0] == '/' ||
		    dsidx_find_shard(x, v.key, v.key_len, &idx) || idx != i)
			abort();
		for (uint32_t k = 0; k < v.etag_len; k++)
			if (v.etag[k] <= ' ' || v.etag[k] > '~')
				abort();
	}
	if (dsidx_shard(x, in->nshards, &v) != -ENOENT)
		abort();
}

static void walk_dirs(const struct dsidx *x)
{
	const struct dsidx_info *in = dsidx_info(x);
	struct dsidx_dir_view v;
	struct dsidx_ref ref;
	uint32_t idx;

	for (uint32_t i = 0; i < in->ndirs; i++) {
		if (dsidx_dir(x, i, &v) || (v.mode & S_IFMT) != S_IFDIR)
			abort();
		if (i &&
		    (v.parent >= i ||
		     dsidx_lookup_dir(x, v.parent, v.name, v.name_len, &idx) ||
		     idx != i || memchr(v.name, '/', v.name_len)))
			abort();
		for (uint64_t pos = 0; dsidx_child(x, i, pos, &ref) == 0; pos++)
			if ((ref.kind == DSIDX_KIND_DIR &&
			     ref.idx >= in->ndirs) ||
			    (ref.kind == DSIDX_KIND_MEMBER &&
			     ref.idx >= in->nmembers))
				abort();
	}
}

/* A sparse member's segments: ascending, disjoint, inside the file and
 * the shard; segment_find() agrees with them. */
static void walk_segments(const struct dsidx *x, uint32_t i,
			  const struct dsidx_member_view *v,
			  const struct dsidx_shard_view *s)
{
	struct dsidx_segment g;
	uint32_t first, n, seg;
	uint64_t end = 0;

	if (dsidx_member_segments(x, i, &first, &n))
		abort();
	for (uint32_t k = first; k < first + n; k++) {
		if (dsidx_segment(x, k, &g) || g.length == 0 ||
		    g.offset < end || g.offset > v->size ||
		    g.length > v->size - g.offset ||
		    g.archive_offset > s->size ||
		    g.length > s->size - g.archive_offset ||
		    dsidx_segment_find(x, i, g.offset, &seg) || seg != k)
			abort();
		end = g.offset + g.length;
	}
	if (dsidx_segment_find(x, i, end, &seg) != -ENOENT)
		abort();
}

static void walk_members(const struct dsidx *x)
{
	const struct dsidx_info *in = dsidx_info(x);
	struct dsidx_member_view v;
	struct dsidx_shard_view s;
	struct dsidx_ref ref;

	for (uint32_t i = 0; i < in->nmembers; i++) {
		if (dsidx_member(x, i, &v) || v.dir >= in->ndirs ||
		    dsidx_lookup(x, v.dir, v.name, v.name_len, &ref) ||
		    ref.kind != DSIDX_KIND_MEMBER || ref.idx != i)
			abort();
		if ((v.mode & S_IFMT) == S_IFLNK) {
			if (v.shard != DSIDX_NONE || v.size || !v.link_len)
				abort();
			continue;
		}
		if ((v.mode & S_IFMT) != S_IFREG || v.link_len ||
		    dsidx_shard(x, v.shard, &s) || v.offset > s.size)
			abort();
		if (v.sparse)
			walk_segments(x, i, &v, &s);
		else if (v.size > s.size - v.offset)
			abort();
	}
}

static void walk(const struct dsidx *x, const uint8_t *data, size_t size)
{
	struct dsidx_ref ref;
	uint32_t idx;

	walk_shards(x);
	walk_dirs(x);
	walk_members(x);
	/* a few names that are probably absent, taken from the input */
	for (size_t off = 0; off + 8 <= size && off < 64; off += 8) {
		dsidx_lookup_path(x, (const char *)data + off, 8, &ref);
		dsidx_lookup(x, 0, (const char *)data + off, 8, &ref);
		dsidx_find_shard(x, (const char *)data + off, 8, &idx);
	}
	if (dsidx_lookup_path(x, "", 0, &ref) || ref.kind != DSIDX_KIND_DIR ||
	    ref.idx != 0)
		abort();
}

static void try_open(const uint8_t *data, size_t size)
{
	struct dsidx *x = NULL;
	char err[256] = "";

	if (dsidx_open(data, size, &x, err, sizeof(err))) {
		if (!err[0])
			abort(); /* every rejection says why */
		return;
	}
	walk(x, data, size);
	dsidx_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	try_open(data, size);
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (dsidx_reseal(copy, size) == 0)
		try_open(copy, size);
	free(copy);
	return 0;
}
