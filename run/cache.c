/* The artifact cache (cache.h). */
#include "run/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/text.h"
#include "common/xalloc.h"

#define CODE_FILE "code"
#define META_FILE "meta.json"
#define TMP_PREFIX ".tmp-"
/* A writer's temporary folder older than this was left by a writer that
 * died: a compile takes seconds, and a write of its entry milliseconds. */
#define STALE_TMP_S 3600
/* Room in a meta file beyond its log: the other fields take a few hundred
 * bytes; a log's JSON escapes take at most 6 bytes per byte. */
#define META_OVERHEAD 65536

void cache_key(const struct cache_key_in *in, char key[SHA256_HEX_SIZE])
{
	const char *fields[] = { CACHE_KEY_TAG, QUAL_VERSION, in->compiler_sha256, in->abi,
				 in->arch, in->program_name, in->source,
				 in->libdir_fingerprint ? in->libdir_fingerprint : "",
				 in->helper_sha256 ? in->helper_sha256 : "" };
	size_t n = 0, nf = sizeof fields / sizeof fields[0];
	char *text, *p;

	for (size_t i = 0; i < nf; i++)
		n += strlen(fields[i]) + 1;
	for (int i = 0; i < in->noptions; i++)
		n += strlen(in->options[i]) + 1;
	p = text = xmalloc(n);
	for (size_t i = 0; i < nf; i++)
		p = stpcpy(p, fields[i]) + 1;
	for (int i = 0; i < in->noptions; i++)
		p = stpcpy(p, in->options[i]) + 1;
	if (sha256_hash_buffer(text, n, key, NULL) < 0)
		key[0] = '\0';
	free(text);
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cache_dir_fingerprint(const char *dir, char hex[SHA256_HEX_SIZE])
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, *text = NULL;
	size_t n = 0, cap = 0, len = 0, tcap = 0;
	int rc = 0;

	hex[0] = '\0';
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			XGROW(names, n + 1, cap);
			names[n++] = xstrdup(e->d_name);
		}
	}
	closedir(d);
	qsort(names, n, sizeof *names, name_order);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX], line[PATH_MAX + 128];
		struct stat st;
		int k;

		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path ||
		    lstat(path, &st) < 0)
			memset(&st, 0, sizeof st);
		k = snprintf(line, sizeof line, "%s%c%lld %lld.%09ld %llu", names[i], 0,
			     (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			     st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
		XGROW(text, len + (size_t)k + 1, tcap);
		memcpy(text + len, line, (size_t)k + 1);
		len += (size_t)k + 1;
		free(names[i]);
	}
	free(names);
	if (sha256_hash_buffer(text ? text : "", len, hex, NULL) < 0) {
		hex[0] = '\0';
		rc = -1;
	}
	free(text);
	return rc;
}

bool cache_default_dir(char *out, size_t cap)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	/* The XDG rule: a relative $XDG_CACHE_HOME is to be ignored. */
	if (xdg && xdg[0] == '/')
		n = snprintf(out, cap, "%s/qual/artifacts", xdg);
	else if (home && home[0])
		n = snprintf(out, cap, "%s/.cache/qual/artifacts", home);
	else
		return false;
	return n > 0 && (size_t)n < cap;
}

int cache_open(struct cache *c, const char *dir, size_t max_bytes, size_t log_cap,
	       FILE *warn, struct qual_msg *msg)
{
	struct qual_msg m;

	memset(c, 0, sizeof *c);
	if ((size_t)snprintf(c->dir, sizeof c->dir, "%s", dir) >= sizeof c->dir)
		return qual_fail(msg, QUAL_EIO, "cannot use artifact cache '%s': the path "
				 "is too long", dir);
	if (fs_mkdir_p(dir, 0755, &m) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot use artifact cache '%s': %s", dir,
				 m.text);
	if (access(dir, W_OK | X_OK) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot use artifact cache '%s': %s", dir,
				 strerror(errno));
	c->max_bytes = max_bytes;
	c->log_cap = log_cap;
	c->warn = warn;
	return 0;
}

/* "DIR/ab" and "DIR/ab/KEY" for key. False when key is no key. */
static bool entry_paths(const struct cache *c, const char *key, char *shard, char *entry)
{
	if (strlen(key) != SHA256_HEX_SIZE - 1 || strspn(key, "0123456789abcdef") !=
	    SHA256_HEX_SIZE - 1)
		return false;
	return (size_t)snprintf(shard, PATH_MAX, "%s/%.2s", c->dir, key) < PATH_MAX &&
	       (size_t)snprintf(entry, PATH_MAX, "%s/%s", shard, key) < PATH_MAX;
}

/* A bad entry: removed, and said once per cache. */
static void entry_bad(struct cache *c, const char *entry, const char *why)
{
	if (c->warn && !c->warned)
		fprintf(c->warn, "qual-run: artifact cache entry '%s' is bad (%s): removed, "
			"compiling again\n", entry, why);
	c->warned = true;
	fs_rm_tree(entry);
}

static int json_int_or(json_t *o, const char *name, int dflt)
{
	json_t *v = json_object_get(o, name);

	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* What cache_lookup() says of an entry it could not read (a file gone
 * while another process trims, no descriptor or memory left): a plain
 * miss, the entry left as it is. */
static const char unreadable[] = "cannot be read";

/* Fills out from the meta j and the code at code_path; NULL, unreadable, or
 * why the entry is bad. */
static const char *entry_read(const struct cache *c, json_t *j, const char *key,
			      const char *code_path, struct rtc_result *out)
{
	json_t *res = json_object_get(j, "resources");
	const char *k = json_string_value(json_object_get(j, "key"));
	const char *digest = json_string_value(json_object_get(j, "code_sha256"));
	const char *log = json_string_value(json_object_get(j, "log"));
	json_t *size = json_object_get(j, "code_size"), *log_size = json_object_get(j, "log_size");
	char hex[SHA256_HEX_SIZE];
	size_t got, n;

	if (!k || strcmp(k, key) != 0)
		return "its meta holds another key";
	if (!digest || strlen(digest) != SHA256_HEX_SIZE - 1 || !json_is_integer(size) ||
	    json_integer_value(size) <= 0 || (size_t)json_integer_value(size) > RTC_OUTPUT_LIMIT ||
	    !log || !json_is_integer(log_size) || !json_is_object(res))
		return "its meta is incomplete";
	n = (size_t)json_integer_value(size);
	if (fs_read_capped(code_path, n + 1, (char **)&out->code, &got, NULL) < 0)
		return unreadable;
	if (got != n)
		return "its code has another size than its meta says";
	if (sha256_hash_buffer(out->code, got, hex, NULL) < 0 || strcmp(hex, digest) != 0)
		return "its code does not match its digest";
	out->code_size = got;
	memcpy(out->code_sha256, hex, sizeof hex);
	out->log_size = (size_t)json_integer_value(log_size);
	out->log = xstrdup(log);
	/* Capped as a compile of this run would have been. */
	if (strlen(out->log) > c->log_cap)
		out->log[c->log_cap] = '\0';
	out->log_truncated = json_is_true(json_object_get(j, "log_truncated")) ||
			     out->log_size > strlen(out->log);
	out->compile_ms = json_real_value(json_object_get(j, "compile_ms"));
	out->res.registers = json_int_or(res, "registers", -1);
	out->res.sgprs = json_int_or(res, "sgprs", -1);
	out->res.spill_stores = json_int_or(res, "spill_stores", -1);
	out->res.spill_loads = json_int_or(res, "spill_loads", -1);
	out->res.stack_bytes = json_int_or(res, "stack_bytes", -1);
	out->res.shared_bytes = json_int_or(res, "shared_bytes", -1);
	return NULL;
}

bool cache_lookup(struct cache *c, const char *key, struct rtc_result *out)
{
	char shard[PATH_MAX], entry[PATH_MAX], path[PATH_MAX];
	const char *why = NULL;
	struct stat st;
	json_error_t je;
	char *text = NULL;
	size_t size;
	json_t *j = NULL;

	memset(out, 0, sizeof *out);
	if (!entry_paths(c, key, shard, entry) || lstat(entry, &st) < 0)
		return false;
	if (!S_ISDIR(st.st_mode))
		why = "not a folder";
	else if (snprintf(path, sizeof path, "%s/" META_FILE, entry) >= (int)sizeof path ||
		 fs_read_capped(path, 6 * c->log_cap + META_OVERHEAD, &text, &size, NULL) < 0)
		why = unreadable;
	else if (!(j = json_loadb(text, size, 0, &je)) || !json_is_object(j))
		why = "its meta is not a JSON object";
	else if (snprintf(path, sizeof path, "%s/" CODE_FILE, entry) >= (int)sizeof path)
		why = "its path is too long";
	else
		why = entry_read(c, j, key, path, out);
	free(text);
	json_decref(j);
	if (why) {
		rtc_result_release(out);
		memset(out, 0, sizeof *out);
		if (why != unreadable)
			entry_bad(c, entry, why);
		return false;
	}
	/* Its last use, for cache_trim(). */
	(void)utimensat(AT_FDCWD, entry, NULL, AT_SYMLINK_NOFOLLOW);
	return true;
}

static char *meta_text(const char *key, const struct rtc_result *r)
{
	json_t *j = json_object();
	char *text;

	json_object_set_new(j, "key", json_string(key));
	json_object_set_new(j, "code_sha256", json_string(r->code_sha256));
	json_object_set_new(j, "code_size", json_integer((json_int_t)r->code_size));
	json_object_set_new(j, "resources", json_pack(
		"{s:i,s:i,s:i,s:i,s:i,s:i}", "registers", r->res.registers, "sgprs",
		r->res.sgprs, "spill_stores", r->res.spill_stores, "spill_loads",
		r->res.spill_loads, "stack_bytes", r->res.stack_bytes, "shared_bytes",
		r->res.shared_bytes));
	json_object_set_new(j, "log", text_json_str(r->log ? r->log : ""));
	json_object_set_new(j, "log_size", json_integer((json_int_t)r->log_size));
	json_object_set_new(j, "log_truncated", json_boolean(r->log_truncated));
	json_object_set_new(j, "compile_ms", json_real(r->compile_ms));
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		abort();
	return text;
}

/* True when entry holds both of its files, as regular files. */
static bool entry_whole(const char *entry)
{
	static const char *const names[] = {META_FILE, CODE_FILE};
	char path[PATH_MAX];
	struct stat st;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (snprintf(path, sizeof path, "%s/%s", entry, names[i]) >= (int)sizeof path ||
		    lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			return false;
	return true;
}

int cache_store(struct cache *c, const char *key, const struct rtc_result *r,
		struct qual_msg *msg)
{
	char shard[PATH_MAX], entry[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
	char *meta = NULL;
	int rc, renamed;

	if (r->status != 0 || !r->code || r->code_size == 0)
		return qual_fail(msg, QUAL_EINVAL, "only a successful compile is cached");
	if (!entry_paths(c, key, shard, entry))
		return qual_fail(msg, QUAL_EINVAL, "bad artifact cache key '%s'", key);
	if (mkdir(shard, 0755) < 0 && errno != EEXIST)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", shard, strerror(errno));
	if ((size_t)snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "XXXXXX", shard) >= sizeof tmp)
		return qual_fail(msg, QUAL_EINVAL, "path '%s' is too long", shard);
	if (!mkdtemp(tmp))
		return qual_fail(msg, QUAL_EIO, "cannot create a folder in '%s': %s", shard,
				 strerror(errno));
	meta = meta_text(key, r);
	/* The code, then the meta, each on disk before the entry appears. */
	if ((rc = fs_path_join(path, sizeof path, tmp, CODE_FILE, msg)) ||
	    (rc = fs_write_synced(path, r->code, r->code_size, 0644, NULL, msg)) ||
	    (rc = fs_path_join(path, sizeof path, tmp, META_FILE, msg)) ||
	    (rc = fs_write_synced(path, meta, strlen(meta), 0644, NULL, msg)) ||
	    (rc = fs_sync_dir(tmp, msg)))
		goto out;
	if (chmod(tmp, 0755) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot chmod '%s': %s", tmp, strerror(errno));
		goto out;
	}
	renamed = rename(tmp, entry);
	if (renamed < 0 && (errno == ENOTEMPTY || errno == EEXIST) && !entry_whole(entry)) {
		/* What is there lacks a file (a removal that stopped halfway):
		 * a lookup would miss it for good, so ours takes its place. */
		fs_rm_tree(entry);
		renamed = rename(tmp, entry);
	}
	if (renamed < 0) {
		/* Another writer's entry is there: it stays, ours goes. */
		if (errno == ENOTEMPTY || errno == EEXIST)
			rc = 0;
		else
			rc = qual_fail(msg, QUAL_EIO, "cannot rename '%s' to '%s': %s", tmp,
				       entry, strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
	rc = fs_sync_dir(shard, msg);
out:
	if (tmp[0])
		fs_rm_tree(tmp);
	free(meta);
	return rc;
}

/* One entry seen by cache_trim(). */
struct seen {
	char path[PATH_MAX];
	struct timespec mtime;
	size_t bytes;
};

static int seen_older(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* The bytes of an entry's files: its code, its meta and what is kept
 * beside them (cache_extra_write()). */
static size_t entry_bytes(const char *entry)
{
	DIR *d = opendir(entry);
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    (size_t)snprintf(path, sizeof path, "%s/%s", entry, e->d_name) < sizeof path &&
		    lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			n += (size_t)st.st_size;
	closedir(d);
	return n;
}

static bool extra_path(const struct cache *c, const char *key, const char *name, char *path)
{
	char shard[PATH_MAX], entry[PATH_MAX];
	size_t n = strlen(name);

	return n > 0 && n <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
	       entry_paths(c, key, shard, entry) && entry_whole(entry) &&
	       (size_t)snprintf(path, PATH_MAX, "%s/%s", entry, name) < PATH_MAX;
}

int cache_extra_read(const struct cache *c, const char *key, const char *name, size_t cap,
		     char **out, size_t *len)
{
	char path[PATH_MAX];

	*out = NULL;
	if (!extra_path(c, key, name, path))
		return QUAL_ENOENT;
	return fs_read_capped_regular(path, cap, out, len, NULL);
}

int cache_extra_write(const struct cache *c, const char *key, const char *name,
		      const char *data, size_t len)
{
	char path[PATH_MAX];

	if (!extra_path(c, key, name, path))
		return QUAL_ENOENT;
	return fs_write_atomic(path, data, len, 0644, NULL, NULL);
}

/* Adds the entries of the shard folder to *all, removing stale temporaries. */
static void shard_scan(const char *shard, time_t now, struct seen **all, size_t *n,
		       size_t *cap, size_t *total)
{
	DIR *d = opendir(shard);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (size_t)snprintf(path, sizeof path, "%s/%s", shard, e->d_name) >= sizeof path ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (!strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (now - st.st_mtime > STALE_TMP_S)
				fs_rm_tree(path);
			continue;
		}
		if (strlen(e->d_name) != SHA256_HEX_SIZE - 1)
			continue;
		XGROW(*all, *n + 1, *cap);
		memcpy((*all)[*n].path, path, sizeof path);
		(*all)[*n].mtime = st.st_mtim;
		(*all)[*n].bytes = entry_bytes(path);
		*total += (*all)[*n].bytes;
		(*n)++;
	}
	closedir(d);
}

void cache_trim(struct cache *c)
{
	struct seen *all = NULL;
	size_t n = 0, cap = 0, total = 0;
	time_t now = time(NULL);
	DIR *d = opendir(c->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char shard[PATH_MAX];

		if (strlen(e->d_name) != 2 || strspn(e->d_name, "0123456789abcdef") != 2 ||
		    (size_t)snprintf(shard, sizeof shard, "%s/%s", c->dir, e->d_name) >=
		    sizeof shard)
			continue;
		shard_scan(shard, now, &all, &n, &cap, &total);
	}
	closedir(d);
	if (n)	/* an empty cache has no array: qsort's is never NULL */
		qsort(all, n, sizeof *all, seen_older);
	for (size_t i = 0; i < n && total > c->max_bytes; i++) {
		fs_rm_tree(all[i].path);
		total -= all[i].bytes;
	}
	free(all);
}
