// SPDX-License-Identifier: MIT
/*
 * s3c_bench: drives the engine directly (no FUSE) with plain GETs of
 * PREFIX000000 .. PREFIX(N-1), keeping CONCURRENCY requests in flight, and
 * prints one line: requests, seconds, requests/s, connections opened,
 * errors. Used by the connection-reuse test and scripts/bench/small-get.
 *
 * usage: s3c_bench ENDPOINT BUCKET PREFIX NKEYS CONCURRENCY REQUESTS [anon]
 * Credentials come from the environment (AWS_ACCESS_KEY_ID, ...).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "cli.h"
#include "s3c.h"

struct bench {
	struct s3c *engine;
	const char *bucket, *prefix;
	unsigned long nkeys, total;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long issued, done, errors; /* protected by lock */
	unsigned long bytes;		    /* protected by lock */
};

static void on_done(struct s3c_req *req, int err, void *arg);

/* Issues request number I. Called with b->lock held. */
static int issue(struct bench *b, unsigned long i)
{
	char key[512];
	struct s3c_req *r;

	snprintf(key, sizeof(key), "%s%06lu", b->prefix, i % b->nkeys);
	r = s3c_req_new("GET", b->bucket, key);
	if (!r)
		return -ENOMEM;
	return s3c_submit(b->engine, r, on_done, b);
}

static void on_done(struct s3c_req *req, int err, void *arg)
{
	struct bench *b = arg;
	size_t len;

	s3c_req_body(req, &len);
	if (err)
		fprintf(stderr, "s3c_bench: %s\n", s3c_req_errmsg(req));
	s3c_req_free(req);
	pthread_mutex_lock(&b->lock);
	b->done++;
	b->bytes += len;
	if (err)
		b->errors++;
	if (b->issued < b->total && issue(b, b->issued) == 0)
		b->issued++;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct bench b = {0};
	struct cli_common common;
	struct s3c_stats st;
	unsigned long conc;
	double t0, t1;

	if (argc < 7) {
		fprintf(stderr, "usage: s3c_bench ENDPOINT BUCKET PREFIX "
				"NKEYS CONCURRENCY REQUESTS [anon]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cli_common_init(&common);
	common.endpoint_url = argv[1];
	b.bucket = argv[2];
	b.prefix = argv[3];
	b.nkeys = strtoul(argv[4], NULL, 10);
	conc = strtoul(argv[5], NULL, 10);
	b.total = strtoul(argv[6], NULL, 10);
	common.no_sign_request = argc > 7 && strcmp(argv[7], "anon") == 0;
	common.max_connections = (unsigned)conc;
	if (!b.nkeys || !conc || conc > 1024 || !b.total)
		return 2;
	if (cli_common_finish(&common) < 0 ||
	    cli_open_engine(&common, &b.engine) < 0)
		return 1;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	t0 = now_s();
	pthread_mutex_lock(&b.lock);
	while (b.issued < conc && b.issued < b.total &&
	       issue(&b, b.issued) == 0)
		b.issued++;
	while (b.done < b.issued)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	t1 = now_s();
	s3c_get_stats(b.engine, &st);
	printf("concurrency %lu: %lu requests in %.3f s = %.0f req/s, "
	       "%lu bytes, %llu connections opened, %llu retries, "
	       "%lu errors\n",
	       conc, b.done, t1 - t0, (double)b.done / (t1 - t0), b.bytes,
	       (unsigned long long)st.connects,
	       (unsigned long long)st.retries, b.errors);
	s3c_free(b.engine);
	curl_global_cleanup();
	return b.errors ? 1 : 0;
}
