/* The writer thread (writer.h). One queue of requests, taken by the thread
 * in order; one list of finished requests, handed back to the loop through
 * a uv_async_t, whose callback runs them in order. Only the thread touches a
 * log's descriptor; only the loop runs callbacks and frees. */
#include "daemon/writer.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/xalloc.h"
#include "daemon/oplog.h"
#include "proto/line.h"

enum op_kind { OP_CREATE, OP_STATE, OP_APPEND, OP_CLOSE, OP_FILE, OP_REMOVE };

struct op {
	struct op *next;
	enum op_kind kind;
	char id[STORE_ID_MAX];
	json_t *request, *state;   /* OP_CREATE, OP_STATE: our copies */
	struct writer_log *log;    /* OP_APPEND, OP_CLOSE */
	char *line;                /* OP_FILE: a copy; OP_APPEND: text's */
	struct line *text;         /* OP_APPEND: a reference to the line,
				    * taken and dropped on the loop; the
				    * thread reads its bytes only */
	char *path;                /* OP_FILE: the file replaced */
	mode_t mode;               /* OP_FILE */
	size_t len;
	bool sync;
	long tag;
	writer_done_fn cb;
	void *ctx;
	int status;                /* set by the thread */
	struct qual_msg msg;
};

struct writer_log {
	struct writer *w;
	char id[STORE_ID_MAX];
	char path[PATH_MAX];
	int fd;                    /* the thread's; -1 until the first append */
};

struct writer {
	uv_loop_t *loop;
	struct store *store;
	uv_async_t async;          /* the thread's "some are done" */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t idle;       /* the thread has nothing left to do */
	bool busy;                 /* under lock: an op is being carried out */
	struct op *todo, **todo_tail;  /* under lock */
	struct op *done, **done_tail;  /* under lock */
	bool stopping;             /* under lock: end once todo is empty */
	bool ended;                /* under lock: the thread has returned */
	long pending;              /* the loop's count of requests in flight */
	bool joined;
	void (*closed)(void *ctx);
	void *closed_ctx;
};

static void op_run(struct writer *w, struct op *op)
{
	struct writer_log *l = op->log;

	op->status = 0;
	store_fatal_subject(op->id);
	switch (op->kind) {
	case OP_CREATE:
		op->status = store_job_create(w->store, op->id, op->request, op->state,
					      &op->msg);
		break;
	case OP_STATE:
		op->status = store_state_write(w->store, op->id, op->state, &op->msg);
		break;
	case OP_APPEND:
		if (l->fd < 0)
			op->status = store_log_open(w->store, l->id, &l->fd, &op->msg);
		if (op->status == 0)
			op->status = store_log_append(l->fd, l->path, op->line, op->len,
						      op->sync, &op->msg);
		break;
	case OP_REMOVE:
		op->status = store_job_remove(w->store, op->id, &op->msg);
		break;
	case OP_FILE:
		op->status = fs_write_atomic(op->path, op->line, op->len, op->mode, NULL,
					     &op->msg);
		break;
	case OP_CLOSE:
		if (l->fd >= 0) {
			op->status = store_log_sync(l->fd, l->path, &op->msg);
			close(l->fd);
			l->fd = -1;
		}
		break;
	}
	store_fatal_subject(NULL);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct op *op;

	/* A fatal failure here is raised on the loop (store.h). */
	store_fatal_defer_here();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->todo && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		if (!w->todo)
			break;
		op = w->todo;
		w->todo = op->next;
		if (!w->todo)
			w->todo_tail = &w->todo;
		w->busy = true;
		pthread_mutex_unlock(&w->lock);

		op_run(w, op);

		pthread_mutex_lock(&w->lock);
		op->next = NULL;
		*w->done_tail = op;
		w->done_tail = &op->next;
		w->busy = false;
		if (!w->todo)
			pthread_cond_broadcast(&w->idle);
		uv_async_send(&w->async);
	}
	w->ended = true;
	pthread_mutex_unlock(&w->lock);
	uv_async_send(&w->async);
	return NULL;
}

static void op_free(struct op *op)
{
	json_decref(op->request);
	json_decref(op->state);
	if (op->text)
		line_unref(op->text);
	else
		free(op->line);
	free(op->path);
	if (op->kind == OP_CLOSE)
		free(op->log);
	free(op);
}

static void writer_closed(uv_handle_t *h)
{
	struct writer *w = h->data;
	void (*done)(void *) = w->closed;
	void *ctx = w->closed_ctx;

	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->idle);
	free(w);
	if (done)
		done(ctx);
}

/* The loop's side: the finished requests' callbacks, in order. */
static void writer_async(uv_async_t *a)
{
	struct writer *w = a->data;
	struct op *list, *op;
	bool ended;

	pthread_mutex_lock(&w->lock);
	list = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	pthread_mutex_unlock(&w->lock);
	while ((op = list)) {
		list = op->next;
		w->pending--;
		if (op->status < 0)
			store_fatal_raise();
		if (op->cb) {
			struct writer_done d = { op->status,
						 op->status < 0 ? op->msg.text : NULL,
						 op->text, op->tag };
			op->cb(op->ctx, &d);
		}
		op_free(op);
	}
	pthread_mutex_lock(&w->lock);
	ended = w->ended && !w->done;
	pthread_mutex_unlock(&w->lock);
	if (ended && !w->joined) {
		w->joined = true;
		pthread_join(w->thread, NULL);
		uv_close((uv_handle_t *)&w->async, writer_closed);
	}
}

int writer_start(uv_loop_t *loop, struct store *s, struct writer **out,
		 struct qual_msg *msg)
{
	struct writer *w = xcalloc(1, sizeof *w);
	int rc;

	*out = NULL;
	w->loop = loop;
	w->store = s;
	w->todo_tail = &w->todo;
	w->done_tail = &w->done;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	if ((rc = uv_async_init(loop, &w->async, writer_async)) < 0) {
		free(w);
		return qual_fail(msg, QUAL_EIO, "cannot start the state writer: %s",
				 uv_strerror(rc));
	}
	w->async.data = w;
	if ((rc = pthread_create(&w->thread, NULL, writer_main, w)) != 0) {
		w->joined = true;
		uv_close((uv_handle_t *)&w->async, writer_closed);
		return qual_fail(msg, QUAL_EIO, "cannot start the state writer: %s",
				 strerror(rc));
	}
	*out = w;
	return 0;
}

static struct op *op_new(enum op_kind kind, const char *id, writer_done_fn cb,
			 void *ctx)
{
	struct op *op = xcalloc(1, sizeof *op);

	op->kind = kind;
	snprintf(op->id, sizeof op->id, "%s", id);
	op->cb = cb;
	op->ctx = ctx;
	return op;
}

static void op_push(struct writer *w, struct op *op)
{
	w->pending++;
	pthread_mutex_lock(&w->lock);
	*w->todo_tail = op;
	w->todo_tail = &op->next;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

/* A copy the thread alone holds: jansson's objects are not shared across
 * threads. */
static json_t *copy(json_t *o)
{
	json_t *c = json_deep_copy(o);

	if (!c) {
		oplog(LOG_ERR, "cannot copy a json object");
		abort();
	}
	return c;
}

void writer_job_create(struct writer *w, const char *id, json_t *request,
		       json_t *state, writer_done_fn cb, void *ctx)
{
	struct op *op = op_new(OP_CREATE, id, cb, ctx);

	op->request = copy(request);
	op->state = copy(state);
	op_push(w, op);
}

void writer_state_write(struct writer *w, const char *id, json_t *state,
			writer_done_fn cb, void *ctx)
{
	struct op *op = op_new(OP_STATE, id, cb, ctx);

	op->state = copy(state);
	op_push(w, op);
}

void writer_job_remove(struct writer *w, const char *id, writer_done_fn cb, void *ctx)
{
	op_push(w, op_new(OP_REMOVE, id, cb, ctx));
}

void writer_file_replace(struct writer *w, const char *path, const char *text, size_t len,
			 mode_t mode, writer_done_fn cb, void *ctx)
{
	struct op *op = op_new(OP_FILE, "", cb, ctx);

	op->path = xstrdup(path);
	op->line = xmalloc(len + 1);
	memcpy(op->line, text, len);
	op->line[len] = '\0';
	op->len = len;
	op->mode = mode;
	op_push(w, op);
}

struct writer_log *writer_log_new(struct writer *w, const char *id)
{
	struct writer_log *l = xcalloc(1, sizeof *l);

	l->w = w;
	l->fd = -1;
	snprintf(l->id, sizeof l->id, "%s", id);
	if (store_log_path(w->store, id, l->path, sizeof l->path, NULL) < 0)
		snprintf(l->path, sizeof l->path, "the log of job '%s'", id);
	return l;
}

void writer_log_append(struct writer_log *l, struct line *line,
		       bool sync, long tag, writer_done_fn cb, void *ctx)
{
	struct op *op = op_new(OP_APPEND, l->id, cb, ctx);

	op->log = l;
	op->text = line_ref(line);
	op->line = line->text;
	op->len = line->len;
	op->sync = sync;
	op->tag = tag;
	op_push(l->w, op);
}

void writer_log_close(struct writer_log *l)
{
	struct op *op;

	if (!l)
		return;
	op = op_new(OP_CLOSE, l->id, NULL, NULL);
	op->log = l;
	op_push(l->w, op);
}

void writer_wait(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->todo || w->busy)
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
	writer_async(&w->async);
}

long writer_pending(const struct writer *w)
{
	return w->pending;
}

void writer_close(struct writer *w, void (*done)(void *ctx), void *ctx)
{
	w->closed = done;
	w->closed_ctx = ctx;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}
