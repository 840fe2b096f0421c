"""The examples run offline: every script, and examples/explore.ipynb through nbclient."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import outrider

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOTEBOOK = EXAMPLES / "explore.ipynb"


def run_notebook_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "run_notebook", ROOT / "tools" / "run_notebook.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    package_parent = str(pathlib.Path(outrider.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("quickstart.py", "repaired (fence): Half done."),
        ("plain_callable.py", "status: completed (completed), tools: {'Grep': 1, 'Read': 1}"),
        ("offline_scout.py", "status: partial, model: offline"),
        ("async_launch.py", "completed: The core starts in src/lib.rs.  ['src/lib.rs:1']"),
    ],
)
def test_example_scripts_run_offline(script: str, expected: str, tmp_path: pathlib.Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        cwd=tmp_path,
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout, done.stdout


def html_outputs(nb: Any) -> list[str]:
    return [
        "".join(out["data"]["text/html"])
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "text/html" in out.get("data", {})
    ]


def test_the_notebook_runs_headless_and_renders_results() -> None:
    check = "import outrider, os; print(os.path.realpath(outrider.__file__), os.getcwd())"
    nb = run_notebook_module().execute(NOTEBOOK, timeout=300, extra_cells=[check])
    # The kernel imported the outrider under test, in the examples directory.
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs).split()
    assert printed == [os.path.realpath(outrider.__file__), str(EXAMPLES)]
    markup = html_outputs(nb)
    for kind in ("SubagentLaunchResult", "ExploreResult", "Trace", "CompletionVerdict"):
        assert any(f"<strong>{kind}</strong>" in m for m in markup), kind
    assert all("<script" not in m for m in markup)
    assert any("a &lt;script&gt; tag here stays text" in m for m in markup)
    assert any("Children</strong> (1)" in m for m in markup)
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert errors == []


def test_the_committed_notebook_carries_its_outputs() -> None:
    nb = run_notebook_module().read_notebook(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs for c in code), "run `make notebook-outputs` and commit"
    assert all(o.output_type != "error" for c in code for o in c.outputs)
    assert len(html_outputs(nb)) >= 7
