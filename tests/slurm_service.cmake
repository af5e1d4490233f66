# quald --backend slurm end to end (docs/cluster.md): quald -> qual-slurm ->
# Slurm -> qual-run on a real one-node Slurm cluster the tests start and
# stop themselves (scripts/slurm-cluster.sh, two fake GPU types fakea:1 and
# fakeb:1), compile-only jobs of the real nvrtc 13.0 pair or of the hanging
# shim (a job that lasts until its compile time limit fails it)
# (tests/tools/slurm_service_test.py). Label slurm; skipped (77) without
# Slurm's daemons, root or the nvrtc pair.
#
#   slurm_service_types      a typed job's every line carries gpu_type and
#       the node; list names its Slurm job; both libraries staged once by
#       content; two types of one submit run at once (one GPU of each), a
#       verdict per type and the overall one, exit 2; history --gpu-type and
#       export's gpu_type and node columns; a type Slurm does not have: an
#       error verdict naming sbatch's refusal
#   slurm_service_cancel     qualctl cancel: verdict cancelled, the Slurm job
#       gone from squeue, nothing of the job left running on the node
#   slurm_service_drain      a drained node: the job is shown queued with
#       Slurm's reason (list, status); resumed, it runs to its verdict
#   slurm_service_node_fail  slurmd and the job's processes killed mid-job (a
#       node crash): an error verdict naming the Slurm job's end; the node
#       back, the next job runs
#   slurm_service_down       the node set down mid-job: the same
#   slurm_service_restart    quald stopped mid-job: the Slurm job runs on,
#       the job's state stays running with its Slurm id; quald started
#       again follows it: its verdict, seqs without gap or repeat, the
#       compile time limit's error line once
#   slurm_service_calibrate  a calibration through Slurm (the fake worker of
#       tests/calibration.cmake on the node): its record is of the node's GPU
#       it ran on (node-gpu1 for fakeb), stored in the spool and listed by
#       qualctl calibration; a later job on that GPU (the real qual-run)
#       carries it in its verdict line, one on the other GPU says none
#   slurm_service_local      no cluster: --slurm-* without --backend slurm
#       and --backend slurm with --slots are usage errors; qualctl refuses a
#       GPU type Slurm cannot name; a local quald refuses a GPU type and a
#       Slurm quald a calibration of one slot, each naming why
set(QUAL_SLURM_SERVICE_CLUSTER ${CMAKE_CURRENT_BINARY_DIR}/slurm-service-cluster)
set(QUAL_SLURM_SERVICE_TEST ${SYSTEM_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/tools/slurm_service_test.py
    --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl>
    --hang $<TARGET_FILE:shim_hang> --cluster ${QUAL_SLURM_SERVICE_CLUSTER}
    --calibrator $<TARGET_FILE:qual-calibrate>
    --fake-worker ${CMAKE_CURRENT_SOURCE_DIR}/tools/fake_calib_worker.sh
    --work ${CMAKE_CURRENT_BINARY_DIR}/slurm-service-work)
add_test(NAME slurm_service_cluster_start COMMAND ${QUAL_SLURM_SERVICE_TEST} cluster-start)
add_test(NAME slurm_service_cluster_stop COMMAND ${QUAL_SLURM_SERVICE_TEST} cluster-stop)
set_tests_properties(slurm_service_cluster_start PROPERTIES LABELS slurm TIMEOUT 90
                     FIXTURES_SETUP slurm_service_cluster RESOURCE_LOCK slurm_service)
set_tests_properties(slurm_service_cluster_stop PROPERTIES LABELS slurm TIMEOUT 60
                     FIXTURES_CLEANUP slurm_service_cluster RESOURCE_LOCK slurm_service)
add_test(NAME slurm_service_local COMMAND ${QUAL_SLURM_SERVICE_TEST} local)
set_tests_properties(slurm_service_local PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
foreach(scenario types cancel drain node_fail down restart calibrate)
  add_test(NAME slurm_service_${scenario} COMMAND ${QUAL_SLURM_SERVICE_TEST} ${scenario})
  set_tests_properties(slurm_service_${scenario} PROPERTIES LABELS slurm TIMEOUT 240
                       SKIP_RETURN_CODE 77 FIXTURES_REQUIRED slurm_service_cluster
                       RESOURCE_LOCK slurm_service)
endforeach()
