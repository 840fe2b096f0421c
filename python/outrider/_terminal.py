"""Text for a terminal, shared by the ``outrider`` command and its ``batch`` subcommand: what a
file name, a model or a trace puts in the output is printed with control characters (ESC, BEL,
CR, ...), C1 controls (``\\x9b``, a one-byte CSI) and bidirectional overrides escaped."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# C0 controls but tab (newline too, unless kept), DEL, C1 controls, bidirectional marks,
# embeddings, overrides and isolates, and lone surrogates (not printable as UTF-8).
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\n{_CONTROLS}]")
_UNSAFE_KEEPING_LINES = re.compile(f"[{_CONTROLS}]")
# What json.dumps(..., ensure_ascii=False) leaves raw that a terminal acts on.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def term(value: Any, *, lines: bool = False) -> str:
    """``value`` as text safe to print on a terminal: control characters escaped as ``\\x1b``
    (newlines too, unless ``lines``), so a file name or a model's answer cannot move the cursor,
    set the window title, or forge a line of output."""
    text = value if isinstance(value, str) else str(value)
    return (_UNSAFE_KEEPING_LINES if lines else _UNSAFE).sub(_escape_char, text)


def json_text(value: Any) -> str:
    """``value`` as indented JSON, non-ASCII kept but nothing a terminal acts on left raw (JSON
    itself escapes C0 controls; C1 controls, bidi overrides and lone surrogates are escaped here
    as ``\\u`` escapes, which read back as the same string)."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def say(text: Any) -> None:
    """Print one line (control characters and newlines escaped)."""
    print(term(text))


def fail(message: Any) -> None:
    """Say on stderr, in one escaped line, why the command stops."""
    print(f"outrider: {term(message)}", file=sys.stderr)
