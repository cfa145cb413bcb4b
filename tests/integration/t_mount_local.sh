#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs mount of a local directory: a tree of 2,100 files (0 B .. 3 MiB)
# read through the mount and compared byte for byte, listing compared,
# concurrent readers, odd offsets, the control directory, EROFS, clean
# umount; then the file:// form, --foreground, and SIGTERM unmounting.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"

T=$(tmpdir_new)
mc_gen_tree "$T/src"
n=$(find "$T/src" -type f | wc -l)
[ "$n" -ge 2000 ] || fail "generated only $n files"

# The core check, with the source given as a plain path.
mount_check_tree "$T/src" "$T/src"

# file://DIR, a second mount of the same tree; the mount shows up as
# fuse.shardfs with the source as its name.
mc_mount "file://$T/src" "$T/m2"
awk -v m="$(realpath "$T/m2")" '$5 == m' /proc/self/mountinfo |
	grep -q " - fuse.shardfs file://$T/src " ||
	fail "mountinfo: $(grep "$T/m2" /proc/self/mountinfo)"
cmp "$T/src/edges/e16-3145728.bin" "$T/m2/edges/e16-3145728.bin" ||
	fail "3 MiB file differs through file://"
mc_umount "$T/m2"

# --foreground: the command itself is the daemon; SIGTERM unmounts.
mkdir -p "$T/m3"
MC_MOUNTS+=("$T/m3")
"$SHARDFS_BIN" mount -f "$T/src" "$T/m3" 2> "$T/fg.err" &
fg_pid=$!
for _ in $(seq 100); do
	mc_is_mounted "$T/m3" && break
	sleep 0.1
done
mc_is_mounted "$T/m3" || fail "foreground mount did not appear: $(cat "$T/fg.err")"
head -c 100 "$T/m3/edges/e04-512.bin" > /dev/null
kill -TERM "$fg_pid"
st=0
wait "$fg_pid" || st=$?
expect_eq "$st" 0 "exit status of the foreground mount after SIGTERM"
! mc_is_mounted "$T/m3" || fail "SIGTERM did not unmount $T/m3"

# A daemonised mount also unmounts on SIGTERM and exits.
mc_mount "$T/src" "$T/m4"
pid=$(mc_daemon_pid "$(realpath "$T/m4")")
[ -n "$pid" ] || fail "no daemon for $T/m4"
kill -TERM "$pid"
for _ in $(seq 100); do
	[ -z "$(mc_daemon_pid "$(realpath "$T/m4")")" ] && break
	sleep 0.1
done
[ -z "$(mc_daemon_pid "$(realpath "$T/m4")")" ] || fail "daemon survived SIGTERM"
! mc_is_mounted "$T/m4" || fail "SIGTERM did not unmount $T/m4"

# --help tells the truth about what mount accepts.
"$SHARDFS_BIN" mount --help | grep -q -- '--metadata-ttl' || fail "mount --help"
"$SHARDFS_BIN" umount --help | grep -q 'MOUNTPOINT' || fail "umount --help"
echo "t_mount_local: ok"
