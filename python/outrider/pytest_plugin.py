"""The outrider pytest plugin (entry point ``pytest11``: ``outrider``), loaded when outrider is
installed.

**Isolation.** outrider reads model settings from the process: a launcher without ``light_llm``
routes light children to ``LIGHT_LLM_*``, one without ``main_llm`` to ``LLM_*``, and both read a
``.env`` file in the working directory (``src/llm/env.rs``); traces go to ``OUTRIDER_TRACE_DIR``
or the user's state directory. A developer's own settings would send a test's child to a real
provider instead of the :class:`~outrider.testing.ScriptedLLM` it passed. The ``outrider_env``
fixture removes every ``LLM_*``, ``LIGHT_LLM_*`` and ``OUTRIDER_*`` variable, runs the test in an
empty working directory (so no ``.env`` is found) and points ``OUTRIDER_TRACE_DIR`` at a fresh
temporary directory (so traces stay out of ``$HOME``; ``HOME`` itself is left alone, since
outrider reads nothing else from it).

**When it applies** (``outrider_isolation`` ini option, or ``--outrider-isolation``):

- ``auto`` (the default): tests that use outrider, that is tests that request ``outrider_env``,
  ``scripted_llm`` or ``tmp_repo``, carry ``@pytest.mark.outrider``, or live in a module that
  imports anything from outrider. Other tests of the same session (another library's, say) are
  left as they are: a plugin loaded by merely installing a package must not move every test's
  working directory.
- ``all``: every test (for suites that reach outrider only through their own helpers).
- ``off``: only tests that request ``outrider_env`` or carry ``@pytest.mark.outrider``.

``@pytest.mark.outrider_real_env`` opts one test out (a deliberate test against a real
provider); requesting ``outrider_env`` explicitly always isolates.

**Fixtures.** ``outrider_env`` (an :class:`OutriderEnv`), ``scripted_llm`` (a factory of
:class:`~outrider.testing.ScriptedLLM`; every script it made must be used up when the test
passes, unless made with ``check_complete=False``) and ``tmp_repo`` (a factory of repositories
from a dict of files)::

    def test_login(tmp_repo, scripted_llm):
        root = tmp_repo({"src/auth.py": "def login(): ...\\n"}, gitignore=["build/"])
        llm = scripted_llm({"Find login": [call("Grep", pattern="def login"), final(...)]})
        result = outrider.SubagentLauncher(root, llm).launch(outrider.SubagentRequest(task="Find login"))
"""

from __future__ import annotations

import os
import pathlib
import types
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, overload

import pytest

from outrider.testing import RouteKey, ScriptedLLM, Step

__all__ = [
    "ENV_PREFIXES",
    "OutriderEnv",
    "ScriptedLLMFactory",
    "TmpRepoFactory",
    "outrider_env",
    "scripted_llm",
    "tmp_repo",
]

ENV_PREFIXES = ("LLM_", "LIGHT_LLM_", "OUTRIDER_")
"""Variables removed under isolation."""

_MODES = ("auto", "all", "off")
_FIXTURES = frozenset({"outrider_env", "scripted_llm", "tmp_repo"})
_passed = pytest.StashKey[bool]()
_module_cache = pytest.StashKey[dict[str, bool]]()


@dataclass(frozen=True)
class OutriderEnv:
    """What isolation set up for one test."""

    cwd: pathlib.Path
    """The empty working directory the test runs in."""
    trace_dir: pathlib.Path
    """``OUTRIDER_TRACE_DIR`` for the test: default traces land here."""
    removed: tuple[str, ...]
    """The names of the variables removed (sorted; values are never kept)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("outrider")
    group.addoption(
        "--outrider-isolation",
        choices=_MODES,
        default=None,
        help="which tests run without LLM_*/LIGHT_LLM_*/OUTRIDER_* variables and .env: auto "
        "(tests using outrider; the default), all, or off (only those asking for it)",
    )
    parser.addini(
        "outrider_isolation",
        "outrider environment isolation: auto (tests using outrider), all, or off",
        default="auto",
    )


def _mode(config: pytest.Config) -> str:
    option = config.getoption("outrider_isolation", default=None)
    value = str(option if option is not None else config.getini("outrider_isolation")).strip()
    if value not in _MODES:
        raise pytest.UsageError(
            f"outrider_isolation: expected one of auto, all, off, got {value!r}"
        )
    return value


def pytest_configure(config: pytest.Config) -> None:
    _mode(config)
    config.stash[_module_cache] = {}
    config.addinivalue_line(
        "markers",
        "outrider: run this test isolated from LLM_*, LIGHT_LLM_*, OUTRIDER_* variables and "
        ".env (outrider plugin)",
    )
    config.addinivalue_line(
        "markers",
        "outrider_real_env: do not isolate this test from the environment (outrider plugin)",
    )


def _is_outrider(value: Any) -> bool:
    try:
        name = value.__name__ if isinstance(value, types.ModuleType) else value.__module__
    except Exception:  # an object whose attribute access fails tells us nothing
        return False
    return isinstance(name, str) and (name == "outrider" or name.startswith("outrider."))


def _module_uses_outrider(config: pytest.Config, module: types.ModuleType | None) -> bool:
    if module is None:
        return False
    cache = config.stash[_module_cache]
    if module.__name__ not in cache:
        cache[module.__name__] = any(_is_outrider(v) for v in list(vars(module).values()))
    return cache[module.__name__]


def _isolates(item: pytest.Item) -> bool:
    if "outrider_env" in getattr(item, "fixturenames", ()):
        return True
    if item.get_closest_marker("outrider_real_env") is not None:
        return False
    if item.get_closest_marker("outrider") is not None:
        return True
    mode = _mode(item.config)
    if mode == "all":
        return True
    if mode == "off":
        return False
    if _FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    return _module_uses_outrider(item.config, getattr(item, "module", None))


@pytest.fixture
def outrider_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> OutriderEnv:
    """Isolate the test from the user's model settings (see the module docs)."""
    removed = sorted(name for name in os.environ if name.startswith(ENV_PREFIXES))
    for name in removed:
        monkeypatch.delenv(name)
    # Outside tmp_path, so a test's own tmp_path stays empty.
    cwd = tmp_path_factory.mktemp("outrider-cwd")
    trace_dir = tmp_path_factory.mktemp("outrider-traces")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("OUTRIDER_TRACE_DIR", str(trace_dir))
    return OutriderEnv(cwd=cwd, trace_dir=trace_dir, removed=tuple(removed))


@pytest.fixture(autouse=True)
def _outrider_isolation(request: pytest.FixtureRequest) -> None:
    if _isolates(request.node):
        request.getfixturevalue("outrider_env")


# An old-style wrapper: it works on every pytest this plugin may be loaded into (a plugin that
# fails to load would break every test session in the environment).
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_passed] = report.passed


class ScriptedLLMFactory(Protocol):
    """The ``scripted_llm`` fixture."""

    @overload
    def __call__(
        self,
        steps: Mapping[RouteKey, Iterable[Step]],
        *,
        is_async: bool = False,
        check_complete: bool = True,
    ) -> ScriptedLLM: ...
    @overload
    def __call__(
        self, steps: Iterable[Step], *, is_async: bool = False, check_complete: bool = True
    ) -> ScriptedLLM: ...
    def __call__(
        self,
        steps: Iterable[Step] | Mapping[RouteKey, Iterable[Step]],
        *,
        is_async: bool = False,
        check_complete: bool = True,
    ) -> ScriptedLLM: ...


@pytest.fixture
def scripted_llm(request: pytest.FixtureRequest) -> Generator[ScriptedLLMFactory, None, None]:
    """Make :class:`~outrider.testing.ScriptedLLM` s; a passing test must use up their steps."""
    made: list[ScriptedLLM] = []

    def make(
        steps: Iterable[Step] | Mapping[RouteKey, Iterable[Step]],
        *,
        is_async: bool = False,
        check_complete: bool = True,
    ) -> ScriptedLLM:
        llm = ScriptedLLM(steps, is_async=is_async)
        if check_complete:
            made.append(llm)
        return llm

    yield make
    # A failed test already says what went wrong; unused steps would only add noise.
    if request.node.stash.get(_passed, False):
        for llm in made:
            llm.assert_complete()


class TmpRepoFactory(Protocol):
    """The ``tmp_repo`` fixture."""

    def __call__(
        self,
        files: Mapping[str, str | bytes],
        *,
        gitignore: Iterable[str] | None = None,
        name: str = "repo",
    ) -> pathlib.Path: ...


def _relative(path: str) -> pathlib.PurePosixPath:
    rel = pathlib.PurePosixPath(path)
    if not path or rel.is_absolute() or ".." in rel.parts or rel == pathlib.PurePosixPath("."):
        raise ValueError(
            f"tmp_repo: file names must be relative paths inside the repository, got {path!r}"
        )
    return rel


@pytest.fixture
def tmp_repo(tmp_path: pathlib.Path) -> TmpRepoFactory:
    """Build a repository under ``tmp_path``: ``tmp_repo({"src/a.py": "...", "docs/": ""})``.

    Keys are relative POSIX paths (a key ending in ``/`` makes an empty directory); values are
    ``str`` (written as UTF-8) or ``bytes``. ``gitignore`` writes a ``.gitignore`` (outrider honours
    it without ``git init``). Returns the repository's root; ``name`` lets a test build several.
    """

    def make(
        files: Mapping[str, str | bytes],
        *,
        gitignore: Iterable[str] | None = None,
        name: str = "repo",
    ) -> pathlib.Path:
        root = tmp_path / _relative(name)
        if root.exists():
            raise ValueError(f"tmp_repo: {name!r} was already built in this test; pass name=...")
        root.mkdir(parents=True)
        if isinstance(gitignore, str):
            raise TypeError("tmp_repo: gitignore must be a list of patterns, got a str")
        if gitignore is not None:
            (root / ".gitignore").write_text("".join(f"{p}\n" for p in gitignore))
        for path, content in files.items():
            target = root / _relative(path)
            if path.endswith("/"):
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            elif isinstance(content, str):
                target.write_text(content, encoding="utf-8")
            else:
                raise TypeError(
                    f"tmp_repo: the content of {path!r} must be str or bytes, got "
                    f"{type(content).__name__}"
                )
        return root

    return make
