/* One error space for qual: functions return int, 0 on success, a negative
 * QUAL_E* code on failure. Foreign codes (errno, CUresult, hipError_t,
 * nvrtcResult, hiprtcResult) are mapped at the boundary; the detail goes into a
 * caller-supplied message buffer (struct qual_msg). */
#ifndef QUAL_ERR_H
#define QUAL_ERR_H

#include <stddef.h>

enum qual_err {
	QUAL_OK = 0,
	QUAL_EINVAL = -1,     /* bad argument or bad input */
	QUAL_ENOMEM = -2,
	QUAL_EIO = -3,        /* file or pipe failure */
	QUAL_ENOENT = -4,     /* file or symbol not found */
	QUAL_ENODEV = -5,     /* no GPU runtime or no device */
	QUAL_EABI = -6,       /* library exposes neither compiler ABI */
	QUAL_ECOMPILE = -7,   /* the compiler rejected the source */
	QUAL_ECRASH = -8,     /* a child process died by a signal */
	QUAL_ETIMEOUT = -9,   /* a child process ran past its limit */
	QUAL_EGPU = -10,      /* a GPU runtime call failed */
	QUAL_ECHECK = -11,    /* output differs from the oracle */
	QUAL_ELIMIT = -12,    /* a size limit was exceeded */
	QUAL_EHANG = -13,     /* the GPU did not finish within its deadline */
	QUAL_EEXIT = -14,     /* a child process exited without its report */
	QUAL_EORACLE = -15,   /* a fixture's oracle failed: no expected values */
	QUAL_EKILLED = -16,   /* a child process died by a signal that another
			       * process sent: not a crash of its own */
};

/* A message buffer filled by functions that fail, so that the caller can
 * report what failed first. */
struct qual_msg {
	char text[1024];
};

/* Formats into msg (printf-style) and returns code, so that a failing path can
 * read `return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", p, strerror(e));`.
 * msg may be NULL. */
int qual_fail(struct qual_msg *msg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A short constant name for a QUAL_E* code ("compile", "timeout", ...). */
const char *qual_strerror(int code);

#endif
