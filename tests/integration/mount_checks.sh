# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Reusable checks of a shardfs mount, sourced by the t_mount_* tests after
# lib.sh (which provides on_exit, tmpdir_new, fail and expect_eq):
#
#   mc_gen_tree DIR
#       writes a tree of 2,100 files (0 B .. 3 MiB, nested directories,
#       a few odd names, no empty directories so that S3 can hold it too)
#   mount_check_tree SOURCE EXPECTED [MOUNT_OPTION...]
#       mounts SOURCE (a directory, file://DIR or s3://BUCKET/PREFIX) and
#       checks it against the local tree EXPECTED: names, types and sizes;
#       the SHA-256 of every file, read by 8 processes at once; reads at
#       odd offsets and lengths; the control directory; EROFS for writes;
#       then unmounts and checks that no daemon is left.
#   mc_mount SOURCE MNT [MOUNT_OPTION...]    mount, cleaned up on exit
#   mc_umount MNT                            shardfs umount + checks
#   mc_daemon_pid MNT                        pid of MNT's daemon, or ""
#
# Every mount made here is unmounted when the test exits, pass or fail.

MC_MOUNTS=()

# Lazily unmounts whatever is left and kills its daemon (on exit).
mc_cleanup() {
	local m pid
	for m in "${MC_MOUNTS[@]}"; do
		pid=$(mc_daemon_pid "$m")
		if mc_is_mounted "$m"; then
			umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true
		fi
		[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
	done
}
on_exit mc_cleanup

# Prints the pid of the (non-zombie) daemon serving MNT, if any.
mc_daemon_pid() {
	local mnt=$1 p cmd state
	for p in /proc/[0-9]*; do
		cmd=$(tr '\0' ' ' 2>/dev/null < "$p/cmdline") || continue
		case "$cmd" in
		*shardfs*" mount "*" $mnt "*) ;;
		*) continue ;;
		esac
		state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "$p/status" 2>/dev/null)
		[ "$state" = Z ] || [ "$state" = X ] || [ -z "$state" ] && continue
		echo "${p#/proc/}"
		return 0
	done
}

# True when MNT is a shardfs mount (live or dead) in mountinfo.
mc_is_mounted() {
	local mnt
	mnt=$(realpath -m "$1" 2>/dev/null || echo "$1")
	awk -v m="$mnt" '{ for (i = 7; i <= NF; i++) if ($i == "-") break }
		$5 == m && $(i + 1) == "fuse.shardfs" { found = 1 }
		END { exit !found }' /proc/self/mountinfo
}

mc_mount() {
	local src=$1 mnt=$2
	shift 2
	mkdir -p "$mnt"
	mnt=$(realpath "$mnt")
	MC_MOUNTS+=("$mnt")
	timeout 60 "$SHARDFS_BIN" mount "$@" "$src" "$mnt" ||
		fail "shardfs mount $* $src $mnt failed"
	mc_is_mounted "$mnt" || fail "mount returned 0 but $mnt is not mounted"
}

mc_umount() {
	local mnt pid st=0
	mnt=$(realpath -m "$1")
	pid=$(mc_daemon_pid "$mnt")
	[ -n "$pid" ] || fail "no daemon found for $mnt"
	timeout 90 "$SHARDFS_BIN" umount "$mnt" || st=$?
	expect_eq "$st" 0 "exit status of shardfs umount $mnt"
	! mc_is_mounted "$mnt" || fail "$mnt still mounted after umount"
	[ -z "$(mc_daemon_pid "$mnt")" ] || fail "daemon $pid still running after umount"
}

mc_gen_tree() {
	/usr/bin/python3 - "$1" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(20240601)
def put(rel, size):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(rng.randbytes(size))
edges = [0, 1, 2, 511, 512, 4095, 4096, 4097, 65535, 65536, 131071, 131072,
         131073, 1048575, 1048576, 1048577, 3 * 1048576]
for i, size in enumerate(edges):
    put("edges/e%02d-%d.bin" % (i, size), size)
odd = ["odd/with space.txt", "odd/ünïcødé-日本.txt", "odd/plus+percent%41.txt",
       "odd/.hidden", "odd/tilde~eq=amp&.txt", "odd/-dash", "odd/x" * 1 + "y" * 200]
for name in odd:
    put(name, rng.randrange(0, 3000))
n = len(edges) + len(odd)
i = 0
while n < 2100:
    depth = rng.randrange(1, 5)
    parts = ["d%d" % rng.randrange(0, 6) for _ in range(depth)]
    r = rng.random()
    if r < 0.90:
        size = rng.randrange(0, 32 * 1024)
    elif r < 0.99:
        size = rng.randrange(32 * 1024, 512 * 1024)
    else:
        size = rng.randrange(1024 * 1024, 3 * 1024 * 1024 + 1)
    put("/".join(parts + ["f%05d.dat" % i]), size)
    i += 1
    n += 1
PY
}

# Names, types and sizes (directories without their size) of a tree.
mc_listing() {
	(cd "$1" && find . -mindepth 1 \( -type d -printf '%P d\n' \) -o \
		\( -type f -printf '%P f %s\n' \) -o -printf '%P other\n') | LC_ALL=C sort
}

# SHA-256 of every file of a tree, computed by 8 processes at once.
mc_sums() {
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 -P 8 -n 40 sha256sum) | LC_ALL=C sort -k 2
}

mc_drop_caches() {
	sync
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
}

# Reads at random odd offsets and lengths, compared with the source.
mc_check_odd_reads() {
	/usr/bin/python3 - "$1" "$2" <<'PY' || fail "odd-offset reads differ"
import os, random, sys
exp, mnt = sys.argv[1], sys.argv[2]
rng = random.Random(7)
files = []
for d, _, names in os.walk(exp):
    for n in names:
        p = os.path.join(d, n)
        files.append((os.path.relpath(p, exp), os.path.getsize(p)))
files.sort()
big = [f for f in files if f[1] > 100000]
pick = rng.sample(files, min(150, len(files))) + big[:40]
bad = 0
for rel, size in pick:
    a = os.open(os.path.join(exp, rel), os.O_RDONLY)
    b = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    for _ in range(6):
        off = rng.randrange(0, size + 10)
        ln = rng.choice([1, 3, 4095, 4097, 65537, 200001, rng.randrange(1, 1 << 20)])
        x, y = os.pread(a, ln, off), os.pread(b, ln, off)
        if x != y:
            print("differs: %s at %d+%d (%d vs %d bytes)" % (rel, off, ln, len(x), len(y)))
            bad += 1
    os.close(a)
    os.close(b)
sys.exit(1 if bad else 0)
PY
}

# Every write must fail with "Read-only file system".
mc_check_erofs() {
	local mnt=$1 f out
	f=$(cd "$mnt" && find . -type f ! -name '* *' | LC_ALL=C sort | sed -n 1p)
	f="$mnt/${f#./}"
	local -a cmds=(
		"touch|$mnt/new-file" "mkdir|$mnt/new-dir" "rm -f|$f"
		"mv|$f|$mnt/moved" "touch|$f" "ln -s x|$mnt/link"
	)
	local c
	for c in "${cmds[@]}"; do
		local -a argv
		IFS='|' read -r -a argv <<< "$c"
		# shellcheck disable=SC2086
		if out=$(${argv[0]} "${argv[@]:1}" 2>&1); then
			fail "write succeeded: $c"
		fi
		case "$out" in
		*"Read-only file system"*) ;;
		*) fail "$c: expected EROFS, got: $out" ;;
		esac
	done
	if out=$( (echo data > "$f") 2>&1); then
		fail "echo > $f succeeded"
	fi
	case "$out" in
	*"Read-only file system"*) ;;
	*) fail "echo > $f: expected EROFS, got: $out" ;;
	esac
	[ ! -e "$mnt/new-file" ] || fail "new-file appeared"
	[ -e "$f" ] || fail "$f vanished"
}

mc_check_control() {
	local mnt=$1 v
	ls -a "$mnt" | grep -qx '.shardfs' && fail ".shardfs listed by readdir"
	[ -d "$mnt/.shardfs" ] || fail ".shardfs does not answer lookup"
	v=$(cat "$mnt/.shardfs/version") || fail "cannot read .shardfs/version"
	case "$v" in
	"shardfs "[0-9]*) ;;
	*) fail "unexpected .shardfs/version: $v" ;;
	esac
}

mount_check_tree() {
	local src=$1 exp=$2
	shift 2
	local t mnt
	t=$(tmpdir_new)
	mnt="$t/mnt"
	mc_mount "$src" "$mnt" "$@"
	mnt=$(realpath "$mnt")

	# Cold cache: 8 processes read different files at once.
	mc_sums "$mnt" > "$t/got.sums"
	mc_sums "$exp" > "$t/want.sums"
	cmp -s "$t/got.sums" "$t/want.sums" ||
		fail "contents differ: $(diff "$t/want.sums" "$t/got.sums" | head -n 5)"
	expect_eq "$(wc -l < "$t/got.sums")" "$(wc -l < "$t/want.sums")" "files read"

	mc_listing "$mnt" > "$t/got.list"
	mc_listing "$exp" > "$t/want.list"
	cmp -s "$t/got.list" "$t/want.list" ||
		fail "listing differs: $(diff "$t/want.list" "$t/got.list" | head -n 5)"

	mc_drop_caches
	mc_check_odd_reads "$exp" "$mnt"
	mc_check_control "$mnt"
	mc_check_erofs "$mnt"
	mc_umount "$mnt"
}
