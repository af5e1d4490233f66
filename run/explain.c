/* What the compilers made of each case (runner_internal.h): after the
 * compile phase, each compiled artifact disassembled (once per distinct
 * code, up to run->compile_jobs at once, each its own child), and one
 * "code" line per case whose two arms compiled: both arms' resources,
 * theoretical occupancy at the case's block size, instruction mix, and a
 * diff of the two normalised listings (docs/output.md, docs/explain.md). */
#include "run/runner_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/lines.h"
#include "common/sha256.h"
#include "common/textdiff.h"
#include "common/xalloc.h"
#include "compile/disasm.h"
#include "compile/occupancy.h"
#include "run/cache.h"

/* One distinct artifact to read. */
struct read {
	const struct compiled *e;
	char target[40];
	struct disasm_listing listing;
	int rc;
	struct qual_msg msg;
	bool kept;      /* read back from the artifact cache */
};

struct reads {
	struct run *run;
	const struct disasm_tool *tool;
	struct read *v;
	int n, next;
	pthread_mutex_t mu;
};

static void *reader(void *arg)
{
	struct reads *r = arg;

	for (;;) {
		struct read *x;

		pthread_mutex_lock(&r->mu);
		while (r->next < r->n && r->v[r->next].kept)
			r->next++;
		x = r->next < r->n ? &r->v[r->next++] : NULL;
		pthread_mutex_unlock(&r->mu);
		if (!x)
			return NULL;
		x->rc = disasm_run(r->tool, x->target, x->e->res.code, x->e->res.code_size,
				   r->run->cfg->limits.timeout_s < DISASM_TIMEOUT_S ?
				   r->run->cfg->limits.timeout_s : DISASM_TIMEOUT_S,
				   &x->listing, &x->msg);
	}
}

static void read_all(struct reads *r)
{
	int n = r->run->compile_jobs < r->n ? r->run->compile_jobs : r->n, started = 0;
	pthread_t *t = xcalloc((size_t)(n > 0 ? n : 1), sizeof *t);

	pthread_mutex_init(&r->mu, NULL);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[started], NULL, reader, r) == 0)
			started++;
	if (started == 0)
		reader(r);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&r->mu);
	free(t);
}

/* ---- the analysis kept in the artifact cache ------------------------------ */

/* An artifact's analysis is kept beside its code in the artifact cache
 * (cache_extra_write()), as
 *
 *     qual-explain 1
 *     INSTRUCTIONS COUNT_0 ... COUNT_7
 *     the normalised listing, a line each
 *
 * under a name that is the tool's (its name, version and this format's), so
 * that a baseline served from the cache is not disassembled again, and
 * another disassembler's reading is another file. */
#define KEEP_MAGIC "qual-explain 1\n"
#define KEEP_MAX ((size_t)32 << 20)

static void keep_name(const struct disasm_tool *t, char *out, size_t cap)
{
	char hex[SHA256_HEX_SIZE], text[sizeof t->name + sizeof t->version + 32];

	snprintf(text, sizeof text, "%s\n%s\n%s", t->name, t->version, KEEP_MAGIC);
	if (sha256_hash_buffer(text, strlen(text), hex, NULL) < 0)
		snprintf(hex, sizeof hex, "%s", "0");
	snprintf(out, cap, "explain-%.16s", hex);
}

static bool keep_parse(char *text, size_t len, struct disasm_listing *l)
{
	char *s = text, *end = text + len, *nl;
	size_t cap = 0;
	int used;

	memset(l, 0, sizeof *l);
	if (strncmp(s, KEEP_MAGIC, strlen(KEEP_MAGIC)))
		return false;
	s += strlen(KEEP_MAGIC);
	if (sscanf(s, "%ld%n", &l->instructions, &used) != 1)
		return false;
	s += used;
	for (int k = 0; k < DISASM_NCLASSES; k++) {
		if (sscanf(s, "%ld%n", &l->count[k], &used) != 1)
			return false;
		s += used;
	}
	if (*s++ != '\n')
		return false;
	for (; s < end; s = nl + 1) {
		if (!(nl = memchr(s, '\n', (size_t)(end - s))))
			break;
		XGROW(l->lines, l->nlines + 1, cap);
		l->lines[l->nlines++] = strndup(s, (size_t)(nl - s));
	}
	if (s != end || l->instructions <= 0) {
		disasm_listing_release(l);
		return false;
	}
	return true;
}

static void keep_write(const struct run *run, const char *name, const struct read *x)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "%s%ld", KEEP_MAGIC, x->listing.instructions);
	for (int k = 0; k < DISASM_NCLASSES; k++)
		fprintf(f, " %ld", x->listing.count[k]);
	fputc('\n', f);
	for (size_t i = 0; i < x->listing.nlines; i++)
		fprintf(f, "%s\n", x->listing.lines[i]);
	if (fclose(f) == 0 && len <= KEEP_MAX)
		(void)cache_extra_write(run->artifacts, x->e->key, name, text, len);
	free(text);
}

/* Reads back what the cache keeps of each artifact; after the reads,
 * keeps what was read. */
static void keep_lookup(struct reads *r, const char *name)
{
	for (int i = 0; i < r->n && r->run->artifacts; i++) {
		struct read *x = &r->v[i];
		char *text = NULL;
		size_t len = 0;

		if (cache_extra_read(r->run->artifacts, x->e->key, name, KEEP_MAX, &text, &len) == 0 &&
		    keep_parse(text, len, &x->listing))
			x->kept = true;
		free(text);
	}
}

static void keep_store(struct reads *r, const char *name)
{
	for (int i = 0; i < r->n && r->run->artifacts; i++)
		if (!r->v[i].kept && r->v[i].rc == 0)
			keep_write(r->run, name, &r->v[i]);
}

static struct read *read_of(struct reads *r, const struct compiled *e)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].e->res.code_sha256, e->res.code_sha256))
			return &r->v[i];
	return NULL;
}

static json_t *int_or_null(int x)
{
	return x >= 0 ? json_integer(x) : json_null();
}

static json_t *occupancy_json(const struct occ_limits *l, const struct fixture_case *c,
			      const struct rtc_resources *res)
{
	struct occupancy o;
	int threads = (int)(c->block[0] * c->block[1] * c->block[2]);
	long shared = (res->shared_bytes > 0 ? res->shared_bytes : 0) + (long)c->shared_bytes;

	if (!l || res->registers < 0)
		return json_null();
	occupancy_compute(l, threads, res->registers, shared, &o);
	return json_pack("{s:i,s:i,s:f,s:s}", "blocks_per_sm", o.blocks, "warps_per_sm", o.warps,
			 "fraction", o.fraction, "limited_by", o.limited_by);
}

static json_t *arm_json(const struct compiled *e, const struct read *x,
			const struct occ_limits *l, const struct fixture_case *c)
{
	const struct rtc_resources *res = &e->res.res;
	json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o}",
			      "artifact_sha256", e->res.code_sha256,
			      "code_bytes", (json_int_t)e->res.code_size,
			      "registers", int_or_null(res->registers),
			      "spill_stores", int_or_null(res->spill_stores),
			      "spill_loads", int_or_null(res->spill_loads),
			      "shared_bytes", int_or_null(res->shared_bytes),
			      "local_bytes", int_or_null(res->stack_bytes),
			      "occupancy", occupancy_json(l, c, res));

	if (x && x->rc == 0) {
		json_t *mix = json_object();

		for (int k = 0; k < DISASM_NCLASSES; k++)
			json_object_set_new(mix, disasm_class_names[k],
					    json_integer(x->listing.count[k]));
		json_object_set_new(o, "instructions", json_integer(x->listing.instructions));
		json_object_set_new(o, "mix", mix);
	} else {
		json_object_set_new(o, "instructions", json_null());
		json_object_set_new(o, "mix", json_null());
	}
	return o;
}

/* The diff of the two listings, capped at RUNNER_EXPLAIN_DIFF_MAX bytes. */
static json_t *diff_json(const struct read *a, const struct read *b)
{
	struct textdiff d;
	json_t *o;

	if (!a || !b || a->rc || b->rc)
		return json_null();
	textdiff_unified((const char *const *)a->listing.lines, a->listing.nlines,
			 (const char *const *)b->listing.lines, b->listing.nlines, 3,
			 RUNNER_EXPLAIN_DIFF_MAX, &d);
	o = json_pack("{s:s%,s:I,s:I,s:b,s:b}", "text", d.text, d.len, "added",
		      (json_int_t)d.added, "removed", (json_int_t)d.removed, "truncated",
		      d.truncated, "coarse", d.coarse);
	textdiff_release(&d);
	return o;
}

static void emit_code(struct run *run, struct reads *r, const struct fixture_case *c,
		      const struct compiled *e[2], const char *tool_error)
{
	json_t *line = lines_new("code"), *tool;
	const struct occ_limits *l;
	struct read *x[2] = { read_of(r, e[0]), read_of(r, e[1]) };
	char target[40];
	const char *why = tool_error;

	fixture_target(c, run->arch, target, sizeof target);
	l = occupancy_limits(target);
	json_object_set_new(line, "case", json_string(c->name));
	json_object_set_new(line, "target", json_string(target));
	json_object_set_new(line, "block_threads",
			    json_integer((json_int_t)c->block[0] * c->block[1] * c->block[2]));
	json_object_set_new(line, "dynamic_shared_bytes", json_integer(c->shared_bytes));
	json_object_set_new(line, "occupancy_limits", l ? json_string(l->target) : json_null());
	tool = r->tool ? json_pack("{s:s,s:s,s:s}", "tool", r->tool->name, "path",
				   r->tool->path, "version", r->tool->version) : json_null();
	json_object_set_new(line, "disassembler", tool);
	for (int arm = 0; arm < 2 && !why; arm++)
		if (x[arm] && x[arm]->rc)
			why = x[arm]->msg.text;
	json_object_set_new(line, "disassembly_error", why ? json_string(why) : json_null());
	json_object_set_new(line, "identical_code",
			    json_boolean(!strcmp(e[0]->res.code_sha256, e[1]->res.code_sha256)));
	json_object_set_new(line, "baseline", arm_json(e[0], x[0], l, c));
	json_object_set_new(line, "candidate", arm_json(e[1], x[1], l, c));
	json_object_set_new(line, "diff", diff_json(x[0], x[1]));
	runner__emit(run, line);
}

/* The compiled arms of case index, or false when either did not compile. */
static bool both(struct run *run, int index, struct fixture_case *c, const struct compiled *e[2])
{
	struct qual_msg msg = {{0}};
	char why[200];

	memset(c, 0, sizeof *c);
	if (fixture_spec(index, c, &msg) < 0)
		return false;
	if (!fixture_applies(c, run->platform, run->arch, why, sizeof why)) {
		fixture_release(c);
		return false;
	}
	for (int arm = 0; arm < 2; arm++) {
		e[arm] = runner__compile(run, c, arm);
		if (!e[arm] || e[arm]->res.status != 0 || !e[arm]->res.code) {
			fixture_release(c);
			return false;
		}
	}
	return true;
}

/* A case to explain: its description and its two arms' compiles. */
struct item {
	struct fixture_case c;
	const struct compiled *e[2];
};

void runner__explain(struct run *run, const int *sel, int nsel)
{
	struct reads r = { .run = run };
	struct disasm_tool tool;
	struct qual_msg find = {{0}};
	const char *libs[2] = { run->id[0].real_path, run->id[1].real_path };
	struct item *items = xcalloc((size_t)nsel + 1, sizeof *items);
	int n = 0, cap = 0;

	if (disasm_find(run->id[1].abi, libs, 2, &tool, &find) == 0)
		r.tool = &tool;
	for (int i = 0; i < nsel; i++) {
		struct item *it = &items[n];

		if (!both(run, sel[i], &it->c, it->e))
			continue;
		n++;
		for (int arm = 0; arm < 2 && r.tool; arm++) {
			if (read_of(&r, it->e[arm]))
				continue;
			XGROW(r.v, r.n + 1, cap);
			memset(&r.v[r.n], 0, sizeof r.v[r.n]);
			r.v[r.n].e = it->e[arm];
			fixture_target(&it->c, run->arch, r.v[r.n].target, sizeof r.v[r.n].target);
			r.n++;
		}
	}
	if (r.n) {
		char name[32];

		keep_name(&tool, name, sizeof name);
		keep_lookup(&r, name);
		read_all(&r);
		keep_store(&r, name);
	}
	for (int i = 0; i < n; i++) {
		emit_code(run, &r, &items[i].c, items[i].e, r.tool ? NULL : find.text);
		fixture_release(&items[i].c);
	}
	for (int i = 0; i < r.n; i++)
		disasm_listing_release(&r.v[i].listing);
	free(r.v);
	free(items);
	fflush(run->out);
}
