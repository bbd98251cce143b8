#!/usr/bin/env python3
"""Writes the HEAD tree of a git directory into a folder, for benchmark corpora.

Usage: scripts/export-snapshot.py GIT_DIR DEST

The snapshots the tool library's `fetch` brings (../shared/spec/perf-anchors.md: the
106k-file corpus of test262, RIOT, NuttX and Kafka) lack some blobs (files of 4 MiB and
more, a few others), which makes `git archive` abort. This writes every blob the
snapshot holds, recreates symlinks as symlinks, and reports how many it skipped. For
example, for `cargo bench --bench daemon_index` with `REDCTX_BENCH_TREE`:

    for name in tc39/test262:test262 RIOT-OS/RIOT:riot apache/nuttx:nuttx apache/kafka:kafka; do
        repo=${name%%:*}; scripts/export-snapshot.py /work/.mirror/${repo/\\//+}/repo "$CORPUS/${name##*:}"
    done
"""
import os
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    git_dir, dest = sys.argv[1], os.fsencode(sys.argv[2])
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "HEAD"],
        capture_output=True, check=True,
    ).stdout
    blobs = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            blobs.append((mode, sha, path))
    reader = subprocess.Popen(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    missing = 0
    for mode, sha, path in blobs:
        reader.stdin.write(sha + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            missing += 1
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)  # the newline after each object
        out = os.path.join(dest, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if mode == b"120000":
            if not os.path.lexists(out):
                os.symlink(data, out)
        else:
            with open(out, "wb") as f:
                f.write(data)
    reader.stdin.close()
    reader.wait()
    print(f"{os.fsdecode(dest)}: {len(blobs) - missing} files written, {missing} missing from the snapshot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
