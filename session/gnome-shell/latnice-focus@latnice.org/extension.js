// SPDX-License-Identifier: LGPL-2.1-or-later
// latnice foreground boost for GNOME Shell 45 and later (an ES module, as those load only): on every
// focus change, the focused window's pid (MetaWindow.get_pid(), 0 when Mutter does not know it) goes
// to latnice-focus on the session bus, which hears only GNOME Shell's own connection (the owner of
// org.gnome.Shell): Gio.DBus.session is that connection. Each change is a fresh asynchronous call, so
// a failed call (latnice-focus restarting) costs one focus change, never the boost for good; the
// focused window is also sent when enabled, and again whenever org.latnice1.Focus gets an owner
// (latnice-focus started or restarted). disable() leaves nothing behind: the signal handler and the
// name watch are gone, and calls in flight are cancelled.
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';

export default class LatniceFocusExtension extends Extension {
    enable() {
        this._cancellable = new Gio.Cancellable();
        this._focusId = global.display.connect('notify::focus-window', () => this._send());
        // Called as soon as the name has an owner: that is the first send.
        this._watchId = Gio.bus_watch_name_on_connection(Gio.DBus.session, 'org.latnice1.Focus',
            Gio.BusNameWatcherFlags.NONE, () => this._send(), null);
    }

    disable() {
        Gio.bus_unwatch_name(this._watchId);
        this._watchId = 0;
        global.display.disconnect(this._focusId);
        this._focusId = 0;
        this._cancellable.cancel();
        this._cancellable = null;
    }

    _send() {
        const w = global.display.focus_window;
        const pid = w ? w.get_pid() : 0;
        Gio.DBus.session.call('org.latnice1.Focus', '/org/latnice1/Focus', 'org.latnice1.Focus', 'Focus',
            new GLib.Variant('(u)', [pid > 0 ? pid : 0]), null, Gio.DBusCallFlags.NO_AUTO_START, 1000,
            this._cancellable, (conn, res) => {
                try {
                    conn.call_finish(res);
                } catch (e) {
                    // latnice-focus not running, or disabled meanwhile: the next focus change tries again.
                }
            });
    }
}
