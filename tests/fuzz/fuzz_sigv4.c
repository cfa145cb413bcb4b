// SPDX-License-Identifier: MIT
/*
 * libFuzzer: SigV4 signing of arbitrary requests. The input is split at
 * '\n' into method, host, path, then "q<name>=<value>" / "q<name>" query
 * lines and "h<name>:<value>" header lines; the first byte picks the
 * flags. Signing must never crash, and what it asks the caller to send
 * must hold no byte outside the URI-encoded set (no CR/LF injection).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sent(const struct sigv4_signed *s)
{
	const char *ok = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789-._~%/&=";

	if (strspn(buf_str(&s->canonical_uri), ok) != s->canonical_uri.len ||
	    strspn(buf_str(&s->canonical_query), ok) !=
		s->canonical_query.len ||
	    strpbrk(buf_str(&s->authorization), "\r\n"))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigv4_param q[SIGV4_MAX_PARAMS + 1];
	struct sigv4_header h[SIGV4_MAX_HEADERS + 1];
	const char *f[3] = {"", "", ""};
	struct sigv4_request r = {.query = q,
				  .headers = h,
				  .region = "r",
				  .service = "s3",
				  .when = 1440938160};
	struct sigv4_creds c = {"AK", "SK", size & 1 ? "tok" : NULL};
	struct sigv4_signed out;
	struct buf enc;
	char *s, *line, *next, *sep;
	size_t nf = 0;

	if (size == 0 || !(s = malloc(size)))
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	for (line = s; line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (nf < 3) {
			f[nf++] = line;
		} else if (line[0] == 'q' && r.nquery <= SIGV4_MAX_PARAMS) {
			sep = strchr(line, '=');
			if (sep)
				*sep++ = '\0';
			q[r.nquery++] = (struct sigv4_param){line + 1, sep};
		} else if (line[0] == 'h' && r.nheaders <= SIGV4_MAX_HEADERS &&
			   (sep = strchr(line, ':'))) {
			*sep++ = '\0';
			h[r.nheaders++] = (struct sigv4_header){line + 1, sep};
		}
	}
	r.method = f[0];
	r.host = f[1];
	r.path = f[2];
	r.s3_path = data[0] & 1;
	r.content_sha256_header = data[0] & 2;
	r.payload_hash =
	    data[0] & 4 ? SIGV4_UNSIGNED_PAYLOAD : SIGV4_EMPTY_SHA256;
	sigv4_signed_init(&out);
	if (sigv4_sign(&r, &c, NULL, &out) == 0)
		check_sent(&out);
	if (sigv4_presign(&r, &c, NULL, 1u + data[0], &out) == 0)
		check_sent(&out);
	sigv4_signed_release(&out);
	buf_init(&enc, 4 * size);
	if (sigv4_uri_encode((const char *)data, size, data[0] & 8, &enc))
		abort();
	buf_release(&enc);
	free(s);
	return 0;
}
