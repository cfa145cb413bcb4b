// SPDX-License-Identifier: MIT
/*
 * The on-disk cache of shard indexes (see shardcache.h for the layout and
 * the rules). Entries are addressed by content (a SHA-256 of where the
 * shard lives and which version it is), so an entry never needs to be
 * invalidated: a changed shard has another ETag, hence another name.
 * Stale entries are never removed here; the directory is the user's to
 * clean (entries are small: about 70 bytes per member).
 *
 * Every file operation is relative to a descriptor of the directory
 * (openat and friends). Threading: no mutable state after open; entries
 * are written to unique temporary names and renamed, so concurrent
 * writers (threads or processes) of one entry are harmless.
 */
#include "shardcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "dsidx.h"
#include "fdio.h"
#include "log.h"

/* The largest entry loaded (a one-shard index of ~15 million members). */
#define ENTRY_MAX ((size_t)1 << 30)
#define NAME_LEN  64 /* hex SHA-256 */

struct shardcache {
	char *dir; /* owned */
	int dfd;   /* the directory, O_PATH-like (O_DIRECTORY) */
};

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (msg && msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

/* The default directory (caller frees), or NULL with MSG set. */
static char *default_dir(char *msg, size_t msglen)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *dir = NULL;
	int rc;

	/* The XDG spec: a relative XDG_CACHE_HOME is invalid, ignore it. */
	if (xdg && xdg[0] == '/')
		rc = asprintf(&dir, "%s/shardfs/shards", xdg);
	else if (home && home[0] == '/')
		rc = asprintf(&dir, "%s/.cache/shardfs/shards", home);
	else {
		set_msg(msg, msglen,
			"no cache directory: set --cache-dir, XDG_CACHE_HOME "
			"or HOME");
		return NULL;
	}
	if (rc < 0) {
		set_msg(msg, msglen, "out of memory");
		return NULL;
	}
	return dir;
}

int shardcache_open(const char *dir, struct shardcache **out, char *msg,
		    size_t msglen)
{
	struct shardcache *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		set_msg(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	c->dfd = -1;
	c->dir = dir ? strdup(dir) : default_dir(msg, msglen);
	if (!c->dir) {
		rc = dir ? -ENOMEM : -ENOENT;
		goto fail;
	}
	rc = fdio_mkdirs(c->dir, 0700);
	if (rc == 0) {
		c->dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = c->dfd < 0 ? -errno : 0;
	}
	if (rc) {
		set_msg(msg, msglen, "cache directory %s: %s", c->dir,
			strerror(-rc));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	shardcache_close(c);
	return rc;
}

void shardcache_close(struct shardcache *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	free(c->dir);
	free(c);
}

const char *shardcache_dir(const struct shardcache *c)
{
	return c->dir;
}

/* NAME (NAME_LEN + 1 bytes): hex SHA-256 of "id\0key\0etag\0size". */
static int entry_name(const char *id, const char *key, const char *etag,
		      uint64_t size, char *name)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char sz[24];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	if (!ctx)
		return -ENOMEM;
	snprintf(sz, sizeof(sz), "%" PRIu64, size);
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, id, strlen(id) + 1) &&
	     EVP_DigestUpdate(ctx, key, strlen(key) + 1) &&
	     EVP_DigestUpdate(ctx, etag, strlen(etag) + 1) &&
	     EVP_DigestUpdate(ctx, sz, strlen(sz)) &&
	     EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen == NAME_LEN / 2;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	for (size_t i = 0; i < mdlen; i++)
		snprintf(name + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* Reads the whole regular file NAME into B (cap ENTRY_MAX). */
static int read_entry(const struct shardcache *c, const char *name,
		      struct buf *b)
{
	int fd = openat(c->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > ENTRY_MAX)
		rc = -EBADMSG;
	else
		rc = buf_reserve(b, (size_t)st.st_size);
	while (!rc && b->len < (size_t)st.st_size) {
		ssize_t n =
		    read(fd, b->data + b->len, (size_t)st.st_size - b->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EBADMSG;
			break;
		}
		b->len += (size_t)n;
	}
	close(fd);
	return rc;
}

/* Whether the index in B holds exactly the shard asked for. */
static int check_entry(const struct buf *b, const char *key, const char *etag,
		       uint64_t size, uint64_t *members, char *why,
		       size_t whylen)
{
	struct dsidx *x = NULL;
	struct dsidx_shard_view v;
	int rc = dsidx_open(b->data, b->len, &x, why, whylen);

	if (rc)
		return rc;
	if (dsidx_info(x)->nshards != 1 || dsidx_shard(x, 0, &v) ||
	    v.key_len != strlen(key) || memcmp(v.key, key, v.key_len) != 0 ||
	    v.etag_len != strlen(etag) ||
	    memcmp(v.etag, etag, v.etag_len) != 0 || v.size != size) {
		set_msg(why, whylen, "holds another shard");
		rc = -EBADMSG;
	}
	/* What a scan counts: files, links and directories. */
	*members = dsidx_info(x)->nmembers + dsidx_info(x)->ndirs - 1;
	dsidx_free(x);
	return rc;
}

/* The cached image of the shard, appended to OUT: 0, or -ENOENT. */
static int cache_load(const struct shardcache *c, const char *name,
		      const char *key, const char *etag, uint64_t size,
		      struct buf *out, uint64_t *members)
{
	char why[256] = "";
	struct buf b;
	int rc;

	buf_init(&b, ENTRY_MAX);
	rc = read_entry(c, name, &b);
	if (rc == -ENOENT) {
		buf_release(&b);
		return rc;
	}
	if (!rc)
		rc =
		    check_entry(&b, key, etag, size, members, why, sizeof(why));
	if (!rc)
		rc = buf_append(out, b.data, b.len);
	if (rc)
		log_debug("shard cache %s/%s (%s): ignored: %s", c->dir, name,
			  key, why[0] ? why : strerror(-rc));
	buf_release(&b);
	return rc ? -ENOENT : 0;
}

/* Writes the entry NAME atomically; a failure is only logged. */
static void cache_store(const struct shardcache *c, const char *name,
			const char *data, size_t len)
{
	char tmp[NAME_LEN + 48];
	int fd, rc;

	snprintf(tmp, sizeof(tmp), ".%s.%ld.%p.tmp", name, (long)getpid(),
		 (const void *)&tmp);
	fd = openat(c->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_debug("shard cache %s: cannot create %s: %s", c->dir, tmp,
			  strerror(errno));
		return;
	}
	rc = fdio_write_all(fd, data, len);
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && renameat(c->dfd, tmp, c->dfd, name) != 0)
		rc = -errno;
	if (rc) {
		unlinkat(c->dfd, tmp, 0);
		log_debug("shard cache %s: cannot write %s: %s", c->dir, name,
			  strerror(-rc));
	}
}

int shard_index_cached(struct store *st, struct shardcache *c, const char *key,
		       uint64_t size, const char *etag, struct buf *out,
		       struct shard_scan_result *res, bool *from_cache,
		       char *msg, size_t msglen)
{
	bool cacheable = c && etag && etag[0];
	char name[NAME_LEN + 1];
	size_t before = out->len;
	int rc;

	if (from_cache)
		*from_cache = false;
	if (cacheable &&
	    entry_name(st->ops->cache_id(st), key, etag, size, name) != 0)
		cacheable = false;
	if (cacheable) {
		memset(res, 0, sizeof(*res));
		if (cache_load(c, name, key, etag, size, out, &res->members) ==
		    0) {
			if (from_cache)
				*from_cache = true;
			return 0;
		}
	}
	rc = shard_scan(st, key, size, etag, out, res, msg, msglen);
	if (rc == 0 && cacheable && !res->damaged)
		cache_store(c, name, out->data + before, out->len - before);
	return rc;
}
