/* shim_pinforge: forwards every call, and in its constructor, as a hostile
 * candidate would from the moment it is loaded, attacks the report of the
 * submit check that loads it (qual-compile identify): it finds its report
 * folder (the QUAL_COMPILE_OUT environment variable qual-compile reads, else
 * the --out argument in /proc/self/cmdline) and replaces the pin report
 * there (pin.txt: the hash the identify child of an older quald wrote
 * before it loaded the library, which quald then believed):
 *
 *   SHIM_PINFORGE_FIFO 1  by a FIFO, so that a reader that opens it
 *                         blocking waits for ever;
 *   SHIM_PINFORGE_FIFO 0  by a report of a fake sha256 (all 'f') with the
 *                         real device and inode, so that a quald that
 *                         believes it checks the quarantine by, and stores,
 *                         a hash that is not the library's.
 *
 * Every time its constructor runs, in any process, it appends one line
 * naming the command (qual-compile's first argument: "identify" or
 * "compile") to the file $SHIM_PINFORGE_RECORD (nothing when unset), so
 * that a test can tell whether it was loaded at all. tests/pinforge.cmake
 * builds both variants; tests/tools/pinforge_test.py drives them. */
#include "shim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SHIM_PINFORGE_FIFO
#error "SHIM_PINFORGE_FIFO must be 0 or 1"
#endif

const struct shim_ops shim_ops = { 0 };

/* The 64 hex digits of the hash the forged report claims. */
#define SHIM_PINFORGE_SHA \
	"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

/* This process's arguments, NUL-separated, into buf; their bytes. */
static size_t cmdline_read(char *buf, size_t cap)
{
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return (size_t)n;
}

/* The n-th argument (0: the program), or NULL. */
static const char *arg_at(const char *buf, size_t len, int n)
{
	size_t off = 0;

	while (n-- > 0) {
		off += strlen(buf + off) + 1;
		if (off >= len)
			return NULL;
	}
	return off < len ? buf + off : NULL;
}

static void record(const char *what)
{
	const char *path = getenv("SHIM_PINFORGE_RECORD");
	char line[128];
	int fd, n;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof line, "%s\n", what);
	if (write(fd, line, (size_t)n) < 0) {
		/* A record that cannot be written: the test sees none. */
	}
	close(fd);
}

/* The device and inode the report claims: the real pin report's when there
 * is one (an older quald's child wrote it before loading us), else the
 * library's open file (stdin, --lib-fd 0). */
static void ids_of(const char *pin, unsigned long long *dev, unsigned long long *ino)
{
	char text[512], *p;
	struct stat st;
	ssize_t n;
	int fd = open(pin, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);

	*dev = *ino = 0;
	if (fd >= 0) {
		n = read(fd, text, sizeof text - 1);
		close(fd);
		text[n > 0 ? n : 0] = '\0';
		if ((p = strstr(text, "dev=")))
			*dev = strtoull(p + 4, NULL, 10);
		if ((p = strstr(text, "ino=")))
			*ino = strtoull(p + 4, NULL, 10);
	}
	if (!*ino && fstat(0, &st) == 0) {
		*dev = (unsigned long long)st.st_dev;
		*ino = (unsigned long long)st.st_ino;
	}
}

__attribute__((constructor)) static void pinforge(void)
{
	char args[8192], pin[4096], tmp[4200], text[256];
	const char *cmd, *out = getenv("QUAL_COMPILE_OUT");
	size_t len = cmdline_read(args, sizeof args);
	unsigned long long dev, ino;
	int i, fd, n;

	cmd = arg_at(args, len, 1);
	record(cmd ? cmd : "?");
	if (!cmd || strcmp(cmd, "identify"))
		return;
	for (i = 2; (!out || !*out) && arg_at(args, len, i); i++)
		if (!strcmp(arg_at(args, len, i), "--out"))
			out = arg_at(args, len, i + 1);
	if (!out || !*out)
		return;
	snprintf(pin, sizeof pin, "%s/pin.txt", out);
	if (SHIM_PINFORGE_FIFO) {
		unlink(pin);
		if (mkfifo(pin, 0600) == 0)
			record("fifo");
		return;
	}
	ids_of(pin, &dev, &ino);
	n = snprintf(text, sizeof text, "sha256=%s\ndev=%llu\nino=%llu\nsize=1\nend=1\n",
		     SHIM_PINFORGE_SHA, dev, ino);
	snprintf(tmp, sizeof tmp, "%s/pin.forged", out);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)n) == n && rename(tmp, pin) == 0)
		record("forged");
	close(fd);
}
