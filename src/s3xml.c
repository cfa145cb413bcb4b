// SPDX-License-Identifier: MIT
/*
 * S3 XML bodies with expat. A small driver (struct xp) turns expat's
 * callbacks into "element starts at depth D" / "element ends, with its text
 * when asked for" events; each document kind (listing, error, multipart
 * results) is a pair of handlers on top of it. The driver holds the
 * limits: a DOCTYPE or entity declaration aborts the parse, nesting is
 * bounded, and text is only collected for the leaf elements a handler asked
 * for, into a bounded buf. The first error stops expat and becomes the
 * result, so a hostile body ends the parse early instead of growing state.
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "s3xml.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes given to expat per XML_Parse() call (its length is an int). */
#define XP_CHUNK (1u << 20)

struct xp;

/* An element starts at depth x->depth (root = 1); may set x->capture. */
typedef int xp_start_fn(struct xp *x, const char *name);
/* An element at depth x->depth ends; TEXT is its content when it was
 * captured (NUL-terminated, LEN bytes), NULL otherwise. */
typedef int xp_end_fn(struct xp *x, const char *name, const char *text,
		      size_t len);

struct xp {
	XML_Parser parser;
	int depth;	 /* depth of the current element, root = 1 */
	int err;	 /* first error; non-zero stops the parse */
	bool capture;	 /* collect the current element's text */
	bool truncate;	 /* text past the cap is dropped, not an error */
	struct buf text; /* text of the captured element */
	xp_start_fn *start;
	xp_end_fn *end;
	void *arg; /* the handlers' context */
};

static const char *xp_local(const char *name)
{
	const char *c = strrchr(name, ':');

	return c ? c + 1 : name;
}

static void xp_fail(struct xp *x, int err)
{
	if (x->err)
		return;
	x->err = err;
	XML_StopParser(x->parser, XML_FALSE);
}

static void XMLCALL xp_on_start(void *ud, const XML_Char *name,
				const XML_Char **attrs)
{
	struct xp *x = ud;
	int rc;

	(void)attrs;
	if (x->err)
		return;
	/* A child inside a value we collect is not an S3 document. */
	if (x->capture || x->depth >= S3XML_MAX_DEPTH) {
		xp_fail(x, -EBADMSG);
		return;
	}
	x->depth++;
	buf_reset(&x->text);
	rc = x->start(x, xp_local(name));
	if (rc)
		xp_fail(x, rc);
}

static void XMLCALL xp_on_end(void *ud, const XML_Char *name)
{
	struct xp *x = ud;
	int rc;

	if (x->err)
		return;
	if (x->capture)
		rc = x->end(x, xp_local(name), buf_str(&x->text), x->text.len);
	else
		rc = x->end(x, xp_local(name), NULL, 0);
	x->capture = false;
	x->depth--;
	if (rc)
		xp_fail(x, rc);
}

static void XMLCALL xp_on_chars(void *ud, const XML_Char *s, int n)
{
	struct xp *x = ud;
	int rc;

	if (x->err || !x->capture || n <= 0)
		return;
	rc = buf_append(&x->text, s, (size_t)n);
	if (rc == -E2BIG && x->truncate)
		rc = buf_append(&x->text, s, x->text.cap - x->text.len);
	if (rc)
		xp_fail(x, rc);
}

static void XMLCALL xp_on_doctype(void *ud, const XML_Char *name,
				  const XML_Char *sysid, const XML_Char *pubid,
				  int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	xp_fail(ud, -EBADMSG);
}

static void XMLCALL xp_on_entity(void *ud, const XML_Char *name, int is_pe,
				 const XML_Char *value, int value_len,
				 const XML_Char *base, const XML_Char *sysid,
				 const XML_Char *pubid,
				 const XML_Char *notation)
{
	(void)name;
	(void)is_pe;
	(void)value;
	(void)value_len;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	xp_fail(ud, -EBADMSG);
}

static XML_Parser xp_parser_new(struct xp *x)
{
	XML_Parser p = XML_ParserCreate(NULL);

	if (!p)
		return NULL;
	XML_SetUserData(p, x);
	XML_SetElementHandler(p, xp_on_start, xp_on_end);
	XML_SetCharacterDataHandler(p, xp_on_chars);
	XML_SetStartDoctypeDeclHandler(p, xp_on_doctype);
	XML_SetEntityDeclHandler(p, xp_on_entity);
	XML_SetParamEntityParsing(p, XML_PARAM_ENTITY_PARSING_NEVER);
	return p;
}

/*
 * Parses BODY with the handlers START/END (context ARG). Captured text is
 * capped at TEXT_CAP bytes: beyond it, -E2BIG, or silent truncation when
 * TRUNCATE. Returns 0 or the first error.
 */
static int xp_run(const char *body, size_t len, xp_start_fn *start,
		  xp_end_fn *end, void *arg, size_t text_cap, bool truncate)
{
	struct xp x = {
	    .start = start, .end = end, .arg = arg, .truncate = truncate};
	size_t off = 0;
	int rc = 0;

	buf_init(&x.text, text_cap);
	x.parser = xp_parser_new(&x);
	if (!x.parser)
		return -ENOMEM;
	do {
		size_t n = len - off > XP_CHUNK ? XP_CHUNK : len - off;
		int last = off + n == len;

		if (XML_Parse(x.parser, body + off, (int)n, last) !=
		    XML_STATUS_OK) {
			rc = XML_GetErrorCode(x.parser) == XML_ERROR_NO_MEMORY
				 ? -ENOMEM
				 : -EBADMSG;
			break;
		}
		off += n;
	} while (off < len);
	if (x.err)
		rc = x.err;
	XML_ParserFree(x.parser);
	buf_release(&x.text);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Small value helpers                                                 */

static int root_check(const char *name, const char *want)
{
	if (strcmp(name, want) == 0)
		return 0;
	return strcmp(name, "Error") == 0 ? -EREMOTEIO : -EBADMSG;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trims XML whitespace around TEXT; returns the new start, *LEN updated. */
static const char *trim(const char *text, size_t *len)
{
	size_t n = *len;

	while (n && is_space(*text)) {
		text++;
		n--;
	}
	while (n && is_space(text[n - 1]))
		n--;
	*len = n;
	return text;
}

/* Copies TEXT into a new string at *DST; a second value is -EBADMSG. */
static int set_str(char **dst, const char *text, size_t len)
{
	char *s;

	if (*dst)
		return -EBADMSG;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, text, len);
	s[len] = '\0';
	*dst = s;
	return 0;
}

static int parse_u64(const char *text, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	text = trim(text, &len);
	if (len == 0)
		return -EBADMSG;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)text[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static bool text_is(const char *text, size_t len, const char *word)
{
	text = trim(text, &len);
	return len == strlen(word) && strncasecmp(text, word, len) == 0;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes S in place: %XX is a byte, '+' is a space. */
static int url_decode(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		int hi, lo;

		if (*r != '%') {
			*w++ = (char)(*r == '+' ? ' ' : *r);
			continue;
		}
		hi = hex_val(r[1]);
		lo = hi < 0 ? -1 : hex_val(r[2]);
		if (lo < 0 || (hi | lo) == 0)
			return -EBADMSG;
		*w++ = (char)(hi << 4 | lo);
		r += 2;
	}
	*w = '\0';
	return 0;
}

/* ------------------------------------------------------------------ */
/* ListObjectsV2                                                       */

enum list_sec { SEC_NONE, SEC_CONTENTS, SEC_PREFIXES, SEC_OTHER };

struct list_ctx {
	struct s3xml_list res;	 /* scalar fields and next_token */
	struct buf objs;	 /* array of struct s3xml_object */
	struct buf prefixes;	 /* array of char * */
	struct s3xml_object cur; /* the <Contents> being read */
	bool have_size;		 /* cur has a Size */
	bool have_truncated;
	char *prefix; /* the <CommonPrefixes> being read */
	enum list_sec sec;
	size_t nentries;
};

static bool name_in(const char *name, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(name, *names) == 0)
			return true;
	return false;
}

static const char *const list_top_fields[] = {
    "IsTruncated", "NextContinuationToken", "KeyCount", "EncodingType", NULL};
static const char *const list_obj_fields[] = {
    "Key", "Size", "LastModified", "ETag", "StorageClass", NULL};

static int list_start(struct xp *x, const char *name)
{
	struct list_ctx *c = x->arg;

	if (x->depth == 1)
		return root_check(name, "ListBucketResult");
	if (x->depth == 2) {
		c->sec = SEC_OTHER;
		if (strcmp(name, "Contents") == 0)
			c->sec = SEC_CONTENTS;
		else if (strcmp(name, "CommonPrefixes") == 0)
			c->sec = SEC_PREFIXES;
		else
			x->capture = name_in(name, list_top_fields);
	} else if (x->depth == 3 && c->sec == SEC_CONTENTS) {
		x->capture = name_in(name, list_obj_fields);
	} else if (x->depth == 3 && c->sec == SEC_PREFIXES) {
		x->capture = strcmp(name, "Prefix") == 0;
	}
	return 0;
}

/* An optional string: empty means absent (never send an empty If-Match). */
static int set_opt_str(char **dst, const char *text, size_t len)
{
	if (*dst)
		return -EBADMSG;
	return len ? set_str(dst, text, len) : 0;
}

static int list_mtime(struct list_ctx *c, const char *text, size_t len)
{
	char tmp[64];

	text = trim(text, &len);
	if (len == 0 || len >= sizeof(tmp))
		return -EBADMSG;
	memcpy(tmp, text, len);
	tmp[len] = '\0';
	if (s3xml_parse_time(tmp, &c->cur.mtime, &c->cur.mtime_nsec))
		return -EBADMSG;
	return 0;
}

static int list_obj_field(struct list_ctx *c, const char *name,
			  const char *text, size_t len)
{
	if (strcmp(name, "Key") == 0)
		return set_str(&c->cur.key, text, len);
	if (strcmp(name, "Size") == 0) {
		if (c->have_size)
			return -EBADMSG;
		c->have_size = true;
		return parse_u64(text, len, &c->cur.size);
	}
	if (strcmp(name, "LastModified") == 0)
		return list_mtime(c, text, len);
	if (strcmp(name, "ETag") == 0)
		return set_opt_str(&c->cur.etag, text, len);
	return set_opt_str(&c->cur.storage_class, text, len);
}

static int list_top_field(struct list_ctx *c, const char *name,
			  const char *text, size_t len)
{
	if (strcmp(name, "NextContinuationToken") == 0)
		return set_opt_str(&c->res.next_token, text, len);
	if (strcmp(name, "KeyCount") == 0) {
		c->res.has_key_count = true;
		return parse_u64(text, len, &c->res.key_count);
	}
	if (strcmp(name, "IsTruncated") == 0) {
		if (c->have_truncated)
			return -EBADMSG;
		c->have_truncated = true;
		c->res.truncated = text_is(text, len, "true");
		return c->res.truncated || text_is(text, len, "false")
			   ? 0
			   : -EBADMSG;
	}
	/* EncodingType */
	if (text_is(text, len, "url"))
		c->res.url_encoded = true;
	else if (!text_is(text, len, ""))
		return -EBADMSG;
	return 0;
}

static void object_release(struct s3xml_object *o)
{
	free(o->key);
	free(o->etag);
	free(o->storage_class);
	memset(o, 0, sizeof(*o));
}

static int list_push_object(struct list_ctx *c)
{
	int rc;

	if (!c->cur.key || !c->cur.key[0] || !c->have_size)
		return -EBADMSG;
	if (c->nentries >= S3XML_MAX_ENTRIES)
		return -E2BIG;
	rc = buf_append(&c->objs, &c->cur, sizeof(c->cur));
	if (rc)
		return rc;
	/* The array owns the strings now. */
	memset(&c->cur, 0, sizeof(c->cur));
	c->have_size = false;
	c->nentries++;
	return 0;
}

static int list_push_prefix(struct list_ctx *c)
{
	int rc;

	if (!c->prefix || !c->prefix[0])
		return -EBADMSG;
	if (c->nentries >= S3XML_MAX_ENTRIES)
		return -E2BIG;
	rc = buf_append(&c->prefixes, &c->prefix, sizeof(c->prefix));
	if (rc)
		return rc;
	c->prefix = NULL;
	c->nentries++;
	return 0;
}

static int list_end(struct xp *x, const char *name, const char *text,
		    size_t len)
{
	struct list_ctx *c = x->arg;
	int rc = 0;

	if (x->depth == 3 && text && c->sec == SEC_CONTENTS)
		return list_obj_field(c, name, text, len);
	if (x->depth == 3 && text && c->sec == SEC_PREFIXES)
		return set_str(&c->prefix, text, len);
	if (x->depth != 2)
		return 0;
	if (c->sec == SEC_CONTENTS)
		rc = list_push_object(c);
	else if (c->sec == SEC_PREFIXES)
		rc = list_push_prefix(c);
	else if (text)
		rc = list_top_field(c, name, text, len);
	c->sec = SEC_NONE;
	return rc;
}

/* Moves the arrays into c->res and decodes them. */
static int list_finish(struct list_ctx *c)
{
	struct s3xml_list *r = &c->res;
	size_t n;
	int rc;

	if (r->truncated && !r->next_token)
		return -EBADMSG;
	if (!r->truncated) {
		free(r->next_token);
		r->next_token = NULL;
	}
	/* buf memory comes from realloc(): aligned for any type. */
	if (c->objs.len) {
		r->objects = (struct s3xml_object *)buf_detach(&c->objs, &n);
		if (!r->objects)
			return -ENOMEM;
		r->nobjects = n / sizeof(*r->objects);
	}
	if (c->prefixes.len) {
		r->prefixes = (char **)buf_detach(&c->prefixes, &n);
		if (!r->prefixes)
			return -ENOMEM;
		r->nprefixes = n / sizeof(*r->prefixes);
	}
	if (!r->url_encoded)
		return 0;
	for (size_t i = 0; i < r->nobjects; i++)
		if ((rc = url_decode(r->objects[i].key)))
			return rc;
	for (size_t i = 0; i < r->nprefixes; i++)
		if ((rc = url_decode(r->prefixes[i])))
			return rc;
	return 0;
}

static void list_ctx_release(struct list_ctx *c)
{
	struct s3xml_object *objs = (struct s3xml_object *)c->objs.data;
	char **prefixes = (char **)c->prefixes.data;

	for (size_t i = 0; i < c->objs.len / sizeof(*objs); i++)
		object_release(&objs[i]);
	for (size_t i = 0; i < c->prefixes.len / sizeof(*prefixes); i++)
		free(prefixes[i]);
	buf_release(&c->objs);
	buf_release(&c->prefixes);
	object_release(&c->cur);
	free(c->prefix);
	s3xml_list_release(&c->res);
}

int s3xml_parse_list(const char *body, size_t len, struct s3xml_list *out)
{
	struct list_ctx c;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	buf_init(&c.objs, S3XML_MAX_ENTRIES * sizeof(struct s3xml_object));
	buf_init(&c.prefixes, S3XML_MAX_ENTRIES * sizeof(char *));
	rc =
	    xp_run(body, len, list_start, list_end, &c, S3XML_MAX_VALUE, false);
	if (!rc)
		rc = list_finish(&c);
	if (!rc) {
		*out = c.res;
		memset(&c.res, 0, sizeof(c.res));
	}
	list_ctx_release(&c);
	return rc;
}

void s3xml_list_release(struct s3xml_list *l)
{
	for (size_t i = 0; i < l->nobjects; i++)
		object_release(&l->objects[i]);
	for (size_t i = 0; i < l->nprefixes; i++)
		free(l->prefixes[i]);
	free(l->objects);
	free(l->prefixes);
	free(l->next_token);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------------ */
/* Error bodies                                                        */

struct err_field {
	const char *name;
	size_t off;
	size_t size;
};

#define ERR_FIELD(n, f)                                                        \
	{                                                                      \
		n, offsetof(struct s3xml_error, f),                            \
		    sizeof(((struct s3xml_error *)0)->f)                       \
	}

static const struct err_field err_fields[] = {
    ERR_FIELD("Code", code),	     ERR_FIELD("Message", message),
    ERR_FIELD("Resource", resource), ERR_FIELD("RequestId", request_id),
    ERR_FIELD("HostId", host_id),    ERR_FIELD("Region", region),
    ERR_FIELD("Endpoint", endpoint),
};

struct err_ctx {
	struct s3xml_error *out;
	int depth; /* depth of the <Error> element being read, 0 outside */
	bool found;
};

static const struct err_field *err_field_find(const char *name)
{
	for (size_t i = 0; i < sizeof(err_fields) / sizeof(err_fields[0]); i++)
		if (strcmp(name, err_fields[i].name) == 0)
			return &err_fields[i];
	return NULL;
}

/*
 * Copies at most SIZE - 1 bytes, cut at a UTF-8 character boundary, with
 * control characters made spaces so that the value is one safe log line.
 */
static void copy_field(char *dst, size_t size, const char *text, size_t len)
{
	size_t n = len < size - 1 ? len : size - 1;

	/* A continuation byte at the cut: back off to its lead byte. */
	if (n < len)
		while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)text[i];

		dst[i] = (char)(ch < 0x20 || ch == 0x7F ? ' ' : ch);
	}
	dst[n] = '\0';
}

static int err_start(struct xp *x, const char *name)
{
	struct err_ctx *c = x->arg;

	if (!c->found && x->depth <= 2 && strcmp(name, "Error") == 0) {
		c->found = true;
		c->depth = x->depth;
	} else if (c->depth && x->depth == c->depth + 1) {
		x->capture = err_field_find(name) != NULL;
	}
	return 0;
}

static int err_end(struct xp *x, const char *name, const char *text, size_t len)
{
	struct err_ctx *c = x->arg;
	const struct err_field *f;

	if (c->depth && x->depth == c->depth) {
		c->depth = 0;
	} else if (text && (f = err_field_find(name))) {
		copy_field((char *)c->out + f->off, f->size, text, len);
	}
	return 0;
}

int s3xml_parse_error(const char *body, size_t len, struct s3xml_error *out)
{
	struct err_ctx c = {.out = out};
	int rc;

	memset(out, 0, sizeof(*out));
	rc = xp_run(body, len, err_start, err_end, &c, S3XML_MAX_VALUE, true);
	if (!rc && !c.found)
		rc = -EBADMSG;
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ------------------------------------------------------------------ */
/* Multipart upload results                                            */

struct one_ctx {
	const char *root;  /* expected root element */
	const char *field; /* its child whose text is wanted */
	char *value;	   /* owned until handed over */
};

static int one_start(struct xp *x, const char *name)
{
	struct one_ctx *c = x->arg;

	if (x->depth == 1)
		return root_check(name, c->root);
	x->capture = x->depth == 2 && strcmp(name, c->field) == 0;
	return 0;
}

static int one_end(struct xp *x, const char *name, const char *text, size_t len)
{
	struct one_ctx *c = x->arg;

	(void)name;
	return text ? set_str(&c->value, text, len) : 0;
}

static int parse_one(const char *body, size_t len, const char *root,
		     const char *field, char **out)
{
	struct one_ctx c = {.root = root, .field = field};
	int rc;

	rc = xp_run(body, len, one_start, one_end, &c, S3XML_MAX_VALUE, false);
	if (!rc && (!c.value || !c.value[0]))
		rc = -EBADMSG;
	if (rc) {
		free(c.value);
		return rc;
	}
	*out = c.value;
	return 0;
}

int s3xml_parse_upload_id(const char *body, size_t len, char **upload_id)
{
	return parse_one(body, len, "InitiateMultipartUploadResult", "UploadId",
			 upload_id);
}

int s3xml_parse_complete(const char *body, size_t len, char **etag)
{
	return parse_one(body, len, "CompleteMultipartUploadResult", "ETag",
			 etag);
}

static int check_parts(const struct s3xml_part *parts, size_t n)
{
	uint32_t prev = 0;

	if (n == 0 || n > S3XML_MAX_PARTS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const char *e = parts[i].etag;

		if (parts[i].number <= prev ||
		    parts[i].number > S3XML_MAX_PARTS || !e || !e[0])
			return -EINVAL;
		for (; *e; e++)
			if ((unsigned char)*e < 0x20 || *e == 0x7F)
				return -EINVAL;
		prev = parts[i].number;
	}
	return 0;
}

/* Appends S with the characters that matter in element content escaped. */
static int xml_escape(struct buf *out, const char *s)
{
	int rc = 0;

	for (; *s && !rc; s++) {
		if (*s == '&')
			rc = buf_append_str(out, "&amp;");
		else if (*s == '<')
			rc = buf_append_str(out, "&lt;");
		else if (*s == '>')
			rc = buf_append_str(out, "&gt;");
		else
			rc = buf_append(out, s, 1);
	}
	return rc;
}

int s3xml_build_complete(const struct s3xml_part *parts, size_t n,
			 struct buf *out)
{
	int rc = check_parts(parts, n);

	if (rc)
		return rc;
	rc = buf_append_str(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				 "<CompleteMultipartUpload xmlns=\"http://s3."
				 "amazonaws.com/doc/2006-03-01/\">");
	for (size_t i = 0; i < n && !rc; i++) {
		rc = buf_printf(out, "<Part><PartNumber>%u</PartNumber><ETag>",
				(unsigned)parts[i].number);
		if (!rc)
			rc = xml_escape(out, parts[i].etag);
		if (!rc)
			rc = buf_append_str(out, "</ETag></Part>");
	}
	if (!rc)
		rc = buf_append_str(out, "</CompleteMultipartUpload>");
	return rc;
}

/* ------------------------------------------------------------------ */
/* Times                                                               */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int y, int m)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : mdays[m - 1];
}

/* N decimal digits at S into *OUT; false if any is not a digit. */
static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* "YYYY-MM-DDTHH:MM:SS" into F[6]; checks the ranges. */
static bool parse_datetime(const char *s, int f[6])
{
	if (!digits(s, 4, &f[0]) || s[4] != '-' || !digits(s + 5, 2, &f[1]) ||
	    s[7] != '-' || !digits(s + 8, 2, &f[2]) ||
	    (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &f[3]) ||
	    s[13] != ':' || !digits(s + 14, 2, &f[4]) || s[16] != ':' ||
	    !digits(s + 17, 2, &f[5]))
		return false;
	return f[1] >= 1 && f[1] <= 12 && f[2] >= 1 &&
	       f[2] <= days_in_month(f[0], f[1]) && f[3] <= 23 && f[4] <= 59 &&
	       f[5] <= 60;
}

/* ".fraction" at *P (optional) into nanoseconds; advances *P. */
static bool parse_fraction(const char **p, uint32_t *ns)
{
	const char *s = *p;
	uint32_t scale = 100000000;

	*ns = 0;
	if (*s != '.')
		return true;
	if (s[1] < '0' || s[1] > '9')
		return false;
	for (s++; *s >= '0' && *s <= '9'; s++) {
		*ns += (uint32_t)(*s - '0') * scale;
		scale /= 10;
	}
	*p = s;
	return true;
}

/* "Z", "+HH:MM" or "-HH:MM" at S, the whole rest of the string. */
static bool parse_zone(const char *s, int64_t *off)
{
	int h, m;

	*off = 0;
	if ((s[0] == 'Z' || s[0] == 'z') && s[1] == '\0')
		return true;
	if ((s[0] != '+' && s[0] != '-') || !digits(s + 1, 2, &h) ||
	    s[3] != ':' || !digits(s + 4, 2, &m) || s[6] != '\0' || h > 23 ||
	    m > 59)
		return false;
	*off = (s[0] == '-' ? -1 : 1) * (int64_t)(h * 3600 + m * 60);
	return true;
}

int s3xml_parse_time(const char *s, int64_t *sec, uint32_t *nsec)
{
	const char *p = s + 19;
	int f[6];
	uint32_t ns;
	int64_t off;

	if (strnlen(s, 19) < 19 || !parse_datetime(s, f) ||
	    !parse_fraction(&p, &ns) || !parse_zone(p, &off))
		return -EINVAL;
	*sec = days_from_civil(f[0], f[1], f[2]) * 86400 +
	       (int64_t)(f[3] * 3600 + f[4] * 60 + f[5]) - off;
	if (nsec)
		*nsec = ns;
	return 0;
}

int s3xml_format_time(int64_t t, char *out, size_t outlen)
{
	const int64_t lo = days_from_civil(0, 1, 1) * 86400;
	const int64_t hi = days_from_civil(10000, 1, 1) * 86400;
	int64_t days, rem, y;
	int m, d;

	if (t < lo || t >= hi)
		return -EOVERFLOW;
	if (outlen < S3XML_TIME_LEN)
		return -ERANGE;
	days = t / 86400;
	rem = t % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, m, d,
		 (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
	return 0;
}
