#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs pack to the real S3 server: the 10,800-file round trip (shards
# downloaded with another client, listed by GNU tar and Python's tarfile,
# extracted and compared with diff -r, modes and mtimes; samples whole;
# the index's shard table against the server's listing; no multipart
# upload left), the same through `shardfs mount`; an interrupted run
# (SIGTERM) that aborts its uploads and the --resume that finishes it;
# --max-connections and --memory respected; part uploads that fail now
# and then; and loose objects of an S3 prefix as the source.
set -euo pipefail
[ -w /dev/shm ] && export TMPDIR=/dev/shm # see pack_lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/pack_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name)
s3_mb "$B"
on_exit s3_rb_force "$B"
SH=$SHARDFS_BIN
OPTS=(--shard-size 4M --part-size 5M --memory 64M)
pk_gen_tree "$T/src"
n=$(find "$T/src" -type f | wc -l)
min=10000
[ -z "${SHARDFS_SANITIZER:-}" ] || min=2000 # pk_gen_tree makes fewer
[ "$n" -ge "$min" ] || fail "generated only $n files"
want=$(find "$T/src" -mindepth 1 | wc -l)

# --- the round trip ---
"$SH" pack "${OPTS[@]}" "$T/src" "s3://$B/ds" > "$T/summary" || fail "pack failed"
grep -Eq "^shardfs pack: $n files, [0-9.]+ MB, [0-9]+ shards \(0 already stored\) in [0-9.]+ s: [0-9.]+ MB/s, [0-9]+ files/s\$" "$T/summary" ||
	fail "summary line: $(cat "$T/summary")"
nshards=$(pk_shards "s3://$B/ds" | wc -l)
[ "$nshards" -ge 10 ] || fail "only $nshards shards"
expect_eq "$(pk_uploads "$B")" 0 "multipart uploads left"
pk_fetch "s3://$B/ds" "$T/shards"
expect_eq "$(pk_check_tars "$T/shards")" "$want" "members in all shards"
pk_check_samples "$T/shards"
pk_extract "$T/shards" "$T/x"
pk_compare "$T/src" "$T/x" tar
rm -rf "$T/x"

# The index lists every shard with the key, size and ETag the server has;
# shards larger than a part are multipart ("...-N").
s3_get "s3://$B/ds/shardfs.idx" "$T/idx"
s3_python - "$B" "$T/idx" <<'PY' || fail "the index's shard table"
import boto3, os, struct, sys
b, path = sys.argv[1], sys.argv[2]
d = open(path, "rb").read()
assert d[:8] == b"SHARDIDX", d[:8]
shard_off, count, rec = struct.unpack_from("<QII", d, 48)
str_off, = struct.unpack_from("<Q", d, 96)
idx = {}
for i in range(count):
    koff, klen, elen, size = struct.unpack_from("<IHHQ", d, shard_off + i * rec)
    s = d[str_off + koff:str_off + koff + klen + elen].decode()
    idx[s[:klen]] = (size, s[klen:])
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
have = {o["Key"][3:]: (o["Size"], o["ETag"])
        for o in s3.list_objects_v2(Bucket=b, Prefix="ds/shard-")["Contents"]}
assert idx == have, (sorted(idx.items())[:3], sorted(have.items())[:3])
multi = [k for k, (size, etag) in idx.items() if size > 5 << 20]
assert multi and all(idx[k][1].rstrip('"').split("-")[-1].isdigit() for k in multi), multi
print("index: %d shards match the listing, %d multipart" % (len(idx), len(multi)), file=sys.stderr)
PY

rc=0
pk_mount_roundtrip "$T/src" "s3://$B/ds" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || fail "mount round trip"

# --- interrupted by SIGTERM, then --resume; --max-connections holds ---
pk_proxy_start slow 100
"$SH" pack "${OPTS[@]}" --endpoint-url "$PK_PROXY_URL" --max-connections 2 \
	"$T/src" "s3://$B/int" > "$T/int.out" 2> "$T/int.err" &
pid=$!
for _ in $(seq 600); do
	k=$("$SH" cat "s3://$B/int/shardfs.pack-state" 2>/dev/null | grep -c '\.tar ' || true)
	[ "${k:-0}" -ge 3 ] && break
	sleep 0.1
done
kill -TERM "$pid"
st=0
wait "$pid" || st=$?
expect_eq "$st" 143 "exit status after SIGTERM ($(cat "$T/int.err"))"
grep -q 'interrupted.*no index written' "$T/int.err" || fail "SIGTERM message: $(cat "$T/int.err")"
"$SH" ls "s3://$B/int/" | grep -q 'shardfs.idx' && fail "an index after SIGTERM"
expect_eq "$(pk_uploads "$B")" 0 "multipart uploads left after SIGTERM"
read -r puts _ most < "$PK_PROXY_COUNTS"
[ "$most" -le 2 ] || fail "$most PUTs at once with --max-connections 2"
[ "$puts" -ge 4 ] || fail "only $puts PUTs before SIGTERM"
"$SH" pack "${OPTS[@]}" --resume "$T/src" "s3://$B/int" > "$T/summary" || fail "--resume failed"
grep -Eq '\(([3-9]|[1-9][0-9]+) already stored\)' "$T/summary" || fail "resume: $(cat "$T/summary")"
# The same bytes as the first run: the same ETags, shard by shard.
s3_python - "$B" <<'PY' || fail "resumed shards differ from the first run's"
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
def tags(p):
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[1], Prefix=p):
        out.update({o["Key"][len(p):]: o["ETag"] for o in page.get("Contents", [])
                    if o["Key"].endswith(".tar")})
    return out
a, b = tags("ds/"), tags("int/")
assert a == b and a, (len(a), len(b))
PY

# --- memory: --memory 16M keeps the process small however large the
# shards (64 MiB here, multipart of 13 parts); not measured under ASan,
# which keeps freed memory in quarantine ---
s3_python - "$SH" "$T/src" "s3://$B/mem" "${SHARDFS_SANITIZER:-}" <<'PY' || fail "memory bound"
import resource, subprocess, sys
sh, src, dst = sys.argv[1:4]
subprocess.run([sh, "pack", "--memory", "16M", "--part-size", "5M",
                "--shard-size", "64M", src, dst], check=True, stdout=subprocess.DEVNULL)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
print("peak RSS with --memory 16M: %d MiB" % rss, file=sys.stderr)
assert rss < 64 or sys.argv[4], rss
PY
s3_python - "$B" <<'PY'
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
for p in ("mem/", "int/"):
    keys = [{"Key": o["Key"]} for o in s3.list_objects_v2(Bucket=sys.argv[1], Prefix=p).get("Contents", [])]
    if keys:
        s3.delete_objects(Bucket=sys.argv[1], Delete={"Objects": keys})
PY

# --- part uploads that fail now and then are retried ---
mkdir -p "$T/small"
cp -a "$T/src/big" "$T/src/names" "$T/src/links" "$T/small/"
pk_proxy_start flaky 3
"$SH" pack --shard-size 8M --part-size 5M --endpoint-url "$PK_PROXY_URL" \
	"$T/small" "s3://$B/flaky" > /dev/null || fail "pack with flaky PUTs failed"
read -r puts failed _ < "$PK_PROXY_COUNTS"
[ "$failed" -ge 3 ] || fail "only $failed of $puts PUTs failed"
expect_eq "$(pk_uploads "$B")" 0 "multipart uploads left"
pk_fetch "s3://$B/flaky" "$T/fl"
pk_extract "$T/fl" "$T/flx"
pk_compare "$T/small" "$T/flx" tar

# --- loose objects under an S3 prefix as SRC, to S3 and to a directory ---
mkdir -p "$T/loose"
cp -a "$T/src/names" "$T/src/big" "$T/loose/"
mkdir -p "$T/loose/both" "$T/loose/deep/er/est"
echo child > "$T/loose/both/child"
: > "$T/loose/deep/er/est/empty"
s3_put_tree "$T/loose" "s3://$B/loose"
echo object > "$T/both-object"
s3_put "$T/both-object" "s3://$B/loose/both" # a key that is also a prefix
st=0
"$SH" pack --shard-size 4M --memory 16M --part-size 5M "s3://$B/loose" "s3://$B/fromloose" \
	> /dev/null 2> "$T/loose.err" || st=$?
expect_eq "$st" 3 "exit status with a skipped key ($(cat "$T/loose.err"))"
grep -q "skipping both: .*prefix" "$T/loose.err" || fail "no warning for 'both': $(cat "$T/loose.err")"
pk_fetch "s3://$B/fromloose" "$T/fromloose"
pk_check_samples "$T/fromloose"
pk_extract "$T/fromloose" "$T/fx"
diff -r "$T/loose" "$T/fx" || fail "loose objects packed differ"
st=0
"$SH" pack "s3://$B/loose/" "$T/tolocal" > /dev/null 2>&1 || st=$?
expect_eq "$st" 3 "exit status of S3 to a directory"
pk_extract "$T/tolocal" "$T/tx"
diff -r "$T/loose" "$T/tx" || fail "S3 to a directory differs"
pass "round trip of $n files in $nshards shards, resume, retries, S3 sources"
