#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>

int qual_fail(struct qual_msg *msg, int code, const char *fmt, ...)
{
	if (msg) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg->text, sizeof msg->text, fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *qual_strerror(int code)
{
	switch (code) {
	case QUAL_OK: return "ok";
	case QUAL_EINVAL: return "invalid argument";
	case QUAL_ENOMEM: return "out of memory";
	case QUAL_EIO: return "i/o error";
	case QUAL_ENOENT: return "not found";
	case QUAL_ENODEV: return "no device";
	case QUAL_EABI: return "no compiler abi";
	case QUAL_ECOMPILE: return "compile error";
	case QUAL_ECRASH: return "crashed";
	case QUAL_EKILLED: return "killed";
	case QUAL_ETIMEOUT: return "timed out";
	case QUAL_EGPU: return "gpu error";
	case QUAL_ECHECK: return "wrong output";
	case QUAL_ELIMIT: return "limit exceeded";
	case QUAL_EHANG: return "gpu hang";
	case QUAL_EEXIT: return "exited without reporting";
	case QUAL_EORACLE: return "oracle failed";
	}
	return "unknown error";
}
