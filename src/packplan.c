// SPDX-License-Identifier: MIT
/*
 * The pack planner (see packplan.h for the rules it implements): members
 * are collected by packplan_add(), then packplan_finish() sorts them into
 * samples, optionally shuffles the samples with a seeded generator, and
 * fills shards in that order, computing every member's header length
 * with tarhdr_write() so that offsets and shard sizes are exact before
 * any data is read.
 *
 * Pure: no I/O, no threads, no globals. Memory: one record per member
 * plus its strings, one index per sample; headers are not kept (they are
 * written again when the shard is streamed).
 */
#include "packplan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "buf.h"
#include "dsidx.h"
#include "tarhdr.h"

#define MIN_SHARD_SIZE (UINT64_C(1) << 20)
#define END_MARKER     (2 * TARHDR_BLOCK)
#define HDR_CAP	       (4 * TARHDR_PATH_MAX + 8 * TARHDR_BLOCK)

struct rec {
	struct packplan_item it;
	uint32_t dirlen;  /* sample key: directory bytes */
	uint32_t stemlen; /* stem bytes */
};

struct packplan {
	struct packplan_conf conf;
	char *pattern;
	struct rec *recs; /* added order, then sorted */
	size_t n, alloc;
	struct packplan_item *items; /* pack order, after finish */
	struct packplan_shard *shards;
	uint32_t nshards, nsamples;
	uint64_t total_bytes, total_files;
	bool finished;
	struct buf scratch; /* header lengths */
};

static void set_err(char *err, size_t errlen, const char *text)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", text);
}

/* ---- names ---- */

static bool pattern_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
	       c == '/';
}

/* The token at P ("{n}", "{n:W}", "{hash}"): its length and kind. */
static size_t token_at(const char *p, int *kind, unsigned *width)
{
	if (strncmp(p, "{n}", 3) == 0) {
		*kind = 'n';
		*width = 6;
		return 3;
	}
	if (strncmp(p, "{hash}", 6) == 0) {
		*kind = 'h';
		return 6;
	}
	if (strncmp(p, "{n:", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
		unsigned w = (unsigned)(p[3] - '0');
		size_t i = 4;

		if (p[4] >= '0' && p[4] <= '9') {
			w = w * 10 + (unsigned)(p[4] - '0');
			i = 5;
		}
		if (p[i] != '}' || w < 1 || w > 12)
			return 0;
		*kind = 'n';
		*width = w;
		return i + 1;
	}
	return 0;
}

/* splitmix64: the mixer of the hash token and of the shuffle. */
static uint64_t mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static int format_name(const char *pattern, uint32_t n, char *out,
		       size_t outlen, unsigned *ntok)
{
	size_t o = 0;

	*ntok = 0;
	for (const char *p = pattern; *p;) {
		char tmp[32];
		unsigned width = 0;
		int kind = 0, w;
		size_t t = *p == '{' ? token_at(p, &kind, &width) : 0;

		if (*p == '{' && !t)
			return -EINVAL;
		if (!t && !pattern_char_ok(*p))
			return -EINVAL;
		if (!t) {
			tmp[0] = *p++;
			tmp[1] = '\0';
		} else if (kind == 'n') {
			snprintf(tmp, sizeof(tmp), "%0*" PRIu32, (int)width, n);
			(*ntok)++;
			p += t;
		} else {
			snprintf(tmp, sizeof(tmp), "%04x",
				 (unsigned)(mix64(n) >> 48));
			p += t;
		}
		w = (int)strlen(tmp);
		if (o + (size_t)w + 1 > outlen)
			return -ERANGE;
		memcpy(out + o, tmp, (size_t)w);
		o += (size_t)w;
	}
	if (outlen == 0)
		return -ERANGE;
	out[o] = '\0';
	return 0;
}

/* A relative key: no leading or trailing '/', no empty, "." or "..". */
static bool key_ok(const char *k)
{
	const char *p = k;

	if (!*k)
		return false;
	for (;;) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!s)
			return true;
		p = s + 1;
	}
}

int packplan_format_name(const char *pattern, uint32_t n, char *out,
			 size_t outlen)
{
	unsigned ntok;
	int rc = format_name(pattern, n, out, outlen, &ntok);

	if (rc)
		return rc;
	return ntok == 1 && key_ok(out) ? 0 : -EINVAL;
}

int packplan_check_pattern(const char *pattern, char *err, size_t errlen)
{
	char name[PACKPLAN_NAME_MAX + 1];
	unsigned ntok;
	size_t n = strlen(pattern);
	int rc;

	rc = format_name(pattern, 0, name, sizeof(name), &ntok);
	if (rc == -ERANGE) {
		set_err(err, errlen, "the shard names would be too long");
		return -EINVAL;
	}
	if (rc) {
		set_err(err, errlen,
			"a shard name pattern holds A-Z a-z 0-9 . _ - / and "
			"the tokens {n}, {n:WIDTH} (1..12) and {hash}");
		return -EINVAL;
	}
	if (ntok != 1) {
		set_err(err, errlen,
			"a shard name pattern needs {n} (or {n:WIDTH}) "
			"exactly once");
		return -EINVAL;
	}
	if (n < 4 || strcmp(pattern + n - 4, ".tar") != 0) {
		set_err(err, errlen, "shard names must end in .tar");
		return -EINVAL;
	}
	if (!key_ok(name)) {
		set_err(err, errlen,
			"shard names must be relative keys: no leading or "
			"trailing '/', no empty, '.' or '..' segment");
		return -EINVAL;
	}
	return 0;
}

/* ---- checks ---- */

bool packplan_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i], need, min;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1, min = 0x80, cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2, min = 0x800, cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3, min = 0x10000, cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= need)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

void packplan_sample_of(const char *path, size_t *dirlen, size_t *stemlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *dot = base[0] ? strchr(base + 1, '.') : NULL;

	*dirlen = slash ? (size_t)(slash - path) : 0;
	*stemlen = dot ? (size_t)(dot - base) : strlen(base);
}

/* ---- building ---- */

int packplan_new(const struct packplan_conf *conf, struct packplan **out,
		 char *err, size_t errlen)
{
	const char *pat =
	    conf->pattern ? conf->pattern : PACKPLAN_DEFAULT_PATTERN;
	struct packplan *p;

	if (conf->shard_size < MIN_SHARD_SIZE) {
		set_err(err, errlen, "the shard size must be at least 1 MiB");
		return -EINVAL;
	}
	if (packplan_check_pattern(pat, err, errlen))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->pattern = strdup(pat))) {
		free(p);
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->conf = *conf;
	p->conf.pattern = p->pattern;
	buf_init(&p->scratch, HDR_CAP);
	*out = p;
	return 0;
}

void packplan_free(struct packplan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		const struct packplan_item *it =
		    p->items ? &p->items[i] : &p->recs[i].it;

		free((char *)it->path);
		free((char *)it->link);
		free((char *)it->version);
	}
	for (uint32_t i = 0; i < p->nshards; i++)
		free((char *)p->shards[i].key);
	free(p->recs);
	free(p->items);
	free(p->shards);
	free(p->pattern);
	buf_release(&p->scratch);
	free(p);
}

/* The one conversion from a member to its tar header, used both to plan
 * (header lengths) and to write. Members are owned by 0:0, mtimes are
 * whole seconds: the same tree gives the same bytes on any machine. */
static int write_header(enum packplan_kind kind, const char *path,
			const char *link, uint32_t mode, int64_t mtime,
			uint64_t size, struct buf *out)
{
	static const enum tarhdr_type types[] = {
	    [PACKPLAN_FILE] = TARHDR_REG,
	    [PACKPLAN_DIR] = TARHDR_DIR,
	    [PACKPLAN_SYMLINK] = TARHDR_SYMLINK,
	};
	struct tarhdr_wentry e = {
	    .path = path,
	    .link = link,
	    .type = types[kind],
	    .mode = mode & 07777,
	    .mtime = mtime,
	    .size = kind == PACKPLAN_FILE ? size : 0,
	};

	return tarhdr_write(&e, out);
}

int packplan_write_header(const struct packplan_item *it, struct buf *out)
{
	return write_header(it->kind, it->path, it->link, it->mode, it->mtime,
			    it->size, out);
}

static int header_len(struct packplan *p, const struct packplan_input *in,
		      uint32_t *len)
{
	int rc;

	buf_reset(&p->scratch);
	rc = write_header(in->kind, in->path, in->link, in->mode, in->mtime,
			  in->size, &p->scratch);
	if (rc == -E2BIG)
		rc = -ENAMETOOLONG;
	*len = (uint32_t)p->scratch.len;
	return rc;
}

static int check_input(const struct packplan_input *in)
{
	size_t n;

	if (!in->path || in->kind < PACKPLAN_FILE ||
	    in->kind > PACKPLAN_SYMLINK)
		return -EINVAL;
	if ((in->kind == PACKPLAN_SYMLINK) != (in->link != NULL))
		return -EINVAL;
	if (in->link && (strlen(in->link) > DSIDX_MAX_LINK))
		return -ENAMETOOLONG;
	if (in->size > (uint64_t)INT64_MAX)
		return -EINVAL;
	for (const char *p = in->path;; p += n + 1) {
		const char *s = strchr(p, '/');

		n = s ? (size_t)(s - p) : strlen(p);
		if (n > DSIDX_MAX_NAME)
			return -ENAMETOOLONG;
		if (!s)
			break;
	}
	return 0;
}

int packplan_add(struct packplan *p, const struct packplan_input *in)
{
	struct rec *r;
	size_t dl, sl;
	uint32_t hl;
	int rc;

	if (p->finished)
		return -EINVAL;
	rc = check_input(in);
	if (!rc)
		rc = header_len(p, in, &hl);
	if (rc)
		return rc;
	if (p->n >= (size_t)UINT32_MAX - 1)
		return -E2BIG;
	if (p->n == p->alloc) {
		size_t na = p->alloc ? p->alloc * 2 : 256;
		struct rec *nr = realloc(p->recs, na * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		p->recs = nr;
		p->alloc = na;
	}
	r = &p->recs[p->n];
	memset(r, 0, sizeof(*r));
	r->it.path = strdup(in->path);
	r->it.link = in->link ? strdup(in->link) : NULL;
	r->it.version = strdup(in->version ? in->version : "");
	if (!r->it.path || (in->link && !r->it.link) || !r->it.version) {
		free((char *)r->it.path);
		free((char *)r->it.link);
		free((char *)r->it.version);
		return -ENOMEM;
	}
	r->it.kind = in->kind;
	r->it.mode = in->mode & 07777;
	r->it.mtime = in->mtime;
	r->it.size = in->kind == PACKPLAN_FILE ? in->size : 0;
	r->it.hdr_len = hl;
	packplan_sample_of(in->path, &dl, &sl);
	r->dirlen = (uint32_t)dl;
	r->stemlen = (uint32_t)sl;
	p->n++;
	return 0;
}

/* ---- ordering ---- */

/* Bytes compared with '/' below every other byte: a directory's contents
 * sort right after it, before siblings that merely share a prefix. */
static int cmp_dirs(const char *a, size_t na, const char *b, size_t nb)
{
	size_t n = na < nb ? na : nb;

	for (size_t i = 0; i < n; i++) {
		unsigned ca = (unsigned char)a[i], cb = (unsigned char)b[i];

		if (ca == cb)
			continue;
		ca = ca == '/' ? 0 : ca + 1;
		cb = cb == '/' ? 0 : cb + 1;
		return ca < cb ? -1 : 1;
	}
	return na < nb ? -1 : na > nb;
}

static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb)
{
	int c = memcmp(a, b, na < nb ? na : nb);

	return c ? c : (na < nb ? -1 : na > nb);
}

static const char *stem_of(const struct rec *r)
{
	return r->it.path + r->dirlen + (r->dirlen ? 1 : 0);
}

/* -1/0/1 on the sample key alone: (directory, stem, is a directory). */
static int cmp_sample(const struct rec *x, const struct rec *y)
{
	int c = cmp_dirs(x->it.path, x->dirlen, y->it.path, y->dirlen);

	if (!c)
		c = cmp_bytes(stem_of(x), x->stemlen, stem_of(y), y->stemlen);
	if (!c)
		c = (x->it.kind == PACKPLAN_DIR) - (y->it.kind == PACKPLAN_DIR);
	return c;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = cmp_sample(x, y);

	return c ? c : strcmp(x->it.path, y->it.path);
}

/* Uniform in [0, n) from the generator state *S (Lemire's method with
 * rejection, so the result does not depend on anything but the seed). */
static uint64_t rand_below(uint64_t *s, uint64_t n)
{
	for (;;) {
		uint64_t x = mix64((*s)++);
		unsigned __int128 m = (unsigned __int128)x * n;
		uint64_t lo = (uint64_t)m;

		if (lo >= n || lo >= (uint64_t)(-n) % n)
			return (uint64_t)(m >> 64);
	}
}

/* Sample start indexes into the sorted records, plus an end sentinel. */
static int find_samples(struct packplan *p, uint32_t **starts, uint32_t *ns)
{
	uint32_t *st = malloc((p->n + 1) * sizeof(*st));
	uint32_t k = 0;

	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		bool dir = p->recs[i].it.kind == PACKPLAN_DIR;

		if (i == 0 || dir || cmp_sample(&p->recs[i - 1], &p->recs[i]))
			st[k++] = (uint32_t)i;
	}
	st[k] = (uint32_t)p->n;
	*starts = st;
	*ns = k;
	return 0;
}

/* ---- shards ---- */

static int add_shard(struct packplan *p, size_t first, size_t n, uint64_t size)
{
	struct packplan_shard *sh;
	char name[PACKPLAN_NAME_MAX + 1];
	void *np;

	if (p->nshards >= DSIDX_MAX_SHARDS - 1)
		return -E2BIG;
	np = realloc(p->shards, (p->nshards + 1) * sizeof(*p->shards));
	if (!np)
		return -ENOMEM;
	p->shards = np;
	sh = &p->shards[p->nshards];
	memset(sh, 0, sizeof(*sh));
	if (packplan_format_name(p->pattern, p->nshards, name, sizeof(name)))
		return -EINVAL; /* checked in packplan_new() */
	sh->key = strdup(name);
	if (!sh->key)
		return -ENOMEM;
	sh->first = first;
	sh->nitems = n;
	sh->size = size;
	p->nshards++;
	return 0;
}

static uint64_t item_bytes(const struct packplan_item *it)
{
	return it->hdr_len + it->size + tarhdr_pad_len(it->size);
}

/* Appends sample S (records [a, b)) to the items, in shard SHARD at
 * offset *OFF. */
static void place_sample(struct packplan *p, const struct rec *a,
			 const struct rec *b, uint32_t sample, uint32_t shard,
			 uint64_t *off, size_t *nout)
{
	for (const struct rec *r = a; r < b; r++) {
		struct packplan_item *it = &p->items[(*nout)++];

		*it = r->it;
		it->sample = sample;
		it->shard = shard;
		it->offset = *off;
		it->data_offset = *off + it->hdr_len;
		*off += item_bytes(it);
	}
}

static int assign(struct packplan *p, const uint32_t *starts,
		  const uint32_t *order, uint32_t ns)
{
	uint64_t off = 0, max = p->conf.shard_size;
	size_t nout = 0, first = 0;
	int rc = 0;

	for (uint32_t k = 0; !rc && k < ns; k++) {
		const struct rec *a = &p->recs[starts[order[k]]];
		const struct rec *b = &p->recs[starts[order[k] + 1]];
		uint64_t bytes = 0;

		for (const struct rec *r = a; r < b; r++)
			bytes += item_bytes(&r->it);
		if (off > 0 && off + bytes + END_MARKER > max) {
			rc =
			    add_shard(p, first, nout - first, off + END_MARKER);
			first = nout;
			off = 0;
		}
		if (rc)
			break;
		place_sample(p, a, b, k, p->nshards, &off, &nout);
		if (off + END_MARKER >= max) {
			rc =
			    add_shard(p, first, nout - first, off + END_MARKER);
			first = nout;
			off = 0;
		}
	}
	if (!rc && nout > first)
		rc = add_shard(p, first, nout - first, off + END_MARKER);
	return rc;
}

static void fp_u64(EVP_MD_CTX *c, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	EVP_DigestUpdate(c, b, sizeof(b));
}

static void fp_str(EVP_MD_CTX *c, const char *s)
{
	size_t n = s ? strlen(s) + 1 : 0;

	fp_u64(c, n);
	if (n)
		EVP_DigestUpdate(c, s, n);
}

/* SHA-256 over everything that decides the shard's bytes, and over each
 * member's source version. */
static int fingerprint(struct packplan *p, struct packplan_shard *sh)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(c);
		return -ENOMEM;
	}
	fp_str(c, "shardfs-pack-fp-1");
	fp_str(c, sh->key);
	fp_u64(c, sh->size);
	for (size_t i = sh->first; i < sh->first + sh->nitems; i++) {
		const struct packplan_item *it = &p->items[i];

		fp_u64(c, (uint64_t)it->kind);
		fp_str(c, it->path);
		fp_str(c, it->link);
		fp_str(c, it->version);
		fp_u64(c, it->mode);
		fp_u64(c, (uint64_t)it->mtime);
		fp_u64(c, it->size);
		fp_u64(c, it->offset);
	}
	if (!EVP_DigestFinal_ex(c, md, &mdlen) || mdlen != 32) {
		EVP_MD_CTX_free(c);
		return -ENOMEM;
	}
	EVP_MD_CTX_free(c);
	for (unsigned i = 0; i < 32; i++)
		snprintf(sh->fp + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static void count_shards(struct packplan *p)
{
	for (uint32_t s = 0; s < p->nshards; s++) {
		struct packplan_shard *sh = &p->shards[s];

		for (size_t i = sh->first; i < sh->first + sh->nitems; i++) {
			if (p->items[i].kind != PACKPLAN_FILE)
				continue;
			sh->files++;
			sh->data_bytes += p->items[i].size;
		}
		p->total_bytes += sh->size;
		p->total_files += sh->files;
	}
}

int packplan_finish(struct packplan *p)
{
	uint32_t *starts = NULL, *order = NULL, ns = 0;
	uint64_t rng = p->conf.seed;
	int rc;

	if (p->finished)
		return -EINVAL;
	if (p->n > 1)
		qsort(p->recs, p->n, sizeof(*p->recs), cmp_rec);
	rc = find_samples(p, &starts, &ns);
	if (rc)
		return rc;
	order = malloc((ns ? ns : 1) * sizeof(*order));
	p->items = calloc(p->n ? p->n : 1, sizeof(*p->items));
	if (!order || !p->items) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < ns; k++)
		order[k] = k;
	for (uint32_t k = ns; p->conf.shuffle && k > 1; k--) {
		uint32_t j = (uint32_t)rand_below(&rng, k), t = order[k - 1];

		order[k - 1] = order[j];
		order[j] = t;
	}
	rc = assign(p, starts, order, ns);
	for (uint32_t s = 0; !rc && s < p->nshards; s++)
		rc = fingerprint(p, &p->shards[s]);
	if (rc)
		goto out;
	/* The strings now belong to the items. */
	free(p->recs);
	p->recs = NULL;
	p->nsamples = ns;
	count_shards(p);
	p->finished = true;
out:
	if (rc && p->items) {
		free(p->items);
		p->items = NULL;
	}
	free(starts);
	free(order);
	return rc;
}

size_t packplan_nitems(const struct packplan *p)
{
	return p->finished ? p->n : 0;
}

const struct packplan_item *packplan_item(const struct packplan *p, size_t i)
{
	return &p->items[i];
}

uint32_t packplan_nshards(const struct packplan *p)
{
	return p->nshards;
}

const struct packplan_shard *packplan_shard(const struct packplan *p,
					    uint32_t i)
{
	return &p->shards[i];
}

uint64_t packplan_total_bytes(const struct packplan *p)
{
	return p->total_bytes;
}

uint64_t packplan_total_files(const struct packplan *p)
{
	return p->total_files;
}

uint32_t packplan_nsamples(const struct packplan *p)
{
	return p->nsamples;
}

/* ---- the dataset index ---- */

static int index_members(const struct packplan *p, struct dsidx_builder *b,
			 const uint32_t *h, const struct packplan_root *root)
{
	int rc = 0;

	if (root && root->known)
		rc = dsidx_builder_add_dir(b, "", root->mode, root->mtime, 0);
	for (size_t i = 0; !rc && i < p->n; i++) {
		const struct packplan_item *it = &p->items[i];

		if (it->kind == PACKPLAN_DIR)
			rc = dsidx_builder_add_dir(b, it->path, it->mode,
						   it->mtime, 0);
		else if (it->kind == PACKPLAN_SYMLINK)
			rc = dsidx_builder_add_member(b, it->path, DSIDX_NONE,
						      0, 0, S_IFLNK | it->mode,
						      it->mtime, 0, it->link);
		else
			rc = dsidx_builder_add_member(
			    b, it->path, h[it->shard], it->data_offset,
			    it->size, S_IFREG | it->mode, it->mtime, 0, NULL);
	}
	return rc;
}

int packplan_build_index(const struct packplan *p, const char *const *etags,
			 const struct packplan_root *root, int64_t created,
			 struct buf *out)
{
	uint32_t *h;
	struct dsidx_builder *b = NULL;
	int rc;

	if (!p->finished)
		return -EINVAL;
	h = calloc(p->nshards ? p->nshards : 1, sizeof(*h));
	rc = h ? dsidx_builder_new(NULL, &b) : -ENOMEM;
	for (uint32_t i = 0; !rc && i < p->nshards; i++)
		rc = dsidx_builder_add_shard(b, p->shards[i].key,
					     etags ? etags[i] : "",
					     p->shards[i].size, &h[i]);
	if (!rc)
		rc = index_members(p, b, h, root);
	if (!rc)
		rc = dsidx_builder_finish(b, created, out);
	dsidx_builder_free(b);
	free(h);
	return rc;
}
