#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs every test
# that needs no GPU (ctest label gpu is for the device: tests/gpu/run.sh), in
# three builds:
#
#   build/       gcc, RelWithDebInfo: every test, quald under valgrind
#                memcheck included (label valgrind, tests/valgrind.cmake),
#                and the Slurm tests on one-node clusters they start
#                themselves (label slurm, scripts/slurm-cluster.sh)
#   build-asan/  the same with AddressSanitizer and UndefinedBehaviorSanitizer
#                (-DQUAL_SANITIZE=ON): every test again but the slurm ones
#                (their time goes to waiting on Slurm, not to our code)
#   build-fuzz/  clang, -DQUAL_FUZZ=ON: each libFuzzer target for
#                QUAL_FUZZ_SECONDS (default 20) on its seed corpus (label
#                fuzz, tests/fuzz.cmake); any finding fails
#
# Every stage runs even when an earlier one failed; the exit status is 1 when
# any did. Arguments go to every ctest run (e.g. -R server). QUAL_BUILD,
# QUAL_BUILD_ASAN and QUAL_BUILD_FUZZ name the folders; QUAL_TEST_STAGES
# picks stages (default "main asan fuzz").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc)
main=${QUAL_BUILD:-build}
asan=${QUAL_BUILD_ASAN:-build-asan}
fuzz=${QUAL_BUILD_FUZZ:-build-fuzz}
failed=()

stage() { # NAME COMMAND...: runs it timed; a failure is noted, not fatal
	local name=$1 start=$SECONDS
	shift
	echo "==== $name"
	if "$@"; then
		echo "==== $name: passed in $((SECONDS - start)) s"
	else
		echo "==== $name: FAILED after $((SECONDS - start)) s"
		failed+=("$name")
	fi
}

run_main() {
	QUAL_BUILD=$main bash scripts/build.sh &&
		(cd "$main" && ctest --output-on-failure -LE gpu -j"$jobs" "$@")
}

run_asan() {
	# halt_on_error: the first report ends the test (and fails it);
	# UBSan likewise (-fno-sanitize-recover=undefined in the build).
	QUAL_BUILD=$asan bash scripts/build.sh -DQUAL_SANITIZE=ON &&
		(cd "$asan" &&
		 ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1} \
		 UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		 ctest --output-on-failure -LE 'gpu|slurm' -j"$jobs" "$@")
}

run_fuzz() {
	# Only the fuzz targets are built with clang; the rest of the tree is
	# the other builds' business.
	cmake -S . -B "$fuzz" -DCMAKE_C_COMPILER=clang -DQUAL_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build "$fuzz" -j"$jobs" --target fuzz_request fuzz_relay fuzz_manifest fuzz_http fuzz_log fuzz_remote &&
		(cd "$fuzz" && ctest --output-on-failure -L fuzz -j"$jobs" "$@")
}

for s in ${QUAL_TEST_STAGES:-main asan fuzz}; do
	case $s in
	main) stage "tests ($main)" run_main "$@" ;;
	asan) stage "tests under asan+ubsan ($asan)" run_asan "$@" ;;
	fuzz) stage "fuzz targets ($fuzz)" run_fuzz "$@" ;;
	*) echo "test.sh: unknown stage '$s' in QUAL_TEST_STAGES" >&2; exit 2 ;;
	esac
done
if [ ${#failed[@]} -gt 0 ]; then
	printf 'test.sh: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "test.sh: every stage passed"
