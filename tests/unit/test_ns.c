// SPDX-License-Identifier: MIT
/*
 * Unit tests of the namespace: against the local store (a temporary
 * directory) for lookups, readdir, the control directory and lookup-count
 * lifetimes; against a fake store for odd names, relisting with a TTL,
 * listing errors and one listing shared by concurrent lookups.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "ns.h"
#include "store_local.h"

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
	for (size_t i = 0; i < d->n; i++)
		pos += (size_t)snprintf(out + pos, outlen - pos, "%s%s%s",
					i ? " " : "", d->ents[i].name,
					ns_kind_is_dir(d->ents[i].kind) ? "/"
									: "");
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
	struct ns_conf conf;
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
	struct ns_conf conf;
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

int main(void)
{
	log_set_level(LOG_LVL_ERROR);
	test_store_local();
	test_local();
	test_odd_names();
	test_relist();
	test_list_error();
	test_concurrent_listing();
	return check_summary("test_ns");
}
