# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Tar shards and dataset indexes for the t_tar_mount_* and t_dsidx_mount_*
# tests; source after lib.sh and mount_checks.sh.
#
#   sl_make_tree DIR      a tree with the cases tar formats differ on: names
#                         longer than 100 and 255 bytes, a 255-byte
#                         component, unicode, empty files, files of 512 and
#                         1024 bytes, empty and nested directories,
#                         symlinks (relative, absolute, dangling, to a
#                         directory), hard links, a sparse file, a 3 MiB
#                         file (more than one scanner window)
#   sl_make_shards SRC OUT EXT
#                         OUT/<fmt>.tar for fmt in gnu, posix, ustar (GNU
#                         tar, sparse-aware), pygnu, pypax (Python's
#                         tarfile), each extracted by GNU tar into
#                         EXT/<fmt>.tar/; GNU tar's warnings (ustar cannot
#                         hold long names) go to OUT.log
#   sl_make_bad OUT EXT   bad shards in OUT: trunc.tar (cut inside the 4th
#                         member's data), badsum.tar (3rd header's checksum
#                         broken), junk.tar (not a tar), zero.tar (no
#                         members); EXT/<name>/ holds what must show (the
#                         members before the damage)
#   sl_compare GOT WANT WHAT
#                         names, types, sizes, link targets and SHA-256 of
#                         two trees must be equal (a hard link is a file)
#   sl_stat MNT KEY...    a value from MNT/.shardfs/stats ("requests get")
#   sl_crc_fix FILE       recompute the checksums of a dataset index after
#                         a test patched it (python, CRC-32C)

sl_make_tree() {
	/usr/bin/python3 - "$1" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(4242)
def put(rel, data):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
put("a.txt", b"hello\n")
put("empty", b"")
put("exact/512.bin", rng.randbytes(512))
put("exact/1024.bin", rng.randbytes(1024))
put("exact/511.bin", rng.randbytes(511))
put("big/3mib.bin", rng.randbytes(3 * 1048576 + 17))
put("big/100k.bin", rng.randbytes(100000))
put("m" * 150 + ".txt", b"name longer than 100 bytes\n")
put("long/" + "x" * 200 + "/" + "y" * 200 + ".txt", b"path longer than 255\n")
put("long/" + "z" * 251 + ".bin", rng.randbytes(700))   # a 255-byte name
put("ünïcødé-日本/файл-🙂.txt", "unicode ✓\n".encode())
for i in range(40):
    put("many/d%d/f%03d.dat" % (i % 4, i), rng.randbytes(rng.randrange(0, 3000)))
os.makedirs(os.path.join(root, "emptydir/nested"))
os.symlink("a.txt", os.path.join(root, "link-rel"))
os.symlink("/etc/hostname", os.path.join(root, "link-abs"))
os.symlink("nowhere/at/all", os.path.join(root, "link-dangling"))
os.symlink("exact", os.path.join(root, "link-dir"))
os.symlink("../" + "m" * 150 + ".txt", os.path.join(root, "long/link-long-target"))
os.link(os.path.join(root, "exact/1024.bin"), os.path.join(root, "hard-1024"))
os.link(os.path.join(root, "a.txt"), os.path.join(root, "many/hard-a"))
# A sparse file: 2 MiB with data at 0, 1 MiB and the end, holes between.
p = os.path.join(root, "sparse.img")
with open(p, "wb") as f:
    f.truncate(2 * 1048576 + 100)
    f.seek(0); f.write(b"start" * 100)
    f.seek(1048576); f.write(rng.randbytes(8192))
    f.seek(2 * 1048576 + 90); f.write(b"0123456789")
PY
}

sl_make_shards() {
	local src=$1 out=$2 ext=$3 fmt
	mkdir -p "$out" "$ext"
	for fmt in gnu posix ustar; do
		# ustar has no sparse files and cannot hold some names: tar
		# says so and exits 2, having written the rest.
		local sparse=--sparse
		[ "$fmt" = ustar ] && sparse=
		tar --format="$fmt" $sparse -C "$src" -cf "$out/$fmt.tar" . \
			>> "$out.log" 2>&1 || [ -s "$out/$fmt.tar" ] ||
			fail "tar --format=$fmt failed: $(tail -n 3 "$out.log")"
	done
	/usr/bin/python3 - "$src" "$out" <<'PY' || fail "python tarfile failed"
import sys, tarfile
src, out = sys.argv[1], sys.argv[2]
for name, fmt in (("pygnu", tarfile.GNU_FORMAT), ("pypax", tarfile.PAX_FORMAT)):
    with tarfile.open("%s/%s.tar" % (out, name), "w", format=fmt) as t:
        t.add(src, arcname=".")
PY
	for fmt in gnu posix ustar pygnu pypax; do
		mkdir -p "$ext/$fmt.tar"
		tar -xf "$out/$fmt.tar" -C "$ext/$fmt.tar" --no-same-owner \
			>> "$out.log" 2>&1 ||
			fail "tar -x $fmt.tar failed: $(tail -n 3 "$out.log")"
	done
}

sl_make_bad() {
	local out=$1 ext=$2
	mkdir -p "$out" "$ext"
	/usr/bin/python3 - "$out" "$ext" <<'PY' || fail "making bad shards failed"
import io, os, sys, tarfile
out, ext = sys.argv[1], sys.argv[2]
def files(n):
    return [("f%d.bin" % i, bytes([65 + i]) * (1500 + i)) for i in range(n)]
def build(fs):
    b = io.BytesIO()
    offs = []
    with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in fs:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            offs.append(b.tell())
            t.addfile(ti, io.BytesIO(data))
    return bytearray(b.getvalue()), offs
def expect(name, fs):
    d = os.path.join(ext, name)
    os.makedirs(d)
    for n, data in fs:
        with open(os.path.join(d, n), "wb") as f:
            f.write(data)
fs = files(5)
img, offs = build(fs)
# Truncated in the middle of the 4th member's data.
open(os.path.join(out, "trunc.tar"), "wb").write(img[:offs[3] + 512 + 700])
expect("trunc.tar", fs[:3])
# The 3rd header's checksum broken.
bad = bytearray(img)
bad[offs[2] + 148:offs[2] + 156] = b"0000000\0"
open(os.path.join(out, "badsum.tar"), "wb").write(bad)
expect("badsum.tar", fs[:2])
# Not a tar at all.
open(os.path.join(out, "junk.tar"), "wb").write(os.urandom(7000))
expect("junk.tar", [])
# A valid tar with no members.
b = io.BytesIO()
tarfile.open(fileobj=b, mode="w").close()
open(os.path.join(out, "zero.tar"), "wb").write(b.getvalue())
expect("zero.tar", [])
PY
}

# Names, types, sizes (files) and targets (symlinks) of a tree.
sl_listing() {
	(cd "$1" && find . -mindepth 1 \( -type d -printf '%P d\n' \) -o \
		\( -type f -printf '%P f %s\n' \) -o \
		\( -type l -printf '%P l %l\n' \) -o -printf '%P other\n') |
		LC_ALL=C sort
}

sl_sums() {
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 -r -P 4 -n 20 sha256sum) | LC_ALL=C sort -k 2
}

sl_compare() {
	local got=$1 want=$2 what=$3 t
	t=$(tmpdir_new)
	sl_listing "$got" > "$t/got.list" || fail "$what: cannot list $got"
	sl_listing "$want" > "$t/want.list"
	cmp -s "$t/got.list" "$t/want.list" ||
		fail "$what: listing differs: $(diff "$t/want.list" "$t/got.list" | head -n 6)"
	sl_sums "$got" > "$t/got.sums" || fail "$what: cannot read every file of $got"
	sl_sums "$want" > "$t/want.sums"
	cmp -s "$t/got.sums" "$t/want.sums" ||
		fail "$what: contents differ: $(diff "$t/want.sums" "$t/got.sums" | head -n 6)"
}

# Reads at random offsets and lengths of every regular file (symlinks
# skipped), compared with the extraction.
sl_odd_reads() {
	/usr/bin/python3 - "$1" "$2" <<'PY' || fail "odd-offset reads differ"
import os, random, sys
exp, mnt = sys.argv[1], sys.argv[2]
rng = random.Random(11)
bad = 0
for d, _, names in sorted(os.walk(exp)):
    for n in sorted(names):
        p = os.path.join(d, n)
        if os.path.islink(p):
            continue
        rel = os.path.relpath(p, exp)
        size = os.path.getsize(p)
        with open(p, "rb") as a, open(os.path.join(mnt, rel), "rb") as b:
            for _ in range(4):
                off = rng.randrange(0, size + 10)
                ln = rng.choice([1, 511, 4097, 65537, rng.randrange(1, 1 << 21)])
                a.seek(off); b.seek(off)
                if a.read(ln) != b.read(ln):
                    print("differs: %s at %d+%d" % (rel, off, ln))
                    bad += 1
sys.exit(1 if bad else 0)
PY
}

sl_stat() {
	local mnt=$1
	shift
	/usr/bin/python3 - "$mnt/.shardfs/stats" "$@" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[k]
print(str(v).lower() if isinstance(v, bool) else v)
PY
}

sl_crc_fix() {
	/usr/bin/python3 - "$1" <<'PY'
import struct, sys
def crc32c(data, crc=0):
    tab = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tab.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = tab[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
hlen = struct.unpack_from("<I", d, 12)[0]
struct.pack_into("<I", d, 20, crc32c(d[hlen:]))
struct.pack_into("<I", d, 16, 0)
struct.pack_into("<I", d, 16, crc32c(d[:hlen]))
open(p, "wb").write(d)
PY
}

# sl_tar_mount_checks SOURCE DATA T RM_FN PUT_FN
#   The listing-mode checks shared by t_tar_mount_local and _s3. DATA is
#   the local copy of what SOURCE holds (made by sl_make_shards and
#   sl_make_bad into DATA, extractions in T/ext), plus DATA/sub/inner.tar,
#   DATA/notes.txt and DATA/gone.tar. RM_FN KEY deletes a key of SOURCE,
#   PUT_FN FILE KEY replaces one (KEY relative to SOURCE).
sl_tar_mount_checks() {
	local src=$1 data=$2 t=$3 rm_fn=$4 put_fn=$5 m fmt b n
	m="$t/m"
	mc_mount "$src" "$m" --log-file "$t/tar.log" --log-level info \
		--cache-dir "$t/cache"
	# Shards show as directories, other objects as files; the listing
	# is what tar -x extracts, byte for byte.
	[ -d "$m/gnu.tar" ] || fail "gnu.tar is not a directory"
	[ -f "$m/notes.txt" ] || fail "notes.txt is not a file"
	for fmt in gnu posix ustar pygnu pypax; do
		sl_compare "$m/$fmt.tar" "$t/ext/$fmt.tar" "$fmt.tar"
	done
	sl_compare "$m/sub/inner.tar" "$t/ext/gnu.tar" "sub/inner.tar"
	expect_eq "$(readlink "$m/gnu.tar/link-rel")" a.txt "readlink link-rel"
	expect_eq "$(cat "$m/posix.tar/link-rel")" hello "reading through a symlink"
	sl_odd_reads "$t/ext/posix.tar" "$m/posix.tar"
	# Damaged shards: the members before the damage, logged once each.
	for b in trunc badsum junk zero; do
		sl_compare "$m/$b.tar" "$t/ext/$b.tar" "$b.tar"
		ls "$m/$b.tar" > /dev/null
	done
	for b in trunc badsum junk; do
		n=$(grep -c "shard $b.tar of .* is damaged" "$t/tar.log" || true)
		expect_eq "$n" 1 "log lines for damaged $b.tar: $(cat "$t/tar.log")"
	done
	! grep -q "zero.tar" "$t/tar.log" || fail "zero.tar logged: $(cat "$t/tar.log")"
	expect_eq "$(sl_stat "$m" shards indexed)" 10 "shards indexed"
	expect_eq "$(sl_stat "$m" shards damaged)" 3 "damaged shards"
	expect_eq "$(sl_stat "$m" requests head)" 0 "HEAD requests"
	# A shard that cannot be read: EIO in it, one log line.
	"$rm_fn" gone.tar
	for _ in 1 2; do
		if ls "$m/gone.tar" > "$t/out" 2> "$t/err"; then
			fail "listing a deleted shard succeeded"
		fi
		grep -q 'Input/output error' "$t/err" || fail "gone.tar: not EIO: $(cat "$t/err")"
	done
	n=$(grep -c "shard gone.tar of .* cannot be read" "$t/tar.log" || true)
	expect_eq "$n" 1 "log lines for the unreadable gone.tar"
	cmp "$m/gnu.tar/big/3mib.bin" "$t/ext/gnu.tar/big/3mib.bin" ||
		fail "other shards stopped working"
	# A shard replaced after it was indexed: what is not cached yet
	# reads as EIO, one line naming it. (What the read cache holds is
	# the old version, whole and consistent: sl_compare read every
	# member, so a fresh mount that fetches members, not whole shards,
	# holds nothing of the shard but a.txt.)
	mc_umount "$m"
	mc_mount "$src" "$m" --log-file "$t/tar2.log" --log-level info \
		--cache-dir "$t/cache" --prefetch=member
	cmp "$m/pygnu.tar/a.txt" "$t/ext/pygnu.tar/a.txt" || fail "pygnu.tar/a.txt"
	"$put_fn" "$data/gnu.tar" pygnu.tar
	mc_drop_caches
	for f in exact/512.bin exact/1024.bin big/100k.bin; do
		if cat "$m/pygnu.tar/$f" > "$t/out" 2> "$t/err"; then
			fail "reading $f of a replaced shard succeeded"
		fi
		grep -q 'Input/output error' "$t/err" || fail "$f: not EIO: $(cat "$t/err")"
	done
	cmp "$m/pygnu.tar/a.txt" "$t/ext/pygnu.tar/a.txt" ||
		fail "a.txt, cached before the change, no longer reads"
	n=$(grep -c "shard pygnu.tar changed since it was indexed" "$t/tar2.log" || true)
	expect_eq "$n" 1 "log lines for the replaced pygnu.tar: $(cat "$t/tar2.log")"
	cmp "$m/pypax.tar/big/100k.bin" "$t/ext/pypax.tar/big/100k.bin" ||
		fail "other shards stopped working after a replaced one"
	mc_check_control "$m"
	mc_umount "$m"

	# A second mount finds the shard indexes in the cache: no scan.
	mc_mount "$src" "$m" --cache-dir "$t/cache"
	ls "$m/gnu.tar" "$m/posix.tar" > /dev/null
	expect_eq "$(sl_stat "$m" shards from_cache)" 2 "shards from the cache"
	sl_compare "$m/posix.tar" "$t/ext/posix.tar" "posix.tar from the cache"
	mc_umount "$m"

	# --tar=file: the raw tar bytes.
	mc_mount "$src" "$m" --tar=file
	[ -f "$m/gnu.tar" ] || fail "--tar=file: gnu.tar is not a file"
	cmp "$m/gnu.tar" "$data/gnu.tar" || fail "--tar=file: gnu.tar differs"
	cmp "$m/sub/inner.tar" "$data/sub/inner.tar" || fail "--tar=file: inner.tar"
	expect_eq "$(sl_stat "$m" shards indexed)" 0 "--tar=file: shards indexed"
	mc_umount "$m"
}

# sl_make_dataset SRC OUT ETAG: packs the tree SRC into OUT/shard-0.tar
# (GNU tar, pax, sparse-aware: the sparse file, the long names and the
# unicode directory) and OUT/shard-{1,2,3}.tar (Python's tarfile, every
# other entry round-robin, so that directories span shards), then writes
# OUT/shardfs.idx with mkdsidx (ETAG: md5 for S3, local for a directory).
sl_make_dataset() {
	local src=$1 out=$2 etag=$3
	mkdir -p "$out"
	(cd "$src" && tar --format=posix --sparse -cf "$out/shard-0.tar" \
		sparse.img long ünïcødé-日本) || fail "tar shard-0 failed"
	/usr/bin/python3 - "$src" "$out" <<'PY' || fail "packing the dataset failed"
import os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
skip = ("sparse.img", "long", "ünïcødé-日本")
entries = []
for d, dirs, names in os.walk(src):
    dirs.sort()
    rel = os.path.relpath(d, src)
    if rel.split(os.sep)[0] in skip:
        continue
    if rel != ".":
        entries.append(rel)
    for n in sorted(names + [x for x in dirs if os.path.islink(os.path.join(d, x))]):
        r = os.path.normpath(os.path.join(rel, n))
        if r.split(os.sep)[0] not in skip:
            entries.append(r)
tars = [tarfile.open("%s/shard-%d.tar" % (out, i), "w", format=tarfile.PAX_FORMAT)
        for i in (1, 2, 3)]
for i, r in enumerate(entries):
    tars[i % 3].add(os.path.join(src, r), arcname=r, recursive=False)
for t in tars:
    t.close()
PY
	"$SHARDFS_BUILD/tests/mkdsidx" -C "$out" --etag "$etag" \
		"$out/shardfs.idx" shard-0.tar shard-1.tar shard-2.tar \
		shard-3.tar || fail "mkdsidx failed"
}

# sl_bad_index_mount SOURCE T PATTERN: mounting must fail with one line
# matching PATTERN, exit 1, nothing mounted, no daemon.
sl_bad_index_mount() {
	local src=$1 t=$2 pat=$3 st=0
	mkdir -p "$t/bad"
	timeout 60 "$SHARDFS_BIN" mount "$src" "$t/bad" > "$t/out" 2> "$t/err" || st=$?
	expect_eq "$st" 1 "mount with a bad index ($(cat "$t/err"))"
	grep -Eq "$pat" "$t/err" || fail "'$pat' not in: $(cat "$t/err")"
	expect_eq "$(wc -l < "$t/err")" 1 "lines of the error ($(cat "$t/err"))"
	! mc_is_mounted "$t/bad" || fail "something is mounted after a bad index"
	[ -z "$(mc_daemon_pid "$(realpath "$t/bad")")" ] || fail "a daemon is left"
}

# sl_dsidx_checks SOURCE DATA T PUT_FN: the dataset-index checks shared by
# t_dsidx_mount_local and _s3. DATA holds what sl_make_dataset wrote (and
# SOURCE a copy of it); T/src the tree it came from. PUT_FN FILE KEY
# replaces a key of SOURCE.
sl_dsidx_checks() {
	local src=$1 data=$2 t=$3 put_fn=$4 m n f
	m="$t/m"
	mc_mount "$src" "$m" --log-file "$t/idx.log"
	# One GET, no LIST, no HEAD to mount.
	expect_eq "$(sl_stat "$m" requests get)" 1 "GETs to mount"
	expect_eq "$(sl_stat "$m" requests list)" 0 "LISTs to mount"
	expect_eq "$(sl_stat "$m" requests head)" 0 "HEADs to mount"
	expect_eq "$(sl_stat "$m" dataset_index loaded)" true "index loaded"
	n=$(find "$t/src" -mindepth 1 ! -type d | wc -l)
	expect_eq "$(sl_stat "$m" dataset_index members)" "$n" "members in the index"
	# Lazy inodes: the root, the control directory and its files only.
	expect_eq "$(sl_stat "$m" namespace inodes)" 4 "inodes right after mount"
	# The merged tree is the source tree, byte for byte.
	sl_compare "$m" "$t/src" "the dataset index tree"
	sl_odd_reads "$t/src" "$m"
	expect_eq "$(sl_stat "$m" requests list)" 0 "LISTs after reading everything"
	expect_eq "$(sl_stat "$m" requests head)" 0 "HEADs after reading everything"
	[ ! -e "$m/shardfs.idx" ] || fail "the index shows in its own tree"
	mc_check_control "$m"
	# A shard overwritten after mount: its members read as EIO with one
	# log line naming it; the other shards are fine. (A fresh mount: the
	# read cache holds the old version of everything read above.)
	mc_umount "$m"
	mc_mount "$src" "$m" --log-file "$t/idx2.log" --prefetch=member
	"$put_fn" "$data/shard-2.tar" shard-1.tar
	mc_drop_caches
	for f in $(cd "$t/src" && tar -tf "$data/shard-1.tar" | head -n 40); do
		[ -f "$t/src/$f" ] && [ ! -L "$t/src/$f" ] && [ -s "$t/src/$f" ] || continue
		if cat "$m/$f" > "$t/out" 2> "$t/err"; then
			fail "reading $f of an overwritten shard succeeded"
		fi
		grep -q 'Input/output error' "$t/err" || fail "$f: not EIO: $(cat "$t/err")"
	done
	n=$(grep -c "shard shard-1.tar changed since it was indexed" "$t/idx2.log" || true)
	expect_eq "$n" 1 "log lines naming the overwritten shard-1.tar: $(cat "$t/idx2.log")"
	for f in $(tar -tf "$data/shard-3.tar" | head -n 20); do
		[ -f "$t/src/$f" ] && [ ! -L "$t/src/$f" ] || continue
		cmp "$m/$f" "$t/src/$f" || fail "$f of another shard differs"
	done
	cmp "$m/sparse.img" "$t/src/sparse.img" || fail "the sparse file differs"
	mc_umount "$m"
	"$put_fn" "$data/shard-1.tar" shard-1.tar
}

# sl_bad_index_checks SOURCE T DATA PUT_FN: corrupt, truncated, unknown
# version and out-of-range indexes fail the mount; --ignore-index lists.
sl_bad_index_checks() {
	local src=$1 t=$2 data=$3 put_fn=$4 len
	len=$(stat -c %s "$data/shardfs.idx")
	cp "$data/shardfs.idx" "$t/idx.good"
	# A flipped byte in the body: bad checksum.
	cp "$t/idx.good" "$t/idx.crc"
	printf '\xff' | dd of="$t/idx.crc" bs=1 seek=$((len - 3)) conv=notrunc status=none
	"$put_fn" "$t/idx.crc" shardfs.idx
	sl_bad_index_mount "$src" "$t" 'shardfs.idx of .* is not a valid dataset index .*checksum.*--ignore-index'
	# Truncated.
	head -c $((len - 100)) "$t/idx.good" > "$t/idx.trunc"
	"$put_fn" "$t/idx.trunc" shardfs.idx
	sl_bad_index_mount "$src" "$t" 'not a valid dataset index .*(truncated|total|length|short)'
	# An unknown major version (checksums made valid again).
	cp "$t/idx.good" "$t/idx.ver"
	printf '\x09\x00' | dd of="$t/idx.ver" bs=1 seek=8 conv=notrunc status=none
	sl_crc_fix "$t/idx.ver"
	"$put_fn" "$t/idx.ver" shardfs.idx
	sl_bad_index_mount "$src" "$t" 'not a valid dataset index .*version'
	# A member whose data lies outside its shard.
	cp "$t/idx.good" "$t/idx.off"
	/usr/bin/python3 - "$t/idx.off" <<'PY'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
moff, mcount, mlen = struct.unpack_from("<QII", d, 80)
for i in range(mcount):
    rec = moff + i * mlen
    shard = struct.unpack_from("<I", d, rec + 4)[0]
    if shard != 0xFFFFFFFF:
        struct.pack_into("<Q", d, rec + 8, 1 << 40)
        break
open(p, "wb").write(d)
PY
	sl_crc_fix "$t/idx.off"
	"$put_fn" "$t/idx.off" shardfs.idx
	sl_bad_index_mount "$src" "$t" 'not a valid dataset index .*(offset|shard)'
	# --ignore-index: listing mode, shards as directories, the index a file.
	mc_mount "$src" "$t/m" --ignore-index --no-index-cache
	[ -f "$t/m/shardfs.idx" ] || fail "--ignore-index: shardfs.idx is not shown"
	[ -d "$t/m/shard-0.tar" ] || fail "--ignore-index: shard-0.tar is not a directory"
	cmp "$t/m/shard-0.tar/sparse.img" "$t/src/sparse.img" ||
		fail "--ignore-index: sparse.img differs"
	expect_eq "$(sl_stat "$t/m" dataset_index loaded)" false "--ignore-index: index loaded"
	[ "$(sl_stat "$t/m" requests list)" -ge 1 ] || fail "--ignore-index: no LIST"
	mc_umount "$t/m"
	"$put_fn" "$t/idx.good" shardfs.idx
}
