# quald's dashboard in a real browser (tests/tools/dashboard_test.py, which
# runs tests/tools/browser_test.py): Debian's headless Chromium loads /,
# /jobs/ID while a job runs (quald's worker replays a real H200 job), the
# page of a compile-only job with code lines (tests/data/
# compile-only-code-job.jsonl) and /history, checks what they show against
# quald's API and that they update, and keeps its screenshots in
# <build>/Testing/artefacts/dashboard/.
find_program(QUAL_CHROMIUM NAMES chromium chromium-browser)
if(QUAL_CHROMIUM AND EXISTS ${QUAL_SERVICE_NVRTC} AND EXISTS ${QUAL_SERVICE_NVRTC_ALT})
  add_test(NAME dashboard_browser
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/dashboard_test.py
                   --quald $<TARGET_FILE:quald>
                   --qualctl $<TARGET_FILE:qualctl>
                   --compile-helper $<TARGET_FILE:qual-compile>
                   --nvrtc ${QUAL_SERVICE_NVRTC}
                   --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT}
                   --chromium ${QUAL_CHROMIUM}
                   --out ${CMAKE_BINARY_DIR}/Testing/artefacts/dashboard)
  # Chromium and a 30 s replay on two shared cores: minutes at worst.
  set_tests_properties(dashboard_browser PROPERTIES LABELS integration TIMEOUT 300
                       RUN_SERIAL TRUE)
endif()
