/* qual-run for a person (run_view.h). */
#include "client/run_view.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "client/report.h"
#include "client/view.h"
#include "common/exitcode.h"
#include "common/fsutil.h"
#include "common/xalloc.h"

/* The renderer's options: their value in *val when argv[*i] is one (moved
 * past its value), NULL otherwise. */
static const char *const render_opts[] = {"--format", "--json-out", "--junit", "--markdown"};
#define NRENDER (sizeof render_opts / sizeof render_opts[0])

static int render_opt(int argc, char **argv, int *i, const char **val)
{
	for (size_t k = 0; k < NRENDER; k++) {
		size_t n = strlen(render_opts[k]);

		if (strncmp(argv[*i], render_opts[k], n) != 0)
			continue;
		if (argv[*i][n] == '=') {
			*val = argv[*i] + n + 1;
			return (int)k;
		}
		if (argv[*i][n] == '\0') {
			*val = *i + 1 < argc ? argv[++*i] : NULL;
			return (int)k;
		}
	}
	return -1;
}

/* Shows the child's lines from fd: -1 never; the renderer's exit status. */
static int show_lines(int fd, struct report_files *rep, bool table, pid_t pid)
{
	FILE *in = fdopen(fd, "r");
	struct view_job v;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	int st = 0, status;

	if (!in) {
		fprintf(stderr, "qual-run: cannot read the run's lines: %s\n", strerror(errno));
		close(fd);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return QUAL_EXIT_ERROR;
	}
	view_job_init(&v, NULL);
	while ((n = getline(&buf, &cap, in)) > 0) {
		json_t *line;

		if (buf[n - 1] == '\n')
			buf[--n] = '\0';
		report_line(rep, buf, (size_t)n);
		line = json_loadb(buf, (size_t)n, 0, NULL);
		if (json_is_object(line)) {
			/* The view takes every line (the reports need its
			 * verdict); on a table, the plain lines of those it has
			 * a form for (none for block and session lines). */
			view_clean(line);
			view_job_take(&v, line, table ? stdout : NULL, 0);
		}
		if (!table || !json_is_object(line)) {
			fwrite(buf, 1, (size_t)n, stdout);
			fputc('\n', stdout);
		}
		json_decref(line);
		fflush(stdout);
	}
	fclose(in);
	free(buf);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "qual-run: cannot wait for the run: %s\n", strerror(errno));
			st = -1;
			break;
		}
	}
	if (st != -1 && WIFEXITED(st))
		status = WEXITSTATUS(st);
	else
		status = QUAL_EXIT_ERROR;
	if (table && v.verdict) {
		v.color = view_color_wanted(stdout);
		view_summary(stdout, &v);
	}
	if (v.verdict) {
		if (report_finish("qual-run", rep, &v) < 0)
			status = report_status(status);
	} else {
		if (rep->junit || rep->markdown)
			fprintf(stderr, "qual-run: the run wrote no verdict line: no --junit or "
				"--markdown report\n");
		report_abandon(rep);
	}
	view_job_release(&v);
	if (st != -1 && WIFSIGNALED(st)) {
		/* The run ended by a signal (^C): so does this process, so
		 * that a shell loop around it stops as it would. */
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
	}
	return status;
}

static pid_t run_pid;

/* SIGTERM and SIGHUP for this process are the run's too. */
static void pass_on(int sig)
{
	if (run_pid > 0)
		kill(run_pid, sig);
}

int run_view_main(int argc, char **argv)
{
	struct report_files rep = {0};
	const char *format = NULL, *term = getenv("TERM");
	char **child_argv = xcalloc((size_t)argc + 2, sizeof *child_argv);
	char *run = fs_beside_self("qual-run");
	int k = 0, fds[2];
	bool table;
	pid_t pid;

	if (!run) {
		fprintf(stderr, "qual-view: cannot find the qual-run beside it: %s\n",
			strerror(errno));
		free(child_argv);
		return QUAL_EXIT_ERROR;
	}
	child_argv[k++] = "qual-run";
	for (int i = 1; i < argc; i++) {
		const char *val = NULL;
		int opt = render_opt(argc, argv, &i, &val);

		if (opt < 0) {
			child_argv[k++] = argv[i];
			continue;
		}
		if (!val || (opt == 0 && strcmp(val, "table") != 0 && strcmp(val, "json") != 0)) {
			fprintf(stderr, "qual-run: %s must be %s\n", render_opts[opt],
				opt == 0 ? "table or json" : "given a file");
			free(child_argv);
			free(run);
			return QUAL_EXIT_USAGE;
		}
		if (opt == 0)
			format = val;
		else
			*(opt == 1 ? &rep.json_out : opt == 2 ? &rep.junit : &rep.markdown) = val;
	}
	table = format ? strcmp(format, "table") == 0 :
		isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
	child_argv[k++] = "--format=json";
	child_argv[k] = NULL;
	if (report_open("qual-run", &rep) < 0) {
		free(child_argv);
		free(run);
		return QUAL_EXIT_USAGE;
	}
	if (pipe(fds) < 0) {
		fprintf(stderr, "qual-run: cannot make a pipe: %s\n", strerror(errno));
		free(child_argv);
		free(run);
		return QUAL_EXIT_ERROR;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "qual-run: cannot fork: %s\n", strerror(errno));
		free(child_argv);
		free(run);
		return QUAL_EXIT_ERROR;
	}
	if (pid == 0) {
		close(fds[0]);
		setenv("QUAL_VIEW_CHILD", "1", 1);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(QUAL_EXIT_ERROR);
		close(fds[1]);
		execv(run, child_argv);
		fprintf(stderr, "qual-view: cannot run '%s': %s\n", run, strerror(errno));
		_exit(QUAL_EXIT_ERROR);
	}
	close(fds[1]);
	free(child_argv);
	free(run);
	/* ^C reaches the run too (one process group); this process shows
	 * what the run wrote until it ended, then ends as the run did. */
	run_pid = pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, pass_on);
	signal(SIGHUP, pass_on);
	return show_lines(fds[0], &rep, table, pid);
}
