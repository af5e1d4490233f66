#!/bin/bash
# Device check of the wgmma cases: SASS of the cubins nvrtc 13.0 made (the
# artifact_sha256 of the case lines), then each case in both arms.
OUT=$1
C=$(cd "$(dirname "$0")" && pwd)
L=/usr/local/cuda/lib64
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi -L
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
: > "$OUT/sass.txt"
for f in "$C"/cubins/*.cubin; do
  n=$(basename "$f" .cubin)
  echo "== $n sha256 $(sha256sum "$f" | cut -c1-64)" | tee -a "$OUT/sass.txt"
  "$CUOBJDUMP" -sass "$f" > "/tmp/$n.sass" 2>&1
  for op in HGMMA IGMMA HMMA IMMA UTMALDG SYNCS WARPGROUP; do
    printf '%s %s=%s\n' "$n" "$op" "$(grep -c "$op" "/tmp/$n.sass")"
  done | tee -a "$OUT/sass.txt"
  grep -E 'GMMA|UTMALDG' "/tmp/$n.sass" | head -12 >> "$OUT/sass.txt"
done
for c in ${CASES:-gemm_f16_wgmma-256x1024x1024 gemm_f16_wgmma-256x512x256 gemm_i8_wgmma-256x1024x1024 attention_f16_wgmma-512 gemm_f16-256x1024x1024 gemm_f16-256x512x256 gemm_i8-256x1024x1024 attention_f16-512}; do
  echo "== qual-run $c"
  timeout 200 "$C/bin/qual-run" --case "$c" "$L/libnvrtc.so.13" "$L/libnvrtc.alt.so.13" \
    >> "$OUT/run.jsonl" 2>> "$OUT/run.stderr"
  echo "rc=$?"
  grep -E '"type":"(error|case_verdict)"' "$OUT/run.jsonl" | grep "$c" | cut -c1-600
done
