"""check_evidence: grounded `path:line` / `path:start-end` items, and why the others are not."""

from __future__ import annotations

import os
import pathlib

import pytest

import outrider


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.py").write_text("import os\n\ndef login():\n    return True\n")
    (tmp_path / "no_newline.txt").write_text("a\nb")
    (tmp_path / "empty.txt").write_text("")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret\n" * 10)
    os.symlink(outside, tmp_path / "link_out.txt")
    os.mkfifo(tmp_path / "pipe")
    return tmp_path


def test_whole_checks(repo: pathlib.Path) -> None:
    checks = outrider.check_evidence(repo, ["src/auth.py:3", "src/auth.py:1-4", "src/auth.py:5"])
    assert checks == [
        {
            "evidence": "src/auth.py:3",
            "path": "src/auth.py",
            "start_line": 3,
            "end_line": 3,
            "total_lines": 4,
            "grounded": True,
            "reason": None,
            "message": "Lines 3-3 of 'src/auth.py' (4 lines) exist.",
        },
        {
            "evidence": "src/auth.py:1-4",
            "path": "src/auth.py",
            "start_line": 1,
            "end_line": 4,
            "total_lines": 4,
            "grounded": True,
            "reason": None,
            "message": "Lines 1-4 of 'src/auth.py' (4 lines) exist.",
        },
        {
            "evidence": "src/auth.py:5",
            "path": "src/auth.py",
            "start_line": 5,
            "end_line": 5,
            "total_lines": 4,
            "grounded": False,
            "reason": "line_out_of_range",
            "message": "Evidence \"src/auth.py:5\" cites line 5, but 'src/auth.py' has 4 lines.",
        },
    ]


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ("no_newline.txt:2", None),
        ("no_newline.txt:3", "line_out_of_range"),
        ("empty.txt:1", "line_out_of_range"),
        ("src/auth.py", "format"),
        ("src/auth.py:", "format"),
        ("src/auth.py:L3", "format"),
        ("src/auth.py:0", "invalid_range"),
        ("src/auth.py:4-2", "invalid_range"),
        ("src/auth.py:99999999999999999999999", "invalid_range"),
        ("missing.py:1", "not_found"),
        ("src:1", "directory"),
        ("../etc/passwd:1", "outside"),
        ("/etc/passwd:1", "absolute"),
        ("link_out.txt:1", "outside"),
        ("pipe:1", "not_regular"),
        ("src/../src/auth.py:2", None),
        ("  src/auth.py:2  ", None),
    ],
)
def test_reasons(repo: pathlib.Path, item: str, reason: str | None) -> None:
    [check] = outrider.check_evidence(repo, [item])
    assert (check["reason"], check["grounded"]) == (reason, reason is None)
    assert check["message"]


def test_single_string_and_bad_arguments(repo: pathlib.Path) -> None:
    assert outrider.check_evidence(str(repo), "src/auth.py:1")[0]["grounded"] is True
    with pytest.raises(TypeError, match="evidence item: must be str, got int"):
        outrider.check_evidence(repo, ["a:1", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="root: must be a str or os.PathLike, got int"):
        outrider.check_evidence(3, [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Project root '.*nope' cannot be used"):
        outrider.check_evidence(repo / "nope", [])
    with pytest.raises(ValueError, match="is not a directory"):
        outrider.check_evidence(repo / "empty.txt", [])


def test_tree_is_unchanged(repo: pathlib.Path) -> None:
    before = sorted((p, p.lstat().st_mtime_ns) for p in repo.rglob("*"))
    outrider.check_evidence(repo, ["src/auth.py:1", "pipe:1", "link_out.txt:1"])
    assert sorted((p, p.lstat().st_mtime_ns) for p in repo.rglob("*")) == before
