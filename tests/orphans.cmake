# Every descendant of a job dies with it (docs/quald.md, "Process lifetime"),
# and its scratch folder goes (tests/tools/orphans_test.py): the real quald,
# qual-run and qual-compile, compile-only, on shim_orphan, a candidate whose
# compile hangs after leaving behind a forked copy of itself and a session
# leader of its own (a double fork with setsid()), which neither a group
# kill nor PR_SET_PDEATHSIG reaches.
#
#   orphans_cancel        qualctl cancel of the running job
#   orphans_timeout       quald --job-timeout 3
#   orphans_stop          SIGTERM to quald (it stops, exit 0)
#   orphans_worker_kill   SIGKILL to the worker (qual-run)
#       each: within 5 s no process of the job is left (the worker, the
#       compile child, the copy, the session leader), none a zombie, and
#       quald has no child left
#   orphans_finished      the compile fails at once instead of hanging and the
#                         job ends by itself (fail): the copy and the session
#                         leader are gone with it
#   orphans_run_exit      qual-run alone (no quald), the compile failing: when
#                         it has exited nothing it started is left
#   orphans_run_sigterm   qual-run alone, SIGTERM in the hanging compile: it
#                         ends by the signal, blaming no one, and nothing it
#                         started is left
#   orphans_scratch       a stale worker folder of this state directory's in
#                         $TMPDIR is removed at start (not another state
#                         directory's, nor a link), as is the folder of a job
#                         whose quald was SIGKILLed; a finished job leaves none
#
# The cache entry of tests/rtc.cmake, which is included after this file (an
# entry that exists already stays as it is); the real nvrtc pair is
# tests/CMakeLists.txt's.
set(QUAL_SHIM_REAL_NVRTC /usr/local/cuda/lib64/libnvrtc.so.13 CACHE FILEPATH
    "The real nvrtc the shim compilers forward to")

add_library(shim_orphan SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
                               ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_orphan.c)
target_compile_definitions(shim_orphan PRIVATE SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}")
target_link_libraries(shim_orphan PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(shim_orphan PRIVATE -fno-sanitize=all)
set_target_properties(shim_orphan PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  foreach(scenario cancel timeout stop worker_kill finished run_exit run_sigterm scratch)
    add_test(NAME orphans_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/orphans_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --shim-orphan $<TARGET_FILE:shim_orphan>
                     --nvrtc ${QUAL_SERVICE_NVRTC}
                     --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                     ${scenario})
    # A scenario takes a few seconds; the driver stops itself at 60 s.
    set_tests_properties(orphans_${scenario} PROPERTIES LABELS integration TIMEOUT 90)
  endforeach()
endif()
