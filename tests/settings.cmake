# A job's settings at both doors (tests/tools/settings_doors_test.py): the
# table read from qual-run --settings-table, every number, word and list
# setting's values just inside and just outside its bounds given to a
# compile-only qual-run and, through qualctl submit, to a real quald with
# compile-only slots: both refuse the same values with the same message and
# accept the same values (issue 27). Needs the toolkit's nvrtc, as the
# service tests do.
if(EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  add_test(NAME settings_doors
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/settings_doors_test.py
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --worker $<TARGET_FILE:qual-run>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --nvrtc ${QUAL_SERVICE_NVRTC}
                   --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT})
  set_tests_properties(settings_doors PROPERTIES LABELS integration TIMEOUT 600)
endif()
