// SPDX-License-Identifier: MIT
/*
 * The program's entry point: the command table. Each subcommand lives in
 * its own cmd_*.c file and parses its own options.
 */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "cmd.h"
#include "log.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"mount", cmd_mount, "mount SOURCE on MOUNTPOINT (s3://BUCKET[/PREFIX] or a directory)"},
	{"umount", cmd_umount, "unmount MOUNTPOINT and wait for its daemon to exit"},
	{"ls", cmd_ls, "list objects and prefixes under s3://BUCKET[/PREFIX]"},
	{"cat", cmd_cat, "write the bytes of s3://BUCKET/KEY to standard output"},
	{"pack", cmd_pack, "pack a directory tree into tar shards and a dataset index"},
	{"index", cmd_index, "write the dataset index of the tar shards under SOURCE"},
	{"stats", cmd_stats, "show the live counters of the mount at MOUNTPOINT"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: shardfs <command> [options] [args]\n\n"
		   "A FUSE filesystem that mounts S3-compatible object storage "
		   "for ML training.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\n'shardfs <command> --help' describes a command's "
		   "options; 'man shardfs' has the details.\n");
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	int rc;

	if (!name) {
		usage(stderr);
		return 2;
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
	    strcmp(name, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("shardfs %s\n", SHARDFS_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) != 0)
			continue;
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_error("cannot initialise libcurl");
			return 1;
		}
		rc = commands[i].fn(argc - 1, argv + 1);
		curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "shardfs: unknown command '%s'\n", name);
	usage(stderr);
	return 2;
}
