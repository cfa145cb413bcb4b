#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Shuffled epoch reader: P processes, each opens, reads whole and closes
its share of a shuffled file list, as DataLoader workers do.

usage: reader.py ROOT LISTFILE PROCS [SEED] [--verify SRCROOT]
LISTFILE holds one path per line, relative to ROOT. Prints one line:
  files N bytes B seconds S files_per_s F mb_per_s M errors E
and exits 1 if any read failed (or, with --verify, differed from SRCROOT).
"""
import multiprocessing as mp
import os
import random
import sys
import time


def work(args):
    root, paths, verify = args
    n = b = err = 0
    for p in paths:
        try:
            with open(os.path.join(root, p), "rb") as f:
                data = f.read()
            if verify is not None:
                with open(os.path.join(verify, p), "rb") as f:
                    if f.read() != data:
                        err += 1
                        continue
            n += 1
            b += len(data)
        except OSError as e:
            print("reader: %s: %s" % (p, e), file=sys.stderr)
            err += 1
    return n, b, err


def main():
    argv = sys.argv[1:]
    verify = None
    if "--verify" in argv:
        i = argv.index("--verify")
        verify = argv[i + 1]
        del argv[i:i + 2]
    root, listfile, procs = argv[0], argv[1], int(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 1
    with open(listfile, encoding="utf-8", errors="surrogateescape") as f:
        paths = [line.rstrip("\n") for line in f if line.strip()]
    random.Random(seed).shuffle(paths)
    shares = [(root, paths[i::procs], verify) for i in range(procs)]
    t0 = time.monotonic()
    with mp.Pool(procs) as pool:
        res = pool.map(work, shares)
    dt = time.monotonic() - t0
    n = sum(r[0] for r in res)
    b = sum(r[1] for r in res)
    err = sum(r[2] for r in res)
    print("files %d bytes %d seconds %.3f files_per_s %.0f mb_per_s %.2f errors %d"
          % (n, b, dt, n / dt, b / dt / 1e6, err))
    sys.exit(1 if err else 0)


if __name__ == "__main__":
    main()
