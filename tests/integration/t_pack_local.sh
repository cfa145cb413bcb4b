#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs pack into a local directory: the 10,800-file round trip (GNU tar
# and Python's tarfile read every shard, GNU tar's extraction equals the
# source with diff -r, modes and mtimes; samples never split), the same
# bytes on a second run, a seeded shuffle, a crash and --resume, refusing
# to overwrite, --overwrite with another layout, and the mount round trip.
set -euo pipefail
[ -w /dev/shm ] && export TMPDIR=/dev/shm # see pack_lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/pack_lib.sh"

T=$(tmpdir_new)
SH=$SHARDFS_BIN
OPTS=(--shard-size 4M --part-size 5M --memory 32M)
pk_gen_tree "$T/src"
n=$(find "$T/src" -type f | wc -l)
min=10000
[ -z "${SHARDFS_SANITIZER:-}" ] || min=2000 # pk_gen_tree makes fewer
[ "$n" -ge "$min" ] || fail "generated only $n files"

# --- the round trip ---
"$SH" pack "${OPTS[@]}" "$T/src" "$T/out" > "$T/summary" || fail "pack failed"
grep -Eq "^shardfs pack: $n files, [0-9.]+ MB, [0-9]+ shards \(0 already stored\) in [0-9.]+ s: [0-9.]+ MB/s, [0-9]+ files/s\$" "$T/summary" ||
	fail "summary line: $(cat "$T/summary")"
[ -s "$T/out/shardfs.idx" ] || fail "no shardfs.idx"
nshards=$(pk_shards "$T/out" | wc -l)
[ "$nshards" -ge 10 ] || fail "only $nshards shards"
ls -a "$T/out" | grep -q '^\.shardfs-tmp' && fail "temporary files left in DEST"
members=$(pk_check_tars "$T/out")
want=$(find "$T/src" -mindepth 1 | wc -l)
expect_eq "$members" "$want" "members in all shards"
pk_check_samples "$T/out"
# Shards stay within --shard-size unless one sample is larger.
/usr/bin/python3 - "$T/out" <<'PY' || fail "a shard is too large"
import glob, os, sys, tarfile
for t in glob.glob(sys.argv[1] + "/shard-*.tar"):
    if os.path.getsize(t) > 4 << 20:
        with tarfile.open(t) as tf:
            samples = {m.name.split(".")[0] for m in tf if not m.isdir()}
        assert len(samples) == 1, (t, samples)
PY
pk_extract "$T/out" "$T/x"
pk_compare "$T/src" "$T/x" tar
rm -rf "$T/x"

# --- shard names spread over prefixes ---
"$SH" pack --shard-size 4M --shard-name '{hash}/part-{n:3}.tar' "$T/src/big" "$T/hashed" > /dev/null ||
	fail "pack with a {hash} pattern failed"
find "$T/hashed" -name '*.tar' | sed "s#^$T/hashed/##" | sort > "$T/names"
grep -Evq '^[0-9a-f]{4}/part-[0-9]{3}\.tar$' "$T/names" && fail "shard names: $(cat "$T/names")"
[ "$(cut -c1-4 "$T/names" | sort -u | wc -l)" -ge 5 ] || fail "keys do not spread: $(cat "$T/names")"
mkdir "$T/hx"
find "$T/hashed" -name '*.tar' -exec tar -xf {} -C "$T/hx" \;
diff -r "$T/src/big" "$T/hx" || fail "{hash}-named shards differ"
rm -rf "$T/hashed" "$T/hx"

# --- deterministic: the same tree packs to the same bytes ---
"$SH" pack "${OPTS[@]}" "$T/src" "$T/out2" > /dev/null || fail "second pack failed"
for f in $(pk_shards "$T/out"); do
	cmp -s "$T/out/$f" "$T/out2/$f" || fail "$f differs between two runs"
done
expect_eq "$(pk_shards "$T/out2" | wc -l)" "$nshards" "shards of the second run"
rm -rf "$T/out2"

# --- a seeded shuffle: another order, the same members, samples whole,
# the same bytes for the same seed ---
"$SH" pack "${OPTS[@]}" --shuffle-seed 7 "$T/src" "$T/s1" > /dev/null || fail "shuffled pack failed"
"$SH" pack "${OPTS[@]}" --shuffle-seed 7 "$T/src" "$T/s2" > /dev/null || fail "shuffled pack failed"
for f in $(pk_shards "$T/s1"); do cmp -s "$T/s1/$f" "$T/s2/$f" || fail "seeded $f differs"; done
cmp -s "$T/s1/shard-000000.tar" "$T/out/shard-000000.tar" && fail "the shuffle did not change the order"
pk_check_samples "$T/s1"
expect_eq "$(pk_check_tars "$T/s1")" "$want" "members of the shuffled shards"
pk_same_members "$T/out" "$T/s1"
rm -rf "$T/s1" "$T/s2"

# --- refusing, --resume after a crash, --overwrite ---
st=0
"$SH" pack "${OPTS[@]}" "$T/src" "$T/out" 2> "$T/err" || st=$?
expect_eq "$st" 1 "exit status of a pack into an existing dataset"
grep -q 'already holds a dataset.*--overwrite.*--resume' "$T/err" || fail "refusal: $(cat "$T/err")"

st=0
SHARDFS_PACK_TEST_CRASH_AFTER=5 "$SH" pack "${OPTS[@]}" "$T/src" "$T/c" > /dev/null 2>&1 || st=$?
expect_eq "$st" 137 "exit status of a pack killed after 5 shards"
[ ! -e "$T/c/shardfs.idx" ] || fail "an index after a crash"
expect_eq "$(grep -c '\.tar ' "$T/c/shardfs.pack-state")" 5 "shards in the state after the crash"
"$SH" pack "${OPTS[@]}" --resume "$T/src" "$T/c" > "$T/summary" || fail "--resume failed"
grep -q "(5 already stored)" "$T/summary" || fail "resume summary: $(cat "$T/summary")"
for f in $(pk_shards "$T/out"); do
	cmp -s "$T/out/$f" "$T/c/$f" || fail "$f differs after --resume"
done
# A file changed since: only its shard is packed again.
F=$T/src/train/cls01/00010.jpg
was=$(stat -c %Y "$F")
touch -d '2001-01-01' "$F"
"$SH" pack "${OPTS[@]}" --resume "$T/src" "$T/c" > "$T/summary" || fail "--resume failed"
grep -q "($((nshards - 1)) already stored)" "$T/summary" || fail "resume summary: $(cat "$T/summary")"
touch -d "@$was" "$F"
[ -s "$T/c/shardfs.idx" ] || fail "no index after --resume"
rm -rf "$T/c"

# --overwrite with a larger shard size: fewer shards, the old extra ones
# removed, the index rewritten.
mkdir "$T/before"
cp "$T/out"/shard-*.tar "$T/before/"
"$SH" pack --shard-size 32M --overwrite "$T/src" "$T/out" > /dev/null || fail "--overwrite failed"
n2=$(pk_shards "$T/out" | wc -l)
[ "$n2" -lt "$nshards" ] || fail "--overwrite left $n2 shards (had $nshards)"
pk_same_members "$T/before" "$T/out"
rm -rf "$T/before"

# --- the mount shows the packed tree ---
rc=0
pk_mount_roundtrip "$T/src" "$T/out" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || fail "mount round trip"
pass "round trip of $n files in $nshards shards"
