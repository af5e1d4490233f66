# qual-slurm, quald's bridge to Slurm (docs/qual-slurm.md), against a real
# one-node Slurm cluster that the tests start and stop themselves
# (scripts/slurm-cluster.sh; fake GPUs gpu:fake:2), with a trivial worker: a
# shell script printing JSON lines, sleeping and exiting with a code
# (tests/tools/slurm_bridge_test.py). Label slurm. Skipped (77) where
# Slurm's daemons are not installed or we are not root.
#
#   slurm_bridge_relay          the arguments on --args-fd 0 as quald passes
#       them; stdout is out.jsonl byte for byte: the lines in order and the
#       cut-off last line; the exit status is the worker's (2); status
#       lines name the Slurm job, PENDING or RUNNING first, RUNNING with the
#       node; the worker saw CUDA_VISIBLE_DEVICES, a node-local TMPDIR (gone
#       after) and QUAL_DIE_WITH_PARENT; the library is a blob by content,
#       the fixture folder copied, each pinned; the job is named qual-ID,
#       asks gpu:fake:1, is never requeued, and --time-limit 300 is Slurm's
#       6 minutes
#   slurm_bridge_signal_exit    a worker killed by SIGKILL: exit 137, exit
#       file "signal 9" (--no-gpu)
#   slurm_bridge_attach_skip    the bridge SIGKILLed mid-job (quald's
#       shutdown): the Slurm job goes on; --attach --skip 1 writes exactly
#       the lines after the first and the worker's status; attached again
#       after the end, --skip 3 the last line; a Slurm id not the job's, and
#       a job with no spool folder, are refused (4)
#   slurm_bridge_pending        both fake GPUs taken: PENDING with reason
#       Resources and no node; the bridge killed, --attach to the pending
#       job follows it to RUNNING and its end
#   slurm_bridge_pin_refused    a blob that no longer holds the pinned bytes:
#       the node refuses (exit file "refused ..."), qual-run never starts,
#       exit 4, the last stderr line names the file and both hashes
#   slurm_bridge_stage_refused  --stage with a wrong hash: 4 before sbatch,
#       no blob kept; a link in a fixture folder: 4; QUAL_DIE_WITH_PARENT
#       naming a process that is not its parent (quald gone): 4, nothing
#       staged
#   slurm_bridge_sbatch_refused a GPU type the cluster does not have: 4, the
#       last stderr line "sbatch refused the job: sbatch: error: ...", no
#       status line
#   slurm_bridge_sigterm        SIGTERM to the bridge of a running job: it
#       ends by SIGTERM, the Slurm job is CANCELLED and the worker gone;
#       SIGINT to the bridge of a pending job: cancelled too
#   slurm_bridge_time_limit     SIGUSR1 to the bridge (quald's job time
#       limit) reaches the worker on the node (scancel --batch --signal):
#       it ends by it, exit file "signal 10", the bridge exits 138
#   slurm_bridge_lost           the job's processes all SIGKILLed (scancel
#       --signal=KILL): no exit file; exit 70, the last stderr line "slurm
#       job N ended STATE (reason: ...) on node ... before qual-run finished"
#   slurm_bridge_stopped        qual-run stopped by Slurm, its exit file
#       "signal 15": an admin's scancel, then the node set down: exit 70,
#       the last status CANCELLED / NODE_FAIL and the last stderr line
#       naming it (the node resumed after)
#   slurm_bridge_ctld_restart   slurmctld stopped mid-job: the job ends
#       while it is gone and the bridge, asking again, ends by the exit file
#       (exit 1, every line); slurmctld restarted 2 s later: the bridge
#       follows the job to its end
#   slurm_bridge_qual_run       the real qual-run on the node, compile-only,
#       the real nvrtc pair staged by content (skipped without them): exit
#       0, out.jsonl relayed whole, start to a not_timed verdict
#
# One cluster for all (a ctest fixture), the scenarios one at a time
# (RESOURCE_LOCK): pending and sigterm take both fake GPUs.
set(QUAL_SLURM_TEST_CLUSTER ${CMAKE_CURRENT_BINARY_DIR}/slurm-bridge-cluster)
set(QUAL_SLURM_TEST_WORK ${CMAKE_CURRENT_BINARY_DIR}/slurm-bridge-work)
set(QUAL_SLURM_TEST ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/slurm_bridge_test.py
    --bridge $<TARGET_FILE:qual-slurm> --cluster ${QUAL_SLURM_TEST_CLUSTER}
    --work ${QUAL_SLURM_TEST_WORK} --qual-run $<TARGET_FILE:qual-run>
    --nvrtc ${QUAL_SERVICE_NVRTC} --nvrtc-alt ${QUAL_SERVICE_NVRTC_ALT})
add_test(NAME slurm_bridge_cluster_start COMMAND ${QUAL_SLURM_TEST} cluster-start)
add_test(NAME slurm_bridge_cluster_stop COMMAND ${QUAL_SLURM_TEST} cluster-stop)
set_tests_properties(slurm_bridge_cluster_start PROPERTIES LABELS slurm TIMEOUT 90
                     FIXTURES_SETUP slurm_bridge_cluster RESOURCE_LOCK slurm_bridge)
set_tests_properties(slurm_bridge_cluster_stop PROPERTIES LABELS slurm TIMEOUT 60
                     FIXTURES_CLEANUP slurm_bridge_cluster RESOURCE_LOCK slurm_bridge)
foreach(scenario relay signal_exit attach_skip pending pin_refused stage_refused
        sbatch_refused sigterm time_limit lost stopped ctld_restart qual_run)
  add_test(NAME slurm_bridge_${scenario} COMMAND ${QUAL_SLURM_TEST} ${scenario})
  set_tests_properties(slurm_bridge_${scenario} PROPERTIES LABELS slurm TIMEOUT 60
                       SKIP_RETURN_CODE 77 FIXTURES_REQUIRED slurm_bridge_cluster
                       RESOURCE_LOCK slurm_bridge)
endforeach()
