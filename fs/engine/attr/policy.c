/*
 * policy.c: where a file's chunks go (SCHEMA.md "Placement"), chosen per
 * file and per directory by the attribute user.lsmfs.placement:
 *
 *   spread    the default: each chunk goes to its hash section, so a file
 *             spreads over every disk (the best balance; a file may be
 *             larger than any disk);
 *   together  every chunk of a file goes to the section of the first one
 *             it got, so a file lives on one disk and a dead disk loses
 *             only the files that lived on it (mergerfs's promise), at no
 *             cost in space.
 *
 * And user.lsmfs.copies, "1" (the default) or "2": how many copies of
 * each new chunk are kept, on two disks (SCHEMA.md "Copies").
 *
 * On a directory the attributes are what the files and directories made in
 * it get: it is copied to them at creation, so a tree keeps the policy it
 * was made under (and cp -a or rsync -X carry it).  On a file it decides
 * where its new chunks go; chunks it has stay where they are.  It is an
 * ordinary attribute (a store key), set by whoever may set the file's
 * user attributes (its owner, as the kernel checks them); a value other
 * than the two names is refused (EINVAL), on set only.
 */
#include "attr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {[PLACE_SPREAD] = "spread", [PLACE_TOGETHER] = "together"};

static int parse(const void *val, size_t len, enum placement *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (len == strlen(names[i]) && memcmp(val, names[i], len) == 0) {
			*out = (enum placement)i;
			return 0;
		}
	return -EINVAL;
}

int policy_parse(const char *name, enum placement *out)
{
	return parse(name, strlen(name), out);
}

/* "1" or "2" (up to CHUNK_MAX_COPIES). */
static int parse_copies(const void *val, size_t len, unsigned *out)
{
	if (len != 1 || ((const char *)val)[0] < '1' ||
	    ((const char *)val)[0] > '0' + CHUNK_MAX_COPIES)
		return -EINVAL;
	*out = (unsigned)(((const char *)val)[0] - '0');
	return 0;
}

int policy_check(const char *name, const void *val, size_t len)
{
	enum placement p;
	unsigned k;
	if (strcmp(name, POLICY_XATTR) == 0)
		return parse(val, len, &p);
	if (strcmp(name, POLICY_COPIES_XATTR) == 0)
		return parse_copies(val, len, &k);
	return 0;
}

/* Attribute name's value for ino (NULL when it has none); malloc'd. */
static int get(struct fs *fs, uint64_t ino, const char *name, bool has_xattrs, void **val,
	       size_t *len)
{
	*val = NULL;
	*len = 0;
	if (!has_xattrs)
		return 0; /* none: no lookup (the flag says it never had any) */
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, strlen(name));
	int rc = store_get(fs->st, NULL, k, kl, val, len);
	return rc == -ENOENT ? 0 : rc;
}

int policy_inherit(struct fs *fs, struct fs_inode *dir, uint64_t ino, struct inode_rec *r,
		   struct store_batch *b)
{
	if (!S_ISREG(r->mode) && !S_ISDIR(r->mode))
		return 0;
	inode_lock(fs, dir);
	bool has = dir->rec.flags & INODE_FLAG_XATTR;
	inode_unlock(fs, dir);
	static const char *const inherited[] = {POLICY_XATTR, POLICY_COPIES_XATTR};
	int rc = 0;
	for (size_t i = 0; !rc && has && i < sizeof(inherited) / sizeof(inherited[0]); i++) {
		void *val;
		size_t len;
		rc = get(fs, dir->ino, inherited[i], has, &val, &len);
		if (rc || !val)
			continue;
		uint8_t k[KEY_MAX + 8];
		size_t kl = key_xattr(k, ino, inherited[i], strlen(inherited[i]));
		rc = store_batch_put(b, k, kl, val, len);
		if (!rc)
			r->flags |= INODE_FLAG_XATTR;
		free(val);
	}
	return rc;
}

int policy_placement(struct fs *fs, const struct fs_inode *in, enum placement *out)
{
	*out = PLACE_SPREAD;
	void *val;
	size_t len;
	int rc = get(fs, in->ino, POLICY_XATTR, in->rec.flags & INODE_FLAG_XATTR, &val, &len);
	if (rc || !val)
		return rc;
	if (parse(val, len, out))
		*out = PLACE_SPREAD; /* set before it was checked: the default */
	free(val);
	return 0;
}

int policy_root_copies(struct fs *fs, unsigned *out)
{
	*out = 1;
	void *val;
	size_t len;
	int rc = get(fs, LSMFS_ROOT_INO, POLICY_COPIES_XATTR, true, &val, &len);
	if (rc || !val)
		return rc;
	if (parse_copies(val, len, out))
		*out = 1;
	free(val);
	return 0;
}

int policy_copies(struct fs *fs, const struct fs_inode *in, unsigned *out)
{
	*out = 1;
	void *val;
	size_t len;
	int rc = get(fs, in->ino, POLICY_COPIES_XATTR, in->rec.flags & INODE_FLAG_XATTR, &val,
		     &len);
	if (rc || !val)
		return rc;
	if (parse_copies(val, len, out))
		*out = 1;
	free(val);
	return 0;
}
