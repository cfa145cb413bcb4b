// SPDX-License-Identifier: MIT
/*
 * The namespace: inodes in a uthash table keyed by inode number, and
 * directory entries in a second table keyed by (parent inode, name). An
 * inode is in at most one directory (each listing makes its own inodes),
 * so the entry table is a second hash handle on the inode itself.
 *
 * Invariants (all under ns->lock):
 *  - an inode is "linked" (in the entry table) exactly when it is in its
 *    parent's children array; the control directory is not linked (it is
 *    found by name at the root, before the listing is consulted);
 *  - an inode is freed when it is neither linked nor looked up by the
 *    kernel nor pinned by a running call; freeing a directory unlinks
 *    its children (which may free them in turn);
 *  - a directory's children array is sorted by name and has no
 *    duplicates; it changes only when a listing is applied.
 *
 * Threading: ns->lock protects the tables and every mutable inode field.
 * It is released around store->list(); a directory in state NS_LISTING is
 * being listed by one thread and others wait on ns->listed. ns->odd_lock
 * protects only the set of odd keys already logged; it is a leaf lock,
 * never held together with ns->lock.
 */
#include "ns.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "log.h"

#define DKEY_PREFIX sizeof(uint64_t)

enum ns_list_state {
	NS_UNLISTED,
	NS_LISTING,
	NS_LISTED,
};

struct ns_inode {
	uint64_t ino;	     /* immutable */
	enum ns_kind kind;   /* immutable */
	uint64_t parent;     /* immutable: the directory that listed it */
	char *key;	     /* immutable, owned: object key, or prefix ending
				in '/' ("" for the root) */
	unsigned char *dkey; /* immutable, owned: parent ino + name + NUL */
	size_t dkeylen;	     /* immutable: DKEY_PREFIX + strlen(name) */
	bool permanent;	     /* immutable: root, control inodes */
	uint64_t size;	     /* lock */
	int64_t mtime;	     /* lock */
	char *etag;	     /* lock, owned */
	uint64_t nlookup;    /* lock: kernel lookups */
	unsigned pins;	     /* lock: calls using the inode unlocked */
	bool linked;	     /* lock: in ns->dentries */
	bool seen;	     /* lock: scratch of apply_listing() */
	/* Directories (lock). */
	enum ns_list_state lstate;
	uint64_t list_seq;	    /* listings attempted, for waiters */
	int list_err;		    /* result of the last attempt */
	time_t listed_at;	    /* monotonic seconds */
	struct ns_inode **children; /* owned array, sorted by name */
	size_t nchildren;
	/* Control files (immutable). */
	char *data;	   /* owned */
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
	pthread_mutex_t lock;
	pthread_cond_t listed;	   /* broadcast when a listing ends */
	struct ns_inode *inodes;   /* lock */
	struct ns_inode *dentries; /* lock */
	uint64_t next_ino;	   /* lock */
	struct ns_inode *root;	   /* immutable pointer */
	struct ns_inode *ctl;	   /* immutable pointer */
	pthread_mutex_t odd_lock;
	struct ns_odd *odd; /* odd_lock: keys already logged */
};

/* A listing entry that passed the name checks (see prepare_listing()). */
struct ns_prep {
	const char *name;	     /* borrowed from the listing */
	const struct store_entry *e; /* borrowed */
};

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
	free(in->key);
	free(in->dkey);
	free(in->etag);
	free(in->children);
	free(in->data);
	free(in);
}

/* Makes a new inode and adds it to the table (not linked). Lock held. */
static struct ns_inode *inode_new(struct ns *ns, enum ns_kind kind,
				  uint64_t parent, const char *name,
				  const char *key)
{
	struct ns_inode *in = calloc(1, sizeof(*in));
	size_t n = strlen(name);

	if (!in)
		return NULL;
	in->dkey = malloc(DKEY_PREFIX + n + 1);
	in->key = strdup(key);
	if (!in->dkey || !in->key) {
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
	if (in->permanent || in->linked || in->nlookup || in->pins)
		return;
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

/* Logs an odd key once per mount. Takes only odd_lock. */
static void log_odd(struct ns *ns, const char *dirkey, const char *name,
		    bool is_dir, const char *what)
{
	size_t a = strlen(dirkey), b = strlen(name);
	struct ns_odd *o, *found;

	o = malloc(sizeof(*o) + a + b + 2);
	if (!o)
		return;
	memcpy(o->key, dirkey, a);
	memcpy(o->key + a, name, b);
	o->key[a + b] = is_dir ? '/' : '\0';
	o->key[a + b + 1] = '\0';
	pthread_mutex_lock(&ns->odd_lock);
	HASH_FIND_STR(ns->odd, o->key, found);
	if (!found)
		HASH_ADD_STR(ns->odd, key, o);
	pthread_mutex_unlock(&ns->odd_lock);
	if (found) {
		free(o);
		return;
	}
	log_warn("key '%s' in %s: %s", o->key,
		 ns->store->ops->describe(ns->store), what);
}

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

/* Makes (or reuses) the child of DIR for P. Lock held. */
static struct ns_inode *child_for(struct ns *ns, struct ns_inode *dir,
				  const struct ns_prep *p)
{
	enum ns_kind kind = p->e->is_dir ? NS_DIR : NS_OBJECT;
	struct ns_inode *in = find_dentry(ns, dir->ino, p->name);
	char *key;

	if (in && in->kind == kind) {
		in->seen = true;
	} else {
		if (in) /* changed kind: a new inode takes the name */
			inode_unlink(ns, in);
		if (asprintf(&key, "%s%s%s", dir->key, p->name,
			     p->e->is_dir ? "/" : "") < 0)
			return NULL;
		in = inode_new(ns, kind, dir->ino, p->name, key);
		free(key);
		if (!in)
			return NULL;
		inode_link(ns, in);
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
	if (ns->ttl == 0 || dir->kind == NS_CTL_DIR)
		return true;
	return now_mono() - dir->listed_at < (time_t)ns->ttl;
}

/*
 * Makes sure DIR (pinned by the caller) is listed and fresh. Lock held;
 * released while listing or waiting. On error fills MSG.
 */
static int dir_ensure(struct ns *ns, struct ns_inode *dir, char *msg,
		      size_t msglen)
{
	enum ns_list_state prev;
	int rc;

	while (dir->lstate == NS_LISTING) {
		uint64_t seq = dir->list_seq;

		while (dir->lstate == NS_LISTING && dir->list_seq == seq)
			pthread_cond_wait(&ns->listed, &ns->lock);
		if (dir->lstate != NS_LISTED && dir->list_err) {
			/* The listing we waited for failed: do not retry
			 * it once per waiter. */
			snprintf(msg, msglen, "listing failed: %s",
				 strerror(-dir->list_err));
			return dir->list_err;
		}
	}
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

static void fill_attr(const struct ns_inode *in, struct ns_attr *out)
{
	out->ino = in->ino;
	out->kind = in->kind;
	out->size = in->size;
	out->mtime = in->mtime;
}

static int make_control(struct ns *ns)
{
	static const char version[] = "shardfs " SHARDFS_VERSION "\n";
	struct ns_inode *v;

	ns->ctl = inode_new(ns, NS_CTL_DIR, NS_ROOT_INO, NS_CTL_NAME,
			    NS_CTL_NAME "/");
	if (!ns->ctl)
		return -ENOMEM;
	ns->ctl->permanent = true;
	ns->ctl->lstate = NS_LISTED;
	v = inode_new(ns, NS_CTL_FILE, ns->ctl->ino, "version",
		      NS_CTL_NAME "/version");
	ns->ctl->children = malloc(sizeof(*ns->ctl->children));
	if (!v || !ns->ctl->children)
		return -ENOMEM;
	v->permanent = true;
	v->data = strdup(version);
	if (!v->data)
		return -ENOMEM;
	v->size = strlen(version);
	inode_link(ns, v);
	ns->ctl->children[0] = v;
	ns->ctl->nchildren = 1;
	return 0;
}

int ns_new(const struct ns_conf *conf, struct ns **out)
{
	struct ns *ns = calloc(1, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	ns->store = conf->store;
	ns->ttl = conf->metadata_ttl;
	ns->start_time = (int64_t)time(NULL);
	pthread_mutex_init(&ns->lock, NULL);
	pthread_mutex_init(&ns->odd_lock, NULL);
	pthread_cond_init(&ns->listed, NULL);
	ns->next_ino = NS_ROOT_INO;
	ns->root = inode_new(ns, NS_DIR, NS_ROOT_INO, "", "");
	if (!ns->root || make_control(ns) < 0) {
		ns_free(ns);
		return -ENOMEM;
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

/* Pins and lists directory INO. Lock held. */
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
	log_error("listing directory (inode %" PRIu64 ") of %s failed: %s", ino,
		  ns->store->ops->describe(ns->store), msg);
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
	c = find_dentry(ns, d->ino, name);
	if (c) {
		/* Counted before unpin(), which may free D and its
		 * unreferenced children. */
		c->nlookup++;
		fill_attr(c, out);
	}
	unpin(ns, d);
	pthread_mutex_unlock(&ns->lock);
	return c ? 0 : -ENOENT;
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
	if (in)
		fill_attr(in, out);
	pthread_mutex_unlock(&ns->lock);
	return in ? 0 : -ENOENT;
}

int ns_file(struct ns *ns, uint64_t ino, struct ns_file *out)
{
	struct ns_inode *in;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ns->lock);
	in = find_ino(ns, ino);
	if (!in) {
		rc = -ENOENT;
	} else if (ns_kind_is_dir(in->kind)) {
		rc = -EISDIR;
	} else {
		out->kind = in->kind;
		out->size = in->size;
		if (in->kind == NS_CTL_FILE)
			out->data = strdup(in->data);
		else
			out->key = strdup(in->key);
		out->etag = in->etag ? strdup(in->etag) : NULL;
		if ((!out->data && !out->key) || (in->etag && !out->etag))
			rc = -ENOMEM;
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
	f->key = f->etag = f->data = NULL;
}

/* Copies the children of D into a new snapshot. Lock held. */
static int snapshot(const struct ns_inode *d, struct ns_dir **out)
{
	struct ns_dir *s = calloc(1, sizeof(*s));
	size_t total = 0;
	char *p;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < d->nchildren; i++)
		total += strlen(inode_name(d->children[i])) + 1;
	s->ents = malloc((d->nchildren ? d->nchildren : 1) * sizeof(*s->ents));
	s->names = malloc(total ? total : 1);
	if (!s->ents || !s->names) {
		ns_dir_free(s);
		return -ENOMEM;
	}
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
	s->ino = d->ino;
	s->parent = d->ino == NS_ROOT_INO ? NS_ROOT_INO : d->parent;
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
	free(d->ents);
	free(d->names);
	free(d);
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
