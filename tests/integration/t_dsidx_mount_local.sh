#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The dataset index on a local directory: the same checks as
# t_dsidx_mount_s3 (one GET to mount, no listing, the merged tree byte for
# byte, a replaced shard reads as EIO, bad indexes fail the mount,
# --ignore-index lists), with the ETags of the local store.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/shards_lib.sh"

T=$(tmpdir_new)
sl_make_tree "$T/src"
mkdir -p "$T/store"
sl_make_dataset "$T/src" "$T/data" none
# The local store's ETags name the file's inode: index the copies that
# the mount will read.
cp "$T/data"/shard-*.tar "$T/store/"
"$SHARDFS_BUILD/tests/mkdsidx" -C "$T/store" --etag local \
	"$T/store/shardfs.idx" shard-0.tar shard-1.tar shard-2.tar \
	shard-3.tar || fail "mkdsidx failed"
cp "$T/store/shardfs.idx" "$T/data/shardfs.idx"

local_put() { cp "$1" "$T/store/.tmp.$$" && mv "$T/store/.tmp.$$" "$T/store/$2"; }
sl_dsidx_checks "$T/store" "$T/data" "$T" local_put
sl_bad_index_checks "$T/store" "$T" "$T/data" local_put
pass "dataset index mount (local)"
