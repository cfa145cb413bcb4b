/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_JSONFLAT_H
#define SHARDFS_JSONFLAT_H

/*
 * A small, bounded JSON reader that flattens a document into a list of
 * (path, scalar) items, in document order:
 *
 *   {"a": {"b": 1, "c": [true, "x"]}, "d": null, "e": {}}
 *
 * gives
 *
 *   a.b     JSONFLAT_NUMBER  "1"
 *   a.c[0]  JSONFLAT_BOOL    "true"
 *   a.c[1]  JSONFLAT_STRING  "x"
 *   d       JSONFLAT_NULL    "null"
 *
 * (an empty object or array gives no item; a document that is a single
 * scalar gives one item whose path is ""). Object keys are joined with
 * '.' as they are, so a key holding '.' or '[' makes paths ambiguous;
 * lookups then find the first item of that path. A key repeated in one
 * object is kept twice, and lookups find the first.
 *
 * Made for shardfs's own JSON (.shardfs/stats) read from a file that is
 * not trusted: input size, nesting depth, number of items and path length
 * are capped, and anything but strict JSON (RFC 8259: UTF-8 text, no
 * comments, no trailing commas, nothing after the value but whitespace)
 * is rejected with the byte offset of the problem. Strings are decoded
 * (escapes, surrogate pairs) to UTF-8; "\u0000" is rejected so that every
 * decoded string is a C string.
 *
 * Pure: no I/O, no threads, no globals (jsonflat_double() uses strtod(),
 * which follows LC_NUMERIC; shardfs never changes it from "C").
 */

#include <stddef.h>
#include <stdint.h>

/* Limits: larger inputs, deeper nesting, more items or longer paths are
 * -E2BIG. */
#define JSONFLAT_MAX_INPUT (1024u * 1024u) /* bytes */
#define JSONFLAT_MAX_DEPTH 32		   /* nested objects and arrays */
#define JSONFLAT_MAX_ITEMS 4096
#define JSONFLAT_MAX_PATH  256 /* bytes of a path, its NUL included */

enum jsonflat_type {
	JSONFLAT_NULL,
	JSONFLAT_BOOL,
	JSONFLAT_NUMBER,
	JSONFLAT_STRING,
};

struct jsonflat_item {
	char *path; /* owned by the jsonflat; "a.b[2].c" */
	enum jsonflat_type type;
	/*
	 * Owned by the jsonflat. A string: its decoded UTF-8 bytes; a number:
	 * its text as written (valid JSON number syntax); a bool: "true" or
	 * "false"; null: "null".
	 */
	char *text;
};

struct jsonflat {
	struct jsonflat_item *items; /* owned array of n items */
	size_t n;
};

/*
 * Parses the LEN bytes at TEXT (need not be NUL-terminated) into *OUT.
 * 0; -EINVAL when it is not JSON; -E2BIG past a limit; -ENOMEM. On
 * failure *OUT is empty (nothing to release, releasing is harmless) and
 * MSG (may be NULL) receives one line, e.g. "byte 17: expected ':'".
 */
int jsonflat_parse(const char *text, size_t len, struct jsonflat *out,
		   char *msg, size_t msglen);

/* Frees what *J holds and leaves it empty. */
void jsonflat_release(struct jsonflat *j);

/* The first item at PATH, or NULL. Borrowed until jsonflat_release(). */
const struct jsonflat_item *jsonflat_get(const struct jsonflat *j,
					 const char *path);

/*
 * The number at PATH as an unsigned integer (digits only: no sign,
 * fraction or exponent). 0; -ENOENT when PATH is absent or null; -EINVAL
 * when it is not such a number; -ERANGE past UINT64_MAX.
 */
int jsonflat_u64(const struct jsonflat *j, const char *path, uint64_t *out);

/*
 * The number at PATH. 0; -ENOENT when PATH is absent or null; -EINVAL
 * when it is not a number; -ERANGE when it does not fit a finite double.
 */
int jsonflat_double(const struct jsonflat *j, const char *path, double *out);

#endif
