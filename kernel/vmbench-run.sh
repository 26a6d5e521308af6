#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The in-VM driver of `kernel/vmsystem.py --bench`: the desktop benchmark's sitting
# (bench/desktop/run.py) in a booted Debian 12, with latniced from the package as users install it.
# Runs as lntest.service from the second disk (/lntest): installs the package, stops the
# latniced.service the package started (the sitting starts its own daemon, on a private root, for
# each configuration), then runs run.py with the arguments in /lntest/bench-args against the
# profiles the package installed. Every line of the tables goes to the serial console as
# "LNBENCH-DESKTOP <line>", the raw cells as "LNBENCH-DESKTOP-JSON <base64 of gzip>"; then
# "LNTEST PASS|FAIL bench" and "LNTEST END", and lntest.service powers off.

exec </dev/null >/dev/ttyS0 2>&1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0
KIND=$(cat /lntest/kind)
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
echo "LNTEST BEGIN mode=bench kind=$KIND kernel=$(uname -r) cpus=$(nproc) clocksource=$(cat $cs) uptime=$(cut -d' ' -f1 /proc/uptime)s"

end() { # end PASS|FAIL [why]
	echo "LNTEST $1 bench${2:+: $2}"
	echo "LNTEST END"
	exit 0
}

deb=$(ls /lntest/latnice_*_amd64.deb)
cp "$deb" /root/ && deb=/root/${deb##*/}
dpkg -i "$deb" > /root/dpkg.log 2>&1 || { sed 's/^/LNTEST INFO dpkg: /' /root/dpkg.log | tail -n 20; end FAIL "dpkg -i $deb"; }
systemctl disable --now latniced.service > /dev/null 2>&1
systemctl is-active -q latniced.service && end FAIL "latniced.service is still running"
profiles=/usr/share/latnice/profiles
[[ -r $profiles/desktop.conf ]] || end FAIL "the package installed no $profiles/desktop.conf"

# A tick clock makes every time a multiple of 4 ms: the tables would look like figures and mean nothing.
case $(cat $cs) in
*jiffies*) end FAIL "the clocksource is $(cat $cs) (a tick clock: every time a multiple of a tick): not a measurement" ;;
esac

read -r -a bench_args < /lntest/bench-args
echo "LNTEST INFO bench: run.py ${bench_args[*]}; loadavg $(cat /proc/loadavg); clocksource $(cat $cs)"
python3 /lntest/run.py --bench /lntest/lnbench-desktop --latniced /usr/sbin/latniced --profiles "$profiles" \
	--scratch /var/tmp --json /root/bench.json "${bench_args[@]}" > /root/tables.md 2> /root/progress.log
rc=$?
sed 's/^/LNTEST INFO progress: /' /root/progress.log | tail -n 60
sed 's/^/LNBENCH-DESKTOP /' /root/tables.md
[[ -s /root/bench.json ]] && echo "LNBENCH-DESKTOP-JSON $(gzip -9c /root/bench.json | base64 -w 0)"
[[ $rc == 0 ]] || end FAIL "run.py exited with $rc"
end PASS
