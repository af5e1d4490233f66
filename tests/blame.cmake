# Blame only with cause (docs/verdicts.md, "Blame"): a case both arms fail to
# compile the same way (both crash, both time out, both reject it) is the
# job's error (exit 3), never the candidate's fail; arms that fail
# differently, or the candidate alone, stay the candidate's fail (exit 2).
# Compile-only with the shims (tests/rtc.cmake builds them), no GPU:
#   blame_qual_run  qual-run, each stream validated against the schema: both
#                   arms crashing (compiled at once and one after the
#                   other), hanging, rejecting the case; the job's time
#                   limit in the second arm's compile after the first's
#                   timed out; arms failing differently; the candidate alone
#   blame_quald     the same library twice through quald: qualctl exits 3,
#                   no quarantine strike
if(EXISTS ${QUAL_SERVICE_NVRTC})
  set(blame_args --run $<TARGET_FILE:qual-run>
      --shim-crash $<TARGET_FILE:shim_crash> --shim-hang $<TARGET_FILE:shim_hang>
      --shim-hugelog $<TARGET_FILE:shim_hugelog> --nvrtc ${QUAL_SERVICE_NVRTC}
      --out ${CMAKE_CURRENT_BINARY_DIR}/out/blame)
  add_test(NAME blame_qual_run
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/blame_test.py
                   ${blame_args} --only qual-run)
  add_test(NAME blame_quald
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/blame_test.py
                   ${blame_args} --only quald --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --compile-helper $<TARGET_FILE:qual-compile>)
  set_tests_properties(blame_qual_run blame_quald PROPERTIES LABELS integration TIMEOUT 60)
endif()
