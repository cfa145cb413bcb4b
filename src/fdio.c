// SPDX-License-Identifier: MIT
/*
 * Descriptor helpers: the write loop every writer of a file or of stdout
 * needs (short writes and EINTR). No state, no threads.
 */
#include "fdio.h"

#include <errno.h>
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
