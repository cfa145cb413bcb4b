#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The read path's modes, each read by 8 concurrent processes in a shuffled
# order, every file compared with its source: a packed dataset in
# whole-shard mode (one GET per shard, a second pass from memory), in
# member mode (a sample's files in one GET), both with a cache smaller
# than the dataset (eviction), and the loose objects with the default and
# a tiny cache. Then the disk cache: one mount per cache directory, a
# remount reads everything from disk with no GET, and an object whose
# ETag changed is fetched again, never served from the old entry.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/shards_lib.sh"
s3_env

READER=$SHARDFS_SRC/scripts/bench/reader.py
T=$(tmpdir_new)
B=$(s3_bucket_name cache)
s3_mb "$B"
on_exit s3_rb_force "$B"

# 30 classes x 20 samples (an image and a label each), a few files of
# 3 MiB (read sequentially), empty files.
python3 - "$T/src" <<'PY'
import os, random, sys
root, rng = sys.argv[1], random.Random(6)
for c in range(30):
    d = os.path.join(root, "c%02d" % c)
    os.makedirs(d)
    for s in range(20):
        with open(os.path.join(d, "%04d.jpg" % s), "wb") as f:
            f.write(rng.randbytes(rng.randrange(1, 40000)))
        with open(os.path.join(d, "%04d.cls" % s), "w") as f:
            f.write("%d\n" % c)
os.makedirs(os.path.join(root, "big"))
for i in range(4):
    with open(os.path.join(root, "big", "b%d.bin" % i), "wb") as f:
        f.write(rng.randbytes(3 << 20))
for i in range(3):
    open(os.path.join(root, "empty%d" % i), "w").close()
PY
(cd "$T/src" && find . -type f | sed 's|^\./||' | sort) > "$T/all"
grep -v '^big/' "$T/all" > "$T/small"
NFILES=$(wc -l < "$T/all")
NSAMPLES=600
s3_put_tree "$T/src" "s3://$B/loose"
"$SHARDFS_BIN" pack --shard-size 2M "$T/src" "s3://$B/packed" > "$T/pack.out" ||
	fail "pack failed: $(cat "$T/pack.out")"
# The same packing into a directory, to count the shards that hold data
# (one may hold only the empty files, which no read fetches).
"$SHARDFS_BIN" pack --shard-size 2M "$T/src" "$T/packed" > /dev/null ||
	fail "local pack failed"
NSHARDS=$(python3 - "$T/packed" <<'PY'
import glob, sys, tarfile
print(sum(1 for p in glob.glob(sys.argv[1] + "/*.tar")
          if any(m.size for m in tarfile.open(p) if m.isfile())))
PY
)
[ "$NSHARDS" -ge 8 ] || fail "only $NSHARDS shards with data"
DATA_BYTES=$(du -sb --apparent-size "$T/src" | cut -f1)

# read_all MNT LIST SEED: every file of LIST through 8 processes, checked.
read_all() {
	python3 "$READER" "$1" "$2" 8 "$3" --verify "$T/src" > "$T/reader.out" 2>&1 ||
		fail "reading $1 ($4): $(tail -n 5 "$T/reader.out")"
}
cache() { sl_stat "$1" cache "$2"; }

# ---- packed, whole-shard mode (auto: the dataset fits the cache) ----
M=$T/m
mc_mount "s3://$B/packed" "$M" --log-file "$T/shard.log" --log-level info
read_all "$M" "$T/all" 1 "whole-shard mode"
# One GET for the index, one per shard (every shard is under 8 MiB).
expect_eq "$(sl_stat "$M" requests get)" $((1 + NSHARDS)) "GETs in whole-shard mode"
expect_eq "$(cache "$M" shard_fetches)" "$NSHARDS" "shards fetched whole"
expect_eq "$(sl_stat "$M" requests head)" 0 "HEADs"
mc_drop_caches
read_all "$M" "$T/all" 2 "whole-shard mode, second pass"
expect_eq "$(sl_stat "$M" requests get)" $((1 + NSHARDS)) "GETs after a second pass"
[ "$(cache "$M" hits)" -gt 0 ] || fail "no cache hits on the second pass"
mc_umount "$M"
pass "whole-shard mode: $NFILES files, $((1 + NSHARDS)) GETs, second pass from memory"

# ---- packed, member mode: a sample's two files in one GET ----
mc_mount "s3://$B/packed" "$M" --prefetch=member
read_all "$M" "$T/small" 3 "member mode"
# Each sample's .cls (a few bytes, next to its .jpg) comes with the .jpg.
expect_eq "$(sl_stat "$M" requests get)" $((1 + NSAMPLES)) "GETs in member mode"
expect_eq "$(cache "$M" shard_fetches)" 0 "shards fetched whole in member mode"
read_all "$M" "$T/all" 4 "member mode, the big files too"
mc_umount "$M"
pass "member mode: $NSAMPLES samples, one GET each"

# ---- a cache smaller than the dataset: eviction, still the right bytes ----
for args in "--prefetch=shard --cache-size 5M" "--prefetch=member --cache-size 1M"; do
	# shellcheck disable=SC2086
	mc_mount "s3://$B/packed" "$M" $args
	read_all "$M" "$T/all" 5 "$args"
	mc_drop_caches
	read_all "$M" "$T/all" 6 "$args, second pass"
	budget=$(cache "$M" budget_bytes)
	[ "$(cache "$M" evictions)" -gt 0 ] || fail "$args: nothing evicted"
	[ "$(cache "$M" held_bytes)" -le "$budget" ] || fail "$args: $(cache "$M" held_bytes) bytes held, budget $budget"
	mc_umount "$M"
done
pass "caches smaller than the dataset ($DATA_BYTES bytes): evictions, right bytes"

# ---- loose objects ----
for args in "" "--cache-size 1M"; do
	# shellcheck disable=SC2086
	mc_mount "s3://$B/loose" "$M" $args
	read_all "$M" "$T/small" 7 "loose $args"
	# A small object is one GET of all of it; empty ones need none (and
	# the mount asked for a dataset index: one more GET).
	expect_eq "$(sl_stat "$M" requests get)" $((1 + NFILES - 4 - 3)) "GETs for the small loose objects ($args)"
	expect_eq "$(sl_stat "$M" requests head)" 0 "HEADs ($args)"
	read_all "$M" "$T/all" 8 "loose $args, the big files too"
	mc_umount "$M"
done
pass "loose objects: one GET per object, no HEAD"

# ---- the disk cache ----
C=$T/dcache
mc_mount "s3://$B/packed" "$M" --prefetch=member --cache-dir "$C" --disk-cache-size 64M
read_all "$M" "$T/all" 9 "disk cache, first mount"
# One mount per cache directory.
mkdir -p "$T/m2"
if "$SHARDFS_BIN" mount --prefetch=member --cache-dir "$C" --disk-cache-size 64M \
	"s3://$B/packed" "$T/m2" > "$T/out" 2>&1; then
	MC_MOUNTS+=("$(realpath "$T/m2")")
	fail "a second mount on a cache directory in use succeeded"
fi
grep -q "in use" "$T/out" || fail "second mount: $(cat "$T/out")"
mc_umount "$M"
mc_mount "s3://$B/packed" "$M" --prefetch=member --cache-dir "$C" --disk-cache-size 64M
read_all "$M" "$T/small" 10 "disk cache, after a remount"
expect_eq "$(sl_stat "$M" requests get)" 1 "GETs after a remount (the index only)"
expect_eq "$(cache "$M" disk_hits)" "$NSAMPLES" "disk hits after a remount"
# The big files' windows depend on how the kernel's reads arrive, so a
# window may not match what is on disk: right bytes, GETs not counted.
read_all "$M" "$T/all" 13 "disk cache, after a remount, the big files too"
mc_umount "$M"
pass "disk cache: survives a remount, one mount per directory"

# An object replaced between two mounts: its new bytes, from the server.
mc_mount "s3://$B/loose" "$M" --cache-dir "$C" --disk-cache-size 64M
read_all "$M" "$T/small" 11 "loose, disk cache"
mc_umount "$M"
head -c 5000 /dev/urandom > "$T/new.jpg"
s3_put "$T/new.jpg" "s3://$B/loose/c03/0007.jpg"
cp "$T/new.jpg" "$T/src/c03/0007.jpg"
mc_mount "s3://$B/loose" "$M" --cache-dir "$C" --disk-cache-size 64M
read_all "$M" "$T/small" 12 "loose, disk cache, one object replaced"
expect_eq "$(sl_stat "$M" requests get)" 2 "GETs after the remount (the index probe, the replaced object)"
cmp "$M/c03/0007.jpg" "$T/new.jpg" || fail "the replaced object reads old bytes"
mc_umount "$M"
pass "disk cache: an object with a new ETag is fetched again"
