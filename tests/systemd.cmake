# systemd/: the unit files, checked the way systemd itself reads them.
#
# This file has two roles. Included from tests/CMakeLists.txt it registers the
# tests; run as `cmake -DMODE=... -P tests/systemd.cmake` it is the test. Every
# test installs the systemd component (cmake/install.cmake) into its own
# scratch prefix and checks the installed files, so what is checked is what
# an install puts on a machine.
#
#   systemd_verify     systemd-analyze verify on the installed quald.service
#                      and quald.socket (ExecStart pointing at the built quald
#                      through a link in the scratch prefix): clean, no output
#   systemd_verify_broken  the same check on broken copies (a misspelled
#                      directive, bad values, a missing program): every one
#                      is caught; verify exits 0 on an unknown directive, so
#                      the check also fails on any output
#   systemd_security   systemd-analyze security --offline: exposure at most
#                      3.0, and a copy stripped of its hardening goes over
#   systemd_sysusers   systemd-sysusers into a scratch root: user and group
#                      qual with home /var/lib/qual, in groups render and video
#   systemd_policy     the settings the service promises (Type=notify, the
#                      hardening, GPU devices) and the agreement between the
#                      service, the socket, sysusers and quald's defaults
#
# One mode is not a test of its own: MODE=verify_root -DROOT=DIR runs verify
# on the units installed in the root folder DIR (a package installed with
# dpkg --root: tests/package.cmake), with --root=DIR, so that ExecStart=
# /usr/bin/quald is looked for there.
#
# systemd-analyze and systemd-sysusers come with Debian's systemd package
# (scripts/install-deps.sh): a test that needs one fails when it is missing.
# Only the security test may skip, when systemd is older than 250 and has no
# `security --offline` (ctest shows it as skipped, with the reason).

if(NOT CMAKE_SCRIPT_MODE_FILE)
  foreach(mode verify verify_broken security sysusers policy)
    add_test(NAME systemd_${mode}
             COMMAND ${CMAKE_COMMAND} -DMODE=${mode}
                     -DBUILD=${CMAKE_BINARY_DIR}
                     -DQUALD=$<TARGET_FILE:quald>
                     -DWORK=${CMAKE_CURRENT_BINARY_DIR}/systemd_${mode}
                     -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(systemd_${mode} PROPERTIES
                         LABELS unit TIMEOUT 120
                         SKIP_REGULAR_EXPRESSION "QUAL_SKIP: ")
  endforeach()
  return()
endif()

# ---- the test (script mode) -------------------------------------------------

cmake_minimum_required(VERSION 3.18) # the policies of the project (IN_LIST)

foreach(var MODE BUILD QUALD WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tests/systemd.cmake: -D${var}= is required")
  endif()
endforeach()
unset(ENV{DESTDIR})
set(ENV{SYSTEMD_COLORS} 0)
set(ENV{SYSTEMD_PAGER} "")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(need_program var name)
  find_program(${var} ${name} PATHS /usr/bin /bin /usr/sbin /sbin)
  if(NOT ${var})
    message(FATAL_ERROR "${name} not found: install Debian's systemd package "
                        "(scripts/install-deps.sh does)")
  endif()
endfunction()

# Installs the systemd component into PREFIX; sets SERVICE, SOCKET and
# SYSUSERS to the installed files.
function(install_systemd prefix)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --component systemd
                          --prefix ${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot install the systemd component (exit ${rc}):\n${out}${err}")
  endif()
  set(SERVICE ${prefix}/lib/systemd/system/quald.service PARENT_SCOPE)
  set(SOCKET ${prefix}/lib/systemd/system/quald.socket PARENT_SCOPE)
  set(SYSUSERS ${prefix}/lib/sysusers.d/qual.conf PARENT_SCOPE)
  foreach(f lib/systemd/system/quald.service lib/systemd/system/quald.socket
            lib/sysusers.d/qual.conf)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "the systemd component did not install '${f}': is "
                          "cmake/install.cmake included from CMakeLists.txt?")
    endif()
  endforeach()
endfunction()

# Installs into WORK/prefix and links the built quald where the installed
# unit's ExecStart expects it, so that verify finds a real program there.
function(install_with_quald)
  set(prefix ${WORK}/prefix)
  install_systemd(${prefix})
  if(NOT EXISTS ${QUALD})
    message(FATAL_ERROR "'${QUALD}' does not exist: build the quald target first")
  endif()
  file(READ ${SERVICE} text)
  if(NOT text MATCHES "\nExecStart=${prefix}/bin/quald\n")
    message(FATAL_ERROR "installed quald.service does not say "
                        "ExecStart=${prefix}/bin/quald:\n${text}")
  endif()
  file(MAKE_DIRECTORY ${prefix}/bin)
  file(CREATE_LINK ${QUALD} ${prefix}/bin/quald SYMBOLIC)
  set(SERVICE ${SERVICE} PARENT_SCOPE)
  set(SOCKET ${SOCKET} PARENT_SCOPE)
  set(SYSUSERS ${SYSUSERS} PARENT_SCOPE)
endfunction()

# Runs systemd-analyze verify on the given unit files; sets PROBLEM to what
# it reported, empty when the units are clean. Clean means exit 0 and no
# output at all: verify only warns (and exits 0) on an unknown directive.
function(verify_units)
  need_program(ANALYZE systemd-analyze)
  execute_process(COMMAND ${ANALYZE} --help OUTPUT_VARIABLE help ERROR_QUIET)
  set(flags --man=no) # the units name no man page; do not depend on man-db
  if(help MATCHES "--generators")
    list(APPEND flags --generators=no) # the host's generators are not ours
  endif()
  if(help MATCHES "--recursive-errors")
    list(APPEND flags --recursive-errors=no) # our units, not the host's
  endif()
  execute_process(COMMAND ${ANALYZE} verify ${flags} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${out}${err}" said)
  if(NOT rc EQUAL 0 OR NOT said STREQUAL "")
    set(PROBLEM "exit ${rc}: ${said}" PARENT_SCOPE)
  else()
    set(PROBLEM "" PARENT_SCOPE)
  endif()
endfunction()

# Runs systemd-analyze security --offline --threshold=30 on a unit file; sets
# EXPOSURE_TENTHS (exposure x 10, as an integer), SECURITY_RC and
# SECURITY_OUT.
function(assess_unit file)
  need_program(ANALYZE systemd-analyze)
  execute_process(COMMAND ${ANALYZE} security --offline=yes --threshold=30
                          --no-pager ${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(SECURITY_RC ${rc} PARENT_SCOPE)
  set(SECURITY_OUT "${out}${err}" PARENT_SCOPE)
  if(NOT "${out}${err}" MATCHES "Overall exposure level for [^:\n]+: ([0-9]+)\\.([0-9])")
    message(FATAL_ERROR "no exposure level in the output of systemd-analyze "
                        "security (exit ${rc}):\n${out}${err}")
  endif()
  math(EXPR tenths "${CMAKE_MATCH_1} * 10 + ${CMAKE_MATCH_2}")
  set(EXPOSURE_TENTHS ${tenths} PARENT_SCOPE)
endfunction()

# Sets VALUES to every value KEY= has in FILE, in order (KEY=VALUE lines).
function(unit_values file key)
  file(STRINGS ${file} lines REGEX "^${key}=")
  list(TRANSFORM lines REPLACE "^${key}=" "")
  set(VALUES "${lines}" PARENT_SCOPE)
endfunction()

function(expect_value file key want)
  unit_values(${file} ${key})
  if(NOT VALUES STREQUAL "${want}")
    get_filename_component(name ${file} NAME)
    message(SEND_ERROR "${name}: ${key}= is '${VALUES}', expected '${want}'")
  endif()
endfunction()

# For settings whose value is empty (CapabilityBoundingSet=): the exact line.
function(expect_line file line)
  file(STRINGS ${file} lines)
  if(NOT line IN_LIST lines)
    get_filename_component(name ${file} NAME)
    message(SEND_ERROR "${name}: no line '${line}'")
  endif()
endfunction()

function(expect_contains file key want)
  unit_values(${file} ${key})
  if(NOT want IN_LIST VALUES)
    get_filename_component(name ${file} NAME)
    message(SEND_ERROR "${name}: no '${key}=${want}' (${key}= is '${VALUES}')")
  endif()
endfunction()

if(MODE STREQUAL "verify_root")
  set(unitdir ${ROOT}/usr/lib/systemd/system)
  verify_units(--root=${ROOT} ${unitdir}/quald.service ${unitdir}/quald.socket)
  if(NOT PROBLEM STREQUAL "")
    message(FATAL_ERROR "systemd-analyze verify reports problems in the units "
                        "installed in '${ROOT}':\n${PROBLEM}")
  endif()
  message(STATUS "systemd-analyze verify --root: the units in '${ROOT}' are clean")

elseif(MODE STREQUAL "verify")
  install_with_quald()
  verify_units(${SERVICE} ${SOCKET})
  if(NOT PROBLEM STREQUAL "")
    message(FATAL_ERROR "systemd-analyze verify reports problems in the installed units:\n${PROBLEM}")
  endif()
  message(STATUS "systemd-analyze verify: quald.service and quald.socket are clean")

elseif(MODE STREQUAL "verify_broken")
  install_with_quald()
  get_filename_component(unitdir ${SERVICE} DIRECTORY)
  # name | unit | text in the installed unit | what it becomes
  set(cases
    "misspelled directive|quald.service|\nProtectSystem=strict\n|\nProtectSytem=strict\n"
    "unknown service type|quald.service|\nType=notify\n|\nType=notifyy\n"
    "missing program|quald.service|/bin/quald\n|/bin/quald-missing\n"
    "bad device rights|quald.service|\nDeviceAllow=char-kfd rw\n|\nDeviceAllow=char-kfd rx\n"
    "unknown system call group|quald.service|\nSystemCallFilter=@system-service\n|\nSystemCallFilter=@system-servic\n"
    "unknown section|quald.service|\n[Service]\n|\n[Servic]\n"
    "misspelled socket directive|quald.socket|\nSocketGroup=qual\n|\nSocketGrup=qual\n"
    "bad socket mode|quald.socket|\nSocketMode=0660\n|\nSocketMode=0968\n"
    "unchanged|-||")
  set(n 0)
  foreach(c ${cases})
    string(REPLACE "|" ";" c "${c}")
    list(GET c 0 name)
    list(GET c 1 unit)
    math(EXPR n "${n} + 1")
    set(dir ${WORK}/case${n})
    file(MAKE_DIRECTORY ${dir})
    file(COPY ${SERVICE} ${SOCKET} DESTINATION ${dir})
    if(NOT unit STREQUAL "-")
      list(GET c 2 from)
      list(GET c 3 to)
      file(READ ${dir}/${unit} text)
      string(REPLACE "${from}" "${to}" broken "${text}")
      if(broken STREQUAL text)
        message(FATAL_ERROR "case '${name}': '${from}' is not in ${unit}: update the case")
      endif()
      file(WRITE ${dir}/${unit} "${broken}")
    endif()
    verify_units(${dir}/quald.service ${dir}/quald.socket)
    if(unit STREQUAL "-")
      # The copies themselves are clean, so each failure above is the break.
      if(NOT PROBLEM STREQUAL "")
        message(FATAL_ERROR "unchanged copies of the units fail verify:\n${PROBLEM}")
      endif()
      message(STATUS "unchanged copies: clean")
    elseif(PROBLEM STREQUAL "")
      message(SEND_ERROR "case '${name}': systemd-analyze verify did not catch it")
    else()
      message(STATUS "case '${name}': caught: ${PROBLEM}")
    endif()
  endforeach()

elseif(MODE STREQUAL "security")
  need_program(ANALYZE systemd-analyze)
  execute_process(COMMAND ${ANALYZE} --help OUTPUT_VARIABLE help ERROR_QUIET)
  if(NOT help MATCHES "--offline" OR NOT help MATCHES "--threshold")
    execute_process(COMMAND ${ANALYZE} --version OUTPUT_VARIABLE version ERROR_QUIET)
    string(REGEX MATCH "^[^\n]*" version "${version}")
    message("QUAL_SKIP: '${ANALYZE}' (${version}) has no security --offline or "
            "--threshold (systemd 250 or later has): exposure not checked")
    return()
  endif()
  install_systemd(${WORK}/prefix)
  assess_unit(${SERVICE})
  string(REGEX MATCHALL "\n✗[^\n]*" weak "${SECURITY_OUT}")
  string(REPLACE ";" "" weak "${weak}")
  math(EXPR whole "${EXPOSURE_TENTHS} / 10")
  math(EXPR frac "${EXPOSURE_TENTHS} % 10")
  message(STATUS "exposure of quald.service: ${whole}.${frac} (at most 3.0); "
                 "what counts against it:${weak}")
  if(EXPOSURE_TENTHS GREATER 30 OR NOT SECURITY_RC EQUAL 0)
    message(FATAL_ERROR "quald.service exposure ${whole}.${frac} is over 3.0 "
                        "(exit ${SECURITY_RC}):\n${SECURITY_OUT}")
  endif()
  # The same check on a copy without its hardening must fail, or the check
  # above proves nothing.
  file(STRINGS ${SERVICE} lines)
  set(weakened "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^(Protect|Private|Restrict|SystemCall|Capability|NoNewPrivileges|Device|IPAddress|LockPersonality|MemoryDeny|UMask|RemoveIPC|User|Group)")
      string(APPEND weakened "${line}\n")
    endif()
  endforeach()
  file(MAKE_DIRECTORY ${WORK}/weak)
  file(WRITE ${WORK}/weak/quald.service "${weakened}")
  assess_unit(${WORK}/weak/quald.service)
  math(EXPR whole "${EXPOSURE_TENTHS} / 10")
  math(EXPR frac "${EXPOSURE_TENTHS} % 10")
  if(EXPOSURE_TENTHS LESS_EQUAL 30 OR SECURITY_RC EQUAL 0)
    message(FATAL_ERROR "a copy without hardening passes the check "
                        "(exposure ${whole}.${frac}, exit ${SECURITY_RC})")
  endif()
  message(STATUS "a copy without hardening: exposure ${whole}.${frac}, refused")

elseif(MODE STREQUAL "sysusers")
  need_program(SYSUSERS_PROGRAM systemd-sysusers)
  install_systemd(${WORK}/prefix)
  file(MAKE_DIRECTORY ${WORK}/root/etc)
  execute_process(COMMAND ${SYSUSERS_PROGRAM} --root=${WORK}/root ${SYSUSERS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "systemd-sysusers refused qual.conf (exit ${rc}):\n${out}${err}")
  endif()
  file(READ ${WORK}/root/etc/passwd passwd)
  file(READ ${WORK}/root/etc/group group)
  if(NOT passwd MATCHES "(^|\n)qual:x:([0-9]+):([0-9]+):[^:\n]*:/var/lib/qual:")
    message(FATAL_ERROR "no user qual with home /var/lib/qual:\n${passwd}")
  endif()
  set(gid ${CMAKE_MATCH_3})
  if(NOT group MATCHES "(^|\n)qual:x:${gid}:")
    message(FATAL_ERROR "user qual's primary group ${gid} is not group qual:\n${group}")
  endif()
  foreach(g render video)
    if(NOT group MATCHES "(^|\n)${g}:x:[0-9]+:([^\n]*,)?qual(,|\n|$)")
      message(FATAL_ERROR "user qual is not in group ${g}:\n${group}")
    endif()
  endforeach()
  message(STATUS "systemd-sysusers: ${out}${err}")
  # A broken entry is refused, so the exit status above means something.
  file(MAKE_DIRECTORY ${WORK}/broken/etc)
  file(READ ${SYSUSERS} text)
  string(REPLACE "\nu qual " "\nU qual " broken "${text}")
  if(broken STREQUAL text)
    message(FATAL_ERROR "no 'u qual' line in qual.conf")
  endif()
  file(WRITE ${WORK}/broken.conf "${broken}")
  execute_process(COMMAND ${SYSUSERS_PROGRAM} --root=${WORK}/broken ${WORK}/broken.conf
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    message(FATAL_ERROR "systemd-sysusers accepted a broken entry")
  endif()

elseif(MODE STREQUAL "policy")
  install_systemd(${WORK}/prefix)
  # What the service promises (docs/service.md says why for each).
  expect_value(${SERVICE} Type notify)
  expect_value(${SERVICE} User qual)
  expect_value(${SERVICE} Group qual)
  expect_value(${SERVICE} StateDirectory qual)
  expect_value(${SERVICE} RuntimeDirectory qual)
  expect_value(${SERVICE} RuntimeDirectoryPreserve yes)
  expect_value(${SERVICE} UMask 0077)
  expect_value(${SERVICE} NoNewPrivileges yes)
  expect_value(${SERVICE} ProtectSystem strict)
  expect_value(${SERVICE} ProtectHome yes)
  expect_value(${SERVICE} PrivateTmp yes)
  expect_line(${SERVICE} "CapabilityBoundingSet=")
  expect_line(${SERVICE} "AmbientCapabilities=")
  expect_value(${SERVICE} DevicePolicy closed)
  expect_contains(${SERVICE} DeviceAllow "char-nvidia* rw")
  expect_contains(${SERVICE} DeviceAllow "char-kfd rw")
  expect_contains(${SERVICE} DeviceAllow "char-drm rw")
  # PrivateDevices=yes would hide the GPUs; MemoryDenyWriteExecute=yes stops
  # Debian's hiprtc from loading (it asks for an executable stack).
  unit_values(${SERVICE} PrivateDevices)
  if(VALUES MATCHES "yes|true|on|1")
    message(SEND_ERROR "quald.service: PrivateDevices= hides the GPU device nodes")
  endif()
  expect_value(${SERVICE} MemoryDenyWriteExecute no)
  expect_value(${SERVICE} KillMode mixed)
  # The socket: where quald looks by default ($RUNTIME_DIRECTORY/quald.sock),
  # for group qual only.
  unit_values(${SERVICE} RuntimeDirectory)
  expect_value(${SOCKET} ListenStream /run/${VALUES}/quald.sock)
  expect_value(${SOCKET} SocketMode 0660)
  expect_value(${SOCKET} SocketGroup qual)
  expect_value(${SOCKET} Service quald.service)
  # sysusers: the user the service runs as, home in its state directory.
  unit_values(${SERVICE} StateDirectory)
  file(STRINGS ${SYSUSERS} users REGEX "^u ")
  if(NOT users STREQUAL "u qual - \"qual compiler qualification\" /var/lib/${VALUES}")
    message(SEND_ERROR "qual.conf: user line is '${users}'")
  endif()
  # The install rewrote the paths for the prefix.
  expect_value(${SERVICE} ExecStart ${WORK}/prefix/bin/quald)
  set(docs "man:quald(8);file:${WORK}/prefix/share/doc/qual/docs/service.md")
  expect_value(${SERVICE} Documentation "${docs}")
  expect_value(${SOCKET} Documentation "${docs}")

else()
  message(FATAL_ERROR "tests/systemd.cmake: unknown MODE '${MODE}'")
endif()
