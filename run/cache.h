/* The artifact cache: successful compiles kept on disk by content, so that a
 * compiler library qualified before (a baseline) costs no compile the next
 * time it compiles the same source for the same target with the same
 * options.
 *
 * An entry is the folder DIR/<first 2 hex digits of its key>/<key>, holding
 * "code" (the code object as the compiler returned it) and "meta.json" (its
 * code_sha256, code_size, resources, log, log_size, log_truncated,
 * compile_ms, and the key itself). It is built in a temporary folder beside
 * it (each file written and fsynced, meta last), then renamed into place in
 * one step, so that a reader, another qual-run included, sees the whole
 * entry or none; of two writers of one key the first rename wins and the
 * second's folder is removed. On use the code is checked against its own
 * digest in the meta and the meta's key against the key wanted: an entry
 * that fails either (or whose meta is malformed) is a miss, removed, with
 * one warning per cache; never an error. An entry that cannot be read (a
 * file gone while another process trims, no descriptor or memory left) is
 * a plain miss, left as it is. The folder's mtime is the entry's last
 * use (set on a hit), by which cache_trim() evicts the least recently used.
 *
 * One struct cache is used by one thread at a time; processes share the
 * folder. */
#ifndef QUAL_CACHE_H
#define QUAL_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "common/sha256.h"
#include "compile/rtc.h"

/* The version tag at the head of every key: a change of what an entry
 * holds or of how keys are made takes a new tag. */
#define CACHE_KEY_TAG "qual-artifact-2"

/* The default bound on a cache's size, MiB (qual-run --cache-max-mib). */
#define CACHE_DEFAULT_MAX_MIB 4096

struct cache {
	char dir[PATH_MAX];
	size_t max_bytes;   /* cache_trim()'s bound */
	size_t log_cap;     /* bytes of log kept (rtc_limits' log_cap) */
	FILE *warn;         /* where the one warning goes (may be NULL) */
	bool warned;
};

/* What a compile's key is made of: every input that decides its output. */
struct cache_key_in {
	const char *compiler_sha256; /* of the library's bytes (rtc_identity) */
	const char *abi;             /* "nvrtc" or "hiprtc" */
	const char *arch;            /* the target compiled for */
	const char *program_name;
	const char *source;          /* the exact full source */
	const char *const *options;
	int noptions;
	/* What else takes part in the compile: the library's folder, whose
	 * siblings the child loads (its folder is first on LD_LIBRARY_PATH:
	 * libnvrtc-builtins, hiprtc's libamd_comgr), as cache_dir_fingerprint()
	 * gives it, and the SHA-256 of the qual-compile helper that compiles
	 * and parses the resources (its own options, -O3 -Xptxas=-v among
	 * them). NULL is "". */
	const char *libdir_fingerprint;
	const char *helper_sha256;
};

/* The key: SHA-256 over CACHE_KEY_TAG, QUAL_VERSION and the fields of in in
 * that order, each followed by a NUL, the options one by one. */
void cache_key(const struct cache_key_in *in, char key[SHA256_HEX_SIZE]);

/* A fingerprint of folder dir's entries: SHA-256 over the sorted names of
 * every entry with its size, mtime (ns) and inode number (lstat), into hex.
 * Cheap and conservative: any change in the folder changes it. Returns 0,
 * or -1 (hex "") when the folder cannot be read. */
int cache_dir_fingerprint(const char *dir, char hex[SHA256_HEX_SIZE]);

/* Makes dir (and its parents) if needed and checks that files can be made
 * in it. Returns 0 with c ready, or QUAL_EIO with msg ("cannot use artifact
 * cache '/x': ..."); the caller then runs without a cache. */
int cache_open(struct cache *c, const char *dir, size_t max_bytes, size_t log_cap,
	       FILE *warn, struct qual_msg *msg);

/* Looks key up. A hit: true, with out filled as rtc_compile() would have
 * (status 0, a new code buffer and log: rtc_result_release()) and the entry's
 * mtime set to now. A miss, an entry that cannot be read (left as it is),
 * or a bad entry (then removed and warned about once): false, out zeroed. */
bool cache_lookup(struct cache *c, const char *key, struct rtc_result *out);

/* Stores r (status 0 only; any other is not stored: QUAL_EINVAL) under key.
 * An entry already there (another writer's) is kept. Returns 0 or a negative
 * code with msg. */
int cache_store(struct cache *c, const char *key, const struct rtc_result *r,
		struct qual_msg *msg);

/* Removes the least recently used entries (by mtime, oldest first) until
 * the entries take at most c->max_bytes, and temporary folders that a
 * writer left more than an hour ago. */
void cache_trim(struct cache *c);

/* What is kept beside an entry's code: a file NAME ([a-z0-9-], at most 64
 * characters) in the entry's folder, written whole (fs_write_atomic) only
 * while the entry is there, read back (at most cap bytes) as long as it is,
 * and evicted with it (its bytes count toward the bound). The code lines'
 * analysis of an artifact (run/explain.c). cache_extra_read() returns 0 with
 * a new NUL-terminated buffer, or a negative code (a miss); cache_extra_write()
 * returns 0, or a negative code (nothing written: no such entry). */
int cache_extra_read(const struct cache *c, const char *key, const char *name, size_t cap,
		     char **out, size_t *len);
int cache_extra_write(const struct cache *c, const char *key, const char *name,
		      const char *data, size_t len);

/* The default folder: $XDG_CACHE_HOME/qual/artifacts, else
 * $HOME/.cache/qual/artifacts, into out (cap bytes). False when neither is
 * set (no cache). */
bool cache_default_dir(char *out, size_t cap);

#endif
