/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_SIGV4_H
#define SHARDFS_SIGV4_H

/*
 * AWS Signature Version 4 (pure: no I/O, no threads, no globals).
 *
 * The caller describes a request with raw (unencoded) path and query
 * parameters; the signer produces the encoded path and query that it
 * signed, and the caller must send exactly those on the wire, so that what
 * is signed and what is sent can never differ.
 *
 * S3 rules: the path is encoded once, per segment ('/' kept), with no
 * normalisation (no removal of "." / ".." / "//"). Query names and values
 * are encoded with the RFC 3986 unreserved set, sorted by encoded name then
 * value; a valueless parameter is signed as "name=".
 *
 * Input limits (anything outside them is -EINVAL, never a crash): method a
 * 1..16 character HTTP token; host 1..SIGV4_MAX_HOST bytes of [A-Za-z0-9
 * .-_:[]]; path starting with '/', at most SIGV4_MAX_PATH bytes; at most
 * SIGV4_MAX_PARAMS query parameters (non-empty names) and SIGV4_MAX_HEADERS
 * headers; each name or value at most SIGV4_MAX_FIELD bytes; header names
 * are HTTP tokens; header values hold no control character but TAB (so no
 * CR/LF: header injection is impossible); region and service are
 * [A-Za-z0-9_-] (1..63 and 1..31 bytes); payload_hash is 64 lower-case hex
 * digits or an upper-case token such as UNSIGNED-PAYLOAD; the access key is
 * 1..128 bytes of printable ASCII without '/', ',' or space; the secret
 * 1..SIGV4_MAX_SECRET bytes; the session token at most SIGV4_MAX_TOKEN
 * bytes of printable ASCII; `when` between 1970 and 9999. Output that
 * outgrows an output buffer (1 MiB each) is -E2BIG.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "buf.h"

#define SIGV4_MAX_HOST	  512
#define SIGV4_MAX_PATH	  8192
#define SIGV4_MAX_FIELD	  8192
#define SIGV4_MAX_PARAMS  64
#define SIGV4_MAX_HEADERS 64
#define SIGV4_MAX_SECRET  256
#define SIGV4_MAX_TOKEN	  8192

#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* SHA-256 of the empty string, hex. */
#define SIGV4_EMPTY_SHA256                                                     \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_creds {
	const char *access_key;	   /* borrowed */
	const char *secret_key;	   /* borrowed */
	const char *session_token; /* borrowed; NULL or "" when none */
};

struct sigv4_param {
	const char *name;  /* raw, unencoded */
	const char *value; /* raw, unencoded; NULL = valueless ("name=") */
};

struct sigv4_header {
	const char *name;  /* any case; signed lower-cased */
	const char *value; /* trimmed and inner whitespace runs collapsed */
};

struct sigv4_request {
	const char *method; /* "GET", "PUT", ... */
	const char *host;   /* Host header value, with ":port" if non-default */
	const char *path;   /* raw path starting with '/', e.g. "/bkt/a b" */
	const struct sigv4_param *query; /* may be NULL when nquery == 0 */
	size_t nquery;
	/* Headers to sign besides host / x-amz-date / x-amz-content-sha256 /
	 * x-amz-security-token, which the signer adds itself. Duplicate names
	 * are joined with ',' in the order given. Passing one of those four
	 * names, or "authorization", is -EINVAL. */
	const struct sigv4_header *headers;
	size_t nheaders;
	/* Hex SHA-256 of the body, or SIGV4_UNSIGNED_PAYLOAD. */
	const char *payload_hash;
	/* When true (S3), x-amz-content-sha256 is signed and must be sent;
	 * false only for the generic AWS test-suite vectors. */
	bool content_sha256_header;
	/* When true (S3), the raw path is encoded once and not normalised:
	 * canonical_uri is both what is signed and what is sent. When false,
	 * the generic-service rules (AWS test suite only): PATH is taken as
	 * the request-line path, "." / ".." segments and duplicate slashes
	 * are normalised and the result is URI-encoded (so a path that is
	 * already %-encoded is encoded a second time, as AWS expects for
	 * non-S3 services); canonical_uri is then the signed form. */
	bool s3_path;
	time_t when;	     /* signing time, UTC seconds */
	const char *region;  /* "us-east-1" */
	const char *service; /* "s3" */
};

/*
 * Signing keys derived for one (date, region, service, secret) are reused
 * until one of them changes. Owned by the caller, one per signing thread
 * (or under the caller's lock). The fields are private to sigv4.c.
 */
struct sigv4_key_cache {
	char date[9];
	char region[64];
	char service[32];
	unsigned char secret_digest[32]; /* SHA-256 of the secret: no copy */
	unsigned char key[32];
	bool valid;
};

void sigv4_key_cache_init(struct sigv4_key_cache *kc);

/* Output of sigv4_sign(). sigv4_signed_init() / sigv4_signed_release(). */
struct sigv4_signed {
	char amz_date[17];	     /* "20150830T123600Z" */
	char signature[65];	     /* hex */
	struct buf authorization;    /* value of the Authorization header */
	struct buf canonical_uri;    /* encoded path: send it as is */
	struct buf canonical_query;  /* encoded, sorted query: send it as is */
	struct buf canonical_request;/* for tests and trace logs (no secrets) */
	struct buf string_to_sign;   /* likewise */
	struct buf signed_headers;   /* "host;x-amz-content-sha256;x-amz-date" */
};

void sigv4_signed_init(struct sigv4_signed *s);
void sigv4_signed_release(struct sigv4_signed *s);

/*
 * Signs REQ. The caller then sends: the method, canonical_uri, "?" and
 * canonical_query when non-empty, the headers it passed, Host,
 * "X-Amz-Date: amz_date", "X-Amz-Content-Sha256: payload_hash" (when
 * content_sha256_header), "X-Amz-Security-Token" (when a token is set),
 * and "Authorization". KC may be NULL (no caching). OUT must have been
 * initialised; its previous contents are replaced. Returns 0, -EINVAL for
 * a malformed request, or -ENOMEM / -E2BIG (OUT is then emptied).
 */
int sigv4_sign(const struct sigv4_request *req,
	       const struct sigv4_creds *creds, struct sigv4_key_cache *kc,
	       struct sigv4_signed *out);

/*
 * Presigned URL query: signs REQ for EXPIRES seconds (1 .. 604800, else
 * -EINVAL). For S3 (s3_path and content_sha256_header both set) the payload
 * hash is ignored: S3 presigned URLs sign UNSIGNED-PAYLOAD. Otherwise (the
 * generic AWS test suite) payload_hash is signed, UNSIGNED-PAYLOAD when
 * NULL. No x-amz-content-sha256 header is signed. Writes
 * the complete encoded query string, including X-Amz-Algorithm,
 * X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders,
 * X-Amz-Security-Token (when set) and X-Amz-Signature, into OUT->
 * canonical_query (with the signature appended last), and the path into
 * OUT->canonical_uri. The signed headers are host plus REQ's headers.
 * Query names X-Amz-Algorithm, -Credential, -Date, -Expires,
 * -SignedHeaders, -Security-Token, -Signature in REQ are -EINVAL.
 * OUT->authorization stays empty. Errors as sigv4_sign().
 */
int sigv4_presign(const struct sigv4_request *req,
		  const struct sigv4_creds *creds, struct sigv4_key_cache *kc,
		  unsigned expires, struct sigv4_signed *out);

/*
 * URI-encodes S into OUT (appending): RFC 3986 unreserved characters
 * A-Z a-z 0-9 - . _ ~ are kept, '/' is kept when KEEP_SLASH, every other
 * byte becomes %XX (upper-case hex). 0, -EINVAL (S NULL with LEN > 0)
 * or a buf error.
 */
int sigv4_uri_encode(const char *s, size_t len, bool keep_slash,
		     struct buf *out);

/* Hex SHA-256 of DATA into HEX (65 bytes); HEX is "" if libcrypto fails. */
void sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
