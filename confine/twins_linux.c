// The C twins of Go functions: what the plan cache's run (fast_linux.c)
// must compute exactly as the Go supervisor does, each named after its
// twin in its doc comment; twins_test.go holds each against its twin
// (through twins_cgo_linux.go).

//go:build linux && cgo

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "early_linux.h"

struct sha256 {
	uint32_t h[8];
	uint8_t buf[64];
	size_t n;
	uint64_t total;
};

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const uint8_t *p) {
	uint32_t w[64], a, b, c, d, e, f, g, h;
	for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

// sha256_blocks_ni is sha256_block over n blocks with the SHA extensions
// (Intel since Goldmont and Ice Lake, AMD since Zen).
__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t n) {
	const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);
	__m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);       // CDAB
	st1 = _mm_shuffle_epi32(st1, 0x1B);       // EFGH
	__m128i st0 = _mm_alignr_epi8(tmp, st1, 8); // ABEF
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);    // CDGH
	for (; n > 0; n--, p += 64) {
		__m128i save0 = st0, save1 = st1, m[4];
		for (int i = 0; i < 16; i++) {
			__m128i w;
			if (i < 4) {
				w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), mask);
			} else {
				// W[4i..4i+3] from the four groups before it.
				w = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
				w = _mm_add_epi32(w, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
				w = _mm_sha256msg2_epu32(w, m[(i + 3) & 3]);
			}
			m[i & 3] = w;
			__m128i k = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&sha256_k[4 * i]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, k);
			st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(k, 0x0E));
		}
		st0 = _mm_add_epi32(st0, save0);
		st1 = _mm_add_epi32(st1, save1);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);       // FEBA
	st1 = _mm_shuffle_epi32(st1, 0xB1);       // DCHG
	st0 = _mm_blend_epi16(tmp, st1, 0xF0);    // DCBA
	st1 = _mm_alignr_epi8(st1, tmp, 8);       // ABEF -> HGFE
	_mm_storeu_si128((__m128i *)&h[0], st0);
	_mm_storeu_si128((__m128i *)&h[4], st1);
}

static int sha_ni(void) {
	static int have = -1;
	if (have < 0) {
		unsigned a, b, c, d;
		have = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)) && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 19)) && (c & (1u << 9));
	}
	return have;
}
#else
static int sha_ni(void) { return 0; }
static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t n) { (void)h, (void)p, (void)n; }
#endif

// sha256_blocks runs n whole blocks: with the SHA extensions where the CPU
// has them (the 25 KB entry of a root run: 0.1 ms instead of 0.4 ms under
// load on the development VM), else portably.
int jail_sha_portable;

static void sha256_blocks(struct sha256 *s, const uint8_t *p, size_t n) {
	if (!jail_sha_portable && sha_ni()) {
		sha256_blocks_ni(s->h, p, n);
		return;
	}
	for (; n > 0; n--, p += 64) sha256_block(s, p);
}

static void sha256_init(struct sha256 *s) {
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->n = 0;
	s->total = 0;
}

static void sha256_update(struct sha256 *s, const uint8_t *p, size_t n) {
	s->total += n;
	while (n > 0) {
		if (s->n == 0 && n >= 64) {
			sha256_blocks(s, p, n / 64);
			p += n / 64 * 64;
			n %= 64;
			continue;
		}
		size_t k = 64 - s->n < n ? 64 - s->n : n;
		memcpy(s->buf + s->n, p, k);
		s->n += k;
		p += k;
		n -= k;
		if (s->n == 64) {
			sha256_blocks(s, s->buf, 1);
			s->n = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, uint8_t out[32]) {
	uint64_t bits = s->total * 8;
	uint8_t pad = 0x80, zero = 0, len[8];
	sha256_update(s, &pad, 1);
	while (s->n != 56) sha256_update(s, &zero, 1);
	for (int i = 0; i < 8; i++) len[i] = bits >> (56 - 8 * i);
	sha256_update(s, len, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = s->h[i] >> 24;
		out[4 * i + 1] = s->h[i] >> 16;
		out[4 * i + 2] = s->h[i] >> 8;
		out[4 * i + 3] = s->h[i];
	}
}

// jail_hmac_sha256 is RFC 2104 with SHA-256 and a 32-byte key.
void jail_hmac_sha256(const uint8_t key[32], const uint8_t *msg, size_t n, uint8_t out[32]) {
	uint8_t pad[64], inner[32];
	struct sha256 s;
	memset(pad, 0x36, sizeof(pad));
	for (int i = 0; i < 32; i++) pad[i] ^= key[i];
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	sha256_update(&s, msg, n);
	sha256_final(&s, inner);
	memset(pad, 0x5c, sizeof(pad));
	for (int i = 0; i < 32; i++) pad[i] ^= key[i];
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	sha256_update(&s, inner, 32);
	sha256_final(&s, out);
}

// jail_cache_name is planCacheName in fast_linux.go: FNV-1a of the uid, the
// working directory and the arguments, each with its NUL.
void jail_cache_name(char out[32], unsigned uid, const char *cwd, char **args, int nargs) {
	uint64_t h = 14695981039346656037ULL;
	char ubuf[16];
	snprintf(ubuf, sizeof(ubuf), "%u", uid);
	const char *first[2] = {ubuf, cwd};
	for (int i = 0; i < 2 + nargs; i++) {
		const char *s = i < 2 ? first[i] : args[i - 2];
		for (; *s; s++) {
			h ^= (unsigned char)*s;
			h *= 1099511628211ULL;
		}
		h *= 1099511628211ULL; // the NUL: h ^= 0
	}
	snprintf(out, 32, "%016llx.plan", (unsigned long long)h);
}

// jail_watched_name is WatchedName in fast_linux.go: the file names
// jail_dir_hash counts besides directories.
static int jail_watched_name(const char *n) {
	static const char *exact[] = {".git", "HEAD", ".envrc", ".mcp.json", ".aider.conf.yml", ".pre-commit-config.yaml"};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (!strcmp(n, exact[i])) return 1;
	size_t len = strlen(n), suf = strlen(".code-workspace");
	return !strncmp(n, "lefthook", 8) || !strncmp(n, ".lefthook", 9) || !strncmp(n, "opencode.", 9) ||
	       (len >= suf && !strcmp(n + len - suf, ".code-workspace"));
}

uint64_t jail_dir_hash(int fd, int skip_git) {
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	if (!dir) {
		if (d >= 0) close(d);
		return 0;
	}
	uint64_t sum = 0, n = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		int isdir = e->d_type == DT_DIR;
		if (e->d_type == DT_UNKNOWN) {
			struct stat st;
			isdir = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
		}
		if ((!isdir && !jail_watched_name(e->d_name)) || (skip_git && !strcmp(e->d_name, ".git"))) continue;
		uint64_t h = 14695981039346656037ULL;
		for (const char *p = e->d_name; *p; p++) {
			h ^= (unsigned char)*p;
			h *= 1099511628211ULL;
		}
		if (isdir) h += 0x9e3779b97f4a7c15ULL;
		sum += h;
		n++;
	}
	closedir(dir);
	return sum ^ (n * 0xff51afd7ed558ccdULL);
}

// name_len is the length of an environment entry's name.
static size_t name_len(const char *kv) {
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static int passes(const char *kv, char **pass, uint32_t npass) {
	size_t n = name_len(kv);
	for (uint32_t i = 0; i < npass; i++) {
		size_t pn = strlen(pass[i]);
		if (pn == n && !strncmp(pass[i], kv, n)) return 1;
		if (pn > 0 && pass[i][pn - 1] == '*' && n >= pn - 1 && !strncmp(pass[i], kv, pn - 1)) return 1;
	}
	return 0;
}

// env_set sets name=value (kv is "name=value") in env, keeping the place
// of an earlier entry of the same name, as BuildEnv does.
static void env_set(char **env, uint32_t *n, char *kv) {
	size_t nl = name_len(kv);
	for (uint32_t i = 0; i < *n; i++)
		if (name_len(env[i]) == nl && !strncmp(env[i], kv, nl)) {
			env[i] = kv;
			return;
		}
	env[(*n)++] = kv;
}

// go_duplicate reports whether Go's os.Environ, which the supervisor
// reads, drops the entry e of envp: a NAME=VALUE whose NAME an earlier
// NAME=VALUE set (the first wins; entries without "=" are all kept).
static int go_duplicate(char **envp, char **e) {
	if (!strchr(*e, '=')) return 0;
	size_t nl = name_len(*e);
	for (char **o = envp; o < e; o++)
		if (strchr(*o, '=') && name_len(*o) == nl && !strncmp(*o, *e, nl)) return 1;
	return 0;
}

// caller_value is the value BuildEnv's map ends with for name: the last
// of the entries os.Environ keeps ("" for one without "=").
static const char *caller_value(char **envp, const char *name, size_t nl) {
	const char *v = NULL;
	for (char **e = envp; *e; e++)
		if (name_len(*e) == nl && !strncmp(*e, name, nl) && !go_duplicate(envp, e)) v = (*e)[nl] == '=' ? *e + nl + 1 : "";
	return v;
}

// jail_build_env is BuildEnv in env.go: the pass-listed variables of the
// caller in its order, then each extra (NAME passes the caller's value,
// NAME=VALUE sets one), then PATH and TMPDIR when missing.
char **jail_build_env(char **envp, char **pass, uint32_t npass, char **extra, uint32_t nextra, uint32_t *count) {
	uint32_t ne = 0;
	for (char **e = envp; *e; e++) ne++;
	char **env = calloc(ne + nextra + 3, sizeof(char *));
	if (!env) return NULL;
	uint32_t n = 0;
	for (char **e = envp; *e; e++) {
		if (!passes(*e, pass, npass) || go_duplicate(envp, e)) continue;
		if (!strchr(*e, '=')) {
			char *kv = malloc(strlen(*e) + 2);
			if (!kv) return NULL;
			sprintf(kv, "%s=", *e);
			env_set(env, &n, kv);
		} else {
			env_set(env, &n, *e);
		}
	}
	for (uint32_t i = 0; i < nextra; i++) {
		if (strchr(extra[i], '=')) {
			env_set(env, &n, extra[i]);
			continue;
		}
		const char *v = caller_value(envp, extra[i], strlen(extra[i]));
		if (!v) continue;
		char *kv = malloc(strlen(extra[i]) + strlen(v) + 2);
		if (!kv) return NULL;
		sprintf(kv, "%s=%s", extra[i], v);
		env_set(env, &n, kv);
	}
	int path = 0, tmp = 0;
	for (uint32_t i = 0; i < n; i++) {
		path |= !strncmp(env[i], "PATH=", 5);
		tmp |= !strncmp(env[i], "TMPDIR=", 7);
	}
	if (!path) env[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
	if (!tmp) env[n++] = "TMPDIR=/tmp";
	*count = n;
	return env;
}

// jail_signal_name is unix.SignalName for Linux: "" for a signal it does not
// name (the Go path then leaves the field out). A test compares the two.
const char *jail_signal_name(int sig) {
	static const char *names[] = {NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS",
				      "SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
				      "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
				      "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS"};
	if (sig <= 0 || sig >= (int)(sizeof(names) / sizeof(names[0]))) return "";
	return names[sig];
}

// ---- JSON ------------------------------------------------------------------

// utf8_len is the length of the valid UTF-8 sequence at s, 0 when the
// byte there starts none, as utf8.DecodeRuneInString decides (no
// overlong forms, no surrogates, nothing past U+10FFFF). s is
// NUL-terminated, and a NUL is never a continuation byte, so nothing past
// it is read.
static int utf8_len(const unsigned char *s) {
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	if (c < 0x80) return 1;
	if (c < 0xc2 || c > 0xf4) return 0;
	if (c < 0xe0) return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c == 0xe0) lo = 0xa0;
	if (c == 0xed) hi = 0x9f;
	if (c == 0xf0) lo = 0x90;
	if (c == 0xf4) hi = 0x8f;
	if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80) return 0;
	if (c < 0xf0) return 3;
	return (s[3] & 0xc0) == 0x80 ? 4 : 0;
}

// cf_ranges are Go's unicode.Cf (Unicode 15.0.0) as lo, hi, stride:
// the format characters (bidirectional embeddings, overrides and
// isolates, zero-width characters, the byte order mark, tags) that
// policy.MarshalLine escapes because they reorder or hide what a terminal
// shows. TestJSONStringTwins holds every one of them, and its neighbours,
// against the Go side.
static const unsigned cf_ranges[][3] = {
	{0x00ad, 0x0600, 1363}, {0x0601, 0x0605, 1},  {0x061c, 0x06dd, 193},   {0x070f, 0x0890, 385},
	{0x0891, 0x08e2, 81},   {0x180e, 0x200b, 2045}, {0x200c, 0x200f, 1},    {0x202a, 0x202e, 1},
	{0x2060, 0x2064, 1},    {0x2066, 0x206f, 1},    {0xfeff, 0xfff9, 250},  {0xfffa, 0xfffb, 1},
	{0x110bd, 0x110cd, 16}, {0x13430, 0x1343f, 1},  {0x1bca0, 0x1bca3, 1},  {0x1d173, 0x1d17a, 1},
	{0xe0001, 0xe0020, 31}, {0xe0021, 0xe007f, 1},
};

// format_char reports whether r is in cf_ranges.
static int format_char(unsigned r) {
	for (size_t i = 0; i < sizeof(cf_ranges) / sizeof(cf_ranges[0]); i++) {
		if (r >= cf_ranges[i][0] && r <= cf_ranges[i][1] && (r - cf_ranges[i][0]) % cf_ranges[i][2] == 0) return 1;
	}
	return 0;
}

// utf8_rune is the character of the valid n-byte sequence at s.
static unsigned utf8_rune(const unsigned char *s, int n) {
	if (n == 2) return (s[0] & 0x1fu) << 6 | (s[1] & 0x3fu);
	if (n == 3) return (s[0] & 0x0fu) << 12 | (s[1] & 0x3fu) << 6 | (s[2] & 0x3fu);
	return (s[0] & 0x07u) << 18 | (s[1] & 0x3fu) << 12 | (s[2] & 0x3fu) << 6 | (s[3] & 0x3fu);
}

// put_u16 writes \uNNNN for the UTF-16 unit u at e.
static int put_u16(char *e, unsigned u) {
	static const char hex[] = "0123456789abcdef";
	memcpy(e, "\\u", 2);
	e[2] = hex[u >> 12 & 15], e[3] = hex[u >> 8 & 15], e[4] = hex[u >> 4 & 15], e[5] = hex[u & 15];
	return 6;
}

// json_string is jail_json_string; *cut (when not NULL) is set when s did
// not fit whole.
static char *json_string(char *w, char *end, const char *str, int line, int *cut) {
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	if (cut) *cut = 1;
	if (end - w < 2) return w;
	*w++ = '"';
	char *stop = end - 1; // the closing quote's place
	while (*s) {
		char esc[12];
		const char *out = esc;
		int n, in = 1;
		unsigned c = s[0];
		if (c < 0x80) {
			switch (c) {
			case '"': case '\\': esc[0] = '\\', esc[1] = c, n = 2; break;
			case '\b': memcpy(esc, "\\b", n = 2); break;
			case '\f': memcpy(esc, "\\f", n = 2); break;
			case '\n': memcpy(esc, "\\n", n = 2); break;
			case '\r': memcpy(esc, "\\r", n = 2); break;
			case '\t': memcpy(esc, "\\t", n = 2); break;
			default:
				if (c < 0x20 || c == '<' || c == '>' || c == '&' || (line && (c == '$' || c == '`' || c == 0x7f))) {
					memcpy(esc, "\\u00", 4);
					esc[4] = hex[c >> 4], esc[5] = hex[c & 15], n = 6;
				} else {
					out = (const char *)s, n = 1;
				}
			}
		} else if ((in = utf8_len(s)) == 0) {
			out = "\\ufffd", n = 6, in = 1;
		} else if (in == 3 && c == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9)) {
			memcpy(esc, "\\u202", 5);
			esc[5] = hex[s[2] & 15], n = 6; // U+2028, U+2029
		} else if (line && in == 2 && c == 0xc2 && s[1] <= 0x9f) {
			memcpy(esc, "\\u00", 4); // a C1 control
			esc[4] = hex[s[1] >> 4], esc[5] = hex[s[1] & 15], n = 6;
		} else if (line && format_char(utf8_rune(s, in))) {
			unsigned r = utf8_rune(s, in);
			if (r > 0xffff) { // a surrogate pair, as JSON spells it
				r -= 0x10000;
				n = put_u16(esc, 0xd800 + (r >> 10));
				n += put_u16(esc + n, 0xdc00 + (r & 0x3ff));
			} else {
				n = put_u16(esc, r);
			}
		} else {
			out = (const char *)s, n = in;
		}
		if (stop - w < n) break;
		memcpy(w, out, n);
		w += n;
		s += in;
	}
	*w++ = '"';
	if (cut) *cut = *s != 0;
	return w;
}

char *jail_json_string(char *w, char *end, const char *s, int line) { return json_string(w, end, s, line, NULL); }

// put_json_fmt appends a formatted piece of a JSON line; *over is set when
// it does not fit.
static void put_json_fmt(char **w, char *end, int *over, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put_json_fmt(char **w, char *end, int *over, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(*w, end - *w, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= end - *w) *over = 1;
	else *w += n;
}

static void put_json_key(char **w, char *end, int *over, const char *key, const char *v) {
	put_json_fmt(w, end, over, ",\"%s\":", key);
	if (*over) return;
	int cut;
	*w = json_string(*w, end, v, 1, &cut);
	if (cut) *over = 1;
}

int jail_result_json(char *buf, size_t cap, const struct jail_result *r) {
	char *w = buf, *end = buf + cap;
	int over = 0;
	put_json_fmt(&w, end, &over, "{\"exit_code\":%d", r->exit_code);
	if (r->signal && r->signal[0]) put_json_key(&w, end, &over, "signal", r->signal);
	put_json_fmt(&w, end, &over, ",\"timed_out\":%s,\"duration_ms\":%lld,\"max_rss_kb\":%ld", r->timed_out ? "true" : "false",
		     r->duration_ms, r->max_rss_kb);
	put_json_key(&w, end, &over, "limits", r->limits);
	if (r->limits_note && r->limits_note[0]) put_json_key(&w, end, &over, "limits_note", r->limits_note);
	if (r->oom_killed) put_json_fmt(&w, end, &over, ",\"oom_killed\":true");
	if (r->pids_limited) put_json_fmt(&w, end, &over, ",\"pids_limited\":true");
	if (r->pids_ended) put_json_fmt(&w, end, &over, ",\"pids_ended\":true");
	if (r->memory_ended) put_json_fmt(&w, end, &over, ",\"memory_ended\":true");
	put_json_key(&w, end, &over, "policy_sha256", r->policy_sha256 ? r->policy_sha256 : "");
	if (r->error && r->error[0]) put_json_key(&w, end, &over, "error", r->error);
	if (r->stage && r->stage[0]) put_json_key(&w, end, &over, "stage", r->stage);
	put_json_fmt(&w, end, &over, "}\n");
	return over ? -1 : (int)(w - buf);
}
