#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""latnice-focus --print against a fake compositor that replays a stored stream.

    test-focus-replay.py LATNICE_FOCUS hyprland|niri SOURCE_ROOT

Only the compositor is fake, and only its sockets: Hyprland and niri are not packaged for
Debian 12, so neither can run here. This script listens where the compositor would
($XDG_RUNTIME_DIR/hypr/SIG/.socket2.sock and .socket.sock, then /tmp/hypr/SIG/; $NIRI_SOCKET),
replays tests/unit/data/{hyprland.events,niri-25.11.jsonl} with the windows' pids replaced by
those of real processes (sleep), answers Hyprland's j/activewindow requests the way hyprctl
does, and checks every line latnice-focus prints. What it exercises is the part the parser
tests cannot: the sockets, lines split across writes, Hyprland's request socket (one request
at a time, a reply kept per window, a broken, huge or stalled reply), the compositor restarting
(the boost ends, latnice-focus reconnects and reads the focus again), niri refusing the request.
It says nothing about whether a real compositor sends what the stored streams hold.

Waits have a deadline (20 s) only so that a hang fails instead of blocking; no duration is
measured or compared. Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

DEADLINE = 20.0
failed = False


def ok(what, cond, detail=""):
    global failed
    print(("ok - " if cond else "not ok - ") + what + ("" if cond or not detail else " (%s)" % detail))
    failed |= not cond


class Focus:
    """latnice-focus --print, its output read line by line."""

    def __init__(self, binary, env):
        self.proc = subprocess.Popen([binary, "--print", "--debug"], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.printed = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pid, source, what):
        want = "focus %d %s" % (pid, source)
        try:
            got = self.lines.get(timeout=DEADLINE)
        except queue.Empty:
            got = "(nothing within %d s)" % DEADLINE
        self.printed.append(got)
        ok(what, got == want, "got '%s', want '%s'" % (got, want))

    def nothing_more(self, what):
        try:
            got = self.lines.get_nowait()
        except queue.Empty:
            got = None
        ok(what, got is None, "printed '%s'" % got)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        ok("latnice-focus exits cleanly on SIGTERM", self.proc.returncode == 0, "rc %s" % self.proc.returncode)
        return err


def listen(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    s.settimeout(DEADLINE)
    return s


def wait_for(cond, what):
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    ok(what, False, "not within %d s" % DEADLINE)
    return False


def send_split(conn, data):
    """Writes one byte at a time: the reader sees the line in many reads (if it is fast enough to
    catch them apart; the stream is correct either way)."""
    for i in range(len(data)):
        conn.sendall(data[i:i + 1])
        time.sleep(0.0005)


# --- Hyprland -------------------------------------------------------------------------------

class FakeHyprland:
    """The request socket: answers j/activewindow for the window the events made active."""

    def __init__(self, dir):
        self.dir = dir
        self.windows = {}      # address -> (pid, class)
        self.active = None     # address
        self.modes = queue.Queue()
        self.requests = 0
        self.bad_requests = 0
        self.stalled_closed = threading.Event()
        self.lock = threading.Lock()
        self.ev = listen(os.path.join(dir, ".socket2.sock"))
        self.req = listen(os.path.join(dir, ".socket.sock"))
        self.running = True
        threading.Thread(target=self._serve, daemon=True).start()

    def reply(self):
        with self.lock:
            a = self.active
            if a is None:
                return b"{}"
            pid, cls = self.windows[a]
        # As hyprctl writes it: its window JSON, pretty-printed, no trailing newline.
        return ('{\n    "address": "0x%x",\n    "mapped": true,\n    "hidden": false,\n    "at": [10, 40],\n'
                '    "size": [1900, 1030],\n    "workspace": {\n        "id": 1,\n        "name": "1"\n    },\n'
                '    "floating": false,\n    "monitor": 0,\n    "class": "%s",\n    "title": "%s",\n'
                '    "initialClass": "%s",\n    "initialTitle": "%s",\n    "pid": %d,\n    "xwayland": false,\n'
                '    "pinned": false,\n    "fullscreen": 0,\n    "grouped": [],\n    "tags": [],\n'
                '    "swallowing": "0x0",\n    "focusHistoryID": 0\n}'
                % (a, cls, cls, cls, cls, pid)).encode()

    def _serve(self):
        self.req.settimeout(0.2)
        while self.running:
            try:
                conn, _ = self.req.accept()
            except (socket.timeout, OSError):
                continue
            conn.settimeout(DEADLINE)
            try:
                request = conn.recv(4096)
            except OSError:
                request = b""
            self.requests += 1
            if request != b"j/activewindow":
                self.bad_requests += 1
            try:
                mode = self.modes.get_nowait()
            except queue.Empty:
                mode = "normal"
            try:
                if mode == "normal":
                    conn.sendall(self.reply())
                elif mode == "broken":
                    conn.sendall(b'{\n    "address": "0x')
                elif mode == "huge":
                    conn.sendall(b'{"address": "0x1", "title": "' + b"x" * (2 * 1024 * 1024) + b'"}')
                elif mode == "stall":
                    # Never answers: latnice-focus must give up and close, or Hyprland would stall.
                    if conn.recv(1) == b"":
                        self.stalled_closed.set()
            except OSError:
                pass
            conn.close()

    def event(self, conn, line, split=False):
        name, _, data = line.partition(">>")
        with self.lock:
            if name == "openwindow":
                address, _, rest = data.partition(",")
                cls = rest.split(",")[1]
                self.windows[int(address, 16)] = (self.pids[cls], cls)
            elif name == "activewindowv2":
                self.active = int(data, 16) if data not in ("", ",") else None
        if split:
            send_split(conn, (line + "\n").encode())
        else:
            conn.sendall((line + "\n").encode())

    def focused_pid(self):
        with self.lock:
            return self.windows[self.active][0] if self.active is not None else 0

    def close(self):
        self.running = False
        self.ev.close()
        self.req.close()


def run_hyprland(binary, root, work, clients):
    sig = "replay_%d_%d" % (os.getpid(), int(time.time()))
    xdg_dir = os.path.join(work, "hypr", sig)
    tmp_dir = os.path.join("/tmp/hypr", sig)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": work,
           "HYPRLAND_INSTANCE_SIGNATURE": sig, "DBUS_SESSION_BUS_ADDRESS": "unix:path=%s/no-bus" % work}
    pids = {"foot": clients[0].pid, "firefox": clients[1].pid, "mpv": clients[2].pid, "weston": clients[3].pid}
    hypr = FakeHyprland(xdg_dir)
    hypr.pids = pids
    focus = Focus(binary, env)
    try:
        conn, _ = hypr.ev.accept()
        ok("latnice-focus connects to $XDG_RUNTIME_DIR/hypr/SIG/.socket2.sock", True)
        wait_for(lambda: hypr.requests == 1, "latnice-focus asks for the active window at connect")

        # The stored stream, one event at a time: a request is answered from the state the events
        # made, so the next event waits for the focus the previous one gave. Every third line is
        # written a byte at a time.
        printed, last = [], 0
        with open(os.path.join(root, "tests/unit/data/hyprland.events")) as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            hypr.event(conn, line, split=(i % 3 == 0))
            if line.startswith("activewindowv2>>") and hypr.focused_pid() != last:
                last = hypr.focused_pid()
                printed.append(last)
                focus.expect(last, "hyprland", "stored stream, line %d: %s" % (i + 1, line))
        p = pids
        ok("the stored stream's focus changes are foot, firefox, none, foot, firefox, mpv, none",
           printed == [p["foot"], p["firefox"], 0, p["foot"], p["firefox"], p["mpv"], 0], str(printed))
        ok("one request per focus change the cache cannot answer (6 with the one at connect), "
           "none for a retitle or for nothing focused", hypr.requests == 6, "%d requests" % hypr.requests)
        ok("every request was j/activewindow", hypr.bad_requests == 0)

        # A window closes and another opens at its address (a reused pointer): asked again.
        n = hypr.requests
        hypr.event(conn, "activewindowv2>>55a7c3b1e2f0")
        focus.expect(p["mpv"], "hyprland", "back to mpv")
        ok("mpv's pid came from the cache, no request", hypr.requests == n, "%d requests" % (hypr.requests - n))
        hypr.event(conn, "closewindow>>55a7c3b1e2f0")
        hypr.event(conn, "openwindow>>55a7c3b1e2f0,2,weston,weston")
        hypr.event(conn, "activewindowv2>>55a7c3b1e2f0")
        focus.expect(p["weston"], "hyprland", "an address reused after closewindow is asked again, not taken from the cache")

        # An event line above 64 KiB is dropped whole; the next one is read.
        conn.sendall(b"activewindow>>firefox," + b"t" * (100 * 1024) + b"\n")
        hypr.event(conn, "activewindowv2>>55a7c3d40a10")
        focus.expect(p["firefox"], "hyprland", "after an over-long event line, the next event is read")

        # Replies that cannot be taken: the focus names nobody.
        hypr.modes.put("broken")
        hypr.event(conn, "activewindowv2>>55a7c3b1e2f0")
        focus.expect(0, "hyprland", "a broken reply names nobody")
        hypr.event(conn, "activewindowv2>>55a7c3d40a10")
        focus.expect(p["firefox"], "hyprland", "and the next change is read")
        hypr.modes.put("huge")
        hypr.event(conn, "activewindowv2>>55a7c3b1e2f0")
        focus.expect(0, "hyprland", "a reply above 1 MiB names nobody")

        # A request Hyprland never answers: latnice-focus closes it and asks for the newer focus.
        hypr.modes.put("stall")
        n = hypr.requests
        hypr.event(conn, "activewindowv2>>55a7c3b1e2f0")
        wait_for(lambda: hypr.requests == n + 1, "the stalled request is made")
        hypr.event(conn, "activewindowv2>>55a7c3d40a10")
        focus.expect(p["firefox"], "hyprland", "a stalled request gives way to the newer focus")
        ok("latnice-focus closed the request Hyprland did not answer", hypr.stalled_closed.wait(DEADLINE))

        # Hyprland restarts, this time under /tmp/hypr/SIG (older Hyprland): the boost ends, and
        # latnice-focus finds the new one and reads its focus.
        conn.close()
        hypr.close()
        focus.expect(0, "hyprland", "Hyprland gone: the boost ends")
        shutil.rmtree(xdg_dir)
        hypr2 = FakeHyprland(tmp_dir)
        hypr2.pids = pids
        hypr2.windows = {0x7f00aa: (p["mpv"], "mpv")}
        hypr2.active = 0x7f00aa
        try:
            conn2, _ = hypr2.ev.accept()
            focus.expect(p["mpv"], "hyprland", "a new Hyprland under /tmp/hypr: its focus is read at connect")
            hypr2.event(conn2, "activewindowv2>>")
            focus.expect(0, "hyprland", "and its events are followed")
            conn2.close()
        finally:
            hypr2.close()
    finally:
        err = focus.stop()
        hypr.close()
        shutil.rmtree(tmp_dir, ignore_errors=True)
        try:
            os.rmdir("/tmp/hypr")  # only if it is empty: made by this test, or nobody's
        except OSError:
            pass
    return err


# --- niri -----------------------------------------------------------------------------------

def niri_accept(server, what):
    conn, _ = server.accept()
    conn.settimeout(DEADLINE)
    request = b""
    while not request.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        request += chunk
    ok(what + ': the request is "EventStream" and a newline', request == b'"EventStream"\n', repr(request))
    return conn


def run_niri(binary, root, work, clients):
    path = os.path.join(work, "niri.sock")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": work, "NIRI_SOCKET": path,
           "DBUS_SESSION_BUS_ADDRESS": "unix:path=%s/no-bus" % work}
    pids = {2001: clients[0].pid, 2002: clients[1].pid, 2003: clients[2].pid}

    def real(line):
        for k, v in pids.items():
            line = line.replace('"pid":%d' % k, '"pid":%d' % v)
        return line

    server = listen(path)
    focus = Focus(binary, env)
    try:
        conn = niri_accept(server, "first connection")
        with open(os.path.join(root, "tests/unit/data/niri-25.11.jsonl")) as f:
            lines = [real(l) for l in f.read().splitlines()]
        with open(os.path.join(root, "tests/unit/data/niri-25.11.expected")) as f:
            expected = [pids.get(int(l), int(l)) for l in f.read().split()]
        # Hostile lines after the first WindowsChanged change nothing (taken, each would move the
        # focus to window 1): an over-long one (5 MiB), broken JSON, a NUL byte. Every second line
        # is written a byte at a time.
        conn.sendall(("\n".join(lines[:3]) + "\n").encode())
        conn.sendall(b'{"WindowFocusChanged":{"id":' + b" " * (5 * 1024 * 1024) + b"1}}\n")
        conn.sendall(b'{"WindowFocusChanged":{"id":1\n{"WindowFocusChanged":{"id":1}}\0\n')
        for i, line in enumerate(lines[3:]):
            data = (line + "\n").encode()
            send_split(conn, data) if i % 2 == 0 else conn.sendall(data)
        for i, pid in enumerate(expected):
            focus.expect(pid, "niri", "stored stream, focus change %d" % (i + 1))

        # niri restarts: the boost ends; the new niri's state is read.
        conn.close()
        focus.expect(0, "niri", "niri gone: the boost ends")
        conn = niri_accept(server, "after a restart")
        conn.sendall(b'{"Ok":"Handled"}\n' + real(
            '{"WindowsChanged":{"windows":[{"id":1,"pid":2001,"is_focused":false},'
            '{"id":3,"pid":2002,"is_focused":true}]}}\n').encode())
        focus.expect(pids[2002], "niri", "the new niri's focused window is read")

        # niri refusing the event stream: latnice-focus drops the connection and tries again.
        conn.close()
        focus.expect(0, "niri", "niri gone again")
        conn = niri_accept(server, "refused")
        conn.sendall(b'{"Err":"the event stream is not available"}\n')
        conn2 = niri_accept(server, "after the refusal")
        ok("after niri refused, latnice-focus connects again", True)
        conn2.sendall(real('{"Ok":"Handled"}\n{"WindowsChanged":{"windows":[{"id":4,"pid":2003,'
                           '"is_focused":true}]}}\n').encode())
        focus.expect(pids[2003], "niri", "and follows the focus")
        conn.close()
        conn2.close()
        focus.expect(0, "niri", "niri gone: the boost ends")
    finally:
        err = focus.stop()
        server.close()
    return err


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("hyprland", "niri"):
        print(__doc__)
        return 2
    binary, which, root = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    if shutil.which("sleep") is None:
        print("SKIP: no sleep(1) to stand in for the clients")
        return 77
    work = tempfile.mkdtemp(prefix="latnice-replay.")
    os.chmod(work, 0o700)
    clients = [subprocess.Popen(["sleep", "1000"]) for _ in range(4)]
    try:
        err = (run_hyprland if which == "hyprland" else run_niri)(binary, root, work, clients)
        if failed:
            print("# latnice-focus stderr:")
            for l in err.splitlines():
                print("#   " + l)
    finally:
        for c in clients:
            c.kill()
            c.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
