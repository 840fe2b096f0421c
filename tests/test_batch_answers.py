"""A batch read back whole: one row per task (its last attempt) with its answer, as rows, as a
DataFrame and in the notebook view (#37.5)."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
from test_batch import make_repos, make_tasks

import outrider
from outrider.batch import ANSWER_COLUMNS, BatchRun, BatchTask, read_manifest


def retried_batch(tmp_path: pathlib.Path) -> tuple[pathlib.Path, BatchRun, list[BatchTask]]:
    """Five tasks, two of them on roots that do not exist yet (rows ``error``), then the roots
    made and the batch run again with ``retry_failed``: the manifest holds seven rows."""
    repos = make_repos(tmp_path / "src", 1)
    later = [tmp_path / "later0", tmp_path / "later1"]
    tasks = [
        *make_tasks(repos, 3),
        *(BatchTask(str(root), "Where is class Store0x0 defined?") for root in later),
    ]
    out = tmp_path / "out"
    first = outrider.explore_many(tasks, backend="offline", sink=out)
    assert [r["status"] for r in first.rows] == ["completed"] * 3 + ["error"] * 2
    for root in later:
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "m.py").write_text("class Store0x0:\n    pass\n")
    again = outrider.explore_many(tasks, backend="offline", sink=out, retry_failed=True)
    return out, again, tasks


def test_read_manifest_gives_the_last_attempt_or_every_row(tmp_path: pathlib.Path) -> None:
    out, run, _ = retried_batch(tmp_path)
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 7  # append-only: the failed rows stay in the file
    every = read_manifest(out, latest=False)
    assert [r["id"] for r in every] == [json.loads(line)["id"] for line in lines]
    latest = read_manifest(out, latest=True)
    assert latest == read_manifest(out)
    assert len(latest) == 5 and {r["status"] for r in latest} == {"completed"}
    assert {r["id"] for r in latest} == {r["id"] for r in run.rows}
    with pytest.raises(outrider.ConfigError, match=r"latest: must be True or False, got 'yes'"):
        read_manifest(out, latest="yes")  # type: ignore[arg-type]


def test_to_pandas_has_one_row_per_task_with_its_answer(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("pandas")
    out, run, tasks = retried_batch(tmp_path)
    frame = run.to_pandas()
    assert list(frame.columns) == list(ANSWER_COLUMNS)
    assert len(frame) == 5 and set(frame["status"]) == {"completed"}
    assert list(frame["question"]) == [t.question for t in tasks]
    assert frame["summary"].map(lambda s: isinstance(s, str) and s != "").all()
    assert frame["evidence"].map(lambda e: bool(e) and ":" in e[0]).all()
    assert str(frame["finished_at"].dtype).startswith("datetime64")
    loaded = BatchRun.load(out)
    assert loaded.out == str(out) and loaded.summary.counts == {"completed": 5}
    assert sorted(loaded.to_pandas()["id"]) == sorted(frame["id"])  # in the order they finished
    # What pandas.read_json(lines=True) gave: seven rows, two of them stale failures.
    import pandas

    assert len(pandas.read_json(out / "manifest.jsonl", lines=True)) == 7


def test_to_pandas_without_pandas_says_what_to_install(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = outrider.explore_many(make_tasks(make_repos(tmp_path, 1), 1), backend="offline")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(
        outrider.MissingExtraError, match=r"BatchRun.to_pandas\(\) needs the pandas"
    ):
        run.to_pandas()


def test_the_notebook_view_of_a_batch_shows_its_answers(tmp_path: pathlib.Path) -> None:
    _, run, _ = retried_batch(tmp_path)
    view = run._repr_html_()
    assert "outrider batch" in view  # the summary is still there
    for row in run.rows:
        assert row["id"] in view
        assert row["result"]["evidence"][0] in view
        assert row["result"]["summary"][:60].replace("`", "") in view.replace("`", "")
    # A failed task shows its reason and error, escaped; a long answer is cut.
    failed = dict(run.rows[0], status="failed", reason="model_error", result=None)
    failed["error"] = "<script>boom</script> " + "x" * 5000
    view = BatchRun([failed], run.summary)._repr_html_()
    assert "model_error: &lt;script&gt;boom" in view and "<script>" not in view
    assert "x" * 300 not in view
