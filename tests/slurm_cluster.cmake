# The one-node test cluster every slurm test stands on
# (scripts/slurm-cluster.sh): two at once on different ports, fake GPUs as
# GRES (a job each, the third PENDING for Resources, two types), stop leaves
# nothing running (tests/tools/slurm_cluster_test.sh). Label slurm: the main
# CI stage runs it (scripts/test.sh), skipped (77) without Slurm or root.
add_test(NAME slurm_cluster
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tools/slurm_cluster_test.sh
                 ${CMAKE_CURRENT_BINARY_DIR}/slurm-cluster-test)
set_tests_properties(slurm_cluster PROPERTIES LABELS slurm TIMEOUT 90 SKIP_RETURN_CODE 77)
