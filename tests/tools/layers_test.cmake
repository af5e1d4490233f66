# The layer rule's own test (tests/layers.cmake), run as a script:
#   cmake -DSRC=SOURCE_ROOT -DWORK=SCRATCH -P layers_test.cmake
# Copies the layers' folders of the source tree into WORK, checks that the
# copy keeps every rule (as the configure step does, cmake/layers.cmake),
# then plants one include that breaks a rule (common/ including daemon/) and
# one that names no layer, and checks that each alone makes the check fail
# with the file, the line's include and the rule it breaks.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/cmake)
file(COPY ${SRC}/cmake/layers.cmake DESTINATION ${WORK}/cmake)
include(${SRC}/cmake/layers.cmake)
foreach(layer ${QUAL_LAYERS})
  file(COPY ${SRC}/${layer} DESTINATION ${WORK} FILES_MATCHING PATTERN "*.[ch]")
endforeach()

function(check_layers expect_ok expect_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -DQUAL_LAYERS_ROOT=${WORK}
                          -P ${WORK}/cmake/layers.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "the tree's own copy broke a layer rule:\n${out}")
  endif()
  if(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "a planted bad include passed the layer check:\n${out}")
  endif()
  string(FIND "${out}" "${expect_text}" at)
  if(at LESS 0)
    message(FATAL_ERROR "the layer check did not say '${expect_text}':\n${out}")
  endif()
endfunction()

check_layers(TRUE "keeps every rule")

# A lower layer including a higher one.
file(READ ${WORK}/common/err.c original)
file(APPEND ${WORK}/common/err.c "#include \"daemon/jobs.h\"\n")
check_layers(FALSE "common/err.c: #include \"daemon/jobs.h\": common/ may include common only")
file(WRITE ${WORK}/common/err.c "${original}")
check_layers(TRUE "keeps every rule")

# proto/ is below stats/: proto may not include it.
file(WRITE ${WORK}/proto/planted.c "#include \"stats/stats.h\"\n")
check_layers(FALSE "proto/planted.c: #include \"stats/stats.h\": proto/ may include proto, common only")
file(REMOVE ${WORK}/proto/planted.c)

# An include without its layer's folder.
file(WRITE ${WORK}/stats/planted.h "#include \"stats.h\"\n")
check_layers(FALSE "stats/planted.h: #include \"stats.h\" does not name its layer")
file(REMOVE ${WORK}/stats/planted.h)
file(REMOVE_RECURSE ${WORK})
message(STATUS "layers: the tree passes, each planted bad include fails")
