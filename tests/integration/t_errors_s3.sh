#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input for ls / cat: each gets one clear line, a non-zero exit and no
# hang; no secret ever reaches the output, even at the trace log level.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
s3_env

T=$(tmpdir_new)
B=errors-$$
s3_mb "$B"
on_exit s3_rb_force "$B"
printf 'hello' > "$T/hello"
s3_put "$T/hello" "s3://$B/hello"

# run_fail WANT_STATUS PATTERN CMD...: CMD must exit WANT_STATUS within
# 20 s and print PATTERN on stderr.
run_fail() {
	local want=$1 pat=$2 st=0
	shift 2
	timeout 20 "$@" > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -ne 124 ] || fail "hung: $*"
	expect_eq "$st" "$want" "exit status of: $* ($(head -c 300 "$T/err"))"
	grep -Eq -- "$pat" "$T/err" || fail "'$pat' not in the error of $*: $(cat "$T/err")"
	cat "$T/out" "$T/err" >> "$T/all-output"
}

SECRET_WRONG="wrongSecretWRONGsecret0123456789abcdefXY"
run_fail 1 'SignatureDoesNotMatch.*secret key and region' \
	env AWS_SECRET_ACCESS_KEY="$SECRET_WRONG" "$SHARDFS_BIN" ls --log-level trace "s3://$B/"
run_fail 1 'SignatureDoesNotMatch' \
	env AWS_SECRET_ACCESS_KEY="$SECRET_WRONG" "$SHARDFS_BIN" cat --log-level trace "s3://$B/hello"
run_fail 1 'InvalidAccessKeyId' \
	env AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 "$SHARDFS_BIN" ls --log-level trace "s3://$B/"
run_fail 1 'NoSuchBucket' "$SHARDFS_BIN" ls "s3://no-such-bucket-$$/"
run_fail 1 'NoSuchBucket' "$SHARDFS_BIN" cat "s3://no-such-bucket-$$/x"
run_fail 1 'NoSuchKey' "$SHARDFS_BIN" cat --log-level trace "s3://$B/missing"

# Endpoint down: a port nobody listens on fails within a few seconds.
PORT=$(free_port)
start=$(date +%s)
run_fail 1 'could not connect to the endpoint URL' \
	"$SHARDFS_BIN" ls --endpoint-url "http://127.0.0.1:$PORT" "s3://$B/"
[ $(($(date +%s) - start)) -le 10 ] || fail "endpoint down took over 10 s"

# Usage errors exit 2.
run_fail 2 'usage error' "$SHARDFS_BIN" ls "http://$B/"
run_fail 2 'usage error' "$SHARDFS_BIN" ls "s3://"
run_fail 2 'usage error' "$SHARDFS_BIN" ls --endpoint-url "ftp://x" "s3://$B/"
run_fail 2 'usage error' "$SHARDFS_BIN" ls --endpoint-url "http://127.0.0.1:99999" "s3://$B/"
run_fail 2 'usage error' "$SHARDFS_BIN" ls --max-connections 0 "s3://$B/"
run_fail 2 'usage error' "$SHARDFS_BIN" ls --bogus "s3://$B/"
run_fail 2 'usage error' "$SHARDFS_BIN" cat "s3://$B"
run_fail 2 'usage error' "$SHARDFS_BIN" cat --range 9-3 "s3://$B/hello"
run_fail 2 'usage error' "$SHARDFS_BIN" cat --range abc "s3://$B/hello"
run_fail 2 'unknown command' "$SHARDFS_BIN" frobnicate

# A broken server: malformed XML, an oversized body, a repeating token,
# and 503 SlowDown forever (bounded retries, then a clear error).
for mode in badxml bigbody loop slowdown; do
	pf="$T/fake-$mode"
	python3 "$SHARDFS_SRC/tests/integration/fake_s3.py" "$mode" "$pf" &
	pid=$!
	on_exit kill "$pid"
	for _ in $(seq 50); do [ -s "$pf" ] && break; sleep 0.1; done
	url="http://127.0.0.1:$(cat "$pf")"
	case $mode in
	badxml) pat='malformed' ;;
	bigbody) pat='larger than' ;;
	loop) pat='repeated a continuation token' ;;
	slowdown) pat='SlowDown.*after 3 attempts' ;;
	esac
	run_fail 1 "$pat" "$SHARDFS_BIN" ls --max-attempts 3 --endpoint-url "$url" "s3://bkt/"
done
expect_eq "$(cat "$T/fake-slowdown.count")" 3 "attempts against a server that always answers 503"

# No secret in anything printed above (trace level included).
for s in "$AWS_SECRET_ACCESS_KEY" "$SECRET_WRONG"; do
	if grep -qF -- "$s" "$T/all-output"; then
		fail "a secret key appears in the output"
	fi
done
grep -qi 'authorization:' "$T/all-output" && fail "an Authorization header appears in the output"
pass "bad input"
