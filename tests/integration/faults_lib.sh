# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers for tests that put tests/tools/s3proxy.py between shardfs and the
# test S3 server; sourced after lib.sh and mount_checks.sh.
#
#   fp_start NAME [PROXY ARGS...]   start a proxy in front of $S3_ENDPOINT;
#                                   sets FP_PORT, FP_PID, FP_COUNTS, FP_CTL
#                                   (killed on exit)
#   fp_ctl CMD...                   run one control line in the last proxy
#                                   and wait until it has been applied
#   fp_stop                         stop the last proxy (writes FP_COUNTS)
#   fp_count JSONPATH               a number from FP_COUNTS, e.g.
#                                   requests.GET, faults_total, repeats
#   fp_gen_dataset DIR              300 files of 1..64 KiB in d0..d2 and
#                                   4 files of 1..3 MiB in big/
#   fp_read_all MNT EXPECTED OUT [THREADS] [SEED] [TRIGGER_AFTER CTL LINE]
#                                   read every file of EXPECTED through MNT
#                                   in a shuffled order by THREADS threads;
#                                   OUT gets JSON {reads, correct, eio,
#                                   other, others: [...]}. After
#                                   TRIGGER_AFTER files, LINE is written to
#                                   the control file CTL (e.g. an outage).

FP_TOOL=${SHARDFS_SRC:?}/tests/tools/s3proxy.py

fp_start() {
	local name=$1 dir i
	shift
	dir=$(tmpdir_new)
	FP_COUNTS=$dir/$name.counts.json
	FP_CTL=$dir/$name.ctl
	FP_LOG=$dir/$name.log
	python3 "$FP_TOOL" --upstream "$S3_ENDPOINT" --port-file "$dir/port" \
		--counts "$FP_COUNTS" --control "$FP_CTL" --log "$FP_LOG" \
		--max-lifetime 900 "$@" &
	FP_PID=$!
	on_exit "kill $FP_PID 2>/dev/null; wait $FP_PID 2>/dev/null || true"
	for i in $(seq 400); do
		[ -s "$dir/port" ] && break
		kill -0 "$FP_PID" 2>/dev/null || fail "s3proxy $name exited at start"
		sleep 0.05
	done
	[ -s "$dir/port" ] || fail "s3proxy $name did not start"
	FP_PORT=$(cat "$dir/port")
}

fp_ctl() {
	local i
	rm -f "$FP_CTL.done"
	printf '%s\n' "$*" > "$FP_CTL.tmp"
	mv "$FP_CTL.tmp" "$FP_CTL"
	for i in $(seq 200); do
		[ -e "$FP_CTL.done" ] && return 0
		sleep 0.025
	done
	fail "s3proxy did not apply '$*'"
}

fp_stop() {
	kill "$FP_PID" 2>/dev/null || true
	wait "$FP_PID" 2>/dev/null || true
}

fp_count() {
	python3 - "$FP_COUNTS" "$1" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v)
PY
}

fp_gen_dataset() {
	python3 - "$1" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(4242)
def put(rel, size):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(rng.randbytes(size) if hasattr(rng, "randbytes")
                else os.urandom(size))
for i in range(300):
    put("d%d/f%03d.bin" % (i % 3, i), rng.randrange(1024, 64 * 1024 + 1))
for i in range(4):
    put("big/b%d.bin" % i, rng.randrange(1 << 20, 3 * (1 << 20) + 1))
PY
}

fp_read_all() {
	python3 - "$@" <<'PY'
import errno, json, os, random, sys, threading
mnt, exp, out = sys.argv[1], sys.argv[2], sys.argv[3]
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 4
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
trigger = int(sys.argv[6]) if len(sys.argv) > 6 else -1
ctl = sys.argv[7] if len(sys.argv) > 7 else None
line = sys.argv[8] if len(sys.argv) > 8 else None
files = []
for d, _, names in os.walk(exp):
    for n in names:
        files.append(os.path.relpath(os.path.join(d, n), exp))
files.sort()
random.Random(seed).shuffle(files)
lock = threading.Lock()
res = {"reads": 0, "correct": 0, "eio": 0, "other": 0, "others": []}
nxt = [0]

def classify(rel):
    with open(os.path.join(exp, rel), "rb") as f:
        want = f.read()
    try:
        fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    except OSError as e:
        return ("eio", "") if e.errno == errno.EIO else ("other", "open: %s" % e)
    got = []
    try:
        while True:
            b = os.read(fd, 1 << 17)
            if not b:
                break
            got.append(b)
    except OSError as e:
        return ("eio", "") if e.errno == errno.EIO else ("other", "read: %s" % e)
    finally:
        os.close(fd)
    got = b"".join(got)
    if got == want:
        return ("correct", "")
    return ("other", "wrong bytes: %d read, %d expected, first difference at %s"
            % (len(got), len(want),
               next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                    min(len(got), len(want)))))

def worker():
    while True:
        with lock:
            i = nxt[0]
            nxt[0] += 1
        if i >= len(files):
            return
        if i == trigger and ctl:
            with open(ctl + ".tmp", "w") as f:
                f.write(line + "\n")
            os.replace(ctl + ".tmp", ctl)
        cls, why = classify(files[i])
        with lock:
            res["reads"] += 1
            res[cls] += 1
            if why:
                res["others"].append("%s: %s" % (files[i], why))

ts = [threading.Thread(target=worker) for _ in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
with open(out, "w") as f:
    json.dump(res, f)
PY
}
