/* SPDX-License-Identifier: MIT */
/*
 * A tiny table-test helper shared by the unit tests. Each CHECK prints the
 * failing expression with its location; main() ends with
 * `return check_summary("name");`, which prints the counts and returns
 * non-zero when anything failed.
 */
#ifndef SHARDFS_CHECK_H
#define SHARDFS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failed;
static int check_passed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_STR(got, want)                                                   \
	do {                                                                   \
		const char *g_ = (got), *w_ = (want);                          \
		if (g_ && w_ && strcmp(g_, w_) == 0) {                         \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: CHECK_STR failed: %s\n  got:  %s\n  "  \
				"want: %s\n",                                  \
				__FILE__, __LINE__, #got, g_ ? g_ : "(null)",  \
				w_ ? w_ : "(null)");                           \
		}                                                              \
	} while (0)

#define CHECK_INT(got, want)                                                   \
	do {                                                                   \
		long long g_ = (long long)(got), w_ = (long long)(want);       \
		if (g_ == w_) {                                                \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: CHECK_INT failed: %s: got %lld, want " \
				"%lld\n",                                      \
				__FILE__, __LINE__, #got, g_, w_);             \
		}                                                              \
	} while (0)

static inline int check_summary(const char *name)
{
	printf("%s: %d checks passed, %d failed\n", name, check_passed,
	       check_failed);
	return check_failed ? 1 : 0;
}

#endif
