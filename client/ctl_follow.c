/* qualctl submit and watch (ctl.h): a job's lines as quald relays them,
 * plain with a progress line on a terminal, or as they came with --json. */
#include "client/ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/view.h"
#include "common/exitcode.h"
#include "common/lines.h"
#include "proto/line.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "proto/fleet.h"
#include "proto/settings.h"

/* ---- the terminal's progress line ---- */

struct progress {
	bool on;      /* stdout is a terminal and not --json */
	bool shown;   /* a progress line is on the screen */
};

static void progress_clear(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stdout);
	p->shown = false;
}

static void progress_draw(struct progress *p, const struct view_job *v)
{
	struct winsize ws;
	char text[512];
	size_t width = 80;

	if (!p->on)
		return;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		width = ws.ws_col;
	view_progress(v, text, sizeof text, width);
	fputs("\r", stdout);
	fputs(text, stdout);
	fputs("\033[K", stdout); /* the rest of an older, longer line */
	p->shown = text[0] != '\0';
	fflush(stdout);
}

static bool stdout_is_terminal(const struct ctl *ctl)
{
	const char *term = getenv("TERM");

	return !ctl->json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

/* The job of a job line: one with a type that is no reply or refusal, and
 * a "job". NULL for any other line. */
static const char *job_of(const struct line *l)
{
	const char *type = l ? ctl_type_of(l->obj) : NULL;

	if (!type || strcmp(type, "reply") == 0 || strcmp(type, "refused") == 0)
		return NULL;
	return l->job[0] ? l->job : NULL;
}

/* A job line (text, len bytes, parsed into line) on stdout: as it came with
 * --json, else as plain text (flags: view.h's); v takes it either way.
 * Returns whether it was the job's verdict line. */
static bool take_line(struct ctl *ctl, struct view_job *v, json_t *line,
		      const char *text, size_t len, unsigned flags)
{
	struct lines_info info;

	report_line(&ctl->rep, text, len);
	if (ctl->json) {
		fwrite(text, 1, len, stdout);
		fputc('\n', stdout);
		view_job_take(v, line, NULL, 0);
	} else {
		view_job_take(v, line, stdout, flags);
	}
	lines_classify(line, &info);
	return info.type == LINES_VERDICT;
}

/* Follows job's lines on the connection until its verdict line, printing
 * them as --json or the plain lines and progress say, then the summary.
 * Returns the exit status of the verdict, except that a passing job that
 * timed nothing though the submit did not ask for compile_only (1 it did,
 * 0 it did not, -1 unknown: the job's start line says) is
 * QUAL_EXIT_NOT_TIMED, with why on stderr: a gate must not pass what was
 * never measured. Without a verdict (connection lost, ^C) the job's outcome
 * is unknown to us: QUAL_EXIT_ERROR. */
static int follow_job(struct ctl *ctl, const char *job, int position, int compile_only)
{
	struct progress prog = {.on = stdout_is_terminal(ctl)};
	struct lines_info info;
	struct view_job v;
	struct qual_msg msg;
	int status = QUAL_EXIT_ERROR;
	bool done = false;

	view_job_init(&v, job);
	v.position = position;
	while (!done) {
		struct line *l;
		char *text;
		size_t len;
		int rc;

		progress_draw(&prog, &v);
		rc = conn_read_parsed(&ctl->conn, -1, &l, &text, &len, &msg);
		if (rc != CONN_LINE) {
			progress_clear(&prog);
			fflush(stdout);
			if (rc == CONN_INTERRUPTED)
				fprintf(stderr, "qualctl: stopped following job %s; it goes on in quald "
					"('qualctl cancel %s' stops it)\n", job, job);
			else if (rc == CONN_EOF)
				fprintf(stderr, "qualctl: quald at %s closed the connection before job %s "
					"ended; its outcome is unknown ('qualctl show %s')\n",
					ctl->conn.where, job, job);
			else
				fprintf(stderr, "qualctl: %s; the outcome of job %s is unknown\n",
					msg.text, job);
			goto out;
		}
		if (l) {
			view_clean(l->obj);
			line_reread(l);
		}
		if (!l || !ctl_type_of(l->obj)) {
			json_t *shown = text_json(text, len < 80 ? len : 80);

			progress_clear(&prog);
			view_clean(shown);
			fprintf(stderr, "qualctl: quald at %s sent a line that is not a qual line: %s\n",
				ctl->conn.where, json_string_value(shown));
			json_decref(shown);
			line_unref(l);
			goto out;
		}
		if (!job_of(l) || strcmp(job_of(l), job) != 0) {
			line_unref(l); /* not this job's line */
			continue;
		}
		progress_clear(&prog);
		done = take_line(ctl, &v, l->obj, text, len, 0);
		line_unref(l);
		fflush(stdout);
	}
	progress_clear(&prog);
	if (!ctl->json) {
		v.color = view_color_wanted(stdout);
		view_summary(stdout, &v);
	}
	lines_classify(v.verdict, &info);
	status = view_exit_status(info.verdict);
	if (report_finish("qualctl", &ctl->rep, &v) < 0) {
		status = report_status(status);
		goto out;
	}
	if (compile_only < 0) /* wait: what the job's start line says was asked */
		compile_only = v.compile_only_asked;
	if (status == QUAL_EXIT_PASS && !compile_only && view_not_timed(&v)) {
		fprintf(stderr, "qualctl: job %s was not timed (%s) though the submit did not ask "
			"for --compile-only: exit %d, not a pass; run it where quald has a GPU, or "
			"submit with --compile-only for a static comparison\n", job,
			v.not_timed_because[0] ? v.not_timed_because : "no reason given",
			QUAL_EXIT_NOT_TIMED);
		status = QUAL_EXIT_NOT_TIMED;
	}
out:
	report_abandon(&ctl->rep);
	fflush(stdout);
	view_job_release(&v);
	return status;
}

/* ---- submit ---- */


/* submit's own options: what each sets in the request. */
enum submit_how {
	/* A job's setting: the field of proto/settings.h whose option it is,
	 * set to the value typed (settings_option_json: --alpha 0 is the
	 * integer 0, as qual-run reads it), or one more entry of a list;
	 * quald checks it with the check qual-run has. */
	SETTING,
	SET_INTEGER,  /* an integer >= 0 */
	NO_FOLLOW,    /* no field: the submit is not followed */
	FOLLOW,       /* no field: the submit is followed (calibrate --watch) */
	LABEL,        /* KEY=VALUE into the object of field (ctl_take_label) */
	GPU_TYPE,     /* one more GPU type: one job each (proto/fleet.h) */
};

/* Which commands take an option. */
enum { FOR_SUBMIT = 1, FOR_CALIBRATE = 2, FOR_BOTH = 3 };

/* --NAME does HOW to the request's FIELD (a SETTING's is its key). */
static const struct submit_option {
	const char *name;
	enum submit_how how;
	const char *field;
	int commands;       /* FOR_* */
} submit_options[] = {
	{"pairs", SETTING, NULL, FOR_SUBMIT},
	{"case", SETTING, NULL, FOR_SUBMIT},
	{"alpha", SETTING, NULL, FOR_SUBMIT},
	{"margin", SETTING, NULL, FOR_SUBMIT},
	{"baseline-opt", SETTING, NULL, FOR_SUBMIT},
	{"candidate-opt", SETTING, NULL, FOR_SUBMIT},
	{"compile-only", SETTING, NULL, FOR_SUBMIT},
	{"compile-timeout", SETTING, NULL, FOR_BOTH},
	{"seed", SETTING, NULL, FOR_BOTH},
	{"fixtures", SETTING, NULL, FOR_SUBMIT},
	{"mode", SETTING, NULL, FOR_SUBMIT},
	{"max-pairs", SETTING, NULL, FOR_SUBMIT},
	{"max-seconds", SETTING, NULL, FOR_SUBMIT},
	{"gate-slower", SETTING, NULL, FOR_SUBMIT},
	{"gate-faster", SETTING, NULL, FOR_SUBMIT},
	{"undecided", SETTING, NULL, FOR_SUBMIT},
	{"label", LABEL, "labels", FOR_SUBMIT},
	{"gpu-type", GPU_TYPE, FLEET_GPU_TYPE_KEY, FOR_BOTH},
	{"no-follow", NO_FOLLOW, NULL, FOR_SUBMIT},
	{"runs", SET_INTEGER, "calibrate", FOR_CALIBRATE},
	{"device", SET_INTEGER, "slot", FOR_CALIBRATE},
	{"watch", FOLLOW, NULL, FOR_CALIBRATE},
};
#define NSUBMIT (sizeof submit_options / sizeof submit_options[0])

struct submit_state {
	json_t *req;
	bool follow;
	json_t *types;          /* --gpu-type's, in order (an array) */
	/* The settings as qual-run would have read the same options, for
	 * its wording of what qualctl cannot send as typed. */
	struct qual_settings typed;
};

/* v (stolen) appended to the array at key of obj, made when missing. */
static void append_value(json_t *obj, const char *key, json_t *v)
{
	json_t *a = json_object_get(obj, key);

	if (!a) {
		a = json_array();
		json_object_set_new(obj, key, a);
	}
	json_array_append_new(a, v);
}

static char *absolute_path(const char *path);

/* Setting f's value arg into the request: the JSON value a request would
 * carry for what was typed (a fixture folder made absolute), for quald to
 * check. What cannot be sent as typed (text that is not UTF-8, not a number
 * for a number, an empty folder) is refused here in qual-run's words, from
 * the options as qual-run would have read them (s->typed). */
static int take_setting(struct submit_state *s, const struct command *cmd,
			const struct settings_field *f, const char *arg)
{
	bool number = f->kind == SETTINGS_INT || f->kind == SETTINGS_I64 ||
		      f->kind == SETTINGS_REAL;
	bool path = !strcmp(f->key, "fixtures");
	json_t *v = settings_option_json(f, arg);
	struct qual_msg msg;
	char *abs;
	int rc = settings_from_option(&s->typed, f, arg, &msg);

	if (!v || (number && json_is_string(v)) || (path && !arg[0])) {
		json_decref(v);
		return ctl_usage_error(cmd, "%s", rc < 0 ? msg.text : "cannot be sent as typed");
	}
	if (path) {
		if (!(abs = absolute_path(arg))) {
			fprintf(stderr, "qualctl %s: cannot make '%s' absolute: %s\n", cmd->name,
				arg, strerror(errno));
			json_decref(v);
			return QUAL_EXIT_USAGE;
		}
		json_decref(v);
		v = json_string(abs);
		free(abs);
	}
	if (f->kind == SETTINGS_LIST)
		append_value(s->req, f->key, v);
	else
		json_object_set_new(s->req, f->key, v);
	return 0;
}

/* submit_options[i] is the option CTL_OPT_OWN + i. */
static int take_submit(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct submit_state *s = st;
	const struct submit_option *o;
	char name[32];
	long n;

	if (opt < CTL_OPT_OWN || opt >= CTL_OPT_OWN + (int)NSUBMIT)
		return ctl_take_nothing(st, cmd, opt, arg);
	o = &submit_options[opt - CTL_OPT_OWN];
	snprintf(name, sizeof name, "--%s", o->name);
	switch (o->how) {
	case SETTING:
		return take_setting(s, cmd, settings_find_option(o->name), arg);
	case SET_INTEGER:
		if (ctl_parse_long(cmd, name, arg, 0, &n) != 0)
			return QUAL_EXIT_USAGE;
		json_object_set_new(s->req, o->field, json_integer(n));
		break;
	case NO_FOLLOW:
		s->follow = false;
		break;
	case FOLLOW:
		s->follow = true;
		break;
	case LABEL:
		if (!json_object_get(s->req, o->field))
			json_object_set_new(s->req, o->field, json_object());
		return ctl_take_label(cmd, json_object_get(s->req, o->field), arg);
	case GPU_TYPE: {
		struct qual_msg m;
		size_t i;
		json_t *t;

		if (fleet_gpu_type_check(arg, &m) < 0)
			return ctl_usage_error(cmd, "--gpu-type: %s", m.text);
		json_array_foreach(s->types, i, t)
			if (strcmp(json_string_value(t), arg) == 0)
				return ctl_usage_error(cmd, "--gpu-type '%s' is given twice", arg);
		if (json_array_size(s->types) >= FLEET_MAX_TYPES)
			return ctl_usage_error(cmd, "--gpu-type is given more than %s times",
					       FLEET_MAX_TYPES_TEXT);
		json_array_append_new(s->types, json_string(arg));
		break;
	}
	}
	return 0;
}

/* The working directory as the shell names it ($PWD, symbolic links kept)
 * when that names the same directory, else getcwd()'s. New string or NULL. */
static char *working_directory(void)
{
	const char *pwd = getenv("PWD");
	struct stat a, b;

	if (pwd && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return xstrdup(pwd);
	return getcwd(NULL, 0);
}

/* path made absolute against our working directory, since quald's is
 * another. Symbolic links are kept, not resolved: the run records the name
 * the user gave ("path") and the engine adds the file it reached
 * ("real_path"). Returns a new string, or NULL with errno set. */
static char *absolute_path(const char *path)
{
	char *cwd, *abs;

	if (path[0] == '/')
		return xstrdup(path);
	while (path[0] == '.' && path[1] == '/') {
		path += 2;
		while (path[0] == '/')
			path++;
	}
	cwd = working_directory();
	if (!cwd)
		return NULL;
	if (asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", path) < 0)
		abs = NULL;
	free(cwd);
	return abs;
}

/* Whether option o takes no value: a bool setting, or whether to follow. */
static bool is_flag(const struct submit_option *o)
{
	return o->how == SETTING ? settings_find_option(o->name)->kind == SETTINGS_BOOL :
	       o->how == NO_FOLLOW || o->how == FOLLOW;
}

/* Submit and calibrate: the request from the command line (their options,
 * FOR_SUBMIT or FOR_CALIBRATE), sent, and followed unless asked not to. A
 * calibration is a submit of one library as both arms, with "calibrate". */
/* The verdict a job's exit status stands for, for the overall verdict of
 * several GPU types (fleet_overall: the engine's precedence, the one quald
 * gives list and history by): a pass as neutral, what kept a verdict from
 * us as an error. */
static int status_verdict(int status)
{
	switch (status) {
	case QUAL_EXIT_PASS:
		return RUN_NEUTRAL;
	case QUAL_EXIT_NOT_TIMED:
		return RUN_NOT_TIMED;
	case QUAL_EXIT_REGRESSION:
		return RUN_REGRESSION;
	case QUAL_EXIT_FAIL:
		return RUN_FAIL;
	default:
		return RUN_ERROR;
	}
}

static const char *status_word(int status)
{
	switch (status) {
	case QUAL_EXIT_PASS:
		return "pass";
	case QUAL_EXIT_NOT_TIMED:
		return "not timed";
	case QUAL_EXIT_REGRESSION:
		return vocab_verdict_name(RUN_REGRESSION);
	case QUAL_EXIT_FAIL:
		return vocab_verdict_name(RUN_FAIL);
	default:
		return vocab_verdict_name(RUN_ERROR);
	}
}

/* --gpu-type given more than once: one job per type, submitted first (so
 * that Slurm runs them at once), then each followed in turn; a verdict per
 * type, then the overall one, whose exit status is the worst of theirs. */
static int submit_types(struct ctl *ctl, const struct command *cmd, struct submit_state *s,
			bool compile_only)
{
	size_t n = json_array_size(s->types), i;
	char **jobs = xcalloc(n, sizeof *jobs);
	int *status = xcalloc(n, sizeof *status);
	int rc = -1, worst = QUAL_EXIT_PASS, overall = RUN_NEUTRAL;

	if (ctl->rep.json_out || ctl->rep.junit || ctl->rep.markdown) {
		rc = ctl_usage_error(cmd, "%s", "--json-out, --junit and --markdown take one job: "
				     "with several --gpu-type, give them to 'qualctl wait JOB' "
				     "for each type's job");
		goto out;
	}
	/* One name for the submission's jobs: quald's list, history, exports
	 * and dashboard give their overall verdict by it. */
	{
		unsigned char r[6];
		char name[16];

		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			abort();
		snprintf(name, sizeof name, "s-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
			 r[4], r[5]);
		json_object_set_new(s->req, FLEET_SUBMISSION_KEY, json_string(name));
	}
	for (i = 0; i < n && rc < 0; i++) {
		json_t *req = json_deep_copy(s->req);
		struct reply r = {0};
		const char *job;

		json_object_set(req, FLEET_GPU_TYPE_KEY, json_array_get(s->types, i));
		json_object_set_new(req, "follow", json_false());
		conn_release(&ctl->conn);
		rc = ctl_request(ctl, req, &r);
		if (rc < 0 && !(job = json_string_value(json_object_get(r.obj, "job")))) {
			fprintf(stderr, "qualctl: quald at %s acknowledged the submit without a "
				"job id\n", ctl->conn.where);
			rc = QUAL_EXIT_ERROR;
		} else if (rc < 0) {
			jobs[i] = xstrdup(job);
			if (ctl->json)
				ctl_print_raw(&r);
			else if (s->follow)
				printf("job %s: gpu type %s: queued, position %d\n", job,
				       json_string_value(json_array_get(s->types, i)),
				       (int)json_integer_value(json_object_get(r.obj, "position")));
			else
				printf("%s\n", job);
		}
		ctl_reply_release(&r);
	}
	if (rc >= 0 || !s->follow) {
		/* A submit refused after others were taken: those go on. */
		if (rc >= 0 && jobs[0])
			fprintf(stderr, "qualctl: the jobs submitted before go on in quald\n");
		rc = rc >= 0 ? rc : QUAL_EXIT_PASS;
		goto out;
	}
	fflush(stdout);
	for (i = 0; i < n; i++) {
		struct reply r = {0};

		/* ^C: the jobs go on in quald; their outcome is unknown here. */
		if (conn_signal_caught()) {
			status[i] = -1;
			continue;
		}
		conn_release(&ctl->conn);
		rc = ctl_request(ctl, json_pack("{s:s,s:s,s:I}", "op", "watch", "after_job",
						jobs[i], "after_seq", (json_int_t)-1), &r);
		ctl_reply_release(&r);
		status[i] = rc >= 0 ? rc : follow_job(ctl, jobs[i], -1, compile_only ? 1 : 0);
		if (conn_signal_caught() && status[i] == QUAL_EXIT_ERROR)
			status[i] = -1; /* the follow was stopped, not the job */
		/* An outcome not known here counts as an error: never a pass. */
		if (fleet_overall(overall, status_verdict(status[i] < 0 ? QUAL_EXIT_ERROR :
							  status[i])) != overall) {
			overall = fleet_overall(overall, status_verdict(status[i] < 0 ?
								QUAL_EXIT_ERROR : status[i]));
			worst = status[i] < 0 ? QUAL_EXIT_ERROR : status[i];
		}
	}
	if (!ctl->json) {
		printf("gpu types:");
		for (i = 0; i < n; i++)
			printf("%s %s %s (job %s)", i ? "," : "",
			       json_string_value(json_array_get(s->types, i)),
			       status[i] < 0 ? "unknown (still running: 'qualctl wait JOB')" :
			       status_word(status[i]), jobs[i]);
		printf("\noverall: %s\n", conn_signal_caught() ? "unknown" : status_word(worst));
	}
	rc = worst;
out:
	for (i = 0; i < n; i++)
		free(jobs[i]);
	free(jobs);
	free(status);
	return rc;
}

static int submit_common(struct ctl *ctl, const struct command *cmd, int argc, char **argv,
			 int commands)
{
	struct option own[NSUBMIT + 1];
	bool calibrate = commands == FOR_CALIBRATE;
	struct submit_state s = {.req = json_pack("{s:s}", "op", "submit"),
				 .follow = !calibrate, .types = json_array()};
	struct reply r = {0};
	const char *job;
	char *path;
	bool compile_only;
	int first, rc, position;
	size_t n = 0;

	settings_init(&s.typed);
	for (size_t i = 0; i < NSUBMIT; i++) {
		if (!(submit_options[i].commands & commands))
			continue;
		own[n++] = (struct option){submit_options[i].name,
					   is_flag(&submit_options[i]) ?
					   no_argument : required_argument,
					   NULL, CTL_OPT_OWN + (int)i};
	}
	own[n] = (struct option){NULL, 0, NULL, 0};
	rc = ctl_parse_args(ctl, cmd, argc, argv, own, take_submit, &s, &first);
	if (rc >= 0)
		goto out;
	if (calibrate) {
		if (argc - first != 1) {
			rc = ctl_usage_error(cmd, "%s", argc - first < 1 ?
					     "needs the compiler library" :
					     "takes one compiler library");
			goto out;
		}
		if (!json_object_get(s.req, "calibrate"))
			json_object_set_new(s.req, "calibrate", json_integer(10));
	} else if (argc - first != 2) {
		rc = ctl_usage_error(cmd, "%s", argc - first < 2 ?
				     "needs the baseline and the candidate library" :
				     "takes two libraries, the baseline and the candidate");
		goto out;
	}
	for (int k = 0; k < 2; k++) {
		/* A calibration's one library is both arms. */
		const char *lib = argv[first + (calibrate ? 0 : k)];

		if (!lib[0]) {
			rc = ctl_usage_error(cmd, "%s", "a library path is empty");
			goto out;
		}
		path = absolute_path(lib);
		if (!path) {
			fprintf(stderr, "qualctl %s: cannot make '%s' absolute: %s\n",
				cmd->name, lib, strerror(errno));
			rc = QUAL_EXIT_USAGE;
			goto out;
		}
		json_object_set_new(s.req, k == 0 ? "baseline" : "candidate", json_string(path));
		free(path);
	}
	json_object_set_new(s.req, "follow", json_boolean(s.follow));
	compile_only = json_is_true(json_object_get(s.req, "compile_only"));
	if (json_array_size(s.types) > 1) {
		rc = submit_types(ctl, cmd, &s, compile_only);
		goto out;
	}
	if (json_array_size(s.types) == 1)
		json_object_set(s.req, FLEET_GPU_TYPE_KEY, json_array_get(s.types, 0));
	if (s.follow && report_open("qualctl", &ctl->rep) < 0) {
		rc = QUAL_EXIT_USAGE;
		goto out;
	}
	if (!s.follow && (ctl->rep.json_out || ctl->rep.junit || ctl->rep.markdown)) {
		rc = ctl_usage_error(cmd, "%s", "--json-out, --junit and --markdown need the job "
				     "followed: with --no-follow, give them to 'qualctl wait JOB'");
		goto out;
	}
	rc = ctl_request(ctl, s.req, &r);
	s.req = NULL; /* taken */
	if (rc >= 0)
		goto out;
	job = json_string_value(json_object_get(r.obj, "job"));
	if (!job) {
		fprintf(stderr, "qualctl: quald at %s acknowledged the submit without a job id\n",
			ctl->conn.where);
		rc = QUAL_EXIT_ERROR;
		goto out;
	}
	if (!s.follow) {
		/* The job id alone, for scripts: job=$(qualctl submit --no-follow ...) */
		if (ctl->json)
			ctl_print_raw(&r);
		else
			printf("%s\n", job);
		rc = QUAL_EXIT_PASS;
		goto out;
	}
	position = (int)json_integer_value(json_object_get(r.obj, "position"));
	if (!ctl->json) {
		/* On a terminal too: the progress line that follows is
		 * redrawn and cleared, and the job id must stay on screen. */
		printf("job %s: queued, position %d\n", job, position);
		fflush(stdout);
	}
	rc = follow_job(ctl, job, position, compile_only ? 1 : 0);
out:
	report_abandon(&ctl->rep);
	json_decref(s.req);
	json_decref(s.types);
	settings_release(&s.typed);
	ctl_reply_release(&r);
	return rc;
}

/* ---- wait ---- */

int ctl_wait(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	struct reply r = {0};
	const char *job;
	int rc;

	rc = ctl_job_operand(ctl, cmd, argc, argv, &job);
	if (rc >= 0)
		return rc;
	if (report_open("qualctl", &ctl->rep) < 0)
		return QUAL_EXIT_USAGE;
	/* A watch from the job's first line: its stored lines, then its live
	 * ones (and other jobs', which follow_job() passes over). */
	rc = ctl_request(ctl, json_pack("{s:s,s:s,s:I}", "op", "watch", "after_job", job,
					"after_seq", (json_int_t)-1), &r);
	if (rc >= 0) {
		report_abandon(&ctl->rep);
		return rc;
	}
	ctl_reply_release(&r);
	if (!ctl->json)
		printf("job %s: waiting for its verdict\n", job);
	fflush(stdout);
	return follow_job(ctl, job, -1, -1);
}

int ctl_submit(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	return submit_common(ctl, cmd, argc, argv, FOR_SUBMIT);
}

int ctl_calibrate(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	return submit_common(ctl, cmd, argc, argv, FOR_CALIBRATE);
}

/* ---- watch ---- */

enum {
	OPT_AFTER = CTL_OPT_OWN,
};

struct watch_state {
	const char *after_job; /* --after's argument, NULL when not given */
	long after_seq;
	bool has_seq;          /* it was JOB:SEQ, not JOB alone */
};

static int take_watch(void *st, const struct command *cmd, int opt, const char *arg)
{
	struct watch_state *w = st;
	const char *colon;

	if (opt != OPT_AFTER)
		return ctl_take_nothing(st, cmd, opt, arg);
	colon = strrchr(arg, ':');
	if (colon == arg || !*arg)
		return ctl_usage_error(cmd, "--after must be JOB or JOB:SEQ, got '%s'", arg);
	w->after_job = arg; /* cut at the colon by the caller */
	if (!colon)
		return 0; /* after the whole job */
	if (text_parse_long("SEQ", colon + 1, -1, LONG_MAX, &w->after_seq, NULL) < 0)
		return ctl_usage_error(cmd, "--after must be JOB or JOB:SEQ with SEQ >= -1, got '%s'",
				       arg);
	w->has_seq = true;
	return 0;
}

/* The views of the jobs a watch has seen lines of, until their verdicts. */
struct watch_views {
	struct view_job **v;
	size_t n, cap;
};

static struct view_job *watch_view(struct watch_views *w, const char *job)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->v[i]->job, job) == 0)
			return w->v[i];
	XGROW(w->v, w->n + 1, w->cap);
	w->v[w->n] = xmalloc(sizeof **w->v);
	view_job_init(w->v[w->n], job);
	return w->v[w->n++];
}

static void watch_drop(struct watch_views *w, struct view_job *v)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i] != v)
			continue;
		view_job_release(v);
		free(v);
		w->v[i] = w->v[--w->n];
		return;
	}
}

int ctl_watch(struct ctl *ctl, const struct command *cmd, int argc, char **argv)
{
	static const struct option own[] = {
		{"after", required_argument, NULL, OPT_AFTER},
		{NULL, 0, NULL, 0},
	};
	struct watch_state ws = {NULL, -1, false};
	struct watch_views views = {NULL, 0, 0};
	struct reply r = {0};
	struct qual_msg msg;
	json_t *req;
	int first, rc;

	rc = ctl_parse_args(ctl, cmd, argc, argv, own, take_watch, &ws, &first);
	if (rc >= 0)
		return rc;
	if (first < argc)
		return ctl_usage_error(cmd, "takes no operands, got '%s'", argv[first]);
	req = json_pack("{s:s}", "op", "watch");
	if (ws.after_job) {
		size_t n = ws.has_seq ? (size_t)(strrchr(ws.after_job, ':') - ws.after_job)
				      : strlen(ws.after_job);
		json_object_set_new(req, "after_job", json_stringn(ws.after_job, n));
		if (ws.has_seq)
			json_object_set_new(req, "after_seq", json_integer(ws.after_seq));
	}
	rc = ctl_request(ctl, req, &r);
	if (rc >= 0)
		return rc;
	ctl_reply_release(&r);
	for (;;) {
		struct line *l;
		char *text;
		size_t len;

		rc = conn_read_parsed(&ctl->conn, -1, &l, &text, &len, &msg);
		if (rc == CONN_INTERRUPTED) {
			rc = QUAL_EXIT_PASS; /* how a watch ends */
			break;
		}
		if (rc == CONN_EOF) {
			fprintf(stderr, "qualctl: quald at %s closed the connection\n", ctl->conn.where);
			rc = QUAL_EXIT_NO_DAEMON;
			break;
		}
		if (rc < 0) {
			/* A read that failed or stopped mid-line: quald went
			 * away. Anything else (a line over the limit) is a
			 * broken stream. */
			fprintf(stderr, "qualctl: %s\n", msg.text);
			rc = rc == QUAL_EIO ? QUAL_EXIT_NO_DAEMON : QUAL_EXIT_ERROR;
			break;
		}
		if (l) {
			view_clean(l->obj);
			line_reread(l);
		}
		if (job_of(l)) {
			struct view_job *v = watch_view(&views, job_of(l));

			if (take_line(ctl, v, l->obj, text, len, VIEW_VERDICTS | VIEW_PREFIX))
				watch_drop(&views, v);
			fflush(stdout);
		}
		line_unref(l);
	}
	while (views.n > 0)
		watch_drop(&views, views.v[0]);
	free(views.v);
	return rc;
}
