// SPDX-License-Identifier: MIT
/*
 * libFuzzer: jsonflat on any bytes. A document that parses stays within
 * the limits, every item can be found again by its path, every number is
 * a number again when parsed alone, and the getters never crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonflat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_item(const struct jsonflat *j,
		       const struct jsonflat_item *it)
{
	struct jsonflat one;
	uint64_t u;
	double d;

	if (!it->path || !it->text || it->type > JSONFLAT_STRING ||
	    strlen(it->path) >= JSONFLAT_MAX_PATH)
		abort();
	if (jsonflat_get(j, it->path) == NULL)
		abort();
	if (it->type == JSONFLAT_NUMBER) {
		if (jsonflat_parse(it->text, strlen(it->text), &one, NULL, 0) ||
		    one.n != 1 || one.items[0].type != JSONFLAT_NUMBER ||
		    strcmp(one.items[0].text, it->text) != 0)
			abort();
		jsonflat_release(&one);
	}
	if (jsonflat_u64(j, it->path, &u) == -ENOENT &&
	    jsonflat_get(j, it->path)->type != JSONFLAT_NULL)
		abort();
	jsonflat_double(j, it->path, &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonflat j;
	char msg[160];
	int rc;

	rc = jsonflat_parse((const char *)data, size, &j, msg, sizeof(msg));
	if (rc == 0) {
		if (j.n > JSONFLAT_MAX_ITEMS)
			abort();
		for (size_t i = 0; i < j.n; i++)
			check_item(&j, &j.items[i]);
	} else if ((rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM) ||
		   j.n != 0 || j.items != NULL || msg[0] == '\0') {
		abort();
	}
	jsonflat_release(&j);
	return 0;
}
