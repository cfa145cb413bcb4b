// SPDX-License-Identifier: MIT
/*
 * The namespace: inodes in a uthash table keyed by inode number, and
 * directory entries in a second table keyed by (parent inode, name). An
 * inode is in at most one directory (each listing makes its own inodes),
 * so the entry table is a second hash handle on the inode itself.
 *
 * Index-backed inodes (directories, members and symlinks of a shard's
 * index or of the dataset index) are "lazy": made by a lookup from a
 * binary search of the index, kept in the entry table so that a second
 * lookup finds the same inode, and freed when the kernel forgets the last
 * lookup. Each holds a reference to its index image (struct ns_img), an
 * immutable, reference-counted pair of bytes and open dsidx; the image
 * lives as long as any inode, readdir snapshot or open file uses it.
 *
 * Invariants (all under ns->lock):
 *  - a listed inode (not lazy) is "linked" (in the entry table) exactly
 *    when it is in its parent's children array; a lazy inode is linked
 *    from its creation until it is freed; the control directory is not
 *    linked (it is found by name at the root, before anything else);
 *  - an inode is freed when nothing holds it: not linked (lazy inodes:
 *    linked does not hold them), no kernel lookups, no pins of running
 *    calls; freeing a directory unlinks its listed children (which may
 *    free them in turn);
 *  - a listed directory's children array is sorted by name and has no
 *    duplicates; it changes only when a listing is applied;
 *  - a shard's image is set once, when its indexing succeeds, and never
 *    changes (a shard whose ETag or size changes on a relist is a new
 *    inode).
 *
 * Threading: ns->lock protects the tables, the counters and every mutable
 * inode field. It is released around store->list(), the shard indexer
 * and the stats generator; a directory in state NS_LISTING is being
 * listed (a shard indexed) by one thread and others wait on ns->listed.
 * ns->odd_lock protects only the set of messages already logged; it is a
 * leaf lock, never held together with ns->lock. Image reference counts
 * are atomic, so snapshots and open files release them without a lock.
 */
#include "ns.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <uthash.h>

#include "dsidx.h"
#include "log.h"

#define DKEY_PREFIX    sizeof(uint64_t)
#define CTL_PAGE       4096u	  /* the stats file is padded to pages */
#define CTL_TEXT_CAP   (1u << 20) /* bytes of the stats text */
#define SEGS_PER_READ  65536u	  /* segments of one sparse read */

enum ns_list_state {
	NS_UNLISTED,
	NS_LISTING,
	NS_LISTED,
};

/* An index image: bytes and the dsidx open on them. Immutable. */
struct ns_img {
	_Atomic unsigned refs;
	struct dsidx *x; /* owned */
	char *bytes;	 /* owned */
	bool dataset;	 /* the dataset index: ".shardfs" hidden at dir 0 */
};

struct ns_inode {
	uint64_t ino;	     /* immutable */
	enum ns_kind kind;   /* immutable */
	uint64_t parent;     /* immutable: the directory that made it */
	char *key;	     /* immutable, owned: object key, or prefix ending
				in '/' ("" for the root); NULL when lazy */
	unsigned char *dkey; /* immutable, owned: parent ino + name + NUL */
	size_t dkeylen;	     /* immutable: DKEY_PREFIX + strlen(name) */
	bool permanent;	     /* immutable: root, control inodes */
	bool lazy;	     /* immutable: made from an index on lookup */
	bool dynamic;	     /* immutable: a generated control file */
	struct ns_img *img;  /* immutable ref (lazy inodes, dataset root);
				NS_SHARD: lock, set once indexed */
	uint32_t idx;	     /* immutable: dir or member index in img */
	uint64_t size;	     /* lock */
	int64_t mtime;	     /* lock */
	uint32_t mtime_nsec; /* lock */
	char *etag;	     /* lock, owned */
	uint64_t nlookup;    /* lock: kernel lookups */
	unsigned pins;	     /* lock: calls using the inode unlocked */
	bool linked;	     /* lock: in ns->dentries */
	bool seen;	     /* lock: scratch of apply_listing() */
	/* Directories and shards (lock). */
	enum ns_list_state lstate;
	uint64_t list_seq;	    /* listings attempted, for waiters */
	int list_err;		    /* result of the last attempt */
	time_t listed_at;	    /* monotonic seconds */
	time_t failed_at;	    /* NS_SHARD: last failure, monotonic */
	struct ns_inode **children; /* owned array, sorted by name */
	size_t nchildren;
	/* Control files (lock). */
	char *data; /* owned */
	UT_hash_handle hh; /* ns->inodes, keyed by ino */
	UT_hash_handle hd; /* ns->dentries, keyed by dkey, while linked */
};

struct ns_odd {
	UT_hash_handle hh;
	char key[];
};

struct ns {
	struct store *store; /* borrowed, immutable */
	unsigned ttl;	     /* immutable */
	int64_t start_time;  /* immutable: mtime of directories */
	bool tar_dirs;	     /* immutable */
	ns_index_shard_fn *index_shard; /* immutable */
	void *index_arg;		/* immutable */
	ns_stats_fn *stats_fn;		/* immutable */
	void *stats_arg;		/* immutable */
	struct ns_img *dataset;		/* immutable ref, or NULL */
	pthread_mutex_t lock;
	pthread_cond_t listed;	   /* broadcast when a listing ends */
	struct ns_inode *inodes;   /* lock */
	struct ns_inode *dentries; /* lock */
	uint64_t next_ino;	   /* lock */
	struct ns_stats st;	   /* lock (inodes: computed on demand) */
	struct ns_inode *root;	   /* immutable pointer */
	struct ns_inode *ctl;	   /* immutable pointer */
	pthread_mutex_t odd_lock;
	struct ns_odd *odd; /* odd_lock: messages already logged */
};

/* A listing entry that passed the name checks (see prepare_listing()). */
struct ns_prep {
	const char *name;	     /* borrowed from the listing */
	const struct store_entry *e; /* borrowed */
};

/* One entry of a listed directory's snapshot. */
struct ns_snap_ent {
	uint64_t ino;
	enum ns_kind kind;
	const char *name; /* points into the snapshot's names */
};

struct ns_dir {
	uint64_t ino;	 /* the directory */
	uint64_t parent; /* its parent (the root's parent is the root) */
	size_t n;	 /* positions */
	/* A listed directory: copies of its entries. */
	struct ns_snap_ent *ents; /* owned */
	char *names;		  /* owned storage of the names */
	/* An index directory: read from the image. */
	struct ns_img *img; /* reference, or NULL */
	uint32_t dir;	    /* directory index in img */
};

/* ---- images ---- */

static struct ns_img *img_new(char *bytes, struct dsidx *x, bool dataset)
{
	struct ns_img *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	atomic_init(&m->refs, 1);
	m->bytes = bytes;
	m->x = x;
	m->dataset = dataset;
	return m;
}

static struct ns_img *img_get(struct ns_img *m)
{
	if (m)
		atomic_fetch_add(&m->refs, 1);
	return m;
}

static void img_put(struct ns_img *m)
{
	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	dsidx_free(m->x);
	free(m->bytes);
	free(m);
}

/* ---- inodes ---- */

static const char *inode_name(const struct ns_inode *in)
{
	return (const char *)in->dkey + DKEY_PREFIX;
}

static time_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static struct ns_inode *find_ino(struct ns *ns, uint64_t ino)
{
	struct ns_inode *in;

	HASH_FIND(hh, ns->inodes, &ino, sizeof(ino), in);
	return in;
}

static struct ns_inode *find_dentry(struct ns *ns, uint64_t parent,
				    const char *name)
{
	unsigned char k[DKEY_PREFIX + NS_NAME_MAX + 1];
	size_t n = strlen(name);
	struct ns_inode *in;

	if (n > NS_NAME_MAX)
		return NULL;
	memcpy(k, &parent, DKEY_PREFIX);
	memcpy(k + DKEY_PREFIX, name, n);
	HASH_FIND(hd, ns->dentries, k, DKEY_PREFIX + n, in);
	return in;
}

static void inode_destroy(struct ns_inode *in)
{
	img_put(in->img);
	free(in->key);
	free(in->dkey);
	free(in->etag);
	free(in->children);
	free(in->data);
	free(in);
}

/* Makes a new inode and adds it to the table (not linked). KEY may be
 * NULL (index inodes). Lock held. */
static struct ns_inode *inode_new(struct ns *ns, enum ns_kind kind,
				  uint64_t parent, const char *name,
				  const char *key)
{
	struct ns_inode *in = calloc(1, sizeof(*in));
	size_t n = strlen(name);

	if (!in)
		return NULL;
	in->dkey = malloc(DKEY_PREFIX + n + 1);
	in->key = key ? strdup(key) : NULL;
	if (!in->dkey || (key && !in->key)) {
		inode_destroy(in);
		return NULL;
	}
	memcpy(in->dkey, &parent, DKEY_PREFIX);
	memcpy(in->dkey + DKEY_PREFIX, name, n + 1);
	in->dkeylen = DKEY_PREFIX + n;
	in->kind = kind;
	in->parent = parent;
	in->mtime = ns->start_time;
	in->ino = ns->next_ino++;
	HASH_ADD(hh, ns->inodes, ino, sizeof(in->ino), in);
	return in;
}

static void inode_link(struct ns *ns, struct ns_inode *in)
{
	HASH_ADD_KEYPTR(hd, ns->dentries, in->dkey, in->dkeylen, in);
	in->linked = true;
}

static void inode_unlink(struct ns *ns, struct ns_inode *in)
{
	if (in->linked) {
		HASH_DELETE(hd, ns->dentries, in);
		in->linked = false;
	}
}

/* Frees IN when nothing holds it any more. Lock held. */
static void maybe_free(struct ns *ns, struct ns_inode *in)
{
	if (in->permanent || in->nlookup || in->pins)
		return;
	if (in->linked && !in->lazy)
		return;
	inode_unlink(ns, in);
	HASH_DELETE(hh, ns->inodes, in);
	/* The children of a dead directory can no longer be reached by
	 * name; those the kernel still holds live on until forgotten. */
	for (size_t i = 0; i < in->nchildren; i++) {
		inode_unlink(ns, in->children[i]);
		maybe_free(ns, in->children[i]);
	}
	inode_destroy(in);
}

static void unpin(struct ns *ns, struct ns_inode *in)
{
	in->pins--;
	maybe_free(ns, in);
}

/* ---- logging once ---- */

/* True the first time TEXT is seen in this mount. Takes only odd_lock. */
static bool first_time(struct ns *ns, const char *text)
{
	size_t n = strlen(text);
	struct ns_odd *o = malloc(sizeof(*o) + n + 1), *found;

	if (!o)
		return true;
	memcpy(o->key, text, n + 1);
	pthread_mutex_lock(&ns->odd_lock);
	HASH_FIND_STR(ns->odd, o->key, found);
	if (!found)
		HASH_ADD_STR(ns->odd, key, o);
	pthread_mutex_unlock(&ns->odd_lock);
	if (found)
		free(o);
	return !found;
}

/* Logs an odd key once per mount. Takes only odd_lock. */
static void log_odd(struct ns *ns, const char *dirkey, const char *name,
		    bool is_dir, const char *what)
{
	char *k;

	if (asprintf(&k, "odd:%s%s%s", dirkey, name, is_dir ? "/" : "") < 0)
		return;
	if (first_time(ns, k))
		log_warn("key '%s' in %s: %s", k + 4,
			 ns->store->ops->describe(ns->store), what);
	free(k);
}

void ns_log_shard_changed(struct ns *ns, const char *key, const char *msg)
{
	char *k;

	if (asprintf(&k, "changed:%s", key) < 0)
		return;
	if (first_time(ns, k))
		log_error("shard %s changed since it was indexed (%s): its "
			  "members read as EIO",
			  key, msg ? msg : "ETag mismatch");
	free(k);
}

/* ---- listing ---- */

/* Why NAME cannot be shown, or NULL when it can. */
static const char *name_problem(const char *name, bool at_root)
{
	size_t n = strlen(name);

	if (n == 0)
		return "empty name component, skipped";
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return "'.' or '..' component, skipped";
	if (strchr(name, '/'))
		return "name contains '/', skipped";
	if (n > NS_NAME_MAX)
		return "name longer than 255 bytes, skipped";
	if (at_root && strcmp(name, NS_CTL_NAME) == 0)
		return "hidden behind the control directory " NS_CTL_NAME;
	return NULL;
}

/* Directories first among equal names, so that the directory wins. */
static int cmp_prep(const void *a, const void *b)
{
	const struct ns_prep *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (int)y->e->is_dir - (int)x->e->is_dir;
}

/*
 * Filters, sorts and de-duplicates a listing of DIRKEY into *OUT (an
 * array of N entries borrowing from L). Runs without ns->lock.
 */
static int prepare_listing(struct ns *ns, const char *dirkey, bool at_root,
			   const struct store_listing *l, struct ns_prep **out,
			   size_t *nout)
{
	struct ns_prep *p = malloc((l->n ? l->n : 1) * sizeof(*p));
	size_t n = 0, m = 0;

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		const struct store_entry *e = &l->entries[i];
		const char *why = name_problem(e->name, at_root);

		if (why) {
			log_odd(ns, dirkey, e->name, e->is_dir, why);
			continue;
		}
		p[n].name = e->name;
		p[n++].e = e;
	}
	if (n > 1)
		qsort(p, n, sizeof(*p), cmp_prep);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && strcmp(p[m - 1].name, p[i].name) == 0) {
			if (p[m - 1].e->is_dir && !p[i].e->is_dir)
				log_odd(ns, dirkey, p[i].name, false,
					"both an object and a prefix: the "
					"directory is shown, the object "
					"hidden");
			continue; /* duplicate prefixes are tolerated */
		}
		p[m++] = p[i];
	}
	*out = p;
	*nout = m;
	return 0;
}

static int set_etag(struct ns_inode *in, const char *etag)
{
	char *dup;

	if ((!etag && !in->etag) ||
	    (etag && in->etag && strcmp(etag, in->etag) == 0))
		return 0;
	dup = etag ? strdup(etag) : NULL;
	if (etag && !dup)
		return -ENOMEM;
	free(in->etag);
	in->etag = dup;
	return 0;
}

static bool is_tar_name(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, ".tar") == 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static enum ns_kind kind_of(const struct ns *ns, const struct ns_prep *p)
{
	if (p->e->is_dir)
		return NS_DIR;
	if (ns->tar_dirs && is_tar_name(p->name))
		return NS_SHARD;
	return NS_OBJECT;
}

/* Makes (or reuses) the child of DIR for P. Lock held. */
static struct ns_inode *child_for(struct ns *ns, struct ns_inode *dir,
				  const struct ns_prep *p)
{
	enum ns_kind kind = kind_of(ns, p);
	struct ns_inode *in = find_dentry(ns, dir->ino, p->name);
	char *key;

	if (in && in->kind == kind &&
	    (kind != NS_SHARD ||
	     (in->size == p->e->size && same_str(in->etag, p->e->etag)))) {
		in->seen = true;
	} else {
		/* New, or changed kind, or a shard that changed: a new
		 * inode takes the name (a shard's index never changes). */
		if (in)
			inode_unlink(ns, in);
		if (asprintf(&key, "%s%s%s", dir->key, p->name,
			     p->e->is_dir ? "/" : "") < 0)
			return NULL;
		in = inode_new(ns, kind, dir->ino, p->name, key);
		free(key);
		if (!in)
			return NULL;
		inode_link(ns, in);
		if (kind == NS_SHARD) {
			in->size = p->e->size;
			in->mtime = p->e->mtime;
			if (set_etag(in, p->e->etag) < 0) {
				/* Without its ETag a shard's reads would
				 * not be checked: do not show it. */
				inode_unlink(ns, in);
				maybe_free(ns, in);
				return NULL;
			}
		}
	}
	if (kind == NS_OBJECT) {
		in->size = p->e->size;
		in->mtime = p->e->mtime;
		if (set_etag(in, p->e->etag) < 0)
			log_error("out of memory keeping the ETag of %s",
				  in->key);
	}
	return in;
}

/* Replaces DIR's children by the prepared listing. Lock held. */
static int apply_listing(struct ns *ns, struct ns_inode *dir,
			 const struct ns_prep *p, size_t n)
{
	struct ns_inode **arr = malloc((n ? n : 1) * sizeof(*arr));
	size_t m = 0;

	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < dir->nchildren; i++)
		dir->children[i]->seen = false;
	for (size_t i = 0; i < n; i++) {
		struct ns_inode *c = child_for(ns, dir, &p[i]);

		if (c)
			arr[m++] = c;
		else
			log_error("out of memory: %s%s not shown", dir->key,
				  p[i].name);
	}
	for (size_t i = 0; i < dir->nchildren; i++) {
		struct ns_inode *old = dir->children[i];

		if (old->seen)
			continue;
		inode_unlink(ns, old);
		maybe_free(ns, old);
	}
	free(dir->children);
	dir->children = arr;
	dir->nchildren = m;
	ns->st.dirs_listed++;
	return 0;
}

/* Lists DIR with the lock released, then applies the result. */
static int list_dir(struct ns *ns, struct ns_inode *dir, char *msg,
		    size_t msglen)
{
	struct store_listing l = {NULL, 0};
	struct ns_prep *p = NULL;
	size_t n = 0;
	int rc;

	pthread_mutex_unlock(&ns->lock);
	rc = ns->store->ops->list(ns->store, dir->key, &l, msg, msglen);
	if ((rc == -ENOENT || rc == -ENOTDIR) && dir != ns->root) {
		/* A prefix that vanished is an empty directory (as on S3). */
		store_listing_release(&l);
		rc = 0;
	}
	if (rc == 0) {
		rc = prepare_listing(ns, dir->key, dir == ns->root, &l, &p, &n);
		if (rc)
			snprintf(msg, msglen, "%s", strerror(-rc));
	}
	pthread_mutex_lock(&ns->lock);
	if (rc == 0) {
		rc = apply_listing(ns, dir, p, n);
		if (rc)
			snprintf(msg, msglen, "%s", strerror(-rc));
	}
	free(p);
	store_listing_release(&l);
	return rc;
}

static bool listing_fresh(const struct ns *ns, const struct ns_inode *dir)
{
	if (dir->lstate != NS_LISTED)
		return false;
	if (ns->ttl == 0 || dir->kind != NS_DIR)
		return true;
	return now_mono() - dir->listed_at < (time_t)ns->ttl;
}

/* ---- shards ---- */

/* Opens the image the indexer wrote. Runs without the lock. */
static int open_image(struct buf *b, bool dataset, struct ns_img **out,
		      char *msg, size_t msglen)
{
	char err[200] = "";
	struct dsidx *x = NULL;
	size_t len = 0;
	char *bytes = buf_detach(b, &len);
	int rc;

	if (!bytes)
		return -ENOMEM;
	rc = dsidx_open(bytes, len, &x, err, sizeof(err));
	if (rc == 0) {
		*out = img_new(bytes, x, dataset);
		if (*out)
			return 0;
		dsidx_free(x);
		rc = -ENOMEM;
	} else {
		snprintf(msg, msglen, "its index is not valid: %s", err);
		rc = -EIO;
	}
	free(bytes);
	return rc;
}

/* Logs the outcome of indexing shard KEY, once per shard. */
static void log_shard(struct ns *ns, const char *key, int rc,
		      const struct ns_shard_info *info, struct ns_img *img,
		      const char *msg)
{
	const char *src = ns->store->ops->describe(ns->store);
	char *k;

	if (rc == 0 && !info->damaged)
		return;
	if (asprintf(&k, "%s:%s", rc ? "failed" : "damaged", key) < 0)
		return;
	if (!first_time(ns, k))
		log_info("shard %s of %s: still %s", key, src,
			 rc ? "unreadable" : "damaged");
	else if (rc)
		log_error("shard %s of %s cannot be read (%s): its directory "
			  "answers EIO",
			  key, src, msg);
	else
		log_warn("shard %s of %s is damaged (%s): showing the %" PRIu32
			 " members before the damage",
			 key, src, info->damage, dsidx_info(img->x)->nmembers);
	free(k);
}

/*
 * Indexes shard SH (pinned, state NS_LISTING) with the lock released.
 * Lock held on entry and return.
 */
static int index_shard(struct ns *ns, struct ns_inode *sh, char *msg,
		       size_t msglen)
{
	struct ns_shard_info info;
	struct ns_img *img = NULL;
	char *key = strdup(sh->key);
	char *etag = sh->etag ? strdup(sh->etag) : NULL;
	uint64_t size = sh->size;
	struct buf b;
	int rc;

	if (!key || (sh->etag && !etag)) {
		free(key);
		free(etag);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	memset(&info, 0, sizeof(info));
	pthread_mutex_unlock(&ns->lock);
	buf_init(&b, DSIDX_SUGGESTED_CAP);
	rc = ns->index_shard(ns->index_arg, key, size, etag, &b, &info, msg,
			     msglen);
	if (rc == 0)
		rc = open_image(&b, false, &img, msg, msglen);
	buf_release(&b);
	log_shard(ns, key, rc, &info, img, msg);
	pthread_mutex_lock(&ns->lock);
	if (rc == 0) {
		sh->img = img;
		ns->st.shards_indexed++;
		if (info.from_cache)
			ns->st.shards_cached++;
		else
			ns->st.shards_scanned++;
		if (info.damaged)
			ns->st.shards_damaged++;
	} else {
		ns->st.shards_failed++;
	}
	free(key);
	free(etag);
	return rc;
}

/* ---- making directories ready ---- */

/*
 * Waits while another thread lists (indexes) DIR. Returns 0 when it may
 * go on, or the error of the attempt it waited for. Lock held.
 */
static int wait_busy(struct ns *ns, struct ns_inode *dir, char *msg,
		     size_t msglen)
{
	while (dir->lstate == NS_LISTING) {
		uint64_t seq = dir->list_seq;

		while (dir->lstate == NS_LISTING && dir->list_seq == seq)
			pthread_cond_wait(&ns->listed, &ns->lock);
		if (dir->lstate != NS_LISTED && dir->list_err) {
			/* The listing we waited for failed: do not retry
			 * it once per waiter. */
			if (dir->kind == NS_DIR)
				snprintf(msg, msglen, "listing failed: %s",
					 strerror(-dir->list_err));
			return dir->list_err;
		}
	}
	return 0;
}

/* Makes sure shard SH (pinned) is indexed. Lock held; released while
 * indexing or waiting. Failures were logged (MSG stays empty). */
static int shard_ensure(struct ns *ns, struct ns_inode *sh)
{
	char msg[256] = "";
	int rc = wait_busy(ns, sh, msg, sizeof(msg));

	if (rc || sh->lstate == NS_LISTED)
		return rc;
	if (sh->list_err && now_mono() - sh->failed_at < NS_SHARD_RETRY)
		return sh->list_err;
	sh->lstate = NS_LISTING;
	rc = index_shard(ns, sh, msg, sizeof(msg));
	sh->list_seq++;
	sh->list_err = rc;
	if (rc == 0) {
		sh->lstate = NS_LISTED;
	} else {
		sh->lstate = NS_UNLISTED;
		sh->failed_at = now_mono();
	}
	pthread_cond_broadcast(&ns->listed);
	return rc;
}

/*
 * Makes sure DIR (pinned by the caller) is ready: listed and fresh, or
 * indexed. Lock held; released while listing or waiting. On a listing
 * error fills MSG (left empty for shards, which log their own).
 */
static int dir_ensure(struct ns *ns, struct ns_inode *dir, char *msg,
		      size_t msglen)
{
	enum ns_list_state prev;
	int rc;

	if (dir->kind == NS_SHARD)
		return shard_ensure(ns, dir);
	if (dir->kind != NS_DIR)
		return 0; /* index and control directories are always ready */
	rc = wait_busy(ns, dir, msg, msglen);
	if (rc)
		return rc;
	if (listing_fresh(ns, dir))
		return 0;
	prev = dir->lstate;
	dir->lstate = NS_LISTING;
	rc = list_dir(ns, dir, msg, msglen);
	dir->list_seq++;
	dir->list_err = rc;
	if (rc == 0 || prev == NS_LISTED) {
		if (rc) /* a failed relist keeps the entries we had */
			log_warn("relisting %s failed (%s); keeping the old "
				 "entries",
				 dir->key[0] ? dir->key : "/", msg);
		dir->lstate = NS_LISTED;
		dir->listed_at = now_mono();
		rc = 0;
	} else {
		dir->lstate = NS_UNLISTED;
	}
	pthread_cond_broadcast(&ns->listed);
	return rc;
}

/* ---- attributes and control files ---- */

static void fill_attr(const struct ns_inode *in, struct ns_attr *out)
{
	out->ino = in->ino;
	out->kind = in->kind;
	out->size = ns_kind_is_dir(in->kind) ? 0 : in->size;
	out->mtime = in->mtime;
	out->mtime_nsec = in->mtime_nsec;
	out->volatile_attr = in->dynamic;
}

/* Pads the text in B with spaces and a final newline to whole pages. */
static int pad_pages(struct buf *b)
{
	size_t want = (b->len / CTL_PAGE + 1) * CTL_PAGE;
	int rc = buf_reserve(b, want - b->len);

	while (rc == 0 && b->len + 1 < want)
		rc = buf_append(b, " ", 1);
	return rc ? rc : buf_append(b, "\n", 1);
}

/*
 * Generates the contents of control file IN anew. Lock held; released
 * while generating. The mtime moves forward at each generation, so that
 * the kernel drops pages it cached of the previous one.
 */
static void ctl_refresh(struct ns *ns, struct ns_inode *in)
{
	struct timespec ts;
	struct buf b;
	char *data;
	size_t len = 0;
	int rc;

	in->pins++;
	pthread_mutex_unlock(&ns->lock);
	buf_init(&b, CTL_TEXT_CAP);
	rc = ns->stats_fn(ns->stats_arg, &b);
	if (rc == 0)
		rc = pad_pages(&b);
	data = rc == 0 ? buf_detach(&b, &len) : NULL;
	buf_release(&b);
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&ns->lock);
	if (data) {
		free(in->data);
		in->data = data;
		in->size = len;
		if (ts.tv_sec < in->mtime ||
		    (ts.tv_sec == in->mtime &&
		     (uint32_t)ts.tv_nsec <= in->mtime_nsec)) {
			ts.tv_sec = in->mtime;
			ts.tv_nsec = (long)in->mtime_nsec + 1;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec = 0;
			}
		}
		in->mtime = ts.tv_sec;
		in->mtime_nsec = (uint32_t)ts.tv_nsec;
	} else {
		log_warn("generating %s/%s failed: %s", NS_CTL_NAME,
			 inode_name(in), strerror(rc ? -rc : ENOMEM));
	}
	unpin(ns, in);
}

static struct ns_inode *ctl_file(struct ns *ns, const char *name,
				 const char *text)
{
	struct ns_inode *f = inode_new(ns, NS_CTL_FILE, ns->ctl->ino, name,
				       NULL);

	if (!f)
		return NULL;
	f->permanent = true;
	inode_link(ns, f);
	if (text) {
		f->data = strdup(text);
		if (!f->data)
			return NULL;
		f->size = strlen(text);
	} else {
		f->dynamic = true;
	}
	return f;
}

static int make_control(struct ns *ns)
{
	static const char version[] = "shardfs " SHARDFS_VERSION "\n";
	struct ns_inode *f;

	ns->ctl = inode_new(ns, NS_CTL_DIR, NS_ROOT_INO, NS_CTL_NAME,
			    NS_CTL_NAME "/");
	if (!ns->ctl)
		return -ENOMEM;
	ns->ctl->permanent = true;
	ns->ctl->lstate = NS_LISTED;
	ns->ctl->children = calloc(2, sizeof(*ns->ctl->children));
	if (!ns->ctl->children)
		return -ENOMEM;
	/* Sorted by name: "stats" < "version". */
	if (ns->stats_fn) {
		f = ctl_file(ns, "stats", NULL);
		if (!f)
			return -ENOMEM;
		ns->ctl->children[ns->ctl->nchildren++] = f;
	}
	f = ctl_file(ns, "version", version);
	if (!f)
		return -ENOMEM;
	ns->ctl->children[ns->ctl->nchildren++] = f;
	return 0;
}

/* ---- construction ---- */

/* The root of dataset index mode: directory 0 of the index. */
static int make_dataset_root(struct ns *ns, const struct ns_index *idx)
{
	const struct dsidx_info *info = dsidx_info(idx->x);
	struct dsidx_dir_view v;

	ns->dataset = img_new(idx->bytes, idx->x, true);
	if (!ns->dataset)
		return -ENOMEM;
	ns->root = inode_new(ns, NS_IDIR, NS_ROOT_INO, "", "");
	if (!ns->root)
		return -ENOMEM;
	ns->root->img = img_get(ns->dataset);
	ns->root->idx = 0;
	ns->root->lstate = NS_LISTED;
	if (dsidx_dir(idx->x, 0, &v) == 0) {
		ns->root->mtime = v.mtime;
		ns->root->mtime_nsec = v.mtime_nsec;
	}
	ns->st.index_loaded = true;
	ns->st.index_bytes = info->size;
	ns->st.index_shards = info->nshards;
	ns->st.index_dirs = info->ndirs;
	ns->st.index_members = info->nmembers;
	return 0;
}

int ns_new(const struct ns_conf *conf, struct ns **out)
{
	struct ns *ns = calloc(1, sizeof(*ns));
	int rc;

	if (!ns) {
		dsidx_free(conf->index.x);
		free(conf->index.bytes);
		return -ENOMEM;
	}
	ns->store = conf->store;
	ns->ttl = conf->metadata_ttl;
	ns->tar_dirs = conf->tar_dirs && conf->index_shard;
	ns->index_shard = conf->index_shard;
	ns->index_arg = conf->index_arg;
	ns->stats_fn = conf->stats_fn;
	ns->stats_arg = conf->stats_arg;
	ns->start_time = (int64_t)time(NULL);
	pthread_mutex_init(&ns->lock, NULL);
	pthread_mutex_init(&ns->odd_lock, NULL);
	pthread_cond_init(&ns->listed, NULL);
	ns->next_ino = NS_ROOT_INO;
	if (conf->index.x) {
		rc = make_dataset_root(ns, &conf->index);
		if (rc && !ns->dataset) {
			dsidx_free(conf->index.x);
			free(conf->index.bytes);
		}
	} else {
		ns->root = inode_new(ns, NS_DIR, NS_ROOT_INO, "", "");
		rc = ns->root ? 0 : -ENOMEM;
	}
	if (rc == 0)
		rc = make_control(ns);
	if (rc) {
		ns_free(ns);
		return rc;
	}
	ns->root->permanent = true;
	*out = ns;
	return 0;
}

void ns_free(struct ns *ns)
{
	struct ns_inode *in, *tmp;
	struct ns_odd *o, *otmp;

	if (!ns)
		return;
	HASH_CLEAR(hd, ns->dentries);
	HASH_ITER(hh, ns->inodes, in, tmp)
	{
		HASH_DELETE(hh, ns->inodes, in);
		inode_destroy(in);
	}
	HASH_ITER(hh, ns->odd, o, otmp)
	{
		HASH_DEL(ns->odd, o);
		free(o);
	}
	img_put(ns->dataset);
	pthread_cond_destroy(&ns->listed);
	pthread_mutex_destroy(&ns->odd_lock);
	pthread_mutex_destroy(&ns->lock);
	free(ns);
}

int ns_prime(struct ns *ns, char *msg, size_t msglen)
{
	int rc;

	pthread_mutex_lock(&ns->lock);
	ns->root->pins++;
	rc = dir_ensure(ns, ns->root, msg, msglen);
	unpin(ns, ns->root);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ---- lookups ---- */

/* Pins and readies directory INO. Lock held. */
static int dir_get(struct ns *ns, uint64_t ino, struct ns_inode **out,
		   char *msg, size_t msglen)
{
	struct ns_inode *d = find_ino(ns, ino);
	int rc;

	if (!d)
		return -ENOENT;
	if (!ns_kind_is_dir(d->kind))
		return -ENOTDIR;
	d->pins++;
	rc = dir_ensure(ns, d, msg, msglen);
	if (rc) {
		unpin(ns, d);
		return rc == -ENOMEM ? rc : -EIO;
	}
	*out = d;
	return 0;
}

static void log_list_error(struct ns *ns, uint64_t ino, const char *msg)
{
	if (msg[0]) /* shards log their failures themselves, once */
		log_error("listing directory (inode %" PRIu64 ") of %s "
			  "failed: %s",
			  ino, ns->store->ops->describe(ns->store), msg);
}

/* The image and directory index behind D, or NULL for listed dirs. */
static struct ns_img *dir_img(const struct ns_inode *d, uint32_t *dir)
{
	*dir = d->idx;
	return d->kind == NS_IDIR || d->kind == NS_SHARD ? d->img : NULL;
}

/* A new lazy inode for REF, a child NAME of index directory D. */
static struct ns_inode *idx_inode_new(struct ns *ns, struct ns_inode *d,
				      struct ns_img *img, const char *name,
				      const struct dsidx_ref *ref)
{
	struct dsidx_member_view mv;
	struct dsidx_dir_view dv;
	struct ns_inode *in;
	enum ns_kind kind;

	if (ref->kind == DSIDX_KIND_DIR) {
		if (dsidx_dir(img->x, ref->idx, &dv))
			return NULL;
		kind = NS_IDIR;
	} else {
		if (dsidx_member(img->x, ref->idx, &mv))
			return NULL;
		kind = S_ISLNK(mv.mode) ? NS_SYMLINK : NS_MEMBER;
	}
	in = inode_new(ns, kind, d->ino, name, NULL);
	if (!in)
		return NULL;
	in->lazy = true;
	in->img = img_get(img);
	in->idx = ref->idx;
	if (kind == NS_IDIR) {
		in->lstate = NS_LISTED;
		in->mtime = dv.mtime;
		in->mtime_nsec = dv.mtime_nsec;
	} else {
		in->size = kind == NS_SYMLINK ? mv.link_len : mv.size;
		in->mtime = mv.mtime;
		in->mtime_nsec = mv.mtime_nsec;
	}
	inode_link(ns, in);
	return in;
}

/*
 * The child NAME of ready directory D (pinned), made from D's index when
 * needed. NULL with *ERR = -ENOENT or -ENOMEM. Lock held.
 */
static struct ns_inode *child_of(struct ns *ns, struct ns_inode *d,
				 const char *name, int *err)
{
	struct ns_inode *c = find_dentry(ns, d->ino, name);
	struct dsidx_ref ref;
	struct ns_img *img;
	uint32_t dir;

	*err = -ENOENT;
	img = dir_img(d, &dir);
	if (c || !img)
		return c;
	if (img->dataset && dir == 0 && strcmp(name, NS_CTL_NAME) == 0)
		return NULL; /* hidden behind the control directory */
	if (dsidx_lookup(img->x, dir, name, strlen(name), &ref) != 0)
		return NULL;
	c = idx_inode_new(ns, d, img, name, &ref);
	if (!c)
		*err = -ENOMEM;
	return c;
}

int ns_lookup(struct ns *ns, uint64_t parent, const char *name,
	      struct ns_attr *out)
{
	struct ns_inode *d, *c;
	char msg[256] = "";
	int rc;

	if (strlen(name) > NS_NAME_MAX)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&ns->lock);
	if (parent == NS_ROOT_INO && strcmp(name, NS_CTL_NAME) == 0) {
		ns->ctl->nlookup++;
		fill_attr(ns->ctl, out);
		pthread_mutex_unlock(&ns->lock);
		return 0;
	}
	rc = dir_get(ns, parent, &d, msg, sizeof(msg));
	if (rc) {
		pthread_mutex_unlock(&ns->lock);
		if (rc != -ENOENT && rc != -ENOTDIR)
			log_list_error(ns, parent, msg);
		return rc;
	}
	c = child_of(ns, d, name, &rc);
	if (c) {
		/* Counted before unpin(), which may free D and its
		 * unreferenced children. */
		c->nlookup++;
		if (c->dynamic)
			ctl_refresh(ns, c);
		fill_attr(c, out);
		rc = 0;
	}
	unpin(ns, d);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

void ns_forget(struct ns *ns, uint64_t ino, uint64_t nlookup)
{
	struct ns_inode *in;

	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (in) {
		in->nlookup -= nlookup < in->nlookup ? nlookup : in->nlookup;
		maybe_free(ns, in);
	}
	pthread_mutex_unlock(&ns->lock);
}

int ns_getattr(struct ns *ns, uint64_t ino, struct ns_attr *out)
{
	struct ns_inode *in;

	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (in) {
		if (in->dynamic)
			ctl_refresh(ns, in);
		fill_attr(in, out);
	}
	pthread_mutex_unlock(&ns->lock);
	return in ? 0 : -ENOENT;
}

/* ---- files ---- */

/* Fills F for member IN: its shard's key and ETag, where it lies. */
/* The length of NAME up to its first dot (a sample's name stem). */
static uint32_t stem_len(const char *name, uint32_t len)
{
	const char *dot = memchr(name, '.', len);

	return dot ? (uint32_t)(dot - name) : len;
}

/*
 * Whether member NV (of the same shard) extends [*LO, *HI) as a
 * neighbour: adjacent in the shard (at most a few tar headers between),
 * and all together within RD_SMALL bytes. Extends it if so.
 */
static bool sample_grow(const struct dsidx_member_view *nv, uint64_t *lo,
			uint64_t *hi)
{
	const uint64_t gap = 4096; /* headers: ustar, pax, padding */
	uint64_t a = *lo, b = *hi;

	if (nv->offset >= b && nv->offset - b <= gap)
		b = nv->offset + nv->size;
	else if (nv->offset + nv->size <= a && a - (nv->offset + nv->size) <= gap)
		a = nv->offset;
	else
		return false;
	if (b - a > RD_SMALL)
		return false;
	*lo = a;
	*hi = b;
	return true;
}

/* The range worth fetching with member I (see ns_file.hint_off). */
static void member_hint(const struct dsidx *x, uint32_t i,
			const struct dsidx_member_view *mv, struct ns_file *f)
{
	uint32_t n = dsidx_info(x)->nmembers,
		 sl = stem_len(mv->name, mv->name_len);
	uint64_t lo = mv->offset, hi = mv->offset + mv->size;

	if (mv->sparse)
		return;
	for (int dir = -1; dir <= 1 && mv->size <= RD_SMALL; dir += 2) {
		for (uint32_t j = i + (uint32_t)dir; j < n; j += (uint32_t)dir) {
			struct dsidx_member_view nv;

			if (dsidx_member(x, j, &nv) != 0 || nv.dir != mv->dir ||
			    nv.shard != mv->shard || nv.sparse ||
			    nv.link_len != 0 ||
			    stem_len(nv.name, nv.name_len) != sl ||
			    memcmp(nv.name, mv->name, sl) != 0 ||
			    !sample_grow(&nv, &lo, &hi))
				break;
		}
	}
	f->hint_off = lo;
	f->hint_len = hi - lo;
}

static int member_file(const struct ns_inode *in, struct ns_file *f)
{
	struct dsidx_member_view mv;
	struct dsidx_shard_view sv;

	if (dsidx_member(in->img->x, in->idx, &mv) ||
	    dsidx_shard(in->img->x, mv.shard, &sv))
		return -EIO; /* cannot happen: dsidx_open() checked */
	f->key = strndup(sv.key, sv.key_len);
	if (sv.etag_len)
		f->etag = strndup(sv.etag, sv.etag_len);
	if (!f->key || (sv.etag_len && !f->etag))
		return -ENOMEM;
	f->base = mv.offset;
	f->sparse = mv.sparse;
	f->obj_size = sv.size;
	member_hint(in->img->x, in->idx, &mv, f);
	f->img = img_get(in->img);
	f->member = in->idx;
	return 0;
}

/* Copies what reading IN needs into OUT. Lock held. */
static int file_of(const struct ns_inode *in, struct ns_file *out)
{
	out->kind = in->kind;
	out->size = in->size;
	switch (in->kind) {
	case NS_CTL_FILE:
		out->data = in->data ? strdup(in->data) : strdup("");
		return out->data ? 0 : -ENOMEM;
	case NS_MEMBER:
		return member_file(in, out);
	case NS_OBJECT:
		out->key = strdup(in->key);
		out->etag = in->etag ? strdup(in->etag) : NULL;
		out->obj_size = in->size;
		return !out->key || (in->etag && !out->etag) ? -ENOMEM : 0;
	case NS_SYMLINK:
		return -EINVAL;
	default:
		return -EISDIR;
	}
}

int ns_file(struct ns *ns, uint64_t ino, struct ns_file *out)
{
	struct ns_inode *in;
	int rc;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (!in) {
		rc = -ENOENT;
	} else {
		if (in->dynamic && !in->data)
			ctl_refresh(ns, in);
		rc = file_of(in, out);
	}
	pthread_mutex_unlock(&ns->lock);
	if (rc)
		ns_file_release(out);
	return rc;
}

void ns_file_release(struct ns_file *f)
{
	free(f->key);
	free(f->etag);
	free(f->data);
	img_put(f->img);
	f->key = f->etag = f->data = NULL;
	f->img = NULL;
}

int ns_file_segs(const struct ns_file *f, uint64_t off, uint64_t len,
		 struct rd_seg **out, size_t *n)
{
	const struct dsidx *x = f->img ? f->img->x : NULL;
	uint32_t first, count, seg;
	struct rd_seg *v = NULL;
	size_t m = 0, alloc = 0;

	*out = NULL;
	*n = 0;
	if (!x || !f->sparse ||
	    dsidx_member_segments(x, f->member, &first, &count) != 0)
		return -EINVAL;
	if (len == 0 || dsidx_segment_find(x, f->member, off, &seg) != 0)
		return 0; /* the rest of the file is zeros */
	for (; seg < first + count; seg++) {
		struct dsidx_segment s;

		if (dsidx_segment(x, seg, &s) != 0 || s.offset >= off + len)
			break;
		if (m == SEGS_PER_READ) {
			free(v);
			return -E2BIG;
		}
		if (m == alloc) {
			size_t na = alloc ? alloc * 2 : 8;
			struct rd_seg *p = realloc(v, na * sizeof(*p));

			if (!p) {
				free(v);
				return -ENOMEM;
			}
			v = p;
			alloc = na;
		}
		v[m].file_off = s.offset;
		v[m].len = s.length;
		v[m].obj_off = s.archive_offset;
		m++;
	}
	*out = v;
	*n = m;
	return 0;
}

int ns_readlink(struct ns *ns, uint64_t ino, char **out)
{
	struct dsidx_member_view mv;
	struct ns_inode *in;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (!in)
		rc = -ENOENT;
	else if (in->kind != NS_SYMLINK)
		rc = -EINVAL;
	else if (dsidx_member(in->img->x, in->idx, &mv) != 0)
		rc = -EIO;
	else if (!(*out = strndup(mv.link, mv.link_len)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ---- directories ---- */

/* Copies the children of listed directory D into S. Lock held. */
static int snapshot_listed(const struct ns_inode *d, struct ns_dir *s)
{
	size_t total = 0;
	char *p;

	for (size_t i = 0; i < d->nchildren; i++)
		total += strlen(inode_name(d->children[i])) + 1;
	s->ents = malloc((d->nchildren ? d->nchildren : 1) * sizeof(*s->ents));
	s->names = malloc(total ? total : 1);
	if (!s->ents || !s->names)
		return -ENOMEM;
	p = s->names;
	for (size_t i = 0; i < d->nchildren; i++) {
		const struct ns_inode *c = d->children[i];
		size_t n = strlen(inode_name(c)) + 1;

		memcpy(p, inode_name(c), n);
		s->ents[i].ino = c->ino;
		s->ents[i].kind = c->kind;
		s->ents[i].name = p;
		p += n;
	}
	s->n = d->nchildren;
	return 0;
}

/* Snapshots ready directory D. Lock held. */
static int snapshot(const struct ns_inode *d, struct ns_dir **out)
{
	struct ns_dir *s = calloc(1, sizeof(*s));
	struct dsidx_dir_view v;
	struct ns_img *img;
	uint32_t dir;
	int rc = 0;

	if (!s)
		return -ENOMEM;
	s->ino = d->ino;
	s->parent = d->ino == NS_ROOT_INO ? NS_ROOT_INO : d->parent;
	img = dir_img(d, &dir);
	if (img && dsidx_dir(img->x, dir, &v) == 0) {
		s->img = img_get(img);
		s->dir = dir;
		s->n = (size_t)v.ndirs + v.nmembers;
	} else if (img) {
		rc = -EIO; /* cannot happen: dsidx_open() checked */
	} else {
		rc = snapshot_listed(d, s);
	}
	if (rc) {
		ns_dir_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ns_opendir(struct ns *ns, uint64_t ino, struct ns_dir **out)
{
	struct ns_inode *d;
	char msg[256] = "";
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = dir_get(ns, ino, &d, msg, sizeof(msg));
	if (rc == 0) {
		rc = snapshot(d, out);
		unpin(ns, d);
		pthread_mutex_unlock(&ns->lock);
		return rc;
	}
	pthread_mutex_unlock(&ns->lock);
	if (rc != -ENOENT && rc != -ENOTDIR)
		log_list_error(ns, ino, msg);
	return rc;
}

void ns_dir_free(struct ns_dir *d)
{
	if (!d)
		return;
	img_put(d->img);
	free(d->ents);
	free(d->names);
	free(d);
}

uint64_t ns_dir_ino(const struct ns_dir *d)
{
	return d->ino;
}

uint64_t ns_dir_parent(const struct ns_dir *d)
{
	return d->parent;
}

size_t ns_dir_count(const struct ns_dir *d)
{
	return d->n;
}

/* Entry I of an index directory snapshot. */
static int idx_dirent(struct ns *ns, const struct ns_dir *d, size_t i,
		      struct ns_dirent *out)
{
	const struct dsidx *x = d->img->x;
	struct dsidx_member_view mv;
	struct dsidx_dir_view dv;
	struct dsidx_ref ref;
	const char *name;
	uint32_t len;

	if (dsidx_child(x, d->dir, i, &ref) != 0)
		return -ENOENT;
	if (ref.kind == DSIDX_KIND_DIR) {
		if (dsidx_dir(x, ref.idx, &dv) != 0)
			return -ENOENT;
		name = dv.name;
		len = dv.name_len;
		out->kind = NS_IDIR;
	} else {
		if (dsidx_member(x, ref.idx, &mv) != 0)
			return -ENOENT;
		name = mv.name;
		len = mv.name_len;
		out->kind = S_ISLNK(mv.mode) ? NS_SYMLINK : NS_MEMBER;
	}
	if (len > NS_NAME_MAX) {
		char tmp[64];

		snprintf(tmp, sizeof(tmp), "%.40s...", name);
		log_odd(ns, "(index) ", tmp, false,
			"name longer than 255 bytes, skipped");
		return 1;
	}
	memcpy(out->name, name, len);
	out->name[len] = '\0';
	out->ino = 0;
	if (d->img->dataset && d->dir == 0 &&
	    strcmp(out->name, NS_CTL_NAME) == 0) {
		log_odd(ns, "(index) ", NS_CTL_NAME, false,
			"hidden behind the control directory " NS_CTL_NAME);
		return 1;
	}
	return 0;
}

int ns_dir_get(struct ns *ns, const struct ns_dir *d, size_t i,
	       struct ns_dirent *out)
{
	if (i >= d->n)
		return -ENOENT;
	if (d->img)
		return idx_dirent(ns, d, i, out);
	out->ino = d->ents[i].ino;
	out->kind = d->ents[i].kind;
	snprintf(out->name, sizeof(out->name), "%s", d->ents[i].name);
	return 0;
}

/* ---- statistics ---- */

void ns_get_stats(struct ns *ns, struct ns_stats *out)
{
	pthread_mutex_lock(&ns->lock);
	*out = ns->st;
	out->inodes = HASH_COUNT(ns->inodes);
	pthread_mutex_unlock(&ns->lock);
}

size_t ns_count(struct ns *ns)
{
	size_t n;

	pthread_mutex_lock(&ns->lock);
	n = HASH_COUNT(ns->inodes);
	pthread_mutex_unlock(&ns->lock);
	return n;
}

uint64_t ns_nlookup(struct ns *ns, uint64_t ino)
{
	struct ns_inode *in;
	uint64_t n = 0;

	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (in)
		n = in->nlookup;
	pthread_mutex_unlock(&ns->lock);
	return n;
}
