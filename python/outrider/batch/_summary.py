"""A batch's summary (counts by status, tokens, p50/p95 time, failures grouped by reason), its
Jupyter view, and the progress bar."""

from __future__ import annotations

import dataclasses
import html
import math
import os
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as _pandas  # private, so stubtest does not look for it at runtime

__all__ = ["BatchRun", "BatchSummary"]

FAILED = ("failed", "error")
_EXAMPLES = 5


def _percentile(values: list[int], q: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[rank]


@dataclasses.dataclass(frozen=True)
class BatchSummary:
    """What a batch did. ``counts``: tasks by status (``completed``, ``partial``,
    ``unverified``, ``failed``, ``error``); ``ran``: tasks run by this call, ``skipped``: taken
    from the sink (finished before), ``duplicates``: tasks given twice (run once);
    ``failures``: reason → ``{count, task_ids (first 5), example}``; times in ms over the tasks
    run by this call."""

    total: int
    ran: int
    skipped: int
    duplicates: int
    counts: dict[str, int]
    tokens: int
    input_tokens: int
    output_tokens: int
    p50_ms: int | None
    p95_ms: int | None
    failures: dict[str, dict[str, Any]]
    wall_s: float

    @property
    def tasks_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def failed(self) -> int:
        return sum(self.counts.get(s, 0) for s in FAILED)

    @classmethod
    def of(
        cls,
        rows: Iterable[dict[str, Any]],
        *,
        ran: set[str],
        duplicates: int = 0,
        wall_s: float = 0.0,
    ) -> BatchSummary:
        rows = list(rows)
        counts: dict[str, int] = {}
        failures: dict[str, dict[str, Any]] = {}
        tokens = input_tokens = output_tokens = 0
        times = []
        for row in rows:
            status = row.get("status") or "error"
            counts[status] = counts.get(status, 0) + 1
            usage = row.get("usage") or {}
            tokens += int(usage.get("tokens") or 0)
            input_tokens += int(usage.get("input_tokens") or 0)
            output_tokens += int(usage.get("output_tokens") or 0)
            total_ms = (row.get("timings") or {}).get("total_ms")
            if row["id"] in ran and isinstance(total_ms, int):
                times.append(total_ms)
            if status in FAILED:
                reason = row.get("reason") or "unknown"
                group = failures.setdefault(
                    reason, {"count": 0, "task_ids": [], "example": row.get("error")}
                )
                group["count"] += 1
                if len(group["task_ids"]) < _EXAMPLES:
                    group["task_ids"].append(row["id"])
        return cls(
            total=len(rows),
            ran=sum(1 for r in rows if r["id"] in ran),
            skipped=sum(1 for r in rows if r["id"] not in ran),
            duplicates=duplicates,
            counts=dict(sorted(counts.items())),
            tokens=tokens,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            p50_ms=_percentile(times, 0.50),
            p95_ms=_percentile(times, 0.95),
            failures=dict(sorted(failures.items(), key=lambda kv: -kv[1]["count"])),
            wall_s=wall_s,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "tasks_per_s": round(self.tasks_per_s, 3)}

    def __str__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items()) or "none"
        # Counts and tokens are over every row, resumed ones included; "ran" is this run's.
        lines = [
            f"{self.total} task(s): {counts}; tokens {self.tokens} (in {self.input_tokens}, "
            f"out {self.output_tokens})"
            + (f"; {self.skipped} finished before (resumed)" if self.skipped else "")
            + (f"; {self.duplicates} duplicate(s) run once" if self.duplicates else ""),
            f"ran {self.ran} in {self.wall_s:.1f} s ({self.tasks_per_s:.2f} tasks/s); time per "
            f"task p50 {_ms(self.p50_ms)}, p95 {_ms(self.p95_ms)}",
        ]
        for reason, group in self.failures.items():
            example = group.get("example") or ""
            lines.append(
                f"  {group['count']} x {reason}: {', '.join(group['task_ids'])}"
                + (f" - {_clip(example, 160)}" if example else "")
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(
            f"<tr><th style='text-align:left'>{e(k)}</th><td>{v}</td></tr>"
            for k, v in (
                *self.counts.items(),
                ("ran / skipped", f"{self.ran} / {self.skipped}"),
                (
                    "tokens (in / out)",
                    f"{self.tokens} ({self.input_tokens} / {self.output_tokens})",
                ),
                ("time p50 / p95", f"{_ms(self.p50_ms)} / {_ms(self.p95_ms)}"),
                ("wall", f"{self.wall_s:.1f} s ({self.tasks_per_s:.2f} tasks/s)"),
            )
        )
        fails = "".join(
            f"<tr><td>{e(reason)}</td><td>{g['count']}</td><td><code>"
            f"{e(', '.join(g['task_ids']))}</code></td><td>{e(_clip(g.get('example') or '', 300))}"
            "</td></tr>"
            for reason, g in self.failures.items()
        )
        out = f"<div><b>outrider batch</b>: {self.total} task(s)<table>{head}</table>"
        if fails:
            out += (
                "<details open><summary>failures by reason</summary><table><tr><th>reason</th>"
                f"<th>count</th><th>tasks</th><th>example</th></tr>{fails}</table></details>"
            )
        return out + "</div>"


def _ms(value: int | None) -> str:
    return "-" if value is None else f"{value} ms"


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclasses.dataclass
class BatchRun:
    """What :func:`outrider.explore_many` returns: ``rows`` (one manifest row per task, in the
    order given, those finished before included), the ``summary``, and ``out`` (the sink's
    directory, or None)."""

    rows: list[dict[str, Any]]
    summary: BatchSummary
    out: str | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def failures(self) -> list[dict[str, Any]]:
        """The rows of failed tasks (status ``failed`` or ``error``)."""
        return [r for r in self.rows if r.get("status") in FAILED]

    def __str__(self) -> str:
        where = f" -> {self.out}" if self.out else ""
        return f"{self.summary}{where}"

    @classmethod
    def load(cls, out: str | os.PathLike[str]) -> BatchRun:
        """A batch read back from its output directory (``out/manifest.jsonl``, or that file):
        one row per task, its last attempt (:func:`outrider.batch.read_manifest`); the summary
        counts them all as finished before (``ran`` 0)."""
        from outrider.batch._sink import read_manifest

        rows = read_manifest(out, latest=True)
        return cls(rows, BatchSummary.of(rows, ran=set()), os.fspath(out))

    def to_pandas(self) -> _pandas.DataFrame:
        """One row per task (its last attempt, so a failed run later retried shows only the
        retry) with the answer: the columns of ``outrider.batch.ANSWER_COLUMNS`` (``id``,
        ``status``, ``reason``, the task, ``summary``, ``evidence``, ``findings``, ``error``,
        tokens, ``total_ms``, ..., and ``result`` whole). Needs pandas (``pip install
        '.[jupyter]'``), imported here only."""
        from outrider.batch._answers import answers_frame

        return answers_frame(self.rows, "BatchRun.to_pandas()")

    def _repr_html_(self) -> str:
        from outrider._display import batch_html

        return batch_html(self)


class Progress:
    """A tqdm bar when tqdm is installed, else a line on stderr every few seconds."""

    def __init__(self, total: int, done: int, show: bool) -> None:
        self.total, self.done, self.failed = total, done, 0
        self.show = show
        self.bar: Any = None
        self._last = 0.0
        self._start = time.monotonic()
        if not show:
            return
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            return
        self.bar = tqdm(total=total, initial=done, desc="outrider batch", unit="task")

    def update(self, row: dict[str, Any]) -> None:
        self.done += 1
        if row.get("status") in FAILED:
            self.failed += 1
        if not self.show:
            return
        if self.bar is not None:
            self.bar.update(1)
            if self.failed:
                self.bar.set_postfix(failed=self.failed, refresh=False)
            return
        now = time.monotonic()
        if now - self._last >= 2.0 or self.done == self.total:
            self._last = now
            print(
                f"outrider batch: {self.done}/{self.total} done, {self.failed} failed, "
                f"{now - self._start:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
