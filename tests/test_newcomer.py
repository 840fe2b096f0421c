"""What a new user read in results, views and the CLI (#20.8, #20.9): the model named, the cause
of a failure, the question asked, why a result is partial, open questions once, Glob paths as the
reference spells them."""

from __future__ import annotations

import json
import pathlib
import pickle
import socket
from typing import Any

import pytest
from loopback import answering

import outrider
from outrider.cli import _print_result
from outrider.testing import ScriptedLLM, call, final

ANSWER = final(status="completed", summary="login is in auth.py", evidence=["auth.py:1"])


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "auth.py").write_text("def login(user):\n    return user\n")
    (root / "src" / "db.py").write_text("def connect():\n    pass\n")
    return root


def launch(repo: pathlib.Path, llm: Any, **kwargs: Any) -> outrider.SubagentLaunchResult:
    launcher = outrider.SubagentLauncher(repo, llm, trace_dir=False, **kwargs)
    return launcher.launch(outrider.SubagentRequest("Where is login defined?"))


def test_results_views_and_cli_name_the_model_and_the_question(
    repo: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = ScriptedLLM([[call("Read", path="auth.py")], ANSWER])
    r = launch(repo, llm, main_model="gpt-4.1", light_model="gpt-4.1-mini")
    assert (r.model_used, r.model_name, r.task) == (
        "light",
        "gpt-4.1-mini",
        "Where is login defined?",
    )
    assert r.to_dict()["model_name"] == "gpt-4.1-mini"
    assert "model_name='gpt-4.1-mini'" in repr(r)
    for view in (r._repr_html_(), r._repr_markdown_()):
        assert "light model (gpt-4.1-mini)" in view
        assert "Where is login defined?" in view
    _print_result(r, "test")
    assert "model: light model (gpt-4.1-mini)" in capsys.readouterr().out
    # A callable that picks its own model is named as the callable.
    plain = launch(repo, ScriptedLLM([[call("Read", path="auth.py")], ANSWER]))
    assert plain.model_name == "python callable ScriptedLLM"
    # Older saved results (no such keys) still load.
    old = {k: v for k, v in r.to_dict().items() if k not in ("model_name", "task")}
    assert outrider.SubagentLaunchResult.from_dict(old).model_name == ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_failed_runs_view_shows_the_cause_not_just_connection_error(
    repo: pathlib.Path,
) -> None:
    openai = pytest.importorskip("openai")
    port = free_port()  # nothing listens there
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)

    def llm(request: dict[str, Any]) -> Any:
        return client.chat.completions.create(**request)

    r = launch(repo, llm, main_model="m")
    assert r.status == "failed"
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert r.error is not None
    assert f"Connection error. (POST {url}; " in r.error, r.error
    assert "Connection refused" in r.error
    assert url in r._repr_html_() and "Connection refused" in r._repr_markdown_()

    with answering(404, {"error": {"message": "no such model"}}) as base:
        client = openai.OpenAI(base_url=base, api_key="k", max_retries=0)
        r = launch(repo, llm, main_model="m")
    assert r.error is not None and "404" in r.error and f"POST {base}/chat/completions" in r.error


def test_a_partial_result_says_why(repo: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = final(status="partial", summary="maybe auth.py", unresolved_questions=["Is it used?"])
    own = launch(repo, ScriptedLLM([[call("Read", path="auth.py")], said]))
    assert (own.status, own.terminal_reason) == ("partial", "completed")
    why = "the child itself said its answer is partial (see its open questions)"
    assert f"**why partial:** {why}" in own._repr_markdown_()
    assert f"why partial:</strong> {why}" in own._repr_html_()
    _print_result(own, "test")
    assert f"why partial: {why}" in capsys.readouterr().out
    # An answer given before any search stands as partial, and the view gives outrider's reason
    # (no repo-map hint: the places it opens would count as a look at the code; no evidence:
    # a cited line never seen would make it unverified instead).
    no_hint = outrider.EXPLORE_PROFILE.replace(repo_map_hint=False)
    unfounded = final(status="completed", summary="login is in auth.py", evidence=[])
    hasty = launch(repo, ScriptedLLM([unfounded] * 4), profiles=[no_hint])
    assert (hasty.status, hasty.terminal_reason) == ("partial", "completed")
    assert "**why partial:** the child answered before searching enough" in hasty._repr_markdown_()
    done = launch(repo, ScriptedLLM([[call("Read", path="auth.py")], ANSWER]))
    assert done.status == "completed" and "why " not in done._repr_markdown_()


def test_the_same_open_question_is_listed_once(repo: pathlib.Path) -> None:
    twice = final(
        status="partial",
        summary="auth.py",
        unresolved_questions=["Is it used?", "Where is logout?", "Is it used?", "Is it used?"],
    )
    r = launch(repo, ScriptedLLM([[call("Read", path="auth.py")], twice]))
    assert r.explore.unresolved_questions == ("Is it used?", "Where is logout?")


def test_glob_lists_directories_as_the_reference_does(repo: pathlib.Path) -> None:
    out = outrider.run_tool(repo, "Glob", {})
    assert out["data"] == {"paths": ["auth.py", "src"], "truncated": False, "directories": ["src"]}
    assert outrider.run_tool(repo, "Glob", {"pattern": "**/*.py"})["data"] == {
        "paths": ["auth.py", "src/db.py"],
        "truncated": False,
    }


def test_main_agent_run_returns_a_typed_result_with_its_children(repo: pathlib.Path) -> None:
    tasks = [
        {"description": "login", "prompt": "Where is login defined?", "subagent_type": "explore"},
        {"description": "db", "prompt": "Where is the db connected?", "subagent_type": "explore"},
    ]
    main = ScriptedLLM(
        [[call("Task", **tasks[0]), call("Task", **tasks[1])], "login is at auth.py:1"]
    )
    light = ScriptedLLM(
        {
            "login\n\nWhere is login defined?": [[call("Read", path="auth.py")], ANSWER],
            "db\n\nWhere is the db connected?": [
                [call("Read", path="src/db.py")],
                final(status="completed", summary="src/db.py", evidence=["src/db.py:1"]),
            ],
        }
    )
    agent = outrider.MainAgent(repo, main, light, trace_dir=False, model="big", light_model="small")
    run = agent.run("Where is login, and where is the db connected?")
    assert isinstance(run, outrider.MainRunResult)
    assert (run.final_text, run.model_name, run.task) == (
        "login is at auth.py:1",
        "big",
        "Where is login, and where is the db connected?",
    )
    assert sorted(c.task for c in run.children) == [
        "db\n\nWhere is the db connected?",
        "login\n\nWhere is login defined?",
    ]
    assert all(c.status == "completed" and c.model_name == "small" for c in run.children)
    children = sum(c.token_usage for c in run.children)
    assert children > 0 and run.total_token_usage == run.token_usage + children
    assert run.total_input_tokens == run.input_tokens + sum(c.input_tokens for c in run.children)
    # Still the dict it was: keys, json.dumps, pickling.
    assert isinstance(run, dict) and run["final_text"] == "login is at auth.py:1"
    assert run.get("error") is None and run["tool_usage"] == {"Task": 2}
    assert json.loads(json.dumps(run)) == run == run.to_dict()
    assert [c["child_session_id"] for c in run["children"]] == [
        c.child_session_id for c in run.children
    ]
    assert outrider.MainRunResult.from_dict(run.to_dict()) == run
    again = pickle.loads(pickle.dumps(run))
    assert again == run and isinstance(again, outrider.MainRunResult)
    assert again.children == run.children
    html, md = run._repr_html_(), run._repr_markdown_()
    for view in (html, md):
        assert "main model (big)" in view and "Where is login, and where is the db" in view
        assert "login is at auth.py:1" in view and "with 2 children" in view
    assert html.count("SubagentLaunchResult") == 2
    with pytest.raises(
        outrider.ConfigError, match=r"MainRunResult data: unknown key\(s\) \['extra'\]"
    ):
        outrider.MainRunResult.from_dict({**run.to_dict(), "extra": 1})


def test_extras_install_what_the_readme_and_the_notebook_use() -> None:
    import importlib.metadata
    import re

    def extra(name: str) -> set[str]:
        marker = re.compile(rf";\s*extra\s*==\s*['\"]{re.escape(name)}['\"]")
        found = importlib.metadata.requires("outrider") or []
        return {re.split(r"[<>=;\s]", r)[0] for r in found if marker.search(r)}

    # pydantic_ai.Agent("openai:gpt-4.1", ...) needs pydantic-ai's OpenAI provider.
    assert extra("pydantic-ai") == {"pydantic-ai-slim[openai]"}
    # examples/explore.ipynb imports pandas (Trace.to_pandas) and pydantic.
    notebook = json.loads(
        (pathlib.Path(__file__).parents[1] / "examples" / "explore.ipynb").read_text()
    )
    source = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    assert "import pydantic" in source and "to_pandas()" in source
    assert extra("jupyter") == {"pandas", "pydantic"}
