// SPDX-License-Identifier: MIT
/*
 * dsidx: the dataset index. CRC-32C vectors; the man page's worked example
 * (its hex dump must be what the builder writes); round trips of random
 * trees against a small model of the builder's rules (last add wins,
 * directories win over members, hard links copy their target); builder
 * argument checks and limits; and the reader's rejections: every
 * truncation, every single-bit flip, unknown versions and flags, and one
 * patched field at a time (re-sealed so that only the field is wrong).
 *
 * Field offsets below are taken from shardfs-index(5), not from
 * src/dsidx.c, so that the test checks the implementation against the
 * documented layout.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "dsidx.h"

#define MAN_PAGE "../../man/shardfs-index.5"

/* shardfs-index(5): header fields, then record fields. */
enum {
	HF_MAJOR = 8,
	HF_MINOR = 10,
	HF_HLEN = 12,
	HF_TOTAL = 24,
	HF_FLAGS = 32,
	HF_SHARDS = 48,
	HF_DIRS = 64,
	HF_MEMBERS = 80,
	HF_STR_OFF = 96,
	HF_STR_LEN = 104,
};
enum { SF_KEY_OFF = 0, SF_KEY_LEN = 4, SF_ETAG_LEN = 6, SF_SIZE = 8 };
enum {
	DF_PARENT = 0,
	DF_NAME_OFF = 4,
	DF_NAME_LEN = 8,
	DF_FLAGS = 12,
	DF_MODE = 16,
	DF_NSEC = 20,
	DF_MTIME = 24,
	DF_FIRST_DIR = 32,
	DF_NDIRS = 36,
	DF_FIRST_MEM = 40,
	DF_NMEMS = 44,
};
enum {
	MF_DIR = 0,
	MF_SHARD = 4,
	MF_OFFSET = 8,
	MF_SIZE = 16,
	MF_MTIME = 24,
	MF_NSEC = 32,
	MF_MODE = 36,
	MF_NAME_OFF = 40,
	MF_NAME_LEN = 44,
	MF_LINK_LEN = 46,
};

static uint64_t rd(const uint8_t *p, int width)
{
	uint64_t v = 0;

	for (int i = width - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void wr(uint8_t *p, int width, uint64_t v)
{
	for (int i = 0; i < width; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Deterministic pseudo-random numbers (xorshift64*). */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32) % n;
}

/* Opens an exact-size copy (so ASan sees any over-read) and closes it. */
static int open_copy(const void *p, size_t len, char *err, size_t errlen)
{
	void *c = malloc(len ? len : 1);
	struct dsidx *x = NULL;
	int rc;

	if (len)
		memcpy(c, p, len);
	rc = dsidx_open(c, len, &x, err, errlen);
	dsidx_free(x);
	free(c);
	return rc;
}

/* ---- CRC-32C --------------------------------------------------------- */

static void test_crc32c(void)
{
	uint8_t b[32];

	CHECK(dsidx_crc32c(0, "123456789", 9) == 0xE3069283u);
	CHECK(dsidx_crc32c(dsidx_crc32c(0, "1234", 4), "56789", 5) ==
	      0xE3069283u);
	CHECK(dsidx_crc32c(0, "", 0) == 0);
	/* RFC 3720 (iSCSI), appendix B.4. */
	memset(b, 0, sizeof(b));
	CHECK(dsidx_crc32c(0, b, 32) == 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	CHECK(dsidx_crc32c(0, b, 32) == 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	CHECK(dsidx_crc32c(0, b, 32) == 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	CHECK(dsidx_crc32c(0, b, 32) == 0x113FDB5Cu);
}

/* ---- the man page's worked example ----------------------------------- */

#define EX_TIME	   1767225600 /* 2026-01-01T00:00:00Z */
#define EX_CREATED 1767312000 /* 2026-01-02T00:00:00Z */

/* 1 shard, 1 directory (the root, explicit), 2 members. */
static int build_example(struct buf *out)
{
	struct dsidx_builder *b;
	uint32_t s;
	int rc;

	rc = dsidx_builder_new(NULL, &b);
	if (rc)
		return rc;
	rc = dsidx_builder_add_shard(b, "shard-000000.tar",
				     "\"9b2cf535f27731c974343645a3985328\"",
				     10240, &s);
	if (!rc)
		rc = dsidx_builder_add_dir(b, "", 0755, EX_TIME, 0);
	if (!rc)
		rc = dsidx_builder_add_member(b, "0001.jpg", s, 512, 4781,
					      S_IFREG | 0644, EX_TIME, 0, NULL);
	if (!rc)
		rc = dsidx_builder_add_member(b, "latest.jpg", 0, 0, 0,
					      S_IFLNK | 0777, EX_TIME, 0,
					      "0001.jpg");
	if (!rc)
		rc = dsidx_builder_finish(b, EX_CREATED, out);
	dsidx_builder_free(b);
	return rc;
}

/* The man page's format: "OOOO xx xx ... xx |ascii|", 16 per line. */
static void hexdump(const uint8_t *p, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i += 16) {
		fprintf(f, "%04zx ", i);
		for (size_t j = i; j < i + 16; j++) {
			if (j < n)
				fprintf(f, "%02x ", p[j]);
			else
				fputs("   ", f);
		}
		fputs("|", f);
		for (size_t j = i; j < i + 16 && j < n; j++)
			fputc(p[j] >= 0x20 && p[j] < 0x7f && p[j] != '\\' &&
				      p[j] != '|'
				  ? p[j]
				  : '.',
			      f);
		fputs("|\n", f);
	}
}

/* Bytes of the hex block between the example markers of the man page. */
static int man_example(uint8_t *out, size_t cap, size_t *n)
{
	FILE *f = fopen(MAN_PAGE, "r");
	char line[512];
	bool in = false;

	*n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		unsigned long off;

		if (strstr(line, "BEGIN dsidx-example"))
			in = true;
		else if (strstr(line, "END dsidx-example"))
			break;
		if (!in || line[0] == '.')
			continue;
		off = strtoul(p, &end, 16);
		if (end == p || off != *n)
			break;
		for (p = end; *p && *p != '|'; p++) {
			if (*p == ' ')
				continue;
			if (*n >= cap)
				break;
			out[(*n)++] = (uint8_t)strtoul(p, &end, 16);
			p = end - 1;
		}
	}
	fclose(f);
	return in ? 0 : -ENOENT;
}

static void test_man_example(void)
{
	struct buf b;
	uint8_t man[4096];
	size_t n;
	struct dsidx *x;
	struct dsidx_ref ref;
	struct dsidx_member_view m;
	int rc;

	buf_init(&b, 1 << 20);
	CHECK_INT(build_example(&b), 0);
	CHECK_INT(man_example(man, sizeof(man), &n), 0);
	rc = n == b.len && memcmp(man, b.data, n) == 0;
	CHECK(rc);
	if (!rc) {
		fprintf(stderr,
			"man page example (%zu bytes) differs from "
			"the builder's %zu bytes; it should be:\n",
			n, b.len);
		hexdump((const uint8_t *)b.data, b.len, stderr);
	}
	CHECK_INT(dsidx_open(b.data, b.len, &x, NULL, 0), 0);
	CHECK_INT(dsidx_info(x)->nmembers, 2);
	CHECK_INT(dsidx_lookup_path(x, "latest.jpg", 10, &ref), 0);
	CHECK_INT(dsidx_member(x, ref.idx, &m), 0);
	CHECK(m.link_len == 8 && memcmp(m.link, "0001.jpg", 8) == 0);
	dsidx_free(x);
	buf_release(&b);
}

/* ---- a model of the builder's rules ----------------------------------- */

struct ment {
	char *path;
	bool dir, explicit_dir;
	uint32_t shard; /* builder handle */
	uint64_t offset, size;
	uint32_t mode, nsec;
	int64_t mtime;
	char *link;
	bool sparse;
	uint32_t nsegs;
	struct dsidx_segment segs[4];
};

struct model {
	struct ment *v; /* the tree as it is now */
	size_t n, cap;
	char **adds; /* path of every member add, dropped ones included */
	size_t nadds;
};

static struct ment *model_find(struct model *m, const char *path, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->v[i].path) == len &&
		    memcmp(m->v[i].path, path, len) == 0)
			return &m->v[i];
	return NULL;
}

static void model_del(struct model *m, struct ment *e)
{
	free(e->path);
	free(e->link);
	*e = m->v[--m->n];
}

static struct ment *model_new(struct model *m, const char *path, size_t len)
{
	struct ment *e;

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
	}
	e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	e->path = strndup(path, len);
	return e;
}

/* Makes every prefix of PATH (LEN bytes: all of it when FULL) a dir. */
static struct ment *model_dirs(struct model *m, const char *path, size_t len)
{
	struct ment *e = NULL;

	for (size_t i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		e = model_find(m, path, i);
		if (e && !e->dir) {
			model_del(m, e);
			e = NULL;
		}
		if (!e) {
			e = model_new(m, path, i);
			e->dir = true;
		}
	}
	return e;
}

static void model_member(struct model *m, const struct ment *t)
{
	const char *slash = strrchr(t->path, '/');
	struct ment *e;

	m->adds = realloc(m->adds, (m->nadds + 1) * sizeof(*m->adds));
	m->adds[m->nadds++] = strdup(t->path);
	if (slash)
		model_dirs(m, t->path, (size_t)(slash - t->path));
	e = model_find(m, t->path, strlen(t->path));
	if (e && e->dir)
		return;
	if (e)
		model_del(m, e);
	e = model_new(m, t->path, strlen(t->path));
	free(e->path);
	*e = *t;
	e->path = strdup(t->path);
	e->link = t->link ? strdup(t->link) : NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The builder's counts: each add of a path that is not in the file is
 * counted once, as a directory conflict when the path ends up a
 * directory, else as shadowed by the path's last add.
 */
static void model_counts(struct model *m, uint64_t *shadowed,
			 uint64_t *conflicts)
{
	size_t i = 0, j;

	*shadowed = *conflicts = 0;
	qsort(m->adds, m->nadds, sizeof(*m->adds), cmp_str);
	for (; i < m->nadds; i = j) {
		const struct ment *e;

		for (j = i + 1; j < m->nadds && !strcmp(m->adds[i], m->adds[j]);
		     j++)
			;
		e = model_find(m, m->adds[i], strlen(m->adds[i]));
		if (e && e->dir)
			*conflicts += j - i;
		else
			*shadowed += j - i - 1;
	}
}

static void model_free(struct model *m)
{
	while (m->n)
		model_del(m, &m->v[m->n - 1]);
	free(m->v);
	for (size_t i = 0; i < m->nadds; i++)
		free(m->adds[i]);
	free(m->adds);
}

/* ---- random trees ----------------------------------------------------- */

static const char *const names[] = {
    "a",
    "b",
    "A",
    "z",
    "é",
    "日本語",
    "\xf0\x9f\x98\x80",
    "a b",
    "x\\y",
    "-",
    "...",
    ".hidden",
    "a.",
    "\001ctl",
    "\xff\xfe",
    "tab\there",
    "n01440764",
    "n01440764_10026.JPEG",
    "0001.jpg",
    "0001.cls",
    "~",
    "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w",
};

static void random_path(char *p, size_t cap)
{
	int depth = 1 + (int)rnd(rnd(8) == 0 ? 12 : 4);

	p[0] = '\0';
	for (int i = 0; i < depth; i++) {
		if (i)
			strncat(p, "/", cap - strlen(p) - 1);
		strncat(p, names[rnd(sizeof(names) / sizeof(names[0]))],
			cap - strlen(p) - 1);
	}
}

struct tree {
	struct dsidx_builder *b;
	struct model m;
	char **keys; /* by builder handle */
	uint64_t *sizes;
	uint32_t nshards;
};

static void tree_shards(struct tree *t, uint32_t n)
{
	char key[128], etag[64];
	uint32_t h;

	t->keys = calloc(n, sizeof(*t->keys));
	t->sizes = calloc(n, sizeof(*t->sizes));
	for (uint32_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s/shard-%06u%s.tar",
			 rnd(2) ? "sub" : "données", (unsigned)(n - i),
			 rnd(4) ? "" : "-é");
		snprintf(etag, sizeof(etag), "\"%08x%08x%s\"", rnd(1u << 31),
			 rnd(1u << 31), rnd(3) ? "" : "-12");
		t->sizes[i] = 1 + rnd(1u << 30);
		CHECK_INT(dsidx_builder_add_shard(
			      t->b, key, rnd(5) ? etag : NULL, t->sizes[i], &h),
			  0);
		CHECK_INT(h, i);
		t->keys[i] = strdup(key);
	}
	t->nshards = n;
}

/* A sparse file: up to 4 segments in a file of up to 1 TiB. */
static void tree_add_sparse(struct tree *t, struct ment *e)
{
	uint64_t at = 0, ss;

	e->sparse = true;
	e->mode = S_IFREG | 0640;
	e->shard = rnd(t->nshards);
	ss = t->sizes[e->shard];
	e->offset = rnd((uint32_t)ss + 1);
	e->nsegs = rnd(5);
	for (uint32_t k = 0; k < e->nsegs; k++) {
		struct dsidx_segment *g = &e->segs[k];

		g->offset = at + rnd(1u << 30) * (uint64_t)rnd(64);
		g->length = 1 + rnd((uint32_t)(ss < 4096 ? ss : 4096));
		g->archive_offset = rnd((uint32_t)(ss - g->length) + 1);
		at = g->offset + g->length;
	}
	e->size = at + rnd(2) * rnd(1u << 20);
	CHECK_INT(dsidx_builder_add_sparse(t->b, e->path, e->shard, e->offset,
					   e->size, e->segs, e->nsegs, e->mode,
					   e->mtime, e->nsec),
		  0);
	model_member(&t->m, e);
}

static void tree_add_member(struct tree *t, const char *path)
{
	struct ment e = {.path = (char *)path};

	e.mtime = (int64_t)rnd(2000000000) - 100000;
	e.nsec = rnd(1000000000);
	if (rnd(8) == 0) {
		e.mode = S_IFLNK | 0777;
		e.shard = DSIDX_NONE;
		e.link = (char *)(rnd(2) ? "../target" : "日本語/x y");
	} else if (rnd(10) == 0) {
		tree_add_sparse(t, &e);
		return;
	} else {
		e.mode = S_IFREG | (rnd(2) ? 0644 : 04755);
		e.shard = rnd(t->nshards);
		e.offset = rnd((uint32_t)t->sizes[e.shard]);
		e.size = rnd((uint32_t)(t->sizes[e.shard] - e.offset) + 1);
	}
	CHECK_INT(dsidx_builder_add_member(t->b, path, e.shard, e.offset,
					   e.size, e.mode, e.mtime, e.nsec,
					   e.link),
		  0);
	model_member(&t->m, &e);
}

static void tree_add_hardlink(struct tree *t, const char *path)
{
	struct ment *target = NULL, copy;

	for (int tries = 0; tries < 4 && !target; tries++) {
		target = t->m.n ? &t->m.v[rnd((uint32_t)t->m.n)] : NULL;
		if (target && target->dir)
			target = NULL;
	}
	if (!target) {
		CHECK_INT(dsidx_builder_add_hardlink(t->b, path, "no/such"),
			  -ENOENT);
		return;
	}
	copy = *target;
	copy.path = (char *)path;
	copy.link = target->link ? strdup(target->link) : NULL;
	CHECK_INT(dsidx_builder_add_hardlink(t->b, path, target->path), 0);
	model_member(&t->m, &copy);
	free(copy.link);
}

static void tree_add(struct tree *t)
{
	char path[1024];
	uint32_t what = rnd(10);

	random_path(path, sizeof(path));
	if (what == 0) {
		struct ment *e;

		CHECK_INT(dsidx_builder_add_dir(t->b, path, 0750, 12345, 6), 0);
		e = model_dirs(&t->m, path, strlen(path));
		e->explicit_dir = true;
	} else if (what == 1) {
		tree_add_hardlink(t, path);
	} else {
		tree_add_member(t, path);
	}
}

/* Full path of directory D into P (without a trailing '/'). */
static void dir_path(struct dsidx *x, uint32_t d, char *p, size_t cap)
{
	struct dsidx_dir_view v;
	uint32_t chain[1024];
	size_t n = 0, len = 0;

	for (; d && n < 1024; d = v.parent) {
		dsidx_dir(x, d, &v);
		chain[n++] = d;
	}
	while (n--) {
		dsidx_dir(x, chain[n], &v);
		if (len + v.name_len + 2 > cap)
			break;
		if (len)
			p[len++] = '/';
		memcpy(p + len, v.name, v.name_len);
		len += v.name_len;
	}
	p[len] = '\0';
}

static void verify_member(struct tree *t, struct dsidx *x, const struct ment *e,
			  uint32_t idx)
{
	struct dsidx_member_view v;
	struct dsidx_shard_view s;

	CHECK_INT(dsidx_member(x, idx, &v), 0);
	CHECK_INT(v.mode, e->mode);
	CHECK_INT(v.mtime, e->mtime);
	CHECK_INT(v.mtime_nsec, e->nsec);
	if (e->link) {
		CHECK_INT(v.shard, DSIDX_NONE);
		CHECK(v.link_len == strlen(e->link) &&
		      memcmp(v.link, e->link, v.link_len) == 0);
		return;
	}
	CHECK_INT(v.link_len, 0);
	CHECK_INT(v.offset, e->offset);
	CHECK_INT(v.size, e->size);
	CHECK_INT(v.sparse, e->sparse);
	if (e->sparse) {
		uint32_t first, n;
		struct dsidx_segment g;

		CHECK_INT(dsidx_member_segments(x, idx, &first, &n), 0);
		CHECK_INT(n, e->nsegs);
		for (uint32_t k = 0; k < n && k < e->nsegs; k++) {
			CHECK_INT(dsidx_segment(x, first + k, &g), 0);
			CHECK(memcmp(&g, &e->segs[k], sizeof(g)) == 0);
		}
	}
	CHECK_INT(dsidx_shard(x, v.shard, &s), 0);
	CHECK(s.key_len == strlen(t->keys[e->shard]) &&
	      memcmp(s.key, t->keys[e->shard], s.key_len) == 0);
}

static void verify_tree(struct tree *t, struct dsidx *x, int64_t created)
{
	struct dsidx_build_stats st;
	struct dsidx_ref ref;
	struct dsidx_dir_view dv;
	uint64_t nm = 0, bad = 0, shadowed, conflicts;

	dsidx_builder_stats(t->b, &st);
	model_counts(&t->m, &shadowed, &conflicts);
	CHECK_INT(st.shadowed, shadowed);
	CHECK_INT(st.dir_conflicts, conflicts);
	CHECK_INT(dsidx_builder_shadowed(t->b), shadowed);
	for (size_t i = 0; i < t->m.n; i++) {
		const struct ment *e = &t->m.v[i];

		nm += !e->dir;
		if (dsidx_lookup_path(x, e->path, strlen(e->path), &ref) ||
		    ref.kind != (e->dir ? DSIDX_KIND_DIR : DSIDX_KIND_MEMBER)) {
			bad++;
			continue;
		}
		if (!e->dir) {
			verify_member(t, x, e, ref.idx);
			continue;
		}
		dsidx_dir(x, ref.idx, &dv);
		CHECK_INT(dv.mode, e->explicit_dir ? S_IFDIR | 0750
						   : DSIDX_IMPLICIT_MODE);
		CHECK_INT(dv.mtime, e->explicit_dir ? 12345 : created);
		CHECK_INT(dv.flags, e->explicit_dir ? DSIDX_DIR_EXPLICIT : 0);
	}
	CHECK_INT(bad, 0);
	CHECK_INT(dsidx_info(x)->nmembers, nm);
	CHECK_INT(dsidx_info(x)->ndirs, t->m.n - nm + 1);
	CHECK_INT(dsidx_info(x)->nshards, t->nshards);
}

/* Every member's rebuilt path resolves to itself; children iterate. */
static void verify_walk(struct dsidx *x)
{
	const struct dsidx_info *in = dsidx_info(x);
	char path[8192];
	struct dsidx_member_view v;
	struct dsidx_dir_view d;
	struct dsidx_ref ref;
	uint64_t bad = 0, seen = 0;

	for (uint32_t i = 0; i < in->nmembers; i++) {
		size_t n;

		dsidx_member(x, i, &v);
		dir_path(x, v.dir, path, sizeof(path));
		n = strlen(path);
		snprintf(path + n, sizeof(path) - n, "%s%.*s", n ? "/" : "",
			 (int)v.name_len, v.name);
		if (dsidx_lookup_path(x, path, strlen(path), &ref) ||
		    ref.kind != DSIDX_KIND_MEMBER || ref.idx != i)
			bad++;
	}
	for (uint32_t i = 0; i < in->ndirs; i++) {
		dsidx_dir(x, i, &d);
		for (uint64_t pos = 0; dsidx_child(x, i, pos, &ref) == 0; pos++)
			seen++;
		if (i)
			bad += dsidx_lookup_dir(x, d.parent, d.name, d.name_len,
						&ref.idx) != 0 ||
			       ref.idx != i;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(seen, (uint64_t)in->nmembers + in->ndirs - 1);
}

static void tree_free(struct tree *t)
{
	for (uint32_t i = 0; i < t->nshards; i++)
		free(t->keys[i]);
	free(t->keys);
	free(t->sizes);
	model_free(&t->m);
	dsidx_builder_free(t->b);
}

static void test_random_trees(void)
{
	for (int round = 0; round < 12; round++) {
		struct tree t = {0};
		struct buf out;
		struct dsidx *x = NULL;
		char err[256] = "";
		int64_t created = 1700000000 + round;
		int nops = 50 + (int)rnd(1500);

		buf_init(&out, 64 << 20);
		CHECK_INT(dsidx_builder_new(NULL, &t.b), 0);
		tree_shards(&t, 1 + rnd(round % 3 == 0 ? 3000 : 20));
		for (int i = 0; i < nops; i++)
			tree_add(&t);
		CHECK_INT(dsidx_builder_finish(t.b, created, &out), 0);
		CHECK_INT(dsidx_open(out.data, out.len, &x, err, sizeof(err)),
			  0);
		if (x) {
			verify_tree(&t, x, created);
			verify_walk(x);
			for (uint32_t i = 0; i < t.nshards; i++) {
				uint32_t idx;

				CHECK_INT(dsidx_find_shard(x, t.keys[i],
							   strlen(t.keys[i]),
							   &idx),
					  0);
			}
		} else {
			fprintf(stderr, "round %d: %s\n", round, err);
		}
		dsidx_free(x);
		buf_release(&out);
		tree_free(&t);
	}
}

/* The same final entries added in another order give the same bytes. */
static void test_canonical(void)
{
	static const char *const paths[] = {
	    "z/b/c", "a", "z/a", "m/n/o/p", "é/x", "z/b/a", "b", "m/a",
	};
	const size_t n = sizeof(paths) / sizeof(paths[0]);
	struct buf out[2];
	uint32_t h[2];

	for (int k = 0; k < 2; k++) {
		struct dsidx_builder *b;

		buf_init(&out[k], 1 << 20);
		dsidx_builder_new(NULL, &b);
		dsidx_builder_add_shard(b, k ? "s1" : "s0", k ? NULL : "\"e\"",
					100, &h[0]);
		dsidx_builder_add_shard(b, k ? "s0" : "s1", k ? "\"e\"" : NULL,
					100, &h[1]);
		if (k)
			dsidx_builder_add_dir(b, "m/n", 0700, 5, 0);
		for (size_t i = 0; i < n; i++) {
			size_t j = k ? n - 1 - i : i;

			dsidx_builder_add_member(b, paths[j], h[(j + k) % 2], j,
						 1, S_IFREG | 0644, 7, 0, NULL);
		}
		if (!k)
			dsidx_builder_add_dir(b, "m/n", 0700, 5, 0);
		CHECK_INT(dsidx_builder_finish(b, 99, &out[k]), 0);
		dsidx_builder_free(b);
	}
	CHECK(out[0].len == out[1].len &&
	      memcmp(out[0].data, out[1].data, out[0].len) == 0);
	buf_release(&out[0]);
	buf_release(&out[1]);
}

/* ---- builder rules ---------------------------------------------------- */

static struct dsidx *finish_open(struct dsidx_builder *b, struct buf *out)
{
	struct dsidx *x = NULL;
	char err[256] = "";

	buf_init(out, 1 << 20);
	CHECK_INT(dsidx_builder_finish(b, 1000, out), 0);
	CHECK_INT(dsidx_open(out->data, out->len, &x, err, sizeof(err)), 0);
	if (!x)
		fprintf(stderr, "open: %s\n", err);
	return x;
}

static struct dsidx_member_view member_at(struct dsidx *x, const char *path)
{
	struct dsidx_member_view v = {0};
	struct dsidx_ref r;

	if (dsidx_lookup_path(x, path, strlen(path), &r) == 0 &&
	    r.kind == DSIDX_KIND_MEMBER)
		dsidx_member(x, r.idx, &v);
	return v;
}

static void test_shadow_conflicts_links(void)
{
	struct dsidx_builder *b;
	struct dsidx_build_stats st;
	struct dsidx_ref r;
	struct buf out;
	struct dsidx *x;
	uint32_t s;

	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s.tar", NULL, 1000, &s);
	CHECK_INT(dsidx_builder_add_member(b, "p", s, 1, 1, S_IFREG | 0644, 0,
					   0, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_member(b, "p", s, 2, 2, S_IFREG | 0644, 0,
					   0, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_hardlink(b, "hl", "p"), 0);
	CHECK_INT(dsidx_builder_add_member(b, "p", s, 3, 3, S_IFREG | 0600, 0,
					   0, NULL),
		  0);
	CHECK_INT(dsidx_builder_shadowed(b), 0); /* counted by finish() */
	CHECK_INT(dsidx_builder_add_member(b, "ln", 0, 0, 0, S_IFLNK | 0777, 0,
					   0, "p"),
		  0);
	CHECK_INT(dsidx_builder_add_hardlink(b, "d/hl2", "ln"), 0);
	CHECK_INT(dsidx_builder_add_hardlink(b, "x", "missing"), -ENOENT);
	CHECK_INT(dsidx_builder_add_hardlink(b, "x", "d"), -ENOENT);
	CHECK_INT(dsidx_builder_add_hardlink(b, "x", "d/hl2/deeper"), -ENOENT);
	/* file "a" then "a/b": the directory wins */
	dsidx_builder_add_member(b, "a", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_member(b, "a/b", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	/* "c/d" then file "c": the new file is dropped */
	dsidx_builder_add_member(b, "c/d", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_member(b, "c", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	/* explicit directories over members, at the path and above it */
	dsidx_builder_add_member(b, "e", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	CHECK_INT(dsidx_builder_add_dir(b, "e", S_IFDIR | 0700, 9, 1), 0);
	dsidx_builder_add_member(b, "f", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	CHECK_INT(dsidx_builder_add_dir(b, "f/g", 0700, 9, 1), 0);
	CHECK_INT(dsidx_builder_add_hardlink(b, "f", "p"), 0); /* dropped */
	CHECK_INT(dsidx_builder_add_hardlink(b, "x", "f"), -ENOENT);
	/* twice, then a directory: both adds count as conflicts */
	dsidx_builder_add_member(b, "t", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_member(b, "t", s, 0, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_dir(b, "t", 0755, 0, 0);
	x = finish_open(b, &out);
	dsidx_builder_stats(b, &st);
	CHECK_INT(st.shadowed, 2);
	CHECK_INT(st.dir_conflicts, 7);
	CHECK_INT(dsidx_builder_shadowed(b), 2);
	CHECK_INT(member_at(x, "p").offset, 3);
	CHECK_INT(member_at(x, "hl").offset, 2); /* the target as it was */
	CHECK_INT(member_at(x, "hl").size, 2);
	CHECK_INT(member_at(x, "d/hl2").mode, S_IFLNK | 0777);
	CHECK_INT(member_at(x, "d/hl2").link_len, 1);
	CHECK_INT(dsidx_lookup_path(x, "a", 1, &r), 0);
	CHECK_INT(r.kind, DSIDX_KIND_DIR);
	CHECK_INT(dsidx_lookup_path(x, "a/b", 3, &r), 0);
	CHECK_INT(dsidx_lookup_path(x, "c", 1, &r), 0);
	CHECK_INT(r.kind, DSIDX_KIND_DIR);
	CHECK_INT(dsidx_lookup_path(x, "f/g", 3, &r), 0);
	CHECK_INT(dsidx_lookup_path(x, "/a//b/", 6, &r), 0);
	CHECK_INT(dsidx_lookup_path(x, "", 0, &r), 0);
	CHECK(r.kind == DSIDX_KIND_DIR && r.idx == 0);
	CHECK_INT(dsidx_lookup_path(x, "p/q", 3, &r), -ENOENT);
	CHECK_INT(dsidx_lookup_path(x, "zz", 2, &r), -ENOENT);
	CHECK_INT(dsidx_lookup_member(x, 99, "p", 1, &r.idx), -ENOENT);
	CHECK_INT(dsidx_child(x, 99, 0, &r), -ENOENT);
	dsidx_free(x);
	buf_release(&out);
	dsidx_builder_free(b);
}

static void test_builder_rejects(void)
{
	static const char *const bad_paths[] = {
	    "", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "./a", "a/..",
	};
	static const char *const bad_keys[] = {
	    "",	 "/a",	     "a/",	 "a//b",	 "../a",  "a/./b",
	    ".", "\xff.tar", "\xc0\xaf", "\xed\xa0\x80", "a\x80",
	};
	struct dsidx_builder_conf conf = {
	    .max_members = 3, .max_dirs = 2, .max_shards = 2};
	struct dsidx_builder *b;
	struct buf out, small;
	char longname[DSIDX_MAX_NAME + 2], longlink[DSIDX_MAX_LINK + 2];
	uint32_t s;

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memset(longlink, 'l', sizeof(longlink) - 1);
	longlink[sizeof(longlink) - 1] = '\0';
	dsidx_builder_new(&conf, &b);
	for (size_t i = 0; i < sizeof(bad_keys) / sizeof(*bad_keys); i++)
		CHECK_INT(dsidx_builder_add_shard(b, bad_keys[i], NULL, 1, &s),
			  -EINVAL);
	CHECK_INT(dsidx_builder_add_shard(b, "k", "\"a b\"", 1, &s), -EINVAL);
	CHECK_INT(dsidx_builder_add_shard(b, "k", "\"a\nb\"", 1, &s), -EINVAL);
	CHECK_INT(dsidx_builder_add_shard(b, longname, NULL, 1, &s),
		  -ENAMETOOLONG);
	CHECK_INT(dsidx_builder_add_shard(b, "日本/s.tar", "\"x-2\"", 100, &s),
		  0);
	for (size_t i = 0; i < sizeof(bad_paths) / sizeof(*bad_paths); i++) {
		CHECK_INT(dsidx_builder_add_member(b, bad_paths[i], s, 0, 1,
						   S_IFREG, 0, 0, NULL),
			  -EINVAL);
		if (bad_paths[i][0])
			CHECK_INT(
			    dsidx_builder_add_dir(b, bad_paths[i], 0755, 0, 0),
			    -EINVAL);
	}
	CHECK_INT(
	    dsidx_builder_add_member(b, longname, s, 0, 1, S_IFREG, 0, 0, NULL),
	    -ENAMETOOLONG);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 1, S_IFDIR | 0755, 0,
					   0, NULL),
		  -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 1, 0644, 0, 0, NULL),
		  -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 1, S_IFREG | 010000, 0,
					   0, NULL),
		  -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 1, S_IFREG, 0,
					   1000000000, NULL),
		  -EINVAL);
	CHECK_INT(
	    dsidx_builder_add_member(b, "m", 7, 0, 1, S_IFREG, 0, 0, NULL),
	    -EINVAL);
	CHECK_INT(
	    dsidx_builder_add_member(b, "m", s, 100, 1, S_IFREG, 0, 0, NULL),
	    -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, UINT64_MAX, 2, S_IFREG, 0,
					   0, NULL),
		  -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 1, S_IFREG, 0, 0, "t"),
		  -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 0, S_IFLNK | 0777, 0,
					   0, NULL),
		  -EINVAL);
	CHECK_INT(
	    dsidx_builder_add_member(b, "m", s, 0, 0, S_IFLNK | 0777, 0, 0, ""),
	    -EINVAL);
	CHECK_INT(dsidx_builder_add_member(b, "m", s, 0, 0, S_IFLNK | 0777, 0,
					   0, longlink),
		  -ENAMETOOLONG);
	CHECK_INT(dsidx_builder_add_dir(b, "d", S_IFREG | 0755, 0, 0), -EINVAL);
	CHECK_INT(dsidx_builder_add_dir(b, "d", 0755, 0, 1000000000), -EINVAL);
	/* limits: 2 shards, 2 directories (root included), 3 member adds */
	CHECK_INT(dsidx_builder_add_shard(b, "s2", NULL, 100, &s), 0);
	CHECK_INT(dsidx_builder_add_shard(b, "s3", NULL, 100, &s), -E2BIG);
	CHECK_INT(
	    dsidx_builder_add_member(b, "x/y/z", s, 0, 1, S_IFREG, 0, 0, NULL),
	    -E2BIG);
	CHECK_INT(
	    dsidx_builder_add_member(b, "x/y", s, 0, 1, S_IFREG, 0, 0, NULL),
	    0);
	CHECK_INT(
	    dsidx_builder_add_member(b, "x/y", s, 0, 1, S_IFREG, 0, 0, NULL),
	    0);
	CHECK_INT(
	    dsidx_builder_add_member(b, "x/z", s, 99, 1, S_IFREG, 0, 0, NULL),
	    0);
	CHECK_INT(
	    dsidx_builder_add_member(b, "x/w", s, 0, 1, S_IFREG, 0, 0, NULL),
	    -E2BIG);
	/* output cap too small: -E2BIG, OUT unchanged */
	buf_init(&small, 64);
	buf_append(&small, "keep", 4);
	CHECK_INT(dsidx_builder_finish(b, 0, &small), -E2BIG);
	CHECK_STR(buf_str(&small), "keep");
	buf_release(&small);
	buf_init(&out, 1 << 20);
	CHECK_INT(dsidx_builder_finish(b, 0, &out), -EINVAL); /* once only */
	CHECK_INT(
	    dsidx_builder_add_member(b, "q", s, 0, 1, S_IFREG, 0, 0, NULL),
	    -EINVAL);
	dsidx_builder_free(b);
	/* duplicate shard keys fail at finish */
	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "dup", NULL, 1, &s);
	dsidx_builder_add_shard(b, "dup", "\"x\"", 2, &s);
	CHECK_INT(dsidx_builder_finish(b, 0, &out), -EEXIST);
	CHECK_INT(out.len, 0);
	dsidx_builder_free(b);
	dsidx_builder_free(NULL);
	buf_release(&out);
}

/* Deep paths and long names survive the round trip. */
static void test_deep(void)
{
	struct dsidx_builder *b;
	struct dsidx_ref r;
	struct buf out;
	struct dsidx *x;
	char path[64 * 1024] = "", name[DSIDX_MAX_NAME + 1];
	uint32_t s;

	memset(name, 'q', DSIDX_MAX_NAME);
	name[DSIDX_MAX_NAME] = '\0';
	for (int i = 0; i < 500; i++)
		strcat(path, i ? "/d" : "d");
	strcat(path, "/");
	strcat(path, name);
	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s", NULL, UINT64_MAX, &s);
	CHECK_INT(dsidx_builder_add_member(b, path, s, UINT64_MAX - 5, 5,
					   S_IFREG | 0644, INT64_MIN, 999999999,
					   NULL),
		  0);
	x = finish_open(b, &out);
	CHECK_INT(dsidx_info(x)->ndirs, 501);
	CHECK_INT(dsidx_lookup_path(x, path, strlen(path), &r), 0);
	CHECK_INT(member_at(x, path).offset, UINT64_MAX - 5);
	CHECK_INT(member_at(x, path).mtime, INT64_MIN);
	CHECK_INT(member_at(x, path).name_len, DSIDX_MAX_NAME);
	dsidx_free(x);
	buf_release(&out);
	dsidx_builder_free(b);
}

/* ---- reader rejections ------------------------------------------------ */

/*
 * A small index: shards a.tar, b.tar; dirs 0 "", 1 "c" (empty), 2 "d",
 * 3 "d/e"; members 0 "top", 1 "d/x", 2 "d/y", 3 "d/e/z" (symlink).
 */
static void build_small(struct buf *out)
{
	struct dsidx_builder *b;
	uint32_t a, bb;

	buf_init(out, 1 << 20);
	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "b.tar", "\"bb\"", 1000, &bb);
	dsidx_builder_add_shard(b, "a.tar", "\"aa\"", 1000, &a);
	dsidx_builder_add_member(b, "d/y", bb, 10, 20, S_IFREG | 0644, 1, 0,
				 NULL);
	dsidx_builder_add_member(b, "d/x", a, 0, 10, S_IFREG | 0644, 1, 0,
				 NULL);
	dsidx_builder_add_member(b, "d/e/z", 0, 0, 0, S_IFLNK | 0777, 1, 0,
				 "../x");
	dsidx_builder_add_member(b, "top", a, 0, 1000, S_IFREG | 0644, 1, 0,
				 NULL);
	dsidx_builder_add_dir(b, "c", 0755, 2, 0);
	CHECK_INT(dsidx_builder_finish(b, 3, out), 0);
	dsidx_builder_free(b);
}

static size_t sec(const struct buf *b, int hf)
{
	return (size_t)rd((const uint8_t *)b->data + hf, 8);
}

/* Where a patch goes: a header field, a record field or a string byte. */
enum where { HDR, SHARD, DIR, MEM, STR };
/* Strings of the small index, for STR patches and V_ values. */
enum { KEY0, KEY1, DNAME1, DNAME2, XNAME, YNAME, NSTRINGS };
/* Values only known once the index is built. */
#define V_STRLEN   (UINT64_MAX - 20)	   /* str_len */
#define V_LEN	   (UINT64_MAX - 21)	   /* total length */
#define V_SHARDOFF (UINT64_MAX - 22)	   /* shard_off */
#define V_STR(i)   (UINT64_MAX - 30 + (i)) /* offset of string I */

struct patch {
	enum where where;
	uint32_t idx; /* record index, or a string for STR */
	uint32_t field;
	int width; /* 0: no patch */
	uint64_t value;
};

struct reject {
	struct patch p[2];
	int rc;
	const char *msg;
};

#define R1(w, i, f, n, v, rc, msg)                                             \
	{                                                                      \
		{{w, i, f, n, v}, {0}}, rc, msg                                \
	}

static const struct reject rejects[] = {
    /* header */
    R1(HDR, 0, 0, 1, 'X', -EBADMSG, "bad magic"),
    R1(HDR, 0, HF_MAJOR, 2, 2, -EPROTONOSUPPORT, "not supported"),
    R1(HDR, 0, HF_MAJOR, 2, 0, -EPROTONOSUPPORT, "not supported"),
    R1(HDR, 0, HF_FLAGS, 4, 2, -EPROTONOSUPPORT, "required flags 0x2"),
    R1(HDR, 0, HF_FLAGS, 4, 1, -EBADMSG, "below 144 with the sparse flag"),
    R1(HDR, 0, HF_FLAGS, 4, 0x8000, -EPROTONOSUPPORT, "required flags"),
    R1(HDR, 0, HF_HLEN, 4, 64, -EBADMSG, "header length"),
    R1(HDR, 0, HF_SHARDS + 12, 4, 8, -EBADMSG, "record length"),
    R1(HDR, 0, HF_MEMBERS, 8, V_LEN, -EBADMSG, "outside the file"),
    R1(HDR, 0, HF_DIRS, 8, 8, -EBADMSG, "outside the file"),
    R1(HDR, 0, HF_MEMBERS + 8, 4, 0xffffffff, -EBADMSG, "outside"),
    R1(HDR, 0, HF_STR_LEN, 8, V_LEN, -EBADMSG, "string table outside"),
    R1(HDR, 0, HF_DIRS, 8, V_SHARDOFF, -EBADMSG, "overlap"),
    R1(HDR, 0, HF_DIRS + 8, 4, 0, -EBADMSG, ""),
    /* shards */
    {{{SHARD, 0, SF_KEY_OFF, 4, V_STR(KEY1)},
      {SHARD, 1, SF_KEY_OFF, 4, V_STR(KEY0)}},
     -EBADMSG,
     "unsorted"},
    R1(SHARD, 1, SF_KEY_OFF, 4, V_STR(KEY0), -EBADMSG, "duplicated"),
    R1(SHARD, 0, SF_KEY_OFF, 4, V_STRLEN - 3, -EBADMSG,
       "shard 0: key outside the string table"),
    R1(SHARD, 1, SF_ETAG_LEN, 2, 0xffff, -EBADMSG, "outside the string"),
    R1(SHARD, 0, SF_KEY_LEN, 2, 0, -EBADMSG, "invalid key"),
    R1(STR, KEY0, 0, 1, '/', -EBADMSG, "invalid key"),
    R1(STR, KEY0, 6, 1, ' ', -EBADMSG, "invalid ETag"),
    /* directories */
    R1(DIR, 2, DF_PARENT, 4, 2, -EBADMSG, "not below it"),
    R1(DIR, 3, DF_PARENT, 4, 7, -EBADMSG, "not below it"),
    R1(DIR, 3, DF_PARENT, 4, 1, -EBADMSG, "parent's range"),
    R1(DIR, 0, DF_PARENT, 4, 1, -EBADMSG, "root"),
    R1(DIR, 0, DF_NAME_LEN, 4, 1, -EBADMSG, "root"),
    {{{DIR, 1, DF_NAME_OFF, 4, V_STR(DNAME2)},
      {DIR, 2, DF_NAME_OFF, 4, V_STR(DNAME1)}},
     -EBADMSG,
     "unsorted"},
    R1(DIR, 2, DF_NAME_OFF, 4, V_STR(DNAME1), -EBADMSG, "duplicated"),
    R1(DIR, 1, DF_NAME_OFF, 4, V_STRLEN, -EBADMSG,
       "directory 1: name outside the string table"),
    R1(DIR, 1, DF_NAME_LEN, 4, 0, -EBADMSG, "invalid name"),
    R1(STR, DNAME1, 0, 1, '/', -EBADMSG, "invalid name"),
    R1(DIR, 1, DF_MODE, 4, S_IFREG | 0755, -EBADMSG, "bad mode"),
    R1(DIR, 1, DF_MODE, 4, S_IFDIR | 0200000, -EBADMSG, "bad mode"),
    R1(DIR, 1, DF_NSEC, 4, 1000000000, -EBADMSG, "nanoseconds"),
    R1(DIR, 0, DF_FIRST_DIR, 4, 2, -EBADMSG, "not contiguous"),
    R1(DIR, 0, DF_NDIRS, 4, 3, -EBADMSG, ""),
    R1(DIR, 0, DF_NDIRS, 4, 0xffffffff, -EBADMSG, "contiguous"),
    R1(DIR, 2, DF_NMEMS, 4, 1, -EBADMSG, ""),
    R1(DIR, 3, DF_NMEMS, 4, 0, -EBADMSG, "cover"),
    /* members */
    R1(MEM, 1, MF_SHARD, 4, 2, -EBADMSG, "member 1: shard 2 out of range"),
    R1(MEM, 1, MF_SIZE, 8, 1001, -EBADMSG,
       "member 1: data past the end of shard"),
    R1(MEM, 1, MF_OFFSET, 8, 1001, -EBADMSG, "past the end"),
    R1(MEM, 1, MF_OFFSET, 8, UINT64_MAX, -EBADMSG, "past the end"),
    R1(MEM, 1, MF_NAME_OFF, 4, V_STRLEN, -EBADMSG,
       "member 1: name outside the string table"),
    R1(MEM, 3, MF_LINK_LEN, 2, 0xffff, -EBADMSG, "outside the string"),
    {{{MEM, 1, MF_NAME_OFF, 4, V_STR(YNAME)},
      {MEM, 2, MF_NAME_OFF, 4, V_STR(XNAME)}},
     -EBADMSG,
     "unsorted"},
    R1(MEM, 2, MF_NAME_OFF, 4, V_STR(XNAME), -EBADMSG, "duplicated"),
    {{{MEM, 0, MF_NAME_OFF, 4, V_STR(DNAME2)}, {MEM, 0, MF_NAME_LEN, 2, 1}},
     -EBADMSG,
     "share a name"},
    R1(MEM, 1, MF_NAME_LEN, 2, 0, -EBADMSG, "invalid name"),
    R1(STR, XNAME, 0, 1, '.', -EBADMSG, "invalid name"),
    R1(STR, XNAME, 0, 1, 0, -EBADMSG, "invalid name"),
    R1(MEM, 1, MF_DIR, 4, 1, -EBADMSG, "range"),
    R1(MEM, 1, MF_DIR, 4, 9, -EBADMSG, "out of range"),
    R1(MEM, 1, MF_MODE, 4, S_IFDIR | 0755, -EBADMSG, "bad mode"),
    R1(MEM, 1, MF_MODE, 4, S_IFCHR | 0644, -EBADMSG, "bad mode"),
    R1(MEM, 1, MF_MODE, 4, S_IFLNK | 0777, -EBADMSG, "symlink"),
    R1(MEM, 1, MF_NSEC, 4, 1000000000, -EBADMSG, "nanoseconds"),
    R1(MEM, 1, MF_LINK_LEN, 2, 1, -EBADMSG, "link target"),
    R1(MEM, 3, MF_OFFSET, 8, 1, -EBADMSG, "symlink with data"),
    R1(MEM, 3, MF_SHARD, 4, 0, -EBADMSG, "symlink with data"),
    R1(MEM, 3, MF_LINK_LEN, 2, 0, -EBADMSG, "symlink target"),
    R1(MEM, 3, MF_MODE, 4, S_IFREG | 0777, -EBADMSG, ""),
};

/* Offsets in the string table of the small index's strings. */
static void small_strings(const struct buf *b, uint64_t *str)
{
	const uint8_t *p = (const uint8_t *)b->data;

	str[KEY0] = rd(p + sec(b, HF_SHARDS) + SF_KEY_OFF, 4);
	str[KEY1] = rd(p + sec(b, HF_SHARDS) + 16 + SF_KEY_OFF, 4);
	str[DNAME1] = rd(p + sec(b, HF_DIRS) + 48 + DF_NAME_OFF, 4);
	str[DNAME2] = rd(p + sec(b, HF_DIRS) + 96 + DF_NAME_OFF, 4);
	str[XNAME] = rd(p + sec(b, HF_MEMBERS) + 48 + MF_NAME_OFF, 4);
	str[YNAME] = rd(p + sec(b, HF_MEMBERS) + 96 + MF_NAME_OFF, 4);
}

static void apply(uint8_t *c, const struct buf *b, const struct patch *p,
		  const uint64_t *str)
{
	static const int tabs[] = {
	    [SHARD] = HF_SHARDS, [DIR] = HF_DIRS, [MEM] = HF_MEMBERS};
	static const int lens[] = {[SHARD] = 16, [DIR] = 48, [MEM] = 48};
	uint64_t v = p->value;
	size_t off = p->field;

	if (v >= V_STR(0) && v < V_STR(NSTRINGS))
		v = str[v - V_STR(0)];
	else if (v == V_STRLEN || v == V_STRLEN - 3)
		v = rd(c + HF_STR_LEN, 8) - (V_STRLEN - v);
	else if (v == V_LEN)
		v = b->len;
	else if (v == V_SHARDOFF)
		v = sec(b, HF_SHARDS);
	if (p->where == STR)
		off += sec(b, HF_STR_OFF) + str[p->idx];
	else if (p->where != HDR)
		off += sec(b, tabs[p->where]) + (size_t)p->idx * lens[p->where];
	wr(c + off, p->width, v);
}

/* Each row: patch a copy, re-seal it, expect the error and message. */
static void test_reject_fields(void)
{
	struct buf b;
	uint64_t str[NSTRINGS];
	char err[256];

	build_small(&b);
	CHECK_INT(open_copy(b.data, b.len, NULL, 0), 0);
	small_strings(&b, str);
	for (size_t i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
		const struct reject *r = &rejects[i];
		uint8_t *c = malloc(b.len);
		int rc;

		memcpy(c, b.data, b.len);
		for (int k = 0; k < 2 && r->p[k].width; k++)
			apply(c, &b, &r->p[k], str);
		dsidx_reseal(c, b.len);
		err[0] = '\0';
		rc = open_copy(c, b.len, err, sizeof(err));
		free(c);
		CHECK_INT(rc, r->rc);
		CHECK(strstr(err, r->msg) != NULL);
		if (rc != r->rc || !strstr(err, r->msg))
			fprintf(stderr,
				"  row %zu: got %d \"%s\", want \"%s\"\n", i,
				rc, err, r->msg);
	}
	buf_release(&b);
}

/* What a newer minor may do: grow the header and the records. */
static void widen(const struct buf *b, struct buf *out, uint32_t extra)
{
	const uint8_t *p = (const uint8_t *)b->data;
	uint32_t hlen = (uint32_t)rd(p + HF_HLEN, 4);
	static const int tabs[3] = {HF_SHARDS, HF_DIRS, HF_MEMBERS};
	uint8_t *q;
	size_t at;

	buf_init(out, 1 << 20);
	buf_append(out, p, hlen);
	for (uint32_t i = 0; i < extra; i++)
		buf_append(out, "\xa5", 1);
	for (int t = 0; t < 3; t++) {
		uint32_t n = (uint32_t)rd(p + tabs[t] + 8, 4);
		uint32_t rl = (uint32_t)rd(p + tabs[t] + 12, 4);

		wr((uint8_t *)out->data + tabs[t], 8, out->len);
		wr((uint8_t *)out->data + tabs[t] + 12, 4, rl + extra);
		for (uint32_t i = 0; i < n; i++) {
			buf_append(out, p + sec(b, tabs[t]) + (size_t)i * rl,
				   rl);
			for (uint32_t k = 0; k < extra; k++)
				buf_append(out, "\x5a", 1);
		}
	}
	at = out->len;
	buf_append(out, p + sec(b, HF_STR_OFF), (size_t)rd(p + HF_STR_LEN, 8));
	q = (uint8_t *)out->data;
	wr(q + HF_STR_OFF, 8, at);
	wr(q + HF_HLEN, 4, hlen + extra);
	wr(q + HF_MINOR, 2, 7);
	wr(q + HF_FLAGS, 4, 0x10000); /* an optional flag */
	wr(q + HF_TOTAL, 8, out->len);
	dsidx_reseal(q, out->len);
}

static void same_views(struct dsidx *x, struct dsidx *y)
{
	const struct dsidx_info *a = dsidx_info(x), *b = dsidx_info(y);
	struct dsidx_member_view m1, m2;
	struct dsidx_dir_view d1, d2;
	struct dsidx_shard_view s1, s2;
	int diff = 0;

	CHECK(a->nmembers == b->nmembers && a->ndirs == b->ndirs &&
	      a->nshards == b->nshards && a->created == b->created);
	for (uint32_t i = 0; i < a->nmembers; i++) {
		dsidx_member(x, i, &m1);
		dsidx_member(y, i, &m2);
		diff += m1.size != m2.size || m1.offset != m2.offset ||
			m1.name_len != m2.name_len ||
			memcmp(m1.name, m2.name, m1.name_len) ||
			m1.link_len != m2.link_len;
	}
	for (uint32_t i = 0; i < a->ndirs; i++) {
		dsidx_dir(x, i, &d1);
		dsidx_dir(y, i, &d2);
		diff += d1.parent != d2.parent || d1.nmembers != d2.nmembers ||
			d1.name_len != d2.name_len;
	}
	for (uint32_t i = 0; i < a->nshards; i++) {
		dsidx_shard(x, i, &s1);
		dsidx_shard(y, i, &s2);
		diff += s1.size != s2.size || s1.etag_len != s2.etag_len ||
			memcmp(s1.key, s2.key, s1.key_len);
	}
	CHECK_INT(diff, 0);
}

static void test_versions(void)
{
	struct buf b, w;
	struct dsidx *x, *y = NULL;
	char err[256] = "";

	build_small(&b);
	widen(&b, &w, 24);
	CHECK_INT(dsidx_open(b.data, b.len, &x, NULL, 0), 0);
	CHECK_INT(dsidx_open(w.data, w.len, &y, err, sizeof(err)), 0);
	if (y) {
		CHECK_INT(dsidx_info(y)->minor, 7);
		CHECK_INT(dsidx_info(y)->flags, 0x10000);
		same_views(x, y);
	} else {
		fprintf(stderr, "widened: %s\n", err);
	}
	dsidx_free(x);
	dsidx_free(y);
	buf_release(&w);
	/* trailing bytes and a stale checksum */
	buf_append(&b, "", 1);
	CHECK_INT(open_copy(b.data, b.len, err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "trailing") != NULL);
	b.len--;
	b.data[b.len - 1] ^= 1;
	CHECK_INT(open_copy(b.data, b.len, err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "body checksum") != NULL);
	b.data[b.len - 1] ^= 1;
	b.data[40] ^= 1;
	CHECK_INT(open_copy(b.data, b.len, err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "header checksum") != NULL);
	buf_release(&b);
}

/* ---- sparse members (1.1) --------------------------------------------- */

/* shardfs-index(5): the 1.1 header fields and records. */
enum { HF_SPARSE = 112, HF_SEGS = 128 };
enum { XF_MEMBER = 0, XF_FIRST = 4, XF_NSEGS = 8 };
enum { GF_OFFSET = 0, GF_LENGTH = 8, GF_ARCHIVE = 16 };

static const struct dsidx_segment small_segs[2] = {{0, 100, 200},
						   {5000, 50, 400}};

/*
 * Shard s.tar (1000 bytes); members 0 "a" (regular), 1 "b" (sparse,
 * 10000 bytes, small_segs), 2 "c" (sparse, 4096 zero bytes), 3 "d" (a
 * hard link to "b"): sparse records for members 1, 2, 3 and 4 segments.
 */
static void build_sparse(struct buf *out, bool reverse)
{
	struct dsidx_builder *b;
	uint32_t s;

	buf_init(out, 1 << 20);
	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s.tar", "\"e\"", 1000, &s);
	if (reverse) {
		CHECK_INT(dsidx_builder_add_sparse(b, "c", s, 1000, 4096, NULL,
						   0, S_IFREG | 0600, 5, 6),
			  0);
		CHECK_INT(dsidx_builder_add_sparse(b, "d", s, 512, 10000,
						   small_segs, 2,
						   S_IFREG | 0644, 3, 4),
			  0);
	}
	CHECK_INT(dsidx_builder_add_member(b, "a", s, 0, 10, S_IFREG | 0644, 1,
					   2, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_sparse(b, "b", s, 512, 10000, small_segs, 2,
					   S_IFREG | 0644, 3, 4),
		  0);
	if (!reverse) {
		CHECK_INT(dsidx_builder_add_sparse(b, "c", s, 1000, 4096, NULL,
						   0, S_IFREG | 0600, 5, 6),
			  0);
		CHECK_INT(dsidx_builder_add_hardlink(b, "d", "b"), 0);
	}
	CHECK_INT(dsidx_builder_finish(b, 7, out), 0);
	dsidx_builder_free(b);
}

/* Reads [OFF, OFF + LEN) of sparse member I as a mount would: a letter
 * per segment byte (its index + 'A'), '0' for holes. */
static void read_sparse(struct dsidx *x, uint32_t i, uint64_t off, size_t len,
			char *out)
{
	struct dsidx_segment g;
	uint32_t seg, first, n;

	memset(out, '0', len);
	if (dsidx_segment_find(x, i, off, &seg) ||
	    dsidx_member_segments(x, i, &first, &n))
		return;
	for (; seg < first + n && dsidx_segment(x, seg, &g) == 0 &&
	       g.offset < off + len;
	     seg++) {
		uint64_t a = g.offset > off ? g.offset : off;
		uint64_t e = g.offset + g.length;

		if (e > off + len)
			e = off + len;
		memset(out + (a - off), 'A' + (int)seg, (size_t)(e - a));
	}
}

static void test_sparse(void)
{
	struct buf b, r;
	struct dsidx *x = NULL;
	struct dsidx_member_view v;
	struct dsidx_segment g;
	uint32_t first, n, seg;
	char got[64];

	build_sparse(&b, false);
	build_sparse(&r, true);
	CHECK(b.len == r.len && memcmp(b.data, r.data, b.len) == 0);
	CHECK_INT(rd((const uint8_t *)b.data + HF_MINOR, 2), 1);
	CHECK_INT(rd((const uint8_t *)b.data + HF_HLEN, 4), 144);
	CHECK_INT(rd((const uint8_t *)b.data + HF_FLAGS, 4), DSIDX_FLAG_SPARSE);
	CHECK_INT(dsidx_open(b.data, b.len, &x, NULL, 0), 0);
	if (!x)
		goto out;
	CHECK_INT(dsidx_info(x)->minor, 1);
	CHECK_INT(dsidx_info(x)->nsparse, 3);
	CHECK_INT(dsidx_info(x)->nsegments, 4);
	CHECK_INT(dsidx_member(x, 0, &v), 0);
	CHECK(!v.sparse && v.size == 10);
	CHECK_INT(dsidx_member_segments(x, 0, &first, &n), -ENOENT);
	CHECK_INT(dsidx_segment_find(x, 0, 0, &seg), -ENOENT);
	CHECK_INT(dsidx_member(x, 1, &v), 0);
	CHECK(v.sparse && v.size == 10000 && v.offset == 512 &&
	      v.mode == (S_IFREG | 0644) && v.shard == 0);
	CHECK_INT(dsidx_member_segments(x, 1, &first, &n), 0);
	CHECK(first == 0 && n == 2);
	CHECK_INT(dsidx_segment(x, 1, &g), 0);
	CHECK(g.offset == 5000 && g.length == 50 && g.archive_offset == 400);
	CHECK_INT(dsidx_segment(x, 4, &g), -ENOENT);
	CHECK_INT(dsidx_member(x, 2, &v), 0);
	CHECK(v.sparse && v.size == 4096 && v.offset == 1000);
	CHECK_INT(dsidx_member_segments(x, 2, &first, &n), 0);
	CHECK_INT(n, 0);
	CHECK_INT(dsidx_segment_find(x, 2, 0, &seg), -ENOENT);
	/* the hard link shares its target's segments */
	CHECK_INT(dsidx_member(x, 3, &v), 0);
	CHECK(v.sparse && v.size == 10000 && v.mtime == 3);
	CHECK_INT(dsidx_member_segments(x, 3, &first, &n), 0);
	CHECK(first == 2 && n == 2);
	/* segment_find: in a segment, in a hole, past the last one */
	CHECK_INT(dsidx_segment_find(x, 1, 0, &seg), 0);
	CHECK_INT(seg, 0);
	CHECK_INT(dsidx_segment_find(x, 1, 99, &seg), 0);
	CHECK_INT(seg, 0);
	CHECK_INT(dsidx_segment_find(x, 1, 100, &seg), 0);
	CHECK_INT(seg, 1);
	CHECK_INT(dsidx_segment_find(x, 3, 5049, &seg), 0);
	CHECK_INT(seg, 3);
	CHECK_INT(dsidx_segment_find(x, 3, 5050, &seg), -ENOENT);
	CHECK_INT(dsidx_segment_find(x, 99, 0, &seg), -ENOENT);
	read_sparse(x, 1, 96, 8, got);
	CHECK(memcmp(got, "AAAA0000", 8) == 0);
	read_sparse(x, 3, 4996, 8, got);
	CHECK(memcmp(got, "0000DDDD", 8) == 0);
out:
	dsidx_free(x);
	buf_release(&b);
	buf_release(&r);
}

/* Sparse adds shadow and are shadowed like any member. */
static void test_sparse_shadow(void)
{
	struct dsidx_builder *b;
	struct buf out;
	struct dsidx *x;
	uint32_t s;

	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s.tar", NULL, 1000, &s);
	dsidx_builder_add_sparse(b, "p", s, 0, 5000, small_segs, 1, S_IFREG, 0,
				 0);
	dsidx_builder_add_member(b, "p", s, 1, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_member(b, "q", s, 1, 1, S_IFREG | 0644, 0, 0, NULL);
	dsidx_builder_add_sparse(b, "q", s, 0, 5000, small_segs, 1, S_IFREG, 0,
				 0);
	x = finish_open(b, &out);
	CHECK_INT(dsidx_builder_shadowed(b), 2);
	CHECK(!member_at(x, "p").sparse && member_at(x, "p").size == 1);
	CHECK(member_at(x, "q").sparse && member_at(x, "q").size == 5000);
	CHECK_INT(dsidx_info(x)->nsparse, 1);
	CHECK_INT(dsidx_info(x)->nsegments, 1);
	dsidx_free(x);
	buf_release(&out);
	dsidx_builder_free(b);
	/* all sparse adds shadowed: the index is 1.0 again */
	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s.tar", NULL, 1000, &s);
	dsidx_builder_add_sparse(b, "p", s, 0, 5000, small_segs, 1, S_IFREG, 0,
				 0);
	dsidx_builder_add_member(b, "p", s, 1, 1, S_IFREG | 0644, 0, 0, NULL);
	x = finish_open(b, &out);
	CHECK_INT(dsidx_info(x)->minor, 0);
	CHECK_INT(dsidx_info(x)->flags, 0);
	CHECK_INT(rd((const uint8_t *)out.data + HF_HLEN, 4), 112);
	dsidx_free(x);
	buf_release(&out);
	dsidx_builder_free(b);
}

static void test_sparse_rejects(void)
{
	static const struct {
		struct dsidx_segment g[2];
		uint32_t n;
		uint64_t size, data_off;
		uint32_t mode;
		int rc;
	} rows[] = {
	    {{{0, 0, 0}}, 1, 100, 0, S_IFREG, -EINVAL},		     /* empty */
	    {{{0, 10, 0}, {5, 10, 0}}, 2, 100, 0, S_IFREG, -EINVAL}, /* overlap
								      */
	    {{{50, 10, 0}, {0, 10, 0}}, 2, 100, 0, S_IFREG, -EINVAL}, /* order
								       */
	    {{{95, 10, 0}}, 1, 100, 0, S_IFREG, -EINVAL},  /* past size */
	    {{{0, 10, 995}}, 1, 100, 0, S_IFREG, -EINVAL}, /* past shard */
	    {{{UINT64_MAX, 2, 0}}, 1, UINT64_MAX, 0, S_IFREG, -EINVAL},
	    {{{0, 10, 0}}, 1, 100, 1001, S_IFREG, -EINVAL}, /* data offset */
	    {{{0, 10, 0}}, 1, 100, 0, S_IFLNK | 0777, -EINVAL},
	    {{{0, 10, 0}}, 1, 100, 0, 0644, -EINVAL},
	    {{{0, 10, 0}, {10, 10, 0}}, 2, 20, 1000, S_IFREG | 07777, 0},
	};
	struct dsidx_builder *b;
	struct buf out;
	uint32_t s;

	dsidx_builder_new(NULL, &b);
	dsidx_builder_add_shard(b, "s.tar", NULL, 1000, &s);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_INT(dsidx_builder_add_sparse(
			      b, "f", s, rows[i].data_off, rows[i].size,
			      rows[i].g, rows[i].n, rows[i].mode, 0, 0),
			  rows[i].rc);
	CHECK_INT(
	    dsidx_builder_add_sparse(b, "f", 9, 0, 1, NULL, 0, S_IFREG, 0, 0),
	    -EINVAL);
	CHECK_INT(
	    dsidx_builder_add_sparse(b, "f", s, 0, 1, NULL, 1, S_IFREG, 0, 0),
	    -EINVAL);
	CHECK_INT(dsidx_builder_add_sparse(b, "f", s, 0, 1, NULL, 0, S_IFREG, 0,
					   1000000000),
		  -EINVAL);
	CHECK_INT(
	    dsidx_builder_add_sparse(b, "/f", s, 0, 1, NULL, 0, S_IFREG, 0, 0),
	    -EINVAL);
	buf_init(&out, 1 << 20);
	CHECK_INT(dsidx_builder_finish(b, 0, &out), 0);
	CHECK_INT(
	    dsidx_builder_add_sparse(b, "g", s, 0, 1, NULL, 0, S_IFREG, 0, 0),
	    -EINVAL);
	CHECK_INT(open_copy(out.data, out.len, NULL, 0), 0);
	dsidx_builder_free(b);
	buf_release(&out);
}

/* One patch of the sparse index: header, member, sparse or segment. */
enum sp_where { SP_HDR, SP_MEM, SP_XREC, SP_SEG };
#define V_TOTAL (UINT64_MAX - 1) /* the file's length */
#define V_SHOFF (UINT64_MAX - 2) /* shard_off */

static const struct {
	enum sp_where where;
	uint32_t idx, field;
	int width;
	uint64_t value;
	int rc;
	const char *msg;
} sp_rejects[] = {
    {SP_HDR, 0, HF_FLAGS, 4, 3, -EPROTONOSUPPORT, "required flags 0x2"},
    {SP_HDR, 0, HF_FLAGS, 4, 0, -EBADMSG, "member 1: data past the end"},
    {SP_HDR, 0, HF_SPARSE + 12, 4, 8, -EBADMSG, "sparse record length"},
    {SP_HDR, 0, HF_SEGS + 12, 4, 16, -EBADMSG, "segment record length"},
    {SP_HDR, 0, HF_SEGS, 8, V_TOTAL, -EBADMSG, "segment table outside"},
    {SP_HDR, 0, HF_SPARSE + 8, 4, 0xffffff, -EBADMSG, "outside"},
    {SP_HDR, 0, HF_SEGS, 8, V_SHOFF, -EBADMSG, "overlap"},
    {SP_HDR, 0, HF_SEGS + 8, 4, 3, -EBADMSG, "sparse 2: segments out of"},
    {SP_HDR, 0, HF_SPARSE + 8, 4, 2, -EBADMSG, "do not cover"},
    {SP_XREC, 1, XF_MEMBER, 4, 1, -EBADMSG, "sparse 1: members unsorted"},
    {SP_XREC, 2, XF_MEMBER, 4, 9, -EBADMSG, "sparse 2: member 9 out of"},
    {SP_XREC, 1, XF_FIRST, 4, 1, -EBADMSG, "sparse 1: segment range not"},
    {SP_XREC, 1, XF_NSEGS, 4, 1, -EBADMSG, "sparse 2: segment range not"},
    {SP_XREC, 2, XF_NSEGS, 4, 3, -EBADMSG, "sparse 2: segments out of"},
    {SP_XREC, 0, XF_MEMBER, 4, 0, -EBADMSG, "member 0: bad sparse segment 0"},
    {SP_SEG, 1, GF_OFFSET, 8, 50, -EBADMSG, "member 1: bad sparse segment 1"},
    {SP_SEG, 0, GF_LENGTH, 8, 0, -EBADMSG, "bad sparse segment 0"},
    {SP_SEG, 3, GF_OFFSET, 8, 9990, -EBADMSG, "member 3: bad sparse segment 3"},
    {SP_SEG, 2, GF_ARCHIVE, 8, 950, -EBADMSG, "member 3: bad sparse segment"},
    {SP_SEG, 2, GF_LENGTH, 8, UINT64_MAX, -EBADMSG, "bad sparse segment 2"},
    {SP_MEM, 1, MF_OFFSET, 8, 1001, -EBADMSG, "member 1: data past the end"},
    {SP_MEM, 2, MF_SIZE, 8, 1, -EBADMSG, ""}, /* fine: no segments */
    {SP_MEM, 1, MF_SIZE, 8, 5049, -EBADMSG, "member 1: bad sparse segment 1"},
    {SP_MEM, 1, MF_LINK_LEN, 2, 1, -EBADMSG, "link target"},
};

static void test_sparse_reject_fields(void)
{
	static const int tabs[] = {
	    [SP_MEM] = HF_MEMBERS, [SP_XREC] = HF_SPARSE, [SP_SEG] = HF_SEGS};
	static const int lens[] = {
	    [SP_MEM] = 48, [SP_XREC] = 16, [SP_SEG] = 24};
	struct buf b;
	char err[256];

	build_sparse(&b, false);
	for (size_t i = 0; i < sizeof(sp_rejects) / sizeof(sp_rejects[0]);
	     i++) {
		uint8_t *c = malloc(b.len);
		size_t off = sp_rejects[i].field;
		uint64_t v = sp_rejects[i].value;
		int rc, want = sp_rejects[i].rc;

		memcpy(c, b.data, b.len);
		if (sp_rejects[i].where != SP_HDR)
			off += sec(&b, tabs[sp_rejects[i].where]) +
			       (size_t)sp_rejects[i].idx *
				   lens[sp_rejects[i].where];
		if (v == V_TOTAL)
			v = b.len;
		else if (v == V_SHOFF)
			v = sec(&b, HF_SHARDS);
		wr(c + off, sp_rejects[i].width, v);
		dsidx_reseal(c, b.len);
		err[0] = '\0';
		rc = open_copy(c, b.len, err, sizeof(err));
		free(c);
		if (!sp_rejects[i].msg[0])
			want = 0; /* a change that is still valid */
		CHECK_INT(rc, want);
		CHECK(strstr(err, sp_rejects[i].msg) != NULL);
		if (rc != want || !strstr(err, sp_rejects[i].msg))
			fprintf(
			    stderr,
			    "  sparse row %zu: got %d \"%s\", want \"%s\"\n", i,
			    rc, err, sp_rejects[i].msg);
	}
	buf_release(&b);
}

/*
 * What a newer minor may do to the 1.1 tables: longer records, moved to
 * the end of the file (the old ones become a gap).
 */
static void test_sparse_versions(void)
{
	struct buf b, w;
	struct dsidx *x = NULL, *y = NULL;
	char err[256] = "", got[8];
	static const int tabs[2] = {HF_SPARSE, HF_SEGS};
	uint8_t *q;

	build_sparse(&b, false);
	buf_init(&w, 1 << 20);
	buf_append(&w, b.data, b.len);
	for (int t = 0; t < 2; t++) {
		const uint8_t *p = (const uint8_t *)b.data;
		uint32_t n = (uint32_t)rd(p + tabs[t] + 8, 4);
		uint32_t rl = (uint32_t)rd(p + tabs[t] + 12, 4);

		wr((uint8_t *)w.data + tabs[t], 8, w.len);
		wr((uint8_t *)w.data + tabs[t] + 12, 4, rl + 8);
		for (uint32_t i = 0; i < n; i++) {
			buf_append(&w, p + sec(&b, tabs[t]) + (size_t)i * rl,
				   rl);
			buf_append(&w, "\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a", 8);
		}
	}
	q = (uint8_t *)w.data;
	wr(q + HF_MINOR, 2, 9);
	wr(q + HF_TOTAL, 8, w.len);
	dsidx_reseal(q, w.len);
	CHECK_INT(dsidx_open(b.data, b.len, &x, NULL, 0), 0);
	CHECK_INT(dsidx_open(w.data, w.len, &y, err, sizeof(err)), 0);
	if (x && y) {
		same_views(x, y);
		CHECK_INT(dsidx_info(y)->nsegments, 4);
		read_sparse(y, 3, 4996, 8, got);
		CHECK(memcmp(got, "0000DDDD", 8) == 0);
	} else {
		fprintf(stderr, "sparse widened: %s\n", err);
	}
	dsidx_free(x);
	dsidx_free(y);
	buf_release(&w);
	buf_release(&b);
}

/* Every truncation and every single-bit flip of small indexes fails. */
static void test_damage(void)
{
	struct buf bufs[3];
	char err[256];
	uint64_t accepted = 0, msgless = 0;

	build_small(&bufs[0]);
	buf_init(&bufs[1], 1 << 20);
	build_example(&bufs[1]);
	build_sparse(&bufs[2], false);
	for (int k = 0; k < 3; k++) {
		const struct buf *b = &bufs[k];
		uint8_t *c = malloc(b->len);

		for (size_t n = 0; n < b->len; n++) {
			err[0] = '\0';
			accepted +=
			    open_copy(b->data, n, err, sizeof(err)) == 0;
			msgless += err[0] == '\0';
		}
		for (size_t i = 0; i < b->len; i++)
			for (int bit = 0; bit <= 8; bit++) {
				memcpy(c, b->data, b->len);
				c[i] ^= bit < 8 ? (uint8_t)(1u << bit) : 0xff;
				err[0] = '\0';
				accepted +=
				    open_copy(c, b->len, err, sizeof(err)) == 0;
				msgless += err[0] == '\0';
			}
		free(c);
		buf_release(&bufs[k]);
	}
	CHECK_INT(accepted, 0);
	CHECK_INT(msgless, 0);
}

int main(void)
{
	test_crc32c();
	test_man_example();
	test_random_trees();
	test_canonical();
	test_shadow_conflicts_links();
	test_builder_rejects();
	test_deep();
	test_reject_fields();
	test_versions();
	test_sparse();
	test_sparse_shadow();
	test_sparse_rejects();
	test_sparse_reject_fields();
	test_sparse_versions();
	test_damage();
	return check_summary("test_dsidx");
}
