#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One training epoch through a real torch.utils.data.DataLoader.

usage: epoch_torch.py ROOT LISTFILE WORKERS [--batch-size B] [--step-ms MS]
                      [--seed N]

A Dataset over the paths in LISTFILE (one per line, relative to ROOT) whose
items are the whole file's bytes (open, read, close, as an ImageFolder
loader does before decoding). DataLoader(shuffle=True, num_workers=WORKERS,
batch_size=B, a collate that keeps the list of bytes). The "model" sleeps
MS milliseconds per batch (a simulated training step). Prints one JSON
line: files, bytes, batches, seconds (wall, from creating the iterator to
the last batch), wait_seconds (time blocked in next(), worker start-up
included), wait_share, step_seconds (batches * step, the lower bound).
Run it with /usr/bin/python3 (Debian's python3-torch).
"""
import argparse
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, root, paths):
        self.root = root
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(os.path.join(self.root, self.paths[i]), "rb") as f:
            return f.read()


def keep_bytes(batch):
    return batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("listfile")
    ap.add_argument("workers", type=int)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(a.listfile, encoding="utf-8", errors="surrogateescape") as f:
        paths = [line.rstrip("\n") for line in f if line.strip()]
    torch.set_num_threads(1)
    loader = DataLoader(Files(a.root, paths), batch_size=a.batch_size,
                        shuffle=True, num_workers=a.workers,
                        collate_fn=keep_bytes,
                        generator=torch.Generator().manual_seed(a.seed))
    step = a.step_ms / 1000.0
    n = nbytes = batches = 0
    wait = 0.0
    t0 = time.monotonic()
    it = iter(loader)
    while True:
        t = time.monotonic()
        try:
            batch = next(it)
        except StopIteration:
            wait += time.monotonic() - t
            break
        wait += time.monotonic() - t
        n += len(batch)
        nbytes += sum(len(b) for b in batch)
        batches += 1
        time.sleep(step)  # the training step
    dt = time.monotonic() - t0
    print(json.dumps({"files": n, "bytes": nbytes, "batches": batches,
                      "seconds": round(dt, 3), "wait_seconds": round(wait, 3),
                      "wait_share": round(wait / dt, 4) if dt > 0 else 0.0,
                      "step_seconds": round(batches * step, 3)}))
    return 0 if n == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
