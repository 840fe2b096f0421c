"""Redaction, attacked from the sides the earlier suites missed: keys used through the SDK
adapters, secrets assigned in each language's spelling, a PEM body read without its BEGIN line,
an AWS secret key beside its key id, a callback's traceback in the log; and the other way round,
ordinary source that names a password without holding one stays as it was."""

from __future__ import annotations

import json
import logging
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from loopback import answering

import outrider
from outrider import adapters
from outrider.testing import ScriptedLLM, call, final

# Not shaped like any provider's key: only registration can remove it.
KEY = "plain-adapter-key-not-shaped-0451"


def everything(result: outrider.SubagentLaunchResult, tmp: pathlib.Path, logs: str) -> str:
    files = "".join(p.read_text() for p in sorted(tmp.rglob("*.jsonl")))
    envelope = outrider.TaskTool.__name__  # the envelope is checked in its own test
    return f"{result!r} {json.dumps(result.to_dict())} {result.error} {files} {logs} {envelope}"


def openai_adapter(base: str) -> Any:
    import openai

    return adapters.openai(openai.OpenAI(base_url=base, api_key=KEY, max_retries=0), "m")


def anthropic_adapter(base: str) -> Any:
    import anthropic

    client = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=KEY, max_retries=0)
    return adapters.anthropic(client, "m")


def litellm_adapter(base: str) -> Any:
    return adapters.litellm("openai/m", api_base=base, api_key=KEY, num_retries=0)


@pytest.mark.parametrize(
    "make", [openai_adapter, anthropic_adapter, litellm_adapter], ids=lambda f: f.__name__
)
def test_an_adapters_key_echoed_by_a_401_never_appears(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture, make: Callable[[str], Any]
) -> None:
    caplog.set_level(logging.DEBUG, logger="outrider")
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}}
    root = tmp_path / "root"
    root.mkdir()
    with answering(401, echo) as base:
        launcher = outrider.SubagentLauncher(root, make(base), trace_dir=tmp_path / "traces")
        result = launcher.launch(outrider.SubagentRequest(task="find main"))
        envelope = outrider.TaskTool(launcher).run(
            {"description": "d", "prompt": "find main", "subagent_type": "explore"}
        )
    assert result.status == "failed"
    assert "[REDACTED]" in (result.error or ""), result.error
    text = everything(result, tmp_path, caplog.text) + json.dumps(envelope) + repr(launcher)
    assert KEY not in text


SOURCE = """\
DB_PASSWORD=pw-db-0001
LLM_API_KEY=pw-llm-0002
MY_SECRET_TOKEN=pw-tok-0003
export GITHUB_TOKEN=pw-gh-0004
$db = ['password' => 'pw-php-0005'];
password := "pw-go-0006"
DB_PASSWORD = "pw-py-0007"
<password>pw-xml-0008</password>
const dbPassword = "pw-js-0009";
bob,,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,https://console
"""

SECRETS = [f"pw-{k}-{i:04d}" for i, k in enumerate("db llm tok gh php go py xml js".split(), 1)] + [
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIAIOSFODNN7EXAMPLE",
]

# A key's body from its second line on: a Read window that starts inside it.
PEM_TAIL = """\
MIIEowIBAAKCAQEA7bodybodybodybodybodybodybodybodybodybodybodybody
Kx3fQ0nZcY8mR2l5TtA9bodybodybodybodybodybodybodybodybodybodybody
-----END RSA PRIVATE KEY-----
"""

CODE = """\
def connect(password: str, token: Optional[str] = None) -> None:
    if not password:
        raise ValueError("no password")
    self.password = password
    token = os.environ["TOKEN"]
fn login(password: &str, api_key: String) {}
interface Login { password: string; apiKey: string }
max_token=9 total_token_budget=3 prompt_tokens: 7
"""


def test_assignments_pem_tails_and_aws_pairs_are_redacted_in_tools_and_traces(
    tmp_path: pathlib.Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "settings.txt").write_text(SOURCE)
    (root / "key.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n" + PEM_TAIL)
    llm = ScriptedLLM(
        [
            [call("Read", path="settings.txt"), call("Read", path="key.pem", start_line=2)],
            final(status="completed", summary="settings.txt", evidence=["settings.txt:1"]),
        ]
    )
    result = outrider.SubagentLauncher(root, llm, trace_dir=tmp_path / "traces").launch(
        outrider.SubagentRequest(task="where are the credentials?")
    )
    assert result.trace_path is not None
    trace = pathlib.Path(result.trace_path).read_text()
    assert "settings.txt" in trace
    for secret in [*SECRETS, "bodybody"]:
        assert secret not in trace, secret


def test_ordinary_source_that_names_a_password_is_kept_verbatim(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "login.py").write_text(CODE)
    llm = ScriptedLLM(
        [
            [call("Read", path="login.py")],
            final(status="completed", summary="login.py", evidence=["login.py:1"]),
        ]
    )
    result = outrider.SubagentLauncher(root, llm, trace_dir=tmp_path / "traces").launch(
        outrider.SubagentRequest(task="how does login work?")
    )
    assert result.trace_path is not None
    events = [json.loads(line) for line in pathlib.Path(result.trace_path).read_text().splitlines()]
    contents = [
        e["payload"]["result"]["data"]["content"]
        for e in events
        if e["event"] == "tool_result" and e["payload"].get("tool") == "Read"
    ]
    assert len(contents) == 1
    lines = [line.split(" | ", 1)[1] for line in contents[0].splitlines()]
    assert lines == CODE.splitlines()


def test_an_on_event_traceback_is_redacted_in_log_records(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    outrider._core._register_secret(KEY)
    caplog.set_level(logging.DEBUG, logger="outrider")

    def on_event(event: dict[str, Any]) -> None:
        raise RuntimeError(f"sink refused key {KEY} and password=hunter2hunter2")

    outrider.SubagentLauncher(tmp_path, ScriptedLLM([]), trace_dir=False).launch(
        outrider.SubagentRequest(task="t"), on_event=on_event
    )
    records = [r for r in caplog.records if "on_event callback" in r.getMessage()]
    assert records and records[0].levelno == logging.WARNING
    for record in records:
        text = f"{record.getMessage()} {record.exc_info} {record.exc_text}"
        assert "RuntimeError: sink refused key [REDACTED] and password=***" in text
        assert KEY not in text and "hunter2hunter2" not in text


def test_a_library_warning_does_not_print_on_stderr_by_itself(tmp_path: pathlib.Path) -> None:
    # A broken on_event is logged as a warning; with no logging configured it must not reach
    # stderr through logging's last-resort handler.
    script = f"""
import outrider
from outrider.testing import ScriptedLLM
def on_event(event):
    raise RuntimeError("broken sink")
outrider.SubagentLauncher({str(tmp_path)!r}, ScriptedLLM([]), trace_dir=False).launch(
    outrider.SubagentRequest(task="t"), on_event=on_event)
print("done")
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, "done\n", "")


# --- issue 36, Keys: every new outlet -----------------------------------------------------------
# Each test uses a key of its own: a registered key stays registered for the process, so a
# shared one would be removed by an earlier test's registration and hide a leak.

BATCH_ENV = "REDACTION_TEST_BATCH_KEY"
TESTS = pathlib.Path(__file__).resolve().parent


def refusing_factory(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> Any:
    """A batch backend whose constructor refuses its key, quoting it (as SDKs do)."""
    raise RuntimeError(f"the key {api_key} is not valid for this client")


def echoing_factory(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> Any:
    """A batch backend built fine whose every call fails with an error that quotes its key."""

    def llm(request: dict[str, Any]) -> Any:
        raise RuntimeError(f"HTTP 401: Incorrect API key provided: {api_key}")

    return llm


def test_a_batch_backends_key_from_api_key_env_never_appears(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outrider.batch import BackendSpec, explore_many

    key = "plain-batch-env-key-not-shaped-7731"
    monkeypatch.setenv(BATCH_ENV, key)
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.py").write_text("def main():\n    pass\n")
    tasks = [{"root": str(root), "question": "where is main?"}]

    # A factory's error: explore_many's ConfigError, its cause and traceback.
    refusing = BackendSpec("test_redaction:refusing_factory", api_key_env=BATCH_ENV)
    with pytest.raises(outrider.ConfigError) as refused:
        explore_many(tasks, backend=refusing, sink=tmp_path / "out1")
    shown = "".join(traceback_of(refused.value))
    assert "the key [REDACTED] is not valid" in str(refused.value)
    assert key not in shown

    # A model error: the manifest row, the trace the batch keeps, every file it writes.
    echoing = BackendSpec("test_redaction:echoing_factory", api_key_env=BATCH_ENV)
    run = explore_many(tasks, backend=echoing, sink=tmp_path / "out2")
    assert [r["status"] for r in run.rows] == ["failed"]
    assert "Incorrect API key provided: [REDACTED]" in run.rows[0]["error"]
    written = "".join(
        p.read_text(errors="replace") for p in sorted((tmp_path / "out2").rglob("*")) if p.is_file()
    )
    assert "[REDACTED]" in written and key not in written
    assert key not in json.dumps(run.rows) + repr(run) + str(run.summary)


def test_outrider_batch_does_not_print_a_backend_factorys_key(tmp_path: pathlib.Path) -> None:
    import os

    key = "plain-batch-cli-key-not-shaped-5520"
    root = tmp_path / "root"
    root.mkdir()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"root": str(root), "question": "where is main?"}) + "\n")
    spec = json.dumps({"factory": "test_redaction:refusing_factory", "api_key_env": BATCH_ENV})
    env = {**os.environ, BATCH_ENV: key, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        [sys.executable, "-m", "outrider", "batch", str(tasks), "--out", str(tmp_path / "out"),
         "--backend", spec],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "the key [REDACTED] is not valid" in done.stderr
    assert key not in done.stdout + done.stderr


def traceback_of(error: BaseException) -> list[str]:
    import traceback

    return traceback.format_exception(error)


APP = "def main():\n    return 1\n"


def test_the_gates_refusal_log_and_ungrounded_evidence_hold_no_key(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "plain-gate-key-not-shaped-0816"
    outrider._core._register_secret(key)
    shaped = "sk-proj-GateEvidenceKey0123456789abcdef"
    caplog.set_level(logging.DEBUG, logger="outrider")
    root = tmp_path / "root"
    root.mkdir()
    (root / "app.py").write_text(APP)
    # Evidence that cannot be grounded, quoting both keys: refused, then returned unverified.
    bad = [f"conf/{key}.py:1", f"{shaped}.py:1"]
    answer = final(status="completed", summary="main is in app.py", evidence=bad)
    script: list[Any] = [[call("Read", path="app.py")], answer, answer, answer]
    launcher = outrider.SubagentLauncher(root, ScriptedLLM(script), trace_dir=tmp_path / "traces")
    result = launcher.launch(outrider.SubagentRequest(task="where is main?"))
    tool = outrider.TaskTool(outrider.SubagentLauncher(root, ScriptedLLM(script), trace_dir=False))
    envelope = tool.run(
        {"description": "d", "prompt": "where is main?", "subagent_type": "explore"}
    )
    refusals = [r for r in caplog.records if "completion gate refused" in r.getMessage()]
    assert refusals and all(r.levelno == logging.WARNING for r in refusals)
    assert (result.status, envelope["status"]) == ("unverified", "unverified")
    outlets = {
        "log": "".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records),
        "ungrounded_evidence": json.dumps(result.ungrounded_evidence),
        "to_dict": json.dumps(result.to_dict()),
        "repr": repr(result),
        "envelope": json.dumps(envelope),
        "traces": everything(result, tmp_path, ""),
    }
    assert leaking(outlets, key, shaped) == {}
    assert [c["evidence"] for c in result.ungrounded_evidence] == [
        "conf/[REDACTED].py:1",
        "sk-***.py:1",
    ]


def leaking(outlets: dict[str, str], *secrets: str) -> dict[str, list[str]]:
    """The outlets that show a secret or its first 16 characters, and which."""
    found = {
        name: [s for s in secrets if s in text or s[:16] in text] for name, text in outlets.items()
    }
    return {name: hit for name, hit in found.items() if hit}


class Checked(pydantic.BaseModel):
    """A schema whose validator quotes the value it refuses (as pydantic's own messages do)."""

    functions: list[str]
    counts: dict[str, int] = {}
    evidence: list[str]

    @pydantic.field_validator("functions")
    @classmethod
    def known(cls, value: list[str]) -> list[str]:
        if any(" " in v for v in value):
            raise ValueError(f"not a function name: {value}")
        return value


def test_a_validators_message_and_an_answers_object_keys_hold_no_key(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "plain-schema-key-not-shaped-3342"
    outrider._core._register_secret(key)
    shaped = "sk-ant-api03-SchemaKeyAsAnObjectKey0123"
    caplog.set_level(logging.DEBUG, logger="outrider")
    root = tmp_path / "root"
    root.mkdir()
    (root / "app.py").write_text(APP)
    refused = final(functions=[f"main uses {key}", shaped], evidence=["app.py:1"])
    keyed = final(functions=["main"], counts={key: 1, shaped: 2}, evidence=["app.py:1"])
    llm = ScriptedLLM([[call("Read", path="app.py")], refused, keyed])
    result = outrider.SubagentLauncher(root, llm, trace_dir=tmp_path / "traces").launch(
        outrider.SubagentRequest(task="which functions?", output_schema=Checked)
    )
    assert result.status == "completed", result.error
    refusals = [r for r in caplog.records if "completion gate refused" in r.getMessage()]
    assert refusals and "not a function name" in refusals[0].getMessage()
    outlets = {
        "log": "".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records),
        "to_dict": json.dumps(result.to_dict()),
        "result": repr(result.result),
        "traces": everything(result, tmp_path, ""),
    }
    assert leaking(outlets, key, shaped) == {}
    assert result.to_dict()["result"] == {
        "functions": ["main"],
        "counts": {"[REDACTED]": 1, "sk-***": 2},
        "evidence": ["app.py:1"],
    }


def test_a_key_an_http_error_body_echoes_past_the_snippet_cut_leaves_no_prefix(
    tmp_path: pathlib.Path,
) -> None:
    key = "plain-http-key-not-shaped-6081"
    root = tmp_path / "root"
    root.mkdir()
    for pad in (280, 286, 290, 295):
        echo = {"error": {"message": "x" * pad + f" key {key} refused", "type": "auth"}}
        with answering(401, echo) as base:
            llm = outrider.OpenAICompatible("m", base, key, max_retries=0)
            result = outrider.SubagentLauncher(root, llm, trace_dir=False).launch(
                outrider.SubagentRequest(task="find main")
            )
        assert result.status == "failed"
        assert key[:6] not in (result.error or ""), (pad, result.error)


# What a task or a file the child reads holds (issue 36, Keys, still open from before).

TASK_AWS = "why does `aws configure set aws_secret_access_key {}` fail?"
AWS_SECRET = "Zq8s9dJ2kLmN3oP4qR5sT6uV7wX8yZ9aB0cD1eF2"


def test_aws_secret_keys_go_passwords_and_pem_bodies_out_of_view_are_redacted(
    tmp_path: pathlib.Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "setup.sh").write_text(
        f"aws configure set aws_secret_access_key {AWS_SECRET}\n"
        'password := "correct horse; battery & staple"\n'
    )
    (root / "key.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n" + PEM_TAIL)
    llm = ScriptedLLM(
        [
            [
                call("Read", path="setup.sh"),
                call("Read", path="key.pem", start_line=2, limit=1),
                call("Read", path="key.pem", start_line=3, limit=1),
                call("Grep", pattern="MIIEow"),
                call("Grep", pattern="Kx3fQ0", context=1),
            ],
            *[final(status="completed", summary="setup.sh", evidence=["setup.sh:1"])] * 3,
        ]
    )
    result = outrider.SubagentLauncher(root, llm, trace_dir=tmp_path / "traces").launch(
        outrider.SubagentRequest(task=TASK_AWS.format(AWS_SECRET))
    )
    assert result.trace_path is not None
    trace = pathlib.Path(result.trace_path).read_text()
    assert "setup.sh" in trace and "key.pem" in trace
    text = f"{trace} {result!r} {json.dumps(result.to_dict())}"
    for secret in (
        AWS_SECRET,
        "horse",
        "battery",
        "bodybody",
        "MIIEowIBAAKCAQEA7",
        "Kx3fQ0nZcY8mR2l5",
    ):
        assert secret not in text, secret
