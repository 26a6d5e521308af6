// SPDX-License-Identifier: LGPL-2.1-or-later
// latnice foreground boost for KWin 5 and 6: on every activation, the active window goes to
// latnice-focus on the session bus (callDBus reaches only that bus, which is why latnice-focus
// listens there), as text: callDBus turns JavaScript numbers into doubles.
// A Wayland window is named by its pid, which KWin has from the client's socket. An X11 (Xwayland)
// window is named "x11:ID" by its X window id: KWin's pid for it is the window's _NET_WM_PID, which
// the client chooses (KWin 5.27 gives it as is), so latnice-focus asks the X server (X-Resource) whose
// the window is. Only X11 windows have windowId (KWin 6: X11Window's; KWin 5.27: undefined for a
// Wayland window).
// Each activation is a fresh call, so a failed call (latnice-focus restarting) costs one focus
// change, never the boost for good; the active window is also sent when the script starts, which
// latnice-focus makes happen when it starts (org.kde.kwin.Scripting: unloadScript, start).
"use strict";

function latniceName(window) {
    if (!window)
        return "0";
    if (window.windowId !== undefined && window.windowId > 0)
        return "x11:" + window.windowId;
    return String(window.pid > 0 ? window.pid : 0);
}

function latniceSend(window) {
    callDBus("org.latnice1.Focus", "/org/latnice1/Focus", "org.latnice1.Focus", "FocusText", latniceName(window));
}

if (workspace.windowActivated !== undefined) {
    workspace.windowActivated.connect(latniceSend);  // KWin 6
    latniceSend(workspace.activeWindow);
} else {
    workspace.clientActivated.connect(latniceSend);  // KWin 5
    latniceSend(workspace.activeClient);
}
