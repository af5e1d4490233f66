# The compile children's confinement as the compile folder and qual-compile
# see it (issue 10; docs/service.md, "Trust model"): tests/unit/compile/
# test_rtc_confine.c, ctest rtc_confine_NAME. As root (CI), with compile
# children run as nobody:
#
#   rtc_confine_folder_closed   the compile folder is root's and nobody can
#                               plant a link in it; links planted anyway are
#                               never followed by what root creates there
#   rtc_confine_compile_as_user identify and compile of shim_confine (which
#                               forwards to the real nvrtc) as nobody: the
#                               child ran as nobody in a user namespace of
#                               its own (its uid mapped), non-dumpable, could
#                               not plant in its compile folder, found that
#                               folder's name in no argument list (it is in
#                               the environment), and its links in its own
#                               folders were not followed on removal
#
# Both skip (77) when not run as root. The probe's order as a non-root user
# is tested in test_confine.c (confine_userns_probe_user), the placed reads
# and the removal through folder descriptors in test_fsutil.c.
# After tests/rtc.cmake (alphabetically), whose variables this uses.

add_library(shim_confine SHARED
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_forward.c
  ${CMAKE_CURRENT_SOURCE_DIR}/shims/shim_confine.c)
target_compile_definitions(shim_confine PRIVATE SHIM_REAL_NVRTC="${QUAL_SHIM_REAL_NVRTC}")
target_link_libraries(shim_confine PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(shim_confine PRIVATE -fno-sanitize=all)
set_target_properties(shim_confine PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shims)

qual_unit_tests(test_rtc_confine ${CMAKE_CURRENT_SOURCE_DIR}/unit/compile/test_rtc_confine.c
                LABEL unit TIMEOUT 120 LIBS qual_rtc_test_lib)
add_dependencies(test_rtc_confine shim_confine qual-compile)
target_compile_definitions(test_rtc_confine PRIVATE
  RTC_TEST_HELPER="$<TARGET_FILE:qual-compile>"
  RTC_SHIM_CONFINE="$<TARGET_FILE:shim_confine>")
