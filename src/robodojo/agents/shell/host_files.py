"""Files an agent could have touched, read and written by the harness without following anything the agent made.

The harness runs outside the sandbox (as root in CI and in chroots), so a path the agent controls must never decide
where the harness reads or writes. Every function here walks a folder from a directory descriptor the harness opened
itself, one name at a time with ``O_NOFOLLOW``: a symbolic link is refused, never followed (nor is a link in a
folder on the way); only regular files are read (checked on the open descriptor, so a file swapped for a link or a
FIFO after a look is refused too, and opening a FIFO does not block: ``O_NONBLOCK``); files are written under a
temporary name the harness draws at random, created with ``O_EXCL`` and renamed over the target (a rename replaces
a name, it never writes through a link or into a hard-linked file). Sizes are bounded while reading.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from robodojo.errors import RobodojoError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK_BYTES = 1 << 20
#: a tool folder copied out of a sandbox: tools are small sources and tests (the shared pool is 40 kB)
MAX_TREE_BYTES = 64 << 20
MAX_TREE_ENTRIES = 10_000


class UnsafeFileError(RobodojoError):
    """A path the harness refuses to use: a link, a FIFO or another non-regular file, or one too large."""


def kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (for the refusals the agent reads)."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")):  # fmt: skip
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def open_dir(name: str | Path, *, dir_fd: int | None = None) -> int:
    """A descriptor of the folder ``name`` (relative to ``dir_fd``); raises UnsafeFileError when it is a link or
    not a folder."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            raise exc from None
        if stat.S_ISDIR(mode):
            raise  # a folder that cannot be opened (permissions): the error as it is
        raise UnsafeFileError(f"{name} is {kind(mode)}, not a folder") from None


@contextlib.contextmanager
def opened_dir(name: str | Path, *, dir_fd: int | None = None, trusted: bool = False) -> Iterator[int]:
    """:func:`open_dir` as a context; ``trusted``: ``name`` is the harness's own path (a link is followed)."""
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC) if trusted else open_dir(name, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_regular(name: str, dir_fd: int) -> tuple[int, os.stat_result]:
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if not stat.S_ISREG(mode):
        raise UnsafeFileError(f"{name} is {kind(mode)}, not a regular file")
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise UnsafeFileError(f"{name} changed while it was opened ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # swapped after the look: the descriptor is what counts
        os.close(fd)
        raise UnsafeFileError(f"{name} is {kind(st.st_mode)}, not a regular file")
    return fd, st


def read_regular(name: str, *, dir_fd: int, max_bytes: int) -> bytes:
    """The bytes of the regular file ``name`` in the folder ``dir_fd``; UnsafeFileError for anything else or for a
    file of more than ``max_bytes`` (counted while reading: a file that grows is cut there and refused)."""
    fd, _ = _open_regular(name, dir_fd)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, min(CHUNK_BYTES, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise UnsafeFileError(f"{name} is larger than {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parts(relative: str | PurePosixPath) -> list[str]:
    parts = PurePosixPath(relative).parts
    if not parts or parts[0] == "/" or any(p in ("..", ".") for p in parts):
        raise UnsafeFileError(f"{relative}: expected a plain relative path")
    return list(parts)


def read_under(root: Path, relative: str | PurePosixPath, max_bytes: int) -> bytes:
    """The regular file ``root/relative``, every folder on the way opened without following a link (``root``
    itself is the harness's)."""
    *folders, name = _parts(relative)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            inner = open_dir(folder, dir_fd=fd)
            os.close(fd)
            fd = inner
        return read_regular(name, dir_fd=fd, max_bytes=max_bytes)
    finally:
        os.close(fd)


def is_regular_under(root: Path, relative: str | PurePosixPath) -> bool:
    """Whether ``root/relative`` is a regular file reached without a link."""
    try:
        *folders, name = _parts(relative)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, UnsafeFileError):
        return False
    try:
        for folder in folders:
            inner = open_dir(folder, dir_fd=fd)
            os.close(fd)
            fd = inner
        return stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except (OSError, UnsafeFileError):
        return False
    finally:
        os.close(fd)


def write_replace(name: str, data: bytes, *, dir_fd: int, mode: int = 0o644) -> None:
    """Write ``data`` as ``name`` in the folder ``dir_fd``: to a new file of a random name, then renamed over
    ``name`` (whatever ``name`` was, a link or a file with other hard links, is replaced, not written through)."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, _CREATE_FLAGS, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


@dataclass(frozen=True)
class TreeListing:
    """The regular files and folders under a folder (paths relative), and what else is there (``"x: a FIFO"``)."""

    files: tuple[str, ...]
    folders: tuple[str, ...]
    refused: tuple[str, ...]


def list_tree(root: Path, *, max_entries: int = MAX_TREE_ENTRIES) -> TreeListing:
    """Walk ``root`` without following a link; links, FIFOs, sockets and devices are listed as refused."""
    files: list[str] = []
    folders: list[str] = []
    refused: list[str] = []

    def walk(fd: int, where: PurePosixPath) -> None:
        for name in sorted(os.listdir(fd)):
            rel = str(where / name)
            if len(files) + len(folders) + len(refused) >= max_entries:
                refused.append(f"{rel}: beyond {max_entries} entries")
                return
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode):
                files.append(rel)
            elif stat.S_ISDIR(mode):
                folders.append(rel)
                try:
                    with opened_dir(name, dir_fd=fd) as inner:
                        walk(inner, where / name)
                except UnsafeFileError as exc:
                    refused.append(f"{rel}: {exc}")
            else:
                refused.append(f"{rel}: {kind(mode)}")

    with opened_dir(root, trusted=True) as fd:
        walk(fd, PurePosixPath())
    return TreeListing(tuple(files), tuple(folders), tuple(refused))


@dataclass(frozen=True)
class TreeCopy:
    """What :func:`copy_tree` copied and what it refused (``"grab/tool.py: a symbolic link"``), paths relative."""

    files: tuple[str, ...]
    refused: tuple[str, ...]
    bytes_copied: int


def copy_tree(
    source: Path, target: Path, *, max_bytes: int = MAX_TREE_BYTES, max_entries: int = MAX_TREE_ENTRIES
) -> TreeCopy:
    """Copy the folders and regular files under ``source`` into ``target`` (created; it must not exist). Links,
    FIFOs, sockets and devices are refused and listed, never opened; so is whatever lies beyond ``max_bytes`` in
    total or ``max_entries`` entries. The copies are the harness's own files (mode 0644, or 0755 when executable)."""
    files: list[str] = []
    refused: list[str] = []
    budget = {"bytes": max_bytes, "entries": max_entries}
    os.mkdir(target, 0o755)
    with opened_dir(source, trusted=True) as src, opened_dir(target) as dst:
        _copy_folder(src, dst, PurePosixPath(), files, refused, budget)
    return TreeCopy(tuple(files), tuple(refused), max_bytes - budget["bytes"])


def _copy_folder(
    src: int, dst: int, where: PurePosixPath, files: list[str], refused: list[str], budget: dict[str, int]
) -> None:
    for name in sorted(os.listdir(src)):
        rel = str(where / name)
        if budget["entries"] <= 0:
            refused.append(f"{rel}: beyond {MAX_TREE_ENTRIES} entries")
            continue
        budget["entries"] -= 1
        try:
            mode = os.stat(name, dir_fd=src, follow_symlinks=False).st_mode
        except OSError:
            continue  # gone meanwhile
        if stat.S_ISDIR(mode):
            os.mkdir(name, 0o755, dir_fd=dst)
            try:
                with opened_dir(name, dir_fd=src) as inner_src, opened_dir(name, dir_fd=dst) as inner_dst:
                    _copy_folder(inner_src, inner_dst, where / name, files, refused, budget)
            except UnsafeFileError as exc:
                refused.append(f"{rel}: {exc}")
            continue
        if not stat.S_ISREG(mode):
            refused.append(f"{rel}: {kind(mode)}")
            continue
        try:
            copied = _copy_file(name, src, dst, budget["bytes"])
        except UnsafeFileError as exc:
            refused.append(f"{rel}: {exc}")
            continue
        budget["bytes"] -= copied
        files.append(rel)


def _copy_file(name: str, src: int, dst: int, max_bytes: int) -> int:
    fd, st = _open_regular(name, src)
    size = 0
    try:
        out = os.open(name, _CREATE_FLAGS, 0o755 if st.st_mode & 0o111 else 0o644, dir_fd=dst)
        with os.fdopen(out, "wb") as f:
            while chunk := os.read(fd, CHUNK_BYTES):
                size += len(chunk)
                if size > max_bytes:
                    break
                f.write(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        os.unlink(name, dir_fd=dst)
        raise UnsafeFileError("beyond the bytes a tool folder may hold in all")
    return size
