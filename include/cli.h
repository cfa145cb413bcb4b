/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_CLI_H
#define SHARDFS_CLI_H

/*
 * What the subcommands share: the common options (endpoint, region,
 * profile, addressing, credentials, TLS, connections, logging), their
 * parsing with getopt_long, and turning a SOURCE into a store.
 *
 * Each subcommand is one file (cmd_*.c) with
 *   int cmd_NAME(int argc, char **argv);   // returns the exit status
 * registered in the command table of main.c.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct s3c;

struct cli_common {
	const char *endpoint_url; /* --endpoint-url or env; NULL = AWS */
	const char *region;	  /* resolved, never NULL after finish */
	const char *profile;	  /* --profile or NULL */
	const char *ca_bundle;	  /* --ca-bundle or AWS_CA_BUNDLE */
	const char *addressing;	  /* "path" | "virtual" | NULL = auto */
	const char *log_file;	  /* --log-file */
	bool no_sign_request;
	bool no_verify_ssl;
	unsigned max_connections; /* default 64 */
	unsigned max_attempts;	  /* retries: total attempts, default 10 */
	unsigned connect_timeout; /* seconds, default 5 */
	unsigned stall_timeout;	  /* seconds without progress, default 30 */
	int log_level;		  /* enum log_level */
};

/* Long options every subcommand accepts; values >= CLI_OPT_BASE. */
enum {
	CLI_OPT_BASE = 0x1000,
	CLI_OPT_ENDPOINT_URL = CLI_OPT_BASE,
	CLI_OPT_REGION,
	CLI_OPT_PROFILE,
	CLI_OPT_NO_SIGN_REQUEST,
	CLI_OPT_ADDRESSING,
	CLI_OPT_CA_BUNDLE,
	CLI_OPT_NO_VERIFY_SSL,
	CLI_OPT_MAX_CONNECTIONS,
	CLI_OPT_MAX_ATTEMPTS,
	CLI_OPT_CONNECT_TIMEOUT,
	CLI_OPT_STALL_TIMEOUT,
	CLI_OPT_LOG_LEVEL,
	CLI_OPT_LOG_FILE,
	CLI_OPT_VERBOSE,
	CLI_OPT_END, /* subcommands number their own options from here */
};

/* Terminated by a zero entry. Subcommands append it to their own table
 * with cli_longopts_merge(). */
extern const struct option cli_common_longopts[];

/* Help text for the common options, for each subcommand's --help. */
extern const char cli_common_help[];

/*
 * Builds OWN + common options into a new array (caller frees). Aborts the
 * process on allocation failure (start-up only).
 */
struct option *cli_longopts_merge(const struct option *own);

void cli_common_init(struct cli_common *c);

/*
 * Handles one getopt result that is a common option. Returns 1 when OPT
 * was a common option and ARG was valid, 0 when OPT is not a common
 * option, -1 after printing a usage error for a bad value.
 */
int cli_common_opt(struct cli_common *c, int opt, const char *arg);

/*
 * Fills what the options left unset from the environment and config
 * (region, endpoint, CA bundle), checks the endpoint URL and applies the
 * log settings. Prints the error and returns -1 on failure, -2 for a usage
 * error (a malformed endpoint URL): the negated exit status.
 */
int cli_common_finish(struct cli_common *c);

/*
 * Opens SOURCE (s3://BUCKET[/PREFIX], file://DIR or a plain path) as a
 * store. For S3 it resolves credentials and starts the engine, which the
 * store owns (store_s3_engine() reaches it).
 * On failure prints one clear line to stderr and returns a negative errno.
 */
int cli_open_store(const struct cli_common *c, const char *source,
		   struct store **out);

/*
 * Resolves credentials and starts an S3 engine for the options. On failure
 * prints one clear line to stderr and returns a negative errno. The caller
 * frees the engine with s3c_free().
 */
int cli_open_engine(const struct cli_common *c, struct s3c **out);

/*
 * Splits s3://BUCKET[/KEY] into owned strings (caller frees). Prints a
 * usage error for CMD and returns -EINVAL when URL is not of that form.
 */
int cli_split_s3url(const char *cmd, const char *url, char **bucket,
		    char **key);

/* Prints "shardfs CMD: usage error: ..." and a hint to --help. Returns 2. */
__attribute__((format(printf, 2, 3))) int cli_usage_error(const char *cmd,
							   const char *fmt,
							   ...);

#endif
