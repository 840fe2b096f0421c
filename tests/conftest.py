from __future__ import annotations

import os
import pathlib

import pytest


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """No ``LLM_*`` / ``LIGHT_LLM_*`` variables and a working directory without a ``.env`` (every test).

    A launcher without ``light_llm`` reads ``LIGHT_LLM_*`` (and ``.env``) itself: without this, a
    developer's own settings would route a test's child to a real provider. Returns the new cwd.
    """
    for name in list(os.environ):
        if name.startswith(("LLM_", "LIGHT_LLM_")):
            monkeypatch.delenv(name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    """A one-file tree: `app.py` defines `main` (modules with other files define their own)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    return root
