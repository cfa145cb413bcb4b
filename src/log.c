// SPDX-License-Identifier: MIT
/*
 * The log sink. Messages at or below the current level are formatted into
 * one line and written with a single write(2), so lines of concurrent
 * threads never interleave. On a file or stderr each line carries a UTC
 * timestamp when the sink is a file; on stderr (interactive commands) it
 * carries only the prefix, so that error lines read like "shardfs: ...".
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level_cur = LOG_LVL_WARN;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;	/* protected by log_lock */
static bool log_syslog;			/* protected by log_lock */
static char log_prefix[64] = "shardfs: "; /* protected by log_lock */

static const char *const level_names[] = {"error", "warn", "info", "debug",
					  "trace"};

int log_parse_level(const char *s, enum log_level *out)
{
	for (int i = 0; i <= LOG_LVL_TRACE; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*out = LOG_LVL_WARN;
		return 0;
	}
	return -EINVAL;
}

void log_set_level(enum log_level lvl)
{
	log_level_cur = (int)lvl;
}

enum log_level log_get_level(void)
{
	return (enum log_level)log_level_cur;
}

bool log_enabled(enum log_level lvl)
{
	return (int)lvl <= log_level_cur;
}

int log_set_file(const char *path)
{
	int fd = STDERR_FILENO;

	if (path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
			  0600);
		if (fd < 0)
			return -errno;
	}
	pthread_mutex_lock(&log_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = fd;
	log_syslog = false;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void log_use_syslog(const char *ident)
{
	openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	pthread_mutex_lock(&log_lock);
	log_syslog = true;
	pthread_mutex_unlock(&log_lock);
}

void log_set_prefix(const char *prefix)
{
	pthread_mutex_lock(&log_lock);
	snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
	pthread_mutex_unlock(&log_lock);
}

static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
				  LOG_DEBUG};

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char line[4096];
	size_t n = 0;
	va_list ap;
	int saved_errno = errno;

	if (!log_enabled(lvl))
		return;
	pthread_mutex_lock(&log_lock);
	if (log_syslog) {
		va_start(ap, fmt);
		vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		syslog(syslog_prio[lvl], "%s", line);
		goto out;
	}
	if (log_fd != STDERR_FILENO) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ".%03ldZ %s ", ts.tv_nsec / 1000000L,
				      level_names[lvl]);
	} else {
		n = (size_t)snprintf(line, sizeof(line), "%s", log_prefix);
		if (lvl != LOG_LVL_ERROR && n < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      "%s: ", level_names[lvl]);
	}
	if (n < sizeof(line) - 1) {
		va_start(ap, fmt);
		int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		if (m > 0)
			n += (size_t)m;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(log_fd, line, n);
	(void)w;
	/* With a log file, errors still reach the user on stderr (a daemon
	 * has pointed stderr at /dev/null by then). */
	if (log_fd != STDERR_FILENO && lvl == LOG_LVL_ERROR) {
		char *msg = memchr(line, ' ', n);
		msg = msg ? memchr(msg + 1, ' ', (size_t)(line + n - msg - 1))
			  : NULL;
		if (msg) {
			msg++;
			w = write(STDERR_FILENO, log_prefix, strlen(log_prefix));
			w = write(STDERR_FILENO, msg, (size_t)(line + n - msg));
		}
	}
out:
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
