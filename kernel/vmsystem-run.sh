#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The in-VM driver of kernel/vmsystem.py: runs as lntest.service in a booted Debian 12 (systemd as
# PID 1, pure cgroup v2) from the second disk (/lntest), with the kernel kind in /lntest/kind
# (patched-6.1, patched-6.12, mainline). What a user does: apt-get install ./latnice_*.deb,
# systemctl enable --now latniced, latnicectl status, a [Unit game.slice] drop-in, systemd-run
# --slice=game.slice; then systemctl daemon-reexec, systemctl restart dbus, the same package again
# (dpkg -i) and systemctl stop latniced, checking what the kernel exposes after each (as
# tests/integration/test-units.sh and tests/install/test-package.sh do on the host). Prints
# "LNTEST PASS|FAIL|SKIP name[: why]" on the serial console; lntest.service powers off after it.

exec </dev/null >/dev/ttyS0 2>&1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0
KIND=$(cat /lntest/kind)
LN=-10   # the slice's rule
failures=0

pass() { echo "LNTEST PASS $1${2:+: $2}"; }
fail() { echo "LNTEST FAIL $1${2:+: $2}"; failures=$((failures + 1)); }
skip() { echo "LNTEST SKIP $1${2:+: $2}"; }
info() { echo "LNTEST INFO $*"; }
check() { # check NAME CMD...: CMD's output is shown on failure
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(tr '\n' '|' <<< "$out" | cut -c1-600)"; return 1; fi
}
eventually() { # eventually SECONDS CMD...: CMD until it succeeds, for at most SECONDS (its last output)
	local n=$(($1 * 5)) out
	shift
	while :; do
		out=$("$@" 2>&1) && { [[ -n $out ]] && echo "$out"; return 0; }
		((n-- > 0)) || { echo "$out"; return 1; }
		sleep 0.2
	done
}
excerpt() { sed "s/^/$1: /" | head -n "${2:-40}"; } # lines for the report, on the console
unit() { systemctl show -P "$2" "$1"; }
mainpid() { unit "$1" MainPID; }
journal() { journalctl -u latniced.service --no-pager -o cat | grep -v '^libbpf: '; }

echo "LNTEST BEGIN mode=system kind=$KIND kernel=$(uname -r) cpus=$(nproc) pid1=$(cat /proc/1/comm) uptime=$(cut -d' ' -f1 /proc/uptime)s"
info "systemd: $(systemctl --version | head -n1)"

# --- the system ------------------------------------------------------------------------------------
check systemd-pid1 test "$(cat /proc/1/comm)" = systemd
check unified-hierarchy sh -c '[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && ! grep -q " cgroup " /proc/self/mounts'
info "cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers); subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
state=$(systemctl is-system-running 2>&1)
info "system state: $state"
systemctl --failed --no-legend --plain 2>&1 | excerpt FAILED-UNIT

case $KIND in
patched-6.1 | patched-6.12)
	want_backend=latency-nice ;;
mainline)
	want_backend=eevdf-slice ;;
*)
	fail kind "unknown kind $KIND"
	want_backend=unknown ;;
esac
[[ $KIND == mainline ]] || check kernel-btf-latency_prio sh -c 'test -r /sys/kernel/btf/vmlinux'

# slice(ln) on EEVDF (the mapping of daemon/sched-map.c), for the per-task checks of the mainline case and 6.12's group entity
base=$(awk '$1 == "se.slice" { print $3 }' /proc/self/sched)
declare -A weight=([-10]=9548 [0]=1024)
S() { local s=$((base * 1024 / weight[$1])); ((s < 100000)) && s=100000; ((s > 100000000)) && s=100000000; echo $s; }
[[ -n $base ]] && info "default slice $base ns; LatencyNice=$LN -> $(S $LN) ns"

# --- install, as a user would ----------------------------------------------------------------------
deb=$(ls /lntest/latnice_*_amd64.deb)
cp "$deb" /root/
deb=/root/${deb##*/}
# Log what latniced decides (notice is the package's default): an administrator's drop-in.
mkdir -p /etc/systemd/system/latniced.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/sbin/latniced --log-level=info\n' > /etc/systemd/system/latniced.service.d/50-log.conf
if check apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb"; then
	:
else
	check dpkg-install dpkg -i "$deb" || { echo "LNTEST END"; exit 1; }
fi
info "installed: $(dpkg-query -W -f='${Package} ${Version} ${Status}' latnice)"
check enable-now systemctl enable --now latniced.service
check latniced-active eventually 20 sh -c '[ "$(systemctl show -P ActiveState latniced.service)" = active ]' || {
	journal | tail -n 40 | excerpt LATNICED; }
systemctl status --no-pager latniced.service 2>&1 | head -n 12 | excerpt STATUS
check on-the-bus eventually 20 busctl status org.latnice1
st=$(latnicectl status 2>&1)
echo "$st" | excerpt LATNICECTL 30
check "latnicectl-status-backend-$want_backend" grep -Eq "^ *Backend: $want_backend\b" <<< "$st"

# --- a [Unit game.slice] drop-in; work in the slice ------------------------------------------------
reloads=$(busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager Reloads | awk '{ print $2 }')
mkdir -p /etc/latnice.d
printf '[Unit game.slice]\nLatencyNice=%d\n' "$LN" > /etc/latnice.d/50-game.conf
check drop-in-reloaded eventually 20 sh -c '[ "$(busctl get-property org.latnice1 /org/latnice1 org.latnice1.Manager Reloads | awk "{ print \$2 }")" -gt '"$reloads"' ]'
# lnt-g1: a shell that starts its children once it has the slice's value (/run/lnt-go): they
# inherit latniced's value through fork, and a stop must give them the default, not that value.
check systemd-run-slice systemd-run -q --slice=game.slice --unit=lnt-g1 \
	sh -c 'while [ ! -e /run/lnt-go ]; do sleep 0.2; done; sleep 600 & exec sleep 601'
check systemd-run-slice-2 systemd-run -q --slice=game.slice --unit=lnt-g2 sleep 602

KNOB=/sys/fs/cgroup/game.slice/cpu.latency.nice
# Every task of every process below cgroup $1 has value $2 as read by $3 TID (prints the odd ones).
tasks_are() {
	local n=0 bad=0 procs p t v
	for procs in $(find "/sys/fs/cgroup$1" -name cgroup.procs); do
		for p in $(cat "$procs"); do
			for t in /proc/$p/task/*; do
				v=$("$3" "${t##*/}" 2>/dev/null)
				# a task that exited meanwhile (the shell's short sleeps) is not a result
				[[ -n $v && -e $t/stat ]] || continue
				n=$((n + 1))
				[[ $v == "$2" ]] || { echo "$t ($(cat $t/comm)): $3 $v, want $2"; bad=1; }
			done
		done
	done
	((n > 0)) || { echo "no tasks in $1"; return 1; }
	((bad == 0)) && echo "$n tasks in $1 at $3 $2"
	return $bad
}
se_slice() { awk '$1 == "se.slice" { print $3 }' "/proc/$1/sched"; }
latency_nice() { /lntest/lntest getln "$1"; }
tasks_have() { tasks_are "$1" "$2" se_slice; }    # the mainline case: the EEVDF slice
tasks_ln() { tasks_are "$1" "$2" latency_nice; }  # the patched uAPI: the task's own latency nice
knob_is() { local v; v=$(cat "$KNOB" 2>&1) || { echo "$KNOB: $v"; return 1; }; echo "$KNOB = $v"; [[ $v == "$1" ]]; }
# The default: the knob reads 0, or game.slice has no cpu controller any more (latniced gave back the
# CPUWeight= it asked for): its tasks are in the parent's task group.
knob_default() {
	knob_is 0 && return 0
	[[ ! -e $KNOB ]] && ! grep -qw cpu /sys/fs/cgroup/game.slice/cgroup.controllers &&
		echo "game.slice has no cpu controller: no task group of its own"
}
# The group entity: sched/debug's cfs_rq[N]:/game.slice sections (kernel/*/ debug patch) show
# se->slice (6.12, ns) or se->latency_weight (6.1). A cfs_rq is listed while it has load, so
# something runs in the slice meanwhile.
group_entity_is() { # group_entity_is LATENCY_NICE
	local field want out
	case $KIND in
	patched-6.12) field=se-\>slice want=$(S "$1") ;;
	patched-6.1) field=se-\>latency_weight want=$([[ $1 == 0 ]] && echo 0 || echo 512) ;; # sched_latency_to_weight[-10 + 20]
	esac
	systemd-run -q --slice=game.slice --unit=lnt-busy timeout 8 sh -c 'while :; do :; done' || return 1
	sleep 1
	out=$(awk -v f=".$field" '
		/^cfs_rq\[[0-9]+\]:/ { sec = ($0 ~ /:\/game\.slice$/) ? $1 : "" }
		sec != "" && $1 == f { print sec, f, $3 }' /sys/kernel/debug/sched/debug)
	systemctl stop lnt-busy.service 2>/dev/null
	echo "$out" | tee /run/lnt-group-entity
	[[ -n $out ]] || { echo "no cfs_rq[N]:/game.slice with $field in sched/debug"; return 1; }
	! awk -v w="$want" '$3 != w { bad = 1 } END { exit !bad }' <<< "$out"
}
# What the slice should show now that the rule is in force ($1: the value; 0 = latniced's gone).
slice_at() {
	case $KIND in
	mainline) tasks_have /game.slice "$(S "$1")" ;;
	*) if [[ $1 == 0 ]]; then knob_default; else knob_is "$1"; fi ;;
	esac
}

if [[ $KIND == mainline ]]; then
	check no-knob-on-mainline test ! -e "$KNOB"
	check tasks-get-the-slice eventually 20 tasks_have /game.slice "$(S $LN)"
	for u in lnt-g1 lnt-g2; do
		p=$(mainpid $u.service)
		echo "KNOB $u (pid $p): $(grep -E '^se.slice' /proc/$p/sched)"
	done
else
	check knob-holds-the-value eventually 20 knob_is "$LN"
	echo "KNOB read back: $KNOB = $(cat $KNOB 2>&1) (cgroup.controllers of game.slice: $(cat /sys/fs/cgroup/game.slice/cgroup.controllers 2>&1); CPUWeight of game.slice: $(systemctl show -P CPUWeight game.slice))"
	check group-entity-gets-it group_entity_is "$LN"
	sed 's|^|KNOB /sys/kernel/debug/sched/debug: |' /run/lnt-group-entity
	check members-keep-their-own-value tasks_ln /game.slice 0
fi
touch /run/lnt-go
check children-started-later eventually 20 sh -c '[ "$(cat /sys/fs/cgroup/game.slice/lnt-g1.service/cgroup.procs | wc -l)" = 2 ] && ! grep -q "^sh$" /proc/$(systemctl show -P MainPID lnt-g1.service)/comm'
if [[ $KIND == mainline ]]; then
	check children-started-later-applied eventually 20 tasks_have /game.slice/lnt-g1.service "$(S $LN)"
fi
journal | grep -E 'game\.slice|cpu\.latency|backend|Backend' | head -n 20 | excerpt LATNICED
pid0=$(mainpid latniced.service)

# --- systemctl daemon-reexec ----------------------------------------------------------------------
check daemon-reexec systemctl daemon-reexec
check reexec-value-kept slice_at "$LN"
check reexec-new-unit eventually 20 systemd-run -q --slice=game.slice --unit=lnt-g3 sleep 603
if [[ $KIND == mainline ]]; then
	check reexec-new-unit-applied eventually 20 tasks_have /game.slice/lnt-g3.service "$(S $LN)"
else
	check reexec-new-unit-in-the-group sh -c "grep -qx '0::/game.slice/lnt-g3.service' /proc/$(mainpid lnt-g3.service)/cgroup && cat $KNOB | grep -qx -- $LN"
fi

# --- systemctl restart dbus -------------------------------------------------------------------------
check restart-dbus systemctl restart dbus.service
check dbus-restart-value-kept slice_at "$LN"
check dbus-restart-latniced-back eventually 30 busctl status org.latnice1
check dbus-restart-new-unit eventually 20 systemd-run -q --slice=game.slice --unit=lnt-g4 sleep 604
[[ $KIND == mainline ]] && check dbus-restart-new-unit-applied eventually 20 tasks_have /game.slice/lnt-g4.service "$(S $LN)"
check latniced-never-restarted sh -c "[ \"\$(systemctl show -P MainPID latniced.service)\" = $pid0 ] && [ \"\$(systemctl show -P NRestarts latniced.service)\" = 0 ]"

# --- the package again (dpkg -i the same .deb): one restart, values back -------------------------
check reinstall dpkg -i "$deb"
check reinstall-latniced-restarted eventually 20 sh -c "p=\$(systemctl show -P MainPID latniced.service); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid0 ] && [ \"\$(systemctl show -P SubState latniced.service)\" = running ]"
check reinstall-value-back eventually 20 slice_at "$LN"
if [[ $KIND != mainline ]]; then
	check reinstall-group-entity group_entity_is "$LN"
fi
check reinstall-still-enabled test "$(systemctl is-enabled latniced.service)" = enabled

# --- systemctl stop latniced: what it set is restored ---------------------------------------------
check stop systemctl stop latniced.service
check stop-restored slice_at 0
if [[ $KIND != mainline ]]; then
	echo "KNOB after stop: $KNOB = $(cat $KNOB 2>&1); game.slice controllers: $(cat /sys/fs/cgroup/game.slice/cgroup.controllers)"
	check stop-members-default tasks_ln /game.slice 0
	if [[ -e $KNOB ]]; then
		check stop-group-entity-restored group_entity_is 0
	else
		skip stop-group-entity-restored "game.slice has no task group of its own any more"
	fi
fi
journal | grep -E 'game\.slice|Restored|restored' | tail -n 10 | excerpt LATNICED
check stop-said-restored sh -c 'journalctl -u latniced.service --no-pager -o cat | grep -qi "restored"'

if ((failures)); then
	echo "--- latniced's journal"
	journal | tail -n 60 | excerpt LATNICED 60
fi
echo "LNTEST END failures=$failures"
exit 0
