// SPDX-License-Identifier: MIT
/*
 * creds: environment, profiles in both files, precedence, missing and
 * partial profiles, INI details (CRLF, comments, nested blocks), bounds,
 * and the permission warning. Files live in a mkdtemp() directory that is
 * removed at the end; the environment is a table passed through the
 * getenv callback.
 */
#include "creds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

#define MAX_VARS 12
/* Under HOME (tmpdir). */
#define CRED ".aws/credentials"
#define CFG  ".aws/config"

struct env {
	const char *vars[MAX_VARS][2]; /* name, value; NULL name ends */
};

static const char *env_lookup(const char *name, void *arg)
{
	const struct env *e = arg;

	for (int i = 0; i < MAX_VARS && e->vars[i][0]; i++)
		if (strcmp(e->vars[i][0], name) == 0)
			return e->vars[i][1];
	return NULL;
}

static char tmpdir[64];
static char logpath[128];
static char awsdir[128];

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror(path);
		exit(1);
	}
	fchmod(fd, mode);
	close(fd);
}

static void remove_file(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	unlink(path);
}

/* Runs creds_load() with HOME = tmpdir plus VARS. */
static int load(const char *profile, bool anon, const struct env *vars,
		struct creds *out, char *err, size_t errlen)
{
	struct env e = *vars;
	struct creds_conf conf = {.profile = profile,
				  .no_sign_request = anon,
				  .getenv = env_lookup,
				  .getenv_arg = &e,
				  .home = tmpdir};

	return creds_load(&conf, out, err, errlen);
}

static const char cred_file[] = "# shared credentials\n"
				"[default]\n"
				"aws_access_key_id = AKIDDEFAULT\n"
				"aws_secret_access_key = secretdefault\n"
				"\n"
				"; another comment\n"
				"[dev]\r\n"
				"  AWS_Access_Key_ID\t=  AKIDDEV  \r\n"
				"aws_secret_access_key:secretdev\r\n"
				"aws_session_token = tokendev==\r\n"
				"[half]\n"
				"aws_access_key_id = AKIDHALF\n"
				"[role]\n"
				"role_arn = arn:aws:iam::123:role/x\n"
				"source_profile = default\n";

static const char config_file[] = "[default]\n"
				  "region = eu-west-3\n"
				  "s3 =\n"
				  "  endpoint_url = http://nested.invalid\n"
				  "  addressing_style = path\n"
				  "output = json\n"
				  "[profile dev]\n"
				  "region=us-west-2\n"
				  "endpoint_url = http://127.0.0.1:9000\n"
				  "aws_access_key_id = AKIDCFGDEV\n"
				  "aws_secret_access_key = secretcfgdev\n"
				  "[profile  cfgonly ]\n"
				  "aws_access_key_id = AKIDCFGONLY\n"
				  "aws_secret_access_key = secretcfgonly\n"
				  "[dev]\n"
				  "region = not-a-profile-section\n"
				  "[services x]\n"
				  "s3 =\n"
				  "  endpoint_url = http://services.invalid\n";

struct case_ {
	const char *name;
	const char *profile;
	bool anon;
	struct env env;
	int rc;
	const char *access_key;
	const char *secret_key;
	const char *token;
	const char *region;
	const char *endpoint;
	enum creds_source source;
	const char *err_has; /* substring of the message on failure */
};

static const struct case_ cases[] = {
    {"default profile from files",
     NULL,
     false,
     {{{NULL}}},
     0,
     "AKIDDEFAULT",
     "secretdefault",
     NULL,
     "eu-west-3",
     NULL,
     CREDS_SRC_CREDENTIALS,
     NULL},
    {"--profile dev: CRLF, case, ':' and nested blocks",
     "dev",
     false,
     {{{NULL}}},
     0,
     "AKIDDEV",
     "secretdev",
     "tokendev==",
     "us-west-2",
     "http://127.0.0.1:9000",
     CREDS_SRC_CREDENTIALS,
     NULL},
    {"AWS_PROFILE",
     NULL,
     false,
     {{{"AWS_PROFILE", "dev"}}},
     0,
     "AKIDDEV",
     "secretdev",
     "tokendev==",
     "us-west-2",
     NULL,
     CREDS_SRC_CREDENTIALS,
     NULL},
    {"option beats AWS_PROFILE",
     "default",
     false,
     {{{"AWS_PROFILE", "dev"}}},
     0,
     "AKIDDEFAULT",
     "secretdefault",
     NULL,
     "eu-west-3",
     NULL,
     CREDS_SRC_CREDENTIALS,
     NULL},
    {"config file only, spaced header",
     "cfgonly",
     false,
     {{{NULL}}},
     0,
     "AKIDCFGONLY",
     "secretcfgonly",
     NULL,
     NULL,
     NULL,
     CREDS_SRC_CONFIG,
     NULL},
    {"environment beats files",
     "dev",
     false,
     {{{"AWS_ACCESS_KEY_ID", "AKIDENV"},
       {"AWS_SECRET_ACCESS_KEY", "secretenv"},
       {"AWS_SESSION_TOKEN", "tokenenv"}}},
     0,
     "AKIDENV",
     "secretenv",
     "tokenenv",
     "us-west-2",
     NULL,
     CREDS_SRC_ENV,
     NULL},
    {"empty env values are unset",
     NULL,
     false,
     {{{"AWS_ACCESS_KEY_ID", ""}, {"AWS_SECRET_ACCESS_KEY", ""}}},
     0,
     "AKIDDEFAULT",
     "secretdefault",
     NULL,
     "eu-west-3",
     NULL,
     CREDS_SRC_CREDENTIALS,
     NULL},
    {"no-sign-request beats everything",
     "dev",
     true,
     {{{"AWS_ACCESS_KEY_ID", "AKIDENV"}}},
     0,
     NULL,
     NULL,
     NULL,
     "us-west-2",
     NULL,
     CREDS_SRC_NONE,
     NULL},
    {"key without secret in env",
     NULL,
     false,
     {{{"AWS_ACCESS_KEY_ID", "AKIDENV"}}},
     -EINVAL,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "AWS_SECRET_ACCESS_KEY is not"},
    {"secret without key in env",
     NULL,
     false,
     {{{"AWS_SECRET_ACCESS_KEY", "s"}}},
     -EINVAL,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "AWS_ACCESS_KEY_ID is not"},
    {"missing profile",
     "nope",
     false,
     {{{NULL}}},
     -ENOENT,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "profile 'nope' not found in "},
    {"missing profile from AWS_PROFILE, even with env keys",
     NULL,
     false,
     {{{"AWS_PROFILE", "nope"},
       {"AWS_ACCESS_KEY_ID", "a"},
       {"AWS_SECRET_ACCESS_KEY", "b"}}},
     -ENOENT,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "profile 'nope'"},
    {"[dev] in config is not profile dev",
     "half",
     false,
     {{{NULL}}},
     -EINVAL,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "has aws_access_key_id but no aws_secret_access_key"},
    {"profile without keys",
     "role",
     false,
     {{{NULL}}},
     -ENOKEY,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "credential_process are not supported"},
    {"empty profile name",
     "",
     false,
     {{{NULL}}},
     -EINVAL,
     NULL,
     NULL,
     NULL,
     NULL,
     NULL,
     0,
     "empty profile"},
};

static void run_case(const struct case_ *c)
{
	struct creds cr;
	char err[512] = "junk";
	int rc = load(c->profile, c->anon, &c->env, &cr, err, sizeof(err));
	int failed = check_failed;

	CHECK_INT(rc, c->rc);
	if (rc) {
		CHECK(cr.access_key == NULL && cr.profile == NULL);
		CHECK(c->err_has && strstr(err, c->err_has));
	} else if (!c->rc) {
		CHECK_STR(err, "");
		CHECK_INT(cr.anonymous, c->anon);
		CHECK_INT(cr.source, c->source);
		CHECK(c->access_key ? cr.access_key &&
					  !strcmp(cr.access_key, c->access_key)
				    : !cr.access_key);
		CHECK(c->secret_key ? cr.secret_key &&
					  !strcmp(cr.secret_key, c->secret_key)
				    : !cr.secret_key);
		CHECK(c->token ? cr.session_token &&
				     !strcmp(cr.session_token, c->token)
			       : !cr.session_token);
		CHECK(c->region ? cr.region && !strcmp(cr.region, c->region)
				: !cr.region);
		if (c->endpoint)
			CHECK_STR(cr.endpoint_url, c->endpoint);
		CHECK(cr.profile != NULL);
		creds_release(&cr);
		creds_release(&cr);
	}
	if (check_failed != failed)
		fprintf(stderr, "  case: %s (rc %d, err \"%s\")\n", c->name, rc,
			err);
}

static void test_no_files(void)
{
	static const struct env none = {{{NULL}}};
	static const struct env keys = {
	    {{"AWS_ACCESS_KEY_ID", "a"}, {"AWS_SECRET_ACCESS_KEY", "b"}}};
	struct creds cr;
	char err[512];

	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), -ENOKEY);
	CHECK(strstr(err, "AWS_ACCESS_KEY_ID") && strstr(err, "--no-sign"));
	CHECK(strstr(err, ".aws/credentials") != NULL);
	CHECK_INT(load(NULL, false, &keys, &cr, err, sizeof(err)), 0);
	CHECK_STR(cr.access_key, "a");
	CHECK_STR(cr.profile, "default");
	CHECK(cr.region == NULL && cr.source == CREDS_SRC_ENV);
	creds_release(&cr);
	CHECK_INT(load(NULL, true, &none, &cr, err, sizeof(err)), 0);
	CHECK(cr.anonymous && !cr.access_key);
	creds_release(&cr);
	/* An explicit "default" must exist, as in the AWS CLI. */
	CHECK_INT(load("default", false, &keys, &cr, err, sizeof(err)),
		  -ENOENT);
	/* ERRLEN 0 is allowed. */
	CHECK_INT(load(NULL, false, &none, &cr, NULL, 0), -ENOKEY);
}

static void test_paths(void)
{
	struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", "~/other-creds"},
			 {"AWS_CONFIG_FILE", NULL},
			 {"AWS_PROFILE", "p"}}};
	char cfg[256];
	struct creds cr;
	char err[512];

	snprintf(cfg, sizeof(cfg), "%s/other-config", tmpdir);
	e.vars[1][1] = cfg;
	write_file("other-creds",
		   "[p]\naws_access_key_id=k\n"
		   "aws_secret_access_key=s\n",
		   0600);
	write_file("other-config", "[profile p]\nregion = ap-south-1\n", 0600);
	CHECK_INT(load(NULL, false, &e, &cr, err, sizeof(err)), 0);
	CHECK_STR(cr.access_key, "k");
	CHECK_STR(cr.region, "ap-south-1");
	CHECK(cr.source_file && strstr(cr.source_file, "other-creds"));
	creds_release(&cr);
	remove_file("other-creds");
	remove_file("other-config");
}

/* FILE holds TEXT; loading the default profile fails with RC and a
 * message containing HAS. */
static void expect_bad_file(const char *text, int rc, const char *has)
{
	static const struct env none = {{{NULL}}};
	struct creds cr;
	char err[512] = "";

	write_file(CRED, text, 0600);
	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), rc);
	CHECK(strstr(err, has) != NULL);
	if (!strstr(err, has))
		fprintf(stderr, "  got \"%s\", want \"%s\"\n", err, has);
}

static void test_bad_files(void)
{
	char *big;
	size_t n = CREDS_MAX_FILE + 10;

	expect_bad_file("[default]\naws_access_key_id\n", -EINVAL,
			"credentials:2: expected 'name = value'");
	expect_bad_file("aws_access_key_id = x\n", -EINVAL,
			"credentials:1: setting outside any [section]");
	expect_bad_file("[default\n", -EINVAL,
			"credentials:1: malformed section header");
	expect_bad_file("[default]\n= x\n", -EINVAL, "credentials:2:");
	big = malloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	expect_bad_file(big, -EFBIG, "is larger than");
	big[CREDS_MAX_LINE + 5] = '\n';
	big[CREDS_MAX_LINE + 6] = '\0';
	expect_bad_file(big, -EINVAL, "credentials:1: line longer");
	free(big);
	remove_file(CRED);

	/* A directory where the file should be. */
	static const struct env none = {{{NULL}}};
	struct creds cr;
	char path[256], err[512];

	snprintf(path, sizeof(path), "%s/" CRED, tmpdir);
	CHECK_INT(mkdir(path, 0700), 0);
	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "is not a regular file") != NULL);
	rmdir(path);
}

static size_t log_size(void)
{
	struct stat st;

	return stat(logpath, &st) ? 0 : (size_t)st.st_size;
}

static bool log_contains(const char *s)
{
	char text[8192];
	FILE *f = fopen(logpath, "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

	if (f)
		fclose(f);
	text[n] = '\0';
	return strstr(text, s) != NULL;
}

static void test_permissions(void)
{
	static const struct env none = {{{NULL}}};
	struct creds cr;
	char err[512];
	size_t before;

	log_set_file(logpath);
	write_file(CRED, cred_file, 0644);
	before = log_size();
	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), 0);
	creds_release(&cr);
	CHECK(log_size() > before);
	CHECK(log_contains("chmod 600"));
	CHECK(log_contains("/credentials"));

	write_file(CRED, cred_file, 0600);
	before = log_size();
	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), 0);
	creds_release(&cr);
	CHECK_INT(log_size(), before);

	/* A loose config file matters when the profile has a secret there. */
	write_file(CFG, config_file, 0666);
	CHECK_INT(load(NULL, false, &none, &cr, err, sizeof(err)), 0);
	creds_release(&cr);
	CHECK_INT(log_size(), before);
	CHECK_INT(load("cfgonly", false, &none, &cr, err, sizeof(err)), 0);
	creds_release(&cr);
	CHECK(log_size() > before);
	CHECK(log_contains("/config"));
	write_file(CFG, config_file, 0600);

	CHECK(!log_contains("secret"));
	log_set_file(NULL);
}

int main(void)
{
	strcpy(tmpdir, "/tmp/test_creds.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(logpath, sizeof(logpath), "%s/log", tmpdir);
	snprintf(awsdir, sizeof(awsdir), "%s/.aws", tmpdir);
	mkdir(awsdir, 0700);

	test_no_files();
	write_file(CRED, cred_file, 0600);
	write_file(CFG, config_file, 0600);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	test_paths();
	test_permissions();
	test_bad_files();

	remove_file(CRED);
	remove_file(CFG);
	remove_file("log");
	rmdir(awsdir);
	if (rmdir(tmpdir))
		perror(tmpdir);
	return check_summary("test_creds");
}
