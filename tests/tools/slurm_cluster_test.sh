#!/usr/bin/env bash
# The test cluster itself (scripts/slurm-cluster.sh), that every slurm test
# stands on: two clusters started at once take different ports; fake GPUs
# are GRES (each job its own CUDA_VISIBLE_DEVICES, the third job PENDING
# for Resources, two types on one node, an unknown type refused by sbatch);
# stop ends the daemons and a job still running (its slurmd killed before),
# and leaves nothing behind.
#
#   slurm_cluster_test.sh WORKDIR
# Exits 77 (skipped) where the cluster script does (no Slurm, not root).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster="bash $root/scripts/slurm-cluster.sh"
work=$1
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
one=$work/one two=$work/two

fail() { echo "FAIL: $*" >&2; $cluster status "$one" >&2 || true; exit 1; }
cleanup() { $cluster stop "$one" >/dev/null 2>&1 || true; $cluster stop "$two" >/dev/null 2>&1 || true; }
trap cleanup EXIT

rc=0
$cluster start "$one" >"$work/one.start" 2>&1 &
p1=$!
$cluster start "$two" --types fakea:1,fakeb:1 >"$work/two.start" 2>&1 || rc=$?
wait "$p1" || { r=$?; [ $r -eq 77 ] || rc=$r; }
if [ $rc -eq 77 ]; then cat "$work/two.start"; exit 77; fi
[ $rc -eq 0 ] || { cat "$work"/*.start >&2; fail "a cluster did not start"; }
[ "$(cat "$one/ports")" != "$(cat "$two/ports")" ] ||
	fail "two clusters on the same ports: $(cat "$one/ports")"

eval "$($cluster env "$one")"
[ "$SLURM_CONF" = "$one/etc/slurm.conf" ] || fail "env printed SLURM_CONF='$SLURM_CONF'"

job() { # NAME SECS GRES: submits a job printing its CUDA_VISIBLE_DEVICES
	sbatch --parsable -J "$1" -o "$work/$1.out" --gres="$3" \
		--wrap "echo \$\$ >$work/$1.pid; echo CVD=\$CUDA_VISIBLE_DEVICES; sleep $2"
}
state() { squeue -h -j "$1" -o '%T|%r'; }
wait_state() { # ID PATTERN SECONDS
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		state "$1" | grep -qE "$2" && return 0
		sleep 0.2
	done
	fail "job $1 not '$2' after $3 s: '$(state "$1")'"
}

a=$(job a 2 gpu:fake:1)
b=$(job b 2 gpu:fake:1)
c=$(job c 1 gpu:fake:1)
wait_state "$a" '^RUNNING' 15
wait_state "$b" '^RUNNING' 15
wait_state "$c" '^PENDING\|Resources$' 5
wait_state "$c" '^RUNNING' 15
for j in a b c; do
	for ((i = 0; i < 50; i++)); do grep -q CVD "$work/$j.out" 2>/dev/null && break; sleep 0.2; done
done
cvd_a=$(grep -o 'CVD=.*' "$work/a.out") cvd_b=$(grep -o 'CVD=.*' "$work/b.out")
[[ $cvd_a =~ ^CVD=[01]$ && $cvd_b =~ ^CVD=[01]$ && $cvd_a != "$cvd_b" ]] ||
	fail "two jobs at once got '$cvd_a' and '$cvd_b', not GPUs 0 and 1"

# Two types on one node: each type's job runs; an unknown type is refused.
eval "$($cluster env "$two")"
t=$(job typed 1 gpu:fakeb:1)
wait_state "$t" '^(RUNNING|COMPLETING)' 15
[ "$(sinfo -h -o %G)" = "gpu:fakea:1,gpu:fakeb:1" ] || fail "the node's GRES: '$(sinfo -h -o %G)'"
if err=$(sbatch --gres=gpu:nosuch:1 --wrap true 2>&1); then fail "sbatch took an unknown GPU type"; fi
grep -q "Requested node configuration is not available" <<<"$err" || fail "sbatch said '$err'"

# stop: the daemons and a job still running end, even one that slurmd
# (killed: kill-slurmd) can no longer signal; nothing of theirs is left.
eval "$($cluster env "$one")"
long=$(job long 300 gpu:fake:1)
wait_state "$long" '^RUNNING' 15
for ((i = 0; i < 50; i++)); do [ -s "$work/long.pid" ] && break; sleep 0.2; done
pids="$(cat "$one"/run/*.pid) $(cat "$work/long.pid")"
$cluster kill-slurmd "$one"
kill -0 "$(cat "$work/long.pid")" || fail "killing slurmd ended its job's processes"
$cluster stop "$one" >/dev/null
$cluster stop "$two" >/dev/null
for p in $pids; do
	if [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then
		fail "process $p ($(tr '\0' ' ' <"/proc/$p/cmdline")) outlived stop"
	fi
done
[ -z "$(ls "$one/run")" ] || fail "pid files left: $(ls "$one/run")"
echo "slurm_cluster: ok (ports $(cat "$one/ports") and $(cat "$two/ports"); $cvd_a, $cvd_b)"
