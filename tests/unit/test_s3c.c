// SPDX-License-Identifier: MIT
/*
 * The engine's error mapping and retry rules (tables), its request life
 * cycle against a port where nothing listens (bounded retries, a clear
 * message, no hang), and against a scripted HTTP server in a thread of
 * this test that breaks answers the way a faulty server or network does:
 * a wrong Content-Range, a 206 to a request without Range, a 200 that
 * ignores the Range, a body shorter than Content-Length, a reset in the
 * middle of a body, a stall, 503 SlowDown. Each must end in a retry and
 * then the right bytes, or in an error: never in wrong bytes.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
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

/* ---------------------------------------------------------------- */
/* A scripted HTTP/1.1 server: one thread, one connection at a time   */
/* ---------------------------------------------------------------- */

enum mini_after {
	MINI_KEEP,  /* keep the connection for the next request */
	MINI_CLOSE, /* close it (FIN) */
	MINI_RESET, /* reset it (RST) */
	MINI_STALL, /* send nothing more until the client closes */
};

struct mini_step {
	const char *head; /* status line and headers, CRLF-separated ("":
			     send nothing); Content-Length is added when
			     missing */
	const char *body;
	size_t send; /* body bytes actually sent; SIZE_MAX: all */
	enum mini_after after;
};

struct mini {
	int lfd;
	unsigned port;
	pthread_t thread;
	const struct mini_step *steps;
	size_t nsteps;
	pthread_mutex_t lock;
	size_t next;	     /* lock: next step to answer with */
	char last_range[64]; /* lock: Range header of the last request */
};

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Reads one request head into BUF; false at EOF or error. */
static bool read_request(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);

		if (r <= 0)
			return false;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			return true;
	}
	return false;
}

static void note_range(struct mini *m, const char *req)
{
	const char *r = strcasestr(req, "\r\nRange: ");
	size_t n = 0;

	pthread_mutex_lock(&m->lock);
	if (r) {
		r += 9;
		n = strcspn(r, "\r");
		if (n >= sizeof(m->last_range))
			n = sizeof(m->last_range) - 1;
		memcpy(m->last_range, r, n);
	}
	m->last_range[n] = '\0';
	pthread_mutex_unlock(&m->lock);
}

/* Serves requests on FD until the script says to end the connection. */
static void mini_conn(struct mini *m, int fd)
{
	char req[8192], head[1024];

	while (read_request(fd, req, sizeof(req))) {
		const struct mini_step *st = NULL;
		struct linger lg = {1, 0};
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		size_t blen;

		note_range(m, req);
		pthread_mutex_lock(&m->lock);
		if (m->next < m->nsteps)
			st = &m->steps[m->next++];
		pthread_mutex_unlock(&m->lock);
		if (!st)
			break;
		blen = strlen(st->body);
		if (!st->head[0])
			snprintf(head, sizeof(head), "%s", "");
		else if (strcasestr(st->head, "Content-Length:"))
			snprintf(head, sizeof(head), "%s\r\n\r\n", st->head);
		else
			snprintf(head, sizeof(head),
				 "%s\r\nContent-Length: %zu\r\n\r\n", st->head,
				 blen);
		send_all(fd, head, strlen(head));
		send_all(fd, st->body, st->send < blen ? st->send : blen);
		if (st->after == MINI_KEEP)
			continue;
		if (st->after == MINI_RESET)
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		if (st->after == MINI_STALL)
			poll(&pfd, 1, 10000); /* the client gives up first */
		break;
	}
	close(fd);
}

static void *mini_main(void *arg)
{
	struct mini *m = arg;
	int fd;

	while ((fd = accept(m->lfd, NULL, NULL)) >= 0)
		mini_conn(m, fd);
	return NULL;
}

/* Starts a server on PORT (0: any free port). */
static int mini_start_on(struct mini *m, const struct mini_step *steps,
			 size_t n, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int one = 1;

	memset(m, 0, sizeof(*m));
	m->steps = steps;
	m->nsteps = n;
	pthread_mutex_init(&m->lock, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->lfd >= 0)
		setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (m->lfd < 0 || bind(m->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(m->lfd, 16) < 0 ||
	    getsockname(m->lfd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	m->port = ntohs(a.sin_port);
	return pthread_create(&m->thread, NULL, mini_main, m) ? -1 : 0;
}

static int mini_start(struct mini *m, const struct mini_step *steps, size_t n)
{
	return mini_start_on(m, steps, n, 0);
}

/* Stops accepting (shutdown() wakes accept()) and joins the thread. */
static void mini_stop(struct mini *m)
{
	shutdown(m->lfd, SHUT_RDWR);
	pthread_join(m->thread, NULL);
	close(m->lfd);
	pthread_mutex_destroy(&m->lock);
}

static size_t mini_answered(struct mini *m)
{
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->next;
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* An engine for PORT; outages are not ridden out unless OUTAGE_S. */
static struct s3c *mini_engine_outage(unsigned port, unsigned attempts,
				      unsigned base_ms, unsigned outage_s)
{
	struct s3c_conf conf;
	struct s3c *c = NULL;

	s3c_conf_init(&conf);
	conf.scheme = "http";
	conf.host = "127.0.0.1";
	conf.port = port;
	conf.access_key = "AKIDEXAMPLE";
	conf.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
	conf.max_attempts = attempts;
	conf.retry_base_ms = base_ms;
	conf.retry_cap_ms = base_ms;
	conf.stall_timeout = 1;
	conf.connect_timeout = 2;
	conf.outage_s = outage_s;
	if (s3c_new(&conf, &c) != 0)
		return NULL;
	return c;
}

static struct s3c *mini_engine(unsigned port, unsigned attempts,
			       unsigned base_ms)
{
	return mini_engine_outage(port, attempts, base_ms, 0);
}

#define OBJ "0123456789abcdefghij" /* the object: 20 bytes */
#define H206(range) "HTTP/1.1 206 Partial Content\r\nContent-Range: " range
#define GOOD_0_9                                                             \
	{H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789",        \
	 SIZE_MAX, MINI_KEEP}
#define SLOWDOWN                                                             \
	"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please " \
	"reduce your request rate.</Message></Error>"

struct fault_case {
	const char *what;
	struct mini_step steps[3];
	size_t nsteps;
	uint64_t off, len; /* len 0: no Range */
	int want_err;
	unsigned want_attempts;
	const char *want_body; /* on success */
	const char *want_msg;  /* part of the message on error */
};

static const struct fault_case fault_cases[] = {
	{"Content-Range end beyond its total, always",
	 {{H206("bytes 0-9/5") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  {H206("bytes 0-9/9") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  {H206("bytes 0-9/3") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP}},
	 3, 0, 10, -EIO, 3, NULL, "wrong Content-Range after 3 attempts"},
	{"shifted Content-Range, then right",
	 {{H206("bytes 1-10/20") "\r\nContent-Length: 10", "123456789a",
	   SIZE_MAX, MINI_KEEP},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"Content-Range with trailing junk, then right",
	 {{H206("bytes 0-9/20x") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"206 without Content-Range, then right",
	 {{"HTTP/1.1 206 Partial Content\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"body shorter than Content-Length, then right",
	 {{H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789", 4,
	   MINI_CLOSE},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"reset in the middle of the body, then right",
	 {{H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789", 5,
	   MINI_RESET},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"reset before any answer, then right",
	 {{"", "", 0, MINI_RESET}, GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"stall in the middle of the body, then right",
	 {{H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789", 3,
	   MINI_STALL},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"stall before any answer, then right",
	 {{"", "", 0, MINI_STALL}, GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"503 SlowDown, then right",
	 {{"HTTP/1.1 503 Slow Down", SLOWDOWN,
	   SIZE_MAX, MINI_KEEP},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"200 ignoring a range that does not start at 0",
	 {{"HTTP/1.1 200 OK\r\nContent-Length: 20", OBJ, SIZE_MAX, MINI_KEEP},
	  {"HTTP/1.1 200 OK\r\nContent-Length: 20", OBJ, SIZE_MAX, MINI_KEEP},
	  {"HTTP/1.1 200 OK\r\nContent-Length: 20", OBJ, SIZE_MAX,
	   MINI_KEEP}},
	 3, 5, 5, -EIO, 3, NULL, "ignored the Range header after 3 attempts"},
	{"200 of the whole object for a range from 0 to its end",
	 {{"HTTP/1.1 200 OK\r\nContent-Length: 20", OBJ, SIZE_MAX, MINI_KEEP}},
	 1, 0, 20, 0, 1, OBJ, NULL},
	{"200 of a larger object for a range from 0, then right",
	 {{"HTTP/1.1 200 OK", OBJ, SIZE_MAX, MINI_KEEP},
	  GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"garbage instead of an answer, then right",
	 {{"HTTX/9 what?", "", 0, MINI_CLOSE}, GOOD_0_9},
	 2, 0, 10, 0, 2, "0123456789", NULL},
	{"206 to a request without Range, always",
	 {{H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  {H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP},
	  {H206("bytes 0-9/20") "\r\nContent-Length: 10", "0123456789",
	   SIZE_MAX, MINI_KEEP}},
	 3, 0, 0, -EIO, 3, NULL, "206 answer to a request without Range"},
};

static void run_fault_case(const struct fault_case *fc)
{
	struct mini m;
	struct s3c *c;
	struct s3c_req *r;
	const char *body;
	size_t len = 0;
	int err;

	fprintf(stderr, "case: %s\n", fc->what);
	CHECK_INT(mini_start(&m, fc->steps, fc->nsteps), 0);
	c = mini_engine(m.port, 3, 1);
	CHECK(c != NULL);
	r = s3c_req_new("GET", "bucket", "key");
	CHECK(r != NULL);
	if (!c || !r)
		return;
	if (fc->len)
		s3c_req_set_range(r, fc->off, fc->len);
	err = s3c_perform(c, r);
	CHECK_INT(err, fc->want_err);
	CHECK_INT(s3c_req_attempts(r), fc->want_attempts);
	CHECK_INT(mini_answered(&m), fc->nsteps);
	body = s3c_req_body(r, &len);
	if (fc->want_body) {
		CHECK_INT(len, strlen(fc->want_body));
		CHECK(len == strlen(fc->want_body) &&
		      memcmp(body, fc->want_body, len) == 0);
	}
	if (err && !fc->want_err)
		fprintf(stderr, "  unexpected error: %s\n", s3c_req_errmsg(r));
	if (fc->want_msg && !strstr(s3c_req_errmsg(r), fc->want_msg))
		CHECK_STR(s3c_req_errmsg(r), fc->want_msg);
	CHECK(strstr(s3c_req_errmsg(r), "wJalrXUtnFEMI") == NULL);
	s3c_req_free(r);
	s3c_free(c);
	mini_stop(&m);
}

static void test_faults(void)
{
	for (size_t i = 0; i < sizeof(fault_cases) / sizeof(fault_cases[0]);
	     i++)
		run_fault_case(&fault_cases[i]);
}

/* Retries after the endpoint answered once are not cut short: a server
 * that goes away is an outage to ride out, not a wrong URL. */
static void test_outage_after_answer(void)
{
	static const struct mini_step steps[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close", OBJ,
	     SIZE_MAX, MINI_CLOSE},
	};
	struct mini m;
	struct s3c *c;
	struct s3c_req *r;

	CHECK_INT(mini_start(&m, steps, 1), 0);
	c = mini_engine(m.port, 5, 1);
	r = s3c_req_new("GET", "bucket", "key");
	CHECK(c && r);
	if (!c || !r)
		return;
	CHECK_INT(s3c_perform(c, r), 0);
	s3c_req_free(r);
	mini_stop(&m); /* the port now refuses connections */
	r = s3c_req_new("GET", "bucket", "key");
	CHECK_INT(s3c_perform(c, r), -ECONNREFUSED);
	CHECK_INT(s3c_req_attempts(r), 5);
	s3c_req_free(r);
	s3c_free(c);
}

/* A server restart: the endpoint answered, then refuses connections for
 * 300 ms, then answers again on the same port. With outages ridden out
 * the request succeeds, although its attempt budget (2) is spent on the
 * refused connections. */
struct restart {
	struct mini m;
	unsigned port;
	int rc;
};

static void *restart_main(void *arg)
{
	static const struct mini_step steps[] = {GOOD_0_9};
	struct restart *rs = arg;
	struct timespec ts = {0, 300 * 1000 * 1000};

	nanosleep(&ts, NULL);
	rs->rc = mini_start_on(&rs->m, steps, 1, rs->port);
	return NULL;
}

static void test_outage_ridden(void)
{
	static const struct mini_step steps[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close", OBJ,
	     SIZE_MAX, MINI_CLOSE},
	};
	struct restart rs = {.rc = -1};
	struct mini m;
	pthread_t th;
	struct s3c *c;
	struct s3c_req *r;

	CHECK_INT(mini_start(&m, steps, 1), 0);
	c = mini_engine_outage(m.port, 2, 20, 10);
	r = s3c_req_new("GET", "bucket", "key");
	CHECK(c && r);
	if (!c || !r)
		return;
	CHECK_INT(s3c_perform(c, r), 0);
	s3c_req_free(r);
	mini_stop(&m); /* down... */
	rs.port = m.port;
	CHECK_INT(pthread_create(&th, NULL, restart_main, &rs), 0);
	r = s3c_req_new("GET", "bucket", "key");
	s3c_req_set_range(r, 0, 10);
	CHECK_INT(s3c_perform(c, r), 0); /* ...and up again */
	CHECK(s3c_req_attempts(r) > 2);
	CHECK(memcmp(s3c_req_body(r, NULL), "0123456789", 10) == 0);
	s3c_req_free(r);
	s3c_free(c);
	pthread_join(th, NULL);
	CHECK_INT(rs.rc, 0);
	if (rs.rc == 0)
		mini_stop(&rs.m);
}

/* An endpoint that never answered: at most 3 attempts, whatever the
 * setting. */
static void test_refused_unproven(void)
{
	struct s3c *c;
	struct s3c_req *r;
	int fd, port = closed_port(&fd);

	c = mini_engine((unsigned)port, 10, 1);
	r = s3c_req_new("GET", "bucket", "key");
	CHECK(c && r);
	if (!c || !r)
		return;
	CHECK_INT(s3c_perform(c, r), -ECONNREFUSED);
	CHECK_INT(s3c_req_attempts(r), 3);
	s3c_req_free(r);
	s3c_free(c);
	close(fd);
}

/* Equal jitter: each backoff is at least half its step, so two retries
 * with a 100 ms step take at least 100 ms (an upper bound would be a
 * timing assumption; this lower bound is a guarantee). */
static void test_backoff_floor(void)
{
	static const struct mini_step steps[] = {
	    {"HTTP/1.1 503 Slow Down", SLOWDOWN, SIZE_MAX,
	     MINI_KEEP},
	    {"HTTP/1.1 503 Slow Down", SLOWDOWN, SIZE_MAX,
	     MINI_KEEP},
	    {"HTTP/1.1 503 Slow Down", SLOWDOWN, SIZE_MAX,
	     MINI_KEEP},
	};
	struct timespec t0, t1;
	struct mini m;
	struct s3c *c;
	struct s3c_req *r;
	long ms;

	CHECK_INT(mini_start(&m, steps, 3), 0);
	c = mini_engine(m.port, 3, 100);
	r = s3c_req_new("GET", "bucket", "key");
	CHECK(c && r);
	if (!c || !r)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(s3c_perform(c, r), -EAGAIN);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	     (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms >= 100);
	CHECK_INT(s3c_req_attempts(r), 3);
	CHECK(strstr(s3c_req_errmsg(r), "SlowDown") != NULL);
	s3c_req_free(r);
	s3c_free(c);
	mini_stop(&m);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	test_map();
	test_refused();
	test_bad_conf();
	test_faults();
	test_outage_after_answer();
	test_outage_ridden();
	test_refused_unproven();
	test_backoff_floor();
	curl_global_cleanup();
	return check_summary("test_s3c");
}
