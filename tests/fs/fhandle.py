#!/usr/bin/env python3
# fhandle.py save|read|stale MNT HANDLE_FILE [PATH]: name_to_handle_at and
# open_by_handle_at through ctypes (root: CAP_DAC_READ_SEARCH), for test_hostile.sh.
import ctypes, os, sys, errno
libc = ctypes.CDLL(None, use_errno=True)
class FH(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]
def handle(path):
    fh = FH(); fh.handle_bytes = 128
    mid = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(fh), ctypes.byref(mid), 0) != 0:
        raise OSError(ctypes.get_errno(), "name_to_handle_at " + path)
    return bytes(fh)
def open_handle(mnt, raw):
    fh = FH.from_buffer_copy(raw)
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), os.O_RDONLY)
    e = ctypes.get_errno()
    os.close(mfd)
    if fd < 0:
        raise OSError(e, "open_by_handle_at")
    return fd
cmd, mnt = sys.argv[1], sys.argv[2]
if cmd == "save":
    open(sys.argv[3], "wb").write(handle(sys.argv[4]))
elif cmd == "read":
    fd = open_handle(mnt, open(sys.argv[3], "rb").read())
    sys.stdout.write(os.read(fd, 100).decode()); os.close(fd)
elif cmd == "stale":
    try:
        open_handle(mnt, open(sys.argv[3], "rb").read())
        sys.exit("a handle of a deleted file still opens")
    except OSError as e:
        if e.errno != errno.ESTALE:
            raise
