/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_FDIO_H
#define SHARDFS_FDIO_H

/* Descriptor helpers shared by any layer (a leaf utility, like buf). */

#include <stddef.h>

/*
 * Writes all LEN bytes of DATA (borrowed) to FD, retrying short writes and
 * EINTR. 0 or a negative errno.
 */
int fdio_write_all(int fd, const void *data, size_t len);

#endif
