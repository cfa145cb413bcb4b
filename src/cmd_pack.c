// SPDX-License-Identifier: MIT
/*
 * shardfs pack [OPTIONS] SRC DEST: a directory tree (or the objects under
 * an S3 prefix) into tar shards plus the dataset index, in a local
 * directory or under an S3 prefix.
 *
 * The run, in order:
 *  1. DEST is checked before anything is read: the bucket answers a
 *     listing (credentials, bucket), a dataset already there is refused
 *     unless --overwrite or --resume, and a first write (the pack state
 *     object) proves DEST writable.
 *  2. SRC is walked once into a plan (packplan.h): every member's shard
 *     and offsets are fixed before a byte is read. What cannot be packed
 *     is skipped with a warning each (the exit status says so).
 *  3. --resume: shards recorded in the state with the same fingerprint
 *     and still present with the recorded size and ETag are skipped.
 *  4. Shards are streamed in order through packup.h (parts in flight,
 *     fixed memory); each stored shard is recorded in the state object.
 *  5. Only when every shard is stored is the index (shardfs.idx) written,
 *     last, so a mount never sees a dataset with missing shards. On any
 *     failure, uploads in progress are aborted, the state keeps the
 *     shards that were completed, and no index is written.
 *
 * Memory: data in flight is bounded by --memory (packup.h: part
 * buffers; for an S3 SRC a quarter of it is the read-ahead, packsrc.h).
 * The plan and the index builder hold metadata for every member (about
 * 200 bytes plus the path, each), which is not part of that budget.
 *
 * Threads: the main thread does all the work; packui.h's thread waits
 * for SIGINT/SIGTERM/SIGHUP (blocked everywhere else) and draws the
 * progress line on a terminal. They share only atomics.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd.h"
#include "dsidx.h"
#include "fdio.h"
#include "log.h"
#include "opts.h"
#include "packplan.h"
#include "packsrc.h"
#include "packstate.h"
#include "packui.h"
#include "packup.h"
#include "s3c.h"
#include "store_local.h"
#include "store_s3.h"
#include "tarhdr.h"

#define MIB		   (UINT64_C(1) << 20)
#define DEFAULT_SHARD_SIZE (256 * MIB)
#define DEFAULT_MEMORY	   (512 * MIB)
#define DEFAULT_PART_SIZE  (16 * MIB)
#define MAX_PART_SIZE	   (5 * 1024 * MIB) /* S3's largest part */
#define STATE_SMALL	   (256u << 10)	    /* rewritten after every shard */
#define EXIT_SKIPPED	   3
#define MAX_WARNINGS	   100 /* skipped inputs listed one by one */

static const char pack_help[] =
    "usage: shardfs pack [OPTIONS] SRC DEST\n"
    "\n"
    "Packs the tree SRC (a directory, or s3://BUCKET/PREFIX of loose "
    "objects)\n"
    "into tar shards and a dataset index (shardfs.idx) in DEST "
    "(s3://BUCKET/PREFIX\n"
    "or a directory), so that 'shardfs mount DEST' shows the tree "
    "again.\n"
    "\n"
    "  --shard-size SIZE      bytes per shard (default 256M); a sample "
    "larger than\n"
    "                         that gets a shard of its own\n"
    "  --shard-name PATTERN   shard names (default shard-{n}.tar): {n} "
    "is the shard\n"
    "                         number (6 digits; {n:W} for W digits), "
    "{hash} 4 hex\n"
    "                         digits that spread keys, e.g. "
    "{hash}/shard-{n}.tar\n"
    "  --shuffle-seed N       put samples in a random order seeded by "
    "N\n"
    "                         (default: sorted by path)\n"
    "  --memory SIZE          memory for data in flight (default 512M)\n"
    "  --part-size SIZE       multipart part size, 5M..5G (default "
    "16M)\n"
    "  --overwrite            replace a dataset already in DEST\n"
    "  --resume               continue an interrupted pack: skip shards "
    "already\n"
    "                         stored with the expected size and ETag\n"
    "  -L, --dereference      follow symbolic links (default: store "
    "them as links)\n"
    "  --progress, --no-progress\n"
    "                         progress line (default: when stdout is a "
    "terminal)\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 done; 1 failed (no index written); 2 usage error; 3 "
    "done, but\n"
    "some inputs were skipped (a warning for each).\n";

enum {
	OPT_SHARD_SIZE = CLI_OPT_END,
	OPT_SHARD_NAME,
	OPT_SHUFFLE_SEED,
	OPT_MEMORY,
	OPT_PART_SIZE,
	OPT_OVERWRITE,
	OPT_RESUME,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
};

struct pack_opts {
	uint64_t shard_size, memory, part_size, seed;
	const char *pattern;
	bool shuffle, overwrite, resume, deref;
	int progress; /* -1: when stdout is a terminal */
	const char *src, *dest;
};

struct pack {
	struct pack_opts o;
	struct cli_common common;

	struct store *dst;
	bool dst_local;
	struct store *srcstore; /* S3 source */
	struct packsrc *src;
	struct packplan *plan;
	struct packup *up;
	struct packsrc_scan_info scan;
	struct packstate state;
	uint64_t state_len; /* bytes of the state last written */
	char **etags;	    /* per shard, as stored */
	bool *skip;	    /* per shard: already stored (--resume) */
	uint32_t nresumed, nstored, crash_after;
	char **old_shards; /* --overwrite: keys of the replaced index */
	size_t nold;
	struct buf hdr;
	char err[2048];
	bool err_printed; /* the cause is on stderr already */
	uint64_t nwarned; /* skipped inputs reported so far */

	struct packui ui; /* counters, stop flag: shared with its thread */
};

static void set_err(struct pack *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_err(struct pack *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

/* ---- options ---- */

static int size_opt(const char *name, const char *arg, uint64_t min,
		    uint64_t *out)
{
	if (opts_parse_size(arg, out) < 0 || *out < min)
		return cli_usage_error("pack",
				       "--%s wants a size of at least %" PRIu64
				       " bytes (e.g. 256M), not '%s'",
				       name, min, arg);
	return 0;
}

static int own_opt(struct pack_opts *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_SHARD_SIZE:
		return size_opt("shard-size", arg, MIB, &o->shard_size);
	case OPT_SHARD_NAME:
		o->pattern = arg;
		return 0;
	case OPT_SHUFFLE_SEED:
		if (opts_parse_uint(arg, 0, UINT64_MAX, &v) < 0)
			return cli_usage_error("pack",
					       "--shuffle-seed wants "
					       "a whole number, not "
					       "'%s'",
					       arg);
		o->shuffle = true;
		o->seed = v;
		return 0;
	case OPT_MEMORY:
		return size_opt("memory", arg, 16 * MIB, &o->memory);
	case OPT_PART_SIZE:
		if (size_opt("part-size", arg, PACKUP_MIN_PART, &o->part_size))
			return 2;
		if (o->part_size > MAX_PART_SIZE)
			return cli_usage_error("pack", "--part-size is at "
						       "most 5G");
		return 0;
	case OPT_OVERWRITE:
		o->overwrite = true;
		return 0;
	case OPT_RESUME:
		o->resume = true;
		return 0;
	case 'L':
		o->deref = true;
		return 0;
	case OPT_PROGRESS:
	case OPT_NO_PROGRESS:
		o->progress = opt == OPT_PROGRESS;
		return 0;
	default:
		return cli_usage_error("pack", "unknown option");
	}
}

/* 0 to go on, or the exit status (0 after --help). */
static int parse_args(struct pack *p, int argc, char **argv, bool *done)
{
	static const struct option own[] = {
	    {"shard-size", required_argument, NULL, OPT_SHARD_SIZE},
	    {"shard-name", required_argument, NULL, OPT_SHARD_NAME},
	    {"shuffle-seed", required_argument, NULL, OPT_SHUFFLE_SEED},
	    {"memory", required_argument, NULL, OPT_MEMORY},
	    {"part-size", required_argument, NULL, OPT_PART_SIZE},
	    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
	    {"resume", no_argument, NULL, OPT_RESUME},
	    {"dereference", no_argument, NULL, 'L'},
	    {"progress", no_argument, NULL, OPT_PROGRESS},
	    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct option *longopts = cli_longopts_merge(own);
	int opt, rc = 0;

	*done = false;
	while (!rc &&
	       (opt = getopt_long(argc, argv, "Lh", longopts, NULL)) != -1) {
		int c = cli_common_opt(&p->common, opt, optarg);

		if (c < 0) {
			rc = 2;
		} else if (c == 0 && opt == 'h') {
			printf("%s\n%s", pack_help, cli_common_help);
			*done = true;
			break;
		} else if (c == 0) {
			rc = own_opt(&p->o, opt, optarg);
		}
	}
	if (!rc && !*done && optind != argc - 2)
		rc = cli_usage_error("pack", "expected SRC and DEST");
	if (!rc && !*done && p->o.overwrite && p->o.resume)
		rc = cli_usage_error("pack", "--overwrite and --resume do not "
					     "go together");
	if (!rc && !*done && p->o.memory < 2 * p->o.part_size)
		rc = cli_usage_error("pack", "--memory must hold at least two "
					     "parts (2 x --part-size)");
	if (!rc && !*done) {
		p->o.src = argv[optind];
		p->o.dest = argv[optind + 1];
	}
	free(longopts);
	return rc;
}

/* ---- DEST ---- */

static bool both_s3(const struct pack *p)
{
	return strncmp(p->o.src, "s3://", 5) == 0 &&
	       strncmp(p->o.dest, "s3://", 5) == 0;
}

/*
 * With S3 on both sides, --max-connections is shared: a quarter for
 * reading SRC, the rest for writing DEST (at least one each).
 */
static unsigned src_connections(const struct pack *p)
{
	unsigned n = p->common.max_connections;

	if (!both_s3(p))
		return n;
	return n >= 8 ? n / 4 : 1;
}

static unsigned dest_connections(const struct pack *p)
{
	unsigned n = p->common.max_connections, s = src_connections(p);

	if (!both_s3(p))
		return n;
	return n > s ? n - s : 1;
}

/* A listing of one key: credentials, bucket and endpoint, with the
 * server's own words when something is wrong. */
static int probe_bucket(struct pack *p, struct s3c *engine, const char *bucket,
			const char *prefix)
{
	struct s3c_req *r = s3c_req_new("GET", bucket, NULL);
	int rc = -ENOMEM;

	if (r && !s3c_req_add_param(r, "list-type", "2") &&
	    !s3c_req_add_param(r, "max-keys", "1") &&
	    (!*prefix || !s3c_req_add_param(r, "prefix", prefix))) {
		rc = s3c_perform(engine, r);
		if (rc)
			set_err(p, "DEST %s: %s", p->o.dest, s3c_req_errmsg(r));
	}
	s3c_req_free(r);
	return rc;
}

/*
 * Opens DEST. A local DEST that does not exist yet is created only when
 * CREATE is set (after SRC was scanned: a failed scan leaves nothing
 * behind); until then p->dst stays NULL.
 */
static int open_dest(struct pack *p, bool create)
{
	struct cli_common cc = p->common;
	char *bucket = NULL, *prefix = NULL, msg[1024] = "";
	struct s3c *engine = NULL;
	const char *d = p->o.dest;
	int rc;

	if (strncmp(d, "s3://", 5) != 0) {
		if (strncmp(d, "file://", 7) == 0)
			d += 7;
		p->dst_local = true;
		if (!create && access(d, F_OK) != 0 && errno == ENOENT)
			return 0;
		rc = fdio_mkdirs(d, 0755);
		if (!rc)
			rc = store_local_new(d, &p->dst, msg, sizeof(msg));
		if (rc)
			set_err(p, "DEST %s: %s", d,
				msg[0] ? msg : strerror(-rc));
		return rc;
	}
	if (cli_split_s3url("pack", d, &bucket, &prefix) < 0)
		return -EINVAL;
	cc.max_connections = dest_connections(p);
	rc = cli_open_engine(&cc, &engine);
	if (rc) {
		p->err_printed = true;
		goto out;
	}
	rc = probe_bucket(p, engine, bucket, prefix);
	if (!rc)
		rc = store_s3_new(engine, bucket, prefix, &p->dst);
	if (rc)
		s3c_free(engine);
out:
	free(bucket);
	free(prefix);
	return rc;
}

/* 1 when KEY exists in DEST, 0 when not, or a negative errno. */
static int dest_has(struct pack *p, const char *key)
{
	struct store_entry e;
	char msg[1024] = "";
	int rc = p->dst->ops->head(p->dst, key, &e, msg, sizeof(msg));

	if (rc == -ENOENT)
		return 0;
	if (rc) {
		set_err(p, "DEST %s: %s", p->o.dest, msg);
		return rc;
	}
	store_entry_release(&e);
	return 1;
}

/* The keys of the shards of the index being replaced (--overwrite). */
static void load_old_shards(struct pack *p)
{
	char *data = NULL, msg[512];
	struct dsidx *x = NULL;
	size_t len = 0;

	if (!p->dst->ops->get_object ||
	    p->dst->ops->get_object(p->dst, DSIDX_OBJECT_NAME,
				    DSIDX_SUGGESTED_CAP, &data, &len, msg,
				    sizeof(msg)) ||
	    dsidx_open(data, len, &x, msg, sizeof(msg))) {
		free(data);
		return;
	}
	p->nold = dsidx_info(x)->nshards;
	p->old_shards = calloc(p->nold ? p->nold : 1, sizeof(char *));
	for (uint32_t i = 0; p->old_shards && i < p->nold; i++) {
		struct dsidx_shard_view v;

		if (dsidx_shard(x, i, &v) == 0)
			p->old_shards[i] = strndup(v.key, v.key_len);
	}
	if (!p->old_shards)
		p->nold = 0;
	dsidx_free(x);
	free(data);
}

static int load_state(struct pack *p)
{
	char *data = NULL, msg[1024] = "";
	size_t len = 0;
	int rc;

	if (!p->dst->ops->get_object)
		return 0;
	rc = p->dst->ops->get_object(p->dst, PACKSTATE_OBJECT_NAME,
				     PACKSTATE_MAX, &data, &len, msg,
				     sizeof(msg));
	if (rc == -ENOENT)
		return 0;
	if (rc) {
		set_err(p, "DEST %s: cannot read the pack state: %s", p->o.dest,
			msg);
		return rc;
	}
	packstate_release(&p->state);
	rc = packstate_parse(data, len, &p->state);
	free(data);
	return rc;
}

/* Refuses a DEST that holds a dataset, unless told what to do with it. */
static int check_dest(struct pack *p)
{
	char first[PACKPLAN_NAME_MAX + 1];
	int idx, st, sh = 0;

	idx = dest_has(p, DSIDX_OBJECT_NAME);
	if (idx < 0)
		return idx;
	st = dest_has(p, PACKSTATE_OBJECT_NAME);
	if (st < 0)
		return st;
	if (!idx && !st &&
	    !packplan_format_name(p->o.pattern, 0, first, sizeof(first)) &&
	    (sh = dest_has(p, first)) < 0)
		return sh;
	if ((idx || st || sh) && !p->o.overwrite && !p->o.resume) {
		set_err(p,
			"DEST %s already holds a dataset (%s); --overwrite "
			"replaces it, --resume continues an interrupted pack",
			p->o.dest,
			idx  ? DSIDX_OBJECT_NAME
			: st ? PACKSTATE_OBJECT_NAME
			     : first);
		return -EEXIST;
	}
	if (idx && p->o.overwrite)
		load_old_shards(p);
	return p->o.resume && st ? load_state(p) : 0;
}

static int write_state(struct pack *p)
{
	char msg[1024] = "";
	struct buf b;
	int rc;

	buf_init(&b, PACKSTATE_MAX);
	rc = packstate_format(&p->state, &b);
	if (!rc)
		rc = p->dst->ops->put(p->dst, PACKSTATE_OBJECT_NAME, b.data,
				      b.len, msg, sizeof(msg));
	if (rc)
		set_err(p, "cannot write %s in DEST: %s", PACKSTATE_OBJECT_NAME,
			msg[0] ? msg : strerror(-rc));
	else
		p->state_len = b.len;
	buf_release(&b);
	return rc;
}

/* ---- SRC ---- */

/* One warning per skipped input, the first MAX_WARNINGS of them. */
static void warn_skip(void *arg, const char *path, const char *why)
{
	struct pack *p = arg;
	char esc[1024];

	if (++p->nwarned > MAX_WARNINGS)
		return;
	packsrc_escape(path, esc, sizeof(esc));
	log_warn("pack: skipping %s: %s", esc, why);
}

/* realpath() of PATH, which may not exist yet (then its parent's real
 * path plus its last component). Caller frees; NULL when unknown. */
static char *real_maybe(const char *path)
{
	char *r = realpath(path, NULL), *parent, *slash, *out = NULL;

	if (r || errno != ENOENT)
		return r;
	parent = strdup(path);
	if (!parent)
		return NULL;
	slash = strrchr(parent, '/');
	while (slash && slash > parent && slash[1] == '\0') {
		*slash = '\0'; /* "dir/" */
		slash = strrchr(parent, '/');
	}
	if (slash) {
		*slash = '\0';
		r = real_maybe(slash == parent ? "/" : parent);
		if (r && asprintf(&out, "%s/%s", strcmp(r, "/") ? r : "",
				  slash + 1) < 0)
			out = NULL;
	} else {
		r = realpath(".", NULL);
		if (r && asprintf(&out, "%s/%s", r, parent) < 0)
			out = NULL;
	}
	free(r);
	free(parent);
	return out;
}

/* Refuses DEST inside SRC: the output would be packed on the next run. */
static int check_overlap(struct pack *p)
{
	const char *s = p->o.src, *d = p->o.dest;
	char *rs = NULL, *rd = NULL;
	bool bad = false;

	if (strncmp(s, "s3://", 5) == 0 && strncmp(d, "s3://", 5) == 0) {
		size_t n = strlen(s);

		bad = strncmp(d, s, n) == 0 &&
		      (s[n - 1] == '/' || d[n] == '/' || d[n] == '\0');
	} else if (strncmp(s, "s3://", 5) != 0 && strncmp(d, "s3://", 5) != 0) {
		rs = realpath(strncmp(s, "file://", 7) ? s : s + 7, NULL);
		rd = real_maybe(strncmp(d, "file://", 7) ? d : d + 7);
		if (rs && rd) {
			size_t n = strlen(rs);

			bad = strncmp(rd, rs, n) == 0 &&
			      (rd[n] == '/' || rd[n] == '\0' ||
			       strcmp(rs, "/") == 0);
		}
	}
	free(rs);
	free(rd);
	if (bad) {
		cli_usage_error("pack", "DEST %s is inside SRC %s", d, s);
		return -EINVAL;
	}
	return 0;
}

static int open_src(struct pack *p, uint64_t read_budget)
{
	struct cli_common cc = p->common;
	struct packsrc_conf conf = {
	    .dereference = p->o.deref,
	    .read_budget = read_budget,
	    .stop = &p->ui.stop,
	    .warn = warn_skip,
	    .warn_arg = p,
	};
	char *bucket = NULL, *prefix = NULL, msg[1024] = "";
	int rc;

	cc.max_connections = src_connections(p);
	conf.max_reads = 2 * cc.max_connections; /* one waiting per slot */

	if (strncmp(p->o.src, "s3://", 5) != 0) {
		const char *dir =
		    strncmp(p->o.src, "file://", 7) ? p->o.src : p->o.src + 7;

		rc = packsrc_open_local(&conf, dir, &p->src, msg, sizeof(msg));
		if (rc)
			set_err(p, "SRC %s", msg);
		return rc;
	}
	if (cli_split_s3url("pack", p->o.src, &bucket, &prefix) < 0)
		return -EINVAL;
	rc = cli_open_store(&cc, p->o.src, &p->srcstore);
	if (rc)
		p->err_printed = true;
	else
		rc = packsrc_open_s3(&conf, p->srcstore, bucket, prefix,
				     &p->src);
	free(bucket);
	free(prefix);
	return rc;
}

static int scan_src(struct pack *p)
{
	struct packplan_conf pc = {
	    .shard_size = p->o.shard_size,
	    .pattern = p->o.pattern,
	    .shuffle = p->o.shuffle,
	    .seed = p->o.seed,
	};
	char msg[1024] = "";
	int rc;

	rc = packplan_new(&pc, &p->plan, msg, sizeof(msg));
	if (rc) {
		set_err(p, "%s", msg);
		return rc;
	}
	rc = packsrc_scan(p->src, p->plan, &p->scan, msg, sizeof(msg));
	if (rc) {
		set_err(p, "SRC %s: %s", p->o.src, msg);
		return rc;
	}
	if (p->scan.skipped > MAX_WARNINGS)
		log_warn("pack: %" PRIu64 " more inputs skipped (not listed)",
			 p->scan.skipped - MAX_WARNINGS);
	rc = packplan_finish(p->plan);
	if (rc) {
		set_err(p, "cannot plan the shards: %s", strerror(-rc));
		return rc;
	}
	if (packplan_nitems(p->plan) == 0) {
		set_err(p, "SRC %s: nothing to pack%s", p->o.src,
			p->scan.skipped ? " (everything was skipped)" : "");
		return -ENOENT;
	}
	return 0;
}

/* ---- resume ---- */

/* Shard I can be skipped: recorded with the same plan, still there with
 * the recorded size and ETag. */
static int already_stored(struct pack *p, uint32_t i)
{
	const struct packplan_shard *sh = packplan_shard(p->plan, i);
	const struct packstate_entry *e = packstate_find(&p->state, sh->key);
	struct store_entry cur;
	char msg[1024] = "";
	bool same;
	int rc;

	if (!e || strcmp(e->fp, sh->fp) != 0 || e->size != sh->size)
		return 0;
	rc = p->dst->ops->head(p->dst, sh->key, &cur, msg, sizeof(msg));
	if (rc == -ENOENT)
		return 0;
	if (rc) {
		set_err(p, "DEST %s: %s", p->o.dest, msg);
		return rc;
	}
	same =
	    cur.size == e->size && cur.etag && strcmp(cur.etag, e->etag) == 0;
	store_entry_release(&cur);
	if (!same)
		return 0;
	p->etags[i] = strdup(e->etag);
	return p->etags[i] ? 1 : -ENOMEM;
}

static int plan_resume(struct pack *p)
{
	uint32_t n = packplan_nshards(p->plan);
	struct packstate keep;
	int rc = 0;

	p->etags = calloc(n ? n : 1, sizeof(*p->etags));
	p->skip = calloc(n ? n : 1, sizeof(*p->skip));
	if (!p->etags || !p->skip)
		return -ENOMEM;
	packstate_init(&keep);
	for (uint32_t i = 0; p->o.resume && !rc && i < n; i++) {
		const struct packplan_shard *sh = packplan_shard(p->plan, i);

		rc = already_stored(p, i);
		if (rc == 1) {
			p->skip[i] = true;
			p->nresumed++;
			rc = packstate_set(&keep, sh->key, sh->size,
					   p->etags[i], sh->fp);
		}
	}
	/* The state keeps only what this plan can use. */
	packstate_release(&p->state);
	p->state = keep;
	return rc;
}

/* packup's report: shard ID is stored with ETAG. */
static int on_shard(void *arg, uint32_t id, const char *etag)
{
	struct pack *p = arg;
	const struct packplan_shard *sh = packplan_shard(p->plan, id);
	int rc;

	free(p->etags[id]);
	p->etags[id] = strdup(etag);
	if (!p->etags[id])
		return -ENOMEM;
	rc = packstate_set(&p->state, sh->key, sh->size, etag, sh->fp);
	p->nstored++;
	/* Small states are rewritten after every shard; large ones at most
	 * every 64 shards (an interrupted run re-uploads at most that many). */
	if (!rc && (p->state_len < STATE_SMALL || p->nstored % 64 == 0))
		rc = write_state(p);
	if (p->crash_after && p->nstored == p->crash_after) {
		/* Tests: die like a crash would, nothing cleaned up. */
		fflush(NULL);
		kill(getpid(), SIGKILL);
	}
	return rc;
}

/* ---- packing ---- */

static int copy_file(struct pack *p, size_t i, const struct packplan_item *it)
{
	static const char zero[TARHDR_BLOCK];
	uint64_t left = it->size;
	int rc = packsrc_open_item(p->src, i);

	while (!rc && left > 0) {
		void *dst;
		size_t room;
		ssize_t n;

		rc = packup_span(p->up, &dst, &room);
		if (rc)
			break;
		if (room > left)
			room = (size_t)left;
		n = packsrc_read(p->src, dst, room);
		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			set_err(p, "%s", packsrc_errmsg(p->src));
			break;
		}
		rc = packup_commit(p->up, (size_t)n);
		left -= (uint64_t)n;
		atomic_fetch_add(&p->ui.bytes_done, (uint64_t)n);
	}
	if (rc && !p->err[0] && packsrc_errmsg(p->src)[0])
		set_err(p, "%s", packsrc_errmsg(p->src));
	if (!rc && (rc = packsrc_close_item(p->src)))
		set_err(p, "%s", packsrc_errmsg(p->src));
	if (!rc)
		rc = packup_write(p->up, zero, tarhdr_pad_len(it->size));
	return rc;
}

static int pack_shard(struct pack *p, uint32_t s)
{
	static const char end[2 * TARHDR_BLOCK];
	const struct packplan_shard *sh = packplan_shard(p->plan, s);
	int rc = packup_begin(p->up, s, sh->key, sh->size);

	for (size_t i = sh->first; !rc && i < sh->first + sh->nitems; i++) {
		const struct packplan_item *it = packplan_item(p->plan, i);

		if (atomic_load(&p->ui.stop)) {
			rc = -EINTR;
			break;
		}
		buf_reset(&p->hdr);
		rc = packplan_write_header(it, &p->hdr);
		if (!rc)
			rc = packup_write(p->up, p->hdr.data, p->hdr.len);
		if (!rc && it->kind == PACKPLAN_FILE)
			rc = copy_file(p, i, it);
		if (!rc && it->kind == PACKPLAN_FILE)
			atomic_fetch_add(&p->ui.files_done, 1);
	}
	if (!rc)
		rc = packup_write(p->up, end, sizeof(end));
	if (!rc)
		rc = packup_end(p->up);
	return rc;
}

/* Part size: the option, grown so that the largest shard needs at most
 * 10,000 parts; buffers: what the budget holds (at least 2). */
static void size_parts(struct pack *p, uint64_t budget, uint64_t *part,
		       unsigned *nbufs)
{
	uint64_t max = 0, ps = p->o.part_size, nb;

	for (uint32_t i = 0; i < packplan_nshards(p->plan); i++)
		if (packplan_shard(p->plan, i)->size > max)
			max = packplan_shard(p->plan, i)->size;
	if (max / PACKUP_MAX_PARTS >= ps)
		ps = (max / PACKUP_MAX_PARTS / MIB + 1) * MIB;
	nb = budget / ps;
	if (nb < 2)
		nb = 2;
	if (nb > 1024)
		nb = 1024;
	*part = ps;
	*nbufs = (unsigned)nb;
}

static int pack_all(struct pack *p, uint64_t budget)
{
	struct packup_conf uc = {
	    .store = p->dst,
	    .etags = !p->dst_local,
	    .stop = &p->ui.stop,
	    .on_shard = on_shard,
	    .arg = p,
	};
	int rc;

	size_parts(p, budget, &uc.part_size, &uc.nbufs);
	log_info("pack: %" PRIu32 " shards, parts of %" PRIu64
		 " bytes, %u buffers",
		 packplan_nshards(p->plan), uc.part_size, uc.nbufs);
	rc = packup_new(&uc, &p->up);
	if (rc) {
		set_err(p, "cannot start the upload: %s", strerror(-rc));
		return rc;
	}
	rc = packsrc_start(p->src, p->plan, p->skip);
	for (uint32_t s = 0; !rc && s < packplan_nshards(p->plan); s++)
		if (!p->skip[s])
			rc = pack_shard(p, s);
	if (!rc)
		rc = packup_finish(p->up);
	if (rc) {
		if (atomic_load(&p->ui.stop))
			set_err(p, "interrupted");
		else if (packup_err(p->up))
			set_err(p, "%s", packup_errmsg(p->up));
		else
			set_err(p, "%s", strerror(-rc));
		packup_cancel(p->up);
	}
	return rc;
}

/* ---- the index ---- */

static int build_index(struct pack *p, struct buf *out)
{
	struct packplan_root root = {
	    .known = p->scan.has_root,
	    .mode = p->scan.root_mode,
	    .mtime = p->scan.root_mtime,
	};

	/* A directory's synthetic ETags change with a copy: a local index
	 * records none (shardfs-index(5)). */
	return packplan_build_index(
	    p->plan, p->dst_local ? NULL : (const char *const *)p->etags, &root,
	    (int64_t)time(NULL), out);
}

static int write_index(struct pack *p)
{
	char msg[1024] = "";
	struct buf b;
	int rc;

	atomic_store(&p->ui.phase, PACKUI_INDEX);
	buf_init(&b, DSIDX_SUGGESTED_CAP);
	rc = build_index(p, &b);
	if (rc) {
		set_err(p, "cannot build the dataset index: %s", strerror(-rc));
		goto out;
	}
	rc = write_state(p);
	if (rc)
		goto out;
	rc = p->dst->ops->put(p->dst, DSIDX_OBJECT_NAME, b.data, b.len, msg,
			      sizeof(msg));
	if (rc)
		set_err(p, "cannot write the dataset index: %s", msg);
	else
		atomic_store(&p->ui.phase, PACKUI_PACK); /* the last line */
out:
	buf_release(&b);
	return rc;
}

/* --overwrite: shards of the replaced dataset that the new one does not
 * reuse are deleted once the new index is in place. */
static void delete_old_shards(struct pack *p)
{
	for (size_t i = 0; i < p->nold; i++) {
		char msg[1024] = "";
		bool reused = false;

		if (!p->old_shards[i])
			continue;
		for (uint32_t s = 0; !reused && s < packplan_nshards(p->plan);
		     s++)
			reused = strcmp(packplan_shard(p->plan, s)->key,
					p->old_shards[i]) == 0;
		if (!reused && p->dst->ops->del(p->dst, p->old_shards[i], msg,
						sizeof(msg)))
			log_warn("pack: could not delete %s of the replaced "
				 "dataset: %s",
				 p->old_shards[i], msg);
	}
}

/* ---- the run ---- */

static int prepare(struct pack *p)
{
	char msg[1024] = "";
	int rc = check_overlap(p);

	if (rc)
		return rc;
	rc = open_src(p, p->o.memory / 4);
	if (!rc)
		rc = open_dest(p, false);
	if (!rc && p->dst)
		rc = check_dest(p);
	if (!rc)
		rc = scan_src(p);
	if (!rc && !p->dst)
		rc = open_dest(p, true);
	if (!rc)
		rc = plan_resume(p);
	if (rc)
		return rc;
	/* The first write: proves DEST writable before any data moves, and
	 * no index may describe shards that are about to change. */
	rc = write_state(p);
	if (!rc && (p->o.overwrite || p->o.resume) &&
	    (rc =
		 p->dst->ops->del(p->dst, DSIDX_OBJECT_NAME, msg, sizeof(msg))))
		set_err(p, "DEST %s: cannot remove the old index: %s",
			p->o.dest, msg);
	return rc;
}

static void summary(struct pack *p)
{
	double el = packui_elapsed(&p->ui);
	uint64_t files = atomic_load(&p->ui.files_done);
	uint64_t bytes = atomic_load(&p->ui.bytes_done);

	printf("shardfs pack: %" PRIu64 " files, %.1f MB, %" PRIu32
	       " shards (%" PRIu32 " already stored) in %.2f s: %.1f MB/s, "
	       "%.0f files/s%s\n",
	       files, (double)bytes / 1e6, packplan_nshards(p->plan),
	       p->nresumed, el, el > 0 ? (double)bytes / 1e6 / el : 0,
	       el > 0 ? (double)files / el : 0,
	       p->scan.skipped ? "; some inputs were skipped (see the "
				 "warnings)"
			       : "");
}

static void set_totals(struct pack *p)
{
	uint64_t files = 0, bytes = 0;

	for (uint32_t s = 0; s < packplan_nshards(p->plan); s++) {
		if (p->skip[s])
			continue;
		files += packplan_shard(p->plan, s)->files;
		bytes += packplan_shard(p->plan, s)->data_bytes;
	}
	atomic_store(&p->ui.files_total, files);
	atomic_store(&p->ui.bytes_total, bytes);
	atomic_store(&p->ui.phase, PACKUI_PACK);
}

static int run(struct pack *p)
{
	uint64_t budget = p->o.memory;
	int rc = prepare(p);

	if (rc)
		return rc;
	set_totals(p);
	if (strncmp(p->o.src, "s3://", 5) == 0)
		budget -= p->o.memory / 4; /* the read-ahead's share */
	rc = pack_all(p, budget);
	if (rc) {
		/* Keep what was completed for --resume. */
		set_err(p, "%s", strerror(-rc));
		write_state(p);
		return rc;
	}
	rc = write_index(p);
	if (!rc && p->nold)
		delete_old_shards(p);
	return rc;
}

static void pack_release(struct pack *p)
{
	uint32_t n = p->plan ? packplan_nshards(p->plan) : 0;

	packup_free(p->up);
	packsrc_free(p->src);
	store_free(p->srcstore);
	store_free(p->dst);
	for (uint32_t i = 0; p->etags && i < n; i++)
		free(p->etags[i]);
	free(p->etags);
	free(p->skip);
	for (size_t i = 0; i < p->nold; i++)
		free(p->old_shards[i]);
	free(p->old_shards);
	packplan_free(p->plan);
	packstate_release(&p->state);
	buf_release(&p->hdr);
}

int cmd_pack(int argc, char **argv)
{
	struct pack *p = calloc(1, sizeof(*p));
	const char *crash = getenv("SHARDFS_PACK_TEST_CRASH_AFTER");
	bool done;
	int rc;

	if (!p) {
		log_error("out of memory");
		return 1;
	}
	cli_common_init(&p->common);
	p->o.shard_size = DEFAULT_SHARD_SIZE;
	p->o.memory = DEFAULT_MEMORY;
	p->o.part_size = DEFAULT_PART_SIZE;
	p->o.pattern = PACKPLAN_DEFAULT_PATTERN;
	p->o.progress = -1;
	packstate_init(&p->state);
	buf_init(&p->hdr, 8 * TARHDR_PATH_MAX + 16 * TARHDR_BLOCK);
	rc = parse_args(p, argc, argv, &done);
	if (rc || done)
		goto out;
	rc = -cli_common_finish(&p->common);
	if (rc)
		goto out;
	p->crash_after = crash ? (uint32_t)strtoul(crash, NULL, 10) : 0;
	packui_init(&p->ui,
		    p->o.progress < 0 ? isatty(STDOUT_FILENO) : p->o.progress,
		    p->o.src);
	if (packui_start(&p->ui)) {
		log_error("pack: cannot start a thread");
		rc = 1;
		goto out;
	}
	rc = run(p);
	packui_stop(&p->ui);
	if (rc == -EINVAL && !p->err[0] && !p->err_printed) {
		rc = 2; /* a usage error, already printed */
	} else if (rc) {
		if (!p->err_printed)
			log_error("pack: %s%s",
				  p->err[0] ? p->err : strerror(-rc),
				  atomic_load(&p->ui.phase) == PACKUI_SCAN
				      ? ""
				      : "; no index written (--resume "
					"continues)");
		rc = atomic_load(&p->ui.stop) ? 128 + atomic_load(&p->ui.stop)
					      : 1;
	} else {
		summary(p);
		rc = p->scan.skipped ? EXIT_SKIPPED : 0;
	}
out:
	pack_release(p);
	free(p);
	return rc;
}
