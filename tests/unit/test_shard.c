// SPDX-License-Identifier: MIT
/*
 * shard and shardcache over the local store (a temporary directory).
 *
 * Good shards come from other programs: GNU tar (--format=gnu, posix with
 * the three pax sparse versions, ustar) and Python's tarfile (GNU, pax,
 * ustar), over a tree with names longer than 100 and 255 bytes, unicode
 * names, empty files, files of exactly 512 and 1024 bytes, directories,
 * symlinks, hard links, a sparse file and 300 small files. The index from
 * shard_scan() must list exactly what `tar -tv` lists (paths, types,
 * sizes, link targets), and every member's offset (or sparse segments)
 * must give the source file's bytes.
 *
 * A 4.5 GiB shard (a sparse file on disk, made by Python) is scanned with
 * a handful of GETs. Bad shards (truncated, bad checksum, a size running
 * past the end, a bad pax record length, an endless long-name chain, no
 * members, not a tar, unsafe names, a fifo) give the damage flag and a
 * message, keep the members before the damage and fetch little.
 *
 * The cache: a second call hits it without a GET, a changed shard (new
 * ETag) misses, a corrupt entry is rescanned and rewritten, and shards
 * without an ETag or damaged are not stored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dsidx.h"
#include "log.h"
#include "shard.h"
#include "shardcache.h"
#include "store_local.h"
#include "tarhdr.h"

static char tmp[PATH_MAX];
static struct store *st;

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* Makes the source trees and the shards with GNU tar and Python. */
static const char gen_py[] =
    "import os, sys, tarfile\n"
    "root = sys.argv[1]\n"
    "def put(rel, data, base='src'):\n"
    "    p = os.path.join(root, base, rel)\n"
    "    os.makedirs(os.path.dirname(p), exist_ok=True)\n"
    "    with open(p, 'wb') as f:\n"
    "        f.write(data)\n"
    "for base in ('src', 'short'):\n"
    "    put('empty', b'', base)\n"
    "    put('b512', os.urandom(512), base)\n"
    "    put('b1024', os.urandom(1024), base)\n"
    "    put('small.txt', b'hello\\n', base)\n"
    "    put('\\u00fcn\\u00ef/\\u65e5\\u672c\\u8a9e.txt', b'unicode', base)\n"
    "    put('emoji \\U0001F600.bin', b'smile', base)\n"
    "    put('p' * 60 + '/' + 'n' * 90, b'split into prefix and name', base)\n"
    "    put('big.bin', os.urandom((1 << 20) + 1), base)\n"
    "    for i in range(300):\n"
    "        put('many/%04d.cls' % i, b'%d' % i * (i % 7), base)\n"
    "    os.makedirs(os.path.join(root, base, 'emptydir'))\n"
    "    os.symlink('small.txt', os.path.join(root, base, 'link-rel'))\n"
    "    os.symlink('nowhere/x', os.path.join(root, base, 'dangling'))\n"
    "    os.link(os.path.join(root, base, 'b512'),\n"
    "            os.path.join(root, base, 'hard'))\n"
    "put('long/' + 'x' * 150, b'long name')\n"
    "deep = '/'.join(['d' * 60] * 4) + '/' + 'f' * 80\n"
    "put(deep, b'deep path over 255 bytes')\n"
    "os.symlink('t' * 150, os.path.join(root, 'src', 'longlink'))\n"
    "with open(os.path.join(root, 'src', 'sparse.bin'), 'wb') as f:\n"
    "    f.seek(1 << 20); f.write(b'a' * 5000)\n"
    "    f.seek(3 << 20); f.write(b'b' * 10)\n"
    "    f.truncate(4 << 20)\n"
    "def py(name, fmt, base):\n"
    "    with tarfile.open(os.path.join(root, name), 'w', format=fmt) as t:\n"
    "        for n in sorted(os.listdir(os.path.join(root, base))):\n"
    "            t.add(os.path.join(root, base, n), arcname=n)\n"
    "py('py-gnu.tar', tarfile.GNU_FORMAT, 'src')\n"
    "py('py-pax.tar', tarfile.PAX_FORMAT, 'src')\n"
    "py('py-ustar.tar', tarfile.USTAR_FORMAT, 'short')\n";

/* Shards made with GNU tar: name, options, tree. */
static const char *const gnu_tars[][3] = {
    {"gnu.tar", "--format=gnu -S", "src"},
    {"posix.tar", "--format=posix -S", "src"},
    {"posix-sp00.tar", "--format=posix -S --sparse-version=0.0", "src"},
    {"posix-sp01.tar", "--format=posix -S --sparse-version=0.1", "src"},
    {"posix-sp10.tar", "--format=posix -S --sparse-version=1.0", "src"},
    {"ustar.tar", "--format=ustar", "short"},
};
static const char *const py_tars[][2] = {
    {"py-gnu.tar", "src"}, {"py-pax.tar", "src"}, {"py-ustar.tar", "short"}};

static int make_shards(void)
{
	char path[PATH_MAX + 16];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/gen.py", tmp);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(gen_py, f);
	fclose(f);
	rc = sh("python3 '%s/gen.py' '%s'", tmp, tmp);
	for (size_t i = 0; !rc && i < sizeof(gnu_tars) / sizeof(*gnu_tars); i++)
		rc = sh("tar -cf '%s/%s' %s -C '%s/%s' .", tmp, gnu_tars[i][0],
			gnu_tars[i][1], tmp, gnu_tars[i][2]);
	return rc;
}

/* Size and ETag of KEY (the ETag in ETAG, ETAGLEN bytes). */
static uint64_t head(const char *key, char *etag, size_t etaglen)
{
	struct store_entry e = {0};
	uint64_t size = 0;

	CHECK_INT(st->ops->head(st, key, &e, NULL, 0), 0);
	size = e.size;
	snprintf(etag, etaglen, "%s", e.etag ? e.etag : "");
	store_entry_release(&e);
	return size;
}

static int scan(const char *key, struct buf *out, struct shard_scan_result *res,
		char *msg, size_t msglen)
{
	char etag[256];
	uint64_t size = head(key, etag, sizeof(etag));

	buf_init(out, 1u << 30);
	return shard_scan(st, key, size, etag, out, res, msg, msglen);
}

/* ---- comparing with tar -tv ------------------------------------------ */

struct tv {
	char type; /* '-', 'd', 'l', 'h' */
	uint64_t size;
	char path[4096], link[4096];
};

/* "./a/b/" -> "a/b" */
static void norm(char *p)
{
	size_t n;

	while (p[0] == '.' && p[1] == '/')
		memmove(p, p + 2, strlen(p + 2) + 1);
	if (strcmp(p, ".") == 0)
		p[0] = '\0';
	n = strlen(p);
	while (n && p[n - 1] == '/')
		p[--n] = '\0';
}

/* One `tar -tv --full-time` line into T: 0, or -1 when unparseable. */
static int parse_tv(char *line, struct tv *t)
{
	char perms[16], owner[64], date[32], time_[64];
	int n = 0;
	char *rest, *sep;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "%15s %63s %" SCNu64 " %31s %63s %n", perms, owner,
		   &t->size, date, time_, &n) != 5 ||
	    !n)
		return -1;
	rest = line + n;
	t->type = perms[0];
	t->link[0] = '\0';
	sep = t->type == 'l'   ? strstr(rest, " -> ")
	      : t->type == 'h' ? strstr(rest, " link to ")
			       : NULL;
	if (sep) {
		snprintf(t->link, sizeof(t->link), "%s",
			 sep + (t->type == 'l' ? 4 : 9));
		*sep = '\0';
	}
	snprintf(t->path, sizeof(t->path), "%s", rest);
	norm(t->path);
	if (t->type == 'h')
		norm(t->link);
	return 0;
}

/* Reads LEN bytes at OFF of FILE into a new buffer (NULL on error). */
static char *read_at(const char *file, uint64_t off, size_t len)
{
	int fd = open(file, O_RDONLY);
	char *b = malloc(len ? len : 1);

	if (fd < 0 || !b || pread(fd, b, len, (off_t)off) != (ssize_t)len) {
		free(b);
		b = NULL;
	}
	if (fd >= 0)
		close(fd);
	return b;
}

/* The member's bytes, from the shard (segments for a sparse one). */
static char *member_bytes(struct dsidx *x, uint32_t i,
			  const struct dsidx_member_view *v, const char *tar)
{
	uint32_t first, n;
	char *b;

	if (!v->sparse)
		return read_at(tar, v->offset, (size_t)v->size);
	b = calloc(1, (size_t)v->size + 1);
	if (!b || dsidx_member_segments(x, i, &first, &n))
		return b;
	for (uint32_t k = first; k < first + n; k++) {
		struct dsidx_segment g;
		char *d;

		dsidx_segment(x, k, &g);
		d = read_at(tar, g.archive_offset, (size_t)g.length);
		if (d)
			memcpy(b + g.offset, d, (size_t)g.length);
		free(d);
	}
	return b;
}

/* Member TV (a regular file at ref R) against the source tree SRC. */
static void check_bytes(struct dsidx *x, uint32_t i, const char *tar,
			const char *src, const struct tv *t, uint64_t *bad)
{
	struct dsidx_member_view v;
	char path[PATH_MAX + sizeof(t->path) + 64];
	char *got, *want;

	dsidx_member(x, i, &v);
	snprintf(path, sizeof(path), "%s/%s/%s", tmp, src,
		 t->type == 'h' ? t->link : t->path);
	got = member_bytes(x, i, &v, tar);
	want = read_at(path, 0, (size_t)v.size);
	if (!got || !want || memcmp(got, want, (size_t)v.size)) {
		fprintf(stderr, "  %s: bytes of %s differ\n", tar, t->path);
		(*bad)++;
	}
	free(got);
	free(want);
}

/* One tar -tv entry against the index. */
static void check_entry(struct dsidx *x, const char *tar, const char *src,
			const struct tv *t, uint64_t *bad)
{
	struct dsidx_member_view v, tv;
	struct dsidx_ref r, tr;
	bool ok;

	if (dsidx_lookup_path(x, t->path, strlen(t->path), &r)) {
		fprintf(stderr, "  %s: %s missing\n", tar, t->path);
		(*bad)++;
		return;
	}
	if (t->type == 'd') {
		ok = r.kind == DSIDX_KIND_DIR;
	} else if (r.kind != DSIDX_KIND_MEMBER) {
		ok = false;
	} else if (dsidx_member(x, r.idx, &v), t->type == 'l') {
		ok = (v.mode & S_IFMT) == S_IFLNK &&
		     v.link_len == strlen(t->link) &&
		     !memcmp(v.link, t->link, v.link_len);
	} else if (t->type == 'h') {
		ok = (v.mode & S_IFMT) == S_IFREG &&
		     !dsidx_lookup_path(x, t->link, strlen(t->link), &tr) &&
		     !dsidx_member(x, tr.idx, &tv) && tv.offset == v.offset &&
		     tv.size == v.size && tv.sparse == v.sparse;
		if (ok)
			check_bytes(x, r.idx, tar, src, t, bad);
	} else {
		ok = t->type == '-' && (v.mode & S_IFMT) == S_IFREG &&
		     v.size == t->size;
		if (ok)
			check_bytes(x, r.idx, tar, src, t, bad);
	}
	if (!ok) {
		fprintf(stderr, "  %s: %c %s differs\n", tar, t->type, t->path);
		(*bad)++;
	}
}

/* The index of KEY lists what tar -tv lists, and the bytes match SRC. */
static void compare_with_tar(const char *key, const char *src)
{
	char cmd[PATH_MAX + 256], line[9000], msg[256] = "";
	struct shard_scan_result res;
	struct dsidx *x = NULL;
	struct buf out;
	uint64_t entries = 0, bad = 0, root = 0;
	FILE *p;

	CHECK_INT(scan(key, &out, &res, msg, sizeof(msg)), 0);
	CHECK(!res.damaged);
	if (res.damaged)
		fprintf(stderr, "%s: %s\n", key, res.damage);
	CHECK_INT(dsidx_open(out.data, out.len, &x, msg, sizeof(msg)), 0);
	snprintf(cmd, sizeof(cmd),
		 "LC_ALL=C.UTF-8 tar -tvf '%s/%s' --numeric-owner "
		 "--quoting-style=literal --full-time",
		 tmp, key);
	p = popen(cmd, "r");
	while (x && p && fgets(line, sizeof(line), p)) {
		struct tv t;
		char tar[PATH_MAX + 64];

		snprintf(tar, sizeof(tar), "%s/%s", tmp, key);
		if (parse_tv(line, &t)) {
			bad++;
			continue;
		}
		if (t.path[0] == '\0') {
			root++; /* "./": the root, a member of the scan */
			continue;
		}
		entries++;
		check_entry(x, tar, src, &t, &bad);
	}
	CHECK(p && pclose(p) == 0);
	CHECK_INT(bad, 0);
	CHECK(entries > 300);
	if (x) {
		/* nothing more than tar lists: every dir and member */
		CHECK_INT(dsidx_info(x)->ndirs - 1 + dsidx_info(x)->nmembers,
			  entries);
		CHECK_INT(res.members, entries + root);
	}
	if (getenv("VERBOSE"))
		printf("%s: %" PRIu64 " members, %" PRIu64 " GETs, %" PRIu64
		       " bytes fetched\n",
		       key, res.members, res.gets, res.bytes_fetched);
	/* a few large windows, not one GET per member */
	CHECK(res.gets >= 1 && res.gets <= 12);
	if (res.gets > 12)
		fprintf(stderr, "%s: %" PRIu64 " GETs\n", key, res.gets);
	dsidx_free(x);
	buf_release(&out);
}

static void test_formats(void)
{
	for (size_t i = 0; i < sizeof(gnu_tars) / sizeof(*gnu_tars); i++)
		compare_with_tar(gnu_tars[i][0], gnu_tars[i][2]);
	for (size_t i = 0; i < sizeof(py_tars) / sizeof(*py_tars); i++)
		compare_with_tar(py_tars[i][0], py_tars[i][1]);
}

/* The sparse member of the GNU shards is sparse in the index. */
static void test_sparse_member(void)
{
	static const char *const keys[] = {"gnu.tar", "posix-sp00.tar",
					   "posix-sp01.tar", "posix-sp10.tar"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		struct shard_scan_result res;
		struct dsidx_member_view v;
		struct dsidx_ref r;
		struct dsidx *x = NULL;
		struct buf out;
		uint32_t first, n = 0;

		CHECK_INT(scan(keys[i], &out, &res, NULL, 0), 0);
		CHECK_INT(dsidx_open(out.data, out.len, &x, NULL, 0), 0);
		if (!x) {
			buf_release(&out);
			continue;
		}
		CHECK_INT(dsidx_lookup_path(x, "sparse.bin", 10, &r), 0);
		CHECK_INT(dsidx_member(x, r.idx, &v), 0);
		CHECK(v.sparse && v.size == 4u << 20);
		CHECK_INT(dsidx_member_segments(x, r.idx, &first, &n), 0);
		CHECK(n >= 2 && n <= 3); /* GNU tar may add a last empty one */
		CHECK_INT(dsidx_info(x)->nsparse, 1);
		CHECK_INT(dsidx_info(x)->minor, 1);
		dsidx_free(x);
		buf_release(&out);
	}
}

/* ---- a shard over 4 GiB ------------------------------------------------ */

static void test_huge(void)
{
	struct shard_scan_result res;
	struct dsidx_member_view v;
	struct dsidx_ref r;
	struct dsidx *x = NULL;
	struct buf out;
	char msg[256] = "";
	int rc;

	rc = sh("python3 - '%s/huge.tar' <<'EOF'\n"
		"import sys, tarfile\n"
		"big = tarfile.TarInfo('big.bin'); big.size = 4608 << 20\n"
		"small = tarfile.TarInfo('after.txt'); small.size = 5\n"
		"with open(sys.argv[1], 'wb') as f:\n"
		"    f.write(big.tobuf(tarfile.GNU_FORMAT))\n"
		"    f.seek(512 + big.size)\n"
		"    f.write(small.tobuf(tarfile.GNU_FORMAT))\n"
		"    f.write(b'hello' + bytes(507) + bytes(1024))\n"
		"EOF",
		tmp);
	CHECK_INT(rc, 0);
	CHECK_INT(scan("huge.tar", &out, &res, msg, sizeof(msg)), 0);
	CHECK(!res.damaged);
	CHECK_INT(res.members, 2);
	CHECK(res.gets <= 3);
	CHECK(res.bytes_fetched <= 2u << 20);
	CHECK_INT(dsidx_open(out.data, out.len, &x, NULL, 0), 0);
	if (x) {
		CHECK_INT(dsidx_lookup_path(x, "big.bin", 7, &r), 0);
		dsidx_member(x, r.idx, &v);
		CHECK(v.offset == 512 && v.size == 4608ull << 20);
		CHECK_INT(dsidx_lookup_path(x, "after.txt", 9, &r), 0);
		dsidx_member(x, r.idx, &v);
		CHECK(v.offset == 1024 + (4608ull << 20) && v.size == 5);
	}
	dsidx_free(x);
	buf_release(&out);
}

/* ---- bad shards -------------------------------------------------------- */

/* A ustar header block for NAME (TYPE, SIZE) with a valid checksum. */
static void ustar(unsigned char *h, const char *name, char type, uint64_t size)
{
	unsigned sum = 0;

	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf((char *)h + 124, 12, "%011" PRIo64, size);
	memcpy(h + 136, "14000000000", 12);
	h[156] = (unsigned char)type;
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* Appends a member NAME of SIZE bytes (filled with 'x'). */
static void add(struct buf *b, const char *name, char type, uint64_t size)
{
	unsigned char h[512];
	size_t padded = (size_t)((size + 511) / 512 * 512);

	ustar(h, name, type, size);
	buf_append(b, h, 512);
	buf_reserve(b, padded);
	memset(b->data + b->len, 'x', (size_t)size);
	memset(b->data + b->len + size, 0, padded - (size_t)size);
	b->len += padded;
}

static void put(const char *key, const struct buf *b)
{
	CHECK_INT(st->ops->put(st, key, b->data, b->len, NULL, 0), 0);
}

/* Two good members ("a", "b"), then whatever the case adds. */
static void two_good(struct buf *b)
{
	buf_init(b, 64u << 20);
	add(b, "a", '0', 100);
	add(b, "b", '0', 600);
}

struct bad_case {
	const char *key;
	uint64_t kept;	    /* members before the damage */
	const char *damage; /* in res.damage, "" for not damaged */
	uint64_t skipped;
};

static const struct bad_case bad_cases[] = {
    {"truncated.tar", 2, "offset", 0}, {"badsum.tar", 2, "checksum", 0},
    {"sizepast.tar", 2, "offset", 0},  {"paxlen.tar", 2, "offset", 0},
    {"chain.tar", 2, "offset", 0},     {"empty-members.tar", 0, "", 0},
    {"zero-bytes.tar", 0, "", 0},      {"notatar.tar", 0, "offset 0", 0},
    {"unsafe.tar", 2, "", 3},
};

static void make_bad(void)
{
	unsigned char h[512];
	struct buf b;

	two_good(&b); /* cut in the middle of c's data */
	add(&b, "c", '0', 5000);
	b.len -= 3000;
	put("truncated.tar", &b);
	buf_release(&b);
	two_good(&b); /* c's header with a bad checksum */
	add(&b, "c", '0', 10);
	b.data[b.len - 1024 + 10] ^= 1;
	tarhdr_write_end(&b);
	put("badsum.tar", &b);
	buf_release(&b);
	two_good(&b); /* c says 1 GiB, the shard ends long before */
	ustar(h, "c", '0', 1u << 30);
	buf_append(&b, h, 512);
	tarhdr_write_end(&b);
	put("sizepast.tar", &b);
	buf_release(&b);
	two_good(&b); /* a pax record whose length is wrong */
	ustar(h, "././@PaxHeader", 'x', 512);
	buf_append(&b, h, 512);
	buf_reserve(&b, 512);
	memset(b.data + b.len, 0, 512);
	memcpy(b.data + b.len, "99 path=c\n", 10);
	b.len += 512;
	add(&b, "c", '0', 1);
	tarhdr_write_end(&b);
	put("paxlen.tar", &b);
	buf_release(&b);
	two_good(&b); /* GNU long names, one after another, forever */
	for (int i = 0; i < 100; i++)
		add(&b, "././@LongLink", 'L', 10);
	tarhdr_write_end(&b);
	put("chain.tar", &b);
	buf_release(&b);
	buf_init(&b, 1 << 20);
	tarhdr_write_end(&b);
	put("empty-members.tar", &b);
	b.len = 0;
	put("zero-bytes.tar", &b);
	for (int i = 0; i < 4096; i++)
		buf_printf(&b, "this is not a tar archive, line %d\n", i);
	put("notatar.tar", &b);
	buf_release(&b);
	two_good(&b); /* unsafe names and a fifo are skipped */
	add(&b, "../evil", '0', 1);
	add(&b, "/etc/passwd", '0', 1);
	add(&b, "fifo", '6', 0);
	tarhdr_write_end(&b);
	put("unsafe.tar", &b);
	buf_release(&b);
}

static void test_bad(void)
{
	make_bad();
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(*bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct shard_scan_result res;
		struct dsidx *x = NULL;
		struct buf out;
		char msg[256] = "";
		int rc = scan(c->key, &out, &res, msg, sizeof(msg));

		CHECK_INT(rc, 0);
		CHECK_INT(res.damaged, c->damage[0] != '\0');
		CHECK(strstr(res.damage, c->damage) != NULL);
		CHECK_INT(res.members, c->kept);
		CHECK_INT(res.skipped, c->skipped);
		CHECK(res.bytes_fetched <= 3u << 20);
		CHECK_INT(dsidx_open(out.data, out.len, &x, NULL, 0), 0);
		if (x)
			CHECK_INT(dsidx_info(x)->nmembers, c->kept);
		if (rc || res.members != c->kept ||
		    res.damaged != (c->damage[0] != '\0'))
			fprintf(
			    stderr,
			    "  %s: rc %d damaged %d (%s) kept %" PRIu64 "\n",
			    c->key, rc, res.damaged, res.damage, res.members);
		dsidx_free(x);
		buf_release(&out);
	}
	/* an empty object costs no GET */
	{
		struct shard_scan_result res;
		struct buf out;

		scan("zero-bytes.tar", &out, &res, NULL, 0);
		CHECK_INT(res.gets, 0);
		buf_release(&out);
	}
}

/* A GET that fails: a negative errno and a message, OUT unchanged. */
static void test_get_errors(void)
{
	struct shard_scan_result res;
	struct buf out;
	char msg[256] = "";
	char etag[256];
	uint64_t size = head("gnu.tar", etag, sizeof(etag));

	buf_init(&out, 1 << 20);
	CHECK_INT(shard_scan(st, "gnu.tar", size, "\"stale\"", &out, &res, msg,
			     sizeof(msg)),
		  -ESTALE);
	CHECK(strstr(msg, "gnu.tar") != NULL);
	CHECK_INT(out.len, 0);
	CHECK_INT(shard_scan(st, "missing.tar", 4096, NULL, &out, &res, msg,
			     sizeof(msg)),
		  -ENOENT);
	CHECK(strstr(msg, "missing.tar") != NULL);
	/* the object is shorter than the size given */
	CHECK(shard_scan(st, "gnu.tar", size + (4u << 20), etag, &out, &res,
			 msg, sizeof(msg)) < 0);
	CHECK_INT(out.len, 0);
	buf_release(&out);
}

/* ---- the cache ----------------------------------------------------------- */

static int cache_files(const char *dir, char *name, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(name, cap, "%s/%s", dir, e->d_name);
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

static int cached(struct shardcache *c, const char *key, const char *etag,
		  struct shard_scan_result *res, bool *hit)
{
	char e[256];
	uint64_t size = head(key, e, sizeof(e));
	struct buf out;
	int rc;

	buf_init(&out, 1u << 30);
	rc = shard_index_cached(st, c, key, size, etag ? etag : e, &out, res,
				hit, NULL, 0);
	if (rc == 0) {
		struct dsidx *x = NULL;

		CHECK_INT(dsidx_open(out.data, out.len, &x, NULL, 0), 0);
		dsidx_free(x);
	}
	buf_release(&out);
	return rc;
}

static void test_cache(void)
{
	char dir[PATH_MAX + 32], entry[PATH_MAX + 512], etag[256];
	struct shard_scan_result res;
	struct shardcache *c = NULL;
	struct stat sb;
	bool hit = true;
	uint64_t members;
	struct buf b;

	snprintf(dir, sizeof(dir), "%s/cache/a/b", tmp);
	CHECK_INT(shardcache_open(dir, &c, NULL, 0), 0);
	CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
	CHECK_STR(shardcache_dir(c), dir);
	CHECK_INT(cached(c, "posix.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.gets > 0);
	members = res.members - 1; /* the root */
	CHECK_INT(cache_files(dir, entry, sizeof(entry)), 1);
	CHECK(stat(entry, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK_INT(cached(c, "posix.tar", NULL, &res, &hit), 0);
	CHECK(hit && res.gets == 0 && res.members == members);
	/* a corrupt entry: rescanned, rewritten */
	sh("printf 'X' | dd of='%s' bs=1 seek=200 conv=notrunc 2>/dev/null",
	   entry);
	CHECK_INT(cached(c, "posix.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.gets > 0);
	CHECK_INT(cached(c, "posix.tar", NULL, &res, &hit), 0);
	CHECK(hit);
	/* the shard changes: a new ETag misses */
	buf_init(&b, 1 << 20);
	two_good(&b);
	tarhdr_write_end(&b);
	put("changing.tar", &b);
	CHECK_INT(cached(c, "changing.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.members == 2);
	head("changing.tar", etag, sizeof(etag));
	b.len -= 1024; /* the end marker */
	add(&b, "c", '0', 1);
	tarhdr_write_end(&b);
	sleep(1); /* the local ETag has the mtime in it */
	put("changing.tar", &b);
	CHECK_INT(cached(c, "changing.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.members == 3);
	CHECK_INT(cached(c, "changing.tar", NULL, &res, &hit), 0);
	CHECK(hit && res.members == 3);
	buf_release(&b);
	/* damaged shards and shards without an ETag are not stored */
	CHECK_INT(cached(c, "badsum.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.damaged);
	CHECK_INT(cached(c, "badsum.tar", NULL, &res, &hit), 0);
	CHECK(!hit && res.damaged);
	CHECK_INT(cached(c, "ustar.tar", "", &res, &hit), 0);
	CHECK_INT(cached(c, "ustar.tar", "", &res, &hit), 0);
	CHECK(!hit);
	/* no cache at all */
	CHECK_INT(cached(NULL, "ustar.tar", NULL, &res, &hit), 0);
	CHECK(!hit);
	shardcache_close(c);
	shardcache_close(NULL);
	/* the default directory */
	snprintf(dir, sizeof(dir), "%s/xdg", tmp);
	setenv("XDG_CACHE_HOME", dir, 1);
	CHECK_INT(shardcache_open(NULL, &c, NULL, 0), 0);
	snprintf(dir, sizeof(dir), "%s/xdg/shardfs/shards", tmp);
	if (c)
		CHECK_STR(shardcache_dir(c), dir);
	shardcache_close(c);
	unsetenv("XDG_CACHE_HOME");
	snprintf(dir, sizeof(dir), "%s/home", tmp);
	setenv("HOME", dir, 1);
	CHECK_INT(shardcache_open(NULL, &c, NULL, 0), 0);
	snprintf(dir, sizeof(dir), "%s/home/.cache/shardfs/shards", tmp);
	if (c)
		CHECK_STR(shardcache_dir(c), dir);
	shardcache_close(c);
	/* a file in the way */
	snprintf(dir, sizeof(dir), "%s/gen.py/x", tmp);
	CHECK(shardcache_open(dir, &c, entry, sizeof(entry)) < 0);
	CHECK(strstr(entry, "gen.py") != NULL);
}

int main(void)
{
	char msg[256];

	snprintf(tmp, sizeof(tmp), "%s/shardfs-test-shard.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp) || make_shards() != 0) {
		fprintf(stderr, "cannot make the test shards in %s\n", tmp);
		return 1;
	}
	if (store_local_new(tmp, &st, msg, sizeof(msg))) {
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	log_set_level(LOG_LVL_ERROR);
	test_formats();
	test_sparse_member();
	test_huge();
	test_bad();
	test_get_errors();
	test_cache();
	store_free(st);
	if (!getenv("KEEP"))
		sh("rm -rf '%s'", tmp);
	return check_summary("test_shard");
}
