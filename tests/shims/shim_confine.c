/* shim_confine: forwards every call, and when loaded by a compile child
 * (with $SHIM_CONFINE_RECORD set) looks at how it is confined and tries, as
 * a hostile candidate run as --compile-user would, to plant links where
 * the process that started it will write or remove:
 *
 *   uid       its uid (the compile user's)
 *   userns    readlink("/proc/self/ns/user"): another namespace than its
 *             starter's once qual-compile entered its own
 *   map       its /proc/self/uid_map, "inside,outside,count" ("none" when
 *             empty: a namespace whose maps could not be written, in which
 *             the process is the overflow uid)
 *   dumpable  prctl(PR_GET_DUMPABLE): 0 once qual-compile is confined
 *   argv      1 when its own /proc/self/cmdline, which every process may
 *             read, names its compile folder, else 0
 *   plant     0 when a link named "planted" to $SHIM_CONFINE_VICTIM could
 *             be made in its compile folder (the folder above $TMPDIR),
 *             else the errno value: EACCES when that folder is not its own
 *
 * and, in the folders that are its own ($TMPDIR and the compile folder's
 * out/), links to $SHIM_CONFINE_VICTIM at two depths, which the removal of
 * the folder must not follow. One line "uid=U userns=NS map=M dumpable=D
 * argv=A plant=E"
 * is appended to $SHIM_CONFINE_RECORD per load. Used by
 * tests/unit/compile/test_rtc_confine.c. */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

const struct shim_ops shim_ops = { 0 };

/* The first line of /proc/self/uid_map as "inside,outside,count", or
 * "none". */
static void uid_map(char *out, size_t cap)
{
	unsigned long a, b, c;
	FILE *f = fopen("/proc/self/uid_map", "r");

	snprintf(out, cap, "none");
	if (!f)
		return;
	if (fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3)
		snprintf(out, cap, "%lu,%lu,%lu", a, b, c);
	fclose(f);
}

/* Whether /proc/self/cmdline holds text. */
static int cmdline_has(const char *text)
{
	char buf[16384];
	size_t n, i;
	FILE *f = fopen("/proc/self/cmdline", "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	for (i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = '\n';
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/* "dir/name" into out, or "" when it does not fit. */
static void join(char *out, size_t cap, const char *dir, const char *name)
{
	if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
		out[0] = '\0';
}

__attribute__((constructor)) static void confine_look(void)
{
	const char *record = getenv("SHIM_CONFINE_RECORD");
	const char *victim = getenv("SHIM_CONFINE_VICTIM");
	const char *tmp = getenv("TMPDIR");
	char ns[128] = "", map[96], folder[PATH_MAX], p[PATH_MAX + 32], *slash;
	ssize_t n;
	int plant = EINVAL, argv = -1;
	FILE *f;

	if (!record || !victim || !tmp)
		return;
	n = readlink("/proc/self/ns/user", ns, sizeof ns - 1);
	ns[n > 0 ? n : 0] = '\0';
	uid_map(map, sizeof map);
	snprintf(folder, sizeof folder, "%s", tmp);
	if ((slash = strrchr(folder, '/')) && slash != folder) {
		*slash = '\0';
		argv = cmdline_has(folder);
		join(p, sizeof p, folder, "planted");
		plant = symlink(victim, p) == 0 ? 0 : errno;
		join(p, sizeof p, folder, "out/escape");
		(void)symlink(victim, p);
	}
	join(p, sizeof p, tmp, "escape");
	(void)symlink(victim, p);
	join(p, sizeof p, tmp, "deep");
	(void)mkdir(p, 0700);
	join(p, sizeof p, tmp, "deep/escape");
	(void)symlink(victim, p);
	if (!(f = fopen(record, "a")))
		return;
	fprintf(f, "uid=%ld userns=%s map=%s dumpable=%d argv=%d plant=%d\n",
		(long)getuid(), ns, map, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), argv, plant);
	fclose(f);
}
