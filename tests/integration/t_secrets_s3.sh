#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Secrets stay secret and the mount stays private:
# - ls, cat and mount at --log-level trace, through a proxy that answers
#   503/500 and resets connections (so that errors and retries are logged),
#   with good credentials, a wrong secret and a fake session token (which
#   the test gateway ignores): no output and no log file holds the secret key,
#   the session token, an Authorization header or a signature;
# - a credentials file readable by others draws a warning, a private one
#   does not;
# - another user cannot enter a mount made without -o allow_other, and can
#   with it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/faults_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name secrets)
s3_mb "$B"
on_exit s3_rb_force "$B"
mkdir -p "$T/src/d"
for i in $(seq 40); do head -c $((i * 997)) /dev/urandom > "$T/src/d/f$i"; done
s3_put_tree "$T/src" "s3://$B/ds"

SECRET=$AWS_SECRET_ACCESS_KEY
WRONG_SECRET=wrongSecret0123456789abcdefghijklmnopqrstu
TOKEN=FQoGZXIvYXdzEFAKEsessionTOKENthatMUSTneverBEprinted0123456789abcdef
LOGS=$T/logs
mkdir -p "$LOGS"
fp_start secrets --seed 3
fp_ctl faults 503:0.15,500:0.05,reset-mid:0.05,reset-before:0.05
EP=(--endpoint-url "http://127.0.0.1:$FP_PORT" --log-level trace)

# run NAME CMD...: runs CMD (any exit status, 60 s at most), keeps its output.
n=0
run() {
	local name=$1 st=0
	shift
	n=$((n + 1))
	timeout 60 "$@" > "$LOGS/$n-$name.out" 2> "$LOGS/$n-$name.err" || st=$?
	[ "$st" != 124 ] || fail "$name hung"
	echo "$st" > "$LOGS/$n-$name.status"
}

run ls "$SHARDFS_BIN" ls "${EP[@]}" "s3://$B/ds/d/"
expect_eq "$(cat "$LOGS/$n-ls.status")" 0 "ls through the faulty proxy"
run cat "$SHARDFS_BIN" cat "${EP[@]}" "s3://$B/ds/d/f40"
expect_eq "$(cat "$LOGS/$n-cat.status")" 0 "cat through the faulty proxy"
cmp -s "$LOGS/$n-cat.out" "$T/src/d/f40" || fail "cat gave wrong bytes"
run ls-wrong-secret env AWS_SECRET_ACCESS_KEY="$WRONG_SECRET" "$SHARDFS_BIN" ls "${EP[@]}" "s3://$B/ds/"
run cat-wrong-secret env AWS_SECRET_ACCESS_KEY="$WRONG_SECRET" "$SHARDFS_BIN" cat "${EP[@]}" "s3://$B/ds/d/f1"
run ls-token env AWS_SESSION_TOKEN="$TOKEN" "$SHARDFS_BIN" ls "${EP[@]}" "s3://$B/ds/"
run cat-token env AWS_SESSION_TOKEN="$TOKEN" "$SHARDFS_BIN" cat "${EP[@]}" "s3://$B/ds/d/f1"
for i in 3 4; do
	[ "$(cat "$LOGS/$i-"*.status)" = 1 ] || fail "run $i did not fail: $(cat "$LOGS/$i-"*.err)"
done

# Mounts: reads with retries, with and without a session token.
mkdir -p "$T/m"
run mount "$SHARDFS_BIN" mount "${EP[@]}" --log-file "$LOGS/mount.log" "s3://$B/ds" "$T/m"
expect_eq "$(cat "$LOGS/$n-mount.status")" 0 "mount through the faulty proxy"
MC_MOUNTS+=("$(realpath "$T/m")")
for i in $(seq 40); do
	cmp -s "$T/m/d/f$i" "$T/src/d/f$i" || fail "d/f$i read wrong through the mount"
done
ls "$T/m/d/no-such-file" 2> /dev/null && fail "a missing file exists"
mc_umount "$T/m"
run mount-token env AWS_SESSION_TOKEN="$TOKEN" "$SHARDFS_BIN" mount "${EP[@]}" \
	--log-file "$LOGS/mount-token.log" "s3://$B/ds" "$T/m"
if mc_is_mounted "$T/m"; then
	cat "$T/m/d/f3" "$T/m/d/f30" > /dev/null 2>&1 || true
	mc_umount "$T/m"
fi
fp_stop
retries=$(fp_count repeats)
[ "$retries" -gt 0 ] || fail "the proxy saw no retries: the test did not test errors"
grep -qh 's3c: GET http' "$LOGS"/* || fail "no trace lines were logged: the test is vacuous"

# Nothing anywhere may hold a secret.
check_no() { # WHAT FIXED-STRING
	if grep -rlF -- "$2" "$LOGS" > "$T/hits"; then
		fail "$1 found in: $(tr '\n' ' ' < "$T/hits")"
	fi
}
check_no "the secret key" "$SECRET"
check_no "the wrong secret key" "$WRONG_SECRET"
check_no "the session token" "$TOKEN"
check_no "a signature" "Signature="
check_no "a credential scope" "AWS4-HMAC-SHA256 Credential"
if grep -rliE 'authorization:|x-amz-security-token:|x-amz-signature' "$LOGS" > "$T/hits"; then
	fail "a signed header found in: $(tr '\n' ' ' < "$T/hits")"
fi
pass "no secret in $(find "$LOGS" -type f | wc -l) outputs and logs ($retries retries)"

# A credentials file readable by others draws a warning (and still works).
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$AWS_ACCESS_KEY_ID" "$SECRET" > "$T/credentials"
for mode in 644 600; do
	chmod "$mode" "$T/credentials"
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T/credentials" \
		"$SHARDFS_BIN" ls "s3://$B/ds/" > "$T/out" 2> "$T/err" ||
		fail "ls with credentials from a file (mode $mode): $(cat "$T/err")"
	grep -qF -- "$SECRET" "$T/out" "$T/err" && fail "the secret key was printed"
	if [ "$mode" = 644 ]; then
		grep -q 'readable or writable by group or others' "$T/err" ||
			fail "no warning for a credentials file of mode 644: $(cat "$T/err")"
	else
		[ ! -s "$T/err" ] || fail "unexpected output with a private credentials file: $(cat "$T/err")"
	fi
done
pass "a credentials file readable by others draws a warning"

# Another user: refused without allow_other, let in with it.
command -v setpriv > /dev/null || skip "no setpriv"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$T"
mc_mount "s3://$B/ds" "$T/m"
if "${NOBODY[@]}" ls "$T/m" > /dev/null 2> "$T/err"; then
	fail "another user could list a mount made without allow_other"
fi
grep -q 'Permission denied' "$T/err" || fail "another user: not EACCES: $(cat "$T/err")"
mc_umount "$T/m"
mc_mount "s3://$B/ds" "$T/m" -o allow_other
"${NOBODY[@]}" ls "$T/m/d" > "$T/out" 2> "$T/err" ||
	fail "another user could not list a mount with allow_other: $(cat "$T/err")"
grep -qx f7 "$T/out" || fail "another user's listing: $(head -c 200 "$T/out")"
"${NOBODY[@]}" cat "$T/m/d/f7" | cmp -s - "$T/src/d/f7" ||
	fail "another user could not read through a mount with allow_other"
mc_umount "$T/m"
pass "the mount is private unless -o allow_other"
