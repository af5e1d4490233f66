/* A job's settings (docs/protocol.md "submit", qual-run's options): ONE
 * table of every setting that crosses a process boundary, with its JSON key,
 * its qual-run option, its kind, its bounds, its default and which door
 * takes it, and the codecs every program uses: from a request's JSON
 * (quald), to the stored JSON (quald's job file), to qual-run's argv
 * (quald's worker), from one command-line option (qual-run), and one check
 * that words every refusal. A value is refused with the same message at
 * either door, and what one door accepts the engine accepts: there is no
 * other copy of a bound to drift. */
#ifndef QUAL_PROTO_SETTINGS_H
#define QUAL_PROTO_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"
#include "proto/strv.h"

enum settings_kind {
	SETTINGS_INT,   /* int */
	SETTINGS_I64,   /* int64_t */
	SETTINGS_REAL,  /* double, finite */
	SETTINGS_BOOL,  /* bool: a JSON boolean, an option without a value */
	SETTINGS_WORD,  /* int: the index of one of the field's words */
	SETTINGS_LIST,  /* char **, NULL-terminated, NULL: none */
};

/* Which door takes a setting: qual-run's command line, quald's submit. */
enum settings_door {
	SETTINGS_RUN = 1,
	SETTINGS_QUALD = 2,
	SETTINGS_BOTH = 3,
};

/* Words of the WORD settings, in the order of the enums they stand for
 * (compile/rtc_mode.h's enum rtc_mode, common/gate.h's enum gate_rule and
 * enum gate_undecided: the unit test checks the names agree). */
#define SETTINGS_MODE_DEFAULT 0

/* Lists: at most SETTINGS_MAX_LIST entries (cases, each arm's options),
 * SETTINGS_MAX_FIXTURES fixture directories. */
#define SETTINGS_MAX_LIST 64
#define SETTINGS_MAX_FIXTURES 8
/* An arm's compiler options, all of them together, as JSON with every
 * byte escaped as a line may escape it (settings_json_bytes): at most 64
 * KiB. Each option is at most 4095 bytes (a path's length, for -I), but 64
 * of them at 4095 bytes each, in a script that escapes non-ASCII, would be
 * 1.5 MiB per arm in the start line, which must stay within LINES_MAX (1
 * MiB, common/lines.h) with both arms, the cases, the fixture folders and
 * the library paths. 64 KiB is still some 30 times what a compiler command
 * line with a dozen include paths takes. */
#define SETTINGS_MAX_OPTIONS_JSON (64 * 1024)

struct settings_field {
	const char *key;        /* JSON key of the request and stored job */
	const char *option;     /* qual-run's long option, without "--" */
	enum settings_kind kind;
	unsigned doors;         /* enum settings_door */
	/* Numbers: [lo, hi], either end open when said; a value in (lo,
	 * floor) is refused too ("at least floor"): a positive value too small
	 * to mean anything, which strtod would not read back (1e-320). */
	double lo, hi;
	bool lo_open, hi_open;
	double floor;
	const char *unit;       /* "seconds": the message says "a number of seconds" */
	const char *note;       /* why a bound, after a refusal's "got X", or NULL */
	double def;             /* numbers, bools, words: the default */
	const char *const *words; /* WORD: NULL-terminated */
	bool type_first;        /* WORD: a non-string is "must be a string" */
	/* LIST: each entry 1 to max_len bytes, at most max_n entries, an
	 * empty list allowed or not, and the JSON bytes of all at most
	 * max_json (0: no bound). */
	size_t max_len, max_n, max_json;
	bool allow_empty;
	size_t offset;          /* in struct qual_settings */
};

/* The values of every setting, typed: parsed at a door, passed inside. */
struct qual_settings {
	int pairs;
	double alpha;
	double margin;
	int64_t seed;
	double compile_timeout_s; /* 0: the engine's default */
	int mode;               /* an enum rtc_mode */
	int max_pairs;          /* 0: the engine's default */
	double max_seconds;     /* 0: the engine's default */
	int gate_slower;        /* an enum gate_rule */
	int gate_faster;
	int undecided;          /* an enum gate_undecided */
	bool compile_only;
	bool follow;            /* quald's: stream the job's lines back */
	char **cases;           /* NULL-terminated, NULL: all */
	char **baseline_options; /* NULL-terminated, NULL: none */
	char **candidate_options;
	char **fixtures;        /* NULL-terminated, NULL: none */
};

/* The table, n entries (settings_fields), in the order quald checks a
 * request's fields. */
const struct settings_field *settings_fields(size_t *n);

/* The field of JSON key or of qual-run option (without "--"), or NULL. */
const struct settings_field *settings_find_key(const char *key);
const struct settings_field *settings_find_option(const char *option);

/* The defaults, in caller's storage; settings_release frees the lists. */
void settings_init(struct qual_settings *s);
void settings_release(struct qual_settings *s);

/* Whether number x is within f's bounds (its floor included). */
bool settings_in_range(const struct settings_field *f, double x);

/* Checks x, a value of number field f, and words the refusal: 0, or
 * QUAL_EINVAL with msg "'alpha' must be a number with 0 < alpha <= 0.5, got
 * 0.7". got is how the value was given ("0.7", "a string", "'x'"). */
int settings_check_number(const struct settings_field *f, double x, const char *got,
			  struct qual_msg *msg);

/* Checks x, a value of number field f as the engine holds it (its
 * default, 0 for the caps that 0 leaves to the engine, always passes), with
 * x said as the field's kind says it: "'pairs' must be an integer >= 30,
 * got 29". For a program that has the value already typed (the runner). */
int settings_check_value(const struct settings_field *f, double x, struct qual_msg *msg);

/* Every number field of s checked as settings_check_value does, then
 * settings_check: for settings that did not come through a door (a stored
 * job, a test's). */
int settings_check_values(const struct qual_settings *s, struct qual_msg *msg);

/* max_pairs against pairs: 0 (max_pairs 0 is the engine's default), or
 * QUAL_EINVAL with "'max_pairs' must be an integer >= 60, got 40". */
int settings_check_max_pairs(int pairs, int max_pairs, struct qual_msg *msg);

/* What crosses between fields and lists: max_pairs >= pairs, and each
 * arm's options within SETTINGS_MAX_OPTIONS_JSON. 0 or QUAL_EINVAL. */
int settings_check(const struct qual_settings *s, struct qual_msg *msg);

/* Every field of door in object o (borrowed) that is present, checked,
 * into s (which holds defaults or earlier values); then settings_check.
 * Other members of o are the caller's. */
int settings_from_json(struct qual_settings *s, json_t *o, unsigned door,
		       struct qual_msg *msg);

/* The value arg of option f (NULL for a bool) into s, checked as the JSON
 * value would be (a list's entry is appended). Cross-field checks wait for
 * settings_check once every option is read. */
int settings_from_option(struct qual_settings *s, const struct settings_field *f,
			 const char *arg, struct qual_msg *msg);

/* The settings as the stored request spells them, into o (borrowed):
 * pairs, alpha, margin, seed and compile_only always, the others when not
 * their defaults. */
void settings_to_json(const struct qual_settings *s, json_t *o);

/* The settings as qual-run's options, appended to argv: --KEY=VALUE, so
 * that a value starting with '-' is never an option; pairs, alpha, margin
 * and seed always, the others when not their defaults. */
void settings_to_argv(const struct qual_settings *s, struct strv *argv);

/* The bytes s takes as a JSON string when every byte is escaped the
 * longest way a line writer may: a control byte as \u00XX, a quote or
 * backslash as two, a byte of a non-ASCII character as up to three (a
 * two-byte character becomes one \uXXXX, a four-byte one two). */
size_t settings_json_bytes(const char *s);

/* What a JSON value was, for "got X" in a refusal: numbers and booleans
 * by value (a real so that it reads as one: 30.0), the rest by kind ("a
 * string"). Returns buf or a static string. */
const char *settings_describe(const json_t *v, char *buf, size_t n);

/* s, or its first max bytes cut at a UTF-8 boundary with "..." in buf
 * (max + 4 bytes), so that a message quoting a client's text stays short. */
const char *settings_clip(const char *s, char *buf, size_t max);

/* An option's text arg as the JSON value a request would carry for f (new
 * reference): a number as JSON reads it, true for a bool, else a string;
 * NULL when arg is not UTF-8. */
json_t *settings_option_json(const struct settings_field *f, const char *arg);

/* A NULL-terminated list of strings (NULL: none) as a JSON array (new
 * reference). */
json_t *settings_list_json(char *const *list);

/* The table as JSON (new reference), for a test that walks it at both
 * doors (qual-run --settings-table): an array of one object a field, its
 * key, option (null: quald's only), kind ("int", "i64", "real", "bool",
 * "word", "list"), doors ("run", "quald" or "both"), default, and by kind
 * lo, hi, lo_open, hi_open, floor (numbers), words, max_len, max_n, max_json
 * and allow_empty (lists). */
json_t *settings_table_json(void);

/* Frees a NULL-terminated list (NULL: nothing). */
void settings_list_free(char **list);

/* The processor mode's words, NULL-terminated, in the order of
 * compile/rtc_mode.h's enum rtc_mode, which names its modes by them. */
extern const char *const settings_mode_words[];

#endif
