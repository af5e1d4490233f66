/* The GPU health check: load, run and check a tiny kernel of qual's own, with
 * a deadline. A GPU must pass it before it takes the next job after one that
 * faulted or hung (quald runs `qual-run --health --device N`; a GPU that fails
 * is taken out of service). See docs/faults.md.
 *
 * What it proves: the driver opens the device and makes a context, memory can
 * be allocated and copied both ways, a module loads, and a graph of dependent
 * launches runs to the end within the deadline and computes exactly what the
 * host computes. On NVIDIA the kernel is PTX that the driver compiles for
 * whatever architecture the device is (no compiler is needed on the machine,
 * and this is not code under test, so the JIT is no concern here). On AMD
 * there is no portable code to embed: the check is the memory round trip
 * alone, and says so (kernel: false). */
#ifndef QUAL_HEALTH_H
#define QUAL_HEALTH_H

#include <stdbool.h>

#include <jansson.h>

#include "common/lines.h"
#include "proto/line.h"
#include "gpu/gpu.h"

/* The default deadline of each wait of the check. The whole check takes a
 * few milliseconds on a healthy GPU (most of it opening the context); 5 s
 * leaves room for a busy driver without letting a wedged GPU stall the
 * service for long. */
#define HEALTH_LIMIT_MS 5000.0

/* The check's kernel: HEALTH_LAUNCHES dependent launches over HEALTH_COUNT
 * 32-bit words, each launch applying health_step to every word. */
#define HEALTH_COUNT 4096u
#define HEALTH_BLOCK 256u
#define HEALTH_LAUNCHES 32
#define HEALTH_SALT 0x5bd1e995u

/* The kernel as PTX (entry qual_health(u32 *out, u32 n, u32 salt)); ISA 6.0
 * for sm_50, so that any driver qual supports compiles it for its device. */
extern const char health_ptx[];

struct health_report {
	bool ok;
	bool have_device;  /* info holds the device */
	bool kernel;       /* the kernel ran (false: memory round trip only) */
	bool hung;         /* a wait ran past the deadline: the caller must
			    * end the process with _exit (gpu.h, Deadlines) */
	struct gpu_info info;
	double limit_ms;   /* the deadline of each wait */
	double ms;         /* wall time of the whole check */
	enum lines_code code; /* why it is not healthy (lines.h): no_device,
			       * gpu_hang, or gpu_fault for anything else the
			       * GPU got wrong; LINES_CODE_NONE when ok */
	char message[1200];
};

/* What one launch does to word i holding x: x * 1664525 + (i ^ salt) +
 * 1013904223, modulo 2^32 (the kernel's arithmetic, for the host's copy). */
unsigned health_step(unsigned x, unsigned i, unsigned salt);

/* The word each element starts from (uploaded before the launches). */
unsigned health_initial(unsigned i);

/* Runs the check on device ordinal, each wait limited to limit_ms, and fills
 * r. Returns 0 when healthy, else the code of what failed first: QUAL_ENODEV
 * (no device), QUAL_EHANG (r->hung), QUAL_ECHECK (a wrong word), QUAL_EGPU. */
int health_check(int ordinal, double limit_ms, struct health_report *r);

/* The report as one line (new reference): {"type":"health","ok":...,
 * "code":... (null when ok),"device":{...} or null,"kernel":...,
 * "limit_ms":...,"ms":...,"message":...}. A reader decides from "ok" and
 * "code", never from the message. */
json_t *health_json(const struct health_report *r);

#endif
