// SPDX-License-Identifier: MIT
/*
 * Unit tests of the namespace: against the local store (a temporary
 * directory) for lookups, readdir, the control directory and lookup-count
 * lifetimes; against a fake store for odd names, relisting with a TTL,
 * listing errors and one listing shared by concurrent lookups. Tar shards
 * as directories against the local store, with a test indexer that scans
 * the tar with tarhdr (damage, failures, one indexing shared by
 * concurrent lookups); the dataset index mode on an index made with the
 * builder (no listing, lazy inodes freed by forget, hidden and long
 * names, symlinks, sparse members); the generated stats file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dsidx.h"
#include "log.h"
#include "ns.h"
#include "store_local.h"
#include "tarhdr.h"

/* ---- helpers ---- */

static void write_file(const char *dir, const char *rel, const char *data)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, strlen(data)) == (ssize_t)strlen(data));
	close(fd);
}

static void make_dir(const char *dir, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	CHECK(mkdir(path, 0755) == 0);
}

static int names_of(struct ns *ns, uint64_t ino, char *out, size_t outlen)
{
	struct ns_dir *d = NULL;
	size_t pos = 0;
	int rc = ns_opendir(ns, ino, &d);

	out[0] = '\0';
	if (rc)
		return rc;
	for (size_t i = 0; i < ns_dir_count(d); i++) {
		struct ns_dirent e;

		if (ns_dir_get(ns, d, i, &e) != 0)
			continue;
		pos += (size_t)snprintf(out + pos, outlen - pos, "%s%s%s",
					pos ? " " : "", e.name,
					ns_kind_is_dir(e.kind)	  ? "/"
					: e.kind == NS_SYMLINK ? "@"
							       : "");
	}
	ns_dir_free(d);
	return 0;
}

/* ---- the local store ---- */

static void test_local(void)
{
	char tmpl[] = "/tmp/test_ns.XXXXXX", names[1024], msg[256];
	const char *dir = mkdtemp(tmpl);
	struct store *st = NULL;
	struct ns *ns = NULL;
	struct ns_attr a, x, ctl, ver;
	struct ns_file f;

	CHECK(dir != NULL);
	make_dir(dir, "a");
	make_dir(dir, "c");
	write_file(dir, "a/x", "abc");
	write_file(dir, "b", "hello");
	write_file(dir, ".shardfs", "hidden");
	{
		char p[4096];

		snprintf(p, sizeof(p), "%s/dangling", dir);
		CHECK(symlink("does-not-exist", p) == 0);
	}
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	struct ns_conf conf = {.store = st, .metadata_ttl = 0};
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_prime(ns, msg, sizeof(msg)), 0);

	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "a/ b c/");

	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "a", &a), 0);
	CHECK_INT(a.kind, NS_DIR);
	CHECK_INT(ns_lookup(ns, a.ino, "x", &x), 0);
	CHECK_INT(x.kind, NS_OBJECT);
	CHECK_INT(x.size, 3);
	CHECK_INT(ns_file(ns, x.ino, &f), 0);
	CHECK_STR(f.key, "a/x");
	CHECK(f.etag && f.etag[0] == '"');
	ns_file_release(&f);
	CHECK_INT(ns_file(ns, a.ino, &f), -EISDIR);

	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "nope", &x), -ENOENT);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "dangling", &x), -ENOENT);
	{
		struct ns_attr b;

		CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "b", &b), 0);
		CHECK_INT(ns_lookup(ns, b.ino, "x", &x), -ENOTDIR);
		CHECK_INT(ns_opendir(ns, b.ino, &(struct ns_dir *){NULL}),
			  -ENOTDIR);
		ns_forget(ns, b.ino, 1);
	}

	/* The control directory: found by lookup, never listed. */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, ".shardfs", &ctl), 0);
	CHECK_INT(ctl.kind, NS_CTL_DIR);
	CHECK_INT(names_of(ns, ctl.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "version");
	CHECK_INT(ns_lookup(ns, ctl.ino, "version", &ver), 0);
	CHECK_INT(ver.kind, NS_CTL_FILE);
	CHECK_INT(ns_file(ns, ver.ino, &f), 0);
	CHECK_STR(f.data, "shardfs " SHARDFS_VERSION "\n");
	CHECK_INT(f.size, strlen(f.data));
	ns_file_release(&f);

	/* Lookup counts: forget drops them; a listed inode stays. */
	CHECK_INT(ns_nlookup(ns, a.ino), 1);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "a", &x), 0);
	CHECK_INT(x.ino, a.ino);
	CHECK_INT(ns_nlookup(ns, a.ino), 2);
	ns_forget(ns, a.ino, 2);
	CHECK_INT(ns_nlookup(ns, a.ino), 0);
	CHECK_INT(ns_getattr(ns, a.ino, &x), 0);
	ns_forget(ns, ctl.ino, 5); /* more than held: clamped, never freed */
	CHECK_INT(ns_getattr(ns, ctl.ino, &x), 0);
	ns_forget(ns, NS_ROOT_INO, 1);
	CHECK_INT(ns_getattr(ns, NS_ROOT_INO, &x), 0);

	ns_free(ns);
	store_free(st);
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
}

/* The local store's own contract: key confinement, put, head, list. */
static void test_store_local(void)
{
	static const struct {
		const char *key;
		int want;
	} keys[] = {
	    {"a", 0},	       {"a/b/c", 0},
	    {"a..b", 0},       {"..a/b", 0},
	    {"a/.../b", 0},    {"", 0},
	    {"..", -EINVAL},   {"../a", -EINVAL},
	    {"a/..", -EINVAL}, {"a/../b", -EINVAL},
	    {"/a", -EINVAL},   {"/", -EINVAL},
	};
	char tmpl[] = "/tmp/test_store_local.XXXXXX", msg[256];
	const char *dir = mkdtemp(tmpl);
	struct store *st = NULL;
	struct store_listing l;
	struct store_entry e;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		CHECK_INT(store_local_check_key(keys[i].key), keys[i].want);
	CHECK(dir != NULL);
	CHECK_INT(store_local_new("/nonexistent/dir", &st, msg, sizeof(msg)),
		  -ENOENT);
	CHECK(strstr(msg, "/nonexistent/dir") != NULL);
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	CHECK_INT(st->ops->put(st, "p/q/r", "data", 4, msg, sizeof(msg)), 0);
	CHECK_INT(st->ops->put(st, "p/q/r", "data2", 5, msg, sizeof(msg)), 0);
	CHECK_INT(st->ops->put(st, "../x", "x", 1, msg, sizeof(msg)), -EINVAL);
	CHECK_INT(st->ops->head(st, "p/q/r", &e, msg, sizeof(msg)), 0);
	CHECK_INT(e.size, 5);
	CHECK(e.etag && e.etag[0] == '"');
	store_entry_release(&e);
	CHECK_INT(st->ops->head(st, "p/q", &e, msg, sizeof(msg)), -ENOENT);
	CHECK_INT(st->ops->head(st, "p/nope", &e, msg, sizeof(msg)), -ENOENT);
	CHECK_INT(st->ops->list(st, "p/q/", &l, msg, sizeof(msg)), 0);
	CHECK_INT(l.n, 1); /* no temporary file left behind */
	if (l.n == 1)
		CHECK_STR(l.entries[0].name, "r");
	store_listing_release(&l);
	CHECK_INT(st->ops->list(st, "p/", &l, msg, sizeof(msg)), 0);
	CHECK_INT(l.n, 1);
	if (l.n == 1)
		CHECK(l.entries[0].is_dir);
	store_listing_release(&l);
	CHECK_INT(st->ops->list(st, "../", &l, msg, sizeof(msg)), -EINVAL);
	CHECK_INT(st->ops->list(st, "nope/", &l, msg, sizeof(msg)), -ENOENT);
	store_free(st);
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
}

/* ---- a fake store ---- */

struct fake_dir {
	const char *dir;
	const char *const *entries; /* "name" object, "name/" prefix */
};

struct fake {
	struct store base;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	const struct fake_dir *dirs; /* lock */
	int list_calls;		     /* lock */
	int fail;		     /* lock: errno to return, or 0 */
	bool hold;		     /* lock: list() waits while set */
	int waiting;		     /* lock: list() calls held */
};

static int fake_fill(const struct fake_dir *d, struct store_listing *out)
{
	size_t n = 0;

	while (d->entries[n])
		n++;
	out->entries = calloc(n ? n : 1, sizeof(*out->entries));
	out->n = n;
	for (size_t i = 0; i < n; i++) {
		const char *e = d->entries[i];
		size_t len = strlen(e);
		struct store_entry *se = &out->entries[i];

		se->is_dir = len > 0 && e[len - 1] == '/';
		se->name = strndup(e, se->is_dir ? len - 1 : len);
		se->size = se->is_dir ? 0 : len;
		se->mtime = 1000;
		se->etag = se->is_dir ? NULL : strdup("\"e\"");
	}
	return 0;
}

static int fake_list(struct store *s, const char *dir,
		     struct store_listing *out, char *msg, size_t msglen)
{
	struct fake *f = (struct fake *)s;
	int rc = 0;

	out->entries = NULL;
	out->n = 0;
	pthread_mutex_lock(&f->lock);
	f->list_calls++;
	f->waiting++;
	pthread_cond_broadcast(&f->cv);
	while (f->hold)
		pthread_cond_wait(&f->cv, &f->lock);
	f->waiting--;
	if (f->fail) {
		rc = -f->fail;
		snprintf(msg, msglen, "fake failure");
	} else {
		for (const struct fake_dir *d = f->dirs; d->dir; d++)
			if (strcmp(d->dir, dir) == 0)
				rc = fake_fill(d, out);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static const char *fake_describe(struct store *s)
{
	(void)s;
	return "fake://";
}

static const struct store_ops fake_ops = {
    .list = fake_list,
    .describe = fake_describe,
};

static void fake_init(struct fake *f, const struct fake_dir *dirs)
{
	memset(f, 0, sizeof(*f));
	f->base.ops = &fake_ops;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->dirs = dirs;
}

static int fake_calls(struct fake *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->list_calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static char long_name[300 + 1];

static void test_odd_names(void)
{
	static const char *root[] = {
	    "",		 "/",  ".",	  "..",	  "../",
	    "x",	 "x/", "dup/",	  "dup/", ".shardfs",
	    ".shardfs/", "z",  long_name, "a\\b", NULL,
	};
	static const struct fake_dir dirs[] = {
	    {"", root},
	    {NULL, NULL},
	};
	struct fake f;
	struct ns *ns;
	struct ns_conf conf = {0};
	struct ns_attr a;
	char names[1024], msg[128];

	memset(long_name, 'n', 300);
	fake_init(&f, dirs);
	conf.store = &f.base;
	conf.metadata_ttl = 0;
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_prime(ns, msg, sizeof(msg)), 0);
	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "a\\b dup/ x/ z");
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "x", &a), 0);
	CHECK_INT(a.kind, NS_DIR); /* the directory wins */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, ".shardfs", &a), 0);
	CHECK_INT(a.kind, NS_CTL_DIR);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "..", &a), -ENOENT);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, long_name, &a), -ENAMETOOLONG);
	/* Listed once, whatever the number of lookups. */
	CHECK_INT(fake_calls(&f), 1);
	ns_free(ns);
}

static void test_relist(void)
{
	static const char *root1[] = {"keep", "gone", "flip", "d/", NULL};
	static const char *root2[] = {"flip/", "keep", "new", "d/", NULL};
	static const char *d1[] = {"in", NULL};
	static const struct fake_dir v1[] = {
	    {"", root1}, {"d/", d1}, {NULL, NULL}};
	static const struct fake_dir v2[] = {
	    {"", root2}, {"d/", d1}, {NULL, NULL}};
	struct fake f;
	struct ns *ns;
	struct ns_conf conf = {0};
	struct ns_attr keep, gone, flip, d, in, x;
	char names[256];

	fake_init(&f, v1);
	conf.store = &f.base;
	conf.metadata_ttl = 1;
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "keep", &keep), 0);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "gone", &gone), 0);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "flip", &flip), 0);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "d", &d), 0);
	CHECK_INT(ns_lookup(ns, d.ino, "in", &in), 0);
	ns_forget(ns, d.ino, 1); /* D stays: it is listed */
	CHECK_INT(fake_calls(&f), 2);

	pthread_mutex_lock(&f.lock);
	f.dirs = v2;
	pthread_mutex_unlock(&f.lock);
	usleep(1100 * 1000);
	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "d/ flip/ keep new");
	CHECK_INT(fake_calls(&f), 3);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "keep", &x), 0);
	CHECK_INT(x.ino, keep.ino); /* same name, same kind: same inode */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "d", &x), 0);
	CHECK_INT(x.ino, d.ino);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "flip", &x), 0);
	CHECK(x.ino != flip.ino); /* changed kind: a new inode */
	CHECK_INT(x.kind, NS_DIR);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "gone", &x), -ENOENT);
	/* Removed names live on while the kernel holds them. */
	CHECK_INT(ns_getattr(ns, gone.ino, &x), 0);
	CHECK_INT(ns_getattr(ns, flip.ino, &x), 0);
	ns_forget(ns, gone.ino, 1);
	ns_forget(ns, flip.ino, 1);
	CHECK_INT(ns_getattr(ns, gone.ino, &x), -ENOENT);
	CHECK_INT(ns_getattr(ns, flip.ino, &x), -ENOENT);
	CHECK_INT(ns_getattr(ns, in.ino, &x), 0);

	/* A failed relist keeps the old entries. */
	pthread_mutex_lock(&f.lock);
	f.fail = EIO;
	pthread_mutex_unlock(&f.lock);
	usleep(1100 * 1000);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "new", &x), 0);
	ns_free(ns);
}

static void test_list_error(void)
{
	static const char *root[] = {"a", NULL};
	static const struct fake_dir dirs[] = {{"", root}, {NULL, NULL}};
	struct fake f;
	struct ns *ns;
	struct ns_conf conf = {0};
	struct ns_attr a;
	char msg[128] = "";

	fake_init(&f, dirs);
	f.fail = EACCES;
	conf.store = &f.base;
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_prime(ns, msg, sizeof(msg)), -EACCES);
	CHECK_STR(msg, "fake failure");
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "a", &a), -EIO);
	pthread_mutex_lock(&f.lock);
	f.fail = 0;
	pthread_mutex_unlock(&f.lock);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "a", &a), 0); /* retried */
	CHECK_INT(fake_calls(&f), 3);
	ns_free(ns);
}

struct lookup_arg {
	struct ns *ns;
	int rc;
	uint64_t ino;
};

static void *lookup_thread(void *p)
{
	struct lookup_arg *la = p;
	struct ns_attr a;

	la->rc = ns_lookup(la->ns, NS_ROOT_INO, "a", &a);
	la->ino = la->rc == 0 ? a.ino : 0;
	return NULL;
}

static void test_concurrent_listing(void)
{
	static const char *root[] = {"a", NULL};
	static const struct fake_dir dirs[] = {{"", root}, {NULL, NULL}};
	struct lookup_arg la[6];
	pthread_t th[6];
	struct fake f;
	struct ns *ns;
	struct ns_conf conf = {0};

	fake_init(&f, dirs);
	f.hold = true;
	conf.store = &f.base;
	CHECK_INT(ns_new(&conf, &ns), 0);
	for (int i = 0; i < 6; i++) {
		la[i].ns = ns;
		pthread_create(&th[i], NULL, lookup_thread, &la[i]);
	}
	/* Let the first lister in and give the others time to queue. */
	pthread_mutex_lock(&f.lock);
	while (f.waiting == 0)
		pthread_cond_wait(&f.cv, &f.lock);
	pthread_mutex_unlock(&f.lock);
	usleep(100 * 1000);
	pthread_mutex_lock(&f.lock);
	f.hold = false;
	pthread_cond_broadcast(&f.cv);
	pthread_mutex_unlock(&f.lock);
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(la[i].rc, 0);
		CHECK_INT(la[i].ino, la[0].ino);
	}
	CHECK_INT(fake_calls(&f), 1);
	CHECK_INT(ns_nlookup(ns, la[0].ino), 6);
	ns_free(ns);
}

/* ---- tar shards as directories ---- */

/* Writes a tar of the entries E (NULL path ends) to DIR/NAME. */
struct tar_ent {
	const char *path;
	enum tarhdr_type type;
	const char *data; /* REG: contents; SYMLINK: target */
};

static void write_tar(const char *dir, const char *name,
		      const struct tar_ent *e, size_t cut)
{
	char path[4096];
	struct buf b;
	FILE *f;

	buf_init(&b, 1 << 20);
	for (; e->path; e++) {
		struct tarhdr_wentry w = {0};

		w.path = e->path;
		w.type = e->type;
		w.mode = 0644;
		w.mtime = 1700000000;
		if (e->type == TARHDR_SYMLINK)
			w.link = e->data;
		if (e->type == TARHDR_REG)
			w.size = strlen(e->data);
		CHECK_INT(tarhdr_write(&w, &b), 0);
		if (e->type == TARHDR_REG) {
			CHECK_INT(buf_append_str(&b, e->data), 0);
			CHECK_INT(tarhdr_write_pad(w.size, &b), 0);
		}
	}
	CHECK_INT(tarhdr_write_end(&b), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(b.data, 1, cut && cut < b.len ? cut : b.len, f) >
		      0);
		fclose(f);
	}
	buf_release(&b);
}

struct test_indexer {
	struct store *store;
	pthread_mutex_t lock;
	int calls;     /* lock */
	int hold_ms;   /* each call sleeps this long (concurrency test) */
	char last_etag[128];
};

/* Adds the members of the tar image DATA to B as shard 0. */
static bool scan_image(struct dsidx_builder *b, const char *data, size_t len)
{
	struct tarhdr_scan sc;
	struct tarhdr_entry e;
	uint64_t noff, nlen;
	bool damaged = false;
	int rc;

	tarhdr_scan_init(&sc, len, NULL);
	while ((rc = tarhdr_scan_next(&sc, (const unsigned char *)data, len,
				      0, &e, &noff, &nlen)) == TARHDR_ENTRY) {
		if (e.type == TARHDR_DIR)
			dsidx_builder_add_dir(b, e.path, 0755, e.mtime, 0);
		else if (e.type == TARHDR_SYMLINK)
			dsidx_builder_add_member(b, e.path, 0, 0, 0,
						 S_IFLNK | 0777, e.mtime, 0,
						 e.link);
		else if (e.type == TARHDR_REG)
			dsidx_builder_add_member(b, e.path, 0, e.data_offset,
						 e.size, S_IFREG | 0644,
						 e.mtime, 0, NULL);
	}
	damaged = rc < 0 || rc == TARHDR_NEED;
	tarhdr_scan_release(&sc);
	return damaged;
}

struct got {
	int err;
	char *data;
	size_t len;
};

static void got_done(void *arg, int err, char *data, size_t len,
		     const char *msg)
{
	struct got *g = arg;

	(void)msg;
	g->err = err;
	g->data = data;
	g->len = len;
}

/* ns_index_shard_fn: reads the whole shard (the local store completes
 * inline), scans it, builds the image. "fail*.tar" fail with -EIO. */
static int test_index(void *arg, const char *key, uint64_t size,
		      const char *etag, struct buf *out,
		      struct ns_shard_info *info, char *msg, size_t msglen)
{
	struct test_indexer *ix = arg;
	struct dsidx_builder *b;
	struct got g = {0};
	uint32_t idx;
	int rc;

	pthread_mutex_lock(&ix->lock);
	ix->calls++;
	snprintf(ix->last_etag, sizeof(ix->last_etag), "%s",
		 etag ? etag : "");
	pthread_mutex_unlock(&ix->lock);
	if (ix->hold_ms)
		usleep((useconds_t)ix->hold_ms * 1000);
	if (strncmp(key, "fail", 4) == 0) {
		snprintf(msg, msglen, "GET failed (test)");
		return -EIO;
	}
	rc = ix->store->ops->get_range(ix->store, key, 0, size, etag,
				       got_done, &g);
	if (rc || g.err) {
		snprintf(msg, msglen, "read failed");
		return rc ? rc : g.err;
	}
	CHECK_INT(dsidx_builder_new(NULL, &b), 0);
	CHECK_INT(dsidx_builder_add_shard(b, key, etag, size, &idx), 0);
	info->damaged = scan_image(b, g.data, g.len);
	if (info->damaged)
		snprintf(info->damage, sizeof(info->damage), "test damage");
	rc = dsidx_builder_finish(b, 1700000000, out);
	dsidx_builder_free(b);
	free(g.data);
	return rc;
}

struct shard_lookup_arg {
	struct ns *ns;
	uint64_t dir;
	int rc;
	uint64_t ino;
};

static void *shard_lookup_thread(void *p)
{
	struct shard_lookup_arg *la = p;
	struct ns_attr a;

	la->rc = ns_lookup(la->ns, la->dir, "z.txt", &a);
	la->ino = la->rc == 0 ? a.ino : 0;
	return NULL;
}

static const struct tar_ent tar_a[] = {
    {"x/", TARHDR_DIR, NULL},
    {"x/y.txt", TARHDR_REG, "why"},
    {"z.txt", TARHDR_REG, "zed!"},
    {"link", TARHDR_SYMLINK, "z.txt"},
    {"empty/", TARHDR_DIR, NULL},
    {NULL, 0, NULL},
};

static void check_member_read(struct store *st, struct ns *ns, uint64_t ino,
			      const char *want)
{
	struct ns_file f;
	struct got g = {0};

	CHECK_INT(ns_file(ns, ino, &f), 0);
	CHECK_INT(f.kind, NS_MEMBER);
	CHECK_INT(f.size, strlen(want));
	CHECK(!f.sparse);
	CHECK(f.etag && f.etag[0] == '"');
	CHECK_INT(st->ops->get_range(st, f.key, f.base, f.size, f.etag,
				     got_done, &g),
		  0);
	CHECK_INT(g.err, 0);
	CHECK(g.data && g.len == strlen(want) &&
	      memcmp(g.data, want, g.len) == 0);
	free(g.data);
	ns_file_release(&f);
}

static void test_shard_dirs(void)
{
	char tmpl[] = "/tmp/test_ns_tar.XXXXXX", names[1024], msg[256];
	const char *dir = mkdtemp(tmpl);
	struct test_indexer ix = {0};
	struct shard_lookup_arg la[4];
	struct ns_attr a, x, z, l, bad;
	struct store *st = NULL;
	struct ns_stats nst;
	struct ns *ns = NULL;
	pthread_t th[4];
	char *target;
	size_t base;

	CHECK(dir != NULL);
	write_tar(dir, "a.tar", tar_a, 0);
	write_tar(dir, "damaged.tar", tar_a, 512 * 4 + 2); /* cut in z */
	write_tar(dir, "fail.tar", tar_a, 0);
	write_file(dir, "plain.txt", "plain");
	CHECK_INT(store_local_new(dir, &st, msg, sizeof(msg)), 0);
	ix.store = st;
	pthread_mutex_init(&ix.lock, NULL);
	struct ns_conf conf = {.store = st, .tar_dirs = true,
			       .index_shard = test_index, .index_arg = &ix};
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_prime(ns, msg, sizeof(msg)), 0);
	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "a.tar/ damaged.tar/ fail.tar/ plain.txt");
	CHECK_INT(ix.calls, 0); /* indexed on first use only */

	/* Concurrent first lookups share one indexing. */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "a.tar", &a), 0);
	CHECK_INT(a.kind, NS_SHARD);
	ix.hold_ms = 100;
	for (int i = 0; i < 4; i++) {
		la[i].ns = ns;
		la[i].dir = a.ino;
		pthread_create(&th[i], NULL, shard_lookup_thread, &la[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(la[i].rc, 0);
		CHECK_INT(la[i].ino, la[0].ino);
	}
	ix.hold_ms = 0;
	CHECK_INT(ix.calls, 1);
	CHECK(ix.last_etag[0] == '"'); /* the listing's ETag */
	CHECK_INT(ns_nlookup(ns, la[0].ino), 4);
	ns_forget(ns, la[0].ino, 4);

	CHECK_INT(names_of(ns, a.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "empty/ x/ link@ z.txt");
	CHECK_INT(ns_lookup(ns, a.ino, "z.txt", &z), 0);
	CHECK_INT(z.kind, NS_MEMBER);
	CHECK_INT(z.size, 4);
	CHECK_INT(z.mtime, 1700000000);
	check_member_read(st, ns, z.ino, "zed!");
	CHECK_INT(ns_lookup(ns, a.ino, "x", &x), 0);
	CHECK_INT(x.kind, NS_IDIR);
	CHECK_INT(names_of(ns, x.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "y.txt");
	CHECK_INT(ns_lookup(ns, a.ino, "link", &l), 0);
	CHECK_INT(l.kind, NS_SYMLINK);
	CHECK_INT(l.size, 5);
	CHECK_INT(ns_readlink(ns, l.ino, &target), 0);
	CHECK_STR(target, "z.txt");
	free(target);
	CHECK_INT(ns_readlink(ns, z.ino, &target), -EINVAL);
	CHECK_INT(ns_file(ns, l.ino, &(struct ns_file){0}), -EINVAL);
	CHECK_INT(ns_lookup(ns, a.ino, "nope", &bad), -ENOENT);
	CHECK_INT(ns_lookup(ns, z.ino, "nope", &bad), -ENOTDIR);

	/* Damaged: the members before the damage. */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "damaged.tar", &bad), 0);
	CHECK_INT(names_of(ns, bad.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "x/");
	ns_forget(ns, bad.ino, 1);
	/* Unreadable: EIO, and no new attempt right away. */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "fail.tar", &bad), 0);
	base = (size_t)ix.calls;
	CHECK_INT(ns_lookup(ns, bad.ino, "z.txt", &x), -EIO);
	CHECK_INT(ns_opendir(ns, bad.ino, &(struct ns_dir *){NULL}), -EIO);
	CHECK_INT(ix.calls, (int)base + 1);
	ns_forget(ns, bad.ino, 1);

	ns_get_stats(ns, &nst);
	CHECK_INT(nst.shards_indexed, 2);
	CHECK_INT(nst.shards_scanned, 2);
	CHECK_INT(nst.shards_damaged, 1);
	CHECK_INT(nst.shards_failed, 1);
	CHECK(!nst.index_loaded);

	/* Lazy inodes die with their last forget; the shard dir lives. */
	base = ns_count(ns);
	ns_forget(ns, z.ino, 1);
	ns_forget(ns, l.ino, 1);
	CHECK_INT(ns_count(ns), base - 2);
	CHECK_INT(ns_getattr(ns, z.ino, &bad), -ENOENT);
	CHECK_INT(ns_lookup(ns, a.ino, "z.txt", &bad), 0);
	CHECK(bad.ino != z.ino); /* a new inode, never a reused number */
	ns_free(ns);

	/* tar_dirs off: shards are files. */
	conf.tar_dirs = false;
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "a.tar damaged.tar fail.tar plain.txt");
	ns_free(ns);
	store_free(st);
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
}

/* ---- the dataset index mode ---- */

static int no_list(struct store *s, const char *dir, struct store_listing *out,
		   char *msg, size_t msglen)
{
	(void)s;
	(void)dir;
	(void)out;
	snprintf(msg, msglen, "no LIST in dataset index mode");
	CHECK(!"list() called in dataset index mode");
	return -EIO;
}

static const struct store_ops no_list_ops = {
    .list = no_list,
    .describe = fake_describe,
};

static void make_index(struct ns_index *idx)
{
	static const struct dsidx_segment segs[] = {
	    {100, 50, 20000}, {1000, 24, 20050}, {5000, 10, 20074}};
	struct dsidx_builder *b;
	struct buf out;
	char longname[300 + 1], path[320];
	uint32_t s0, s1;

	memset(longname, 'L', 300);
	longname[300] = '\0';
	snprintf(path, sizeof(path), "dir/%s", longname);
	buf_init(&out, 1 << 20);
	CHECK_INT(dsidx_builder_new(NULL, &b), 0);
	CHECK_INT(dsidx_builder_add_shard(b, "s0.tar", "\"e0\"", 30000, &s0),
		  0);
	CHECK_INT(dsidx_builder_add_shard(b, "sub/s1.tar", "", 2048, &s1), 0);
	CHECK_INT(dsidx_builder_add_member(b, "dir/a", s0, 512, 10,
					   S_IFREG | 0644, 1600000000, 7, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_member(b, "dir/sub/b", s1, 1024, 3,
					   S_IFREG | 0644, 1600000000, 0, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_member(b, path, s0, 0, 1, S_IFREG | 0644,
					   1600000000, 0, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_member(b, "l", 0, 0, 0, S_IFLNK | 0777,
					   1600000000, 0, "dir/a"),
		  0);
	CHECK_INT(dsidx_builder_add_member(b, ".shardfs", s0, 0, 1,
					   S_IFREG | 0644, 1600000000, 0, NULL),
		  0);
	CHECK_INT(dsidx_builder_add_sparse(b, "sparse", s0, 20000, 6000, segs,
					   3, S_IFREG | 0644, 1600000000, 0),
		  0);
	CHECK_INT(dsidx_builder_finish(b, 1700000000, &out), 0);
	dsidx_builder_free(b);
	memset(idx, 0, sizeof(*idx));
	idx->bytes = buf_detach(&out, &idx->len);
	CHECK_INT(dsidx_open(idx->bytes, idx->len, &idx->x, NULL, 0), 0);
}

static int stats_calls;

static int test_stats_fn(void *arg, struct buf *out)
{
	(void)arg;
	return buf_printf(out, "{\"n\": %d}\n", ++stats_calls);
}

static void test_dataset_index(void)
{
	struct store st = {.ops = &no_list_ops};
	struct ns_attr d, a, sub, b, l, sp, x, ctl;
	struct ns_stats nst;
	struct ns_file f;
	struct rd_seg *segs;
	char names[1024], msg[128], *target;
	size_t base, n;
	struct ns *ns;
	struct ns_conf conf = {.store = &st, .tar_dirs = true};

	make_index(&conf.index);
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_prime(ns, msg, sizeof(msg)), 0);
	/* Nothing made up front: the root, .shardfs and its file. */
	CHECK_INT(ns_count(ns), 3);
	ns_get_stats(ns, &nst);
	CHECK(nst.index_loaded);
	CHECK_INT(nst.index_members, 6);
	CHECK_INT(nst.index_shards, 2);

	/* .shardfs and the 300-byte name are not shown. */
	CHECK_INT(names_of(ns, NS_ROOT_INO, names, sizeof(names)), 0);
	CHECK_STR(names, "dir/ l@ sparse");
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, ".shardfs", &ctl), 0);
	CHECK_INT(ctl.kind, NS_CTL_DIR);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "dir", &d), 0);
	CHECK_INT(d.kind, NS_IDIR);
	CHECK_INT(names_of(ns, d.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "sub/ a");
	CHECK_INT(ns_lookup(ns, d.ino, "a", &a), 0);
	CHECK_INT(a.kind, NS_MEMBER);
	CHECK_INT(a.size, 10);
	CHECK_INT(a.mtime, 1600000000);
	CHECK_INT(a.mtime_nsec, 7);
	CHECK_INT(ns_file(ns, a.ino, &f), 0);
	CHECK_STR(f.key, "s0.tar");
	CHECK_STR(f.etag, "\"e0\"");
	CHECK_INT(f.base, 512);
	ns_file_release(&f);
	CHECK_INT(ns_lookup(ns, d.ino, "sub", &sub), 0);
	CHECK_INT(ns_lookup(ns, sub.ino, "b", &b), 0);
	CHECK_INT(ns_file(ns, b.ino, &f), 0);
	CHECK_STR(f.key, "sub/s1.tar");
	CHECK(f.etag == NULL); /* unknown ETag: no If-Match */
	CHECK_INT(f.base, 1024);
	ns_file_release(&f);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "l", &l), 0);
	CHECK_INT(ns_readlink(ns, l.ino, &target), 0);
	CHECK_STR(target, "dir/a");
	free(target);

	/* A sparse member: the segments around a read. */
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "sparse", &sp), 0);
	CHECK_INT(sp.size, 6000);
	CHECK_INT(ns_file(ns, sp.ino, &f), 0);
	CHECK(f.sparse);
	CHECK_INT(ns_file_segs(&f, 0, 6000, &segs, &n), 0);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_INT(segs[1].file_off, 1000);
		CHECK_INT(segs[1].len, 24);
		CHECK_INT(segs[1].obj_off, 20050);
	}
	free(segs);
	CHECK_INT(ns_file_segs(&f, 1010, 100, &segs, &n), 0);
	CHECK_INT(n, 1);
	free(segs);
	CHECK_INT(ns_file_segs(&f, 2000, 1000, &segs, &n), 0);
	CHECK_INT(n, 0); /* a hole */
	free(segs);
	CHECK_INT(ns_file_segs(&f, 5500, 100, &segs, &n), 0);
	CHECK_INT(n, 0); /* past the last segment */
	free(segs);
	ns_file_release(&f);

	CHECK_INT(ns_lookup(ns, d.ino, "nope", &x), -ENOENT);
	{
		char longname[300 + 1];

		memset(longname, 'L', 300);
		longname[300] = '\0';
		CHECK_INT(ns_lookup(ns, d.ino, longname, &x), -ENAMETOOLONG);
	}

	/* Forget frees the lazy inodes; a new lookup makes new ones. */
	base = ns_count(ns);
	CHECK_INT(base, 3 + 6);
	ns_forget(ns, b.ino, 1);
	ns_forget(ns, sub.ino, 1);
	ns_forget(ns, a.ino, 1);
	ns_forget(ns, d.ino, 1);
	ns_forget(ns, l.ino, 1);
	ns_forget(ns, sp.ino, 1);
	CHECK_INT(ns_count(ns), 3);
	CHECK_INT(ns_getattr(ns, a.ino, &x), -ENOENT);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, "dir", &x), 0);
	CHECK(x.ino != d.ino);
	ns_free(ns);
}

static void test_stats_file(void)
{
	static const char *root[] = {"a", NULL};
	static const struct fake_dir dirs[] = {{"", root}, {NULL, NULL}};
	struct ns_attr ctl, s1, s2, s3;
	struct ns_file f;
	struct fake fk;
	struct ns *ns;
	struct ns_conf conf = {0};
	char names[256];

	fake_init(&fk, dirs);
	conf.store = &fk.base;
	conf.stats_fn = test_stats_fn;
	CHECK_INT(ns_new(&conf, &ns), 0);
	CHECK_INT(ns_lookup(ns, NS_ROOT_INO, ".shardfs", &ctl), 0);
	CHECK_INT(names_of(ns, ctl.ino, names, sizeof(names)), 0);
	CHECK_STR(names, "stats version");
	CHECK_INT(ns_lookup(ns, ctl.ino, "stats", &s1), 0);
	CHECK(s1.volatile_attr);
	CHECK_INT(s1.size, 4096); /* padded to a page */
	CHECK_INT(ns_getattr(ns, s1.ino, &s2), 0);
	CHECK(s2.mtime > s1.mtime ||
	      (s2.mtime == s1.mtime && s2.mtime_nsec > s1.mtime_nsec));
	CHECK_INT(ns_file(ns, s1.ino, &f), 0);
	CHECK(strncmp(f.data, "{\"n\": 2}\n   ", 12) == 0);
	CHECK_INT(f.size, 4096);
	CHECK(f.data[4095] == '\n');
	ns_file_release(&f);
	CHECK_INT(ns_getattr(ns, s1.ino, &s3), 0);
	CHECK_INT(stats_calls, 3);
	ns_free(ns);
}

int main(void)
{
	log_set_level(LOG_LVL_ERROR);
	test_store_local();
	test_local();
	test_odd_names();
	test_relist();
	test_list_error();
	test_concurrent_listing();
	test_shard_dirs();
	test_dataset_index();
	test_stats_file();
	return check_summary("test_ns");
}
