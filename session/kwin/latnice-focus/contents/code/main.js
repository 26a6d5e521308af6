// SPDX-License-Identifier: LGPL-2.1-or-later
// latnice foreground boost for KWin 5 and 6: on every activation, the active window's pid goes to
// latnice-focus on the session bus (callDBus reaches only that bus, which is why latnice-focus
// listens there). The pid travels as text: callDBus turns JavaScript numbers into doubles.
// Each activation is a fresh call, so a failed call (latnice-focus restarting) costs one focus
// change, never the boost for good; the active window is also sent when the script starts, which
// latnice-focus makes happen when it starts (org.kde.kwin.Scripting: unloadScript, start).
"use strict";

function latniceSend(window) {
    var pid = window && window.pid > 0 ? window.pid : 0;
    callDBus("org.latnice1.Focus", "/org/latnice1/Focus", "org.latnice1.Focus", "FocusText", String(pid));
}

if (workspace.windowActivated !== undefined) {
    workspace.windowActivated.connect(latniceSend);  // KWin 6
    latniceSend(workspace.activeWindow);
} else {
    workspace.clientActivated.connect(latniceSend);  // KWin 5
    latniceSend(workspace.activeClient);
}
