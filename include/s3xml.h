/* SPDX-License-Identifier: MIT */
#ifndef SHARDFS_S3XML_H
#define SHARDFS_S3XML_H

/*
 * S3 XML bodies (pure: no I/O, no threads, no globals), parsed with expat.
 *
 * Elements are matched on their local names (any namespace or prefix is
 * ignored), unknown elements are skipped. Every parser refuses a DOCTYPE
 * (so no entity can be declared: no billion laughs, no external entities).
 *
 * Common results of the parse functions:
 *   0            success
 *   -EBADMSG     malformed XML, an unexpected root element, a missing or
 *                malformed required field
 *   -EREMOTEIO   the body is an S3 <Error> document (S3 may answer 200 with
 *                an error, e.g. CompleteMultipartUpload): give it to
 *                s3xml_parse_error()
 *   -E2BIG       a bound was exceeded (value length, entry count)
 *   -ENOMEM
 *
 * Memory: the caller bounds the body (S3XML_MAX_BODY is the suggested cap
 * of the buf that receives it); everything the parsers keep is at most a
 * small constant factor of the body length.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Suggested cap for a ListObjectsV2 (or other XML) response body. */
#define S3XML_MAX_BODY (64u << 20)
/* Longest key, prefix, token, ETag or other value kept (S3 keys <= 1024). */
#define S3XML_MAX_VALUE 4096
/* Most objects + common prefixes accepted in one listing page. */
#define S3XML_MAX_ENTRIES 100000
/* Deepest element nesting accepted. */
#define S3XML_MAX_DEPTH 32
/* Most parts in a multipart upload (S3 limit). */
#define S3XML_MAX_PARTS 10000
/* Size of the buffer s3xml_format_time() needs: "2026-11-29T21:36:56Z". */
#define S3XML_TIME_LEN 21

struct s3xml_object {
	char *key;	     /* owned; decoded; never empty, never holds NUL */
	uint64_t size;	     /* bytes */
	int64_t mtime;	     /* LastModified, UTC seconds; 0 when absent */
	uint32_t mtime_nsec; /* sub-second part of LastModified */
	char *etag;	     /* owned; quoted exactly as sent ("\"abc\"");
				NULL when absent */
	char *storage_class; /* owned; NULL when absent */
};

/*
 * One ListObjectsV2 page. Released with s3xml_list_release(), which frees
 * every string and both arrays.
 */
struct s3xml_list {
	struct s3xml_object *objects; /* owned array; NULL when nobjects == 0 */
	size_t nobjects;
	char **prefixes; /* owned array of owned CommonPrefixes/Prefix values,
			    decoded; NULL when nprefixes == 0 */
	size_t nprefixes;
	bool truncated;	  /* IsTruncated */
	char *next_token; /* owned NextContinuationToken (raw, never
			     decoded); non-NULL and non-empty when truncated,
			     NULL otherwise */
	bool has_key_count;
	uint64_t key_count; /* KeyCount, when has_key_count */
	bool url_encoded;   /* the body said EncodingType=url */
};

/*
 * Parses a ListObjectsV2 result (root <ListBucketResult>) into OUT (which
 * is overwritten; release it with s3xml_list_release() after success only:
 * on failure OUT holds nothing).
 *
 * Each <Contents> needs a non-empty Key and a decimal Size; LastModified
 * (ISO 8601) and ETag are optional. With <EncodingType>url</EncodingType>
 * (wherever it appears in the body), Contents/Key and CommonPrefixes/Prefix
 * are URL-decoded: %XX is a byte and '+' is a space (servers that encode
 * send a literal '+' as %2B). Other fields (Prefix, Delimiter, StartAfter)
 * are not used, since servers differ on whether they encode them. A bad
 * escape or a decoded NUL is -EBADMSG. IsTruncated=true without a
 * NextContinuationToken is -EBADMSG.
 */
int s3xml_parse_list(const char *body, size_t len, struct s3xml_list *out);
void s3xml_list_release(struct s3xml_list *l);

/*
 * An S3 error body (root <Error>, or <Error> directly inside another root
 * such as <ErrorResponse>). Fields are NUL-terminated, "" when absent,
 * truncated at a UTF-8 character boundary when too long, with control
 * characters replaced by spaces (safe to log on one line).
 */
struct s3xml_error {
	char code[64]; /* "NoSuchKey", "SlowDown", ... */
	char message[512];
	char resource[256];
	char request_id[128];
	char host_id[256];
	char region[64]; /* <Region>, e.g. for AuthorizationHeaderMalformed */
	char endpoint[256]; /* <Endpoint>, e.g. for PermanentRedirect */
};

/* Parses an error body into OUT (zeroed first, also on failure). 0,
 * -EBADMSG (not XML, or no <Error> element), -ENOMEM. */
int s3xml_parse_error(const char *body, size_t len, struct s3xml_error *out);

/* InitiateMultipartUploadResult -> *UPLOAD_ID (caller frees). */
int s3xml_parse_upload_id(const char *body, size_t len, char **upload_id);

/* CompleteMultipartUploadResult -> *ETAG, quoted as sent (caller frees).
 * -EREMOTEIO when S3 answered 200 with an <Error> body. */
int s3xml_parse_complete(const char *body, size_t len, char **etag);

struct s3xml_part {
	uint32_t number;  /* 1 .. S3XML_MAX_PARTS, strictly ascending */
	const char *etag; /* borrowed for the call; as the server sent it */
};

/*
 * Appends a CompleteMultipartUpload request body listing N parts (1 ..
 * S3XML_MAX_PARTS) to OUT. ETags are XML-escaped. -EINVAL for a bad part
 * list (order, numbers, empty ETag or one with control characters), or a
 * buf error (-E2BIG, -ENOMEM; OUT may then hold a partial body).
 */
int s3xml_build_complete(const struct s3xml_part *parts, size_t n,
			 struct buf *out);

/*
 * Parses an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|
 * -HH:MM)" into seconds since the epoch and nanoseconds (NSEC may be
 * NULL). Years 0000..9999; a leap second (:60) rolls into the next minute.
 * 0 or -EINVAL.
 */
int s3xml_parse_time(const char *s, int64_t *sec, uint32_t *nsec);

/*
 * Formats T as "YYYY-MM-DDTHH:MM:SSZ" (UTC) into OUT (at least
 * S3XML_TIME_LEN bytes). 0, -ERANGE when OUTLEN is too small, -EOVERFLOW
 * for a year outside 0..9999.
 */
int s3xml_format_time(int64_t t, char *out, size_t outlen);

#endif
