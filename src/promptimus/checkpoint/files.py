"""Reading and writing files safely: bounded reads of regular files only, and atomic writes whose
temporary files a crashed writer's successor can recognise and remove. `atomic_write_bytes` is
the one atomic writer in promptimus: checkpoints, vector store files and training history all
save through it.

Reading: a path is opened without blocking (`O_NONBLOCK`: a FIFO with no writer would otherwise
block the open forever) and the *opened* descriptor is checked with `fstat`, so a file swapped
after a check cannot slip through. Only regular files are read (FIFOs, devices such as
`/dev/zero`, sockets and folders are refused), and never more than a size limit.

Writing: the new content goes to a temporary file beside the target, is flushed to disk, then
renamed over the target, so readers see the old file or the new one, never a mix. A process
killed mid-write leaves its temporary file behind. The temporary file's name says who wrote it —
`.<name>.<host tag>-<pid>-<random>.tmp`, the host tag being a hash of the host name and boot id —
and each save removes the leftovers of writers on this host (same tag) whose process no longer
exists. A live writer's file is never touched (its pid answers `kill(pid, 0)`), nor one from
another host sharing the folder, nor the writing process's own (another thread may be writing).
A pid reused by an unrelated live process only delays the cleanup. Temporary files named by
older versions (`.<name>.<random>.tmp`) carry no owner and are left alone.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from pathlib import Path

from ..errors import CheckpointWriteError, FileTooLarge, NotARegularFile
from .limits import DEFAULT_MAX_FILE_BYTES

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "read_regular_file",
    "read_text",
    "remove_stale_temp_files",
    "temp_name",
]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(path: Path, limit: int | None = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (None: no limit).

    Raises `NotARegularFile` for anything that is not a regular file, `FileTooLarge` for a file
    larger than `limit`, and `OSError` (FileNotFoundError, PermissionError, ...) when it cannot
    be opened.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)  # the opened file itself: no window for a swap after a check
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"is {_kind(info.st_mode)}; only regular files can be read")
        if limit is not None and info.st_size > limit:
            raise FileTooLarge(f"is {info.st_size} bytes, more than the limit of {limit} bytes")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:  # it grew while being read
        raise FileTooLarge(f"is more than the limit of {limit} bytes")
    return data


def _host_tag() -> str:
    boot_id = ""
    with contextlib.suppress(OSError):
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    node = os.uname().nodename if hasattr(os, "uname") else ""
    return hashlib.sha256(f"{node}\0{boot_id}".encode()).hexdigest()[:8]


_HOST_TAG = _host_tag()


def temp_name(target: Path) -> str:
    """A fresh temporary file name for writing `target` from this process."""
    return f".{target.name}.{_HOST_TAG}-{os.getpid()}-{os.urandom(6).hex()}.tmp"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, owned by someone else
        return True
    return True


def remove_stale_temp_files(target: Path) -> list[str]:
    """Remove the temporary files that dead writers on this host left beside `target`; returns
    their names. Never raises: a file that cannot be listed or removed is left."""
    if os.name != "posix":  # os.kill(pid, 0) is not a liveness probe elsewhere
        return []
    pattern = re.compile(re.escape(f".{target.name}.{_HOST_TAG}-") + r"(\d+)-[0-9a-f]+\.tmp")
    directory = target.parent
    removed: list[str] = []
    mine = os.getpid()
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for name in entries:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == mine or _pid_alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(directory / name)
            removed.append(name)
    return removed


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically (see the module docstring). Raises `OSError`; on
    any failure the old file is left as it was and no temporary file stays behind."""
    directory = path.parent
    remove_stale_temp_files(path)
    tmp = directory / temp_name(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        with contextlib.suppress(OSError):
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def read_text(path: Path, limit: int) -> str:
    """UTF-8 text of a regular file of at most `limit` bytes (raises a `FileRefused` subclass,
    `OSError`, `UnicodeDecodeError`)."""
    return read_regular_file(path, limit).decode("utf-8")


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 text so that readers see the old file or the new one, never a mix. Every
    failure is a `CheckpointWriteError`; the old file is then left as it was."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CheckpointWriteError(
            f"Cannot save checkpoint {path}: the text has an unpaired surrogate "
            f"({text[max(exc.start - 20, 0) : exc.start]!r} is followed by one), which UTF-8 "
            "cannot hold; rename the key or fix the value that has it."
        ) from None
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        if isinstance(exc, IsADirectoryError) or path.is_dir():
            hint = "it is a folder; save to a file path inside it instead"
        elif exc.errno == errno.EFBIG:
            hint = "the file would exceed the file-size limit (ulimit -f); raise the limit"
        elif exc.errno == errno.ENOSPC:
            hint = "the disk is full; free some space"
        elif not path.parent.is_dir():
            hint = f"the folder {path.parent} does not exist; create that folder first"
        else:
            hint = "check that the folder is writable"
        raise CheckpointWriteError(
            f"Cannot save checkpoint {path}: {exc.strerror or exc}; {hint}. The previous file, "
            "if any, is unchanged."
        ) from exc
