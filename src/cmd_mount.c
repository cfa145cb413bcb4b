// SPDX-License-Identifier: MIT
/*
 * shardfs mount [OPTIONS] SOURCE MOUNTPOINT
 *
 * The parent parses the options and checks the mount point (exists, is a
 * directory, is empty, is not already a mount point). Then, unless
 * --foreground, it forks: the child becomes the daemon (new session),
 * opens the store, GETs the dataset index (shardfs.idx at the root of
 * SOURCE; unless --ignore-index) and, when there is none, lists the root
 * (either request makes wrong credentials, an unknown bucket or an
 * endpoint that is down fail before anything is mounted; an index that
 * does not verify fails the mount too), mounts, and only then reports
 * success through a pipe; the parent exits
 * 0 on that report and 1 otherwise (the child printed the cause on the
 * inherited stderr and exited, leaving nothing mounted). Engine threads
 * are only ever created in the child, after fork().
 *
 * Once mounted the daemon listens on an abstract Unix socket named after
 * the mount point (cmd_mount_control_addr()); it never accepts on it.
 * `shardfs umount` connects to it to learn the daemon's pid
 * (SO_PEERCRED) and, after unmounting, waits for the connection to end,
 * which happens when the daemon process exits. No pid file: nothing to
 * go stale, and it does not depend on the environment of either command.
 *
 * Logging: until the mount is live, errors go to stderr; the daemon then
 * logs to --log-file, or else to syslog (--foreground: stderr).
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "cli.h"
#include "cmd.h"
#include "dcache.h"
#include "dsidx.h"
#include "fsops.h"
#include "log.h"
#include "ns.h"
#include "opts.h"
#include "rd.h"
#include "shardcache.h"
#include "stats.h"


#define MOUNT_DEFAULT_TIMEOUT 86400.0 /* one day: datasets are immutable */

enum {
	OPT_METADATA_TTL = CLI_OPT_END,
	OPT_TAR,
	OPT_IGNORE_INDEX,
	OPT_CACHE_DIR,
	OPT_NO_INDEX_CACHE,
	OPT_CACHE_SIZE,
	OPT_PREFETCH,
	OPT_DISK_CACHE_SIZE,
};

struct mount_cfg {
	struct cli_common common;
	const char *source; /* borrowed from argv */
	char mnt[PATH_MAX]; /* real path of the mount point */
	bool foreground;
	unsigned metadata_ttl; /* seconds, 0 = never relist */
	uid_t uid;
	gid_t gid;
	unsigned max_read;
	char *fuse_opts;	/* owned: user -o options for libfuse */
	bool tar_files;		/* --tar=file */
	bool ignore_index;	/* --ignore-index */
	const char *cache_dir;	/* --cache-dir, borrowed from argv */
	bool no_index_cache;	/* --no-index-cache */
	uint64_t cache_size;	/* --cache-size, bytes; 0: from RAM */
	enum rd_prefetch prefetch;  /* --prefetch */
	uint64_t disk_cache_size;   /* --disk-cache-size, 0: none */
};

/* What a running mount owns; released in reverse order. */
struct mount_rt {
	struct store *store;
	struct shardcache *cache; /* shard-index cache, or NULL */
	struct dcache *dcache;	  /* data cache on disk, or NULL */
	struct stats_src stats;	  /* what .shardfs/stats reads */
	struct ns *ns;
	struct rd *rd;
	struct fsops *fs;
	struct fuse_session *se;
	int ctl; /* control socket or -1 */
};

static const struct option mount_longopts[] = {
    {"foreground", no_argument, NULL, 'f'},
    {"metadata-ttl", required_argument, NULL, OPT_METADATA_TTL},
    {"tar", required_argument, NULL, OPT_TAR},
    {"ignore-index", no_argument, NULL, OPT_IGNORE_INDEX},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"no-index-cache", no_argument, NULL, OPT_NO_INDEX_CACHE},
    {"cache-size", required_argument, NULL, OPT_CACHE_SIZE},
    {"prefetch", required_argument, NULL, OPT_PREFETCH},
    {"disk-cache-size", required_argument, NULL, OPT_DISK_CACHE_SIZE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shardfs mount [OPTIONS] SOURCE MOUNTPOINT\n\n"
		"Mounts SOURCE (s3://BUCKET[/PREFIX], file://DIR or a "
		"directory) read-only on\nMOUNTPOINT, an existing empty "
		"directory. SOURCE is checked first (its dataset\nindex read, "
		"or its root listed): when that fails, nothing is mounted. "
		"Returns\nonce the mount is live; the daemon runs until "
		"'shardfs umount MOUNTPOINT' (or\nSIGTERM/SIGINT, which "
		"unmount).\n\n"
		"Mount options:\n"
		"  -f, --foreground         stay in the foreground, log to "
		"stderr\n"
		"  -o OPT[,OPT...]          FUSE options: allow_other, "
		"allow_root,\n"
		"                           default_permissions, uid=N, gid=N "
		"(owner shown for\n"
		"                           every file; default: the mounting "
		"user),\n"
		"                           max_read=BYTES (at most 1048576), "
		"debug, ...\n"
		"  --metadata-ttl SECONDS   relist a directory after SECONDS "
		"(default: never;\n"
		"                           datasets are assumed immutable)\n"
		"  --tar=dir|file           without a dataset index, show each "
		"*.tar object as a\n"
		"                           directory of its members (dir, the "
		"default) or as\n"
		"                           a plain file (file)\n"
		"  --ignore-index           do not read SOURCE/shardfs.idx; list "
		"SOURCE instead\n"
		"  --cache-dir DIR          where tar shard indexes are cached "
		"(default:\n"
		"                           $XDG_CACHE_HOME/shardfs/shards, "
		"else\n"
		"                           ~/.cache/shardfs/shards), and the "
		"disk cache of\n"
		"                           data (DIR/data, default "
		"~/.cache/shardfs/data)\n"
		"  --no-index-cache         scan every tar shard on first use, "
		"cache nothing\n"
		"  --cache-size SIZE        memory for cached data, in flight "
		"included (default:\n"
		"                           a quarter of RAM; at least 1M)\n"
		"  --prefetch=auto|shard|member\n"
		"                           a tar member's first read fetches "
		"its whole shard\n"
		"                           (shard), or only the member and its "
		"sample's other\n"
		"                           files (member); auto (default): "
		"shard when the\n"
		"                           dataset fits in --cache-size\n"
		"  --disk-cache-size SIZE   also keep fetched data on local disk "
		"(DIR/data, at\n"
		"                           most SIZE; default 0: off); one "
		"mount per directory\n"
		"  -h, --help               show this help\n\n"
		"When SOURCE holds a dataset index (shardfs.idx, written by "
		"'shardfs pack' or\n'shardfs index'), the mount shows the tree "
		"it lists with one GET, no listing;\nan index that does not "
		"verify fails the mount (see --ignore-index).\n"
		"The directory .shardfs/ (never listed) holds 'version' and "
		"'stats' (JSON).\n\n"
		"Once daemonised, log lines go to --log-file FILE, or else to "
		"syslog.\n\n%s",
		cli_common_help);
}

static int parse_id(const char *v, bool is_uid, unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (*v && !*end && errno == 0 && n < UINT32_MAX) {
		*out = (unsigned)n;
		return 0;
	}
	if (is_uid) {
		struct passwd *pw = getpwnam(v);

		if (pw) {
			*out = pw->pw_uid;
			return 0;
		}
	} else {
		struct group *gr = getgrnam(v);

		if (gr) {
			*out = gr->gr_gid;
			return 0;
		}
	}
	return -EINVAL;
}

/* Handles one -o item: ours (uid, gid, max_read) or passed to libfuse. */
static int fuse_opt_one(struct mount_cfg *m, const char *o)
{
	unsigned v;

	if (strncmp(o, "uid=", 4) == 0 || strncmp(o, "gid=", 4) == 0) {
		if (parse_id(o + 4, o[0] == 'u', &v) < 0)
			return cli_usage_error("mount", "bad -o %s", o);
		if (o[0] == 'u')
			m->uid = (uid_t)v;
		else
			m->gid = (gid_t)v;
		return 0;
	}
	if (strncmp(o, "max_read=", 9) == 0) {
		char *end;
		unsigned long n = strtoul(o + 9, &end, 10);

		if (!o[9] || *end || n < 4096 || n > FSOPS_MAX_READ)
			return cli_usage_error("mount",
					       "-o max_read wants "
					       "4096 to %u",
					       FSOPS_MAX_READ);
		m->max_read = (unsigned)n;
		return 0;
	}
	if (strcmp(o, "rw") == 0)
		return cli_usage_error("mount", "shardfs mounts are "
						"read-only (-o rw)");
	if (strncmp(o, "fsname=", 7) == 0 || strncmp(o, "subtype=", 8) == 0)
		return cli_usage_error("mount", "-o %.*s is set by shardfs",
				       (int)strcspn(o, "="), o);
	if (strcmp(o, "ro") == 0 || !*o)
		return 0;
	if (fuse_opt_add_opt_escaped(&m->fuse_opts, o) != 0)
		return 1;
	return 0;
}

static int parse_fuse_opts(struct mount_cfg *m, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return 1;
	for (tok = strtok_r(copy, ",", &save); tok && rc == 0;
	     tok = strtok_r(NULL, ",", &save))
		rc = fuse_opt_one(m, tok);
	free(copy);
	return rc;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(struct mount_cfg *m, int argc, char **argv)
{
	struct option *lo = cli_longopts_merge(mount_longopts);
	int c, rc = -1;

	while (rc < 0 &&
	       (c = getopt_long(argc, argv, "fo:h", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			m->foreground = true;
			break;
		case 'o':
			if (parse_fuse_opts(m, optarg))
				rc = 2;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			break;
		case OPT_METADATA_TTL: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || v > 365UL * 86400)
				rc = cli_usage_error("mount",
						     "--metadata-ttl "
						     "wants seconds, not '%s'",
						     optarg);
			m->metadata_ttl = (unsigned)v;
			break;
		}
		case OPT_TAR:
			if (strcmp(optarg, "dir") == 0 ||
			    strcmp(optarg, "file") == 0)
				m->tar_files = optarg[0] == 'f';
			else
				rc = cli_usage_error("mount",
						     "--tar wants dir or "
						     "file, not '%s'",
						     optarg);
			break;
		case OPT_IGNORE_INDEX:
			m->ignore_index = true;
			break;
		case OPT_CACHE_DIR:
			if (!*optarg)
				rc = cli_usage_error("mount", "--cache-dir "
							      "wants a "
							      "directory");
			m->cache_dir = optarg;
			break;
		case OPT_NO_INDEX_CACHE:
			m->no_index_cache = true;
			break;
		case OPT_CACHE_SIZE:
			if (opts_parse_size(optarg, &m->cache_size) != 0 ||
			    m->cache_size < (1u << 20))
				rc = cli_usage_error("mount",
						     "--cache-size wants a "
						     "size of at least 1M, "
						     "not '%s'",
						     optarg);
			break;
		case OPT_PREFETCH:
			if (strcmp(optarg, "auto") == 0)
				m->prefetch = RD_PREFETCH_AUTO;
			else if (strcmp(optarg, "shard") == 0)
				m->prefetch = RD_PREFETCH_SHARD;
			else if (strcmp(optarg, "member") == 0)
				m->prefetch = RD_PREFETCH_MEMBER;
			else
				rc = cli_usage_error("mount",
						     "--prefetch wants auto, "
						     "shard or member, not "
						     "'%s'",
						     optarg);
			break;
		case OPT_DISK_CACHE_SIZE:
			if (opts_parse_size(optarg, &m->disk_cache_size) != 0)
				rc = cli_usage_error("mount",
						     "--disk-cache-size wants "
						     "a size, not '%s'",
						     optarg);
			break;
		default:
			c = cli_common_opt(&m->common, c, optarg);
			if (c == 0)
				rc = cli_usage_error("mount", "unknown option");
			else if (c < 0)
				rc = 2;
		}
	}
	free(lo);
	if (rc < 0 && argc - optind != 2)
		rc = cli_usage_error("mount", "expected SOURCE and "
					      "MOUNTPOINT");
	if (rc < 0)
		m->source = argv[optind];
	return rc;
}

/* Checks the mount point and resolves it into M->mnt. 0 or 1. */
static int check_mountpoint(struct mount_cfg *m, const char *arg)
{
	struct stat st, up;
	char parent[PATH_MAX + 4];
	struct dirent *de;
	DIR *d;

	if (stat(arg, &st) != 0) {
		if (errno == ENOTCONN)
			fprintf(stderr,
				"shardfs mount: %s is a dead mount; run "
				"'shardfs umount %s' first\n",
				arg, arg);
		else if (errno == ENOENT)
			fprintf(stderr,
				"shardfs mount: mount point %s does "
				"not exist\n",
				arg);
		else
			fprintf(stderr, "shardfs mount: %s: %s\n", arg,
				strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"shardfs mount: mount point %s is not a "
			"directory\n",
			arg);
		return 1;
	}
	if (!realpath(arg, m->mnt)) {
		fprintf(stderr, "shardfs mount: %s: %s\n", arg,
			strerror(errno));
		return 1;
	}
	snprintf(parent, sizeof(parent), "%s/..", m->mnt);
	if (stat(parent, &up) == 0 &&
	    (up.st_dev != st.st_dev || up.st_ino == st.st_ino)) {
		fprintf(stderr, "shardfs mount: %s is already a mount point\n",
			arg);
		return 1;
	}
	d = opendir(m->mnt);
	if (!d) {
		fprintf(stderr, "shardfs mount: %s: %s\n", arg,
			strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) != NULL &&
	       (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0))
		;
	closedir(d);
	if (de) {
		fprintf(stderr,
			"shardfs mount: mount point %s is not "
			"empty\n",
			arg);
		return 1;
	}
	return 0;
}

int cmd_mount_control_addr(const char *mnt, struct sockaddr_un *sa,
			   socklen_t *len)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
	int n;

	for (const unsigned char *p = (const unsigned char *)mnt; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] == '\0': an abstract name, gone with the process. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     "shardfs/mount/%016" PRIx64, h);
	*len =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

static int control_listen(const char *mnt)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	cmd_mount_control_addr(mnt, &sa, &len);
	if (bind(fd, (struct sockaddr *)&sa, len) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		log_warn("no control socket for %s (%s): 'shardfs umount' "
			 "will not wait for this daemon",
			 mnt, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Routes libfuse's messages into our log. libfuse writes some lines in
 * pieces (the "unknown option(s)" message is three calls), so pieces are
 * joined per thread until a newline; a thread-local buffer, because
 * libfuse may log from any worker thread.
 */
static void fuse_log_bridge(enum fuse_log_level level, const char *fmt,
			    va_list ap)
{
	static _Thread_local char line[1024];
	size_t n = strlen(line);
	enum log_level l = level <= FUSE_LOG_ERR       ? LOG_LVL_ERROR
			   : level <= FUSE_LOG_WARNING ? LOG_LVL_WARN
			   : level <= FUSE_LOG_INFO    ? LOG_LVL_INFO
						       : LOG_LVL_DEBUG;

	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	n = strlen(line);
	if (n == 0 || (line[n - 1] != '\n' && n < sizeof(line) - 1))
		return;
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_msg(l, "%s", line);
	line[0] = '\0';
}

/* ns_index_shard_fn over the shard scanner and its disk cache. */
static int index_shard(void *arg, const char *key, uint64_t size,
		       const char *etag, struct buf *out,
		       struct ns_shard_info *info, char *msg, size_t msglen)
{
	struct mount_rt *rt = arg;
	struct shard_scan_result res;
	bool from_cache = false;
	int rc;

	memset(&res, 0, sizeof(res));
	rc = shard_index_cached(rt->store, rt->cache, key, size, etag, out,
				&res, &from_cache, msg, msglen);
	info->damaged = res.damaged;
	snprintf(info->damage, sizeof(info->damage), "%s", res.damage);
	info->from_cache = from_cache;
	return rc;
}

/*
 * Reads the dataset index at the root of the source into *IDX (left
 * empty when there is none). 0, or 1 when the mount must fail (printed).
 */
static int load_index(struct mount_cfg *m, struct mount_rt *rt,
		      struct ns_index *idx)
{
	struct store *st = rt->store;
	char msg[512] = "", err[256] = "";
	int rc;

	memset(idx, 0, sizeof(*idx));
	if (m->ignore_index)
		return 0;
	if (!st->ops->get_object)
		return 0;
	rc = st->ops->get_object(st, DSIDX_OBJECT_NAME, DSIDX_SUGGESTED_CAP,
				 &idx->bytes, &idx->len, msg, sizeof(msg));
	if (rc == -ENOENT)
		return 0; /* no index: list the source */
	if (rc == 0) {
		rc = dsidx_open(idx->bytes, idx->len, &idx->x, err,
				sizeof(err));
		if (rc == 0) {
			log_info("dataset index %s of %s: %" PRIu32
				 " members in %" PRIu32 " shards",
				 DSIDX_OBJECT_NAME, st->ops->describe(st),
				 dsidx_info(idx->x)->nmembers,
				 dsidx_info(idx->x)->nshards);
			return 0;
		}
		free(idx->bytes);
		memset(idx, 0, sizeof(*idx));
		fprintf(stderr,
			"shardfs mount: %s of %s is not a valid dataset index "
			"(%s); --ignore-index mounts without it\n",
			DSIDX_OBJECT_NAME, st->ops->describe(st),
			err[0] ? err : strerror(-rc));
		return 1;
	}
	if (msg[0])
		fprintf(stderr, "shardfs mount: %s\n", msg);
	else
		fprintf(stderr, "shardfs mount: %s of %s: %s\n",
			DSIDX_OBJECT_NAME, st->ops->describe(st),
			strerror(-rc));
	return 1;
}

/* Opens the shard-index cache for listing mode. 0 or 1 (printed). */
static int open_cache(struct mount_cfg *m, struct mount_rt *rt)
{
	char msg[512] = "";

	if (m->tar_files || m->no_index_cache)
		return 0;
	if (shardcache_open(m->cache_dir, &rt->cache, msg, sizeof(msg)) == 0)
		return 0;
	if (m->cache_dir) {
		fprintf(stderr, "shardfs mount: --cache-dir: %s\n", msg);
		return 1;
	}
	log_warn("no shard index cache (%s): tar shards are scanned at "
		 "every mount",
		 msg);
	return 0;
}

/* The default memory budget: a quarter of the RAM. */
static uint64_t default_cache_size(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psize > 0
			   ? (uint64_t)pages * (uint64_t)psize
			   : (uint64_t)4 << 30;

	return ram / 4 > RD_DEFAULT_CACHE ? ram / 4 : RD_DEFAULT_CACHE;
}

/* Opens the disk cache when --disk-cache-size asks. 0 or 1 (printed). */
static int open_dcache(struct mount_cfg *m, struct mount_rt *rt)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	/* Room in the write queue for two of the largest whole-shard
	 * ranges: a larger one would always be dropped. */
	struct dcache_conf dc = {.max_bytes = m->disk_cache_size,
				 .queue_max = 2 * (uint64_t)RD_SHARD_RANGE_MAX};
	char dir[PATH_MAX], msg[512] = "";

	if (!m->disk_cache_size)
		return 0;
	if (m->cache_dir)
		snprintf(dir, sizeof(dir), "%s", m->cache_dir);
	else if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/shardfs", xdg);
	else if (home && home[0])
		snprintf(dir, sizeof(dir), "%s/.cache/shardfs", home);
	else {
		fprintf(stderr, "shardfs mount: --disk-cache-size: no cache "
				"directory: set --cache-dir, XDG_CACHE_HOME "
				"or HOME\n");
		return 1;
	}
	dc.dir = dir;
	if (dcache_open(&dc, &rt->dcache, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "shardfs mount: disk cache: %s\n", msg);
		return 1;
	}
	return 0;
}

/* Creates the read path. SHARD_BYTES: the dataset's size when an index
 * gives it, else 0. 0 or 1. */
static int open_rd(struct mount_cfg *m, struct mount_rt *rt,
		   uint64_t shard_bytes)
{
	struct rd_conf c = {
	    .store = rt->store,
	    .dcache = rt->dcache,
	    .cache_bytes = m->cache_size ? m->cache_size
					 : default_cache_size(),
	    .prefetch = m->prefetch,
	    .dataset_bytes = shard_bytes,
	};

	if (rd_new(&c, &rt->rd) < 0) {
		fprintf(stderr, "shardfs mount: out of memory\n");
		return 1;
	}
	log_info("read cache %" PRIu64 " MiB, prefetch %s%s", c.cache_bytes >> 20,
		 m->prefetch == RD_PREFETCH_SHARD    ? "shard"
		 : m->prefetch == RD_PREFETCH_MEMBER ? "member"
		 : shard_bytes == 0		     ? "auto"
		 : shard_bytes <= c.cache_bytes	     ? "auto (shard: the dataset fits)"
						     : "auto (member: the dataset does not fit)",
		 rt->dcache ? ", disk cache on" : "");
	return 0;
}

/* Opens the store, reads the dataset index or lists the root, builds ns,
 * rd and fsops. 0 or 1. */
static int rt_open(struct mount_cfg *m, struct mount_rt *rt)
{
	struct ns_conf nc = {0};
	struct fsops_conf fc = {0};
	char msg[512] = "";
	uint64_t nc_shard_bytes;
	int rc;

	rt->stats.started_ns = stats_now_ns();
	if (cli_open_store(&m->common, m->source, &rt->store) < 0)
		return 1;
	rt->stats.store = rt->store;
	if (load_index(m, rt, &nc.index) != 0)
		return 1;
	nc_shard_bytes =
	    nc.index.x ? dsidx_info(nc.index.x)->shard_bytes : 0;
	if (!nc.index.x && open_cache(m, rt) != 0)
		return 1;
	nc.store = rt->store;
	nc.metadata_ttl = m->metadata_ttl;
	nc.tar_dirs = !m->tar_files;
	nc.index_shard = index_shard;
	nc.index_arg = rt;
	nc.stats_fn = stats_ns_gen;
	nc.stats_arg = &rt->stats;
	if (ns_new(&nc, &rt->ns) < 0)
		return 1;
	rt->stats.ns = rt->ns;
	rc = ns_prime(rt->ns, msg, sizeof(msg));
	if (rc < 0) {
		/* The store's message names the source, as in shardfs ls. */
		if (msg[0])
			fprintf(stderr, "shardfs mount: %s\n", msg);
		else
			fprintf(stderr, "shardfs mount: %s: %s\n", m->source,
				strerror(-rc));
		return 1;
	}
	if (open_dcache(m, rt) != 0)
		return 1;
	if (open_rd(m, rt, nc_shard_bytes) != 0)
		return 1;
	rt->stats.rd = rt->rd;
	fc.ns = rt->ns;
	fc.rd = rt->rd;
	fc.uid = m->uid;
	fc.gid = m->gid;
	fc.timeout = MOUNT_DEFAULT_TIMEOUT;
	if (m->metadata_ttl && m->metadata_ttl < fc.timeout)
		fc.timeout = m->metadata_ttl;
	fc.metadata_ttl = m->metadata_ttl;
	fc.max_read = m->max_read;
	fc.max_background = 256;
	fc.use_no_open = true;
	return fsops_new(&fc, &rt->fs) < 0 ? 1 : 0;
}

static void rt_close(struct mount_rt *rt)
{
	if (rt->se) {
		fuse_remove_signal_handlers(rt->se);
		/* Replies of reads still in flight go to the open device. */
		rd_free(rt->rd);
		rt->rd = NULL;
		fuse_session_unmount(rt->se);
		fuse_session_destroy(rt->se);
	}
	fsops_free(rt->fs);
	rd_free(rt->rd);
	ns_free(rt->ns);
	dcache_close(rt->dcache);
	shardcache_close(rt->cache);
	store_free(rt->store);
	if (rt->ctl >= 0)
		close(rt->ctl);
}

/* Creates the session and mounts. 0 or 1 (cause printed). */
static int rt_mount(struct mount_cfg *m, struct mount_rt *rt)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char *opts = NULL, tmp[PATH_MAX + 64];
	int rc = 1;

	snprintf(tmp, sizeof(tmp), "fsname=%s", m->source);
	if (fuse_opt_add_arg(&args, "shardfs") ||
	    fuse_opt_add_opt(&opts, "ro,subtype=shardfs") ||
	    fuse_opt_add_opt_escaped(&opts, tmp))
		goto out;
	snprintf(tmp, sizeof(tmp), "max_read=%u", m->max_read);
	if (fuse_opt_add_opt(&opts, tmp) ||
	    (m->fuse_opts && fuse_opt_add_opt(&opts, m->fuse_opts)) ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, opts))
		goto out;
	rt->se = fuse_session_new(&args, fsops_lowlevel_ops(),
				  fsops_lowlevel_ops_size(), rt->fs);
	if (!rt->se) /* libfuse said why (e.g. "unknown option(s)") */
		goto out;
	if (fuse_set_signal_handlers(rt->se) != 0 ||
	    fuse_session_mount(rt->se, m->mnt) != 0) {
		/* libfuse said why, through fuse_log_bridge(). */
		fuse_remove_signal_handlers(rt->se);
		fuse_session_destroy(rt->se);
		rt->se = NULL;
		goto out;
	}
	rc = 0;
out:
	free(opts);
	fuse_opt_free_args(&args);
	return rc;
}

/* Daemon side of a successful mount: quiet stdio, log sink. */
static void detach(struct mount_cfg *m)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (!m->common.log_file)
		log_use_syslog("shardfs");
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (chdir("/") != 0)
		log_warn("chdir /: %s", strerror(errno));
}

static void report(int fd, char status)
{
	ssize_t n;

	if (fd < 0)
		return;
	do
		n = write(fd, &status, 1);
	while (n < 0 && errno == EINTR);
	close(fd);
}

/* Runs the mount until it ends. REPORT_FD: the parent's pipe, or -1. */
static int serve(struct mount_cfg *m, int report_fd)
{
	struct mount_rt rt = {.ctl = -1};
	struct fuse_loop_config lc = {.clone_fd = 0, .max_idle_threads = 10};
	int rc = 1;

	fuse_set_log_func(fuse_log_bridge);
	if (rt_open(m, &rt) != 0 || rt_mount(m, &rt) != 0) {
		rt_close(&rt);
		report(report_fd, '1');
		return 1;
	}
	rt.ctl = control_listen(m->mnt);
	if (report_fd >= 0)
		detach(m);
	log_info("mounted %s on %s (pid %ld)", m->source, m->mnt,
		 (long)getpid());
	report(report_fd, '0');
	rc = fuse_session_loop_mt(rt.se, &lc);
	if (rc < 0)
		log_error("FUSE session ended with an error: %s",
			  strerror(-rc));
	else
		log_info("unmounting %s%s", m->mnt, rc > 0 ? " (signal)" : "");
	rt_close(&rt);
	return rc < 0 ? 1 : 0;
}

/* Parent side: forks the daemon and waits for its report. */
static int run_detached(struct mount_cfg *m)
{
	int p[2], status;
	ssize_t n;
	pid_t pid;
	char c = 0;

	if (pipe2(p, O_CLOEXEC) != 0) {
		fprintf(stderr, "shardfs mount: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "shardfs mount: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		return serve(m, p[1]);
	}
	close(p[1]);
	do
		n = read(p[0], &c, 1);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == 1 && c == '0')
		return 0;
	waitpid(pid, &status, 0);
	if (n != 1)
		fprintf(stderr, "shardfs mount: the daemon exited before the "
				"mount was ready\n");
	return 1;
}

int cmd_mount(int argc, char **argv)
{
	struct mount_cfg m;
	int rc;

	memset(&m, 0, sizeof(m));
	cli_common_init(&m.common);
	m.uid = getuid();
	m.gid = getgid();
	m.max_read = FSOPS_MAX_READ;
	rc = parse_args(&m, argc, argv);
	if (rc >= 0)
		goto out;
	rc = -cli_common_finish(&m.common);
	if (rc)
		goto out;
	rc = 1;
	if (check_mountpoint(&m, argv[optind + 1]) != 0)
		goto out;
	rc = m.foreground ? serve(&m, -1) : run_detached(&m);
out:
	free(m.fuse_opts);
	return rc;
}
