/* qual-judge: recomputes the verdicts of a run from its stored JSON lines
 * (a file or stdin), optionally with another alpha or margin, without a GPU.
 * The command itself lives in judge_cmd.c, shared with `qualctl judge`. */
#include "client/judge_cmd.h"

int main(int argc, char **argv)
{
	return judge_cmd_main("qual-judge", argc, argv);
}
