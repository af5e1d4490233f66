/* A growable NULL-terminated vector of strings, for argv and lists of
 * options: pushed to, never counted by hand. The vector owns its strings. */
#ifndef QUAL_PROTO_STRV_H
#define QUAL_PROTO_STRV_H

#include <stddef.h>

#include "common/err.h"

struct strv {
	char **v;     /* NULL-terminated; never NULL after strv_init */
	size_t n;     /* strings before the NULL */
	size_t alloc;
};

/* An empty vector in caller's storage. */
void strv_init(struct strv *sv);

/* Frees every string and the array; sv is empty again afterwards. */
void strv_release(struct strv *sv);

/* Appends a copy of s. */
void strv_push(struct strv *sv, const char *s);

/* Appends a string made from fmt (printf-style). */
void strv_pushf(struct strv *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends copies of each of a NULL-terminated list. */
void strv_pushv(struct strv *sv, const char *const *list);

/* Takes the array out of sv (the caller frees each string and the array, or
 * calls strv_free_array); sv is empty again afterwards. */
char **strv_detach(struct strv *sv);

/* Frees a NULL-terminated array of strings as strv_detach returns it. */
void strv_free_array(char **v);

/* Arguments that travel out of sight of /proc/PID/cmdline (which every
 * process may read): a process's arguments written to a descriptor or a
 * file that only it reads, each string followed by a NUL (the form of
 * cmdline itself). quald's workers and qual-run's compile children get
 * theirs so (docs/service.md, "Trust model"). */

/* The most bytes of arguments read so (a job's request is far smaller). */
#define STRV_NUL_MAX ((size_t)4 << 20)

/* v (NULL-terminated) as one new buffer of NUL-terminated strings; its
 * length in *len. */
char *strv_join_nul(const char *const *v, size_t *len);

/* Appends copies of the NUL-terminated strings in data (len bytes; a last
 * one without its NUL is taken whole). */
void strv_push_nul(struct strv *sv, const char *data, size_t len);

/* Reads fd to its end (at most cap bytes) and appends its strings as
 * strv_push_nul() does. Returns 0, or QUAL_EIO / QUAL_ELIMIT with msg
 * naming what (a descriptor's number). */
int strv_read_nul_fd(struct strv *sv, int fd, size_t cap, struct qual_msg *msg);

/* v[1..] (NULL-terminated) as strv_join_nul() writes them, on a new sealed
 * memfd (close-on-exec, at offset 0): a child's descriptor to read its
 * arguments from (`PROGRAM --args-fd 0` with the memfd as its stdin).
 * Returns the descriptor, or QUAL_EIO with msg. */
int strv_args_memfd(const char *const *v, struct qual_msg *msg);

/* A program's side of it: when its command line is exactly PROGRAM
 * --args-fd N, reads the arguments on N (at most STRV_NUL_MAX bytes) into
 * keep after argv[0], closes N (0 becomes /dev/null) and points *argc and
 * *argv at keep's. Returns 0 (also when there is no --args-fd first), or
 * QUAL_EINVAL / QUAL_EIO / QUAL_ELIMIT with msg. */
int strv_args_from_fd(int *argc, char ***argv, struct strv *keep, struct qual_msg *msg);

#endif
