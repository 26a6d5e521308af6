# SPDX-License-Identifier: LGPL-2.1-or-later
"""A D-Bus fuzzer for org.latnice1, in the spirit of systemd's TEST-21-DFUZZER.

    fuzz-bus.py SECONDS SEED [PROTECTED_PID...]

Introspects /org/latnice1 and, until SECONDS have passed, calls every method with boundary and
random arguments of the right signature, wrong signatures, extra and missing arguments, fds of
every kind for the *ByPIDFD methods, Get/GetAll/Set on every property, and calls on wrong
object paths and interfaces. PROTECTED_PIDs (the test's rule-matched processes) are never the
target of a method that changes a value, so that the test can check nothing the daemon set was
lost; every other pid is fair game.

Every call has a 5 s timeout (a method call the daemon never answers costs that much). Prints one line "calls N replies N errors N timeouts N" and the
error names seen; exits 1 when a call timed out or the daemon lost its name (NoReply,
ServiceUnknown, Disconnected), 0 otherwise. Whatever the daemon answers is fine: that it answers
is the point.
"""

import os
import random
import sys
import time
import xml.etree.ElementTree as ET

import dbus

DEST, PATH, IFACE = "org.latnice1", "/org/latnice1", "org.latnice1.Manager"
TIMEOUT = 5
FATAL = {
    "org.freedesktop.DBus.Error.NoReply",
    "org.freedesktop.DBus.Error.Timeout",
    "org.freedesktop.DBus.Error.TimedOut",
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
}
# The bus itself may drop a client that breaks its limits (too many fds in one message): the
# fuzzer then connects again, and it is fatal only when org.latnice1 is gone.
DISCONNECTED = "org.freedesktop.DBus.Error.Disconnected"
MAX_FDS = 8
# changing a value or the rules: never aimed at the protected pids, never to a real profile
MUTATING = {"SetLatencyNice", "SetLatencyNiceByPIDFD"}

seconds, seed = float(sys.argv[1]), int(sys.argv[2])
protected = {int(p) for p in sys.argv[3:]}
rnd = random.Random(seed)
bus = dbus.SystemBus(private=True)
reconnects = 0
me = os.getpid()


def dead_pid():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


DEAD = [dead_pid() for _ in range(4)]
MB = 1 << 20
U32 = [0, 1, 2, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, me, me + 1, 4194304, 4194305] + DEAD
I32 = [-(1 << 31), (1 << 31) - 1, -21, -20, -1, 0, 1, 19, 20, 40, -40]
STRINGS = ["", "a" * 15, "a" * 16, "\u00e9" * 8, "../../etc/passwd", "/dev/null", ".", "..",
           "desktop/../x", "x\ny", "\u2028", "\U0001F600" * 100, "%s%n%x", "*", "[Process x]"]


def big_string():
    n = rnd.choice([255, 256, 4095, 4096, 65535, 65536, 1000000, MB - 1])
    return rnd.choice("ab\u00e9\u4e2d") * (n // 3 if rnd.random() < 0.3 else n)


def rstring():
    r = rnd.random()
    if r < 0.5:
        return rnd.choice(STRINGS)
    if r < 0.6:
        return big_string()
    n = rnd.randint(0, 64)
    return "".join(chr(rnd.choice([rnd.randint(1, 0x7F), rnd.randint(0x80, 0xD7FF),
                                   rnd.randint(0xE000, 0x10FFFF)])) for _ in range(n))


def pidfd_of_exited():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    fd = os.pidfd_open(pid)
    os.waitpid(pid, 0)
    return fd


def pidfd_of(pid):
    try:
        return os.pidfd_open(pid)
    except OSError:
        return os.open("/dev/null", os.O_RDONLY)


def pipe_end():
    r, w = os.pipe()
    os.close(w)
    return r


def rfd(method):
    """An fd to send, and whether it must be closed afterwards."""
    choices = [
        lambda: os.pidfd_open(me),
        lambda: os.open("/dev/null", os.O_RDONLY),
        pidfd_of_exited,
        lambda: os.open("/", os.O_RDONLY | os.O_DIRECTORY),
        lambda: os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY),
        lambda: os.eventfd(0),
        pipe_end,
        lambda: pidfd_of(1),
        lambda: pidfd_of(os.getppid()),
    ]
    if method not in MUTATING:
        choices += [lambda: pidfd_of(rnd.choice(sorted(protected)) if protected else 1)]
    return choices[rnd.randrange(len(choices))]()


def u32(method):
    v = rnd.choice(U32) if rnd.random() < 0.7 else rnd.randint(0, 0xFFFFFFFF)
    if method in MUTATING and v in protected:
        v = 0xFFFFFFFF
    if method not in MUTATING and protected and rnd.random() < 0.1:
        v = rnd.choice(sorted(protected))
    return v


def gen(t, method, fds, depth=0):
    c = t[0]
    if c == "y":
        return dbus.Byte(rnd.randint(0, 255))
    if c == "b":
        return dbus.Boolean(rnd.random() < 0.5)
    if c == "n":
        return dbus.Int16(rnd.randint(-32768, 32767))
    if c == "q":
        return dbus.UInt16(rnd.randint(0, 65535))
    if c == "i":
        return dbus.Int32(rnd.choice(I32) if rnd.random() < 0.7 else rnd.randint(-(1 << 31), (1 << 31) - 1))
    if c == "u":
        return dbus.UInt32(u32(method))
    if c == "x":
        return dbus.Int64(rnd.choice([-(1 << 63), (1 << 63) - 1, 0, -1, me]))
    if c == "t":
        return dbus.UInt64(rnd.choice([0, (1 << 64) - 1, me, 1 << 32]))
    if c == "d":
        return dbus.Double(rnd.choice([0.0, -1.5, 1e308, float("inf"), float("nan")]))
    if c == "s":
        return dbus.String(rstring())
    if c == "o":
        return dbus.ObjectPath(rnd.choice(["/", "/org/latnice1", "/a/b/c", "/org/latnice1/_30"]))
    if c == "g":
        return dbus.Signature(rnd.choice(["", "u", "a{sv}", "(ii)"]))
    if c == "h":
        fd = rfd(method)
        fds.append(fd)
        return dbus.types.UnixFd(fd)
    if c == "v":
        inner = rnd.choice(["u", "s", "i", "as"] + (["h"] if len(fds) < MAX_FDS else [])) if depth < 3 else "u"
        return gen(inner, method, fds, depth + 1)
    if c == "a":
        inner = t[1:]
        if inner.startswith("{"):
            k, v = list(dbus.Signature(inner[1:-1]))
            n = rnd.choice([0, 1, 3, 100]) if depth < 2 and "h" not in v and "v" not in v else 1
            return dbus.Dictionary({gen(k, method, fds, depth + 1): gen(v, method, fds, depth + 1)
                                    for _ in range(n)}, signature=inner[1:-1])
        n = rnd.choice([0, 1, 2, 10, 1000, 100000]) if depth < 2 and inner in ("u", "y", "i") else \
            rnd.choice([0, 1, 5]) if "h" not in inner and "v" not in inner else rnd.choice([0, 1, 2])
        if inner == "y":
            return dbus.ByteArray(bytes(rnd.randrange(256) for _ in range(min(n, 1000))) * max(1, n // 1000))
        return dbus.Array([gen(inner, method, fds, depth + 1) for _ in range(n)], signature=inner)
    if c == "(":
        return dbus.Struct([gen(x, method, fds, depth + 1) for x in dbus.Signature(t[1:-1])],
                           signature=t[1:-1])
    raise ValueError(t)


WRONG = ["", "u", "i", "s", "h", "uu", "ui", "iu", "su", "us", "hi", "ih", "hh", "sss", "as", "au",
         "a{sv}", "v", "(ui)", "ay", "t", "x", "o", "g", "b", "d", "y", "a(ussiitb)", "uiu", "hiu"]


def intro():
    xml = bus.call_blocking(DEST, PATH, "org.freedesktop.DBus.Introspectable", "Introspect", "", [],
                            timeout=TIMEOUT)
    root = ET.fromstring(str(xml))
    methods, props = {}, []
    for i in root.findall("interface"):
        name = i.get("name")
        for m in i.findall("method"):
            sig = "".join(a.get("type") for a in m.findall("arg") if a.get("direction", "in") == "in")
            methods[(name, m.get("name"))] = sig
        for p in i.findall("property"):
            props.append((name, p.get("name"), p.get("type")))
    return methods, props


methods, props = intro()
ours = [k for k in methods if k[0] == IFACE]
if not ours:
    print("introspection lists no method of", IFACE)
    sys.exit(1)
profiles = set()
try:
    for n, _p, _a in bus.call_blocking(DEST, PATH, IFACE, "ListProfiles", "", [], timeout=TIMEOUT):
        profiles.add(str(n))
except dbus.DBusException:
    pass
print(f"fuzz: uid {os.getuid()}, seed {seed}, {len(ours)} methods of {IFACE}, {len(props)} properties, "
      f"protected pids {sorted(protected)}, {seconds:.0f} s", flush=True)

calls = replies = errors = timeouts = 0
names = {}
fatal = []
per_method = {}
deadline = time.monotonic() + seconds
round_robin = 0


def do_call(path, iface, member, sig, args):
    global calls, replies, errors, timeouts, bus, reconnects
    calls += 1
    try:
        bus.call_blocking(DEST, path, iface, member, sig, args, timeout=TIMEOUT)
        replies += 1
    except dbus.DBusException as e:
        errors += 1
        n = e.get_dbus_name() or "?"
        names[n] = names.get(n, 0) + 1
        if n == DISCONNECTED:
            reconnects += 1
            bus = dbus.SystemBus(private=True)
            if not bus.name_has_owner(DEST):
                timeouts += 1
                fatal.append(f"{DEST} has no owner after a reconnect")
        if n in FATAL:
            timeouts += 1
            fatal.append(f"{iface}.{member}({sig}): {n}: {str(e.get_dbus_message())[:200]}")
    except (TypeError, ValueError, OverflowError, OSError) as e:
        # refused by the client library (e.g. a closed fd): not sent, not counted as a call
        calls -= 1
        names["client:" + type(e).__name__] = names.get("client:" + type(e).__name__, 0) + 1


while time.monotonic() < deadline and len(fatal) < 50:
    # every method and property in turn, then random ones
    if round_robin < len(methods):
        key = sorted(methods)[round_robin]
        round_robin += 1
    else:
        key = rnd.choice(ours) if rnd.random() < 0.8 else rnd.choice(list(methods))
    iface, member = key
    sig = methods[key]
    r = rnd.random()
    if r < 0.55:
        use = sig
    elif r < 0.75:
        use = rnd.choice(WRONG)
    elif r < 0.87:
        use = sig + rnd.choice(["u", "s", "i", "h", "as"])
    else:
        use = sig[:-1] if sig else "u"
    if member == "SetProfile" and use == "s":
        # never a real profile: the values of the protected processes would change with it
        args = [rstring()]
        while args[0] in profiles:
            args = [rstring()]
        args = [dbus.String(args[0])]
        fds = []
    else:
        fds = []
        try:
            args = [gen(t, member, fds) for t in dbus.Signature(use)]
        except OSError:
            continue
    do_call(PATH, iface, member, use, args)
    per_method[member] = per_method.get(member, 0) + 1
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    # properties, wrong paths, wrong interfaces
    if rnd.random() < 0.35:
        pi, pn, _pt = rnd.choice(props)
        r = rnd.random()
        if r < 0.45:
            do_call(PATH, "org.freedesktop.DBus.Properties", "Get", "ss", [pi, pn])
        elif r < 0.6:
            do_call(PATH, "org.freedesktop.DBus.Properties", "GetAll", "s", [rnd.choice([pi, "", "x.y", IFACE])])
        elif r < 0.7:
            do_call(PATH, "org.freedesktop.DBus.Properties", "Set", "ssv", [pi, pn, dbus.UInt32(1, variant_level=1)])
        elif r < 0.8:
            do_call(PATH, "org.freedesktop.DBus.Properties", "Get", "ss", [rstring()[:300], rstring()[:300]])
        elif r < 0.9:
            do_call(rnd.choice(["/", "/org", "/org/latnice1/x", "/org/latnice2", "/org/latnice1/" + "a" * 200]),
                    rnd.choice([IFACE, "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties"]),
                    rnd.choice(["GetTask", "Introspect", "GetAll"]), "u", [dbus.UInt32(0)])
        else:
            do_call(PATH, rnd.choice(["org.latnice1.Nope", IFACE, "org.freedesktop.DBus.Peer"]),
                    rnd.choice(["Ping", "GetMachineId", "Nope", "GetTask"]), "", [])

print(f"fuzz: uid {os.getuid()}: calls {calls} replies {replies} errors {errors} timeouts/lost {timeouts} "
      f"(reconnects after the bus dropped us: {reconnects})")
print("fuzz: per method: " + ", ".join(f"{k} {v}" for k, v in sorted(per_method.items())))
print("fuzz: errors: " + ", ".join(f"{k} {v}" for k, v in sorted(names.items(), key=lambda x: -x[1])))
for f in fatal[:10]:
    print("fuzz: FATAL", f[:300])
sys.exit(1 if fatal else 0)
