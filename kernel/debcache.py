#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The cache of latnice_*.deb that the system mode boots, shared with the install test.

One package per tree: its key is the sha256 of git's files of the tree
(tracked and untracked, not ignored) outside kernel/, tests/ and .ci/,
which no installed file comes from. vmsystem.py builds the package on a
miss; tests/install/test-package.sh, which builds it anyway (and shows a
second build byte-identical), stores its first build here so that the
system mode does not build it a third time. Whoever builds or stores holds
DEB_CACHE/.lock, so a reader waits for a build under way instead of
starting its own.

  debcache.py key            this tree's key
  debcache.py lock           the lock file's path (created)
  debcache.py store KEY DEB  store DEB under KEY (the key the tree had
                             when DEB's build began; the caller holds the
                             lock)

Python 3 standard library only.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
DEB_CACHE = os.environ.get("LATNICE_DEB_CACHE", "/var/cache/latnice/deb")


class NotATree(Exception):
    pass


def tree_files():
    """The tree as a clean clone has it: git's files (tracked and untracked, not ignored)."""
    p = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        raise NotATree("%s is not a git work tree (the package is built from git's file list)" % SRC)
    return sorted(f for f in set(p.stdout.decode().split("\0"))
                  if f and (os.path.isfile(os.path.join(SRC, f)) or os.path.islink(os.path.join(SRC, f))))


def key(files):
    h = hashlib.sha256()
    # kernel/ (the VM tests and the series), tests/ and .ci/ are in no file the package
    # installs (the unit suite runs in the build, not from the package): editing a test does not
    # rebuild it.
    for f in (f for f in files if not f.startswith(("kernel/", "tests/", ".ci/"))):
        path = os.path.join(SRC, f)
        h.update(f.encode() + b"\0")
        h.update(os.readlink(path).encode() if os.path.islink(path) else open(path, "rb").read())
        h.update(b"\0")
    return h.hexdigest()


def lock_path():
    os.makedirs(DEB_CACHE, exist_ok=True)
    return os.path.join(DEB_CACHE, ".lock")


def lookup(k):
    """The cached latnice_*_amd64.deb of key k, or None."""
    cache = os.path.join(DEB_CACHE, k)
    debs = [f for f in (os.listdir(cache) if os.path.isdir(cache) else [])
            if f.startswith("latnice_") and f.endswith("_amd64.deb")]
    return os.path.join(cache, debs[0]) if len(debs) == 1 else None


def store(k, deb):
    """Put deb under key k, whole or not at all (the caller holds the lock)."""
    cache = os.path.join(DEB_CACHE, k)
    os.makedirs(cache + ".tmp", exist_ok=True)
    shutil.copyfile(deb, os.path.join(cache + ".tmp", os.path.basename(deb)))
    if os.path.exists(cache):
        shutil.rmtree(cache)
    os.rename(cache + ".tmp", cache)
    return os.path.join(cache, os.path.basename(deb))


def main(argv):
    try:
        if argv[1:] == ["key"]:
            print(key(tree_files()))
        elif argv[1:] == ["lock"]:
            print(lock_path())
        elif len(argv) == 4 and argv[1] == "store":
            k, deb = argv[2], argv[3]
            name = os.path.basename(deb)
            if not re.fullmatch(r"[0-9a-f]{64}", k):
                print("debcache.py: %r is not a key (64 hex digits)" % k, file=sys.stderr)
                return 2
            if not (name.startswith("latnice_") and name.endswith("_amd64.deb")) or not os.path.isfile(deb):
                print("debcache.py: %s is not a latnice_*_amd64.deb file" % deb, file=sys.stderr)
                return 2
            print(store(k, deb))
        else:
            print(__doc__.split("\n\n")[-2], file=sys.stderr)
            return 2
    except (NotATree, OSError) as e:
        print("debcache.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
