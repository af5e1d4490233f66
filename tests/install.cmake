# cmake --install: what lands where (cmake/install.cmake).
#
# This file has two roles, as tests/systemd.cmake: included from
# tests/CMakeLists.txt it registers the test; run as `cmake -P` it is the test.
#
#   install_layout  installs every component into a scratch prefix: the
#                   programs, units, sysusers.d and tmpfiles.d entries, man
#                   pages, completions, LICENSE and the documents are where
#                   systemd, man, bash-completion and zsh look; every relative
#                   link of every installed .md file resolves inside the
#                   installed docdir (tests/tools/doc_links.py), and a copy
#                   with docs/schema/ missing is caught.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME install_layout
           COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR}
                   -DPYTHON=${SYSTEM_PYTHON}
                   -DLINKS=${CMAKE_CURRENT_SOURCE_DIR}/tools/doc_links.py
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/install_layout
                   -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(install_layout PROPERTIES LABELS unit TIMEOUT 120)
  return()
endif()

cmake_minimum_required(VERSION 3.18)
unset(ENV{DESTDIR})
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (exit ${rc}):\n${out}${err}")
endif()

set(expected
  bin/quald bin/qualctl bin/qual-run bin/qual-judge bin/qual-compile bin/qual-view
  bin/qual-calibrate bin/qual-slurm bin/qual-bisect
  lib/systemd/system/quald.service lib/systemd/system/quald.socket
  lib/sysusers.d/qual.conf lib/tmpfiles.d/qual.conf
  share/man/man8/quald.8.gz share/man/man1/qualctl.1.gz
  share/man/man1/qual-run.1.gz share/man/man1/qual-judge.1.gz
  share/man/man1/qual-compile.1.gz share/man/man1/qual-view.1.gz
  share/man/man1/qual-calibrate.1.gz share/man/man1/qual-bisect.1.gz
  share/bash-completion/completions/qualctl share/bash-completion/completions/quald
  share/bash-completion/completions/qual-run share/bash-completion/completions/qual-judge
  share/zsh/vendor-completions/_qual
  share/doc/qual/README.md share/doc/qual/LICENSE share/doc/qual/docs/service.md
  share/doc/qual/docs/schema/lines.schema.json)
foreach(f ${expected})
  if(NOT EXISTS ${prefix}/${f})
    message(SEND_ERROR "cmake --install did not install '${f}'")
  endif()
endforeach()
file(READ ${prefix}/lib/tmpfiles.d/qual.conf tmpfiles)
foreach(line "d /var/lib/qual 0700 qual qual -" "d /run/qual 0750 qual qual -")
  string(FIND "${tmpfiles}" "\n${line}\n" at)
  if(at EQUAL -1)
    message(SEND_ERROR "tmpfiles.d/qual.conf has no line '${line}'")
  endif()
endforeach()

execute_process(COMMAND ${PYTHON} ${LINKS} ${prefix}/share/doc/qual
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "links of the installed documents do not resolve")
endif()
# The check itself: a docdir without docs/schema/ has links that go nowhere.
file(COPY ${prefix}/share/doc/qual DESTINATION ${WORK}/broken)
file(REMOVE_RECURSE ${WORK}/broken/qual/docs/schema)
execute_process(COMMAND ${PYTHON} ${LINKS} ${WORK}/broken/qual
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT out MATCHES "schema")
  message(FATAL_ERROR "a docdir without docs/schema passed the link check:\n${out}${err}")
endif()
