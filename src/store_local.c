// SPDX-License-Identifier: MIT
/*
 * The store over a local directory. Every key is resolved with openat()
 * relative to one descriptor of the root, opened once in
 * store_local_new(); keys are checked lexically first (no leading '/', no
 * ".." component), so no key reaches outside the root by itself.
 *
 * Invariants: the store is immutable after construction except for
 * tmp_seq and the request counters (atomics), so all operations are
 * thread-safe without a lock. Counters count calls of the operations,
 * as an S3 store would count requests (stats()).
 * get_range() completes inline: DONE runs on the caller's thread before
 * get_range() returns.
 */
#include "store_local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "log.h"

struct store_local {
	struct store base;
	int rootfd;		  /* O_DIRECTORY descriptor of the root */
	char *root;		  /* owned; for describe() and messages */
	char *cache_id;		  /* owned; "file://" + root */
	_Atomic uint64_t tmp_seq; /* names of put()'s temporary files */
	/* Request counters (stats()). */
	_Atomic uint64_t n_get, n_list, n_head, n_put, n_err, n_bytes;
};

/* Counts one finished operation: *KIND, and an error when RC < 0. */
static void count_op(struct store_local *sl, _Atomic uint64_t *kind, int rc,
		     uint64_t bytes)
{
	atomic_fetch_add(kind, 1);
	if (rc < 0)
		atomic_fetch_add(&sl->n_err, 1);
	else
		atomic_fetch_add(&sl->n_bytes, bytes);
}

static struct store_local *to_local(struct store *s)
{
	return (struct store_local *)s;
}

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (!msg || msglen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

int store_local_check_key(const char *key)
{
	const char *p = key;
	size_t len = strlen(key);

	if (len >= PATH_MAX || key[0] == '/')
		return -EINVAL;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

/* The synthetic ETag of a regular file: (size, mtime in ns, inode). */
static char *make_etag(const struct stat *st)
{
	char tmp[80];
	uint64_t ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
		      (uint64_t)st->st_mtim.tv_nsec;

	snprintf(tmp, sizeof(tmp), "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"",
		 (uint64_t)st->st_size, ns, (uint64_t)st->st_ino);
	return strdup(tmp);
}

static int fill_entry(struct store_entry *e, const char *name,
		      const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->mtime = (int64_t)st->st_mtim.tv_sec;
	if (S_ISDIR(st->st_mode)) {
		e->is_dir = true;
		return 0;
	}
	e->size = (uint64_t)st->st_size;
	e->etag = make_etag(st);
	if (!e->etag) {
		free(e->name);
		e->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Classifies NAME in DFD by following links; 1 = keep, 0 = skip. */
static int classify(int dfd, const char *dir, const char *name, struct stat *st)
{
	if (fstatat(dfd, name, st, 0) != 0) {
		struct stat lst;
		int err = errno;

		if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(lst.st_mode))
			log_debug("local store: skipping dangling link %s%s",
				  dir, name);
		else
			log_debug("local store: skipping %s%s: %s", dir, name,
				  strerror(err));
		return 0;
	}
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
		log_debug("local store: skipping %s%s: not a regular file or "
			  "directory",
			  dir, name);
		return 0;
	}
	return 1;
}

static int push_entry(struct store_listing *out, size_t *alloc,
		      const char *name, const struct stat *st)
{
	if (out->n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 64;
		struct store_entry *ne =
		    realloc(out->entries, na * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		out->entries = ne;
		*alloc = na;
	}
	int rc = fill_entry(&out->entries[out->n], name, st);
	if (rc == 0)
		out->n++;
	return rc;
}

static int read_dir(DIR *d, const char *dir, struct store_listing *out)
{
	size_t alloc = 0;
	struct dirent *de;
	struct stat st;
	int rc = 0;

	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			rc = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (!classify(dirfd(d), dir, de->d_name, &st))
			continue;
		rc = push_entry(out, &alloc, de->d_name, &st);
		if (rc)
			break;
	}
	return rc;
}

static int local_list(struct store *s, const char *dir,
		      struct store_listing *out, char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);
	size_t dlen = strlen(dir);
	int fd, rc;
	DIR *d;

	out->entries = NULL;
	out->n = 0;
	if (store_local_check_key(dir) || (dlen > 0 && dir[dlen - 1] != '/')) {
		set_msg(msg, msglen, "invalid directory key '%s'", dir);
		return -EINVAL;
	}
	fd = openat(sl->rootfd, dlen ? dir : ".",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		count_op(sl, &sl->n_list, rc, 0);
		set_msg(msg, msglen, "%s/%s: %s", sl->root, dir, strerror(-rc));
		return rc;
	}
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		set_msg(msg, msglen, "%s/%s: %s", sl->root, dir, strerror(-rc));
		return rc;
	}
	rc = read_dir(d, dir, out);
	closedir(d);
	count_op(sl, &sl->n_list, rc, 0);
	if (rc) {
		store_listing_release(out);
		set_msg(msg, msglen, "%s/%s: %s", sl->root, dir, strerror(-rc));
		return rc;
	}
	if (out->n > 1)
		qsort(out->entries, out->n, sizeof(out->entries[0]), cmp_entry);
	return 0;
}

static int local_head(struct store *s, const char *key, struct store_entry *out,
		      char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);
	struct stat st;
	int rc;

	memset(out, 0, sizeof(*out));
	if (store_local_check_key(key) || key[0] == '\0') {
		set_msg(msg, msglen, "invalid key '%s'", key);
		return -EINVAL;
	}
	rc = fstatat(sl->rootfd, key, &st, 0) != 0 ? -errno : 0;
	count_op(sl, &sl->n_head, rc, 0);
	if (rc) {
		set_msg(msg, msglen, "%s/%s: %s", sl->root, key, strerror(-rc));
		return rc == -ENOTDIR ? -ENOENT : rc;
	}
	if (!S_ISREG(st.st_mode)) {
		set_msg(msg, msglen, "%s/%s: not a regular file", sl->root,
			key);
		return -ENOENT;
	}
	return fill_entry(out, key, &st);
}

/* Reads exactly LEN bytes at OFF of FD into a new buffer. */
static int read_exact(int fd, uint64_t off, uint64_t len, char **out, char *msg,
		      size_t msglen)
{
	char *buf = malloc(len ? (size_t)len : 1);
	uint64_t got = 0;

	if (!buf)
		return -ENOMEM;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, (size_t)(len - got),
				  (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -EIO;

			set_msg(msg, msglen, "%s",
				n < 0 ? strerror(errno)
				      : "short read: object shrank");
			free(buf);
			return rc;
		}
		got += (uint64_t)n;
	}
	*out = buf;
	return 0;
}

/* Opens KEY and checks it against IF_MATCH and the range end. */
static int open_checked(struct store_local *sl, const char *key, uint64_t end,
			const char *if_match, int *fdp, char *msg,
			size_t msglen)
{
	struct stat st;
	int fd, rc = 0;

	fd = openat(sl->rootfd, key, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		set_msg(msg, msglen, "%s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		set_msg(msg, msglen, "not a regular file");
		rc = -EIO;
	} else if (if_match) {
		char *etag = make_etag(&st);

		if (!etag) {
			rc = -ENOMEM;
		} else if (strcmp(etag, if_match) != 0) {
			set_msg(msg, msglen,
				"object changed: ETag %s, expected %s", etag,
				if_match);
			rc = -ESTALE;
		}
		free(etag);
	}
	if (rc == 0 && (uint64_t)st.st_size < end) {
		set_msg(msg, msglen,
			"object is %" PRIu64 " bytes, range ends at %" PRIu64,
			(uint64_t)st.st_size, end);
		rc = -EIO;
	}
	if (rc)
		close(fd);
	else
		*fdp = fd;
	return rc;
}

static int local_get_range(struct store *s, const char *key, uint64_t off,
			   uint64_t len, const char *if_match,
			   store_done_fn *done, void *arg)
{
	struct store_local *sl = to_local(s);
	char msg[256] = "";
	char *data = NULL;
	int fd = -1, rc;

	if (store_local_check_key(key) || key[0] == '\0')
		return -EINVAL;
	if (len > SIZE_MAX || off > UINT64_MAX - len)
		return -EINVAL;
	rc = open_checked(sl, key, off + len, if_match, &fd, msg, sizeof(msg));
	if (rc == 0) {
		rc = read_exact(fd, off, len, &data, msg, sizeof(msg));
		close(fd);
	}
	count_op(sl, &sl->n_get, rc, len);
	if (rc) {
		done(arg, rc, NULL, 0, msg[0] ? msg : strerror(-rc));
		return 0;
	}
	done(arg, 0, data, (size_t)len, NULL);
	return 0;
}

/* Opens (creating as needed) the directory part of KEY; *BASE points to
 * the last component. Returns a descriptor or a negative errno. */
static int open_parent(struct store_local *sl, const char *key,
		       const char **base)
{
	const char *p = key, *slash;
	char comp[NAME_MAX + 1];
	int dfd = dup(sl->rootfd);

	if (dfd < 0)
		return -errno;
	while ((slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);
		int nfd;

		if (n > NAME_MAX) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			memcpy(comp, p, n);
			comp[n] = '\0';
			if (mkdirat(dfd, comp, 0755) != 0 && errno != EEXIST) {
				int rc = -errno;
				close(dfd);
				return rc;
			}
			nfd = openat(dfd, comp,
				     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			close(dfd);
			if (nfd < 0)
				return -errno;
			dfd = nfd;
		}
		p = slash + 1;
	}
	*base = p;
	return dfd;
}

static int local_put(struct store *s, const char *key, const void *data,
		     size_t len, char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);
	const char *base = NULL;
	char tmp[64];
	int dfd, fd, rc;

	if (store_local_check_key(key) || key[0] == '\0' ||
	    key[strlen(key) - 1] == '/') {
		set_msg(msg, msglen, "invalid key '%s'", key);
		return -EINVAL;
	}
	dfd = open_parent(sl, key, &base);
	if (dfd < 0) {
		set_msg(msg, msglen, "%s/%s: %s", sl->root, key,
			strerror(-dfd));
		return dfd;
	}
	snprintf(tmp, sizeof(tmp), ".shardfs-tmp.%ld.%" PRIu64, (long)getpid(),
		 atomic_fetch_add(&sl->tmp_seq, 1));
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out_dir;
	}
	rc = fdio_write_all(fd, data, len);
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dfd, tmp, dfd, base) != 0)
		rc = -errno;
	if (rc)
		unlinkat(dfd, tmp, 0);
out_dir:
	close(dfd);
	count_op(sl, &sl->n_put, rc, 0);
	if (rc)
		set_msg(msg, msglen, "%s/%s: %s", sl->root, key, strerror(-rc));
	return rc;
}

static int local_get_object(struct store *s, const char *key, size_t cap,
			    char **data, size_t *len, char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);
	struct stat st = {0};
	char *buf = NULL;
	int fd, rc = 0;

	*data = NULL;
	*len = 0;
	if (store_local_check_key(key) || key[0] == '\0') {
		set_msg(msg, msglen, "invalid key '%s'", key);
		return -EINVAL;
	}
	fd = openat(sl->rootfd, key, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		rc = errno == ENOTDIR ? -ENOENT : errno ? -errno : -EIO;
	else if (fstat(fd, &st) != 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = S_ISDIR(st.st_mode) ? -ENOENT : -EIO;
	else if ((uint64_t)st.st_size > cap)
		rc = -E2BIG;
	if (rc == 0)
		rc = read_exact(fd, 0, (uint64_t)st.st_size, &buf, msg, msglen);
	if (fd >= 0)
		close(fd);
	count_op(sl, &sl->n_get, rc, rc ? 0 : (uint64_t)st.st_size);
	if (rc) {
		if (rc == -E2BIG)
			set_msg(msg, msglen, "%s/%s: larger than %zu bytes",
				sl->root, key, cap);
		else
			set_msg(msg, msglen, "%s/%s: %s", sl->root, key,
				strerror(-rc));
		return rc;
	}
	/* NUL-terminated, as the S3 store's bodies are. */
	*data = realloc(buf, (size_t)st.st_size + 1);
	if (!*data) {
		free(buf);
		return -ENOMEM;
	}
	(*data)[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return 0;
}

static void local_stats(struct store *s, struct store_stats *out)
{
	struct store_local *sl = to_local(s);

	memset(out, 0, sizeof(*out));
	out->gets = atomic_load(&sl->n_get);
	out->lists = atomic_load(&sl->n_list);
	out->heads = atomic_load(&sl->n_head);
	out->puts = atomic_load(&sl->n_put);
	out->errors = atomic_load(&sl->n_err);
	out->bytes_in = atomic_load(&sl->n_bytes);
	/* A pread() takes microseconds; latencies are not measured
	 * (lat_known stays false and the statistics say so). */
}

static const char *local_describe(struct store *s)
{
	return to_local(s)->root;
}

static const char *local_cache_id(struct store *s)
{
	return to_local(s)->cache_id;
}

static void local_free(struct store *s)
{
	struct store_local *sl = to_local(s);

	close(sl->rootfd);
	free(sl->cache_id);
	free(sl->root);
	free(sl);
}

/* ---- writing (pack): put_async, uploads in parts, del ---- */

/*
 * An object being written in parts: a temporary file next to KEY, renamed
 * over KEY by upload_complete(). Parts are written where they belong
 * (pwrite at their offset); a part that is all zeros is not written at
 * all, so zeros become holes (a sparse source stays sparse), and
 * upload_complete() sets the length.
 */
struct store_upload {
	int dfd;	      /* the key's directory */
	int fd;		      /* the temporary file */
	char *base;	      /* the key's last component */
	char tmp[64];	      /* the temporary file's name in dfd */
	_Atomic uint64_t end; /* bytes the object spans so far */
};

static int local_put_async(struct store *s, const char *key, const void *data,
			   size_t len, store_put_done_fn *done, void *arg)
{
	char msg[512] = "";
	int rc = local_put(s, key, data, len, msg, sizeof(msg));

	done(arg, rc, rc ? msg : NULL);
	return 0;
}

static void upload_release(struct store_upload *u, bool unlink_tmp)
{
	if (u->fd >= 0)
		close(u->fd);
	if (unlink_tmp)
		unlinkat(u->dfd, u->tmp, 0);
	close(u->dfd);
	free(u->base);
	free(u);
}

static int local_upload_begin(struct store *s, const char *key,
			      struct store_upload **out, char *msg,
			      size_t msglen)
{
	struct store_local *sl = to_local(s);
	struct store_upload *u;
	const char *base = NULL;
	int dfd, rc;

	if (store_local_check_key(key) || key[0] == '\0' ||
	    key[strlen(key) - 1] == '/') {
		set_msg(msg, msglen, "invalid key '%s'", key);
		return -EINVAL;
	}
	dfd = open_parent(sl, key, &base);
	if (dfd < 0) {
		set_msg(msg, msglen, "%s/%s: %s", sl->root, key,
			strerror(-dfd));
		return dfd;
	}
	u = calloc(1, sizeof(*u));
	if (!u || !(u->base = strdup(base))) {
		free(u);
		close(dfd);
		set_msg(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	u->dfd = dfd;
	atomic_init(&u->end, 0);
	snprintf(u->tmp, sizeof(u->tmp), ".shardfs-tmp.%ld.%" PRIu64,
		 (long)getpid(), atomic_fetch_add(&sl->tmp_seq, 1));
	u->fd =
	    openat(dfd, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (u->fd < 0) {
		rc = -errno;
		set_msg(msg, msglen, "%s/%s: %s", sl->root, key, strerror(-rc));
		upload_release(u, false);
		return rc;
	}
	*out = u;
	return 0;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	static const unsigned char zero[4096];

	while (len > 0) {
		size_t n = len < sizeof(zero) ? len : sizeof(zero);

		if (memcmp(p, zero, n) != 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

static int pwrite_all(int fd, const char *p, size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int local_upload_part(struct store *s, struct store_upload *u,
			     uint32_t number, uint64_t offset, const void *data,
			     size_t len, store_put_done_fn *done, void *arg)
{
	struct store_local *sl = to_local(s);
	uint64_t end = offset + len, cur = atomic_load(&u->end);
	char msg[512] = "";
	int rc = 0;

	if (number < 1 || offset > UINT64_MAX - len || offset > INT64_MAX)
		return -EINVAL;
	if (!all_zero(data, len))
		rc = pwrite_all(u->fd, data, len, offset);
	while (!rc && cur < end &&
	       !atomic_compare_exchange_weak(&u->end, &cur, end))
		;
	count_op(sl, &sl->n_put, rc, 0);
	if (rc)
		set_msg(msg, sizeof(msg), "%s/%s: %s", sl->root, u->base,
			strerror(-rc));
	done(arg, rc, rc ? msg : NULL);
	return 0;
}

static int local_upload_complete(struct store *s, struct store_upload *u,
				 uint32_t nparts, char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);
	int rc = 0;

	(void)nparts;
	if (ftruncate(u->fd, (off_t)atomic_load(&u->end)) != 0 ||
	    fsync(u->fd) != 0)
		rc = -errno;
	if (close(u->fd) != 0 && !rc)
		rc = -errno;
	u->fd = -1;
	if (!rc && renameat(u->dfd, u->tmp, u->dfd, u->base) != 0)
		rc = -errno;
	if (rc) {
		set_msg(msg, msglen, "%s/.../%s: %s", sl->root, u->base,
			strerror(-rc));
		/* The upload stays until upload_abort(), as on S3. */
		u->fd = openat(u->dfd, u->tmp, O_WRONLY | O_CLOEXEC);
		return rc;
	}
	upload_release(u, false);
	return 0;
}

static int local_upload_abort(struct store *s, struct store_upload *u,
			      char *msg, size_t msglen)
{
	(void)s;
	(void)msg;
	(void)msglen;
	upload_release(u, true);
	return 0;
}

static int local_del(struct store *s, const char *key, char *msg, size_t msglen)
{
	struct store_local *sl = to_local(s);

	if (store_local_check_key(key) || key[0] == '\0') {
		set_msg(msg, msglen, "invalid key '%s'", key);
		return -EINVAL;
	}
	if (unlinkat(sl->rootfd, key, 0) != 0 && errno != ENOENT &&
	    errno != ENOTDIR) {
		int rc = -errno;

		set_msg(msg, msglen, "%s/%s: %s", sl->root, key, strerror(-rc));
		return rc;
	}
	return 0;
}

static const struct store_ops local_ops = {
    .list = local_list,
    .head = local_head,
    .get_range = local_get_range,
    .put = local_put,
    .get_object = local_get_object,
    .stats = local_stats,
    .describe = local_describe,
    .cache_id = local_cache_id,
    .put_async = local_put_async,
    .upload_begin = local_upload_begin,
    .upload_part = local_upload_part,
    .upload_complete = local_upload_complete,
    .upload_abort = local_upload_abort,
    .del = local_del,
    .free = local_free,
};

int store_local_new(const char *dir, struct store **out, char *msg,
		    size_t msglen)
{
	struct store_local *sl;
	char *real;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;

		set_msg(msg, msglen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	sl = calloc(1, sizeof(*sl));
	real = realpath(dir, NULL);
	if (!real)
		real = strdup(dir);
	if (sl && real && asprintf(&sl->cache_id, "file://%s", real) < 0)
		sl->cache_id = NULL;
	if (!sl || !real || !sl->cache_id) {
		if (sl)
			free(sl->cache_id);
		free(sl);
		free(real);
		close(fd);
		set_msg(msg, msglen, "%s: %s", dir, strerror(ENOMEM));
		return -ENOMEM;
	}
	sl->base.ops = &local_ops;
	sl->rootfd = fd;
	sl->root = real;
	atomic_init(&sl->tmp_seq, 0);
	*out = &sl->base;
	return 0;
}
