/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_BUF_H
#define SHARDFS_BUF_H

#include <stddef.h>

/*
 * A bounded growable byte buffer. Growth past `cap` fails with -E2BIG, so
 * data from untrusted input (HTTP bodies, XML, tar long names, index files)
 * can never grow without limit. The contents are always NUL-terminated
 * (the terminator is not counted in `len` and not in the cap).
 *
 * Lifecycle: buf_init() / buf_release() for embedded buffers. A released
 * buffer may be initialised again. Not thread-safe; one owner at a time.
 */
struct buf {
	char *data;   /* owned; NULL until the first append */
	size_t len;   /* bytes used */
	size_t alloc; /* bytes allocated (including the terminator) */
	size_t cap;   /* maximum len */
};

void buf_init(struct buf *b, size_t cap);
void buf_release(struct buf *b);

/* Empties the buffer and keeps its memory. */
void buf_reset(struct buf *b);

/* Appends N bytes. 0, -E2BIG past the cap, or -ENOMEM. */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_str(struct buf *b, const char *s);
__attribute__((format(printf, 2, 3))) int buf_printf(struct buf *b,
						      const char *fmt, ...);

/* Ensures room for N more bytes without appending. 0, -E2BIG, -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);

/*
 * Hands the memory over to the caller (free() it) and leaves the buffer
 * empty. Returns a NUL-terminated empty string's allocation when empty, or
 * NULL on allocation failure.
 */
char *buf_detach(struct buf *b, size_t *len);

/* Returns the contents, "" when empty (never NULL). Borrowed. */
const char *buf_str(const struct buf *b);

#endif
