// SPDX-License-Identifier: MIT
/*
 * Descriptor and file helpers: the write loop every writer of a file or
 * of stdout needs (short writes and EINTR), and mkdir -p for the caches
 * and pack's local DEST. No state, no threads.
 */
#include "fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fdio_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fdio_mkdirs(const char *dir, mode_t mode)
{
	char *p;
	int rc = 0;

	if (!dir[0])
		return -ENOENT;
	p = strdup(dir);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; !rc; s++) {
		bool end = *s == '\0';

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		if (mkdir(p, mode) != 0 && errno != EEXIST)
			rc = -errno;
		if (end)
			break;
		*s = '/';
	}
	free(p);
	return rc;
}
