// SPDX-License-Identifier: MIT
/*
 * s3c: the S3 HTTP engine. One I/O thread owns the CURLM handle and every
 * easy handle. Other threads only touch the submit queue (under c->lock)
 * and the statistics (under c->stats_lock) and wake the I/O thread with
 * curl_multi_wakeup().
 *
 * The I/O thread keeps three sets of requests, all private to it:
 *   ready   - FIFO of requests waiting for a connection slot;
 *   retry   - requests waiting for their backoff to expire;
 *   active  - requests on the wire (at most conf.max_connections).
 * A request is in exactly one of: the submit queue, ready, retry, active,
 * or completed (handed back through its done callback).
 *
 * Every attempt is signed afresh, so a retry after a long backoff never
 * carries a stale date. Retry timers are the poll timeout of the loop; no
 * thread ever sleeps to back off.
 */
#include "s3c.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "s3xml.h"
#include "sigv4.h"

#define S3C_DEFAULT_BODY_CAP (16u << 20)
#define S3C_ERROR_BODY_CAP   (64u << 10)
#define S3C_MAX_PARAMS	     16
#define S3C_MAX_HEADERS	     16
/* Attempts of a request that cannot reach an endpoint that has never
 * answered this engine: a wrong URL or a server that is down at start
 * fails in well under a second instead of riding out an "outage". */
#define S3C_UNPROVEN_ATTEMPTS 3

struct s3c_kv {
	char *name;
	char *value; /* NULL = valueless parameter */
};

struct s3c_req {
	struct s3c_req *next; /* link in the submit queue or an I/O list */
	struct s3c_req *prev; /* the active list is doubly linked */
	char method[8];
	char *bucket;
	char *key;
	struct s3c_kv params[S3C_MAX_PARAMS];
	size_t nparams;
	struct s3c_kv headers[S3C_MAX_HEADERS];
	size_t nheaders;
	bool has_range;
	bool allow_short; /* the range may end early at the end of the object */
	uint64_t range_off, range_len;
	char *if_match;
	const void *body; /* borrowed until completion */
	size_t body_len;
	size_t body_pos;
	char body_sha[65];
	size_t body_cap;
	s3c_done_fn *done;
	void *arg;

	/* I/O thread only, while submitted. */
	CURL *easy;
	struct curl_slist *slist;
	char *url;
	int64_t due_us;	   /* retry: when the next attempt may start */
	int64_t start_us;  /* submission time, for latency */
	int64_t active_us; /* last sign of life of the attempt (stalls) */
	int64_t stall_us;  /* conf.stall_timeout in microseconds */
	int64_t seen_ul;   /* bytes uploaded at the last progress call */
	bool overflow;	   /* the body exceeded its cap */
	bool stalled;	   /* aborted by the stall check */
	char curl_errbuf[CURL_ERROR_SIZE];

	/* Results. */
	unsigned attempts;
	unsigned connects;
	long status;
	int curl_code;
	int err;
	struct buf resp;
	char etag[256];
	char last_modified[64];
	char content_length[32];
	char content_range[96];
	char request_id[128];
	char retry_after[32];
	char s3code[64];
	char errmsg[768];
};

struct s3c {
	/* Immutable after s3c_new(). */
	struct s3c_conf conf; /* strings point into the owned copies below */
	char *own_scheme, *own_host, *own_base, *own_region, *own_ak,
		*own_sk, *own_token, *own_ca;
	char endpoint[512];
	CURLM *multi;
	pthread_t thread;

	pthread_mutex_t lock;	/* protects q_head, q_tail, stopping */
	struct s3c_req *q_head; /* submitted, not yet seen by the I/O thread */
	struct s3c_req *q_tail;
	bool stopping;

	/* I/O thread only. */
	struct s3c_req *ready_head, *ready_tail;
	struct s3c_req *retry_list;
	struct s3c_req *active; /* on the wire */
	unsigned nactive;
	struct sigv4_key_cache kc;
	uint64_t rng;
	bool answered; /* some attempt got an HTTP status from the endpoint */

	pthread_mutex_t stats_lock; /* protects stats */
	struct s3c_stats stats;
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void s3c_conf_init(struct s3c_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->scheme = "https";
	conf->port = 443;
	conf->base_path = "";
	conf->region = "us-east-1";
	conf->max_connections = 64;
	conf->max_attempts = 10;
	conf->retry_base_ms = 100;
	conf->retry_cap_ms = 5000;
	conf->connect_timeout = 5;
	conf->stall_timeout = 30;
	conf->max_conn_age = 50;
	conf->outage_s = 30;
}

/* ---------------------------------------------------------------- */
/* Requests                                                          */
/* ---------------------------------------------------------------- */

struct s3c_req *s3c_req_new(const char *method, const char *bucket,
			    const char *key)
{
	struct s3c_req *r;

	if (!method || strlen(method) >= sizeof(r->method) || !bucket)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->method, sizeof(r->method), "%s", method);
	r->bucket = strdup(bucket);
	r->key = strdup(key ? key : "");
	if (!r->bucket || !r->key) {
		s3c_req_free(r);
		return NULL;
	}
	r->body_cap = S3C_DEFAULT_BODY_CAP;
	buf_init(&r->resp, r->body_cap);
	return r;
}

static void kv_release(struct s3c_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
}

void s3c_req_free(struct s3c_req *req)
{
	if (!req)
		return;
	kv_release(req->params, req->nparams);
	kv_release(req->headers, req->nheaders);
	free(req->bucket);
	free(req->key);
	free(req->if_match);
	free(req->url);
	curl_slist_free_all(req->slist);
	buf_release(&req->resp);
	free(req);
}

static int kv_add(struct s3c_kv *kv, size_t *n, size_t max, const char *name,
		  const char *value)
{
	if (!name || !*name || *n >= max)
		return -EINVAL;
	kv[*n].name = strdup(name);
	kv[*n].value = value ? strdup(value) : NULL;
	if (!kv[*n].name || (value && !kv[*n].value)) {
		free(kv[*n].name);
		free(kv[*n].value);
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

int s3c_req_add_param(struct s3c_req *req, const char *name,
		      const char *value)
{
	return kv_add(req->params, &req->nparams, S3C_MAX_PARAMS, name, value);
}

int s3c_req_add_header(struct s3c_req *req, const char *name,
		       const char *value)
{
	if (!value || strpbrk(name, ":\r\n") || strpbrk(value, "\r\n"))
		return -EINVAL;
	return kv_add(req->headers, &req->nheaders, S3C_MAX_HEADERS, name,
		      value);
}

void s3c_req_set_range(struct s3c_req *req, uint64_t off, uint64_t len)
{
	req->has_range = len > 0;
	req->range_off = off;
	req->range_len = len;
	/* The answer must be exactly LEN bytes: more is an error. */
	if (len > 0)
		req->body_cap = len > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)len;
}

void s3c_req_allow_short(struct s3c_req *req)
{
	req->allow_short = true;
}

int s3c_req_set_if_match(struct s3c_req *req, const char *etag)
{
	char *p;

	if (!etag || !*etag || strpbrk(etag, "\r\n"))
		return -EINVAL;
	p = strdup(etag);
	if (!p)
		return -ENOMEM;
	free(req->if_match);
	req->if_match = p;
	return 0;
}

void s3c_req_set_body(struct s3c_req *req, const void *data, size_t len)
{
	req->body = data;
	req->body_len = len;
	sigv4_sha256_hex(data, len, req->body_sha);
}

void s3c_req_set_body_cap(struct s3c_req *req, size_t cap)
{
	req->body_cap = cap;
}

long s3c_req_status(const struct s3c_req *req)
{
	return req->status;
}

const char *s3c_req_body(const struct s3c_req *req, size_t *len)
{
	if (len)
		*len = req->resp.len;
	return buf_str(&req->resp);
}

char *s3c_req_take_body(struct s3c_req *req, size_t *len)
{
	return buf_detach(&req->resp, len);
}

const char *s3c_req_header(const struct s3c_req *req, const char *name)
{
	const char *v = NULL;

	if (strcasecmp(name, "etag") == 0)
		v = req->etag;
	else if (strcasecmp(name, "last-modified") == 0)
		v = req->last_modified;
	else if (strcasecmp(name, "content-length") == 0)
		v = req->content_length;
	else if (strcasecmp(name, "content-range") == 0)
		v = req->content_range;
	else if (strcasecmp(name, "x-amz-request-id") == 0)
		v = req->request_id;
	return v && *v ? v : NULL;
}

const char *s3c_req_errmsg(const struct s3c_req *req)
{
	return req->errmsg;
}

const char *s3c_req_s3code(const struct s3c_req *req)
{
	return req->s3code;
}

unsigned s3c_req_attempts(const struct s3c_req *req)
{
	return req->attempts;
}

unsigned s3c_req_connects(const struct s3c_req *req)
{
	return req->connects;
}

/* ---------------------------------------------------------------- */
/* Errors: the one place where answers become errno values           */
/* ---------------------------------------------------------------- */

struct code_map {
	const char *code;
	int err;
	const char *hint;
};

static const struct code_map code_map[] = {
	{"SignatureDoesNotMatch", -EACCES, "check the secret key and region"},
	{"InvalidAccessKeyId", -EACCES, "check the access key id"},
	{"AccessDenied", -EACCES, "check the credentials and the bucket policy"},
	{"ExpiredToken", -EACCES, "the session token has expired"},
	{"InvalidToken", -EACCES, "check the session token"},
	{"RequestTimeTooSkewed", -EACCES, "check the system clock"},
	{"AuthorizationHeaderMalformed", -EACCES, "check the region"},
	{"NoSuchBucket", -ENOENT, "check the bucket name"},
	{"NoSuchKey", -ENOENT, ""},
	{"NoSuchUpload", -ENOENT, ""},
	{"PreconditionFailed", -ESTALE, "the object changed"},
	{"InvalidRange", -ERANGE, ""},
	{"PermanentRedirect", -EREMOTE, "check the region and the endpoint"},
	{"SlowDown", -EAGAIN, "the server is overloaded"},
	{"ServiceUnavailable", -EAGAIN, "the server is overloaded"},
	{"InternalError", -EIO, ""},
	{"EntityTooLarge", -EFBIG, ""},
	{"BucketAlreadyOwnedByYou", -EEXIST, ""},
	{"BucketAlreadyExists", -EEXIST, ""},
};

static int map_status(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 301:
	case 307:
		return -EREMOTE;
	case 400:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 409:
		return -EEXIST;
	case 412:
		return -ESTALE;
	case 416:
		return -ERANGE;
	case 429:
	case 503:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

static int map_curl(int cc, const char **hint)
{
	switch ((CURLcode)cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		*hint = "check the endpoint URL";
		return -EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT:
		*hint = "check the endpoint URL and that the server is up";
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
		*hint = "TLS verification failed: give the server's CA "
			"certificate with --ca-bundle";
		return -EPROTO;
	case CURLE_WRITE_ERROR:
		return -EFBIG;
	default:
		return -EIO;
	}
}

int s3c_map_error(long status, const char *code, int curl_code,
		  const char **hint)
{
	*hint = "";
	if (curl_code != CURLE_OK)
		return map_curl(curl_code, hint);
	if (status >= 200 && status < 300)
		return 0;
	for (size_t i = 0; code && i < sizeof(code_map) / sizeof(code_map[0]);
	     i++) {
		if (strcmp(code, code_map[i].code) == 0) {
			*hint = code_map[i].hint;
			return code_map[i].err;
		}
	}
	if (status == 404)
		*hint = "no such bucket or key";
	return map_status(status);
}

bool s3c_retryable(long status, const char *code, int curl_code)
{
	switch ((CURLcode)curl_code) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
		return true;
	default:
		return false;
	}
	if (status >= 500 || status == 429 || status == 408)
		return true;
	/* Some servers send RequestTimeout / SlowDown with other statuses. */
	return code && (strcmp(code, "SlowDown") == 0 ||
			strcmp(code, "RequestTimeout") == 0 ||
			strcmp(code, "InternalError") == 0);
}

/* ---------------------------------------------------------------- */
/* curl callbacks (I/O thread)                                       */
/* ---------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3c_req *r = arg;
	size_t n = size * nmemb;
	long status = 0;

	r->active_us = mono_us();
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	/* An error answer is read up to its own cap, whatever the request's
	 * cap (a 1-byte range can still get a 1 KiB error document). */
	r->resp.cap = status >= 300 ? S3C_ERROR_BODY_CAP : r->body_cap;
	if (buf_append(&r->resp, p, n) != 0) {
		r->overflow = true;
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	return n;
}

static void copy_header(char *dst, size_t dstlen, const char *v, size_t n)
{
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3c_req *r = arg;
	size_t n = size * nmemb, nl;
	const char *colon, *v, *end = p + n;

	r->active_us = mono_us();
	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new status line (after 100 Continue): forget earlier
		 * headers. */
		r->etag[0] = r->last_modified[0] = r->content_length[0] = '\0';
		r->content_range[0] = r->retry_after[0] = '\0';
		return n;
	}
	colon = memchr(p, ':', n);
	if (!colon)
		return n;
	nl = (size_t)(colon - p);
	v = colon + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' '))
		end--;
#define HDR(name, field)                                                       \
	if (nl == sizeof(name) - 1 && strncasecmp(p, name, nl) == 0) {         \
		copy_header(r->field, sizeof(r->field), v, (size_t)(end - v)); \
		return n;                                                      \
	}
	HDR("etag", etag)
	HDR("last-modified", last_modified)
	HDR("content-length", content_length)
	HDR("content-range", content_range)
	HDR("x-amz-request-id", request_id)
	HDR("retry-after", retry_after)
#undef HDR
	return n;
}

/*
 * The stall check: an attempt that has seen no byte in either direction
 * for stall_timeout seconds since it was connected is aborted (and
 * retried as a timeout). curl's own LOW_SPEED options average the speed
 * over a window of several seconds, so they noticed a stall after some
 * data up to ~5 s late. Connecting has its own timeout and does not
 * count. Called by curl at least once a second per transfer while the
 * I/O loop runs (its poll timeout is at most 1 s).
 */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct s3c_req *r = arg;
	curl_off_t pre = 0;
	int64_t now = mono_us();

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
	if (pre == 0 || ulnow != r->seen_ul) {
		r->seen_ul = ulnow;
		r->active_us = now;
		return 0;
	}
	if (now - r->active_us < r->stall_us)
		return 0;
	r->stalled = true;
	return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

static size_t on_upload(char *p, size_t size, size_t nmemb, void *arg)
{
	struct s3c_req *r = arg;
	size_t n = size * nmemb, left = r->body_len - r->body_pos;

	if (n > left)
		n = left;
	if (n)
		memcpy(p, (const char *)r->body + r->body_pos, n);
	r->body_pos += n;
	return n;
}

static int on_seek(void *arg, curl_off_t off, int origin)
{
	struct s3c_req *r = arg;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > r->body_len)
		return CURL_SEEKFUNC_FAIL;
	r->body_pos = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

/* ---------------------------------------------------------------- */
/* Building and signing one attempt (I/O thread)                     */
/* ---------------------------------------------------------------- */

/* Host header value for REQ (virtual-hosted: bucket.host). */
static int host_header(const struct s3c *c, const struct s3c_req *r,
		       struct buf *out)
{
	bool def = (strcmp(c->conf.scheme, "http") == 0 && c->conf.port == 80) ||
		   (strcmp(c->conf.scheme, "https") == 0 &&
		    c->conf.port == 443);
	int rc = 0;

	if (c->conf.virtual_host && r->bucket[0])
		rc = buf_printf(out, "%s.", r->bucket);
	if (!rc)
		rc = buf_append_str(out, c->conf.host);
	if (!rc && !def)
		rc = buf_printf(out, ":%u", c->conf.port);
	return rc;
}

/* Raw (unencoded) path of REQ. */
static int raw_path(const struct s3c *c, const struct s3c_req *r,
		    struct buf *out)
{
	int rc = buf_append_str(out, c->conf.base_path);

	if (!rc && !c->conf.virtual_host && r->bucket[0])
		rc = buf_printf(out, "/%s", r->bucket);
	if (!rc && (c->conf.virtual_host || r->key[0]))
		rc = buf_printf(out, "/%s", r->key);
	if (!rc && out->len == 0)
		rc = buf_append_str(out, "/");
	return rc;
}

/* Encoded path and query for an anonymous request (no signature). */
static int anon_uri(const struct s3c_req *r, const char *path,
		    struct sigv4_signed *sg)
{
	int rc = sigv4_uri_encode(path, strlen(path), true, &sg->canonical_uri);

	for (size_t i = 0; !rc && i < r->nparams; i++) {
		const char *v = r->params[i].value ? r->params[i].value : "";

		if (i)
			rc = buf_append_str(&sg->canonical_query, "&");
		if (!rc)
			rc = sigv4_uri_encode(r->params[i].name,
					      strlen(r->params[i].name), false,
					      &sg->canonical_query);
		if (!rc)
			rc = buf_append_str(&sg->canonical_query, "=");
		if (!rc)
			rc = sigv4_uri_encode(v, strlen(v), false,
					      &sg->canonical_query);
	}
	return rc;
}

static int slist_add(struct curl_slist **l, const char *name, const char *v)
{
	char line[2048];
	struct curl_slist *n;

	/* "Name:" with nothing after the colon makes curl drop a header it
	 * would add by itself (Expect, Accept). */
	if ((size_t)snprintf(line, sizeof(line), *v ? "%s: %s" : "%s:%s",
			     name, v) >= sizeof(line))
		return -E2BIG;
	n = curl_slist_append(*l, line);
	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

/* Signs the attempt and sets r->url and r->slist. */
static int build_attempt(struct s3c *c, struct s3c_req *r)
{
	struct sigv4_header hdrs[S3C_MAX_HEADERS + 2];
	struct sigv4_param params[S3C_MAX_PARAMS];
	struct sigv4_signed sg;
	struct buf host, path, url;
	char range[64];
	size_t nh = 0;
	int rc;

	buf_init(&host, 1024);
	buf_init(&path, 8192);
	buf_init(&url, 16384);
	sigv4_signed_init(&sg);
	rc = host_header(c, r, &host);
	if (!rc)
		rc = raw_path(c, r, &path);
	if (rc)
		goto out;
	if (r->has_range) {
		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64,
			 r->range_off, r->range_off + r->range_len - 1);
		hdrs[nh++] = (struct sigv4_header){"Range", range};
	}
	if (r->if_match)
		hdrs[nh++] = (struct sigv4_header){"If-Match", r->if_match};
	for (size_t i = 0; i < r->nheaders; i++)
		hdrs[nh++] = (struct sigv4_header){r->headers[i].name,
						   r->headers[i].value};
	for (size_t i = 0; i < r->nparams; i++)
		params[i] = (struct sigv4_param){r->params[i].name,
						 r->params[i].value};
	if (c->conf.access_key) {
		struct sigv4_request sr = {
			.method = r->method,
			.host = buf_str(&host),
			.path = buf_str(&path),
			.query = params,
			.nquery = r->nparams,
			.headers = hdrs,
			.nheaders = nh,
			.payload_hash = r->body ? r->body_sha
						: SIGV4_UNSIGNED_PAYLOAD,
			.content_sha256_header = true,
			.s3_path = true,
			.when = time(NULL),
			.region = c->conf.region,
			.service = "s3",
		};
		struct sigv4_creds cr = {c->conf.access_key,
					 c->conf.secret_key,
					 c->conf.session_token};

		rc = sigv4_sign(&sr, &cr, &c->kc, &sg);
	} else {
		rc = anon_uri(r, buf_str(&path), &sg);
	}
	if (rc)
		goto out;
	curl_slist_free_all(r->slist);
	r->slist = NULL;
	rc = slist_add(&r->slist, "Host", buf_str(&host));
	for (size_t i = 0; !rc && i < nh; i++)
		rc = slist_add(&r->slist, hdrs[i].name, hdrs[i].value);
	if (!rc && c->conf.access_key) {
		rc = slist_add(&r->slist, "X-Amz-Date", sg.amz_date);
		if (!rc)
			rc = slist_add(&r->slist, "X-Amz-Content-Sha256",
				       r->body ? r->body_sha
					       : SIGV4_UNSIGNED_PAYLOAD);
		if (!rc && c->conf.session_token && *c->conf.session_token)
			rc = slist_add(&r->slist, "X-Amz-Security-Token",
				       c->conf.session_token);
		if (!rc)
			rc = slist_add(&r->slist, "Authorization",
				       buf_str(&sg.authorization));
	}
	if (!rc)
		rc = slist_add(&r->slist, "Expect", "");
	if (!rc)
		rc = slist_add(&r->slist, "Accept", "");
	if (!rc)
		rc = buf_printf(&url, "%s://%s%s%s%s", c->conf.scheme,
				buf_str(&host), buf_str(&sg.canonical_uri),
				sg.canonical_query.len ? "?" : "",
				buf_str(&sg.canonical_query));
	if (!rc) {
		free(r->url);
		r->url = buf_detach(&url, NULL);
		rc = r->url ? 0 : -ENOMEM;
	}
	if (!rc && log_enabled(LOG_LVL_TRACE))
		log_trace("s3c: %s %s", r->method, r->url);
out:
	sigv4_signed_release(&sg);
	buf_release(&host);
	buf_release(&path);
	buf_release(&url);
	return rc;
}

/* ---------------------------------------------------------------- */
/* The I/O loop                                                      */
/* ---------------------------------------------------------------- */

static void setup_easy(struct s3c *c, struct s3c_req *r)
{
	CURL *e = r->easy;

	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->slist);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)c->conf.connect_timeout);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, r);
	curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, (long)c->conf.max_conn_age);
	curl_easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, 60L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c->conf.no_verify_ssl ? 0L : 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c->conf.no_verify_ssl ? 0L : 2L);
	if (c->conf.ca_bundle)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->conf.ca_bundle);
	if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	}
}

/* The operation as users know it: a listing is a GET of the bucket. */
static bool req_is_list(const struct s3c_req *r)
{
	for (size_t i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, "list-type") == 0)
			return true;
	return false;
}

static const char *req_verb(const struct s3c_req *r)
{
	return req_is_list(r) ? "LIST" : r->method;
}

/* The key, or for a listing its prefix. */
static const char *req_object(const struct s3c_req *r)
{
	if (req_is_list(r))
		for (size_t i = 0; i < r->nparams; i++)
			if (strcmp(r->params[i].name, "prefix") == 0)
				return r->params[i].value;
	return r->key;
}

static void stats_count_done(struct s3c *c, const struct s3c_req *r)
{
	int64_t lat = mono_us() - r->start_us;
	unsigned b = 0;

	while (b < 31 && ((int64_t)1 << (b + 1)) <= lat)
		b++;
	pthread_mutex_lock(&c->stats_lock);
	c->stats.requests++;
	if (strcmp(r->method, "GET") == 0) {
		if (req_is_list(r))
			c->stats.lists++;
		else
			c->stats.gets++;
	} else if (strcmp(r->method, "HEAD") == 0) {
		c->stats.heads++;
	} else if (strcmp(r->method, "PUT") == 0) {
		c->stats.puts++;
	} else {
		c->stats.others++;
	}
	/* "No such key" is an answer (the mount's probe for a dataset
	 * index gets it every time there is none), not a failure. */
	if (r->err && r->err != -ENOENT)
		c->stats.errors++;
	c->stats.lat_us_sum += (uint64_t)(lat > 0 ? lat : 0);
	c->stats.lat_hist[b]++;
	pthread_mutex_unlock(&c->stats_lock);
}

/* Hands REQ back to its owner. */
static void complete(struct s3c *c, struct s3c_req *r, int err)
{
	r->err = err;
	stats_count_done(c, r);
	if (err && log_enabled(LOG_LVL_DEBUG))
		log_debug("s3c: %s", r->errmsg);
	r->done(r, err, r->arg);
}

/* snprintf that truncates on purpose (messages, never data). */
__attribute__((format(printf, 3, 4))) static void fmt(char *dst, size_t n,
						       const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(dst, n, f, ap);
	va_end(ap);
}

static void describe_error(struct s3c *c, struct s3c_req *r, int err,
			   const char *hint)
{
	const char *what = r->s3code[0] ? r->s3code : "";
	char detail[CURL_ERROR_SIZE + 64] = "";
	struct s3xml_error xe;

	if (r->curl_code == CURLE_COULDNT_CONNECT ||
	    r->curl_code == CURLE_COULDNT_RESOLVE_HOST)
		fmt(detail, sizeof(detail),
			 "could not connect to the endpoint URL %s (%s)",
			 c->endpoint, r->curl_errbuf);
	else if (r->curl_code == CURLE_WRITE_ERROR && r->overflow)
		fmt(detail, sizeof(detail),
			 "response body larger than %zu bytes", r->body_cap);
	else if (r->curl_code != CURLE_OK)
		fmt(detail, sizeof(detail), "%s",
			 r->curl_errbuf[0] ? r->curl_errbuf
					   : curl_easy_strerror(r->curl_code));
	else if (r->status >= 300 && what[0] &&
		 s3xml_parse_error(r->resp.data, r->resp.len, &xe) == 0 &&
		 xe.message[0])
		fmt(detail, sizeof(detail), "HTTP %ld %s: %s", r->status,
			 what, xe.message);
	else if (r->status >= 300)
		fmt(detail, sizeof(detail), "HTTP %ld%s%s", r->status,
			 what[0] ? " " : "", what);
	else
		fmt(detail, sizeof(detail), "%s", strerror(-err));
	fmt(r->errmsg, sizeof(r->errmsg), "%s s3://%s/%s: %s%s%s%s",
	    req_verb(r), r->bucket, req_object(r), detail,
	    hint[0] ? " (" : "", hint, hint[0] ? ")" : "");
	if (r->attempts > 1) {
		size_t n = strlen(r->errmsg);

		fmt(r->errmsg + n, sizeof(r->errmsg) - n,
			 " after %u attempts", r->attempts);
	}
}

/* Parses a decimal number of at most 19 digits; returns the end, or NULL. */
static const char *parse_u64(const char *p, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	while (*p >= '0' && *p <= '9' && n < 19) {
		v = v * 10 + (uint64_t)(*p++ - '0');
		n++;
	}
	*out = v;
	return n == 0 || (*p >= '0' && *p <= '9') ? NULL : p;
}

/* "bytes S-E/TOTAL" with S <= E < TOTAL, nothing else. 0 or -EINVAL. */
static int parse_content_range(const char *v, uint64_t *s, uint64_t *e,
			       uint64_t *total)
{
	if (strncmp(v, "bytes ", 6) != 0)
		return -EINVAL;
	v = parse_u64(v + 6, s);
	if (!v || *v != '-' || !(v = parse_u64(v + 1, e)) || *v != '/' ||
	    !(v = parse_u64(v + 1, total)) || *v)
		return -EINVAL;
	return *s <= *e && *e < *total ? 0 : -EINVAL;
}

/*
 * Checks that a 2xx answer holds exactly the bytes asked for: for a range
 * request, a 206 whose Content-Range is the range asked for (or, with
 * allow_short, its part up to the end of the object) and a body of that
 * length, or a 200 of the whole object when the range starts at 0; for a
 * request without a range, anything but a 206 (a partial answer to a
 * request for everything is never the object). Returns NULL when it does,
 * else what is wrong.
 */
static const char *check_range(const struct s3c_req *r)
{
	uint64_t s, e, total;
	uint64_t want_end = r->range_off + r->range_len - 1;

	if (!r->has_range)
		return r->status == 206
			   ? "206 answer to a request without Range"
			   : NULL;
	if (r->status == 200) {
		/* The whole object: fine when it is what was asked for. */
		if (r->range_off != 0)
			return "server ignored the Range header";
		if (r->resp.len == r->range_len ||
		    (r->allow_short && r->resp.len < r->range_len))
			return NULL;
		return "body length differs from the range asked for";
	}
	if (r->status != 206 ||
	    parse_content_range(r->content_range, &s, &e, &total) != 0 ||
	    s != r->range_off)
		return "wrong Content-Range";
	if (r->allow_short && e < want_end && e + 1 == total)
		want_end = e;
	if (e != want_end)
		return "wrong Content-Range";
	if (r->resp.len != want_end - r->range_off + 1)
		return "body length differs from the range asked for";
	return NULL;
}

static uint64_t rng_next(struct s3c *c)
{
	uint64_t x = c->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return x;
}

/*
 * Equal jitter: uniform in [d/2, d], d = min(cap, base * 2^(attempt-1)).
 * The floor gives the retries of a request a known minimum span (with the
 * defaults, 10 attempts take at least 10.6 s), so that a server restart or
 * a short outage is ridden out; the random half still spreads clients out.
 */
static int64_t backoff_us(struct s3c *c, const struct s3c_req *r)
{
	uint64_t cap_ms = c->conf.retry_cap_ms, exp_ms = c->conf.retry_base_ms;
	unsigned long ra;

	for (unsigned i = 1; i < r->attempts && exp_ms < cap_ms; i++)
		exp_ms *= 2;
	if (exp_ms > cap_ms)
		exp_ms = cap_ms;
	if (r->retry_after[0] && sscanf(r->retry_after, "%lu", &ra) == 1 &&
	    r->retry_after[0] != '-' && ra <= cap_ms / 1000)
		return (int64_t)ra * 1000000;
	return (int64_t)(exp_ms * 500 + rng_next(c) % (exp_ms * 500 + 1));
}

static void retry_later(struct s3c *c, struct s3c_req *r, const char *why)
{
	int64_t wait = backoff_us(c, r);

	log_debug("s3c: %s s3://%s/%s: %s; attempt %u of %u in %lld ms",
		  req_verb(r), r->bucket, req_object(r), why, r->attempts + 1,
		  c->conf.max_attempts, (long long)(wait / 1000));
	r->due_us = mono_us() + wait;
	r->next = c->retry_list;
	c->retry_list = r;
	pthread_mutex_lock(&c->stats_lock);
	c->stats.retries++;
	c->stats.queued++;
	pthread_mutex_unlock(&c->stats_lock);
}

static void extract_s3code(struct s3c_req *r)
{
	struct s3xml_error xe;

	r->s3code[0] = '\0';
	if (r->status >= 300 && r->resp.len > 0 &&
	    s3xml_parse_error(r->resp.data, r->resp.len, &xe) == 0)
		snprintf(r->s3code, sizeof(r->s3code), "%s", xe.code);
}

static void active_remove(struct s3c *c, struct s3c_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		c->active = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
	c->nactive--;
}

/*
 * The curl code of a finished attempt, made precise: our stall check's
 * abort is a timeout; curl's "Received HTTP/0.9" after the request went
 * out is a garbled answer (worth another attempt). *SENT: whether the
 * request went out (a connection was made).
 */
static CURLcode normalise_code(struct s3c *c, struct s3c_req *r, CURLcode cc,
			       bool *sent)
{
	curl_off_t pre = 0;

	curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
	*sent = pre > 0;
	if (cc == CURLE_UNSUPPORTED_PROTOCOL && *sent)
		cc = CURLE_WEIRD_SERVER_REPLY;
	if (cc == CURLE_ABORTED_BY_CALLBACK && r->stalled) {
		cc = CURLE_OPERATION_TIMEDOUT;
		fmt(r->curl_errbuf, sizeof(r->curl_errbuf),
		    "no data for %u s (stall timeout)", c->conf.stall_timeout);
	}
	return cc;
}

/*
 * Whether a failed attempt of R gets another one. RETRYABLE: the failure
 * is worth one; UNREACHABLE: the endpoint could not be reached at all (the
 * request never went out). The attempt budget is conf.max_attempts, with
 * two exceptions for unreachable endpoints: one that never answered this
 * engine gets S3C_UNPROVEN_ATTEMPTS at most (a wrong URL fails fast), and
 * one that did answer before is in an outage (a restart, a network blip),
 * which is ridden out for conf.outage_s seconds from the request's start
 * whatever the budget: those attempts cost the server nothing.
 */
static bool want_retry(const struct s3c *c, const struct s3c_req *r,
		       bool retryable, bool unreachable)
{
	if (!retryable || c->conf.max_attempts < 2)
		return false;
	if (unreachable && !c->answered)
		return r->attempts < S3C_UNPROVEN_ATTEMPTS &&
		       r->attempts < c->conf.max_attempts;
	if (unreachable &&
	    mono_us() - r->start_us < (int64_t)c->conf.outage_s * 1000000)
		return true;
	return r->attempts < c->conf.max_attempts;
}

/* A transfer ended: complete REQ, or schedule its next attempt. */
static void finish_transfer(struct s3c *c, struct s3c_req *r, CURLcode cc)
{
	const char *hint = "", *bad = NULL;
	long nconn = 0;
	bool sent, unreachable;
	int err;

	curl_multi_remove_handle(c->multi, r->easy);
	active_remove(c, r);
	cc = normalise_code(c, r, cc, &sent);
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &nconn);
	r->connects += (unsigned)nconn;
	r->curl_code = (int)cc;
	pthread_mutex_lock(&c->stats_lock);
	c->stats.in_flight--;
	c->stats.connects += (uint64_t)nconn;
	c->stats.bytes_in += r->resp.len;
	if (cc == CURLE_OK)
		c->stats.bytes_out += r->body_len;
	pthread_mutex_unlock(&c->stats_lock);
	extract_s3code(r);
	if (r->status > 0)
		c->answered = true;
	err = s3c_map_error(r->status, r->s3code, (int)cc, &hint);
	if (!err && (bad = check_range(r)) != NULL)
		err = -EIO;
	if (cc == CURLE_WRITE_ERROR && r->overflow && r->has_range &&
	    r->status == 200) {
		/* A whole object larger than the range: the Range header
		 * was dropped on the way (or ignored); worth another try. */
		bad = "server ignored the Range header";
		err = -EIO;
	}
	unreachable = !sent && r->status == 0 &&
		      (cc == CURLE_COULDNT_CONNECT ||
		       cc == CURLE_OPERATION_TIMEDOUT);
	if (err && want_retry(c, r,
			      bad || s3c_retryable(r->status, r->s3code,
						   (int)cc),
			      unreachable)) {
		char why[160];

		fmt(why, sizeof(why), "%s",
			 bad ? bad
			 : cc != CURLE_OK ? curl_easy_strerror(cc)
			 : r->s3code[0] ? r->s3code : "HTTP error");
		if (cc == CURLE_OK && !bad)
			fmt(why, sizeof(why), "HTTP %ld %s", r->status,
				 r->s3code);
		retry_later(c, r, why);
		return;
	}
	if (err && bad) {
		fmt(r->errmsg, sizeof(r->errmsg),
			 "%s s3://%s/%s: %s after %u attempts", r->method,
			 r->bucket, r->key, bad, r->attempts);
	} else if (err) {
		describe_error(c, r, err, hint);
	}
	curl_easy_reset(r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	complete(c, r, err);
}

/* Starts one attempt of REQ; on a local failure completes it. */
static void start_attempt(struct s3c *c, struct s3c_req *r)
{
	int rc;

	r->attempts++;
	r->overflow = false;
	r->stalled = false;
	r->seen_ul = 0;
	r->active_us = mono_us();
	r->stall_us = c->conf.stall_timeout
			  ? (int64_t)c->conf.stall_timeout * 1000000
			  : INT64_MAX;
	r->status = 0;
	r->curl_errbuf[0] = '\0';
	/* Nothing of an earlier attempt's answer may leak into this one. */
	r->etag[0] = r->last_modified[0] = r->content_length[0] = '\0';
	r->content_range[0] = r->request_id[0] = r->retry_after[0] = '\0';
	r->s3code[0] = '\0';
	r->body_pos = 0;
	buf_reset(&r->resp);
	r->resp.cap = r->body_cap;
	rc = build_attempt(c, r);
	if (!rc && !r->easy) {
		r->easy = curl_easy_init();
		rc = r->easy ? 0 : -ENOMEM;
	}
	if (!rc && r->has_range)
		rc = buf_reserve(&r->resp, (size_t)r->range_len);
	if (!rc) {
		curl_easy_reset(r->easy);
		setup_easy(c, r);
		rc = curl_multi_add_handle(c->multi, r->easy) == CURLM_OK
			     ? 0
			     : -ENOMEM;
	}
	if (rc) {
		fmt(r->errmsg, sizeof(r->errmsg),
			 "%s s3://%s/%s: cannot build the request: %s",
			 r->method, r->bucket, r->key, strerror(-rc));
		if (r->easy)
			curl_easy_cleanup(r->easy);
		r->easy = NULL;
		complete(c, r, rc);
		return;
	}
	r->prev = NULL;
	r->next = c->active;
	if (c->active)
		c->active->prev = r;
	c->active = r;
	c->nactive++;
	pthread_mutex_lock(&c->stats_lock);
	c->stats.attempts++;
	c->stats.in_flight++;
	pthread_mutex_unlock(&c->stats_lock);
}

static void ready_push(struct s3c *c, struct s3c_req *r)
{
	r->next = NULL;
	if (c->ready_tail)
		c->ready_tail->next = r;
	else
		c->ready_head = r;
	c->ready_tail = r;
}

/* Moves due retries to the ready FIFO; returns ms until the next one
 * is due (or MAXWAIT). */
static int collect_retries(struct s3c *c, int maxwait)
{
	struct s3c_req **pp = &c->retry_list, *r;
	int64_t now = mono_us(), wait = (int64_t)maxwait * 1000;

	while ((r = *pp) != NULL) {
		if (r->due_us <= now) {
			*pp = r->next;
			ready_push(c, r);
			continue;
		}
		if (r->due_us - now < wait)
			wait = r->due_us - now;
		pp = &r->next;
	}
	return (int)((wait + 999) / 1000);
}

static void cancel_list(struct s3c *c, struct s3c_req *r)
{
	while (r) {
		struct s3c_req *next = r->next;

		fmt(r->errmsg, sizeof(r->errmsg),
			 "%s s3://%s/%s: cancelled (engine stopped)", r->method,
			 r->bucket, r->key);
		complete(c, r, -ECANCELED);
		r = next;
	}
}

static void cancel_all(struct s3c *c)
{
	cancel_list(c, c->ready_head);
	c->ready_head = c->ready_tail = NULL;
	cancel_list(c, c->retry_list);
	c->retry_list = NULL;
	while (c->active) {
		struct s3c_req *r = c->active;

		curl_multi_remove_handle(c->multi, r->easy);
		active_remove(c, r);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		fmt(r->errmsg, sizeof(r->errmsg),
			 "%s s3://%s/%s: cancelled (engine stopped)", r->method,
			 r->bucket, r->key);
		complete(c, r, -ECANCELED);
	}
}

static void *io_main(void *arg)
{
	struct s3c *c = arg;

	for (;;) {
		struct s3c_req *q;
		CURLMsg *m;
		int running, left, wait;
		bool stop;

		pthread_mutex_lock(&c->lock);
		q = c->q_head;
		c->q_head = c->q_tail = NULL;
		stop = c->stopping;
		pthread_mutex_unlock(&c->lock);
		while (q) {
			struct s3c_req *next = q->next;

			ready_push(c, q);
			q = next;
		}
		if (stop)
			break;
		wait = collect_retries(c, 1000);
		while (c->ready_head && c->nactive < c->conf.max_connections) {
			struct s3c_req *r = c->ready_head;

			c->ready_head = r->next;
			if (!c->ready_head)
				c->ready_tail = NULL;
			pthread_mutex_lock(&c->stats_lock);
			c->stats.queued--;
			pthread_mutex_unlock(&c->stats_lock);
			start_attempt(c, r);
		}
		curl_multi_perform(c->multi, &running);
		while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
			struct s3c_req *r = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
					  (char **)&r);
			finish_transfer(c, r, m->data.result);
		}
		/* Again: the completions above may have scheduled retries,
		 * which must wake the loop when due, not a second later. The
		 * 1 s bound also runs every transfer's stall check
		 * (on_progress) at least once a second. */
		wait = collect_retries(c, 1000);
		if (c->ready_head && c->nactive < c->conf.max_connections)
			wait = 0;
		curl_multi_poll(c->multi, NULL, 0, wait, NULL);
	}
	cancel_all(c);
	return NULL;
}

/* ---------------------------------------------------------------- */
/* Public API                                                        */
/* ---------------------------------------------------------------- */

int s3c_submit(struct s3c *c, struct s3c_req *req, s3c_done_fn *done,
	       void *arg)
{
	if (!done)
		return -EINVAL;
	req->done = done;
	req->arg = arg;
	req->attempts = 0;
	req->connects = 0;
	req->err = 0;
	req->errmsg[0] = '\0';
	req->next = NULL;
	req->start_us = mono_us();
	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		pthread_mutex_unlock(&c->lock);
		return -ECANCELED;
	}
	if (c->q_tail)
		c->q_tail->next = req;
	else
		c->q_head = req;
	c->q_tail = req;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&c->stats_lock);
	c->stats.queued++;
	pthread_mutex_unlock(&c->stats_lock);
	curl_multi_wakeup(c->multi);
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done; /* protected by lock */
	int err;   /* protected by lock */
};

static void perform_done(struct s3c_req *req, int err, void *arg)
{
	struct waiter *w = arg;

	(void)req;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->err = err;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int s3c_perform(struct s3c *c, struct s3c_req *req)
{
	struct waiter w = {.done = false, .err = 0};
	int rc;

	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	rc = s3c_submit(c, req, perform_done, &w);
	if (!rc) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		rc = w.err;
		pthread_mutex_unlock(&w.lock);
	} else {
		snprintf(req->errmsg, sizeof(req->errmsg),
			 "%s s3://%s/%s: %s", req->method, req->bucket,
			 req->key, strerror(-rc));
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return rc;
}

static int dup_conf(struct s3c *c, const struct s3c_conf *in)
{
	c->conf = *in;
#define DUP(field, own)                                                        \
	do {                                                                   \
		c->own = in->field ? strdup(in->field) : NULL;                 \
		if (in->field && !c->own)                                      \
			return -ENOMEM;                                        \
		c->conf.field = c->own;                                        \
	} while (0)
	DUP(scheme, own_scheme);
	DUP(host, own_host);
	DUP(base_path, own_base);
	DUP(region, own_region);
	DUP(access_key, own_ak);
	DUP(secret_key, own_sk);
	DUP(session_token, own_token);
	DUP(ca_bundle, own_ca);
#undef DUP
	if (!c->conf.base_path)
		c->conf.base_path = "";
	return 0;
}

static int check_conf(const struct s3c_conf *conf)
{
	if (!conf->scheme || !conf->host || !*conf->host || !conf->region ||
	    (strcmp(conf->scheme, "http") != 0 &&
	     strcmp(conf->scheme, "https") != 0))
		return -EINVAL;
	if (conf->port < 1 || conf->port > 65535)
		return -EINVAL;
	if (conf->max_connections < 1 || conf->max_connections > 1024 ||
	    conf->max_attempts < 1 || conf->max_attempts > 100)
		return -EINVAL;
	if (conf->access_key && !conf->secret_key)
		return -EINVAL;
	return 0;
}

/* Frees the engine's memory; the secret is wiped first. */
static void release(struct s3c *c)
{
	if (c->own_sk)
		explicit_bzero(c->own_sk, strlen(c->own_sk));
	if (c->own_token)
		explicit_bzero(c->own_token, strlen(c->own_token));
	free(c->own_scheme);
	free(c->own_host);
	free(c->own_base);
	free(c->own_region);
	free(c->own_ak);
	free(c->own_sk);
	free(c->own_token);
	free(c->own_ca);
	explicit_bzero(&c->kc, sizeof(c->kc));
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->stats_lock);
	free(c);
}

int s3c_new(const struct s3c_conf *conf, struct s3c **out)
{
	struct s3c *c;
	int rc = check_conf(conf);

	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->stats_lock, NULL);
	sigv4_key_cache_init(&c->kc);
	c->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
		 (uint64_t)(uintptr_t)c;
	if (!c->rng)
		c->rng = 88172645463325252ull;
	rc = dup_conf(c, conf);
	if (rc)
		goto fail;
	snprintf(c->endpoint, sizeof(c->endpoint), "%s://%s:%u%s",
		 c->conf.scheme, c->conf.host, c->conf.port, c->conf.base_path);
	c->multi = curl_multi_init();
	if (!c->multi) {
		rc = -ENOMEM;
		goto fail;
	}
	/* The pool keeps one idle connection per slot: connections are only
	 * opened again after the server or max_conn_age closed them. */
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
			  (long)c->conf.max_connections);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)c->conf.max_connections);
	if (c->conf.no_verify_ssl)
		log_warn("TLS certificate verification is DISABLED for %s: "
			 "anyone on the network path can read and change "
			 "the data",
			 c->endpoint);
	rc = -pthread_create(&c->thread, NULL, io_main, c);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail:
	if (c->multi)
		curl_multi_cleanup(c->multi);
	release(c);
	return rc;
}

void s3c_free(struct s3c *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	curl_multi_cleanup(c->multi);
	release(c);
}

const char *s3c_endpoint(const struct s3c *c)
{
	return c->endpoint;
}

void s3c_get_stats(struct s3c *c, struct s3c_stats *out)
{
	pthread_mutex_lock(&c->stats_lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->stats_lock);
}
