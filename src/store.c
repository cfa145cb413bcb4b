// SPDX-License-Identifier: MIT
/*
 * Helpers shared by every store backend: releasing listings and entries.
 */
#include "store.h"

#include <stdlib.h>

void store_entry_release(struct store_entry *e)
{
	free(e->name);
	free(e->etag);
	e->name = NULL;
	e->etag = NULL;
}

void store_listing_release(struct store_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		store_entry_release(&l->entries[i]);
	free(l->entries);
	l->entries = NULL;
	l->n = 0;
}
