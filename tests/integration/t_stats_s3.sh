#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs stats on a mount of a bucket prefix: the S3 store measures its
# requests' latency, so .shardfs/stats has latency_ms numbers (in order:
# p50 <= p90 <= p99 <= max_bucket, of as many requests as were made) and
# `shardfs stats` shows them; --watch shows the GET rate of reads made
# while it runs. (t_stats_local covers the command itself.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name stats)
s3_mb "$B"
on_exit s3_rb_force "$B"
mkdir -p "$T/src"
for i in $(seq -w 1 40); do
	head -c $((1000 + 100 * 10#$i)) /dev/urandom > "$T/src/f$i"
done
s3_put_tree "$T/src" "s3://$B/ds"
MNT=$T/mnt
mc_mount "s3://$B/ds" "$MNT"
MNT=$(realpath "$MNT")

for i in $(seq -w 1 20); do
	cmp -s "$T/src/f$i" "$MNT/f$i" || fail "f$i differs"
done
"$SHARDFS_BIN" stats --json "$MNT" > "$T/s.json" || fail "stats --json"
python3 - "$T/s.json" <<'PY' || fail "latency_ms: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_ms"])' "$T/s.json")"
import json, sys
d = json.load(open(sys.argv[1]))
lat, req = d["latency_ms"], d["requests"]
total = sum(req.values())
assert req["get"] >= 20, req
assert lat["requests"] == total, (lat["requests"], total)
assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max_bucket"], lat
assert 0 < lat["mean"] <= lat["max_bucket"], lat
assert d["bytes_served"] == sum(1000 + 100 * i for i in range(1, 21)), d["bytes_served"]
PY
"$SHARDFS_BIN" stats "$MNT" > "$T/human.txt" || fail "shardfs stats"
grep -Eq '^latency   p50 [0-9.]+ m?s, p90 [0-9.]+ m?s, p99 [0-9.]+ m?s, max < [0-9.]+ m?s \(requests of all kinds: [0-9]+\)$' "$T/human.txt" ||
	fail "latency line: $(grep latency "$T/human.txt")"
# (errors: the GET of a dataset index that is not there, at mount)
grep -Eq '^requests  GET [0-9]+, LIST [0-9]+, HEAD 0, other 0; retries 0, errors [0-9]+$' "$T/human.txt" ||
	fail "requests line: $(grep '^requests' "$T/human.txt")"
grep -Eq '^          in flight 0, queued 0, connections opened [1-9][0-9]*$' "$T/human.txt" ||
	fail "connections line: $(grep 'in flight' "$T/human.txt")"

# Reads while --watch runs show up in its GET rate.
"$SHARDFS_BIN" stats --watch 0.3 "$MNT" > "$T/watch.txt" &
wpid=$!
on_exit "kill $wpid 2>/dev/null || true"
sleep 0.5
for i in $(seq 21 40); do
	cat "$MNT/f$i" > /dev/null
	sleep 0.03
done
sleep 0.7
kill -INT "$wpid"
st=0
wait "$wpid" || st=$?
expect_eq "$st" 0 "exit status of --watch after SIGINT"
grep -Eq '^rates     GET/s [1-9][0-9.]*k?, fetched [0-9.]+ [KM]?i?B/s, served [1-9][0-9.]* [KM]?i?B/s$' "$T/watch.txt" ||
	fail "no GET rate while reading: $(grep '^rates' "$T/watch.txt")"

mc_umount "$MNT"
echo "t_stats_s3: ok"
