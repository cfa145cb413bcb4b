// SPDX-License-Identifier: MIT
/*
 * mkdsidx [-C DIR] [--etag md5|local|none] OUT SHARD.tar...
 *
 * Builds a dataset index (dsidx.h, shardfs-index(5)) of local tar files,
 * for tests and benchmarks: each SHARD (a path relative to DIR, default
 * the current directory) is read whole, scanned with tarhdr, and its
 * members added under their paths in the tar (merged across shards);
 * the shard's key in the index is SHARD as given. The ETag recorded for
 * each shard: "md5" (default) the quoted hex MD5 of the file, which is
 * what an S3 server reports for a single-part upload; "local" the ETag
 * the local-directory store makes up (size, mtime, inode); "none" empty.
 *
 * A damaged tar keeps the members before the damage (a line on stderr).
 * Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "buf.h"
#include "dsidx.h"
#include "tarhdr.h"

static int read_file(int dfd, const char *path, char **data, size_t *len,
		     struct stat *st)
{
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	char *p;

	if (fd < 0 || fstat(fd, st) != 0)
		return -errno;
	p = malloc((size_t)st->st_size + 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st->st_size) {
		ssize_t n = read(fd, p + got, (size_t)st->st_size - got);

		if (n <= 0) {
			free(p);
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	*data = p;
	*len = got;
	return 0;
}

static void make_etag(const char *how, const char *data, size_t len,
		      const struct stat *st, char *out, size_t outlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;

	out[0] = '\0';
	if (strcmp(how, "local") == 0) {
		uint64_t ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
			      (uint64_t)st->st_mtim.tv_nsec;

		snprintf(out, outlen, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"",
			 (uint64_t)st->st_size, ns, (uint64_t)st->st_ino);
	} else if (strcmp(how, "md5") == 0 &&
		   EVP_Digest(data, len, md, &n, EVP_md5(), NULL) == 1) {
		size_t pos = 0;

		out[pos++] = '"';
		for (unsigned i = 0; i < n; i++)
			pos += (size_t)snprintf(out + pos, outlen - pos, "%02x",
						md[i]);
		snprintf(out + pos, outlen - pos, "\"");
	}
}

/* Adds one entry of shard SHARD to B. Returns 0 or a builder error. */
static int add_entry(struct dsidx_builder *b, uint32_t shard,
		     const struct tarhdr_entry *e, const char *name)
{
	uint32_t mode = e->mode & 07777;
	struct dsidx_segment *segs;
	int rc;

	if (e->unsafe || e->type == TARHDR_OTHER) {
		fprintf(stderr, "mkdsidx: %s: skipping '%s'\n", name, e->path);
		return 0;
	}
	switch (e->type) {
	case TARHDR_DIR:
		return dsidx_builder_add_dir(b, e->path, mode, e->mtime,
					     e->mtime_nsec);
	case TARHDR_SYMLINK:
		return dsidx_builder_add_member(b, e->path, 0, 0, 0,
						S_IFLNK | mode, e->mtime,
						e->mtime_nsec, e->link);
	case TARHDR_HARDLINK:
		rc = dsidx_builder_add_hardlink(b, e->path, e->link);
		if (rc == -ENOENT) {
			fprintf(stderr,
				"mkdsidx: %s: hard link '%s' to a "
				"missing '%s'\n",
				name, e->path, e->link);
			rc = 0;
		}
		return rc;
	default:
		break;
	}
	if (!e->is_sparse)
		return dsidx_builder_add_member(
		    b, e->path, shard, e->data_offset, e->size, S_IFREG | mode,
		    e->mtime, e->mtime_nsec, NULL);
	segs = calloc(e->nsparse ? e->nsparse : 1, sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (size_t i = 0; i < e->nsparse; i++) {
		segs[i].offset = e->sparse[i].offset;
		segs[i].length = e->sparse[i].length;
		segs[i].archive_offset = e->sparse[i].archive_offset;
	}
	rc = dsidx_builder_add_sparse(b, e->path, shard, e->data_offset,
				      e->size, segs, (uint32_t)e->nsparse,
				      S_IFREG | mode, e->mtime, e->mtime_nsec);
	free(segs);
	return rc;
}

/* Scans the tar DATA (LEN bytes) and adds its members as shard SHARD. */
static int scan(struct dsidx_builder *b, uint32_t shard, const char *data,
		size_t len, const char *name)
{
	struct tarhdr_scan s;
	struct tarhdr_entry e;
	uint64_t noff, nlen;
	int rc;

	tarhdr_scan_init(&s, len, NULL);
	for (;;) {
		rc = tarhdr_scan_next(&s, (const unsigned char *)data, len, 0,
				      &e, &noff, &nlen);
		if (rc == TARHDR_ENTRY) {
			rc = add_entry(b, shard, &e, name);
			if (rc)
				break;
			continue;
		}
		if (rc < 0 && rc != -ENOMEM) {
			fprintf(stderr, "mkdsidx: %s is damaged: %s\n", name,
				s.err_msg ? s.err_msg : strerror(-rc));
			rc = 0;
		} else if (rc == TARHDR_NEED) {
			fprintf(stderr,
				"mkdsidx: %s: scanner wants bytes past "
				"the end\n",
				name);
			rc = 0;
		} else if (rc == TARHDR_END) {
			rc = 0;
		}
		break;
	}
	tarhdr_scan_release(&s);
	return rc;
}

static int add_shard(struct dsidx_builder *b, int dfd, const char *path,
		     const char *how)
{
	char etag[80];
	struct stat st;
	uint32_t idx;
	size_t len = 0;
	char *data = NULL;
	int rc = read_file(dfd, path, &data, &len, &st);

	if (rc) {
		fprintf(stderr, "mkdsidx: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	make_etag(how, data, len, &st, etag, sizeof(etag));
	rc = dsidx_builder_add_shard(b, path, etag, len, &idx);
	if (rc == 0)
		rc = scan(b, idx, data, len, path);
	if (rc)
		fprintf(stderr, "mkdsidx: %s: %s\n", path, strerror(-rc));
	free(data);
	return rc;
}

static int write_out(const char *path, const struct buf *out)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(out->data, 1, out->len, f) != out->len ||
	    fclose(f) != 0) {
		fprintf(stderr, "mkdsidx: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = ".", *how = "md5";
	struct dsidx_builder *b;
	struct buf out;
	int i = 1, dfd, rc = 0;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-C") == 0)
			dir = argv[i + 1];
		else if (strcmp(argv[i], "--etag") == 0)
			how = argv[i + 1];
		else
			break;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: mkdsidx [-C DIR] [--etag "
				"md5|local|none] OUT SHARD.tar...\n");
		return 2;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || dsidx_builder_new(NULL, &b) != 0) {
		fprintf(stderr, "mkdsidx: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	for (int j = i + 1; j < argc && rc == 0; j++)
		rc = add_shard(b, dfd, argv[j], how);
	buf_init(&out, DSIDX_SUGGESTED_CAP);
	if (rc == 0)
		rc = dsidx_builder_finish(b, (int64_t)time(NULL), &out);
	if (rc == 0)
		rc = write_out(argv[i], &out);
	else
		fprintf(stderr, "mkdsidx: %s\n", strerror(-rc));
	buf_release(&out);
	dsidx_builder_free(b);
	close(dfd);
	return rc ? 1 : 0;
}
