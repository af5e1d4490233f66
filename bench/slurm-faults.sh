#!/usr/bin/env bash
# What Slurm does in each fault a qual job on a cluster can meet, measured on
# one-node test clusters (scripts/slurm-cluster.sh): how long each takes,
# and what `squeue -o '%T|%r|%N'` and `scontrol show job -o` print, the
# words the bridge (qual-slurm) reads. docs/cluster.md quotes its output.
#
#   bash bench/slurm-faults.sh [WORKDIR]      (root; about 4.5 minutes)
#
# Two clusters run side by side: A for scancel, the time limit and bad GRES
# requests (then two short-lived ones with SlurmdTimeout 2 and 10), B for
# the node faults (slurmd killed, drain, down) and a slurmctld restart. Every line of the result is "case | what | value";
# times are seconds from the fault (or submission) to the first poll (every
# 0.2 s) that saw the change. Jobs are submitted as qual-slurm submits them
# (--no-requeue), and once without it to show Slurm's default.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cluster="bash $root/scripts/slurm-cluster.sh"
work=${1:-$(mktemp -d /tmp/qual-slurm-faults.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
A=$work/a B=$work/b

stop_all() {
	local c
	for c in "$A" "$B" "$work/t2" "$work/t10"; do
		[ ! -f "$c/etc/slurm.conf" ] || $cluster stop "$c" >/dev/null 2>&1 || true
	done
}
trap stop_all EXIT

rc=0
$cluster start "$A" >/dev/null || rc=$?
[ $rc -eq 0 ] && { $cluster start "$B" >/dev/null || rc=$?; }
if [ $rc -ne 0 ]; then
	[ $rc -eq 77 ] && echo "slurm-faults.sh: skipped (no Slurm or not root)" >&2
	exit $rc
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
out() { printf '%s | %s | %s\n' "$@"; }

# The job every case runs: records its pid, each signal it gets (with the
# time), and its end; runs SECS seconds.
cat >"$work/job.sh" <<'EOF'
#!/bin/bash
w=$1 name=$2 secs=$3
echo $$ >"$w/$name.pid"
trap 'echo "TERM $(date +%s.%N)" >>"$w/$name.sig"' TERM
trap 'echo "INT $(date +%s.%N)" >>"$w/$name.sig"' INT
for ((i = 0; i < secs; i++)); do sleep 1; done
echo "END $(date +%s.%N)" >>"$w/$name.sig"
EOF
chmod +x "$work/job.sh"

submit() { # CLUSTER NAME SECS [SBATCH OPTIONS...]: prints Slurm's id
	local c=$1 name=$2 secs=$3
	shift 3
	SLURM_CONF=$c/etc/slurm.conf sbatch --parsable -J "$name" -D "$work" \
		-o "$work/$name.out" "$@" "$work/job.sh" "$work" "$name" "$secs"
}

sq() { SLURM_CONF=$1/etc/slurm.conf squeue -h -j "$2" -o '%T|%r|%N' 2>&1 || true; }
sc() { # CLUSTER ID: the words of scontrol show job the bridge reads
	SLURM_CONF=$1/etc/slurm.conf scontrol show job -o "$2" 2>&1 |
		grep -oE '(^| )(JobState|Reason|ExitCode|Restarts|NodeList|RunTime)=[^ ]*|error:.*' |
		sed 's/^ //' | tr '\n' ' ' || true
}
node() { SLURM_CONF=$1/etc/slurm.conf sinfo -h -o '%T|%E' 2>&1 | head -n1; }

wait_for() { # SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds
	local limit=$1 t0
	shift
	t0=$(now)
	while ! "$@"; do
		[ "$(awk -v a="$t0" -v b="$(now)" -v l="$limit" 'BEGIN { print (b - a > l) }')" = 0 ] || return 1
		sleep 0.2
	done
}
state_is() { sq "$1" "$2" | grep -qE "^($3)\\|"; }
sc_state_is() { sc "$1" "$2" | grep -qE "JobState=($3) "; }
node_is() { node "$1" | grep -qE "^($2)\\|"; }
alive() { [ -s "$work/$1.pid" ] && kill -0 "$(cat "$work/$1.pid")" 2>/dev/null; }
started() { [ -s "$work/$1.pid" ]; }

running() { # CLUSTER NAME SECS [OPTIONS]: submits and waits for RUNNING; prints the id
	local id t0
	t0=$(now)
	id=$(submit "$@")
	wait_for 30 started "$2" || { echo "slurm-faults.sh: job $2 did not start" >&2; exit 1; }
	wait_for 10 state_is "$1" "$id" RUNNING
	echo "$id"
	echo "$(since "$t0")" >"$work/$2.t_run"
}

back_to_idle() { # CLUSTER CASE
	local t0
	t0=$(now)
	wait_for 90 node_is "$1" 'idle' && out "$2" "node idle again after" "$(since "$t0") s" ||
		out "$2" "node NOT idle after 90 s" "$(node "$1")"
}

# ---- cluster A: scancel, the time limit, bad GRES requests
cases_a() {
	local id id2 t0 sig
	# (d) scancel of a running job, then of a pending one (two jobs take
	# the two fake GPUs; the third waits for Resources).
	id=$(running "$A" d-run 120 --no-requeue --gres=gpu:fake:1)
	out d "submit to RUNNING" "$(cat "$work/d-run.t_run") s"
	id2=$(running "$A" d-run2 120 --no-requeue --gres=gpu:fake:1)
	t0=$(now)
	local p
	p=$(submit "$A" d-pend 10 --no-requeue --gres=gpu:fake:1)
	wait_for 10 eval 'sq "$A" "$p" | grep -q "^PENDING|Resources"' || true
	out d "pending job (3rd on 2 GPUs): squeue" "$(sq "$A" "$p")"
	t0=$(now)
	SLURM_CONF=$A/etc/slurm.conf scancel "$p"
	wait_for 10 sc_state_is "$A" "$p" CANCELLED
	out d "scancel pending: CANCELLED after" "$(since "$t0") s"
	out d "scancel pending: squeue" "$(sq "$A" "$p")"
	out d "scancel pending: scontrol" "$(sc "$A" "$p")"
	t0=$(now)
	SLURM_CONF=$A/etc/slurm.conf scancel "$id"
	wait_for 10 eval '! alive d-run'
	out d "scancel running: job's processes gone after" "$(since "$t0") s"
	wait_for 10 sc_state_is "$A" "$id" CANCELLED
	out d "scancel running: CANCELLED after" "$(since "$t0") s"
	out d "scancel running: squeue" "$(sq "$A" "$id")"
	out d "scancel running: scontrol" "$(sc "$A" "$id")"
	out d "scancel running: signals the job saw" "$(awk -v t="$t0" '{ printf "%s at +%.1f s; ", $1, $2 - t }' "$work/d-run.sig" 2>/dev/null)"
	SLURM_CONF=$A/etc/slurm.conf scancel "$id2"

	# (e) past --time=1 (one minute): TIMEOUT; Slurm checks limits
	# about every 30 s, so it lands 60..90 s after the start.
	id=$(running "$A" e-time 600 --no-requeue --time=1 --gres=gpu:fake:1)
	t0=$(now)
	wait_for 150 sc_state_is "$A" "$id" TIMEOUT
	out e "--time=1: TIMEOUT after start" "$(since "$t0") s"
	wait_for 10 eval '! alive e-time' || true
	out e "squeue" "$(sq "$A" "$id")"
	out e "scontrol" "$(sc "$A" "$id")"
	sig=$(awk -v t="$t0" '{ printf "%s at +%.1f s; ", $1, $2 - t }' "$work/e-time.sig" 2>/dev/null || true)
	out e "signals the job saw" "${sig:-none}"
	out e "job's processes alive after" "$(alive e-time && echo yes || echo no)"

	# (g) bad GRES requests: sbatch's words.
	local g
	for g in gpu:nosuch:1 gpu:fake:3 nosuch:1; do
		out g "sbatch --gres=$g" "$(SLURM_CONF=$A/etc/slurm.conf sbatch --gres=$g --wrap true 2>&1 | tr '\n' ' '; echo "(exit ${PIPESTATUS[0]})")"
	done
}

# ---- clusters of their own: how SlurmdTimeout paces a dead node's DOWN
timeout_case() {
	local t c id t0
	for t in 2 10; do
		c=$work/t$t
		QUAL_SLURMD_TIMEOUT=$t $cluster start "$c" >/dev/null
		id=$(running "$c" "t$t-run" 300 --no-requeue --gres=gpu:fake:1)
		t0=$(now)
		$cluster kill-slurmd "$c" --crash
		wait_for 120 node_is "$c" 'down\*?' || true
		out t "SlurmdTimeout=$t: node DOWN after" "$(since "$t0") s ($(node "$c"))"
		$cluster stop "$c" >/dev/null
	done
}

# ---- cluster B: node faults and a slurmctld restart
kill_case() { # CASE NAME [--crash] [--requeue]
	local c=$1 name=$2 crash=${3:-} requeue=--no-requeue id t0 sawstar=""
	[ "${4:-}" != --requeue ] || requeue=""
	id=$(running "$B" "$name" 300 $requeue --gres=gpu:fake:1)
	t0=$(now)
	$cluster kill-slurmd "$B" $crash
	while :; do
		local n
		n=$(node "$B")
		[ -n "$sawstar" ] || case $n in *'*|'*) sawstar=1; out "$c" "node not responding (*) after" "$(since "$t0") s" ;; esac
		case $n in down*) break ;; esac
		[ "$(since "$t0" | cut -d. -f1)" -lt 120 ] || { out "$c" "node NOT down after 120 s" "$n"; break; }
		sleep 0.2
	done
	out "$c" "node DOWN after" "$(since "$t0") s"
	out "$c" "sinfo %T|%E" "$(node "$B")"
	wait_for 30 eval '! state_is "$B" "$id" RUNNING' || true
	out "$c" "job left RUNNING after" "$(since "$t0") s"
	out "$c" "squeue" "$(sq "$B" "$id")"
	out "$c" "scontrol" "$(sc "$B" "$id")"
	out "$c" "job's processes still running" "$(alive "$name" && echo yes || echo no)"
	t0=$(now)
	$cluster start-slurmd "$B"
	back_to_idle "$B" "$c"
	sleep 1
	if wait_for 30 eval '! alive "$name"'; then
		out "$c" "job's processes gone after slurmd restarted, after" "$(since "$t0") s"
	else
		out "$c" "job's processes after slurmd restarted" "still running 30 s later"
	fi
	out "$c" "scontrol after slurmd restarted" "$(sc "$B" "$id")"
	SLURM_CONF=$B/etc/slurm.conf scancel "$id" 2>/dev/null || true
	[ ! -s "$work/$name.pid" ] || kill -KILL "$(cat "$work/$name.pid")" 2>/dev/null || true
}

node_case() { # CASE STATE: drain or down while a job runs and one waits
	local c=$1 st=$2 id p t0
	id=$(running "$B" "$c-run" 8 --no-requeue --gres=gpu:fake:1)
	t0=$(now)
	$cluster "$st" "$B" "qual test $st"
	out "$c" "node right after $st" "$(node "$B")"
	p=$(submit "$B" "$c-pend" 5 --no-requeue --gres=gpu:fake:1)
	sleep 2
	out "$c" "node after $st" "$(node "$B")"
	out "$c" "running job 2 s later: squeue" "$(sq "$B" "$id")"
	out "$c" "running job 2 s later: scontrol" "$(sc "$B" "$id")"
	out "$c" "new job submitted after $st: squeue" "$(sq "$B" "$p")"
	wait_for 30 eval '! state_is "$B" "$id" "RUNNING|COMPLETING"' || true
	out "$c" "running job left RUNNING after" "$(since "$t0") s"
	out "$c" "running job at its end: scontrol" "$(sc "$B" "$id")"
	wait_for 30 eval '! alive "$c-run"' || true
	out "$c" "running job's processes gone after" "$(alive "$c-run" && echo "never (30 s)" || since "$t0") s"
	out "$c" "signals the job saw" "$(awk -v t="$t0" '{ printf "%s at +%.1f s; ", $1, $2 - t }' "$work/$c-run.sig" 2>/dev/null)"
	out "$c" "node then" "$(node "$B")"
	out "$c" "pending job then: squeue" "$(sq "$B" "$p")"
	$cluster resume "$B"
	back_to_idle "$B" "$c"
	wait_for 30 sc_state_is "$B" "$p" 'COMPLETED|CANCELLED|FAILED' || true
	out "$c" "pending job after resume: scontrol" "$(sc "$B" "$p")"
}

ctld_case() { # CASE HOW [AFTER]: slurmctld stopped (SIGTERM) or killed
	# (SIGKILL) mid-job, AFTER seconds after the job started (default 0)
	local c=$1 how=$2 after=${3:-0} id t0 err
	id=$(running "$B" "$c-run" $((15 + after)) --no-requeue --gres=gpu:fake:1)
	sleep "$after"
	t0=$(now)
	if [ "$how" = TERM ]; then
		kill -TERM "$(cat "$B/run/slurmctld.pid")"
		wait_for 15 eval '[ ! -s "$B/run/slurmctld.pid" ] || ! kill -0 $(cat "$B/run/slurmctld.pid") 2>/dev/null' || true
	else
		$cluster kill-slurmctld "$B"
	fi
	err=$(sq "$B" "$id" | tr '\n' ' ')
	out "$c" "squeue while slurmctld is gone" "$err(exit $(SLURM_CONF=$B/etc/slurm.conf squeue -h -j "$id" >/dev/null 2>&1; echo $?))"
	sleep 3
	$cluster start-slurmctld "$B"
	wait_for 30 eval 'SLURM_CONF=$B/etc/slurm.conf squeue -h >/dev/null 2>&1'
	out "$c" "slurmctld back; squeue" "$(sq "$B" "$id")"
	wait_for 60 sc_state_is "$B" "$id" 'COMPLETED|FAILED|NODE_FAIL|CANCELLED' || true
	out "$c" "Slurm saw the job's end, after the stop" "$(since "$t0") s"
	out "$c" "scontrol" "$(sc "$B" "$id")"
	out "$c" "the job's own end, after the stop" "$(awk -v t="$t0" '$1 == "END" { printf "+%.1f s", $2 - t }' "$work/$c-run.sig" 2>/dev/null)"
	back_to_idle "$B" "$c"
}

cases_b() {
	kill_case a1 a1-kill ""
	kill_case a2 a2-crash --crash
	kill_case a3 a3-requeue "" --requeue
	node_case b drain
	node_case c down
	ctld_case f1 TERM
	ctld_case f2 KILL
	ctld_case f3 KILL 10
}

# squeue's cost: what one poll costs the controller's host.
sq_cost() {
	local t0 i
	t0=$(now)
	for ((i = 0; i < 50; i++)); do SLURM_CONF=$A/etc/slurm.conf squeue -h -j 1 -o '%T|%r|%N' >/dev/null 2>&1; done
	out cost "one squeue -j (mean of 50)" "$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f ms", (b - a) * 1000 / 50 }')"
}

echo "# slurm-faults.sh on $(hostname -s), $(nproc) CPUs, $(slurmctld -V), $(date -u +%FT%TZ); SlurmdTimeout=$(grep -oP '^SlurmdTimeout=\K.*' "$B/etc/slurm.conf") KillWait=$(grep -oP '^KillWait=\K.*' "$B/etc/slurm.conf")"
# The background's status is written by itself: bash forgets a background
# job's status after some thousands of children (the polls), so `wait PID`
# could not tell.
{ { cases_a && timeout_case; } || echo "cluster A's cases failed (exit $?)"; } >"$work/a.txt" 2>&1 &
cases_b >"$work/b.txt" 2>&1 || echo "cluster B's cases failed (exit $?)" >>"$work/b.txt"
wait
sq_cost >>"$work/a.txt"
sort -s -t'|' -k1,1 "$work/a.txt" "$work/b.txt"
