#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tar shards as directories on the real S3 server: shards written by GNU
# tar (gnu, posix, ustar, with a sparse file) and Python's tarfile (GNU,
# pax) show exactly what tar -x extracts (names, types, sizes, bytes, link
# targets), read with range GETs under If-Match; damaged shards show the
# members before the damage; a deleted shard answers EIO, logged once; a
# shard overwritten after indexing reads as EIO, logged once; the
# shard-index cache; --tar=file shows the raw tar bytes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/shards_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name tar)
s3_mb "$B"
on_exit s3_rb_force "$B"
sl_make_tree "$T/src"
sl_make_shards "$T/src" "$T/data" "$T/ext"
sl_make_bad "$T/data" "$T/ext"
mkdir -p "$T/data/sub"
cp "$T/data/gnu.tar" "$T/data/sub/inner.tar"
cp "$T/data/zero.tar" "$T/data/gone.tar"
echo plain > "$T/data/notes.txt"
s3_put_tree "$T/data" "s3://$B/tars"

s3_rm_key() { s3_rm "s3://$B/tars/$1"; }
s3_put_key() { s3_put "$1" "s3://$B/tars/$2"; }
sl_tar_mount_checks "s3://$B/tars" "$T/data" "$T" s3_rm_key s3_put_key

# --prefetch=member: a member read is a range GET of exactly its bytes:
# reading one 100000-byte member costs one GET of 100000 bytes, and
# reading it again (out of the kernel's page cache) costs nothing.
mc_mount "s3://$B/tars" "$T/m" --no-index-cache --prefetch=member
ls "$T/m/posix.tar/big" > /dev/null
g0=$(sl_stat "$T/m" requests get)
b0=$(sl_stat "$T/m" bytes_fetched)
cat "$T/m/posix.tar/big/100k.bin" > /dev/null
expect_eq "$(($(sl_stat "$T/m" requests get) - g0))" 1 "GETs to read a 100000-byte member"
expect_eq "$(($(sl_stat "$T/m" bytes_fetched) - b0))" 100000 "bytes fetched for it"
mc_drop_caches
cmp "$T/m/posix.tar/big/100k.bin" "$T/ext/posix.tar/big/100k.bin" || fail "100k.bin differs"
expect_eq "$(($(sl_stat "$T/m" requests get) - g0))" 1 "GETs after reading it again"
mc_umount "$T/m"

# Whole-shard mode (the default when the shards fit the cache): the first
# member read fetches the whole shard (one range: it is under 8 MiB), and
# every other member of it is then read from memory.
mc_mount "s3://$B/tars" "$T/m" --no-index-cache
ls "$T/m/posix.tar/big" > /dev/null
g0=$(sl_stat "$T/m" requests get)
b0=$(sl_stat "$T/m" bytes_fetched)
cat "$T/m/posix.tar/big/100k.bin" > /dev/null
expect_eq "$(($(sl_stat "$T/m" requests get) - g0))" 1 "GETs for the first member (whole shard)"
expect_eq "$(($(sl_stat "$T/m" bytes_fetched) - b0))" "$(stat -c %s "$T/data/posix.tar")" "bytes fetched: the whole shard"
sl_compare "$T/m/posix.tar" "$T/ext/posix.tar" "posix.tar in whole-shard mode"
expect_eq "$(($(sl_stat "$T/m" requests get) - g0))" 1 "GETs after reading every member"
mc_umount "$T/m"
pass "tar shards as directories (S3)"
