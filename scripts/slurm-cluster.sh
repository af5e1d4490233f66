#!/usr/bin/env bash
# A one-node Slurm cluster inside one folder, for tests and benches: munged
# with its own key and socket, slurmctld and slurmd on ports of their own,
# the node named `hostname -s` at 127.0.0.1 with fake GPUs as GRES
# (File=/dev/ttyN: Slurm wants a device file; the jobs only see
# CUDA_VISIBLE_DEVICES). Everything it writes (configuration, state, spool,
# logs, pid files) is inside DIR, and stop ends exactly what start started.
#
#   slurm-cluster.sh start DIR [--types TYPE:N,...] [--port-base P]
#       default types fake:2; ports P (slurmctld) and P+1 (slurmd), P from
#       --port-base, else QUAL_SLURM_PORT_BASE, else the first free pair
#       from 16817 up (starts are serialized by a lock, so two clusters
#       started at once get different pairs). Waits until sinfo shows the
#       node idle (QUAL_SLURM_START_S, default 60 s) and prints the logs'
#       tails if it does not. QUAL_SLURMD_TIMEOUT sets SlurmdTimeout
#       (default 5 s; below that the controller's own cycle sets the pace).
#   slurm-cluster.sh stop DIR        cancels the cluster's jobs, ends the
#       jobs' processes and the daemons (by their pid files), waits for them
#   slurm-cluster.sh env DIR         prints `export SLURM_CONF=...` (eval it)
#   slurm-cluster.sh status DIR      daemons, sinfo and squeue
#   Fault helpers:
#   slurm-cluster.sh kill-slurmd DIR [--crash]   SIGKILL slurmd; with
#       --crash also the jobs' slurmstepd and processes (a node crash)
#   slurm-cluster.sh start-slurmd DIR            slurmd again
#   slurm-cluster.sh kill-slurmctld DIR | start-slurmctld DIR
#   slurm-cluster.sh drain DIR REASON | down DIR REASON | resume DIR
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge; without
# them it exits 77 (ctest's SKIP_RETURN_CODE) saying what is missing.
# Timeouts are short on purpose: docs/cluster.md gives what each fault
# takes with them (bench/slurm-faults.sh measures it).
set -euo pipefail

prog=slurm-cluster.sh
PATH=$PATH:/usr/sbin:/sbin
die() { echo "$prog: $*" >&2; exit 1; }
skip() { echo "$prog: skipped: $*" >&2; exit 77; }
usage() { sed -n '/^#   slurm-cluster.sh/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

need_tools() {
	local t missing=()
	[ "$(id -u)" -eq 0 ] || skip "a cluster needs root (slurmd runs jobs as their users)"
	for t in munged munge slurmctld slurmd sinfo squeue sbatch scontrol scancel; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] ||
		skip "not installed: ${missing[*]} (Debian: apt-get install slurmctld slurmd slurm-client munge)"
}

# Paths inside DIR, set by paths().
paths() { # DIR [create]
	[ -n "${1:-}" ] || usage
	[ "${2:-}" != create ] || mkdir -p "$1"
	[ -d "$1" ] || die "no cluster folder '$1'"
	dir=$(cd "$1" && pwd)
	etc=$dir/etc conf=$dir/etc/slurm.conf mungedir=$dir/munge
	sock=$dir/munge/munge.socket.2 run=$dir/run log=$dir/log
	export SLURM_CONF=$conf
}

node_name() { hostname -s; }

pid_of() { # NAME: the pid in run/NAME.pid if that process is alive and ours
	local f=$run/$1.pid pid
	[ -s "$f" ] || return 1
	pid=$(tr -dc 0-9 <"$f")
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	# A recycled pid is not ours: the daemon's command line names DIR.
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/" || return 1
	echo "$pid"
}

wait_gone() { # PID SECONDS: true once PID is gone
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -d "/proc/$1" ] || return 0
		# A zombie counts as gone (its parent is not ours to reap), once
		# all its threads are: a daemon's exited main thread is a zombie
		# while the others still hold its ports.
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] &&
			[ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ] && return 0
		sleep 0.1
	done
	return 1
}

end_daemon() { # NAME: SIGTERM, then SIGKILL after 10 s
	local pid
	pid=$(pid_of "$1") || { rm -f "$run/$1.pid"; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 10; then
		echo "$prog: $1 ($pid) still there 10 s after SIGTERM: SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || echo "$prog: $1 ($pid) did not end" >&2
	fi
	rm -f "$run/$1.pid"
}

# The processes of this cluster's jobs: each slurmstepd started by our
# slurmd (its environment names our SLURM_CONF), every process with our
# SLURM_CONF and a SLURM_JOB_ID, and all their descendants.
job_pids() {
	local roots=() p env comm
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		env=$(tr "\\0" "\\n" 2>/dev/null <"/proc/$p/environ") || continue
		grep -qxF "SLURM_CONF=$conf" <<<"$env" || continue
		comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		if [ "$comm" = slurmstepd ] || grep -q '^SLURM_JOB_ID=' <<<"$env"; then
			roots+=("$p")
		fi
	done
	[ ${#roots[@]} -gt 0 ] || return 0
	# Descendants by parent pid, breadth first.
	ps -e -o pid=,ppid= | awk -v roots="${roots[*]}" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			do {
				grew = 0
				for (p in parent)
					if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
			} while (grew)
			for (p in keep) print p
		}'
}

kill_jobs() { # SIGKILL the jobs' processes (a node crash or the last step of stop)
	local pids p
	pids=$(job_pids)
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
	for p in $pids; do wait_gone "$p" 5 || echo "$prog: job process $p did not end" >&2; done
}

write_conf() { # TYPES CTLD_PORT SLURMD_PORT
	local types=$1 p1=$2 p2=$3 node mem gres="" grestypes="" t name count dev=0 i files
	node=$(node_name)
	# 90% of the memory, at least 100 MB: CR_Core does not allocate memory,
	# but a node with less than its RealMemory is drained.
	mem=$(awk '/^MemTotal:/ { m = int($2 / 1024 * 0.9); print (m < 100 ? 100 : m) }' /proc/meminfo)
	: >"$etc/gres.conf"
	IFS=, read -ra grestypes <<<"$types"
	for t in "${grestypes[@]}"; do
		name=${t%%:*} count=${t#*:}
		[[ $name =~ ^[a-z][a-z0-9_]*$ && $count =~ ^[1-9][0-9]?$ && $t == *:* ]] ||
			die "bad GPU type '$t' in --types (TYPE:N, TYPE lower case, N 1..99)"
		gres+=${gres:+,}gpu:$name:$count
		files=()
		for ((i = 0; i < count; i++)); do files+=("/dev/tty$((dev + i))"); done
		dev=$((dev + count))
		[ -e "/dev/tty$((dev - 1))" ] || die "no /dev/tty$((dev - 1)) to stand for GPU $((dev - 1))"
		if [ "$count" -eq 1 ]; then
			echo "NodeName=$node Name=gpu Type=$name File=${files[0]}" >>"$etc/gres.conf"
		else
			echo "NodeName=$node Name=gpu Type=$name File=/dev/tty[$((dev - count))-$((dev - 1))]" >>"$etc/gres.conf"
		fi
	done
	cat >"$conf" <<EOF
# Written by scripts/slurm-cluster.sh: a one-node test cluster in $dir
ClusterName=qual
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$etc/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
# A node that is set DOWN for not responding comes back when its slurmd
# registers again; a drained one stays drained.
ReturnToService=2
# The node's resources are what this file says, whatever slurmd finds.
SlurmdParameters=config_overrides
# Short on purpose so that tests see faults quickly (docs/cluster.md).
SlurmdTimeout=$SLURMD_TIMEOUT
SlurmctldTimeout=10
MessageTimeout=5
InactiveLimit=0
KillWait=2
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem Gres=$gres State=UNKNOWN
PartitionName=qual Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
	: >"$etc/plugstack.conf"
}

port_free() { # PORT
	[ -z "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

start_munged() {
	if [ ! -s "$mungedir/munge.key" ]; then
		dd if=/dev/urandom of="$mungedir/munge.key" bs=1024 count=1 status=none
		chmod 400 "$mungedir/munge.key"
	fi
	munged --key-file="$mungedir/munge.key" --socket="$sock" \
		--pid-file="$run/munged.pid" --log-file="$log/munged.log" \
		--seed-file="$mungedir/munged.seed" -f 9>&-
	local i
	for ((i = 0; i < 50; i++)); do
		munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "munged did not answer on '$sock' within 5 s: $(tail -n 5 "$log/munged.log" 2>/dev/null)"
}

# The daemons must not inherit the start lock (fd 9).
start_slurmctld() { slurmctld -f "$conf" 9>&-; }
start_slurmd() { slurmd -f "$conf" -N "$(node_name)" 9>&-; }

tails() {
	local f
	for f in "$log"/*.log; do
		[ -f "$f" ] || continue
		echo "---- last lines of $f" >&2
		tail -n 20 "$f" >&2
	done
}

node_state() { sinfo -h -n "$(node_name)" -o %T 2>/dev/null | head -n1; }

cmd_start() {
	local types=fake:2 base=${QUAL_SLURM_PORT_BASE:-} limit=${QUAL_SLURM_START_S:-60} i state
	paths "${1:-}" create; shift
	while [ $# -gt 0 ]; do
		case $1 in
		--types) types=${2:?--types needs TYPE:N,...}; shift 2 ;;
		--port-base) base=${2:?--port-base needs a port}; shift 2 ;;
		*) usage ;;
		esac
	done
	[ -z "$base" ] || [[ $base =~ ^[0-9]+$ && $base -ge 1024 && $base -le 65000 ]] ||
		die "bad port base '$base' (1024..65000)"
	if pid_of slurmctld >/dev/null; then die "a cluster already runs in '$dir' (stop it first)"; fi
	mkdir -p "$etc" "$mungedir" "$run" "$log" "$dir/state" "$dir/spool"
	chmod 700 "$mungedir"
	# One start at a time on this machine, so that the free ports found
	# below are still free when the daemons take them.
	exec 9>/tmp/qual-slurm-cluster.lock
	flock -w 120 9 || die "another cluster's start holds /tmp/qual-slurm-cluster.lock"
	if [ -n "$base" ]; then
		port_free "$base" && port_free $((base + 1)) ||
			die "port $base or $((base + 1)) is in use (choose another --port-base)"
	else
		for ((base = 16817; base < 17817; base += 2)); do
			port_free "$base" && port_free $((base + 1)) && break
		done
		[ "$base" -lt 17817 ] || die "no two free ports between 16817 and 17817"
	fi
	SLURMD_TIMEOUT=${QUAL_SLURMD_TIMEOUT:-5}
	write_conf "$types" "$base" $((base + 1))
	echo "$base $((base + 1))" >"$dir/ports"
	start_munged
	start_slurmctld || { tails; cmd_stop_quiet; die "slurmctld did not start"; }
	start_slurmd || { tails; cmd_stop_quiet; die "slurmd did not start"; }
	# The lock is held until the node is idle: by then both daemons have
	# bound their ports, and the next start sees them taken.
	for ((i = 0; i < limit * 5; i++)); do
		state=$(node_state)
		case $state in
		idle) exec 9>&-; echo "$prog: cluster up in $dir (node $(node_name), gres $types, ports $base/$((base + 1)))"; return 0 ;;
		esac
		sleep 0.2
	done
	echo "$prog: node $(node_name) not idle after $limit s (sinfo says '${state:-nothing}')" >&2
	tails
	cmd_stop_quiet
	exit 1
}

cmd_stop_quiet() {
	local ids
	# Jobs are cancelled through Slurm while slurmd can still signal them;
	# whatever is left (slurmd killed before) is killed below.
	if pid_of slurmctld >/dev/null && pid_of slurmd >/dev/null; then
		ids=$(squeue -h -o %i 2>/dev/null || true)
		if [ -n "$ids" ]; then
			# shellcheck disable=SC2086
			scancel $ids 2>/dev/null || true
			local i
			for ((i = 0; i < 50; i++)); do
				[ -z "$(squeue -h -t RUNNING,COMPLETING -o %i 2>/dev/null)" ] && break
				sleep 0.1
			done
		fi
	fi
	end_daemon slurmd
	end_daemon slurmctld
	kill_jobs
	end_daemon munged
	rm -f "$sock" "$sock.lock"
}

cmd_stop() {
	paths "${1:-}"
	[ -f "$conf" ] || die "no cluster in '$dir' (no etc/slurm.conf)"
	cmd_stop_quiet
	echo "$prog: cluster in $dir stopped"
}

cmd_status() {
	local d pid
	paths "${1:-}"
	for d in munged slurmctld slurmd; do
		if pid=$(pid_of "$d"); then echo "$d: running ($pid)"; else echo "$d: not running"; fi
	done
	sinfo -N -o '%N %T %G %E' 2>&1 || true
	squeue -o '%i %j %T %r %N' 2>&1 || true
}

scontrol_node() { # DIR STATE [REASON]
	paths "${1:-}"
	[ -n "${3:-}" ] || [ "$2" = resume ] || die "$2 needs a REASON"
	if [ "$2" = resume ]; then
		# A node that came back by itself (ReturnToService=2) is not
		# resumable: that is success too.
		scontrol update nodename="$(node_name)" state=resume 2>/dev/null ||
			node_state | grep -qE '^(idle|mixed|allocated)' ||
			die "node $(node_name) cannot be resumed (sinfo says '$(node_state)')"
	else
		scontrol update nodename="$(node_name)" state="$2" reason="$3"
	fi
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
env) paths "${1:-}"; [ -f "$conf" ] || die "no cluster in '$dir'"; printf 'export SLURM_CONF=%q\n' "$conf" ;;
start) need_tools; cmd_start "$@" ;;
stop) need_tools; cmd_stop "$@" ;;
status) need_tools; cmd_status "$@" ;;
kill-slurmd)
	need_tools; paths "${1:-}"
	pid=$(pid_of slurmd) || die "slurmd of '$dir' is not running"
	kill -KILL "$pid"; wait_gone "$pid" 5 || die "slurmd ($pid) did not end"
	rm -f "$run/slurmd.pid"
	[ "${2:-}" != --crash ] || kill_jobs ;;
start-slurmd) need_tools; paths "${1:-}"; start_slurmd ;;
kill-slurmctld)
	need_tools; paths "${1:-}"
	pid=$(pid_of slurmctld) || die "slurmctld of '$dir' is not running"
	kill -KILL "$pid"; wait_gone "$pid" 5 || die "slurmctld ($pid) did not end"
	rm -f "$run/slurmctld.pid" ;;
start-slurmctld) need_tools; paths "${1:-}"; start_slurmctld ;;
drain) need_tools; scontrol_node "${1:-}" drain "${2:-}" ;;
down) need_tools; scontrol_node "${1:-}" down "${2:-}" ;;
resume) need_tools; scontrol_node "${1:-}" resume ;;
*) usage ;;
esac
