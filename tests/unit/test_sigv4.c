// SPDX-License-Identifier: MIT
/*
 * Unit tests for sigv4: the published AWS SigV4 test suite (the 2015
 * "aws-sig-v4-test-suite" as revised in the AWS CRT signing suite, plus the
 * 2015-only cases), the S3 examples from the S3 API reference
 * ("Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk" and "Authenticating Requests: Using Query
 * Parameters"), key-cache reuse and invalidation, URI encoding, dates and
 * bad input. Expected values are the published vectors (data only).
 */
#include "sigv4.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define T_2015	    1440938160 /* 2015-08-30T12:36:00Z */
#define T_2013	    1369353600 /* 2013-05-24T00:00:00Z */
#define SUITE_AK    "AKIDEXAMPLE"
#define SUITE_SK    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_SCOPE "20150830/us-east-1/service/aws4_request"
#define S3_AK	    "AKIAIOSFODNN7EXAMPLE"
#define S3_SK	    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_SCOPE    "20130524/us-east-1/s3/aws4_request"
#define S3_HOST	    "examplebucket.s3.amazonaws.com"

/*
 * One test-suite case: host example.amazonaws.com, us-east-1, service
 * "service", 20150830T123600Z. NULL / false / 0 fields take the default
 * (GET, "/", empty-body hash, no token). s3_path = true stands for the
 * suite's "unnormalized" cases (path signed as given, encoded once), and
 * sha_header for its "sign_body" cases. The published string to sign of
 * every case is "AWS4-HMAC-SHA256\n<date>\n<scope>\n<hex sha256(creq)>"
 * (checked when this table was made), so the test checks it in that form.
 * psig: the signature of the presigned variant (X-Amz-Expires=3600).
 */
struct suite_vec {
	const char *name;
	const char *method, *path;
	struct sigv4_param query[4];
	size_t nquery;
	struct sigv4_header headers[4];
	size_t nheaders;
	const char *payload;
	bool sha_header, s3_path;
	const char *token;
	const char *creq, *sig;
	const char *psig;
};

/*
 * Header values below are given as received after HTTP/1.1 unfolding: in
 * get-header-value-multiline the obs-fold of the request file becomes
 * spaces (the signer refuses CR/LF in values), which the signer then
 * collapses. The 2015 suite signed the folded lines as duplicates instead;
 * that variant is the "2015/" entry.
 */
static const struct suite_vec suite[] = {
    {
	.name = "get-header-key-duplicate",
	.headers = {{"My-Header1", "value2"},
		    {"My-Header1", "value2"},
		    {"My-Header1", "value1"}},
	.nheaders = 3,
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:v"
		"alue2,value2,value1\nx-amz-date:20150830T123600Z\n"
		"\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afb"
		"f4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f85"
	       "8259531a5138ea",
	.psig = "3349ee0b81b4b589da0ff28a395c3591e04de515651dd74f29"
		"8fa992d1507a97",
    },
    {
	.name = "get-header-value-multiline",
	.headers = {{"My-Header1", "value1   value2      value3"}},
	.nheaders = 1,
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:v"
		"alue1 value2 value3\nx-amz-date:20150830T123600Z\n"
		"\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afb"
		"f4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb6"
	       "5a51a73575eefd",
	.psig = "e6f5def831211aca02987a44b96826706278c7bc078112ae02"
		"63659c5b2f2d56",
    },
    {
	.name = "get-header-value-order",
	.headers = {{"My-Header1", "value4"},
		    {"My-Header1", "value1"},
		    {"My-Header1", "value3"},
		    {"My-Header1", "value2"}},
	.nheaders = 4,
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:v"
		"alue4,value1,value3,value2\nx-amz-date:20150830T12"
		"3600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1"
		"c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
		"5",
	.sig = "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50"
	       "643f830c755c01",
	.psig = "313720e71ca6202fdcfa9b20f88de01a4eb0638a83c833b1c1"
		"84359a4eda864e",
    },
    {
	.name = "get-header-value-trim",
	.headers = {{"My-Header1", " value1"},
		    {"My-Header2", " \"a   b   c\""}},
	.nheaders = 2,
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:v"
		"alue1\nmy-header2:\"a b c\"\nx-amz-date:20150830T1"
		"23600Z\n\nhost;my-header1;my-header2;x-amz-date\ne"
		"3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca49"
		"5991b7852b855",
	.sig = "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055d"
	       "ee359757a9c736",
	.psig = "e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e4"
		"6005dd3df3acd4",
    },
    {
	.name = "get-relative-normalized",
	.path = "/example/..",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-relative-relative-normalized",
	.path = "/example1/example2/../..",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-relative-relative-unnormalized",
	.path = "/example1/example2/../..",
	.s3_path = true,
	.creq = "GET\n/example1/example2/../..\n\nhost:example.amaz"
		"onaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-a"
		"mz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e46"
		"49b934ca495991b7852b855",
	.sig = "dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a"
	       "333df5e613003b",
	.psig = "b45db0bfd1cf15003493b733e33aa208dd981bd0e63037a6ed"
		"953f71d2118a16",
    },
    {
	.name = "get-relative-unnormalized",
	.path = "/example/..",
	.s3_path = true,
	.creq = "GET\n/example/..\n\nhost:example.amazonaws.com\nx-"
		"amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0"
		"c44298fc1c149afbf4c8996fb92427ae41e4649b934ca49599"
		"1b7852b855",
	.sig = "eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec155"
	       "4a184887ff9282",
	.psig = "cbcb213b928a077e43275df47b500f1dfaa864ab3f5a18f6b9"
		"5f4ff0938167ee",
    },
    {
	.name = "get-slash-dot-slash-normalized",
	.path = "/./",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-slash-dot-slash-unnormalized",
	.path = "/./",
	.s3_path = true,
	.creq = "GET\n/./\n\nhost:example.amazonaws.com\nx-amz-date"
		":20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc"
		"1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8"
		"55",
	.sig = "68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df518"
	       "98d8a134695145",
	.psig = "a9b13e8f3484d9505bf1a6f347219f8f35b0fe8f128ceea597"
		"efc146a3dfe90c",
    },
    {
	.name = "get-slash-normalized",
	.path = "//",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-slash-pointless-dot-normalized",
	.path = "/./example",
	.creq = "GET\n/example\n\nhost:example.amazonaws.com\nx-amz"
		"-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44"
		"298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7"
		"852b855",
	.sig = "ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865"
	       "db7089db637ec5",
	.psig = "35034b1a0bdd969f346975386daf8aedfd4976573b8348cf4f"
		"67eaa41c5857de",
    },
    {
	.name = "get-slash-pointless-dot-unnormalized",
	.path = "/./example",
	.s3_path = true,
	.creq = "GET\n/./example\n\nhost:example.amazonaws.com\nx-a"
		"mz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c"
		"44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991"
		"b7852b855",
	.sig = "beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf0"
	       "7aa8b119e14cff",
	.psig = "72b11f16d9530b18204bfb71f2d6ab085894c0ed8d352730a6"
		"e76234c58b5e10",
    },
    {
	.name = "get-slash-unnormalized",
	.path = "//",
	.s3_path = true,
	.creq = "GET\n//\n\nhost:example.amazonaws.com\nx-amz-date:"
		"20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1"
		"c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
		"5",
	.sig = "c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcf"
	       "cb439fd5e5b76e",
	.psig = "b2a9542809db687769200f56a844a03f2bd0291d6eb90232d5"
		"101c6a579446cd",
    },
    {
	.name = "get-slashes-normalized",
	.path = "//example//",
	.creq = "GET\n/example/\n\nhost:example.amazonaws.com\nx-am"
		"z-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c4"
		"4298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
		"7852b855",
	.sig = "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe8"
	       "46570885f57e84",
	.psig = "c1834e8fb0307243711f0f907f6ab7311ed300d87f13792d7e"
		"e4da89ab93e082",
    },
    {
	.name = "get-slashes-unnormalized",
	.path = "//example//",
	.s3_path = true,
	.creq = "GET\n//example//\n\nhost:example.amazonaws.com\nx-"
		"amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0"
		"c44298fc1c149afbf4c8996fb92427ae41e4649b934ca49599"
		"1b7852b855",
	.sig = "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ff"
	       "a899665623c7e5",
	.psig = "822a5a9ba28072c5ab2bb4a6307d0c88276d40e49fec6b724c"
		"03fb4d4ba60fc2",
    },
    {
	.name = "get-space-normalized",
	.path = "/example space/",
	.creq = "GET\n/example%20space/\n\nhost:example.amazonaws.c"
		"om\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date"
		"\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
		"a495991b7852b855",
	.sig = "652487583200325589f1fba4c7e578f72c47cb61beeca81406"
	       "b39ddec1366741",
	.psig = "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c"
		"9f07d0e394abf6",
    },
    {
	.name = "get-space-unnormalized",
	.path = "/example space/",
	.s3_path = true,
	.creq = "GET\n/example%20space/\n\nhost:example.amazonaws.c"
		"om\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date"
		"\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
		"a495991b7852b855",
	.sig = "652487583200325589f1fba4c7e578f72c47cb61beeca81406"
	       "b39ddec1366741",
	.psig = "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c"
		"9f07d0e394abf6",
    },
    {
	.name = "get-unreserved",
	.path = "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi"
		"jklmnopqrstuvwxyz",
	.creq = "GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcd"
		"efghijklmnopqrstuvwxyz\n\nhost:example.amazonaws.c"
		"om\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date"
		"\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
		"a495991b7852b855",
	.sig = "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977"
	       "f52a65bbf5f24f",
	.psig = "95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96"
		"a28cc92e0d6005",
    },
    {
	.name = "get-utf8",
	.path = "/\xE1\x88\xB4",
	.creq = "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-a"
		"mz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c"
		"44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991"
		"b7852b855",
	.sig = "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a89"
	       "1fd03141be5d85",
	.psig = "10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7"
		"a4b37f52178e44",
    },
    {
	.name = "get-vanilla",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-vanilla-empty-query-key",
	.query = {{"Param1", "value1"}},
	.nquery = 1,
	.creq = "GET\n/\nParam1=value1\nhost:example.amazonaws.com\n"
		"x-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3"
		"b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495"
		"991b7852b855",
	.sig = "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e4"
	       "5aec72011b9aeb",
	.psig = "49096700cbbaa5753443850f40df10f904fc2fdb544dc95122"
		"03cc77c471a9de",
    },
    {
	.name = "get-vanilla-query",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c"
		"149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
	       "8aae1d763fbf31",
	.psig = "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844"
		"b25b7192d3865d",
    },
    {
	.name = "get-vanilla-query-order-encoded",
	.query = {{"Param-3", "Value3"},
		  {"Param", "Value2"},
		  {"\xE1\x88\xB4", "Value1"}},
	.nquery = 3,
	.creq = "GET\n/\n%E1%88%B4=Value1&Param=Value2&Param-3=Valu"
		"e3\nhost:example.amazonaws.com\nx-amz-date:2015083"
		"0T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afb"
		"f4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "371d3713e185cc334048618a97f809c9ffe339c62934c032af"
	       "5a0e595648fcac",
	.psig = "c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597a"
		"da94c4a65e4787",
    },
    {
	.name = "get-vanilla-query-order-key-case",
	.query = {{"Param2", "value2"}, {"Param1", "value1"}},
	.nquery = 2,
	.creq = "GET\n/\nParam1=value1&Param2=value2\nhost:example."
		"amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost"
		";x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae4"
		"1e4649b934ca495991b7852b855",
	.sig = "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3"
	       "219ec94cdf2500",
	.psig = "86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6"
		"d3f923d300bed5",
    },
    {
	.name = "get-vanilla-query-unreserved",
	.query = {{"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
		   "klmnopqrstuvwxyz",
		   "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
		   "klmnopqrstuvwxyz"}},
	.nquery = 1,
	.creq = "GET\n/\n-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZab"
		"cdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJK"
		"LMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\nhost:ex"
		"ample.amazonaws.com\nx-amz-date:20150830T123600Z\n"
		"\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92"
		"427ae41e4649b934ca495991b7852b855",
	.sig = "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167"
	       "c21bb143a40197",
	.psig = "8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c"
		"21d86f0acda2bf",
    },
    {
	.name = "get-vanilla-utf8-query",
	.query = {{"\xE1\x88\xB4", "bar"}},
	.nquery = 1,
	.creq = "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\n"
		"x-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3"
		"b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495"
		"991b7852b855",
	.sig = "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e"
	       "12c9027818dd04",
	.psig = "0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2eb"
		"f3b913d21ff600",
    },
    {
	.name = "get-vanilla-with-session-token",
	.token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa315"
		 "53b73ebf194267",
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:2"
		"0150830T123600Z\nx-amz-security-token:6e86291e8372"
		"ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf1942"
		"67\n\nhost;x-amz-date;x-amz-security-token\ne3b0c4"
		"4298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
		"7852b855",
	.sig = "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a9704"
	       "4c66dd9f74e7f8",
	.psig = "7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb23"
		"7f73cc53f67b6c",
    },
    {
	.name = "post-header-key-case",
	.method = "POST",
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:"
		"20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1"
		"c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
		"5",
	.sig = "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37ddd"
	       "b68e92efbe5d6b",
	.psig = "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f7"
		"1ba2310083e95b",
    },
    {
	.name = "post-header-key-sort",
	.method = "POST",
	.headers = {{"My-Header1", "value1"}},
	.nheaders = 1,
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:"
		"value1\nx-amz-date:20150830T123600Z\n\nhost;my-hea"
		"der1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb9242"
		"7ae41e4649b934ca495991b7852b855",
	.sig = "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8"
	       "f8916fdf18852c",
	.psig = "c09d07e0d55871f10f2a6d350d994acf6825a3cae70673d7de"
		"f55616e6119dd7",
    },
    {
	.name = "post-header-value-case",
	.method = "POST",
	.headers = {{"My-Header1", "VALUE1"}},
	.nheaders = 1,
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:"
		"VALUE1\nx-amz-date:20150830T123600Z\n\nhost;my-hea"
		"der1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb9242"
		"7ae41e4649b934ca495991b7852b855",
	.sig = "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b536"
	       "29efa58b974b7d",
	.psig = "0698bc9e4f7f9139065ba2909c0e99da257e8e2a42492a097b"
		"cd46d792391fed",
    },
    {
	.name = "post-sts-header-after",
	.method = "POST",
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:"
		"20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1"
		"c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
		"5",
	.sig = "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37ddd"
	       "b68e92efbe5d6b",
	.psig = "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f7"
		"1ba2310083e95b",
    },
    {
	.name = "post-sts-header-before",
	.method = "POST",
	.token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDO"
		 "k4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRq"
		 "TflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtB"
		 "mUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75Y"
		 "U9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0"
		 "u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9K"
		 "SYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:"
		"20150830T123600Z\nx-amz-security-token:AQoDYXdzEPT"
		"//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4F"
		"ZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuw"
		"thAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8ph"
		"UZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx"
		"6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64l"
		"IZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3"
		"iSIlTJabIQwj2ICCR/oLxBA==\n\nhost;x-amz-date;x-amz"
		"-security-token\ne3b0c44298fc1c149afbf4c8996fb9242"
		"7ae41e4649b934ca495991b7852b855",
	.sig = "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c6"
	       "4533a82be05ead",
	.psig = "46c2e3c63c1dbe7d39f8ada16fe7f001c1f56c579144156532"
		"3677f96308871c",
    },
    {
	.name = "post-vanilla",
	.method = "POST",
	.creq = "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:"
		"20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1"
		"c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"
		"5",
	.sig = "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37ddd"
	       "b68e92efbe5d6b",
	.psig = "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f7"
		"1ba2310083e95b",
    },
    {
	.name = "post-vanilla-empty-query-value",
	.method = "POST",
	.query = {{"Param1", "value1"}},
	.nquery = 1,
	.creq = "POST\n/\nParam1=value1\nhost:example.amazonaws.com"
		"\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
		"95991b7852b855",
	.sig = "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271"
	       "d420d138af7f11",
	.psig = "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c339"
		"9e3a16bf1a3682",
    },
    {
	.name = "post-vanilla-query",
	.method = "POST",
	.query = {{"Param1", "value1"}},
	.nquery = 1,
	.creq = "POST\n/\nParam1=value1\nhost:example.amazonaws.com"
		"\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
		"95991b7852b855",
	.sig = "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271"
	       "d420d138af7f11",
	.psig = "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c339"
		"9e3a16bf1a3682",
    },
    {
	.name = "post-x-www-form-urlencoded",
	.method = "POST",
	.headers = {{"Content-Type", "application/x-www-form-urlencoded"},
		    {"Content-Length", "13"}},
	.nheaders = 2,
	.payload = "9095672bbd1f56dfc5b65f3e153adc8731a4a6541923291062"
		   "75f4c7b24d0b6e",
	.sha_header = true,
	.creq = "POST\n/\n\ncontent-length:13\ncontent-type:applica"
		"tion/x-www-form-urlencoded\nhost:example.amazonaws"
		".com\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3"
		"e153adc8731a4a654192329106275f4c7b24d0b6e\nx-amz-d"
		"ate:20150830T123600Z\n\ncontent-length;content-typ"
		"e;host;x-amz-content-sha256;x-amz-date\n9095672bbd"
		"1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d"
		"0b6e",
	.sig = "d3875051da38690788ef43de4db0d8f280229d82040bfac253"
	       "562e56c3f20e0b",
	.psig = "89a40deed0f26f9461242825a082d2222717248abc7ab41f55"
		"2ad84a94ad46e9",
    },
    {
	.name = "post-x-www-form-urlencoded-parameters",
	.method = "POST",
	.headers = {{"Content-Type",
		     "application/x-www-form-urlencoded; charset=utf-8"},
		    {"Content-Length", "13"}},
	.nheaders = 2,
	.payload = "9095672bbd1f56dfc5b65f3e153adc8731a4a6541923291062"
		   "75f4c7b24d0b6e",
	.sha_header = true,
	.creq = "POST\n/\n\ncontent-length:13\ncontent-type:applica"
		"tion/x-www-form-urlencoded; charset=utf-8\nhost:ex"
		"ample.amazonaws.com\nx-amz-content-sha256:9095672b"
		"bd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b2"
		"4d0b6e\nx-amz-date:20150830T123600Z\n\ncontent-len"
		"gth;content-type;host;x-amz-content-sha256;x-amz-d"
		"ate\n9095672bbd1f56dfc5b65f3e153adc8731a4a65419232"
		"9106275f4c7b24d0b6e",
	.sig = "328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab7"
	       "1e7344e7f51422",
	.psig = "0dbeb9b026c7b6675f266b8427efec9b4fa8b1f6ef1477d717"
		"aea231106eab4d",
    },
    /*
     * Cases only in the 2015 suite. Its post-x-www-form-urlencoded .creq
     * lists content-length, but its .sts and .authz were computed without
     * it; the creq here is the one that matches them. Its
     * post-x-www-form-urlencoded-parameters case matches no consistent
     * canonical request at all and is left out (the revised suite above
     * has a consistent version of it).
     */
    {
	.name = "2015/get-vanilla-query-order-key",
	.query = {{"Param1", "value2"}, {"Param1", "Value1"}},
	.nquery = 2,
	.creq = "GET\n/\nParam1=Value1&Param1=value2\nhost:example."
		"amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost"
		";x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae4"
		"1e4649b934ca495991b7852b855",
	.sig = "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df"
	       "300a15b2382bd1",
    },
    {
	.name = "2015/get-vanilla-query-order-value",
	.query = {{"Param1", "value2"}, {"Param1", "value1"}},
	.nquery = 2,
	.creq = "GET\n/\nParam1=value1&Param1=value2\nhost:example."
		"amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost"
		";x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae4"
		"1e4649b934ca495991b7852b855",
	.sig = "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c6048"
	       "6157bd471c4694",
    },
    {
	.name = "2015/get-header-value-multiline",
	.headers = {{"My-Header1", "value1"},
		    {"My-Header1", "  value2"},
		    {"My-Header1", "     value3"}},
	.nheaders = 3,
	.creq = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:v"
		"alue1,value2,value3\nx-amz-date:20150830T123600Z\n"
		"\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afb"
		"f4c8996fb92427ae41e4649b934ca495991b7852b855",
	.sig = "ba17b383a53190154eb5fa66a1b836cc297cc0a3d70a5d0070"
	       "5980573d8ff790",
    },
    {
	.name = "2015/post-x-www-form-urlencoded",
	.method = "POST",
	.headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
	.nheaders = 1,
	.payload = "9095672bbd1f56dfc5b65f3e153adc8731a4a6541923291062"
		   "75f4c7b24d0b6e",
	.creq = "POST\n/\n\ncontent-type:application/x-www-form-url"
		"encoded\nhost:example.amazonaws.com\nx-amz-date:20"
		"150830T123600Z\n\ncontent-type;host;x-amz-date\n90"
		"95672bbd1f56dfc5b65f3e153adc8731a4a654192329106275"
		"f4c7b24d0b6e",
	.sig = "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9"
	       "d196a0fe09473a",
    },
};

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The signed-header list: the last line but one of a canonical request. */
static void signed_headers_of(const char *creq, char *out, size_t cap)
{
	const char *end = strrchr(creq, '\n'), *start = end;
	size_t n;

	while (start > creq && start[-1] != '\n')
		start--;
	n = (size_t)(end - start) < cap ? (size_t)(end - start) : cap - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

static void want_sts(const char *amz_date, const char *scope, const char *creq,
		     char *out, size_t cap)
{
	char hex[65];

	sigv4_sha256_hex(creq, strlen(creq), hex);
	snprintf(out, cap, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope,
		 hex);
}

static void want_authz(const char *ak, const char *scope, const char *creq,
		       const char *sig, char *out, size_t cap)
{
	char sh[512];

	signed_headers_of(creq, sh, sizeof(sh));
	snprintf(out, cap,
		 "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
		 "Signature=%s",
		 ak, scope, sh, sig);
}

static void test_suite_vec(const struct suite_vec *v)
{
	struct sigv4_request r = {
	    .method = v->method ? v->method : "GET",
	    .host = "example.amazonaws.com",
	    .path = v->path ? v->path : "/",
	    .query = v->query,
	    .nquery = v->nquery,
	    .headers = v->headers,
	    .nheaders = v->nheaders,
	    .payload_hash = v->payload ? v->payload : SIGV4_EMPTY_SHA256,
	    .content_sha256_header = v->sha_header,
	    .s3_path = v->s3_path,
	    .when = T_2015,
	    .region = "us-east-1",
	    .service = "service",
	};
	struct sigv4_creds c = {SUITE_AK, SUITE_SK, v->token};
	struct sigv4_signed out;
	char sts[256], authz[1024], tail[128];
	int before = check_failed;

	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_STR(buf_str(&out.canonical_request), v->creq);
	want_sts("20150830T123600Z", SUITE_SCOPE, v->creq, sts, sizeof(sts));
	CHECK_STR(buf_str(&out.string_to_sign), sts);
	CHECK_STR(out.signature, v->sig);
	want_authz(SUITE_AK, SUITE_SCOPE, v->creq, v->sig, authz,
		   sizeof(authz));
	CHECK_STR(buf_str(&out.authorization), authz);
	if (v->psig) {
		CHECK_INT(sigv4_presign(&r, &c, NULL, 3600, &out), 0);
		CHECK_STR(out.signature, v->psig);
		snprintf(tail, sizeof(tail), "&X-Amz-Signature=%s", v->psig);
		CHECK(ends_with(buf_str(&out.canonical_query), tail));
		CHECK_INT(out.authorization.len, 0);
	}
	sigv4_signed_release(&out);
	if (check_failed != before)
		fprintf(stderr, "  in test-suite case %s\n", v->name);
}

/* S3 API reference examples: examplebucket, us-east-1, 20130524. */
struct s3_vec {
	const char *name, *method, *path;
	struct sigv4_param query[2];
	size_t nquery;
	struct sigv4_header headers[2];
	size_t nheaders;
	const char *payload, *creq, *sig;
};

#define EMPTY SIGV4_EMPTY_SHA256
#define PUT_SHA                                                                \
	"44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"

static const struct s3_vec s3_vecs[] = {
    {"GET Object", "GET", "/test.txt", .headers = {{"Range", "bytes=0-9"}},
     .nheaders = 1, .payload = EMPTY,
     .creq = "GET\n/test.txt\n\nhost:" S3_HOST "\nrange:bytes=0-9\n"
	     "x-amz-content-sha256:" EMPTY "\nx-amz-date:20130524T000000Z\n"
	     "\nhost;range;x-amz-content-sha256;x-amz-date\n" EMPTY,
     .sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    /* Body "Welcome to Amazon S3."; the key is "test$file.text". */
    {"PUT Object", "PUT", "/test$file.text",
     .headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
		 {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
     .nheaders = 2, .payload = PUT_SHA,
     .creq = "PUT\n/test%24file.text\n\n"
	     "date:Fri, 24 May 2013 00:00:00 GMT\nhost:" S3_HOST "\n"
	     "x-amz-content-sha256:" PUT_SHA "\nx-amz-date:20130524T000000Z"
	     "\nx-amz-storage-class:REDUCED_REDUNDANCY\n\ndate;host;x-amz-"
	     "content-sha256;x-amz-date;x-amz-storage-class\n" PUT_SHA,
     .sig = "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    {"GET Bucket Lifecycle", "GET", "/", .query = {{"lifecycle", NULL}},
     .nquery = 1, .payload = EMPTY,
     .creq = "GET\n/\nlifecycle=\nhost:" S3_HOST "\nx-amz-content-sha256:" EMPTY
	     "\nx-amz-date:20130524T000000Z\n\n"
	     "host;x-amz-content-sha256;x-amz-date\n" EMPTY,
     .sig = "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    /* Given out of order on purpose: the signer sorts. */
    {"GET Bucket (List Objects)", "GET", "/",
     .query = {{"prefix", "J"}, {"max-keys", "2"}}, .nquery = 2,
     .payload = EMPTY,
     .creq = "GET\n/\nmax-keys=2&prefix=J\nhost:" S3_HOST "\n"
	     "x-amz-content-sha256:" EMPTY "\nx-amz-date:20130524T000000Z\n"
	     "\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY,
     .sig = "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

static struct sigv4_request s3_request(const char *method, const char *path)
{
	return (struct sigv4_request){
	    .method = method,
	    .host = S3_HOST,
	    .path = path,
	    .payload_hash = EMPTY,
	    .content_sha256_header = true,
	    .s3_path = true,
	    .when = T_2013,
	    .region = "us-east-1",
	    .service = "s3",
	};
}

static void test_s3_examples(void)
{
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_key_cache kc;
	struct sigv4_signed out;
	char sts[256], authz[1024];

	sigv4_key_cache_init(&kc);
	sigv4_signed_init(&out);
	for (size_t i = 0; i < sizeof(s3_vecs) / sizeof(s3_vecs[0]); i++) {
		const struct s3_vec *v = &s3_vecs[i];
		struct sigv4_request r = s3_request(v->method, v->path);
		int before = check_failed;

		r.query = v->query;
		r.nquery = v->nquery;
		r.headers = v->headers;
		r.nheaders = v->nheaders;
		r.payload_hash = v->payload;
		CHECK_INT(sigv4_sign(&r, &c, &kc, &out), 0);
		CHECK_STR(buf_str(&out.canonical_request), v->creq);
		want_sts("20130524T000000Z", S3_SCOPE, v->creq, sts,
			 sizeof(sts));
		CHECK_STR(buf_str(&out.string_to_sign), sts);
		CHECK_STR(out.signature, v->sig);
		want_authz(S3_AK, S3_SCOPE, v->creq, v->sig, authz,
			   sizeof(authz));
		CHECK_STR(buf_str(&out.authorization), authz);
		if (check_failed != before)
			fprintf(stderr, "  in S3 example %s\n", v->name);
	}
	CHECK(kc.valid);
	sigv4_signed_release(&out);
}

static void test_s3_get_object_sts(void)
{
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_header range = {"Range", "bytes=0-9"};
	struct sigv4_request r = s3_request("GET", "/test.txt");
	struct sigv4_signed out;

	r.headers = &range;
	r.nheaders = 1;
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_STR(
	    buf_str(&out.string_to_sign),
	    "AWS4-HMAC-SHA256\n20130524T000000Z\n" S3_SCOPE "\n"
	    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	CHECK_STR(buf_str(&out.canonical_uri), "/test.txt");
	CHECK_STR(buf_str(&out.canonical_query), "");
	CHECK_STR(out.amz_date, "20130524T000000Z");
	sigv4_signed_release(&out);
}

/* "Authenticating Requests: Using Query Parameters" (GET, 86400 s). */
static void test_s3_presign(void)
{
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_request r = s3_request("GET", "/test.txt");
	struct sigv4_signed out;

	/* A body hash must be ignored: S3 presigned URLs are unsigned. */
	r.payload_hash = PUT_SHA;
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_presign(&r, &c, NULL, 86400, &out), 0);
	CHECK_STR(buf_str(&out.canonical_request),
		  "GET\n/test.txt\nX-Amz-Algorithm=AWS4-HMAC-SHA256&"
		  "X-Amz-Credential=" S3_AK "%2F20130524%2Fus-east-1%2Fs3%2F"
		  "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
		  "&X-Amz-SignedHeaders=host\nhost:" S3_HOST "\n\nhost\n"
		  "UNSIGNED-PAYLOAD");
	CHECK_STR(
	    out.signature,
	    "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
	CHECK_STR(
	    buf_str(&out.canonical_query),
	    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" S3_AK
	    "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
	    "20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
	    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c2"
	    "65957d157751f604d404");
	CHECK_STR(buf_str(&out.canonical_uri), "/test.txt");
	CHECK_INT(out.authorization.len, 0);
	sigv4_signed_release(&out);
}

/* A session token is signed: as a header, or in a presigned query. */
static void test_session_token(void)
{
	struct sigv4_creds c = {S3_AK, S3_SK, "AQoD//+=tok"};
	struct sigv4_header meta = {"X-Amz-Meta-Color", "  dark \t blue "};
	struct sigv4_request r = s3_request("GET", "/k");
	struct sigv4_signed out;

	r.headers = &meta;
	r.nheaders = 1;
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_STR(buf_str(&out.signed_headers),
		  "host;x-amz-content-sha256;x-amz-date;x-amz-meta-color;"
		  "x-amz-security-token");
	CHECK(strstr(buf_str(&out.canonical_request),
		     "\nx-amz-meta-color:dark blue\n"
		     "x-amz-security-token:AQoD//+=tok\n\n") != NULL);
	CHECK_INT(sigv4_presign(&r, &c, NULL, 60, &out), 0);
	CHECK(strstr(buf_str(&out.canonical_query),
		     "&X-Amz-Security-Token=AQoD%2F%2F%2B%3Dtok&"
		     "X-Amz-SignedHeaders=host%3Bx-amz-meta-color&"
		     "X-Amz-Signature=") != NULL);
	CHECK(strstr(buf_str(&out.canonical_request), "x-amz-security") ==
	      NULL);
	/* An empty token is no token. */
	c.session_token = "";
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_STR(buf_str(&out.signed_headers),
		  "host;x-amz-content-sha256;x-amz-date;x-amz-meta-color");
	sigv4_signed_release(&out);
}

struct enc_case {
	const char *in;
	size_t len;
	bool keep_slash;
	const char *want;
};

static void test_uri_encode(void)
{
	static const struct enc_case cases[] = {
	    {"", 0, false, ""},
	    {"AZaz09-._~", 10, false, "AZaz09-._~"},
	    {"a b", 3, true, "a%20b"},
	    {"/a/b/", 5, true, "/a/b/"},
	    {"/a/b/", 5, false, "%2Fa%2Fb%2F"},
	    {"+=&?#%", 6, true, "%2B%3D%26%3F%23%25"},
	    {"!*'();:@$,[]", 12, false, "%21%2A%27%28%29%3B%3A%40%24%2C%5B%5D"},
	    {"\xff\x00z", 3, false, "%FF%00z"}, /* bytes, not C strings */
	    {"\xc3\xa9\xe2\x82\xac", 5, false, "%C3%A9%E2%82%AC"},
	    {"\x7f\x01\n\t", 4, false, "%7F%01%0A%09"},
	    {"%2F", 3, true, "%252F"},
	};
	struct buf b;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_init(&b, 1024);
		CHECK_INT(sigv4_uri_encode(cases[i].in, cases[i].len,
					   cases[i].keep_slash, &b),
			  0);
		CHECK_STR(buf_str(&b), cases[i].want);
		buf_release(&b);
	}
	buf_init(&b, 4);
	CHECK_INT(sigv4_uri_encode(NULL, 0, false, &b), 0);
	CHECK_INT(sigv4_uri_encode(NULL, 1, false, &b), -EINVAL);
	CHECK_INT(sigv4_uri_encode("x", 1, false, NULL), -EINVAL);
	CHECK_INT(sigv4_uri_encode("abcde", 5, false, &b), -E2BIG);
	buf_reset(&b);
	CHECK_INT(sigv4_uri_encode(" ", 1, false, &b), 0); /* 3 bytes fit */
	CHECK_INT(sigv4_uri_encode(" ", 1, false, &b), -E2BIG);
	buf_release(&b);
}

struct path_case {
	const char *path;
	bool s3;
	const char *want;
};

static void test_paths(void)
{
	static const struct path_case cases[] = {
	    {"/bkt/a b+c%d~e", true, "/bkt/a%20b%2Bc%25d~e"},
	    {"/bkt/./../x//y/", true, "/bkt/./../x//y/"},
	    {"/bkt/./../x//y/", false, "/x/y/"},
	    {"/a/b/../../..", false, "/"},
	    {"/a/./b/.", false, "/a/b"},
	    {"/a%20b", false, "/a%2520b"}, /* generic: double encoding */
	    {"/a%20b", true, "/a%2520b"},  /* S3: a key holding '%' */
	    {"/\xc3\xa9/\xe2\x98\x83", true, "/%C3%A9/%E2%98%83"},
	    {"/a?b#c&d=e;f", true, "/a%3Fb%23c%26d%3De%3Bf"},
	    {"/", true, "/"},
	    {"//", true, "//"},
	    {"///", false, "/"},
	};
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;

	sigv4_signed_init(&out);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sigv4_request r = s3_request("GET", cases[i].path);

		r.s3_path = cases[i].s3;
		CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
		CHECK_STR(buf_str(&out.canonical_uri), cases[i].want);
	}
	sigv4_signed_release(&out);
}

static void test_query_and_headers(void)
{
	static const struct sigv4_param q[] = {
	    {"uploads", NULL},
	    {"prefix", "a/b c+d=\xc3\xa9"},
	    {"list-type", "2"},
	    {"continuation-token", "1/+=x"},
	    {"encoding-type", "url"},
	    {"a-", "v"},
	    {"a/", "v"},
	    {"k", "b"},
	    {"k", "B"},
	    {"k", ""},
	};
	static const struct sigv4_header h[] = {
	    {"X-Foo", "a"},	  {"x-empty", ""},
	    {"x-foo", "  b  c "}, {"Content-Type", "text/plain"},
	    {"x-blank", " \t "},
	};
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_request r = s3_request("GET", "/bkt");
	struct sigv4_signed out;

	r.query = q;
	r.nquery = sizeof(q) / sizeof(q[0]);
	r.headers = h;
	r.nheaders = sizeof(h) / sizeof(h[0]);
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	/* Sorted by encoded name ("a%2F" < "a-"), then encoded value. */
	CHECK_STR(buf_str(&out.canonical_query),
		  "a%2F=v&a-=v&continuation-token=1%2F%2B%3Dx&"
		  "encoding-type=url&k=&k=B&k=b&list-type=2&"
		  "prefix=a%2Fb%20c%2Bd%3D%C3%A9&uploads=");
	CHECK(strstr(buf_str(&out.canonical_request),
		     "\ncontent-type:text/plain\nhost:" S3_HOST "\n"
		     "x-amz-content-sha256:" EMPTY "\n"
		     "x-amz-date:20130524T000000Z\nx-blank:\nx-empty:\n"
		     "x-foo:a,b c\n\n") != NULL);
	CHECK_STR(buf_str(&out.signed_headers),
		  "content-type;host;x-amz-content-sha256;x-amz-date;x-blank;"
		  "x-empty;x-foo");
	sigv4_signed_release(&out);
}

static void test_dates(void)
{
	static const struct {
		long long when;
		const char *want;
	} cases[] = {
	    {0, "19700101T000000Z"},
	    {951868799, "20000229T235959Z"},
	    {T_2015, "20150830T123600Z"},
	    {2147483648LL, "20380119T031408Z"},
	    {4107542400LL, "21000301T000000Z"},
	    {253402300799LL, "99991231T235959Z"},
	};
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;

	sigv4_signed_init(&out);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sigv4_request r = s3_request("GET", "/");

		if ((long long)(time_t)cases[i].when != cases[i].when)
			continue; /* 32-bit time_t */
		r.when = (time_t)cases[i].when;
		CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
		CHECK_STR(out.amz_date, cases[i].want);
	}
	sigv4_signed_release(&out);
}

static void test_sha256(void)
{
	char hex[65];

	sigv4_sha256_hex("", 0, hex);
	CHECK_STR(hex, SIGV4_EMPTY_SHA256);
	sigv4_sha256_hex(NULL, 0, hex);
	CHECK_STR(hex, SIGV4_EMPTY_SHA256);
	sigv4_sha256_hex("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
		       "b00361a396177a9cb410ff61f20015ad");
	sigv4_sha256_hex("Welcome to Amazon S3.", 21, hex);
	CHECK_STR(hex, PUT_SHA);
}

/* Signature of R with a fresh key (no cache). */
static void fresh_sig(const struct sigv4_request *r,
		      const struct sigv4_creds *c, char sig[65])
{
	struct sigv4_signed out;

	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(r, c, NULL, &out), 0);
	memcpy(sig, out.signature, 65);
	sigv4_signed_release(&out);
}

/* Signs with KC; returns whether the result equals a fresh signature. */
static bool cached_sig_ok(const struct sigv4_request *r,
			  const struct sigv4_creds *c,
			  struct sigv4_key_cache *kc)
{
	struct sigv4_signed out;
	char want[65];
	bool ok;

	fresh_sig(r, c, want);
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(r, c, kc, &out), 0);
	ok = strcmp(out.signature, want) == 0;
	sigv4_signed_release(&out);
	return ok;
}

static void test_key_cache(void)
{
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_creds c2 = {S3_AK, "another-secret", NULL};
	struct sigv4_request r = s3_request("GET", "/test.txt");
	struct sigv4_key_cache kc;
	char hex[65], cached[65];

	sigv4_key_cache_init(&kc);
	CHECK(!kc.valid);
	CHECK(cached_sig_ok(&r, &c, &kc));
	CHECK(kc.valid);
	CHECK_STR(kc.date, "20130524");
	CHECK_STR(kc.region, "us-east-1");
	CHECK_STR(kc.service, "s3");
	/* The cache holds a digest of the secret, not the secret. */
	sigv4_sha256_hex(S3_SK, strlen(S3_SK), hex);
	for (size_t i = 0; i < 32; i++)
		snprintf(cached + 2 * i, 3, "%02x", kc.secret_digest[i]);
	CHECK_STR(cached, hex);
	/* Reuse: a tampered cached key shows up in the next signature, also
	 * later the same day. */
	kc.key[0] ^= 1;
	CHECK(!cached_sig_ok(&r, &c, &kc));
	r.when += 3600;
	CHECK(!cached_sig_ok(&r, &c, &kc));
	/* Invalidation by secret, date, region and service. */
	CHECK(cached_sig_ok(&r, &c2, &kc));
	CHECK(cached_sig_ok(&r, &c, &kc));
	kc.key[0] ^= 1;
	r.when += 86400;
	CHECK(cached_sig_ok(&r, &c, &kc));
	CHECK_STR(kc.date, "20130525");
	kc.key[0] ^= 1;
	r.region = "eu-west-1";
	CHECK(cached_sig_ok(&r, &c, &kc));
	kc.key[0] ^= 1;
	r.service = "s3-object-lambda";
	CHECK(cached_sig_ok(&r, &c, &kc));
	CHECK_STR(kc.service, "s3-object-lambda");
	CHECK(cached_sig_ok(&r, &c, &kc));
}

/* Expects -EINVAL and an emptied OUT (which held a signed request). */
static void expect_einval(const struct sigv4_request *r,
			  const struct sigv4_creds *c, unsigned expires,
			  int line)
{
	struct sigv4_request ok = s3_request("GET", "/k");
	struct sigv4_creds okc = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;
	int rc;

	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&ok, &okc, NULL, &out), 0);
	rc = expires ? sigv4_presign(r, c, NULL, expires, &out)
		     : sigv4_sign(r, c, NULL, &out);
	if (rc != -EINVAL)
		fprintf(stderr, "  bad-input case at line %d\n", line);
	CHECK_INT(rc, -EINVAL);
	CHECK_INT(out.authorization.len + out.canonical_request.len +
		      out.canonical_query.len + out.signed_headers.len,
		  0);
	CHECK_STR(out.signature, "");
	sigv4_signed_release(&out);
}

#define BAD(mutation)                                                          \
	do {                                                                   \
		struct sigv4_request r = s3_request("GET", "/k");              \
		struct sigv4_creds c = {S3_AK, S3_SK, NULL};                   \
		mutation;                                                      \
		expect_einval(&r, &c, 0, __LINE__);                            \
	} while (0)

static void test_bad_request(char *big)
{
	struct sigv4_header hv[SIGV4_MAX_HEADERS + 1];
	struct sigv4_param pv[SIGV4_MAX_PARAMS + 1];

	for (size_t i = 0; i <= SIGV4_MAX_HEADERS; i++)
		hv[i] = (struct sigv4_header){"x-h", "v"};
	for (size_t i = 0; i <= SIGV4_MAX_PARAMS; i++)
		pv[i] = (struct sigv4_param){"p", "v"};
	BAD(r.method = NULL);
	BAD(r.method = "");
	BAD(r.method = "G T");
	BAD(r.method = "GETGETGETGETGETGE");
	BAD(r.host = NULL);
	BAD(r.host = "");
	BAD(r.host = "a b");
	BAD(r.host = "a\r\nX-Evil: 1");
	BAD(r.path = NULL);
	BAD(r.path = "");
	BAD(r.path = "k");
	BAD(r.path = big); /* SIGV4_MAX_PATH + 1 bytes */
	BAD(r.region = NULL);
	BAD(r.region = "us/east");
	BAD(r.service = "");
	BAD(r.payload_hash = NULL);
	BAD(r.payload_hash = "abc");
	BAD(r.payload_hash = "UNSIGNED PAYLOAD");
	BAD(r.when = -1);
	BAD(r.when = (time_t)(sizeof(time_t) > 4 ? 253402300800LL : -2));
	BAD(r.nquery = 1);
	BAD(r.query = pv; r.nquery = SIGV4_MAX_PARAMS + 1);
	BAD(r.headers = hv; r.nheaders = SIGV4_MAX_HEADERS + 1);
	BAD(r.nheaders = 1);
}

static void test_bad_fields(char *big)
{
	static const struct sigv4_header bad_h[] = {
	    {"", "v"},
	    {"a b", "v"},
	    {"a:b", "v"},
	    {NULL, "v"},
	    {"x", NULL},
	    {"x", "a\r\nb"},
	    {"x", "a\nb"},
	    {"x", "a\x7f"},
	    {"Host", "h"},
	    {"X-Amz-Date", "d"},
	    {"authorization", "a"},
	    {"x-amz-content-sha256", EMPTY},
	    {"X-AMZ-SECURITY-TOKEN", "t"},
	};
	static const struct sigv4_param bad_p[] = {{NULL, "v"}, {"", "v"}};
	struct sigv4_param longp = {"p", big};
	struct sigv4_header longh = {"x", big};

	for (size_t i = 0; i < sizeof(bad_h) / sizeof(bad_h[0]); i++)
		BAD(r.headers = &bad_h[i]; r.nheaders = 1);
	for (size_t i = 0; i < sizeof(bad_p) / sizeof(bad_p[0]); i++)
		BAD(r.query = &bad_p[i]; r.nquery = 1);
	BAD(r.query = &longp; r.nquery = 1);
	BAD(r.headers = &longh; r.nheaders = 1);
	BAD(c.access_key = NULL);
	BAD(c.access_key = "");
	BAD(c.access_key = "AK/ID");
	BAD(c.access_key = "AK ID");
	BAD(c.secret_key = NULL);
	BAD(c.secret_key = "");
	BAD(c.secret_key = big);
	BAD(c.session_token = "tok\r\nen");
	BAD(c.session_token = big);
	expect_einval(NULL, NULL, 0, __LINE__);
	{
		struct sigv4_request r = s3_request("GET", "/k");

		expect_einval(&r, NULL, 0, __LINE__);
	}
	CHECK_INT(sigv4_sign(NULL, NULL, NULL, NULL), -EINVAL);
}

static void test_bad_presign(void)
{
	static const struct sigv4_param sig = {"X-Amz-Signature", "x"};
	static const struct sigv4_param cred = {"x-amz-credential", "x"};
	struct sigv4_request r = s3_request("GET", "/k");
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;

	expect_einval(&r, &c, 604801, __LINE__);
	expect_einval(&r, &c, (unsigned)-1, __LINE__);
	CHECK_INT(sigv4_presign(&r, &c, NULL, 0, NULL), -EINVAL);
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_presign(&r, &c, NULL, 0, &out), -EINVAL);
	CHECK_INT(sigv4_presign(&r, &c, NULL, 1, &out), 0);
	CHECK(strstr(buf_str(&out.canonical_query), "X-Amz-Expires=1&"));
	CHECK_INT(sigv4_presign(&r, &c, NULL, 604800, &out), 0);
	CHECK(strstr(buf_str(&out.canonical_query), "X-Amz-Expires=604800&"));
	sigv4_signed_release(&out);
	r.query = &sig;
	r.nquery = 1;
	expect_einval(&r, &c, 60, __LINE__);
	r.query = &cred;
	expect_einval(&r, &c, 60, __LINE__);
	/* Header signing does not reserve those names. */
	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	sigv4_signed_release(&out);
}

/* Limits are inclusive; output that outgrows a buffer is -E2BIG. */
static void test_limits(char *big)
{
	struct sigv4_header hv[SIGV4_MAX_HEADERS];
	struct sigv4_param pv[SIGV4_MAX_PARAMS];
	struct sigv4_request r = s3_request("GET", "/k");
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;

	sigv4_signed_init(&out);
	big[SIGV4_MAX_PATH] = '\0';
	r.path = big;
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_INT(out.canonical_uri.len, 1 + 3 * (SIGV4_MAX_PATH - 1));
	r.path = "/k";
	for (size_t i = 0; i < SIGV4_MAX_HEADERS; i++)
		hv[i] = (struct sigv4_header){"x-h", "v"};
	r.headers = hv;
	r.nheaders = SIGV4_MAX_HEADERS;
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	r.nheaders = 0;
	big[SIGV4_MAX_FIELD] = '\0';
	for (size_t i = 0; i < SIGV4_MAX_PARAMS; i++)
		pv[i] = (struct sigv4_param){"p", big + 1};
	r.query = pv;
	r.nquery = SIGV4_MAX_PARAMS;
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), -E2BIG);
	CHECK_INT(out.canonical_request.len + out.canonical_uri.len, 0);
	r.nquery = 2;
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	sigv4_signed_release(&out);
}

/* OUT can be reused; signing is deterministic. */
static void test_reuse(void)
{
	struct sigv4_request r = s3_request("PUT", "/a b");
	struct sigv4_creds c = {S3_AK, S3_SK, NULL};
	struct sigv4_signed out;
	char first[512];

	sigv4_signed_init(&out);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	snprintf(first, sizeof(first), "%s", buf_str(&out.authorization));
	CHECK_INT(sigv4_presign(&r, &c, NULL, 10, &out), 0);
	CHECK_INT(sigv4_sign(&r, &c, NULL, &out), 0);
	CHECK_STR(buf_str(&out.authorization), first);
	CHECK_STR(buf_str(&out.canonical_uri), "/a%20b");
	CHECK_STR(buf_str(&out.canonical_query), "");
	sigv4_signed_release(&out);
	sigv4_signed_release(&out); /* released twice is harmless */
}

int main(void)
{
	/* '/' then bytes that each encode to %XX: SIGV4_MAX_PATH + 1 long. */
	char *big = malloc(SIGV4_MAX_TOKEN + 2);

	if (!big)
		return 1;
	for (size_t i = 0; i < sizeof(suite) / sizeof(suite[0]); i++)
		test_suite_vec(&suite[i]);
	test_s3_examples();
	test_s3_get_object_sts();
	test_s3_presign();
	test_session_token();
	test_uri_encode();
	test_paths();
	test_query_and_headers();
	test_dates();
	test_sha256();
	test_key_cache();
	memset(big, '\xff', SIGV4_MAX_TOKEN + 1);
	big[0] = '/';
	big[SIGV4_MAX_TOKEN + 1] = '\0';
	test_bad_request(big);
	test_bad_fields(big);
	test_bad_presign();
	test_limits(big);
	test_reuse();
	free(big);
	return check_summary("test_sigv4");
}
