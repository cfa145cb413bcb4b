/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_LOG_H
#define SHARDFS_LOG_H

#include <stdbool.h>

/*
 * The log sink: one process-wide destination (stderr, a file, or syslog
 * once daemonised) and one level. This is one of the two mutable globals
 * the project allows (STYLE.md). Thread-safe: each message is written with
 * one write(2) call.
 *
 * Never pass secrets (secret keys, session tokens, Authorization values) to
 * log_msg(); callers redact before logging.
 */

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN = 1,
	LOG_LVL_INFO = 2,
	LOG_LVL_DEBUG = 3,
	LOG_LVL_TRACE = 4,
};

/* Parses "error", "warn", "info", "debug", "trace". 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *out);

/* Sets the level (default LOG_LVL_WARN). */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
bool log_enabled(enum log_level lvl);

/*
 * Sends messages to PATH (appending, created 0600), or back to stderr when
 * PATH is NULL. Error-level messages also go to stderr. Returns 0 or a negative errno (the sink is unchanged then).
 */
int log_set_file(const char *path);

/* Once daemonised without a log file: send messages to syslog. */
void log_use_syslog(const char *ident);

/* Prefix printed before messages on stderr ("shardfs: " by default). */
void log_set_prefix(const char *prefix);

__attribute__((format(printf, 2, 3))) void log_msg(enum log_level lvl,
						   const char *fmt, ...);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_trace(...) log_msg(LOG_LVL_TRACE, __VA_ARGS__)

#endif
