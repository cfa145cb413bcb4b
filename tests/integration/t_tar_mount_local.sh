#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tar shards as directories, on a local directory: shards written by GNU
# tar (gnu, posix, ustar, with a sparse file) and Python's tarfile (GNU,
# pax) show exactly what tar -x extracts (names, types, sizes, bytes, link
# targets); damaged shards show the members before the damage; a shard
# that cannot be read answers EIO and is logged once; a shard replaced
# after indexing reads as EIO; the shard-index cache; --tar=file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/shards_lib.sh"

T=$(tmpdir_new)
sl_make_tree "$T/src"
sl_make_shards "$T/src" "$T/data" "$T/ext"
sl_make_bad "$T/data" "$T/ext"
mkdir -p "$T/data/sub"
cp "$T/data/gnu.tar" "$T/data/sub/inner.tar"
cp "$T/data/zero.tar" "$T/data/gone.tar"
echo plain > "$T/data/notes.txt"

local_rm() { rm -f "$T/data/$1"; }
local_put() { cp "$1" "$T/data/.tmp.$$" && mv "$T/data/.tmp.$$" "$T/data/$2"; }
sl_tar_mount_checks "$T/data" "$T/data" "$T" local_rm local_put

# --help and usage errors for the options.
for o in --tar=dir --ignore-index --cache-dir --no-index-cache; do
	"$SHARDFS_BIN" mount --help | grep -q -- "$o" || fail "mount --help lacks $o"
done
st=0
"$SHARDFS_BIN" mount --tar=zip "$T/data" "$T/m" 2> "$T/err" || st=$?
expect_eq "$st" 2 "exit status of --tar=zip ($(cat "$T/err"))"
grep -q -- "--tar wants dir or file" "$T/err" || fail "--tar=zip: $(cat "$T/err")"
st=0
"$SHARDFS_BIN" mount --cache-dir /proc/version "$T/data" "$T/m" 2> "$T/err" || st=$?
expect_eq "$st" 1 "exit status with an unusable --cache-dir ($(cat "$T/err"))"
! mc_is_mounted "$T/m" || fail "mounted despite an unusable --cache-dir"
pass "tar shards as directories (local)"
