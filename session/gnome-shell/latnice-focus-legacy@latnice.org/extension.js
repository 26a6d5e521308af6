// SPDX-License-Identifier: LGPL-2.1-or-later
// latnice foreground boost for GNOME Shell 43 and 44, in the extension format they load (imports.gi,
// init()); GNOME Shell 45 and later load ES modules only and take latnice-focus@latnice.org. On every
// focus change, the focused window's pid (MetaWindow.get_pid(), 0 when Mutter does not know it) goes
// to latnice-focus on the session bus. Each change is a fresh asynchronous call, so a failed call
// (latnice-focus restarting) costs one focus change, never the boost for good; the focused window is
// also sent when enabled, and again whenever org.latnice1.Focus gets an owner (latnice-focus started
// or restarted).
'use strict';

const { Gio, GLib } = imports.gi;

class LatniceFocus {
    enable() {
        this._id = global.display.connect('notify::focus-window', () => this._send());
        // Called at once if the name has an owner: that is the first send.
        this._watch = Gio.bus_watch_name_on_connection(Gio.DBus.session, 'org.latnice1.Focus',
            Gio.BusNameWatcherFlags.NONE, () => this._send(), null);
    }

    disable() {
        global.display.disconnect(this._id);
        this._id = 0;
        Gio.bus_unwatch_name(this._watch);
        this._watch = 0;
    }

    _send() {
        const w = global.display.focus_window;
        const pid = w ? w.get_pid() : 0;
        Gio.DBus.session.call('org.latnice1.Focus', '/org/latnice1/Focus', 'org.latnice1.Focus', 'Focus',
            new GLib.Variant('(u)', [pid > 0 ? pid : 0]), null, Gio.DBusCallFlags.NO_AUTO_START, 1000, null,
            (conn, res) => {
                try {
                    conn.call_finish(res);
                } catch (e) {
                    // latnice-focus not running: the next focus change tries again.
                }
            });
    }
}

function init() {
    return new LatniceFocus();
}
