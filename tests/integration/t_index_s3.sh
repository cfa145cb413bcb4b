#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs index s3://BUCKET/PREFIX on the real S3 server: the shards of
# t_index_local.sh uploaded under a prefix; the shardfs.idx written next
# to them lists exactly what `tar -tv` lists, with the S3 ETags and keys
# relative to the prefix, and each member's offset gives its bytes.
# 24 shards that all hold one path, scanned 8 at a time: the last shard in
# key order wins and 23 adds are reported as shadowed, the same index as
# with --jobs 1. A damaged shard is reported and the others are fine.
# Errors: unknown bucket, no shards, an unwritable destination (anonymous
# requests on a public-read bucket), a malformed URL.
set -euo pipefail
INDEX_LIB_ONLY=1 . "$(dirname "$0")/t_index_local.sh"
s3_env

T=$(tmpdir_new)
SH=("$SHARDFS_BIN")
B=$(s3_bucket_name)
s3_mb "$B"
on_exit s3_rb_force "$B"

mkdir -p "$T/data"
index_make_shards "$T/data"
s3_put_tree "$T/data" "s3://$B/ds/train"

# --- three shards under a prefix ---
"${SH[@]}" index "s3://$B/ds/train" > "$T/out" 2> "$T/err" || fail "index failed: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "index wrote to stderr: $(cat "$T/err")"
grep -Eq '^3 shards, [0-9]+ members, 1 shadowed, 0 damaged, [3-9] GETs' "$T/out" ||
	fail "summary: $(cat "$T/out")"
grep -q "wrote s3://$B/ds/train/shardfs.idx" "$T/out" || fail "destination: $(cat "$T/out")"
s3_get "s3://$B/ds/train/shardfs.idx" "$T/idx"
index_verify "$T/data" "$T/idx"
# the S3 ETags, keys relative to the prefix
s3_python - "$B" > "$T/etags" <<'PY'
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
for o in s3.list_objects_v2(Bucket=sys.argv[1], Prefix="ds/train/")["Contents"]:
    if o["Key"].endswith(".tar"):
        print("shard\t%s\t%s\t%d" % (o["Key"][len("ds/train/"):], o["ETag"], o["Size"]))
PY
expect_eq "$(grep '^shard' "$T/dump.txt")" "$(cat "$T/etags")" "shard records"
# a trailing '/' names the same prefix
"${SH[@]}" index "s3://$B/ds/train/" > "$T/out" || fail "index with a trailing / failed"
grep -q '^3 shards' "$T/out" || fail "summary: $(cat "$T/out")"
pass "3 shards indexed on S3, the index matches tar -tv, ETags and bytes"

# --- 24 shards holding one path, in parallel ---
/usr/bin/python3 - "$T/many" <<'PY'
import io, os, sys, tarfile
root = sys.argv[1]
os.makedirs(root)
for i in range(24):
    with tarfile.open(os.path.join(root, "shard-%06d.tar" % i), "w",
                      format=tarfile.GNU_FORMAT) as t:
        for name, data in [("shared/x.txt", b"shard %d\n" % i)] + \
                [("s%02d/%03d.bin" % (i, k), os.urandom(200 + k)) for k in range(40)]:
            ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000 + i
            t.addfile(ti, io.BytesIO(data))
PY
s3_put_tree "$T/many" "s3://$B/many"
"${SH[@]}" index --jobs 8 "s3://$B/many" > "$T/out" || fail "index --jobs 8 failed"
grep -Eq '^24 shards, 984 members, 23 shadowed, 0 damaged, 24 GETs' "$T/out" ||
	fail "summary: $(cat "$T/out")"
s3_get "s3://$B/many/shardfs.idx" "$T/many8.idx"
index_verify "$T/many" "$T/many8.idx"
grep -q $'^file\tshared/x.txt\t9\tshard-000023.tar' "$T/dump.txt" ||
	fail "shared/x.txt is not the last shard's: $(grep x.txt "$T/dump.txt")"
"${SH[@]}" index -j 1 "s3://$B/many" > "$T/out" || fail "index -j 1 failed"
s3_get "s3://$B/many/shardfs.idx" "$T/many1.idx"
cmp -s <("$DUMP" "$T/many8.idx" | grep -v '^dir') <("$DUMP" "$T/many1.idx" | grep -v '^dir') ||
	fail "--jobs 8 and --jobs 1 give different indexes"
pass "24 shards in parallel: the last shard in key order wins, 23 shadowed"

# --- a damaged shard ---
index_make_broken "$T/data"
s3_put "$T/data/zz-broken.tar" "s3://$B/ds/train/zz-broken.tar"
run_fail 1 "zz-broken.tar: damaged shard: .*offset" "${SH[@]}" index "s3://$B/ds/train"
expect_eq "$(grep -c 'damaged shard:' "$T/err")" 1 "lines reporting the damaged shard"
grep -q '^4 shards, .* 1 damaged' "$T/out" || fail "summary: $(cat "$T/out")"
s3_get "s3://$B/ds/train/shardfs.idx" "$T/idx"
"$DUMP" "$T/idx" > "$T/dump.txt"
grep -q $'^file\tbroken/f2\t1000\tzz-broken.tar' "$T/dump.txt" || fail "broken/f2 not kept"
! grep -q 'broken/f3' "$T/dump.txt" || fail "a member after the damage was indexed"
grep -q $'^file\tcommon/dup.txt\t21\tshard-001.tar' "$T/dump.txt" || fail "the good shards suffered"
"${SH[@]}" index --allow-damaged "s3://$B/ds/train" > "$T/out" 2> "$T/err" ||
	fail "--allow-damaged: exit status $?"
pass "a damaged shard is reported, the others are fine"

# --- errors ---
run_fail 1 'NoSuchBucket' "${SH[@]}" index "s3://no-such-bucket-$$/x"
run_fail 1 "no .tar objects under s3://$B/nothing-here" "${SH[@]}" index "s3://$B/nothing-here"
run_fail 2 'usage' "${SH[@]}" index "s3://"
run_fail 2 'usage' "${SH[@]}" index "s3:///x"
# public-read: anonymous listing and GETs work, the PUT of the index does not
P=$(s3_bucket_name pub)
s3_mb "$P" public-read
on_exit s3_rb_force "$P"
s3_put_tree "$T/many" "s3://$P/d" public-read
run_fail 1 'cannot write s3://'"$P"'/d/shardfs.idx: .*(AccessDenied|403)' \
	"${SH[@]}" index --no-sign-request "s3://$P/d"
pass "unknown bucket, no shards, malformed URL and an unwritable destination"
