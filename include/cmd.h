/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_CMD_H
#define SHARDFS_CMD_H

#include <sys/socket.h>
#include <sys/un.h>

/*
 * The subcommands, one file each (cmd_NAME.c). Each takes the arguments
 * after the program name (argv[0] is the subcommand name) and returns the
 * process exit status: 0 success, 1 failure, 2 usage error.
 */

int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_stats(int argc, char **argv);


/*
 * The abstract Unix socket a mount daemon listens on (never accepting), so
 * that `shardfs umount` can find the daemon's pid (SO_PEERCRED) and wait
 * for its exit: the name is derived from the mount point's real path.
 * Shared by cmd_mount.c and cmd_umount.c.
 */
int cmd_mount_control_addr(const char *mnt, struct sockaddr_un *sa,
			   socklen_t *len);

#endif
