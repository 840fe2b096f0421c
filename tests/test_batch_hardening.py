"""The batch's files, tried as an attacker would (issue 36, "Files the batch writes and reads"):
a sink directory another user controls (links planted at the trace's temporary file and at the
manifest, hard links, foreign owners, group/world-writable modes), resume on a manifest whose last
row lacks its newline, manifests and task files that are FIFOs, devices or too large, manifest
rows of the wrong types, a full disk, a task nested 100,000 deep, a root that is the sink's
``traces`` directory, and a ``Retry-After`` longer than a task's time limit.

Each test fails on the code before its fix. Everything is local; the one server is on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import outrider
from outrider.batch import (
    BackendSpec,
    BatchTask,
    LocalExecutor,
    RateLimit,
    _sink,
    _tasks,
    explore_many,
    load_tasks,
    read_manifest,
)

TESTS = pathlib.Path(__file__).resolve().parent
KEY_ENV = "BATCH_HARDENING_TEST_KEY"
OTHER_UID = 54321  # a user that is not this one (the tests run as root in CI)
IS_ROOT = os.geteuid() == 0


def a_root(base: pathlib.Path, name: str = "repo") -> pathlib.Path:
    root = base / name
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "store.py").write_text("class Store:\n    def load(self):\n        return 1\n")
    return root


def tasks_of(root: pathlib.Path, count: int = 2) -> list[BatchTask]:
    return [
        BatchTask(str(root), "Where is class Store defined?", context={"n": n})
        for n in range(count)
    ]


def run(tasks: list[BatchTask], out: pathlib.Path, **kwargs: Any) -> Any:
    return explore_many(tasks, backend="offline", sink=out, progress=False, **kwargs)


def ids_of(tasks: list[BatchTask], tmp_path: pathlib.Path) -> list[str]:
    """The tasks' ids (the sink does not change them), from a run into a scratch sink."""
    return [r["id"] for r in run(tasks, tmp_path / "probe").rows]


def victim(tmp_path: pathlib.Path) -> tuple[pathlib.Path, bytes]:
    """A file the batch must never touch (another user's, in the attack)."""
    path = tmp_path / "victim" / "precious.txt"
    path.parent.mkdir(exist_ok=True)
    content = b"the victim's own bytes\n"
    path.write_bytes(content)
    return path, content


@pytest.fixture
def fifo(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A FIFO. Should a reader block on it (a regression), a writer opens and closes it after
    5 s, so the test fails on its assertions rather than hanging."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(5):
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    yield path
    done.set()
    thread.join()


def quickly(fn: Any, *args: Any, **kwargs: Any) -> outrider.ConfigError:
    started = time.monotonic()
    with pytest.raises(outrider.ConfigError) as info:
        fn(*args, **kwargs)
    assert time.monotonic() - started < 4, "it waited"
    return info.value


def in_a_bounded_process(code: str, tmp_path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a Python of its own with 1.5 GiB of address space and 30 s: a reader that
    eats /dev/zero dies there, not here."""
    script = textwrap.dedent(
        """
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))
        """
    ) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )


# --- a sink directory another user controls ------------------------------------------------------


def test_a_link_planted_at_a_traces_temporary_file_is_never_followed(
    tmp_path: pathlib.Path,
) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root)
    ids = ids_of(tasks, tmp_path)
    target, content = victim(tmp_path)
    out = tmp_path / "shared"
    (out / "traces").mkdir(parents=True)
    os.chmod(out, 0o1777)  # sticky, as /tmp: accepted, but anyone may add names
    os.chmod(out / "traces", 0o700)
    for tid in ids:
        (out / "traces" / f".{tid}.jsonl.tmp").symlink_to(target)
    batch = run(tasks, out)
    assert batch.summary.counts == {"completed": 2}
    assert target.read_bytes() == content
    for tid in ids:
        trace = out / "traces" / f"{tid}.jsonl"
        assert not trace.is_symlink() and trace.stat().st_mode & 0o777 == 0o600
        assert json.loads(trace.read_text().splitlines()[0])["event"]
        assert not (out / "traces" / f".{tid}.jsonl.tmp").exists()


def test_a_link_planted_at_the_manifest_is_refused(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    target, content = victim(tmp_path)
    out = tmp_path / "shared"
    out.mkdir(mode=0o700)
    (out / "manifest.jsonl").symlink_to(target)
    err = quickly(run, tasks_of(root), out)
    assert str(err) == (
        f"sink {str(out)!r}: {str(out / 'manifest.jsonl')!r} is a symlink; the sink's files "
        "are never links"
    )
    assert target.read_bytes() == content
    # A dangling one (the attacker's file does not exist yet) is refused too, never created.
    (out / "manifest.jsonl").unlink()
    (out / "manifest.jsonl").symlink_to(tmp_path / "victim" / "new.txt")
    assert "is a symlink" in str(quickly(run, tasks_of(root), out))
    assert not (tmp_path / "victim" / "new.txt").exists()


def test_a_hard_link_at_the_manifest_of_a_shared_directory_is_refused(
    tmp_path: pathlib.Path,
) -> None:
    root = a_root(tmp_path)
    target, content = victim(tmp_path)
    out = tmp_path / "shared"
    out.mkdir()
    os.chmod(out, 0o1777)
    os.link(target, out / "manifest.jsonl")
    err = quickly(run, tasks_of(root), out)
    assert "'manifest.jsonl' has 2 hard links in a directory others can write to" in str(
        err
    ).replace(str(out) + "/", "")
    assert target.read_bytes() == content


def test_a_traces_directory_that_is_a_link_is_refused(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    (out / "traces").symlink_to(elsewhere)
    err = quickly(run, tasks_of(root), out)
    assert f"{str(out / 'traces')!r} is a symlink or not a directory" in str(err)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    ("mode", "who"), [(0o777, "anyone"), (0o757, "anyone"), (0o770, "its group")]
)
def test_a_directory_others_may_write_to_is_refused_unless_sticky(
    tmp_path: pathlib.Path, mode: int, who: str
) -> None:
    root = a_root(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, mode)
    # A group of this user's own (a user private group) is no one else: make it another's.
    from outrider.batch._sink import _private_group

    if who == "its group" and not IS_ROOT and _private_group(os.stat(out).st_gid):
        pytest.skip("giving a directory to another group needs root")
    if IS_ROOT:
        os.chown(out, -1, OTHER_UID)
    err = quickly(run, tasks_of(root), out)
    assert str(err) == (
        f"sink {str(out)!r}: {str(out)!r} is writable by {who} (mode {mode:04o}) without the "
        "sticky bit, so another user could plant links in it: run `chmod go-w` on it or "
        "choose another directory"
    )
    assert list(out.iterdir()) == []  # nothing written, not even the lock
    # The same for its traces directory.
    os.chmod(out, 0o700)
    (out / "traces").mkdir()
    os.chmod(out / "traces", mode)
    if IS_ROOT:
        os.chown(out / "traces", -1, OTHER_UID)
    assert f"{str(out / 'traces')!r} is writable by {who}" in str(quickly(run, tasks_of(root), out))
    # Sticky, as /tmp is, it is used.
    os.chmod(out / "traces", mode | 0o1000)
    assert run(tasks_of(root), out).summary.counts == {"completed": 2}


def test_a_group_writable_directory_of_this_users_own_group_is_used(tmp_path: pathlib.Path) -> None:
    # A umask of 002 (user private groups) makes 0775 directories: the group is the user alone.
    from outrider.batch._sink import _private_group

    if not _private_group(os.getegid()):
        pytest.skip("this user's primary group has other members")
    root = a_root(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o775)
    (out / "traces").mkdir()
    os.chmod(out / "traces", 0o775)
    assert run(tasks_of(root), out).summary.counts == {"completed": 2}


@pytest.mark.skipif(not IS_ROOT, reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_refused(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    out = tmp_path / "theirs"
    out.mkdir(mode=0o700)
    os.chown(out, OTHER_UID, OTHER_UID)
    err = quickly(run, tasks_of(root), out)
    assert str(err) == (
        f"sink {str(out)!r}: {str(out)!r} is owned by uid {OTHER_UID}, not by this user "
        f"(uid {os.geteuid()}); another user's directory could make the batch write into "
        "files it does not mean to: choose a directory of your own"
    )
    assert list(out.iterdir()) == []
    # Its traces directory, its manifest and its lock file, likewise.
    os.chown(out, os.geteuid(), os.getegid())
    run(tasks_of(root), out)
    for name in ("traces", "manifest.jsonl", ".lock"):
        os.chown(out / name, OTHER_UID, OTHER_UID)
        err = quickly(run, tasks_of(root), out, resume=True)
        assert f"{str(out / name)!r} is owned by uid {OTHER_UID}" in str(err)
        os.chown(out / name, os.geteuid(), os.getegid())
    assert run(tasks_of(root), out).summary.skipped == 2


@pytest.mark.timeout(60)
def test_a_manifest_that_is_a_fifo_is_refused_without_waiting(
    tmp_path: pathlib.Path, fifo: pathlib.Path
) -> None:
    root = a_root(tmp_path)
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    os.rename(fifo, out / "manifest.jsonl")
    err = quickly(run, tasks_of(root), out)
    assert f"{str(out / 'manifest.jsonl')!r} is a FIFO (named pipe), not a regular file" in str(err)
    err = quickly(read_manifest, out)
    assert str(err) == (
        f"manifest {str(out / 'manifest.jsonl')!r}: is a FIFO (named pipe); a manifest is a "
        "regular file"
    )


def test_read_manifest_of_a_device_is_refused_without_reading(tmp_path: pathlib.Path) -> None:
    done = in_a_bounded_process(
        """
        import outrider
        from outrider.batch import read_manifest
        try:
            read_manifest("/dev/zero")
        except outrider.ConfigError as e:
            print(e)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "manifest '/dev/zero': is a character device; a manifest is a regular file"
    )


def test_a_manifest_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _sink.MAX_MANIFEST_BYTES == 4 << 30
    root = a_root(tmp_path)
    out = tmp_path / "out"
    run(tasks_of(root), out)
    size = (out / "manifest.jsonl").stat().st_size
    monkeypatch.setattr(_sink, "MAX_MANIFEST_BYTES", size - 1, raising=False)
    err = quickly(run, tasks_of(root), out)
    assert f"is {size:,} bytes, more than the {size - 1:,} a manifest may be" in str(err)
    assert f"it is {size:,} bytes" in str(quickly(read_manifest, out))


# --- resume keeps every row ------------------------------------------------------------------


def test_resume_keeps_a_complete_last_row_that_lacks_its_newline(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, 4)
    out = tmp_path / "out"
    manifest = out / "manifest.jsonl"
    run(tasks[:1], out)  # an earlier batch
    run(tasks[:3], out)  # this one
    before = manifest.read_bytes()
    manifest.write_bytes(before.rstrip(b"\n"))  # an editor, or a copy, dropped the newline
    again = run(tasks[:3], out)
    assert (again.summary.ran, again.summary.skipped) == (0, 3)
    assert manifest.read_bytes() == before  # the newline is back, nothing else changed
    more = run(tasks, out)
    assert (more.summary.ran, more.summary.skipped) == (1, 3)
    lines = manifest.read_bytes().splitlines()
    assert lines[:3] == before.splitlines() and len(lines) == 4
    assert len(read_manifest(out)) == 4
    # A manifest of one row, without its newline: the row stays.
    single = tmp_path / "single"
    run(tasks[:1], single)
    (single / "manifest.jsonl").write_bytes((single / "manifest.jsonl").read_bytes()[:-1])
    assert run(tasks[:1], single).summary.skipped == 1
    assert len(read_manifest(single)) == 1


def test_only_a_torn_last_line_is_cut_off(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, 3)
    out = tmp_path / "out"
    manifest = out / "manifest.jsonl"
    run(tasks, out)
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join(lines[:2]) + lines[2][:50])  # killed mid-write
    with caplog.at_level(logging.WARNING, logger="outrider"):
        again = run(tasks, out)
    assert (again.summary.ran, again.summary.skipped) == (1, 2)
    assert manifest.read_bytes().splitlines(keepends=True)[:2] == lines[:2]
    assert f"{manifest}:3: the last line was cut short" in caplog.text


def test_a_line_over_the_row_limit_is_skipped_unread(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, 2)
    out = tmp_path / "out"
    manifest = out / "manifest.jsonl"
    run(tasks, out)
    rows = manifest.read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(_sink, "MAX_ROW_BYTES", max(map(len, rows)) + 10)
    huge = b'{"id": "' + b"x" * (_sink.MAX_ROW_BYTES * 3) + b'"}\n'
    manifest.write_bytes(rows[0] + huge + rows[1])
    with caplog.at_level(logging.WARNING, logger="outrider"):
        assert [r["id"] for r in read_manifest(out)] == [json.loads(r)["id"] for r in rows]
    assert f"{manifest}:2: longer than {_sink.MAX_ROW_BYTES} bytes, not a row; skipped" in (
        caplog.text
    )
    # Cut short (no newline) it is a torn last line: dropped, and cut off on resume.
    manifest.write_bytes(rows[0] + rows[1] + huge[:-1])
    again = run(tasks, out)
    assert (again.summary.ran, again.summary.skipped) == (0, 2)
    assert manifest.read_bytes() == rows[0] + rows[1]


# --- rows of the wrong types -------------------------------------------------------------------


BAD_ROWS = [
    ("usage", "lots", "'usage' must be an object or null, got \"lots\""),
    ("usage", [1, 2], "'usage' must be an object or null, got [1, 2]"),
    ("usage", {"tokens": "lots"}, "'usage.tokens' must be an integer or null, got \"lots\""),
    ("timings", {"total_ms": [1]}, "'timings.total_ms' must be an integer or null, got [1]"),
    ("status", None, "'status' must be a non-empty string, got null"),
    ("error", {"x": 1}, "'error' must be a string or null, got {\"x\": 1}"),
]


def test_rows_of_the_wrong_types_are_skipped_naming_the_line(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, len(BAD_ROWS) + 1)
    out = tmp_path / "out"
    manifest = out / "manifest.jsonl"
    first = run(tasks, out)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    for row, (key, value, _) in zip(rows, BAD_ROWS, strict=False):
        row[key] = value
    rows.append({"id": 7, "status": "completed"})
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.WARNING, logger="outrider"):
        again = run(tasks, out)
    # The batch ends as any other: the damaged rows' tasks ran again, the sound one did not.
    assert (again.summary.ran, again.summary.skipped) == (len(BAD_ROWS), 1)
    assert again.summary.counts == {"completed": len(tasks)}
    assert [r["id"] for r in again.rows] == [r["id"] for r in first.rows]
    for number, (_, _, message) in enumerate(BAD_ROWS, 1):
        assert f"{manifest}:{number}: not a manifest row ({message}); skipped" in caplog.text
    assert f"{manifest}:{len(rows)}: not a manifest row ('id' must be a non-empty string" in (
        caplog.text
    )
    # Read back, the latest row of each task is a sound one.
    assert sorted(r["id"] for r in read_manifest(out)) == sorted(r["id"] for r in first.rows)


def test_cli_survives_rows_of_the_wrong_types(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, 2)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    out = tmp_path / "out"
    run(tasks, out)
    manifest = out / "manifest.jsonl"
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    rows[0]["usage"] = {"tokens": "lots"}
    rows[1]["usage"] = ["a", "list"]
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks_file), "--out", str(out),
         "--resume", "--backend", "offline", "--no-progress", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["counts"] == {"completed": 2}
    assert "manifest.jsonl:1: not a manifest row ('usage.tokens' must be an integer" in done.stderr


# --- a full disk -------------------------------------------------------------------------------


def _full_disk(fd: int, data: bytes) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_stops_the_batch_with_a_clear_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = a_root(tmp_path)
    tasks = tasks_of(root, 3)
    out = tmp_path / "out"
    run(tasks[:1], out)
    monkeypatch.setattr(_sink, "_write_all", _full_disk, raising=False)
    with pytest.raises(_sink.SinkError) as info:
        run(tasks, out)
    message = str(info.value)
    assert message.startswith(f"sink {str(out)!r}: cannot write traces/")
    assert ": No space left on device; the batch stopped (the rows written before are kept: " in (
        message
    )
    assert isinstance(info.value, OSError) and isinstance(info.value, outrider.OutriderError)
    assert outrider.batch.SinkError is _sink.SinkError
    monkeypatch.undo()
    # Nothing was lost and nothing half-written is left: the resumed batch finishes.
    assert not [p for p in (out / "traces").iterdir() if p.name.endswith(".tmp")]
    again = run(tasks, out)
    assert (again.summary.ran, again.summary.skipped) == (2, 1)


def test_cli_a_full_disk_is_one_line_and_exit_status_74(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks_of(root, 2)))
    out = tmp_path / "out"
    # The manifest write fails as on a full disk; the traces still go through.
    script = textwrap.dedent(
        f"""
        import errno, os, sys
        from outrider.batch import _sink
        real = _sink._write_all
        def write(fd, data):
            if os.readlink(f"/proc/self/fd/{{fd}}").endswith("manifest.jsonl"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(fd, data)
        _sink._write_all = write
        from outrider.cli import main
        sys.exit(main(["batch", {str(tasks_file)!r}, "--out", {str(out)!r}, "--backend",
                       "offline", "--no-progress"]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 74, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        f"outrider: sink {str(out)!r}: cannot write manifest.jsonl: No space left on device; "
        "the batch stopped"
    )
    usage = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", "--help"], capture_output=True, text=True
    )
    assert "74 the output directory could not be written" in " ".join(usage.stdout.split())


# --- task files ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_tasks_file_that_is_a_fifo_is_refused_without_waiting(fifo: pathlib.Path) -> None:
    err = quickly(load_tasks, fifo)
    assert str(err) == (
        f"tasks file {str(fifo)!r}: is a FIFO (named pipe); a tasks file is a regular file "
        "(JSONL, one task a line)"
    )
    assert str(quickly(explore_many, str(fifo), backend="offline")) == str(err)


def test_a_tasks_file_that_is_a_device_is_refused_without_reading(tmp_path: pathlib.Path) -> None:
    done = in_a_bounded_process(
        """
        import outrider
        try:
            outrider.explore_many("/dev/zero", backend="offline")
        except outrider.ConfigError as e:
            print(e)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "tasks file '/dev/zero': is a character device; a tasks file is a regular file (JSONL, "
        "one task a line)"
    )


def test_a_tasks_file_over_the_size_limit_is_refused(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _tasks.MAX_TASKS_BYTES == 256 << 20
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"root": str(tmp_path), "question": "q"}) + "\n")
    monkeypatch.setattr(_tasks, "MAX_TASKS_BYTES", 10, raising=False)
    err = quickly(load_tasks, path)
    assert str(err).startswith(
        f"tasks file {str(path)!r}: it is more than the 10 bytes a tasks file may be; split it"
    )


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_a_task_nested_100000_deep_is_a_clear_error_naming_it(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    nested = '{"k": ' * 100_000 + "1" + "}" * 100_000
    line = f'{{"root": "{root}", "question": "q", "context": {nested}}}'
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"root": str(root), "question": "q"}) + "\n" + line + "\n")
    err = quickly(load_tasks, path)
    assert str(err) == (
        f"{path}:2: nested more than 256 levels deep; a task's values may nest at most 256"
    )
    err = quickly(
        explore_many,
        [
            {"root": str(root), "question": "q"},
            {"root": str(root), "question": "q", "meta": deep(100_000)},
        ],
        backend="offline",
    )
    assert str(err) == (
        "tasks[1]: BatchTask meta: is nested more than 256 levels deep; a task's values may "
        "nest at most 256"
    )
    with pytest.raises(outrider.ConfigError, match="BatchTask context: is nested more than 256"):
        BatchTask(str(root), "q", context=deep(100_000))
    # What the core takes as a child's structured context is taken here too.
    batch = run(
        [BatchTask(str(root), "Where is class Store defined?", context=deep(200))], tmp_path / "out"
    )
    assert batch.summary.counts == {"completed": 1}


def test_cli_a_task_nested_100000_deep_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        f'{{"root": "{root}", "question": "q", "context": {"[" * 100_000 + "]" * 100_000}}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(path), "--out", str(tmp_path / "out"),
         "--backend", "offline"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        f"outrider: {path}:1: nested more than 256 levels deep; a task's values may nest at "
        "most 256\n",
    )


# --- traces never land in a root -----------------------------------------------------------------


def test_a_root_that_is_the_sinks_traces_directory_is_refused(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out"
    root = a_root(out, "traces")  # the root is <out>/traces
    before = sorted(p.name for p in root.rglob("*"))
    err = quickly(run, tasks_of(root), out)
    assert str(err) == (
        f"sink {str(out)!r} has its traces inside the explored root {str(root)!r} of tasks[0] "
        f"({str(root)!r}): its traces would be files a later exploration of that root reads; "
        "choose a directory outside every task's root"
    )
    assert sorted(p.name for p in root.rglob("*")) == before
    # Spelled with '..' and through a link to the sink, the same.
    link = tmp_path / "link"
    link.symlink_to(out)
    assert "has its traces inside" in str(quickly(run, tasks_of(link / "x" / ".." / "traces"), out))


def test_traces_linked_into_a_root_are_refused(tmp_path: pathlib.Path) -> None:
    root = a_root(tmp_path)
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    (out / "traces").symlink_to(root / "pkg")
    before = sorted(p.name for p in root.rglob("*"))
    err = quickly(run, tasks_of(root), out)
    assert f"sink {str(out)!r} has its traces inside the explored root {str(root)!r}" in str(err)
    assert sorted(p.name for p in root.rglob("*")) == before


# --- a Retry-After longer than the task's limit ----------------------------------------------


QUICK = outrider.EXPLORE_PROFILE.replace(name="quick", timeout_seconds=4.0)


def test_a_retry_after_past_the_tasks_limit_is_rate_limited_at_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    sys.path.insert(0, str(TESTS))
    from test_batch import mock_provider

    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    root = a_root(tmp_path)
    tasks = [
        BatchTask(str(root), "Where is class Store defined?", profile="quick", context={"n": n})
        for n in range(3)
    ]
    with mock_provider(refuse={1: "3600"}) as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        started = time.monotonic()
        batch = explore_many(
            tasks,
            backend=spec,
            profiles=[QUICK],
            executor=LocalExecutor(3),
            rate_limits=RateLimit(requests_per_minute=600, burst_requests=3),
            progress=False,
        )
        took = time.monotonic() - started
    # README: "a `Retry-After` past the deadline ends the run as `rate_limited` at once".
    assert [(r["status"], r["reason"]) for r in batch.rows] == [("failed", "rate_limited")] * 3
    assert took < 3.0, took  # not the 4 s limit of each task
    assert len(provider.arrivals) <= 3  # nobody called again into the pause
    refused = [r for r in batch.rows if "Retry-After" in (r["error"] or "")]
    assert len(refused) == 1 and "wait 3600.0 s, more than the" in refused[0]["error"]
    assert all("s left of the task's time limit" in (r["error"] or "") for r in batch.rows)


def test_a_pace_slower_than_the_tasks_limit_is_rate_limited_at_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    sys.path.insert(0, str(TESTS))
    from test_batch import mock_provider

    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    root = a_root(tmp_path)
    task = BatchTask(str(root), "Where is class Store defined?", profile="quick")
    with mock_provider() as provider:
        spec = BackendSpec.openai("mock-model", provider.base_url, api_key_env=KEY_ENV)
        started = time.monotonic()
        batch = explore_many(
            [task],
            backend=spec,
            profiles=[QUICK],
            # One call a minute: the task's second call could start only after its limit.
            rate_limits=RateLimit(requests_per_minute=1),
            progress=False,
        )
        took = time.monotonic() - started
    (row,) = batch.rows
    assert (row["status"], row["reason"]) == ("failed", "rate_limited")
    assert "the batch's rate limit (1 requests/min; a provider's 429 pauses it)" in row["error"]
    assert took < 3.0 and len(provider.arrivals) == 1


def test_a_429_past_every_retry_is_rate_limited_whatever_raised_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The built-in client's error carries its status as ``status``, not ``status_code``: the
    # core took it for a failed callable (model_error) once the limiter gave up.
    sys.path.insert(0, str(TESTS))
    from test_batch import mock_provider

    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-123456")
    root = a_root(tmp_path)
    with mock_provider(refuse={1: "0"}) as provider:
        spec = BackendSpec.openai_compatible("mock-model", provider.base_url, api_key_env=KEY_ENV)
        batch = explore_many(
            [BatchTask(str(root), "Where is class Store defined?")],
            backend=spec,
            rate_limits=RateLimit(requests_per_minute=600, max_retries=0),
            progress=False,
        )
    (row,) = batch.rows
    assert (row["status"], row["reason"]) == ("failed", "rate_limited")
    assert "rate limited after every retry: ModelError:" in row["error"]
    assert len(provider.arrivals) == 1
