#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs mount of a bucket prefix on the real S3 server: the 2,100-file
# tree compared byte for byte (8 concurrent readers, odd offsets, control
# directory, EROFS, clean umount); keys that cannot be file names; a read
# that fails returns EIO with a log line while other files keep working; an
# object replaced after listing is never read as a mix of versions; and the
# bad sources (wrong secret, unknown bucket, endpoint down) leave nothing
# mounted and no daemon.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name mount)
s3_mb "$B"
on_exit s3_rb_force "$B"
mc_gen_tree "$T/src"
s3_put_tree "$T/src" "s3://$B/data"

mount_check_tree "s3://$B/data" "$T/src"

# Keys that are not file names: a key that is both an object and a prefix
# (the directory wins), empty components and dot segments (skipped).
printf 'obj' > "$T/x"
for k in odd/both odd/both/child "odd/a//b" "odd/./dot" "odd/../up" ok/file; do
	s3_put "$T/x" "s3://$B/keys/$k"
done
mc_mount "s3://$B/keys" "$T/m" --log-file "$T/keys.log" --log-level info
[ -d "$T/m/odd/both" ] || fail "odd/both is not a directory"
expect_eq "$(cat "$T/m/odd/both/child")" obj "odd/both/child"
expect_eq "$(cat "$T/m/ok/file")" obj "ok/file"
ls -a "$T/m/odd" > "$T/odd.ls"
for bad in dot up; do
	! grep -qx "$bad" "$T/odd.ls" || fail "a dot-segment key escaped: $(cat "$T/odd.ls")"
done
[ ! -e "$T/up" ] || fail "a .. key escaped the mount"
mc_umount "$T/m"

# A read whose GET fails returns EIO, names the key in the log, and the
# mount keeps working; an object replaced after listing is an error (its
# ETag no longer matches), never a mix of old and new bytes.
head -c 100000 /dev/urandom > "$T/v1"
head -c 100000 /dev/urandom > "$T/v2"
s3_put "$T/v1" "s3://$B/chg/replaced"
s3_put "$T/v1" "s3://$B/chg/deleted"
s3_put "$T/v1" "s3://$B/chg/fine"
mc_mount "s3://$B/chg" "$T/m" --log-file "$T/chg.log"
ls -l "$T/m" > /dev/null
s3_put "$T/v2" "s3://$B/chg/replaced"
s3_rm "s3://$B/chg/deleted"
for f in replaced deleted; do
	if cat "$T/m/$f" > "$T/out" 2> "$T/err"; then
		fail "reading $f after it changed succeeded"
	fi
	grep -q 'Input/output error' "$T/err" || fail "$f: not EIO: $(cat "$T/err")"
	grep -q "chg/$f" "$T/chg.log" || fail "$f: the log does not name the key: $(cat "$T/chg.log")"
done
cmp "$T/m/fine" "$T/v1" || fail "another file stopped working after errors"
mc_umount "$T/m"

# Bad sources: the same clear message as ls, nothing mounted, no daemon.
mkdir -p "$T/bad"
check_bad_source() { # PATTERN ARGS...
	local pat=$1 st=0
	shift
	timeout 30 "$SHARDFS_BIN" mount "$@" "$T/bad" > "$T/out" 2> "$T/err" || st=$?
	expect_eq "$st" 1 "mount $* ($(cat "$T/err"))"
	grep -Eq "$pat" "$T/err" || fail "'$pat' not in: $(cat "$T/err")"
	[ "$(wc -l < "$T/err")" -le 2 ] || fail "more than a line or two: $(cat "$T/err")"
	! mc_is_mounted "$T/bad" || fail "something is mounted after a failed mount"
	[ -z "$(mc_daemon_pid "$(realpath "$T/bad")")" ] || fail "a daemon is left"
}
AWS_SECRET_ACCESS_KEY=wrongwrongwrong check_bad_source 'SignatureDoesNotMatch.*secret key' "s3://$B/data"
check_bad_source 'NoSuchBucket' "s3://no-such-bucket-$$/data"
check_bad_source 'could not connect to the endpoint URL' \
	--endpoint-url "http://127.0.0.1:$(free_port)" "s3://$B/data"
pass "S3 mount"
