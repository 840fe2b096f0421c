"""One vocabulary across ``outrider explore``, ``batch`` and ``mcp``, flags that imply each
other doing so, suggestions for near misses (#37.6), and a command line that says each thing
once (#37.7)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys

import pytest

from outrider import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return user\n")
    return root


def tasks_file(tmp_path: pathlib.Path, repo: pathlib.Path, count: int = 2) -> pathlib.Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        "".join(
            json.dumps({"root": str(repo), "question": f"Where is login defined? ({n})"}) + "\n"
            for n in range(count)
        )
    )
    return path


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


# --- one vocabulary ----------------------------------------------------------------------------


def test_batch_takes_model_as_explore_does_and_backend_stays(
    tmp_path: pathlib.Path, repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path, repo)
    for flag, out in (("--model", "a"), ("--backend", "b")):
        argv = ["batch", str(tasks), "--out", str(tmp_path / out), flag, "offline"]
        assert cli.main([*argv, "--no-progress", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["counts"] == {"completed": 2}
    # explore (and mcp) take --backend too, as the same option as --model.
    argv = ["explore", "Where is login defined?", "--root", str(repo), "--backend", "offline"]
    assert cli.main([*argv, "--json", "--trace-dir", str(tmp_path / "t")]) == 0
    assert json.loads(capsys.readouterr().out)["model_used"] == "offline"
    mcp = cli.build_parser().parse_args(["mcp", "--backend", "offline"])
    assert mcp.model == "offline"


def test_batch_model_main_without_a_model_says_what_to_set(
    tmp_path: pathlib.Path, repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path, repo)
    argv = ["batch", str(tasks), "--out", str(tmp_path / "o"), "--model", "main"]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.strip() == "outrider: --model main: LLM_MODEL_ID is not set"


def test_batch_model_light_and_main_read_the_routes_explore_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from outrider.batch import BackendSpec
    from outrider.batch import _cli as batch_cli

    monkeypatch.setenv("LLM_MODEL_ID", "big")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:1/v1")
    parser = cli.build_parser()

    def specs(*flags: str) -> tuple[BackendSpec | None, BackendSpec | None]:
        args = parser.parse_args(["batch", "t.jsonl", "--out", "o", *flags])
        return batch_cli._spec(args.backend, "--model"), batch_cli._light_spec(args)

    main, light = specs("--model", "main")
    assert main == BackendSpec.from_env() and main is not None and main.model == "big"
    assert light is None  # the children use the main model
    assert specs("--model", "light") == (main, None)  # no LIGHT_LLM_MODEL_ID: the same
    monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "small")
    main, light = specs("--model", "light")
    assert main is not None and main.model == "big" and light is not None
    assert (light.model, light.api_key_env) == ("small", "LIGHT_LLM_API_KEY")
    assert specs("--backend", "env") == (main, None)
    offline = BackendSpec.offline()
    assert specs("--light-model", "offline") == (None, offline)
    assert specs("--light-backend", "offline") == (None, offline)  # the old spelling


def test_batch_resumes_by_default_and_retry_failed_implies_it(
    tmp_path: pathlib.Path, repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = tmp_path / "later"
    tasks = tasks_file(tmp_path, repo)
    with tasks.open("a") as f:
        f.write(json.dumps({"root": str(later), "question": "Where is login defined?"}) + "\n")
    out = tmp_path / "out"
    argv = ["batch", str(tasks), "--out", str(out), "--model", "offline", "--no-progress"]
    assert cli.main(argv) == 1  # the task on a missing root failed
    capsys.readouterr()
    # The same command again continues (as explore_many does), running nothing new.
    assert cli.main(argv) == 1
    assert "3 finished before (resumed)" in capsys.readouterr().out
    (later / "src").mkdir(parents=True)
    (later / "src" / "auth.py").write_text("def login(user):\n    return user\n")
    # --retry-failed alone: it implies --resume.
    assert cli.main([*argv, "--retry-failed"]) == 0
    assert "2 finished before (resumed)" in capsys.readouterr().out
    assert len((out / "manifest.jsonl").read_text().splitlines()) == 4
    # --no-resume keeps the old strictness.
    assert cli.main([*argv, "--no-resume"]) == 2
    assert "already holds 3 finished task(s)" in capsys.readouterr().err


def test_the_readme_batch_lines_run_one_after_another(
    tmp_path: pathlib.Path, repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `outrider batch` lines, in order, in one directory (the Ray line on the
    local executor with the offline scout: no cluster, no provider here)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(outrider batch .*?)```", readme, re.S)
    assert block is not None
    lines = [
        shlex.split(re.sub(r"\s*#.*", "", line))
        for line in block.group(1).replace("\\\n", " ").splitlines()
        if line.strip()
    ]
    assert len(lines) >= 3 and all(line[:2] == ["outrider", "batch"] for line in lines)
    tasks_file(tmp_path, repo)
    monkeypatch.chdir(tmp_path)
    parser = cli.build_parser()
    for line in lines:
        args = line[1:]
        parser.parse_args(args)  # every flag the README shows exists
        if "--executor" in args:
            at = args.index("--executor")
            args[at + 1] = "local"
            args = [a for a in args if a not in ("--ray-address", "auto")]
            args = [*args[: args.index("--rpm")], "--model", "offline"]
        assert cli.main([*args, "--no-progress"]) == 0, line


# --- near misses -------------------------------------------------------------------------------


def test_a_mistyped_option_is_named_with_its_subcommand_and_a_suggestion(
    repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = usage_error(["explore", "Where?", "--root", str(repo), "--jsno"], capsys)
    assert "usage: outrider explore" in err
    assert err.rstrip().endswith("unrecognized arguments: --jsno (did you mean --json?)")
    err = usage_error(["batch", "t.jsonl", "--out", "o", "--retry-faild"], capsys)
    assert "usage: outrider batch" in err and "did you mean --retry-failed?" in err
    err = usage_error(["mcp", "--trace-dri", "x"], capsys)
    assert "usage: outrider mcp" in err and "did you mean --trace-dir?" in err
    err = usage_error(["explore", "Where?", "--zzzzzz"], capsys)
    assert err.rstrip().endswith("unrecognized arguments: --zzzzzz")  # nothing close: no guess


def test_a_mistyped_command_or_choice_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(["explor", "Where?"], capsys)
    assert "invalid choice: 'explor'" in err and err.rstrip().endswith("did you mean 'explore'?")
    err = usage_error(["explore", "Where?", "--model", "ofline"], capsys)
    assert err.rstrip().endswith("did you mean 'offline'?")
    err = usage_error(["batch", "t.jsonl", "--out", "o", "--executor", "rya"], capsys)
    assert err.rstrip().endswith("did you mean 'ray'?")


def test_batch_model_typo_gets_a_suggestion_and_retry_failed_names_the_directory(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"question": "Where?", "root": "."}\n')
    out = str(tmp_path / "o")
    assert cli.main(["batch", str(tasks), "--out", out, "--model", "offlin"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("got 'offlin'; did you mean 'offline'?")
    assert cli.main(["batch", str(tasks), "--out", out, "--retry-failed", "--no-resume"]) == 2
    assert f"--retry-failed reruns the failed tasks {out!r} holds" in capsys.readouterr().err


# --- noise -------------------------------------------------------------------------------------


def dead_base_url() -> str:
    """A loopback address nothing listens on (a port taken, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def dead_env(tmp_path: pathlib.Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "LLM_MODEL_ID": "m",
        "LLM_BASE_URL": dead_base_url(),
        "LLM_API_KEY": "sk-test-not-a-real-key-123456",
        "LLM_MAX_RETRIES": "2",
        "OUTRIDER_TRACE_DIR": str(tmp_path / "traces"),
    }


def test_a_batch_against_a_dead_backend_says_one_line_per_failed_task(
    tmp_path: pathlib.Path, repo: pathlib.Path
) -> None:
    tasks = tasks_file(tmp_path, repo, count=12)
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks), "--out", str(tmp_path / "out"),
         "--model", "env", "--no-progress"],
        capture_output=True, text=True, env=dead_env(tmp_path), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 12, done.stderr  # was 36: a WARNING per retry of every task
    assert all(
        re.fullmatch(r"outrider batch: task [0-9a-f]{24} failed \(model_error\): .*", line)
        for line in lines
    ), lines
    assert "retrying" not in done.stderr
    assert done.stdout.startswith("12 task(s): failed 12")


def test_explore_says_its_error_once(tmp_path: pathlib.Path, repo: pathlib.Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "explore", "Where is login?", "--root", str(repo),
         "--model", "main"],
        capture_output=True, text=True, env=dead_env(tmp_path), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    both = done.stdout + done.stderr
    assert both.count("could not connect") == 1, both
    assert "error: child terminal reason: model_error" in done.stdout
    assert done.stderr == ""
