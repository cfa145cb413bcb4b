// SPDX-License-Identifier: MIT
/*
 * AWS Signature Version 4: canonical request, string to sign, signing key
 * and signature, for the Authorization header (sigv4_sign) and for
 * presigned URLs (sigv4_presign).
 *
 * Pure: no I/O, no threads, no globals; the only state is the caller's
 * struct sigv4_key_cache, which holds the derived signing key and a SHA-256
 * digest of the secret (never the secret). Every input is validated and
 * length-limited before use (limits in sigv4.h), so malformed requests
 * return -EINVAL instead of producing a header that could smuggle CR/LF or
 * a signature over something other than what is sent. Key material on the
 * stack is wiped with OPENSSL_cleanse() before returning.
 *
 * What is signed is built only from the same encoded strings that the
 * caller is told to send (canonical_uri, canonical_query), so the two
 * cannot diverge.
 */
#include "sigv4.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define ALGORITHM	"AWS4-HMAC-SHA256"
#define OUT_CAP		((size_t)1 << 20) /* per output buffer */
#define MAX_METHOD	16
#define MAX_KEY_ID	128
#define MAX_REGION	63
#define MAX_SERVICE	31
#define MAX_PAYLOAD_TOK 64
#define MAX_EXPIRES	604800u
#define MAX_WHEN	253402300799LL /* 9999-12-31T23:59:59Z */
#define N_AUTH_PARAMS	6
#define SCOPE_MAX	(8 + 1 + MAX_REGION + 1 + MAX_SERVICE + 13 + 1)

static const char hex_upper[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

/* ---------------------------------------------------------------- */
/* Character classes and bounded validation                          */
/* ---------------------------------------------------------------- */

static bool is_alnum(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9');
}

static bool is_unreserved(unsigned char c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 9110 token characters. */
static bool is_tchar(unsigned char c)
{
	return is_alnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_host_char(unsigned char c)
{
	return is_alnum(c) || (c != '\0' && strchr("-._:[]", c));
}

static bool is_scope_char(unsigned char c)
{
	return is_alnum(c) || c == '-' || c == '_';
}

static bool is_key_id_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '/' && c != ',';
}

static bool is_vchar(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* Header value bytes: TAB, SP, VCHAR, obs-text. Never CR, LF or NUL. */
static bool is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* strlen() that stops looking after MAX + 1 bytes. */
static size_t bounded_len(const char *s, size_t max)
{
	size_t n = 0;

	while (n <= max && s[n])
		n++;
	return n;
}

/* S has MIN..MAX bytes, all accepted by OK. Stores the length in *LEN. */
static bool str_ok(const char *s, size_t min, size_t max,
		   bool (*ok)(unsigned char), size_t *len)
{
	size_t n;

	if (!s)
		return false;
	n = bounded_len(s, max);
	if (n < min || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ok((unsigned char)s[i]))
			return false;
	if (len)
		*len = n;
	return true;
}

static bool is_lower_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool is_payload_tok_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* 64 lower-case hex digits, or a token like UNSIGNED-PAYLOAD. */
static bool payload_ok(const char *p)
{
	return str_ok(p, 64, 64, is_lower_hex, NULL) ||
	       str_ok(p, 1, MAX_PAYLOAD_TOK, is_payload_tok_char, NULL);
}

/* Case-insensitive (ASCII) comparison of two byte strings. */
static int name_icmp(const char *a, size_t an, const char *b, size_t bn)
{
	size_t n = an < bn ? an : bn;

	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];

		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (unsigned char)(y - 'A' + 'a');
		if (x != y)
			return x < y ? -1 : 1;
	}
	return an == bn ? 0 : (an < bn ? -1 : 1);
}

static bool name_in(const char *name, size_t len, const char *const *set)
{
	for (; *set; set++)
		if (name_icmp(name, len, *set, strlen(*set)) == 0)
			return true;
	return false;
}

/* Headers the signer adds itself; the caller may not pass them. */
static const char *const reserved_headers[] = {"host",
					       "x-amz-date",
					       "x-amz-content-sha256",
					       "x-amz-security-token",
					       "authorization",
					       NULL};

/* Query names sigv4_presign() adds itself. */
static const char *const reserved_params[] = {
    "X-Amz-Algorithm",	   "X-Amz-Credential",
    "X-Amz-Date",	   "X-Amz-Expires",
    "X-Amz-SignedHeaders", "X-Amz-Security-Token",
    "X-Amz-Signature",	   NULL};

static bool has_token(const struct sigv4_creds *c)
{
	return c->session_token && c->session_token[0];
}

static int check_creds(const struct sigv4_creds *c)
{
	if (!c || !str_ok(c->access_key, 1, MAX_KEY_ID, is_key_id_char, NULL))
		return -EINVAL;
	if (!c->secret_key || c->secret_key[0] == '\0' ||
	    bounded_len(c->secret_key, SIGV4_MAX_SECRET) > SIGV4_MAX_SECRET)
		return -EINVAL;
	if (has_token(c) &&
	    !str_ok(c->session_token, 1, SIGV4_MAX_TOKEN, is_vchar, NULL))
		return -EINVAL;
	return 0;
}

static int check_params(const struct sigv4_request *r, bool presign)
{
	size_t n;

	if (r->nquery > SIGV4_MAX_PARAMS || (r->nquery && !r->query))
		return -EINVAL;
	for (size_t i = 0; i < r->nquery; i++) {
		const struct sigv4_param *p = &r->query[i];

		if (!p->name || p->name[0] == '\0' ||
		    bounded_len(p->name, SIGV4_MAX_FIELD) > SIGV4_MAX_FIELD)
			return -EINVAL;
		if (p->value &&
		    bounded_len(p->value, SIGV4_MAX_FIELD) > SIGV4_MAX_FIELD)
			return -EINVAL;
		n = strlen(p->name);
		if (presign && name_in(p->name, n, reserved_params))
			return -EINVAL;
	}
	return 0;
}

static int check_headers(const struct sigv4_request *r)
{
	size_t n;

	if (r->nheaders > SIGV4_MAX_HEADERS || (r->nheaders && !r->headers))
		return -EINVAL;
	for (size_t i = 0; i < r->nheaders; i++) {
		const struct sigv4_header *h = &r->headers[i];

		if (!str_ok(h->name, 1, SIGV4_MAX_FIELD, is_tchar, &n) ||
		    name_in(h->name, n, reserved_headers))
			return -EINVAL;
		if (!str_ok(h->value, 0, SIGV4_MAX_FIELD, is_value_char, NULL))
			return -EINVAL;
	}
	return 0;
}

static int check_request(const struct sigv4_request *r, bool presign)
{
	size_t n;

	if (!r || !str_ok(r->method, 1, MAX_METHOD, is_tchar, NULL) ||
	    !str_ok(r->host, 1, SIGV4_MAX_HOST, is_host_char, NULL) ||
	    !str_ok(r->region, 1, MAX_REGION, is_scope_char, NULL) ||
	    !str_ok(r->service, 1, MAX_SERVICE, is_scope_char, NULL))
		return -EINVAL;
	if (!r->path || r->path[0] != '/')
		return -EINVAL;
	n = bounded_len(r->path, SIGV4_MAX_PATH);
	if (n > SIGV4_MAX_PATH)
		return -EINVAL;
	if (presign ? r->payload_hash && !payload_ok(r->payload_hash)
		    : !r->payload_hash || !payload_ok(r->payload_hash))
		return -EINVAL;
	if ((long long)r->when < 0 || (long long)r->when > MAX_WHEN)
		return -EINVAL;
	if (check_params(r, presign) || check_headers(r))
		return -EINVAL;
	return 0;
}

/* ---------------------------------------------------------------- */
/* Hashes and dates                                                  */
/* ---------------------------------------------------------------- */

static void to_hex(const unsigned char *p, size_t n, char *hex)
{
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = hex_lower[p[i] >> 4];
		hex[2 * i + 1] = hex_lower[p[i] & 15];
	}
	hex[2 * n] = '\0';
}

static int sha256(const void *data, size_t len, unsigned char md[32])
{
	unsigned int n = 0;

	if (!EVP_Digest(len ? data : "", len, md, &n, EVP_sha256(), NULL) ||
	    n != 32)
		return -EIO;
	return 0;
}

static int hmac256(const void *key, size_t klen, const void *msg, size_t mlen,
		   unsigned char md[32])
{
	unsigned int n = 0;

	if (klen > INT_MAX ||
	    !HMAC(EVP_sha256(), key, (int)klen, msg, mlen, md, &n) || n != 32)
		return -EIO;
	return 0;
}

void sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[32];

	if ((!data && len) || sha256(data, len, md)) {
		hex[0] = '\0';
		return;
	}
	to_hex(md, sizeof(md), hex);
}

/* Decimal V without leading zeros into OUT (at least 11 bytes). */
static void fmt_uint(unsigned v, char *out)
{
	char tmp[16];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
}

static void put_num(char *p, unsigned v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * "YYYYMMDDTHHMMSSZ" without gmtime_r(), so no libc time zone state is
 * touched. Civil-from-days after H. Hinnant's public-domain algorithm;
 * WHEN is already known to be in 0 .. MAX_WHEN.
 */
static void format_amz_date(time_t when, char out[17])
{
	long long t = (long long)when, z = t / 86400 + 719468;
	long long era = z / 146097, doe = z - era * 146097;
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	long long mp = (5 * doy + 2) / 153;
	unsigned d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	unsigned m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	unsigned y = (unsigned)(yoe + era * 400 + (m <= 2));
	unsigned s = (unsigned)(t % 86400);

	put_num(out, y, 4);
	put_num(out + 4, m, 2);
	put_num(out + 6, d, 2);
	out[8] = 'T';
	put_num(out + 9, s / 3600, 2);
	put_num(out + 11, s / 60 % 60, 2);
	put_num(out + 13, s % 60, 2);
	out[15] = 'Z';
	out[16] = '\0';
}

/* ---------------------------------------------------------------- */
/* URI encoding and the canonical URI                                */
/* ---------------------------------------------------------------- */

int sigv4_uri_encode(const char *s, size_t len, bool keep_slash,
		     struct buf *out)
{
	size_t i = 0, run;
	int rc;

	if (!out || (!s && len))
		return -EINVAL;
	while (i < len) {
		for (run = i; run < len; run++) {
			unsigned char c = (unsigned char)s[run];

			if (!is_unreserved(c) && !(keep_slash && c == '/'))
				break;
		}
		if (run > i && (rc = buf_append(out, s + i, run - i)))
			return rc;
		if (run < len) {
			unsigned char c = (unsigned char)s[run];
			char esc[3] = {'%', hex_upper[c >> 4],
				       hex_upper[c & 15]};

			if ((rc = buf_append(out, esc, sizeof(esc))))
				return rc;
			run++;
		}
		i = run;
	}
	return 0;
}

/*
 * Generic-service path normalisation (RFC 3986 remove_dot_segments plus
 * collapsing of empty segments), as the AWS test suite expects: "." and
 * empty segments vanish, ".." drops the previous segment, a trailing '/'
 * survives when anything is left.
 */
static int normalise_path(const char *path, size_t len, struct buf *out)
{
	size_t i = 0, j;
	int rc;

	while (i < len) {
		for (j = i; j < len && path[j] != '/'; j++)
			;
		if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
			while (out->len && out->data[out->len - 1] != '/')
				out->len--;
			if (out->len)
				out->len--;
			if (out->data)
				out->data[out->len] = '\0';
		} else if (j > i && !(j - i == 1 && path[i] == '.')) {
			if ((rc = buf_append(out, "/", 1)) ||
			    (rc = buf_append(out, path + i, j - i)))
				return rc;
		}
		i = j + 1;
	}
	if (out->len == 0 || path[len - 1] == '/')
		return buf_append(out, "/", 1);
	return 0;
}

/*
 * S3 signs the path it receives, encoded once: the raw key path encoded
 * here is exactly what goes on the wire. Other services sign the wire path
 * URI-encoded once more (the "double encoding" of the SigV4 docs); the
 * AWS test suite gives its paths as request-line text (raw bytes such as
 * a space or UTF-8), so encoding the normalised text once reproduces its
 * vectors, and a path already holding %XX escapes gets them encoded again
 * (%2520), which is that double encoding.
 */
static int canon_uri(const struct sigv4_request *r, struct buf *out)
{
	size_t len = strlen(r->path);
	struct buf norm;
	int rc;

	if (r->s3_path)
		return sigv4_uri_encode(r->path, len, true, out);
	buf_init(&norm, SIGV4_MAX_PATH + 1);
	rc = normalise_path(r->path, len, &norm);
	if (!rc)
		rc = sigv4_uri_encode(buf_str(&norm), norm.len, true, out);
	buf_release(&norm);
	return rc;
}

/* ---------------------------------------------------------------- */
/* Canonical query                                                   */
/* ---------------------------------------------------------------- */

struct qent {
	size_t noff, nlen, voff, vlen; /* into the scratch buffer */
	const char *name, *value;      /* set once the buffer stops moving */
};

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	if (c)
		return c;
	return an == bn ? 0 : (an < bn ? -1 : 1);
}

static int qent_cmp(const void *pa, const void *pb)
{
	const struct qent *a = pa, *b = pb;
	int c = bytes_cmp(a->name, a->nlen, b->name, b->nlen);

	return c ? c : bytes_cmp(a->value, a->vlen, b->value, b->vlen);
}

/* Encodes P into SCRATCH and records where its name and value went. */
static int qent_encode(const struct sigv4_param *p, struct buf *scratch,
		       struct qent *e)
{
	const char *v = p->value ? p->value : "";
	int rc;

	e->noff = scratch->len;
	rc = sigv4_uri_encode(p->name, strlen(p->name), false, scratch);
	if (rc)
		return rc;
	e->nlen = scratch->len - e->noff;
	e->voff = scratch->len;
	rc = sigv4_uri_encode(v, strlen(v), false, scratch);
	e->vlen = scratch->len - e->voff;
	return rc;
}

/*
 * Canonical query of A (NA params) and B (NB params) into OUT: names and
 * values encoded, sorted by encoded name then value, "name=value" joined
 * with '&'. A valueless parameter becomes "name=".
 */
static int canon_query(const struct sigv4_param *a, size_t na,
		       const struct sigv4_param *b, size_t nb, struct buf *out)
{
	struct qent ents[SIGV4_MAX_PARAMS + N_AUTH_PARAMS];
	struct buf scratch;
	size_t n = na + nb;
	int rc = 0;

	if (n > sizeof(ents) / sizeof(ents[0]))
		return -EINVAL;
	buf_init(&scratch, OUT_CAP);
	for (size_t i = 0; !rc && i < n; i++)
		rc = qent_encode(i < na ? &a[i] : &b[i - na], &scratch,
				 &ents[i]);
	for (size_t i = 0; !rc && i < n; i++) {
		ents[i].name = buf_str(&scratch) + ents[i].noff;
		ents[i].value = buf_str(&scratch) + ents[i].voff;
	}
	if (!rc && n > 1)
		qsort(ents, n, sizeof(ents[0]), qent_cmp);
	for (size_t i = 0; !rc && i < n; i++) {
		if (i && (rc = buf_append(out, "&", 1)))
			break;
		if ((rc = buf_append(out, ents[i].name, ents[i].nlen)) ||
		    (rc = buf_append(out, "=", 1)))
			break;
		rc = buf_append(out, ents[i].value, ents[i].vlen);
	}
	buf_release(&scratch);
	return rc;
}

/* ---------------------------------------------------------------- */
/* Canonical headers                                                 */
/* ---------------------------------------------------------------- */

struct hent {
	const char *name;
	size_t nlen;
	const char *value;
	size_t idx; /* keeps duplicates in the caller's order */
};

static int hent_cmp(const void *pa, const void *pb)
{
	const struct hent *a = pa, *b = pb;
	int c = name_icmp(a->name, a->nlen, b->name, b->nlen);

	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int append_lower(struct buf *out, const char *s, size_t n)
{
	char chunk[64];
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		chunk[k++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		if (k == sizeof(chunk) || i + 1 == n) {
			if ((rc = buf_append(out, chunk, k)))
				return rc;
			k = 0;
		}
	}
	return 0;
}

/* Appends V trimmed, with inner runs of SP / HTAB collapsed to one SP. */
static int append_trimmed(struct buf *out, const char *v)
{
	bool pending = false, wrote = false;
	size_t i = 0, j;
	int rc;

	while (v[i]) {
		if (is_ws((unsigned char)v[i])) {
			pending = true;
			i++;
			continue;
		}
		for (j = i; v[j] && !is_ws((unsigned char)v[j]); j++)
			;
		if (pending && wrote && (rc = buf_append(out, " ", 1)))
			return rc;
		if ((rc = buf_append(out, v + i, j - i)))
			return rc;
		pending = false;
		wrote = true;
		i = j;
	}
	return 0;
}

/* Opens the canonical line of header H and adds its name to SH. */
static int header_start(const struct hent *h, bool first, struct buf *ch,
			struct buf *sh)
{
	int rc;

	if (!first &&
	    ((rc = buf_append(ch, "\n", 1)) || (rc = buf_append(sh, ";", 1))))
		return rc;
	if ((rc = append_lower(ch, h->name, h->nlen)) ||
	    (rc = buf_append(ch, ":", 1)))
		return rc;
	return append_lower(sh, h->name, h->nlen);
}

static void hent_add(struct hent *h, size_t *n, const char *name,
		     const char *value)
{
	h[*n] = (struct hent){name, strlen(name), value, *n};
	(*n)++;
}

/*
 * Canonical header lines ("name:value\n" each) into CH and the signed
 * header list into SH. For a presigned URL only host and the caller's
 * headers are signed; otherwise the x-amz-* headers the signer sends too.
 */
static int canon_headers(const struct sigv4_request *r,
			 const struct sigv4_creds *c, const char *amz_date,
			 bool presign, struct buf *ch, struct buf *sh)
{
	struct hent h[SIGV4_MAX_HEADERS + 4];
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < r->nheaders; i++)
		hent_add(h, &n, r->headers[i].name, r->headers[i].value);
	hent_add(h, &n, "host", r->host);
	if (!presign && r->content_sha256_header)
		hent_add(h, &n, "x-amz-content-sha256", r->payload_hash);
	if (!presign)
		hent_add(h, &n, "x-amz-date", amz_date);
	if (!presign && has_token(c))
		hent_add(h, &n, "x-amz-security-token", c->session_token);
	qsort(h, n, sizeof(h[0]), hent_cmp);
	for (size_t i = 0; !rc && i < n; i++) {
		if (i && !name_icmp(h[i].name, h[i].nlen, h[i - 1].name,
				    h[i - 1].nlen))
			rc = buf_append(ch, ",", 1); /* same name: join */
		else
			rc = header_start(&h[i], i == 0, ch, sh);
		if (!rc)
			rc = append_trimmed(ch, h[i].value);
	}
	return rc ? rc : buf_append(ch, "\n", 1);
}

/* ---------------------------------------------------------------- */
/* Signing key, string to sign, signature                            */
/* ---------------------------------------------------------------- */

static int derive_key(const char *secret, size_t slen, const char *date,
		      const char *region, const char *service,
		      unsigned char key[32])
{
	unsigned char k[4 + SIGV4_MAX_SECRET], a[32], b[32];
	int rc;

	memcpy(k, "AWS4", 4);
	memcpy(k + 4, secret, slen);
	rc = hmac256(k, 4 + slen, date, 8, a);
	if (!rc)
		rc = hmac256(a, 32, region, strlen(region), b);
	if (!rc)
		rc = hmac256(b, 32, service, strlen(service), a);
	if (!rc)
		rc = hmac256(a, 32, "aws4_request", 12, key);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(a, sizeof(a));
	OPENSSL_cleanse(b, sizeof(b));
	return rc;
}

static bool cache_hit(const struct sigv4_key_cache *kc, const char *date,
		      const char *region, const char *service,
		      const unsigned char digest[32])
{
	return kc && kc->valid && memcmp(kc->date, date, 8) == 0 &&
	       strcmp(kc->region, region) == 0 &&
	       strcmp(kc->service, service) == 0 &&
	       CRYPTO_memcmp(kc->secret_digest, digest, 32) == 0;
}

/*
 * The signing key for the first 8 characters of DATE (YYYYMMDD), from KC
 * when it still matches.
 */
static int signing_key(const struct sigv4_request *r,
		       const struct sigv4_creds *c, const char *date,
		       struct sigv4_key_cache *kc, unsigned char key[32])
{
	size_t slen = strlen(c->secret_key);
	unsigned char digest[32];
	int rc = sha256(c->secret_key, slen, digest);

	if (!rc && cache_hit(kc, date, r->region, r->service, digest)) {
		memcpy(key, kc->key, 32);
	} else if (!rc) {
		rc = derive_key(c->secret_key, slen, date, r->region,
				r->service, key);
		if (kc) {
			kc->valid = rc == 0;
			memcpy(kc->date, date, 8);
			kc->date[8] = '\0';
			/* Lengths were checked against these fields. */
			memcpy(kc->region, r->region, strlen(r->region) + 1);
			memcpy(kc->service, r->service, strlen(r->service) + 1);
			memcpy(kc->secret_digest, digest, 32);
			memcpy(kc->key, key, 32);
		}
	}
	OPENSSL_cleanse(digest, sizeof(digest));
	return rc;
}

/* "DATE/REGION/SERVICE/aws4_request" into SCOPE (SCOPE_MAX bytes). */
static void make_scope(const struct sigv4_request *r, const char *amz_date,
		       char *scope)
{
	size_t rl = strlen(r->region), sl = strlen(r->service);

	memcpy(scope, amz_date, 8);
	scope[8] = '/';
	memcpy(scope + 9, r->region, rl);
	scope[9 + rl] = '/';
	memcpy(scope + 10 + rl, r->service, sl);
	memcpy(scope + 10 + rl + sl, "/aws4_request", 14);
}

/* String to sign over OUT->canonical_request, then OUT->signature. */
static int sign_creq(const struct sigv4_request *r, const struct sigv4_creds *c,
		     struct sigv4_key_cache *kc, const char *scope,
		     struct sigv4_signed *out)
{
	unsigned char md[32], key[32];
	char hex[65];
	int rc =
	    sha256(out->canonical_request.data, out->canonical_request.len, md);

	if (rc)
		return rc;
	to_hex(md, sizeof(md), hex);
	rc = buf_printf(&out->string_to_sign, ALGORITHM "\n%s\n%s\n%s",
			out->amz_date, scope, hex);
	if (!rc)
		rc = signing_key(r, c, out->amz_date, kc, key);
	if (!rc)
		rc = hmac256(key, sizeof(key), out->string_to_sign.data,
			     out->string_to_sign.len, md);
	if (!rc)
		to_hex(md, sizeof(md), out->signature);
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* ---------------------------------------------------------------- */
/* Public entry points                                               */
/* ---------------------------------------------------------------- */

void sigv4_key_cache_init(struct sigv4_key_cache *kc)
{
	OPENSSL_cleanse(kc, sizeof(*kc));
	kc->valid = false;
}

void sigv4_signed_init(struct sigv4_signed *s)
{
	s->amz_date[0] = '\0';
	s->signature[0] = '\0';
	buf_init(&s->authorization, OUT_CAP);
	buf_init(&s->canonical_uri, OUT_CAP);
	buf_init(&s->canonical_query, OUT_CAP);
	buf_init(&s->canonical_request, OUT_CAP);
	buf_init(&s->string_to_sign, OUT_CAP);
	buf_init(&s->signed_headers, OUT_CAP);
}

void sigv4_signed_release(struct sigv4_signed *s)
{
	buf_release(&s->authorization);
	buf_release(&s->canonical_uri);
	buf_release(&s->canonical_query);
	buf_release(&s->canonical_request);
	buf_release(&s->string_to_sign);
	buf_release(&s->signed_headers);
	s->amz_date[0] = '\0';
	s->signature[0] = '\0';
}

static void signed_reset(struct sigv4_signed *s)
{
	buf_reset(&s->authorization);
	buf_reset(&s->canonical_uri);
	buf_reset(&s->canonical_query);
	buf_reset(&s->canonical_request);
	buf_reset(&s->string_to_sign);
	buf_reset(&s->signed_headers);
	s->amz_date[0] = '\0';
	s->signature[0] = '\0';
}

/* The X-Amz-* parameters of a presigned URL, into P (N_AUTH_PARAMS). */
static size_t presign_params(const struct sigv4_creds *c,
			     const struct sigv4_signed *out, const char *cred,
			     const char *expires, struct sigv4_param *p)
{
	size_t n = 0;

	p[n++] = (struct sigv4_param){"X-Amz-Algorithm", ALGORITHM};
	p[n++] = (struct sigv4_param){"X-Amz-Credential", cred};
	p[n++] = (struct sigv4_param){"X-Amz-Date", out->amz_date};
	p[n++] = (struct sigv4_param){"X-Amz-Expires", expires};
	p[n++] = (struct sigv4_param){"X-Amz-SignedHeaders",
				      buf_str(&out->signed_headers)};
	if (has_token(c))
		p[n++] = (struct sigv4_param){"X-Amz-Security-Token",
					      c->session_token};
	return n;
}

/* Everything up to and including OUT->canonical_request. */
static int build_creq(const struct sigv4_request *r,
		      const struct sigv4_creds *c, const char *scope,
		      unsigned expires, bool presign, struct sigv4_signed *out)
{
	struct sigv4_param auth[N_AUTH_PARAMS];
	char cred[MAX_KEY_ID + 1 + SCOPE_MAX], exp[16];
	const char *payload = r->payload_hash;
	struct buf ch;
	size_t na = 0;
	int rc;

	buf_init(&ch, OUT_CAP);
	rc = canon_uri(r, &out->canonical_uri);
	if (!rc)
		rc = canon_headers(r, c, out->amz_date, presign, &ch,
				   &out->signed_headers);
	if (!rc && presign) {
		snprintf(cred, sizeof(cred), "%s/%s", c->access_key, scope);
		fmt_uint(expires, exp);
		na = presign_params(c, out, cred, exp, auth);
		if ((r->s3_path && r->content_sha256_header) || !payload)
			payload = SIGV4_UNSIGNED_PAYLOAD;
	}
	if (!rc)
		rc = canon_query(r->query, r->nquery, auth, na,
				 &out->canonical_query);
	if (!rc)
		rc = buf_printf(&out->canonical_request,
				"%s\n%s\n%s\n%s\n%s\n%s", r->method,
				buf_str(&out->canonical_uri),
				buf_str(&out->canonical_query), buf_str(&ch),
				buf_str(&out->signed_headers), payload);
	buf_release(&ch);
	return rc;
}

static int sign_common(const struct sigv4_request *r,
		       const struct sigv4_creds *c, struct sigv4_key_cache *kc,
		       unsigned expires, bool presign, struct sigv4_signed *out)
{
	char scope[SCOPE_MAX];
	int rc;

	if (!out)
		return -EINVAL;
	signed_reset(out);
	rc = check_request(r, presign);
	if (!rc)
		rc = check_creds(c);
	if (!rc && presign && (expires < 1 || expires > MAX_EXPIRES))
		rc = -EINVAL;
	if (rc)
		return rc;
	format_amz_date(r->when, out->amz_date);
	make_scope(r, out->amz_date, scope);
	rc = build_creq(r, c, scope, expires, presign, out);
	if (!rc)
		rc = sign_creq(r, c, kc, scope, out);
	if (!rc && presign)
		rc = buf_printf(&out->canonical_query, "&X-Amz-Signature=%s",
				out->signature);
	else if (!rc)
		rc = buf_printf(&out->authorization,
				ALGORITHM " Credential=%s/%s, SignedHeaders=%s,"
					  " Signature=%s",
				c->access_key, scope,
				buf_str(&out->signed_headers), out->signature);
	if (rc)
		signed_reset(out);
	return rc;
}

int sigv4_sign(const struct sigv4_request *req, const struct sigv4_creds *creds,
	       struct sigv4_key_cache *kc, struct sigv4_signed *out)
{
	return sign_common(req, creds, kc, 0, false, out);
}

int sigv4_presign(const struct sigv4_request *req,
		  const struct sigv4_creds *creds, struct sigv4_key_cache *kc,
		  unsigned expires, struct sigv4_signed *out)
{
	return sign_common(req, creds, kc, expires, true, out);
}
