// SPDX-License-Identifier: MIT
/*
 * jsonflat: documents that flatten to known items, documents that must be
 * rejected (with the errno and the offset in the message), the limits,
 * and the typed getters.
 */
#include "jsonflat.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct good_case {
	const char *in;
	/* The items, as "path=T:text" joined by '|' (T: n b # s). */
	const char *want;
};

static const struct good_case good[] = {
    {"{}", ""},
    {"[]", ""},
    {" \t\r\n{ } \n", ""},
    {"1", "=#:1"},
    {"\"x\"", "=s:x"},
    {"null", "=n:null"},
    {"{\"a\": 1}", "a=#:1"},
    {"{\"a\":{\"b\":1,\"c\":[true,\"x\"]},\"d\":null,\"e\":{}}",
     "a.b=#:1|a.c[0]=b:true|a.c[1]=s:x|d=n:null"},
    {"[[1,2],[3]]", "[0][0]=#:1|[0][1]=#:2|[1][0]=#:3"},
    {"{\"a\":[{\"b\":false}]}", "a[0].b=b:false"},
    {"{\"n\": -0.5e+10}", "n=#:-0.5e+10"},
    {"{\"n\": 0}", "n=#:0"},
    {"{\"n\": 12.25E-3}", "n=#:12.25E-3"},
    {"{\"s\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"}", "s=s:a\"b\\c/d\b\f\n\r\t"},
    {"{\"s\": \"\\u00e9\\u20AC\\ud83d\\ude00\"}",
     "s=s:\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
    {"{\"s\": \"\xc3\xa9\xf0\x9f\x98\x80\"}", "s=s:\xc3\xa9\xf0\x9f\x98\x80"},
    {"{\"\": 1}", "=#:1"},
    {"{\"a\": 1, \"a\": 2}", "a=#:1|a=#:2"},
};

struct bad_case {
	const char *in;
	int rc;
	const char *msg; /* the message starts with this */
};

static const struct bad_case bad[] = {
    {"", -EINVAL, "byte 0: expected a value"},
    {"   ", -EINVAL, "byte 3: expected a value"},
    {"{", -EINVAL, "byte 1: expected a key"},
    {"{\"a\"", -EINVAL, "byte 4: expected ':'"},
    {"{\"a\":", -EINVAL, "byte 5: expected a value"},
    {"{\"a\":1", -EINVAL, "byte 6: expected ',' or '}', found the end"},
    {"{\"a\":1,}", -EINVAL, "byte 7: expected a key"},
    {"[1,]", -EINVAL, "byte 3: unexpected character"},
    {"[1 2]", -EINVAL, "byte 3: expected ',' or ']'"},
    {"{a:1}", -EINVAL, "byte 1: expected a key"},
    {"{'a':1}", -EINVAL, "byte 1: expected a key"},
    {"{\"a\":1}x", -EINVAL, "byte 7: data after the value"},
    {"{} {}", -EINVAL, "byte 3: data after the value"},
    {"01", -EINVAL, "byte 0: bad number"},
    {"-", -EINVAL, "byte 1: bad number"},
    {"1.", -EINVAL, "byte 2: bad number"},
    {".5", -EINVAL, "byte 0: unexpected character"},
    {"1e", -EINVAL, "byte 2: bad number"},
    {"+1", -EINVAL, "byte 0: unexpected character"},
    {"NaN", -EINVAL, "byte 0: unexpected character"},
    {"Infinity", -EINVAL, "byte 0: unexpected character"},
    {"tru", -EINVAL, "byte 0: unexpected character"},
    {"nul", -EINVAL, "byte 0: unexpected character"},
    {"\"abc", -EINVAL, "byte 4: unterminated string"},
    {"\"a\\", -EINVAL, "byte 3: unterminated string"},
    {"\"\\x\"", -EINVAL, "byte 2: bad escape"},
    {"\"\\u12\"", -EINVAL, "byte 3: bad \\u escape"},
    {"\"\\u0000\"", -EINVAL, "byte 7: \\u0000 in a string"},
    {"\"\\ud800\"", -EINVAL, "byte 7: lone high surrogate"},
    {"\"\\ud800\\u0041\"", -EINVAL, "byte 7: lone high surrogate"},
    {"\"\\udc00\"", -EINVAL, "byte 7: lone low surrogate"},
    {"\"a\tb\"", -EINVAL, "byte 2: control character"},
    {"\"\xc3\"", -EINVAL, "byte 1: invalid UTF-8"},
    {"\"\xc0\xaf\"", -EINVAL, "byte 1: invalid UTF-8"},		/* overlong */
    {"\"\xed\xa0\x80\"", -EINVAL, "byte 1: invalid UTF-8"},	/* surrogate */
    {"\"\xf4\x90\x80\x80\"", -EINVAL, "byte 1: invalid UTF-8"}, /* > 10FFFF */
    {"\"\xff\"", -EINVAL, "byte 1: invalid UTF-8"},
    {"\xef\xbb\xbf{}", -EINVAL, "byte 0: unexpected character"}, /* BOM */
    {"{\"a\":1 /* c */}", -EINVAL, "byte 7: expected ',' or '}'"},
};

/* Renders J's items the way good_case.want spells them. */
static void render(const struct jsonflat *j, char *out, size_t len)
{
	static const char types[] = "nb#s";
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < j->n && o < len; i++)
		o +=
		    (size_t)snprintf(out + o, len - o, "%s%s=%c:%s",
				     i ? "|" : "", j->items[i].path,
				     types[j->items[i].type], j->items[i].text);
}

static void test_good(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		struct jsonflat j;
		char got[512], msg[128];
		int rc = jsonflat_parse(good[i].in, strlen(good[i].in), &j, msg,
					sizeof(msg));

		CHECK_INT(rc, 0);
		if (rc)
			fprintf(stderr, "  input %s: %s\n", good[i].in, msg);
		render(&j, got, sizeof(got));
		CHECK_STR(got, good[i].want);
		jsonflat_release(&j);
	}
}

static void test_bad(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct jsonflat j;
		char msg[128];
		int rc = jsonflat_parse(bad[i].in, strlen(bad[i].in), &j, msg,
					sizeof(msg));

		CHECK_INT(rc, bad[i].rc);
		CHECK_INT(j.n, 0);
		CHECK(j.items == NULL);
		if (strncmp(msg, bad[i].msg, strlen(bad[i].msg)) != 0) {
			CHECK_STR(msg, bad[i].msg);
			fprintf(stderr, "  input: %s\n", bad[i].in);
		}
		jsonflat_release(&j); /* harmless after a failure */
	}
	/* Bytes after a NUL still count: LEN, not the C string, is the
	 * input. */
	{
		struct jsonflat j;

		CHECK_INT(jsonflat_parse("{}\0{}", 5, &j, NULL, 0), -EINVAL);
		CHECK_INT(jsonflat_parse("{\"a\":1}", 4, &j, NULL, 0), -EINVAL);
	}
}

/* A string of N copies of A, then N copies of B. */
static char *nest(size_t n, char a, char b)
{
	char *s = malloc(2 * n + 1);

	memset(s, a, n);
	memset(s + n, b, n);
	s[2 * n] = '\0';
	return s;
}

static void test_limits(void)
{
	struct jsonflat j;
	char msg[128], *s;
	size_t len;
	int rc;

	s = nest(JSONFLAT_MAX_DEPTH, '[', ']');
	CHECK_INT(jsonflat_parse(s, strlen(s), &j, msg, sizeof(msg)), 0);
	jsonflat_release(&j);
	free(s);
	s = nest(JSONFLAT_MAX_DEPTH + 1, '[', ']');
	CHECK_INT(jsonflat_parse(s, strlen(s), &j, msg, sizeof(msg)), -E2BIG);
	CHECK_STR(msg, "byte 32: nested deeper than 32");
	free(s);
	/* Deep enough to overflow a stack without the cap. */
	s = nest(200000, '[', ']');
	CHECK_INT(jsonflat_parse(s, strlen(s), &j, msg, sizeof(msg)), -E2BIG);
	free(s);

	/* Items: JSONFLAT_MAX_ITEMS fit, one more does not. */
	s = malloc(4 * JSONFLAT_MAX_ITEMS + 8);
	len = 0;
	s[len++] = '[';
	for (unsigned i = 0; i <= JSONFLAT_MAX_ITEMS; i++) {
		if (i)
			s[len++] = ',';
		s[len++] = '0';
	}
	s[len++] = ']';
	CHECK_INT(jsonflat_parse(s, len, &j, msg, sizeof(msg)), -E2BIG);
	CHECK_INT(j.n, 0);
	s[len - 3] = ']'; /* drop the last element */
	CHECK_INT(jsonflat_parse(s, len - 2, &j, msg, sizeof(msg)), 0);
	CHECK_INT(j.n, JSONFLAT_MAX_ITEMS);
	jsonflat_release(&j);
	free(s);

	/* Paths: a key of MAX_PATH - 1 bytes fits, one more does not. */
	for (size_t klen = JSONFLAT_MAX_PATH - 1; klen <= JSONFLAT_MAX_PATH;
	     klen++) {
		s = malloc(klen + 16);
		len = (size_t)snprintf(s, 16, "{\"");
		memset(s + len, 'k', klen);
		len += klen;
		len += (size_t)snprintf(s + len, 16, "\":1}");
		rc = jsonflat_parse(s, len, &j, msg, sizeof(msg));
		if (klen < JSONFLAT_MAX_PATH) {
			CHECK_INT(rc, 0);
			CHECK_INT(j.n == 1 ? strlen(j.items[0].path) : 0, klen);
		} else {
			CHECK_INT(rc, -E2BIG);
		}
		jsonflat_release(&j);
		free(s);
	}

	/* Input size. */
	len = JSONFLAT_MAX_INPUT + 1;
	s = malloc(len);
	memset(s, ' ', len);
	s[0] = '1';
	CHECK_INT(jsonflat_parse(s, len, &j, msg, sizeof(msg)), -E2BIG);
	CHECK_INT(jsonflat_parse(s, len - 1, &j, msg, sizeof(msg)), 0);
	jsonflat_release(&j);
	free(s);
}

static void test_getters(void)
{
	static const char doc[] =
	    "{\"u\": 18446744073709551615, \"big\": 18446744073709551616,"
	    " \"neg\": -1, \"f\": 2.5, \"e\": 1e3, \"s\": \"7\", \"t\": true,"
	    " \"z\": null, \"huge\": 1e999, \"o\": {\"x\": 0}}";
	struct jsonflat j;
	uint64_t u = 0;
	double d = 0;

	CHECK_INT(jsonflat_parse(doc, strlen(doc), &j, NULL, 0), 0);
	CHECK_INT(jsonflat_u64(&j, "u", &u), 0);
	CHECK(u == UINT64_MAX);
	CHECK_INT(jsonflat_u64(&j, "big", &u), -ERANGE);
	CHECK_INT(jsonflat_u64(&j, "neg", &u), -EINVAL);
	CHECK_INT(jsonflat_u64(&j, "f", &u), -EINVAL);
	CHECK_INT(jsonflat_u64(&j, "e", &u), -EINVAL);
	CHECK_INT(jsonflat_u64(&j, "s", &u), -EINVAL);
	CHECK_INT(jsonflat_u64(&j, "t", &u), -EINVAL);
	CHECK_INT(jsonflat_u64(&j, "z", &u), -ENOENT);
	CHECK_INT(jsonflat_u64(&j, "missing", &u), -ENOENT);
	CHECK_INT(jsonflat_u64(&j, "o", &u), -ENOENT);
	CHECK_INT(jsonflat_u64(&j, "o.x", &u), 0);
	CHECK(u == 0);
	CHECK_INT(jsonflat_double(&j, "f", &d), 0);
	CHECK(d == 2.5);
	CHECK_INT(jsonflat_double(&j, "e", &d), 0);
	CHECK(d == 1000);
	CHECK_INT(jsonflat_double(&j, "neg", &d), 0);
	CHECK(d == -1);
	CHECK_INT(jsonflat_double(&j, "huge", &d), -ERANGE);
	CHECK_INT(jsonflat_double(&j, "s", &d), -EINVAL);
	CHECK_INT(jsonflat_double(&j, "z", &d), -ENOENT);
	CHECK(jsonflat_get(&j, "t") &&
	      jsonflat_get(&j, "t")->type == JSONFLAT_BOOL);
	CHECK(jsonflat_get(&j, "o") == NULL);
	jsonflat_release(&j);
	CHECK_INT(j.n, 0);
	jsonflat_release(&j); /* twice is harmless */
}

int main(void)
{
	test_good();
	test_bad();
	test_limits();
	test_getters();
	return check_summary("test_jsonflat");
}
