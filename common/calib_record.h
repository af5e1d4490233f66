/* A calibration record's shape (docs/output.md, "Calibration"): its bounds
 * and the check that a JSON value is one. Shared by quald (which keeps the
 * latest record per device), qual-run (which copies one into its verdict
 * line) and stats/calib.h (which builds them). Pure: no I/O. */
#ifndef QUAL_CALIB_RECORD_H
#define QUAL_CALIB_RECORD_H

#include <jansson.h>

#include "common/err.h"

#define CALIB_MAX_RUNS 100          /* A/A runs one calibration may ask for */
#define CALIB_DEFAULT_RUNS 10
#define CALIB_MAX_CASES 4096        /* cases a record may hold */
#define CALIB_FILE_MAX (1024 * 1024) /* bytes of a record file: 4096 cases
				      * of about 200 bytes each */
#define CALIB_UPPER_CONF 0.95       /* the false-alarm rate's upper bound */

/* Checks that rec (borrowed) has a record's shape: an object with each
 * field of the right type and range. Returns 0, or QUAL_EINVAL with msg
 * "calibration file 'FILE': field 'cases[2].slower' must be an integer >= 0"
 * (what names the file). */
int calib_record_check(json_t *rec, const char *what, struct qual_msg *msg);

/* Reads the record file path (at most CALIB_FILE_MAX bytes, JSON, a record's
 * shape) into *out (new reference). Returns 0; QUAL_ENOENT when there is no
 * such file; or QUAL_EIO / QUAL_EINVAL with msg naming the file
 * ("calibration file 'P': ...") and, for a bad record, the field. */
int calib_record_load(const char *path, json_t **out, struct qual_msg *msg);

#endif
