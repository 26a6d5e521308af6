#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Debian's linux-source-X from a suite the host does not run, verified as apt would, cached by version.

The host stays a Debian 12 machine: nothing is added to its apt sources.
For a series whose source is not in bookworm (7.3: trixie-backports) this

  1. fetches dists/SUITE/InRelease from the host's Debian mirror and checks
     its signature with gpgv against the host's debian-archive-keyring (the
     bookworm package carries the trixie keys); only the signed text is used
     from then on, and it must name SUITE and not be past Valid-Until;
  2. fetches the Packages index (by-hash where the Release offers it) and
     uses it only if its size and sha256 are the ones the signed Release
     lists; an index that does not match (a mirror mid-update) is skipped
     and said;
  3. takes the highest version of linux-source-X listed, fetches the .deb
     and checks its size and sha256 against the index;
  4. unpacks it with dpkg-deb -x and keeps /usr/src/linux-source-X.tar.xz in
     CACHE/linux-source-X_VERSION/, with a record (SOURCE) written last: a
     directory without one is an interrupted fetch and is redone.

A later run uses the newest cached version and does not touch the network
(the patches are made against one version; an archive update must not
break a build that worked). LATNICE_SOURCE_REFRESH=1 (or `fetch --refresh`)
looks for a newer one.

  debsource.py fetch X [--refresh]   fetch (or find) the source; print the tarball's path
  debsource.py show X                print the cached record

Python 3 standard library only.
"""

import fcntl
import glob
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from email.utils import parsedate_to_datetime

CACHE = os.environ.get("LATNICE_SOURCE_CACHE", "/var/cache/latnice/src")
KEYRING = os.environ.get("LATNICE_ARCHIVE_KEYRING", "/usr/share/keyrings/debian-archive-keyring.gpg")
# The series whose source comes from another suite than the host's, and that suite.
SUITES = {"7.3": "trixie-backports"}
COMPONENT = "main"
# linux-source-X is Architecture: all; with "No-Support-for-Architecture-all: Packages" it is listed
# in every architecture's index, and binary-all's is the fallback.
INDICES = ("binary-amd64/Packages.xz", "binary-all/Packages.xz")
TIMEOUT = 60


class Unavailable(Exception):
    """The source cannot be had here (no network, no key, nothing listed): a skip, not a failure."""


class Invalid(Exception):
    """What the archive served does not verify: a failure."""


def say(msg):
    print("debsource: " + msg, file=sys.stderr, flush=True)


def mirror():
    """The Debian mirror the host's apt uses (LATNICE_DEBIAN_MIRROR overrides)."""
    env = os.environ.get("LATNICE_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")
                                               + glob.glob("/etc/apt/sources.list.d/*.sources"))
    for path in files:
        try:
            text = open(path, errors="replace").read()
        except OSError:
            continue
        for m in re.finditer(r"(?m)^(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(\S+)", text):
            uri = m.group(1).rstrip("/")
            if re.match(r"https?://", uri) and uri.endswith("/debian"):
                return uri
    return "http://deb.debian.org/debian"


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            return r.read()
    except (urllib.error.URLError, OSError) as e:
        raise Unavailable("cannot fetch %s: %s" % (url, e))


def download(url, dest, size, digest):
    """url into dest, resuming a partial file; dest's size and sha256 must be as the index says."""
    have = os.path.getsize(dest) if os.path.exists(dest) else 0
    if have > size:
        os.unlink(dest)
        have = 0
    if have < size:
        req = urllib.request.Request(url, headers={"Range": "bytes=%d-" % have} if have else {})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r, \
                    open(dest, "ab" if have and r.status == 206 else "wb") as f:
                shutil.copyfileobj(r, f, 1 << 20)
        except (urllib.error.URLError, OSError) as e:
            raise Unavailable("cannot fetch %s: %s" % (url, e))
    h = hashlib.sha256()
    with open(dest, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if os.path.getsize(dest) != size or h.hexdigest() != digest:
        got = (os.path.getsize(dest), h.hexdigest())
        os.unlink(dest)
        raise Invalid("%s: size %d sha256 %s, the index says %d %s" % (url, got[0], got[1], size, digest))


def verify_release(data, suite):
    """The signed text of an InRelease, checked with gpgv against KEYRING, as {field: value}."""
    if not os.path.exists(KEYRING):
        raise Unavailable("%s is missing (debian-archive-keyring)" % KEYRING)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "InRelease")
        out = os.path.join(tmp, "signed")
        with open(path, "wb") as f:
            f.write(data)
        p = subprocess.run(["gpgv", "--status-fd", "1", "--keyring", KEYRING, "--output", out, path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        status = p.stdout.decode(errors="replace")
        good = re.findall(r"^\[GNUPG:\] VALIDSIG ([0-9A-F]+)", status, re.M)
        if p.returncode != 0 and not good or re.search(r"^\[GNUPG:\] (BADSIG|EXPSIG|REVKEYSIG)", status, re.M):
            raise Invalid("%s/InRelease does not verify against %s:\n%s" % (
                suite, KEYRING, p.stderr.decode(errors="replace")))
        if not good:
            raise Unavailable("no key of %s signs %s/InRelease (a newer debian-archive-keyring is needed):\n%s"
                              % (KEYRING, suite, p.stderr.decode(errors="replace")))
        text = open(out, encoding="utf-8", errors="replace").read()
    fields = parse_stanza(text)
    if suite not in (fields.get("Codename"), fields.get("Suite")):
        raise Invalid("InRelease of %s says Suite %s, Codename %s" % (
            suite, fields.get("Suite"), fields.get("Codename")))
    until = fields.get("Valid-Until")
    if until and parsedate_to_datetime(until).timestamp() < time.time():
        raise Invalid("InRelease of %s expired on %s (a stale mirror?)" % (suite, until))
    fields["_signers"] = " ".join(good)
    return fields


def parse_stanza(text):
    """A deb822 stanza as {field: value}; continuation lines kept, joined with newlines."""
    fields, key = {}, None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def stanzas(text):
    for block in re.split(r"\n\s*\n", text):
        if block.strip():
            yield parse_stanza(block)


def release_sha256(release):
    """{path: (size, sha256)} from a Release's SHA256 field."""
    out = {}
    for line in release.get("SHA256", "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[2]] = (int(parts[1]), parts[0])
    return out


def newer(a, b):
    """True if Debian version a is higher than b."""
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def latest_in_archive(series, base, suite):
    """(release fields, the index stanza of the highest linux-source-X) from the archive."""
    release = verify_release(get("%s/dists/%s/InRelease" % (base, suite)), suite)
    listed = release_sha256(release)
    by_hash = release.get("Acquire-By-Hash", "").lower() == "yes"
    package = "linux-source-%s" % series
    best = None
    for index in INDICES:
        path = "%s/%s" % (COMPONENT, index)
        if path not in listed:
            continue
        size, digest = listed[path]
        urls = ["%s/dists/%s/%s" % (base, suite, path)]
        if by_hash:
            urls.insert(0, "%s/dists/%s/%s/by-hash/SHA256/%s" % (base, suite, os.path.dirname(path), digest))
        data = None
        for url in urls:
            try:
                got = get(url)
            except Unavailable:
                continue
            if len(got) == size and hashlib.sha256(got).hexdigest() == digest:
                data = got
                break
            say("%s: %d bytes, sha256 %s; the Release lists %d %s: not used" % (
                url, len(got), hashlib.sha256(got).hexdigest(), size, digest))
        if data is None:
            continue
        for st in stanzas(lzma.decompress(data).decode("utf-8", errors="replace")):
            if st.get("Package") == package and (best is None or newer(st["Version"], best["Version"])):
                best = st
        if best:
            break
    if best is None:
        raise Unavailable("no verified index of %s lists %s" % (suite, package))
    return release, best


def cached(series):
    """(directory, record) of the newest complete cached source of series, or (None, None)."""
    best = None
    for d in glob.glob(os.path.join(CACHE, "linux-source-%s_*" % series)):
        rec = os.path.join(d, "SOURCE")
        if not os.path.exists(rec):
            continue
        fields = parse_stanza(open(rec).read())
        if "Version" not in fields or not os.path.exists(tarball(series, d)):
            continue
        if best is None or newer(fields["Version"], best[1]["Version"]):
            best = (d, fields)
    return best or (None, None)


def tarball(series, d):
    return os.path.join(d, "linux-source-%s.tar.xz" % series)


def fetch(series, refresh=False):
    """The path of linux-source-X.tar.xz for series, fetched and verified if not cached."""
    suite = SUITES[series]
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        d, rec = cached(series)
        refresh = refresh or os.environ.get("LATNICE_SOURCE_REFRESH") == "1"
        if d and not refresh:
            return tarball(series, d)
        base = mirror()
        try:
            release, st = latest_in_archive(series, base, suite)
        except Unavailable as e:
            if d:
                say("%s; keeping the cached %s" % (e, rec["Version"]))
                return tarball(series, d)
            raise
        if d and not newer(st["Version"], rec["Version"]):
            return tarball(series, d)
        version = st["Version"]
        dest = os.path.join(CACHE, "linux-source-%s_%s" % (series, version))
        partial = os.path.join(CACHE, "partial")
        os.makedirs(partial, exist_ok=True)
        deb = os.path.join(partial, os.path.basename(st["Filename"]))
        say("fetching %s %s from %s (%s)" % (st["Package"], version, base, suite))
        download("%s/%s" % (base, st["Filename"]), deb, int(st["Size"]), st["SHA256"])
        if os.path.exists(dest):
            shutil.rmtree(dest)
        tmp = dest + ".tmp"
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        os.makedirs(tmp)
        p = subprocess.run(["dpkg-deb", "-x", deb, tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        inner = os.path.join(tmp, "usr", "src", "linux-source-%s.tar.xz" % series)
        if p.returncode != 0 or not os.path.exists(inner):
            raise Invalid("dpkg-deb -x %s: %s" % (deb, p.stdout.decode(errors="replace") or "no tarball in it"))
        os.makedirs(dest)
        os.rename(inner, tarball(series, dest))
        shutil.rmtree(tmp)
        h = hashlib.sha256()
        with open(tarball(series, dest), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        record = ("Package: %s\nVersion: %s\nSuite: %s\nMirror: %s\nRelease-Date: %s\nSigned-By: %s\n"
                  "Deb-SHA256: %s\nTarball-SHA256: %s\nFetched: %s\n" % (
                      st["Package"], version, suite, base, release.get("Date", ""), release["_signers"],
                      st["SHA256"], h.hexdigest(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        # The record is written last (renamed into place): a directory without one is not a source.
        with open(os.path.join(dest, "SOURCE.tmp"), "w") as f:
            f.write(record)
        os.rename(os.path.join(dest, "SOURCE.tmp"), os.path.join(dest, "SOURCE"))
        os.unlink(deb)
        say("%s %s verified and cached in %s" % (st["Package"], version, dest))
        return tarball(series, dest)


def record(series, path):
    """The cached record of the source at path, as {field: value}."""
    rec = os.path.join(os.path.dirname(path), "SOURCE")
    return parse_stanza(open(rec).read()) if os.path.exists(rec) else {}


def main(argv):
    if len(argv) < 3 or argv[1] not in ("fetch", "show") or argv[2] not in SUITES:
        print("usage: debsource.py fetch|show %s [--refresh]" % "|".join(SUITES), file=sys.stderr)
        return 2
    if argv[1] == "show":
        d, _ = cached(argv[2])
        if not d:
            print("nothing cached for %s in %s" % (argv[2], CACHE), file=sys.stderr)
            return 1
        sys.stdout.write(open(os.path.join(d, "SOURCE")).read())
        return 0
    try:
        print(fetch(argv[2], refresh="--refresh" in argv[3:]))
    except Unavailable as e:
        say(str(e))
        return 77
    except Invalid as e:
        say(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
