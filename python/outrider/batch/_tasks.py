"""Batch tasks: what one exploration of a batch asks, its id, and where its root comes from.

A task's root is a local directory, or a git URL plus a commit that is cloned once per machine
into a cache outside every explored root (``$OUTRIDER_CACHE_DIR``, else
``~/.cache/outrider/repos``): one bare mirror per URL, one checkout per commit, shared by every
task, thread and process of the machine (file locks keep concurrent clones apart).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from outrider.batch._sink import file_kind
from outrider.exceptions import ConfigError

__all__ = ["BatchTask", "RepoCache", "default_cache_dir", "load_tasks"]

_TASK_KEYS = frozenset({"root", "commit", "question", "profile", "context", "meta"})
# A commit or ref: no leading dash (it would be read as an option), no spaces or controls.
_REV = re.compile(r"^[0-9A-Za-z_][0-9A-Za-z._/^~@{}-]{0,254}$")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


MAX_TASKS_BYTES = 256 << 20
"""The largest tasks file read (256 MiB); a larger one is refused, saying so."""
MAX_DEPTH = 256
"""How deep a task's ``context`` and ``meta`` may nest (what the core takes as a child's
structured context)."""


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests more than :data:`MAX_DEPTH` levels, found without recursion (a
    container seen before is visited again only when reached at a shallower depth)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: dict[int, int] = {}
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            return True
        if seen.get(id(item), MAX_DEPTH) <= depth:
            continue
        seen[id(item)] = depth
        stack.extend((child, depth + 1) for child in children)
    return False


def is_url(root: str) -> bool:
    """Whether ``root`` is a git URL (``scheme://...`` or scp-like ``user@host:path``)."""
    return bool(_URL.match(root))


@dataclasses.dataclass(frozen=True)
class BatchTask:
    """One exploration of a batch: a question asked of a root with a profile.

    ``root`` is a local directory, or a git URL (``https://...``, ``file://...``,
    ``git@host:org/repo``) that needs ``commit`` (a commit id, or any revision git resolves;
    a full commit id keeps a rerun on the same tree). A local path with a ``commit`` is cloned
    at that commit too, so the working tree's state does not matter. ``context`` is the child's
    structured context; ``meta`` is yours (labels, a dataset row id): copied to the manifest
    row, not part of the task id.
    """

    root: str
    question: str
    commit: str | None = None
    profile: str = "explore"
    context: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        root = self.root
        if isinstance(root, os.PathLike):
            root = os.fspath(root)
            object.__setattr__(self, "root", root)
        if not isinstance(root, str) or not root.strip():
            raise ConfigError(f"BatchTask root: must be a non-empty path or git URL, got {root!r}")
        if root.startswith("-"):
            raise ConfigError(f"BatchTask root: must not start with '-', got {root!r}")
        if not isinstance(self.question, str) or not self.question.strip():
            raise ConfigError(f"BatchTask question: must be a non-empty str, got {self.question!r}")
        if self.commit is not None and (
            not isinstance(self.commit, str) or not _REV.match(self.commit)
        ):
            raise ConfigError(
                f"BatchTask commit: must be a commit id or revision (letters, digits, ._/-; not "
                f"starting with '-'), got {self.commit!r}"
            )
        if is_url(root) and self.commit is None:
            raise ConfigError(
                f"BatchTask commit: a git URL root needs a commit (which tree to explore), "
                f"got none for {root!r}"
            )
        if not isinstance(self.profile, str) or not self.profile:
            raise ConfigError(f"BatchTask profile: must be a profile name, got {self.profile!r}")
        for name in ("context", "meta"):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, {})
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"BatchTask {name}: must be a dict, got {value!r}")
            if _too_deep(value):
                raise ConfigError(
                    f"BatchTask {name}: is nested more than {MAX_DEPTH} levels deep; a "
                    f"task's values may nest at most {MAX_DEPTH}"
                )
            try:
                json.dumps(value, sort_keys=True, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ConfigError(
                    f"BatchTask {name}: must be JSON data ({e}), got {value!r}"
                ) from e
            object.__setattr__(self, name, dict(value))

    @property
    def normalized_root(self) -> str:
        """The root as it enters the task id: a URL as given (no trailing slash), a local path
        absolute with links resolved."""
        if is_url(self.root):
            return self.root.rstrip("/")
        return os.path.realpath(os.path.expanduser(self.root))

    def identity(self) -> dict[str, Any]:
        """What the task id hashes, beside the profile and backend fingerprints."""
        return {
            "root": self.normalized_root,
            "commit": self.commit,
            "question": self.question,
            "profile": self.profile,
            "context": dict(self.context),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "commit": self.commit,
            "question": self.question,
            "profile": self.profile,
            "context": dict(self.context),
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "task") -> BatchTask:
        """A task from a dict (a JSONL line); an unknown or missing key is a ConfigError that
        names ``where``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: must be a JSON object, got {data!r}")
        unknown = sorted(set(data) - _TASK_KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a task has "
                f"{', '.join(sorted(_TASK_KEYS))}"
            )
        missing = [k for k in ("root", "question") if k not in data]
        if missing:
            raise ConfigError(f"{where}: missing {' and '.join(map(repr, missing))}")
        try:
            return cls(
                root=data["root"],
                question=data["question"],
                commit=data.get("commit"),
                profile=data.get("profile") or "explore",
                context=data.get("context") or {},
                meta=data.get("meta") or {},
            )
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None


def task_id(task: BatchTask, profile: Mapping[str, Any], backend: Mapping[str, Any]) -> str:
    """The task id: a hash of the root, commit, question, context, profile (its definition, not
    only its name) and backend spec."""
    identity = {**task.identity(), "profile": profile, "backend": backend}
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _read_bounded(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the tasks file ``path``: a regular file (a FIFO or a device is refused
    without waiting on it) of at most :data:`MAX_TASKS_BYTES`."""
    shown = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ConfigError(f"tasks file {shown!r}: cannot be read ({reason})") from e
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"tasks file {shown!r}: is {file_kind(st.st_mode)}; a tasks file is a regular file "
                "(JSONL, one task a line)"
            )
        data = f.read(MAX_TASKS_BYTES + 1)
    if len(data) > MAX_TASKS_BYTES:
        raise ConfigError(
            f"tasks file {shown!r}: it is more than the {MAX_TASKS_BYTES:,} bytes a tasks file "
            "may be; split it (a batch resumes by task id, so several files may share one "
            "output directory)"
        )
    return data


def load_tasks(path: str | os.PathLike[str]) -> list[BatchTask]:
    """The tasks of a JSONL file, one JSON object a line (blank lines and ``#`` comments are
    skipped); a bad line is a ConfigError naming the file and line. The file must be a regular
    file of at most :data:`MAX_TASKS_BYTES`."""
    p = pathlib.Path(path)
    try:
        text = _read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"tasks file {os.fspath(path)!r}: cannot be read ({e})") from e
    tasks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{p}:{number}"
        try:
            data = json.loads(line)
        except RecursionError:
            raise ConfigError(
                f"{where}: nested more than {MAX_DEPTH} levels deep; a task's values may nest "
                f"at most {MAX_DEPTH}"
            ) from None
        except ValueError as e:
            raise ConfigError(f"{where}: not a JSON object ({e})") from None
        tasks.append(BatchTask.from_dict(data, where=where))
    if not tasks:
        raise ConfigError(f"tasks file {os.fspath(path)!r}: holds no task")
    return tasks


def default_cache_dir() -> pathlib.Path:
    """``$OUTRIDER_CACHE_DIR``, else ``$XDG_CACHE_HOME/outrider/repos``, else
    ``~/.cache/outrider/repos``."""
    explicit = os.environ.get("OUTRIDER_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base, "outrider", "repos")


class CheckoutError(Exception):
    """A root could not be made ready (clone, fetch or checkout failed); the message says which
    command and why."""


_GIT_TIMEOUT = 900.0


def _git(*args: str, cwd: str | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as e:
        raise CheckoutError("git is not installed (needed for git URL roots)") from e
    except subprocess.TimeoutExpired as e:
        raise CheckoutError(f"git {args[0]} took more than {_GIT_TIMEOUT:.0f} s") from e
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise CheckoutError(f"git {args[0]} failed: {detail[-1] if detail else done.returncode}")
    return done.stdout.strip()


class RepoCache:
    """Clones of git roots, one bare mirror per URL and one checkout per commit, under ``path``
    (default :func:`default_cache_dir`). Safe for threads and processes of one machine."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = pathlib.Path(path) if path is not None else default_cache_dir()
        # A branch or tag resolves once per process, so a batch explores one tree per task.
        self._resolved: dict[tuple[str, str], str] = {}

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        locks = self.path / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def checkout(self, url: str, commit: str) -> tuple[str, str]:
        """The local directory holding ``url`` at ``commit``, and the full commit id."""
        key = hashlib.sha256(url.encode()).hexdigest()[:16]
        mirror = self.path / "mirrors" / f"{key}.git"
        with self._locked(key):
            if not (mirror / "HEAD").exists():
                mirror.parent.mkdir(parents=True, exist_ok=True)
                tmp = tempfile.mkdtemp(prefix=f"{key}.", suffix=".tmp", dir=mirror.parent)
                try:
                    _git("clone", "-q", "--mirror", "--", url, tmp)
                    os.replace(tmp, mirror)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            sha = self._resolved.get((url, commit)) or self._resolve(mirror, url, commit)
            self._resolved[(url, commit)] = sha
            target = self.path / "checkouts" / key / sha
            if not (target / ".git").exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = tempfile.mkdtemp(prefix=f"{sha[:12]}.", suffix=".tmp", dir=target.parent)
                try:
                    _git("clone", "-q", "--shared", "--no-checkout", "--", str(mirror), tmp)
                    _git(
                        "-c",
                        "advice.detachedHead=false",
                        "checkout",
                        "-q",
                        "--detach",
                        sha,
                        cwd=tmp,
                    )
                    if target.exists():
                        shutil.rmtree(target)
                    os.replace(tmp, target)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.utime(target)  # a last-used time, for whoever prunes the cache
        return str(target), sha

    def _resolve(self, mirror: pathlib.Path, url: str, commit: str) -> str:
        def lookup() -> str | None:
            try:
                return _git("rev-parse", "--verify", "-q", f"{commit}^{{commit}}", cwd=str(mirror))
            except CheckoutError:
                return None

        sha = lookup()
        # A branch or tag name may have moved: fetch unless it is a full commit id we have.
        if sha is None or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
            with contextlib.suppress(CheckoutError):
                _git("fetch", "-q", "--prune", "origin", cwd=str(mirror))
            sha = lookup()
        if sha is None:
            with contextlib.suppress(CheckoutError):
                _git("fetch", "-q", "origin", commit, cwd=str(mirror))
            sha = lookup()
        if sha is None:
            raise CheckoutError(f"commit {commit!r} is not in {url!r}")
        return sha


def monotonic_ms(start: float) -> int:
    return int((time.perf_counter() - start) * 1000)
