/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_CREDS_H
#define SHARDFS_CREDS_H

/*
 * Credential resolution, following the AWS CLI.
 *
 * The profile is conf->profile (--profile), else AWS_PROFILE, else
 * "default". Keys come from the first of:
 *   1. conf->no_sign_request: anonymous (no keys);
 *   2. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *      one of the pair without the other is an error;
 *   3. the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default
 *      ~/.aws/credentials), section [PROFILE];
 *   4. the config file (AWS_CONFIG_FILE, default ~/.aws/config), section
 *      [profile PROFILE] ([default] or [profile default] for "default");
 * with aws_access_key_id, aws_secret_access_key, aws_session_token.
 * `region` and `endpoint_url` are read from the config profile whatever
 * the source of the keys. A profile named explicitly (option or
 * AWS_PROFILE) that is in neither file is an error, even with keys in the
 * environment (as the AWS CLI does).
 *
 * Files: INI, at most CREDS_MAX_FILE bytes and CREDS_MAX_LINE bytes per
 * line; full-line '#' and ';' comments; '=' or ':' between name and
 * value; whitespace around names and values is dropped; names are
 * case-insensitive, section names case-sensitive; CRLF accepted; indented
 * lines after a setting are nested settings (e.g. "s3 =" blocks) and are
 * ignored. A missing file is an empty file. The credentials file (or a
 * config file whose profile section holds a secret) that group or others
 * may read or write draws one log_warn() per file per load, naming the
 * file and suggesting chmod 600; loading still succeeds.
 *
 * Not pure (reads two files), but has no globals and never calls getenv()
 * directly when conf->getenv is set, so tests control the environment.
 * Never logs a secret.
 */

#include <stdbool.h>
#include <stddef.h>

#define CREDS_MAX_FILE (1u << 20)
#define CREDS_MAX_LINE 16384 /* STS session tokens can be long */

/* Returns the value of environment variable NAME or NULL; the string must
 * stay valid until creds_load() returns. */
typedef const char *creds_getenv_fn(const char *name, void *arg);

struct creds_conf {
	const char *profile;	 /* borrowed; --profile, NULL when not given */
	bool no_sign_request;	 /* --no-sign-request */
	creds_getenv_fn *getenv; /* NULL = getenv(3) */
	void *getenv_arg;	 /* passed to getenv */
	const char *home;	 /* borrowed; NULL = $HOME via getenv */
};

enum creds_source {
	CREDS_SRC_NONE = 0,    /* anonymous (--no-sign-request) */
	CREDS_SRC_ENV,	       /* AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY */
	CREDS_SRC_CREDENTIALS, /* the shared credentials file */
	CREDS_SRC_CONFIG,      /* the config file */
};

/*
 * Result of creds_load(). Every pointer is owned by the struct and freed
 * by creds_release(), which also wipes the key strings first.
 */
struct creds {
	bool anonymous;		  /* no keys: send unsigned requests */
	enum creds_source source; /* where the keys came from */
	char *access_key;	  /* NULL when anonymous */
	char *secret_key;	  /* NULL when anonymous; never log it */
	char *session_token;	  /* NULL when none; never log it */
	char *profile;		  /* the profile name used, never NULL */
	char *region;		  /* config profile's region, or NULL */
	char *endpoint_url;	  /* config profile's endpoint_url, or NULL */
	char *source_file;	  /* file the keys came from, or NULL */
};

/*
 * Resolves credentials into OUT (overwritten; creds_release() it after
 * success; on failure it holds nothing). On failure returns a negative
 * errno and writes one user-facing sentence (no trailing newline) into ERR
 * (ERRLEN bytes, may be 0):
 *   -ENOKEY    no credentials anywhere (the message says how to set them)
 *   -ENOENT    the named profile is in neither file
 *   -EINVAL    half a key pair (environment or profile), a malformed file,
 *              an empty profile name
 *   -EFBIG     a file larger than CREDS_MAX_FILE
 *   -ENOMEM, or the errno of opening/reading a file that exists
 */
int creds_load(const struct creds_conf *conf, struct creds *out, char *err,
	       size_t errlen);

/* Wipes and frees everything in C; C may be released again. */
void creds_release(struct creds *c);

#endif
