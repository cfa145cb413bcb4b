// SPDX-License-Identifier: MIT
/*
 * A bounded recursive-descent JSON reader that flattens a document into
 * (path, scalar) items (see jsonflat.h). The recursion is bounded by
 * JSONFLAT_MAX_DEPTH, the items by JSONFLAT_MAX_ITEMS, and every loop
 * advances through the input, which is at most JSONFLAT_MAX_INPUT bytes,
 * so no input can make it run long or use much memory.
 *
 * Invariant: while a value is parsed, path[0..plen) is that value's path.
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "jsonflat.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *start, *p, *end;
	struct jsonflat *out;
	size_t alloc; /* items allocated in out->items */
	int depth;
	size_t plen;
	char path[JSONFLAT_MAX_PATH];
	char *msg;
	size_t msglen;
};

static int parse_value(struct parser *ps);

__attribute__((format(printf, 3, 4))) static int
fail(struct parser *ps, int err, const char *fmt, ...)
{
	char text[160];
	va_list ap;

	if (!ps->msg || ps->msglen == 0)
		return err;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	snprintf(ps->msg, ps->msglen, "byte %zu: %s",
		 (size_t)(ps->p - ps->start), text);
	return err;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
				   *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* Expects character C (after whitespace) and steps over it. */
static int expect(struct parser *ps, char c)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, -EINVAL, "expected '%c', found the end", c);
	if (*ps->p != c)
		return fail(ps, -EINVAL, "expected '%c'", c);
	ps->p++;
	return 0;
}

static int add_item(struct parser *ps, enum jsonflat_type type, char *text)
{
	struct jsonflat *j = ps->out;
	struct jsonflat_item *it;

	if (j->n >= JSONFLAT_MAX_ITEMS) {
		free(text);
		return fail(ps, -E2BIG, "more than %u values",
			    JSONFLAT_MAX_ITEMS);
	}
	if (j->n == ps->alloc) {
		size_t na = ps->alloc ? ps->alloc * 2 : 32;

		it = realloc(j->items, na * sizeof(*it));
		if (!it) {
			free(text);
			return -ENOMEM;
		}
		j->items = it;
		ps->alloc = na;
	}
	it = &j->items[j->n];
	it->path = strndup(ps->path, ps->plen);
	if (!it->path) {
		free(text);
		return -ENOMEM;
	}
	it->type = type;
	it->text = text;
	j->n++;
	return 0;
}

/* Appends '.' (unless at the root) and KEY, or "[I]", to the path. */
static int path_push(struct parser *ps, const char *key, size_t i)
{
	size_t room = sizeof(ps->path) - ps->plen;
	int n;

	if (key)
		n = snprintf(ps->path + ps->plen, room, "%s%s",
			     ps->plen ? "." : "", key);
	else
		n = snprintf(ps->path + ps->plen, room, "[%zu]", i);
	if (n < 0 || (size_t)n >= room) {
		ps->path[ps->plen] = '\0';
		return fail(ps, -E2BIG, "a path longer than %u bytes",
			    JSONFLAT_MAX_PATH - 1);
	}
	ps->plen += (size_t)n;
	return 0;
}

/* ---- strings ---- */

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Length of the valid UTF-8 sequence at S (at most N bytes), or 0 when
 * it is not one (overlong forms, surrogates and values past U+10FFFF
 * are not).
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned cp, min;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1fu, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0fu, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07u, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Decodes \uXXXX (and its low surrogate) at ps->p (after the 'u'). */
static int unicode_escape(struct parser *ps, char *o, size_t *olen)
{
	unsigned cp, lo;

	if (ps->end - ps->p < 4 || hex4(ps->p, &cp) < 0)
		return fail(ps, -EINVAL, "bad \\u escape");
	ps->p += 4;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(ps, -EINVAL, "lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->end - ps->p < 6 || ps->p[0] != '\\' ||
		    ps->p[1] != 'u' || hex4(ps->p + 2, &lo) < 0 ||
		    lo < 0xdc00 || lo > 0xdfff)
			return fail(ps, -EINVAL, "lone high surrogate");
		ps->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return fail(ps, -EINVAL, "\\u0000 in a string");
	*olen += put_utf8(o + *olen, cp);
	return 0;
}

static int simple_escape(char c, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *f = c ? strchr(from, c) : NULL;

	if (!f)
		return -EINVAL;
	*out = to[f - from];
	return 0;
}

/* The escape at ps->p (just after the backslash). */
static int escape(struct parser *ps, char *o, size_t *olen)
{
	char c;

	if (ps->p >= ps->end)
		return fail(ps, -EINVAL, "unterminated string");
	c = *ps->p++;
	if (c == 'u')
		return unicode_escape(ps, o, olen);
	if (simple_escape(c, &o[*olen]) < 0) {
		ps->p--;
		return fail(ps, -EINVAL, "bad escape");
	}
	(*olen)++;
	return 0;
}

/* Bytes from P to the closing quote (or END) of a string's body. */
static size_t raw_len(const char *p, const char *end)
{
	const char *s = p;

	while (p < end && *p != '"')
		p += *p == '\\' && p + 1 < end ? 2 : 1;
	return (size_t)(p - s);
}

/*
 * Parses the string at ps->p (its opening quote) into *OUT (caller
 * frees). The decoded form is never longer than the raw one: an escape
 * of 2, 6 or 12 bytes yields at most 1, 3 or 4.
 */
static int parse_string(struct parser *ps, char **out)
{
	size_t olen = 0, n;
	char *o;
	int rc;

	*out = NULL;
	ps->p++;
	o = malloc(raw_len(ps->p, ps->end) + 1);
	if (!o)
		return -ENOMEM;
	for (;;) {
		if (ps->p >= ps->end) {
			rc = fail(ps, -EINVAL, "unterminated string");
			goto out_free;
		}
		unsigned char c = (unsigned char)*ps->p;

		if (c == '"')
			break;
		if (c < 0x20) {
			rc = fail(ps, -EINVAL, "control character in a string");
			goto out_free;
		}
		if (c == '\\') {
			ps->p++;
			rc = escape(ps, o, &olen);
			if (rc < 0)
				goto out_free;
			continue;
		}
		n = utf8_len((const unsigned char *)ps->p,
			     (size_t)(ps->end - ps->p));
		if (n == 0) {
			rc = fail(ps, -EINVAL, "invalid UTF-8");
			goto out_free;
		}
		memcpy(o + olen, ps->p, n);
		olen += n;
		ps->p += n;
	}
	ps->p++;
	o[olen] = '\0';
	*out = o;
	return 0;
out_free:
	free(o);
	return rc;
}

/* ---- numbers, literals ---- */

static size_t digits(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && p[n] >= '0' && p[n] <= '9')
		n++;
	return n;
}

/* Steps over the number at ps->p; 0 or -EINVAL. */
static int scan_number(struct parser *ps)
{
	size_t n;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	n = digits(ps->p, ps->end);
	if (n == 0 || (ps->p[0] == '0' && n > 1))
		return fail(ps, -EINVAL, "bad number");
	ps->p += n;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		n = digits(ps->p, ps->end);
		if (n == 0)
			return fail(ps, -EINVAL, "bad number");
		ps->p += n;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		n = digits(ps->p, ps->end);
		if (n == 0)
			return fail(ps, -EINVAL, "bad number");
		ps->p += n;
	}
	return 0;
}

static int parse_number(struct parser *ps)
{
	const char *s = ps->p;
	char *text;
	int rc = scan_number(ps);

	if (rc < 0)
		return rc;
	text = strndup(s, (size_t)(ps->p - s));
	if (!text)
		return -ENOMEM;
	return add_item(ps, JSONFLAT_NUMBER, text);
}

static int parse_literal(struct parser *ps)
{
	static const char *const words[] = {"true", "false", "null"};

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);
		char *text;

		if ((size_t)(ps->end - ps->p) < n ||
		    memcmp(ps->p, words[i], n) != 0)
			continue;
		ps->p += n;
		text = strdup(words[i]);
		if (!text)
			return -ENOMEM;
		return add_item(ps, i < 2 ? JSONFLAT_BOOL : JSONFLAT_NULL,
				text);
	}
	return fail(ps, -EINVAL, "unexpected character");
}

/* ---- containers ---- */

/* After a member or element: ',' (returns 1) or CLOSE (returns 0). */
static int next_or_close(struct parser *ps, char close)
{
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ',') {
		ps->p++;
		return 1;
	}
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	return fail(ps, -EINVAL, "expected ',' or '%c'%s", close,
		    ps->p < ps->end ? "" : ", found the end");
}

static int object_member(struct parser *ps)
{
	size_t plen = ps->plen;
	char *key;
	int rc;

	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != '"')
		return fail(ps, -EINVAL, "expected a key");
	rc = parse_string(ps, &key);
	if (rc < 0)
		return rc;
	rc = path_push(ps, key, 0);
	free(key);
	if (rc == 0)
		rc = expect(ps, ':');
	if (rc == 0)
		rc = parse_value(ps);
	ps->plen = plen;
	ps->path[plen] = '\0';
	return rc;
}

static int parse_object(struct parser *ps)
{
	int rc;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	do {
		rc = object_member(ps);
		if (rc < 0)
			return rc;
		rc = next_or_close(ps, '}');
	} while (rc == 1);
	return rc;
}

static int parse_array(struct parser *ps)
{
	size_t plen = ps->plen, i = 0;
	int rc;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	do {
		rc = path_push(ps, NULL, i++);
		if (rc == 0)
			rc = parse_value(ps);
		ps->plen = plen;
		ps->path[plen] = '\0';
		if (rc < 0)
			return rc;
		rc = next_or_close(ps, ']');
	} while (rc == 1);
	return rc;
}

static int parse_container(struct parser *ps)
{
	int rc;

	if (ps->depth >= JSONFLAT_MAX_DEPTH)
		return fail(ps, -E2BIG, "nested deeper than %d",
			    JSONFLAT_MAX_DEPTH);
	ps->depth++;
	rc = *ps->p == '{' ? parse_object(ps) : parse_array(ps);
	ps->depth--;
	return rc;
}

static int parse_value(struct parser *ps)
{
	char *text;
	int rc;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, -EINVAL, "expected a value, found the end");
	switch (*ps->p) {
	case '{':
	case '[':
		return parse_container(ps);
	case '"':
		rc = parse_string(ps, &text);
		return rc < 0 ? rc : add_item(ps, JSONFLAT_STRING, text);
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
		return parse_literal(ps);
	}
}

int jsonflat_parse(const char *text, size_t len, struct jsonflat *out,
		   char *msg, size_t msglen)
{
	struct parser ps = {
	    .start = text,
	    .p = text,
	    .end = text + len,
	    .out = out,
	    .msg = msg,
	    .msglen = msglen,
	};
	int rc;

	out->items = NULL;
	out->n = 0;
	if (msg && msglen)
		msg[0] = '\0';
	if (len > JSONFLAT_MAX_INPUT) {
		if (msg && msglen)
			snprintf(msg, msglen, "larger than %u bytes",
				 JSONFLAT_MAX_INPUT);
		return -E2BIG;
	}
	rc = parse_value(&ps);
	if (rc == 0) {
		skip_ws(&ps);
		if (ps.p < ps.end)
			rc = fail(&ps, -EINVAL, "data after the value");
	}
	if (rc == -ENOMEM && msg && msglen)
		snprintf(msg, msglen, "out of memory");
	if (rc < 0)
		jsonflat_release(out);
	return rc;
}

void jsonflat_release(struct jsonflat *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->items[i].path);
		free(j->items[i].text);
	}
	free(j->items);
	j->items = NULL;
	j->n = 0;
}

const struct jsonflat_item *jsonflat_get(const struct jsonflat *j,
					 const char *path)
{
	for (size_t i = 0; i < j->n; i++)
		if (strcmp(j->items[i].path, path) == 0)
			return &j->items[i];
	return NULL;
}

int jsonflat_u64(const struct jsonflat *j, const char *path, uint64_t *out)
{
	const struct jsonflat_item *it = jsonflat_get(j, path);
	uint64_t v = 0;

	if (!it || it->type == JSONFLAT_NULL)
		return -ENOENT;
	if (it->type != JSONFLAT_NUMBER || it->text[0] == '\0' ||
	    it->text[strspn(it->text, "0123456789")] != '\0')
		return -EINVAL;
	for (const char *p = it->text; *p; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int jsonflat_double(const struct jsonflat *j, const char *path, double *out)
{
	const struct jsonflat_item *it = jsonflat_get(j, path);
	char *end;
	double v;

	if (!it || it->type == JSONFLAT_NULL)
		return -ENOENT;
	if (it->type != JSONFLAT_NUMBER)
		return -EINVAL;
	errno = 0;
	v = strtod(it->text, &end);
	if (*end != '\0')
		return -EINVAL;
	if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
		return -ERANGE;
	*out = v;
	return 0;
}
