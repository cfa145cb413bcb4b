#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input for shardfs mount / umount with a local source: each case is
# one clear line on stderr, exit status 1 (2 for usage errors), nothing
# left mounted and no daemon left running. Also: a dead mount (daemon
# killed with SIGKILL) is cleaned up by umount, and a busy live mount is
# left alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"

T=$(tmpdir_new)
mkdir -p "$T/src/d" "$T/mnt"
echo hello > "$T/src/d/f"

# run_fail WANT_STATUS PATTERN CMD...: CMD must exit WANT_STATUS within
# 30 s with PATTERN in a one-line stderr.
run_fail() {
	local want=$1 pat=$2 st=0
	shift 2
	timeout 30 "$@" > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -ne 124 ] || fail "hung: $*"
	expect_eq "$st" "$want" "exit status of: $* ($(head -c 300 "$T/err"))"
	grep -Eq -- "$pat" "$T/err" || fail "'$pat' not in the error of $*: $(cat "$T/err")"
	if [ "$want" = 1 ]; then
		expect_eq "$(wc -l < "$T/err")" 1 "lines of error output of: $*"
	fi
}

no_daemons() {
	local p cmd
	for p in /proc/[0-9]*; do
		cmd=$(tr '\0' ' ' 2>/dev/null < "$p/cmdline") || continue
		case "$cmd" in
		*shardfs*" mount "*"$T"*) fail "daemon left running: $cmd" ;;
		esac
	done
	! grep -q "$T" /proc/self/mountinfo || fail "something left mounted under $T: $(grep "$T" /proc/self/mountinfo)"
}

SH=$SHARDFS_BIN

# --- the mount point ---
run_fail 1 "mount point $T/missing does not exist" "$SH" mount "$T/src" "$T/missing"
touch "$T/afile"
run_fail 1 "mount point $T/afile is not a directory" "$SH" mount "$T/src" "$T/afile"
mkdir -p "$T/full" && touch "$T/full/x"
run_fail 1 "mount point $T/full is not empty" "$SH" mount "$T/src" "$T/full"
mc_mount "$T/src" "$T/mnt"
run_fail 1 "$T/mnt is already a mount point" "$SH" mount "$T/src" "$T/mnt"
cat "$T/mnt/d/f" > /dev/null || fail "first mount broken by the second attempt"
mc_umount "$T/mnt"
no_daemons

# --- the source ---
run_fail 1 "$T/nosuch.*No such file or directory" "$SH" mount "$T/nosuch" "$T/mnt"
run_fail 1 "$T/afile.*Not a directory" "$SH" mount "$T/afile" "$T/mnt"
run_fail 1 "$T/nosuch.*No such file or directory" "$SH" mount "file://$T/nosuch" "$T/mnt"
no_daemons

# --- usage errors ---
run_fail 2 "usage error" "$SH" mount "$T/src"
run_fail 2 "usage error" "$SH" mount -o rw "$T/src" "$T/mnt"
run_fail 2 "usage error" "$SH" mount --metadata-ttl abc "$T/src" "$T/mnt"
run_fail 2 "usage error" "$SH" mount --no-such-option "$T/src" "$T/mnt"
run_fail 2 "usage error" "$SH" umount
run_fail 1 "bad FUSE options|unknown option" "$SH" mount -o no_such_fuse_opt "$T/src" "$T/mnt"
no_daemons

# --- umount of things that are not shardfs mounts ---
run_fail 1 "$T/src is not mounted" "$SH" umount "$T/src"
run_fail 1 "No such file or directory" "$SH" umount "$T/missing"
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$T/tmpfs"
	mount -t tmpfs none "$T/tmpfs"
	on_exit "umount -l '$T/tmpfs' 2>/dev/null || true"
	run_fail 1 "$T/tmpfs is not a shardfs mount \(it is tmpfs\)" "$SH" umount "$T/tmpfs"
	grep -q " $T/tmpfs " /proc/self/mountinfo || fail "tmpfs was unmounted"
	umount "$T/tmpfs"
fi

# --- a busy live mount is left alone ---
mc_mount "$T/src" "$T/mnt"
(cd "$T/mnt/d" && exec sleep 30) &
busy=$!
sleep 0.3
if [ "$(id -u)" = 0 ]; then
	run_fail 1 "busy" "$SH" umount "$T/mnt"
else
	run_fail 1 "." "$SH" umount "$T/mnt"
fi
mc_is_mounted "$T/mnt" || fail "busy mount was unmounted"
cat "$T/mnt/d/f" > /dev/null || fail "busy mount broken"
kill "$busy"
wait "$busy" 2>/dev/null || true
mc_umount "$T/mnt"

# --- a dead mount: daemon killed with SIGKILL ---
mc_mount "$T/src" "$T/mnt"
pid=$(mc_daemon_pid "$(realpath "$T/mnt")")
[ -n "$pid" ] || fail "no daemon"
kill -9 "$pid"
for _ in $(seq 50); do
	[ -z "$(mc_daemon_pid "$(realpath "$T/mnt")")" ] && break
	sleep 0.1
done
st=0
ls "$T/mnt" > /dev/null 2> "$T/err" || st=$?
[ "$st" -ne 0 ] && grep -q "Transport endpoint is not connected" "$T/err" ||
	fail "dead mount not detected: $(cat "$T/err")"
run_fail 1 "dead mount.*shardfs umount" "$SH" mount "$T/src" "$T/mnt"
timeout 30 "$SH" umount "$T/mnt" || fail "umount of a dead mount failed"
! mc_is_mounted "$T/mnt" || fail "dead mount still there"
# The mount point is usable again.
mc_mount "$T/src" "$T/mnt"
expect_eq "$(cat "$T/mnt/d/f")" hello "content after remount"
mc_umount "$T/mnt"
no_daemons
echo "t_mount_badinput_local: ok"
