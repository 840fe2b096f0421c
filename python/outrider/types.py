"""Typed shapes of the plain dicts outrider returns."""

from __future__ import annotations

from typing import TypedDict


class EvidenceCheck(TypedDict):
    """The verdict on one evidence item, from :func:`outrider.check_evidence`."""

    evidence: str
    """The item as given."""
    path: str | None
    """The path part, when the item could be parsed."""
    start_line: int | None
    """First line cited."""
    end_line: int | None
    """Last line cited (equal to ``start_line`` for one line)."""
    total_lines: int | None
    """The file's line count, when it could be read."""
    grounded: bool
    """True when the file exists under the root and the lines are in range."""
    reason: str | None
    """Why not: ``format``, ``invalid_range``, ``absolute``, ``outside``, ``invalid_path``,
    ``not_found``, ``directory``, ``not_regular``, ``io`` or ``line_out_of_range``."""
    message: str
    """A sentence for the model or the user."""


__all__ = ["EvidenceCheck"]
