// SPDX-License-Identifier: MIT
/*
 * The FUSE low-level operations. Each callback decodes its request, asks
 * ns or rd, and replies exactly once on every path. Reads are
 * asynchronous: the reply is sent from rd's completion, which runs on the
 * store's thread (or inline for the local store).
 *
 * Lookup counts: every reply that hands the kernel an inode (lookup,
 * readdirplus entries) is preceded by ns_lookup(), which counts it; when
 * the reply cannot be delivered the count is taken back with ns_forget().
 *
 * Files are objects, tar members (a range of their shard, or segments of
 * it for sparse members) or control files (from memory); symlinks come
 * from an index and answer readlink.
 *
 * Open directories: fi->fh is a struct fsops_dir, also kept on fs->dirs,
 * because the kernel sends no RELEASEDIR for directories still open when
 * the session ends (unmount, SIGTERM): fsops_free() frees those.
 *
 * Threading: see fsops.h. fs->dirs_lock protects fs->dirs only; nothing
 * else is called while holding it.
 */
#define FUSE_USE_VERSION 34
#include "fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <fuse_lowlevel.h>

#include "log.h"

/* d_ino of an entry without an inode yet (FUSE_UNKNOWN_INO of the kernel
 * protocol; libfuse's headers do not export it). */
#define UNKNOWN_INO 0xffffffffu

struct fsops {
	struct ns *ns;	 /* borrowed, immutable */
	struct rd *rd;	 /* borrowed, immutable */
	uid_t uid;	 /* immutable */
	gid_t gid;	 /* immutable */
	double timeout;	 /* immutable */
	bool cache_dirs; /* immutable: no metadata TTL */
	unsigned max_read;
	unsigned max_background;
	bool use_no_open;     /* immutable */
	_Atomic bool no_open; /* set by init() */
	pthread_mutex_t dirs_lock;
	struct fsops_dir *dirs; /* dirs_lock: open directories */
};

/* An open directory (fi->fh). */
struct fsops_dir {
	struct fsops_dir *prev, *next; /* fs->dirs, under fs->dirs_lock */
	struct ns_dir *d;	       /* owned */
};

/* A read waiting for rd's completion. Owned by the callback chain. */
struct fsops_read {
	struct fsops *fs;
	fuse_req_t req;
	uint64_t off;
	size_t size;
	struct ns_file f;
};

int fsops_new(const struct fsops_conf *conf, struct fsops **out)
{
	struct fsops *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->ns = conf->ns;
	fs->rd = conf->rd;
	fs->uid = conf->uid;
	fs->gid = conf->gid;
	fs->timeout = conf->timeout;
	fs->cache_dirs = conf->metadata_ttl == 0;
	fs->max_read = conf->max_read ? conf->max_read : FSOPS_MAX_READ;
	fs->max_background = conf->max_background ? conf->max_background : 256;
	fs->use_no_open = conf->use_no_open;
	atomic_init(&fs->no_open, false);
	pthread_mutex_init(&fs->dirs_lock, NULL);
	*out = fs;
	return 0;
}

static void dir_unlink(struct fsops *fs, struct fsops_dir *od)
{
	pthread_mutex_lock(&fs->dirs_lock);
	if (od->prev)
		od->prev->next = od->next;
	else
		fs->dirs = od->next;
	if (od->next)
		od->next->prev = od->prev;
	pthread_mutex_unlock(&fs->dirs_lock);
}

void fsops_free(struct fsops *fs)
{
	if (!fs)
		return;
	/* Directories the kernel never released (the session ended). */
	while (fs->dirs) {
		struct fsops_dir *od = fs->dirs;

		fs->dirs = od->next;
		ns_dir_free(od->d);
		free(od);
	}
	pthread_mutex_destroy(&fs->dirs_lock);
	free(fs);
}

static struct fsops *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_stat(const struct fsops *fs, const struct ns_attr *a,
		      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)a->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_nlink = 1;
	if (ns_kind_is_dir(a->kind)) {
		st->st_mode = S_IFDIR | 0555;
	} else if (a->kind == NS_SYMLINK) {
		st->st_mode = S_IFLNK | 0777;
		st->st_size = (off_t)a->size;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_size = (off_t)a->size;
		st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	}
	st->st_blksize = 128 * 1024;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = (long)a->mtime_nsec;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

static void fill_entry(const struct fsops *fs, const struct ns_attr *a,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = 1; /* inode numbers are never reused in a mount */
	/* A generated control file changes at every getattr: the kernel
	 * must ask again before each read (see ns.h). */
	e->attr_timeout = a->volatile_attr ? 0 : fs->timeout;
	e->entry_timeout = fs->timeout;
	fill_stat(fs, a, &e->attr);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fsops *fs = userdata;
	bool no_open =
	    fs->use_no_open && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);

	conn->max_read = fs->max_read;
	conn->max_background = fs->max_background;
	conn->congestion_threshold = fs->max_background * 3 / 4;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* Always readdirplus: a listed entry then needs no LOOKUP when a
	 * loader opens it, and every round trip per file counts. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	atomic_store(&fs->no_open, no_open);
	log_info("FUSE protocol %u.%u, max_read %u, max_background %u, "
		 "no-open %s",
		 conn->proto_major, conn->proto_minor, conn->max_read,
		 conn->max_background, no_open ? "on" : "off");
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fsops *fs = fs_of(req);
	struct fuse_entry_param e;
	struct ns_attr a;
	int rc = ns_lookup(fs->ns, parent, name, &a);

	if (rc == -ENOENT) {
		/* A negative entry: the kernel caches the absence too. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_entry(fs, &a, &e);
	if (fuse_reply_entry(req, &e) != 0)
		ns_forget(fs->ns, a.ino, 1);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ns_forget(fs_of(req)->ns, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct fsops *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		ns_forget(fs->ns, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fsops *fs = fs_of(req);
	struct ns_attr a;
	struct stat st;
	int rc = ns_getattr(fs->ns, ino, &a);

	(void)fi;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_stat(fs, &a, &st);
	fuse_reply_attr(req, &st, a.volatile_attr ? 0 : fs->timeout);
}

/* Replies: fuse_reply_open, or ENOSYS (no-open), EROFS, EISDIR, ENOENT. */
static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsops *fs = fs_of(req);
	struct ns_attr a;
	int rc;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (atomic_load(&fs->no_open)) {
		/* The kernel takes ENOSYS as "opens always succeed, keep
		 * the page cache" and sends no more open or release. */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = ns_getattr(fs->ns, ino, &a);
	if (rc == 0 && ns_kind_is_dir(a.kind))
		rc = -EISDIR;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = 0;
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void read_done(void *arg, int err, const char *data, size_t len,
		      const char *msg)
{
	struct fsops_read *r = arg;

	if (err == -ESTALE && r->f.kind == NS_MEMBER) {
		/* One line per shard, not one per read of its members. */
		ns_log_shard_changed(r->fs->ns, r->f.key, msg);
		fuse_reply_err(r->req, EIO);
	} else if (err) {
		log_error("read of %s%s (%" PRIu64 " bytes at %" PRIu64
			  ") failed: %s",
			  r->f.kind == NS_MEMBER ? "a member of shard " : "",
			  r->f.key, (uint64_t)r->size, r->off,
			  msg ? msg : strerror(-err));
		fuse_reply_err(r->req, EIO);
	} else {
		fuse_reply_buf(r->req, data, len);
	}
	ns_file_release(&r->f);
	free(r);
}

/* Starts the read of an object or a tar member; read_done() replies. */
static void read_file(struct fsops *fs, struct fsops_read *r, uint64_t ino)
{
	struct rd_seg one = {0, r->f.size, r->f.base}, *segs = &one;
	size_t n = 1;
	struct rd_file f = {
	    .key = r->f.key,
	    .etag = r->f.etag,
	    .size = r->f.size,
	    .obj_size = r->f.obj_size,
	    .segs = &one,
	    .nsegs = 1,
	    .member = r->f.kind == NS_MEMBER,
	    .hint_off = r->f.hint_off,
	    .hint_len = r->f.hint_len,
	    .stream = ino,
	};
	int rc;

	if (r->f.sparse) {
		rc = ns_file_segs(&r->f, r->off, r->size, &segs, &n);
		if (rc) {
			read_done(r, rc, NULL, 0, "cannot map the sparse file");
			return;
		}
		/* No segment around the read (all zeros): still not NULL,
		 * which would mean the whole object. */
		f.segs = segs ? segs : &one;
		f.nsegs = n;
	}
	rd_read_file(fs->rd, &f, r->off, r->size, read_done, r);
	if (segs != &one)
		free(segs);
}

/* Replies: fuse_reply_buf (now or from rd's completion), or an error. */
static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fsops *fs = fs_of(req);
	struct fsops_read *r = calloc(1, sizeof(*r));
	int rc;

	(void)fi; /* without open there is no handle: the inode says all */
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = off < 0 ? -EINVAL : ns_file(fs->ns, ino, &r->f);
	if (rc) {
		free(r);
		fuse_reply_err(req, -rc);
		return;
	}
	if (r->f.kind == NS_CTL_FILE) {
		size_t n = (uint64_t)off >= r->f.size
			       ? 0
			       : (size_t)(r->f.size - (uint64_t)off);

		fuse_reply_buf(req, r->f.data + (n ? off : 0),
			       n < size ? n : size);
		ns_file_release(&r->f);
		free(r);
		return;
	}
	r->fs = fs;
	r->req = req;
	r->off = (uint64_t)off;
	r->size = size;
	read_file(fs, r, ino);
}

/* Replies: fuse_reply_readlink, or EINVAL (not a symlink), ENOENT. */
static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char *target = NULL;
	int rc = ns_readlink(fs_of(req)->ns, ino, &target);

	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target);
	free(target);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fsops *fs = fs_of(req);
	struct fsops_dir *od = calloc(1, sizeof(*od));
	int rc = od ? ns_opendir(fs->ns, ino, &od->d) : -ENOMEM;

	if (rc) {
		free(od);
		fuse_reply_err(req, -rc);
		return;
	}
	pthread_mutex_lock(&fs->dirs_lock);
	od->next = fs->dirs;
	if (fs->dirs)
		fs->dirs->prev = od;
	fs->dirs = od;
	pthread_mutex_unlock(&fs->dirs_lock);
	fi->fh = (uint64_t)(uintptr_t)od;
	/* Immutable listings: the kernel may keep the directory's pages. */
	fi->keep_cache = fs->cache_dirs;
	fi->cache_readdir = fs->cache_dirs;
	if (fuse_reply_open(req, fi) != 0) {
		dir_unlink(fs, od);
		ns_dir_free(od->d);
		free(od);
	}
}

static const struct ns_dir *dir_of(const struct fuse_file_info *fi)
{
	return ((const struct fsops_dir *)(uintptr_t)fi->fh)->d;
}

/*
 * Position I of D (0 ".", 1 "..", then the entries) into *E: 0, or 1 when
 * the position is to be skipped.
 */
static int dir_pos(struct fsops *fs, const struct ns_dir *d, size_t i,
		   struct ns_dirent *e)
{
	if (i < 2) {
		e->ino = i == 0 ? ns_dir_ino(d) : ns_dir_parent(d);
		e->kind = NS_DIR;
		strcpy(e->name, i == 0 ? "." : "..");
		return 0;
	}
	return ns_dir_get(fs->ns, d, i - 2, e) == 0 ? 0 : 1;
}

static mode_t dtype_of(enum ns_kind kind)
{
	if (ns_kind_is_dir(kind))
		return S_IFDIR;
	return kind == NS_SYMLINK ? S_IFLNK : S_IFREG;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	const struct ns_dir *d = dir_of(fi);
	char *buf = malloc(size ? size : 1);
	size_t pos = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < ns_dir_count(d) + 2;
	     i++) {
		struct stat st = {0};
		struct ns_dirent e;
		size_t n;

		if (dir_pos(fs_of(req), d, i, &e) != 0)
			continue;
		/* Index entries get their inode on lookup (readdirplus). */
		st.st_ino = (ino_t)(e.ino ? e.ino : UNKNOWN_INO);
		st.st_mode = dtype_of(e.kind);
		n = fuse_add_direntry(req, buf + pos, size - pos, e.name, &st,
				      (off_t)(i + 1));
		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

/* Growable list of inodes handed out by one readdirplus reply. */
struct plus_list {
	uint64_t *ino;
	size_t n, alloc;
};

static int plus_add(struct plus_list *l, uint64_t ino)
{
	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 64;
		uint64_t *p = realloc(l->ino, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->ino = p;
		l->alloc = na;
	}
	l->ino[l->n++] = ino;
	return 0;
}

/*
 * Adds position I of D to BUF; returns the bytes used, 0 to skip the
 * entry (vanished), or more than ROOM when it does not fit (then nothing
 * is counted).
 */
static size_t plus_entry(fuse_req_t req, struct fsops *fs,
			 const struct ns_dir *d, size_t i, char *buf,
			 size_t room, struct plus_list *l)
{
	struct fuse_entry_param e;
	struct ns_dirent de;
	struct ns_attr a;
	size_t n;

	if (dir_pos(fs, d, i, &de) != 0)
		return 0;
	if (i < 2) {
		/* "." and "..": node id 0, the kernel does not link them. */
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = (ino_t)de.ino;
		e.attr.st_mode = S_IFDIR;
		return fuse_add_direntry_plus(req, buf, room, de.name, &e,
					      (off_t)(i + 1));
	}
	if (ns_lookup(fs->ns, ns_dir_ino(d), de.name, &a) != 0)
		return 0;
	fill_entry(fs, &a, &e);
	n = fuse_add_direntry_plus(req, buf, room, de.name, &e,
				   (off_t)(i + 1));
	if (n > room || plus_add(l, a.ino) != 0) {
		ns_forget(fs->ns, a.ino, 1);
		return n > room ? n : room + 1;
	}
	return n;
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	struct fsops *fs = fs_of(req);
	const struct ns_dir *d = dir_of(fi);
	struct plus_list l = {NULL, 0, 0};
	char *buf = malloc(size ? size : 1);
	size_t pos = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < ns_dir_count(d) + 2;
	     i++) {
		size_t n = plus_entry(req, fs, d, i, buf + pos, size - pos, &l);

		if (n > size - pos)
			break;
		pos += n;
	}
	if (fuse_reply_buf(req, buf, pos) != 0) {
		for (size_t j = 0; j < l.n; j++)
			ns_forget(fs->ns, l.ino[j], 1);
	}
	free(l.ino);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct fsops_dir *od = (struct fsops_dir *)(uintptr_t)fi->fh;

	(void)ino;
	dir_unlink(fs_of(req), od);
	ns_dir_free(od->d);
	free(od);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fsops *fs = fs_of(req);
	struct statvfs st;

	(void)ino;
	memset(&st, 0, sizeof(st));
	st.f_bsize = 128 * 1024;
	st.f_frsize = 4096;
	st.f_files = ns_count(fs->ns);
	st.f_namemax = NS_NAME_MAX;
	st.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &st);
}

/* Extended attributes: none. ENOSYS makes the kernel stop asking. */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}

/*
 * Write operations: the mount is read-only (it is also mounted "ro", so
 * the kernel answers most of these itself); each replies EROFS.
 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	(void)ino;
	(void)attr;
	(void)to_set;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	(void)parent;
	(void)name;
	(void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	(void)ino;
	(void)mode;
	(void)offset;
	(void)length;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	(void)ino_in;
	(void)off_in;
	(void)fi_in;
	(void)ino_out;
	(void)off_out;
	(void)fi_out;
	(void)len;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

/* Operations left NULL get ENOSYS from libfuse, after which the kernel
 * stops sending them (flush, fsync, access) or handles them itself. */
static const struct fuse_lowlevel_ops fsops_ll = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_unlink,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .readlink = op_readlink,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .release = op_release,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .create = op_create,
    .fallocate = op_fallocate,
    .copy_file_range = op_copy_file_range,
};

const struct fuse_lowlevel_ops *fsops_lowlevel_ops(void)
{
	return &fsops_ll;
}

size_t fsops_lowlevel_ops_size(void)
{
	return sizeof(fsops_ll);
}
