// SPDX-License-Identifier: MIT
/*
 * packplan and packstate: sample keys, UTF-8 checks, shard name patterns
 * (valid and invalid), the order of members and the grouping of samples
 * (adjacent, never split), shard assignment with exact sizes and offsets
 * (checked against what the tar scanner reads from the shard the plan
 * describes), members larger than a shard, seeded shuffles, fingerprints,
 * and the state text (round trip, damaged lines).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "dsidx.h"
#include "packplan.h"
#include "packstate.h"
#include "tarhdr.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* ---- helpers ---- */

static struct packplan *plan_new(uint64_t shard_size, bool shuffle,
				 uint64_t seed)
{
	struct packplan_conf c = {
	    .shard_size = shard_size, .shuffle = shuffle, .seed = seed};
	struct packplan *p = NULL;
	char err[256];

	CHECK_INT(packplan_new(&c, &p, err, sizeof(err)), 0);
	return p;
}

static int add_file(struct packplan *p, const char *path, uint64_t size)
{
	struct packplan_input in = {.path = path,
				    .kind = PACKPLAN_FILE,
				    .mode = 0644,
				    .mtime = 1700000000,
				    .size = size,
				    .version = "v1"};

	return packplan_add(p, &in);
}

static int add_dir(struct packplan *p, const char *path)
{
	struct packplan_input in = {
	    .path = path, .kind = PACKPLAN_DIR, .mode = 0755, .mtime = 1};

	return packplan_add(p, &in);
}

/* "dir|stem" of PATH. */
static void sample_str(const char *path, char *out, size_t outlen)
{
	size_t dl, sl;
	const char *stem;

	packplan_sample_of(path, &dl, &sl);
	stem = path + dl + (dl ? 1 : 0);
	snprintf(out, outlen, "%.*s|%.*s", (int)dl, path, (int)sl, stem);
}

/* ---- tests ---- */

static void test_sample_of(void)
{
	static const struct {
		const char *path, *want;
	} t[] = {
	    {"a/0001.jpg", "a|0001"},
	    {"a/0001.cls", "a|0001"},
	    {"a/0001.seg.png", "a|0001"},
	    {"0001.jpg", "|0001"},
	    {"noext", "|noext"},
	    {".hidden", "|.hidden"},
	    {".a.b", "|.a"},
	    {"a..b", "|a"},
	    {"d/e/f.tar.gz", "d/e|f"},
	    {"d/e.x/f", "d/e.x|f"},
	};
	char got[256];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		sample_str(t[i].path, got, sizeof(got));
		CHECK_STR(got, t[i].want);
	}
}

static void test_utf8(void)
{
	static const struct {
		const char *s;
		bool ok;
	} t[] = {
	    {"plain", true},
	    {"\xc3\xbc", true},		/* ü */
	    {"\xe6\x97\xa5", true},	/* 日 */
	    {"\xf0\x9f\x98\x80", true}, /* U+1F600 */
	    {"\xff", false},
	    {"\xc3", false},		 /* truncated */
	    {"\xc0\xaf", false},	 /* overlong '/' */
	    {"\xe0\x80\xaf", false},	 /* overlong */
	    {"\xed\xa0\x80", false},	 /* surrogate */
	    {"\xf4\x90\x80\x80", false}, /* above U+10FFFF */
	    {"ok\x80", false},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		CHECK(packplan_utf8_ok(t[i].s, strlen(t[i].s)) == t[i].ok);
}

static void test_patterns(void)
{
	static const char *const bad[] = {
	    "shard.tar",  "{n}{n}.tar", "shard-{n}.zip",
	    "/s-{n}.tar", "a//{n}.tar", "{bad}{n}.tar",
	    "a b{n}.tar", "{n:0}.tar",	"{n:13}.tar",
	    "../{n}.tar", "{n}.tar/",	"x/./{n}.tar",
	    "{hash}.tar", "",		"{n:}.tar",
	    "{n",
	};
	char name[64], err[256];

	CHECK_INT(packplan_format_name(PACKPLAN_DEFAULT_PATTERN, 42, name,
				       sizeof(name)),
		  0);
	CHECK_STR(name, "shard-000042.tar");
	CHECK_INT(packplan_format_name("s{n:3}.tar", 7, name, sizeof(name)), 0);
	CHECK_STR(name, "s007.tar");
	CHECK_INT(packplan_format_name("s{n:1}.tar", 1234, name, sizeof(name)),
		  0);
	CHECK_STR(name, "s1234.tar");
	CHECK_INT(packplan_format_name("{hash}/train-{n:4}.tar", 3, name,
				       sizeof(name)),
		  0);
	CHECK_INT(strlen(name), 4 + 1 + 6 + 4 + 4);
	CHECK(strspn(name, "0123456789abcdef") == 4);
	CHECK(strcmp(name + 4, "/train-0003.tar") == 0);
	/* {hash} depends on the shard number only, and spreads. */
	{
		char a[64], b[64];

		packplan_format_name("{hash}-{n}.tar", 0, a, sizeof(a));
		packplan_format_name("{hash}-{n}.tar", 0, b, sizeof(b));
		CHECK_STR(a, b);
		packplan_format_name("{hash}-{n}.tar", 1, b, sizeof(b));
		CHECK(strncmp(a, b, 4) != 0);
	}
	CHECK_INT(packplan_format_name(PACKPLAN_DEFAULT_PATTERN, 1, name, 8),
		  -ERANGE);
	CHECK_INT(
	    packplan_check_pattern(PACKPLAN_DEFAULT_PATTERN, err, sizeof(err)),
	    0);
	CHECK_INT(
	    packplan_check_pattern("{hash}/x_{n:8}-a.b.tar", err, sizeof(err)),
	    0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_INT(packplan_check_pattern(bad[i], err, sizeof(err)),
			  -EINVAL);
		CHECK(err[0] != '\0');
	}
}

static void test_bad_input(void)
{
	struct packplan *p = plan_new(MIB, false, 0);
	struct packplan_input link = {
	    .path = "l", .kind = PACKPLAN_SYMLINK, .mode = 0777};
	char *big = malloc(5000);

	memset(big, 'x', 4999);
	big[4999] = '\0';
	CHECK_INT(add_file(p, "a//b", 1), -EINVAL);
	CHECK_INT(add_file(p, "../x", 1), -EINVAL);
	CHECK_INT(add_file(p, "./x", 1), -EINVAL);
	CHECK_INT(add_file(p, "/abs", 1), -EINVAL);
	CHECK_INT(add_file(p, "x/", 1), -EINVAL);
	CHECK_INT(add_file(p, big, 1), -ENAMETOOLONG);
	big[1025] = '\0'; /* one 1025-byte component */
	CHECK_INT(add_file(p, big, 1), -ENAMETOOLONG);
	CHECK_INT(packplan_add(p, &link), -EINVAL); /* no target */
	memset(big, 'x', 4999);
	big[4096] = '\0';
	link.link = big;
	CHECK_INT(packplan_add(p, &link), -ENAMETOOLONG);
	link.link = "target";
	CHECK_INT(packplan_add(p, &link), 0);
	CHECK_INT(packplan_finish(p), 0);
	CHECK_INT(packplan_nitems(p), 1);
	packplan_free(p);
	free(big);
}

/* Every sample's members are adjacent, in one shard, with one number;
 * sample numbers go up by one. */
static void check_samples(const struct packplan *p)
{
	uint32_t prev = 0;

	for (size_t i = 0; i < packplan_nitems(p); i++) {
		const struct packplan_item *it = packplan_item(p, i);
		char a[512], b[512];

		if (i == 0) {
			CHECK_INT(it->sample, 0);
			continue;
		}
		const struct packplan_item *pr = packplan_item(p, i - 1);

		sample_str(it->path, a, sizeof(a));
		sample_str(pr->path, b, sizeof(b));
		if (it->sample == prev) {
			CHECK_STR(a, b);
			CHECK_INT(it->shard, pr->shard);
			CHECK(it->kind != PACKPLAN_DIR);
		} else {
			CHECK_INT(it->sample, prev + 1);
		}
		prev = it->sample;
	}
}

static void test_order_and_samples(void)
{
	static const char *const files[] = {
	    "c/0002.jpg", "c/0001.cls",	 "c/0001.jpg",	   "c/0002.cls",
	    "b/x.txt",	  "c/0001.json", "c/sub/0001.jpg", "c-d/z",
	    "top.txt",	  "c/0001",
	};
	static const char *const want[] = {
	    "b",
	    "c",
	    "c-d",
	    "top.txt",
	    "b/x.txt",
	    "c/0001",
	    "c/0001.cls",
	    "c/0001.jpg",
	    "c/0001.json",
	    "c/0002.cls",
	    "c/0002.jpg",
	    "c/sub",
	    "c/sub/0001.jpg",
	    "c-d/z",
	};
	struct packplan *p = plan_new(MIB, false, 0);

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		CHECK_INT(add_file(p, files[i], 10), 0);
	CHECK_INT(add_dir(p, "c"), 0);
	CHECK_INT(add_dir(p, "b"), 0);
	CHECK_INT(add_dir(p, "c/sub"), 0);
	CHECK_INT(add_dir(p, "c-d"), 0);
	CHECK_INT(packplan_finish(p), 0);
	CHECK_INT(packplan_nitems(p), sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < packplan_nitems(p); i++)
		CHECK_STR(packplan_item(p, i)->path, want[i]);
	check_samples(p);
	/* b, c, c-d, top, b/x, c/0001 (4 files), c/0002 (2), c/sub, its
	 * 0001, c-d/z */
	CHECK_INT(packplan_nsamples(p), 10);
	CHECK_INT(packplan_nshards(p), 1);
	CHECK_INT(packplan_total_files(p), 10);
	packplan_free(p);
}

static uint64_t item_bytes(uint64_t hdr, uint64_t size)
{
	return hdr + size + (512 - size % 512) % 512;
}

static void test_shards(void)
{
	struct packplan *p = plan_new(MIB, false, 0);
	char name[32];
	uint64_t one = item_bytes(512, 300 * KIB);

	/* 7 single-file samples of 300 KiB: three fit in 1 MiB. */
	for (int i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "d/f%d.bin", i);
		CHECK_INT(add_file(p, name, 300 * KIB), 0);
	}
	/* A 3 MiB member between them: a shard of its own. */
	CHECK_INT(add_file(p, "d/f3x.bin", 3 * MIB), 0);
	/* A sample of 3 x 400 KiB, larger than a shard: never split. */
	CHECK_INT(add_file(p, "e/s.a", 400 * KIB), 0);
	CHECK_INT(add_file(p, "e/s.b", 400 * KIB), 0);
	CHECK_INT(add_file(p, "e/s.c", 400 * KIB), 0);
	CHECK_INT(add_file(p, "e/t.a", 1), 0);
	CHECK_INT(packplan_finish(p), 0);
	check_samples(p);
	/* f0 f1 f2 | f3 | f3x | f4 f5 f6 | s.a s.b s.c | t.a */
	CHECK_INT(packplan_nshards(p), 6);
	CHECK_INT(packplan_shard(p, 0)->nitems, 3);
	CHECK_INT(packplan_shard(p, 0)->size, 3 * one + 1024);
	CHECK_INT(packplan_shard(p, 1)->nitems, 1);
	CHECK_INT(packplan_shard(p, 2)->nitems, 1);
	CHECK_INT(packplan_shard(p, 2)->size, item_bytes(512, 3 * MIB) + 1024);
	CHECK_STR(packplan_item(p, packplan_shard(p, 2)->first)->path,
		  "d/f3x.bin");
	CHECK_INT(packplan_shard(p, 3)->nitems, 3);
	CHECK_INT(packplan_shard(p, 4)->nitems, 3);
	CHECK_INT(packplan_shard(p, 5)->nitems, 1);
	CHECK_STR(packplan_shard(p, 5)->key, "shard-000005.tar");
	for (uint32_t s = 0; s < packplan_nshards(p); s++) {
		const struct packplan_shard *sh = packplan_shard(p, s);
		uint64_t off = 0;

		for (size_t i = sh->first; i < sh->first + sh->nitems; i++) {
			const struct packplan_item *it = packplan_item(p, i);

			CHECK_INT(it->shard, s);
			CHECK_INT(it->offset, off);
			CHECK_INT(it->data_offset, off + it->hdr_len);
			off += item_bytes(it->hdr_len, it->size);
		}
		CHECK_INT(sh->size, off + 1024);
		CHECK(sh->size <= MIB || sh->nitems == 1 ||
		      packplan_item(p, sh->first)->sample ==
			  packplan_item(p, sh->first + sh->nitems - 1)->sample);
		CHECK_INT(strlen(sh->fp), 64);
	}
	packplan_free(p);
}

/* A shard image from the plan, read back by the tar scanner: paths,
 * types, sizes and data offsets must be the planned ones. */
static void test_against_scanner(void)
{
	struct packplan *p = plan_new(MIB, false, 0);
	struct packplan_input ln = {.path = "d/link",
				    .link = "../far/away/target",
				    .kind = PACKPLAN_SYMLINK,
				    .mode = 0777,
				    .mtime = 5};
	char longp[400];
	struct buf img;
	struct tarhdr_scan sc;
	struct tarhdr_entry e;
	const struct packplan_shard *sh;
	uint64_t noff, nlen;
	size_t k = 0;

	memset(longp, 'q', sizeof(longp));
	memcpy(longp, "d/", 2);
	longp[150] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK_INT(add_file(p, "d/a.txt", 5), 0);
	CHECK_INT(add_file(p, "d/b.txt", 0), 0);
	CHECK_INT(add_file(p, longp, 700), 0);
	CHECK_INT(add_dir(p, "d"), 0);
	CHECK_INT(packplan_add(p, &ln), 0);
	CHECK_INT(packplan_finish(p), 0);
	CHECK_INT(packplan_nshards(p), 1);
	sh = packplan_shard(p, 0);
	buf_init(&img, 4 * MIB);
	for (size_t i = 0; i < sh->nitems; i++) {
		const struct packplan_item *it = packplan_item(p, i);
		size_t before = img.len;

		CHECK_INT(packplan_write_header(it, &img), 0);
		CHECK_INT(img.len - before, it->hdr_len);
		CHECK_INT(before, it->offset);
		for (uint64_t j = 0; j < it->size; j++)
			buf_append(&img, "x", 1);
		tarhdr_write_pad(it->size, &img);
	}
	tarhdr_write_end(&img);
	CHECK_INT(img.len, sh->size);
	/* The long path needs a pax header: more than one block. */
	for (size_t i = 0; i < sh->nitems; i++)
		if (strcmp(packplan_item(p, i)->path, longp) == 0)
			CHECK(packplan_item(p, i)->hdr_len > 512);
	tarhdr_scan_init(&sc, img.len, NULL);
	while (tarhdr_scan_next(&sc, (const unsigned char *)img.data, img.len,
				0, &e, &noff, &nlen) == TARHDR_ENTRY) {
		const struct packplan_item *it = packplan_item(p, k++);

		CHECK_STR(e.path, it->path);
		CHECK_INT(e.size, it->size);
		CHECK_INT(e.data_offset, it->data_offset);
		CHECK_INT(e.header_offset, it->offset);
		CHECK_INT(e.mode, it->mode);
		CHECK_INT(e.mtime, it->mtime);
		if (it->kind == PACKPLAN_SYMLINK)
			CHECK_STR(e.link, it->link);
	}
	CHECK_INT(k, sh->nitems);
	CHECK_INT(sc.end, TARHDR_END_MARKER);
	tarhdr_scan_release(&sc);
	buf_release(&img);
	packplan_free(p);
}

static struct packplan *shuffled(uint64_t seed, bool shuffle)
{
	struct packplan *p = plan_new(MIB, shuffle, seed);
	char name[64];

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "cls%d/%04d.jpg", i % 7, i);
		add_file(p, name, (uint64_t)(i * 7919) % 50000);
		snprintf(name, sizeof(name), "cls%d/%04d.cls", i % 7, i);
		add_file(p, name, 2);
	}
	CHECK_INT(packplan_finish(p), 0);
	return p;
}

static bool same_order(const struct packplan *a, const struct packplan *b)
{
	if (packplan_nitems(a) != packplan_nitems(b))
		return false;
	for (size_t i = 0; i < packplan_nitems(a); i++)
		if (strcmp(packplan_item(a, i)->path,
			   packplan_item(b, i)->path) != 0)
			return false;
	return true;
}

static void test_shuffle(void)
{
	struct packplan *a = shuffled(7, true), *b = shuffled(7, true);
	struct packplan *c = shuffled(8, true), *d = shuffled(7, false);

	CHECK(same_order(a, b));
	CHECK(!same_order(a, c));
	CHECK(!same_order(a, d));
	check_samples(a);
	check_samples(c);
	CHECK_INT(packplan_nsamples(a), 300);
	CHECK_INT(packplan_nitems(a), 600);
	CHECK_INT(packplan_total_files(a), packplan_total_files(d));
	CHECK(packplan_nshards(a) > 3);
	for (uint32_t s = 0; s < packplan_nshards(a); s++)
		CHECK_STR(packplan_shard(a, s)->fp, packplan_shard(b, s)->fp);
	packplan_free(a);
	packplan_free(b);
	packplan_free(c);
	packplan_free(d);
}

static void test_fingerprints(void)
{
	struct packplan *a = plan_new(MIB, false, 0),
			*b = plan_new(MIB, false, 0);
	struct packplan_input in = {.path = "z/late.bin",
				    .kind = PACKPLAN_FILE,
				    .mode = 0644,
				    .mtime = 1700000000,
				    .size = 600 * KIB,
				    .version = "v1"};

	add_file(a, "a/early.bin", 600 * KIB);
	add_file(b, "a/early.bin", 600 * KIB);
	packplan_add(a, &in);
	in.version = "v2"; /* the same file, changed in place */
	packplan_add(b, &in);
	CHECK_INT(packplan_finish(a), 0);
	CHECK_INT(packplan_finish(b), 0);
	CHECK_INT(packplan_nshards(a), 2);
	CHECK_STR(packplan_shard(a, 0)->fp, packplan_shard(b, 0)->fp);
	CHECK(strcmp(packplan_shard(a, 1)->fp, packplan_shard(b, 1)->fp) != 0);
	packplan_free(a);
	packplan_free(b);
}

/* The index from a plan: shards with their ETags, members where the plan
 * put them, links, directories with their modes, the root's mode. */
static void test_index(void)
{
	struct packplan *p = plan_new(MIB, false, 0);
	struct packplan_input ln = {.path = "d/link",
				    .link = "a.txt",
				    .kind = PACKPLAN_SYMLINK,
				    .mode = 0777,
				    .mtime = 5};
	struct packplan_root root = {.known = true, .mode = 0750, .mtime = 42};
	const char *etags[2] = {"\"abc\"", "\"def-2\""};
	struct dsidx_member_view mv;
	struct dsidx_shard_view sv;
	struct dsidx_dir_view dv;
	struct dsidx_ref ref;
	struct dsidx *x = NULL;
	struct buf out;
	char err[256];

	CHECK_INT(add_file(p, "d/a.txt", 5), 0);
	CHECK_INT(add_file(p, "e/big.bin", 2 * MIB), 0);
	CHECK_INT(add_dir(p, "d"), 0);
	CHECK_INT(packplan_add(p, &ln), 0);
	CHECK_INT(packplan_finish(p), 0);
	CHECK_INT(packplan_nshards(p), 2);
	buf_init(&out, 1 << 20);
	CHECK_INT(packplan_build_index(p, etags, &root, 1700000000, &out), 0);
	CHECK_INT(dsidx_open(out.data, out.len, &x, err, sizeof(err)), 0);
	CHECK_INT(dsidx_info(x)->nshards, 2);
	CHECK_INT(dsidx_info(x)->nmembers, 3);
	CHECK_INT(dsidx_shard(x, 1, &sv), 0);
	CHECK(sv.etag_len == 7 && memcmp(sv.etag, "\"def-2\"", 7) == 0);
	CHECK_INT(sv.size, packplan_shard(p, 1)->size);
	CHECK_INT(dsidx_lookup_path(x, "e/big.bin", 9, &ref), 0);
	CHECK_INT(dsidx_member(x, ref.idx, &mv), 0);
	CHECK_INT(mv.size, 2 * MIB);
	CHECK_INT(mv.offset, packplan_item(p, 3)->data_offset);
	CHECK_INT(mv.mode, 0100644);
	CHECK_INT(dsidx_lookup_path(x, "d/link", 6, &ref), 0);
	CHECK_INT(dsidx_member(x, ref.idx, &mv), 0);
	CHECK(mv.link_len == 5 && memcmp(mv.link, "a.txt", 5) == 0);
	CHECK_INT(mv.shard, DSIDX_NONE);
	CHECK_INT(dsidx_lookup_path(x, "d", 1, &ref), 0);
	CHECK_INT(dsidx_dir(x, ref.idx, &dv), 0);
	CHECK_INT(dv.mode, 040755);
	CHECK_INT(dsidx_dir(x, 0, &dv), 0);
	CHECK_INT(dv.mode, 040750);
	CHECK_INT(dv.mtime, 42);
	dsidx_free(x);
	buf_reset(&out);
	/* A local index records no ETags. */
	CHECK_INT(packplan_build_index(p, NULL, NULL, 1, &out), 0);
	CHECK_INT(dsidx_open(out.data, out.len, &x, err, sizeof(err)), 0);
	CHECK_INT(dsidx_shard(x, 0, &sv), 0);
	CHECK_INT(sv.etag_len, 0);
	dsidx_free(x);
	buf_release(&out);
	packplan_free(p);
}

static void test_state(void)
{
	static const char fp1[] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const char fp2[] =
	    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
	struct packstate s, t;
	struct buf b;

	packstate_init(&s);
	CHECK_INT(packstate_set(&s, "shard-000000.tar", 1024, "\"abc-2\"", fp1),
		  0);
	CHECK_INT(packstate_set(&s, "x/shard-000001.tar", 7, "", fp2), 0);
	CHECK_INT(packstate_set(&s, "bad key", 7, "", fp2), -EINVAL);
	CHECK_INT(packstate_set(&s, "k", 7, "e tag", fp2), -EINVAL);
	CHECK_INT(packstate_set(&s, "k", 7, "", "abc"), -EINVAL);
	CHECK_INT(packstate_set(&s, "shard-000000.tar", 2048, "\"d\"", fp2), 0);
	CHECK_INT(s.n, 2);
	buf_init(&b, 1 << 20);
	CHECK_INT(packstate_format(&s, &b), 0);
	CHECK_STR(
	    b.data,
	    "shardfs-pack-state 1\n"
	    "shard-000000.tar 2048 \"d\" "
	    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\n"
	    "x/shard-000001.tar 7 - "
	    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
	    "\n");
	buf_append_str(&b, "garbage line\nk 12x \"e\" "
			   "0123\n\n");
	CHECK_INT(packstate_parse(b.data, b.len, &t), 0);
	CHECK_INT(t.n, 2);
	CHECK_STR(packstate_find(&t, "x/shard-000001.tar")->etag, "");
	CHECK_INT(packstate_find(&t, "shard-000000.tar")->size, 2048);
	CHECK(packstate_find(&t, "nope") == NULL);
	packstate_remove(&t, "shard-000000.tar");
	CHECK_INT(t.n, 1);
	CHECK(packstate_find(&t, "shard-000000.tar") == NULL);
	packstate_release(&t);
	CHECK_INT(packstate_parse("not a state\nk 1 - x\n", 20, &t), 0);
	CHECK_INT(t.n, 0);
	packstate_release(&t);
	packstate_release(&s);
	buf_release(&b);
}

int main(void)
{
	test_sample_of();
	test_utf8();
	test_patterns();
	test_bad_input();
	test_order_and_samples();
	test_shards();
	test_against_scanner();
	test_shuffle();
	test_fingerprints();
	test_index();
	test_state();
	return check_summary("test_packplan");
}
