#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reads through a mount while a proxy (tests/tools/s3proxy.py) breaks the
# server's answers: 503 SlowDown, 500, resets before and in the middle of a
# body, bodies shorter than Content-Length, stalls longer than the stall
# timeout, wrong Content-Range, 200 instead of 206, and an outage (refused
# connections). Under each, every file of a 304-file dataset is read by 8
# threads in a shuffled order, and each read must give exactly the right
# bytes or EIO; anything else (wrong bytes, a short file, another errno)
# fails the test. The per-fault runs use few attempts so that some reads do
# fail; when every answer carries a wrong Content-Range and retries are
# off, every read must fail; an outage of 3 s must be ridden out even with
# 3 attempts (refused connections do not spend them); the transient mix
# (10 % 503, 2 % resets mid-body, one 5 s outage) uses the default retry
# settings and every read must succeed.
#
# Prints a table: fault, reads, correct, EIO, other; the faults the proxy
# injected, the requests it saw and those it saw more than once (retries
# that reached it); the retries shardfs counted itself (.shardfs/stats,
# also those refused during an outage); and keeps it in
# $SHARDFS_BUILD/faults-table.txt. SHARDFS_FAULTS (a space-separated list
# of phase names) runs only those phases.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
. "$(dirname "$0")/faults_lib.sh"
s3_env

T=$(tmpdir_new)
B=$(s3_bucket_name faults)
s3_mb "$B"
on_exit s3_rb_force "$B"
fp_gen_dataset "$T/src"
s3_put_tree "$T/src" "s3://$B/ds"
NFILES=$(find "$T/src" -type f | wc -l)
# Files over 1 MiB are read with range GETs (206 answers); smaller ones
# with one plain GET of the whole object (200, no Content-Range).
NBIG=$(find "$T/src" -type f -size +1048576c | wc -l)

TABLE=$T/table
printf '%-20s %5s %7s %5s %5s %8s %8s %7s %8s %4s\n' fault reads correct EIO other \
	injected requests repeats retries secs > "$TABLE"

# phase NAME 'PROXY FAULTS' 'MOUNT OPTIONS' [OUTAGE_SECS] [EXPECT]
# EXPECT: any (right bytes or EIO), all-correct, or all-eio.
phase() {
	local name=$1 faults=$2 mopts=$3 outage=${4:-0} expect=${5:-any}
	local mnt="$T/m-$name" res="$T/$name.json" st=0 trig=-1 t0=$SECONDS
	if [ -n "${SHARDFS_FAULTS:-}" ] && [[ " $SHARDFS_FAULTS " != *" $name "* ]]; then
		return 0
	fi
	fp_start "$name" --seed 7 --stall-seconds 4
	# shellcheck disable=SC2086
	mc_mount "s3://$B/ds" "$mnt" --endpoint-url "http://127.0.0.1:$FP_PORT" \
		--log-file "$T/$name.log" $mopts
	# shellcheck disable=SC2086
	fp_ctl faults $faults
	[ "$outage" = 0 ] || trig=$((NFILES / 4))
	timeout 300 bash -c "$(declare -f fp_read_all); fp_read_all \"\$@\"" _ \
		"$mnt" "$T/src" "$res" 8 "$RANDOM" "$trig" "$FP_CTL" "outage $outage" ||
		st=$?
	[ "$st" = 0 ] || fail "$name: the readers failed or hung (exit $st)"
	fp_ctl faults
	# The engine's own retry count, when the mount publishes it.
	cp "$mnt/.shardfs/stats" "$T/$name.stats" 2> /dev/null || echo '{}' > "$T/$name.stats"
	mc_umount "$mnt"
	fp_stop
	python3 - "$res" "$FP_COUNTS" "$T/$name.stats" "$name" $((SECONDS - t0)) >> "$TABLE" <<'PY'
import json, sys
r, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
try:
    retries = str(json.load(open(sys.argv[3]))["retries"])
except (ValueError, KeyError):
    retries = "-"
print("%-20s %5d %7d %5d %5d %8d %8d %7d %8s %4s" % (
    sys.argv[4], r["reads"], r["correct"], r["eio"], r["other"],
    c["faults_total"] + c["outages"], c["total"], c["repeats"], retries,
    sys.argv[5]))
PY
	read -r reads correct eio other < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["reads"], r["correct"], r["eio"], r["other"])' "$res")
	expect_eq "$reads" "$NFILES" "$name: files read"
	if [ "$other" != 0 ]; then
		cat "$TABLE"
		python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["others"][:10]))' "$res" >&2
		fail "$name: $other reads gave neither the right bytes nor EIO"
	fi
	if [ "$expect" = ranges-eio ] && { [ "$eio" != "$NBIG" ] || [ "$correct" != $((NFILES - NBIG)) ]; }; then
		cat "$TABLE"
		fail "$name: $eio EIO for $NBIG files read by ranges, all of whose answers were wrong"
	fi
	if [ "$expect" = all-correct ] && [ "$correct" != "$NFILES" ]; then
		cat "$TABLE"
		grep -m 5 -i 'error\|fail' "$T/$name.log" >&2 || true
		fail "$name: only $correct of $NFILES reads succeeded under transient faults"
	fi
	if [ "$eio" != 0 ]; then
		grep -q 'failed' "$T/$name.log" || fail "$name: EIO without a log line"
	fi
}

FEW='--max-attempts 3'
phase 503 '503:0.2' "$FEW"
phase 500 '500:0.2' "$FEW"
phase reset-before 'reset-before:0.2' "$FEW"
phase reset-mid 'reset-mid:0.2' "$FEW"
phase short-body 'short:0.2' "$FEW"
phase stall 'stall:0.03,stall-mid:0.03' "$FEW --stall-timeout 1"
phase wrong-content-range 'bad-range:0.3' "$FEW"
phase 200-for-206 'range-200:0.5' "$FEW"
# Every range answer lies about its range, no retries: not one may be
# accepted (the whole-object GETs of small files get no range answer).
[ "$NBIG" -gt 0 ] || fail "the dataset has no file over 1 MiB"
phase wrong-range-always 'bad-range:1' '--max-attempts 1' 0 ranges-eio
# Refused connections do not spend the attempt budget: ridden out.
phase outage-3s '' "$FEW" 3 all-correct
# Default retry settings: every read must succeed.
phase transient '503:0.1,reset-mid:0.02' '' 5 all-correct
cat "$TABLE"
# Kept for reports: the last run's table in the build tree.
if [ -n "${SHARDFS_BUILD:-}" ] && [ -d "$SHARDFS_BUILD" ]; then
	cp "$TABLE" "$SHARDFS_BUILD/faults-table${SHARDFS_SANITIZER:+-$SHARDFS_SANITIZER}.txt"
fi
pass "faults: every read gave the right bytes or EIO"
