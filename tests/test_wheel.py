"""The release wheel (``make wheel``, which CI runs before the tests) installs into a fresh
virtual environment on a machine with no Rust toolchain, and works there (#20.5).

Skipped when ``dist/`` holds no wheel (a developer who has not run ``make wheel``)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
WHEELS = sorted((ROOT / "dist").glob("outrider-*.whl"))

pytestmark = pytest.mark.skipif(not WHEELS, reason="no wheel in dist/: run `make wheel`")

SMOKE = textwrap.dedent(
    """
    import pathlib, shutil, sys, tempfile
    assert shutil.which("cargo") is None and shutil.which("rustc") is None, "Rust is on PATH"
    import outrider
    assert "site-packages" in outrider.__file__, outrider.__file__
    root = pathlib.Path(tempfile.mkdtemp())
    (root / "auth.py").write_text("def login(user):\\n    return user\\n")
    launcher = outrider.SubagentLauncher(root, outrider.OfflineScout(), trace_dir=False)
    result = launcher.launch(outrider.SubagentRequest("Where is login defined?"))
    assert result.status in ("completed", "partial"), result
    assert "auth.py:1" in " ".join(result.explore.evidence), result.explore
    grep = outrider.run_tool(root, "Grep", {"pattern": "def login"})
    assert grep["data"]["matches"][0]["file"] == "auth.py", grep
    print("ok", outrider.__version__)
    """
)


def test_the_wheel_is_abi3_and_installs_and_runs_without_rust(tmp_path: pathlib.Path) -> None:
    wheel = WHEELS[-1]
    assert "-abi3-" in wheel.name, wheel.name  # one wheel for every CPython >= 3.10
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # Nothing from an index: the wheel has no runtime dependencies.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    # A PATH with the venv and the system's programs only: no cargo, rustc or rustup.
    bare = [str(venv / "bin")] + [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d
        and not (pathlib.Path(d) / "cargo").exists()
        and not (pathlib.Path(d) / "rustc").exists()
    ]
    env = {"PATH": os.pathsep.join(bare), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    assert shutil.which("cargo", path=env["PATH"]) is None
    out = subprocess.run(
        [str(python), "-c", SMOKE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok "), out.stdout
    cli = subprocess.run(
        [str(venv / "bin" / "outrider"), "--help"], env=env, capture_output=True, text=True
    )
    assert cli.returncode == 0 and "explore" in cli.stdout, cli.stderr
