// SPDX-License-Identifier: MIT
/*
 * Credential resolution (environment, shared credentials file, config
 * file), in the AWS CLI's order; see creds.h for the rules.
 *
 * Each file is read whole into a bounded buf (CREDS_MAX_FILE) and scanned
 * once for the one section that matters; only the settings of that
 * section are copied out. Every buffer that held a file, and every copy
 * of a key, is wiped with explicit_bzero() before it is freed. Messages
 * name files, profiles and setting names, never values.
 *
 * No globals, no threads; the environment is read through conf->getenv.
 */
#include "creds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"

/* The settings of one profile section found in one file. */
struct ini_profile {
	bool loose;	/* the file is readable/writable by group or others */
	bool found;	/* the section exists */
	char *key_id;	/* owned; aws_access_key_id */
	char *secret;	/* owned; aws_secret_access_key */
	char *token;	/* owned; aws_session_token */
	char *region;	/* owned; config file only */
	char *endpoint; /* owned; endpoint_url, config file only */
};

/* One creds_load() call. */
struct loader {
	const struct creds_conf *conf;
	char *err; /* user message, ERRLEN bytes */
	size_t errlen;
	const char *profile; /* borrowed from conf or the environment */
	bool explicit_profile;
	char cred_path[PATH_MAX]; /* "" when there is no such file */
	char cfg_path[PATH_MAX];
};

/* State of the scan of one file. */
struct ini_scan {
	const char *path;
	bool config; /* config file: [profile NAME] sections */
	const char *profile;
	struct ini_profile *out;
	bool in_section; /* a section header was seen */
	bool in_target;	 /* the current section is the profile */
	bool nested;	 /* inside an "s3 =" style block */
};

__attribute__((format(printf, 2, 3))) static void set_err(struct loader *l,
							  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (l->errlen)
		vsnprintf(l->err, l->errlen, fmt, ap);
	va_end(ap);
}

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static void ini_profile_release(struct ini_profile *p)
{
	wipe_free(p->key_id);
	wipe_free(p->secret);
	wipe_free(p->token);
	free(p->region);
	free(p->endpoint);
	memset(p, 0, sizeof(*p));
}

static const char *env_get(const struct loader *l, const char *name)
{
	const struct creds_conf *c = l->conf;
	const char *v;

	v = c->getenv ? c->getenv(name, c->getenv_arg) : getenv(name);
	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	*e = '\0';
	return s;
}

/* ------------------------------------------------------------------ */
/* Files                                                               */

/*
 * Builds the path of a file: $VAR (with "~/" expanded) or HOME/DEFNAME.
 * Leaves OUT empty when neither is known.
 */
static int file_path(struct loader *l, const char *var, const char *defname,
		     char *out, size_t outlen)
{
	const char *home = l->conf->home ? l->conf->home : env_get(l, "HOME");
	const char *v = env_get(l, var);
	int n;

	out[0] = '\0';
	if (v && strncmp(v, "~/", 2) == 0 && home)
		n = snprintf(out, outlen, "%s/%s", home, v + 2);
	else if (v)
		n = snprintf(out, outlen, "%s", v);
	else if (home)
		n = snprintf(out, outlen, "%s/%s", home, defname);
	else
		return 0;
	if (n < 0 || (size_t)n >= outlen) {
		set_err(l, "%s: path too long", var);
		return -ENAMETOOLONG;
	}
	return 0;
}

/*
 * Reads FD to its end into B, whose cap is CREDS_MAX_FILE + 1. SIZE (from
 * fstat) sizes the buffer once, so that secrets are not left behind in a
 * block freed by realloc() unless the file grows while being read.
 */
static int read_fd(int fd, struct buf *b, size_t size)
{
	int rc = buf_reserve(b, size + 1);

	while (!rc) {
		size_t room = b->alloc - b->len - 1;
		ssize_t n;

		if (b->len > CREDS_MAX_FILE)
			return -EFBIG;
		if (room == 0) {
			rc = buf_reserve(b, b->cap - b->len);
			continue;
		}
		n = read(fd, b->data + b->len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : 0;
		b->len += (size_t)n;
		b->data[b->len] = '\0';
	}
	return rc;
}

/* Reads PATH into B; a missing file reads as empty. */
static int read_file(struct loader *l, const char *path, struct buf *b,
		     struct ini_profile *p)
{
	struct stat st;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return 0;
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		set_err(l, "cannot open %s: %s", path, strerror(-rc));
	} else if (S_ISCHR(st.st_mode)) {
		/* AWS_CONFIG_FILE=/dev/null: the usual way to say "none". */
		rc = 0;
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		set_err(l, "%s is not a regular file", path);
	} else if (st.st_size > (off_t)CREDS_MAX_FILE) {
		rc = -EFBIG;
	} else {
		rc = read_fd(fd, b, (size_t)st.st_size);
		if (rc && rc != -EFBIG)
			set_err(l, "cannot read %s: %s", path, strerror(-rc));
		p->loose = !rc && (st.st_mode & 066);
	}
	if (rc == -EFBIG)
		set_err(l, "%s is larger than %u bytes", path, CREDS_MAX_FILE);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* INI scan                                                            */

static bool section_matches(const struct ini_scan *s, char *name)
{
	if (!s->config)
		return strcmp(name, s->profile) == 0;
	if (strcmp(name, "default") == 0)
		return strcmp(s->profile, "default") == 0;
	if (strncmp(name, "profile", 7) != 0 ||
	    (name[7] != ' ' && name[7] != '\t'))
		return false;
	return strcmp(trim(name + 7), s->profile) == 0;
}

static int set_value(char **dst, const char *v, bool secret)
{
	char *s = strdup(v);

	if (!s)
		return -ENOMEM;
	if (secret)
		wipe_free(*dst);
	else
		free(*dst);
	*dst = s;
	return 0;
}

static int store_setting(struct ini_scan *s, const char *name, const char *v)
{
	struct ini_profile *p = s->out;

	if (strcasecmp(name, "aws_access_key_id") == 0)
		return set_value(&p->key_id, v, true);
	if (strcasecmp(name, "aws_secret_access_key") == 0)
		return set_value(&p->secret, v, true);
	if (strcasecmp(name, "aws_session_token") == 0)
		return set_value(&p->token, v, true);
	if (!s->config)
		return 0;
	if (strcasecmp(name, "region") == 0)
		return set_value(&p->region, v, false);
	if (strcasecmp(name, "endpoint_url") == 0)
		return set_value(&p->endpoint, v, false);
	return 0;
}

static int scan_setting(struct loader *l, struct ini_scan *s, char *line,
			size_t lineno)
{
	char *sep = line + strcspn(line, "=:");
	char *name, *value;

	if (!*sep || sep == line) {
		set_err(l, "%s:%zu: expected 'name = value'", s->path, lineno);
		return -EINVAL;
	}
	if (!s->in_section) {
		set_err(l, "%s:%zu: setting outside any [section]", s->path,
			lineno);
		return -EINVAL;
	}
	*sep = '\0';
	name = trim(line);
	value = trim(sep + 1);
	/* "s3 =" alone opens a block of indented nested settings. */
	s->nested = !*value;
	return s->in_target && *value ? store_setting(s, name, value) : 0;
}

static int scan_line(struct loader *l, struct ini_scan *s, char *line,
		     size_t lineno)
{
	bool indented = *line == ' ' || *line == '\t';
	size_t n;

	line = trim(line);
	if (!*line || *line == '#' || *line == ';')
		return 0;
	if (indented && s->nested)
		return 0;
	s->nested = false;
	if (*line != '[')
		return scan_setting(l, s, line, lineno);
	n = strlen(line);
	if (line[n - 1] != ']') {
		set_err(l, "%s:%zu: malformed section header", s->path, lineno);
		return -EINVAL;
	}
	line[n - 1] = '\0';
	s->in_section = true;
	s->in_target = section_matches(s, trim(line + 1));
	if (s->in_target)
		s->out->found = true;
	return 0;
}

static int scan_text(struct loader *l, struct ini_scan *s, char *text,
		     size_t len)
{
	char *p = text, *end = text + len;
	size_t lineno = 0;
	int rc = 0;

	if (memchr(text, '\0', len)) {
		set_err(l, "%s: not a text file (NUL bytes)", s->path);
		return -EINVAL;
	}
	while (p < end && !rc) {
		char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end; /* text[len] is the buf's NUL */
		lineno++;
		if ((size_t)(eol - p) > CREDS_MAX_LINE) {
			set_err(l, "%s:%zu: line longer than %d bytes", s->path,
				lineno, CREDS_MAX_LINE);
			return -EINVAL;
		}
		*eol = '\0';
		rc = scan_line(l, s, p, lineno);
		p = eol + 1;
	}
	return rc;
}

/* Reads the PROFILE section of PATH ("" = no file) into P. */
static int load_profile(struct loader *l, const char *path, bool config,
			struct ini_profile *p)
{
	struct ini_scan s = {
	    .path = path, .config = config, .profile = l->profile, .out = p};
	struct buf b;
	int rc;

	if (!*path)
		return 0;
	buf_init(&b, CREDS_MAX_FILE + 1);
	rc = read_file(l, path, &b, p);
	if (!rc && b.len)
		rc = scan_text(l, &s, b.data, b.len);
	if (b.data)
		explicit_bzero(b.data, b.alloc);
	buf_release(&b);
	if (!rc && p->loose && (!config || p->secret))
		log_warn("%s is readable or writable by group or others; "
			 "run: chmod 600 %s",
			 path, path);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Resolution                                                          */

static int pick_profile(struct loader *l)
{
	const char *env = env_get(l, "AWS_PROFILE");

	if (l->conf->profile) {
		if (!*l->conf->profile) {
			set_err(l, "empty profile name");
			return -EINVAL;
		}
		l->profile = l->conf->profile;
		l->explicit_profile = true;
	} else if (env) {
		l->profile = env;
		l->explicit_profile = true;
	} else {
		l->profile = "default";
	}
	return 0;
}

static int dup_keys(struct creds *out, const char *id, const char *secret,
		    const char *token)
{
	out->access_key = strdup(id);
	out->secret_key = strdup(secret);
	out->session_token = token ? strdup(token) : NULL;
	if (!out->access_key || !out->secret_key ||
	    (token && !out->session_token))
		return -ENOMEM;
	return 0;
}

static int keys_from_env(struct loader *l, struct creds *out)
{
	const char *id = env_get(l, "AWS_ACCESS_KEY_ID");
	const char *secret = env_get(l, "AWS_SECRET_ACCESS_KEY");

	if (!id && !secret)
		return 1;
	if (!id || !secret) {
		set_err(l, "%s is set but %s is not: set both, or neither",
			id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		return -EINVAL;
	}
	out->source = CREDS_SRC_ENV;
	return dup_keys(out, id, secret, env_get(l, "AWS_SESSION_TOKEN"));
}

/* Keys from one file's profile: 1 when it has none. */
static int keys_from_file(struct loader *l, const struct ini_profile *p,
			  const char *path, enum creds_source src,
			  struct creds *out)
{
	if (!p->key_id && !p->secret)
		return 1;
	if (!p->key_id || !p->secret) {
		set_err(
		    l, "profile '%s' in %s has %s but no %s", l->profile, path,
		    p->key_id ? "aws_access_key_id" : "aws_secret_access_key",
		    p->key_id ? "aws_secret_access_key" : "aws_access_key_id");
		return -EINVAL;
	}
	out->source = src;
	out->source_file = strdup(path);
	if (!out->source_file)
		return -ENOMEM;
	return dup_keys(out, p->key_id, p->secret, p->token);
}

static int no_keys(struct loader *l, const struct ini_profile *cred,
		   const struct ini_profile *cfg)
{
	const char *file = *l->cred_path ? l->cred_path : "~/.aws/credentials";

	if (cred->found || cfg->found)
		set_err(l,
			"profile '%s' has no aws_access_key_id and "
			"aws_secret_access_key (role_arn, sso_* and "
			"credential_process are not supported): add them to "
			"%s, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
			"or use --no-sign-request for a public bucket",
			l->profile, file);
	else
		set_err(l,
			"no credentials found: set AWS_ACCESS_KEY_ID and "
			"AWS_SECRET_ACCESS_KEY, add a [%s] profile to %s, or "
			"use --no-sign-request for a public bucket",
			l->profile, file);
	return -ENOKEY;
}

static int pick_keys(struct loader *l, const struct ini_profile *cred,
		     const struct ini_profile *cfg, struct creds *out)
{
	int rc;

	if (l->conf->no_sign_request) {
		out->anonymous = true;
		out->source = CREDS_SRC_NONE;
		return 0;
	}
	rc = keys_from_env(l, out);
	if (rc <= 0)
		return rc;
	rc = keys_from_file(l, cred, l->cred_path, CREDS_SRC_CREDENTIALS, out);
	if (rc <= 0)
		return rc;
	rc = keys_from_file(l, cfg, l->cfg_path, CREDS_SRC_CONFIG, out);
	if (rc <= 0)
		return rc;
	return no_keys(l, cred, cfg);
}

/* Region and endpoint_url of the config profile, then the keys. */
static int fill(struct loader *l, struct ini_profile *cred,
		struct ini_profile *cfg, struct creds *out)
{
	if (l->explicit_profile && !cred->found && !cfg->found) {
		set_err(l, "profile '%s' not found in %s or %s", l->profile,
			*l->cred_path ? l->cred_path : "~/.aws/credentials",
			*l->cfg_path ? l->cfg_path : "~/.aws/config");
		return -ENOENT;
	}
	out->profile = strdup(l->profile);
	if (!out->profile)
		return -ENOMEM;
	out->region = cfg->region;
	cfg->region = NULL;
	out->endpoint_url = cfg->endpoint;
	cfg->endpoint = NULL;
	return pick_keys(l, cred, cfg, out);
}

int creds_load(const struct creds_conf *conf, struct creds *out, char *err,
	       size_t errlen)
{
	struct loader l = {.conf = conf, .err = err, .errlen = errlen};
	struct ini_profile cred = {0}, cfg = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	rc = pick_profile(&l);
	if (!rc)
		rc = file_path(&l, "AWS_SHARED_CREDENTIALS_FILE",
			       ".aws/credentials", l.cred_path,
			       sizeof(l.cred_path));
	if (!rc)
		rc = file_path(&l, "AWS_CONFIG_FILE", ".aws/config", l.cfg_path,
			       sizeof(l.cfg_path));
	if (!rc)
		rc = load_profile(&l, l.cred_path, false, &cred);
	if (!rc)
		rc = load_profile(&l, l.cfg_path, true, &cfg);
	if (!rc)
		rc = fill(&l, &cred, &cfg, out);
	if (rc == -ENOMEM)
		set_err(&l, "out of memory");
	ini_profile_release(&cred);
	ini_profile_release(&cfg);
	if (rc)
		creds_release(out);
	return rc;
}

void creds_release(struct creds *c)
{
	wipe_free(c->access_key);
	wipe_free(c->secret_key);
	wipe_free(c->session_token);
	free(c->profile);
	free(c->region);
	free(c->endpoint_url);
	free(c->source_file);
	memset(c, 0, sizeof(*c));
}
