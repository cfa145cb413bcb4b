// SPDX-License-Identifier: MIT
/*
 * s3xml: ListObjectsV2 pages (plain and url-encoded keys, prefixes,
 * continuation), error bodies, multipart results, ISO 8601 times, and
 * hostile input (DOCTYPE, entities, oversized values, bounds).
 */
#include "s3xml.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

#define NS	   " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define HEAD	   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define LBR(body)  HEAD "<ListBucketResult" NS ">" body "</ListBucketResult>"
#define OBJ(k, sz) "<Contents><Key>" k "</Key><Size>" sz "</Size></Contents>"
#define PFX(p)	   "<CommonPrefixes><Prefix>" p "</Prefix></CommonPrefixes>"

/* A case that must fail with RC. */
#define BAD(n_, b_, rc_)                                                       \
	{                                                                      \
		.name = (n_), .body = (b_), .rc = (rc_)                        \
	}

struct list_case {
	const char *name;
	const char *body;
	int rc;
	size_t nobj;
	const char *keys[4];
	uint64_t sizes[4];
	size_t npfx;
	const char *prefixes[3];
	bool truncated;
	const char *token;
};

static const struct list_case list_cases[] = {
    {"aws example",
     LBR("<Name>bucket</Name><Prefix/><KeyCount>2</KeyCount>"
	 "<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
	 "<Contents><Key>my-image.jpg</Key>"
	 "<LastModified>2009-10-12T17:50:30.000Z</LastModified>"
	 "<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>"
	 "<Size>434234</Size><StorageClass>STANDARD</StorageClass>"
	 "</Contents>" OBJ("a/b", "0")),
     0,
     2,
     {"my-image.jpg", "a/b"},
     {434234, 0},
     0,
     {NULL},
     false,
     NULL},
    {"url encoded, EncodingType last (MinIO order)",
     LBR("<IsTruncated>false</IsTruncated>" OBJ("a+b%2Bc", "1") OBJ(
	 "%E2%82%AC.txt", "2") OBJ("sp%20ace%25", "3") PFX("dir%20x%2F/")
	     PFX("q%3F+") "<Delimiter>/</Delimiter>"
			  "<EncodingType>url</EncodingType>"),
     0,
     3,
     {"a b+c", "\xe2\x82\xac.txt", "sp ace%"},
     {1, 2, 3},
     2,
     {"dir x//", "q? "},
     false,
     NULL},
    {"no EncodingType: keys raw",
     LBR(OBJ("a+b%41", "7") PFX("p%20/")),
     0,
     1,
     {"a+b%41"},
     {7},
     1,
     {"p%20/"},
     false,
     NULL},
    {"empty EncodingType: keys raw",
     LBR(OBJ("a+b", "7") "<EncodingType/>"),
     0,
     1,
     {"a+b"},
     {7},
     0,
     {NULL},
     false,
     NULL},
    {"raw unicode and escapes",
     LBR(OBJ("\xe6\x97\xa5\xe6\x9c\xac/\xc3\x9f.txt", "1")
	     OBJ("a&amp;b&lt;c&#x20AC;&#65;", "2") OBJ(" lead ", "3")),
     0,
     3,
     {"\xe6\x97\xa5\xe6\x9c\xac/\xc3\x9f.txt",
      "a&b<c\xe2\x82\xac"
      "A",
      " lead "},
     {1, 2, 3},
     0,
     {NULL},
     false,
     NULL},
    {"common prefixes only",
     LBR("<Delimiter>/</Delimiter>" PFX("a/") PFX("b/") PFX("a/")),
     0,
     0,
     {NULL},
     {0},
     3,
     {"a/", "b/", "a/"},
     false,
     NULL},
    {"truncated with token",
     LBR("<IsTruncated>true</IsTruncated>" OBJ(
	 "k", "1") "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/"
		   "wm36Hy4vbOwM=</NextContinuationToken>"),
     0,
     1,
     {"k"},
     {1},
     0,
     {NULL},
     true,
     "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="},
    {"token ignored when not truncated",
     LBR("<IsTruncated>FALSE</IsTruncated>"
	 "<NextContinuationToken>x</NextContinuationToken>"),
     0,
     0,
     {NULL},
     {0},
     0,
     {NULL},
     false,
     NULL},
    {"empty result",
     LBR("<Name>b</Name><Prefix>none/</Prefix><KeyCount>0</KeyCount>"
	 "<IsTruncated>false</IsTruncated>"),
     0,
     0,
     {NULL},
     {0},
     0,
     {NULL},
     false,
     NULL},
    {"pretty printed with owner",
     HEAD "<ListBucketResult" NS ">\n  <Name>b</Name>\n  <Contents>\n"
	  "    <Key>x y</Key>\n    <Size> 12 </Size>\n    <Owner>\n"
	  "      <ID>abc</ID><DisplayName>me</DisplayName>\n    </Owner>\n"
	  "  </Contents>\n</ListBucketResult>\n",
     0,
     1,
     {"x y"},
     {12},
     0,
     {NULL},
     false,
     NULL},
    {"namespace prefix",
     "<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/"
     "2006-03-01/\"><s3:Contents><s3:Key>k</s3:Key><s3:Size>5</s3:Size>"
     "</s3:Contents></s3:ListBucketResult>",
     0,
     1,
     {"k"},
     {5},
     0,
     {NULL},
     false,
     NULL},
    {"max size",
     LBR(OBJ("k", "18446744073709551615")),
     0,
     1,
     {"k"},
     {UINT64_MAX},
     0,
     {NULL},
     false,
     NULL},
    {"unknown elements skipped",
     LBR("<Foo><Key>no</Key></Foo>" OBJ("k", "1") "<Bar/>"),
     0,
     1,
     {"k"},
     {1},
     0,
     {NULL},
     false,
     NULL},

    BAD("truncated without token", LBR("<IsTruncated>true</IsTruncated>"),
	-EBADMSG),
    BAD("truncated with empty token",
	LBR("<IsTruncated>true</IsTruncated><NextContinuationToken>"
	    "</NextContinuationToken>"),
	-EBADMSG),
    BAD("IsTruncated junk", LBR("<IsTruncated>yes</IsTruncated>"), -EBADMSG),
    BAD("missing size", LBR("<Contents><Key>k</Key></Contents>"), -EBADMSG),
    BAD("missing key", LBR("<Contents><Size>1</Size></Contents>"), -EBADMSG),
    BAD("empty key", LBR(OBJ("", "1")), -EBADMSG),
    BAD("empty prefix", LBR(PFX("")), -EBADMSG),
    BAD("negative size", LBR(OBJ("k", "-1")), -EBADMSG),
    BAD("junk size", LBR(OBJ("k", "1x")), -EBADMSG),
    BAD("overflow size", LBR(OBJ("k", "18446744073709551616")), -EBADMSG),
    BAD("two keys",
	LBR("<Contents><Key>a</Key><Key>b</Key><Size>1</Size>"
	    "</Contents>"),
	-EBADMSG),
    BAD("element inside key",
	LBR("<Contents><Key>a<b/></Key><Size>1</Size>"
	    "</Contents>"),
	-EBADMSG),
    BAD("bad LastModified",
	LBR("<Contents><Key>a</Key><Size>1</Size><LastModified>yesterday"
	    "</LastModified></Contents>"),
	-EBADMSG),
    BAD("unknown EncodingType",
	LBR(OBJ("k", "1") "<EncodingType>base64"
			  "</EncodingType>"),
	-EBADMSG),
    BAD("bad escape", LBR(OBJ("a%G1", "1") "<EncodingType>url</EncodingType>"),
	-EBADMSG),
    BAD("short escape", LBR(OBJ("a%4", "1") "<EncodingType>url</EncodingType>"),
	-EBADMSG),
    BAD("escape at end", LBR(OBJ("a%", "1") "<EncodingType>url</EncodingType>"),
	-EBADMSG),
    BAD("NUL key", LBR(OBJ("a%00b", "1") "<EncodingType>url</EncodingType>"),
	-EBADMSG),
    BAD("NUL prefix", LBR(PFX("%00/") "<EncodingType>url</EncodingType>"),
	-EBADMSG),
    BAD("error document",
	"<Error><Code>AccessDenied</Code><Message>no</Message></Error>",
	-EREMOTEIO),
    BAD("wrong root", "<ListAllMyBucketsResult/>", -EBADMSG),
    BAD("empty body", "", -EBADMSG),
    BAD("not xml", "Internal Server Error", -EBADMSG),
    BAD("html", "<html><body>502 Bad Gateway</body></html>", -EBADMSG),
    BAD("unclosed", HEAD "<ListBucketResult>", -EBADMSG),
    BAD("truncated body", HEAD "<ListBucketResult><Contents><Key>k</Key>",
	-EBADMSG),
    BAD("mismatched tags",
	"<ListBucketResult><Contents></Key>"
	"</ListBucketResult>",
	-EBADMSG),
    BAD("two roots", "<ListBucketResult/><ListBucketResult/>", -EBADMSG),
    BAD("undefined entity", LBR(OBJ("&foo;", "1")), -EBADMSG),
    BAD("char ref to NUL", LBR(OBJ("a&#0;", "1")), -EBADMSG),
    BAD("billion laughs",
	"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
	"<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
	"<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>"
	"<ListBucketResult><Contents><Key>&lol3;</Key><Size>1</Size>"
	"</Contents></ListBucketResult>",
	-EBADMSG),
    BAD("external entity",
	"<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
	"<ListBucketResult>" OBJ("&x;", "1") "</ListBucketResult>",
	-EBADMSG),
    BAD("plain doctype", "<!DOCTYPE ListBucketResult><ListBucketResult/>",
	-EBADMSG),
    BAD("parameter entity",
	"<!DOCTYPE r [<!ENTITY % p SYSTEM \"http://x/\"> %p;]><r/>", -EBADMSG),
};

static void check_list_case(const struct list_case *c)
{
	struct s3xml_list l;
	int rc = s3xml_parse_list(c->body, strlen(c->body), &l);

	CHECK_INT(rc, c->rc);
	if (rc) {
		CHECK(l.objects == NULL && l.nobjects == 0 && !l.next_token);
		if (rc != c->rc)
			fprintf(stderr, "  case: %s\n", c->name);
		return;
	}
	CHECK_INT(l.nobjects, c->nobj);
	CHECK_INT(l.nprefixes, c->npfx);
	for (size_t i = 0; i < l.nobjects && i < c->nobj; i++) {
		CHECK_STR(l.objects[i].key, c->keys[i]);
		CHECK_INT(l.objects[i].size, c->sizes[i]);
	}
	for (size_t i = 0; i < l.nprefixes && i < c->npfx; i++)
		CHECK_STR(l.prefixes[i], c->prefixes[i]);
	CHECK_INT(l.truncated, c->truncated);
	if (c->token)
		CHECK_STR(l.next_token, c->token);
	else
		CHECK(l.next_token == NULL);
	if (check_failed)
		fprintf(stderr, "  case: %s\n", c->name);
	s3xml_list_release(&l);
}

static void test_list_details(void)
{
	static const char body[] =
	    LBR("<KeyCount>1</KeyCount><Contents><Key>k</Key>"
		"<LastModified>2026-11-29T21:36:56.123Z</LastModified>"
		"<ETag>\"abc-2\"</ETag><Size>3</Size>"
		"<StorageClass>GLACIER</StorageClass></Contents>"
		"<Contents><Key>e</Key><ETag></ETag><Size>0</Size>"
		"</Contents><EncodingType>url</EncodingType>");
	struct s3xml_list l;

	CHECK_INT(s3xml_parse_list(body, strlen(body), &l), 0);
	CHECK_INT(l.nobjects, 2);
	CHECK(l.has_key_count && l.key_count == 1 && l.url_encoded);
	CHECK_INT(l.objects[0].mtime, 1795988216);
	CHECK_INT(l.objects[0].mtime_nsec, 123000000);
	CHECK_STR(l.objects[0].etag, "\"abc-2\"");
	CHECK_STR(l.objects[0].storage_class, "GLACIER");
	CHECK(l.objects[1].etag == NULL && l.objects[1].mtime == 0);
	CHECK(l.objects[1].storage_class == NULL);
	s3xml_list_release(&l);
	s3xml_list_release(&l); /* released twice is harmless */
}

/* A body of N copies of ITEM inside a ListBucketResult. */
static char *repeat_body(const char *item, size_t n, size_t *len)
{
	struct buf b;

	buf_init(&b, SIZE_MAX / 2);
	buf_append_str(&b, "<ListBucketResult>");
	for (size_t i = 0; i < n; i++)
		buf_append_str(&b, item);
	buf_append_str(&b, "</ListBucketResult>");
	return buf_detach(&b, len);
}

static void test_list_bounds(void)
{
	struct s3xml_list l;
	size_t len;
	char *body;

	body = repeat_body(PFX("p/"), S3XML_MAX_ENTRIES, &len);
	CHECK_INT(s3xml_parse_list(body, len, &l), 0);
	CHECK_INT(l.nprefixes, S3XML_MAX_ENTRIES);
	s3xml_list_release(&l);
	free(body);

	body = repeat_body(OBJ("k", "1"), S3XML_MAX_ENTRIES + 1, &len);
	CHECK_INT(s3xml_parse_list(body, len, &l), -E2BIG);
	free(body);

	/* A value at the cap is kept, one byte more is refused. */
	for (int extra = 0; extra <= 1; extra++) {
		size_t klen = S3XML_MAX_VALUE + (size_t)extra;
		char *key = malloc(klen + 1);
		struct buf b;

		memset(key, 'k', klen);
		key[klen] = '\0';
		buf_init(&b, 1 << 20);
		buf_printf(&b,
			   LBR("<Contents><Key>%s</Key><Size>1</Size>"
			       "</Contents>"),
			   key);
		CHECK_INT(s3xml_parse_list(b.data, b.len, &l),
			  extra ? -E2BIG : 0);
		if (!extra) {
			CHECK_INT(strlen(l.objects[0].key), klen);
			s3xml_list_release(&l);
		}
		buf_release(&b);
		free(key);
	}

	/* The root plus DEPTH - 1 nested elements is accepted, one more
	 * is not. */
	for (int extra = 0; extra <= 1; extra++) {
		int n = S3XML_MAX_DEPTH - 1 + extra;
		struct buf b;

		buf_init(&b, 1 << 20);
		buf_append_str(&b, "<ListBucketResult>");
		for (int i = 0; i < n; i++)
			buf_append_str(&b, "<a>");
		for (int i = 0; i < n; i++)
			buf_append_str(&b, "</a>");
		buf_append_str(&b, "</ListBucketResult>");
		CHECK_INT(s3xml_parse_list(b.data, b.len, &l),
			  extra ? -EBADMSG : 0);
		if (!extra)
			s3xml_list_release(&l);
		buf_release(&b);
	}

	/* A NUL byte inside the body. */
	static const char nul[] = "<ListBucketResult>\0</ListBucketResult>";
	CHECK_INT(s3xml_parse_list(nul, sizeof(nul) - 1, &l), -EBADMSG);
}

static void test_error(void)
{
	static const char aws[] =
	    HEAD "<Error><Code>NoSuchKey</Code><Message>The resource you "
		 "requested does not exist</Message><Resource>/mybucket/"
		 "myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9"
		 "</RequestId><HostId>h0st</HostId><Key>myfoto.jpg</Key>"
		 "</Error>";
	static const char redirect[] =
	    "<ErrorResponse><Error><Code>PermanentRedirect</Code>"
	    "<Endpoint>b.s3.eu-west-1.amazonaws.com</Endpoint>"
	    "<Region>eu-west-1</Region><Message>line1\nline2\tx</Message>"
	    "</Error><RequestId>outer</RequestId></ErrorResponse>";
	struct s3xml_error e;

	CHECK_INT(s3xml_parse_error(aws, strlen(aws), &e), 0);
	CHECK_STR(e.code, "NoSuchKey");
	CHECK_STR(e.message, "The resource you requested does not exist");
	CHECK_STR(e.resource, "/mybucket/myfoto.jpg");
	CHECK_STR(e.request_id, "4442587FB7D0A2F9");
	CHECK_STR(e.host_id, "h0st");
	CHECK_STR(e.region, "");

	CHECK_INT(s3xml_parse_error(redirect, strlen(redirect), &e), 0);
	CHECK_STR(e.code, "PermanentRedirect");
	CHECK_STR(e.endpoint, "b.s3.eu-west-1.amazonaws.com");
	CHECK_STR(e.region, "eu-west-1");
	CHECK_STR(e.message, "line1 line2 x");
	CHECK_STR(e.request_id, ""); /* outside <Error> */

	static const char *const bad[] = {
	    "",
	    "Bad Gateway",
	    "<html>x</html>",
	    LBR(OBJ("k", "1")),
	    "<Error><Code>x</Code>",
	    "<!DOCTYPE e [<!ENTITY a \"b\">]><Error><Code>&a;</Code></Error>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 'x', sizeof(e));
		CHECK_INT(s3xml_parse_error(bad[i], strlen(bad[i]), &e),
			  -EBADMSG);
		CHECK_STR(e.code, "");
	}
}

static void test_error_truncation(void)
{
	struct s3xml_error e;
	struct buf b;
	char msg[700];

	/* 510 ASCII bytes then a 3-byte character: it does not fit in the
	 * 511 bytes left and must not be cut in half. */
	memset(msg, 'a', 510);
	strcpy(msg + 510, "\xe2\x82\xac\xe2\x82\xac");
	buf_init(&b, 1 << 20);
	buf_printf(&b, "<Error><Code>%s</Code><Message>%s</Message></Error>",
		   "ThisCodeIsWayTooLongForTheSixtyFourByteFieldThatHoldsIt"
		   "0123456789",
		   msg);
	CHECK_INT(s3xml_parse_error(b.data, b.len, &e), 0);
	CHECK_INT(strlen(e.message), 510);
	CHECK_INT(strlen(e.code), sizeof(e.code) - 1);
	buf_release(&b);

	/* A huge value is dropped past the cap, not an error. */
	buf_init(&b, 1 << 20);
	buf_append_str(&b, "<Error><Code>SlowDown</Code><Message>");
	for (int i = 0; i < 10000; i++)
		buf_append_str(&b, "0123456789");
	buf_append_str(&b, "</Message></Error>");
	CHECK_INT(s3xml_parse_error(b.data, b.len, &e), 0);
	CHECK_STR(e.code, "SlowDown");
	CHECK_INT(strlen(e.message), sizeof(e.message) - 1);
	buf_release(&b);
}

static void test_multipart(void)
{
	static const char init[] =
	    HEAD "<InitiateMultipartUploadResult" NS "><Bucket>b</Bucket>"
		 "<Key>k</Key><UploadId>VXBsb2FkIElE</UploadId>"
		 "</InitiateMultipartUploadResult>";
	static const char done[] =
	    "<CompleteMultipartUploadResult><Location>http://x/b/k"
	    "</Location><Bucket>b</Bucket><Key>k</Key>"
	    "<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
	    "</CompleteMultipartUploadResult>";
	static const char failed[] =
	    "<Error><Code>InternalError</Code></Error>";
	char *s = NULL;

	CHECK_INT(s3xml_parse_upload_id(init, strlen(init), &s), 0);
	CHECK_STR(s, "VXBsb2FkIElE");
	free(s);
	CHECK_INT(s3xml_parse_complete(done, strlen(done), &s), 0);
	CHECK_STR(s, "\"3858f62230ac3c915f300c664312c11f-9\"");
	free(s);
	s = NULL;
	CHECK_INT(s3xml_parse_complete(failed, strlen(failed), &s), -EREMOTEIO);
	CHECK_INT(s3xml_parse_upload_id(done, strlen(done), &s), -EBADMSG);
	CHECK_INT(
	    s3xml_parse_upload_id("<InitiateMultipartUploadResult/>", 32, &s),
	    -EBADMSG);
	CHECK(s == NULL);
}

static void test_build_complete(void)
{
	const struct s3xml_part parts[] = {
	    {1, "\"a\""}, {2, "\"b&<>\""}, {10000, "c"}};
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(s3xml_build_complete(parts, 3, &b), 0);
	CHECK_STR(
	    buf_str(&b),
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/"
	    "2006-03-01/\"><Part><PartNumber>1</PartNumber><ETag>\"a\""
	    "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>"
	    "\"b&amp;&lt;&gt;\"</ETag></Part><Part><PartNumber>10000"
	    "</PartNumber><ETag>c</ETag></Part></CompleteMultipartUpload>");

	const struct s3xml_part unordered[] = {{2, "a"}, {1, "b"}};
	const struct s3xml_part dup[] = {{1, "a"}, {1, "b"}};
	const struct s3xml_part zero[] = {{0, "a"}};
	const struct s3xml_part big[] = {{10001, "a"}};
	const struct s3xml_part empty[] = {{1, ""}};
	const struct s3xml_part null[] = {{1, NULL}};
	const struct s3xml_part ctl[] = {{1, "a\nb"}};

	buf_reset(&b);
	CHECK_INT(s3xml_build_complete(parts, 0, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(unordered, 2, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(dup, 2, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(zero, 1, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(big, 1, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(empty, 1, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(null, 1, &b), -EINVAL);
	CHECK_INT(s3xml_build_complete(ctl, 1, &b), -EINVAL);
	CHECK_INT(b.len, 0);
	buf_release(&b);

	buf_init(&b, 64);
	CHECK_INT(s3xml_build_complete(parts, 3, &b), -E2BIG);
	buf_release(&b);

	/* What we build, a server's parser reads back. */
	buf_init(&b, 1 << 20);
	CHECK_INT(s3xml_build_complete(parts, 3, &b), 0);
	CHECK(strstr(b.data, "<Part>") != NULL);
	buf_release(&b);
}

struct time_case {
	const char *s;
	int rc;
	int64_t sec;
	uint32_t nsec;
};

static const struct time_case time_cases[] = {
    {"1970-01-01T00:00:00Z", 0, 0, 0},
    {"1970-01-01T00:00:00.000Z", 0, 0, 0},
    {"2026-11-29T21:36:56.000Z", 0, 1795988216, 0},
    {"2026-11-29T21:36:56Z", 0, 1795988216, 0},
    {"2009-10-12T17:50:30.5Z", 0, 1255369830, 500000000},
    {"2009-10-12T17:50:30.123456789123Z", 0, 1255369830, 123456789},
    {"2000-02-29T12:00:00Z", 0, 951825600, 0},
    {"1969-12-31T23:59:59Z", 0, -1, 0},
    {"0000-01-01T00:00:00Z", 0, -62167219200, 0},
    {"9999-12-31T23:59:59Z", 0, 253402300799, 0},
    {"2016-12-31T23:59:60Z", 0, 1483228800, 0},
    {"2026-11-29T23:36:56+02:00", 0, 1795988216, 0},
    {"2026-11-29T16:06:56-05:30", 0, 1795988216, 0},
    {"2026-11-29t21:36:56z", 0, 1795988216, 0},
    {.s = "", .rc = -EINVAL},
    {.s = "2026-11-29", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:56", .rc = -EINVAL},
    {.s = "2026-11-29 21:36:56Z", .rc = -EINVAL},
    {.s = "2026-13-01T00:00:00Z", .rc = -EINVAL},
    {.s = "2026-00-01T00:00:00Z", .rc = -EINVAL},
    {.s = "2025-02-29T00:00:00Z", .rc = -EINVAL},
    {.s = "1900-02-29T00:00:00Z", .rc = -EINVAL},
    {.s = "2026-04-31T00:00:00Z", .rc = -EINVAL},
    {.s = "2026-11-29T24:00:00Z", .rc = -EINVAL},
    {.s = "2026-11-29T21:60:00Z", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:61Z", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:56.Z", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:56ZZ", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:56+0200", .rc = -EINVAL},
    {.s = "2026-11-29T21:36:56+24:00", .rc = -EINVAL},
    {.s = "+2026-11-29T21:36:56Z", .rc = -EINVAL},
    {.s = "2026-1a-29T21:36:56Z", .rc = -EINVAL},
};

static void test_times(void)
{
	char out[S3XML_TIME_LEN];

	for (size_t i = 0; i < sizeof(time_cases) / sizeof(time_cases[0]);
	     i++) {
		const struct time_case *c = &time_cases[i];
		int64_t sec = 42;
		uint32_t nsec = 42;
		int rc = s3xml_parse_time(c->s, &sec, &nsec);

		CHECK_INT(rc, c->rc);
		if (rc != c->rc)
			fprintf(stderr, "  time: %s\n", c->s);
		if (!rc && !c->rc) {
			CHECK_INT(sec, c->sec);
			CHECK_INT(nsec, c->nsec);
		}
	}
	CHECK_INT(s3xml_format_time(1795988216, out, sizeof(out)), 0);
	CHECK_STR(out, "2026-11-29T21:36:56Z");
	CHECK_INT(s3xml_format_time(0, out, sizeof(out)), 0);
	CHECK_STR(out, "1970-01-01T00:00:00Z");
	CHECK_INT(s3xml_format_time(-1, out, sizeof(out)), 0);
	CHECK_STR(out, "1969-12-31T23:59:59Z");
	CHECK_INT(s3xml_format_time(951825600, out, sizeof(out)), 0);
	CHECK_STR(out, "2000-02-29T12:00:00Z");
	CHECK_INT(s3xml_format_time(253402300799, out, sizeof(out)), 0);
	CHECK_STR(out, "9999-12-31T23:59:59Z");
	CHECK_INT(s3xml_format_time(-62167219200, out, sizeof(out)), 0);
	CHECK_STR(out, "0000-01-01T00:00:00Z");
	CHECK_INT(s3xml_format_time(253402300800, out, sizeof(out)),
		  -EOVERFLOW);
	CHECK_INT(s3xml_format_time(-62167219201, out, sizeof(out)),
		  -EOVERFLOW);
	CHECK_INT(s3xml_format_time(INT64_MAX, out, sizeof(out)), -EOVERFLOW);
	CHECK_INT(s3xml_format_time(INT64_MIN, out, sizeof(out)), -EOVERFLOW);
	CHECK_INT(s3xml_format_time(0, out, sizeof(out) - 1), -ERANGE);

	/* Round trip over a spread of days. */
	for (int64_t t = -62167219200; t < 253402300799; t += 86399 * 37) {
		int64_t back;

		if (s3xml_format_time(t, out, sizeof(out)) ||
		    s3xml_parse_time(out, &back, NULL) || back != t) {
			CHECK(!"time round trip");
			fprintf(stderr, "  t=%" PRId64 " %s\n", t, out);
			break;
		}
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++)
		check_list_case(&list_cases[i]);
	test_list_details();
	test_list_bounds();
	test_error();
	test_error_truncation();
	test_multipart();
	test_build_complete();
	test_times();
	return check_summary("test_s3xml");
}
