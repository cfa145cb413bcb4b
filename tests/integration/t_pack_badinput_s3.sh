#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs pack with bad input, S3 side: a missing DEST bucket, a DEST that
# cannot be written, wrong credentials, an endpoint that is down, DEST
# inside SRC, an empty SRC prefix, and the server failing for good in the
# middle of the upload. Each gets one clear line and a non-zero exit; no
# dataset index is written and no multipart upload is left behind. After
# the mid-upload failure, --resume keeps the shards that were completed.
set -euo pipefail
[ -w /dev/shm ] && export TMPDIR=/dev/shm # see pack_lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pack_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name)
PUB=$(s3_bucket_name pub)
s3_mb "$B"
on_exit s3_rb_force "$B"
s3_mb "$PUB" public-read
on_exit s3_rb_force "$PUB"
SH=$SHARDFS_BIN

run_st() {
	local want=$1 pat=$2 st=0
	shift 2
	timeout 120 "$@" > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -ne 124 ] || fail "hung: $*"
	expect_eq "$st" "$want" "exit status of: $* ($(head -c 600 "$T/err"))"
	[ -z "$pat" ] || grep -Eq -- "$pat" "$T/err" ||
		fail "'$pat' not in the error of $*: $(cat "$T/err")"
	cat "$T/out" "$T/err" >> "$T/all-output"
}

mkdir -p "$T/src/a"
for i in $(seq 12); do head -c $((3 << 20)) /dev/urandom > "$T/src/a/f$i.bin"; done
echo hello > "$T/src/hello.txt"

# --- DEST problems, found before anything is read or written ---
run_st 1 'NoSuchBucket' "$SH" pack "$T/src" "s3://no-such-bucket-$$/x"
run_st 1 'AccessDenied' "$SH" pack --no-sign-request "$T/src" "s3://$PUB/ds"
expect_eq "$("$SH" ls --recursive "s3://$PUB/" | wc -l)" 0 "objects written to a read-only DEST"
SECRET_WRONG="wrongSecretWRONGsecret0123456789abcdefXY"
run_st 1 'SignatureDoesNotMatch.*secret key and region' \
	env AWS_SECRET_ACCESS_KEY="$SECRET_WRONG" "$SH" pack --log-level trace "$T/src" "s3://$B/ds"
run_st 1 'InvalidAccessKeyId' \
	env AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 "$SH" pack "$T/src" "s3://$B/ds"
PORT=$(free_port)
start=$(date +%s)
run_st 1 'could not connect to the endpoint URL' \
	"$SH" pack --endpoint-url "http://127.0.0.1:$PORT" "$T/src" "s3://$B/ds"
[ $(($(date +%s) - start)) -le 15 ] || fail "a dead endpoint took over 15 s"
run_st 2 'usage error.*inside SRC' "$SH" pack "s3://$B/raw" "s3://$B/raw/packed"
run_st 2 'usage error' "$SH" pack "$T/src" "s3://"
run_st 1 'nothing to pack' "$SH" pack "s3://$B/no/such/prefix" "s3://$B/ds"
run_st 1 'NoSuchBucket' "$SH" pack "s3://no-such-bucket-$$/x" "$T/never"
[ ! -e "$T/never" ] || fail "DEST created although SRC cannot be read"
expect_eq "$("$SH" ls --recursive "s3://$B/" | wc -l)" 0 "objects written by failed runs"

# --- the server fails for good in the middle: 12 parts of 6 shards ---
pk_proxy_start fail-after 10
run_st 1 'InternalError.*no index written' "$SH" pack --endpoint-url "$PK_PROXY_URL" \
	--max-attempts 2 --shard-size 8M --part-size 5M --memory 16M "$T/src" "s3://$B/mid"
"$SH" ls "s3://$B/mid/" > "$T/listing"
grep -q shardfs.idx "$T/listing" && fail "an index after the server failed"
grep -q 'shard-000000.tar' "$T/listing" || fail "no shard completed before the failure: $(cat "$T/listing")"
expect_eq "$(pk_uploads "$B")" 0 "multipart uploads left after the failure"
run_st 0 '' "$SH" pack --shard-size 8M --part-size 5M --resume "$T/src" "s3://$B/mid"
grep -Eq '\([1-5] already stored\)' "$T/out" || fail "resume: $(cat "$T/out")"
pk_fetch "s3://$B/mid" "$T/shards"
pk_extract "$T/shards" "$T/x"
pk_compare "$T/src" "$T/x" tar

# No secret in anything printed above (trace level included).
for s in "$AWS_SECRET_ACCESS_KEY" "$SECRET_WRONG"; do
	if grep -qF -- "$s" "$T/all-output"; then
		fail "a secret key appears in the output"
	fi
done
pass "bad input handled"
