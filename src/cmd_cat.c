// SPDX-License-Identifier: MIT
/*
 * shardfs cat [--range START-END] s3://BUCKET/KEY: the object's bytes on
 * standard output. The object is read in ranged GETs of CAT_CHUNK bytes,
 * one after the other; every GET after the first carries If-Match with the
 * ETag of the first, so a concurrent overwrite is an error, never a mix of
 * two versions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd.h"
#include "fdio.h"
#include "log.h"
#include "opts.h"
#include "s3c.h"

#define CAT_CHUNK (8u << 20)

static const char cat_help[] =
	"usage: shardfs cat [OPTIONS] s3://BUCKET/KEY\n"
	"\n"
	"Writes the bytes of one object to standard output.\n"
	"\n"
	"  -r, --range START-END  only bytes START to END (inclusive, as in "
	"HTTP);\n"
	"                         START- reads to the end, -N the last N "
	"bytes\n"
	"  -h, --help             this help\n";

struct cat_state {
	struct s3c *engine;
	const char *bucket, *key;
	char etag[256];
	uint64_t written;
};

/* Object size from "bytes S-E/TOTAL"; UINT64_MAX when unknown. */
static uint64_t total_of(const struct s3c_req *r)
{
	const char *cr = s3c_req_header(r, "content-range"), *slash;
	unsigned long long t;

	if (cr && (slash = strchr(cr, '/')) && sscanf(slash + 1, "%llu", &t) == 1)
		return t;
	cr = s3c_req_header(r, "content-length");
	if (s3c_req_status(r) == 200 && cr && sscanf(cr, "%llu", &t) == 1)
		return t;
	return UINT64_MAX;
}

/*
 * GETs [off, off+len) (shorter at the end of the object) and writes it.
 * *TOTAL receives the object's size. Returns 0, 1 for an empty object
 * (416 on the first read), or a negative errno after printing the error.
 */
static int cat_chunk(struct cat_state *st, uint64_t off, uint64_t len,
		     uint64_t *total)
{
	struct s3c_req *r = s3c_req_new("GET", st->bucket, st->key);
	const char *body;
	size_t n;
	int rc;

	if (!r)
		return -ENOMEM;
	s3c_req_set_range(r, off, len);
	s3c_req_allow_short(r);
	if (st->etag[0])
		s3c_req_set_if_match(r, st->etag);
	rc = s3c_perform(st->engine, r);
	if (rc == -ERANGE && off == 0 && !st->etag[0]) {
		s3c_req_free(r);
		return 1;
	}
	if (rc) {
		log_error("%s", s3c_req_errmsg(r));
		s3c_req_free(r);
		return rc;
	}
	if (!st->etag[0] && s3c_req_header(r, "etag"))
		snprintf(st->etag, sizeof(st->etag), "%s",
			 s3c_req_header(r, "etag"));
	*total = total_of(r);
	body = s3c_req_body(r, &n);
	rc = fdio_write_all(STDOUT_FILENO, body, n);
	if (rc)
		log_error("cannot write to standard output: %s", strerror(-rc));
	st->written += n;
	s3c_req_free(r);
	return rc;
}

static int cat_range(struct cat_state *st, uint64_t start, uint64_t end,
		     bool has_end)
{
	uint64_t total = UINT64_MAX, off = start;

	for (;;) {
		uint64_t len = CAT_CHUNK;
		int rc;

		if (has_end && end - off + 1 < len)
			len = end - off + 1;
		rc = cat_chunk(st, off, len, &total);
		if (rc == 1)
			return 0; /* an empty object */
		if (rc)
			return rc;
		off += len;
		if (total != UINT64_MAX && off >= total)
			return 0;
		if (has_end && off > end)
			return 0;
	}
}

/* The object's size, for a suffix range. */
static int object_size(struct cat_state *st, uint64_t *size)
{
	struct s3c_req *r = s3c_req_new("HEAD", st->bucket, st->key);
	const char *v;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = s3c_perform(st->engine, r);
	if (rc) {
		log_error("%s", s3c_req_errmsg(r));
	} else {
		v = s3c_req_header(r, "content-length");
		*size = v ? strtoull(v, NULL, 10) : 0;
		if (s3c_req_header(r, "etag"))
			snprintf(st->etag, sizeof(st->etag), "%s",
				 s3c_req_header(r, "etag"));
	}
	s3c_req_free(r);
	return rc;
}

static int cat_run(struct cat_state *st, const struct opts_range *rg)
{
	uint64_t size;
	int rc;

	if (!rg)
		return cat_range(st, 0, 0, false);
	if (rg->kind == OPTS_RANGE_SPAN)
		return cat_range(st, rg->start, rg->end, true);
	if (rg->kind == OPTS_RANGE_FROM)
		return cat_range(st, rg->start, 0, false);
	rc = object_size(st, &size);
	if (rc || size == 0)
		return rc;
	return cat_range(st, size > rg->suffix ? size - rg->suffix : 0,
			 size - 1, true);
}

int cmd_cat(int argc, char **argv)
{
	static const struct option own[] = {
		{"range", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct option *longopts = cli_longopts_merge(own);
	struct cat_state st = {0};
	struct cli_common common;
	struct opts_range range, *rg = NULL;
	char *bucket = NULL, *key = NULL;
	int opt, rc = 1;

	cli_common_init(&common);
	while ((opt = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
		int c = cli_common_opt(&common, opt, optarg);

		if (c < 0)
			goto out_usage;
		if (c > 0)
			continue;
		if (opt == 'r') {
			if (opts_parse_range(optarg, &range) < 0) {
				rc = cli_usage_error(
					"cat",
					"--range wants START-END, START- or "
					"-N (with END >= START), not '%s'",
					optarg);
				goto out;
			}
			rg = &range;
		} else if (opt == 'h') {
			printf("%s\n%s", cat_help, cli_common_help);
			rc = 0;
			goto out;
		} else {
			rc = cli_usage_error("cat", "unknown option");
			goto out;
		}
	}
	if (optind != argc - 1) {
		rc = cli_usage_error("cat", "expected one s3://BUCKET/KEY");
		goto out;
	}
	if (cli_split_s3url("cat", argv[optind], &bucket, &key) < 0)
		goto out_usage;
	if (!key[0]) {
		rc = cli_usage_error("cat", "'%s' names no key", argv[optind]);
		goto out;
	}
	rc = -cli_common_finish(&common);
	if (rc || (rc = cli_open_engine(&common, &st.engine) < 0 ? 1 : 0))
		goto out;
	st.bucket = bucket;
	st.key = key;
	rc = cat_run(&st, rg) ? 1 : 0;
	goto out;
out_usage:
	rc = 2;
out:
	s3c_free(st.engine);
	free(bucket);
	free(key);
	free(longopts);
	return rc;
}
