/* A growable NULL-terminated vector of strings, for argv and lists of
 * options: pushed to, never counted by hand. The vector owns its strings. */
#ifndef QUAL_PROTO_STRV_H
#define QUAL_PROTO_STRV_H

#include <stddef.h>

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

#endif
