// SPDX-License-Identifier: MIT
/* libFuzzer: S3 error bodies; every field stays NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3xml_error e;

	s3xml_parse_error((const char *)data, size, &e);
	if (strnlen(e.code, sizeof(e.code)) == sizeof(e.code) ||
	    strnlen(e.message, sizeof(e.message)) == sizeof(e.message) ||
	    strnlen(e.endpoint, sizeof(e.endpoint)) == sizeof(e.endpoint))
		abort();
	for (const char *p = e.message; *p; p++)
		if (*p == '\n' || *p == '\r')
			abort();
	return 0;
}
