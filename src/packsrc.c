// SPDX-License-Identifier: MIT
/*
 * packsrc: the sources of `shardfs pack` (see packsrc.h): a walk of a
 * local tree or a listing of an S3 prefix into a plan, then the members'
 * bytes in pack order.
 *
 * Local: the walk resolves every path relative to one descriptor of the
 * root (openat/fstatat), lstat semantics unless dereferencing. Reading
 * opens each file again (O_NOFOLLOW unless dereferencing) and compares
 * size, mtime (ns) and inode with the scan before and after reading.
 *
 * S3: a ring of chunk reads runs ahead of the consumer. The consumer
 * (the caller's thread) owns the ring's positions; the I/O thread only
 * fills a submitted chunk's result fields and signals, under `lock`.
 */
#include "packsrc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "s3xml.h"
#include "store_s3.h"
#include "tarhdr.h"

#define CHUNK	    (8u << 20) /* largest S3 read */
#define VERSION_LEN 64

enum { SRC_LOCAL = 1, SRC_S3 };

/* One read of an S3 source, in flight or done. */
struct chunk {
	size_t item;
	uint64_t off, len;
	/* Written by the I/O thread, under lock. */
	bool done;
	int err;
	char *data;
	char msg[512];
};

/* (device, inode) of a directory being walked, for loop detection. */
struct dirid {
	dev_t dev;
	ino_t ino;
};

struct packsrc {
	struct packsrc_conf conf;
	int kind;
	char msg[1024];

	/* Local. */
	int rootfd;
	char *root;

	/* S3. */
	struct store *store; /* borrowed */
	char *bucket, *prefix;

	/* Scan state (scan only). */
	struct packplan *plan_w;
	struct packsrc_scan_info *info;
	struct dirid *anc;
	size_t nanc, aanc;

	/* Reading. */
	const struct packplan *plan;
	const bool *skip;
	size_t cur;	      /* open item, SIZE_MAX when none */
	uint64_t cur_done;    /* bytes of it read so far */
	int fd;		      /* local: the open file */
	pthread_mutex_t lock; /* protects the result fields of ring[] */
	pthread_cond_t cond;
	struct chunk *ring;
	unsigned cap, head, count; /* consumer's thread only */
	size_t gen_item;	   /* next chunk to request */
	uint64_t gen_off;
	uint64_t ring_bytes; /* bytes of the chunks in the ring */
	size_t chunk_pos;    /* bytes of ring[head] consumed */
};

static void set_msg(struct packsrc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_msg(struct packsrc *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
	va_end(ap);
}

const char *packsrc_errmsg(const struct packsrc *s)
{
	return s->msg;
}

void packsrc_escape(const char *path, char *out, size_t outlen)
{
	size_t o = 0, n = strlen(path);

	if (!outlen)
		return;
	for (size_t i = 0; i < n && o + 5 < outlen;) {
		unsigned char c = (unsigned char)path[i];
		size_t k = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
			i++;
		} else if (c >= 0x80 && i + k <= n &&
			   packplan_utf8_ok(path + i, k) && o + k < outlen) {
			memcpy(out + o, path + i, k);
			o += k;
			i += k;
		} else {
			o +=
			    (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
			i++;
		}
	}
	out[o] = '\0';
}

static void warn(struct packsrc *s, const char *path, const char *why)
{
	s->info->skipped++;
	if (s->conf.warn)
		s->conf.warn(s->conf.warn_arg, path, why);
}

static bool stopped(const struct packsrc *s)
{
	return s->conf.stop && atomic_load(s->conf.stop);
}

/* ---- construction ---- */

static struct packsrc *src_new(const struct packsrc_conf *conf, int kind)
{
	struct packsrc *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->conf = *conf;
	s->kind = kind;
	s->rootfd = -1;
	s->fd = -1;
	s->cur = SIZE_MAX;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	return s;
}

int packsrc_open_local(const struct packsrc_conf *conf, const char *dir,
		       struct packsrc **out, char *msg, size_t msglen)
{
	struct packsrc *s = src_new(conf, SRC_LOCAL);
	int fd;

	if (!s)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;

		snprintf(msg, msglen, "%s: %s", dir, strerror(-rc));
		packsrc_free(s);
		return rc;
	}
	s->rootfd = fd;
	s->root = strdup(dir);
	if (!s->root) {
		packsrc_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

int packsrc_open_s3(const struct packsrc_conf *conf, struct store *store,
		    const char *bucket, const char *prefix,
		    struct packsrc **out)
{
	struct packsrc *s = src_new(conf, SRC_S3);
	size_t n = strlen(prefix);

	if (!s)
		return -ENOMEM;
	s->store = store;
	s->bucket = strdup(bucket);
	if (asprintf(&s->prefix, "%s%s", prefix,
		     n && prefix[n - 1] != '/' ? "/" : "") < 0)
		s->prefix = NULL;
	if (!s->bucket || !s->prefix) {
		packsrc_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static void ring_drain(struct packsrc *s)
{
	/* Wait for reads in flight: their callbacks write into the ring. */
	pthread_mutex_lock(&s->lock);
	for (unsigned k = 0; k < s->count; k++) {
		struct chunk *c = &s->ring[(s->head + k) % s->cap];

		while (!c->done)
			pthread_cond_wait(&s->cond, &s->lock);
		free(c->data);
		c->data = NULL;
	}
	s->count = 0;
	pthread_mutex_unlock(&s->lock);
}

void packsrc_free(struct packsrc *s)
{
	if (!s)
		return;
	if (s->ring)
		ring_drain(s);
	if (s->fd >= 0)
		close(s->fd);
	if (s->rootfd >= 0)
		close(s->rootfd);
	free(s->ring);
	free(s->anc);
	free(s->root);
	free(s->bucket);
	free(s->prefix);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- local walk ---- */

static void local_version(const struct stat *st, char *out, size_t outlen)
{
	snprintf(out, outlen, "%lld.%09ld:%llu", (long long)st->st_mtim.tv_sec,
		 (long)st->st_mtim.tv_nsec, (unsigned long long)st->st_ino);
}

static int add_member(struct packsrc *s, const char *path,
		      enum packplan_kind kind, const struct stat *st,
		      const char *link, const char *version)
{
	struct packplan_input in = {
	    .path = path,
	    .link = link,
	    .kind = kind,
	    .mode = (uint32_t)st->st_mode & 07777,
	    .mtime = (int64_t)st->st_mtim.tv_sec,
	    .size = kind == PACKPLAN_FILE ? (uint64_t)st->st_size : 0,
	    .version = version,
	};
	int rc = packplan_add(s->plan_w, &in);

	if (rc == -ENAMETOOLONG)
		warn(s, path,
		     link ? "path or link target too long for tar or the "
			    "dataset index"
			  : "path too long for tar (at most 4096 bytes)");
	else if (rc == -EINVAL)
		warn(s, path, "cannot be stored in a tar shard");
	else
		return rc;
	return 0;
}

static int add_symlink(struct packsrc *s, int dfd, const char *name,
		       const char *path, const struct stat *st)
{
	char target[TARHDR_PATH_MAX + 2];
	ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);

	if (n < 0) {
		warn(s, path, strerror(errno));
		return 0;
	}
	if ((size_t)n >= sizeof(target) - 1 || n == 0) {
		warn(s, path, "symbolic link target too long or empty");
		return 0;
	}
	target[n] = '\0';
	return add_member(s, path, PACKPLAN_SYMLINK, st, target, "");
}

/* fstatat() failed for NAME: say why in words. */
static void stat_failed(struct packsrc *s, int dfd, const char *name,
			const char *path, int err)
{
	struct stat lst;

	if (s->conf.dereference &&
	    fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(lst.st_mode)) {
		warn(s, path,
		     err == ELOOP
			 ? "symbolic link loop"
			 : "dangling symbolic link (with --dereference)");
		return;
	}
	warn(s, path, strerror(err));
}

static bool is_ancestor(const struct packsrc *s, const struct stat *st)
{
	for (size_t i = 0; i < s->nanc; i++)
		if (s->anc[i].dev == st->st_dev && s->anc[i].ino == st->st_ino)
			return true;
	return false;
}

static int walk_dir(struct packsrc *s, struct buf *path, const struct stat *st);

static int walk_entry(struct packsrc *s, int dfd, const char *name,
		      struct buf *path)
{
	char version[VERSION_LEN];
	struct stat st;
	int flags = s->conf.dereference ? 0 : AT_SYMLINK_NOFOLLOW;
	const char *p = buf_str(path);

	if (!packplan_utf8_ok(name, strlen(name))) {
		warn(s, p, "name is not valid UTF-8");
		return 0;
	}
	if (fstatat(dfd, name, &st, flags) != 0) {
		stat_failed(s, dfd, name, p, errno);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (s->conf.dereference && is_ancestor(s, &st)) {
			warn(s, p,
			     "symbolic link loop (leads back to a "
			     "directory that contains it)");
			return 0;
		}
		return walk_dir(s, path, &st);
	}
	if (S_ISLNK(st.st_mode))
		return add_symlink(s, dfd, name, p, &st);
	if (!S_ISREG(st.st_mode)) {
		warn(s, p, "not a regular file, directory or symbolic link");
		return 0;
	}
	if (faccessat(dfd, name, R_OK, AT_EACCESS) != 0) {
		warn(s, p, strerror(errno));
		return 0;
	}
	local_version(&st, version, sizeof(version));
	return add_member(s, p, PACKPLAN_FILE, &st, NULL, version);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in DFD (sorted, so warnings come in a stable order). */
static int read_names(struct packsrc *s, int dfd, const char *path, char ***out,
		      size_t *nout)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char **v = NULL;
	size_t n = 0, a = 0;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		warn(s, path, strerror(errno));
		return 1;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				warn(s, path, strerror(errno));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == a) {
			char **nv =
			    realloc(v, (a = a ? 2 * a : 64) * sizeof(*v));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name))) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_name);
	*out = v;
	*nout = n;
	return rc;
}

static int push_ancestor(struct packsrc *s, const struct stat *st)
{
	if (s->nanc == s->aanc) {
		size_t na = s->aanc ? 2 * s->aanc : 32;
		struct dirid *p = realloc(s->anc, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->anc = p;
		s->aanc = na;
	}
	s->anc[s->nanc++] = (struct dirid){st->st_dev, st->st_ino};
	return 0;
}

static void cut(struct buf *b, size_t len)
{
	if (b->data) {
		b->len = len;
		b->data[len] = '\0';
	}
}

static int walk_children(struct packsrc *s, int dfd, struct buf *path)
{
	size_t base = path->len, n = 0;
	char **names = NULL;
	int rc = read_names(s, dfd, base ? buf_str(path) : ".", &names, &n);

	if (rc == 1)
		return 0; /* unreadable: warned */
	for (size_t i = 0; !rc && i < n; i++) {
		if (stopped(s)) {
			rc = -EINTR;
			break;
		}
		cut(path, base);
		rc = base ? buf_printf(path, "/%s", names[i])
			  : buf_append_str(path, names[i]);
		if (rc == -E2BIG) {
			warn(s, buf_str(path), "path too long");
			rc = 0;
			continue;
		}
		if (!rc)
			rc = walk_entry(s, dfd, names[i], path);
	}
	cut(path, base);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* A directory at PATH ("" = the root), whose stat is ST. */
static int walk_dir(struct packsrc *s, struct buf *path, const struct stat *st)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	const char *p = path->len ? buf_str(path) : ".";
	int dfd, rc;

	if (!s->conf.dereference)
		flags |= O_NOFOLLOW;
	dfd = openat(s->rootfd, p, flags);
	if (dfd < 0) {
		warn(s, p, strerror(errno));
		return 0;
	}
	if (path->len) {
		rc = add_member(s, buf_str(path), PACKPLAN_DIR, st, NULL, "");
		if (rc) {
			close(dfd);
			return rc;
		}
	}
	rc = push_ancestor(s, st);
	if (!rc)
		rc = walk_children(s, dfd, path);
	s->nanc--;
	close(dfd);
	return rc;
}

static int scan_local(struct packsrc *s, char *msg, size_t msglen)
{
	struct buf path;
	struct stat st;
	int rc;

	if (fstat(s->rootfd, &st) != 0) {
		rc = -errno;
		snprintf(msg, msglen, "%s: %s", s->root, strerror(-rc));
		return rc;
	}
	s->info->has_root = true;
	s->info->root_mode = (uint32_t)st.st_mode & 07777;
	s->info->root_mtime = (int64_t)st.st_mtim.tv_sec;
	buf_init(&path, TARHDR_PATH_MAX);
	rc = walk_dir(s, &path, &st);
	buf_release(&path);
	if (rc == -EINTR)
		snprintf(msg, msglen, "interrupted");
	else if (rc)
		snprintf(msg, msglen, "%s: %s", s->root, strerror(-rc));
	return rc;
}

/* ---- S3 listing ---- */

struct s3obj {
	char *key; /* relative to the prefix, raw */
	uint64_t size;
	int64_t mtime;
	char *etag;
};

struct s3scan {
	struct packsrc *s;
	struct s3obj *v;
	size_t n, a;
};

static int s3_page(const struct s3xml_list *page, void *arg)
{
	struct s3scan *sc = arg;
	size_t plen = strlen(sc->s->prefix);

	if (stopped(sc->s))
		return -EINTR;
	for (size_t i = 0; i < page->nobjects; i++) {
		const struct s3xml_object *o = &page->objects[i];
		struct s3obj *x;

		if (strncmp(o->key, sc->s->prefix, plen) != 0 || !o->key[plen])
			continue;
		if (sc->n == sc->a) {
			size_t na = sc->a ? 2 * sc->a : 1024;
			void *p = realloc(sc->v, na * sizeof(*sc->v));

			if (!p)
				return -ENOMEM;
			sc->v = p;
			sc->a = na;
		}
		x = &sc->v[sc->n];
		x->key = strdup(o->key + plen);
		x->etag = strdup(o->etag ? o->etag : "");
		if (!x->key || !x->etag) {
			free(x->key);
			free(x->etag);
			return -ENOMEM;
		}
		x->size = o->size;
		x->mtime = o->mtime;
		sc->n++;
	}
	return 0;
}

/* A clean relative path: no empty, "." or ".." segment (a trailing '/'
 * is allowed when DIR_OK). */
static bool clean_key(const char *k, bool dir_ok)
{
	size_t n = strlen(k);

	if (dir_ok && n > 1 && k[n - 1] == '/')
		n--;
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && k[j] != '/')
			j++;
		if (j == i || (j - i == 1 && k[i] == '.') ||
		    (j - i == 2 && k[i] == '.' && k[i + 1] == '.'))
			return false;
		i = j + 1;
	}
	return n > 0 && k[n - 1] != '/';
}

static int cmp_obj(const void *a, const void *b)
{
	return strcmp(((const struct s3obj *)a)->key,
		      ((const struct s3obj *)b)->key);
}

/* True when some key starts with KEY + "/" (KEY is then a directory). */
static bool is_prefix_of_others(const struct s3scan *sc, const char *key)
{
	size_t lo = 0, hi = sc->n, n = strlen(key);

	while (lo < hi) { /* first key >= KEY + "/" */
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(sc->v[mid].key, key, n);

		if (c == 0)
			c = (unsigned char)sc->v[mid].key[n] < '/' ? -1 : 0;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sc->n && strncmp(sc->v[lo].key, key, n) == 0 &&
	       sc->v[lo].key[n] == '/';
}

static int s3_add(struct packsrc *s, struct s3scan *sc, const struct s3obj *o)
{
	size_t n = strlen(o->key);
	bool dir = o->key[n - 1] == '/';
	struct stat st;

	if (!clean_key(o->key, true)) {
		warn(s, o->key,
		     "key is not a clean relative path (empty, '.' "
		     "or '..' segment)");
		return 0;
	}
	if (!packplan_utf8_ok(o->key, n)) {
		warn(s, o->key, "key is not valid UTF-8");
		return 0;
	}
	if (dir && o->size > 0) {
		warn(s, o->key, "an object with data whose key ends in '/'");
		return 0;
	}
	if (!dir && is_prefix_of_others(sc, o->key)) {
		warn(s, o->key,
		     "the key is also a prefix of other keys (a "
		     "directory): the object is left out");
		return 0;
	}
	memset(&st, 0, sizeof(st));
	st.st_mode = dir ? 0755 : 0644;
	st.st_mtim.tv_sec = (time_t)o->mtime;
	st.st_size = (off_t)o->size;
	if (dir) {
		char *p = strndup(o->key, n - 1);
		int rc =
		    p ? add_member(s, p, PACKPLAN_DIR, &st, NULL, "") : -ENOMEM;

		free(p);
		return rc;
	}
	return add_member(s, o->key, PACKPLAN_FILE, &st, NULL, o->etag);
}

static int scan_s3(struct packsrc *s, char *msg, size_t msglen)
{
	struct s3scan sc = {.s = s};
	int rc;

	rc = store_s3_list_pages(store_s3_engine(s->store), s->bucket,
				 s->prefix, NULL, s3_page, &sc, msg, msglen);
	if (rc == -EINTR)
		snprintf(msg, msglen, "interrupted");
	if (!rc && sc.n > 1)
		qsort(sc.v, sc.n, sizeof(*sc.v), cmp_obj);
	for (size_t i = 0; !rc && i < sc.n; i++)
		rc = s3_add(s, &sc, &sc.v[i]);
	if (rc && !msg[0])
		snprintf(msg, msglen, "%s", strerror(-rc));
	for (size_t i = 0; i < sc.n; i++) {
		free(sc.v[i].key);
		free(sc.v[i].etag);
	}
	free(sc.v);
	return rc;
}

int packsrc_scan(struct packsrc *s, struct packplan *plan,
		 struct packsrc_scan_info *info, char *msg, size_t msglen)
{
	int rc;

	memset(info, 0, sizeof(*info));
	if (msglen)
		msg[0] = '\0';
	s->plan_w = plan;
	s->info = info;
	rc = s->kind == SRC_LOCAL ? scan_local(s, msg, msglen)
				  : scan_s3(s, msg, msglen);
	s->plan_w = NULL;
	s->info = NULL;
	return rc;
}

/* ---- reading ---- */

int packsrc_start(struct packsrc *s, const struct packplan *plan,
		  const bool *skip)
{
	s->plan = plan;
	s->skip = skip;
	s->cur = SIZE_MAX;
	if (s->kind != SRC_S3)
		return 0;
	s->cap = s->conf.max_reads ? s->conf.max_reads : 64;
	if (s->cap < 2)
		s->cap = 2;
	if (s->conf.read_budget < 2 * (uint64_t)CHUNK)
		s->conf.read_budget = 2 * (uint64_t)CHUNK;
	s->ring = calloc(s->cap, sizeof(*s->ring));
	return s->ring ? 0 : -ENOMEM;
}

static bool wanted(const struct packsrc *s, size_t i)
{
	const struct packplan_item *it = packplan_item(s->plan, i);

	return it->kind == PACKPLAN_FILE && it->size > 0 &&
	       !(s->skip && s->skip[it->shard]);
}

struct read_ctx {
	struct packsrc *s;
	struct chunk *c;
};

static void read_done(void *arg, int err, char *data, size_t len,
		      const char *msg)
{
	struct read_ctx rc = *(struct read_ctx *)arg;

	free(arg);
	pthread_mutex_lock(&rc.s->lock);
	rc.c->err = err;
	if (!err && len != rc.c->len) {
		rc.c->err = -EIO;
		free(data);
		data = NULL;
		snprintf(rc.c->msg, sizeof(rc.c->msg),
			 "read %zu bytes, expected %" PRIu64, len, rc.c->len);
	} else if (err) {
		snprintf(rc.c->msg, sizeof(rc.c->msg), "%s",
			 msg ? msg : strerror(-err));
	}
	rc.c->data = data;
	rc.c->done = true;
	pthread_cond_broadcast(&rc.s->cond);
	pthread_mutex_unlock(&rc.s->lock);
}

/* Submits the next chunk into a free slot. 0, or 1 when there is
 * nothing more to read or no room. */
static int submit_next(struct packsrc *s)
{
	size_t n = packplan_nitems(s->plan);
	const struct packplan_item *it;
	struct read_ctx *ctx;
	struct chunk *c;
	uint64_t len;
	int rc;

	while (s->gen_item < n &&
	       (!wanted(s, s->gen_item) ||
		s->gen_off >= packplan_item(s->plan, s->gen_item)->size)) {
		s->gen_item++;
		s->gen_off = 0;
	}
	if (s->gen_item >= n || s->count == s->cap)
		return 1;
	it = packplan_item(s->plan, s->gen_item);
	len = it->size - s->gen_off;
	if (len > CHUNK)
		len = CHUNK;
	if (s->count > 0 && s->ring_bytes + len > s->conf.read_budget)
		return 1;
	c = &s->ring[(s->head + s->count) % s->cap];
	memset(c, 0, sizeof(*c));
	c->item = s->gen_item;
	c->off = s->gen_off;
	c->len = len;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	*ctx = (struct read_ctx){s, c};
	s->count++;
	s->ring_bytes += len;
	s->gen_off += len;
	rc = s->store->ops->get_range(s->store, it->path, c->off, c->len,
				      it->version[0] ? it->version : NULL,
				      read_done, ctx);
	if (rc) {
		free(ctx);
		pthread_mutex_lock(&s->lock);
		c->err = rc;
		snprintf(c->msg, sizeof(c->msg), "%s", strerror(-rc));
		c->done = true;
		pthread_mutex_unlock(&s->lock);
	}
	return 0;
}

static int fill(struct packsrc *s)
{
	int rc;

	while ((rc = submit_next(s)) == 0)
		;
	return rc < 0 ? rc : 0;
}

static int local_open(struct packsrc *s, const struct packplan_item *it)
{
	char version[VERSION_LEN], esc[512];
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat st;

	if (!s->conf.dereference)
		flags |= O_NOFOLLOW;
	packsrc_escape(it->path, esc, sizeof(esc));
	s->fd = openat(s->rootfd, it->path, flags);
	if (s->fd < 0) {
		int rc = -errno;

		set_msg(s, "%s: cannot open: %s", esc, strerror(-rc));
		return rc == -ENOENT || rc == -ELOOP ? -ESTALE : rc;
	}
	if (fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		set_msg(s, "%s: no longer a regular file", esc);
		return -ESTALE;
	}
	local_version(&st, version, sizeof(version));
	if ((uint64_t)st.st_size != it->size || strcmp(version, it->version)) {
		set_msg(s,
			"%s changed after it was scanned (%" PRIu64
			" bytes then, %" PRIu64 " now)",
			esc, it->size, (uint64_t)st.st_size);
		return -ESTALE;
	}
	return 0;
}

int packsrc_open_item(struct packsrc *s, size_t i)
{
	const struct packplan_item *it = packplan_item(s->plan, i);
	int rc = 0;

	s->cur = i;
	s->cur_done = 0;
	s->msg[0] = '\0';
	if (s->kind == SRC_LOCAL)
		return local_open(s, it);
	if (it->size == 0)
		return 0;
	rc = fill(s);
	if (!rc && (s->count == 0 || s->ring[s->head].item != i)) {
		set_msg(s, "internal error: reads out of order at %s",
			it->path);
		rc = -EPROTO;
	}
	return rc;
}

static ssize_t local_read(struct packsrc *s, const struct packplan_item *it,
			  void *buf, size_t len)
{
	char esc[512];
	ssize_t n;

	do {
		n = read(s->fd, buf, len);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	packsrc_escape(it->path, esc, sizeof(esc));
	if (n == 0) {
		set_msg(s,
			"%s changed while being packed: it ended after %" PRIu64
			" of %" PRIu64 " bytes",
			esc, s->cur_done, it->size);
		return -ESTALE;
	}
	set_msg(s, "%s: read error: %s", esc, strerror(errno));
	return -errno;
}

/* Waits until the head chunk is done. 0 or -EINTR. */
static int wait_head(struct packsrc *s)
{
	struct chunk *c = &s->ring[s->head];
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (!c->done && !rc) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (!c->done && stopped(s))
			rc = -EINTR;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc)
		set_msg(s, "interrupted");
	return rc;
}

static ssize_t s3_read(struct packsrc *s, const struct packplan_item *it,
		       void *buf, size_t len)
{
	struct chunk *c = &s->ring[s->head];
	char esc[512];
	size_t n;
	int rc = wait_head(s);

	if (rc)
		return rc;
	if (c->err) {
		packsrc_escape(it->path, esc, sizeof(esc));
		if (c->err == -ESTALE)
			set_msg(s,
				"%s changed while being packed (its ETag is "
				"no longer %s)",
				esc, it->version);
		else
			set_msg(s, "%s: %s", esc, c->msg);
		return c->err;
	}
	n = (size_t)(c->len - s->chunk_pos);
	if (n > len)
		n = len;
	memcpy(buf, c->data + s->chunk_pos, n);
	s->chunk_pos += n;
	if (s->chunk_pos == c->len) {
		free(c->data);
		c->data = NULL;
		s->ring_bytes -= c->len;
		s->head = (s->head + 1) % s->cap;
		s->count--;
		s->chunk_pos = 0;
		rc = fill(s);
		if (rc)
			return rc;
	}
	return (ssize_t)n;
}

ssize_t packsrc_read(struct packsrc *s, void *buf, size_t len)
{
	const struct packplan_item *it = packplan_item(s->plan, s->cur);
	uint64_t left = it->size - s->cur_done;
	ssize_t n;

	if (left == 0 || len == 0)
		return 0;
	if (len > left)
		len = (size_t)left;
	n = s->kind == SRC_LOCAL ? local_read(s, it, buf, len)
				 : s3_read(s, it, buf, len);
	if (n > 0)
		s->cur_done += (uint64_t)n;
	return n;
}

int packsrc_close_item(struct packsrc *s)
{
	const struct packplan_item *it = packplan_item(s->plan, s->cur);
	char version[VERSION_LEN], esc[512];
	struct stat st;
	int rc = 0;

	s->cur = SIZE_MAX;
	if (s->kind != SRC_LOCAL || s->fd < 0)
		return 0;
	if (fstat(s->fd, &st) != 0) {
		rc = -errno;
		set_msg(s, "fstat: %s", strerror(-rc));
	} else {
		local_version(&st, version, sizeof(version));
		if ((uint64_t)st.st_size != it->size ||
		    strcmp(version, it->version) != 0) {
			packsrc_escape(it->path, esc, sizeof(esc));
			set_msg(s,
				"%s changed while being packed (%" PRIu64
				" bytes planned, %" PRIu64 " now)",
				esc, it->size, (uint64_t)st.st_size);
			rc = -ESTALE;
		}
	}
	close(s->fd);
	s->fd = -1;
	return rc;
}
