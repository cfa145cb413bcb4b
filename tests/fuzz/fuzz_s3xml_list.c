// SPDX-License-Identifier: MIT
/* libFuzzer: ListObjectsV2 bodies, plus the multipart result parsers. */
#include <stdint.h>
#include <stdlib.h>

#include "s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3xml_list l;
	char *s = NULL;

	if (s3xml_parse_list((const char *)data, size, &l) == 0) {
		for (size_t i = 0; i < l.nobjects; i++)
			if (!l.objects[i].key[0])
				abort();
		if (l.truncated && !l.next_token)
			abort();
		s3xml_list_release(&l);
	}
	if (s3xml_parse_upload_id((const char *)data, size, &s) == 0)
		free(s);
	if (s3xml_parse_complete((const char *)data, size, &s) == 0)
		free(s);
	return 0;
}
