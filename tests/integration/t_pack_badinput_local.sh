#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shardfs pack with bad input, local side: each case gets a clear message
# and a defined result, and no dataset index is written for an incomplete
# dataset.
#   skipped with a warning, the rest packed and indexed, exit 3:
#     unreadable files and directories, names that are not UTF-8, special
#     files, symbolic link loops and dangling links with --dereference
#   abort, exit 1, no index, no temporary file left:
#     a file that changes while it is packed, SRC missing, SRC empty,
#     DEST already holding a dataset
#   usage errors, exit 2: DEST inside SRC, conflicting or bad options
#   packed: a file over 8 GiB (pax size header), read back by GNU tar and
#     Python's tarfile
set -euo pipefail
[ -w /dev/shm ] && export TMPDIR=/dev/shm # see pack_lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pack_lib.sh"

T=$(tmpdir_new)
chmod 755 "$T"
SH=$SHARDFS_BIN

# run_st WANT PATTERN CMD...: CMD exits WANT within 120 s, PATTERN on stderr.
run_st() {
	local want=$1 pat=$2 st=0
	shift 2
	timeout 120 "$@" > "$T/out" 2> "$T/err" || st=$?
	[ "$st" -ne 124 ] || fail "hung: $*"
	expect_eq "$st" "$want" "exit status of: $* ($(head -c 600 "$T/err"))"
	[ -z "$pat" ] || grep -Eq -- "$pat" "$T/err" ||
		fail "'$pat' not in the error of $*: $(cat "$T/err")"
}

# A small good tree.
mk_tree() {
	mkdir -p "$1/a" "$1/b"
	for i in 1 2 3; do
		echo "sample $i" > "$1/a/000$i.txt"
		echo "$i" > "$1/a/000$i.cls"
	done
	head -c 70000 /dev/urandom > "$1/b/data.bin"
	chmod -R a+rX "$1"
}

# --- usage errors ---
mk_tree "$T/good"
run_st 2 'usage error.*inside SRC' "$SH" pack "$T/good" "$T/good/out"
run_st 2 'usage error.*inside SRC' "$SH" pack "$T/good" "$T/good"
run_st 2 'usage error.*--overwrite and --resume' "$SH" pack --overwrite --resume "$T/good" "$T/o"
run_st 2 'usage error.*SRC and DEST' "$SH" pack "$T/good"
run_st 2 'usage error.*SRC and DEST' "$SH" pack "$T/good" "$T/o" extra
run_st 2 'usage error.*part-size' "$SH" pack --part-size 1M "$T/good" "$T/o"
run_st 2 'usage error.*two parts' "$SH" pack --memory 16M --part-size 16M "$T/good" "$T/o"
run_st 2 'usage error.*shard-size' "$SH" pack --shard-size 100K "$T/good" "$T/o"
run_st 2 'usage error.*shuffle-seed' "$SH" pack --shuffle-seed x "$T/good" "$T/o"
run_st 1 'exactly once' "$SH" pack --shard-name 'x.tar' "$T/good" "$T/o"
run_st 1 'end in .tar' "$SH" pack --shard-name 'x-{n}.zip' "$T/good" "$T/o"
run_st 1 'tokens' "$SH" pack --shard-name '{n}-{what}.tar' "$T/good" "$T/o"
[ ! -e "$T/o/shardfs.idx" ] || fail "an index after usage errors"
"$SH" pack --help | grep -q -- '--shard-name' || fail "pack --help"

# --- SRC missing or empty ---
run_st 1 "SRC .*/nope: No such file or directory" "$SH" pack "$T/nope" "$T/o2"
[ ! -e "$T/o2" ] || fail "DEST created although SRC is missing"
mkdir "$T/empty"
run_st 1 'nothing to pack' "$SH" pack "$T/empty" "$T/o3"
[ ! -e "$T/o3" ] || fail "DEST created for an empty SRC"

# --- a good pack, then refusing to pack over it ---
run_st 0 '' "$SH" pack "$T/good" "$T/gout"
run_st 1 'already holds a dataset \(shardfs.idx\)' "$SH" pack "$T/good" "$T/gout"
# Shards without an index (another tool's?) are refused too.
mkdir "$T/other"
cp "$T/gout/shard-000000.tar" "$T/other/"
run_st 1 'already holds a dataset \(shard-000000.tar\)' "$SH" pack "$T/good" "$T/other"

# --- skipped inputs: warned, the rest indexed, exit 3 ---
S=$T/skips
mk_tree "$S"
mkdir -p "$S/locked" "$S/lockedfile"
echo secret > "$S/locked/inside"
echo secret > "$S/lockedfile/private"
chmod 000 "$S/locked"
chmod 000 "$S/lockedfile/private"
touch "$S/bad$(printf '\xff\xfe')name.txt"
mkfifo "$S/a/fifo"
mkdir "$T/sout"
chmod 777 "$T/sout"
# As root every file is readable: run as nobody.
run_st 3 '' setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$SH" pack "$S" "$T/sout"
grep -q "skipping locked: Permission denied" "$T/err" || fail "locked dir: $(cat "$T/err")"
grep -q "skipping lockedfile/private: Permission denied" "$T/err" || fail "locked file: $(cat "$T/err")"
grep -q 'skipping bad\\xff\\xfename.txt: name is not valid UTF-8' "$T/err" || fail "UTF-8: $(cat "$T/err")"
grep -q "skipping a/fifo: not a regular file" "$T/err" || fail "fifo: $(cat "$T/err")"
grep -q "some inputs were skipped" "$T/out" || fail "summary: $(cat "$T/out")"
[ -s "$T/sout/shardfs.idx" ] || fail "no index for the packed rest"
pk_extract "$T/sout" "$T/sx"
rm -rf "$S/locked" "$S/lockedfile/private" "$S/bad$(printf '\xff\xfe')name.txt" "$S/a/fifo"
chmod 755 "$T/sx"
diff -r "$S" "$T/sx" || fail "the packed rest differs"

# --- symbolic links: kept as links; loops only matter with -L ---
L=$T/links
mk_tree "$L"
ln -s .. "$L/a/up"       # a loop when followed
ln -s loop2 "$L/loop1"   # a link loop
ln -s loop1 "$L/loop2"
ln -s missing "$L/dangling"
ln -s a/0001.txt "$L/tofile"
run_st 0 '' "$SH" pack "$L" "$T/lout"
tar -tvf "$T/lout/shard-000000.tar" > "$T/list"
grep -q 'a/up -> \.\.' "$T/list" || fail "link a/up not stored: $(cat "$T/list")"
grep -q 'loop1 -> loop2' "$T/list" || fail "link loop1 not stored: $(cat "$T/list")"
run_st 3 'skipping a/up: symbolic link loop' "$SH" pack -L "$L" "$T/lout2"
grep -q 'skipping loop1: symbolic link loop' "$T/err" || fail "loop1: $(cat "$T/err")"
grep -q 'skipping dangling: dangling symbolic link' "$T/err" || fail "dangling: $(cat "$T/err")"
tar -tvf "$T/lout2/shard-000000.tar" > "$T/list"
grep -q '^-.* tofile$' "$T/list" || fail "-L did not follow tofile: $(cat "$T/list")"

# --- a file that changes while it is packed: abort, no index ---
# A writer appends to the file packed last while 40 MB are packed before
# it. Whether the writer runs in that window is up to the scheduler (the
# test machines are busy), so up to 5 tries: each run that does not abort
# must be a complete dataset, and one must abort.
C=$T/changing
mk_tree "$C"
for i in $(seq 200); do head -c 200000 /dev/urandom > "$C/b/f$i"; done
mkdir -p "$C/zz"
echo start > "$C/zz/growing.log"
( while :; do echo more >> "$C/zz/growing.log"; done ) &
writer=$!
on_exit "kill $writer 2>/dev/null || true"
aborted=
for try in 1 2 3 4 5; do
	st=0
	"$SH" pack "$C" "$T/cout$try" > "$T/out" 2> "$T/err" || st=$?
	if [ "$st" -eq 0 ]; then
		[ -s "$T/cout$try/shardfs.idx" ] || fail "exit 0 without an index"
		continue
	fi
	expect_eq "$st" 1 "exit status with a changing file ($(cat "$T/err"))"
	grep -Eq 'zz/growing.log changed .*; no index written' "$T/err" ||
		fail "message for a changing file: $(cat "$T/err")"
	[ ! -e "$T/cout$try/shardfs.idx" ] || fail "an index after a file changed"
	ls -a "$T/cout$try" | grep -q '^\.shardfs-tmp' && fail "temporary files left after the abort"
	aborted=$try
	break
done
kill "$writer"
wait "$writer" 2>/dev/null || true
[ -n "$aborted" ] || fail "the growing file was never noticed in 5 runs"
# --resume packs it once it stands still.
run_st 0 '' "$SH" pack --resume "$C" "$T/cout$aborted"
[ -s "$T/cout$aborted/shardfs.idx" ] || fail "no index after --resume"

# --- a file over 8 GiB: a pax size header; GNU tar and tarfile agree ---
G=$T/huge
mkdir -p "$G"
printf 'head' > "$G/big.bin"
truncate -s $((8 * 1024 * 1024 * 1024 + 4096)) "$G/big.bin"
printf 'tail' >> "$G/big.bin"
echo small > "$G/small.txt"
run_st 0 '' "$SH" pack --shard-size 1M "$G" "$T/gout8"
size=$(stat -c %s "$G/big.bin")
t=
for f in "$T"/gout8/shard-*.tar; do
	tar -tvf "$f" > "$T/list" || fail "GNU tar cannot list $f"
	if grep -q ' big.bin$' "$T/list"; then
		t=$f
		grep -Eq " $size .* big\.bin\$" "$T/list" || fail "GNU tar: $(cat "$T/list")"
	fi
done
[ -n "$t" ] || fail "big.bin is in no shard"
/usr/bin/python3 - "$t" "$size" <<'PY' || fail "tarfile disagrees about big.bin"
import sys, tarfile
t, size = sys.argv[1], int(sys.argv[2])
with tarfile.open(t) as tf:
    m = tf.getmember("big.bin")
    assert m.size == size, (m.size, size)
    assert "size" in m.pax_headers, m.pax_headers
    with open(t, "rb") as f:
        f.seek(m.offset_data)
        assert f.read(4) == b"head"
        f.seek(m.offset_data + size - 4)
        assert f.read(4) == b"tail"
PY
pass "bad input handled"
