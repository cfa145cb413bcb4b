/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_DCACHE_H
#define SHARDFS_DCACHE_H

/*
 * The disk cache of object byte ranges, below rd's memory cache: a
 * dataset larger than memory needs no GET after its first epoch, also
 * after a remount.
 *
 * An entry is one extent: the bytes [off, off + len) of one version of
 * one object, named by (obj, etag, off, len). OBJ names the object (store
 * cache id + key); ETAG is its ETag, never NULL or empty (an object
 * without an ETag is not cached: nothing would tell a rewritten object
 * from the old one). An entry never serves the bytes of another ETag, and
 * an object's entries of an ETag other than the latest one seen are dead:
 * they are deleted when a read or write of the object with another ETag
 * notices them (the index holds one ETag per object).
 *
 * Layout: DIR/data/lock (the mount's lock, holding its pid) and one file
 * per entry, DIR/data/XX/NAME, NAME the lowercase hex SHA-256 of
 * OBJ "\0" ETAG "\0" OFF LEN (OFF and LEN as 8-byte little-endian) and XX
 * its first two digits. A file is a header then the LEN data bytes:
 *
 *   0   magic "SFSDCENT", u32 version (1), u32 block size (65536),
 *   16  u64 off, u64 len, u32 etag length, u32 obj length,
 *   40  u64 number of blocks (ceil(len / block size)),
 *   48  etag, obj (no terminators), one u64 checksum per block of data,
 *       and a u64 checksum of the header bytes before it;
 * all numbers little-endian, checksums XXH64 (block i: seed i, so blocks
 * cannot be swapped; the header: seed DCACHE_HDR_SEED). Entries are
 * written to NAME.tmp and renamed, without fsync: after a crash of the
 * system an entry may be short or hold zeros, which the checks below
 * catch (a crash of the process alone never leaves a partial entry).
 *
 * Checks: dcache_open() deletes temporary files and every entry whose
 * header is inconsistent (magic, version, lengths, header checksum, file
 * size != header + len, NAME != the SHA-256 of what the header says);
 * dcache_read() verifies the checksums of the data blocks it reads and
 * deletes an entry that fails. Files in DIR/data/XX of any other name
 * are left alone.
 *
 * Size: the data bytes held (headers not counted) stay at most
 * conf->max_bytes; the least recently used entries are evicted (after a
 * remount: the oldest by file mtime, since use is only tracked in
 * memory). Writes are queued in memory, at most conf->queue_max bytes.
 *
 * One mount per directory: dcache_open() takes an exclusive flock() on
 * DIR/data/lock, held until dcache_close(). Open the cache after any
 * fork() (daemonising): a child would share the lock but not the writer
 * thread.
 *
 * Memory: about 120 bytes per entry, plus the queue.
 *
 * Threading: every function but dcache_open()/dcache_close() may be
 * called from any number of threads at once. dcache_write() never waits
 * for the disk: it copies the bytes into the queue of a writer thread
 * (started by dcache_open()), which writes entries, evicts, and is the
 * only thread that creates or deletes files (an entry dropped by a reader
 * is deleted by the writer soon after). dcache_read() reads on the
 * calling thread. One mutex protects the index, the queue and the
 * counters; no file operation is made while holding it.
 */

#include <stddef.h>
#include <stdint.h>

struct dcache;

#define DCACHE_BLOCK	     (64u * 1024u) /* checksummed data block */
#define DCACHE_QUEUE_DEFAULT (64u * 1024u * 1024u)
#define DCACHE_ETAG_MAX	     1024u /* longer ETags are not cached */
#define DCACHE_OBJ_MAX	     4096u /* longer object names are not cached */
#define DCACHE_HDR_SEED	     0x73686172646673ull /* "shardfs" */

struct dcache_conf {
	const char *dir; /* borrowed for the call; created (0700) if missing */
	uint64_t max_bytes; /* bound on the data bytes held on disk (> 0) */
	uint64_t queue_max; /* bound on bytes queued for writing; 0: default */
};

struct dcache_stats {
	uint64_t entries, bytes; /* held now (bytes: data bytes) */
	uint64_t hits, misses;	 /* dcache_read() calls */
	uint64_t bytes_read;	 /* by hits */
	uint64_t bytes_written;	 /* data bytes of entries written */
	uint64_t writes_dropped; /* queue full, too big, already covered, or
				    not written at close */
	uint64_t evictions;	 /* entries evicted to make room */
	uint64_t errors;	 /* I/O errors, bad entries found (dropped) */
};

/*
 * Opens the cache in CONF->dir: creates DIR and DIR/data (0700, missing
 * parents too), locks it, scans the entries into the index (deleting bad
 * ones, see above; four system calls and a SHA-256 per entry, about 1.5 s
 * of CPU for 100,000 entries), evicts the oldest entries down to
 * max_bytes, and starts the writer thread. 0 and *OUT (free with
 * dcache_close()), or a negative errno with one line in MSG naming the path:
 * -EBUSY "DIR is in use by another shardfs mount (pid N)", -EINVAL (no DIR,
 * max_bytes 0), or the errno of the failing call.
 */
int dcache_open(const struct dcache_conf *conf, struct dcache **out, char *msg,
		size_t msglen);

/*
 * Writes what is queued (for at most about two seconds, then drops the
 * rest, counted in writes_dropped), stops the writer, unlocks the
 * directory and frees DC. No other call may be running or made after it.
 * NULL is a no-op.
 */
void dcache_close(struct dcache *dc);

/*
 * The bytes [OFF, OFF + LEN) of object OBJ version ETAG (both borrowed
 * for the call), when one entry of exactly (OBJ, ETAG) covers them:
 * 0 and *OUT, a malloc'd buffer whose first LEN bytes are the data
 * (caller frees). Else (nothing written to *OUT):
 *  -ENOENT   a miss (also: LEN 0, an ETag or name too long, the entry
 *            vanished meanwhile); entries of OBJ with another ETag are
 *            dropped;
 *  -EIO      the entry is corrupt (a checksum failed, or it is short);
 *            it was dropped and counted in errors;
 *  -EINVAL   OBJ or ETAG NULL or empty, OFF + LEN overflows;
 *  -ENOMEM, or the errno of a failed open/pread (the entry is dropped,
 *            but for ENOMEM, EMFILE and ENFILE).
 * Dropped entries are no longer served; the writer deletes their files.
 * On any error, fetch the bytes elsewhere. Marks the entry used.
 */
int dcache_read(struct dcache *dc, const char *obj, const char *etag,
		uint64_t off, uint64_t len, char **out);

/*
 * Queues the LEN bytes DATA (borrowed for the call; copied) as the
 * extent [OFF, OFF + LEN) of (OBJ, ETAG) (borrowed for the call), for
 * the writer thread. Never waits for the disk. Dropped (counted in
 * writes_dropped) when the queue would exceed queue_max, LEN > max_bytes,
 * an entry of (OBJ, ETAG) already covers the range, OBJ or ETAG is NULL,
 * empty or too long, or memory is short. LEN 0 is a no-op. Failing to
 * write the entry (disk full) is counted in errors, logged, and otherwise
 * ignored.
 */
void dcache_write(struct dcache *dc, const char *obj, const char *etag,
		  uint64_t off, uint64_t len, const char *data);

/*
 * Waits until the queue is empty and the writer idle: every write queued
 * before the call is done or dropped (and so are writes queued meanwhile),
 * and the files of every entry dropped are deleted. Waits for the disk:
 * not for the thread that calls dcache_write().
 */
void dcache_flush(struct dcache *dc);

/* A snapshot of the counters. */
void dcache_get_stats(struct dcache *dc, struct dcache_stats *out);

/* XXH64 of the N bytes at P (the checksum of entries; for tests). */
uint64_t dcache_xxh64(const void *p, size_t n, uint64_t seed);

#endif
