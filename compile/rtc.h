/* Compiler libraries: a shared object exposing the nvrtc ABI (nvrtcCreateProgram,
 * nvrtcCompileProgram, nvrtcGetCUBIN, ...) or the hiprtc ABI
 * (hiprtcCreateProgram, hiprtcCompileProgram, hiprtcGetCode, ...).
 *
 * A library is never loaded into the calling process. Each identify or compile
 * runs the helper program qual-compile in a child process of its own process
 * group, with the library's own folder first on LD_LIBRARY_PATH (a candidate
 * ships sibling libraries with the same sonames as the baseline's), under a
 * time limit after which the whole group is killed, and with a cap on the log
 * it may return. The child writes its results into a private temporary folder
 * and _exit()s, so a crash in a runtime's teardown after the results are
 * written does not lose them.
 *
 * What runs is what was checked (docs/quald.md, "Pinned libraries"): a
 * library is read once, hashed while it is copied into a sealed memfd
 * (rtc_pin_library), and every child loads exactly those bytes
 * (dlopen("/proc/self/fd/N") of the memfd it inherits), never the path
 * again. quald's submit check opens the file once (rtc_library_open),
 * hashes that open file itself, off its loop, and has its identify child
 * load that same open file: nothing the child reports decides which bytes
 * were checked. */
#ifndef QUAL_RTC_H
#define QUAL_RTC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/child.h"
#include "common/err.h"

enum rtc_abi {
	RTC_ABI_NONE = 0,
	RTC_ABI_NVRTC,
	RTC_ABI_HIPRTC,
};

struct rtc_limits {
	double timeout_s;   /* per child; default 120 */
	size_t log_cap;     /* bytes of compiler log kept; default 1 MiB */
};

/* Fills the defaults above. */
void rtc_limits_init(struct rtc_limits *l);

/* A library pinned: the bytes of its file, read once (rtc_pin_library), or
 * its file opened once for a caller that hashes it (rtc_library_open). */
struct rtc_pin {
	int fd;               /* a memfd holding them, sealed against every
			       * change (F_SEAL_WRITE, _GROW, _SHRINK, _SEAL),
			       * or the open file; close-on-exec; -1 = none */
	char sha256[65];      /* of those bytes, lower-case hex ("" until the
			       * caller of rtc_library_open hashed them) */
	dev_t dev;            /* the file they were read from */
	ino_t ino;
	off_t size;           /* bytes read (rtc_library_open: the file's
			       * size when opened) */
};

/* Sets pin to none (fd -1). */
void rtc_pin_init(struct rtc_pin *pin);

/* Opens path (O_NOFOLLOW: the last component must not be a link), checks
 * that it is a regular file, and copies it into a new sealed memfd, hashing
 * the bytes as they are copied. Returns 0 with pin filled (the caller owns
 * pin->fd: rtc_pin_release()), or QUAL_ENOENT / QUAL_EIO / QUAL_EINVAL with
 * msg ("cannot load compiler '/x': ..."); then pin->fd is -1. The memfd's
 * bytes are those hashed: no one, the library included, can change them. */
int rtc_pin_library(const char *path, struct rtc_pin *pin, struct qual_msg *msg);

/* rtc_pin_library() without the copy and without the hash, for quald's
 * submit check, which may run many at once (a copy is 100 MiB and more of
 * memory each) and must not read a library on its loop: opens real_path
 * (the caller's resolved path; O_NOFOLLOW, and O_NONBLOCK while it opens,
 * so that neither a link nor a FIFO there now is followed or waited for),
 * checks that it is a regular file and, with checked (may be NULL: the
 * caller's own stat, quald's policy check), the same file (device and
 * inode; else QUAL_EINVAL "compiler '/x' changed while it was checked: '/y'
 * is another file now"). path names it in messages. Returns 0 with pin->fd
 * that open file (blocking, close-on-exec, not sealed; the caller owns it:
 * rtc_pin_release()), its device, inode and st_size, and pin->sha256 "":
 * the caller hashes pin->fd (sha256_hash_fd, from its offset 0) where it
 * may block, and hands the same descriptor to rtc_identify_start(). Its
 * bytes are what a child that loads /proc/self/fd/N of it loads as long as
 * nobody writes the file, which the policy (daemon/policy.h) leaves to
 * root and quald's user; the worker pins by the hash and refuses other
 * bytes. Otherwise a negative code with msg ("cannot load compiler '/x':
 * is a symbolic link now"), and pin->fd is -1. */
int rtc_library_open(const char *path, const char *real_path, const struct stat *checked,
		     struct rtc_pin *pin, struct qual_msg *msg);

/* Closes a pin's descriptor (none: nothing). */
void rtc_pin_release(struct rtc_pin *pin);

struct rtc_identity {
	enum rtc_abi abi;
	char abi_name[8];     /* "nvrtc" or "hiprtc" */
	char version[32];     /* what the library reports, e.g. "13.0" */
	char path[PATH_MAX];  /* the path as given */
	char real_path[PATH_MAX]; /* the file that was read */
	char sha256[65];      /* of the bytes loaded, lower-case hex; "" when
			       * unknown (rtc_identify_finish's: the caller
			       * hashed what it gave the child) */
	dev_t dev;            /* the file read (device, inode, bytes); 0 when
			       * unknown */
	ino_t ino;
	off_t size;
	/* rtc_identify's: the pinned bytes that every rtc_compile of this
	 * identity loads (owned: rtc_identity_release). Unpinned (false, as
	 * in an identity of rtc_identify_finish), a compile loads real_path. */
	bool pinned;
	int lib_fd;
};

/* Pins the library (rtc_pin_library) and asks a child, which loads the
 * pinned bytes, which ABI it exposes and which version it reports. real_path
 * is the file to read (NULL: realpath(path)); path names it in messages.
 * With expect_sha256 (NULL: any), bytes of another hash are refused before
 * any child loads them: QUAL_ECHECK, msg "compiler '/x' is not the library
 * that was checked: sha256 E expected, F found" (id->sha256 is F). Other
 * errors name the problem: missing file, a directory, not an ELF shared
 * object, neither ABI, a crash or hang while loading (QUAL_ECRASH,
 * QUAL_ETIMEOUT, QUAL_EEXIT; QUAL_EKILLED: killed by a signal another process
 * sent; id->sha256 is set). On success and on those four id owns the pin: rtc_identity_release() (safe on any identity this
 * returned). */
int rtc_identify(const char *path, const char *real_path, const char *expect_sha256,
		 const struct rtc_limits *lim, struct rtc_identity *id,
		 struct qual_msg *msg);

/* Closes an identity's pinned bytes; it is unpinned after. */
void rtc_identity_release(struct rtc_identity *id);

/* An identify child in flight, for a caller with an event loop (quald's
 * submit checks), which must not block for it: rtc_identify() is
 * rtc_identify_start(), a wait, rtc_identify_finish(), so the two share every
 * rule (the library's own folder first on LD_LIBRARY_PATH, a private folder
 * as TMPDIR, the child in a process group of its own, the same report and
 * the same messages). The qual-compile result protocol has this one client. */
struct rtc_pending {
	struct child child;      /* the running child: wait for it with
				  * child_wait(), or watch it (SIGCHLD,
				  * child_exited()) and child_reap() it */
	char dir[PATH_MAX];      /* its private folder */
	char path[PATH_MAX];     /* the library as given */
	char real_path[PATH_MAX];
	int lib_fd;              /* the library the child loads, its stdin
				  * (borrowed: rtc_identify's pin, or the
				  * caller's rtc_library_open file, which must
				  * stay open until the child is reaped) */
	bool keep_dir;           /* set by the caller once started: finish and
				  * abort leave dir for it to remove
				  * (rtc_workdir_remove), e.g. off its event
				  * loop: what the child left there may be
				  * many files */
};

/* Removes a compile folder (an identify's dir, both of its levels) without
 * following anything the child left in it; "" or NULL is none. Blocks for
 * as long as the removal takes. */
void rtc_workdir_remove(const char *dir);

/* Starts the qual-compile child that identifies the library path (as
 * given, for messages) at real_path, whose open file is lib_fd (borrowed:
 * rtc_library_open()'s, already checked and hashed by the caller): the
 * child gets lib_fd as its stdin and loads it (`--lib-fd 0`,
 * dlopen("/proc/self/fd/0")), so what it loads is the file the caller
 * hashed, never the path again. helper is the qual-compile to run (NULL:
 * rtc_set_helper()'s, $QUAL_COMPILE, or the one beside us). Returns 0 with
 * p->child running, or a negative code with msg ("cannot start compiler
 * helper '/x': ..."); then nothing runs and nothing is left behind. Reads
 * nothing: the loop never reads a library. */
int rtc_identify_start(const char *path, const char *real_path, int lib_fd,
		       const char *helper, struct rtc_pending *p, struct qual_msg *msg);

/* For a started identify whose child has been reaped into ex: reads its
 * result (abi and version; its result file only, read as the child's:
 * fs_read_capped_placed()) into id, with path and real path, and removes
 * its folder. id is unpinned, and its sha256 "" and dev, ino and size 0:
 * the caller hashed what it gave the child, and nothing the child says
 * changes that. Returns 0; QUAL_ECRASH, QUAL_EKILLED,
 * QUAL_ETIMEOUT or
 * QUAL_EEXIT (the library crashed, was killed, hung or exited while loading: a result
 * about it, not a usage problem; ex->timed_out says the caller's deadline of
 * timeout_s passed);
 * QUAL_EABI; or another negative code; msg says what, in the words
 * rtc_identify() uses. */
int rtc_identify_finish(struct rtc_pending *p, const struct child_exit *ex,
			double timeout_s, struct rtc_identity *id, struct qual_msg *msg);

/* Ends a started identify that will not be finished (its requester went):
 * kills its group, reaps it, removes its folder. */
void rtc_identify_abort(struct rtc_pending *p);

/* Checks, without loading it, that path names a readable regular file
 * holding a 64-bit ELF shared object: the checks rtc_identify makes before it
 * starts a child, with the same messages ("cannot load compiler '/x': is a
 * directory"). Safe in a process that must never load a compiler. */
int rtc_check_library(const char *path, struct qual_msg *msg);

/* Resource usage from the compiler's report; -1 where unknown. */
struct rtc_resources {
	int registers;     /* per thread (VGPRs on AMD) */
	int sgprs;         /* AMD scalar registers, -1 on NVIDIA */
	int spill_stores;  /* bytes */
	int spill_loads;   /* bytes */
	int stack_bytes;   /* stack frame / private segment per thread */
	int shared_bytes;  /* static shared memory */
};

struct rtc_request {
	const struct rtc_identity *compiler;
	const char *source;       /* full source text, prelude included */
	const char *program_name; /* e.g. "gemm_f16.cu" */
	const char *arch;         /* "sm_90" or "gfx90a": final code for it */
	const char *const *options; /* extra per-arm options, may be NULL */
	int noptions;
};

struct rtc_result {
	int status;            /* 0, QUAL_ECOMPILE, QUAL_ECRASH, QUAL_ETIMEOUT, ... */
	char message[512];     /* when status != 0: what failed, first */
	void *code;            /* CUBIN or AMDGPU code object; malloc'd */
	size_t code_size;
	char code_sha256[65];
	char *log;             /* compiler log, NUL-terminated, at most log_cap
				* bytes; "" when there is none (never NULL
				* after rtc_compile returned 0) */
	size_t log_size;       /* the full log's length as the compiler
				* reported it, terminating NUL not counted */
	bool log_truncated;    /* log_size > strlen(log) */
	double compile_ms;     /* wall time of the compile call in the child */
	struct rtc_resources res;
};

/* Compiles req in a child. Returns 0 when the child ran and reported (the
 * compile itself may still have failed: see out->status), or a negative code
 * when the child could not be started. rtc_result_release() frees out.
 *
 * What the compiler under test does wrong is its own failure, reported in
 * out->status with out->message, and the call still returns 0: QUAL_ECOMPILE
 * (rejected the source or options, produced no code or not final machine code
 * for arch), QUAL_ECRASH (died of a fault signal of its own, RTC__FAULT_FILE),
 * QUAL_EKILLED (died of a signal another process sent), QUAL_EEXIT (exited without
 * reporting), QUAL_ETIMEOUT (past lim->timeout_s; the whole process group is killed),
 * QUAL_ELIMIT (a log or code object over RTC_OUTPUT_LIMIT). A negative return
 * is qual's own trouble (no helper, no temporary folder, bad request). */
int rtc_compile(const struct rtc_request *req, const struct rtc_limits *lim,
		struct rtc_result *out, struct qual_msg *msg);
void rtc_result_release(struct rtc_result *r);

/* Parses resource figures out of a compiler log: nvrtc's ptxas report
 * (-Xptxas=-v) for entry functions only, the largest figure of each field
 * where a program has several entries. Sets every field to -1 first; fields
 * not found stay -1. For hiprtc this reads nothing: ROCm 5.2's hiprtc prints
 * no resource report (it ignores -Rpass-analysis=kernel-resource-usage), so
 * AMD figures come from the code object: rtc_parse_code_resources(). */
void rtc_parse_resources(enum rtc_abi abi, const char *log,
			 struct rtc_resources *res);

/* Fills from the code object what the log did not give (fields still -1):
 * for hiprtc, the AMDGPU metadata note (NT_AMDGPU_METADATA, msgpack) of each
 * kernel: .vgpr_count -> registers (on gfx90a the unified count, AGPRs
 * included: 448 for the attention fixture, 192 of them AGPRs), .sgpr_count ->
 * sgprs,
 * .private_segment_fixed_size -> stack_bytes, .group_segment_fixed_size ->
 * shared_bytes, and 4 * .vgpr_spill_count -> spill_stores (one 4-byte
 * scratch slot per spilled VGPR per lane; AMD reports spilled registers, not
 * spill traffic, so spill_loads stays -1, and SGPR spills, which go to VGPR
 * lanes first, are not counted). Largest figure over kernels. Does nothing for
 * nvrtc. Returns 0, or QUAL_EINVAL when an AMDGPU object has no readable
 * metadata. */
int rtc_parse_code_resources(enum rtc_abi abi, const void *code, size_t size,
			     struct rtc_resources *res);

/* Checks that code (as the compiler returned it) is final machine code for
 * arch, never an intermediate form: for nvrtc a CUBIN (ELF, EM_CUDA); for
 * hiprtc an AMDGPU code object (ELF, EM_AMDGPU) or a clang offload bundle
 * holding one for arch, in which case *offset and *len select that entry.
 * Otherwise *offset = 0, *len = size. Returns 0 or QUAL_ECOMPILE with msg
 * saying what the bytes are instead. */
int rtc_check_code(enum rtc_abi abi, const char *arch, const void *code,
		   size_t size, size_t *offset, size_t *len,
		   struct qual_msg *msg);

/* The largest compiler log or code object accepted from a compiler. A
 * compiler reporting more is refused before anything that size is allocated. */
#define RTC_OUTPUT_LIMIT ((size_t)256 << 20)

/* The qual-compile helper used for children: by default the file
 * "qual-compile" beside the running executable, or $QUAL_COMPILE. path is
 * copied; NULL returns to the default. */
void rtc_set_helper(const char *path);

/* The qual-compile that rtc_compile() runs now (rtc_set_helper()'s,
 * $QUAL_COMPILE, or the one beside us), as a new string into *out. Returns
 * 0, or QUAL_EIO with msg. */
int rtc_helper_path(char **out, struct qual_msg *msg);

/* With set, every qual-compile child runs as uid and gid (gid its only
 * group; child.h's set_ids). Its private folder stays ours, and that user
 * may neither add nor replace a name in it (mode 0710, group gid): it gets
 * a folder of its own for its results (RTC__OUT_DIR) and one as $TMPDIR,
 * may read its source, and writes its stdout and stderr through a
 * descriptor. Every file we make there is new (O_EXCL | O_NOFOLLOW, through
 * the folder's descriptor), what it leaves is read as its, without
 * following links (fs_read_capped_placed()), and the folder is removed
 * without following any (fs_rm_tree()). Only a root process may (qual-run
 * and quald's --compile-user, confine.h's qual_confine_user()). */
void rtc_set_compile_user(bool set, uid_t uid, gid_t gid);

/* Whether compile children run as another user, and which (its uid and gid
 * into *uid and *gid when so). */
bool rtc_compile_user(uid_t *uid, gid_t *gid);

/* Internal: the files through which the qual-compile child reports to
 * rtc.c, in the folder given by --out (RTC__OUT_DIR of its private folder;
 * RTC__SOURCE_FILE and RTC__STDERR_FILE are in the private folder itself,
 * made by rtc.c). The child writes the log and the code
 * first, then the result file under a temporary name and renames it, so a
 * result file that exists is complete. The result file holds key=value lines:
 * status (a QUAL_E* code), message, abi, version, compile_ms, log_size,
 * log_kept, code_size, and the line "end=1" last. */
#define RTC__OUT_DIR "out"
/* The --out folder and the --src file of a child that rtc.c starts, given
 * in its environment instead (rtc.c's child_env_for() says why). */
#define RTC__OUT_ENV "QUAL_COMPILE_OUT"
#define RTC__SRC_ENV "QUAL_COMPILE_SRC"
/* The child's arguments after its command (identify, compile), in a file
 * of its folder (RTC__ARGS_FILE, made by rtc.c like the source) named by
 * its environment: NUL-terminated strings (proto/strv.h, strv_join_nul),
 * so that no library path, program name or option of a job is in its
 * /proc/PID/cmdline. */
#define RTC__ARGS_ENV "QUAL_COMPILE_ARGS"
#define RTC__ARGS_FILE "args.txt"
#define RTC__RESULT_FILE "result.txt"
#define RTC__LOG_FILE "log.txt"
#define RTC__CODE_FILE "code.bin"
#define RTC__SOURCE_FILE "source.txt"
#define RTC__STDERR_FILE "stderr.txt"
/* The fault note: "self N" when signal N was the child's own doing (a fault
 * the kernel raised in it, or one it raised itself), written by its signal
 * handler just before it dies of N; nothing when another process sent the
 * signal. A death by a signal without the note is not a crash of the
 * library's (QUAL_EKILLED; docs/quald.md, "Quarantine"). */
#define RTC__FAULT_FILE "fault.txt"

#endif
