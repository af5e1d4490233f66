# Sourced by the GPU scripts that drive the service (service.sh,
# service_faults.sh, calibrate.sh): starts quald on a temporary socket and
# state directory with GPU 0 as its one slot, the build's qual-run and
# qual-compile as its worker and helper, and any further quald options
# given; its log in $out/quald.log. Sets tmp, sock, qpid and quald_build,
# and ctl (qualctl on that socket); returns once quald answers (or after 5 s).
#
#     quald_start BUILD [QUALD OPTIONS...]
quald_start() {
  quald_build=$1
  shift
  tmp=$(mktemp -d)
  sock=$tmp/quald.sock
  ctl() { "$quald_build/bin/qualctl" --socket "$sock" "$@"; }
  "$quald_build/bin/quald" --socket "$sock" --state-dir "$tmp/state" --devices 0 \
    --worker "$quald_build/bin/qual-run" \
    --compile-helper "$quald_build/bin/qual-compile" "$@" \
    >"$out/quald.log" 2>&1 &
  qpid=$!
  for _ in $(seq 50); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
}
