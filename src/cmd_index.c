// SPDX-License-Identifier: MIT
/*
 * shardfs index [OPTIONS] SOURCE: writes the dataset index (shardfs.idx)
 * of the tar shards already under SOURCE (s3://BUCKET/PREFIX, file://DIR
 * or a directory), so that a mount of SOURCE costs one GET.
 *
 * 1. Every object under the prefix whose key ends in ".tar" is a shard:
 *    one recursive ListObjectsV2 for S3, a walk of store->ops->list()
 *    directory by directory for a local directory. Keys are sorted (byte
 *    order) and added to the builder (relative to PREFIX).
 * 2. A pool of --jobs threads scans the shards (shard_scan_members(), one
 *    shard per thread at a time; the S3 engine multiplexes their GETs).
 *    Each shard's members are packed into a per-shard buffer.
 * 3. Shards are committed to the one builder in key order as soon as all
 *    earlier ones are (a reorder window of 2 x jobs shards bounds the
 *    memory held by shards that finished early): members from a later
 *    shard replace those of an earlier one at the same path (the
 *    builder's last-wins), and the command counts them as shadowed.
 * 4. The index is written next to the shards with store->ops->put().
 *
 * Threading: the workers share `struct run`; its lock protects the job
 * queue, the commit cursor and the builder. Counters for the progress
 * display are atomics. The lock is never held across a scan or a put.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd.h"
#include "dsidx.h"
#include "log.h"
#include "s3xml.h"
#include "shard.h"
#include "store_s3.h"

#define JOBS_DEFAULT 8
#define JOBS_MAX     256
#define WALK_DEPTH   64 /* local directories deeper than this are ignored */

static const char index_help[] =
    "usage: shardfs index [OPTIONS] SOURCE\n"
    "\n"
    "Writes the dataset index (shardfs.idx) of the tar shards under SOURCE\n"
    "(s3://BUCKET/PREFIX, file://DIR or a directory), next to them, so\n"
    "that mounting SOURCE costs one GET. Every object whose key ends in\n"
    "'.tar' under PREFIX (at any depth) is a shard; its members appear in\n"
    "the index under their path inside the shard, merged into one tree.\n"
    "A path held by several shards comes from the last shard in key order\n"
    "(the others are counted as shadowed).\n"
    "\n"
    "Damaged shards (bad checksum, truncated, not a tar) are reported, one\n"
    "line each, and their members before the damage are indexed; the\n"
    "index is written and the exit status is 1, unless --allow-damaged.\n"
    "A shard that cannot be read at all is an error: nothing is written.\n"
    "\n"
    "  -j, --jobs N           shards scanned at once (default 8, at most "
    "256)\n"
    "      --allow-damaged    exit 0 when some shards are damaged\n"
    "  -n, --dry-run          scan and report, do not write the index\n"
    "      --progress         show progress (default: when stderr is a "
    "terminal)\n"
    "      --no-progress      never show progress\n"
    "  -h, --help             this help\n"
    "\n"
    "At the end one line sums up: shards, members, shadowed members,\n"
    "damaged shards, GETs, bytes fetched and seconds.\n";

enum {
	OPT_ALLOW_DAMAGED = CLI_OPT_END,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
};

struct index_opts {
	unsigned jobs;
	bool allow_damaged;
	bool dry_run;
	int progress; /* 1 on, 0 off, -1 auto */
};

/* One shard: what the listing said, then what its scan found. */
struct job {
	char *key;  /* owned, relative to PREFIX */
	char *etag; /* owned or NULL */
	uint64_t size;
	uint32_t handle; /* in the builder */
	struct buf recs; /* packed members (struct rec), until committed */
	struct shard_scan_result res;
	int rc;	       /* 0, or why the shard could not be read */
	char msg[512]; /* when rc */
	bool done;     /* scanned; lock */
};

/*
 * A member, packed: the record, then PATH_LEN and LINK_LEN bytes (each
 * NUL-terminated), padding to 8, then NSEGS struct tarhdr_sparse.
 */
struct rec {
	uint64_t data_offset, size, header_offset;
	int64_t mtime;
	uint32_t mode, nsec;
	uint32_t path_len, link_len, nsegs; /* lengths include the NUL */
	uint8_t type;
	bool sparse;
};

struct run {
	struct store *st;
	struct job *jobs;
	size_t njobs;
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cv;  /* a shard committed, or the end */
	pthread_cond_t pcv; /* the display thread: the end */
	size_t next_job;    /* lock: the next shard to scan */
	size_t next_commit; /* lock: the next shard to commit */
	int err;	    /* lock: first fatal error (stops everything) */
	struct dsidx_builder *b; /* lock */
	uint64_t skipped;	 /* lock: members the index cannot hold */
	/* progress (atomics: read by the display thread) */
	atomic_uint_fast64_t members, shards_done, bytes_done, gets;
	atomic_uint_fast64_t *pos; /* per worker: offset in its shard */
	bool progress_on;
	bool finished; /* lock: the display thread stops */
	struct timespec start;
};

/* ---- listing ----------------------------------------------------------- */

static bool is_shard(const char *key)
{
	size_t n = strlen(key);

	return n > 4 && strcmp(key + n - 4, ".tar") == 0;
}

static int add_job(struct run *r, size_t *cap, const char *key, uint64_t size,
		   const char *etag)
{
	struct job *j;

	if (r->njobs == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct job *n = realloc(r->jobs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->jobs = n;
		*cap = ncap;
	}
	j = &r->jobs[r->njobs];
	memset(j, 0, sizeof(*j));
	j->key = strdup(key);
	j->etag = etag && etag[0] ? strdup(etag) : NULL;
	j->size = size;
	if (!j->key || (etag && etag[0] && !j->etag)) {
		free(j->key);
		free(j->etag);
		return -ENOMEM;
	}
	r->njobs++;
	return 0;
}

struct s3_walk {
	struct run *r;
	size_t cap;
	size_t skip; /* bytes of the prefix */
};

static int s3_page(const struct s3xml_list *page, void *arg)
{
	struct s3_walk *w = arg;
	int rc = 0;

	for (size_t i = 0; !rc && i < page->nobjects; i++) {
		const struct s3xml_object *o = &page->objects[i];

		if (strlen(o->key) > w->skip && is_shard(o->key + w->skip))
			rc = add_job(w->r, &w->cap, o->key + w->skip, o->size,
				     o->etag);
	}
	return rc;
}

/* Every .tar under BUCKET/PREFIX, with one recursive listing. */
static int list_s3(struct run *r, const char *bucket, const char *prefix)
{
	struct s3_walk w = {.r = r};
	char *p = NULL, msg[1024] = "";
	int rc;

	if (asprintf(&p, "%s%s", prefix,
		     prefix[0] && prefix[strlen(prefix) - 1] != '/' ? "/"
								    : "") < 0)
		return -ENOMEM;
	w.skip = strlen(p);
	rc = store_s3_list_pages(store_s3_engine(r->st), bucket, p, NULL,
				 s3_page, &w, msg, sizeof(msg));
	if (rc)
		log_error("%s", msg[0] ? msg : strerror(-rc));
	free(p);
	return rc;
}

/* Every .tar under DIR ("" or ending in '/') of a local store. */
static int list_local(struct run *r, const char *dir, int depth, size_t *cap)
{
	struct store_listing l = {0};
	char msg[1024] = "", *key;
	int rc;

	if (depth > WALK_DEPTH) {
		log_warn("%s%s: deeper than %d directories: not searched",
			 r->st->ops->describe(r->st), dir, WALK_DEPTH);
		return 0;
	}
	rc = r->st->ops->list(r->st, dir, &l, msg, sizeof(msg));
	if (rc) {
		log_error("%s", msg[0] ? msg : strerror(-rc));
		return rc;
	}
	for (size_t i = 0; !rc && i < l.n; i++) {
		const struct store_entry *e = &l.entries[i];

		if (asprintf(&key, "%s%s%s", dir, e->name,
			     e->is_dir ? "/" : "") < 0) {
			rc = -ENOMEM;
			break;
		}
		if (e->is_dir)
			rc = list_local(r, key, depth + 1, cap);
		else if (is_shard(key))
			rc = add_job(r, cap, key, e->size, e->etag);
		free(key);
	}
	store_listing_release(&l);
	return rc;
}

static int job_cmp(const void *a, const void *b)
{
	return strcmp(((const struct job *)a)->key,
		      ((const struct job *)b)->key);
}

/*
 * Sorts the shards by key and adds them to the builder; a key the index
 * cannot hold is reported and dropped (an ETag it cannot hold is left
 * out: the shard is then read without If-Match by a mount).
 */
static int add_shards(struct run *r)
{
	size_t kept = 0;
	int rc = 0;

	if (r->njobs > 1) /* qsort(NULL, 0, ...) is undefined behaviour */
		qsort(r->jobs, r->njobs, sizeof(*r->jobs), job_cmp);
	for (size_t i = 0; !rc && i < r->njobs; i++) {
		struct job *j = &r->jobs[i];

		rc = dsidx_builder_add_shard(r->b, j->key, j->etag, j->size,
					     &j->handle);
		if (rc == -EINVAL && j->etag)
			rc = dsidx_builder_add_shard(r->b, j->key, NULL,
						     j->size, &j->handle);
		if (rc == -EINVAL || rc == -ENAMETOOLONG) {
			log_warn("%s: not a valid shard key for an index: "
				 "skipped",
				 j->key);
			free(j->key);
			free(j->etag);
			rc = 0;
			continue;
		}
		r->jobs[kept++] = *j;
	}
	r->njobs = kept;
	return rc;
}

/* ---- scanning ----------------------------------------------------------- */

/* What a worker's member callback needs. */
struct collect {
	struct run *r;
	struct job *j;
	atomic_uint_fast64_t *pos;
};

static int pack(struct buf *b, const struct tarhdr_entry *e)
{
	struct rec h = {
	    .data_offset = e->data_offset,
	    .size = e->size,
	    .header_offset = e->header_offset,
	    .mtime = e->mtime,
	    .mode = e->mode,
	    .nsec = e->mtime_nsec,
	    .path_len = (uint32_t)strlen(e->path) + 1,
	    .link_len = e->link ? (uint32_t)strlen(e->link) + 1 : 0,
	    .nsegs = (uint32_t)e->nsparse,
	    .type = (uint8_t)e->type,
	    .sparse = e->is_sparse,
	};
	static const char pad[8];
	size_t strs = (size_t)h.path_len + h.link_len;
	int rc = buf_append(b, &h, sizeof(h));

	if (!rc)
		rc = buf_append(b, e->path, h.path_len);
	if (!rc && h.link_len)
		rc = buf_append(b, e->link, h.link_len);
	if (!rc && strs % 8)
		rc = buf_append(b, pad, 8 - strs % 8);
	if (!rc && h.nsegs)
		rc = buf_append(b, e->sparse, h.nsegs * sizeof(*e->sparse));
	return rc;
}

static int collect_member(const struct tarhdr_entry *e, void *arg)
{
	struct collect *c = arg;

	atomic_fetch_add(&c->r->members, 1);
	atomic_store(c->pos, e->data_offset + e->stored_size);
	return pack(&c->j->recs, e);
}

/* The packed member at *AT of B as an entry (pointers into B). */
static void unpack(const struct buf *b, size_t *at, struct tarhdr_entry *e)
{
	struct rec h;
	const char *p = b->data + *at + sizeof(h);
	size_t strs;

	memcpy(&h, b->data + *at, sizeof(h));
	strs = (size_t)h.path_len + h.link_len;
	memset(e, 0, sizeof(*e));
	e->path = p;
	e->link = h.link_len ? p + h.path_len : NULL;
	e->type = (enum tarhdr_type)h.type;
	e->mode = h.mode;
	e->mtime = h.mtime;
	e->mtime_nsec = h.nsec;
	e->size = h.size;
	e->data_offset = h.data_offset;
	e->header_offset = h.header_offset;
	e->is_sparse = h.sparse;
	e->nsparse = h.nsegs;
	strs = (strs + 7) / 8 * 8;
	e->sparse = h.nsegs
			? (const struct tarhdr_sparse *)(const void *)(p + strs)
			: NULL;
	*at += sizeof(h) + strs + (size_t)h.nsegs * sizeof(*e->sparse);
}

/* Adds job J's members to the builder. Lock held. */
static int commit(struct run *r, struct job *j)
{
	struct tarhdr_entry e;
	size_t at = 0;
	int rc = 0;

	while (!rc && at < j->recs.len) {
		unpack(&j->recs, &at, &e);
		rc = shard_builder_add(r->b, j->handle, &e);
		if (rc == -EINVAL || rc == -ENAMETOOLONG || rc == -ENOENT) {
			log_info(
			    "%s: member at offset %" PRIu64 " left out: %s",
			    j->key, e.header_offset,
			    rc == -ENOENT ? "a hard link to nothing"
					  : "a name the index cannot hold");
			r->skipped++;
			rc = 0;
		}
	}
	buf_release(&j->recs);
	return rc;
}

/* Job I is scanned: commits every job that is now next in key order. */
static void finish_job(struct run *r, size_t i)
{
	pthread_mutex_lock(&r->lock);
	r->jobs[i].done = true;
	if (r->jobs[i].rc && !r->err)
		r->err = r->jobs[i].rc;
	while (!r->err && r->next_commit < r->njobs &&
	       r->jobs[r->next_commit].done) {
		int rc = commit(r, &r->jobs[r->next_commit]);

		if (rc) {
			r->err = rc;
			snprintf(r->jobs[r->next_commit].msg,
				 sizeof(r->jobs[0].msg), "%s: %s",
				 r->jobs[r->next_commit].key, strerror(-rc));
			r->jobs[r->next_commit].rc = rc;
		}
		r->next_commit++;
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->lock);
}

/* The next shard to scan, or SIZE_MAX when there is none (or an error). */
static size_t take_job(struct run *r)
{
	size_t i = SIZE_MAX;

	pthread_mutex_lock(&r->lock);
	while (!r->err && r->next_job < r->njobs &&
	       r->next_job >= r->next_commit + 2 * (size_t)r->nthreads)
		pthread_cond_wait(&r->cv, &r->lock);
	if (!r->err && r->next_job < r->njobs)
		i = r->next_job++;
	pthread_mutex_unlock(&r->lock);
	return i;
}

struct worker {
	struct run *r;
	atomic_uint_fast64_t *pos;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	size_t i;

	while ((i = take_job(r)) != SIZE_MAX) {
		struct job *j = &r->jobs[i];
		struct collect c = {r, j, w->pos};

		buf_init(&j->recs, (size_t)1 << 34);
		j->rc = shard_scan_members(r->st, j->key, j->size, j->etag,
					   collect_member, &c, &j->res, j->msg,
					   sizeof(j->msg));
		if (j->rc && !j->msg[0])
			snprintf(j->msg, sizeof(j->msg), "%s: %s", j->key,
				 strerror(-j->rc));
		atomic_store(w->pos, 0);
		atomic_fetch_add(&r->bytes_done, j->size);
		atomic_fetch_add(&r->gets, j->res.gets);
		atomic_fetch_add(&r->shards_done, 1);
		finish_job(r, i);
	}
	return NULL;
}

/* ---- progress ------------------------------------------------------------ */

static double elapsed(const struct run *r)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - r->start.tv_sec) +
	       (double)(now.tv_nsec - r->start.tv_nsec) / 1e9;
}

static void draw(struct run *r)
{
	uint64_t bytes = atomic_load(&r->bytes_done);
	double secs = elapsed(r), mb;

	for (unsigned i = 0; i < r->nthreads; i++)
		bytes += atomic_load(&r->pos[i]);
	mb = (double)bytes / 1e6;
	fprintf(stderr,
		"\r\033[Kindex: %" PRIu64 "/%zu shards, %" PRIu64
		" members, %.1f MB scanned, %.1f MB/s, %" PRIu64 " GETs",
		(uint64_t)atomic_load(&r->shards_done), r->njobs,
		(uint64_t)atomic_load(&r->members), mb,
		secs > 0 ? mb / secs : 0.0, (uint64_t)atomic_load(&r->gets));
	fflush(stderr);
}

static void *progress_main(void *arg)
{
	struct run *r = arg;
	struct timespec t;

	pthread_mutex_lock(&r->lock);
	while (!r->finished) {
		pthread_mutex_unlock(&r->lock);
		draw(r);
		pthread_mutex_lock(&r->lock);
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 250000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&r->pcv, &r->lock, &t);
	}
	pthread_mutex_unlock(&r->lock);
	draw(r); /* the final counts */
	return NULL;
}

/* Runs the workers (and the display) until every shard is committed. */
static int scan_all(struct run *r)
{
	struct worker *w = calloc(r->nthreads, sizeof(*w));
	pthread_t prog;
	unsigned started = 0;
	bool prog_on = false;

	r->pos = calloc(r->nthreads, sizeof(*r->pos));
	if (!w || !r->pos) {
		free(w);
		return -ENOMEM;
	}
	if (r->progress_on) {
		/* Log lines clear the display's line first. */
		log_set_prefix("\r\033[Kshardfs: ");
		prog_on = pthread_create(&prog, NULL, progress_main, r) == 0;
	}
	for (; started < r->nthreads; started++) {
		w[started].r = r;
		w[started].pos = &r->pos[started];
		if (pthread_create(&w[started].tid, NULL, worker_main,
				   &w[started]) != 0)
			break;
	}
	if (started == 0) {
		pthread_mutex_lock(&r->lock);
		r->err = -EAGAIN;
		pthread_mutex_unlock(&r->lock);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	pthread_mutex_lock(&r->lock);
	r->finished = true;
	pthread_cond_broadcast(&r->pcv);
	pthread_mutex_unlock(&r->lock);
	if (prog_on) {
		pthread_join(prog, NULL);
		fprintf(stderr, "\r\033[K");
		log_set_prefix("shardfs: ");
	}
	free(w);
	return r->err;
}

/* ---- the command ----------------------------------------------------------
 */

static int parse_args(int argc, char **argv, struct cli_common *common,
		      struct index_opts *o, const char **source)
{
	static const struct option own[] = {
	    {"jobs", required_argument, NULL, 'j'},
	    {"allow-damaged", no_argument, NULL, OPT_ALLOW_DAMAGED},
	    {"dry-run", no_argument, NULL, 'n'},
	    {"progress", no_argument, NULL, OPT_PROGRESS},
	    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct option *longopts = cli_longopts_merge(own);
	int opt, rc = 0;

	while (!rc &&
	       (opt = getopt_long(argc, argv, "j:nh", longopts, NULL)) != -1) {
		int c = cli_common_opt(common, opt, optarg);
		char *end;
		unsigned long v;

		if (c < 0) {
			rc = 2;
		} else if (c > 0) {
			continue;
		} else if (opt == 'j') {
			v = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || v < 1 ||
			    v > JOBS_MAX)
				rc = cli_usage_error(
				    "index", "--jobs wants 1 to %d, not '%s'",
				    JOBS_MAX, optarg);
			o->jobs = (unsigned)v;
		} else if (opt == OPT_ALLOW_DAMAGED) {
			o->allow_damaged = true;
		} else if (opt == 'n') {
			o->dry_run = true;
		} else if (opt == OPT_PROGRESS || opt == OPT_NO_PROGRESS) {
			o->progress = opt == OPT_PROGRESS;
		} else if (opt == 'h') {
			printf("%s\n%s", index_help, cli_common_help);
			rc = -1;
		} else {
			rc = cli_usage_error("index", "unknown option");
		}
	}
	free(longopts);
	if (rc)
		return rc;
	if (optind != argc - 1)
		return cli_usage_error("index", "expected one SOURCE "
						"(s3://BUCKET/PREFIX or a "
						"directory)");
	*source = argv[optind];
	return 0;
}

/* The shard list of SOURCE, sorted and in the builder. */
static int list_shards(struct run *r, const char *source)
{
	char *bucket = NULL, *prefix = NULL;
	size_t cap = 0;
	int rc;

	if (strncmp(source, "s3://", 5) == 0) {
		rc = cli_split_s3url("index", source, &bucket, &prefix);
		if (!rc)
			rc = list_s3(r, bucket, prefix);
	} else {
		rc = list_local(r, "", 0, &cap);
	}
	free(bucket);
	free(prefix);
	if (!rc)
		rc = add_shards(r);
	if (!rc && r->njobs == 0) {
		log_error("no .tar objects under %s",
			  r->st->ops->describe(r->st));
		rc = -ENOENT;
	}
	return rc;
}

/* The first error of a shard that could not be read, in key order. */
static void report_error(const struct run *r)
{
	for (size_t i = 0; i < r->njobs; i++)
		if (r->jobs[i].rc && r->jobs[i].msg[0]) {
			log_error("%s", r->jobs[i].msg);
			return;
		}
	log_error("indexing failed: %s", strerror(-r->err));
}

/* Where the index goes: "DESCRIBE/shardfs.idx" without doubling a '/'. */
static const char *dest(const struct run *r, char *out, size_t cap)
{
	const char *d = r->st->ops->describe(r->st);
	size_t n = strlen(d);

	snprintf(out, cap, "%s%s%s", d, n && d[n - 1] == '/' ? "" : "/",
		 DSIDX_OBJECT_NAME);
	return out;
}

static int write_index(struct run *r, const struct index_opts *o,
		       struct buf *out, struct dsidx_build_stats *stats)
{
	char msg[1024] = "", where[2048];
	int rc = dsidx_builder_finish(r->b, (int64_t)time(NULL), out);

	dsidx_builder_stats(r->b, stats);
	if (rc) {
		log_error("cannot build the index: %s", strerror(-rc));
		return rc;
	}
	if (o->dry_run)
		return 0;
	rc = r->st->ops->put(r->st, DSIDX_OBJECT_NAME, out->data, out->len, msg,
			     sizeof(msg));
	if (rc)
		log_error("cannot write %s: %s", dest(r, where, sizeof(where)),
			  msg[0] ? msg : strerror(-rc));
	return rc;
}

static int summary(struct run *r, const struct index_opts *o,
		   const struct buf *out, const struct dsidx_build_stats *s)
{
	uint64_t damaged = 0, bytes = 0, members = 0;
	char where[2048];

	for (size_t i = 0; i < r->njobs; i++) {
		damaged += r->jobs[i].res.damaged;
		bytes += r->jobs[i].res.bytes_fetched;
		members += r->jobs[i].res.members;
	}
	printf("%zu shards, %" PRIu64 " members, %" PRIu64 " shadowed, %" PRIu64
	       " damaged, %" PRIu64 " GETs, %.1f MB fetched, %.2f s: %s %s "
	       "(%zu bytes)\n",
	       r->njobs, members - r->skipped, s->shadowed + s->dir_conflicts,
	       damaged, (uint64_t)atomic_load(&r->gets), (double)bytes / 1e6,
	       elapsed(r), o->dry_run ? "would write" : "wrote",
	       dest(r, where, sizeof(where)), out->len);
	fflush(stdout);
	if (damaged && !o->allow_damaged) {
		log_error("%" PRIu64 " damaged shard%s (their members before "
			  "the damage are indexed; --allow-damaged to accept)",
			  damaged, damaged == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static void run_release(struct run *r)
{
	for (size_t i = 0; i < r->njobs; i++) {
		free(r->jobs[i].key);
		free(r->jobs[i].etag);
		buf_release(&r->jobs[i].recs);
	}
	free(r->jobs);
	free(r->pos);
	dsidx_builder_free(r->b);
	store_free(r->st);
	pthread_cond_destroy(&r->cv);
	pthread_cond_destroy(&r->pcv);
	pthread_mutex_destroy(&r->lock);
}

int cmd_index(int argc, char **argv)
{
	struct index_opts o = {.jobs = JOBS_DEFAULT, .progress = -1};
	struct dsidx_build_stats stats = {0};
	struct cli_common common;
	const char *source = NULL;
	struct run r = {0};
	struct buf out;
	int rc;

	cli_common_init(&common);
	rc = parse_args(argc, argv, &common, &o, &source);
	if (rc || !source)
		return rc < 0 ? 0 : 2;
	if (strncmp(source, "s3://", 5) == 0) {
		char *bucket = NULL, *prefix = NULL;

		if (cli_split_s3url("index", source, &bucket, &prefix) < 0)
			return 2;
		free(bucket);
		free(prefix);
	}
	rc = -cli_common_finish(&common);
	if (rc)
		return rc;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cv, NULL);
	pthread_cond_init(&r.pcv, NULL);
	buf_init(&out, DSIDX_SUGGESTED_CAP);
	clock_gettime(CLOCK_MONOTONIC, &r.start);
	r.nthreads = o.jobs;
	r.progress_on = o.progress > 0 || (o.progress < 0 && isatty(2));
	rc = cli_open_store(&common, source, &r.st) < 0 ? 1 : 0;
	if (!rc && dsidx_builder_new(NULL, &r.b) != 0) {
		log_error("out of memory");
		rc = 1;
	}
	if (!rc)
		rc = list_shards(&r, source) ? 1 : 0;
	if (!rc && scan_all(&r)) {
		report_error(&r);
		rc = 1;
	}
	if (!rc)
		rc = write_index(&r, &o, &out, &stats) ? 1 : 0;
	if (!rc)
		rc = summary(&r, &o, &out, &stats);
	buf_release(&out);
	run_release(&r);
	return rc;
}
