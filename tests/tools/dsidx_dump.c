// SPDX-License-Identifier: MIT
/*
 * dsidx_dump FILE: prints a dataset index (shardfs-index(5)), one line per
 * entry, fields separated by tabs (names may hold spaces):
 *
 *   index   VERSION   SHARDS  DIRS  MEMBERS  BYTES
 *   shard   KEY       ETAG    SIZE                       (ETag "-" if none)
 *   dir     PATH      MODE    MTIME                      (the root is ".")
 *   file    PATH      SIZE    SHARD  OFFSET  MODE  MTIME
 *   sparse  PATH      SIZE    SHARD  OFFSET  MODE  MTIME  SEGMENTS
 *   link    PATH      TARGET  MODE   MTIME
 *
 * SHARD is the shard's key; MODE is octal with the file type bits;
 * SEGMENTS is "OFFSET+LENGTH@ARCHIVE_OFFSET" for each data segment,
 * separated by commas ("" for a file of zeros). Directories come in index
 * order (breadth-first), each followed by its members in name order.
 * Exit status 0, or 1 with one line on stderr for an unreadable or
 * invalid index. For the integration tests and for debugging.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsidx.h"

/* The path of directory D, "" for the root, into P. */
static void dir_path(const struct dsidx *x, uint32_t d, struct buf *p)
{
	struct dsidx_dir_view v;

	buf_reset(p);
	if (d == 0 || dsidx_dir(x, d, &v))
		return;
	dir_path(x, v.parent, p);
	if (p->len)
		buf_append(p, "/", 1);
	buf_append(p, v.name, v.name_len);
}

static void print_shard_key(const struct dsidx *x, uint32_t s)
{
	struct dsidx_shard_view v;

	if (dsidx_shard(x, s, &v) == 0)
		printf("%.*s", (int)v.key_len, v.key);
	else
		printf("-");
}

static void print_segments(const struct dsidx *x, uint32_t m)
{
	uint32_t first, n;
	struct dsidx_segment g;

	if (dsidx_member_segments(x, m, &first, &n))
		return;
	for (uint32_t k = first; k < first + n; k++)
		if (dsidx_segment(x, k, &g) == 0)
			printf("%s%" PRIu64 "+%" PRIu64 "@%" PRIu64,
			       k > first ? "," : "", g.offset, g.length,
			       g.archive_offset);
}

static void print_member(const struct dsidx *x, uint32_t m,
			 const struct buf *dir)
{
	struct dsidx_member_view v;

	if (dsidx_member(x, m, &v))
		return;
	if ((v.mode & S_IFMT) == S_IFLNK) {
		printf("link\t%s%s%.*s\t%.*s\t%o\t%" PRId64 "\n", buf_str(dir),
		       dir->len ? "/" : "", (int)v.name_len, v.name,
		       (int)v.link_len, v.link, v.mode, v.mtime);
		return;
	}
	printf("%s\t%s%s%.*s\t%" PRIu64 "\t", v.sparse ? "sparse" : "file",
	       buf_str(dir), dir->len ? "/" : "", (int)v.name_len, v.name,
	       v.size);
	print_shard_key(x, v.shard);
	printf("\t%" PRIu64 "\t%o\t%" PRId64, v.offset, v.mode, v.mtime);
	if (v.sparse) {
		printf("\t");
		print_segments(x, m);
	}
	printf("\n");
}

static void dump(const struct dsidx *x)
{
	const struct dsidx_info *in = dsidx_info(x);
	struct buf p;

	buf_init(&p, 1 << 20);
	printf("index\t%u.%u\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu64
	       "\n",
	       in->major, in->minor, in->nshards, in->ndirs, in->nmembers,
	       in->size);
	for (uint32_t i = 0; i < in->nshards; i++) {
		struct dsidx_shard_view v;

		dsidx_shard(x, i, &v);
		printf("shard\t%.*s\t%.*s\t%" PRIu64 "\n", (int)v.key_len,
		       v.key, v.etag_len ? (int)v.etag_len : 1,
		       v.etag_len ? v.etag : "-", v.size);
	}
	for (uint32_t d = 0; d < in->ndirs; d++) {
		struct dsidx_dir_view v;

		dsidx_dir(x, d, &v);
		dir_path(x, d, &p);
		printf("dir\t%s\t%o\t%" PRId64 "\n", p.len ? buf_str(&p) : ".",
		       v.mode, v.mtime);
		for (uint32_t m = v.first_member;
		     m < v.first_member + v.nmembers; m++)
			print_member(x, m, &p);
	}
	buf_release(&p);
}

int main(int argc, char **argv)
{
	struct dsidx *x = NULL;
	char err[256] = "";
	struct buf b;
	FILE *f;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: dsidx_dump FILE\n");
		return 2;
	}
	f = strcmp(argv[1], "-") ? fopen(argv[1], "rb") : stdin;
	if (!f) {
		fprintf(stderr, "dsidx_dump: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	buf_init(&b, DSIDX_SUGGESTED_CAP);
	for (;;) {
		size_t n;

		if (buf_reserve(&b, 1 << 16)) {
			fprintf(stderr, "dsidx_dump: %s: too large\n", argv[1]);
			return 1;
		}
		n = fread(b.data + b.len, 1, 1 << 16, f);
		b.len += n;
		if (n == 0)
			break;
	}
	if (f != stdin)
		fclose(f);
	rc = dsidx_open(b.data, b.len, &x, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "dsidx_dump: %s: %s\n", argv[1], err);
		buf_release(&b);
		return 1;
	}
	dump(x);
	dsidx_free(x);
	buf_release(&b);
	return 0;
}
