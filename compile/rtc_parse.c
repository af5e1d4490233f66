/* Reading what compilers return: nvrtc's ptxas resource report, the AMDGPU
 * code object's metadata note, and the check that returned code is final
 * machine code (an intermediate form such as PTX would be compiled again by
 * the driver at load time, and the candidate compiler would not be what gets
 * measured).
 *
 * Everything here parses bytes that come from a compiler under test, so every
 * read is bounds-checked and nothing trusts a size or count it reads. */
#include "compile/rtc.h"

#include <elf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif
#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
/* The AMDGPU metadata note: owner "AMDGPU", type NT_AMDGPU_METADATA
 * (LLVM AMDGPUUsage, "Code Object V3 and above Metadata"). */
#define RTC_NT_AMDGPU_METADATA 32

static void resources_clear(struct rtc_resources *res)
{
	res->registers = -1;
	res->sgprs = -1;
	res->spill_stores = -1;
	res->spill_loads = -1;
	res->stack_bytes = -1;
	res->shared_bytes = -1;
}

/* Keeps the larger figure: a program with several entry kernels is summed up
 * by its most demanding one. */
static void keep_max(int *field, long long v)
{
	if (v < 0)
		return;
	if (v > INT_MAX)
		v = INT_MAX;
	if (*field < v)
		*field = (int)v;
}

/* ---- nvrtc: ptxas -v ------------------------------------------------------
 *
 * nvrtc 13.0 with -Xptxas=-v writes, per entry function (captured in
 * tests/data/rtc/):
 *
 *   ptxas info    : Compiling entry function 'heavy' for 'sm_90'
 *   ptxas info    : Function properties for heavy
 *   ptxas         .     832 bytes stack frame, 676 bytes spill stores, 684 bytes spill loads
 *   ptxas info    : Used 32 registers, used 1 barriers, 832 bytes cumulative stack size, 1024 bytes smem
 *
 * and "Function properties for" blocks for device functions (with -G), which
 * are not entries and are skipped. "N bytes smem" is left out when it is 0. */

/* The decimal number that ends just before at, or -1. */
static long long number_before(const char *line, const char *at)
{
	const char *s = at;
	long long v = 0;

	while (s > line && s[-1] == ' ')
		s--;
	at = s;
	while (s > line && s[-1] >= '0' && s[-1] <= '9')
		s--;
	if (s == at)
		return -1;
	for (; s < at; s++) {
		if (v > (long long)INT_MAX)
			return INT_MAX;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* The decimal number that starts at s (after spaces), or -1. */
static long long number_after(const char *s)
{
	long long v = 0;
	const char *start;

	while (*s == ' ')
		s++;
	start = s;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (long long)INT_MAX)
			return INT_MAX;
		v = v * 10 + (*s - '0');
	}
	return s == start ? -1 : v;
}

/* Copies the quoted or trailing name after key into name (cap bytes). */
static void copy_name(const char *s, char end, char *name, size_t cap)
{
	size_t n = 0;

	while (s[n] && s[n] != end && s[n] != '\r' && n + 1 < cap)
		n++;
	memcpy(name, s, n);
	name[n] = '\0';
	while (n > 0 && name[n - 1] == ' ')
		name[--n] = '\0';
}

static void parse_ptxas_line(const char *l, char *entry, char *props,
			     size_t cap, struct rtc_resources *res)
{
	const char *p;

	if ((p = strstr(l, "Compiling entry function '"))) {
		copy_name(p + strlen("Compiling entry function '"), '\'', entry, cap);
		props[0] = '\0';
		return;
	}
	if (strstr(l, "Compiling function '")) {
		/* A device function compiled on its own (-rdc): not an entry. */
		entry[0] = '\0';
		props[0] = '\0';
		return;
	}
	if ((p = strstr(l, "Function properties for "))) {
		copy_name(p + strlen("Function properties for "), '\0', props, cap);
		return;
	}
	if (!entry[0])
		return;
	if ((p = strstr(l, " bytes stack frame"))) {
		if (strcmp(props, entry) != 0)
			return;
		keep_max(&res->stack_bytes, number_before(l, p));
		if ((p = strstr(l, " bytes spill stores")))
			keep_max(&res->spill_stores, number_before(l, p));
		if ((p = strstr(l, " bytes spill loads")))
			keep_max(&res->spill_loads, number_before(l, p));
		return;
	}
	if ((p = strstr(l, "Used ")) && strstr(p, " registers")) {
		if (props[0] && strcmp(props, entry) != 0)
			return;
		keep_max(&res->registers, number_after(p + strlen("Used ")));
		p = strstr(l, " bytes smem");
		keep_max(&res->shared_bytes, p ? number_before(l, p) : 0);
	}
}

void rtc_parse_resources(enum rtc_abi abi, const char *log,
			 struct rtc_resources *res)
{
	/* ptxas lines are well under 300 bytes; a longer line is cut, which
	 * can only lose figures from that line, never misread them. */
	char line[512];
	char entry[256] = "";
	char props[256] = "";
	const char *s = log;

	resources_clear(res);
	if (abi != RTC_ABI_NVRTC || !log)
		return;
	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t n = eol ? (size_t)(eol - s) : strlen(s);
		size_t k = n < sizeof line - 1 ? n : sizeof line - 1;

		memcpy(line, s, k);
		line[k] = '\0';
		parse_ptxas_line(line, entry, props, sizeof entry, res);
		s += n;
		if (*s == '\n')
			s++;
	}
}

/* ---- AMDGPU: the metadata note (msgpack) ---------------------------------- */

struct mp_reader {
	const unsigned char *p;
	const unsigned char *end;
};

/* Nesting allowed in metadata: the real note is 4 deep (root map, kernel
 * array, kernel map, args array, arg map); anything far deeper is hostile. */
#define MP_MAX_DEPTH 32

static uint64_t be_read(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static int mp_take(struct mp_reader *r, size_t n, const unsigned char **out)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	if (out)
		*out = r->p;
	r->p += n;
	return 0;
}

/* Reads the next object's header. *kind: 'u' unsigned, 'i' negative int,
 * 's' string (*n bytes at *data), 'b' binary/ext (skipped bytes), 'a' array
 * and 'm' map (*n elements / pairs), 'x' anything else (nil, bool, float). */
static int mp_head(struct mp_reader *r, char *kind, uint64_t *n,
		   const unsigned char **data)
{
	const unsigned char *b;
	unsigned c;
	int w;

	if (mp_take(r, 1, &b))
		return -1;
	c = b[0];
	*data = NULL;
	if (c <= 0x7f) { *kind = 'u'; *n = c; return 0; }
	if (c >= 0xe0) { *kind = 'i'; *n = 0; return 0; }
	if (c >= 0x80 && c <= 0x8f) { *kind = 'm'; *n = c & 0x0f; return 0; }
	if (c >= 0x90 && c <= 0x9f) { *kind = 'a'; *n = c & 0x0f; return 0; }
	if (c >= 0xa0 && c <= 0xbf) {
		*kind = 's';
		*n = c & 0x1f;
		return mp_take(r, *n, data);
	}
	switch (c) {
	case 0xc0: case 0xc2: case 0xc3:
		*kind = 'x';
		return 0;
	case 0xc4: case 0xc5: case 0xc6: /* bin 8/16/32 */
	case 0xd9: case 0xda: case 0xdb: /* str 8/16/32 */
		w = (c == 0xc4 || c == 0xd9) ? 1 : (c == 0xc5 || c == 0xda) ? 2 : 4;
		if (mp_take(r, w, &b))
			return -1;
		*n = be_read(b, w);
		*kind = c >= 0xd9 ? 's' : 'b';
		return mp_take(r, *n, data);
	case 0xc7: case 0xc8: case 0xc9: /* ext 8/16/32: length, type, data */
		w = c == 0xc7 ? 1 : c == 0xc8 ? 2 : 4;
		if (mp_take(r, w, &b))
			return -1;
		*n = be_read(b, w);
		*kind = 'b';
		return mp_take(r, *n + 1, data);
	case 0xca: *kind = 'x'; return mp_take(r, 4, NULL);
	case 0xcb: *kind = 'x'; return mp_take(r, 8, NULL);
	case 0xcc: case 0xcd: case 0xce: case 0xcf:
		w = 1 << (c - 0xcc);
		if (mp_take(r, w, &b))
			return -1;
		*kind = 'u';
		*n = be_read(b, w);
		return 0;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		w = 1 << (c - 0xd0);
		if (mp_take(r, w, &b))
			return -1;
		*n = be_read(b, w);
		/* A signed integer: non-negative values count as unsigned. */
		*kind = (b[0] & 0x80) ? 'i' : 'u';
		return 0;
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext */
		*kind = 'b';
		*n = (uint64_t)1 << (c - 0xd4);
		return mp_take(r, *n + 1, data);
	case 0xdc: case 0xdd: case 0xde: case 0xdf:
		w = (c == 0xdc || c == 0xde) ? 2 : 4;
		if (mp_take(r, w, &b))
			return -1;
		*n = be_read(b, w);
		*kind = c <= 0xdd ? 'a' : 'm';
		return 0;
	}
	return -1; /* 0xc1: never used */
}

/* Skips one object, nested ones included. Each element takes at least one
 * byte, so a hostile count runs out of input instead of looping long. */
static int mp_skip(struct mp_reader *r, int depth)
{
	const unsigned char *data;
	uint64_t n, i;
	char kind;

	if (depth > MP_MAX_DEPTH || mp_head(r, &kind, &n, &data))
		return -1;
	if (kind == 'a' || kind == 'm') {
		uint64_t count = kind == 'm' ? 2 * n : n;
		if (count > (uint64_t)(r->end - r->p))
			return -1;
		for (i = 0; i < count; i++)
			if (mp_skip(r, depth + 1))
				return -1;
	}
	return 0;
}

static bool mp_key_is(const unsigned char *s, uint64_t n, const char *key)
{
	return n == strlen(key) && memcmp(s, key, n) == 0;
}

/* Reads one kernel's map from amdhsa.kernels into res (largest figures). */
static int mp_read_kernel(struct mp_reader *r, struct rtc_resources *res)
{
	const unsigned char *key, *data;
	uint64_t n, i, klen, v;
	char kind;

	if (mp_head(r, &kind, &n, &data) || kind != 'm')
		return -1;
	for (i = 0; i < n; i++) {
		if (mp_head(r, &kind, &klen, &key) || kind != 's')
			return -1;
		struct mp_reader peek = *r;
		if (mp_head(&peek, &kind, &v, &data))
			return -1;
		if (kind != 'u') {
			if (mp_skip(r, 3))
				return -1;
			continue;
		}
		*r = peek;
		if (v > INT_MAX)
			v = INT_MAX;
		if (mp_key_is(key, klen, ".vgpr_count"))
			keep_max(&res->registers, (long long)v);
		else if (mp_key_is(key, klen, ".sgpr_count"))
			keep_max(&res->sgprs, (long long)v);
		else if (mp_key_is(key, klen, ".vgpr_spill_count"))
			keep_max(&res->spill_stores, 4 * (long long)v);
		else if (mp_key_is(key, klen, ".private_segment_fixed_size"))
			keep_max(&res->stack_bytes, (long long)v);
		else if (mp_key_is(key, klen, ".group_segment_fixed_size"))
			keep_max(&res->shared_bytes, (long long)v);
	}
	return 0;
}

/* Reads the metadata map: finds amdhsa.kernels and reads each kernel. */
static int amdgpu_metadata_read(const unsigned char *p, size_t size,
				struct rtc_resources *res)
{
	struct mp_reader r = { p, p + size };
	const unsigned char *key, *data;
	uint64_t n, i, j, klen, count;
	char kind;
	int found = -1;

	if (mp_head(&r, &kind, &n, &data) || kind != 'm')
		return -1;
	for (i = 0; i < n; i++) {
		if (mp_head(&r, &kind, &klen, &key) || kind != 's')
			return -1;
		if (!mp_key_is(key, klen, "amdhsa.kernels")) {
			if (mp_skip(&r, 1))
				return -1;
			continue;
		}
		if (mp_head(&r, &kind, &count, &data) || kind != 'a')
			return -1;
		for (j = 0; j < count; j++)
			if (mp_read_kernel(&r, res))
				return -1;
		found = count > 0 ? 0 : -1;
	}
	return found;
}

/* Walks the notes in [p, p + size) for the AMDGPU metadata note. */
static int amdgpu_notes_read(const unsigned char *p, size_t size,
			     struct rtc_resources *res)
{
	size_t off = 0;

	while (size - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name_len, desc_len;

		memcpy(&nh, p + off, sizeof nh);
		off += sizeof nh;
		/* Name and descriptor are each padded to 4 bytes. */
		name_len = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
		desc_len = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
		if (name_len > size - off || desc_len > size - off - name_len)
			return -1;
		if (nh.n_type == RTC_NT_AMDGPU_METADATA && nh.n_namesz == 7 &&
		    memcmp(p + off, "AMDGPU", 7) == 0)
			return amdgpu_metadata_read(p + off + name_len, nh.n_descsz,
						    res);
		off += name_len + desc_len;
	}
	return -1;
}

/* The notes of one header table of an ELF object: the section headers
 * (SHT_NOTE entries) or the program headers (PT_NOTE). A table or an entry
 * that does not lie within the object is passed over. Returns 0 when one
 * entry's notes held the metadata. */
static int amdgpu_table_read(const unsigned char *p, size_t size, bool sections,
			     uint64_t table, unsigned count, unsigned entsize,
			     struct rtc_resources *res)
{
	size_t want = sections ? sizeof(Elf64_Shdr) : sizeof(Elf64_Phdr);

	if (entsize != want || table >= size || count > (size - table) / want)
		return -1;
	for (size_t i = 0; i < count; i++) {
		uint64_t off, len;
		bool note;

		if (sections) {
			Elf64_Shdr sh;
			memcpy(&sh, p + table + i * want, sizeof sh);
			note = sh.sh_type == SHT_NOTE;
			off = sh.sh_offset;
			len = sh.sh_size;
		} else {
			Elf64_Phdr ph;
			memcpy(&ph, p + table + i * want, sizeof ph);
			note = ph.p_type == PT_NOTE;
			off = ph.p_offset;
			len = ph.p_filesz;
		}
		if (note && off <= size && len <= size - off &&
		    amdgpu_notes_read(p + off, len, res) == 0)
			return 0;
	}
	return -1;
}

/* Finds the metadata note through the section headers, else through the
 * program headers. */
static int amdgpu_elf_read(const unsigned char *p, size_t size,
			   struct rtc_resources *res)
{
	Elf64_Ehdr eh;

	if (size < sizeof eh)
		return -1;
	memcpy(&eh, p, sizeof eh);
	if (amdgpu_table_read(p, size, true, eh.e_shoff, eh.e_shnum, eh.e_shentsize,
			      res) == 0)
		return 0;
	return amdgpu_table_read(p, size, false, eh.e_phoff, eh.e_phnum, eh.e_phentsize,
				 res);
}

int rtc_parse_code_resources(enum rtc_abi abi, const void *code, size_t size,
			     struct rtc_resources *res)
{
	struct rtc_resources found;

	if (abi != RTC_ABI_HIPRTC)
		return 0;
	resources_clear(&found);
	if (!code || amdgpu_elf_read(code, size, &found))
		return QUAL_EINVAL;
	if (res->registers < 0) res->registers = found.registers;
	if (res->sgprs < 0) res->sgprs = found.sgprs;
	if (res->spill_stores < 0) res->spill_stores = found.spill_stores;
	if (res->stack_bytes < 0) res->stack_bytes = found.stack_bytes;
	if (res->shared_bytes < 0) res->shared_bytes = found.shared_bytes;
	return 0;
}

/* ---- final machine code ---------------------------------------------------- */

static const char bundle_magic[] = "__CLANG_OFFLOAD_BUNDLE__";

/* The ELF machine of code, or -1 when code is no 64-bit little-endian ELF. */
static int elf_machine(const unsigned char *p, size_t size)
{
	Elf64_Ehdr eh;

	if (size < sizeof eh || memcmp(p, ELFMAG, SELFMAG) != 0 ||
	    p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
		return -1;
	memcpy(&eh, p, sizeof eh);
	return eh.e_machine;
}

/* True when the bundle entry's triple names arch: the target id is what
 * follows the last "--" or "-" before "gfx" ("hipv4-amdgcn-amd-amdhsa--gfx90a",
 * "hip-amdgcn-amd-amdhsa-gfx90a:xnack-"). An entry with target features
 * matches a bare processor name too. */
static bool bundle_triple_matches(const char *t, size_t n, const char *arch)
{
	const char *gfx = NULL;
	size_t i, alen = strlen(arch), tlen;

	for (i = 0; i + 3 <= n; i++)
		if (memcmp(t + i, "gfx", 3) == 0 && (i == 0 || t[i - 1] == '-'))
			gfx = t + i;
	if (!gfx || !memmem(t, n, "amdgcn", 6))
		return false;
	tlen = n - (size_t)(gfx - t);
	if (tlen == alen && memcmp(gfx, arch, alen) == 0)
		return true;
	return !strchr(arch, ':') && tlen > alen && gfx[alen] == ':' &&
	       memcmp(gfx, arch, alen) == 0;
}

/* ROCm's hiprtc can return a clang offload bundle instead of a bare code
 * object (ROCm 5.2.3 on Debian returns the bare object for gfx90a and
 * gfx1030, but other builds bundle): 24-byte magic, u64 count, then per entry
 * u64 offset, u64 size, u64 triple length and the triple. */
static int bundle_find(const unsigned char *p, size_t size, const char *arch,
		       size_t *offset, size_t *len, struct qual_msg *msg)
{
	size_t magic = sizeof bundle_magic - 1;
	size_t off = magic + 8;
	uint64_t count, i;

	if (size < off)
		return qual_fail(msg, QUAL_ECOMPILE, "offload bundle is truncated");
	memcpy(&count, p + magic, 8);
	for (i = 0; i < count; i++) {
		uint64_t e[3];
		if (size - off < sizeof e)
			break;
		memcpy(e, p + off, sizeof e);
		off += sizeof e;
		if (e[2] > size - off)
			break;
		if (bundle_triple_matches((const char *)p + off, e[2], arch)) {
			if (e[0] > size || e[1] > size - e[0] ||
			    elf_machine(p + e[0], e[1]) != EM_AMDGPU)
				return qual_fail(msg, QUAL_ECOMPILE,
						 "offload bundle entry for '%s' is not an "
						 "amdgpu code object", arch);
			*offset = e[0];
			*len = e[1];
			return 0;
		}
		off += e[2];
	}
	return qual_fail(msg, QUAL_ECOMPILE, "offload bundle holds no code object for '%s'",
			 arch);
}

int rtc_check_code(enum rtc_abi abi, const char *arch, const void *code,
		   size_t size, size_t *offset, size_t *len,
		   struct qual_msg *msg)
{
	const unsigned char *p = code;
	int machine;

	*offset = 0;
	*len = size;
	if (!p || size == 0)
		return qual_fail(msg, QUAL_ECOMPILE, "no code returned for '%s'", arch);
	machine = elf_machine(p, size);
	if (abi == RTC_ABI_NVRTC) {
		if (machine == EM_CUDA)
			return 0;
		if (size >= 8 && memcmp(p, "//", 2) == 0)
			return qual_fail(msg, QUAL_ECOMPILE,
					 "code for '%s' is ptx text, not a cubin", arch);
		return qual_fail(msg, QUAL_ECOMPILE,
				 "code for '%s' is not a cubin (elf machine %d)", arch,
				 machine);
	}
	if (abi == RTC_ABI_HIPRTC) {
		if (machine == EM_AMDGPU)
			return 0;
		if (size >= sizeof bundle_magic - 1 &&
		    memcmp(p, bundle_magic, sizeof bundle_magic - 1) == 0)
			return bundle_find(p, size, arch, offset, len, msg);
		if (size >= 4 && memcmp(p, "CCOB", 4) == 0)
			return qual_fail(msg, QUAL_ECOMPILE,
					 "code for '%s' is a compressed offload bundle, "
					 "which qual cannot read", arch);
		return qual_fail(msg, QUAL_ECOMPILE,
				 "code for '%s' is neither an amdgpu code object nor an "
				 "offload bundle", arch);
	}
	return qual_fail(msg, QUAL_EINVAL, "unknown compiler abi");
}
