/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_STORE_S3_H
#define SHARDFS_STORE_S3_H

/*
 * The S3 backend of the store interface, over the s3c engine. Keys of the
 * store are relative to PREFIX inside BUCKET.
 */

#include <stdbool.h>
#include <stdint.h>

#include "s3xml.h"
#include "store.h"

struct s3c;

/*
 * A store over ENGINE (taken: freed by store_free()), for BUCKET and
 * PREFIX ("" or a key prefix; a '/' is added when missing and PREFIX is
 * not empty). 0 or -ENOMEM.
 */
int store_s3_new(struct s3c *engine, const char *bucket, const char *prefix,
		 struct store **out);

/* The engine of a store made by store_s3_new() (borrowed). */
struct s3c *store_s3_engine(struct store *s);

/*
 * Called for each ListObjectsV2 page, in order; return 0 to go on or a
 * negative errno to stop (returned by store_s3_list_pages()).
 */
typedef int store_s3_page_fn(const struct s3xml_list *page, void *arg);

/*
 * Lists BUCKET under PREFIX (raw), with DELIMITER ("/" or NULL for a
 * recursive listing), following continuation tokens to the end. A token
 * that repeats is an error, not an endless loop. On error returns a
 * negative errno and writes a one-line message into MSG.
 */
int store_s3_list_pages(struct s3c *engine, const char *bucket,
			const char *prefix, const char *delimiter,
			store_s3_page_fn *fn, void *arg, char *msg,
			size_t msglen);

#endif
