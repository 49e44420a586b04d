/*
 * acl.c: POSIX ACLs (SCHEMA.md, "POSIX ACLs"), the libfuse way
 * (FUSE_CAP_POSIX_ACL): the kernel checks permissions against the access
 * ACL it reads from us; we keep the ACL, the mode and inheritance right.
 *
 *   - an ACL is stored as the value of X ino system.posix_acl_access or
 *     system.posix_acl_default, in the kernel's xattr encoding, validated
 *     strictly before it is stored (acl_decode);
 *   - the mode's permission bits always equal what the access ACL says
 *     (USER_OBJ, MASK or else GROUP_OBJ, OTHER): setting the ACL sets the
 *     mode, chmod rewrites the ACL; an access ACL the mode says all of is
 *     not stored (as ext4);
 *   - a new inode takes its ACLs from its parent's default ACL and the
 *     create mode as the kernel's posix_acl_create does, or the umask when
 *     the parent has none (the kernel leaves the umask to us: DONT_MASK).
 * Each change is written in one store batch with the inode record it goes
 * with.  Locking: the callers' (the inode's stripe lock; for inheritance
 * ns_lock, the new inode being invisible, and the parent's stripe lock
 * taken here briefly to read its flags).
 */
#include "acl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_LEN 4
#define ENTRY_LEN 8

int acl_is_xattr(const char *name)
{
	return strcmp(name, ACL_XATTR_ACCESS) == 0 || strcmp(name, ACL_XATTR_DEFAULT) == 0;
}

/* -EINVAL, with the reason in why (when given). */
static int invalid(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int invalid(char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int acl_decode(const void *val, size_t len, struct acl **out, char *why, size_t whylen)
{
	const uint8_t *p = val;
	*out = NULL;
	if (len < HEADER_LEN || (len - HEADER_LEN) % ENTRY_LEN)
		return invalid(why, whylen, "length %zu is not 4 + 8 x entries", len);
	uint32_t version = get_le32(p);
	if (version != ACL_XATTR_VERSION)
		return invalid(why, whylen, "offset 0: version %u, not %u", version,
			       ACL_XATTR_VERSION);
	uint32_t n = (uint32_t)((len - HEADER_LEN) / ENTRY_LEN);
	struct acl *acl = malloc(sizeof(*acl) + (size_t)n * sizeof(acl->entry[0]));
	if (!acl)
		return -ENOMEM;
	acl->count = n;
	unsigned seen = 0; /* tags present */
	int rc = 0;
	for (uint32_t i = 0; i < n && !rc; i++) {
		const uint8_t *e = p + HEADER_LEN + (size_t)i * ENTRY_LEN;
		struct acl_entry *x = &acl->entry[i];
		x->tag = (uint16_t)(e[0] | e[1] << 8);
		x->perm = (uint16_t)(e[2] | e[3] << 8);
		x->id = get_le32(e + 4);
		unsigned off = (unsigned)(HEADER_LEN + i * ENTRY_LEN);
		if (x->perm & ~7u) {
			rc = invalid(why, whylen, "offset %u: permission bits 0x%x", off, x->perm);
			break;
		}
		switch (x->tag) {
		case ACL_TAG_USER_OBJ:
		case ACL_TAG_GROUP_OBJ:
		case ACL_TAG_MASK:
		case ACL_TAG_OTHER:
			if (seen & x->tag)
				rc = invalid(why, whylen, "offset %u: tag 0x%x twice", off, x->tag);
			x->id = ACL_ID_UNDEFINED; /* the kernel ignores it too */
			break;
		case ACL_TAG_USER:
		case ACL_TAG_GROUP:
			/* Named entries: ascending ids, none twice (posix_acl_valid). */
			if (i > 0 && acl->entry[i - 1].tag == x->tag && acl->entry[i - 1].id >= x->id)
				rc = invalid(why, whylen, "offset %u: id %u out of order or repeated",
					     off, x->id);
			break;
		default:
			rc = invalid(why, whylen, "offset %u: unknown tag 0x%x", off, x->tag);
		}
		/* Tags in ascending order: USER_OBJ USER... GROUP_OBJ GROUP... MASK OTHER. */
		if (!rc && i > 0 && acl->entry[i - 1].tag > x->tag)
			rc = invalid(why, whylen, "offset %u: tag 0x%x out of order", off, x->tag);
		seen |= x->tag;
	}
	if (!rc && n > 0) {
		const unsigned need = ACL_TAG_USER_OBJ | ACL_TAG_GROUP_OBJ | ACL_TAG_OTHER;
		if ((seen & need) != need) {
			const char *what = !(seen & ACL_TAG_USER_OBJ)    ? "owner (USER_OBJ)"
					   : !(seen & ACL_TAG_GROUP_OBJ) ? "group (GROUP_OBJ)"
									 : "other (OTHER)";
			rc = invalid(why, whylen, "no %s entry", what);
		} else if ((seen & (ACL_TAG_USER | ACL_TAG_GROUP)) && !(seen & ACL_TAG_MASK))
			rc = invalid(why, whylen, "named entries without a mask entry");
	}
	if (rc) {
		free(acl);
		return rc;
	}
	*out = acl;
	return 0;
}

size_t acl_encoded_len(const struct acl *acl)
{
	return HEADER_LEN + (size_t)acl->count * ENTRY_LEN;
}

void acl_encode(const struct acl *acl, uint8_t *buf)
{
	put_le32(buf, ACL_XATTR_VERSION);
	for (uint32_t i = 0; i < acl->count; i++) {
		const struct acl_entry *x = &acl->entry[i];
		uint8_t *e = buf + HEADER_LEN + (size_t)i * ENTRY_LEN;
		e[0] = (uint8_t)x->tag;
		e[1] = (uint8_t)(x->tag >> 8);
		e[2] = (uint8_t)x->perm;
		e[3] = (uint8_t)(x->perm >> 8);
		bool named = x->tag == ACL_TAG_USER || x->tag == ACL_TAG_GROUP;
		put_le32(e + 4, named ? x->id : ACL_ID_UNDEFINED);
	}
}

int acl_equiv_mode(const struct acl *acl, mode_t *mode)
{
	mode_t m = 0;
	int not_equiv = 0;
	/* Entries are sorted: MASK comes after GROUP_OBJ and overrides it. */
	for (uint32_t i = 0; i < acl->count; i++) {
		const struct acl_entry *x = &acl->entry[i];
		switch (x->tag) {
		case ACL_TAG_USER_OBJ:
			m |= (mode_t)(x->perm & 7) << 6;
			break;
		case ACL_TAG_GROUP_OBJ:
			m |= (mode_t)(x->perm & 7) << 3;
			break;
		case ACL_TAG_OTHER:
			m |= x->perm & 7;
			break;
		case ACL_TAG_MASK:
			m = (m & ~(mode_t)S_IRWXG) | (mode_t)(x->perm & 7) << 3;
			not_equiv = 1;
			break;
		default: /* USER, GROUP */
			not_equiv = 1;
		}
	}
	*mode = (*mode & ~(mode_t)0777) | m;
	return not_equiv;
}

static struct acl_entry *find_tag(struct acl *acl, uint16_t tag)
{
	for (uint32_t i = 0; i < acl->count; i++)
		if (acl->entry[i].tag == tag)
			return &acl->entry[i];
	return NULL;
}

void acl_chmod(struct acl *acl, mode_t mode)
{
	struct acl_entry *u = find_tag(acl, ACL_TAG_USER_OBJ), *g = find_tag(acl, ACL_TAG_GROUP_OBJ);
	struct acl_entry *m = find_tag(acl, ACL_TAG_MASK), *o = find_tag(acl, ACL_TAG_OTHER);
	if (u)
		u->perm = (uint16_t)((mode >> 6) & 7);
	if (m)
		m->perm = (uint16_t)((mode >> 3) & 7);
	else if (g)
		g->perm = (uint16_t)((mode >> 3) & 7);
	if (o)
		o->perm = (uint16_t)(mode & 7);
}

int acl_create_masq(struct acl *acl, mode_t *mode_p)
{
	mode_t mode = *mode_p;
	int not_equiv = 0;
	struct acl_entry *group = NULL, *mask = NULL;
	for (uint32_t i = 0; i < acl->count; i++) {
		struct acl_entry *x = &acl->entry[i];
		switch (x->tag) {
		case ACL_TAG_USER_OBJ:
			x->perm &= (uint16_t)((mode >> 6) & 7);
			mode &= ((mode_t)x->perm << 6) | ~(mode_t)S_IRWXU;
			break;
		case ACL_TAG_OTHER:
			x->perm &= (uint16_t)(mode & 7);
			mode &= (mode_t)x->perm | ~(mode_t)S_IRWXO;
			break;
		case ACL_TAG_GROUP_OBJ:
			group = x;
			break;
		case ACL_TAG_MASK:
			mask = x;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	/* The group class bits go to the mask when there is one. */
	struct acl_entry *gc = mask ? mask : group;
	if (gc) { /* acl_decode guarantees GROUP_OBJ; a bare copy may not */
		gc->perm &= (uint16_t)((mode >> 3) & 7);
		mode &= ((mode_t)gc->perm << 3) | ~(mode_t)S_IRWXG;
	}
	*mode_p = (*mode_p & ~(mode_t)0777) | (mode & 0777);
	return not_equiv;
}

/* The ACL stored under name for ino: 0 with *out (NULL when absent), or
 * -EUCLEAN for a stored value that does not decode (logged, naming the
 * inode and the key), or another negative errno. */
static int load(struct fs *fs, uint64_t ino, const char *name, struct acl **out)
{
	*out = NULL;
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, strlen(name));
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &v, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	char why[96];
	rc = acl_decode(v, vl, out, why, sizeof(why));
	free(v);
	if (rc == -EINVAL) {
		fs_logf(fs, "inode %llu: damaged xattr %s (X key, %zu bytes): %s",
			(unsigned long long)ino, name, vl, why);
		return -EUCLEAN;
	}
	return rc;
}

static int put(struct store_batch *b, uint64_t ino, const char *name, const struct acl *acl)
{
	size_t len = acl_encoded_len(acl);
	uint8_t *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	acl_encode(acl, buf);
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, strlen(name));
	int rc = store_batch_put(b, k, kl, buf, len);
	free(buf);
	return rc;
}

int acl_fs_inherit(struct fs *fs, struct fs_inode *dir, uint64_t ino, struct inode_rec *r,
		   mode_t umask, struct store_batch *b)
{
	if (S_ISLNK(r->mode))
		return 0;
	struct acl *def = NULL;
	int rc = 0;
	inode_lock(fs, dir);
	bool has_xattrs = dir->rec.flags & INODE_FLAG_XATTR; /* none: skip the lookup */
	inode_unlock(fs, dir);
	if (fs->posix_acl && has_xattrs)
		rc = load(fs, dir->ino, ACL_XATTR_DEFAULT, &def);
	if (rc)
		return rc;
	if (!def || def->count == 0) {
		r->mode &= ~(umask & 0777);
		free(def);
		return 0;
	}
	size_t size = sizeof(*def) + def->count * sizeof(def->entry[0]);
	struct acl *access = malloc(size);
	if (!access) {
		free(def);
		return -ENOMEM;
	}
	memcpy(access, def, size);
	mode_t mode = r->mode;
	if (acl_create_masq(access, &mode)) {
		rc = put(b, ino, ACL_XATTR_ACCESS, access);
		r->flags |= INODE_FLAG_XATTR;
	}
	r->mode = (uint32_t)mode;
	if (!rc && S_ISDIR(r->mode)) {
		rc = put(b, ino, ACL_XATTR_DEFAULT, def);
		r->flags |= INODE_FLAG_XATTR;
	}
	free(access);
	free(def);
	return rc;
}

int acl_fs_set(struct fs *fs, uint64_t ino, const char *name, const void *val, size_t len,
	       const struct fs_caller *caller, struct inode_rec *r, bool *drop)
{
	*drop = false;
	if (!fs->posix_acl)
		return -EOPNOTSUPP; /* stored but not enforced: refuse rather */
	bool is_default = strcmp(name, ACL_XATTR_DEFAULT) == 0;
	if (is_default && !S_ISDIR(r->mode))
		return -EACCES; /* as the VFS's set_posix_acl */
	struct acl *acl;
	char why[96];
	int rc = acl_decode(val, len, &acl, why, sizeof(why));
	if (rc) {
		if (rc == -EINVAL)
			fs_logf(fs, "inode %llu: setxattr %s refused: %s", (unsigned long long)ino,
				name, why);
		return rc;
	}
	if (acl->count == 0) {
		*drop = true; /* the kernel's "no ACL" */
	} else if (!is_default) {
		mode_t mode = r->mode;
		*drop = acl_equiv_mode(acl, &mode) == 0;
		if (!inode_caller_in_group(caller, r->gid))
			mode &= ~(mode_t)S_ISGID;
		r->mode = (uint32_t)mode;
	}
	free(acl);
	return 0;
}

int acl_fs_chmod(struct fs *fs, struct fs_inode *in)
{
	if (!(in->rec.flags & INODE_FLAG_XATTR))
		return 0;
	struct acl *acl;
	int rc = load(fs, in->ino, ACL_XATTR_ACCESS, &acl);
	if (rc || !acl)
		return rc;
	acl_chmod(acl, in->rec.mode);
	struct store_batch *b = store_batch_new();
	rc = b ? put(b, in->ino, ACL_XATTR_ACCESS, acl) : -ENOMEM;
	if (!rc) {
		inode_rec_put(b, in->ino, &in->rec);
		rc = store_write(fs->st, b, 0);
	}
	if (!rc)
		in->dirty = false;
	store_batch_free(b);
	free(acl);
	return rc;
}
