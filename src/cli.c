// SPDX-License-Identifier: MIT
/*
 * What the subcommands share: the common options, their defaults from the
 * environment and ~/.aws/config, and opening a SOURCE as a store. Runs at
 * start-up on the main thread only.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "creds.h"
#include "log.h"
#include "opts.h"
#include "s3c.h"
#include "store_local.h"
#include "store_s3.h"

const struct option cli_common_longopts[] = {
	{"endpoint-url", required_argument, NULL, CLI_OPT_ENDPOINT_URL},
	{"region", required_argument, NULL, CLI_OPT_REGION},
	{"profile", required_argument, NULL, CLI_OPT_PROFILE},
	{"no-sign-request", no_argument, NULL, CLI_OPT_NO_SIGN_REQUEST},
	{"addressing-style", required_argument, NULL, CLI_OPT_ADDRESSING},
	{"ca-bundle", required_argument, NULL, CLI_OPT_CA_BUNDLE},
	{"no-verify-ssl", no_argument, NULL, CLI_OPT_NO_VERIFY_SSL},
	{"max-connections", required_argument, NULL, CLI_OPT_MAX_CONNECTIONS},
	{"max-attempts", required_argument, NULL, CLI_OPT_MAX_ATTEMPTS},
	{"connect-timeout", required_argument, NULL, CLI_OPT_CONNECT_TIMEOUT},
	{"stall-timeout", required_argument, NULL, CLI_OPT_STALL_TIMEOUT},
	{"log-level", required_argument, NULL, CLI_OPT_LOG_LEVEL},
	{"log-file", required_argument, NULL, CLI_OPT_LOG_FILE},
	{"verbose", no_argument, NULL, CLI_OPT_VERBOSE},
	{NULL, 0, NULL, 0},
};

const char cli_common_help[] =
	"S3 options (shared by every command):\n"
	"  --endpoint-url URL       S3 endpoint (AWS_ENDPOINT_URL_S3, "
	"AWS_ENDPOINT_URL;\n"
	"                           default https://s3.REGION.amazonaws.com)\n"
	"  --region REGION          signing region (AWS_REGION, "
	"AWS_DEFAULT_REGION,\n"
	"                           the profile's region; default us-east-1)\n"
	"  --profile NAME           profile in ~/.aws/credentials and "
	"~/.aws/config\n"
	"                           (AWS_PROFILE; default 'default')\n"
	"  --no-sign-request        send anonymous requests (public buckets)\n"
	"  --addressing-style path|virtual\n"
	"                           default: path with --endpoint-url, else "
	"virtual\n"
	"  --ca-bundle FILE         CA certificates for HTTPS (AWS_CA_BUNDLE)\n"
	"  --no-verify-ssl          do not verify TLS certificates (unsafe)\n"
	"  --max-connections N      connections to the endpoint (default 64)\n"
	"  --max-attempts N         attempts per request, retries included "
	"(default 10)\n"
	"  --connect-timeout SECS   give up connecting after SECS (default "
	"5)\n"
	"  --stall-timeout SECS     retry a transfer idle for SECS (default "
	"30)\n"
	"  --log-level LEVEL        error, warn, info, debug or trace "
	"(default warn)\n"
	"  --log-file FILE          append log lines to FILE\n"
	"  --verbose                the same as --log-level debug\n"
	"Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
	"AWS_SESSION_TOKEN,\n"
	"then the profile (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE).\n";

struct option *cli_longopts_merge(const struct option *own)
{
	size_t n1 = 0, n2 = 0;
	struct option *all;

	while (own[n1].name)
		n1++;
	while (cli_common_longopts[n2].name)
		n2++;
	all = calloc(n1 + n2 + 1, sizeof(*all));
	if (!all) {
		log_error("out of memory");
		exit(1);
	}
	memcpy(all, own, n1 * sizeof(*all));
	memcpy(all + n1, cli_common_longopts, n2 * sizeof(*all));
	return all;
}

void cli_common_init(struct cli_common *c)
{
	memset(c, 0, sizeof(*c));
	c->max_connections = 64;
	c->max_attempts = 10;
	c->connect_timeout = 5;
	c->stall_timeout = 30;
	c->log_level = LOG_LVL_WARN;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "shardfs %s: usage error: %s\n"
			"Try 'shardfs %s --help'.\n",
		cmd, text, cmd);
	return 2;
}

static int uint_opt(const char *name, const char *arg, uint64_t min,
		    uint64_t max, unsigned *out)
{
	uint64_t v;

	if (opts_parse_uint(arg, min, max, &v) < 0) {
		fprintf(stderr,
			"shardfs: usage error: --%s wants a whole number "
			"from %llu to %llu, not '%s'\n",
			name, (unsigned long long)min, (unsigned long long)max,
			arg);
		return -1;
	}
	*out = (unsigned)v;
	return 1;
}

int cli_common_opt(struct cli_common *c, int opt, const char *arg)
{
	enum log_level lvl;

	switch (opt) {
	case CLI_OPT_ENDPOINT_URL:
		c->endpoint_url = arg;
		return 1;
	case CLI_OPT_REGION:
		c->region = arg;
		return 1;
	case CLI_OPT_PROFILE:
		c->profile = arg;
		return 1;
	case CLI_OPT_NO_SIGN_REQUEST:
		c->no_sign_request = true;
		return 1;
	case CLI_OPT_ADDRESSING:
		if (strcmp(arg, "path") != 0 && strcmp(arg, "virtual") != 0) {
			fprintf(stderr, "shardfs: usage error: "
					"--addressing-style is path or "
					"virtual, not '%s'\n",
				arg);
			return -1;
		}
		c->addressing = arg;
		return 1;
	case CLI_OPT_CA_BUNDLE:
		c->ca_bundle = arg;
		return 1;
	case CLI_OPT_NO_VERIFY_SSL:
		c->no_verify_ssl = true;
		return 1;
	case CLI_OPT_MAX_CONNECTIONS:
		return uint_opt("max-connections", arg, 1, 1024,
				&c->max_connections);
	case CLI_OPT_MAX_ATTEMPTS:
		return uint_opt("max-attempts", arg, 1, 100, &c->max_attempts);
	case CLI_OPT_CONNECT_TIMEOUT:
		return uint_opt("connect-timeout", arg, 1, 3600,
				&c->connect_timeout);
	case CLI_OPT_STALL_TIMEOUT:
		return uint_opt("stall-timeout", arg, 1, 3600,
				&c->stall_timeout);
	case CLI_OPT_LOG_LEVEL:
		if (log_parse_level(arg, &lvl) < 0) {
			fprintf(stderr, "shardfs: usage error: --log-level is "
					"error, warn, info, debug or trace, "
					"not '%s'\n",
				arg);
			return -1;
		}
		c->log_level = (int)lvl;
		return 1;
	case CLI_OPT_LOG_FILE:
		c->log_file = arg;
		return 1;
	case CLI_OPT_VERBOSE:
		c->log_level = LOG_LVL_DEBUG;
		return 1;
	default:
		return 0;
	}
}

static const char *env_first(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

int cli_common_finish(struct cli_common *c)
{
	int rc;

	log_set_level((enum log_level)c->log_level);
	if (c->log_file && (rc = log_set_file(c->log_file)) < 0) {
		log_error("cannot open log file %s: %s", c->log_file,
			  strerror(-rc));
		return -1;
	}
	if (!c->endpoint_url)
		c->endpoint_url = env_first("AWS_ENDPOINT_URL_S3",
					    "AWS_ENDPOINT_URL");
	if (!c->region)
		c->region = env_first("AWS_REGION", "AWS_DEFAULT_REGION");
	if (!c->ca_bundle)
		c->ca_bundle = env_first("AWS_CA_BUNDLE", NULL);
	if (!c->profile)
		c->profile = env_first("AWS_PROFILE", NULL);
	if (c->endpoint_url) {
		struct opts_endpoint ep;

		if (opts_parse_endpoint(c->endpoint_url, &ep) < 0) {
			fprintf(stderr,
				"shardfs: usage error: '%s' is not an endpoint "
				"URL (http[s]://HOST[:PORT][/PATH])\n",
				c->endpoint_url);
			return -2;
		}
	}
	return 0;
}

int cli_split_s3url(const char *cmd, const char *url, char **bucket,
		    char **key)
{
	int rc = opts_parse_s3url(url, bucket, key);

	if (rc < 0) {
		cli_usage_error(cmd, "'%s' is not s3://BUCKET[/KEY]", url);
		return -EINVAL;
	}
	return 0;
}

/* Endpoint URL, region and addressing, with the profile's settings as the
 * last fallback before the defaults. */
static int engine_target(const struct cli_common *c, const struct creds *cr,
			 struct s3c_conf *conf, struct opts_endpoint *ep,
			 char **aws_url)
{
	const char *url = c->endpoint_url;

	conf->region = c->region ? c->region
		       : cr->region ? cr->region
				    : "us-east-1";
	if (!url)
		url = cr->endpoint_url;
	if (!url) {
		if (asprintf(aws_url, "https://s3.%s.amazonaws.com",
			     conf->region) < 0)
			return -ENOMEM;
		url = *aws_url;
	}
	if (opts_parse_endpoint(url, ep) < 0) {
		fprintf(stderr, "shardfs: usage error: '%s' is not an "
				"endpoint URL (http[s]://HOST[:PORT])\n",
			url);
		return -EINVAL;
	}
	conf->scheme = ep->https ? "https" : "http";
	/* An IPv6 literal goes into URLs and Host headers in brackets. */
	if (strchr(ep->host, ':')) {
		char v6[sizeof(ep->host) + 2];

		snprintf(v6, sizeof(v6), "[%s]", ep->host);
		if (strlen(v6) >= sizeof(ep->host))
			return -EINVAL;
		memcpy(ep->host, v6, strlen(v6) + 1);
	}
	conf->host = ep->host;
	conf->port = ep->port;
	conf->base_path = ep->path;
	conf->virtual_host = c->addressing
				     ? strcmp(c->addressing, "virtual") == 0
				     : !(c->endpoint_url || cr->endpoint_url);
	return 0;
}

int cli_open_engine(const struct cli_common *c, struct s3c **out)
{
	struct creds_conf cc = {.profile = c->profile,
				.no_sign_request = c->no_sign_request};
	struct creds cr;
	struct s3c_conf conf;
	struct opts_endpoint ep;
	char err[512], *aws_url = NULL;
	int rc;

	memset(&ep, 0, sizeof(ep));
	rc = creds_load(&cc, &cr, err, sizeof(err));
	if (rc < 0) {
		log_error("%s", err);
		return rc;
	}
	s3c_conf_init(&conf);
	rc = engine_target(c, &cr, &conf, &ep, &aws_url);
	if (rc < 0)
		goto out;
	conf.access_key = cr.anonymous ? NULL : cr.access_key;
	conf.secret_key = cr.anonymous ? NULL : cr.secret_key;
	conf.session_token = cr.anonymous ? NULL : cr.session_token;
	conf.ca_bundle = c->ca_bundle;
	conf.no_verify_ssl = c->no_verify_ssl;
	conf.max_connections = c->max_connections;
	conf.max_attempts = c->max_attempts;
	conf.connect_timeout = c->connect_timeout;
	conf.stall_timeout = c->stall_timeout;
	if (c->ca_bundle && access(c->ca_bundle, R_OK) != 0) {
		log_error("cannot read the CA bundle %s: %s", c->ca_bundle,
			  strerror(errno));
		rc = -ENOENT;
		goto out;
	}
	rc = s3c_new(&conf, out);
	if (rc < 0)
		log_error("cannot start the S3 engine: %s", strerror(-rc));
out:
	free(aws_url);
	creds_release(&cr);
	return rc;
}

int cli_open_store(const struct cli_common *c, const char *source,
		   struct store **out)
{
	char *bucket = NULL, *prefix = NULL, msg[1024] = "";
	struct s3c *engine = NULL;
	int rc;

	if (strncmp(source, "s3://", 5) == 0) {
		rc = cli_split_s3url("mount", source, &bucket, &prefix);
		if (!rc)
			rc = cli_open_engine(c, &engine);
		if (!rc) {
			rc = store_s3_new(engine, bucket, prefix, out);
			if (rc)
				s3c_free(engine);
		}
		free(bucket);
		free(prefix);
		return rc;
	}
	if (strncmp(source, "file://", 7) == 0)
		source += 7;
	rc = store_local_new(source, out, msg, sizeof(msg));
	if (rc < 0)
		log_error("%s", msg[0] ? msg : strerror(-rc));
	return rc;
}
