"""Where a batch's finished tasks go: ``manifest.jsonl`` (one row per finished task) and
``traces/<task id>.jsonl`` in an output directory, written by the driver alone.

The directory is opened the careful way traces are: resolved once and held open
(``O_DIRECTORY|O_NOFOLLOW``), owned by this user and writable by no one else (a group- or
world-writable one only with the sticky bit), and every file in it opened through that handle
without following a link (a trace's temporary file with ``O_CREAT|O_EXCL``; the manifest and the
lock only as regular files of this user). A directory another user controls cannot make the
batch write into someone else's files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import pathlib
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO, Protocol, runtime_checkable

from outrider.batch._answers import latest_rows
from outrider.exceptions import ConfigError, OutriderError

__all__ = ["ManifestSink", "MemorySink", "Sink", "SinkError", "read_manifest"]

logger = logging.getLogger("outrider")

MANIFEST = "manifest.jsonl"
TRACES = "traces"
LOCK = ".lock"
MAX_MANIFEST_BYTES = 4 << 30
"""The largest manifest read back (4 GiB): a larger one is refused, saying so."""
MAX_ROW_BYTES = 64 << 20
"""The longest manifest line read as a row (64 MiB); a longer one is skipped unread."""


class SinkError(OutriderError, OSError):
    """The output directory could not be written while the batch ran (a full disk, a lost
    mount, ...): the batch stopped. The rows written before are kept, so a rerun with
    ``resume=True`` (``--resume``) finishes it. ``path`` is the file that could not be written."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path))


@runtime_checkable
class Sink(Protocol):
    """Where finished tasks are kept. ``open`` returns the rows kept before (latest per id);
    ``write`` keeps one row and its trace and returns the row as kept."""

    def open(self) -> dict[str, dict[str, Any]]: ...
    def write(self, row: dict[str, Any], trace: str | None) -> dict[str, Any]: ...
    def close(self) -> None: ...


class MemorySink:
    """Rows in memory only (``sink=None``): no resume, traces not kept."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def open(self) -> dict[str, dict[str, Any]]:
        return dict(self.rows)

    def write(self, row: dict[str, Any], trace: str | None) -> dict[str, Any]:
        row["trace_path"] = None
        self.rows[row["id"]] = row
        return row

    def close(self) -> None:
        pass


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def row_problem(row: Any) -> str | None:
    """What makes ``row`` unusable as a manifest row (the fields the batch itself reads, of
    the types it writes them with), or None when it is one."""
    if not isinstance(row, dict):
        return f"a row is a JSON object, got {type(row).__name__}"
    tid = row.get("id")
    if not isinstance(tid, str) or not tid:
        return f"'id' must be a non-empty string, got {_shown(tid)}"
    if not isinstance(row.get("status"), str) or not row["status"]:
        return f"'status' must be a non-empty string, got {_shown(row.get('status'))}"
    for key in ("reason", "error", "trace_path"):
        if row.get(key) is not None and not isinstance(row[key], str):
            return f"'{key}' must be a string or null, got {_shown(row[key])}"
    for key in ("usage", "timings", "result", "tool_usage"):
        if row.get(key) is not None and not isinstance(row[key], dict):
            return f"'{key}' must be an object or null, got {_shown(row[key])}"
    for key, fields in (("usage", _USAGE_COUNTS), ("timings", _TIMINGS)):
        part = row.get(key) or {}
        for name in fields:
            value = part.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                return f"'{key}.{name}' must be an integer or null, got {_shown(value)}"
    return None


_USAGE_COUNTS = (
    "tokens",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "model_calls",
)
_TIMINGS = ("prepare_ms", "launch_ms", "total_ms")


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _parse(line: bytes) -> tuple[Any, bool]:
    """The JSON value of ``line`` and True, or (None, False) when it is not JSON."""
    try:
        return json.loads(line), True
    except (ValueError, RecursionError):
        return None, False


def _lines(f: BinaryIO) -> Iterator[tuple[int, int, bytes | None, bool]]:
    """``(number, offset, bytes, ended)`` for each line of ``f`` from where it stands: ``ended``
    is False for a last line without its newline; a line longer than :data:`MAX_ROW_BYTES` is
    read past (its bytes None), never held whole."""
    number = offset = 0
    while True:
        chunk = f.readline(MAX_ROW_BYTES + 1)
        if not chunk:
            return
        number += 1
        start = offset
        offset += len(chunk)
        if chunk.endswith(b"\n"):
            yield number, start, chunk, True
            continue
        if len(chunk) <= MAX_ROW_BYTES:
            yield number, start, chunk, False
            return
        while not chunk.endswith(b"\n"):
            chunk = f.readline(1 << 20)
            if not chunk:
                yield number, start, None, False
                return
            offset += len(chunk)
        yield number, start, None, True


def _scan(f: BinaryIO, shown: str) -> tuple[list[dict[str, Any]], int | None, bool]:
    """The usable rows of the manifest ``f`` (named ``shown`` in warnings), where its torn last
    line starts (None when there is none), and whether its last line is complete but lacks its
    newline. A line that is not a usable row is skipped with a warning naming it."""
    rows: list[dict[str, Any]] = []
    torn: int | None = None
    unterminated = False
    for number, start, line, ended in _lines(f):
        if line is None:
            if ended:
                logger.warning(
                    "%s:%d: longer than %d bytes, not a row; skipped", shown, number, MAX_ROW_BYTES
                )
            else:
                torn = start
            continue
        if not line.strip():
            if not ended:
                torn = start  # trailing blanks: nothing to keep
            continue
        value, parsed = _parse(line)
        if not parsed:
            if ended:
                logger.warning("%s:%d: not a JSON row; skipped", shown, number)
            else:
                # The write of this row was cut short (a run was stopped while writing it).
                torn = start
                logger.warning(
                    "%s:%d: the last line was cut short (a run was stopped while writing it); "
                    "dropped",
                    shown,
                    number,
                )
            continue
        unterminated = not ended
        problem = row_problem(value)
        if problem is not None:
            logger.warning(
                "%s:%d: not a manifest row (%s); skipped, and a resumed batch runs its task again",
                shown,
                number,
                problem,
            )
            continue
        rows.append(value)
    return rows, torn, unterminated


def _opened_regular(fd: int, shown: str, what: str) -> os.stat_result:
    """The status of ``fd``, refused (and closed) unless a regular file under the size limit."""
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = f"is {file_kind(st.st_mode)}; a manifest is a regular file"
    elif st.st_size > MAX_MANIFEST_BYTES:
        problem = (
            f"it is {st.st_size:,} bytes, more than the {MAX_MANIFEST_BYTES:,} a manifest may "
            "be; start a new output directory"
        )
    if problem is not None:
        os.close(fd)
        raise ConfigError(f"{what} {shown!r}: {problem}")
    return st


def _rows(path: pathlib.Path, *, repair: bool = False) -> Iterator[dict[str, Any]]:
    """The usable rows of the manifest at ``path`` (a regular file, read a line at a time; a
    FIFO or a device is refused without waiting). A last line cut short by a killed writer is
    dropped; a line that is not a row is skipped with a warning naming it. ``repair`` also cuts
    the torn line off the file, or ends a complete last row with its missing newline."""
    flags = os.O_RDWR | os.O_NOFOLLOW if repair else os.O_RDONLY
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigError(
            f"manifest {os.fspath(path)!r}: cannot be read ({e.strerror or e})"
        ) from e
    _opened_regular(fd, os.fspath(path), "manifest")
    with open(fd, "rb") as f:
        rows, torn, unterminated = _scan(f, os.fspath(path))
        if repair:
            _repair(fd, torn, unterminated)
    yield from rows


def _repair(fd: int, torn: int | None, unterminated: bool) -> None:
    """Cut a torn last line off the manifest behind ``fd``, or end a complete last row with the
    newline its writer did not get to write; nothing else is ever changed."""
    if torn is not None:
        os.ftruncate(fd, torn)
    elif unterminated:
        os.lseek(fd, 0, os.SEEK_END)
        _write_all(fd, b"\n")


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (an ``O_APPEND`` file: each write lands at the end)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # no progress: as good as a full disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def read_manifest(out: str | os.PathLike[str], *, latest: bool = True) -> list[dict[str, Any]]:
    """The rows of ``out/manifest.jsonl`` (or of that file itself). ``latest=True`` (default):
    one row per task id, its last attempt (a task rerun by ``retry_failed`` has its newest row),
    in the order the tasks first finished; ``latest=False``: every row as written, each attempt
    (the file is append-only)."""
    if not isinstance(latest, bool):
        raise ConfigError(f"read_manifest latest: must be True or False, got {latest!r}")
    path = pathlib.Path(out)
    if path.is_dir():
        path = path / MANIFEST
    if not path.exists():
        raise ConfigError(f"read_manifest: {os.fspath(out)!r} holds no {MANIFEST}")
    rows = list(_rows(path, repair=False))
    return latest_rows(rows) if latest else rows


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _private_group(gid: int) -> bool:
    """Whether ``gid`` is this user's own group (a user private group, as a umask of 002
    assumes): the user's primary group, with no other member listed."""
    if gid != os.getegid():
        return False
    try:
        import grp
        import pwd

        members = set(grp.getgrgid(gid).gr_mem) - {pwd.getpwuid(os.geteuid()).pw_name}
    except (ImportError, KeyError):
        return False
    # Another account whose primary group this is shares it as well.
    try:
        others = any(p.pw_gid == gid and p.pw_uid != os.geteuid() for p in pwd.getpwall())
    except OSError:
        others = True
    return not members and not others


def _shared(st: os.stat_result) -> bool:
    """Whether a directory lets another user add names to it: world writable, or group
    writable by a group that is not this user's own."""
    if st.st_mode & stat.S_IWOTH:
        return True
    return bool(st.st_mode & stat.S_IWGRP) and not _private_group(st.st_gid)


class ManifestSink:
    """``out/manifest.jsonl`` and ``out/traces/<id>.jsonl``. One writer at a time: a second
    batch on the same directory is refused (a lock file, released when the process ends).

    The directory must be this user's and writable by no other (or sticky): one another user
    can write to could hold links to their victims' files under the names the batch writes."""

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = pathlib.Path(out)
        self.manifest = self.out / MANIFEST
        self.traces = self.out / TRACES
        self._lock_fd: int | None = None
        self._dir_fd: int | None = None
        self._traces_fd: int | None = None
        self._manifest_fd: int | None = None

    def __repr__(self) -> str:
        return f"ManifestSink({os.fspath(self.out)!r})"

    def _refuse(self, what: str, problem: str) -> ConfigError:
        where = os.fspath(self.out) if what == "" else os.fspath(self.out / what)
        return ConfigError(f"sink {os.fspath(self.out)!r}: {where!r} {problem}")

    def _own(self, fd: int, what: str, *, directory: bool) -> os.stat_result:
        """The status of ``fd`` (``what`` in the sink), refused unless this user's, and for a
        directory unless no other user may add names to it (or only sticky ones)."""
        st = os.fstat(fd)
        me = os.geteuid()
        if st.st_uid != me:
            raise self._refuse(
                what,
                f"is owned by uid {st.st_uid}, not by this user (uid {me}); another user's "
                "directory could make the batch write into files it does not mean to: choose "
                "a directory of your own",
            )
        if directory and _shared(st) and not st.st_mode & stat.S_ISVTX:
            who = "anyone" if st.st_mode & stat.S_IWOTH else "its group"
            raise self._refuse(
                what,
                f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}) without the sticky "
                "bit, so another user could plant links in it: run `chmod go-w` on it or choose "
                "another directory",
            )
        return st

    def _open_dir(self, dir_fd: int | None, name: str, what: str) -> int:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._refuse(
                    what, "is a symlink or not a directory; the sink's directories are never links"
                ) from None
            raise self._refuse(what, f"cannot be opened ({e.strerror or e})") from e
        try:
            self._own(fd, what, directory=True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_file(self, name: str, flags: int, *, shared: bool) -> int:
        """``name`` in the held directory, created ``0600`` when missing; refused when a
        symlink, not a regular file, another user's, or (in a ``shared`` directory) a hard
        link to a file elsewhere."""
        assert self._dir_fd is not None
        try:
            fd = os.open(name, flags | os.O_CREAT | _FILE_FLAGS, 0o600, dir_fd=self._dir_fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise self._refuse(name, "is a symlink; the sink's files are never links") from None
            raise self._refuse(name, f"cannot be opened ({e.strerror or e})") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise self._refuse(name, f"is {file_kind(st.st_mode)}, not a regular file")
            self._own(fd, name, directory=False)
            if shared and st.st_nlink > 1:
                raise self._refuse(
                    name,
                    f"has {st.st_nlink} hard links in a directory others can write to; it may "
                    "be another file's: remove it or choose another directory",
                )
            if st.st_size > MAX_MANIFEST_BYTES:
                raise self._refuse(
                    name,
                    f"is {st.st_size:,} bytes, more than the {MAX_MANIFEST_BYTES:,} a manifest "
                    "may be; start a new output directory",
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open(self) -> dict[str, dict[str, Any]]:
        try:
            return self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> dict[str, dict[str, Any]]:
        # Resolved once, then only ever reached through the handle: swapping the path for a
        # link afterwards changes nothing.
        resolved = os.path.realpath(self.out)
        try:
            # Private, as the launcher's trace directory is: traces hold code and prompts.
            os.makedirs(resolved, mode=0o700, exist_ok=True)
        except OSError as e:
            raise ConfigError(
                f"sink {os.fspath(self.out)!r}: cannot create it ({e.strerror or e})"
            ) from e
        self._dir_fd = self._open_dir(None, resolved, "")
        shared = _shared(os.fstat(self._dir_fd))
        with contextlib.suppress(FileExistsError):
            os.mkdir(TRACES, 0o700, dir_fd=self._dir_fd)
        self._traces_fd = self._open_dir(self._dir_fd, TRACES, TRACES)
        self._lock_fd = self._open_file(LOCK, os.O_RDWR, shared=False)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"sink {os.fspath(self.out)!r}: another batch is writing to it; wait for it to "
                "finish or choose another directory"
            ) from None
        self._manifest_fd = self._open_file(MANIFEST, os.O_RDWR | os.O_APPEND, shared=shared)
        # Read through its own descriptor (the O_APPEND one stays at the end).
        with open(os.dup(self._manifest_fd), "rb") as f:
            rows, torn, unterminated = _scan(f, os.fspath(self.manifest))
        try:
            _repair(self._manifest_fd, torn, unterminated)
        except OSError as e:
            raise self._failed(MANIFEST, e) from e
        latest: dict[str, dict[str, Any]] = {}
        for row in rows:
            latest[row["id"]] = row
        return latest

    def _failed(self, what: str, e: OSError) -> SinkError:
        return SinkError(
            f"sink {os.fspath(self.out)!r}: cannot write {what}: {e.strerror or e}; the batch "
            "stopped (the rows written before are kept: rerun with --resume, resume=True, to "
            "finish)",
            os.fspath(self.out / what),
        )

    def write(self, row: dict[str, Any], trace: str | None) -> dict[str, Any]:
        if self._manifest_fd is None or self._traces_fd is None:
            raise SinkError(f"{self!r}: not open (call open() first)")
        if trace is not None:
            name = f"{row['id']}.jsonl"
            self._write_trace(name, trace)
            row["trace_path"] = f"{TRACES}/{name}"
        else:
            row["trace_path"] = None
        # Lone surrogates (a path's undecodable bytes) go as JSON escapes, which read back as
        # the same string.
        line = (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode(
            "utf-8", "backslashreplace"
        )
        try:
            # One write per row, so a killed driver leaves at most one partial line.
            _write_all(self._manifest_fd, line)
        except OSError as e:
            raise self._failed(MANIFEST, e) from e
        return row

    def _write_trace(self, name: str, trace: str) -> None:
        """``traces/<name>`` written whole or not at all: a new temporary file (never one that
        exists, never through a link) renamed over it, all through the held directory."""
        dir_fd = self._traces_fd
        tmp = f".{name}.tmp"
        try:
            try:
                fd = os.open(
                    tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600, dir_fd=dir_fd
                )
            except FileExistsError:
                # Left by a run killed while writing it: its own name, only unlinked (a link
                # there is removed, never followed).
                os.unlink(tmp, dir_fd=dir_fd)
                fd = os.open(
                    tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600, dir_fd=dir_fd
                )
            try:
                _write_all(fd, trace.encode("utf-8", "backslashreplace"))
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise self._failed(f"{TRACES}/{name}", e) from e

    def close(self) -> None:
        for attr in ("_manifest_fd", "_traces_fd", "_dir_fd", "_lock_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                setattr(self, attr, None)
                with contextlib.suppress(OSError):
                    os.close(fd)
