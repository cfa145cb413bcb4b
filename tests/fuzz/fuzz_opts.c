// SPDX-License-Identifier: MIT
/*
 * libFuzzer: option values. The first byte picks the parser, the rest is
 * the NUL-terminated string; parsed results are checked for their
 * documented invariants.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_endpoint(const char *s)
{
	struct opts_endpoint e;

	if (opts_parse_endpoint(s, &e))
		return;
	if (!e.host[0] || e.port == 0 || strpbrk(e.base_url, "?#@ ") ||
	    strncmp(e.base_url, e.https ? "https://" : "http://",
		    e.https ? 8 : 7))
		abort();
}

static void fuzz_range(const char *s)
{
	struct opts_range r;

	if (opts_parse_range(s, &r))
		return;
	if ((r.kind == OPTS_RANGE_SPAN && r.end < r.start) ||
	    (r.kind == OPTS_RANGE_SUFFIX && r.suffix == 0))
		abort();
}

static void fuzz_one(uint8_t which, const char *s)
{
	uint64_t v;
	char *b, *p;
	int64_t t;

	switch (which % 7) {
	case 0:
		opts_parse_size(s, &v);
		break;
	case 1:
		opts_parse_uint(s, 1, 65535, &v);
		break;
	case 2:
		opts_parse_duration(s, &v);
		break;
	case 3:
		if (opts_parse_s3url(s, &b, &p) == 0) {
			if (strlen(b) < 3 || strchr(b, '/'))
				abort();
			opts_bucket_virtual_ok(b);
			free(b);
			free(p);
		}
		break;
	case 4:
		fuzz_endpoint(s);
		break;
	case 5:
		fuzz_range(s);
		break;
	default:
		if (s3xml_parse_time(s, &t, NULL) == 0) {
			char out[S3XML_TIME_LEN];

			if (s3xml_format_time(t, out, sizeof(out)) == -ERANGE)
				abort();
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size == 0 || size > 4096)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	fuzz_one(data[0], s);
	free(s);
	return 0;
}
