#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs ls / cat against the real S3 server: pagination, odd keys, byte
# comparisons, ranges at the edges, and the connection reuse of the engine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
s3_env

T=$(tmpdir_new)
B=lscat-$$
s3_mb "$B"
on_exit s3_rb_force "$B"

# A tree: 2,500 keys under many/, odd names, nested prefixes, a key that is
# both an object and a prefix, and objects of 0 B, 1 B and 5 MiB.
/usr/bin/python3 - "$T/src" <<'PY'
import os, sys
root = sys.argv[1]
def put(rel, data):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
for i in range(2500):
    put("many/k%06d" % i, b"%d\n" % i)
for name in ["odd/with space", "odd/plus+sign", "odd/percent%41", "odd/ünïcødé-日本",
             "odd/tilde~x", "odd/eq=amp&q?h#", "a/b/c/d/deep"]:
    put(name, name.encode())
put("both/child", b"child")
put("sizes/empty", b"")
put("sizes/one", b"x")
put("sizes/five", os.urandom(5 * 1024 * 1024))
PY
s3_put_tree "$T/src" "s3://$B/"
# "both" is an object and a prefix at once.
printf 'object' > "$T/both"
s3_put "$T/both" "s3://$B/both"

SH=("$SHARDFS_BIN")

# --- ls: pagination with and without a delimiter ---
n=$("${SH[@]}" ls "s3://$B/many/" | wc -l)
expect_eq "$n" 2500 "entries listed under many/"
n=$("${SH[@]}" ls --recursive "s3://$B/" | wc -l)
expect_eq "$n" $((2500 + 7 + 1 + 3 + 1)) "keys listed recursively"
"${SH[@]}" ls "s3://$B/" > "$T/root.txt"
grep -q ' PRE many/$' "$T/root.txt" || fail "PRE many/ missing: $(cat "$T/root.txt")"
grep -q ' PRE both/$' "$T/root.txt" || fail "PRE both/ missing"
grep -Eq '^ +6 [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z both$' "$T/root.txt" ||
	fail "object 'both' missing or badly formatted: $(cat "$T/root.txt")"
# The keys listed must be exactly the keys botocore lists.
"${SH[@]}" ls --recursive "s3://$B/" | awk '{ $1=""; $2=""; sub(/^  /, ""); print }' |
	LC_ALL=C sort > "$T/ours.txt"
s3_python - "$B" > "$T/ref.txt" <<'PY'
import sys, boto3, os
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[1]):
    keys += [o["Key"] for o in page.get("Contents", [])]
sys.stdout.buffer.write(("\n".join(sorted(keys, key=lambda k: k.encode())) + "\n").encode())
PY
LC_ALL=C sort -o "$T/ref.txt" "$T/ref.txt"
cmp "$T/ours.txt" "$T/ref.txt" || fail "recursive listing differs from botocore's"
# Nested prefixes and odd names, non-recursive.
# (Outputs go to files first: `ls | grep -q` would end ls with SIGPIPE.)
"${SH[@]}" ls "s3://$B/a/b/" > "$T/ab.txt"
grep -q ' PRE c/$' "$T/ab.txt" || fail "nested prefix: $(cat "$T/ab.txt")"
"${SH[@]}" ls "s3://$B/odd/" > "$T/odd.txt"
grep -q ' ünïcødé-日本$' "$T/odd.txt" || fail "unicode key: $(cat "$T/odd.txt")"
grep -q ' with space$' "$T/odd.txt" || fail "key with a space"
grep -q ' plus+sign$' "$T/odd.txt" || fail "key with a plus"
grep -q ' percent%41$' "$T/odd.txt" || fail "key with a percent sign"

# --- cat: whole objects, byte for byte ---
for k in sizes/empty sizes/one sizes/five "odd/with space" "odd/plus+sign" \
	"odd/percent%41" "odd/ünïcødé-日本" "odd/eq=amp&q?h#" both; do
	src="$T/src/$k"; [ "$k" = both ] && src="$T/both"
	"${SH[@]}" cat "s3://$B/$k" > "$T/out" || fail "cat $k failed"
	cmp "$T/out" "$src" || fail "cat $k: bytes differ"
done

# --- cat: ranges at the edges ---
F="$T/src/sizes/five"; S=$(stat -c %s "$F")
check_range() { # RANGE OFFSET LENGTH
	"${SH[@]}" cat --range "$1" "s3://$B/sizes/five" > "$T/out" ||
		fail "cat --range $1 failed"
	dd if="$F" of="$T/want" iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		bs=1M status=none
	cmp "$T/out" "$T/want" || fail "cat --range $1: bytes differ"
}
check_range 0-0 0 1
check_range "$((S - 1))-$((S - 1))" $((S - 1)) 1
check_range "0-$((S - 1))" 0 "$S"
check_range "1000-$((S + 5000))" 1000 $((S - 1000))
check_range 4194303-4194304 4194303 2
check_range 123- 123 $((S - 123))
check_range -10 $((S - 10)) 10
"${SH[@]}" cat --range 0-0 "s3://$B/sizes/one" > "$T/out"
cmp "$T/out" "$T/src/sizes/one" || fail "1-byte object, range 0-0"
if "${SH[@]}" cat --range "$S-" "s3://$B/sizes/five" > "$T/out" 2> "$T/err"; then
	fail "a range past the end succeeded"
fi
grep -q InvalidRange "$T/err" || fail "range past the end: $(cat "$T/err")"

# --- the engine reuses one connection for sequential requests ---
out=$("$SHARDFS_BUILD/tests/s3c_bench" "$S3_ENDPOINT" "$B" many/k 2500 1 200 2>&1)
echo "$out"
conns=$(sed -n 's/.* \([0-9]*\) connections opened.*/\1/p' <<<"$out")
expect_eq "$conns" 1 "connections opened for 200 sequential GETs"
out=$("$SHARDFS_BUILD/tests/s3c_bench" "$S3_ENDPOINT" "$B" many/k 2500 8 400 2>&1)
echo "$out"
conns=$(sed -n 's/.* \([0-9]*\) connections opened.*/\1/p' <<<"$out")
[ "$conns" -ge 1 ] && [ "$conns" -le 8 ] ||
	fail "400 GETs at concurrency 8 opened $conns connections (want 1..8)"
pass "ls and cat"
