"""Where a batch's finished tasks go: ``manifest.jsonl`` (one row per finished task) and
``traces/<task id>.jsonl`` in an output directory, written by the driver alone."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import pathlib
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from outrider.batch._answers import latest_rows
from outrider.exceptions import ConfigError

__all__ = ["ManifestSink", "MemorySink", "Sink", "read_manifest"]

logger = logging.getLogger("outrider")

MANIFEST = "manifest.jsonl"
TRACES = "traces"


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


def _rows(path: pathlib.Path, *, repair: bool) -> Iterator[dict[str, Any]]:
    """The rows of a manifest; a last line cut short by a killed writer is dropped (and, with
    ``repair``, cut off the file so the next row starts on its own line)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    end = data.rfind(b"\n") + 1
    if end < len(data):
        logger.warning(
            "%s: its last line was cut short (a run was stopped while writing it); dropped", path
        )
        if repair:
            with open(path, "r+b") as f:
                f.truncate(end)
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            logger.warning("%s:%d: not a JSON row; skipped", path, number)
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            yield row


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


class ManifestSink:
    """``out/manifest.jsonl`` and ``out/traces/<id>.jsonl``. One writer at a time: a second
    batch on the same directory is refused (a lock file, released when the process ends)."""

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = pathlib.Path(out)
        self.manifest = self.out / MANIFEST
        self.traces = self.out / TRACES
        self._lock_fd: int | None = None
        self._file: Any = None

    def __repr__(self) -> str:
        return f"ManifestSink({os.fspath(self.out)!r})"

    def open(self) -> dict[str, dict[str, Any]]:
        try:
            # Private, as the launcher's trace directory is: traces hold code and prompts.
            self.out.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.traces.mkdir(mode=0o700, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"sink {os.fspath(self.out)!r}: cannot create it ({e})") from e
        fd = os.open(self.out / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"sink {os.fspath(self.out)!r}: another batch is writing to it; wait for it to "
                "finish or choose another directory"
            ) from None
        self._lock_fd = fd
        latest: dict[str, dict[str, Any]] = {}
        for row in _rows(self.manifest, repair=True):
            latest[row["id"]] = row
        fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._file = open(fd, "a", encoding="utf-8")
        return latest

    def write(self, row: dict[str, Any], trace: str | None) -> dict[str, Any]:
        if trace is not None:
            name = f"{row['id']}.jsonl"
            tmp = self.traces / f".{name}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as f:
                f.write(trace)
            os.replace(tmp, self.traces / name)
            row["trace_path"] = f"{TRACES}/{name}"
        else:
            row["trace_path"] = None
        # One write per row, so a killed driver leaves at most one partial line.
        self._file.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._file.flush()
        return row

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
