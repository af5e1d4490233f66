# Calibration end to end (tests/tools/calibration_test.py; docs/quald.md,
# "Calibration"): the real quald and qualctl; a fake worker with known A/A
# false alarms where the record's numbers are checked, the real
# compile-only qual-run where the record has to travel.
#
#   calibration_counts    qualctl calibrate --runs 4 --watch: four runs with
#                         --sample-identical, one verdict line carrying the
#                         record, whose per-case and total counts, rates,
#                         Clopper-Pearson bounds (scipy) and median
#                         detectable_ratio are the fake lines'; qualctl
#                         calibration shows it; list says kind calibration;
#                         only start, case_verdict, calibration_run (one
#                         per run, how it ended) and verdict lines are passed on
#   calibration_restart   before a calibration a job's verdict line says null
#                         with why; the record survives a restart, and the
#                         next job's verdict line (the real qual-run) and
#                         qual-judge's carry it
#   calibration_bad_file  qual-run --calibration: a bad record is a usage
#                         error naming the file and the field
#   calibration_roots     a library outside the allowed roots: calibrate is
#                         refused with submit's message
#   calibration_schedule  --calibrate-every: one calibration per stale slot,
#                         each pinned to its slot, and none more while they run
#   calibration_unstored  a record whose file cannot be written is not the
#                         latest: qualctl calibration shows none, and the
#                         next job's worker is given none, with why
#   calibration_untimed   runs that timed nothing store no record (the
#                         verdict line is not_timed, calibration null with
#                         why) and the stored one stays the latest; qualctl
#                         calibrate does not take --compile-only
#   calibration_bounded   each run passes on its start, case_verdict and
#                         first 32 error lines (and every GPU fault) and a
#                         calibration_run line counting the rest, however
#                         many pairs it timed; the lines validate
#   calibration_hostile   a worker's lines with a NUL byte (a false alarm,
#                         an early verdict) are not counted, and lines that
#                         are not JSON are passed on only up to 32 a run
if(EXISTS /usr/local/cuda/lib64/libnvrtc.so.13)
  foreach(scenario counts restart bad_file roots schedule unstored untimed bounded
                   hostile)
    add_test(NAME calibration_${scenario}
             COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/calibration_test.py
                     --quald $<TARGET_FILE:quald>
                     --qualctl $<TARGET_FILE:qualctl>
                     --worker $<TARGET_FILE:qual-run>
                     --compile-helper $<TARGET_FILE:qual-compile>
                     --calibrator $<TARGET_FILE:qual-calibrate>
                     --fake-worker ${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_calib_worker.sh
                     --nvrtc /usr/local/cuda/lib64/libnvrtc.so.13
                     ${scenario})
    set_tests_properties(calibration_${scenario} PROPERTIES LABELS integration TIMEOUT 120)
  endforeach()
endif()
