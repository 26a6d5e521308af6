#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
Every synopsis latnicectl prints is a promise: run each form as written.

For each verb in `latnicectl --help`, the synopsis lines of `latnicectl VERB
--help` (up to the first blank line) are expanded with real, harmless
arguments (a temporary rule tree, this test's own pid, latency nice 0,
/bin/true) and run: with every optional part, with each optional part left
out, with the verb's options moved before the verb, and with the global
options after the verb. A form is accepted when latnicectl does what the
verb does without a daemon (exit 0; 1 "Failed to connect" for the verbs that
need latniced; 4 where this kernel cannot set latency nice), never a usage
error. Each synopsis must also stand in latnicectl(1), markup aside.

No daemon is reachable (the system bus address points nowhere), so reload
and profile NAME cannot touch one, and get, set, explain take their
offline paths.

Usage: test-synopsis.py LATNICECTL MAN_SOURCE
"""

import os
import re
import subprocess
import sys
import tempfile

CTL, MAN = sys.argv[1], sys.argv[2]
ENV = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/latnice-test-bus", LC_ALL="C")
failures = 0


def run(args, stdin=subprocess.DEVNULL):
    p = subprocess.run([CTL] + args, env=ENV, stdin=stdin, capture_output=True, text=True, errors="replace",
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(ok, what, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1
        if detail:
            print("     " + detail.strip().replace("\n", "\n     "))


def synopsis(help_text):
    """The lines before the first blank one, an indented line continuing the one before."""
    lines = []
    for line in help_text.split("\n"):
        if not line.strip():
            break
        if line[0].isspace() and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line.strip())
    return lines


def parse(text):
    """Tokens and [optional groups] (nested lists), in order."""
    items, stack = [], []
    for tok in re.findall(r"\[|\]|[^\s\[\]]+", text):
        if tok == "[":
            stack.append(items)
            items = []
        elif tok == "]":
            group, items = items, stack.pop()
            items.append(group)
        elif tok == "..." and items:
            continue  # "[X]..." is one X here
        else:
            items.append(tok)
    assert not stack, "unbalanced brackets in " + text
    return items


tmp = tempfile.TemporaryDirectory(prefix="latnice-synopsis-")
TREE = tmp.name
os.makedirs(TREE + "/etc/latnice.d")
os.makedirs(TREE + "/etc/latnice/profiles")
os.makedirs(TREE + "/profiles")
RULE = TREE + "/etc/latnice.d/50-test.conf"
with open(RULE, "w") as f:
    f.write("[Process sleepers]\nComm=sleep\nLatencyNice=5\n")
# latniced.conf where this build reads it (--sysconfdir: /etc, or /usr/local/etc by default), below --root.
DAEMON_CONF = TREE + os.environ.get("LATNICE_DAEMON_CONF", "/etc/latnice/latniced.conf")
os.makedirs(os.path.dirname(DAEMON_CONF), exist_ok=True)
with open(DAEMON_CONF, "w") as f:
    f.write("[Daemon]\nProfile=quiet\n")
os.makedirs(TREE + "/ananicy")
with open(TREE + "/ananicy/sleep.rules", "w") as f:
    f.write('{ "name": "sleep", "nice": 5 }\n')
for d in ("/etc/latnice/profiles", "/profiles"):
    with open(TREE + d + "/quiet.conf", "w") as f:
        f.write("[Process quiet]\nComm=quiet\nLatencyNice=10\n")
PID = str(os.getpid())

# What each placeholder stands for, by the option it follows ("--exe=") or alone.
VALUES = {
    "--root=DIR": TREE, "--profile-dir=DIR": TREE + "/profiles",
    "--comm=NAME": "python3", "--exe=PATH": "/bin/true", "--cmdline=WORD": "x", "--parent=NAME": "bash",
    "--user=NAME": "root", "--group=NAME": "root", "--cgroup=PATH": "/user.slice",
    "--out=FILE": TREE + "/imported.conf",
    "DURATION": "1s", "DIR": TREE, "FILE": RULE, "PID": PID, "N": "0", "NAME": "quiet", "COMMAND": "true",
    # An argument that looks like an option: it belongs to COMMAND, latnicectl must not take it.
    "ARGS": "-x",
}


def value(tok):
    tok = tok.removesuffix("...")
    m = re.fullmatch(r"(--[a-z-]+=)([A-Z]+)", tok)
    if m:
        return m.group(1) + (VALUES[tok] if tok in VALUES else VALUES[m.group(2)])
    return VALUES.get(tok, tok)


def expand(items, leave_out=None):
    """The form with every optional group, except the one leave_out names; (word, kind) pairs."""
    out = []
    for it in items:
        if isinstance(it, list):
            if it is not leave_out:
                out += expand(it, leave_out)
        else:
            kind = "placeholder" if re.fullmatch(r"[A-Z]+(\.\.\.)?", it) else "literal"
            out.append((value(it), kind))
    return out


def groups(items):
    for it in items:
        if isinstance(it, list):
            yield it
            yield from groups(it)


def options_first(words, verb):
    """The verb's options (and a short option's separate value) moved before the verb."""
    opts, rest, i = [], [], 0
    while i < len(words):
        w, kind = words[i]
        if w == "--" or w == value("COMMAND"):
            rest += words[i:]  # what follows belongs to the command
            break
        if kind == "literal" and w.startswith("-") and w != verb:
            opts.append(words[i])
            if re.fullmatch(r"-[a-z]", w) and i + 1 < len(words) and words[i + 1][1] == "placeholder":
                opts.append(words[i + 1])
                i += 1
        else:
            rest.append(words[i])
        i += 1
    return opts + rest


# Global options from `latnicectl --help`, with real values; --help/--version end the run and
# --json is a verb's own (it is in each synopsis it applies to).
GLOBALS = ["--root=" + TREE, "--profile=quiet", "--profile-dir=" + TREE + "/profiles", "--no-profile"]

DAEMON_VERBS = {"status", "stats", "list", "rules", "reload", "profile"}
KERNEL_VERBS = {"run", "set"}  # 4: this kernel cannot set latency nice


def accepted(verb, rc, err):
    if verb == "import-ananicy" and not os.path.isdir("/etc/ananicy.d"):
        # Without DIR it reads /etc/ananicy.d, which this machine may not have.
        return rc == 0 or (rc == 1 and "Failed to read directory /etc/ananicy.d: " in err)
    if verb in DAEMON_VERBS:
        return rc == 1 and "Failed to connect to latniced: " in err
    if verb in KERNEL_VERBS:
        return rc in (0, 4)
    return rc == 0


rc, out, err = run(["--help"])
check(rc == 0, "latnicectl --help")
verbs = re.findall(r"^  ([a-z][a-z-]+) ", out.split("Commands:\n", 1)[1].split("\n\n", 1)[0], re.M)
check(len(verbs) >= 10, "latnicectl --help lists the verbs: " + " ".join(verbs))
check(any(w.startswith("--root") for w in out.split()), "latnicectl --help lists --root")

man = open(MAN).read()
# latnicectl(1) without scdoc markup: *bold*, _underline_, "++" line breaks, "\" escapes.
man_text = " ".join(re.sub(r"[*_]|\+\+$|\\", "", line, flags=re.M) for line in man.split("\n"))
man_text = re.sub(r"\s+", " ", man_text)
check("latnicectl [OPTIONS...] COMMAND [ARGS...]" in man_text, "latnicectl(1) has the global synopsis")

for verb in verbs:
    rc, out, err = run([verb, "--help"])
    check(rc == 0 and out.startswith("latnicectl " + verb), f"latnicectl {verb} --help", err)
    for line in synopsis(out):
        check(re.sub(r"\s+", " ", line[len("latnicectl "):]) in man_text,
              f"latnicectl(1) shows '{line}'")
        items = parse(line)[1:]  # without "latnicectl"
        assert items[0] == verb, line
        forms = [("as written", expand(items))]
        forms += [("without " + " ".join(t for t in map(str, g)), expand(items, g)) for g in groups(items)]
        full = expand(items)
        forms.append(("options before the verb", options_first(full, verb)))
        forms.append(("global options after the verb", full[:1] + [(g, "literal") for g in GLOBALS] + full[1:]))
        for what, words in forms:
            args = [w for w, _ in words]
            rc, out2, err2 = run(args)
            check(accepted(verb, rc, err2), f"{what}: latnicectl {' '.join(args)} (exit {rc})",
                  err2.split("\n", 1)[0])

# `run` hands everything after COMMAND to it, options included.
rc, out, err = run(["run", "-l", "0", "sh", "-c", "echo $0 $1", "--help", "-l"])
check(rc in (0, 4) and (rc == 4 or out.strip() == "--help -l"),
      f"run -l 0 sh -c ... --help -l: the command gets its own options (exit {rc}, '{out.strip()}')", err)
# getopt_long() over all of argv: short options in clusters, "--" ends the options.
for args, want in ((["explain", "-vp", PID], (0,)), (["explain", "-vp" + PID], (0,)),
                   (["--", "check", RULE], (0,)), (["get", "--", PID], (0,)),
                   (["check", "--", TREE + "/-no-such-file.conf"], (1,)),
                   (["run", "-l0", "--", "sh", "-c", "exit 3"], (3, 4))):
    rc, out, err = run(args)
    check(rc in want, f"latnicectl {' '.join(args)} (exit {rc}, want {want})", err)
rc, out, err = run(["check", "--no-such-option"])
check(rc == 2, f"an unknown option is still a usage error (exit {rc})", err)
rc, out, err = run(["status", "--latency-nice=1"])
check(rc == 2, f"an option of another verb is a usage error (exit {rc})", err)

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
