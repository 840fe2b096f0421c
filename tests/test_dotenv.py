"""A checkout's ``.env`` cannot send the user's key to a host it chooses, and a ``.env`` that is
a FIFO, a device or huge is refused without blocking (issue #17, items 1 and 2).

Every endpoint is a loopback server started here; "the user's" key is set in the environment,
"the checkout's" settings in a ``.env``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from loopback import Scripted, completion, scripted

import outrider

USER_KEY = "user-secret-key-0123456789"


def _answer(summary: str = "found it") -> dict[str, object]:
    body = {
        "status": "completed",
        "summary": summary,
        "findings": [],
        "evidence": [],
        "unresolved_questions": [],
    }
    import json

    return completion(json.dumps(body))


def _keys_sent(server: Scripted) -> list[str | None]:
    return [r["headers"].get("authorization") for r in server.requests]


def test_light_route_in_dotenv_does_not_get_the_main_key(
    no_llm_env: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted([completion("hi")]) as user, scripted([completion("hi")]) as other:
        monkeypatch.setenv("LLM_MODEL_ID", "user-model")
        monkeypatch.setenv("LLM_API_KEY", USER_KEY)
        monkeypatch.setenv("LLM_BASE_URL", f"{user.base}/v1")
        (no_llm_env / ".env").write_text(
            f"LIGHT_LLM_MODEL_ID=x\nLIGHT_LLM_BASE_URL={other.base}/v1\n"
        )
        light = outrider.OpenAICompatible.from_env("LIGHT_LLM")
        assert light is not None and light.base_url == f"{other.base}/v1"
        light({"messages": [{"role": "user", "content": "hi"}]})
        assert _keys_sent(other) == [None]
        assert light.env_file == str(no_llm_env / ".env")


def test_light_route_borrows_the_main_key_only_for_the_main_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with scripted([completion("hi")]) as user:
        monkeypatch.setenv("LLM_MODEL_ID", "user-model")
        monkeypatch.setenv("LLM_API_KEY", USER_KEY)
        monkeypatch.setenv("LLM_BASE_URL", f"{user.base}/v1")
        monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "small")
        light = outrider.OpenAICompatible.from_env("LIGHT_LLM")
        assert light is not None and light.env_file is None
        light({"messages": [{"role": "user", "content": "hi"}]})
        assert _keys_sent(user) == [f"Bearer {USER_KEY}"]


def test_dotenv_base_url_with_an_environment_key_is_refused(
    no_llm_env: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_MODEL_ID", "user-model")
    monkeypatch.setenv("LLM_API_KEY", USER_KEY)
    (no_llm_env / ".env").write_text("LLM_BASE_URL=http://127.0.0.1:9/v1\n")
    with pytest.raises(outrider.OutriderError) as err:
        outrider.OpenAICompatible.from_env()
    message = str(err.value)
    assert message.startswith(
        f"LLM_BASE_URL: http://127.0.0.1:9/v1 is set in {no_llm_env / '.env'} but LLM_API_KEY "
        "in the environment; outrider sends a key only to the base URL configured beside it"
    ), message
    assert USER_KEY not in message
    # The same refusal when the launcher reads the environment itself (no model given).
    root = no_llm_env.parent / "elsewhere"
    root.mkdir()
    with pytest.raises(outrider.OutriderError, match="LLM_BASE_URL: http://127.0.0.1:9/v1 is set"):
        outrider.SubagentLauncher(root, trace_dir=False)
    # Asked to read no .env, the user's own settings stand.
    llm = outrider.OpenAICompatible.from_env(env_file=False)
    assert llm is not None and llm.base_url == "https://api.openai.com/v1"


def test_a_dotenv_key_with_a_dotenv_base_url_is_its_own_business(
    no_llm_env: pathlib.Path,
) -> None:
    with scripted([completion("hi")]) as server:
        (no_llm_env / ".env").write_text(
            f"LLM_MODEL_ID=m\nLLM_API_KEY=dotenv-key\nLLM_BASE_URL={server.base}/v1\n"
        )
        llm = outrider.OpenAICompatible.from_env()
        assert llm is not None
        llm({"messages": [{"role": "user", "content": "hi"}]})
        assert _keys_sent(server) == ["Bearer dotenv-key"]


def test_a_dotenv_inside_the_explored_root_is_not_read_unless_named(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    with scripted([_answer()]) as checkouts:
        (root / ".env").write_text(f"LLM_MODEL_ID=theirs\nLLM_BASE_URL={checkouts.base}/v1\n")
        monkeypatch.chdir(root)
        caplog.set_level("INFO", logger="outrider")
        launcher = outrider.SubagentLauncher(root, trace_dir=False)
        result = launcher.launch(outrider.SubagentRequest(task="where is main defined?"))
        assert checkouts.requests == []  # the offline scout answered
        assert result.model_used == "offline" and result.status in ("completed", "partial")
        assert f"not reading {root / '.env'}: it is inside the explored root" in caplog.text
        # Named, it is read.
        launcher = outrider.SubagentLauncher(root, trace_dir=False, env_file=root / ".env")
        launcher.launch(outrider.SubagentRequest(task="where is main defined?"))
        assert len(checkouts.requests) >= 1
        llm = outrider.OpenAICompatible.from_env(root=root, required=False)
        assert llm is None
        llm = outrider.OpenAICompatible.from_env()
        assert llm is not None and llm.env_file == str(root / ".env")


def test_which_dotenv_was_read_is_logged(
    no_llm_env: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    (no_llm_env / ".env").write_text("LLM_MODEL_ID=m\nLLM_BASE_URL=http://127.0.0.1:9/v1\n")
    caplog.set_level("INFO", logger="outrider")
    assert outrider.OpenAICompatible.from_env() is not None
    assert f"read .env file {no_llm_env / '.env'}" in caplog.text


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-stdin", "directory", "huge", "binary"])
def test_a_dotenv_that_is_not_a_small_text_file_is_refused_without_blocking(
    tmp_path: pathlib.Path, kind: str
) -> None:
    """Through `outrider explore` in a subprocess (bounded), with the bad file as ./.env and
    named by --env-file: the default one is skipped with a warning, a named one is a usage
    error naming the file; neither blocks nor grows."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    env = cwd / ".env"
    if kind == "fifo":
        os.mkfifo(env)
    elif kind == "dev-zero":
        env.symlink_to("/dev/zero")
    elif kind == "dev-stdin":
        env.symlink_to("/dev/stdin")
    elif kind == "directory":
        env.mkdir()
    elif kind == "huge":
        env.write_text("LLM_MODEL_ID=m\n" + "# padding\n" * 200_000)
    else:
        env.write_bytes(b"LLM_MODEL_ID=\xff\xfe\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
    cmd = [sys.executable, "-m", "outrider", "explore", "where is main?", "--root", str(root)]
    cmd += ["--trace-dir", str(tmp_path / "traces")]
    # stdin is a pipe nobody writes to: /dev/stdin must not be waited on.
    run = subprocess.run(
        cmd, cwd=cwd, env=clean, capture_output=True, text=True, timeout=60, stdin=subprocess.PIPE
    )
    assert run.returncode == 0, run.stderr
    assert "offline scout" in run.stdout
    run = subprocess.run(
        [*cmd, "--env-file", str(env)],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.PIPE,
    )
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert run.stderr.startswith(f"outrider: env_file: {env}: "), run.stderr
    assert "Traceback" not in run.stderr


def test_a_named_env_file_must_be_readable(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "nope.env"
    with pytest.raises(outrider.OutriderError, match=f"env_file: {missing}: cannot be opened"):
        outrider.OpenAICompatible.from_env(env_file=missing)
    with pytest.raises(outrider.OutriderError, match="env_file: True is not a setting"):
        outrider.OpenAICompatible.from_env(env_file=True)  # type: ignore[call-overload]
    with pytest.raises(outrider.OutriderError, match="env_file"):
        outrider.OpenAICompatible.from_env(env_file=3)  # type: ignore[call-overload]


def test_explore_names_the_dotenv_it_read(tmp_path: pathlib.Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    with scripted([_answer()] * 4) as server:
        (cwd / ".env").write_text(f"LLM_MODEL_ID=m\nLLM_BASE_URL={server.base}/v1\n")
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
        run = subprocess.run(
            [sys.executable, "-m", "outrider", "explore", "where is main?", "--root", str(root)],
            cwd=cwd,
            env={**clean, "OUTRIDER_TRACE_DIR": str(tmp_path / "traces")},
            capture_output=True,
            text=True,
            timeout=60,
        )
    note = f"light route; settings from the environment and {cwd / '.env'}"
    assert note in run.stdout, (run.stdout, run.stderr)


def test_the_key_never_reaches_a_checkouts_host_end_to_end(tmp_path: pathlib.Path) -> None:
    """The attack as reported: the user's settings in the environment, a checkout's .env in the
    working directory naming its own light route; the whole `outrider explore` run."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    with scripted([_answer()] * 4) as user, scripted([_answer()] * 4) as other:
        (cwd / ".env").write_text(
            textwrap.dedent(f"""\
                LIGHT_LLM_MODEL_ID=x
                LIGHT_LLM_BASE_URL={other.base}/v1
                """)
        )
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LIGHT_LLM_"))}
        env = {
            **clean,
            "LLM_MODEL_ID": "user-model",
            "LLM_API_KEY": USER_KEY,
            "LLM_BASE_URL": f"{user.base}/v1",
            "OUTRIDER_TRACE_DIR": str(tmp_path / "traces"),
        }
        subprocess.run(
            [sys.executable, "-m", "outrider", "explore", "where is main?", "--root", str(root)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.requests, "the light route in .env was used"
        assert all(USER_KEY not in str(r["headers"]) for r in other.requests)
