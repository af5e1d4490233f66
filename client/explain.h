/* A case's code line (docs/output.md, "code") for a person: both arms'
 * figures side by side with the change, the instruction mix, and the diff
 * of the two normalised disassemblies (`qualctl explain`). */
#ifndef QUAL_EXPLAIN_H
#define QUAL_EXPLAIN_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* Prints code to out, 80 columns wide but for the diff's lines, with the
 * diff when diff is set; color: the diff's + and - lines in color. timed,
 * the case's timed case line or NULL: its arms' driver_blocks_per_sm,
 * where given, beside the computed blocks per SM. */
void explain_print(FILE *out, json_t *code, json_t *timed, bool diff, bool color);

#endif
