// SPDX-License-Identifier: MIT
/*
 * store_s3: the store vtable over the S3 engine. list() is ListObjectsV2
 * with delimiter "/" and encoding-type=url, following continuation tokens
 * (a repeated token is an error); head() is HEAD; get_range() is a ranged
 * GET answered from the engine's I/O thread; put() is a single PUT;
 * get_object() is one GET without Range; stats() are the engine's.
 * Writing for pack: put_async() is a PUT answered on the I/O thread,
 * upload_*() a multipart upload (each part one asynchronous PUT), del()
 * a DELETE.
 *
 * The store holds no mutable state besides the engine, so it needs no lock:
 * the engine is thread-safe.
 */
#include "store_s3.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "s3c.h"

struct store_s3 {
	struct store base;
	struct s3c *engine; /* owned */
	char *bucket;
	char *prefix; /* "" or ends with '/' */
	char *desc;
	char *cache_id;
	/*
	 * Set once a range answer came with an ETag header: from then on
	 * range GETs check that header instead of sending If-Match, which
	 * costs the server more (see get_whole in store.h). Cleared if an
	 * answer ever comes without one.
	 */
	atomic_bool etag_on_206;
};

static struct store_s3 *to_s3(struct store *s)
{
	return (struct store_s3 *)s;
}

static void set_msg(char *msg, size_t msglen, const char *text)
{
	if (msg && msglen)
		snprintf(msg, msglen, "%s", text);
}

/* ---- listing ---- */

static struct s3c_req *list_req(const char *bucket, const char *prefix,
				const char *delimiter, const char *token)
{
	struct s3c_req *r = s3c_req_new("GET", bucket, NULL);
	int rc = 0;

	if (!r)
		return NULL;
	rc |= s3c_req_add_param(r, "list-type", "2");
	rc |= s3c_req_add_param(r, "encoding-type", "url");
	rc |= s3c_req_add_param(r, "max-keys", "1000");
	if (prefix && *prefix)
		rc |= s3c_req_add_param(r, "prefix", prefix);
	if (delimiter)
		rc |= s3c_req_add_param(r, "delimiter", delimiter);
	if (token)
		rc |= s3c_req_add_param(r, "continuation-token", token);
	if (rc) {
		s3c_req_free(r);
		return NULL;
	}
	s3c_req_set_body_cap(r, S3XML_MAX_BODY);
	return r;
}

int store_s3_list_pages(struct s3c *engine, const char *bucket,
			const char *prefix, const char *delimiter,
			store_s3_page_fn *fn, void *arg, char *msg,
			size_t msglen)
{
	char *token = NULL;
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	for (;;) {
		struct s3c_req *r = list_req(bucket, prefix, delimiter, token);
		struct s3xml_list page;
		const char *body;
		size_t len;

		if (!r) {
			rc = -ENOMEM;
			set_msg(msg, msglen, "out of memory");
			break;
		}
		rc = s3c_perform(engine, r);
		if (rc) {
			set_msg(msg, msglen, s3c_req_errmsg(r));
			s3c_req_free(r);
			break;
		}
		body = s3c_req_body(r, &len);
		rc = s3xml_parse_list(body, len, &page);
		s3c_req_free(r);
		if (rc) {
			if (msg)
				snprintf(msg, msglen,
					 "LIST s3://%s/%s: malformed "
					 "ListObjectsV2 answer (%s)",
					 bucket, prefix ? prefix : "",
					 strerror(-rc));
			break;
		}
		rc = fn(&page, arg);
		if (!rc && page.truncated && token &&
		    strcmp(token, page.next_token) == 0) {
			rc = -ELOOP;
			if (msg)
				snprintf(msg, msglen,
					 "LIST s3://%s/%s: the server repeated "
					 "a continuation token",
					 bucket, prefix ? prefix : "");
		}
		free(token);
		token = NULL;
		if (!rc && page.truncated) {
			token = strdup(page.next_token);
			if (!token)
				rc = -ENOMEM;
		}
		s3xml_list_release(&page);
		if (rc || !token)
			break;
	}
	free(token);
	if (rc && msg && msglen && !msg[0])
		snprintf(msg, msglen, "LIST s3://%s/%s: %s", bucket,
			 prefix ? prefix : "", strerror(-rc));
	return rc;
}

struct list_ctx {
	struct store_listing *out;
	size_t alloc;
	size_t skip; /* length of the listed prefix */
};

static int add_entry(struct list_ctx *lc, const char *full, uint64_t size,
		     int64_t mtime, const char *etag, bool is_dir)
{
	struct store_entry *e;
	size_t n;

	if (strlen(full) < lc->skip)
		return 0; /* cannot happen with a conforming server */
	full += lc->skip;
	n = strlen(full);
	if (is_dir && n && full[n - 1] == '/')
		n--;
	if (n == 0)
		return 0; /* the directory's own marker object */
	if (lc->out->n == lc->alloc) {
		size_t na = lc->alloc ? lc->alloc * 2 : 64;
		void *p = realloc(lc->out->entries, na * sizeof(*e));

		if (!p)
			return -ENOMEM;
		lc->out->entries = p;
		lc->alloc = na;
	}
	e = &lc->out->entries[lc->out->n];
	memset(e, 0, sizeof(*e));
	e->name = strndup(full, n);
	e->etag = etag ? strdup(etag) : NULL;
	if (!e->name || (etag && !e->etag)) {
		store_entry_release(e);
		return -ENOMEM;
	}
	e->size = size;
	e->mtime = mtime;
	e->is_dir = is_dir;
	lc->out->n++;
	return 0;
}

static int list_page(const struct s3xml_list *page, void *arg)
{
	struct list_ctx *lc = arg;
	int rc = 0;

	for (size_t i = 0; !rc && i < page->nobjects; i++) {
		const struct s3xml_object *o = &page->objects[i];

		rc = add_entry(lc, o->key, o->size, o->mtime, o->etag, false);
	}
	for (size_t i = 0; !rc && i < page->nprefixes; i++)
		rc = add_entry(lc, page->prefixes[i], 0, 0, NULL, true);
	return rc;
}

/* Objects and prefixes come in two arrays per page: merge them back into
 * byte order of names (an object sorts before a prefix of the same name). */
static int entry_cmp(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->is_dir - (int)y->is_dir;
}

static int s3_list(struct store *s, const char *dir, struct store_listing *out,
		   char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct list_ctx lc = {.out = out};
	char *prefix;
	int rc;

	out->entries = NULL;
	out->n = 0;
	if (asprintf(&prefix, "%s%s", st->prefix, dir) < 0)
		return -ENOMEM;
	lc.skip = strlen(prefix);
	rc = store_s3_list_pages(st->engine, st->bucket, prefix, "/",
				 list_page, &lc, msg, msglen);
	free(prefix);
	if (rc)
		store_listing_release(out);
	else if (out->n > 1)
		qsort(out->entries, out->n, sizeof(*out->entries), entry_cmp);
	return rc;
}

/* ---- head ---- */

static int64_t parse_http_date(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!s || !strptime(s, "%a, %d %b %Y %H:%M:%S", &tm))
		return 0;
	return (int64_t)timegm(&tm);
}

static int s3_head(struct store *s, const char *key, struct store_entry *out,
		   char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r;
	const char *v;
	char *full;
	int rc;

	memset(out, 0, sizeof(*out));
	if (asprintf(&full, "%s%s", st->prefix, key) < 0)
		return -ENOMEM;
	r = s3c_req_new("HEAD", st->bucket, full);
	free(full);
	if (!r)
		return -ENOMEM;
	rc = s3c_perform(st->engine, r);
	if (rc) {
		set_msg(msg, msglen, s3c_req_errmsg(r));
		goto out;
	}
	v = s3c_req_header(r, "content-length");
	out->size = v ? strtoull(v, NULL, 10) : 0;
	out->mtime = parse_http_date(s3c_req_header(r, "last-modified"));
	v = s3c_req_header(r, "etag");
	out->name = strdup(key);
	out->etag = v ? strdup(v) : NULL;
	if (!out->name || (v && !out->etag)) {
		store_entry_release(out);
		rc = -ENOMEM;
	}
out:
	s3c_req_free(r);
	return rc;
}

/* ETags compared without quotes and a weak "W/" prefix. */
static bool etag_same(const char *a, const char *b)
{
	size_t la, lb;

	if (strncmp(a, "W/", 2) == 0)
		a += 2;
	if (strncmp(b, "W/", 2) == 0)
		b += 2;
	la = strlen(a);
	lb = strlen(b);
	if (la >= 2 && a[0] == '"' && a[la - 1] == '"') {
		a++;
		la -= 2;
	}
	if (lb >= 2 && b[0] == '"' && b[lb - 1] == '"') {
		b++;
		lb -= 2;
	}
	return la == lb && memcmp(a, b, la) == 0;
}

/* ---- get_range ---- */

struct get_ctx {
	store_done_fn *done;
	void *arg;
	struct store_s3 *st;
	char *etag;	/* owned: the ETag the object must have, or NULL */
	char *name;	/* owned: s3://BUCKET/KEY, for messages */
	bool checking;	/* no If-Match sent: check the answer's ETag */
};

/*
 * The ETag check of a range answer (0 or -ESTALE/-EIO with MSG): with
 * If-Match sent, the server checked; learn whether it names the ETag in
 * range answers. Without, the answer's ETag must be the expected one.
 */
static int get_check_etag(struct get_ctx *g, struct s3c_req *req, char *msg,
			  size_t msglen)
{
	const char *got = s3c_req_header(req, "etag");

	if (!g->etag)
		return 0;
	if (!g->checking) {
		if (got && etag_same(got, g->etag))
			atomic_store(&g->st->etag_on_206, true);
		return 0;
	}
	if (!got) {
		atomic_store(&g->st->etag_on_206, false);
		snprintf(msg, msglen, "GET %s: no ETag in the answer, cannot "
			 "tell whether the object changed", g->name);
		return -EIO;
	}
	if (etag_same(got, g->etag))
		return 0;
	snprintf(msg, msglen, "%s changed: ETag %s, expected %s", g->name,
		 got, g->etag);
	return -ESTALE;
}

static void get_done(struct s3c_req *req, int err, void *arg)
{
	struct get_ctx *gp = arg, g = *gp;
	char *data = NULL, msg[512] = "";
	size_t len = 0;

	free(arg);
	if (!err)
		err = get_check_etag(&g, req, msg, sizeof(msg));
	free(g.etag);
	free(g.name);
	if (!err) {
		data = s3c_req_take_body(req, &len);
		if (!data)
			err = -ENOMEM;
	}
	if (err && msg[0]) {
		g.done(g.arg, err, NULL, 0, msg);
		s3c_req_free(req);
		return;
	}
	g.done(g.arg, err, err ? NULL : data, err ? 0 : len,
	       err ? s3c_req_errmsg(req) : NULL);
	s3c_req_free(req);
}

struct whole_ctx {
	store_done_fn *done;
	void *arg;
	uint64_t len;
	char *etag; /* owned, or NULL */
	char *name; /* owned: s3://BUCKET/KEY, for messages */
};

static void whole_done(struct s3c_req *req, int err, void *arg)
{
	struct whole_ctx *w = arg;
	const char *got = err ? NULL : s3c_req_header(req, "etag");
	char msg[512] = "";
	char *data = NULL;
	size_t len = 0;

	if (!err) {
		data = s3c_req_take_body(req, &len);
		if (!data) {
			err = -ENOMEM;
		} else if (len != w->len ||
			   (w->etag && got && !etag_same(got, w->etag))) {
			snprintf(msg, sizeof(msg),
				 "%s changed: %zu bytes with ETag %s, expected "
				 "%" PRIu64 " bytes with ETag %s",
				 w->name, len, got ? got : "(none)", w->len,
				 w->etag ? w->etag : "(any)");
			err = -ESTALE;
			free(data);
			data = NULL;
			len = 0;
		}
	}
	w->done(w->arg, err, data, len,
		err ? (msg[0] ? msg : s3c_req_errmsg(req)) : NULL);
	free(w->etag);
	free(w->name);
	free(w);
	s3c_req_free(req);
}

static int s3_get_whole(struct store *s, const char *key, uint64_t len,
			const char *etag, store_done_fn *done, void *arg)
{
	struct store_s3 *st = to_s3(s);
	struct whole_ctx *w = calloc(1, sizeof(*w));
	struct s3c_req *r = NULL;
	char *full = NULL;
	int rc = -ENOMEM;

	if (!w || asprintf(&full, "%s%s", st->prefix, key) < 0) {
		full = NULL;
		goto fail;
	}
	r = s3c_req_new("GET", st->bucket, full);
	if (!r || (etag && *etag && !(w->etag = strdup(etag))) ||
	    asprintf(&w->name, "s3://%s/%s", st->bucket, full) < 0) {
		w->name = NULL;
		goto fail;
	}
	/* One byte more than expected is enough to tell a longer object. */
	s3c_req_set_body_cap(r, (size_t)len + 1);
	w->done = done;
	w->arg = arg;
	w->len = len;
	rc = s3c_submit(st->engine, r, whole_done, w);
	if (!rc) {
		free(full);
		return 0;
	}
fail:
	free(full);
	if (w) {
		free(w->etag);
		free(w->name);
	}
	free(w);
	s3c_req_free(r);
	return rc;
}

static int s3_get_range(struct store *s, const char *key, uint64_t off,
			uint64_t len, const char *if_match, store_done_fn *done,
			void *arg)
{
	struct store_s3 *st = to_s3(s);
	struct get_ctx *g;
	struct s3c_req *r;
	char *full;
	int rc;

	if (len == 0) {
		char *empty = malloc(1);

		if (!empty)
			return -ENOMEM;
		done(arg, 0, empty, 0, NULL);
		return 0;
	}
	if (asprintf(&full, "%s%s", st->prefix, key) < 0)
		return -ENOMEM;
	r = s3c_req_new("GET", st->bucket, full);
	g = calloc(1, sizeof(*g));
	rc = -ENOMEM;
	if (!r || !g || asprintf(&g->name, "s3://%s/%s", st->bucket, full) < 0) {
		if (g)
			g->name = NULL;
		goto fail;
	}
	s3c_req_set_range(r, off, len);
	if (if_match && *if_match) {
		if (!(g->etag = strdup(if_match)))
			goto fail;
		g->checking = atomic_load(&st->etag_on_206);
		if (!g->checking && (rc = s3c_req_set_if_match(r, if_match)))
			goto fail;
	}
	g->done = done;
	g->arg = arg;
	g->st = st;
	rc = s3c_submit(st->engine, r, get_done, g);
	if (!rc) {
		free(full);
		return 0;
	}
fail:
	free(full);
	if (g) {
		free(g->etag);
		free(g->name);
	}
	free(g);
	s3c_req_free(r);
	return rc;
}

/* ---- put ---- */

static int s3_put(struct store *s, const char *key, const void *data,
		  size_t len, char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r;
	char *full;
	int rc;

	if (asprintf(&full, "%s%s", st->prefix, key) < 0)
		return -ENOMEM;
	r = s3c_req_new("PUT", st->bucket, full);
	free(full);
	if (!r)
		return -ENOMEM;
	s3c_req_set_body(r, data, len);
	rc = s3c_perform(st->engine, r);
	if (rc)
		set_msg(msg, msglen, s3c_req_errmsg(r));
	s3c_req_free(r);
	return rc;
}

/* ---- get_object, stats ---- */

static int s3_get_object(struct store *s, const char *key, size_t cap,
			 char **data, size_t *len, char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r;
	const char *cl;
	char *full;
	int rc;

	*data = NULL;
	*len = 0;
	if (asprintf(&full, "%s%s", st->prefix, key) < 0)
		return -ENOMEM;
	r = s3c_req_new("GET", st->bucket, full);
	free(full);
	if (!r)
		return -ENOMEM;
	/* No Range: one GET of the whole object, however large (up to CAP,
	 * which also bounds what the engine buffers). */
	s3c_req_set_body_cap(r, cap);
	rc = s3c_perform(st->engine, r);
	cl = s3c_req_header(r, "content-length");
	if (rc && cl && strtoull(cl, NULL, 10) > cap) {
		if (msg)
			snprintf(msg, msglen, "%s%s: larger than %zu bytes",
				 st->desc, key, cap);
		rc = -E2BIG;
	} else if (rc == -ENOENT &&
		   strcmp(s3c_req_s3code(r), "NoSuchBucket") == 0) {
		set_msg(msg, msglen, s3c_req_errmsg(r));
		rc = -ENXIO;
	} else if (rc) {
		set_msg(msg, msglen, s3c_req_errmsg(r));
	} else {
		*data = s3c_req_take_body(r, len);
		if (!*data)
			rc = -ENOMEM;
	}
	s3c_req_free(r);
	return rc;
}

static void s3_stats(struct store *s, struct store_stats *out)
{
	struct s3c_stats e;

	s3c_get_stats(to_s3(s)->engine, &e);
	memset(out, 0, sizeof(*out));
	out->gets = e.gets;
	out->lists = e.lists;
	out->heads = e.heads;
	out->puts = e.puts;
	out->others = e.others;
	out->retries = e.retries;
	out->errors = e.errors;
	out->bytes_in = e.bytes_in;
	out->bytes_out = e.bytes_out;
	out->in_flight = e.in_flight;
	out->queued = e.queued;
	out->connects = e.connects;
	/* The engine's histogram has the layout of store_stats's. */
	_Static_assert(sizeof(e.lat_hist) == sizeof(out->lat_hist),
		       "s3c and store latency histograms differ");
	out->lat_known = true;
	out->lat_us_sum = e.lat_us_sum;
	for (size_t b = 0; b < STORE_LAT_BUCKETS; b++) {
		out->lat_hist[b] = e.lat_hist[b];
		out->lat_count += e.lat_hist[b];
	}
}

static const char *s3_describe(struct store *s)
{
	return to_s3(s)->desc;
}

static const char *s3_cache_id(struct store *s)
{
	return to_s3(s)->cache_id;
}

static void s3_free(struct store *s)
{
	struct store_s3 *st = to_s3(s);

	free(st->cache_id);
	s3c_free(st->engine);
	free(st->bucket);
	free(st->prefix);
	free(st->desc);
	free(st);
}

/* ---- writing (pack): put_async, multipart uploads, del ---- */

/*
 * A multipart upload. The part ETags are written by part_done() on the
 * engine's I/O thread and read by upload_complete() on the caller's
 * thread, hence the lock.
 */
struct store_upload {
	char *key;	      /* full key (prefix included) */
	char *upload_id;      /* as CreateMultipartUpload answered it */
	pthread_mutex_t lock; /* protects etags, nslots */
	char **etags;	      /* [number - 1]: quoted as the server sent it */
	uint32_t nslots;
};

struct put_ctx {
	store_put_done_fn *done;
	void *arg;
	struct store_upload *u; /* parts only */
	uint32_t number;
};

static void put_done(struct s3c_req *req, int err, void *arg)
{
	struct put_ctx p = *(struct put_ctx *)arg;
	const char *msg = err ? s3c_req_errmsg(req) : NULL;

	free(arg);
	if (!err && p.u) {
		const char *etag = s3c_req_header(req, "etag");
		char *dup = etag && *etag ? strdup(etag) : NULL;

		if (!dup) {
			err = etag && *etag ? -ENOMEM : -EPROTO;
			msg = etag && *etag
				  ? "out of memory"
				  : "UploadPart answer without an ETag";
		} else {
			pthread_mutex_lock(&p.u->lock);
			free(p.u->etags[p.number - 1]);
			p.u->etags[p.number - 1] = dup;
			pthread_mutex_unlock(&p.u->lock);
		}
	}
	p.done(p.arg, err, msg);
	s3c_req_free(req);
}

/* Submits the PUT R with body DATA; R is consumed either way. */
static int submit_put(struct store_s3 *st, struct s3c_req *r, const void *data,
		      size_t len, struct put_ctx *tmpl)
{
	struct put_ctx *p = malloc(sizeof(*p));
	int rc;

	if (!p) {
		s3c_req_free(r);
		return -ENOMEM;
	}
	*p = *tmpl;
	s3c_req_set_body(r, data, len);
	rc = s3c_submit(st->engine, r, put_done, p);
	if (rc) {
		free(p);
		s3c_req_free(r);
	}
	return rc;
}

static struct s3c_req *key_req(struct store_s3 *st, const char *method,
			       const char *key)
{
	struct s3c_req *r;
	char *full;

	if (asprintf(&full, "%s%s", st->prefix, key) < 0)
		return NULL;
	r = s3c_req_new(method, st->bucket, full);
	free(full);
	return r;
}

static int s3_put_async(struct store *s, const char *key, const void *data,
			size_t len, store_put_done_fn *done, void *arg)
{
	struct store_s3 *st = to_s3(s);
	struct put_ctx tmpl = {.done = done, .arg = arg};
	struct s3c_req *r = key_req(st, "PUT", key);

	if (!r)
		return -ENOMEM;
	return submit_put(st, r, data, len, &tmpl);
}

static void upload_free(struct store_upload *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->nslots; i++)
		free(u->etags[i]);
	free(u->etags);
	free(u->key);
	free(u->upload_id);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

static int s3_upload_begin(struct store *s, const char *key,
			   struct store_upload **out, char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct store_upload *u = calloc(1, sizeof(*u));
	struct s3c_req *r = NULL;
	const char *body;
	size_t len;
	int rc = -ENOMEM;

	if (!u)
		return -ENOMEM;
	pthread_mutex_init(&u->lock, NULL);
	if (asprintf(&u->key, "%s%s", st->prefix, key) < 0) {
		u->key = NULL;
		goto fail;
	}
	r = s3c_req_new("POST", st->bucket, u->key);
	if (!r || s3c_req_add_param(r, "uploads", NULL))
		goto fail;
	rc = s3c_perform(st->engine, r);
	if (rc) {
		set_msg(msg, msglen, s3c_req_errmsg(r));
		goto fail;
	}
	body = s3c_req_body(r, &len);
	rc = s3xml_parse_upload_id(body, len, &u->upload_id);
	if (rc) {
		if (msg)
			snprintf(msg, msglen,
				 "POST s3://%s/%s?uploads: no UploadId in the "
				 "answer (%s)",
				 st->bucket, u->key, strerror(-rc));
		goto fail;
	}
	s3c_req_free(r);
	*out = u;
	return 0;
fail:
	if (rc == -ENOMEM)
		set_msg(msg, msglen, "out of memory");
	s3c_req_free(r);
	upload_free(u);
	return rc;
}

static int s3_upload_part(struct store *s, struct store_upload *u,
			  uint32_t number, uint64_t offset, const void *data,
			  size_t len, store_put_done_fn *done, void *arg)
{
	struct store_s3 *st = to_s3(s);
	struct put_ctx tmpl = {
	    .done = done, .arg = arg, .u = u, .number = number};
	struct s3c_req *r;
	char num[16];
	int rc = 0;

	(void)offset;
	if (number < 1 || number > S3XML_MAX_PARTS)
		return -EINVAL;
	pthread_mutex_lock(&u->lock);
	if (number > u->nslots) {
		uint32_t n = number < 64 ? 64 : number * 2;
		char **p;

		if (n > S3XML_MAX_PARTS)
			n = S3XML_MAX_PARTS;
		p = realloc(u->etags, n * sizeof(*p));
		if (p) {
			memset(p + u->nslots, 0, (n - u->nslots) * sizeof(*p));
			u->etags = p;
			u->nslots = n;
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&u->lock);
	if (rc)
		return rc;
	r = s3c_req_new("PUT", st->bucket, u->key);
	snprintf(num, sizeof(num), "%" PRIu32, number);
	if (!r || s3c_req_add_param(r, "partNumber", num) ||
	    s3c_req_add_param(r, "uploadId", u->upload_id)) {
		s3c_req_free(r);
		return -ENOMEM;
	}
	return submit_put(st, r, data, len, &tmpl);
}

/* The CompleteMultipartUpload body for parts 1..N. */
static int complete_body(struct store_upload *u, uint32_t n, struct buf *out)
{
	struct s3xml_part *parts = calloc(n ? n : 1, sizeof(*parts));
	int rc = 0;

	if (!parts)
		return -ENOMEM;
	pthread_mutex_lock(&u->lock);
	for (uint32_t i = 0; i < n && !rc; i++) {
		parts[i].number = i + 1;
		parts[i].etag = i < u->nslots ? u->etags[i] : NULL;
		if (!parts[i].etag)
			rc = -EINVAL;
	}
	if (!rc)
		rc = s3xml_build_complete(parts, n, out);
	pthread_mutex_unlock(&u->lock);
	free(parts);
	return rc;
}

/*
 * The answer's ETag is not used: Ceph RGW answers an empty one (the
 * caller HEADs the object for it). What matters is that a 200 answer may
 * still be an <Error> document.
 */
static int complete_answer(struct store_s3 *st, struct store_upload *u,
			   struct s3c_req *r, char *msg, size_t msglen)
{
	struct s3xml_error e;
	const char *body;
	char *etag = NULL;
	size_t len;
	int rc;

	body = s3c_req_body(r, &len);
	rc = s3xml_parse_complete(body, len, &etag);
	free(etag);
	if (rc != -EREMOTEIO)
		return 0;
	s3xml_parse_error(body, len, &e);
	if (msg)
		snprintf(
		    msg, msglen,
		    "POST s3://%s/%s?uploadId=...: CompleteMultipartUpload "
		    "failed: %s %s",
		    st->bucket, u->key, e.code, e.message);
	return -EIO;
}

static int s3_upload_complete(struct store *s, struct store_upload *u,
			      uint32_t nparts, char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r = NULL;
	struct buf body;
	int rc;

	buf_init(&body, (size_t)64 << 20);
	rc = complete_body(u, nparts, &body);
	if (rc) {
		set_msg(msg, msglen,
			rc == -EINVAL ? "a part of the upload has no ETag"
				      : "out of memory");
		goto out;
	}
	r = s3c_req_new("POST", st->bucket, u->key);
	if (!r || s3c_req_add_param(r, "uploadId", u->upload_id)) {
		rc = -ENOMEM;
		goto out;
	}
	s3c_req_set_body(r, body.data, body.len);
	rc = s3c_perform(st->engine, r);
	if (rc)
		set_msg(msg, msglen, s3c_req_errmsg(r));
	else
		rc = complete_answer(st, u, r, msg, msglen);
out:
	s3c_req_free(r);
	buf_release(&body);
	if (!rc)
		upload_free(u);
	return rc;
}

static int s3_upload_abort(struct store *s, struct store_upload *u, char *msg,
			   size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r = s3c_req_new("DELETE", st->bucket, u->key);
	int rc = -ENOMEM;

	if (r && !s3c_req_add_param(r, "uploadId", u->upload_id)) {
		rc = s3c_perform(st->engine, r);
		/* NoSuchUpload: already gone, which is what was asked. */
		if (rc == -ENOENT)
			rc = 0;
		if (rc)
			set_msg(msg, msglen, s3c_req_errmsg(r));
	}
	s3c_req_free(r);
	upload_free(u);
	return rc;
}

static int s3_del(struct store *s, const char *key, char *msg, size_t msglen)
{
	struct store_s3 *st = to_s3(s);
	struct s3c_req *r = key_req(st, "DELETE", key);
	int rc;

	if (!r)
		return -ENOMEM;
	rc = s3c_perform(st->engine, r);
	if (rc == -ENOENT && strcmp(s3c_req_s3code(r), "NoSuchBucket") != 0)
		rc = 0;
	if (rc)
		set_msg(msg, msglen, s3c_req_errmsg(r));
	s3c_req_free(r);
	return rc;
}

static const struct store_ops s3_ops = {
	.list = s3_list,
	.head = s3_head,
	.get_range = s3_get_range,
	.get_whole = s3_get_whole,
	.put = s3_put,
	.get_object = s3_get_object,
	.stats = s3_stats,
	.describe = s3_describe,
	.cache_id = s3_cache_id,
	.put_async = s3_put_async,
	.upload_begin = s3_upload_begin,
	.upload_part = s3_upload_part,
	.upload_complete = s3_upload_complete,
	.upload_abort = s3_upload_abort,
	.del = s3_del,
	.free = s3_free,
};

int store_s3_new(struct s3c *engine, const char *bucket, const char *prefix,
		 struct store **out)
{
	struct store_s3 *st = calloc(1, sizeof(*st));
	size_t n = prefix ? strlen(prefix) : 0;

	if (!st)
		return -ENOMEM;
	st->base.ops = &s3_ops;
	st->bucket = strdup(bucket);
	if (asprintf(&st->prefix, "%s%s", n ? prefix : "",
		     n && prefix[n - 1] != '/' ? "/" : "") < 0)
		st->prefix = NULL;
	if (asprintf(&st->desc, "s3://%s/%s", bucket, st->prefix ? st->prefix : "") < 0)
		st->desc = NULL;
	if (asprintf(&st->cache_id, "%s/%s/%s", s3c_endpoint(engine), bucket,
		     st->prefix ? st->prefix : "") < 0)
		st->cache_id = NULL;
	if (!st->bucket || !st->prefix || !st->desc || !st->cache_id) {
		free(st->cache_id);
		free(st->bucket);
		free(st->prefix);
		free(st->desc);
		free(st);
		return -ENOMEM;
	}
	st->engine = engine;
	*out = &st->base;
	return 0;
}

struct s3c *store_s3_engine(struct store *s)
{
	return to_s3(s)->engine;
}
