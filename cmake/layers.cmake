# The layers and which may include which (docs/design.md, "Layers"). A source
# file in a layer's folder may include headers of the layers listed for it,
# always written with the layer's folder ("common/err.h"); anything else stops
# the configure step with the file, the line and the rule it breaks.
#
# Used by the top-level CMakeLists.txt on the source tree, and by the test
# layers_reject (tests/layers.cmake, tests/tools/layers_test.cmake) as a
# script on a copy of the tree with a planted bad include:
#   cmake -DQUAL_LAYERS_ROOT=DIR -P cmake/layers.cmake
cmake_policy(SET CMP0057 NEW) # if(IN_LIST), when run as a script
set(QUAL_LAYERS common proto oracles stats compile gpu fixtures run client daemon)
set(QUAL_LAYER_MAY_common   common)
set(QUAL_LAYER_MAY_proto    proto common)
set(QUAL_LAYER_MAY_oracles  oracles)
set(QUAL_LAYER_MAY_stats    stats proto common)
set(QUAL_LAYER_MAY_compile  compile proto common)
set(QUAL_LAYER_MAY_gpu      gpu proto common)
set(QUAL_LAYER_MAY_fixtures fixtures oracles proto common)
set(QUAL_LAYER_MAY_run      run compile gpu fixtures oracles stats proto common)
set(QUAL_LAYER_MAY_client   client stats proto common)
set(QUAL_LAYER_MAY_daemon   daemon compile fixtures stats proto common)

function(qual_check_layers root)
  set(broken "")
  foreach(layer ${QUAL_LAYERS})
    file(GLOB_RECURSE sources RELATIVE ${root} ${root}/${layer}/*.c ${root}/${layer}/*.h)
    foreach(src ${sources})
      # Kernel sources and preludes are compiled for the GPU, not for us.
      if(src MATCHES "^fixtures/(kernels/|prelude_)")
        continue()
      endif()
      file(STRINGS ${root}/${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(inc ${includes})
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" name "${inc}")
        if(NOT name MATCHES "^([a-z]+)/")
          string(APPEND broken "\n  ${src}: #include \"${name}\" does not name its layer")
          continue()
        endif()
        set(to ${CMAKE_MATCH_1})
        if(NOT to IN_LIST QUAL_LAYERS)
          string(APPEND broken "\n  ${src}: #include \"${name}\": '${to}' is not a layer")
        elseif(NOT to IN_LIST QUAL_LAYER_MAY_${layer})
          string(REPLACE ";" ", " may "${QUAL_LAYER_MAY_${layer}}")
          string(APPEND broken
                 "\n  ${src}: #include \"${name}\": ${layer}/ may include ${may} only")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(broken)
    message(FATAL_ERROR "layer rules broken (docs/design.md, \"Layers\"):${broken}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND QUAL_LAYERS_ROOT)
  qual_check_layers(${QUAL_LAYERS_ROOT})
  message(STATUS "layers: ${QUAL_LAYERS_ROOT} keeps every rule")
endif()
