// SPDX-License-Identifier: MIT
/*
 * The engine's error mapping and retry rules (tables), and its request
 * life cycle against a port where nothing listens (bounded retries, a clear
 * message, no hang).
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "s3c.h"

struct map_case {
	long status;
	const char *code;
	int curl;
	int want_err;
	bool want_retry;
	const char *hint_part;
};

static const struct map_case cases[] = {
	{200, "", CURLE_OK, 0, false, ""},
	{206, "", CURLE_OK, 0, false, ""},
	{403, "SignatureDoesNotMatch", CURLE_OK, -EACCES, false, "secret key"},
	{403, "InvalidAccessKeyId", CURLE_OK, -EACCES, false, "access key"},
	{403, "AccessDenied", CURLE_OK, -EACCES, false, "credentials"},
	{403, "", CURLE_OK, -EACCES, false, ""},
	{404, "NoSuchBucket", CURLE_OK, -ENOENT, false, "bucket"},
	{404, "NoSuchKey", CURLE_OK, -ENOENT, false, ""},
	{404, "", CURLE_OK, -ENOENT, false, "no such"},
	{412, "PreconditionFailed", CURLE_OK, -ESTALE, false, "changed"},
	{416, "InvalidRange", CURLE_OK, -ERANGE, false, ""},
	{400, "InvalidArgument", CURLE_OK, -EINVAL, false, ""},
	{301, "PermanentRedirect", CURLE_OK, -EREMOTE, false, "region"},
	{500, "InternalError", CURLE_OK, -EIO, true, ""},
	{502, "", CURLE_OK, -EIO, true, ""},
	{503, "SlowDown", CURLE_OK, -EAGAIN, true, "overloaded"},
	{503, "", CURLE_OK, -EAGAIN, true, ""},
	{504, "", CURLE_OK, -EIO, true, ""},
	{429, "", CURLE_OK, -EAGAIN, true, ""},
	{408, "RequestTimeout", CURLE_OK, -EIO, true, ""},
	{0, "", CURLE_COULDNT_CONNECT, -ECONNREFUSED, true, "endpoint"},
	{0, "", CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, false, "endpoint"},
	{0, "", CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, true, ""},
	{0, "", CURLE_RECV_ERROR, -EIO, true, ""},
	{0, "", CURLE_SEND_ERROR, -EIO, true, ""},
	{0, "", CURLE_GOT_NOTHING, -EIO, true, ""},
	{0, "", CURLE_PARTIAL_FILE, -EIO, true, ""},
	{0, "", CURLE_PEER_FAILED_VERIFICATION, -EPROTO, false, "ca-bundle"},
	{200, "", CURLE_WRITE_ERROR, -EFBIG, false, ""},
};

static void test_map(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct map_case *c = &cases[i];
		const char *hint = NULL;
		int err = s3c_map_error(c->status, c->code, c->curl, &hint);

		CHECK_INT(err, c->want_err);
		CHECK_INT(s3c_retryable(c->status, c->code, c->curl),
			  c->want_retry);
		CHECK(hint != NULL && strstr(hint, c->hint_part) != NULL);
	}
}

/* A port that refuses connections: bound, never listening. */
static int closed_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	return ntohs(a.sin_port);
}

static void test_refused(void)
{
	struct s3c_conf conf;
	struct s3c_stats st;
	struct s3c *c = NULL;
	struct s3c_req *r;
	int fd, port = closed_port(&fd);

	CHECK(port > 0);
	s3c_conf_init(&conf);
	conf.scheme = "http";
	conf.host = "127.0.0.1";
	conf.port = (unsigned)port;
	conf.access_key = "AKIDEXAMPLE";
	conf.secret_key = "secret";
	conf.max_attempts = 3;
	conf.retry_base_ms = 10;
	conf.retry_cap_ms = 50;
	CHECK_INT(s3c_new(&conf, &c), 0);
	r = s3c_req_new("GET", "bucket", "a key");
	CHECK(r != NULL);
	CHECK_INT(s3c_perform(c, r), -ECONNREFUSED);
	CHECK_INT(s3c_req_attempts(r), 3);
	CHECK(strstr(s3c_req_errmsg(r), "could not connect") != NULL);
	CHECK(strstr(s3c_req_errmsg(r), "after 3 attempts") != NULL);
	CHECK(strstr(s3c_req_errmsg(r), "secret") == NULL);
	s3c_req_free(r);
	s3c_get_stats(c, &st);
	CHECK_INT(st.requests, 1);
	CHECK_INT(st.retries, 2);
	CHECK_INT(st.errors, 1);
	CHECK_INT(st.in_flight, 0);
	CHECK_INT(st.queued, 0);
	s3c_free(c);
	close(fd);
}

static void test_bad_conf(void)
{
	struct s3c_conf conf;
	struct s3c *c = NULL;

	s3c_conf_init(&conf);
	conf.host = "example.com";
	conf.max_connections = 0;
	CHECK_INT(s3c_new(&conf, &c), -EINVAL);
	s3c_conf_init(&conf);
	conf.host = "example.com";
	conf.scheme = "ftp";
	CHECK_INT(s3c_new(&conf, &c), -EINVAL);
	s3c_conf_init(&conf);
	conf.host = "example.com";
	conf.access_key = "x";
	CHECK_INT(s3c_new(&conf, &c), -EINVAL);
	CHECK(s3c_req_new("TOOLONGMETHOD", "b", "k") == NULL);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	test_map();
	test_refused();
	test_bad_conf();
	curl_global_cleanup();
	return check_summary("test_s3c");
}
