/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_S3C_H
#define SHARDFS_S3C_H

/*
 * The S3 HTTP engine: one I/O thread owns a curl multi handle and every
 * easy handle; other threads submit requests and get a completion
 * callback on the I/O thread (or wait with s3c_perform()).
 *
 * - At most `max_connections` requests are on the wire at once; the rest
 *   wait in a FIFO. Connections are kept alive and reused (curl's pool,
 *   shared DNS cache), never beyond `max_conn_age` seconds.
 * - Each attempt is signed afresh (SigV4) on the I/O thread.
 * - Retries: 5xx, 429, 408, connection failures, resets, short bodies,
 *   stalls (no byte for `stall_timeout` seconds) and 2xx answers that do
 *   not hold exactly the bytes asked for (wrong Content-Range, a 206 to a
 *   request without Range, a wrong body length) are retried up to
 *   `max_attempts` attempts in all, after a backoff with equal jitter
 *   (random in [d/2, d], d = min(cap, base * 2^(attempt-1))), or after
 *   Retry-After when the server sends one (bounded by the cap). With the
 *   defaults the retries of one request span 10.6 to 21 s. When the
 *   endpoint cannot be reached at all (connection refused or connect
 *   timeout): if it has answered this engine before, it is an outage
 *   (a restart), retried for `outage_s` seconds from the request's start
 *   whatever `max_attempts` (unless it is 1); if it never answered, at
 *   most 3 attempts, so that a wrong endpoint fails fast. Backoff is a
 *   timer in the I/O loop: no thread sleeps.
 * - HTTP status, S3 error <Code> and curl errors are mapped to a negative
 *   errno and one message in one place (s3c_map_error()).
 *
 * Secrets (secret key, session token, Authorization values) never reach
 * the log at any level.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3c;
struct s3c_req;

struct s3c_conf {
	const char *scheme;	   /* "http" or "https" */
	const char *host;	   /* host name, IPv4, or [IPv6] with brackets */
	unsigned port;		   /* 1..65535 */
	const char *base_path;	   /* path prefix of the endpoint, "" or "/x" */
	const char *region;	   /* signing region */
	bool virtual_host;	   /* bucket.host addressing */
	const char *access_key;	   /* NULL = anonymous (no signature) */
	const char *secret_key;	   /* copied; wiped on s3c_free() */
	const char *session_token; /* NULL or "" when none */
	const char *ca_bundle;	   /* NULL = system store */
	bool no_verify_ssl;	   /* disable TLS verification (loud warning) */
	unsigned max_connections;  /* 1..1024, default 64 */
	unsigned max_attempts;	   /* 1..100, default 10 */
	unsigned retry_base_ms;	   /* default 100 */
	unsigned retry_cap_ms;	   /* default 5000 */
	unsigned connect_timeout;  /* seconds, default 5 */
	unsigned stall_timeout;	   /* seconds without a byte, default 30;
				      0: none */
	unsigned max_conn_age;	   /* seconds a connection is reused, 50 */
	unsigned outage_s;	   /* seconds an outage is ridden out, 30 */
};

void s3c_conf_init(struct s3c_conf *conf);

/* Starts the engine and its I/O thread. 0 or a negative errno. */
int s3c_new(const struct s3c_conf *conf, struct s3c **out);

/*
 * Stops the I/O thread. Requests still queued or in flight complete with
 * -ECANCELED before s3c_free() returns. No-op on NULL.
 */
void s3c_free(struct s3c *c);

/* Human-readable endpoint, e.g. "http://127.0.0.1:7480". Borrowed. */
const char *s3c_endpoint(const struct s3c *c);

/* ---- requests ---- */

/*
 * Called exactly once per submitted request, on the I/O thread. ERR is 0
 * (a 2xx answer with a complete body) or a negative errno; the request is
 * handed to the callee, which must s3c_req_free() it. Must not block.
 */
typedef void s3c_done_fn(struct s3c_req *req, int err, void *arg);

/*
 * A new request for BUCKET and KEY (KEY may be NULL or "" for bucket
 * operations). Strings are copied. NULL on allocation failure.
 */
struct s3c_req *s3c_req_new(const char *method, const char *bucket,
			    const char *key);
void s3c_req_free(struct s3c_req *req);

/* Query parameter, raw (the engine encodes). VALUE NULL = valueless. */
int s3c_req_add_param(struct s3c_req *req, const char *name,
		      const char *value);
/* Extra request header (signed). Strings copied. */
int s3c_req_add_header(struct s3c_req *req, const char *name,
		       const char *value);
/* Asks for LEN (> 0) bytes at OFF; the answer must be exactly those. */
void s3c_req_set_range(struct s3c_req *req, uint64_t off, uint64_t len);
/* The range may end early where the object ends (Content-Range tells the
 * total): for reads of an object whose size is not known yet. */
void s3c_req_allow_short(struct s3c_req *req);
/* If-Match with ETAG (copied). Never sent empty. */
int s3c_req_set_if_match(struct s3c_req *req, const char *etag);
/* Request body (borrowed until completion), signed with its SHA-256. */
void s3c_req_set_body(struct s3c_req *req, const void *data, size_t len);
/* Maximum response body accepted (default 16 MiB; ranges: their length). */
void s3c_req_set_body_cap(struct s3c_req *req, size_t cap);

/*
 * Submits REQ. Returns 0 (DONE will be called exactly once) or a negative
 * errno (DONE will not be called; the caller still owns REQ).
 */
int s3c_submit(struct s3c *c, struct s3c_req *req, s3c_done_fn *done,
	       void *arg);

/* Submits REQ and waits for its completion. Returns the completion's err.
 * The caller keeps REQ. Must not be called on the I/O thread. */
int s3c_perform(struct s3c *c, struct s3c_req *req);

/* ---- results (valid after completion) ---- */

long s3c_req_status(const struct s3c_req *req); /* 0 if no answer */
/* Body bytes received (borrowed, NUL-terminated). */
const char *s3c_req_body(const struct s3c_req *req, size_t *len);
/* Hands the body over (free() it). Never NULL after success. */
char *s3c_req_take_body(struct s3c_req *req, size_t *len);
/* Response header values (borrowed) or NULL: "etag", "last-modified",
 * "content-length", "content-range", "x-amz-request-id". */
const char *s3c_req_header(const struct s3c_req *req, const char *name);
/* One-line cause of the error, e.g.
 * "GET s3://b/k: HTTP 403 SignatureDoesNotMatch: ... (check the secret
 * key and region)". "" on success. Borrowed. */
const char *s3c_req_errmsg(const struct s3c_req *req);
/* S3 error <Code> of the final answer, "" when none. Borrowed. */
const char *s3c_req_s3code(const struct s3c_req *req);
unsigned s3c_req_attempts(const struct s3c_req *req);
/* Connections this request opened (0 when it reused one). */
unsigned s3c_req_connects(const struct s3c_req *req);

/*
 * The one place where an answer becomes an errno: HTTP STATUS (0 when no
 * answer), S3 error CODE ("" when none) and CURL_CODE (a CURLcode, 0 when
 * the transfer itself worked). Returns a negative errno, or 0 for a 2xx
 * answer without a transport error. HINT receives advice for the user
 * ("" when none), e.g. "check the secret key and region".
 */
int s3c_map_error(long status, const char *code, int curl_code,
		  const char **hint);
/* True if a failure with these values is worth another attempt. */
bool s3c_retryable(long status, const char *code, int curl_code);

/* ---- statistics ---- */

struct s3c_stats {
	uint64_t requests;	/* completed requests */
	uint64_t gets, lists, heads, puts, others;
	uint64_t attempts;	/* HTTP attempts, including retries */
	uint64_t retries;
	uint64_t errors;	/* requests that failed (not "no such key") */
	uint64_t connects;	/* connections opened */
	uint64_t bytes_in;	/* response body bytes */
	uint64_t bytes_out;	/* request body bytes */
	uint64_t in_flight;	/* on the wire now */
	uint64_t queued;	/* waiting for a connection slot */
	uint64_t lat_us_sum;	/* latency of completed requests */
	uint64_t lat_hist[32];	/* log2 buckets of microseconds */
};

void s3c_get_stats(struct s3c *c, struct s3c_stats *out);

#endif
