# The Debian package (cmake/package.cmake), built, installed, removed and
# purged in a scratch root folder.
#
# This file has two roles, as tests/systemd.cmake: included from
# tests/CMakeLists.txt it registers the test; run as `cmake -P` it is the test.
#
#   package_deb  cpack -G DEB; dpkg-deb --info names libuv1, libjansson4 and
#                libssl3 in Depends: (from dpkg-shlibdeps) and the maintainer
#                scripts, --contents the programs, units, sysusers.d and
#                tmpfiles.d entries, man pages, completions, documents and
#                copyright; dpkg --root installs it into a fresh root folder,
#                whose maintainer scripts create user qual, /var/lib/qual and
#                /run/qual and enable quald.socket there, and nowhere else;
#                the installed units pass systemd-analyze verify --root
#                (tests/systemd.cmake, MODE verify_root) and the installed
#                documents' links resolve (tests/tools/doc_links.py); remove
#                keeps /var/lib/qual, purge takes it and every file of the
#                package, leaving user qual.
#
# Needs dpkg-dev (dpkg-shlibdeps, for cpack), systemd (systemd-sysusers,
# systemd-tmpfiles, systemd-analyze) and, when not run as root, fakeroot:
# scripts/install-deps.sh installs them.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME package_deb
           COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR}
                   -DSOURCE=${PROJECT_SOURCE_DIR}
                   -DPYTHON=${SYSTEM_PYTHON}
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/package_deb
                   -P ${CMAKE_CURRENT_LIST_FILE})
  # cpack strips and packs the programs (about 10 s on CI's two cores);
  # dpkg and the maintainer scripts take seconds.
  set_tests_properties(package_deb PROPERTIES LABELS unit TIMEOUT 300)
  return()
endif()

cmake_minimum_required(VERSION 3.18)
foreach(var BUILD SOURCE PYTHON WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tests/package.cmake: -D${var}= is required")
  endif()
endforeach()
unset(ENV{DESTDIR})
# dpkg looks for ldconfig and start-stop-daemon in PATH, which for a user
# other than root often lacks the sbin folders.
set(ENV{PATH} "$ENV{PATH}:/usr/sbin:/sbin")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Runs a command; fails the test with its output unless it exits 0. Sets
# OUT to its stdout.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}): ${ARGN}\n${out}${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  string(STRIP "${err}" err)
  if(err)
    set(err " (it said: ${err})")
  endif()
  message(STATUS "${what}: ok${err}")
endfunction()

# ---- build and inspect -------------------------------------------------------

run("cpack" cpack -G DEB --config ${BUILD}/CPackConfig.cmake -B ${WORK}/out)
file(GLOB debs ${WORK}/out/qual_*.deb)
list(LENGTH debs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "cpack made ${n} packages, not one qual_*.deb: '${debs}'")
endif()
set(deb ${debs})

run("dpkg --print-architecture" dpkg --print-architecture)
string(STRIP "${OUT}" arch)
run("dpkg-deb --info" dpkg-deb --info ${deb})
set(info "${OUT}")
foreach(want "\n Package: qual\n" "\n Architecture: ${arch}\n")
  string(FIND "${info}" "${want}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "dpkg-deb --info has no '${want}':\n${info}")
  endif()
endforeach()
if(NOT info MATCHES "\n Depends: ([^\n]*)")
  message(FATAL_ERROR "no Depends: in the package:\n${info}")
endif()
set(depends "${CMAKE_MATCH_1}")
foreach(lib libuv1 libjansson4 libssl3 libc6 libh2o0.13)
  if(NOT depends MATCHES "(^|, )${lib} ")
    message(SEND_ERROR "Depends: does not name ${lib}: '${depends}'")
  endif()
endforeach()
foreach(script postinst prerm postrm)
  if(NOT info MATCHES " ${script} +#!/bin/sh")
    message(SEND_ERROR "the package has no ${script} script:\n${info}")
  endif()
endforeach()

set(programs quald qualctl qual-run qual-judge qual-compile qual-view qual-calibrate qual-slurm
    qual-bisect)
set(files
  usr/lib/systemd/system/quald.service usr/lib/systemd/system/quald.socket
  usr/lib/sysusers.d/qual.conf usr/lib/tmpfiles.d/qual.conf
  usr/share/man/man8/quald.8.gz usr/share/man/man1/qualctl.1.gz
  usr/share/man/man1/qual-run.1.gz usr/share/man/man1/qual-judge.1.gz
  usr/share/man/man1/qual-compile.1.gz usr/share/man/man1/qual-view.1.gz
  usr/share/man/man1/qual-calibrate.1.gz usr/share/man/man1/qual-bisect.1.gz
  usr/share/bash-completion/completions/qualctl usr/share/bash-completion/completions/quald
  usr/share/bash-completion/completions/qual-run
  usr/share/bash-completion/completions/qual-judge
  usr/share/zsh/vendor-completions/_qual
  usr/share/doc/qual/copyright usr/share/doc/qual/changelog.gz
  usr/share/doc/qual/README.md usr/share/doc/qual/docs/service.md)
foreach(p ${programs})
  list(APPEND files usr/bin/${p})
endforeach()
run("dpkg-deb --contents" dpkg-deb --contents ${deb})
set(contents "${OUT}")
foreach(f ${files})
  string(FIND "${contents}" " ./${f}\n" at)
  if(at EQUAL -1)
    message(SEND_ERROR "the package does not hold /${f}")
  endif()
endforeach()
# The copyright file stands in for LICENSE; nothing outside /usr.
if(contents MATCHES "/LICENSE\n" OR contents MATCHES " \\./(etc|var|run|lib)/")
  message(SEND_ERROR "the package holds LICENSE or files outside /usr:\n${contents}")
endif()

# ---- install into a fresh root ----------------------------------------------
#
# dpkg --root=ROOT installs below ROOT with ROOT/var/lib/dpkg as its database
# (fresh: it knows no package). Two forces, and only these:
#   --force-depends          the fresh database has no libc6, libuv1, ... so
#                            every dependency is "not installed"; the files
#                            are what is checked here, not the libraries.
#   --force-script-chrootless  without it dpkg runs the maintainer scripts
#                            chrooted into ROOT, which has no /bin/sh (and
#                            chroot needs root); chrootless, dpkg runs them
#                            with the host's tools and sets DPKG_ROOT=ROOT,
#                            which the scripts honour (systemd-sysusers and
#                            systemd-tmpfiles --root, deb-systemd-helper), so
#                            this also checks that they touch only ROOT.
# Not root (CI may run as a user): dpkg runs under fakeroot, which lets it
# (and the scripts) chown files to root and qual; ownership then is not real,
# so the owners are checked only when the test runs as root.
# ROOT/etc exists, as in any root (sysusers locks ROOT/etc/.pwd.lock).
set(root ${WORK}/root)
file(MAKE_DIRECTORY ${root}/etc ${root}/var/lib/dpkg/info ${root}/var/lib/dpkg/updates)
file(TOUCH ${root}/var/lib/dpkg/status)
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
set(dpkg dpkg --root=${root} --log=${WORK}/dpkg.log --force-script-chrootless)
if(NOT uid STREQUAL "0")
  find_program(FAKEROOT fakeroot)
  if(NOT FAKEROOT)
    message(FATAL_ERROR "not root and no fakeroot: install Debian's fakeroot "
                        "(scripts/install-deps.sh does)")
  endif()
  list(PREPEND dpkg ${FAKEROOT})
endif()

# What the host had of quald's enablement before: the scripts must not add it.
set(host_links /etc/systemd/system/sockets.target.wants/quald.socket
    /var/lib/systemd/deb-systemd-helper-enabled/sockets.target.wants/quald.socket)
set(host_had "")
foreach(f ${host_links})
  if(EXISTS ${f} OR IS_SYMLINK ${f})
    list(APPEND host_had ${f})
  endif()
endforeach()

run("dpkg --install" ${dpkg} --force-depends --install ${deb})

foreach(f ${files})
  if(NOT EXISTS ${root}/${f})
    message(SEND_ERROR "after dpkg --install, /${f} is not in the root")
  endif()
endforeach()
foreach(p ${programs})
  if(NOT IS_SYMLINK ${root}/usr/bin/${p})
    execute_process(COMMAND test -x ${root}/usr/bin/${p} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(SEND_ERROR "/usr/bin/${p} is not executable")
    endif()
  endif()
endforeach()
file(STRINGS ${root}/usr/lib/systemd/system/quald.service exec REGEX "^ExecStart=")
if(NOT exec STREQUAL "ExecStart=/usr/bin/quald")
  message(SEND_ERROR "the packaged quald.service says '${exec}', not ExecStart=/usr/bin/quald")
endif()
foreach(unit quald.service quald.socket)
  file(STRINGS ${root}/usr/lib/systemd/system/${unit} docs REGEX "^Documentation=file:")
  if(NOT docs STREQUAL "Documentation=file:/usr/share/doc/qual/docs/service.md")
    message(SEND_ERROR "the packaged ${unit} says '${docs}'")
  endif()
endforeach()

# postinst: user qual in groups render and video, the folders with the
# unit's modes, quald.socket enabled, inside the root.
file(READ ${root}/etc/passwd passwd)
if(NOT passwd MATCHES "(^|\n)qual:x:([0-9]+):([0-9]+):[^:\n]*:/var/lib/qual:")
  message(FATAL_ERROR "postinst made no user qual in the root:\n${passwd}")
endif()
set(qual_uid ${CMAKE_MATCH_2})
set(qual_gid ${CMAKE_MATCH_3})
file(READ ${root}/etc/group group)
foreach(g render video)
  if(NOT group MATCHES "(^|\n)${g}:x:[0-9]+:([^\n]*,)?qual(,|\n|$)")
    message(SEND_ERROR "user qual is not in group ${g} in the root:\n${group}")
  endif()
endforeach()
foreach(pair "var/lib/qual|700" "run/qual|750")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 dir)
  list(GET pair 1 mode)
  if(NOT IS_DIRECTORY ${root}/${dir})
    message(SEND_ERROR "postinst made no /${dir} in the root")
    continue()
  endif()
  execute_process(COMMAND stat -c "%a %u %g" ${root}/${dir} OUTPUT_VARIABLE st
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(want "${mode} ${qual_uid} ${qual_gid}")
  if(NOT uid STREQUAL "0")
    string(REGEX REPLACE " .*" "" st "${st}") # fakeroot's owners are gone
    set(want ${mode})
  endif()
  if(NOT st STREQUAL want)
    message(SEND_ERROR "/${dir} in the root is '${st}' (mode, owner, group), not '${want}'")
  endif()
endforeach()
set(link ${root}/etc/systemd/system/sockets.target.wants/quald.socket)
file(READ_SYMLINK ${link} target)
if(NOT target STREQUAL "/usr/lib/systemd/system/quald.socket")
  message(SEND_ERROR "quald.socket is not enabled in the root ('${link}' -> '${target}')")
endif()
foreach(f ${host_links})
  if((EXISTS ${f} OR IS_SYMLINK ${f}) AND NOT f IN_LIST host_had)
    message(SEND_ERROR "the maintainer scripts touched the host: '${f}'")
  endif()
endforeach()

run("systemd-analyze verify --root" ${CMAKE_COMMAND} -DMODE=verify_root -DROOT=${root}
    -DBUILD=${BUILD} -DQUALD=${root}/usr/bin/quald -DWORK=${WORK}/verify
    -P ${SOURCE}/tests/systemd.cmake)
run("links of the installed documents" ${PYTHON} ${SOURCE}/tests/tools/doc_links.py
    ${root}/usr/share/doc/qual)
message(STATUS "${OUT}")
# The installed programs run (with the host's libraries).
run("installed qualctl --help" ${root}/usr/bin/qualctl --help)

# ---- remove, purge ----------------------------------------------------------

# Every file and link below the root but dpkg's own database and log and the
# user database (user qual stays, as Debian leaves system users); sets LEFT.
function(leftovers)
  file(GLOB_RECURSE all LIST_DIRECTORIES false RELATIVE ${root} ${root}/*)
  set(left "")
  foreach(f ${all})
    if(NOT f MATCHES "^(var/lib/dpkg/|var/log/|etc/(passwd|group|shadow|gshadow|\\.pwd\\.lock)-?$)")
      list(APPEND left ${f})
    endif()
  endforeach()
  set(LEFT "${left}" PARENT_SCOPE)
endfunction()

run("dpkg --remove" ${dpkg} --remove qual)
foreach(f ${files})
  if(EXISTS ${root}/${f})
    message(SEND_ERROR "after dpkg --remove, /${f} is still in the root")
  endif()
endforeach()
if(NOT IS_DIRECTORY ${root}/var/lib/qual)
  message(SEND_ERROR "dpkg --remove took /var/lib/qual (the job store): only purge may")
endif()
leftovers()
message(STATUS "left after remove: ${LEFT}")

run("dpkg --purge" ${dpkg} --purge qual)
leftovers()
if(NOT LEFT STREQUAL "")
  message(SEND_ERROR "left in the root after dpkg --purge: ${LEFT}")
endif()
foreach(d var/lib/qual run/qual)
  if(EXISTS ${root}/${d})
    message(SEND_ERROR "dpkg --purge left /${d}")
  endif()
endforeach()
if(NOT EXISTS ${root}/etc/passwd)
  message(SEND_ERROR "purge took the user database")
else()
  file(READ ${root}/etc/passwd passwd)
  if(NOT passwd MATCHES "(^|\n)qual:")
    message(SEND_ERROR "purge removed user qual: Debian leaves system users")
  endif()
endif()
