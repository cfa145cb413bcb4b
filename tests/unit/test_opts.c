// SPDX-License-Identifier: MIT
/*
 * opts: sizes, integers, durations, s3:// URLs, bucket names, endpoint
 * URLs and byte ranges, each with a table of good and bad values.
 */
#include "opts.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct num_case {
	const char *s;
	int rc;
	uint64_t want;
};

static const struct num_case size_cases[] = {
    {"0", 0, 0},
    {"1", 0, 1},
    {"4096", 0, 4096},
    {"007", 0, 7},
    {"1b", 0, 1},
    {"1B", 0, 1},
    {"4K", 0, 4096},
    {"4k", 0, 4096},
    {"4KiB", 0, 4096},
    {"4kib", 0, 4096},
    {"4Ki", 0, 4096},
    {"4KB", 0, 4000},
    {"4kb", 0, 4000},
    {"64M", 0, 64ull << 20},
    {"64MiB", 0, 64ull << 20},
    {"64MB", 0, 64000000},
    {"2G", 0, 2ull << 30},
    {"2GiB", 0, 2ull << 30},
    {"1GB", 0, 1000000000},
    {"3T", 0, 3ull << 40},
    {"3TiB", 0, 3ull << 40},
    {"3TB", 0, 3000000000000ull},
    {"18446744073709551615", 0, UINT64_MAX},
    {"16777215T", 0, 16777215ull << 40},
    {"", -EINVAL, 0},
    {"K", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"+1", -EINVAL, 0},
    {" 1", -EINVAL, 0},
    {"1 ", -EINVAL, 0},
    {"1 K", -EINVAL, 0},
    {"1.5G", -EINVAL, 0},
    {"1X", -EINVAL, 0},
    {"1P", -EINVAL, 0},
    {"1KiBB", -EINVAL, 0},
    {"1iB", -EINVAL, 0},
    {"0x10", -EINVAL, 0},
    {"1e3", -EINVAL, 0},
    {"18446744073709551616", -ERANGE, 0},
    {"99999999999999999999999", -ERANGE, 0},
    {"16777216T", -ERANGE, 0},
    {"99999999999999999999999X", -EINVAL, 0},
};

static const struct num_case duration_cases[] = {
    {"0", 0, 0},
    {"90", 0, 90},
    {"90s", 0, 90},
    {"5m", 0, 300},
    {"5M", 0, 300},
    {"2h", 0, 7200},
    {"1d", 0, 86400},
    {"", -EINVAL, 0},
    {"s", -EINVAL, 0},
    {"5 ", -EINVAL, 0},
    {"5 s", -EINVAL, 0},
    {"5ms", -EINVAL, 0},
    {"5x", -EINVAL, 0},
    {"-5", -EINVAL, 0},
    {"1.5h", -EINVAL, 0},
    {"18446744073709551615", 0, UINT64_MAX},
    {"18446744073709551615m", -ERANGE, 0},
    {"99999999999999999999", -ERANGE, 0},
};

static void test_numbers(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(size_cases); i++) {
		const struct num_case *c = &size_cases[i];
		uint64_t v = 12345;
		int rc = opts_parse_size(c->s, &v);

		CHECK_INT(rc, c->rc);
		CHECK(rc ? v == 12345 : v == c->want);
		if (rc != c->rc || (!rc && v != c->want))
			fprintf(stderr, "  size: \"%s\"\n", c->s);
	}
	for (size_t i = 0; i < ARRAY_SIZE(duration_cases); i++) {
		const struct num_case *c = &duration_cases[i];
		uint64_t v = 12345;
		int rc = opts_parse_duration(c->s, &v);

		CHECK_INT(rc, c->rc);
		CHECK(rc ? v == 12345 : v == c->want);
		if (rc != c->rc || (!rc && v != c->want))
			fprintf(stderr, "  duration: \"%s\"\n", c->s);
	}
}

struct uint_case {
	const char *s;
	uint64_t min, max;
	int rc;
	uint64_t want;
};

static const struct uint_case uint_cases[] = {
    {"64", 1, 1024, 0, 64},
    {"1", 1, 1024, 0, 1},
    {"1024", 1, 1024, 0, 1024},
    {"0", 0, 0, 0, 0},
    {"18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX},
    {"0", 1, 1024, -ERANGE, 0},
    {"1025", 1, 1024, -ERANGE, 0},
    {"18446744073709551616", 0, UINT64_MAX, -ERANGE, 0},
    {"", 0, 10, -EINVAL, 0},
    {"-1", 0, 10, -EINVAL, 0},
    {"1k", 0, 10000, -EINVAL, 0},
    {" 1", 0, 10, -EINVAL, 0},
    {"1 ", 0, 10, -EINVAL, 0},
    {"0x1", 0, 10, -EINVAL, 0},
};

static void test_uint(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(uint_cases); i++) {
		const struct uint_case *c = &uint_cases[i];
		uint64_t v = 777;
		int rc = opts_parse_uint(c->s, c->min, c->max, &v);

		CHECK_INT(rc, c->rc);
		CHECK(rc ? v == 777 : v == c->want);
		if (rc != c->rc)
			fprintf(stderr, "  uint: \"%s\"\n", c->s);
	}
}

struct url_case {
	const char *s;
	int rc;
	const char *bucket;
	const char *prefix;
};

static const struct url_case url_cases[] = {
    {"s3://bucket", 0, "bucket", ""},
    {"s3://bucket/", 0, "bucket", ""},
    {"s3://bucket/prefix", 0, "bucket", "prefix"},
    {"s3://bucket/a/b/", 0, "bucket", "a/b/"},
    {"s3://bucket//a", 0, "bucket", "/a"},
    {"s3://my.bucket-1/x y?#", 0, "my.bucket-1", "x y?#"},
    {"S3://Legacy_Bucket/k", 0, "Legacy_Bucket", "k"},
    {"s3://abc", 0, "abc", ""},
    {"", -EINVAL, NULL, NULL},
    {"bucket/prefix", -EINVAL, NULL, NULL},
    {"s3:/bucket", -EINVAL, NULL, NULL},
    {"s3://", -EINVAL, NULL, NULL},
    {"s3:///prefix", -EINVAL, NULL, NULL},
    {"s3://ab", -EINVAL, NULL, NULL},
    {"s3://buck et", -EINVAL, NULL, NULL},
    {"s3://bucket?x", -EINVAL, NULL, NULL},
    {"s3://bucket#x", -EINVAL, NULL, NULL},
    {"s3://user@bucket", -EINVAL, NULL, NULL},
    {"s3://bucket:9000", -EINVAL, NULL, NULL},
    {"s3://b\xc3\xbc"
     "cket",
     -EINVAL, NULL, NULL},
    {"http://bucket/x", -EINVAL, NULL, NULL},
};

static void test_s3url(void)
{
	char long_name[300];

	for (size_t i = 0; i < ARRAY_SIZE(url_cases); i++) {
		const struct url_case *c = &url_cases[i];
		char *b = NULL, *p = NULL;
		int rc = opts_parse_s3url(c->s, &b, &p);

		CHECK_INT(rc, c->rc);
		if (rc != c->rc)
			fprintf(stderr, "  s3url: \"%s\"\n", c->s);
		if (!rc) {
			CHECK_STR(b, c->bucket);
			CHECK_STR(p, c->prefix);
		} else {
			CHECK(b == NULL && p == NULL);
		}
		free(b);
		free(p);
	}
	strcpy(long_name, "s3://");
	memset(long_name + 5, 'a', 256);
	long_name[5 + 256] = '\0';
	char *b = NULL, *p = NULL;
	CHECK_INT(opts_parse_s3url(long_name, &b, &p), -EINVAL);
	long_name[5 + 255] = '\0';
	CHECK_INT(opts_parse_s3url(long_name, &b, &p), 0);
	free(b);
	free(p);
}

static void test_bucket_virtual(void)
{
	static const char *const good[] = {"abc", "my-bucket", "a.b.c",
					   "bucket123", "1bucket"};
	static const char *const bad[] = {
	    "ab",
	    "My-Bucket",
	    "under_score",
	    "-abc",
	    "abc-",
	    ".abc",
	    "abc.",
	    "a..b",
	    "192.168.1.1",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK(opts_bucket_virtual_ok(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!opts_bucket_virtual_ok(bad[i]));
}

struct ep_case {
	const char *s;
	int rc;
	bool https;
	const char *host;
	unsigned port;
	const char *host_header;
	const char *path;
	const char *base_url;
	bool is_ip;
};

static const struct ep_case ep_cases[] = {
    {"http://127.0.0.1:9000", 0, false, "127.0.0.1", 9000, "127.0.0.1:9000", "",
     "http://127.0.0.1:9000", true},
    {"http://127.0.0.1:9000/", 0, false, "127.0.0.1", 9000, "127.0.0.1:9000",
     "", "http://127.0.0.1:9000", true},
    {"https://s3.amazonaws.com", 0, true, "s3.amazonaws.com", 443,
     "s3.amazonaws.com", "", "https://s3.amazonaws.com", false},
    {"https://s3.amazonaws.com:443/", 0, true, "s3.amazonaws.com", 443,
     "s3.amazonaws.com", "", "https://s3.amazonaws.com", false},
    {"http://localhost:80", 0, false, "localhost", 80, "localhost", "",
     "http://localhost", false},
    {"HTTP://MinIO.Local:8443", 0, false, "minio.local", 8443,
     "minio.local:8443", "", "http://minio.local:8443", false},
    {"https://h:80", 0, true, "h", 80, "h:80", "", "https://h:80", false},
    {"http://[::1]:7480", 0, false, "::1", 7480, "[::1]:7480", "",
     "http://[::1]:7480", true},
    {"https://[2001:DB8::1]", 0, true, "2001:db8::1", 443, "[2001:db8::1]", "",
     "https://[2001:db8::1]", true},
    {"http://gw/s3/v1/", 0, false, "gw", 80, "gw", "/s3/v1", "http://gw/s3/v1",
     false},
    {"http://s3_server:9000/a.b_c~d-e", 0, false, "s3_server", 9000,
     "s3_server:9000", "/a.b_c~d-e", "http://s3_server:9000/a.b_c~d-e", false},
    {"http://h:65535", 0, false, "h", 65535, "h:65535", "", "http://h:65535",
     false},
    {.s = "", .rc = -EINVAL},
    {.s = "127.0.0.1:9000", .rc = -EINVAL},
    {.s = "ftp://h", .rc = -EINVAL},
    {.s = "http://", .rc = -EINVAL},
    {.s = "http:///x", .rc = -EINVAL},
    {.s = "http://:9000", .rc = -EINVAL},
    {.s = "http://h:", .rc = -EINVAL},
    {.s = "http://h:0", .rc = -EINVAL},
    {.s = "http://h:65536", .rc = -EINVAL},
    {.s = "http://h:123456", .rc = -EINVAL},
    {.s = "http://h:9x", .rc = -EINVAL},
    {.s = "http://h:-1", .rc = -EINVAL},
    {.s = "http://user:pw@h", .rc = -EINVAL},
    {.s = "http://h/?x=1", .rc = -EINVAL},
    {.s = "http://h?x", .rc = -EINVAL},
    {.s = "http://h#f", .rc = -EINVAL},
    {.s = "http://h/a b", .rc = -EINVAL},
    {.s = "http://h/a%20b", .rc = -EINVAL},
    {.s = "http://h/a//b", .rc = -EINVAL},
    {.s = "http://h/./b", .rc = -EINVAL},
    {.s = "http://h/a/..", .rc = -EINVAL},
    {.s = "http://h/../", .rc = -EINVAL},
    {.s = "http://h o", .rc = -EINVAL},
    {.s = "http://.h", .rc = -EINVAL},
    {.s = "http://h.", .rc = -EINVAL},
    {.s = "http://a..b", .rc = -EINVAL},
    {.s = "http://999.1.1.1", .rc = -EINVAL},
    {.s = "http://1.2.3", .rc = -EINVAL},
    {.s = "http://[::1", .rc = -EINVAL},
    {.s = "http://[]", .rc = -EINVAL},
    {.s = "http://[::g]", .rc = -EINVAL},
    {.s = "http://[fe80::1%25eth0]", .rc = -EINVAL},
    {.s = "http://[::1]x", .rc = -EINVAL},
    {.s = "http://::1", .rc = -EINVAL},
    {.s = "http://h\xc3\xa9", .rc = -EINVAL},
};

static void check_ep(const struct ep_case *c)
{
	struct opts_endpoint e;
	int failed = check_failed;
	int rc = opts_parse_endpoint(c->s, &e);

	CHECK_INT(rc, c->rc);
	if (!rc && !c->rc) {
		CHECK_INT(e.https, c->https);
		CHECK_STR(e.host, c->host);
		CHECK_INT(e.port, c->port);
		CHECK_STR(e.host_header, c->host_header);
		CHECK_STR(e.path, c->path);
		CHECK_STR(e.base_url, c->base_url);
		CHECK_INT(e.host_is_ip, c->is_ip);
	}
	if (check_failed != failed)
		fprintf(stderr, "  endpoint: \"%s\"\n", c->s);
}

static void test_endpoint(void)
{
	char url[2048];

	for (size_t i = 0; i < ARRAY_SIZE(ep_cases); i++)
		check_ep(&ep_cases[i]);

	/* Longest host and path. */
	struct opts_endpoint e;

	/* DNS limits: labels up to 63 bytes, names up to 253. */
	strcpy(url, "http://");
	memset(url + 7, 'h', 64);
	strcpy(url + 7 + 64, "/");
	CHECK_INT(opts_parse_endpoint(url, &e), -EINVAL);
	strcpy(url + 7 + 63, ".x/");
	CHECK_INT(opts_parse_endpoint(url, &e), 0);
	for (int i = 0; i < 4; i++) {
		memset(url + 7 + i * 64, 'h', 63);
		url[7 + i * 64 + 63] = '.';
	}
	strcpy(url + 7 + 253, ":80");
	CHECK_INT(opts_parse_endpoint(url, &e), 0);
	CHECK_INT(strlen(e.host), 253);
	strcpy(url + 7 + 253, "h");
	CHECK_INT(opts_parse_endpoint(url, &e), -EINVAL);
	strcpy(url, "http://h/");
	memset(url + 9, 'p', OPTS_PATH_MAX);
	url[9 + OPTS_PATH_MAX] = '\0';
	CHECK_INT(opts_parse_endpoint(url, &e), -EINVAL);
	url[9 + OPTS_PATH_MAX - 2] = '\0';
	CHECK_INT(opts_parse_endpoint(url, &e), 0);
	CHECK_INT(strlen(e.path), OPTS_PATH_MAX - 1);
}

struct range_case {
	const char *s;
	int rc;
	enum opts_range_kind kind;
	uint64_t a, b; /* start, end or suffix */
};

static const struct range_case range_cases[] = {
    {"0-0", 0, OPTS_RANGE_SPAN, 0, 0},
    {"0-99", 0, OPTS_RANGE_SPAN, 0, 99},
    {"100-199", 0, OPTS_RANGE_SPAN, 100, 199},
    {"5-", 0, OPTS_RANGE_FROM, 5, 0},
    {"0-", 0, OPTS_RANGE_FROM, 0, 0},
    {"-500", 0, OPTS_RANGE_SUFFIX, 500, 0},
    {"0-18446744073709551615", 0, OPTS_RANGE_SPAN, 0, UINT64_MAX},
    {.s = "", .rc = -EINVAL},
    {.s = "-", .rc = -EINVAL},
    {.s = "-0", .rc = -EINVAL},
    {.s = "--5", .rc = -EINVAL},
    {.s = "5", .rc = -EINVAL},
    {.s = "9-5", .rc = -EINVAL},
    {.s = "a-b", .rc = -EINVAL},
    {.s = "1-2-3", .rc = -EINVAL},
    {.s = " 1-2", .rc = -EINVAL},
    {.s = "1-2 ", .rc = -EINVAL},
    {.s = "1 -2", .rc = -EINVAL},
    {.s = "+1-2", .rc = -EINVAL},
    {.s = "1-+2", .rc = -EINVAL},
    {.s = "-5-", .rc = -EINVAL},
    {.s = "bytes=1-2", .rc = -EINVAL},
    {.s = "1-2,4-5", .rc = -EINVAL},
    {.s = "18446744073709551616-", .rc = -ERANGE},
    {.s = "0-18446744073709551616", .rc = -ERANGE},
    {.s = "-18446744073709551616", .rc = -ERANGE},
    {.s = "18446744073709551616x", .rc = -EINVAL},
};

static void test_range(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(range_cases); i++) {
		const struct range_case *c = &range_cases[i];
		struct opts_range r = {.kind = 0, .start = 7};
		int rc = opts_parse_range(c->s, &r);

		CHECK_INT(rc, c->rc);
		if (rc != c->rc)
			fprintf(stderr, "  range: \"%s\"\n", c->s);
		if (rc) {
			CHECK(r.kind == 0 && r.start == 7);
			continue;
		}
		CHECK_INT(r.kind, c->kind);
		if (c->kind == OPTS_RANGE_SUFFIX) {
			CHECK_INT(r.suffix, c->a);
			continue;
		}
		CHECK_INT(r.start, c->a);
		if (c->kind == OPTS_RANGE_SPAN)
			CHECK(r.end == c->b);
	}
}

int main(void)
{
	test_numbers();
	test_uint();
	test_s3url();
	test_bucket_virtual();
	test_endpoint();
	test_range();
	return check_summary("test_opts");
}
