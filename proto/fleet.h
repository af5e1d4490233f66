/* A job's place in a fleet (docs/cluster.md): the GPU type a submission
 * asks Slurm for, and the keys a typed job's lines carry. One definition
 * for qualctl (its --gpu-type), quald (the submit field, the stored job,
 * the relay) and the dashboard's readers of lines. */
#ifndef QUAL_PROTO_FLEET_H
#define QUAL_PROTO_FLEET_H

#include <stddef.h>

#include "common/err.h"

/* The submit field and the stored job's key: the GPU type ("h100",
 * "mi300x"), which Slurm's GRES names (--gres=gpu:TYPE:1). A line of a
 * typed job carries it under the same key, and the node Slurm ran it on
 * under FLEET_NODE_KEY once known. */
#define FLEET_GPU_TYPE_KEY "gpu_type"
#define FLEET_NODE_KEY "node"
/* The GPU types one submission may name (qualctl submit --gpu-type, each
 * one job). */
#define FLEET_MAX_TYPES 8
#define FLEET_MAX_TYPES_TEXT "8"
/* A type's length: 1 to FLEET_MAX_TYPE_LEN bytes of [A-Za-z0-9_.-], the
 * characters a GRES type takes in slurm.conf. */
#define FLEET_MAX_TYPE_LEN 64

/* 0 when s is a GPU type as above, else QUAL_EINVAL with msg naming what
 * is wrong: "'gpu_type' must be 1 to 64 characters of A-Z a-z 0-9 _ . -,
 * got 'a:b'". */
int fleet_gpu_type_check(const char *s, struct qual_msg *msg);

/* The submit field and stored key that ties the jobs of one submission
 * together (qualctl submit with several --gpu-type: one job per type, one
 * name for all), so that list, history, the exports and the dashboard can
 * give the submission's overall verdict (fleet_overall). Its value is a
 * word as a GPU type is: qualctl's is "s-" and 12 random hex digits. */
#define FLEET_SUBMISSION_KEY "submission"
#define FLEET_OVERALL_KEY "overall"
int fleet_submission_check(const char *s, struct qual_msg *msg);

/* The overall verdict of a submission so far, given one more of its jobs'
 * verdicts (an enum run_verdict; RUN_VERDICT_UNKNOWN for a job without one
 * yet, which makes the overall unknown until every job has one): the worse
 * by the engine's precedence, fail > error (cancelled, interrupted) >
 * regression > not_timed > improvement > neutral, so that a regression on
 * any GPU type is the submission's regression. */
int fleet_overall(int so_far, int verdict);

#endif
