/* What stays inside compile/: the private folder and the child of rtc.c's
 * identify and compile, which rtc_child.c makes and runs. Nothing outside
 * compile/ includes this. */
#ifndef QUAL_RTC_INTERNAL_H
#define QUAL_RTC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/child.h"
#include "common/err.h"
#include "compile/rtc.h"

/* What the child reported in its result file. */
struct child_report {
	bool complete;  /* the file exists and ends with end=1 */
	int status;
	char message[512];
	char abi[16];
	char version[32];
	double compile_ms;
	size_t log_size;
	size_t log_kept;
	size_t code_size;
};

/* Who owns what a child leaves in its folder's RTC__OUT_DIR: the compile
 * user, or we. */
uid_t rtc__child_owner(void);

/* Creates a new compile folder (above) in $TMPDIR into dir (cap at least
 * PATH_MAX). On failure dir is "" and nothing is left behind. */
int rtc__workdir_new(char *dir, size_t cap, struct qual_msg *msg);

/* Writes data into name, a new file of the compile folder dir that the
 * child may read (the source), and its path into path. */
int rtc__workdir_put(const char *dir, const char *name, const char *data, size_t len,
		     char *path, size_t cap, struct qual_msg *msg);

/* The path of what the child left as name in its folder's RTC__OUT_DIR. */
int rtc__workdir_out_path(char *path, size_t cap, const char *dir, const char *name,
			  struct qual_msg *msg);

/* The environment for the child: ours, with the library's own folder first
 * on LD_LIBRARY_PATH (its sibling libraries, e.g. libnvrtc-builtins, must win
 * over any other copy with the same soname), TMPDIR inside the private
 * folder dir, CUDA_CACHE_DISABLE=1, QUAL_DIE_WITH_PARENT naming us, and
 * where the child reports and what it compiles (RTC__OUT_ENV and
 * RTC__SRC_ENV: in the environment, never in its arguments, so that the
 * folder's name is not in /proc/PID/cmdline, which every process may read;
 * only a process that may trace the child reads its environment). nvrtc
 * 12.9 and later keep compiled code in the driver's disk cache when a driver
 * is present: on the H200 a second compile of the same source returned in
 * 32 ms instead of 472 ms with no ptxas report, and a cache shared by two
 * nvrtc builds would hand the candidate the baseline's code. Every compile
 * must be the compiler's own. Returns a new array; child_env_free() frees
 * it. */
char **rtc__child_env_for(const char *libdir, const char *dir);

/* Starts the helper argv[0] for the library in folder libdir, in the private
 * folder dir: its own process group, stdin from lib_fd (a pin's memfd, which
 * it loads as /proc/self/fd/0: a descriptor of ours the child gets without
 * any other; -1: /dev/null), stdout and stderr into the folder's
 * RTC__STDERR_FILE (made new here, handed over by descriptor), its --out
 * and --src in its environment (rtc__child_env_for), and its arguments
 * after argv[1] (the command) in the folder's RTC__ARGS_FILE, so that its
 * command line is argv[0] and the command alone. Returns 0 with c running,
 * or a negative code; then nothing runs. */
int rtc__helper_start(struct child *c, const char *const *argv, const char *libdir,
		      const char *dir, int lib_fd, struct qual_msg *msg);

/* Reads the child's result file (RTC__RESULT_FILE in dir's RTC__OUT_DIR)
 * into rep; rep->complete stays false when it is missing or unfinished. */
void rtc__report_read(const char *dir, struct child_report *rep);

/* Decides what became of the child. A complete result file is trusted even
 * when the child then died by a signal or was killed: it writes its results
 * and then _exit()s, and ROCm's hiprtc can crash in the runtime's teardown
 * at process exit, after the compile has succeeded and been reported.
 * Otherwise: timeout, a crash (a signal the child noted as its own in
 * RTC__FAULT_FILE: QUAL_ECRASH), another signal (QUAL_EKILLED: SIGKILL, or a
 * signal another process sent), or an exit without a report. */
int rtc__outcome_status(const struct child_exit *ex,
			const struct child_report *rep, const char *lib,
			const char *doing, double timeout_s, const char *dir,
			char *message, size_t cap);

#endif
