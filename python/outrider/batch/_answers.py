"""A batch's rows as answers: one flat record per task (its last attempt), for
:meth:`BatchRun.to_pandas` and the notebook view of a batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from outrider.exceptions import MissingExtraError

if TYPE_CHECKING:
    import pandas as _pandas  # private, so stubtest does not look for it at runtime

__all__ = ["ANSWER_COLUMNS", "answer_record", "answers_frame", "latest_rows"]

ANSWER_COLUMNS = (
    "id",
    "status",
    "reason",
    "root",
    "question",
    "commit",
    "resolved_commit",
    "profile",
    "summary",
    "evidence",
    "findings",
    "error",
    "tokens",
    "input_tokens",
    "output_tokens",
    "model_calls",
    "total_ms",
    "attempts",
    "finished_at",
    "trace_path",
    "result",
    "context",
    "meta",
)
"""The columns of :meth:`BatchRun.to_pandas`, in order: the task, its answer (``summary``,
``evidence`` and ``findings`` taken out of ``result``, which is kept whole: with an
``output_schema`` it is your object), usage and time."""


def latest_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per task id, the last one given (a task run again after ``--retry-failed``
    has its newest row), in the order the ids first appear."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        latest[row["id"]] = dict(row)
    return list(latest.values())


def _texts(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, str) else str(v) for v in value]
    return None


def answer_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """One manifest row as a flat record with :data:`ANSWER_COLUMNS`."""
    result = row.get("result")
    body: Mapping[str, Any] = result if isinstance(result, Mapping) else {}
    usage = row.get("usage") or {}
    timings = row.get("timings") or {}
    summary = body.get("summary")
    return {
        "id": row.get("id"),
        "status": row.get("status"),
        "reason": row.get("reason"),
        "root": row.get("root"),
        "question": row.get("question"),
        "commit": row.get("commit"),
        "resolved_commit": row.get("resolved_commit"),
        "profile": row.get("profile"),
        "summary": summary if isinstance(summary, str) else None,
        "evidence": _texts(body.get("evidence")),
        "findings": _texts(body.get("findings")),
        "error": row.get("error"),
        "tokens": usage.get("tokens"),
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "model_calls": usage.get("model_calls"),
        "total_ms": timings.get("total_ms"),
        "attempts": row.get("attempts"),
        "finished_at": timings.get("finished_at"),
        "trace_path": row.get("trace_path"),
        "result": result,
        "context": row.get("context"),
        "meta": row.get("meta"),
    }


def answers_frame(rows: Iterable[Mapping[str, Any]], what: str) -> _pandas.DataFrame:
    """``rows`` (latest per task) as a ``pandas.DataFrame`` of :data:`ANSWER_COLUMNS`, indexed
    by nothing (``id`` is a column); ``finished_at`` parsed to UTC datetimes."""
    try:
        import pandas as pd
    except ImportError as err:
        raise MissingExtraError.needs(what, "pandas", "jupyter", err) from err
    records = [answer_record(r) for r in latest_rows(rows)]
    frame = pd.DataFrame.from_records(records, columns=list(ANSWER_COLUMNS))
    frame["finished_at"] = pd.to_datetime(frame["finished_at"], utc=True, errors="coerce")
    return frame
