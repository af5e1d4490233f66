/* qual-view: qual-run's lines shown to a person (client/run_view.h); qual-run
 * execs it, with its own arguments, when a table or a report is asked for. */
#include "client/run_view.h"

int main(int argc, char **argv)
{
	return run_view_main(argc, argv);
}
