// SPDX-License-Identifier: MIT
/*
 * Bounded growable buffer. Invariant: data == NULL or data[len] == '\0',
 * len <= cap, len < alloc. Growth doubles, clamped to cap + 1.
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

void buf_release(struct buf *b)
{
	free(b->data);
	buf_init(b, b->cap);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t n)
{
	size_t need, nalloc;
	char *p;

	if (n > b->cap || b->len > b->cap - n)
		return -E2BIG;
	need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	nalloc = b->alloc ? b->alloc : 64;
	while (nalloc < need)
		nalloc = nalloc > SIZE_MAX / 2 ? need : nalloc * 2;
	if (nalloc > b->cap + 1)
		nalloc = b->cap + 1;
	p = realloc(b->data, nalloc);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->alloc = nalloc;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	rc = buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	if (len)
		*len = b->len;
	buf_init(b, b->cap);
	return p;
}

const char *buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}
