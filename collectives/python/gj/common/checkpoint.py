"""Checkpoint files gj writes for the user (the Keras stop callback, a persisted elastic State):
written atomically, so that a crash, a SIGKILL or a full disk leaves the previous checkpoint
whole rather than half of a new one.

atomic_write(path, write) writes through write(file) into a temporary file in path's own folder
(a rename is atomic only within one file system), flushes and fsyncs it, renames it over path
and fsyncs the folder, so that the rename itself survives a crash of the node. A failure removes
the temporary file and leaves path as it was.
"""

import os
import tempfile

__all__ = ["atomic_write"]


def atomic_write(path, write, mode="wb"):
    """Calls write(f) on a temporary file next to path, then makes it path in one rename. Returns
    path. Raises the OSError of the step that failed (path then untouched)."""
    def save(tmp):
        with open(tmp, mode) as f:
            write(f)

    return atomic_write_with(path, save)


def atomic_write_with(path, save):
    """For savers that want a path, not a file (model.save_weights, torch.save to a name):
    save(tmp_path) into a temporary name next to path keeping path's suffix (Keras picks the
    format by it), then fsync and rename as atomic_write."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    base = os.path.basename(path)
    suffix = ""
    for known in (".weights.h5", ".keras", ".h5", ".pt", ".pth", ".pkl"):
        if base.endswith(known):
            suffix = known
            break
    fd, tmp = tempfile.mkstemp(prefix="." + base + ".", suffix=".tmp" + suffix, dir=folder)
    os.close(fd)
    try:
        save(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path
