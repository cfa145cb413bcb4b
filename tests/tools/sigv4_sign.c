// SPDX-License-Identifier: MIT
/*
 * sigv4_sign: signs request descriptions read from stdin with the sigv4
 * module, one request per line, so that another implementation (the
 * botocore cross-check, tests/unit/sigv4_botocore_check.py) can compare.
 *
 * Input line: space-separated KEY=VALUE tokens, every VALUE %XX-decoded:
 *   op=sign|presign  method=  host=  path=  payload=  ak=  sk=  token=
 *   region=  service=  time=<unix seconds>  expires=<seconds, presign>
 *   s3path=0|1 (default 1)  sha256hdr=0|1 (default 1)
 *   q=NAME[:VALUE]  (repeatable; no ':' = valueless parameter)
 *   h=NAME:VALUE    (repeatable)
 * For q= and h=, NAME and VALUE are %XX-decoded each on its own, so the
 * first raw ':' separates them (an encoded one is data). Missing keys are
 * NULL.
 *
 * Output line per request: "OK\t<Authorization value, or the presigned
 * query for op=presign>\t<canonical request, %XX-encoded>", or "ERR\t<rc>".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sigv4.h"

#define LINE_CAP ((size_t)1 << 22)

struct desc {
	struct sigv4_request req;
	struct sigv4_creds creds;
	struct sigv4_param query[SIGV4_MAX_PARAMS];
	struct sigv4_header headers[SIGV4_MAX_HEADERS];
	bool presign;
	unsigned expires;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes %XX in place. -EINVAL on a bad escape or on %00. */
static int pct_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s != '%') {
			*w++ = *s;
			continue;
		}
		if (hexval(s[1]) < 0 || hexval(s[2]) < 0 ||
		    (s[1] == '0' && s[2] == '0'))
			return -EINVAL;
		*w++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
		s += 2;
	}
	*w = '\0';
	return 0;
}

/* "NAME[:VALUE]" (each part encoded) into *NAME / *VALUE (NULL if none). */
static int split_pair(char *s, const char **name, const char **value)
{
	char *colon = strchr(s, ':');

	*value = NULL;
	if (colon) {
		*colon = '\0';
		if (pct_decode(colon + 1))
			return -EINVAL;
		*value = colon + 1;
	}
	*name = s;
	return pct_decode(s);
}

static int add_pair(struct desc *d, bool header, char *v)
{
	const char *name, *value;

	if (split_pair(v, &name, &value))
		return -EINVAL;
	if (header) {
		if (d->req.nheaders == SIGV4_MAX_HEADERS || !value)
			return -EINVAL;
		d->headers[d->req.nheaders++] =
		    (struct sigv4_header){name, value};
	} else {
		if (d->req.nquery == SIGV4_MAX_PARAMS)
			return -EINVAL;
		d->query[d->req.nquery++] = (struct sigv4_param){name, value};
	}
	return 0;
}

/* Sets the field named K to the decoded V (which stays in the line). */
static int set_field(struct desc *d, const char *k, char *v)
{
	if (!strcmp(k, "q") || !strcmp(k, "h"))
		return add_pair(d, k[0] == 'h', v);
	if (pct_decode(v))
		return -EINVAL;
	if (!strcmp(k, "op"))
		d->presign = !strcmp(v, "presign");
	else if (!strcmp(k, "method"))
		d->req.method = v;
	else if (!strcmp(k, "host"))
		d->req.host = v;
	else if (!strcmp(k, "path"))
		d->req.path = v;
	else if (!strcmp(k, "payload"))
		d->req.payload_hash = v;
	else if (!strcmp(k, "ak"))
		d->creds.access_key = v;
	else if (!strcmp(k, "sk"))
		d->creds.secret_key = v;
	else if (!strcmp(k, "token"))
		d->creds.session_token = v;
	else if (!strcmp(k, "region"))
		d->req.region = v;
	else if (!strcmp(k, "service"))
		d->req.service = v;
	else if (!strcmp(k, "time"))
		d->req.when = (time_t)strtoll(v, NULL, 10);
	else if (!strcmp(k, "expires"))
		d->expires = (unsigned)strtoul(v, NULL, 10);
	else if (!strcmp(k, "s3path"))
		d->req.s3_path = !strcmp(v, "1");
	else if (!strcmp(k, "sha256hdr"))
		d->req.content_sha256_header = !strcmp(v, "1");
	else
		return -EINVAL;
	return 0;
}

static int parse_line(char *line, struct desc *d)
{
	char *tok = line, *end, *eq;

	memset(d, 0, sizeof(*d));
	d->req.s3_path = true;
	d->req.content_sha256_header = true;
	d->req.query = d->query;
	d->req.headers = d->headers;
	while (*tok) {
		tok += strspn(tok, " \r");
		if (!*tok)
			break;
		end = tok + strcspn(tok, " \r");
		if (*end)
			*end++ = '\0';
		eq = strchr(tok, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (set_field(d, tok, eq + 1))
			return -EINVAL;
		tok = end;
	}
	return 0;
}

static int run(const struct desc *d, struct sigv4_key_cache *kc)
{
	struct sigv4_signed out;
	struct buf creq;
	int rc;

	sigv4_signed_init(&out);
	buf_init(&creq, LINE_CAP);
	rc = d->presign
		 ? sigv4_presign(&d->req, &d->creds, kc, d->expires, &out)
		 : sigv4_sign(&d->req, &d->creds, kc, &out);
	if (!rc)
		rc = sigv4_uri_encode(out.canonical_request.data,
				      out.canonical_request.len, false, &creq);
	if (rc)
		printf("ERR\t%d\n", rc);
	else
		printf("OK\t%s\t%s\n",
		       buf_str(d->presign ? &out.canonical_query
					  : &out.authorization),
		       buf_str(&creq));
	buf_release(&creq);
	sigv4_signed_release(&out);
	return rc;
}

/* Reads one line (without its '\n') into LINE. 0, 1 at EOF, or -errno. */
static int read_line(FILE *f, struct buf *line)
{
	char chunk[4096];
	int rc;

	buf_reset(line);
	while (fgets(chunk, sizeof(chunk), f)) {
		size_t n = strlen(chunk);
		bool end = n && chunk[n - 1] == '\n';

		if ((rc = buf_append(line, chunk, end ? n - 1 : n)))
			return rc;
		if (end)
			return 0;
	}
	return line->len ? 0 : 1;
}

int main(void)
{
	struct sigv4_key_cache kc;
	struct buf line;
	struct desc d;
	int rc;

	sigv4_key_cache_init(&kc);
	buf_init(&line, LINE_CAP);
	while ((rc = read_line(stdin, &line)) == 0) {
		if (line.len == 0)
			continue;
		if (parse_line(line.data, &d))
			printf("ERR\t%d\n", -EINVAL);
		else
			run(&d, &kc);
		fflush(stdout);
	}
	buf_release(&line);
	return rc < 0 ? 1 : 0;
}
