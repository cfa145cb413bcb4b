// SPDX-License-Identifier: MIT
/*
 * shardfs ls [--recursive] s3://BUCKET[/PREFIX]: one line per entry, as
 * the listing pages arrive (pagination followed to the end):
 *   SIZE  LAST-MODIFIED  NAME      for objects
 *   PRE NAME/                      for common prefixes
 * Without --recursive, names are relative to the "directory" part of
 * PREFIX (up to its last '/'), like `aws s3 ls`; with it, names are full
 * keys.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd.h"
#include "log.h"
#include "s3c.h"
#include "s3xml.h"
#include "store_s3.h"

static const char ls_help[] =
	"usage: shardfs ls [OPTIONS] s3://BUCKET[/PREFIX]\n"
	"\n"
	"Lists the objects and common prefixes under PREFIX, one per line:\n"
	"size in bytes, last-modified time (ISO 8601, UTC) and name; common\n"
	"prefixes as 'PRE name/'.\n"
	"\n"
	"  -R, --recursive        list every key under PREFIX (no "
	"delimiter)\n"
	"  -h, --help             this help\n";

struct ls_state {
	size_t strip; /* bytes of each key not printed */
	uint64_t count;
};

static int ls_page(const struct s3xml_list *page, void *arg)
{
	struct ls_state *st = arg;
	char when[S3XML_TIME_LEN];

	for (size_t i = 0; i < page->nprefixes; i++) {
		const char *p = page->prefixes[i];

		printf("%32s %s\n", "PRE",
		       strlen(p) >= st->strip ? p + st->strip : p);
		st->count++;
	}
	for (size_t i = 0; i < page->nobjects; i++) {
		const struct s3xml_object *o = &page->objects[i];

		s3xml_format_time(o->mtime, when, sizeof(when));
		printf("%12" PRIu64 " %-20s %s\n", o->size, when,
		       strlen(o->key) >= st->strip ? o->key + st->strip
						   : o->key);
		st->count++;
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		return -EPIPE;
	return 0;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option own[] = {
		{"recursive", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct option *longopts = cli_longopts_merge(own);
	struct ls_state st = {0};
	struct cli_common common;
	char *bucket = NULL, *prefix = NULL, msg[1024];
	struct s3c *engine = NULL;
	bool recursive = false;
	int opt, rc = 1;

	cli_common_init(&common);
	while ((opt = getopt_long(argc, argv, "Rrh", longopts, NULL)) != -1) {
		int c = cli_common_opt(&common, opt, optarg);

		if (c < 0)
			goto out_usage;
		if (c > 0)
			continue;
		if (opt == 'R' || opt == 'r') {
			recursive = true;
		} else if (opt == 'h') {
			printf("%s\n%s", ls_help, cli_common_help);
			rc = 0;
			goto out;
		} else {
			rc = cli_usage_error("ls", "unknown option");
			goto out;
		}
	}
	if (optind != argc - 1) {
		rc = cli_usage_error("ls", "expected one s3://BUCKET[/PREFIX]");
		goto out;
	}
	if (cli_split_s3url("ls", argv[optind], &bucket, &prefix) < 0)
		goto out_usage;
	rc = -cli_common_finish(&common);
	if (rc || (rc = cli_open_engine(&common, &engine) < 0 ? 1 : 0))
		goto out;
	if (!recursive) {
		const char *slash = strrchr(prefix, '/');

		st.strip = slash ? (size_t)(slash - prefix) + 1 : 0;
	}
	rc = store_s3_list_pages(engine, bucket, prefix,
				 recursive ? NULL : "/", ls_page, &st, msg,
				 sizeof(msg));
	if (rc == -EPIPE) {
		rc = 1;
	} else if (rc) {
		log_error("%s", msg);
		rc = 1;
	}
	goto out;
out_usage:
	rc = 2;
out:
	s3c_free(engine);
	free(bucket);
	free(prefix);
	free(longopts);
	return rc;
}
