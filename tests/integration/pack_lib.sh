# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers for the shardfs pack tests (t_pack_*.sh), sourced after lib.sh
# (and mount_checks.sh where mounts are used). The tests put their files
# in /dev/shm when it is writable (TMPDIR, set before lib.sh): creating and
# extracting 10,000 files is 5 to 10 times faster there than on the disks
# of the test machines.
#
#   pk_gen_tree DIR           the round-trip tree: 10,800 files in nested
#                             (a quarter of the samples under a sanitizer
#                             build, SHARDFS_SANITIZER set: the same code
#                             paths in less time)
#                             class directories (WebDataset-style samples
#                             0001.jpg/.cls/.json, 0 B .. 16 KiB), 12 files
#                             of 1..5 MiB and 2 of 9 MiB, symbolic links
#                             (relative, to a directory, dangling,
#                             absolute, long target), unicode names, paths
#                             of 300 and 1,000 bytes, odd modes, empty
#                             files and directories, mtimes in the past
#   pk_shards DEST            shard keys/files of DEST (local dir or
#                             s3://...), one a line, in name order
#   pk_fetch DEST OUT         copy DEST's shards into OUT (S3: with s3_get)
#   pk_check_tars DIR         GNU tar lists every DIR/*.tar without a word
#                             on stderr, Python's tarfile reads every
#                             member; prints the member count
#   pk_extract DIR OUT        extract every DIR/*.tar with GNU tar into OUT
#   pk_compare SRC OUT [tar|mount]
#                             diff -r --no-dereference, symlink targets,
#                             then for tar (an extraction): modes and file
#                             mtimes; for mount: file and directory mtimes
#   pk_same_members DIR1 DIR2 the shards hold the same members (any order)
#   pk_check_samples DIR      every sample (directory + name up to the
#                             first dot) lies in one shard, its members
#                             adjacent
#   pk_proxy_start MODE N     a forwarding proxy in front of $S3_ENDPOINT
#                             for PUTs: MODE fail-after (every PUT after
#                             the N-th answers 500), flaky (every N-th PUT
#                             answers 503) or slow (every PUT waits N ms);
#                             sets PK_PROXY_URL and PK_PROXY_COUNTS, a file
#                             "PUTS FAILED MOST-AT-ONCE" (PUTs in flight)
#   pk_uploads BUCKET         incomplete multipart uploads left in BUCKET
#   pk_mount_roundtrip SRC DEST
#                             mounts DEST and compares it with SRC; returns
#                             2 (after a note) when the mount does not
#                             read shardfs.idx yet

pk_gen_tree() {
	/usr/bin/python3 - "$1" "${SHARDFS_SANITIZER:+4}" <<'PY'
import os, random, sys
root = sys.argv[1]
div = int(sys.argv[2] or 1)
rng = random.Random(20261129)
T0 = 1600000000
def put(rel, size, mode=0o644, mtime=None):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(rng.randbytes(size))
    os.chmod(p, mode)
    t = mtime if mtime is not None else T0 + rng.randrange(0, 10**8)
    os.utime(p, ns=(t * 10**9 + rng.randrange(10**9),) * 2)
# WebDataset-style samples in nested class directories.
for split, ncls, nsamp in (("train", 24 // div, 160), ("val/nested", 4, 120 // div)):
    for c in range(ncls):
        for i in range(nsamp):
            base = "%s/cls%02d/%05d" % (split, c, i)
            put(base + ".jpg", rng.randrange(0, 16 * 1024))
            put(base + ".cls", rng.randrange(0, 4))
            if i % 2 == 0:
                put(base + ".json", rng.randrange(0, 300))
for i in range(12):
    put("big/mib-%02d.bin" % i, rng.randrange(1 << 20, 5 * (1 << 20) + 1))
for i in range(2):
    put("big/huge-%d.bin" % i, 9 * (1 << 20) + i * 4097)
# Names.
for name in ["ünïcødé-日本.txt", "emoji-😀.bin", "ελληνικά/файл.txt",
             "with space.txt", "semi;colon", "quote'\"q", "plus+percent%41",
             ".hidden", ".config/settings", "-dash"]:
    put("names/" + name, rng.randrange(0, 2000))
long1 = "long/" + "/".join(["d" * 100, "e" * 100]) + "/" + "f" * 100 + ".txt"
put(long1, 1234)  # 310 bytes in all
deep = "long/" + "/".join("%03d-" % k + "x" * 96 for k in range(9)) + "/leaf.bin"
put(deep, 99)     # over 900 bytes
# Modes, empty things, old times.
put("modes/private", 10, 0o600)
put("modes/exec.sh", 20, 0o755)
put("modes/readonly", 30, 0o444)
put("modes/empty", 0)
put("modes/old", 5, mtime=315532800)  # 1980
os.makedirs(os.path.join(root, "modes/closed"))
put("modes/closed/inside", 3)
os.chmod(os.path.join(root, "modes/closed"), 0o750)
os.makedirs(os.path.join(root, "emptydir/inner"))
# Symbolic links.
os.makedirs(os.path.join(root, "links"))
os.symlink("../names/with space.txt", os.path.join(root, "links/to-file"))
os.symlink("../train/cls00", os.path.join(root, "links/to-dir"))
os.symlink("nowhere/at/all", os.path.join(root, "links/dangling"))
os.symlink("/etc/hostname", os.path.join(root, "links/absolute"))
os.symlink("../" + "t" * 150 + "/target", os.path.join(root, "links/long-target"))
# Directory times last (creating files changed them).
for d, _, _ in os.walk(root, topdown=False):
    t = T0 + rng.randrange(0, 10**8)
    os.utime(d, (t, t))
PY
}

# Shard names of DEST, one a line.
pk_shards() {
	local dest=$1
	if [[ $dest == s3://* ]]; then
		s3_python - "$dest" <<'PY'
import boto3, os, sys
b, _, p = sys.argv[1][5:].partition("/")
p = p.rstrip("/") + "/" if p else ""
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=p):
    for o in page.get("Contents", []):
        k = o["Key"][len(p):]
        if k.startswith("shard-") and k.endswith(".tar") and "/" not in k:
            print(k)
PY
	else
		(cd "$dest" && ls shard-*.tar)
	fi
}

# Downloads with boto3 (a client no one here wrote), 8 at a time.
pk_fetch() {
	local dest=$1 out=$2
	mkdir -p "$out"
	if [[ $dest == s3://* ]]; then
		s3_python - "$dest" "$out" <<'PY' || fail "cannot download the shards of $dest"
import boto3, os, sys
from concurrent.futures import ThreadPoolExecutor
b, _, p = sys.argv[1][5:].partition("/")
p = p.rstrip("/") + "/" if p else ""
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=p)
        for o in page.get("Contents", [])
        if o["Key"][len(p):].startswith("shard-") and o["Key"].endswith(".tar")]
def get(k):
    s3.download_file(b, k, os.path.join(sys.argv[2], k[len(p):]))
with ThreadPoolExecutor(8) as ex:
    list(ex.map(get, keys))
PY
	else
		cp "$dest"/shard-*.tar "$out/"
	fi
}

pk_check_tars() {
	local dir=$1 t n=0
	for t in "$dir"/*.tar; do
		tar -tvf "$t" >/dev/null 2>"$dir/.tarerr" || fail "GNU tar cannot list $t: $(cat "$dir/.tarerr")"
		[ ! -s "$dir/.tarerr" ] || fail "GNU tar complains about $t: $(cat "$dir/.tarerr")"
	done
	rm -f "$dir/.tarerr"
	/usr/bin/python3 - "$dir" <<'PY' || fail "Python tarfile cannot read the shards"
import glob, sys, tarfile
n = 0
for t in sorted(glob.glob(sys.argv[1] + "/*.tar")):
    with tarfile.open(t, "r:") as tf:
        for m in tf:
            if m.isfile():
                f = tf.extractfile(m)
                got = len(f.read())
                assert got == m.size, (t, m.name, got, m.size)
            n += 1
print(n)
PY
}

pk_extract() {
	local dir=$1 out=$2 t
	mkdir -p "$out"
	for t in "$dir"/*.tar; do
		tar -xf "$t" -C "$out" 2>"$out.err" || fail "tar -xf $t: $(cat "$out.err")"
	done
}

pk_compare() {
	local src=$1 out=$2 how=${3:-tar}
	diff -r --no-dereference "$src" "$out" >"$out.diff" 2>&1 ||
		fail "diff -r $src $out: $(head -c 2000 "$out.diff")"
	/usr/bin/python3 - "$src" "$out" "$how" <<'PY' || fail "modes, mtimes or links differ ($how)"
import os, stat, sys
src, out, how = sys.argv[1], sys.argv[2], sys.argv[3]
bad = []
n = 0
for d, dirs, files in os.walk(src):
    for name in dirs + files:
        a = os.path.join(d, name)
        b = os.path.join(out, os.path.relpath(a, src))
        sa, sb = os.lstat(a), os.lstat(b)
        n += 1
        isdir = stat.S_ISDIR(sa.st_mode)
        if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
            bad.append("type %s" % a)
        elif stat.S_ISLNK(sa.st_mode):
            if os.readlink(a) != os.readlink(b):
                bad.append("link %s" % a)
            continue
        # GNU tar cannot keep a directory's mtime when later shards add
        # to it; the mount shows the index's (all exact); the mount's
        # modes are its own (read-only), the index's are checked by tar.
        if how == "tar" and stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode):
            bad.append("mode %s %o %o" % (a, sa.st_mode, sb.st_mode))
        if (how == "mount" or not isdir) and int(sa.st_mtime) != int(sb.st_mtime):
            bad.append("mtime %s %d %d" % (a, sa.st_mtime, sb.st_mtime))
if bad:
    sys.exit("%d of %d differ: %s" % (len(bad), n, "; ".join(bad[:10])))
print("compared %d entries (%s)" % (n, how), file=sys.stderr)
PY
}

# The members of the shards in DIR1 and DIR2 are the same (names, types,
# modes, mtimes, link targets, SHA-256 of the data), in any order.
pk_same_members() {
	/usr/bin/python3 - "$1" "$2" <<'PY' || fail "the shards of $1 and $2 hold different members"
import glob, hashlib, sys, tarfile
def members(d):
    out = []
    for t in sorted(glob.glob(d + "/*.tar")):
        with tarfile.open(t, "r:") as tf:
            for m in tf:
                h = hashlib.sha256(tf.extractfile(m).read()).hexdigest() if m.isfile() else ""
                out.append((m.name, m.type, m.mode, m.mtime, m.linkname, m.size, h))
    return sorted(out)
a, b = members(sys.argv[1]), members(sys.argv[2])
if a != b:
    sys.exit("%d vs %d members; first difference: %r" % (len(a), len(b),
             next(((x, y) for x, y in zip(a, b) if x != y), None)))
PY
}

pk_check_samples() {
	/usr/bin/python3 - "$1" <<'PY' || fail "sample grouping broken"
import glob, os, sys, tarfile
where = {}
for t in sorted(glob.glob(sys.argv[1] + "/*.tar")):
    prev = None
    with tarfile.open(t, "r:") as tf:
        for m in tf:
            if m.isdir():
                prev = None
                continue
            d, base = os.path.split(m.name)
            dot = base.find(".", 1)
            key = (d, base[:dot] if dot > 0 else base)
            if key != prev:
                if key in where:
                    sys.exit("sample %r split: in %s and again in %s" % (key, where[key], t))
                where[key] = t
            prev = key
print("%d samples, none split" % len(where), file=sys.stderr)
PY
}

# A proxy that breaks PUTs on purpose (see the top of this file).
pk_proxy_start() {
	local mode=$1 n=$2 dir
	dir=$(tmpdir_new)
	PK_PROXY_COUNTS=$dir/counts
	/usr/bin/python3 - "$S3_ENDPOINT" "$mode" "$n" "$dir/port" "$PK_PROXY_COUNTS" <<'PY' &
import http.client, http.server, os, socketserver, sys, threading, time, urllib.parse
up = urllib.parse.urlsplit(sys.argv[1])
mode, n, portfile, countfile = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
lock = threading.Lock()
count = {"puts": 0, "failed": 0, "now": 0, "most": 0}
def save():
    with open(countfile + ".tmp", "w") as f:
        f.write("%d %d %d\n" % (count["puts"], count["failed"], count["most"]))
    os.replace(countfile + ".tmp", countfile)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def relay(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        broken = False
        if self.command == "PUT":
            with lock:
                count["puts"] += 1
                count["now"] += 1
                count["most"] = max(count["most"], count["now"])
                k = count["puts"]
                broken = (mode == "fail-after" and k > n) or (mode == "flaky" and k % n == 0)
                if broken:
                    count["failed"] += 1
                save()
            if mode == "slow":
                time.sleep(n / 1000)
        try:
            self.forward(body, broken)
        finally:
            if self.command == "PUT":
                with lock:
                    count["now"] -= 1
                    save()
    def forward(self, body, broken):
        if broken:
            code, word = (500, "InternalError") if mode == "fail-after" else (503, "SlowDown")
            msg = ("<Error><Code>%s</Code><Message>injected</Message></Error>" % word).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        c = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
        c.request(self.command, self.path,
                  body=body if body or self.command in ("PUT", "POST") else None,
                  headers={k: v for k, v in self.headers.items()})
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        if self.command == "HEAD":
            self.send_header("Content-Length", r.getheader("Content-Length") or "0")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        c.close()
    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
	local pid=$!
	on_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null || true"
	for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
	[ -s "$dir/port" ] || fail "the test proxy did not start"
	PK_PROXY_URL=http://127.0.0.1:$(cat "$dir/port")
}

pk_uploads() {
	s3_python - "$1" <<'PY'
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"])
print(len(s3.list_multipart_uploads(Bucket=sys.argv[1]).get("Uploads", [])))
PY
}

# Mounts DEST and compares it with SRC: contents with diff -r, then
# modes and mtimes as the dataset index holds them. Returns 2 when the
# mount does not read shardfs.idx yet (it then shows the shards).
pk_mount_roundtrip() {
	local src=$1 dest=$2 mnt
	mnt=$(tmpdir_new)/mnt
	mc_mount "$dest" "$mnt"
	if [ -e "$mnt/shard-000000.tar" ] || [ -e "$mnt/shardfs.idx" ]; then
		echo "NOTE: $TEST_NAME: the mount shows the shards, not the packed tree:" \
			"mount round trip skipped until src/ns.c reads shardfs.idx" >&2
		mc_umount "$mnt"
		return 2
	fi
	# Read everything 8 at a time first: diff then reads the page cache.
	(cd "$mnt" && find . -type f -print0 | xargs -0 -r -P 8 -n 64 cat >/dev/null) ||
		fail "reading the files of $dest through the mount failed"
	pk_compare "$src" "$mnt" mount
	mc_umount "$mnt"
	return 0
}
