#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs stats on a mount of a local directory: the GET count and the
# bytes served follow what was read (human output and --json, which is
# valid JSON with the version 2 keys); --watch prints a block per sample
# and ends with exit 0 on SIGINT and SIGTERM; the errors (usage, not a
# directory, not a mount, invalid JSON, a dead mount) are one line on
# stderr and a non-zero exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"

T=$(tmpdir_new)
mkdir -p "$T/src/sub"
for i in 1 2 3; do
	head -c 25600 /dev/urandom > "$T/src/f$i"
done
head -c 25600 /dev/urandom > "$T/src/sub/f4"
MNT=$T/mnt
mc_mount "$T/src" "$MNT"
MNT=$(realpath "$MNT")

# jv FILE KEY...: a value of the JSON in FILE ("requests get").
jv() {
	python3 - "$@" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[k]
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)
PY
}

# ---- counters follow the reads ----
"$SHARDFS_BIN" stats --json "$MNT" > "$T/before.json"
python3 -m json.tool "$T/before.json" > /dev/null || fail "--json is not JSON: $(head -c 300 "$T/before.json")"
g0=$(jv "$T/before.json" requests get)
# The file is padded with spaces to a page; --json prints the object only.
python3 -c 'import sys; s = open(sys.argv[1]).read(); sys.exit(not s.endswith("}\n"))' "$T/before.json" ||
	fail "--json does not end with '}' and a newline: $(tail -c 20 "$T/before.json" | od -c | head -n 2)"
expect_eq "$(jv "$T/before.json" bytes_served)" 0 "bytes served before any read"
for f in f1 f2 f3 sub/f4; do
	cmp -s "$T/src/$f" "$MNT/$f" || fail "$f differs through the mount"
done
"$SHARDFS_BIN" stats --json "$MNT" > "$T/after.json"
python3 -m json.tool "$T/after.json" > /dev/null || fail "--json is not JSON after reads"
g1=$(jv "$T/after.json" requests get)
expect_eq "$((g1 - g0))" 4 "GETs to read 4 files of 25 KiB"
expect_eq "$(jv "$T/after.json" bytes_served)" 102400 "bytes served"
expect_eq "$(jv "$T/after.json" reads bytes_served)" 102400 "reads.bytes_served"
expect_eq "$(jv "$T/after.json" version)" 2 "version"
expect_eq "$(jv "$T/after.json" latency_ms)" null "latency_ms of a local directory"

# The version 2 keys are there, with numbers (hit_rate: a decimal now
# that there were reads); the version 1 keys are kept.
python3 - "$T/after.json" <<'PY' || fail "keys of .shardfs/stats"
import json, sys
d = json.load(open(sys.argv[1]))
cache = ["hits", "misses", "joined", "hit_rate", "budget_bytes", "held_bytes",
         "extents", "evictions", "evicted_bytes", "shard_fetches",
         "prefetch_bytes", "bytes_fetched", "disk_hits", "disk_bytes_read",
         "inflight_bytes"]
bad = [k for k in cache if not isinstance(d["cache"].get(k), (int, float))
       or isinstance(d["cache"].get(k), bool)]
v1 = {"requests": ["get", "list", "head", "put", "other"],
      "reads": ["calls", "served", "bytes_served", "errors", "requests",
                "joined", "in_flight"],
      "namespace": ["inodes", "dirs_listed"],
      "shards": ["indexed", "scanned", "from_cache", "damaged", "failed"],
      "dataset_index": ["loaded", "bytes", "shards", "dirs", "members"]}
bad += ["%s.%s" % (o, k) for o, ks in v1.items() for k in ks if k not in d[o]]
bad += [k for k in ["uptime_seconds", "retries", "errors", "bytes_fetched",
                    "bytes_sent", "bytes_served", "in_flight", "queued",
                    "connections_opened", "latency_ms"] if k not in d]
if not 0 <= d["cache"]["hit_rate"] <= 1:
    bad.append("hit_rate %r" % d["cache"]["hit_rate"])
if bad:
    sys.exit("missing or wrong: %s" % ", ".join(bad))
PY

# The same numbers for people: counts below 1000 are exact, 102400
# bytes are 100 KiB.
"$SHARDFS_BIN" stats "$MNT" > "$T/human.txt" || fail "shardfs stats failed"
grep -q "^$MNT: shardfs mount, up " "$T/human.txt" || fail "header: $(head -n 1 "$T/human.txt")"
grep -q "^requests  GET $g1, LIST [0-9]*, HEAD 0, other 0; retries 0, errors [0-9]*$" "$T/human.txt" ||
	fail "requests line: $(grep requests "$T/human.txt")"
grep -q "^data      fetched [0-9.]* [KMG]*i*B, served 100 KiB, fetched per byte served [0-9.]*$" "$T/human.txt" ||
	fail "data line: $(grep '^data' "$T/human.txt")"
grep -q "^cache     hit rate [0-9.]*%: hits [0-9.k]*, misses [0-9.k]*, joined [0-9.k]*$" "$T/human.txt" ||
	fail "cache line: $(grep '^cache' "$T/human.txt")"
grep -q "^latency   not measured by this store$" "$T/human.txt" || fail "latency line"
! grep -q '^rates' "$T/human.txt" || fail "rates without --watch"

# ---- --watch ----
st=0
timeout -s INT --preserve-status 1.5 "$SHARDFS_BIN" stats --watch 0.2 "$MNT" > "$T/watch.txt" || st=$?
expect_eq "$st" 0 "exit status of --watch 0.2 after SIGINT"
blocks=$(grep -c '^requests  ' "$T/watch.txt" || true)
[ "$blocks" -ge 3 ] || fail "--watch 0.2 for 1.5 s printed $blocks blocks"
expect_eq "$(grep -c '^$' "$T/watch.txt" || true)" "$((blocks - 1))" "blank lines between $blocks blocks"
expect_eq "$(grep -c '^rates     GET/s -, fetched -/s, served -/s' "$T/watch.txt")" 1 "rates of the first block"
[ "$(grep -c '^rates     GET/s [0-9.]*[kM]*, fetched [0-9.]* [KMG]*i*B/s, served [0-9.]* [KMG]*i*B/s$' "$T/watch.txt")" = "$((blocks - 1))" ] ||
	fail "rates lines: $(grep '^rates' "$T/watch.txt" | sort | uniq -c)"
! grep -q $'\033' "$T/watch.txt" || fail "--watch cleared the screen of a file"

# SIGTERM, --json, the options after MOUNTPOINT, --watch=SECONDS.
st=0
timeout -s TERM --preserve-status 1 "$SHARDFS_BIN" stats "$MNT" --json --watch=0.25 > "$T/watch.json" || st=$?
expect_eq "$st" 0 "exit status of --watch=0.25 --json after SIGTERM"
python3 - "$T/watch.json" <<'PY' || fail "--watch --json: not JSON objects separated by blank lines"
import json, sys
parts = open(sys.argv[1]).read().split("\n\n")
objs = [json.loads(p) for p in parts if p.strip()]
assert len(objs) >= 2, len(objs)
assert all(o["version"] == 2 for o in objs)
assert objs[-1]["uptime_seconds"] > objs[0]["uptime_seconds"]
PY

# --watch without SECONDS takes the default (1 s), not MOUNTPOINT.
st=0
timeout -s INT --preserve-status 1.5 "$SHARDFS_BIN" stats --watch "$MNT" > "$T/watch1.txt" || st=$?
expect_eq "$st" 0 "exit status of --watch MNT"
blocks=$(grep -c '^requests  ' "$T/watch1.txt" || true)
[ "$blocks" -ge 1 ] && [ "$blocks" -le 3 ] || fail "--watch (1 s) for 1.5 s printed $blocks blocks"

# ---- errors ----
# expect_err STATUS PATTERN ARGS...: shardfs stats ARGS fails with STATUS
# and one line (usage errors: the line and a hint) matching PATTERN.
expect_err() {
	local want=$1 pat=$2 st=0 lines
	shift 2
	"$SHARDFS_BIN" stats "$@" > "$T/err.out" 2> "$T/err.txt" || st=$?
	expect_eq "$st" "$want" "exit status of shardfs stats $*"
	[ ! -s "$T/err.out" ] || fail "shardfs stats $*: wrote to stdout: $(head -n 3 "$T/err.out")"
	lines=$(wc -l < "$T/err.txt")
	if [ "$want" = 2 ]; then
		expect_eq "$lines" 2 "stderr lines of shardfs stats $*"
		grep -q "^Try 'shardfs stats --help'.$" "$T/err.txt" || fail "no hint: $(cat "$T/err.txt")"
	else
		expect_eq "$lines" 1 "stderr lines of shardfs stats $*"
	fi
	grep -qF -- "$pat" "$T/err.txt" || fail "shardfs stats $*: got '$(head -n 1 "$T/err.txt")', want '$pat'"
}
expect_err 2 "usage error: expected MOUNTPOINT"
expect_err 2 "usage error: expected one MOUNTPOINT" "$MNT" "$T"
expect_err 2 "usage error: bad option '--bogus'" --bogus "$MNT"
expect_err 2 "usage error: bad option '-x'" -x "$MNT"
expect_err 2 "usage error: bad option '--json=1'" --json=1 "$MNT"
expect_err 2 "SECONDS > 0" --watch 0 "$MNT"
expect_err 2 "SECONDS > 0" --watch=-1 "$MNT"
expect_err 2 "SECONDS > 0" --watch=1s "$MNT"
expect_err 2 "SECONDS > 0" --watch 1.2.3 "$MNT"
expect_err 1 "$T/nope: No such file or directory" "$T/nope"
expect_err 1 "$T/src/f1: not a directory" "$T/src/f1"
expect_err 1 "$T/src is not a shardfs mount" "$T/src"
expect_err 1 "$MNT/sub is not a shardfs mount" "$MNT/sub"
mkdir -p "$T/fake/.shardfs"
printf '{"version": 2, "requests": {"get": 3' > "$T/fake/.shardfs/stats"
expect_err 1 "$T/fake/.shardfs/stats: not valid JSON (byte 36: expected ',' or '}', found the end)" "$T/fake"
printf '[1, 2]' > "$T/fake/.shardfs/stats"
expect_err 1 "not shardfs statistics" "$T/fake"
printf '' > "$T/fake/.shardfs/stats"
expect_err 1 "not valid JSON" --json "$T/fake"
expect_err 1 "not valid JSON" --watch 0.1 "$T/fake"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' > "$T/fake/.shardfs/stats"
expect_err 1 "larger than 1048576 bytes" "$T/fake"
rm "$T/fake/.shardfs/stats"
mkdir "$T/fake/.shardfs/stats"
expect_err 1 "$T/fake/.shardfs/stats: not a regular file" "$T/fake"
rmdir "$T/fake/.shardfs/stats"
mkfifo "$T/fake/.shardfs/stats"
st=0
timeout 10 "$SHARDFS_BIN" stats "$T/fake" 2> "$T/err.txt" || st=$?
expect_eq "$st" 1 "exit status of shardfs stats with a FIFO for .shardfs/stats"
grep -qF "$T/fake/.shardfs/stats: not a regular file" "$T/err.txt" || fail "FIFO: $(cat "$T/err.txt")"
rm "$T/fake/.shardfs/stats"

# An older daemon's JSON (version 1: no cache, no latency): what is
# missing shows as "-".
printf '{"version": 1, "uptime_seconds": 5.5, "requests": {"get": 7, "list": 1, "head": 0, "put": 0, "other": 0}}\n' > "$T/old.json"
cp "$T/old.json" "$T/fake/.shardfs/stats"
"$SHARDFS_BIN" stats "$T/fake" > "$T/old.txt" || fail "stats of a version 1 file"
grep -q "^requests  GET 7, LIST 1, HEAD 0, other 0; retries -, errors -$" "$T/old.txt" ||
	fail "version 1: $(cat "$T/old.txt")"
grep -q "^latency   -$" "$T/old.txt" || fail "version 1 latency: $(grep latency "$T/old.txt")"
"$SHARDFS_BIN" stats --json "$T/fake" | cmp -s - "$T/old.json" || fail "--json is not the file as read"

# A dead mount: the daemon was killed.
mc_mount "$T/src" "$T/dead"
pid=$(mc_daemon_pid "$(realpath "$T/dead")")
[ -n "$pid" ] || fail "no daemon for $T/dead"
kill -9 "$pid"
for _ in $(seq 50); do
	[ -z "$(mc_daemon_pid "$(realpath "$T/dead")")" ] && break
	sleep 0.1
done
expect_err 1 "$T/dead: the shardfs daemon is gone (Transport endpoint is not connected); run shardfs umount" "$T/dead"
expect_err 1 "the shardfs daemon is gone" --watch 0.2 "$T/dead"
timeout 60 "$SHARDFS_BIN" umount "$T/dead" || fail "umount of the dead mount"

# --help tells the truth.
"$SHARDFS_BIN" stats --help > "$T/help.txt" || fail "stats --help"
for w in '--watch \[SECONDS\]' '--json' 'MOUNTPOINT' 'SIGINT' 'KiB'; do
	grep -q -- "$w" "$T/help.txt" || fail "stats --help does not mention $w"
done
"$SHARDFS_BIN" --help | grep -q '^  stats ' || fail "shardfs --help does not list stats"

mc_umount "$MNT"
echo "t_stats_local: ok"
