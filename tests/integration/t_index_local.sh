#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs index on a local directory: tar shards made by GNU tar (gnu and
# posix formats, with a sparse file) and Python's tarfile, nested keys,
# a path in two shards (the later one wins, reported as shadowed); the
# index written next to them lists exactly what `tar -tv` lists, and each
# member's offset (or sparse segments) gives the bytes tarfile extracts.
# Then: a damaged shard (reported, the others fine, exit 1 unless
# --allow-damaged), and bad SOURCE / no shards / unwritable destination.
#
# t_index_s3.sh sources this file with INDEX_LIB_ONLY=1 for its helpers:
#   index_make_shards DIR      the shards under DIR (keys as files)
#   index_make_broken DIR      DIR/zz-broken.tar, damaged in its 4th member
#   index_verify DIR IDX       IDX (a shardfs.idx) against the shards in DIR
#   run_fail STATUS PATTERN CMD...
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DUMP=${SHARDFS_BUILD:-}/tests/dsidx_dump
[ -x "$DUMP" ] || fail "dsidx_dump not built ($DUMP)"

# The shards: shard-000.tar (GNU tar, gnu format), shard-001.tar (Python,
# pax), sub/shard-002.tar (GNU tar, posix format), README.txt (not a
# shard). common/dup.txt is in shard-000 and shard-001.
index_make_shards() {
	local d=$1 w
	w=$(mktemp -d "$d/.work.XXXXXX")
	/usr/bin/python3 - "$w" <<'PY'
import os, sys
w = sys.argv[1]
def put(rel, data):
    p = os.path.join(w, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
# tree A: GNU tar, gnu format
put("a/a/empty", b"")
put("a/a/b512", os.urandom(512))
put("a/a/b1024", os.urandom(1024))
put("a/a/big.bin", os.urandom(3 << 20))
put("a/long/" + "n" * 150, b"a name over 100 bytes")
put("a/" + "/".join(["d" * 70] * 3) + "/" + "f" * 60, b"a path over 255 bytes")
put("a/ünïcødé/日本語 テキスト.txt", "unicode".encode())
put("a/common/dup.txt", b"from shard-000")
os.makedirs(os.path.join(w, "a/emptydir"))
os.symlink("a/b512", os.path.join(w, "a/link-to-b512"))
os.symlink("x" * 120, os.path.join(w, "a/long-symlink"))
os.link(os.path.join(w, "a/a/b1024"), os.path.join(w, "a/hard-b1024"))
with open(os.path.join(w, "a/sparse.img"), "wb") as f:
    f.seek(1 << 20); f.write(b"S" * 4096)
    f.seek(5 << 20); f.write(b"T" * 100)
    f.truncate(8 << 20)
# tree B: Python tarfile, pax
for i in range(200):
    put("b/class%d/%04d.jpg" % (i % 4, i), os.urandom(100 + i * 13))
put("b/common/dup.txt", b"from shard-001 (wins)")
# tree C: GNU tar, posix format
for i in range(50):
    put("c/nested/%03d.cls" % i, b"%d\n" % i)
PY
	mkdir -p "$d/sub"
	tar -cf "$d/shard-000.tar" --format=gnu -S -C "$w/a" .
	/usr/bin/python3 - "$w/b" "$d/shard-001.tar" <<'PY'
import os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for n in sorted(os.listdir(src)):
        t.add(os.path.join(src, n), arcname=n)
PY
	tar -cf "$d/sub/shard-002.tar" --format=posix -S -C "$w/c" .
	echo "not a shard" > "$d/README.txt"
	rm -rf "$w"
}

# zz-broken.tar: five 1000-byte members, cut inside the 4th one's data.
index_make_broken() {
	/usr/bin/python3 - "$1/zz-broken.tar" <<'PY'
import io, sys, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for i in range(5):
        ti = tarfile.TarInfo("broken/f%d" % i); ti.size = 1000
        t.addfile(ti, io.BytesIO(bytes([65 + i]) * 1000))
data = buf.getvalue()
open(sys.argv[1], "wb").write(data[:3 * 1536 + 512 + 300])
PY
}

# index_verify SHARDDIR IDXFILE: the index against tar -tv and tarfile.
index_verify() {
	"$DUMP" "$2" > "$T/dump.txt" || fail "dsidx_dump $2 failed"
	/usr/bin/python3 - "$1" "$T/dump.txt" <<'PY' || fail "the index differs from the shards (above)"
import os, subprocess, sys, tarfile
root, dump = sys.argv[1], sys.argv[2]
def norm(p):
    while p.startswith("./"):
        p = p[2:]
    return "" if p == "." else p.rstrip("/")
keys = sorted((os.path.relpath(os.path.join(r, f), root)
               for r, _, fs in os.walk(root) for f in fs
               if f.endswith(".tar") and not f.startswith(".")),
              key=lambda k: k.encode())
exp, src = {}, {}   # path -> expected entry; path -> (shard, member)
for k in keys:
    p = subprocess.run(["tar", "-tvf", os.path.join(root, k), "--numeric-owner",
                        "--quoting-style=literal", "--full-time"],
                       capture_output=True, env=dict(os.environ, LC_ALL="C.UTF-8"))
    if p.returncode:
        sys.exit("tar -tv %s failed: %s" % (k, p.stderr.decode(errors="replace")))
    for line in p.stdout.decode("utf-8", "surrogateescape").splitlines():
        perms, _, size, _, _, rest = line.split(None, 5)
        t = perms[0]
        if t == "l":
            name, target = rest.split(" -> ", 1)
            exp[norm(name)] = ("link", target)
        elif t == "h":
            name, target = rest.split(" link to ", 1)
            exp[norm(name)] = exp[norm(target)]
        elif t == "d":
            exp[norm(name := rest)] = ("dir",)
        else:
            exp[norm(rest)] = ("file", int(size), k)
    with tarfile.open(os.path.join(root, k)) as tf:
        for m in tf.getmembers():
            if m.isfile() or m.islnk():
                src[norm(m.name)] = (k, m.name)
exp.pop("", None)
got, bad = {}, 0
for line in open(dump, encoding="utf-8", errors="surrogateescape"):
    f = line.rstrip("\n").split("\t")
    if f[0] == "dir" and f[1] != ".":
        got[f[1]] = ("dir",)
    elif f[0] in ("file", "sparse"):
        got[f[1]] = ("file", int(f[2]), f[3])
        # the bytes: from the shard at offset, or from the segments
        with open(os.path.join(root, f[3]), "rb") as sh:
            if f[0] == "file":
                sh.seek(int(f[4])); data = sh.read(int(f[2]))
            else:
                data = bytearray(int(f[2]))
                for seg in filter(None, f[7].split(",")):
                    ol, arch = seg.split("@"); o, l = map(int, ol.split("+"))
                    sh.seek(int(arch)); data[o:o + l] = sh.read(l)
                print("sparse member %s: %d segments" % (f[1], len(f[7].split(","))))
        k, name = src[f[1]]
        with tarfile.open(os.path.join(root, k)) as tf:
            want = tf.extractfile(name).read()
        if bytes(data) != want:
            print("bytes of %s differ" % f[1]); bad += 1
    elif f[0] == "link":
        got[f[1]] = ("link", f[2])
for path in sorted(set(exp) | set(got)):
    e, g = exp.get(path), got.get(path)
    if e == g or (g == ("dir",) and e is None and
                  any(p.startswith(path + "/") for p in exp)):
        continue
    print("%s: index %r, tar %r" % (path, g, e)); bad += 1
print("%d entries compared" % len(exp))
sys.exit(1 if bad else 0)
PY
}

# run_fail WANT_STATUS PATTERN CMD...: CMD must exit WANT_STATUS within
# 60 s with PATTERN in its stderr.
run_fail() {
	local want=$1 pat=$2 st=0
	shift 2
	timeout 60 "$@" > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -ne 124 ] || fail "hung: $*"
	expect_eq "$st" "$want" "exit status of: $* ($(head -c 300 "$T/err"))"
	grep -Eq -- "$pat" "$T/err" || fail "'$pat' not in the error of $*: $(cat "$T/err")"
}

[ -n "${INDEX_LIB_ONLY:-}" ] && return 0

T=$(tmpdir_new)
SH=("$SHARDFS_BIN")
D="$T/data"
mkdir -p "$D"
index_make_shards "$D"

# --- the index of three good shards ---
"${SH[@]}" index "$D" > "$T/out" 2> "$T/err" || fail "index failed: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "index wrote to stderr: $(cat "$T/err")"
grep -Eq '^3 shards, [0-9]+ members, 1 shadowed, 0 damaged, [3-9] GETs' "$T/out" ||
	fail "summary: $(cat "$T/out")"
[ -f "$D/shardfs.idx" ] || fail "no $D/shardfs.idx"
index_verify "$D" "$D/shardfs.idx"
grep -q $'^shard\tsub/shard-002.tar\t"' "$T/dump.txt" || fail "nested shard key: $(grep ^shard "$T/dump.txt")"
grep -q $'^sparse\tsparse.img\t8388608\tshard-000.tar' "$T/dump.txt" || fail "sparse.img is not sparse"
grep -q $'^file\tcommon/dup.txt\t21\tshard-001.tar' "$T/dump.txt" || fail "dup.txt is not shard-001's"
grep -q $'^index\t1.1\t3\t' "$T/dump.txt" || fail "not a 1.1 index: $(head -1 "$T/dump.txt")"
pass "3 shards indexed, the index matches tar -tv and the bytes"

# --- jobs, dry run, progress ---
cp "$D/shardfs.idx" "$T/first.idx"
rm "$D/shardfs.idx"
"${SH[@]}" index --dry-run -j 1 "file://$D" > "$T/out" || fail "dry run failed"
grep -q "would write" "$T/out" || fail "dry run summary: $(cat "$T/out")"
[ ! -e "$D/shardfs.idx" ] || fail "--dry-run wrote the index"
"${SH[@]}" index --progress --jobs 2 "$D" > "$T/out" 2> "$T/err" || fail "index --progress failed"
grep -q "3/3 shards" "$T/err" || fail "no progress display: $(cat -v "$T/err")"
cmp -s <("$DUMP" "$T/first.idx" | grep -v '^dir') <("$DUMP" "$D/shardfs.idx" | grep -v '^dir') ||
	fail "another run gave another index"
pass "--jobs, --dry-run, --progress"

# --- a damaged shard: reported, its good members kept, the others fine ---
index_make_broken "$D"
run_fail 1 'zz-broken.tar: damaged shard: .*offset' "${SH[@]}" index "$D"
expect_eq "$(grep -c 'damaged shard:' "$T/err")" 1 "lines reporting the damaged shard"
grep -q '4 shards, .* 1 damaged' "$T/out" || fail "summary: $(cat "$T/out")"
"$DUMP" "$D/shardfs.idx" > "$T/dump.txt"
for f in f0 f1 f2; do
	grep -q $'^file\tbroken/'$f$'\t1000\tzz-broken.tar' "$T/dump.txt" || fail "broken/$f not kept"
done
! grep -q 'broken/f[34]' "$T/dump.txt" || fail "members after the damage were indexed"
grep -q $'^file\tcommon/dup.txt\t21\tshard-001.tar' "$T/dump.txt" || fail "the good shards suffered"
"${SH[@]}" index --allow-damaged "$D" > "$T/out" 2> "$T/err" || fail "--allow-damaged: exit $?"
rm "$D/zz-broken.tar"
pass "a damaged shard is reported, exit 1 unless --allow-damaged"

# --- bad SOURCE, no shards, unwritable destination ---
run_fail 2 'usage' "${SH[@]}" index
run_fail 2 'usage' "${SH[@]}" index --jobs 0 "$D"
run_fail 2 'usage' "${SH[@]}" index "$D" "$D"
run_fail 1 'no-such-dir' "${SH[@]}" index "$T/no-such-dir"
mkdir "$T/empty"
run_fail 1 'no .tar objects under' "${SH[@]}" index "$T/empty"
rm "$D/shardfs.idx"
mkdir "$D/shardfs.idx"
run_fail 1 'cannot write .*shardfs.idx' "${SH[@]}" index "$D"
rmdir "$D/shardfs.idx"
"${SH[@]}" index --help | grep -q -- '--allow-damaged' || fail "--help"
pass "bad SOURCE, no shards and an unwritable destination are clear errors"
