#!/usr/bin/python3
"""Compile one source file with a compiler library (nvrtc or hiprtc) in process.

Usage: rtc_check.py LIB ARCH FILE [options...]

  LIB   an nvrtc or hiprtc shared object, e.g.
        /usr/local/cuda/lib64/libnvrtc.so.13 or
        /usr/lib/x86_64-linux-gnu/libamdhip64.so.5
  ARCH  sm_90 (nvrtc) or gfx90a / gfx1030 (hiprtc)
  FILE  the source text; "-" reads standard input

The ABI is chosen by the entry points the library exports (nvrtcCreateProgram
or hiprtcCreateProgram). Default options, always passed first:
  nvrtc:  -arch=ARCH -Xptxas=-v   (CUBIN for the exact device; the ptxas
          resource report, registers / spills / stack, lands in the log)
  hiprtc: --offload-arch=ARCH
Further options on the command line are appended. Environment variable
RTC_CHECK_NO_SPILLS=1 makes an nvrtc compile fail when the ptxas report shows
any spill stores or loads; RTC_CHECK_ENTRY=NAME makes any compile fail whose
code object does not contain the symbol name NAME (e.g. a kernel's extern "C"
entry); RTC_CHECK_OUT=PATH writes the code object there.

Prints the compiler log, then one line "code: N bytes" (CUBIN or AMDGPU code
object). Exits 0 on success, 1 when compilation failed, 2 on usage errors.

This is a test tool, not the product's compile path (compile/rtc.c runs compiles
in a child process). It leaves the process with os._exit() because ROCm 5.2's
runtime may crash in its teardown at exit on a machine without an AMD GPU.
"""

import ctypes
import os
import re
import sys


def _flush_exit(code):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _api(lib, prefix):
    """Binds the rtc entry points of one ABI (nvrtc and hiprtc share shapes)."""
    p = ctypes.c_void_p
    sz = ctypes.POINTER(ctypes.c_size_t)
    cstrs = ctypes.POINTER(ctypes.c_char_p)
    sigs = {
        "CreateProgram": [ctypes.POINTER(p), ctypes.c_char_p, ctypes.c_char_p,
                          ctypes.c_int, cstrs, cstrs],
        "CompileProgram": [p, ctypes.c_int, cstrs],
        "GetProgramLogSize": [p, sz],
        "GetProgramLog": [p, ctypes.c_char_p],
        "DestroyProgram": [ctypes.POINTER(p)],
    }
    if prefix == "nvrtc":
        sigs["GetCUBINSize"] = [p, sz]
        sigs["GetCUBIN"] = [p, ctypes.c_char_p]
    else:
        sigs["GetCodeSize"] = [p, sz]
        sigs["GetCode"] = [p, ctypes.c_char_p]
    fns = {}
    for name, args in sigs.items():
        f = getattr(lib, prefix + name)
        f.argtypes = args
        f.restype = ctypes.c_int
        fns[name] = f
    err = getattr(lib, prefix + "GetErrorString")
    err.argtypes = [ctypes.c_int]
    err.restype = ctypes.c_char_p
    fns["GetErrorString"] = err
    return fns


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    lib_path, arch, file_name = argv[1], argv[2], argv[3]
    extra = argv[4:]
    try:
        if file_name == "-":
            source = sys.stdin.buffer.read()
        else:
            with open(file_name, "rb") as f:
                source = f.read()
    except OSError as e:
        sys.stderr.write("cannot read '%s': %s\n" % (file_name, e.strerror))
        return 2
    try:
        lib = ctypes.CDLL(lib_path)
    except OSError as e:
        sys.stderr.write("cannot load compiler '%s': %s\n" % (lib_path, e))
        return 2
    if hasattr(lib, "nvrtcCreateProgram"):
        abi = "nvrtc"
        options = ["-arch=" + arch, "-Xptxas=-v"]
    elif hasattr(lib, "hiprtcCreateProgram"):
        abi = "hiprtc"
        options = ["--offload-arch=" + arch]
    else:
        sys.stderr.write("cannot load compiler '%s': no nvrtc or hiprtc entry "
                         "points\n" % lib_path)
        return 2
    options += extra
    api = _api(lib, abi)

    def check(what, rc):
        if rc != 0:
            sys.stderr.write("%s%s failed: %s\n" % (
                abi, what, api["GetErrorString"](rc).decode(errors="replace")))
            return False
        return True

    prog = ctypes.c_void_p()
    name = os.path.basename(file_name if file_name != "-" else "stdin.cu")
    if not check("CreateProgram", api["CreateProgram"](
            ctypes.byref(prog), source, name.encode(), 0, None, None)):
        return 1
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    compile_rc = api["CompileProgram"](prog, len(options), opts)

    log_size = ctypes.c_size_t()
    log = ""
    if api["GetProgramLogSize"](prog, ctypes.byref(log_size)) == 0 \
            and log_size.value > 1:
        buf = ctypes.create_string_buffer(log_size.value)
        if api["GetProgramLog"](prog, buf) == 0:
            log = buf.value.decode(errors="replace")
    print("options: " + " ".join(options))
    if log:
        print(log.rstrip("\n"))
    if not check("CompileProgram", compile_rc):
        return 1

    code_size = ctypes.c_size_t()
    get_size = api["GetCUBINSize" if abi == "nvrtc" else "GetCodeSize"]
    if not check("GetCodeSize", get_size(prog, ctypes.byref(code_size))):
        return 1
    if code_size.value == 0:
        sys.stderr.write("%s produced no code\n" % abi)
        return 1
    print("code: %d bytes" % code_size.value)
    code = ctypes.create_string_buffer(code_size.value)
    get_code = api["GetCUBIN" if abi == "nvrtc" else "GetCode"]
    if not check("GetCode", get_code(prog, code)):
        return 1
    out_path = os.environ.get("RTC_CHECK_OUT")
    if out_path:
        with open(out_path, "wb") as f:
            f.write(code.raw)
    entry = os.environ.get("RTC_CHECK_ENTRY")
    if entry and (b"\0" + entry.encode() + b"\0") not in code.raw:
        sys.stderr.write("no symbol '%s' in the code object\n" % entry)
        return 1

    if abi == "nvrtc" and os.environ.get("RTC_CHECK_NO_SPILLS") == "1":
        spills = [int(n) for n in
                  re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
        if not re.search(r"Used \d+ registers", log):
            sys.stderr.write("no ptxas resource report in the log\n")
            return 1
        if any(spills):
            sys.stderr.write("ptxas reports spills\n")
            return 1
    api["DestroyProgram"](ctypes.byref(prog))
    return 0


if __name__ == "__main__":
    _flush_exit(main(sys.argv))
