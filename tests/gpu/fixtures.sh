#!/usr/bin/env bash
# The fixture suite, on a machine with an NVIDIA GPU (the H200), from the
# repository root after scripts/pack-gpu.sh (carry .carry):
#
#     bash tests/gpu/fixtures.sh OUTDIR [BUILD]
#
# 1. nvrtc 13.0 from the toolkit against itself (libnvrtc.so.13 against
#    libnvrtc.alt.so.13): every case passes its oracle in both arms, the code
#    is identical on every case, the verdict is neutral.
# 2. For each real nvrtc build unpacked from a PyPI wheel (packed by
#    scripts/fetch-nvrtc.sh; tests/gpu/unpack-nvrtc.sh unpacks what
#    $QUAL_NVRTC_PACKS holds, default .carry-nvrtc, into $QUAL_NVRTC_DIR,
#    default /tmp/nvrtc; none is fine): 13.0 as the baseline against that
#    build: every case passes its oracle in both arms; the verdict is
#    reported, whatever it is.
# 3. The SASS of every case's cubin, per compiler: each case's source
#    (BUILD/tests/fixture-source) compiled by qual-compile for the case's
#    target (sm_90a for a *_wgmma* case, else sm_90; sm_90a again where sm_90
#    is refused), dumped with cuobjdump --dump-sass; the count of HGMMA,
#    IGMMA, HMMA and IMMA per case. Every *_wgmma* case must show HGMMA or
#    IGMMA.
# The lines of every qual-run are validated against the schema where python3
# has jsonschema. Writes OUTDIR/summary.txt (and everything in one tarball);
# exit status 0 only when every expectation held.
set -u
out=${1:?usage: fixtures.sh OUTDIR [BUILD]}
build=${2:-.carry}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
: >"$out/summary.txt"
run="$build/bin/qual-run"
compile="$build/bin/qual-compile"
fsrc="$build/tests/fixture-source"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
check="python3 $here/fixtures_check.py"
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
status=0

note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv,noheader >"$out/nvidia-smi.txt" 2>&1
note "device: $(tail -n 1 "$out/nvidia-smi.txt")"

# The compilers: the toolkit's 13.0, then each unpacked wheel.
names=("13.0")
libs=("$nvrtc")
packs=${QUAL_NVRTC_PACKS:-.carry-nvrtc}
if [ -d "$packs" ]; then
  bash "$here/unpack-nvrtc.sh" "$packs" "${QUAL_NVRTC_DIR:-/tmp/nvrtc}" >"$out/unpack.txt" 2>&1 ||
    { note "unpack-nvrtc: FAIL ($(tail -n 1 "$out/unpack.txt"))"; status=1; }
fi
for lib in "${QUAL_NVRTC_DIR:-/tmp/nvrtc}"/nvrtc-*/libnvrtc.so.[0-9]*; do
  [ -f "$lib" ] || continue
  d=$(basename "$(dirname "$lib")")
  names+=("${d#nvrtc-}")
  libs+=("$lib")
done
note "compilers: ${names[*]}"

# qualify NAME BASE CAND [--identical]: one timed run, checked.
qualify() {
  local name=$1 base=$2 cand=$3
  shift 3
  local t0=$SECONDS
  "$run" "$base" "$cand" >"$out/$name.jsonl" 2>"$out/$name.err"
  local got=$?
  local verdict
  verdict=$(tail -n 1 "$out/$name.jsonl" | grep -o '"verdict":"[a-z_]*"' | head -n 1)
  note "$name: exit $got $verdict in $((SECONDS - t0)) s"
  $check run "$out/$name.jsonl" "$@" | tee -a "$out/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  # 0 neutral or improvement, 1 regression: both are results; 2 and 3 are not.
  [ "$got" -le 1 ] || status=1
}

qualify aa "$nvrtc" "$alt" --identical
for i in "${!names[@]}"; do
  [ "$i" = 0 ] && continue
  qualify "nvrtc-${names[$i]}" "$nvrtc" "${libs[$i]}"
done

# SASS of every case, per compiler.
cases=$("$run" --list 2>"$out/list.err")
[ -n "$cases" ] || { note "qual-run --list: no cases ($(tail -n 1 "$out/list.err"))"; status=1; }
if [ ! -x "$fsrc" ] || [ ! -x "$compile" ] || [ ! -x "$cuobjdump" ]; then
  note "sass: FAIL (needs $fsrc, $compile and cuobjdump)"; status=1
else
  for i in "${!names[@]}"; do
    lib=${libs[$i]}
    dir="$out/sass-${names[$i]}"
    work=$(mktemp -d)
    mkdir -p "$dir"
    for c in $cases; do
      "$fsrc" "$c" cuda "$work/$c.cu" 2>>"$dir/errors.txt" || { echo "$c: no source" >>"$dir/errors.txt"; continue; }
      case $c in *_wgmma*) targets="sm_90a" ;; *) targets="sm_90 sm_90a" ;; esac
      for t in $targets; do
        rm -rf "${work:?}/$c" && mkdir -p "$work/$c"
        LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
          "$compile" compile --lib "$lib" --abi nvrtc --arch "$t" --src "$work/$c.cu" \
          --name "$c.cu" --out "$work/$c" >/dev/null 2>&1
        grep -qx 'status=0' "$work/$c/result.txt" 2>/dev/null && break
      done
      if [ -s "$work/$c/code.bin" ]; then
        # What cuobjdump says on stderr while it still dumps is a warning,
        # kept apart; a dump that fails or is empty is an error.
        if ! "$cuobjdump" --dump-sass "$work/$c/code.bin" >"$dir/$c.sass" 2>"$work/$c.dump.err" ||
          [ ! -s "$dir/$c.sass" ]; then
          echo "$c: cuobjdump failed: $(head -c 300 "$work/$c.dump.err" | tr '\n' ' ')" >>"$dir/errors.txt"
        elif [ -s "$work/$c.dump.err" ]; then
          echo "$c: $(head -c 300 "$work/$c.dump.err" | tr '\n' ' ')" >>"$dir/warnings.txt"
        fi
      else
        echo "$c: no cubin ($(grep '^message=' "$work/$c/result.txt" 2>/dev/null))" >>"$dir/errors.txt"
      fi
    done
    rm -rf "$work"
    note "sass, nvrtc ${names[$i]}:"
    $check sass "$dir" | tee -a "$out/summary.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    if [ -s "$dir/errors.txt" ]; then
      note "  $(wc -l <"$dir/errors.txt") compile or dump errors (sass-${names[$i]}/errors.txt), first:"
      note "    $(head -n 1 "$dir/errors.txt")"; status=1
    fi
    if [ -s "$dir/warnings.txt" ]; then
      note "  cuobjdump warned on $(wc -l <"$dir/warnings.txt") dumps (sass-${names[$i]}/warnings.txt), first:"
      note "    $(head -n 1 "$dir/warnings.txt")"
    fi
  done
fi

if python3 -c 'import jsonschema' 2>/dev/null; then
  n=0; bad=0
  for f in "$out"/*.jsonl; do
    [ -s "$f" ] || continue
    n=$((n + 1))
    python3 "$here/../tools/validate_lines.py" "$here/../../docs/schema/lines.schema.json" "$f" \
      >"$f.schema.txt" 2>&1 || { bad=$((bad + 1)); note "schema: $(basename "$f") does not validate: $(tail -n 1 "$f.schema.txt")"; }
  done
  note "schema: $((n - bad)) of $n line files validate"
  [ $bad = 0 ] || status=1
else
  note "schema: not checked (python3 has no jsonschema)"
fi
note "fixtures suite: $([ $status = 0 ] && echo PASS || echo FAIL)"
# The device tool brings back at most 8 files: everything also goes in one tarball.
tar -czf "$out/fixtures-suite.tar.gz" -C "$out" --exclude fixtures-suite.tar.gz . 2>/dev/null
exit $status
