// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the tar scanner. Input = one control byte + a tar image.
 * Control bits 0-3: window size (0: the whole image, else N * 300 bytes,
 * so windows also end inside blocks); bit 5: every non-zero block gets
 * a valid header checksum first (mutations rarely keep one, and the
 * paths behind it are the interesting ones); bit 6: tiny limits (to
 * reach the limit paths); bit 7: tar_size claims 1 MiB more than the image
 * holds (the scan stops when it needs bytes past the image). The scan is driven
 * like the shard indexer drives it, and every entry is checked against
 * the image bounds. Calls are bounded by the image size: a scan that
 * does not progress aborts.
 *
 * Seeds (tests/fuzz/corpus/tarhdr): small archives from GNU tar (gnu,
 * posix, ustar, v7, old GNU and pax 0.0/0.1/1.0 sparse with
 * --hole-detection=raw) and Python's tarfile (GNU base-256 numbers, pax
 * with a global header, devices), each behind a few control bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarhdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const struct tarhdr_entry *e, uint64_t tar_size)
{
	uint64_t end = e->data_offset + e->stored_size;
	uint64_t prev = 0;

	if (!e->path || e->path[0] == '/' || strstr(e->path, "//") ||
	    e->header_offset + TARHDR_BLOCK > e->data_offset ||
	    end > tar_size || end < e->data_offset)
		abort();
	if ((e->type == TARHDR_SYMLINK || e->type == TARHDR_HARDLINK) !=
	    (e->link != NULL))
		abort();
	if (e->type == TARHDR_REG && !e->is_sparse && e->size != e->stored_size)
		abort();
	if (!e->is_sparse && (e->sparse || e->nsparse))
		abort();
	for (size_t i = 0; i < e->nsparse; i++) {
		const struct tarhdr_sparse *sp = &e->sparse[i];

		if (!sp->length || sp->offset < prev ||
		    sp->offset + sp->length > e->size ||
		    sp->archive_offset < e->data_offset ||
		    sp->archive_offset + sp->length > end)
			abort();
		prev = sp->offset + sp->length;
	}
}

/* A copy of IMG where every non-zero block has a valid checksum. */
static uint8_t *fix_sums(const uint8_t *img, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		abort();
	memcpy(p, img, len);
	for (size_t off = 0; off + TARHDR_BLOCK <= len; off += TARHDR_BLOCK) {
		uint8_t *h = p + off;
		unsigned sum = 0;
		bool zero = true;

		for (size_t i = 0; i < TARHDR_BLOCK && zero; i++)
			zero = !h[i];
		if (zero)
			continue;
		memset(h + 148, ' ', 8);
		for (size_t i = 0; i < TARHDR_BLOCK; i++)
			sum += h[i];
		for (int i = 6; i-- > 0; sum >>= 3)
			h[148 + i] = (uint8_t)('0' + (sum & 7));
		h[154] = '\0';
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tarhdr_limits tiny = {64, 2048, 2, 4};
	struct tarhdr_scan s;
	struct tarhdr_entry e;
	const uint8_t *img = data + 1;
	uint8_t *fixed = NULL;
	size_t len, wsize, wlen, calls = 0, max_calls;
	uint64_t tar_size, woff = 0, noff, nlen;
	int rc;

	if (size < 1)
		return 0;
	len = size - 1;
	if (data[0] & 0x20)
		img = fixed = fix_sums(img, len);
	wsize = (size_t)(data[0] & 0x0f) * 300;
	tar_size = len + ((data[0] & 0x80) ? (1u << 20) : 0);
	wlen = wsize && wsize < len ? wsize : len;
	/* each call ends with an entry, a request or the end; an entry
	 * consumes a block, a request is followed by a call that consumes
	 * one (the window holds what it asked for) */
	max_calls = (len / TARHDR_BLOCK) * 2 + 4;
	tarhdr_scan_init(&s, tar_size, (data[0] & 0x40) ? &tiny : NULL);
	for (;;) {
		if (++calls > max_calls)
			abort();
		rc = tarhdr_scan_next(&s, img + woff, wlen, woff, &e, &noff,
				      &nlen);
		if (rc == TARHDR_ENTRY) {
			check_entry(&e, tar_size);
			continue;
		}
		if (rc != TARHDR_NEED)
			break;
		if (!nlen || noff + nlen > tar_size ||
		    (noff >= woff && noff + nlen <= woff + wlen))
			abort();
		if (noff + nlen > len)
			break;
		woff = noff;
		wlen = wsize > nlen ? wsize : (size_t)nlen;
		if (wlen > len - woff)
			wlen = len - (size_t)woff;
	}
	if (rc < 0 && (!s.err_msg || !s.err_msg[0]))
		abort();
	if (rc == TARHDR_END && s.end == TARHDR_END_NONE)
		abort();
	tarhdr_scan_release(&s);
	free(fixed);
	return 0;
}
