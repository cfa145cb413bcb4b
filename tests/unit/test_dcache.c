// SPDX-License-Identifier: MIT
/*
 * dcache, in a mkdtemp() directory: entries written then read back
 * (whole, sub-ranges across blocks), misses (another ETag, another
 * object, a range not covered), a reopen finding the entries, LRU
 * eviction under max_bytes and by mtime at open, the directory lock
 * (another process, and the same one), a corrupted data byte (detected,
 * the entry dropped), bad files removed by the scan, queue overflow, an
 * ETag change dropping the old entries, and readers and writers on
 * several threads at once (with TSan in the sanitizer build).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "check.h"
#include "dcache.h"

#define KB     1024u
#define DIRLEN 512 /* a test's directory: tmp (< 256) and a name */

static char tmp[256];

/* The byte at offset X of object version SEED. */
static char pat(unsigned seed, uint64_t x)
{
	uint64_t v = (x + seed * 0x100000001b3ull) * 0x9E3779B97F4A7C15ull;

	return (char)(v >> 56);
}

static char *make(unsigned seed, uint64_t off, uint64_t len)
{
	char *p = malloc(len ? len : 1);

	for (uint64_t i = 0; i < len; i++)
		p[i] = pat(seed, off + i);
	return p;
}

static void put(struct dcache *dc, const char *obj, const char *etag,
		unsigned seed, uint64_t off, uint64_t len)
{
	char *p = make(seed, off, len);

	dcache_write(dc, obj, etag, off, len, p);
	free(p);
}

/* dcache_read(), checking the bytes on success. */
static int get(struct dcache *dc, const char *obj, const char *etag,
	       unsigned seed, uint64_t off, uint64_t len)
{
	char *p = NULL;
	int rc = dcache_read(dc, obj, etag, off, len, &p);

	if (rc == 0) {
		uint64_t bad = 0;

		for (uint64_t i = 0; i < len; i++)
			bad += p[i] != pat(seed, off + i);
		CHECK_INT(bad, 0);
		free(p);
	}
	return rc;
}

static struct dcache *open_dc(const char *dir, uint64_t max, uint64_t qmax)
{
	struct dcache_conf conf = {dir, max, qmax};
	struct dcache *dc = NULL;
	char msg[512] = "";
	int rc = dcache_open(&conf, &dc, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "dcache_open %s: %d %s\n", dir, rc, msg);
	CHECK_INT(rc, 0);
	return dc;
}

static struct dcache_stats stats(struct dcache *dc)
{
	struct dcache_stats st;

	dcache_get_stats(dc, &st);
	return st;
}

static void subdir(char *out, const char *name)
{
	snprintf(out, DIRLEN, "%s/%s", tmp, name);
}

/* The path of an entry's file, as dcache.h defines the name. */
static void entry_file(const char *dir, const char *obj, const char *etag,
		       uint64_t off, uint64_t len, char *out)
{
	unsigned char b[8192], md[EVP_MAX_MD_SIZE];
	size_t n = 0, ol = strlen(obj), el = strlen(etag);
	unsigned int mdlen = 0;
	char hex[65];

	memcpy(b, obj, ol + 1);
	n += ol + 1;
	memcpy(b + n, etag, el + 1);
	n += el + 1;
	for (int i = 0; i < 8; i++)
		b[n++] = (unsigned char)(off >> (8 * i));
	for (int i = 0; i < 8; i++)
		b[n++] = (unsigned char)(len >> (8 * i));
	EVP_Digest(b, n, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(out, PATH_MAX, "%s/data/%.2s/%s", dir, hex, hex);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static off_t fsize(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Regular files under DIR/data/XX (the lock file is not in a XX). */
static int count_files(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de, *fe;
	DIR *d, *s;
	int n = 0;

	snprintf(path, sizeof(path), "%s/data", dir);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/data/%s", dir, de->d_name);
		s = opendir(path);
		while (s && (fe = readdir(s)) != NULL)
			n += fe->d_name[0] != '.';
		if (s)
			closedir(s);
	}
	closedir(d);
	return n;
}

static void poke(const char *path, off_t at, char c)
{
	int fd = open(path, O_WRONLY);

	CHECK(fd >= 0 && pwrite(fd, &c, 1, at) == 1);
	if (fd >= 0)
		close(fd);
}

static void set_mtime(const char *path, time_t t)
{
	struct timespec ts[2] = {{t, 0}, {t, 0}};

	CHECK_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	if (fd >= 0)
		close(fd);
}

static void test_hash(void)
{
	static const struct {
		const char *s;
		uint64_t seed, want;
	} t[] = {
	    {"", 0, 0xef46db3751d8e999ull},
	    {"a", 0, 0xd24ec4f1a98c6e5bull},
	    {"abc", 0, 0x44bc2cf5ad770999ull},
	    {"1234", 0, 0xd8316e61d84f6ba4ull},
	    {"12345678", 0, 0xd2d02f08cf7cfd4aull},
	    {"123456789012345", 0, 0xc377d78ade001a3cull},
	    {"1234567890123456", 0, 0xb61c33dc6c59f270ull},
	    {"1234567890123456789012345678901", 0, 0x8f367cb873a5376eull},
	    {"12345678901234567890123456789012", 0, 0x40fd1aa52d98274cull},
	    {"The quick brown fox jumps over the lazy dog", 0,
	     0x0b242d361fda71bcull},
	    {"", 5381, 0xaf382146d5c3cacfull},
	    {"abc", 5381, 0x19d1c1b5c673451full},
	    {"12345678901234567890123456789012", 5381, 0x38ea26e7c55f8095ull},
	};
	char *p = make(7, 0, DCACHE_BLOCK);
	uint64_t h = dcache_xxh64(p, DCACHE_BLOCK, 3);
	int same = 0;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		CHECK_INT(dcache_xxh64(t[i].s, strlen(t[i].s), t[i].seed),
			  t[i].want);
	/* any one byte changed (a sample of positions and values) */
	for (size_t i = 0; i < DCACHE_BLOCK; i += 997) {
		for (int bit = 0; bit < 8; bit += 3) {
			p[i] ^= (char)(1 << bit);
			same += dcache_xxh64(p, DCACHE_BLOCK, 3) == h;
			p[i] ^= (char)(1 << bit);
		}
	}
	CHECK_INT(same, 0);
	free(p);
}

static void test_bad_open(void)
{
	struct dcache_conf conf = {tmp, 0, 0};
	struct dcache *dc = NULL;
	char dir[DIRLEN], msg[512] = "";

	CHECK_INT(dcache_open(&conf, &dc, msg, sizeof(msg)), -EINVAL);
	conf.dir = "";
	conf.max_bytes = 1;
	CHECK_INT(dcache_open(&conf, &dc, msg, sizeof(msg)), -EINVAL);
	subdir(dir, "afile");
	write_file(dir, "x", 1);
	subdir(dir, "afile/sub");
	conf.dir = dir;
	msg[0] = '\0';
	CHECK(dcache_open(&conf, &dc, msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, dir) != NULL);
	CHECK(dc == NULL);
	dcache_close(NULL);
}

static void test_basic(void)
{
	char dir[DIRLEN], path[PATH_MAX];
	struct dcache *dc;
	struct dcache_stats st;
	char *p = NULL;

	subdir(dir, "basic/missing/parents");
	dc = open_dc(dir, 64u << 20, 0);
	if (!dc)
		return;
	CHECK_INT(stats(dc).entries, 0);
	put(dc, "s3://b/|A", "e1", 1, 0, 300000);
	put(dc, "s3://b/|A", "e1", 1, 1000000, 70000);
	put(dc, "s3://b/|B", "e1", 2, 0, 1000);
	put(dc, "s3://b/|B", "e1", 2, 5, 0); /* no-op */
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.entries, 3);
	CHECK_INT(st.bytes, 371000);
	CHECK_INT(st.bytes_written, 371000);
	CHECK_INT(st.writes_dropped, 0);
	CHECK_INT(count_files(dir), 3);
	entry_file(dir, "s3://b/|A", "e1", 0, 300000, path);
	CHECK(exists(path));
	CHECK(fsize(path) > 300000);
	snprintf(path, sizeof(path), "%s/data/lock", dir);
	CHECK(exists(path));

	/* hits: whole, across a block boundary, the last byte, sub-ranges */
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 0, 300000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 65530, 20), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 299999, 1), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 100, 200000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 1000000, 70000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 1065536, 4464), 0);
	CHECK_INT(get(dc, "s3://b/|B", "e1", 2, 10, 990), 0);
	/* misses */
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 299990, 20), -ENOENT);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 999999, 2), -ENOENT);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 500000, 10), -ENOENT);
	CHECK_INT(get(dc, "s3://b/|C", "e1", 1, 0, 10), -ENOENT);
	CHECK_INT(get(dc, "s3://b/|B", "e1", 2, 0, 0), -ENOENT);
	CHECK_INT(dcache_read(dc, "", "e1", 0, 1, &p), -EINVAL);
	CHECK_INT(dcache_read(dc, "s3://b/|B", NULL, 0, 1, &p), -EINVAL);
	CHECK_INT(dcache_read(dc, "s3://b/|B", "e1", UINT64_MAX, 2, &p),
		  -EINVAL);
	CHECK(p == NULL);
	st = stats(dc);
	CHECK_INT(st.hits, 7);
	CHECK_INT(st.misses, 4); /* LEN 0 is not counted */
	CHECK_INT(st.bytes_read, 300000 + 20 + 1 + 200000 + 70000 + 4464 + 990);

	/* covered: dropped; overlapping: kept, and both serve */
	put(dc, "s3://b/|A", "e1", 1, 10, 100);
	put(dc, "s3://b/|A", "e1", 1, 200000, 150000);
	dcache_write(dc, "s3://b/|A", "", 0, 10, "0123456789");
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.writes_dropped, 2);
	CHECK_INT(st.entries, 4);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 250000, 100000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 0, 300000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 199999, 150001), -ENOENT);
	dcache_close(dc);

	/* a remount finds them */
	dc = open_dc(dir, 64u << 20, 0);
	if (!dc)
		return;
	st = stats(dc);
	CHECK_INT(st.entries, 4);
	CHECK_INT(st.bytes, 521000);
	CHECK_INT(st.errors, 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 250000, 100000), 0);
	CHECK_INT(get(dc, "s3://b/|A", "e1", 1, 1000000, 70000), 0);
	CHECK_INT(get(dc, "s3://b/|B", "e1", 2, 0, 1000), 0);
	dcache_close(dc);
}

/* One mount per directory: another process, and a second open here. */
static void test_lock(void)
{
	char dir[DIRLEN], msg[512] = "", want[64];
	struct dcache_conf conf = {dir, 1u << 20, 0};
	struct dcache *dc = NULL;
	int up[2], down[2];
	pid_t pid;
	char c = 0;

	subdir(dir, "lock");
	if (pipe(up) != 0 || pipe(down) != 0) {
		CHECK(!"pipe");
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* The child holds the cache until told to stop. */
		int rc = dcache_open(&conf, &dc, NULL, 0);

		c = rc == 0 ? 'y' : 'n';
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			rc = 1;
		dcache_close(dc);
		_exit(rc == 0 ? 0 : 1);
	}
	CHECK(pid > 0);
	CHECK(read(up[0], &c, 1) == 1 && c == 'y');
	CHECK_INT(dcache_open(&conf, &dc, msg, sizeof(msg)), -EBUSY);
	snprintf(want, sizeof(want), "(pid %ld)", (long)pid);
	CHECK(strstr(msg, want) != NULL);
	CHECK(strstr(msg, dir) != NULL);
	CHECK(strstr(msg, "in use by another shardfs mount") != NULL);
	CHECK(write(down[1], "x", 1) == 1);
	if (pid > 0) {
		int status = 1;

		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);

	/* free again; then a second open in this process fails too */
	dc = open_dc(dir, 1u << 20, 0);
	if (!dc)
		return;
	struct dcache *dc2 = NULL;

	msg[0] = '\0';
	CHECK_INT(dcache_open(&conf, &dc2, msg, sizeof(msg)), -EBUSY);
	snprintf(want, sizeof(want), "(pid %ld)", (long)getpid());
	CHECK(strstr(msg, want) != NULL);
	dcache_close(dc);
	dc = open_dc(dir, 1u << 20, 0);
	dcache_close(dc);
}

static void test_evict(void)
{
	char dir[DIRLEN], path[PATH_MAX], obj[16];
	struct dcache *dc;
	struct dcache_stats st;

	subdir(dir, "evict");
	dc = open_dc(dir, 400 * KB, 0);
	if (!dc)
		return;
	for (unsigned i = 0; i < 4; i++) {
		snprintf(obj, sizeof(obj), "A%u", i);
		put(dc, obj, "e", i, 0, 100 * KB);
	}
	dcache_flush(dc);
	CHECK_INT(stats(dc).bytes, 400 * KB);
	CHECK_INT(get(dc, "A0", "e", 0, 0, 10), 0); /* A1 is now the oldest */
	put(dc, "A4", "e", 4, 0, 100 * KB);
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.evictions, 1);
	CHECK_INT(st.entries, 4);
	CHECK_INT(st.bytes, 400 * KB);
	CHECK_INT(count_files(dir), 4);
	CHECK_INT(get(dc, "A1", "e", 1, 0, 10), -ENOENT);
	CHECK_INT(get(dc, "A0", "e", 0, 0, 100 * KB), 0);
	CHECK_INT(get(dc, "A2", "e", 2, 0, 100 * KB), 0);
	CHECK_INT(get(dc, "A3", "e", 3, 0, 100 * KB), 0);
	CHECK_INT(get(dc, "A4", "e", 4, 0, 100 * KB), 0);
	/* bigger than the whole cache: dropped, nothing evicted */
	put(dc, "big", "e", 9, 0, 400 * KB + 1);
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.writes_dropped, 1);
	CHECK_INT(st.evictions, 1);
	CHECK_INT(st.entries, 4);
	dcache_close(dc);

	/* a smaller cache at the next open keeps the newest files */
	const char *order[] = {"A4", "A3", "A2", "A0"};
	for (unsigned i = 0; i < 4; i++) {
		entry_file(dir, order[i], "e", 0, 100 * KB, path);
		set_mtime(path, 1000000 + 1000 * i);
	}
	dc = open_dc(dir, 250 * KB, 0);
	if (!dc)
		return;
	st = stats(dc);
	CHECK_INT(st.entries, 2);
	CHECK_INT(st.bytes, 200 * KB);
	CHECK_INT(st.evictions, 2);
	CHECK_INT(count_files(dir), 2);
	CHECK_INT(get(dc, "A4", "e", 4, 0, 10), -ENOENT);
	CHECK_INT(get(dc, "A3", "e", 3, 0, 10), -ENOENT);
	CHECK_INT(get(dc, "A2", "e", 2, 0, 10), 0);
	CHECK_INT(get(dc, "A0", "e", 0, 0, 10), 0);
	dcache_close(dc);
}

static void test_corrupt(void)
{
	char dir[DIRLEN], path[PATH_MAX];
	struct dcache *dc;
	struct dcache_stats st;
	off_t data;

	subdir(dir, "corrupt");
	dc = open_dc(dir, 1u << 20, 0);
	if (!dc)
		return;
	put(dc, "X", "e", 5, 1000, 300000);
	dcache_flush(dc);
	entry_file(dir, "X", "e", 1000, 300000, path);
	data = fsize(path) - 300000;
	CHECK(data > 0);
	/* one byte of block 2 */
	poke(path, data + 2 * DCACHE_BLOCK + 5,
	     (char)(pat(5, 1000 + 2 * DCACHE_BLOCK + 5) ^ 0x20));
	/* blocks not read are not checked */
	CHECK_INT(get(dc, "X", "e", 5, 1000, 1000), 0);
	CHECK_INT(get(dc, "X", "e", 5, 1000 + 3 * DCACHE_BLOCK, 1000), 0);
	/* a read touching it fails, and the entry is gone */
	CHECK_INT(get(dc, "X", "e", 5, 1000 + 2 * DCACHE_BLOCK - 10, 11), -EIO);
	st = stats(dc);
	CHECK_INT(st.errors, 1);
	CHECK_INT(st.entries, 0);
	CHECK_INT(st.bytes, 0);
	dcache_flush(dc);
	CHECK(!exists(path));
	CHECK_INT(get(dc, "X", "e", 5, 1000, 1000), -ENOENT);

	/* a stored checksum damaged: detected the same way */
	put(dc, "Y", "e", 6, 0, 100000);
	dcache_flush(dc);
	entry_file(dir, "Y", "e", 0, 100000, path);
	data = fsize(path) - 100000;
	poke(path, data - 8 - 8 - 1, 0x55); /* block 0's checksum */
	CHECK_INT(get(dc, "Y", "e", 6, 70000, 10), 0);
	CHECK(get(dc, "Y", "e", 6, 0, 10) < 0);
	dcache_flush(dc);
	CHECK(!exists(path));

	/* a file removed behind its back: a miss */
	put(dc, "Z", "e", 7, 0, 1000);
	dcache_flush(dc);
	entry_file(dir, "Z", "e", 0, 1000, path);
	CHECK_INT(unlink(path), 0);
	CHECK_INT(get(dc, "Z", "e", 7, 0, 10), -ENOENT);
	CHECK_INT(stats(dc).entries, 0);
	dcache_close(dc);
}

/* Bad files are removed by the scan at open, good ones and others stay. */
static void test_scan(void)
{
	char dir[DIRLEN], path[PATH_MAX], other[PATH_MAX], obj[8];
	struct dcache *dc;
	struct dcache_stats st;
	char junk[1000];

	subdir(dir, "scan");
	dc = open_dc(dir, 8u << 20, 0);
	if (!dc)
		return;
	for (unsigned i = 0; i < 6; i++) {
		snprintf(obj, sizeof(obj), "g%u", i);
		put(dc, obj, "etag", i, 0, 5000);
	}
	dcache_flush(dc);
	dcache_close(dc);

	entry_file(dir, "g0", "etag", 0, 5000, path); /* truncated */
	CHECK_INT(truncate(path, fsize(path) - 1), 0);
	entry_file(dir, "g1", "etag", 0, 5000, path); /* too long */
	CHECK_INT(truncate(path, fsize(path) + 1), 0);
	entry_file(dir, "g2", "etag", 0, 5000, path); /* header changed */
	poke(path, 48 + 4 + 1, '7');
	entry_file(dir, "g3", "etag", 0, 5000, path); /* bad magic */
	poke(path, 0, 'X');
	entry_file(dir, "g4", "etag", 0, 5000, path); /* not its name */
	entry_file(dir, "g5", "etag", 0, 5000, other);
	CHECK_INT(unlink(path), 0);
	{
		char cmd[3 * PATH_MAX];

		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other, path);
		CHECK_INT(system(cmd), 0);
	}
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7);
	snprintf(path, sizeof(path), "%s/data/ab", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/data/ab/ab%062d", dir, 0);
	write_file(path, junk, sizeof(junk)); /* garbage */
	snprintf(path, sizeof(path), "%s/data/ab/ab%062d", dir, 1);
	write_file(path, "", 0); /* empty */
	snprintf(path, sizeof(path), "%s/data/ab/ab%062d.tmp", dir, 2);
	write_file(path, junk, 10); /* a temporary file */
	snprintf(path, sizeof(path), "%s/data/ab/README", dir);
	write_file(path, "hi", 2); /* not ours */
	CHECK_INT(count_files(dir), 10);

	dc = open_dc(dir, 8u << 20, 0);
	if (!dc)
		return;
	st = stats(dc);
	CHECK_INT(st.entries, 1);
	CHECK_INT(st.errors, 7);
	CHECK_INT(count_files(dir), 2);
	CHECK(exists(path));
	CHECK(exists(other));
	CHECK_INT(get(dc, "g5", "etag", 5, 0, 5000), 0);
	CHECK_INT(get(dc, "g4", "etag", 4, 0, 5000), -ENOENT);
	CHECK_INT(get(dc, "g0", "etag", 0, 0, 10), -ENOENT);
	dcache_close(dc);
}

static void test_queue(void)
{
	char dir[DIRLEN];
	struct dcache *dc;
	struct dcache_stats st;
	char obj[16];

	subdir(dir, "queue");
	dc = open_dc(dir, 64u << 20, 100 * KB);
	if (!dc)
		return;
	put(dc, "big", "e", 1, 0, 100 * KB + 1); /* never fits the queue */
	put(dc, "fits", "e", 1, 0, 100 * KB);
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.writes_dropped, 1);
	CHECK_INT(st.entries, 1);
	/* a burst: what the writer cannot keep up with is dropped */
	for (unsigned i = 0; i < 200; i++) {
		snprintf(obj, sizeof(obj), "q%u", i);
		put(dc, obj, "e", i, 0, 40 * KB);
	}
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(st.entries + st.writes_dropped, 202);
	CHECK(st.writes_dropped >= 1);
	CHECK_INT(st.errors, 0);
	printf("queue burst: %llu of 200 written\n",
	       (unsigned long long)st.entries - 1);
	/* close with writes queued: bounded, nothing half written */
	for (unsigned i = 0; i < 50; i++) {
		snprintf(obj, sizeof(obj), "c%u", i);
		put(dc, obj, "e", i, 0, 40 * KB);
	}
	dcache_close(dc);
	dc = open_dc(dir, 64u << 20, 100 * KB);
	if (!dc)
		return;
	CHECK_INT(stats(dc).errors, 0);
	dcache_close(dc);
}

static void test_etag(void)
{
	char dir[DIRLEN], dir2[DIRLEN], from[PATH_MAX], to[PATH_MAX];
	struct dcache *dc;

	subdir(dir, "etag");
	dc = open_dc(dir, 8u << 20, 0);
	if (!dc)
		return;
	put(dc, "O", "e1", 1, 0, 1000);
	put(dc, "O", "e1", 1, 5000, 1000);
	put(dc, "P", "e1", 3, 0, 1000);
	dcache_flush(dc);
	CHECK_INT(count_files(dir), 3);
	/* a write of a new ETag drops the old one's entries */
	put(dc, "O", "e2", 2, 0, 2000);
	dcache_flush(dc);
	CHECK_INT(count_files(dir), 2);
	CHECK_INT(stats(dc).entries, 2);
	CHECK_INT(get(dc, "O", "e2", 2, 0, 2000), 0);
	CHECK_INT(get(dc, "O", "e2", 2, 5000, 10), -ENOENT);
	/* a read of another ETag drops them too (and never serves them) */
	CHECK_INT(get(dc, "O", "e1", 1, 0, 1000), -ENOENT);
	CHECK_INT(stats(dc).entries, 1);
	dcache_flush(dc); /* the writer deletes the files */
	CHECK_INT(count_files(dir), 1);
	CHECK_INT(stats(dc).entries, 1);
	CHECK_INT(get(dc, "O", "e2", 2, 0, 2000), -ENOENT);
	CHECK_INT(get(dc, "P", "e1", 3, 0, 1000), 0);
	dcache_close(dc);

	/* two ETags on disk (a crash): the newer file's wins at open */
	subdir(dir2, "etag2");
	dc = open_dc(dir2, 8u << 20, 0);
	if (!dc)
		return;
	put(dc, "P", "e0", 9, 0, 500);
	put(dc, "P", "e0", 9, 600, 500);
	dcache_flush(dc);
	dcache_close(dc);
	entry_file(dir, "P", "e1", 0, 1000, to);
	set_mtime(to, 2000000);
	for (unsigned i = 0; i < 2; i++) {
		char d[PATH_MAX];

		entry_file(dir2, "P", "e0", 600 * i, 500, from);
		entry_file(dir, "P", "e0", 600 * i, 500, to);
		snprintf(d, sizeof(d), "%.*s", (int)(strrchr(to, '/') - to),
			 to);
		mkdir(d, 0700);
		CHECK_INT(rename(from, to), 0);
		set_mtime(to, 1000000 + i);
	}
	CHECK_INT(count_files(dir), 3);
	dc = open_dc(dir, 8u << 20, 0);
	if (!dc)
		return;
	CHECK_INT(stats(dc).entries, 1);
	CHECK_INT(count_files(dir), 1);
	CHECK_INT(get(dc, "P", "e1", 3, 0, 1000), 0);
	dcache_close(dc);
}

/* ---- Threads ------------------------------------------------------------ */

#define T_OBJS	  6
#define T_CELLS	  8 /* extents are written on a grid of cells */
#define T_CELL	  (128 * KB)
#define T_ITERS	  400
#define T_READERS 4
#define T_WRITERS 2

static _Atomic unsigned writers_left;

struct targ {
	struct dcache *dc;
	unsigned id;
	uint64_t rng;
	unsigned hits, bad;
};

static uint64_t rnd(struct targ *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

/*
 * A random object and version: the last object changes (ETag 0 or 1), so
 * writes and reads of both versions race. Returns the data's seed.
 */
static unsigned t_pick(struct targ *t, char *obj, char *etag)
{
	unsigned i = (unsigned)(rnd(t) % T_OBJS);
	unsigned e = i == T_OBJS - 1 ? (unsigned)(rnd(t) % 2) : 0;

	sprintf(obj, "http://h/b/|shard-%06u.tar", i);
	sprintf(etag, "\"etag-%u-%u\"", i, e);
	return i * 2 + e;
}

static void *t_writer(void *arg)
{
	struct targ *t = arg;
	char obj[64], etag[64];

	for (unsigned k = 0; k < T_ITERS; k++) {
		unsigned seed = t_pick(t, obj, etag);
		uint64_t off = rnd(t) % T_CELLS * T_CELL,
			 len = T_CELL * (1 + rnd(t) % 2); /* some overlap */

		put(t->dc, obj, etag, seed, off, len);
		if (k % 50 == 0)
			dcache_flush(t->dc);
	}
	writers_left--;
	return NULL;
}

static void *t_reader(void *arg)
{
	struct targ *t = arg;
	char obj[64], etag[64], *p;

	/* at least T_ITERS reads, and until the writers are done */
	for (unsigned k = 0; k < T_ITERS || writers_left > 0; k++) {
		unsigned seed = t_pick(t, obj, etag);
		uint64_t cell = rnd(t) % T_CELLS * T_CELL,
			 off = cell + rnd(t) % T_CELL,
			 len = 1 + rnd(t) % (cell + T_CELL - off);
		int rc;

		p = NULL;
		rc = dcache_read(t->dc, obj, etag, off, len, &p);
		if (rc == 0) {
			t->hits++;
			for (uint64_t j = 0; j < len; j++)
				t->bad += p[j] != pat(seed, off + j);
			free(p);
		} else if (rc != -ENOENT) {
			t->bad++;
		}
		if (k % 64 == 0) {
			struct dcache_stats st;

			dcache_get_stats(t->dc, &st);
		}
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[T_READERS + T_WRITERS];
	struct targ a[T_READERS + T_WRITERS];
	char dir[DIRLEN];
	struct dcache_stats st;
	struct dcache *dc;
	unsigned hits = 0, bad = 0;

	subdir(dir, "threads");
	writers_left = T_WRITERS;
	dc = open_dc(dir, 3u << 20, 1u << 20);
	if (!dc)
		return;
	for (unsigned i = 0; i < T_READERS + T_WRITERS; i++) {
		a[i] =
		    (struct targ){dc, i, 0x9E3779B97F4A7C15ull * (i + 1), 0, 0};
		CHECK_INT(pthread_create(&th[i], NULL,
					 i < T_WRITERS ? t_writer : t_reader,
					 &a[i]),
			  0);
	}
	for (unsigned i = 0; i < T_READERS + T_WRITERS; i++) {
		pthread_join(th[i], NULL);
		hits += a[i].hits;
		bad += a[i].bad;
	}
	dcache_flush(dc);
	st = stats(dc);
	CHECK_INT(bad, 0);
	CHECK_INT(st.errors, 0);
	CHECK(st.bytes <= 3u << 20);
	CHECK_INT(count_files(dir), (int)st.entries);
	printf("threads: %u hits, %llu entries, %llu evictions, %llu dropped\n",
	       hits, (unsigned long long)st.entries,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.writes_dropped);
	dcache_close(dc);
	/* what the threads left is consistent at the next open */
	dc = open_dc(dir, 3u << 20, 0);
	if (!dc)
		return;
	CHECK_INT(stats(dc).errors, 0);
	CHECK_INT(stats(dc).entries, st.entries);
	dcache_close(dc);
}

int main(void)
{
	char cmd[sizeof(tmp) + 16];

	snprintf(tmp, sizeof(tmp), "%s/test_dcache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_lock(); /* first: fork() before any thread was started */
	test_hash();
	test_bad_open();
	test_basic();
	test_evict();
	test_corrupt();
	test_scan();
	test_queue();
	test_etag();
	test_threads();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
	return check_summary("test_dcache");
}
