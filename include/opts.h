/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_OPTS_H
#define SHARDFS_OPTS_H

/*
 * Option values shared by the subcommands (pure: no I/O, no threads, no
 * globals). Every function returns 0, -EINVAL for text that is not a
 * value of the kind, or -ERANGE for a well-formed value out of range; the
 * outputs are only written on success. Whitespace is never accepted.
 */

#include <stdbool.h>
#include <stdint.h>

/*
 * A size in bytes: digits, optionally followed by a unit, case-insensitive:
 * B; K M G T, KiB MiB GiB TiB (powers of 1024); KB MB GB TB (powers of
 * 1000). "64M" = "64MiB" = 67108864, "1GB" = 1000000000.
 */
int opts_parse_size(const char *s, uint64_t *out);

/* Decimal digits only, MIN <= value <= MAX (else -ERANGE). */
int opts_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Seconds: digits with an optional unit s, m, h or d ("90", "5m", "2h"). */
int opts_parse_duration(const char *s, uint64_t *seconds);

/*
 * "s3://BUCKET[/PREFIX]" (scheme case-insensitive). BUCKET is 3 .. 255
 * characters of A-Z a-z 0-9 . - _ (legacy names included: the server has
 * the last word); PREFIX is everything after the first '/' after the
 * bucket, kept raw (may be empty, may end with '/'). On success *BUCKET and
 * *PREFIX are new strings the caller frees; -ENOMEM possible.
 */
int opts_parse_s3url(const char *s, char **bucket, char **prefix);

/*
 * True when BUCKET can be a DNS label for virtual-hosted-style addressing:
 * 3 .. 63 characters of a-z 0-9 . -, starting and ending with a letter or
 * digit, no "..", not shaped like an IPv4 address. (A name with dots
 * breaks TLS wildcard certificates: callers may prefer path style then.)
 */
bool opts_bucket_virtual_ok(const char *bucket);

#define OPTS_HOST_MAX 256 /* host name or address, with the NUL */
#define OPTS_PATH_MAX 1024

/* A parsed --endpoint-url. All fields are inside the struct. */
struct opts_endpoint {
	bool https;
	bool host_is_ip;	  /* IPv4 or IPv6 literal: no virtual hosting */
	char host[OPTS_HOST_MAX]; /* lower-case name or address, no brackets */
	uint16_t port;		  /* given, or 80 / 443 */
	/* Host header value: host ("[v6]" bracketed), plus ":port" when the
	 * port is not the scheme's default. */
	char host_header[OPTS_HOST_MAX + 8];
	/* Path prefix: "" or "/a/b" (no trailing '/'), of A-Z a-z 0-9 - . _
	 * ~ and '/' only, so that it needs no encoding. */
	char path[OPTS_PATH_MAX];
	/* "scheme://host_header" + path: request URLs are base_url + "/" +
	 * encoded path. */
	char base_url[8 + OPTS_HOST_MAX + 8 + OPTS_PATH_MAX];
};

/*
 * "http[s]://HOST[:PORT][/PATH]" with HOST a name (letters, digits, '-',
 * '.', '_'), an IPv4 address or "[IPv6]"; PORT 1 .. 65535. A query,
 * fragment, user info or empty port is -EINVAL.
 */
int opts_parse_endpoint(const char *s, struct opts_endpoint *out);

enum opts_range_kind {
	OPTS_RANGE_SPAN = 1, /* "START-END": bytes START .. END inclusive */
	OPTS_RANGE_FROM,     /* "START-": START to the end of the object */
	OPTS_RANGE_SUFFIX,   /* "-N": the last N bytes (N >= 1) */
};

struct opts_range {
	enum opts_range_kind kind;
	uint64_t start;	 /* SPAN, FROM */
	uint64_t end;	 /* SPAN: inclusive, >= start */
	uint64_t suffix; /* SUFFIX: N */
};

/* A byte range as in an HTTP Range header, without "bytes=". END < START
 * or a suffix of 0 is -EINVAL. */
int opts_parse_range(const char *s, struct opts_range *out);

#endif
