#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What an install puts on disk, one absolute path a line, sorted: files and
symlinks, and directories that hold nothing (with a trailing /).

  list-files.py destdir DIR     a `meson install --destdir DIR` tree
  list-files.py deb FILE.deb    a binary package, less what only Debian adds
                                (usr/share/doc/PKG's changelog and copyright,
                                lintian overrides) and
                                with man pages under their uncompressed names

Both views of the same install must print the same list
(tests/install/files.txt)."""

import io
import os
import subprocess
import sys
import tarfile

# Added by debhelper, not by `meson install`, in each package (latnice, latnice-focus).
# The examples in usr/share/doc/latnice/examples are meson's.
DEBIAN_ONLY = tuple("/usr/share/doc/%s/%s/" % (pkg, f) for pkg in ("latnice", "latnice-focus")
                    for f in ("changelog.gz", "changelog.Debian.gz", "copyright")) + ("/usr/share/lintian/",)


def normalize(path):
    if path.startswith("/usr/share/man/") and path.endswith(".gz"):
        return path[:-3]  # dh_compress
    return path


def listing(entries, drop=lambda p: False):
    """entries: (absolute path, is_dir) of every member. Directories with
    no member below them are listed as DIR/; members drop() says are not
    the install's own are left out."""
    entries = [(p.rstrip("/") or "/", d) for p, d in entries]
    parents = set()
    for p, _ in entries:
        while p != "/":
            p = os.path.dirname(p)
            parents.add(p)
    out = set()
    for p, d in entries:
        if p == "/" or drop(p):
            continue
        if not d:
            out.add(normalize(p))
        elif p not in parents:
            out.add(p + "/")
    return sorted(out)


def from_destdir(root):
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = "/" + os.path.relpath(dirpath, root)
        for d in dirnames:
            entries.append((os.path.normpath(os.path.join(rel, d)), not os.path.islink(os.path.join(dirpath, d))))
        for f in filenames:
            entries.append((os.path.normpath(os.path.join(rel, f)), False))
    return listing(entries)


def from_deb(deb):
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        entries = [(os.path.normpath("/" + m.name), m.isdir()) for m in t.getmembers()]
    return listing(entries, lambda p: any((p + "/").startswith(x) for x in DEBIAN_ONLY))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("destdir", "deb"):
        sys.exit(__doc__)
    paths = from_destdir(sys.argv[2]) if sys.argv[1] == "destdir" else from_deb(sys.argv[2])
    print("\n".join(paths))


if __name__ == "__main__":
    main()
