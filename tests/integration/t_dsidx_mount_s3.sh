#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The dataset index on the real S3 server: a tree packed into four shards
# (GNU tar with a sparse file, Python's tarfile) with an index built by
# mkdsidx mounts with exactly one GET and no LIST or HEAD, shows the
# source tree merged from the shards, byte for byte; a shard overwritten
# after mount reads as EIO with one log line naming it (If-Match with the
# index's ETag), other shards keep working; a corrupt, truncated, unknown-
# version or out-of-range index fails the mount with one clear line;
# --ignore-index falls back to listing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/shards_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name dsidx)
s3_mb "$B"
on_exit s3_rb_force "$B"
sl_make_tree "$T/src"
sl_make_dataset "$T/src" "$T/data" md5
s3_put_tree "$T/data" "s3://$B/ds"

s3_put_key() { s3_put "$1" "s3://$B/ds/$2"; }
sl_dsidx_checks "s3://$B/ds" "$T/data" "$T" s3_put_key
sl_bad_index_checks "s3://$B/ds" "$T" "$T/data" s3_put_key
pass "dataset index mount (S3)"
