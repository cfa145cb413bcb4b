// SPDX-License-Identifier: MIT
/*
 * shardfs umount MOUNTPOINT
 *
 * Checks in /proc/self/mountinfo that MOUNTPOINT is a shardfs mount
 * (file system type "fuse.shardfs"), finds its daemon through the
 * mount's control socket (see cmd_mount.c: an abstract Unix socket named
 * after the mount point; SO_PEERCRED gives the daemon's pid), unmounts
 * (umount2() as root, else fusermount3 -u), and then waits until the
 * daemon has exited: the connection to the control socket ends when the
 * daemon process closes its descriptors on exit.
 *
 * A dead mount (the daemon was killed: "Transport endpoint is not
 * connected") is still unmounted, lazily when it is busy; there is no
 * daemon left to wait for.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"


#define UMOUNT_WAIT_SECONDS 60

static const struct option umount_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shardfs umount MOUNTPOINT\n\n"
		"Unmounts the shardfs mount at MOUNTPOINT and waits (up to %d "
		"s) until its\ndaemon has exited. A dead mount (its daemon was "
		"killed) is unmounted too,\nlazily when it is busy. A live "
		"mount that is busy is left alone (exit 1).\n\n"
		"  -h, --help   show this help\n",
		UMOUNT_WAIT_SECONDS);
}

/* Resolves ARG like realpath(), also when ARG is a dead FUSE mount. */
static int resolve(const char *arg, char *out)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *base;
	size_t n;

	if (realpath(arg, out))
		return 0;
	if (errno != ENOTCONN && errno != ECONNABORTED)
		return -errno;
	/* stat() of the dead mount's root fails: resolve its parent. */
	snprintf(tmp, sizeof(tmp), "%s", arg);
	n = strlen(tmp);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	base = strrchr(tmp, '/');
	if (base) {
		tmp[base - tmp] = '\0';
		base++;
		if (!realpath(tmp[0] ? tmp : "/", dir))
			return -errno;
	} else {
		base = tmp;
		if (!realpath(".", dir))
			return -errno;
	}
	if (snprintf(out, PATH_MAX, "%s/%s", strcmp(dir, "/") ? dir : "",
		     base) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Decodes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Parses one mountinfo line; 0 with MNT and TYPE pointing into LINE. */
static int parse_line(char *line, char **mnt, char **type)
{
	char *save = NULL, *tok;
	int field = 0;

	*mnt = *type = NULL;
	for (tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 4)
			*mnt = tok;
		if (strcmp(tok, "-") == 0 && field >= 6) {
			*type = strtok_r(NULL, " \n", &save);
			break;
		}
	}
	if (!*mnt || !*type)
		return -EINVAL;
	unescape(*mnt);
	unescape(*type);
	return 0;
}

/*
 * Finds the topmost mount at MNT; copies its type into TYPE. 0, -ENOENT
 * when MNT is not a mount point, or another negative errno.
 */
static int find_mount(const char *mnt, char *type, size_t typelen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *m, *t;
	size_t cap = 0;
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (parse_line(line, &m, &t) == 0 && strcmp(m, mnt) == 0) {
			snprintf(type, typelen, "%s", t);
			rc = 0; /* keep going: the last one is on top */
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* Connects to the daemon's control socket; *PID from SO_PEERCRED. */
static int control_connect(const char *mnt, pid_t *pid)
{
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t len, clen = sizeof(cred);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	*pid = 0;
	if (fd < 0)
		return -1;
	cmd_mount_control_addr(mnt, &sa, &len);
	if (connect(fd, (struct sockaddr *)&sa, len) != 0) {
		close(fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
		*pid = cred.pid;
	return fd;
}

static int run_fusermount(const char *mnt, bool lazy)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-q", "-z",
			       "--", mnt, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "-q", "--",
			       mnt, (char *)NULL);
		fprintf(stderr, "shardfs umount: cannot run fusermount3: %s\n",
			strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EBUSY;
}

/* Unmounts MNT. 0 or 1 (message printed). */
static int unmount(const char *arg, const char *mnt, bool dead)
{
	int rc;

	if (geteuid() != 0) {
		/* fusermount3 prints its own cause. */
		rc = run_fusermount(mnt, dead);
		return rc == 0 ? 0 : 1;
	}
	if (umount2(mnt, UMOUNT_NOFOLLOW) == 0)
		return 0;
	rc = errno;
	if (rc == EBUSY && dead &&
	    umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		return 0;
	if (rc == EBUSY)
		fprintf(stderr,
			"shardfs umount: %s is busy (a process is "
			"using it); nothing was unmounted\n",
			arg);
	else
		fprintf(stderr, "shardfs umount: cannot unmount %s: %s\n", arg,
			strerror(rc));
	return 1;
}

static bool pid_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* state follows the command name */
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/*
 * True when the FUSE mount at MNT has lost its daemon. A plain stat() is
 * not enough: the kernel answers it from cached attributes (the mount's
 * attribute timeout is a day) without asking the dead daemon, so the
 * attributes are fetched afresh (AT_STATX_FORCE_SYNC). A request that was
 * queued while the daemon died fails with ECONNABORTED instead of ENOTCONN.
 */
static bool is_dead(const char *mnt)
{
	struct statx stx;

	return statx(AT_FDCWD, mnt, AT_STATX_FORCE_SYNC, STATX_BASIC_STATS,
		     &stx) != 0 &&
	       (errno == ENOTCONN || errno == ECONNABORTED);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Waits until the daemon behind CTL has exited. 0 or 1. */
static int wait_daemon(const char *arg, int ctl, pid_t pid)
{
	struct pollfd pfd = {.fd = ctl, .events = POLLIN | POLLRDHUP};
	long limit = UMOUNT_WAIT_SECONDS * 1000L;
	struct timespec t0;
	char c;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < limit) {
		int n = poll(&pfd, 1, (int)(limit - ms_since(&t0)));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (read(ctl, &c, 1) <= 0 ||
		    (pfd.revents & (POLLHUP | POLLERR)))
			break;
	}
	/* The descriptors close early in exit(): let the process finish. */
	while (pid > 0 && !pid_gone(pid) && ms_since(&t0) < limit) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	if (pid > 0 && !pid_gone(pid)) {
		fprintf(stderr,
			"shardfs umount: %s is unmounted but its "
			"daemon (pid %ld) has not exited after %d s\n",
			arg, (long)pid, UMOUNT_WAIT_SECONDS);
		return 1;
	}
	return 0;
}

int cmd_umount(int argc, char **argv)
{
	char mnt[PATH_MAX], type[128];
	bool dead;
	pid_t pid;
	int c, rc, ctl;

	while ((c = getopt_long(argc, argv, "+h", umount_longopts, NULL)) !=
	       -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "Try 'shardfs umount --help'.\n");
		return 2;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "shardfs umount: usage error: expected "
				"MOUNTPOINT\nTry 'shardfs umount --help'.\n");
		return 2;
	}
	const char *arg = argv[optind];
	rc = resolve(arg, mnt);
	if (rc < 0) {
		fprintf(stderr, "shardfs umount: %s: %s\n", arg, strerror(-rc));
		return 1;
	}
	rc = find_mount(mnt, type, sizeof(type));
	if (rc < 0) {
		fprintf(stderr, "shardfs umount: %s is not mounted\n", arg);
		return 1;
	}
	if (strcmp(type, "fuse.shardfs") != 0) {
		fprintf(stderr,
			"shardfs umount: %s is not a shardfs mount (it "
			"is %s)\n",
			arg, type);
		return 1;
	}
	dead = is_dead(mnt);
	ctl = dead ? -1 : control_connect(mnt, &pid);
	if (unmount(arg, mnt, dead) != 0) {
		if (ctl >= 0)
			close(ctl);
		return 1;
	}
	if (ctl < 0) {
		if (!dead)
			fprintf(stderr,
				"shardfs umount: warning: %s is "
				"unmounted, but its daemon was not "
				"found; not waiting for it\n",
				arg);
		return 0;
	}
	rc = wait_daemon(arg, ctl, pid);
	close(ctl);
	return rc;
}
