// SPDX-License-Identifier: MIT
/*
 * packup: the upload side of `shardfs pack` (see packup.h for the memory
 * model and the contract).
 *
 * Life of a part buffer: free list -> `cur` (being filled by the
 * producer) -> sealed and submitted (in flight, counted in `inflight`) ->
 * answered: the store's completion puts it on the `answered` list and
 * signals -> the producer takes the list, accounts for each part and puts
 * the buffer back on the free list. Only the answered list and the
 * in-flight count are shared with completion threads; everything else
 * belongs to the producer's thread.
 *
 * Life of a shard: begun (multipart: upload created) -> parts sealed ->
 * ended (all bytes written) -> every part answered -> completed and
 * checked with HEAD -> on_shard() -> freed. A shard with a failed part,
 * or one not ended when the run stops, is aborted by packup_cancel().
 */
#include "packup.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "log.h"

struct ushard;

struct part {
	struct part *next; /* free list or answered list */
	struct packup *u;
	unsigned char *data; /* part_size bytes */
	size_t len;
	struct ushard *sh;
	uint32_t number;
	uint64_t offset;
	int err;       /* written by the completion, read after the list */
	char msg[512]; /* handover (the lock orders them) */
};

struct ushard {
	struct ushard *next; /* open list, in begin order */
	uint32_t id;
	char *key;
	uint64_t size, written, sealed;
	struct store_upload *up; /* multipart; NULL for one PUT */
	uint32_t sent, answered;
	bool ended, failed;
	unsigned char *md5s; /* 16 bytes per part */
	uint32_t md5_alloc;  /* parts md5s has room for */
};

struct packup {
	struct packup_conf conf;

	pthread_mutex_t lock; /* protects answered, inflight */
	pthread_cond_t cond;  /* signalled when a part is answered */
	struct part *answered;
	unsigned inflight;

	/* Producer's thread only. */
	struct part *free_list;
	unsigned nalloc; /* buffers allocated */
	struct part *cur;
	struct ushard *cur_sh;
	struct ushard *open;
	int err;
	char errmsg[1024];
	bool etag_warned;

	_Atomic uint64_t acked;
};

static void fail(struct packup *u, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct packup *u, int err, const char *fmt, ...)
{
	va_list ap;

	if (u->err)
		return;
	u->err = err ? err : -EIO;
	va_start(ap, fmt);
	vsnprintf(u->errmsg, sizeof(u->errmsg), fmt, ap);
	va_end(ap);
}

int packup_err(const struct packup *u)
{
	return u->err;
}

const char *packup_errmsg(const struct packup *u)
{
	return u->errmsg;
}

uint64_t packup_acked(const struct packup *u)
{
	return atomic_load(&u->acked);
}

int packup_new(const struct packup_conf *conf, struct packup **out)
{
	struct packup *u;

	if (!conf->store || conf->part_size < PACKUP_MIN_PART ||
	    conf->part_size > SIZE_MAX / 2 || conf->nbufs < 2 ||
	    !conf->store->ops->put_async || !conf->store->ops->upload_begin)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->conf = *conf;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	atomic_init(&u->acked, 0);
	*out = u;
	return 0;
}

static void shard_free(struct ushard *sh)
{
	free(sh->key);
	free(sh->md5s);
	free(sh);
}

static void part_free(struct part *p)
{
	free(p->data);
	free(p);
}

void packup_free(struct packup *u)
{
	if (!u)
		return;
	/* Callers cancel or finish first: nothing is in flight. */
	if (u->cur)
		part_free(u->cur);
	while (u->free_list) {
		struct part *p = u->free_list;

		u->free_list = p->next;
		part_free(p);
	}
	while (u->answered) {
		struct part *p = u->answered;

		u->answered = p->next;
		part_free(p);
	}
	while (u->open) {
		struct ushard *sh = u->open;

		u->open = sh->next;
		shard_free(sh);
	}
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* ---- answers ---- */

static void part_answered(void *arg, int err, const char *msg)
{
	struct part *p = arg;
	struct packup *u = p->u;

	pthread_mutex_lock(&u->lock);
	p->err = err;
	snprintf(p->msg, sizeof(p->msg), "%s",
		 err ? (msg ? msg : strerror(-err)) : "");
	p->next = u->answered;
	u->answered = p;
	u->inflight--;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static void hex(const unsigned char *md, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The ETag S3 gives the object as we sent it. */
static void expected_etag(const struct ushard *sh, char *out, size_t outlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char h[33];

	if (!sh->up && sh->sent == 1) {
		hex(sh->md5s, 16, h);
		snprintf(out, outlen, "\"%s\"", h);
		return;
	}
	EVP_Digest(sh->md5s, (size_t)sh->sent * 16, md, &mdlen, EVP_md5(),
		   NULL);
	hex(md, 16, h);
	snprintf(out, outlen, "\"%s-%" PRIu32 "\"", h, sh->sent);
}

/* Completes SH (multipart), reads it back and reports it. */
static int store_shard(struct packup *u, struct ushard *sh)
{
	struct store *s = u->conf.store;
	struct store_entry e;
	char msg[1024] = "", want[80];
	int rc;

	if (sh->up) {
		rc = s->ops->upload_complete(s, sh->up, sh->sent, msg,
					     sizeof(msg));
		if (rc) {
			fail(u, rc, "%s: %s", sh->key, msg);
			return rc;
		}
		sh->up = NULL;
	}
	rc = s->ops->head(s, sh->key, &e, msg, sizeof(msg));
	if (rc) {
		fail(u, rc, "%s: stored, but HEAD failed: %s", sh->key, msg);
		return rc;
	}
	if (e.size != sh->size) {
		fail(u, -EIO,
		     "%s: stored %" PRIu64
		     " bytes, but the store reports %" PRIu64,
		     sh->key, sh->size, e.size);
		store_entry_release(&e);
		return -EIO;
	}
	if (u->conf.etags) {
		expected_etag(sh, want, sizeof(want));
		if ((!e.etag || strcmp(e.etag, want) != 0) && !u->etag_warned) {
			log_warn("%s: the store reports ETag %s where the MD5 "
				 "of what was sent gives %s (a server with "
				 "encryption or another ETag scheme?); the "
				 "index records the store's",
				 sh->key, e.etag ? e.etag : "(none)", want);
			u->etag_warned = true;
		}
	}
	rc = u->conf.on_shard(u->conf.arg, sh->id, e.etag ? e.etag : "");
	store_entry_release(&e);
	if (rc)
		fail(u, rc, "%s: %s", sh->key, strerror(-rc));
	return rc;
}

/* Accounts for the answered parts and stores the shards that are done. */
static void handle_answers(struct packup *u)
{
	struct part *list;

	pthread_mutex_lock(&u->lock);
	list = u->answered;
	u->answered = NULL;
	pthread_mutex_unlock(&u->lock);
	while (list) {
		struct part *p = list;
		struct ushard *sh = p->sh;

		list = p->next;
		sh->answered++;
		if (p->err) {
			sh->failed = true;
			fail(u, p->err, "%s: part %" PRIu32 ": %s", sh->key,
			     p->number, p->msg);
		} else {
			atomic_fetch_add(&u->acked, p->len);
		}
		p->len = 0;
		p->sh = NULL;
		p->next = u->free_list;
		u->free_list = p;
	}
	for (struct ushard **pp = &u->open; *pp;) {
		struct ushard *sh = *pp;

		if (!sh->ended || sh->failed || sh->answered < sh->sent) {
			pp = &sh->next;
			continue;
		}
		if (store_shard(u, sh)) {
			sh->failed = true;
			pp = &sh->next;
			continue;
		}
		*pp = sh->next;
		shard_free(sh);
	}
}

/* Waits up to 200 ms for an answer while parts are in flight. 0, or
 * -EINTR when asked to stop. */
static int wait_answer(struct packup *u, bool ignore_stop)
{
	struct timespec ts;
	int rc = 0;

	pthread_mutex_lock(&u->lock);
	if (!u->answered && u->inflight > 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&u->cond, &u->lock, &ts);
	}
	pthread_mutex_unlock(&u->lock);
	if (!ignore_stop && u->conf.stop && atomic_load(u->conf.stop))
		rc = -EINTR;
	return rc;
}

static unsigned inflight(struct packup *u)
{
	unsigned n;

	pthread_mutex_lock(&u->lock);
	n = u->inflight;
	pthread_mutex_unlock(&u->lock);
	return n;
}

/* ---- parts ---- */

static int get_buffer(struct packup *u)
{
	while (!u->cur) {
		if (u->err)
			return u->err;
		if (u->free_list) {
			u->cur = u->free_list;
			u->free_list = u->cur->next;
			u->cur->next = NULL;
			return 0;
		}
		if (u->nalloc < u->conf.nbufs) {
			struct part *p = calloc(1, sizeof(*p));

			if (p)
				p->data = malloc((size_t)u->conf.part_size);
			if (p && p->data) {
				p->u = u;
				u->cur = p;
				u->nalloc++;
				return 0;
			}
			free(p);
			if (u->nalloc == 0) {
				fail(u, -ENOMEM,
				     "out of memory for a %" PRIu64
				     "-byte part buffer",
				     u->conf.part_size);
				return -ENOMEM;
			}
			u->conf.nbufs = u->nalloc; /* live with fewer */
		}
		if (wait_answer(u, false)) {
			fail(u, -EINTR, "interrupted");
			return -EINTR;
		}
		handle_answers(u);
	}
	return 0;
}

static int md5_slot(struct ushard *sh, uint32_t number)
{
	if (number > sh->md5_alloc) {
		uint32_t n = sh->md5_alloc ? sh->md5_alloc * 2 : 16;
		unsigned char *p;

		while (n < number)
			n *= 2;
		p = realloc(sh->md5s, (size_t)n * 16);
		if (!p)
			return -ENOMEM;
		sh->md5s = p;
		sh->md5_alloc = n;
	}
	return 0;
}

/* Hashes and submits the current buffer. */
static int seal(struct packup *u)
{
	struct store *s = u->conf.store;
	struct ushard *sh = u->cur_sh;
	struct part *p = u->cur;
	int rc;

	u->cur = NULL;
	p->sh = sh;
	p->number = ++sh->sent;
	p->offset = sh->sealed;
	sh->sealed += p->len;
	if (p->number > PACKUP_MAX_PARTS)
		rc = -E2BIG;
	else
		rc = md5_slot(sh, p->number);
	if (!rc && u->conf.etags &&
	    !EVP_Digest(p->data, p->len, sh->md5s + 16 * (p->number - 1), NULL,
			EVP_md5(), NULL))
		rc = -ENOMEM;
	if (!rc) {
		pthread_mutex_lock(&u->lock);
		u->inflight++;
		pthread_mutex_unlock(&u->lock);
		rc = sh->up ? s->ops->upload_part(s, sh->up, p->number,
						  p->offset, p->data, p->len,
						  part_answered, p)
			    : s->ops->put_async(s, sh->key, p->data, p->len,
						part_answered, p);
		if (rc) {
			pthread_mutex_lock(&u->lock);
			u->inflight--;
			pthread_mutex_unlock(&u->lock);
		}
	}
	if (rc) {
		sh->answered++; /* never in flight */
		sh->failed = true;
		fail(u, rc, "%s: part %" PRIu32 ": %s", sh->key, p->number,
		     strerror(-rc));
		p->len = 0;
		p->next = u->free_list;
		u->free_list = p;
	}
	return rc;
}

/* ---- the producer's calls ---- */

int packup_begin(struct packup *u, uint32_t id, const char *key, uint64_t size)
{
	struct store *s = u->conf.store;
	struct ushard *sh, **pp;
	char msg[1024] = "";
	int rc;

	if (u->err)
		return u->err;
	if (u->cur_sh || size == 0)
		return -EINVAL; /* the previous shard has not ended */
	sh = calloc(1, sizeof(*sh));
	if (!sh || !(sh->key = strdup(key))) {
		free(sh);
		return -ENOMEM;
	}
	sh->id = id;
	sh->size = size;
	if (size > u->conf.part_size) {
		rc = s->ops->upload_begin(s, key, &sh->up, msg, sizeof(msg));
		if (rc) {
			fail(u, rc, "%s", msg);
			shard_free(sh);
			return rc;
		}
	}
	for (pp = &u->open; *pp; pp = &(*pp)->next)
		;
	*pp = sh;
	u->cur_sh = sh;
	return 0;
}

int packup_span(struct packup *u, void **p, size_t *len)
{
	struct ushard *sh = u->cur_sh;
	uint64_t left;
	size_t room;
	int rc;

	if (!sh)
		return -EINVAL;
	left = sh->size - sh->written;
	if (left == 0) {
		fail(u, -EIO, "%s: more bytes than planned (internal error)",
		     sh->key);
		return -EIO;
	}
	rc = get_buffer(u);
	if (rc)
		return rc;
	room = (size_t)u->conf.part_size - u->cur->len;
	*p = u->cur->data + u->cur->len;
	*len = room < left ? room : (size_t)left;
	return 0;
}

int packup_commit(struct packup *u, size_t n)
{
	u->cur->len += n;
	u->cur_sh->written += n;
	if (u->cur->len == u->conf.part_size)
		return seal(u);
	return 0;
}

int packup_write(struct packup *u, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		void *dst;
		size_t room;
		int rc = packup_span(u, &dst, &room);

		if (rc)
			return rc;
		if (room > len)
			room = len;
		memcpy(dst, p, room);
		p += room;
		len -= room;
		rc = packup_commit(u, room);
		if (rc)
			return rc;
	}
	return 0;
}

int packup_end(struct packup *u)
{
	struct ushard *sh = u->cur_sh;
	int rc = 0;

	if (!sh)
		return -EINVAL;
	if (sh->written != sh->size) {
		fail(u, -EIO,
		     "%s: %" PRIu64 " bytes written, %" PRIu64
		     " planned (internal error)",
		     sh->key, sh->written, sh->size);
		return -EIO;
	}
	if (u->cur && u->cur->len > 0)
		rc = seal(u);
	sh->ended = true;
	u->cur_sh = NULL; /* handle_answers() may free it from now on */
	if (!rc)
		rc = packup_poll(u);
	return rc;
}

int packup_poll(struct packup *u)
{
	handle_answers(u);
	return u->err;
}

int packup_finish(struct packup *u)
{
	for (;;) {
		handle_answers(u);
		if (u->err)
			return u->err;
		if (!u->open)
			return 0;
		if (inflight(u) == 0 && !u->answered) {
			/* Open shards with nothing in flight: not ended. */
			fail(u, -EINVAL, "%s: shard not ended (internal error)",
			     u->open->key);
			return u->err;
		}
		if (wait_answer(u, false)) {
			fail(u, -EINTR, "interrupted");
			return -EINTR;
		}
	}
}

void packup_cancel(struct packup *u)
{
	struct store *s = u->conf.store;

	while (inflight(u) > 0)
		wait_answer(u, true);
	handle_answers(u);
	while (u->open) {
		struct ushard *sh = u->open;
		char msg[1024] = "";

		u->open = sh->next;
		if (sh->up && s->ops->upload_abort(s, sh->up, msg, sizeof(msg)))
			log_warn("%s: could not abort the multipart upload: %s "
				 "(its parts stay until a lifecycle rule "
				 "removes them)",
				 sh->key, msg);
		shard_free(sh);
	}
	u->cur_sh = NULL;
}
