/*
 * wire.c: the daemon's reads and writes of /dev/fuse, through libfuse's
 * custom I/O hooks, for one thing libfuse 3.14 cannot negotiate:
 * FUSE_HANDLE_KILLPRIV_V2.
 *
 * Without it the kernel asks the daemon for security.capability
 * (GETXATTR) before every write(2) call, to decide whether to clear
 * setuid bits and file capabilities: one more round trip per write, which
 * makes 4 KiB writes several times slower than 1 MiB ones.  With it the
 * kernel leaves the clearing to the filesystem and asks at most once per
 * inode.  libfuse 3.14 knows no capability bit for it, so:
 *   - the INIT request tells whether the kernel offers it;
 *   - our INIT reply gets the flag added on its way out;
 *   - a WRITE whose write_flags carry FUSE_WRITE_KILL_SUIDGID (which libfuse
 *     does not pass on) gets WIRE_WRITE_KILL_SUIDGID set in its open flags,
 *     which libfuse does pass on, as fuse_file_info.flags.
 * The filesystem then clears setuid/setgid where the kernel says so
 * (fs_kill_suidgid) and drops security.capability on every write.
 * Layouts: <linux/fuse.h>.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ops.h"

static ssize_t wire_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs *fs = userdata;
	ssize_t n = read(fd, buf, len);
	if (n < (ssize_t)sizeof(struct fuse_in_header))
		return n;
	struct fuse_in_header h;
	memcpy(&h, buf, sizeof(h));
	char *arg = (char *)buf + sizeof(h);
	size_t alen = (size_t)n - sizeof(h);
	if (h.opcode == FUSE_INIT && alen >= offsetof(struct fuse_init_in, flags) + 4) {
		uint32_t flags;
		memcpy(&flags, arg + offsetof(struct fuse_init_in, flags), 4);
		if (flags & FUSE_HANDLE_KILLPRIV_V2)
			__atomic_store_n(&fs->wire_init_unique, h.unique, __ATOMIC_RELEASE);
	} else if (h.opcode == FUSE_WRITE && alen >= sizeof(struct fuse_write_in)) {
		struct fuse_write_in w;
		memcpy(&w, arg, sizeof(w));
		if (w.write_flags & FUSE_WRITE_KILL_SUIDGID) {
			w.flags |= WIRE_WRITE_KILL_SUIDGID;
			memcpy(arg, &w, sizeof(w));
		}
	}
	return n;
}

static ssize_t wire_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs *fs = userdata;
	uint64_t init = __atomic_load_n(&fs->wire_init_unique, __ATOMIC_ACQUIRE);
	if (init && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + 4) {
		struct fuse_out_header oh;
		memcpy(&oh, iov[0].iov_base, sizeof(oh));
		if (oh.unique == init && oh.error == 0) {
			/* libfuse's reply lives in its own stack frame: ours to edit */
			char *p = (char *)iov[1].iov_base + offsetof(struct fuse_init_out, flags);
			uint32_t flags;
			memcpy(&flags, p, 4);
			flags |= FUSE_HANDLE_KILLPRIV_V2;
			memcpy(p, &flags, 4);
			__atomic_store_n(&fs->killpriv_v2, true, __ATOMIC_RELEASE);
			__atomic_store_n(&fs->wire_init_unique, 0, __ATOMIC_RELEASE);
		}
	}
	return writev(fd, iov, count);
}

int fs_wire_attach(struct fs *fs, struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = wire_read,
		.writev = wire_writev,
	};
	/* The session is mounted already: same fd, our hooks around it. */
	int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se));
	if (rc < 0)
		return rc;
	fs->se = se;
	return 0;
}
