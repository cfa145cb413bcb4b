#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Descriptors and memory of the mount daemon: thousands of open/read/close
# and opendir/readdir/closedir cycles leave its descriptor count and its
# RSS where they were; reading 4 x 96 MiB (every pass dropped from the
# page cache, so that it reaches the daemon) with --cache-size 24M keeps
# its peak RSS under the cache budget plus 64 MiB (the read cache holds at
# most its budget, in-flight bytes included, whatever was read).
#
# Under the ASan build (san.int.t_leaks_s3, SHARDFS_SANITIZER set) the same
# run ends with the daemon's LeakSanitizer check at exit, and any leak
# fails the test; RSS is not checked there (ASan keeps freed memory in
# quarantine on purpose).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_checks.sh"
s3_env

CYCLES=${SHARDFS_LEAK_CYCLES:-2000}
CACHE_MIB=24
RSS_LIMIT_KIB=$(((CACHE_MIB + 64) * 1024))
T=$(tmpdir_new)
B=$(s3_bucket_name leaks)
s3_mb "$B"
on_exit s3_rb_force "$B"
python3 - "$T/src" <<'PY'
import os, random, sys
rng = random.Random(5)
for i in range(300):
    d = os.path.join(sys.argv[1], "small", "d%d" % (i % 3))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%03d" % i), "wb") as f:
        f.write(os.urandom(rng.randrange(1024, 16384)))
os.makedirs(os.path.join(sys.argv[1], "big"))
for i in range(24):
    with open(os.path.join(sys.argv[1], "big", "b%02d" % i), "wb") as f:
        f.write(os.urandom(4 << 20))
PY
s3_put_tree "$T/src" "s3://$B/ds"
MNT=$T/mnt
mc_mount "s3://$B/ds" "$MNT" --log-file "$T/daemon.log" \
	--cache-size "${CACHE_MIB}M"
MNT=$(realpath "$MNT")
pid=$(mc_daemon_pid "$MNT")
[ -n "$pid" ] || fail "no daemon"

# Descriptors other than sockets (sockets are the connection pool, which
# grows and shrinks with the load), sockets, RSS and peak RSS (KiB).
fds() { find "/proc/$pid/fd" -mindepth 1 -printf '%l\n' | grep -vc '^socket:' || true; }
socks() { find "/proc/$pid/fd" -mindepth 1 -printf '%l\n' | grep -c '^socket:' || true; }
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$pid/status"; }
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$pid/status"; }
wchar() { sed -n 's/^wchar: //p' "/proc/$pid/io"; } # replies written to /dev/fuse

# cycles N THREADS: N open/read/close cycles over the small files (each
# file dropped from the page cache after reading, so every read reaches
# the daemon), checking the bytes, plus N/10 directory listings.
cycles() {
	python3 - "$MNT/small" "$T/src/small" "$1" "$2" <<'PY'
import os, sys, threading
mnt, src, n, nthreads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
files = sorted(os.path.join(d, f)[len(src) + 1:]
               for d, _, fs in os.walk(src) for f in fs)
want = {f: open(os.path.join(src, f), "rb").read() for f in files}
bad = []
def work(k):
    for i in range(k, n, nthreads):
        f = files[i % len(files)]
        fd = os.open(os.path.join(mnt, f), os.O_RDONLY)
        try:
            got = os.read(fd, 1 << 20)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if got != want[f]:
            bad.append(f)
        if i % 10 == 0:
            os.listdir(os.path.join(mnt, "d%d" % (i % 3)))
ts = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
for t in ts: t.start()
for t in ts: t.join()
if bad:
    sys.exit("%d reads gave wrong bytes, e.g. %s" % (len(bad), bad[0]))
PY
}

cycles 600 4 || fail "warm-up reads"
fd0=$(fds) rss0=$(rss)
cycles "$CYCLES" 4 || fail "open/read/close cycles"
cycles "$CYCLES" 1 || fail "open/read/close cycles (one thread)"
fd1=$(fds) rss1=$(rss) s1=$(socks)
expect_eq "$fd1" "$fd0" "non-socket descriptors of the daemon after $((2 * CYCLES)) cycles"
[ "$s1" -le 70 ] || fail "$s1 sockets open in the daemon (the pool holds at most 64)"
growth=$((rss1 - rss0))
[ -n "${SHARDFS_SANITIZER:-}" ] || [ "$growth" -lt 16384 ] ||
	fail "RSS grew by $growth KiB over $((2 * CYCLES)) cycles ($rss0 -> $rss1 KiB)"
pass "$((2 * CYCLES)) open/read/close cycles: $fd0 -> $fd1 descriptors, RSS $rss0 -> $rss1 KiB"

# Four passes over 96 MiB, 4 readers, each file dropped from the page
# cache once read: 384 MiB through the daemon (one pass under a sanitizer,
# where RSS is not checked).
PASSES=4
[ -z "${SHARDFS_SANITIZER:-}" ] || PASSES=1
wc0=$(wchar)
python3 - "$MNT/big" "$T/src/big" "$PASSES" <<'PY' || fail "big reads"
import hashlib, os, sys, threading
mnt, src, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sorted(os.listdir(src))
want = {n: hashlib.sha256(open(os.path.join(src, n), "rb").read()).hexdigest() for n in names}
jobs = [n for _ in range(passes) for n in names]
bad, lock = [], threading.Lock()
def work():
    while True:
        with lock:
            if not jobs:
                return
            n = jobs.pop()
        h = hashlib.sha256()
        fd = os.open(os.path.join(mnt, n), os.O_RDONLY)
        try:
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                h.update(b)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if h.hexdigest() != want[n]:
            bad.append(n)
ts = [threading.Thread(target=work) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
if bad:
    sys.exit("wrong bytes in %s" % bad)
PY
peak=$(hwm) fd2=$(fds) wc1=$(wchar)
[ $(((wc1 - wc0) >> 20)) -ge $((PASSES * 96)) ] ||
	fail "the daemon answered only $(((wc1 - wc0) >> 20)) MiB: the passes did not reach it"
[ -n "${SHARDFS_SANITIZER:-}" ] || [ "$peak" -lt "$RSS_LIMIT_KIB" ] || fail "peak RSS $peak KiB after reading 384 MiB (limit $RSS_LIMIT_KIB KiB)"
expect_eq "$fd2" "$fd0" "non-socket descriptors after the big reads"
pass "$((PASSES * 96)) MiB read: peak RSS $peak KiB (limit $RSS_LIMIT_KIB${SHARDFS_SANITIZER:+, not checked under $SHARDFS_SANITIZER})"
mc_umount "$MNT"
