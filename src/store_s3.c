// SPDX-License-Identifier: MIT
/*
 * store_s3: the store vtable over the S3 engine. list() is ListObjectsV2
 * with delimiter "/" and encoding-type=url, following continuation tokens
 * (a repeated token is an error); head() is HEAD; get_range() is a ranged
 * GET answered from the engine's I/O thread; put() is a single PUT.
 *
 * The store holds no mutable state besides the engine, so it needs no lock:
 * the engine is thread-safe.
 */
#include "store_s3.h"

#include <errno.h>
#include <inttypes.h>
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

/* ---- get_range ---- */

struct get_ctx {
	store_done_fn *done;
	void *arg;
};

static void get_done(struct s3c_req *req, int err, void *arg)
{
	struct get_ctx g = *(struct get_ctx *)arg;
	char *data = NULL;
	size_t len = 0;

	free(arg);
	if (!err) {
		data = s3c_req_take_body(req, &len);
		if (!data)
			err = -ENOMEM;
	}
	g.done(g.arg, err, err ? NULL : data, err ? 0 : len,
	       err ? s3c_req_errmsg(req) : NULL);
	s3c_req_free(req);
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
	free(full);
	g = malloc(sizeof(*g));
	if (!r || !g) {
		rc = -ENOMEM;
		goto fail;
	}
	s3c_req_set_range(r, off, len);
	if (if_match && *if_match && (rc = s3c_req_set_if_match(r, if_match)))
		goto fail;
	g->done = done;
	g->arg = arg;
	rc = s3c_submit(st->engine, r, get_done, g);
	if (!rc)
		return 0;
fail:
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

static const struct store_ops s3_ops = {
	.list = s3_list,
	.head = s3_head,
	.get_range = s3_get_range,
	.put = s3_put,
	.describe = s3_describe,
	.cache_id = s3_cache_id,
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
