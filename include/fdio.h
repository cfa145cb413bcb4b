/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_FDIO_H
#define SHARDFS_FDIO_H

/* Descriptor helpers shared by any layer (a leaf utility, like buf). */

#include <stddef.h>
#include <sys/types.h>

/*
 * Writes all LEN bytes of DATA (borrowed) to FD, retrying short writes and
 * EINTR. 0 or a negative errno.
 */
int fdio_write_all(int fd, const void *data, size_t len);

/*
 * mkdir -p DIR: creates DIR and its missing parents with MODE (existing
 * ones are left as they are). 0 or a negative errno (-ENOENT for "").
 */
int fdio_mkdirs(const char *dir, mode_t mode);

#endif
