/* The state directory (store.h): job folders, atomic state files and
 * append-only logs. Durability follows the usual POSIX recipe: data is
 * fsync()ed before a rename makes it visible, and the folder holding a
 * renamed entry is fsync()ed after, so that after a crash a name either
 * points at complete, synced content or does not exist. */
#include "store.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "xalloc.h"

#define STORE_JOBS "jobs"
#define STORE_REQUEST "request.json"
#define STORE_STATE "state.json"
#define STORE_LOG "log.jsonl"
/* A state or request file is a few hundred bytes; anything near this is not
 * ours. */
#define STORE_JSON_MAX (4 << 20)

struct store {
	char *dir;
	char *jobs;  /* <dir>/jobs */
};

/* ---- paths and small helpers ---------------------------------------------- */

static int path_fmt(char *out, size_t cap, struct qual_msg *msg,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int path_fmt(char *out, size_t cap, struct qual_msg *msg,
		    const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return qual_fail(msg, QUAL_EINVAL, "path '%s...' is too long", out);
	return 0;
}

static int mkdir_p(const char *path, mode_t mode, struct qual_msg *msg)
{
	char buf[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof buf)
		return qual_fail(msg, QUAL_EINVAL, "path '%s' is too long", path);
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
					 strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", buf,
				 strerror(errno));
	return 0;
}

static int sync_path(const char *path, int flags, struct qual_msg *msg)
{
	int fd = open(path, flags | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", path,
				 strerror(errno));
	if (fsync(fd) < 0)
		rc = qual_fail(msg, QUAL_EIO, "cannot sync '%s': %s", path,
			       strerror(errno));
	close(fd);
	return rc;
}

static int sync_dir(const char *path, struct qual_msg *msg)
{
	return sync_path(path, O_RDONLY | O_DIRECTORY, msg);
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t put = write(fd, data, len);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -1;
		data += put;
		len -= (size_t)put;
	}
	return 0;
}

/* Writes data into a new file path (replacing any), synced. */
static int file_write_synced(const char *path, const char *data, size_t len,
			     struct qual_msg *msg)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	int e;

	if (fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", path,
				 strerror(errno));
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		e = errno;
		close(fd);
		return qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path,
				 strerror(e));
	}
	if (close(fd) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot write '%s': %s", path,
				 strerror(errno));
	return 0;
}

/* The object as one line of compact JSON with a newline (new string). */
static char *json_text(json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	size_t n;
	char *line;

	if (!text)
		return NULL;
	n = strlen(text);
	line = xmalloc(n + 2);
	memcpy(line, text, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	free(text);
	return line;
}

static int json_write_synced(const char *path, json_t *o, struct qual_msg *msg)
{
	char *text = json_text(o);
	int rc;

	if (!text)
		return qual_fail(msg, QUAL_EINVAL, "cannot encode '%s'", path);
	rc = file_write_synced(path, text, strlen(text), msg);
	free(text);
	return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void tree_remove(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- opening, ids, scanning ------------------------------------------------- */

int store_open(const char *dir, struct store **out, struct qual_msg *msg)
{
	struct store *s;
	char jobs[PATH_MAX];
	int rc;

	*out = NULL;
	if (!dir || !*dir)
		return qual_fail(msg, QUAL_EINVAL, "no state directory given");
	if ((rc = path_fmt(jobs, sizeof jobs, msg, "%s/%s", dir, STORE_JOBS)) ||
	    (rc = mkdir_p(jobs, 0750, msg)))
		return rc;
	s = xcalloc(1, sizeof *s);
	s->dir = xstrdup(dir);
	s->jobs = xstrdup(jobs);
	*out = s;
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s->jobs);
	free(s);
}

void store_id_format(long num, char *out, size_t cap)
{
	snprintf(out, cap, "j%06ld", num);
}

long store_id_parse(const char *id)
{
	const char *p;
	long num = 0;

	if (!id || id[0] != 'j')
		return -1;
	for (p = id + 1; *p; p++) {
		if (*p < '0' || *p > '9' || num > (LONG_MAX - 9) / 10)
			return -1;
		num = num * 10 + (*p - '0');
	}
	if (p - (id + 1) < 6 || num < 1)
		return -1;
	return num;
}

static int num_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

int store_scan(struct store *s, long **nums, int *n, struct qual_msg *msg)
{
	DIR *d;
	struct dirent *e;
	long *v = NULL;
	int count = 0, cap = 0;

	*nums = NULL;
	*n = 0;
	d = opendir(s->jobs);
	if (!d)
		return qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", s->jobs,
				 strerror(errno));
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		long num;
		size_t len = strlen(e->d_name);

		/* ".<id>.new": a job that was being created when the daemon
		 * died; it was never acknowledged. */
		if (e->d_name[0] == '.' && len > 5 &&
		    !strcmp(e->d_name + len - 4, ".new")) {
			if (!path_fmt(path, sizeof path, NULL, "%s/%s", s->jobs, e->d_name))
				tree_remove(path);
			continue;
		}
		num = store_id_parse(e->d_name);
		if (num < 0)
			continue;
		if (count == cap) {
			cap = cap ? 2 * cap : 64;
			v = xrealloc(v, (size_t)cap * sizeof *v);
		}
		v[count++] = num;
	}
	closedir(d);
	if (count)
		qsort(v, (size_t)count, sizeof *v, num_cmp);
	*nums = v;
	*n = count;
	return 0;
}

/* ---- job files ---------------------------------------------------------------- */

int store_job_create(struct store *s, const char *id, json_t *request,
		     json_t *state, struct qual_msg *msg)
{
	char tmp[PATH_MAX], final[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int rc;

	if (store_id_parse(id) < 0)
		return qual_fail(msg, QUAL_EINVAL, "bad job id '%s'", id);
	if ((rc = path_fmt(tmp, sizeof tmp, msg, "%s/.%s.new", s->jobs, id)) ||
	    (rc = path_fmt(final, sizeof final, msg, "%s/%s", s->jobs, id)))
		return rc;
	if (lstat(final, &st) == 0)
		return qual_fail(msg, QUAL_EINVAL, "job '%s' exists already in '%s'", id,
				 s->jobs);
	tree_remove(tmp);
	if (mkdir(tmp, 0750) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot create '%s': %s", tmp,
				 strerror(errno));
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_REQUEST)) ||
	    (rc = json_write_synced(path, request, msg)) ||
	    (rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_STATE)) ||
	    (rc = json_write_synced(path, state, msg)) ||
	    (rc = path_fmt(path, sizeof path, msg, "%s/%s", tmp, STORE_LOG)) ||
	    (rc = file_write_synced(path, "", 0, msg)) ||
	    (rc = sync_dir(tmp, msg)))
		goto fail;
	if (rename(tmp, final) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot rename '%s' to '%s': %s", tmp,
			       final, strerror(errno));
		goto fail;
	}
	return sync_dir(s->jobs, msg);
fail:
	tree_remove(tmp);
	return rc;
}

int store_state_write(struct store *s, const char *id, json_t *state,
		      struct qual_msg *msg)
{
	char dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
	int rc;

	if ((rc = path_fmt(dir, sizeof dir, msg, "%s/%s", s->jobs, id)) ||
	    (rc = path_fmt(tmp, sizeof tmp, msg, "%s/%s.tmp", dir, STORE_STATE)) ||
	    (rc = path_fmt(final, sizeof final, msg, "%s/%s", dir, STORE_STATE)) ||
	    (rc = json_write_synced(tmp, state, msg)))
		return rc;
	if (rename(tmp, final) < 0) {
		rc = qual_fail(msg, QUAL_EIO, "cannot rename '%s': %s", tmp,
			       strerror(errno));
		unlink(tmp);
		return rc;
	}
	return sync_dir(dir, msg);
}

static int json_read(const char *path, json_t **out, struct qual_msg *msg)
{
	json_error_t err;
	struct stat st;

	*out = NULL;
	if (stat(path, &st) < 0)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	if (st.st_size > STORE_JSON_MAX)
		return qual_fail(msg, QUAL_ELIMIT, "'%s' is over %d bytes", path,
				 STORE_JSON_MAX);
	*out = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!*out)
		return qual_fail(msg, QUAL_EINVAL, "cannot read '%s': %s at line %d",
				 path, err.text, err.line);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return qual_fail(msg, QUAL_EINVAL, "cannot read '%s': not a json object",
				 path);
	}
	return 0;
}

int store_job_read(struct store *s, const char *id, json_t **request,
		   json_t **state, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int rc;

	if (request)
		*request = NULL;
	if (state)
		*state = NULL;
	if (request &&
	    ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
			    STORE_REQUEST)) ||
	     (rc = json_read(path, request, msg))))
		return rc;
	if (state &&
	    ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id,
			    STORE_STATE)) ||
	     (rc = json_read(path, state, msg)))) {
		if (request) {
			json_decref(*request);
			*request = NULL;
		}
		return rc;
	}
	return 0;
}

/* ---- logs --------------------------------------------------------------------- */

int store_log_open(struct store *s, const char *id, int *fd, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int rc;

	*fd = -1;
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (*fd < 0)
		return qual_fail(msg, QUAL_EIO, "cannot open '%s': %s", path,
				 strerror(errno));
	return 0;
}

int store_log_append(int fd, const char *line, size_t len, bool sync,
		     struct qual_msg *msg)
{
	struct iovec iov[2] = {
		{ (void *)line, len },
		{ "\n", 1 },
	};
	size_t left = len + 1;

	/* One writev for the line and its newline: O_APPEND makes it one
	 * append, so a reader of the file (a watch resuming) never sees half a
	 * line unless the disk itself fails. The loop only finishes a write
	 * the kernel cut short (a full disk). */
	while (left > 0) {
		ssize_t put = writev(fd, iov, 2);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return qual_fail(msg, QUAL_EIO, "cannot append to log: %s",
					 strerror(errno));
		left -= (size_t)put;
		for (int i = 0; i < 2 && put > 0; i++) {
			size_t take = (size_t)put < iov[i].iov_len ? (size_t)put
								  : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			put -= (ssize_t)take;
		}
	}
	return sync ? store_log_sync(fd, msg) : 0;
}

int store_log_sync(int fd, struct qual_msg *msg)
{
	if (fdatasync(fd) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot sync log: %s", strerror(errno));
	return 0;
}

int store_log_read(struct store *s, const char *id, store_line_fn fn,
		   void *ctx, struct store_log_info *info, struct qual_msg *msg)
{
	struct store_log_info local;
	char path[PATH_MAX];
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	FILE *f;
	int rc;

	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	f = fopen(path, "re");
	if (!f)
		return qual_fail(msg, errno == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot read '%s': %s", path, strerror(errno));
	while ((got = getline(&line, &cap, f)) > 0) {
		if (line[got - 1] != '\n') {
			info->torn_bytes = got;
			break;
		}
		line[got - 1] = '\0';
		info->lines++;
		info->good_bytes += got;
		if (fn && fn(ctx, line, (size_t)got - 1))
			break;
	}
	if (ferror(f))
		rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
			       strerror(errno));
	free(line);
	fclose(f);
	return rc;
}

int store_log_repair(struct store *s, const char *id,
		     const struct store_log_info *info, struct qual_msg *msg)
{
	char path[PATH_MAX];
	int rc;

	if (info->torn_bytes == 0)
		return 0;
	if ((rc = path_fmt(path, sizeof path, msg, "%s/%s/%s", s->jobs, id, STORE_LOG)))
		return rc;
	if (truncate(path, info->good_bytes) < 0)
		return qual_fail(msg, QUAL_EIO, "cannot truncate '%s': %s", path,
				 strerror(errno));
	return sync_path(path, O_WRONLY, msg);
}
