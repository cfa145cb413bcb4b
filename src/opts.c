// SPDX-License-Identifier: MIT
/*
 * Option values: sizes, integers, durations, s3:// URLs, endpoint URLs
 * and byte ranges. Every parser walks the string once with explicit
 * digit and overflow checks (no strtoul: it accepts signs, whitespace and
 * wraps negatives), and writes its outputs only on success.
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* One or more digits at *P: -EINVAL for none, -ERANGE past UINT64_MAX. */
static int parse_digits(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	bool over = false;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return over ? -ERANGE : 0;
}

/* Multiplier of a size unit, 0 when U is not one. */
static uint64_t size_unit(const char *u)
{
	static const char letters[] = "kmgt";
	const char *l;
	uint64_t m1024 = 1, m1000 = 1;

	if (!*u || strcasecmp(u, "b") == 0)
		return 1;
	l = strchr(letters, u[0] | 0x20);
	if (!l)
		return 0;
	for (const char *c = letters; c <= l; c++) {
		m1024 *= 1024;
		m1000 *= 1000;
	}
	u++;
	if (!*u || strcasecmp(u, "i") == 0 || strcasecmp(u, "ib") == 0)
		return m1024;
	return strcasecmp(u, "b") == 0 ? m1000 : 0;
}

int opts_parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mult;
	int rc = parse_digits(&s, &v);

	if (rc == -EINVAL)
		return rc;
	mult = size_unit(s);
	if (!mult)
		return -EINVAL;
	if (rc || v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

int opts_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc = parse_digits(&s, &v);

	if (rc == -EINVAL || *s)
		return -EINVAL;
	if (rc || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int opts_parse_duration(const char *s, uint64_t *seconds)
{
	uint64_t v, mult = 1;
	int rc = parse_digits(&s, &v);

	if (rc == -EINVAL)
		return rc;
	if (*s && s[1])
		return -EINVAL;
	switch (*s ? *s | 0x20 : 's') {
	case 's':
		break;
	case 'm':
		mult = 60;
		break;
	case 'h':
		mult = 3600;
		break;
	case 'd':
		mult = 86400;
		break;
	default:
		return -EINVAL;
	}
	if (rc || v > UINT64_MAX / mult)
		return -ERANGE;
	*seconds = v * mult;
	return 0;
}

/* ------------------------------------------------------------------ */
/* s3:// URLs                                                          */

static bool bucket_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       is_digit(c) || c == '.' || c == '-' || c == '_';
}

int opts_parse_s3url(const char *s, char **bucket, char **prefix)
{
	const char *b, *slash;
	size_t n;
	char *bk, *px;

	if (strncasecmp(s, "s3://", 5) != 0)
		return -EINVAL;
	b = s + 5;
	slash = strchr(b, '/');
	n = slash ? (size_t)(slash - b) : strlen(b);
	if (n < 3 || n > 255)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!bucket_char(b[i]))
			return -EINVAL;
	bk = strndup(b, n);
	px = strdup(slash ? slash + 1 : "");
	if (!bk || !px) {
		free(bk);
		free(px);
		return -ENOMEM;
	}
	*bucket = bk;
	*prefix = px;
	return 0;
}

bool opts_bucket_virtual_ok(const char *bucket)
{
	size_t n = strlen(bucket);
	struct in_addr a;

	if (n < 3 || n > 63 || bucket[0] == '.' || bucket[0] == '-' ||
	    bucket[n - 1] == '.' || bucket[n - 1] == '-' ||
	    strstr(bucket, "..") || inet_pton(AF_INET, bucket, &a) == 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = bucket[i];

		if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Endpoint URLs                                                       */

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       is_digit(c) || c == '.' || c == '-' || c == '_';
}

static void lower_copy(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		dst[i] = src[i];
		if (src[i] >= 'A' && src[i] <= 'Z')
			dst[i] = (char)(src[i] - 'A' + 'a');
	}
	dst[n] = '\0';
}

/* "[v6]" at A (N bytes, ']' included somewhere); returns the bytes used. */
static int parse_ipv6(const char *a, size_t n, struct opts_endpoint *e)
{
	const char *close = memchr(a, ']', n);
	struct in6_addr addr;
	size_t len;

	if (!close)
		return -EINVAL;
	len = (size_t)(close - a - 1);
	if (len == 0 || len >= OPTS_HOST_MAX)
		return -EINVAL;
	lower_copy(e->host, a + 1, len);
	if (inet_pton(AF_INET6, e->host, &addr) != 1)
		return -EINVAL;
	e->host_is_ip = true;
	return (int)(close - a + 1);
}

/* A host name or IPv4 address at A, up to ':' or N bytes. */
static int parse_hostname(const char *a, size_t n, struct opts_endpoint *e)
{
	const char *colon = memchr(a, ':', n);
	size_t len = colon ? (size_t)(colon - a) : n;
	struct in_addr addr;
	bool numeric = true;

	size_t label = 0;

	/* DNS limits: 253 bytes, labels of 1 .. 63 bytes. */
	if (len == 0 || len > 253)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!host_char(a[i]))
			return -EINVAL;
		label = a[i] == '.' ? 0 : label + 1;
		if (label > 63 || (a[i] == '.' && (i == 0 || a[i - 1] == '.')))
			return -EINVAL;
		numeric = numeric && (is_digit(a[i]) || a[i] == '.');
	}
	if (label == 0)
		return -EINVAL; /* trailing '.' */
	lower_copy(e->host, a, len);
	e->host_is_ip = inet_pton(AF_INET, e->host, &addr) == 1;
	/* "999.1.1.1" is neither a name nor an address. */
	if (numeric && !e->host_is_ip)
		return -EINVAL;
	return (int)len;
}

/* ":PORT" (or nothing) filling the whole of the N bytes at P. */
static int parse_port(const char *p, size_t n, struct opts_endpoint *e)
{
	uint64_t v = 0;

	e->port = e->https ? 443 : 80;
	if (n == 0)
		return 0;
	if (p[0] != ':' || n < 2 || n > 6)
		return -EINVAL;
	for (size_t i = 1; i < n; i++) {
		if (!is_digit(p[i]))
			return -EINVAL;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	e->port = (uint16_t)v;
	return 0;
}

static bool path_char(char c)
{
	return host_char(c) || c == '~';
}

/* The path after the authority: "" or "/seg/seg[/]", no empty, "." or
 * ".." segments (curl would normalise them, the signature would not). */
static int parse_path(const char *p, struct opts_endpoint *e)
{
	size_t n = strlen(p);

	while (n && p[n - 1] == '/')
		n--;
	if (n >= OPTS_PATH_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n;) {
		const char *seg = p + i + 1; /* p[i] == '/' */
		size_t len = strcspn(seg, "/");

		if (len == 0 || (len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return -EINVAL;
		for (size_t k = 0; k < len; k++)
			if (!path_char(seg[k]))
				return -EINVAL;
		i += len + 1;
	}
	memcpy(e->path, p, n);
	e->path[n] = '\0';
	return 0;
}

static void endpoint_strings(struct opts_endpoint *e)
{
	bool v6 = strchr(e->host, ':') != NULL;
	char port[8] = "";

	if (e->port != (e->https ? 443 : 80))
		snprintf(port, sizeof(port), ":%u", (unsigned)e->port);
	snprintf(e->host_header, sizeof(e->host_header), "%s%s%s%s",
		 v6 ? "[" : "", e->host, v6 ? "]" : "", port);
	snprintf(e->base_url, sizeof(e->base_url), "%s://%s%s",
		 e->https ? "https" : "http", e->host_header, e->path);
}

int opts_parse_endpoint(const char *s, struct opts_endpoint *out)
{
	struct opts_endpoint e;
	const char *a;
	size_t n;
	int used;

	memset(&e, 0, sizeof(e));
	if (strncasecmp(s, "http://", 7) == 0) {
		a = s + 7;
	} else if (strncasecmp(s, "https://", 8) == 0) {
		a = s + 8;
		e.https = true;
	} else {
		return -EINVAL;
	}
	if (strpbrk(a, "?#@"))
		return -EINVAL;
	n = strcspn(a, "/");
	used = a[0] == '[' ? parse_ipv6(a, n, &e) : parse_hostname(a, n, &e);
	if (used < 0 || parse_port(a + used, n - (size_t)used, &e) ||
	    parse_path(a + n, &e))
		return -EINVAL;
	endpoint_strings(&e);
	*out = e;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Byte ranges                                                         */

/* Digits at *P that must be followed by STOP: -EINVAL or -ERANGE. */
static int digits_until(const char **p, char stop, uint64_t *out)
{
	int rc = parse_digits(p, out);

	if (rc == -EINVAL || **p != stop)
		return -EINVAL;
	return rc;
}

int opts_parse_range(const char *s, struct opts_range *out)
{
	struct opts_range r;
	int rc;

	memset(&r, 0, sizeof(r));
	if (*s == '-') {
		s++;
		rc = digits_until(&s, '\0', &r.suffix);
		if (rc)
			return rc;
		if (r.suffix == 0)
			return -EINVAL;
		r.kind = OPTS_RANGE_SUFFIX;
		*out = r;
		return 0;
	}
	rc = digits_until(&s, '-', &r.start);
	if (rc)
		return rc;
	r.kind = OPTS_RANGE_FROM;
	if (*++s) {
		rc = digits_until(&s, '\0', &r.end);
		if (rc)
			return rc;
		if (r.end < r.start)
			return -EINVAL;
		r.kind = OPTS_RANGE_SPAN;
	}
	*out = r;
	return 0;
}
