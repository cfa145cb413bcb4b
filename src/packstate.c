// SPDX-License-Identifier: MIT
/*
 * The pack state text (see packstate.h): parse, format, find, set.
 * Entries stay in insertion order; lookups are linear, which is fine for
 * the few thousand shards a dataset has (one lookup per shard).
 *
 * Pure: no I/O, no threads, no globals.
 */
#include "packstate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "shardfs-pack-state 1"

void packstate_init(struct packstate *s)
{
	memset(s, 0, sizeof(*s));
}

void packstate_release(struct packstate *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].key);
		free(s->e[i].etag);
	}
	free(s->e);
	packstate_init(s);
}

static bool token_ok(const char *t, bool allow_empty)
{
	if (!*t)
		return allow_empty;
	for (; *t; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
			return false;
	return true;
}

static bool fp_ok(const char *fp)
{
	if (strlen(fp) != 64)
		return false;
	for (; *fp; fp++)
		if (!((*fp >= '0' && *fp <= '9') || (*fp >= 'a' && *fp <= 'f')))
			return false;
	return true;
}

const struct packstate_entry *packstate_find(const struct packstate *s,
					     const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->e[i].key, key) == 0)
			return &s->e[i];
	return NULL;
}

void packstate_remove(struct packstate *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->e[i].key, key) != 0)
			continue;
		free(s->e[i].key);
		free(s->e[i].etag);
		memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
		s->n--;
		return;
	}
}

int packstate_set(struct packstate *s, const char *key, uint64_t size,
		  const char *etag, const char *fp)
{
	struct packstate_entry *e =
	    (struct packstate_entry *)packstate_find(s, key);
	char *k, *t;

	if (!etag || strcmp(etag, "-") == 0)
		etag = "";
	if (!token_ok(key, false) || !token_ok(etag, true) || !fp_ok(fp))
		return -EINVAL;
	k = strdup(key);
	t = strdup(etag);
	if (!k || !t) {
		free(k);
		free(t);
		return -ENOMEM;
	}
	if (!e) {
		if (s->n == s->alloc) {
			size_t na = s->alloc ? s->alloc * 2 : 64;
			void *p = realloc(s->e, na * sizeof(*s->e));

			if (!p) {
				free(k);
				free(t);
				return -ENOMEM;
			}
			s->e = p;
			s->alloc = na;
		}
		e = &s->e[s->n++];
	} else {
		free(e->key);
		free(e->etag);
	}
	e->key = k;
	e->etag = t;
	e->size = size;
	memcpy(e->fp, fp, 65);
	return 0;
}

/* One line of LEN bytes (no newline): "KEY SIZE ETAG FP". */
static int parse_line(const char *line, size_t len, struct packstate *out)
{
	char buf[2048], *f[4], *save = NULL, *end;
	unsigned long long size;
	int n = 0;

	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, line, len);
	buf[len] = '\0';
	for (char *t = strtok_r(buf, " ", &save); t && n < 4;
	     t = strtok_r(NULL, " ", &save))
		f[n++] = t;
	if (n != 4 || strtok_r(NULL, " ", &save))
		return 0;
	if (f[1][0] < '0' || f[1][0] > '9')
		return 0;
	errno = 0;
	size = strtoull(f[1], &end, 10);
	if (errno || *end)
		return 0;
	int rc = packstate_set(out, f[0], size, f[2], f[3]);

	return rc == -EINVAL ? 0 : rc;
}

int packstate_parse(const char *data, size_t len, struct packstate *out)
{
	size_t i = 0;
	bool header = false;
	int rc = 0;

	packstate_init(out);
	while (!rc && i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : len - i;

		if (!header) {
			header = n == strlen(HEADER) &&
				 memcmp(data + i, HEADER, n) == 0;
			if (!header)
				break;
		} else {
			rc = parse_line(data + i, n, out);
		}
		i += n + 1;
	}
	if (rc)
		packstate_release(out);
	return rc;
}

int packstate_format(const struct packstate *s, struct buf *out)
{
	int rc = buf_append_str(out, HEADER "\n");

	for (size_t i = 0; !rc && i < s->n; i++)
		rc = buf_printf(
		    out, "%s %" PRIu64 " %s %s\n", s->e[i].key, s->e[i].size,
		    s->e[i].etag[0] ? s->e[i].etag : "-", s->e[i].fp);
	return rc;
}
