#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in latniced for test-output.sh: fixed answers on a private bus, odd names included."""
import os
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

IF = "org.latnice1.Manager"
U, I, S, T, B = dbus.UInt32, dbus.Int32, dbus.String, dbus.UInt64, dbus.Boolean

def hist(base):
    return [T(base * (i % 3)) for i in range(27)]

def classes():
    return dbus.Array([
        dbus.Struct((S("game"), U(0), U(3), T(1000), T(5000000), T(90000), T(12), dbus.Array(hist(5), signature="t"))),
        dbus.Struct((S("odd\x01/name\"q"), U(4), U(1), T(0), T(0), T(0), T(3), dbus.Array(hist(0), signature="t"))),
        dbus.Struct((S(""), U(1), U(0), T(4000), T(90000000), T(800000), T(99), dbus.Array(hist(7), signature="t"))),
    ], signature="(suuttttat)")

class M(dbus.service.Object):
    @dbus.service.method(IF, in_signature="", out_signature="a(usiss)")
    def ListApplied(self):
        return [(U(1), S("init"), I(-5), S("sys"), S("[Process sys] /etc/latnice.d/10.conf:1")),
                (U(4242), S("bad\x01é\"/x\\y"), I(19), S(""), S("manual")),
                (U(77), S("averyveryverylongcommname"), I(0), S("r"), S("[Unit r] /usr/lib/latnice.d/x.conf:99"))]

    @dbus.service.method(IF, in_signature="", out_signature="a(sssuiasbs)")
    def ListRules(self):
        return [(S("Process"), S("a"), S("/etc/latnice.d/a.conf"), U(3), I(-10), dbus.Array([S("Comm=x"), S("Exe=/y")], signature="s"), B(True), S("main")),
                (S("Unit"), S("g"), S("/etc/latnice.d/b.conf"), U(7), I(5), dbus.Array([], signature="s"), B(False), S("all"))]

    @dbus.service.method(IF, in_signature="", out_signature="a(ssb)")
    def ListProfiles(self):
        return [(S("desktop"), S("/usr/share/latnice/profiles/desktop.conf"), B(False)),
                (S("averyveryverylongprofile"), S("/etc/p.conf"), B(True))]

    @dbus.service.method(IF, in_signature="", out_signature="uu")
    def Reload(self):
        return U(12), U(1)

    @dbus.service.method(IF, in_signature="s", out_signature="")
    def SetProfile(self, name):
        if name == "nope":
            raise dbus.exceptions.DBusException("no such profile", name="org.latnice1.Error.NoSuchProfile")

    @dbus.service.method(IF, in_signature="u", out_signature="sissssta(ussiitb)")
    def GetTask(self, pid):
        if pid == 2:
            raise dbus.exceptions.DBusException("No such process", name="org.latnice1.Error.NoSuchProcess")
        th = dbus.Array([(U(pid), S("main\x01"), S("other"), I(0), I(-3), T(700000), B(False)),
                         (U(pid + 1), S("worker"), S("fifo"), I(0), I(0), T(0), B(True))], signature="(ussiitb)")
        set_by = {1: "none", 3: "foreign", 6: "inherited"}.get(pid, "rule")
        return (S("comm\x7f"), I(-3), S(set_by), S("r"), S("[Process r] /etc/x.conf:1"), S("eevdf-slice"), T(123456), th)

    @dbus.service.method(IF, in_signature="ui", out_signature="uu")
    def SetLatencyNice(self, pid, ln):
        if pid == 2:
            raise dbus.exceptions.DBusException("No such process", name="org.latnice1.Error.NoSuchProcess")
        return U(3), U(4)

    @dbus.service.method(IF, in_signature="u", out_signature="a{ss}s(sssui)asa(sssui)(sssui)")
    def Explain(self, pid):
        task = dbus.Dictionary({"pid": str(pid), "comm": "x\x01y", "exe": "/usr/bin/x", "cmdline": "x --a",
                                "parent": "bash", "user": "root", "uid": "0", "group": "root", "gid": "0",
                                "cgroup": "/user.slice/a.scope", "unit": "a.scope", "app": "" if pid == 1 else "org.app"},
                               signature="ss")
        rule = (S("Process"), S("r"), S("/etc/x.conf"), U(1), I(-3)) if pid != 5 else (S(""), S(""), S(""), U(0), I(0))
        shadow = dbus.Array([(S("Process"), S("s"), S("/etc/y.conf"), U(2), I(4))], signature="(sssui)")
        unit = (S("Unit"), S("u"), S("/etc/z.conf"), U(9), I(7)) if pid != 1 else (S(""), S(""), S(""), U(0), I(0))
        how = {7: "unit", 8: "foreground", 9: "kernel-thread"}.get(pid, "process")
        return task, S(how), rule, dbus.Array([S("Comm=x"), S("User=root")], signature="s"), shadow, unit

    @dbus.service.method(IF, in_signature="u", out_signature="ttssta(suuttttat)")
    def CollectStats(self, sec):
        return T(1700000000000000), T(sec * 1000000), S("tp_btf"), S("a note"), T(2), classes()

    # The last result in full (the property carries no classes): latnicectl status asks for it.
    @dbus.service.method("org.latnice1.Manager", in_signature="", out_signature="ttssta(suuttttat)")
    def GetLastStats(self):
        return T(1700000000000000), T(5000000), S("tp_btf"), S("the note"), T(0), classes()

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
    def Get(self, iface, name):
        return self.GetAll(iface)[name]

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="s", out_signature="a{sv}")
    def GetAll(self, iface):
        mode = open(MODE).read().strip() if os.path.exists(MODE) else "full"
        d = {"Version": S("0.9"), "Backend": S("eevdf-slice"), "BackendReason": S("custom slices: the reason"),
             "DefaultSliceNSec": T(1400000), "PreemptModel": S("lazy"), "PreemptModelSource": S("config"),
             "PreemptDynamic": dbus.Boolean(True), "KernelHZ": U(250),
             "EventSource": S("bpf"), "EventSourceReason": S("CO-RE BPF"),
             "Profile": S("desktop"), "ProfilePath": S("/usr/share/latnice/profiles/desktop.conf"),
             "RuleFiles": dbus.Array([S("/etc/latnice.d/a.conf"), S("/etc/b.conf")], signature="s"),
             "RuleErrors": dbus.Array([S("/etc/b.conf:3: bad"), S("/etc/b.conf:4: worse")], signature="s"),
             "Rules": U(7), "AppliedProcesses": U(1), "TasksApplied": T(5), "ApplyErrors": T(1),
             "EventsSeen": T(100), "EventsLost": T(0), "Rescans": T(1), "Reloads": T(2), "UnitWalks": T(9),
             "CmdlineTruncated": T(3), "Prefilter": S("on"), "PrefilterMemory": T(8192),
             "AppliedSignalsSuppressed": T(4), "Foreground": S("off"), "NewerThing": S("x"),
             "LastStats": dbus.Struct((T(1700000000000000), T(5000000), S("tp_btf"), S("the note"), T(0),
                                       dbus.Array([], signature="(suuttttat)")),
                                      signature="ttssta(suuttttat)")}
        if mode == "min":
            # a latniced from before the preemption model, too
            for k in ("Prefilter", "Foreground", "LastStats", "RuleErrors", "RuleFiles", "ProfilePath", "Profile",
                      "PreemptModel", "PreemptModelSource", "PreemptDynamic", "KernelHZ"):
                del d[k]
            d["DefaultSliceNSec"] = T(0); d["CmdlineTruncated"] = T(0); d["Backend"] = S("none")
        if mode == "scx":
            d["Backend"] = S("sched-ext: lavd_1.0")
        return d

# Usage: mock-latniced.py BUS_ADDRESS DIR; DIR/mode picks status's properties, DIR/ready says it owns the name.
ADDRESS, DIR = sys.argv[1], sys.argv[2]
MODE = os.path.join(DIR, "mode")
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(ADDRESS)
name = dbus.service.BusName("org.latnice1", bus)
M(bus, "/org/latnice1")
open(os.path.join(DIR, "ready"), "w").close()
GLib.MainLoop().run()
