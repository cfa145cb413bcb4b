#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTPS endpoints are verified by default: the test server's HTTPS port
# (a self-signed certificate made by scripts/s3-server) is refused by ls,
# cat and mount with a clear message that names --ca-bundle, also when
# AWS_CA_BUNDLE points at the system store; it is accepted with
# --ca-bundle or AWS_CA_BUNDLE naming its certificate, and with
# --no-verify-ssl only together with a loud warning.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
s3_env
[ -n "${S3_HTTPS_ENDPOINT:-}" ] && [ -f "${S3_CA_FILE:-}" ] ||
	skip "the test S3 server has no HTTPS endpoint (S3_SERVER_TLS=0?)"

T=$(tmpdir_new)
B=$(s3_bucket_name tls)
s3_mb "$B"
on_exit s3_rb_force "$B"
head -c 200000 /dev/urandom > "$T/obj"
s3_put "$T/obj" "s3://$B/dir/obj"
HTTPS=(--endpoint-url "$S3_HTTPS_ENDPOINT")
SYSTEM_CA=/etc/ssl/certs/ca-certificates.crt

# refused WHAT CMD...: exit 1 within 20 s, one clear line naming the cause.
refused() {
	local what=$1 st=0
	shift
	timeout 20 "$@" > "$T/out" 2> "$T/err" || st=$?
	expect_eq "$st" 1 "$what: exit status ($(cat "$T/err"))"
	grep -q 'certificate' "$T/err" || fail "$what: no word about the certificate: $(cat "$T/err")"
	grep -q -- '--ca-bundle' "$T/err" || fail "$what: --ca-bundle not suggested: $(cat "$T/err")"
	[ "$(wc -l < "$T/err")" -le 2 ] || fail "$what: more than a line or two: $(cat "$T/err")"
}

refused "ls, no CA bundle" env -u AWS_CA_BUNDLE "$SHARDFS_BIN" ls "${HTTPS[@]}" "s3://$B/dir/"
refused "cat, system CA store" env AWS_CA_BUNDLE="$SYSTEM_CA" "$SHARDFS_BIN" cat "${HTTPS[@]}" "s3://$B/dir/obj"
mkdir -p "$T/m"
refused "mount, no CA bundle" env -u AWS_CA_BUNDLE "$SHARDFS_BIN" mount "${HTTPS[@]}" "s3://$B/dir" "$T/m"
! mc_is_mounted "$T/m" || fail "mounted although the certificate was refused"
[ -z "$(mc_daemon_pid "$(realpath "$T/m")")" ] || fail "a daemon is left after a refused mount"
pass "a self-signed certificate is refused by default"

"$SHARDFS_BIN" ls "${HTTPS[@]}" --ca-bundle "$S3_CA_FILE" "s3://$B/dir/" > "$T/ls" ||
	fail "ls with --ca-bundle failed"
grep -q ' obj$' "$T/ls" || fail "ls with --ca-bundle: $(cat "$T/ls")"
AWS_CA_BUNDLE=$S3_CA_FILE "$SHARDFS_BIN" cat "${HTTPS[@]}" "s3://$B/dir/obj" > "$T/got" ||
	fail "cat with AWS_CA_BUNDLE failed"
cmp -s "$T/got" "$T/obj" || fail "cat over HTTPS changed the bytes"
mc_mount "s3://$B/dir" "$T/m" "${HTTPS[@]}" --ca-bundle "$S3_CA_FILE"
cmp -s "$T/m/obj" "$T/obj" || fail "read over an HTTPS mount changed the bytes"
mc_umount "$T/m"
pass "accepted with --ca-bundle and AWS_CA_BUNDLE"

env -u AWS_CA_BUNDLE "$SHARDFS_BIN" cat "${HTTPS[@]}" --no-verify-ssl "s3://$B/dir/obj" \
	> "$T/got" 2> "$T/err" || fail "cat --no-verify-ssl failed: $(cat "$T/err")"
cmp -s "$T/got" "$T/obj" || fail "cat --no-verify-ssl changed the bytes"
grep -q 'verification is DISABLED' "$T/err" || fail "no warning for --no-verify-ssl: $(cat "$T/err")"
timeout 60 env -u AWS_CA_BUNDLE "$SHARDFS_BIN" mount "${HTTPS[@]}" --no-verify-ssl \
	"s3://$B/dir" "$T/m" 2> "$T/err" || fail "mount --no-verify-ssl failed: $(cat "$T/err")"
MC_MOUNTS+=("$(realpath "$T/m")")
grep -q 'verification is DISABLED' "$T/err" || fail "mount --no-verify-ssl: no warning: $(cat "$T/err")"
cmp -s "$T/m/obj" "$T/obj" || fail "read over a --no-verify-ssl mount changed the bytes"
mc_umount "$T/m"
pass "--no-verify-ssl works, with a warning"

st=0
"$SHARDFS_BIN" ls "${HTTPS[@]}" --ca-bundle "$T/no-such.pem" "s3://$B/" 2> "$T/err" || st=$?
expect_eq "$st" 1 "ls with a missing --ca-bundle file"
grep -q 'CA bundle' "$T/err" || fail "missing CA bundle: $(cat "$T/err")"
pass "TLS"
