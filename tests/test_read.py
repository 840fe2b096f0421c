"""Read through `outrider.run_tool`: the encoding check covers the whole file, and no memory of
earlier reads leaks between calls (each call is its own agent context)."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import outrider


def stable(result: Any) -> dict[str, Any]:
    """The envelope with its clock-dependent parts blanked, for whole-object comparison."""
    out: dict[str, Any] = dict(result)
    out["stats"] = {**out["stats"], "time_ms": 0, "file_mtime_ms": 0}
    out["text"] = re.sub(r"\(Took \d+ms\)", "(Took Nms)", out["text"])
    return out


def test_invalid_utf8_past_the_window_still_flags_the_encoding(tmp_path: pathlib.Path) -> None:
    body = b"clean\n" * 20_000 + b"caf\xe9\n"
    (tmp_path / "l.txt").write_bytes(body)
    args = {"path": "l.txt", "limit": 2}
    assert stable(outrider.run_tool(tmp_path, "Read", args)) == {
        "status": "partial",
        "data": {
            "content": "   1 | clean\n   2 | clean\n",
            "truncated": True,
            "fallback_encoding": "replace",
        },
        "text": "Read 2 lines from 'l.txt' (Lines 1-2).\n(Took Nms)\n"
        "[Truncated: Showing 2 of 20001 lines. Use start_line=3 to continue (19999 lines remaining).]\n"
        "[Warning: Encoding issues detected. Some characters may be corrupted (using replacement).]\n"
        "[Note: the first bytes that are not UTF-8 are on line 20001, outside the lines shown.]",
        "stats": {
            "time_ms": 0,
            "lines_read": 2,
            "chars_read": 26,
            "total_lines": 20001,
            "file_size_bytes": len(body),
            "file_mtime_ms": 0,
            "encoding": "utf-8 (replace)",
            "first_invalid_utf8_line": 20001,
        },
        "context": {"cwd": ".", "params_input": args, "path_resolved": "l.txt"},
    }


def test_separate_calls_share_no_read_memory(tmp_path: pathlib.Path) -> None:
    # The reference's process-wide mtime map would flag the second read; each run_tool call is
    # a fresh agent context, which never read the file before.
    f = tmp_path / "f.txt"
    f.write_text("one\n")
    first = outrider.run_tool(tmp_path, "Read", {"path": "f.txt"})
    f.write_text("one, rewritten\n")
    second = outrider.run_tool(tmp_path, "Read", {"path": "f.txt"})
    assert (first["data"], second["data"]) == (
        {"content": "   1 | one\n", "truncated": False},
        {"content": "   1 | one, rewritten\n", "truncated": False},
    )
    assert not second["text"].startswith("Note:")
