// SPDX-License-Identifier: MIT
/*
 * Indexing one tar shard over the store's range GETs: the tarhdr scanner
 * asks for bytes, this module fetches them in windows and hands members
 * over (shard_scan_members), or turns them into a one-shard dataset index
 * (shard_scan).
 *
 * Windows: a fetch starts where the scanner needs bytes and asks for
 * SHARD_WINDOW bytes (or what the scanner needs, when more: a long pax
 * header), clipped to the shard. Small members are contiguous, so one
 * window holds many headers; a member whose data runs past the window
 * makes the scanner ask for the next header beyond it, and the window
 * moves there without reading the data in between. When the last member
 * was larger than a window (the next header lies far away), the next
 * window is WINDOW_SMALL bytes: one more header is most likely all it
 * will hold, and 1 MiB of data per header would be waste. At most one
 * window is held at a time.
 *
 * Threading: each scan is one blocking call; the GET's completion (on the
 * store's thread, or inline for the local store) hands the bytes over
 * under a per-scan mutex and signals a condition variable. No lock is
 * held across get_range(). No globals.
 */
#include "shard.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dsidx.h"
#include "log.h"

#define WINDOW_SMALL (64u << 10)

/* One GET in flight: what the completion hands over. */
struct fetch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;     /* mu */
	int err;       /* mu */
	char *data;    /* mu; owned once done */
	size_t len;    /* mu */
	char msg[256]; /* mu */
};

static void fetch_done(void *arg, int err, char *data, size_t len,
		       const char *msg)
{
	struct fetch *f = arg;

	pthread_mutex_lock(&f->mu);
	f->err = err;
	f->data = data;
	f->len = len;
	snprintf(f->msg, sizeof(f->msg), "%s", msg ? msg : "");
	f->done = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* The state of one scan. */
struct scan {
	struct store *st;
	const char *key, *etag;
	uint64_t size;
	struct shard_scan_result *res;
	char *win; /* owned: the shard's bytes [win_off, + win_len) */
	size_t win_len;
	uint64_t win_off;
	uint64_t last_hdr; /* header offset of the last entry */
	char where[2048];  /* the shard, for log lines */
};

/* "DESCRIBE/KEY" into OUT, without doubling a '/'. */
static void where_of(struct store *st, const char *key, char *out, size_t cap)
{
	const char *d = st->ops->describe(st);
	size_t n = strlen(d);

	snprintf(out, cap, "%s%s%s", d, n && d[n - 1] == '/' ? "" : "/", key);
}

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

/* Reads [OFF, OFF + LEN) into the scan's window (replacing it). */
static int fetch_window(struct scan *s, uint64_t off, uint64_t len, char *msg,
			size_t msglen)
{
	struct fetch f = {.done = false};
	int rc;

	free(s->win);
	s->win = NULL;
	s->win_len = 0;
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	s->res->gets++;
	rc = s->st->ops->get_range(s->st, s->key, off, len, s->etag, fetch_done,
				   &f);
	if (rc == 0) {
		pthread_mutex_lock(&f.mu);
		while (!f.done)
			pthread_cond_wait(&f.cv, &f.mu);
		pthread_mutex_unlock(&f.mu);
		rc = f.err;
	}
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	if (rc == 0 && f.len != len) {
		free(f.data);
		f.data = NULL;
		snprintf(f.msg, sizeof(f.msg), "%zu bytes instead of %" PRIu64,
			 f.len, len);
		rc = -EIO;
	}
	if (rc) {
		set_msg(msg, msglen,
			"%s: GET bytes %" PRIu64 "-%" PRIu64 ": %s", s->key,
			off, off + len - 1, f.msg[0] ? f.msg : strerror(-rc));
		return rc;
	}
	s->res->bytes_fetched += len;
	s->win = f.data;
	s->win_len = f.len;
	s->win_off = off;
	return 0;
}

/* Serves the scanner's request for [OFF, OFF + NEED). */
static int fetch_need(struct scan *s, uint64_t off, uint64_t need, char *msg,
		      size_t msglen)
{
	uint64_t len = SHARD_WINDOW;

	/* Far from the last header: large members, small windows. */
	if (off > s->last_hdr + SHARD_WINDOW)
		len = WINDOW_SMALL;
	if (len < need)
		len = need;
	if (len > s->size - off)
		len = s->size - off;
	return fetch_window(s, off, len, msg, msglen);
}

/* PATH with bytes that do not belong in a log line escaped, into OUT. */
static const char *escape(const char *path, char *out, size_t cap)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)path;
	     *p && n + 5 < cap; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
		else
			out[n++] = (char)*p;
	}
	out[n] = '\0';
	return out;
}

/* An entry that cannot be shown: counted and logged once. */
static void skip(struct scan *s, const struct tarhdr_entry *e, const char *why)
{
	char p[512];

	s->res->skipped++;
	log_info("%s: member '%s' at offset %" PRIu64 " skipped: %s", s->where,
		 escape(e->path, p, sizeof(p)), e->header_offset, why);
}

static void damaged(struct scan *s, const char *what)
{
	s->res->damaged = true;
	snprintf(s->res->damage, sizeof(s->res->damage), "%s", what);
	log_warn("%s: damaged shard: %s; the %" PRIu64
		 " members before it are kept",
		 s->where, what, s->res->members);
}

/* The scanner's loop: entries to FN, NEED to the store, until the end. */
static int scan_loop(struct scan *s, struct tarhdr_scan *ts,
		     shard_member_fn *fn, void *arg, char *msg, size_t msglen)
{
	struct tarhdr_entry e;
	uint64_t need_off, need_len;
	int rc;

	for (;;) {
		rc = tarhdr_scan_next(ts, (const unsigned char *)s->win,
				      s->win_len, s->win_off, &e, &need_off,
				      &need_len);
		if (rc == TARHDR_NEED) {
			rc = fetch_need(s, need_off, need_len, msg, msglen);
			if (rc)
				return rc;
			continue;
		}
		if (rc == TARHDR_END || rc == -EBADMSG || rc == -E2BIG)
			break;
		if (rc < 0) {
			set_msg(msg, msglen, "%s: %s", s->key, strerror(-rc));
			return rc;
		}
		s->last_hdr = e.header_offset;
		if (e.unsafe) {
			skip(s, &e, "absolute or with a '..' component");
			continue;
		}
		if (e.type == TARHDR_OTHER) {
			skip(s, &e, e.note ? e.note : "not a file");
			continue;
		}
		s->res->members++;
		rc = fn(&e, arg);
		if (rc)
			return rc;
	}
	if (rc == TARHDR_END) {
		if (ts->end_note)
			log_info("%s: %s", s->where, ts->end_note);
		return 0;
	}
	damaged(s, ts->err_msg ? ts->err_msg : strerror(-rc));
	return 0;
}

int shard_scan_members(struct store *st, const char *key, uint64_t size,
		       const char *etag, shard_member_fn *fn, void *arg,
		       struct shard_scan_result *res, char *msg, size_t msglen)
{
	struct scan s = {
	    .st = st, .key = key, .etag = etag, .size = size, .res = res};
	struct tarhdr_scan ts;
	int rc;

	memset(res, 0, sizeof(*res));
	if (msg && msglen)
		msg[0] = '\0';
	if (etag && !etag[0])
		s.etag = NULL; /* never an empty If-Match */
	where_of(st, key, s.where, sizeof(s.where));
	tarhdr_scan_init(&ts, size, NULL);
	rc = scan_loop(&s, &ts, fn, arg, msg, msglen);
	tarhdr_scan_release(&ts);
	free(s.win);
	return rc;
}

/* ---- one-shard index ------------------------------------------------- */

struct build {
	struct dsidx_builder *b;
	uint32_t shard;
	struct shard_scan_result *res;
	char where[2048]; /* for log lines: "s3://b/p/key" */
};

static int add_sparse(struct dsidx_builder *b, uint32_t shard,
		      const struct tarhdr_entry *e)
{
	struct dsidx_segment *segs = NULL;
	int rc;

	if (e->nsparse > UINT32_MAX)
		return -E2BIG;
	if (e->nsparse) {
		segs = malloc(e->nsparse * sizeof(*segs));
		if (!segs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < e->nsparse; i++) {
		segs[i].offset = e->sparse[i].offset;
		segs[i].length = e->sparse[i].length;
		segs[i].archive_offset = e->sparse[i].archive_offset;
	}
	rc = dsidx_builder_add_sparse(
	    b, e->path, shard, e->data_offset, e->size, segs,
	    (uint32_t)e->nsparse, S_IFREG | e->mode, e->mtime, e->mtime_nsec);
	free(segs);
	return rc;
}

int shard_builder_add(struct dsidx_builder *b, uint32_t shard,
		      const struct tarhdr_entry *e)
{
	switch (e->type) {
	case TARHDR_DIR:
		return dsidx_builder_add_dir(b, e->path, e->mode, e->mtime,
					     e->mtime_nsec);
	case TARHDR_SYMLINK:
		return dsidx_builder_add_member(b, e->path, DSIDX_NONE, 0, 0,
						S_IFLNK | e->mode, e->mtime,
						e->mtime_nsec, e->link);
	case TARHDR_HARDLINK:
		return dsidx_builder_add_hardlink(b, e->path, e->link);
	case TARHDR_REG:
		if (e->is_sparse)
			return add_sparse(b, shard, e);
		return dsidx_builder_add_member(
		    b, e->path, shard, e->data_offset, e->size,
		    S_IFREG | e->mode, e->mtime, e->mtime_nsec, NULL);
	default:
		return -EINVAL;
	}
}

static int build_member(const struct tarhdr_entry *e, void *arg)
{
	struct build *bd = arg;
	char p[512];
	int rc = shard_builder_add(bd->b, bd->shard, e);

	if (rc == -ENOMEM || rc == -E2BIG)
		return rc;
	if (rc) {
		/* A name the index cannot hold, a link to nothing: the
		 * member is left out, the scan goes on. */
		bd->res->members--;
		bd->res->skipped++;
		log_info("%s: member '%s' at offset %" PRIu64 " skipped: %s",
			 bd->where, escape(e->path, p, sizeof(p)),
			 e->header_offset,
			 rc == -ENOENT	       ? "hard link to a missing member"
			 : rc == -ENAMETOOLONG ? "name or link target too long"
					       : "name or link target invalid");
	}
	return 0;
}

static int build_init(struct build *bd, struct store *st, const char *key,
		      uint64_t size, const char *etag, char *msg, size_t msglen)
{
	int rc = dsidx_builder_new(NULL, &bd->b);

	if (rc)
		return rc;
	rc = dsidx_builder_add_shard(bd->b, key, etag, size, &bd->shard);
	if (rc == -EINVAL && etag) {
		/* An ETag the index cannot hold: keep the shard without. */
		log_debug("%s: ETag %s not kept in the index", key, etag);
		rc =
		    dsidx_builder_add_shard(bd->b, key, NULL, size, &bd->shard);
	}
	if (rc)
		set_msg(msg, msglen, "%s: not a valid shard key for an index",
			key);
	if (rc == 0)
		where_of(st, key, bd->where, sizeof(bd->where));
	return rc;
}

int shard_scan(struct store *st, const char *key, uint64_t size,
	       const char *etag, struct buf *out, struct shard_scan_result *res,
	       char *msg, size_t msglen)
{
	struct build bd = {.res = res};
	int rc;

	memset(res, 0, sizeof(*res));
	rc = build_init(&bd, st, key, size, etag, msg, msglen);
	if (!rc)
		rc = shard_scan_members(st, key, size, etag, build_member, &bd,
					res, msg, msglen);
	if (!rc)
		rc = dsidx_builder_finish(bd.b, (int64_t)time(NULL), out);
	if (rc && msg && msglen && !msg[0])
		set_msg(msg, msglen, "%s: cannot build its index: %s", key,
			strerror(-rc));
	dsidx_builder_free(bd.b);
	return rc;
}
