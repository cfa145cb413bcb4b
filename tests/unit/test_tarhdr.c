// SPDX-License-Identifier: MIT
/*
 * tarhdr: the scanner against archives written by GNU tar (gnu, posix,
 * ustar, v7, the three pax sparse versions and old GNU sparse) and by
 * Python's tarfile (GNU, PAX, USTAR), each listed exactly as `tar -tv`
 * lists it and with every data offset checked against the source files,
 * driven with one whole window and with tiny ones; a table of damaged and
 * odd archives built here; the writer, round-tripped through the scanner,
 * GNU tar and tarfile. Fixtures are made at run time in a mkdtemp
 * directory, which is removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "tarhdr.h"

static char tmp[64]; /* the test's directory */

/* "ünïcödé-名前.txt" */
#define UNAME                                                                  \
	"\xc3\xbc"                                                             \
	"n\xc3\xaf"                                                            \
	"c\xc3\xb6"                                                            \
	"d\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d.txt"

/* ---- small helpers ---- */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		perror("malloc");
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

static unsigned char *slurp_at(int dirfd, const char *path, size_t *len)
{
	struct stat st;
	unsigned char *p;
	int fd = openat(dirfd, path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = xmalloc((size_t)st.st_size);
	*len = (size_t)st.st_size;
	if (pread(fd, p, *len, 0) != (ssize_t)*len) {
		free(p);
		p = NULL;
	}
	close(fd);
	return p;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	return slurp_at(AT_FDCWD, path, len);
}

static void spew(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

/* Deterministic contents: byte i of a file depends on its size and i. */
static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

/* Independent of tarhdr_normalize: drop "", "." components. */
static void tnorm(const char *in, char *out)
{
	size_t o = 0;

	while (*in) {
		size_t n = strcspn(in, "/");

		if (n && !(n == 1 && in[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, in, n);
			o += n;
		}
		in += n;
		while (*in == '/')
			in++;
	}
	out[o] = '\0';
}

/* ---- driving the scanner ---- */

struct ent {
	char *path, *link;
	enum tarhdr_type type;
	char typeflag;
	bool unsafe, is_sparse;
	const char *note;
	uint32_t mode;
	uint64_t uid, gid;
	int64_t mtime;
	uint32_t nsec;
	uint64_t size, hoff, doff, stored;
	struct tarhdr_sparse *sp;
	size_t nsp;
};

struct res {
	struct ent *v;
	size_t n;
	int rc; /* TARHDR_END, TARHDR_NEED (bytes beyond the image), < 0 */
	enum tarhdr_end end;
	char msg[256];
	uint64_t need_off;
	unsigned calls;
};

static void res_free(struct res *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].path);
		free(r->v[i].link);
		free(r->v[i].sp);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

static void ent_add(struct res *r, struct tarhdr_scan *s,
		    const struct tarhdr_entry *e)
{
	struct ent *x;

	r->v = realloc(r->v, (r->n + 1) * sizeof(*r->v));
	if (!r->v)
		exit(2);
	x = &r->v[r->n++];
	memset(x, 0, sizeof(*x));
	x->path = tarhdr_scan_take_path(s);
	CHECK(x->path && x->path == e->path);
	if (e->link) {
		x->link = tarhdr_scan_take_link(s);
		CHECK(x->link == e->link);
	}
	x->sp = tarhdr_scan_take_sparse(s, &x->nsp);
	CHECK(x->sp == e->sparse && x->nsp == e->nsparse);
	x->type = e->type;
	x->typeflag = e->typeflag;
	x->unsafe = e->unsafe;
	x->is_sparse = e->is_sparse;
	x->note = e->note;
	x->mode = e->mode;
	x->uid = e->uid;
	x->gid = e->gid;
	x->mtime = e->mtime;
	x->nsec = e->mtime_nsec;
	x->size = e->size;
	x->hoff = e->header_offset;
	x->doff = e->data_offset;
	x->stored = e->stored_size;
}

/*
 * Scans IMG (LEN bytes of a shard of TAR_SIZE bytes) with windows of
 * WSIZE bytes (0: the whole image), each starting where the scanner asks.
 */
static void scan_image(const unsigned char *img, size_t len, uint64_t tar_size,
		       size_t wsize, const struct tarhdr_limits *lim,
		       struct res *r)
{
	struct tarhdr_scan s;
	uint64_t woff = 0, noff = 0, nlen = 0;
	size_t wlen = wsize && wsize < len ? wsize : len;
	unsigned guard = (unsigned)(len / 512) * 4 + 64;

	memset(r, 0, sizeof(*r));
	tarhdr_scan_init(&s, tar_size, lim);
	for (;;) {
		struct tarhdr_entry e;
		int rc = tarhdr_scan_next(&s, len ? img + woff : NULL, wlen,
					  woff, &e, &noff, &nlen);

		r->calls++;
		if (r->calls > guard) {
			r->rc = -9999;
			break;
		}
		if (rc == TARHDR_ENTRY) {
			ent_add(r, &s, &e);
			continue;
		}
		if (rc == TARHDR_NEED) {
			CHECK(nlen > 0 && noff + nlen <= tar_size);
			CHECK(!(noff >= woff && noff + nlen <= woff + wlen));
			if (noff + nlen > len) {
				r->rc = rc;
				r->need_off = noff;
				break;
			}
			woff = noff;
			wlen = wsize ? wsize : len;
			if (wlen < nlen)
				wlen = (size_t)nlen;
			if (wlen > len - woff)
				wlen = len - (size_t)woff;
			continue;
		}
		r->rc = rc;
		r->end = s.end;
		CHECK(rc != TARHDR_END || s.end != TARHDR_END_NONE);
		CHECK(rc >= 0 || (s.err_msg && *s.err_msg));
		if (rc < 0)
			snprintf(r->msg, sizeof(r->msg), "%s", s.err_msg);
		else if (s.end_note)
			snprintf(r->msg, sizeof(r->msg), "%s", s.end_note);
		/* sticky */
		CHECK_INT(tarhdr_scan_next(&s, NULL, 0, 0, &e, &noff, &nlen),
			  rc);
		break;
	}
	tarhdr_scan_release(&s);
}

static bool ent_same(const struct ent *a, const struct ent *b)
{
	if (strcmp(a->path, b->path) || !a->link != !b->link ||
	    (a->link && strcmp(a->link, b->link)) || a->type != b->type ||
	    a->size != b->size || a->hoff != b->hoff || a->doff != b->doff ||
	    a->stored != b->stored || a->mtime != b->mtime ||
	    a->nsec != b->nsec || a->uid != b->uid || a->mode != b->mode ||
	    a->unsafe != b->unsafe || a->nsp != b->nsp ||
	    a->is_sparse != b->is_sparse)
		return false;
	return a->nsp == 0 || !memcmp(a->sp, b->sp, a->nsp * sizeof(*a->sp));
}

/* Same result with whole, 512-byte and 1536-byte windows. */
static void scan_windows(const char *label, const unsigned char *img,
			 size_t len, uint64_t tar_size,
			 const struct tarhdr_limits *lim, struct res *r)
{
	static const size_t sizes[] = {512, 1536, 4096};

	scan_image(img, len, tar_size, 0, lim, r);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct res t;
		bool same;

		scan_image(img, len, tar_size, sizes[k], lim, &t);
		same = t.n == r->n && t.rc == r->rc && t.end == r->end &&
		       !strcmp(t.msg, r->msg) && t.need_off == r->need_off;
		for (size_t i = 0; same && i < t.n; i++)
			same = ent_same(&t.v[i], &r->v[i]);
		if (!same)
			fprintf(stderr, "%s: window %zu differs from whole\n",
				label, sizes[k]);
		CHECK(same);
		res_free(&t);
	}
}

/* ---- what GNU tar lists ---- */

struct lent {
	char type; /* first letter of the mode string */
	uint64_t size;
	char *name, *link;
};

static size_t tar_tv(const char *tarpath, struct lent **out)
{
	char cmd[1024], *line = NULL;
	size_t cap = 0, n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "tar --quoting-style=literal --numeric-owner -tvf '%s' "
		 "2>/dev/null",
		 tarpath);
	p = popen(cmd, "r");
	*out = NULL;
	while (p && getline(&line, &cap, p) > 0) {
		char perms[16], owner[64], size[64], date[32], hm[32], *sep;
		struct lent l = {0};
		int off = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%15s %63s %63s %31s %31s %n", perms, owner,
			   size, date, hm, &off) < 5 ||
		    !off) {
			fprintf(stderr, "unparsed tar -tv line: %s\n", line);
			CHECK(0);
			continue;
		}
		l.type = perms[0];
		l.size = (l.type == 'c' || l.type == 'b')
			     ? 0
			     : strtoull(size, NULL, 10);
		sep = l.type == 'l'   ? strstr(line + off, " -> ")
		      : l.type == 'h' ? strstr(line + off, " link to ")
				      : NULL;
		if (sep) {
			*sep = '\0';
			l.link = xstrdup(sep + (l.type == 'l' ? 4 : 9));
		}
		l.name = xstrdup(line + off);
		*out = realloc(*out, (n + 1) * sizeof(**out));
		(*out)[n++] = l;
	}
	free(line);
	if (p)
		pclose(p);
	return n;
}

static void lents_free(struct lent *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i].name);
		free(l[i].link);
	}
	free(l);
}

static char type_letter(enum tarhdr_type t)
{
	switch (t) {
	case TARHDR_REG:
		return '-';
	case TARHDR_DIR:
		return 'd';
	case TARHDR_SYMLINK:
		return 'l';
	case TARHDR_HARDLINK:
		return 'h';
	default:
		return '?';
	}
}

/* The scan lists what `tar -tv` lists: names, types, sizes, links. */
static void compare_tv(const char *label, const char *tarpath,
		       const struct res *r)
{
	struct lent *l;
	size_t n = tar_tv(tarpath, &l);
	char want[8192];

	if (n != r->n)
		fprintf(stderr, "%s: tar lists %zu members, scan %zu\n", label,
			n, r->n);
	CHECK_INT(r->n, n);
	for (size_t i = 0; i < n && i < r->n; i++) {
		const struct ent *e = &r->v[i];
		char t = type_letter(e->type);
		bool ok;

		tnorm(l[i].name, want);
		ok = !strcmp(want, e->path) && l[i].size == e->size &&
		     (t == l[i].type || (t == '?' && strchr("cbp", l[i].type)));
		if (l[i].type == 'l')
			ok = ok && e->link && !strcmp(e->link, l[i].link);
		if (l[i].type == 'h') {
			tnorm(l[i].link, want);
			ok = ok && e->link && !strcmp(e->link, want);
		}
		if (!ok)
			fprintf(stderr,
				"%s: member %zu: tar says %c %" PRIu64
				" '%s' -> '%s', scan says %c %" PRIu64
				" '%s' -> '%s'\n",
				label, i, l[i].type, l[i].size, l[i].name,
				l[i].link ? l[i].link : "", t, e->size, e->path,
				e->link ? e->link : "");
		CHECK(ok);
	}
	lents_free(l, n);
}

/* Every regular member's bytes equal the file of the same path in ROOT. */
static void verify_data(const char *label, const unsigned char *img, size_t len,
			const struct res *r, const char *root)
{
	int dfd = open(root, O_RDONLY | O_DIRECTORY);

	CHECK(dfd >= 0);
	for (size_t i = 0; i < r->n; i++) {
		const struct ent *e = &r->v[i];
		unsigned char *want, *got;
		size_t wlen = 0;
		bool ok;

		if (e->type != TARHDR_REG || e->unsafe)
			continue;
		want = slurp_at(dfd, e->path, &wlen);
		if (!want || wlen != e->size) {
			fprintf(stderr, "%s: %s: no source or wrong size\n",
				label, e->path);
			CHECK(0);
			free(want);
			continue;
		}
		got = xmalloc(wlen);
		if (!e->is_sparse) {
			ok = e->doff + e->size <= len;
			if (ok)
				memcpy(got, img + e->doff, wlen);
		} else {
			ok = true;
			memset(got, 0, wlen);
			for (size_t k = 0; k < e->nsp; k++) {
				const struct tarhdr_sparse *sp = &e->sp[k];

				ok = ok &&
				     sp->archive_offset + sp->length <= len;
				if (ok)
					memcpy(got + sp->offset,
					       img + sp->archive_offset,
					       sp->length);
			}
		}
		ok = ok && !memcmp(got, want, wlen);
		if (!ok)
			fprintf(stderr, "%s: %s: data differs\n", label,
				e->path);
		CHECK(ok);
		free(got);
		free(want);
	}
	close(dfd);
}

/* ---- fixtures from GNU tar and Python ---- */

static char name150[151], dir90[91], file90[91], dir200[201], file120[121],
    target150[151];

static void mkfile(const char *rel, size_t size, unsigned seed)
{
	char path[1024];
	unsigned char *p = xmalloc(size);

	pattern(p, size, seed);
	snprintf(path, sizeof(path), "%s/src/%s", tmp, rel);
	spew(path, p, size);
	free(p);
}

static void mkdirs(const char *rel)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/src/%s", tmp, rel);
	CHECK(mkdir(path, 0755) == 0);
}

/* A 2 MiB + 3 file with 60 islands of data (60+ sparse segments). */
static void mk_sparse(void)
{
	char path[256];
	unsigned char blk[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/src/sparse", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	for (int i = 0; i < 60; i++) {
		pattern(blk, sizeof(blk), (unsigned)i + 100);
		CHECK(pwrite(fd, blk, sizeof(blk), (off_t)i * 32768 + 8192) ==
		      (ssize_t)sizeof(blk));
	}
	CHECK(pwrite(fd, "END", 3, 2 << 20) == 3);
	close(fd);
}

static void mk_src(void)
{
	char a[512], b[1100];

	memset(name150, 'L', 150);
	memset(dir90, 'm', 90);
	memset(file90, 'f', 90);
	memset(dir200, 'D', 200);
	memset(file120, 'F', 120);
	memset(target150, 'T', 150);
	snprintf(a, sizeof(a), "%s/src", tmp);
	CHECK(mkdir(a, 0755) == 0);
	mkfile("small", 5, 1);
	mkfile("empty", 0, 2);
	mkfile("b512", 512, 3);
	mkfile("b1024", 1024, 4);
	mkfile("odd", 1000, 5);
	mkdirs("dir");
	mkfile("dir/inner", 300, 6);
	mkdirs("emptydir");
	mkdirs("mid");
	snprintf(a, sizeof(a), "mid/%s", dir90);
	mkdirs(a);
	snprintf(b, sizeof(b), "%s/%s", a, file90);
	mkfile(b, 77, 7);
	mkdirs("deep");
	snprintf(a, sizeof(a), "deep/%s", dir200);
	mkdirs(a);
	snprintf(b, sizeof(b), "%s/%s", a, file120);
	mkfile(b, 600, 8);
	mkfile(name150, 10, 9);
	mkfile(UNAME, 33, 10);
	snprintf(a, sizeof(a), "%s/src/sl", tmp);
	CHECK(symlink("small", a) == 0);
	snprintf(a, sizeof(a), "%s/src/longsl", tmp);
	CHECK(symlink(target150, a) == 0);
	snprintf(a, sizeof(a), "%s/src/small", tmp);
	snprintf(b, sizeof(b), "%s/src/hl", tmp);
	CHECK(link(a, b) == 0);
	mk_sparse();
}

/* Python writes py_gnu.tar, py_pax.tar, py_ustar.tar, py_odd.tar. */
static const char py_fixtures[] =
    "import io, os, sys, tarfile\n"
    "T = sys.argv[1]; S = T + '/src'\n"
    "def nosparse(ti):\n"
    "    return None if ti.name.endswith('sparse') else ti\n"
    "def add(tf, src, arc, **kw):\n"
    "    ti = tf.gettarinfo(S + '/' + src, arcname=arc)\n"
    "    for k, v in kw.items(): setattr(ti, k, v)\n"
    "    with open(S + '/' + src, 'rb') as f: tf.addfile(ti, f)\n"
    "with tarfile.open(T + '/py_gnu.tar', 'w', format=tarfile.GNU_FORMAT) as "
    "tf:\n"
    "    tf.add(S, arcname='.', filter=nosparse)\n"
    "    add(tf, 'odd', './odd', mtime=-1000000, uid=3000000000, gid=2**31)\n"
    "    add(tf, 'dir/inner', 'dir//inner')\n"
    "with tarfile.open(T + '/py_pax.tar', 'w', format=tarfile.PAX_FORMAT,\n"
    "                  pax_headers={'comment': 'shardfs'}) as tf:\n"
    "    tf.add(S, arcname='.', filter=nosparse)\n"
    "    add(tf, 'odd', 'odd', mtime=1700000000.5, uid=3000000000)\n"
    "    add(tf, 'dir/inner', './dir//inner')\n"
    "with tarfile.open(T + '/py_ustar.tar', 'w', format=tarfile.USTAR_FORMAT) "
    "as tf:\n"
    "    for n in ['small', 'empty', 'b512', 'b1024', 'odd', 'dir', "
    "'emptydir',\n"
    "              'mid', 'sl', 'hl']:\n"
    "        tf.add(S + '/' + n, arcname=n)\n"
    "with tarfile.open(T + '/py_odd.tar', 'w', format=tarfile.PAX_FORMAT) as "
    "tf:\n"
    "    ti = tarfile.TarInfo('dev/null0'); ti.type = tarfile.CHRTYPE\n"
    "    ti.devmajor = 1; ti.devminor = 3; tf.addfile(ti)\n"
    "    ti = tarfile.TarInfo('fifo0'); ti.type = tarfile.FIFOTYPE; "
    "tf.addfile(ti)\n"
    "    for n in ['/abs/small', '../evil', 'ok/../../evil2', './small', "
    "'.']:\n"
    "        ti = tarfile.TarInfo(n)\n"
    "        if n == '.': ti.type = tarfile.DIRTYPE\n"
    "        else: ti.size = 5\n"
    "        tf.addfile(ti, io.BytesIO(b'\\x07\\x8a\\x0d\\x90\\x13'))\n"
    "    ti = tarfile.TarInfo('olddir/'); ti.type = tarfile.AREGTYPE; "
    "tf.addfile(ti)\n";

struct fixture {
	const char *file;
	const char *make; /* shell command, run in tmp; NULL: Python made it */
	const char *root; /* where the members' sources are */
	size_t nsparse;	  /* sparse members in it */
};

static const struct fixture fixtures[] = {
    {"gnu.tar", "tar --format=gnu -S -cf gnu.tar -C src .", "src", 1},
    {"posix.tar", "tar --format=posix -S -cf posix.tar -C src .", "src", 1},
    {"ustar.tar",
     "tar --format=ustar -cf ustar.tar -C src small empty b512 b1024 odd "
     "dir emptydir mid sl hl " UNAME,
     "src", 0},
    {"v7.tar",
     "tar --format=v7 -cf v7.tar -C src small empty b512 b1024 "
     "odd dir sl hl",
     "src", 0},
    {"p00.tar",
     "tar --format=posix --sparse-version=0.0 -S -cf p00.tar -C src "
     "sparse small",
     "src", 1},
    {"p01.tar",
     "tar --format=posix --sparse-version=0.1 -S -cf p01.tar -C src "
     "./sparse small",
     "src", 1},
    {"py_gnu.tar", NULL, "src", 0},
    {"py_pax.tar", NULL, "src", 0},
    {"py_ustar.tar", NULL, "src", 0},
    {"py_odd.tar", NULL, "src", 0},
};

static bool make_fixtures(void)
{
	char path[256];

	mk_src();
	snprintf(path, sizeof(path), "%s/mk.py", tmp);
	spew(path, py_fixtures, strlen(py_fixtures));
	if (sh("cd '%s' && /usr/bin/python3 mk.py '%s'", tmp, tmp))
		return false;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		if (fixtures[i].make &&
		    sh("cd '%s' && %s 2>/dev/null", tmp, fixtures[i].make))
			return false;
	return true;
}

static size_t count_sparse(const struct res *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->v[i].is_sparse;
	return n;
}

static void test_fixtures(void)
{
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct fixture *f = &fixtures[i];
		char path[256], root[256];
		unsigned char *img;
		size_t len = 0;
		struct res r;

		snprintf(path, sizeof(path), "%s/%s", tmp, f->file);
		snprintf(root, sizeof(root), "%s/%s", tmp, f->root);
		img = slurp(path, &len);
		CHECK(img != NULL);
		if (!img)
			continue;
		scan_windows(f->file, img, len, len, NULL, &r);
		if (r.rc != TARHDR_END)
			fprintf(stderr, "%s: rc %d: %s\n", f->file, r.rc,
				r.msg);
		CHECK_INT(r.rc, TARHDR_END);
		CHECK_INT(r.end, TARHDR_END_MARKER);
		CHECK(r.n > 0);
		compare_tv(f->file, path, &r);
		verify_data(f->file, img, len, &r, root);
		CHECK_INT(count_sparse(&r), f->nsparse);
		res_free(&r);
		free(img);
	}
}

/* Details the listing does not show. */
static void test_fixture_details(void)
{
	char path[256];
	unsigned char *img;
	size_t len = 0, n_unsafe = 0, n_other = 0, n_neg = 0, n_frac = 0;
	struct res r;

	snprintf(path, sizeof(path), "%s/py_odd.tar", tmp);
	img = slurp(path, &len);
	scan_image(img, len, len, 0, NULL, &r);
	for (size_t i = 0; i < r.n; i++) {
		n_unsafe += r.v[i].unsafe;
		n_other += r.v[i].type == TARHDR_OTHER && r.v[i].note;
		if (!strcmp(r.v[i].path, "olddir"))
			CHECK_INT(r.v[i].type, TARHDR_DIR);
		if (!r.v[i].path[0])
			CHECK_INT(r.v[i].type, TARHDR_DIR);
	}
	CHECK_INT(n_unsafe, 3);
	CHECK_INT(n_other, 2);
	res_free(&r);
	free(img);

	snprintf(path, sizeof(path), "%s/py_gnu.tar", tmp);
	img = slurp(path, &len);
	scan_image(img, len, len, 0, NULL, &r);
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].mtime == -1000000 && r.v[i].uid == 3000000000u &&
		    r.v[i].gid == (1u << 31) && r.v[i].type == TARHDR_REG)
			n_neg++;
	CHECK_INT(n_neg, 1);
	res_free(&r);
	free(img);

	snprintf(path, sizeof(path), "%s/py_pax.tar", tmp);
	img = slurp(path, &len);
	scan_image(img, len, len, 0, NULL, &r);
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].mtime == 1700000000 && r.v[i].nsec == 500000000 &&
		    r.v[i].uid == 3000000000u && r.v[i].type == TARHDR_REG)
			n_frac++;
	CHECK_INT(n_frac, 1);
	res_free(&r);
	free(img);
}

/* A gzip of a tar; sparse maps over the limit. */
static void test_fixture_limits(void)
{
	char path[256];
	unsigned char *img;
	size_t len = 0, n_other;
	struct res r;
	struct tarhdr_limits lim = {.sparse_max = 10};

	/* A real gzip of a tar is not a tar. */
	snprintf(path, sizeof(path), "%s/v7.tar.gz", tmp);
	CHECK(sh("gzip -c '%s/v7.tar' > '%s'", tmp, path) == 0);
	img = slurp(path, &len);
	scan_windows("gzip", img, len, len, NULL, &r);
	CHECK(r.n == 0 && r.rc == -EBADMSG &&
	      strstr(r.msg, "not a tar archive"));
	res_free(&r);
	free(img);

	/* A map over the limit: that member is OTHER, the rest unchanged. */
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", tmp,
			 k ? "posix.tar" : "gnu.tar");
		img = slurp(path, &len);
		scan_windows(path, img, len, len, &lim, &r);
		CHECK_INT(r.rc, TARHDR_END);
		n_other = 0;
		for (size_t i = 0; i < r.n; i++)
			n_other += r.v[i].type == TARHDR_OTHER;
		CHECK_INT(n_other, 1);
		CHECK_INT(count_sparse(&r), 0);
		res_free(&r);
		free(img);
	}
}

/* ---- synthetic archives ---- */

static void th_sum(unsigned char *h)
{
	unsigned sum = 0;

	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

/* A ustar header (GNU magic when GNU). */
static unsigned char *th(struct buf *b, const char *name, char type,
			 uint64_t size, bool gnu)
{
	unsigned char h[512] = {0};

	memcpy(h, name, strnlen(name, 100));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf((char *)h + 124, 12, "%011" PRIo64, size & 077777777777u);
	memcpy(h + 136, "14707044000", 11);
	h[156] = (unsigned char)type;
	memcpy(h + 257,
	       gnu ? "ustar  "
		   : "ustar\0"
		     "00",
	       8);
	th_sum(h);
	CHECK(buf_append(b, h, 512) == 0);
	return (unsigned char *)b->data + b->len - 512;
}

static void tdata(struct buf *b, const void *p, size_t n)
{
	CHECK(buf_append(b, p, n) == 0);
	CHECK(tarhdr_write_pad(n, b) == 0);
}

static void tfile(struct buf *b, const char *name, size_t n)
{
	unsigned char *p = xmalloc(n);

	pattern(p, n, (unsigned)n);
	th(b, name, '0', n, false);
	tdata(b, p, n);
	free(p);
}

/* A pax header with raw record text. */
static void tpax(struct buf *b, char type, const char *recs)
{
	th(b, "PaxHeaders/x", type, strlen(recs), false);
	tdata(b, recs, strlen(recs));
}

/* A pax header from "key=value" lines, with the lengths computed. */
static void tpaxkv(struct buf *b, char type, const char *lines)
{
	struct buf recs;

	buf_init(&recs, 1 << 20);
	while (*lines) {
		size_t n = strcspn(lines, "\n"), base = n + 2, d = 1, len;

		while (snprintf(NULL, 0, "%zu", base + d) != (int)d)
			d++;
		len = base + d;
		CHECK(buf_printf(&recs, "%zu %.*s\n", len, (int)n, lines) == 0);
		lines += n + (lines[n] == '\n');
	}
	tpax(b, type, buf_str(&recs));
	buf_release(&recs);
}

static void tzero(struct buf *b, int blocks)
{
	static const unsigned char z[512];

	for (int i = 0; i < blocks; i++)
		CHECK(buf_append(b, z, 512) == 0);
}

static void three(struct buf *b)
{
	tfile(b, "one", 100);
	tfile(b, "two", 1000);
	tfile(b, "three", 10);
	tzero(b, 2);
}

static void mk_trunc_hdr(struct buf *b)
{
	three(b);
	b->len = 1024 + 100; /* cut inside "two"'s header */
}

static void mk_trunc_data(struct buf *b)
{
	three(b);
	b->len = 1024 + 512 + 700; /* cut inside "two"'s data */
}

static void mk_bad_sum(struct buf *b)
{
	three(b);
	b->data[1024 + 1536 + 1] ^= 1; /* "three"'s name */
}

static void mk_size_past(struct buf *b)
{
	tfile(b, "one", 10);
	th(b, "big", '0', 100000, false);
	tzero(b, 2);
}

static void mk_size_past_b256(struct buf *b)
{
	unsigned char *h = th(b, "big", '0', 0, true);

	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[135] = 0x10; /* 16 bytes, but nothing follows */
	th_sum(h);
}

static void mk_pax_badlen(struct buf *b)
{
	tpax(b, 'x', "99 path=abc\n");
	tfile(b, "f", 1);
	tzero(b, 2);
}

static void mk_pax_nolen(struct buf *b)
{
	tpax(b, 'x', "path=abcdefg\n");
	tfile(b, "f", 1);
}

static void mk_pax_noeq(struct buf *b)
{
	tpax(b, 'x', "12 pathabcd\n");
	tfile(b, "f", 1);
}

static void mk_pax_nonl(struct buf *b)
{
	tpax(b, 'x', "12 path=abcd");
	tfile(b, "f", 1);
}

static void mk_pax_past(struct buf *b)
{
	tpax(b, 'x', "12 path=abc\n30 path=abc\n");
	tfile(b, "f", 1);
}

static void mk_pax_badnum(struct buf *b)
{
	tpax(b, 'x', "12 size=1x3\n");
	tfile(b, "f", 1);
}

static void mk_pax_badtime(struct buf *b)
{
	tpax(b, 'x', "16 mtime=12.3.4\n");
	tfile(b, "f", 1);
}

static void mk_long_chain(struct buf *b)
{
	for (int i = 0; i < 20; i++) {
		th(b, "././@LongLink", 'L', 4, true);
		tdata(b, "abc", 4);
	}
	tfile(b, "f", 1);
	tzero(b, 2);
}

static void mk_x_zero(struct buf *b)
{
	tfile(b, "f", 1);
	tpax(b, 'x', "12 path=abc\n");
	tzero(b, 2);
}

static void mk_x_eof(struct buf *b)
{
	tfile(b, "f", 1);
	th(b, "././@LongLink", 'L', 4, true);
	tdata(b, "abc", 4);
}

static void mk_zeros2(struct buf *b)
{
	tzero(b, 2);
}

static void mk_zeros20(struct buf *b)
{
	tzero(b, 20);
}

static void mk_empty(struct buf *b)
{
	(void)b;
}

static void mk_random(struct buf *b)
{
	uint32_t x = 12345;

	for (int i = 0; i < 4096; i++) {
		unsigned char c;

		x = x * 1103515245 + 12345;
		c = (unsigned char)(x >> 16);
		CHECK(buf_append(b, &c, 1) == 0);
	}
}

static void mk_text(struct buf *b)
{
	for (int i = 0; i < 40; i++)
		CHECK(buf_printf(b, "line %d of a text file, not a tar\n", i) ==
		      0);
}

static void mk_gzip(struct buf *b)
{
	static const unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};

	CHECK(buf_append(b, gz, sizeof(gz)) == 0);
	mk_random(b);
}

static void mk_no_marker(struct buf *b)
{
	tfile(b, "a", 10);
	tfile(b, "b", 512);
}

static void mk_one_zero(struct buf *b)
{
	tfile(b, "a", 10);
	tzero(b, 1);
}

static void mk_lone_zero(struct buf *b)
{
	tfile(b, "a", 10);
	tzero(b, 1);
	tfile(b, "b", 10);
	tzero(b, 2);
}

static void mk_trailing_bytes(struct buf *b)
{
	tfile(b, "a", 10);
	CHECK(buf_append(b, "junk", 4) == 0);
}

static void mk_bad_octal(struct buf *b)
{
	unsigned char *h = th(b, "a", '0', 0, false);

	memcpy(h + 124, "0000000012x", 11);
	th_sum(h);
	tzero(b, 2);
}

static void mk_name_over(struct buf *b)
{
	char name[5001];

	memset(name, 'n', 5000);
	name[5000] = '\0';
	th(b, "././@LongLink", 'L', 5001, true);
	tdata(b, name, 5001);
	tfile(b, "f", 1);
}

static void mk_ext_over(struct buf *b)
{
	th(b, "PaxHeaders/x", 'x', 2u << 20, false);
}

static void mk_map_bad(struct buf *b)
{
	char map[1024] = "2\n10\nxx\n";

	tpaxkv(b, 'x',
	       "GNU.sparse.major=1\nGNU.sparse.minor=0\n"
	       "GNU.sparse.realsize=1000\n");
	th(b, "GNUSparseFile.0/s", '0', 1024, false);
	tdata(b, map, 1024);
	tzero(b, 2);
}

static void mk_map_past(struct buf *b)
{
	char map[513] = "999\n"; /* 1999 numbers due, 255 fit */

	for (int i = 0; i < 254; i++)
		memcpy(map + 4 + 2 * i, "0\n", 2);

	tpaxkv(b, 'x',
	       "GNU.sparse.major=1\nGNU.sparse.minor=0\n"
	       "GNU.sparse.realsize=1000\n");
	th(b, "GNUSparseFile.0/s", '0', 512, false);
	tdata(b, map, 512);
	tzero(b, 2);
}

static void mk_old_sparse_order(struct buf *b)
{
	unsigned char *h = th(b, "s", 'S', 20, true);

	memcpy(h + 386,
	       "00000001000\0"
	       "00000000010\0",
	       24);
	memcpy(h + 410,
	       "00000000000\0"
	       "00000000010\0",
	       24);
	memcpy(h + 483, "00000002000", 11);
	th_sum(h);
	tdata(b, "0123456789abcdefghij", 20);
	tzero(b, 2);
}

static void mk_sparse01_odd(struct buf *b)
{
	tpaxkv(b, 'x', "GNU.sparse.map=0,10,100\nGNU.sparse.size=1000\n");
	tfile(b, "s", 10);
}

struct bad {
	const char *name;
	void (*make)(struct buf *b);
	uint64_t extra;	     /* tar_size = image + extra */
	size_t entries;	     /* members returned before the result */
	int rc;		     /* final result */
	enum tarhdr_end end; /* for TARHDR_END */
	const char *msg;     /* substring of err_msg / end_note */
};

static const struct bad bads[] = {
    {"cut in a header", mk_trunc_hdr, 0, 1, -EBADMSG, 0,
     "truncated: header at offset 1024"},
    {"cut in data", mk_trunc_data, 0, 1, -EBADMSG, 0,
     "truncated: the data of the member at offset 1024"},
    {"bad checksum", mk_bad_sum, 0, 2, -EBADMSG, 0,
     "bad header checksum at offset 2560"},
    {"size past the end", mk_size_past, 0, 1, -EBADMSG, 0,
     "member at offset 1024 (100000 bytes) runs past"},
    {"base-256 size past the end", mk_size_past_b256, 0, 0, -EBADMSG, 0,
     "runs past the end"},
    {"pax bad length", mk_pax_badlen, 0, 0, -EBADMSG, 0,
     "record runs past the header data at offset 512"},
    {"pax no length", mk_pax_nolen, 0, 0, -EBADMSG, 0, "bad record length"},
    {"pax no '='", mk_pax_noeq, 0, 0, -EBADMSG, 0, "no key=value"},
    {"pax no newline", mk_pax_nonl, 0, 0, -EBADMSG, 0, "newline"},
    {"pax record past data", mk_pax_past, 0, 0, -EBADMSG, 0,
     "runs past the header data at offset 524"},
    {"pax bad number", mk_pax_badnum, 0, 0, -EBADMSG, 0, "malformed 'size'"},
    {"pax bad time", mk_pax_badtime, 0, 0, -EBADMSG, 0, "malformed 'mtime'"},
    {"endless long names", mk_long_chain, 0, 0, -E2BIG, 0,
     "more than 8 extended headers"},
    {"pax then zeros", mk_x_zero, 0, 1, -EBADMSG, 0,
     "followed by a zero block"},
    {"long name then eof", mk_x_eof, 0, 1, -EBADMSG, 0,
     "not followed by a member"},
    {"zero members", mk_zeros2, 0, 0, TARHDR_END, TARHDR_END_MARKER, ""},
    {"zero members, 10 KiB", mk_zeros20, 0, 0, TARHDR_END, TARHDR_END_MARKER,
     ""},
    {"empty file", mk_empty, 0, 0, TARHDR_END, TARHDR_END_NO_MARKER,
     "no end-of-archive marker"},
    {"random bytes", mk_random, 0, 0, -EBADMSG, 0, "not a tar archive"},
    {"text", mk_text, 0, 0, -EBADMSG, 0, "not a tar archive"},
    {"gzip", mk_gzip, 0, 0, -EBADMSG, 0, "not a tar archive"},
    {"no end marker", mk_no_marker, 0, 2, TARHDR_END, TARHDR_END_NO_MARKER,
     "no end-of-archive marker"},
    {"one zero block", mk_one_zero, 0, 1, TARHDR_END, TARHDR_END_ZERO_EOF, ""},
    {"lone zero block", mk_lone_zero, 0, 1, TARHDR_END, TARHDR_END_LONE_ZERO,
     "lone zero block at offset 1024"},
    {"trailing partial block", mk_trailing_bytes, 0, 1, -EBADMSG, 0,
     "truncated: header at offset 1024"},
    {"bad octal", mk_bad_octal, 0, 0, -EBADMSG, 0,
     "bad size field in the header at offset 0"},
    {"name over the limit", mk_name_over, 0, 0, -E2BIG, 0,
     "longer than 4096 bytes"},
    {"pax over the limit", mk_ext_over, 4u << 20, 0, -E2BIG, 0,
     "holds 2097152 bytes"},
    {"sparse map garbage", mk_map_bad, 0, 0, -EBADMSG, 0,
     "bad sparse map in the block at offset 1536"},
    {"sparse map past data", mk_map_past, 0, 0, -EBADMSG, 0,
     "runs past its data"},
    {"old sparse out of order", mk_old_sparse_order, 0, 0, -EBADMSG, 0,
     "bad sparse map"},
    {"pax 0.1 map odd count", mk_sparse01_odd, 0, 0, -EBADMSG, 0,
     "malformed 'GNU.sparse.map'"},
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *t = &bads[i];
		struct buf b;
		struct res r;
		bool ok;

		buf_init(&b, 64u << 20);
		t->make(&b);
		scan_windows(t->name, (const unsigned char *)b.data, b.len,
			     b.len + t->extra, NULL, &r);
		ok = r.n == t->entries && r.rc == t->rc &&
		     (t->rc != TARHDR_END || r.end == t->end) &&
		     strstr(r.msg, t->msg);
		if (!ok)
			fprintf(stderr,
				"bad input '%s': %zu entries, rc %d, end %d, "
				"'%s'\n",
				t->name, r.n, r.rc, r.end, r.msg);
		CHECK(ok);
		res_free(&r);
		buf_release(&b);
	}
}

/* ---- odd but valid headers ---- */

static void scan1(struct buf *b, uint64_t tar_size, struct res *r)
{
	scan_windows("synthetic", (const unsigned char *)b->data, b->len,
		     tar_size ? tar_size : b->len, NULL, r);
}

static void test_big_sizes(void)
{
	struct buf b;
	struct res r;
	unsigned char *h;
	const uint64_t big = 9000000000u;

	/* pax size over 8 GiB: only the headers are there. */
	buf_init(&b, 1 << 20);
	tpaxkv(&b, 'x', "size=9000000000\n");
	th(&b, "huge", '0', 0, false);
	scan1(&b, 1536 + big + 511 + 1024, &r);
	CHECK_INT(r.n, 1);
	CHECK(r.n == 1 && r.v[0].size == big && r.v[0].doff == 1536 &&
	      r.v[0].hoff == 0 && r.v[0].stored == big);
	CHECK_INT(r.rc, TARHDR_NEED);
	CHECK_INT(r.need_off, 1536 + (big + 511) / 512 * 512);
	res_free(&r);
	buf_release(&b);

	/* base-256 size and negative base-256 mtime, GNU header. */
	buf_init(&b, 1 << 20);
	h = th(&b, "huge", '0', 0, true);
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	for (int i = 0; i < 8; i++)
		h[135 - i] = (unsigned char)(big >> (8 * i));
	memset(h + 136, 0xff, 12); /* -1000000 = ff..ff f0 bd c0 */
	h[145] = 0xf0;
	h[146] = 0xbd;
	h[147] = 0xc0;
	memset(h + 108, 0, 8);
	h[108] = 0x80;
	h[112] = 0x01; /* uid 2^24 */
	th_sum(h);
	scan1(&b, 512 + big + 1024 + 511, &r);
	CHECK(r.n == 1 && r.v[0].size == big && r.v[0].mtime == -1000000 &&
	      r.v[0].uid == (1u << 24));
	res_free(&r);
	buf_release(&b);
}

static void test_pax_rules(void)
{
	struct buf b;
	struct res r;

	buf_init(&b, 1 << 20);
	/* globals apply until deleted; 'x' wins over 'g', empty deletes */
	tpaxkv(&b, 'g', "mtime=123.25\nuid=7\n");
	tfile(&b, "a", 1);
	tpaxkv(&b, 'x', "mtime=\n");
	tfile(&b, "b", 1);
	tpaxkv(&b, 'x', "mtime=-1.5\npath=./x//y/\n");
	th(&b, "ignored", '5', 0, false);
	tpaxkv(&b, 'g', "uid=\n");
	tfile(&b, "c", 1);
	/* pax path wins over GNU long name; long link for a hard link */
	th(&b, "././@LongLink", 'L', 6, true);
	tdata(&b, "long1", 6);
	tpaxkv(&b, 'x', "path=paxed\n");
	th(&b, "short", '0', 0, false);
	th(&b, "././@LongLink", 'K', 8, true);
	tdata(&b, "./a//b/", 8);
	th(&b, "hard", '1', 0, true);
	tpaxkv(&b, 'x', "mtime=1700000000.1234567891\n");
	tfile(&b, "frac", 2);
	tzero(&b, 2);
	scan1(&b, 0, &r);
	CHECK_INT(r.rc, TARHDR_END);
	CHECK_INT(r.n, 7);
	if (r.n == 7) {
		CHECK(r.v[0].mtime == 123 && r.v[0].nsec == 250000000 &&
		      r.v[0].uid == 7 && r.v[0].hoff == 1024);
		CHECK(r.v[1].mtime == 014707044000 && r.v[1].uid == 7);
		CHECK_STR(r.v[2].path, "x/y");
		CHECK(r.v[2].type == TARHDR_DIR && r.v[2].mtime == -2 &&
		      r.v[2].nsec == 500000000);
		CHECK(r.v[3].uid == 0 && r.v[3].mtime == 123);
		CHECK_STR(r.v[4].path, "paxed");
		CHECK_STR(r.v[5].link ? r.v[5].link : "", "a/b");
		CHECK_INT(r.v[5].type, TARHDR_HARDLINK);
		CHECK(r.v[6].mtime == 1700000000 && r.v[6].nsec == 123456789);
	}
	res_free(&r);
	buf_release(&b);
}

static void test_odd_headers(void)
{
	struct buf b;
	struct res r;
	unsigned char *h;

	buf_init(&b, 1 << 20);
	/* v7-style numbers: leading spaces, space/NUL ends, empty = 0 */
	h = th(&b, "olddir/", '\0', 0, false);
	memset(h + 257, 0, 8);
	memcpy(h + 100, "  755 \0", 8);
	memset(h + 108, 0, 8);
	memcpy(h + 116, "     ", 5);
	th_sum(h);
	/* star: 131-byte prefix, "tar\0" at 508 */
	h = th(&b, "name", '0', 0, false);
	memcpy(h + 345, "star/prefix", 11);
	memcpy(h + 476, "12345678901", 11); /* star atime */
	memcpy(h + 508, "tar", 4);
	th_sum(h);
	/* ustar prefix; unknown type; absolute and ".." names */
	h = th(&b, "base", 'Z', 0, false);
	memcpy(h + 345, "/pre//fix", 9);
	th_sum(h);
	h = th(&b, "sym", '2', 0, false);
	memcpy(h + 157, "../../t", 7);
	th_sum(h);
	h = th(&b, "hl", '1', 0, false);
	memcpy(h + 157, "a/../../t", 9);
	th_sum(h);
	th(&b, "./", '5', 0, true);
	th(&b, "dev", '3', 0, true);
	h = th(&b, "signed", '0', 0, false);
	h[300] = 0xe9; /* high bytes: checksum as signed sum */
	th_sum(h);
	{
		int sum = 0;

		for (int i = 0; i < 512; i++)
			sum += (i >= 148 && i < 156) ? ' ' : (signed char)h[i];
		snprintf((char *)h + 148, 8, "%06o", sum);
	}
	tzero(&b, 2);
	scan1(&b, 0, &r);
	CHECK_INT(r.rc, TARHDR_END);
	CHECK_INT(r.n, 8);
	if (r.n == 8) {
		CHECK(r.v[0].type == TARHDR_DIR && r.v[0].mode == 0755 &&
		      r.v[0].gid == 0);
		CHECK_STR(r.v[0].path, "olddir");
		CHECK_STR(r.v[1].path, "star/prefix/name");
		CHECK_STR(r.v[2].path, "pre/fix/base");
		CHECK(r.v[2].unsafe && r.v[2].type == TARHDR_REG &&
		      r.v[2].note);
		CHECK_STR(r.v[3].link, "../../t");
		CHECK(!r.v[3].unsafe);
		CHECK_STR(r.v[4].link, "a/../../t");
		CHECK(r.v[4].unsafe);
		CHECK_STR(r.v[5].path, "");
		CHECK_INT(r.v[5].type, TARHDR_DIR);
		CHECK(r.v[6].type == TARHDR_OTHER && r.v[6].note);
		CHECK_STR(r.v[7].path, "signed");
	}
	res_free(&r);
	buf_release(&b);
}

static void test_normalize(void)
{
	static const struct {
		const char *in, *out;
		bool unsafe;
	} t[] = {
	    {"a", "a", false},
	    {"./a", "a", false},
	    {"a//b", "a/b", false},
	    {"a/./b/", "a/b", false},
	    {"/etc/passwd", "etc/passwd", true},
	    {"../x", "../x", true},
	    {"a/../b", "a/../b", true},
	    {"./", "", false},
	    {".", "", false},
	    {"", "", false},
	    {"..a/b..", "..a/b..", false},
	    {"///", "", true},
	    {"a/..", "a/..", true},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct buf b;
		bool unsafe = false;

		buf_init(&b, 100);
		CHECK(tarhdr_normalize(t[i].in, strlen(t[i].in), &b, &unsafe) ==
		      0);
		CHECK_STR(buf_str(&b), t[i].out);
		CHECK(unsafe == t[i].unsafe);
		buf_release(&b);
	}
}

/* ---- writer ---- */

struct wcase {
	struct tarhdr_wentry e;
	char *path, *link; /* owned copies */
};

static size_t wcases(struct wcase **out)
{
	static char deep[4200], p150[200], p183[200], p303[400], t300[301];
	struct wcase *w = calloc(20, sizeof(*w));
	size_t n = 0, o;

#define W(p, t, l, sz, mt, ns, u, g)                                           \
	w[n++] = (struct wcase){{NULL, NULL, t, 0644, u, g, mt, ns, sz},       \
				xstrdup(p),                                    \
				xstrdup_or_null(l)}
	o = (size_t)snprintf(deep, sizeof(deep), "w/deep");
	for (int i = 0; i < 16; i++) {
		deep[o++] = '/';
		memset(deep + o, (char)('a' + i), 250);
		o += 250;
	}
	memcpy(deep + o, "/f", 3);
	snprintf(p150, sizeof(p150), "w/%s", name150);
	snprintf(p183, sizeof(p183), "w/%s/%s", dir90, file90);
	snprintf(p303, sizeof(p303), "w/%s/%s", dir200, file120);
	memset(t300, 'x', 300);
	W("w", TARHDR_DIR, NULL, 0, 1700000000, 0, 0, 0);
	W("w/small.txt", TARHDR_REG, NULL, 5, 1700000001, 0, 0, 0);
	W("w/empty", TARHDR_REG, NULL, 0, 1700000002, 0, 0, 0);
	W("w/b512", TARHDR_REG, NULL, 512, 1700000003, 0, 1000, 1000);
	W("w/b1024", TARHDR_REG, NULL, 1024, 1700000003, 0, 0, 0);
	W("w/sub/", TARHDR_DIR, NULL, 0, 1700000000, 0, 0, 0);
	W(p150, TARHDR_REG, NULL, 10, 1700000004, 0, 0, 0);
	W(p183, TARHDR_REG, NULL, 11, 1700000005, 0, 0, 0);
	W(p303, TARHDR_REG, NULL, 12, 1700000006, 0, 0, 0);
	W(deep, TARHDR_REG, NULL, 13, 1700000007, 0, 0, 0);
	W("w/\xc3\xbcn\xc3\xaf-\xe5\x90\x8d", TARHDR_REG, NULL, 7, 1700000008,
	  0, 0, 0);
	W("w/sl", TARHDR_SYMLINK, "small.txt", 0, 1700000009, 0, 0, 0);
	W("w/longsl", TARHDR_SYMLINK, t300, 0, 1700000010, 0, 0, 0);
	W("w/hl", TARHDR_HARDLINK, "w/small.txt", 0, 1700000001, 0, 0, 0);
	W("w/nsec", TARHDR_REG, NULL, 3, 1700000000, 123456789, 0, 0);
	W("w/neg", TARHDR_REG, NULL, 3, -31536000, 0, 0, 0);
	W("w/negfrac", TARHDR_REG, NULL, 3, -2, 500000000, 0, 0);
	W("w/bigids", TARHDR_REG, NULL, 3, 1700000000, 0, 3000000, 4000000);
	W("w/future", TARHDR_REG, NULL, 3, (INT64_C(1) << 33) + 5, 0, 0, 0);
#undef W
	for (size_t i = 0; i < n; i++) {
		w[i].e.path = w[i].path;
		w[i].e.link = w[i].link;
	}
	*out = w;
	return n;
}

static void wcases_free(struct wcase *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(w[i].path);
		free(w[i].link);
	}
	free(w);
}

static void write_tar(const struct wcase *w, size_t n, struct buf *b)
{
	for (size_t i = 0; i < n; i++) {
		const struct tarhdr_wentry *e = &w[i].e;
		unsigned char *p = xmalloc(e->size);

		CHECK(tarhdr_write(e, b) == 0);
		if (e->type == TARHDR_REG) {
			pattern(p, e->size, (unsigned)i);
			CHECK(buf_append(b, p, e->size) == 0);
			CHECK(tarhdr_write_pad(e->size, b) == 0);
		}
		free(p);
	}
	CHECK(tarhdr_write_end(b) == 0);
}

/* Checks an extracted tree in DIR against the cases. */
static void verify_tree(const char *label, const char *dir,
			const struct wcase *w, size_t n, bool nsec)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	CHECK(dfd >= 0);
	for (size_t i = 0; i < n; i++) {
		const struct tarhdr_wentry *e = &w[i].e;
		struct stat st, st2;
		char lnk[512];
		bool ok = fstatat(dfd, e->path, &st, AT_SYMLINK_NOFOLLOW) == 0;

		if (ok && e->type == TARHDR_REG) {
			size_t len = 0;
			unsigned char *got = slurp_at(dfd, e->path, &len);
			unsigned char *want = xmalloc(e->size);

			pattern(want, e->size, (unsigned)i);
			ok = got && len == e->size && !memcmp(got, want, len) &&
			     st.st_mtim.tv_sec == e->mtime &&
			     (!nsec || st.st_mtim.tv_nsec == e->mtime_nsec);
			free(got);
			free(want);
		} else if (ok && e->type == TARHDR_DIR) {
			ok = S_ISDIR(st.st_mode);
		} else if (ok && e->type == TARHDR_SYMLINK) {
			ssize_t l = readlinkat(dfd, e->path, lnk, sizeof(lnk));

			ok = l == (ssize_t)strlen(e->link) &&
			     !memcmp(lnk, e->link, (size_t)l);
		} else if (ok) {
			ok = fstatat(dfd, e->link, &st2, 0) == 0 &&
			     st2.st_ino == st.st_ino;
		}
		if (!ok)
			fprintf(stderr, "%s: extracted %.60s differs\n", label,
				e->path);
		CHECK(ok);
	}
	close(dfd);
}

static void test_write_roundtrip(const struct wcase *w, size_t n,
				 const struct buf *b)
{
	struct res r;

	scan_windows("written", (const unsigned char *)b->data, b->len, b->len,
		     NULL, &r);
	CHECK_INT(r.rc, TARHDR_END);
	CHECK_INT(r.end, TARHDR_END_MARKER);
	CHECK_INT(r.n, n);
	for (size_t i = 0; i < n && i < r.n; i++) {
		const struct tarhdr_wentry *e = &w[i].e;
		const struct ent *x = &r.v[i];
		char want[4200];

		tnorm(e->path, want);
		CHECK_STR(x->path, want);
		CHECK(x->type == e->type && x->mode == 0644 &&
		      x->uid == e->uid && x->gid == e->gid &&
		      x->mtime == e->mtime && x->nsec == e->mtime_nsec &&
		      x->size == (e->type == TARHDR_REG ? e->size : 0) &&
		      !x->unsafe);
		if (e->link)
			CHECK_STR(x->link, e->link);
		if (e->type == TARHDR_REG) {
			unsigned char *p = xmalloc(e->size);

			pattern(p, e->size, (unsigned)i);
			CHECK(!memcmp(b->data + x->doff, p, e->size));
			free(p);
		}
	}
	res_free(&r);
}

static const char py_list[] =
    "import sys, tarfile\n"
    "for m in tarfile.open(sys.argv[1]):\n"
    "    print(m.type.decode(), m.size, m.name, m.linkname, sep='\\t')\n";

static void test_write_python(const char *tarpath, const struct wcase *w,
			      size_t n)
{
	char cmd[1024], *line = NULL;
	size_t cap = 0, i = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c \"$(cat '%s/list.py')\" '%s'", tmp,
		 tarpath);
	p = popen(cmd, "r");
	while (p && getline(&line, &cap, p) > 0) {
		char *f[4] = {line}, want[4200];

		line[strcspn(line, "\n")] = '\0';
		for (int k = 1; k < 4; k++) {
			f[k] = f[k - 1] ? strchr(f[k - 1], '\t') : NULL;
			if (f[k])
				*f[k]++ = '\0';
		}
		if (i < n && f[3]) {
			const struct tarhdr_wentry *e = &w[i].e;

			tnorm(e->path, want);
			CHECK_STR(f[2], want);
			CHECK(strtoull(f[1], NULL, 10) ==
			      (e->type == TARHDR_REG ? e->size : 0));
			CHECK_STR(f[3], e->link ? e->link : "");
		}
		i++;
	}
	free(line);
	CHECK(p && pclose(p) == 0);
	CHECK_INT(i, n);
	snprintf(cmd, sizeof(cmd), "%s/pyx", tmp);
	CHECK(mkdir(cmd, 0755) == 0);
	sh("cd '%s/pyx' && /usr/bin/python3 -c 'import tarfile, sys; "
	   "tarfile.open(sys.argv[1]).extractall(\".\")' '%s'",
	   tmp, tarpath);
	verify_tree("tarfile -x", cmd, w, n, false);
}

static void test_write_gnutar(const char *tarpath, const struct wcase *w,
			      size_t n)
{
	struct lent *l;
	size_t nl = tar_tv(tarpath, &l);
	char dir[256], want[4200];

	CHECK_INT(nl, n);
	for (size_t i = 0; i < n && i < nl; i++) {
		const struct tarhdr_wentry *e = &w[i].e;

		tnorm(l[i].name, want);
		CHECK_STR(want, w[i].path[strlen(w[i].path) - 1] == '/'
				    ? "w/sub"
				    : w[i].path);
		CHECK(l[i].type == type_letter(e->type));
		CHECK(l[i].size == (e->type == TARHDR_REG ? e->size : 0));
		if (e->link)
			CHECK_STR(l[i].link, e->link);
	}
	lents_free(l, nl);
	snprintf(dir, sizeof(dir), "%s/gx", tmp);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(sh("tar -xf '%s' -C '%s' 2>/dev/null", tarpath, dir) == 0);
	verify_tree("tar -x", dir, w, n, true);
}

/* A 9 GB member: header, a hole for the data, the end blocks. */
static void test_write_huge(void)
{
	struct tarhdr_wentry e = {"huge.bin", NULL, TARHDR_REG, 0600, 0, 0,
				  1700000000, 0,    9000000000u};
	struct buf b;
	struct lent *l;
	struct res r;
	char path[256];
	uint64_t end;
	size_t nl;
	int fd;

	buf_init(&b, 1 << 20);
	CHECK(tarhdr_write(&e, &b) == 0);
	CHECK_INT(b.len, 1536); /* pax + ustar */
	scan_image((const unsigned char *)b.data, b.len,
		   b.len + 9000000000u + 1024 + 511, 512, NULL, &r);
	CHECK(r.n == 1 && r.v[0].size == e.size && r.v[0].doff == 1536);
	end = 1536 + (e.size + 511) / 512 * 512;
	CHECK_INT(r.need_off, end);
	res_free(&r);
	snprintf(path, sizeof(path), "%s/huge.tar", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && pwrite(fd, b.data, b.len, 0) == (ssize_t)b.len);
	buf_reset(&b);
	CHECK(tarhdr_write_end(&b) == 0);
	CHECK(pwrite(fd, b.data, b.len, (off_t)end) == (ssize_t)b.len);
	close(fd);
	nl = tar_tv(path, &l);
	CHECK(nl == 1 && l[0].size == e.size && !strcmp(l[0].name, "huge.bin"));
	lents_free(l, nl);
	CHECK(sh("/usr/bin/python3 -c 'import tarfile, sys; "
		 "m = tarfile.open(sys.argv[1]).getmembers(); "
		 "sys.exit(not (len(m) == 1 and m[0].size == 9000000000))' "
		 "'%s'",
		 path) == 0);
	buf_release(&b);
}

static void test_write_errors(void)
{
	static const struct {
		const char *path, *link;
		enum tarhdr_type type;
		uint32_t nsec;
		int rc;
	} t[] = {
	    {"", NULL, TARHDR_REG, 0, -EINVAL},
	    {"/abs", NULL, TARHDR_REG, 0, -EINVAL},
	    {"a/../b", NULL, TARHDR_REG, 0, -EINVAL},
	    {"a//b", NULL, TARHDR_REG, 0, -EINVAL},
	    {"./a", NULL, TARHDR_REG, 0, -EINVAL},
	    {"a/", NULL, TARHDR_REG, 0, -EINVAL},
	    {"a", NULL, TARHDR_REG, 1000000000, -EINVAL},
	    {"a", NULL, TARHDR_OTHER, 0, -EINVAL},
	    {"a", NULL, TARHDR_SYMLINK, 0, -EINVAL},
	    {"a", "", TARHDR_SYMLINK, 0, -EINVAL},
	    {"a", "../b", TARHDR_HARDLINK, 0, -EINVAL},
	    {"a", NULL, TARHDR_DIR, 0, 0},
	    {"a/", NULL, TARHDR_DIR, 0, 0},
	};
	char longp[5000];
	struct buf b, small;

	buf_init(&b, 1 << 20);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct tarhdr_wentry e = {t[i].path, t[i].link, t[i].type,
					  0644,	     0,		0,
					  0,	     t[i].nsec, 0};
		size_t before = b.len;
		int rc = tarhdr_write(&e, &b);

		if (rc != t[i].rc)
			fprintf(stderr, "write '%s': %d\n", t[i].path, rc);
		CHECK_INT(rc, t[i].rc);
		CHECK(rc || b.len == before + 512);
		CHECK(!rc || b.len == before);
	}
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	{
		struct tarhdr_wentry e = {longp, NULL, TARHDR_REG, 0644, 0,
					  0,	 0,    0,	   0};

		CHECK_INT(tarhdr_write(&e, &b), -ENAMETOOLONG);
		/* a full buffer leaves it as it was */
		longp[300] = '\0';
		buf_init(&small, 700);
		CHECK(buf_append(&small, "x", 1) == 0);
		CHECK_INT(tarhdr_write(&e, &small), -E2BIG);
		CHECK_INT(small.len, 1);
		buf_release(&small);
	}
	CHECK_INT(tarhdr_pad_len(0), 0);
	CHECK_INT(tarhdr_pad_len(1), 511);
	CHECK_INT(tarhdr_pad_len(512), 0);
	CHECK_INT(tarhdr_pad_len(9000000001u), 511);
	buf_release(&b);
}

static void test_writer(void)
{
	struct wcase *w;
	size_t n = wcases(&w);
	struct buf b, b2;
	char path[256];

	buf_init(&b, 64u << 20);
	buf_init(&b2, 64u << 20);
	write_tar(w, n, &b);
	write_tar(w, n, &b2);
	CHECK(b.len == b2.len && !memcmp(b.data, b2.data, b.len));
	test_write_roundtrip(w, n, &b);
	snprintf(path, sizeof(path), "%s/written.tar", tmp);
	spew(path, b.data, b.len);
	snprintf(path, sizeof(path), "%s/list.py", tmp);
	spew(path, py_list, strlen(py_list));
	snprintf(path, sizeof(path), "%s/written.tar", tmp);
	test_write_gnutar(path, w, n);
	test_write_python(path, w, n);
	test_write_huge();
	test_write_errors();
	buf_release(&b);
	buf_release(&b2);
	wcases_free(w, n);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/test_tarhdr.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	test_normalize();
	test_bad();
	test_big_sizes();
	test_pax_rules();
	test_odd_headers();
	if (make_fixtures()) {
		test_fixtures();
		test_fixture_details();
		test_fixture_limits();
		test_writer();
	} else {
		CHECK(!"fixtures could not be made");
	}
	sh("rm -rf '%s'", tmp);
	return check_summary("test_tarhdr");
}
