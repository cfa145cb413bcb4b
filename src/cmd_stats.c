// SPDX-License-Identifier: MIT
/*
 * shardfs stats [--watch [SECONDS]] [--json] MOUNTPOINT
 *
 * Reads MOUNTPOINT/.shardfs/stats (the JSON that stats.c makes afresh on
 * every read; its keys are documented in stats.h) and shows it for
 * people: requests, data, cache, latency, uptime, in human units. --json
 * prints the JSON as read. --watch samples every SECONDS and adds the
 * rates since the previous sample.
 *
 * The file is not trusted (any directory can hold a .shardfs/stats): it
 * is read up to JSONFLAT_MAX_INPUT bytes and parsed by jsonflat (bounded,
 * strict); a key that is missing or of the wrong type shows as "-".
 *
 * Signals (--watch only): SIGINT and SIGTERM are blocked except while the
 * file is read (so that a read from a stuck daemon can be interrupted)
 * and while waiting for the next sample (ppoll() unblocks them
 * atomically, so none is missed); either ends the loop with exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd.h"
#include "jsonflat.h"

#define STATS_PATH	 "/.shardfs/stats"
#define WATCH_DEFAULT_NS 1000000000LL
#define WATCH_MAX_S	 86400

static const char stats_help[] =
    "usage: shardfs stats [--watch [SECONDS]] [--json] MOUNTPOINT\n"
    "\n"
    "Shows the live counters of the shardfs mount at MOUNTPOINT, read\n"
    "from MOUNTPOINT/.shardfs/stats: store requests (GET, LIST, HEAD,\n"
    "other; retries, errors, in flight, queued), bytes fetched and\n"
    "served, the read cache (hits, misses, hit rate, bytes held of the\n"
    "budget, evictions, disk cache hits), request latency percentiles\n"
    "and uptime. Sizes are in KiB/MiB/GiB, counts in k (1000) and M.\n"
    "\n"
    "  -w, --watch [SECONDS]  show a new sample every SECONDS (default 1,\n"
    "                         decimals allowed, > 0) with the rates since\n"
    "                         the previous one (GET/s, bytes/s fetched and\n"
    "                         served), until SIGINT or SIGTERM (exit 0).\n"
    "                         SECONDS is the next argument when it is a\n"
    "                         number, or --watch=SECONDS. On a terminal the\n"
    "                         screen is cleared between samples; otherwise\n"
    "                         samples are separated by a blank line.\n"
    "  -j, --json             print the JSON itself (keys: man shardfs)\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 on success, 1 when the statistics cannot be read (not\n"
    "a shardfs mount, a dead mount, invalid JSON), 2 for a usage error.\n";

/* Set by the signal handler of --watch, read by its loop: the one place
 * a signal can reach (a read interrupted with EINTR does not say which
 * signal, and a signal may land between two checks). */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* One reading of the statistics file. */
struct sample {
	char *raw; /* owned; the file's bytes, NUL-terminated */
	size_t len;
	struct jsonflat j;
	int64_t taken_ns; /* CLOCK_MONOTONIC when read */
};

static void sample_release(struct sample *s)
{
	free(s->raw);
	jsonflat_release(&s->j);
	memset(s, 0, sizeof(*s));
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool is_dead_errno(int e)
{
	return e == ENOTCONN || e == ECONNABORTED;
}

static int say_dead(const char *mnt)
{
	fprintf(stderr,
		"shardfs stats: %s: the shardfs daemon is gone (%s); run "
		"shardfs umount %s\n",
		mnt, strerror(ENOTCONN), mnt);
	return 1;
}

/* Why opening the statistics of MNT failed with errno E. Returns 1. */
static int say_open_error(const char *mnt, const char *path, int e)
{
	struct stat st;

	if (is_dead_errno(e))
		return say_dead(mnt);
	if (e != ENOENT && e != ENOTDIR) {
		fprintf(stderr, "shardfs stats: %s: %s\n", path, strerror(e));
		return 1;
	}
	if (stat(mnt, &st) != 0) {
		if (is_dead_errno(errno))
			return say_dead(mnt);
		fprintf(stderr, "shardfs stats: %s: %s\n", mnt,
			strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "shardfs stats: %s: not a directory\n", mnt);
	} else {
		fprintf(stderr,
			"shardfs stats: %s is not a shardfs mount (it has no "
			".shardfs/stats)\n",
			mnt);
	}
	return 1;
}

/* Reads FD to the end into S->raw, at most JSONFLAT_MAX_INPUT bytes.
 * 0 or a negative errno (-E2BIG when larger). */
static int read_all(int fd, struct sample *s)
{
	size_t cap = JSONFLAT_MAX_INPUT + 1, alloc = 16384;
	char *p = malloc(alloc);

	if (!p)
		return -ENOMEM;
	s->len = 0;
	for (;;) {
		ssize_t n;

		if (s->len + 1 == alloc && alloc < cap + 1) {
			size_t na = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
			char *q = realloc(p, na);

			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			alloc = na;
		}
		n = read(fd, p + s->len, alloc - 1 - s->len);
		if (n < 0) {
			int e = errno;

			free(p);
			return -e;
		}
		if (n == 0)
			break;
		s->len += (size_t)n;
		if (s->len >= cap) {
			free(p);
			return -E2BIG;
		}
	}
	p[s->len] = '\0';
	s->raw = p;
	return 0;
}

/*
 * Reads and parses the statistics of MNT into *S. 0; 1 after printing
 * why not; -EINTR when a signal interrupted the read (nothing printed).
 */
static int sample_take(const char *mnt, struct sample *s)
{
	char path[4096], msg[200];
	uint64_t version;
	struct stat st;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	if (snprintf(path, sizeof(path), "%s" STATS_PATH, mnt) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "shardfs stats: %s: %s\n", mnt,
			strerror(ENAMETOOLONG));
		return 1;
	}
	/* O_NONBLOCK: a FIFO planted there must not hang us. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == EINTR ? -EINTR
				      : say_open_error(mnt, path, errno);
	rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (rc < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		if (is_dead_errno(-rc))
			return say_dead(mnt);
		fprintf(stderr, "shardfs stats: %s: %s\n", path,
			rc ? strerror(-rc) : "not a regular file");
		return 1;
	}
	s->taken_ns = now_ns();
	rc = read_all(fd, s);
	close(fd);
	if (rc == -EINTR)
		return rc;
	if (rc < 0 && is_dead_errno(-rc))
		return say_dead(mnt);
	if (rc == -E2BIG) {
		fprintf(stderr, "shardfs stats: %s: larger than %u bytes\n",
			path, JSONFLAT_MAX_INPUT);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "shardfs stats: %s: %s\n", path, strerror(-rc));
		return 1;
	}
	rc = jsonflat_parse(s->raw, s->len, &s->j, msg, sizeof(msg));
	if (rc < 0) {
		fprintf(stderr, "shardfs stats: %s: not valid JSON (%s)\n",
			path, msg[0] ? msg : strerror(-rc));
		sample_release(s);
		return 1;
	}
	if (jsonflat_u64(&s->j, "version", &version) < 0 || version < 1) {
		fprintf(stderr,
			"shardfs stats: %s: not shardfs statistics (no "
			"\"version\")\n",
			path);
		sample_release(s);
		return 1;
	}
	return 0;
}

/* ---- human units ---- */

/* 3 significant digits of X (>= 0, < 1000 after scaling). */
static void sig3(double x, const char *unit, char *out, size_t len)
{
	int prec = x < 9.995 ? 2 : x < 99.95 ? 1 : 0;

	snprintf(out, len, "%.*f%s", prec, x, unit);
}

/* Counts: exact below 1000, then k, M, G, T with 3 digits. */
static void fmt_count(double v, char *out, size_t len)
{
	static const char *const units[] = {"", "k", "M", "G", "T", "P"};
	int u = 0;

	if (v < 999.5) {
		snprintf(out, len, "%.0f", v);
		return;
	}
	while (v >= 999.5 && u < 5) {
		v /= 1000;
		u++;
	}
	sig3(v, units[u], out, len);
}

/* Rates of counts: one decimal below 1000, then as fmt_count(). */
static void fmt_rate(double v, char *out, size_t len)
{
	if (v < 999.95)
		snprintf(out, len, "%.1f", v);
	else
		fmt_count(v, out, len);
}

/* Bytes: "N B" below 1000, then KiB, MiB, GiB, TiB with 3 digits. */
static void fmt_bytes(double v, char *out, size_t len)
{
	static const char *const units[] = {" B",   " KiB", " MiB",
					    " GiB", " TiB", " PiB"};
	int u = 0;

	if (v < 999.5) {
		snprintf(out, len, "%.0f B", v);
		return;
	}
	while (v >= 999.5 && u < 5) {
		v /= 1024;
		u++;
	}
	sig3(v, units[u], out, len);
}

static void fmt_ms(double ms, char *out, size_t len)
{
	if (ms >= 1000)
		sig3(ms / 1000, " s", out, len);
	else
		sig3(ms, " ms", out, len);
}

static void fmt_uptime(double s, char *out, size_t len)
{
	uint64_t t = (uint64_t)s;

	if (s < 60)
		snprintf(out, len, "%.1fs", s);
	else if (t < 3600)
		snprintf(out, len, "%" PRIu64 "m %02" PRIu64 "s", t / 60,
			 t % 60);
	else if (t < 86400)
		snprintf(out, len, "%" PRIu64 "h %02" PRIu64 "m", t / 3600,
			 t / 60 % 60);
	else
		snprintf(out, len, "%" PRIu64 "d %02" PRIu64 "h", t / 86400,
			 t / 3600 % 24);
}

/* ---- one block ---- */

/* The value at PATH, formatted by FMT, or "-" when it is missing. */
static const char *val(const struct sample *s, const char *path,
		       void (*fmt)(double, char *, size_t), char *out,
		       size_t len)
{
	double v;

	if (jsonflat_double(&s->j, path, &v) < 0 || v < 0)
		return "-";
	fmt(v, out, len);
	return out;
}

/* val() of sample S into buffer I of the caller's b[5][32]: each value of
 * one printf() needs its own buffer. */
#define V(i, path, fmt) val(s, path, fmt, b[i], sizeof(b[i]))

static void print_requests(const struct sample *s)
{
	uint64_t put = 0, other = 0;
	char b[5][32], o[32] = "-";

	if (jsonflat_u64(&s->j, "requests.put", &put) == 0 &&
	    jsonflat_u64(&s->j, "requests.other", &other) == 0)
		fmt_count((double)(put + other), o, sizeof(o));
	printf("requests  GET %s, LIST %s, HEAD %s, other %s; retries %s, "
	       "errors %s\n",
	       V(0, "requests.get", fmt_count),
	       V(1, "requests.list", fmt_count),
	       V(2, "requests.head", fmt_count), o, V(3, "retries", fmt_count),
	       V(4, "errors", fmt_count));
	printf("          in flight %s, queued %s, connections opened %s\n",
	       V(0, "in_flight", fmt_count), V(1, "queued", fmt_count),
	       V(2, "connections_opened", fmt_count));
}

static void print_data(const struct sample *s)
{
	char b[5][32], ratio[32] = "-";
	double f, sv;

	if (jsonflat_double(&s->j, "bytes_fetched", &f) == 0 &&
	    jsonflat_double(&s->j, "bytes_served", &sv) == 0 && sv > 0)
		snprintf(ratio, sizeof(ratio), "%.2f", f / sv);
	printf("data      fetched %s, served %s, fetched per byte served "
	       "%s\n",
	       V(0, "bytes_fetched", fmt_bytes),
	       V(1, "bytes_served", fmt_bytes), ratio);
}

static void print_cache(const struct sample *s)
{
	char b[5][32], rate[32] = "-";
	double r;

	if (jsonflat_double(&s->j, "cache.hit_rate", &r) == 0)
		snprintf(rate, sizeof(rate), "%.1f%%", r * 100);
	printf("cache     hit rate %s: hits %s, misses %s, joined %s\n", rate,
	       V(0, "cache.hits", fmt_count), V(1, "cache.misses", fmt_count),
	       V(2, "cache.joined", fmt_count));
	printf("          held %s of %s, extents %s; evictions %s (%s)\n",
	       V(0, "cache.held_bytes", fmt_bytes),
	       V(1, "cache.budget_bytes", fmt_bytes),
	       V(2, "cache.extents", fmt_count),
	       V(3, "cache.evictions", fmt_count),
	       V(4, "cache.evicted_bytes", fmt_bytes));
	printf("          disk hits %s (%s); shards fetched whole %s; "
	       "prefetched %s\n",
	       V(0, "cache.disk_hits", fmt_count),
	       V(1, "cache.disk_bytes_read", fmt_bytes),
	       V(2, "cache.shard_fetches", fmt_count),
	       V(3, "cache.prefetch_bytes", fmt_bytes));
}

static void print_latency(const struct sample *s)
{
	const struct jsonflat_item *it = jsonflat_get(&s->j, "latency_ms");
	char b[5][32];
	uint64_t n;

	if (it && it->type == JSONFLAT_NULL) {
		printf("latency   not measured by this store\n");
		return;
	}
	if (jsonflat_u64(&s->j, "latency_ms.requests", &n) < 0) {
		printf("latency   -\n");
		return;
	}
	if (n == 0) {
		printf("latency   no requests yet\n");
		return;
	}
	printf("latency   p50 %s, p90 %s, p99 %s, max < %s (requests of all "
	       "kinds: %s)\n",
	       V(0, "latency_ms.p50", fmt_ms), V(1, "latency_ms.p90", fmt_ms),
	       V(2, "latency_ms.p99", fmt_ms),
	       V(3, "latency_ms.max_bucket", fmt_ms),
	       V(4, "latency_ms.requests", fmt_count));
}

/* The rate of the counter at PATH per second between P and S, or -1. */
static double rate(const struct sample *p, const struct sample *s,
		   const char *path, double dt)
{
	uint64_t a, b;

	if (jsonflat_u64(&p->j, path, &a) < 0 ||
	    jsonflat_u64(&s->j, path, &b) < 0 || b < a)
		return -1; /* missing, or the mount was restarted */
	return (double)(b - a) / dt;
}

static void print_rates(const struct sample *p, const struct sample *s)
{
	char g[32] = "-", f[32] = "-", v[32] = "-";
	double u0, u1, dt, x;

	if (!p) {
		printf("rates     GET/s -, fetched -/s, served -/s (from the "
		       "next sample on)\n");
		return;
	}
	/* The daemon's clock when it says, else ours. */
	if (jsonflat_double(&p->j, "uptime_seconds", &u0) == 0 &&
	    jsonflat_double(&s->j, "uptime_seconds", &u1) == 0)
		dt = u1 - u0;
	else
		dt = (double)(s->taken_ns - p->taken_ns) / 1e9;
	if (dt > 0) {
		if ((x = rate(p, s, "requests.get", dt)) >= 0)
			fmt_rate(x, g, sizeof(g));
		if ((x = rate(p, s, "bytes_fetched", dt)) >= 0)
			fmt_bytes(x, f, sizeof(f));
		if ((x = rate(p, s, "bytes_served", dt)) >= 0)
			fmt_bytes(x, v, sizeof(v));
	}
	printf("rates     GET/s %s, fetched %s/s, served %s/s\n", g, f, v);
}

/* The human block of S; with --watch, PREV is the previous sample (or
 * NULL for the first) and the rates are shown. */
static void print_block(const char *mnt, const struct sample *s,
			const struct sample *prev, bool watch)
{
	char up[32] = "-";
	uint64_t version = 0;
	double u;

	if (jsonflat_double(&s->j, "uptime_seconds", &u) == 0 && u >= 0)
		fmt_uptime(u, up, sizeof(up));
	jsonflat_u64(&s->j, "version", &version);
	printf("%s: shardfs mount, up %s (statistics version %" PRIu64 ")\n",
	       mnt, up, version);
	print_requests(s);
	print_data(s);
	print_cache(s);
	print_latency(s);
	if (watch)
		print_rates(prev, s);
}

/* ---- the loop ---- */

/* The JSON as read, without the spaces that pad the file to whole pages
 * (ns.h), and with a newline at the end. */
static void print_json(const struct sample *s)
{
	size_t n = s->len;

	while (n > 0 && (s->raw[n - 1] == ' ' || s->raw[n - 1] == '\n' ||
			 s->raw[n - 1] == '\t' || s->raw[n - 1] == '\r'))
		n--;
	fwrite(s->raw, 1, n, stdout);
	putchar('\n');
}

/* Prints sample S (human or JSON). 0, or 1 when stdout failed. */
static int show(const char *mnt, const struct sample *s,
		const struct sample *prev, bool watch, bool json, bool first)
{
	bool tty = isatty(STDOUT_FILENO);

	if (watch && tty)
		fputs("\033[H\033[2J", stdout);
	else if (watch && !first)
		putchar('\n');
	if (json)
		print_json(s);
	else
		print_block(mnt, s, prev, watch);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

/* Waits until DEADLINE (CLOCK_MONOTONIC ns) or a signal; the signals are
 * unblocked (mask UNBLOCKED) only inside ppoll(). */
static void wait_until(int64_t deadline, const sigset_t *unblocked)
{
	for (int64_t now = now_ns(); now < deadline && !stop_signal;
	     now = now_ns()) {
		struct timespec ts = {
		    .tv_sec = (deadline - now) / 1000000000,
		    .tv_nsec = (deadline - now) % 1000000000,
		};

		ppoll(NULL, 0, &ts, unblocked);
	}
}

static int watch_loop(const char *mnt, int64_t every_ns, bool json)
{
	struct sample cur, prev = {0};
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART */
	sigset_t block, unblocked;
	bool first = true;
	int64_t next = now_ns();
	int rc;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &unblocked);
	/* Open to them even if the caller had them blocked. */
	sigdelset(&unblocked, SIGINT);
	sigdelset(&unblocked, SIGTERM);
	for (;;) {
		sigprocmask(SIG_SETMASK, &unblocked, NULL);
		rc = sample_take(mnt, &cur);
		sigprocmask(SIG_BLOCK, &block, NULL);
		if (stop_signal) {
			if (rc == 0)
				sample_release(&cur);
			rc = 0;
			break;
		}
		if (rc == -EINTR)
			continue; /* not our signal (a stop and continue) */
		if (rc != 0)
			break;
		rc = show(mnt, &cur, first ? NULL : &prev, true, json, first);
		sample_release(&prev);
		prev = cur;
		first = false;
		if (rc)
			break;
		next += every_ns;
		if (next < now_ns()) /* a slow read: keep the spacing */
			next = now_ns() + every_ns;
		wait_until(next, &unblocked);
		if (stop_signal)
			break;
	}
	sample_release(&prev);
	return rc;
}

/*
 * Parses SECONDS ("2", "0.5", ".25"; at most 9 decimals) into
 * nanoseconds. 0, or -EINVAL when it is not such a number in
 * (0, WATCH_MAX_S].
 */
static int parse_seconds(const char *s, int64_t *ns)
{
	int64_t whole = 0, frac = 0, scale = 100000000;
	size_t nd = 0, nf = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++, nd++) {
		if (whole > WATCH_MAX_S)
			return -EINVAL;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, nf++) {
			if (nf < 9)
				frac += (*p - '0') * scale;
			scale /= 10;
		}
	if (*p != '\0' || nd + nf == 0 || whole > WATCH_MAX_S)
		return -EINVAL;
	*ns = whole * 1000000000 + frac;
	if (*ns <= 0 || *ns > (int64_t)WATCH_MAX_S * 1000000000)
		return -EINVAL;
	return 0;
}

/* True when ARG looks like a SECONDS value (digits and dots). */
static bool looks_numeric(const char *arg)
{
	return arg && arg[0] && arg[strspn(arg, "0123456789.")] == '\0';
}

/* A usage error for the option getopt refused: ARG is the word it was
 * in (for a short option inside a cluster, maybe the word before), OPT
 * the short option, or 0. */
static int bad_option(const char *arg, int opt)
{
	if (strncmp(arg, "--", 2) == 0 || !opt)
		return cli_usage_error("stats", "bad option '%s'", arg);
	return cli_usage_error("stats", "bad option '-%c'", opt);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"watch", optional_argument, NULL, 'w'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int64_t every = WATCH_DEFAULT_NS;
	bool watch = false, json = false;
	struct sample s;
	int opt, rc;

	opterr = 0; /* one line of our own instead of getopt's */
	while ((opt = getopt_long(argc, argv, "w::jh", longopts, NULL)) != -1) {
		const char *arg = optarg;

		if (opt == 'h') {
			fputs(stats_help, stdout);
			return 0;
		}
		if (opt == 'j') {
			json = true;
			continue;
		}
		if (opt != 'w')
			return bad_option(argv[optind - 1], optopt);
		watch = true;
		/* An optional argument may also be the next word. */
		if (!arg && optind < argc && looks_numeric(argv[optind]))
			arg = argv[optind++];
		if (arg && parse_seconds(arg, &every) < 0)
			return cli_usage_error(
			    "stats",
			    "--watch wants SECONDS > 0 (at most %d), not "
			    "'%s'",
			    WATCH_MAX_S, arg);
	}
	if (optind >= argc)
		return cli_usage_error("stats", "expected MOUNTPOINT");
	if (optind + 1 < argc)
		return cli_usage_error("stats",
				       "expected one MOUNTPOINT, not "
				       "'%s' too",
				       argv[optind + 1]);
	if (watch)
		return watch_loop(argv[optind], every, json);
	rc = sample_take(argv[optind], &s);
	if (rc)
		return 1;
	rc = show(argv[optind], &s, NULL, false, json, true);
	sample_release(&s);
	return rc;
}
