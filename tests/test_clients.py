"""The model a user already holds (#37.1), no silent fallback to the offline scout (#37.2) and a
missing key named before any request (#37.3): through the real ``openai`` and ``anthropic`` SDK
objects, each pointed at a loopback server this test starts (no network)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
from typing import Any

import anthropic
import openai
import pytest
from loopback import Scripted, scripted

import outrider
from outrider import cli
from outrider.testing import ScriptedLLM, call, final

ANSWER = final(
    status="completed",
    summary="main is defined in app.py",
    findings=["main() returns 1"],
    evidence=["app.py:1"],
)
TASK = "Where is the entry point?"
PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)


def openai_turns() -> list[dict[str, Any]]:
    def answer(message: dict[str, Any], finish: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    grep = {
        "id": "call_grep",
        "type": "function",
        "function": {"name": "Read", "arguments": json.dumps({"path": "app.py"})},
    }
    return [
        answer({"role": "assistant", "content": None, "tool_calls": [grep]}, "tool_calls"),
        answer({"role": "assistant", "content": ANSWER}, "stop"),
    ]


def anthropic_turns() -> list[dict[str, Any]]:
    def answer(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10},
        }

    grep = {"type": "tool_use", "id": "toolu_grep", "name": "Read", "input": {"path": "app.py"}}
    return [answer([grep], "tool_use"), answer([{"type": "text", "text": ANSWER}], "end_turn")]


def launch(launcher: outrider.SubagentLauncher, *, is_async: bool) -> outrider.SubagentLaunchResult:
    request = outrider.SubagentRequest(task=TASK)
    if is_async:
        return asyncio.run(launcher.launch_async(request))
    return launcher.launch(request)


def check(result: outrider.SubagentLaunchResult, server: Scripted, model: str) -> None:
    assert (result.status, result.error) == ("completed", None)
    assert result.explore.evidence == ("app.py:1",)
    assert result.model_name == model
    assert [body["model"] for body in server.bodies] == [model, model]


# --- 1. the SDK client a user already holds ---------------------------------------------------


@pytest.mark.parametrize("is_async", [False, True], ids=["OpenAI", "AsyncOpenAI"])
@pytest.mark.parametrize("bound", [False, True], ids=["client", "create"])
def test_an_openai_client_or_its_create_is_the_model(
    repo: pathlib.Path, is_async: bool, bound: bool
) -> None:
    with scripted(openai_turns()) as server:
        cls = openai.AsyncOpenAI if is_async else openai.OpenAI
        client = cls(base_url=f"{server.base}/v1", api_key="sk-test", max_retries=0)
        model: Any = client.chat.completions.create if bound else client
        launcher = outrider.SubagentLauncher(repo, model, main_model="gpt-test", trace_dir=False)
        check(launch(launcher, is_async=is_async), server, "gpt-test")
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"
    assert server.requests[0]["path"] == "/v1/chat/completions"


@pytest.mark.parametrize("is_async", [False, True], ids=["Anthropic", "AsyncAnthropic"])
@pytest.mark.parametrize("bound", [False, True], ids=["client", "create"])
def test_an_anthropic_client_or_its_create_is_the_model(
    repo: pathlib.Path, is_async: bool, bound: bool
) -> None:
    with scripted(anthropic_turns()) as server:
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        client = cls(base_url=server.base, api_key="sk-ant-test", max_retries=0)
        model: Any = client.messages.create if bound else client
        # The light route's client, named by light_model (the explore profile's route).
        launcher = outrider.SubagentLauncher(
            repo, outrider.OfflineScout(), model, light_model="claude-test", trace_dir=False
        )
        check(launch(launcher, is_async=is_async), server, "claude-test")
    assert server.requests[0]["path"] == "/v1/messages"
    assert server.bodies[0]["max_tokens"] > 0


def test_a_client_without_a_model_name_says_which_argument_names_it(repo: pathlib.Path) -> None:
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    with pytest.raises(
        outrider.ConfigError,
        match=r"main_llm: the openai client openai\.OpenAI "
        r"needs the name of the model to call: pass main_model='\.\.\.'",
    ):
        outrider.SubagentLauncher(repo, client, trace_dir=False)
    with pytest.raises(
        outrider.ConfigError,
        match=r"light_llm: anthropic's messages\.create .* "
        r"pass light_model=",
    ):
        light = anthropic.Anthropic(api_key="k").messages.create
        outrider.SubagentLauncher(repo, client, light, main_model="gpt-test", trace_dir=False)
    with pytest.raises(outrider.ConfigError, match=r"llm: .* pass model='\.\.\.'"):
        outrider.MainAgent(repo, client, trace_dir=False)
    # An object of the SDK that is no client and no create is refused as such, not as a model.
    with pytest.raises(
        outrider.ArgumentTypeError,
        match=r"main_llm: must be a model callable, "
        r"a client of the openai SDK or its chat\.completions\.create, got ",
    ):
        outrider.SubagentLauncher(repo, client.chat.completions, main_model="m", trace_dir=False)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_provider_model_string_reads_the_providers_variables(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    turns = openai_turns() if provider == "openai" else anthropic_turns()
    with scripted(turns) as server:
        if provider == "openai":
            monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
            monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base}/v1")
        else:
            monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base)
        launcher = outrider.SubagentLauncher(repo, f"{provider}:my-model", trace_dir=False)
        check(launch(launcher, is_async=False), server, "my-model")
    headers = server.requests[0]["headers"]
    assert "sk-from-env" in headers.get("authorization", "") + headers.get("x-api-key", "")


def test_a_model_string_that_cannot_be_used_is_refused_by_name(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(spec: str, **kwargs: Any) -> str:
        with pytest.raises(outrider.ConfigError) as info:
            outrider.SubagentLauncher(repo, spec, trace_dir=False, **kwargs)
        return str(info.value)

    assert refused("groq:llama-3") == (
        "main_llm: 'groq:llama-3' names the provider 'groq', which outrider does not know; the "
        "known providers are 'openai', 'anthropic', 'litellm' (any other model: a callable, or "
        "outrider.OpenAICompatible for an OpenAI-compatible server)"
    )
    assert refused("gpt-4.1").startswith(
        "main_llm: 'gpt-4.1' is not a 'provider:model' string such as 'openai:gpt-4.1'"
    )
    assert refused("anthropic:claude-haiku-4-5").startswith(
        "main_llm 'anthropic:claude-haiku-4-5': ANTHROPIC_API_KEY is not set"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert refused("openai:gpt-4.1", main_model="gpt-4o") == (
        "main_llm: 'openai:gpt-4.1' names the model 'gpt-4.1' and main_model names 'gpt-4o'; "
        "name it once (drop main_model, or give main_llm a client)"
    )
    assert outrider.adapters.from_string("openai:gpt-4.1").__qualname__ == (
        "adapters.openai('gpt-4.1')"
    )


# --- 2. no silent fallback to the scout -------------------------------------------------------


def test_from_env_refuses_an_unset_model_and_names_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(outrider.ConfigError) as info:
        outrider.OpenAICompatible.from_env()
    assert str(info.value).startswith(
        "LLM_MODEL_ID: not set, so no model is configured; set LLM_MODEL_ID to the name of the "
        "model to call (with LLM_API_KEY, and LLM_BASE_URL for a provider other than OpenAI)"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    with pytest.raises(
        outrider.ConfigError,
        match="OPENAI_API_KEY is set, but outrider reads "
        "LLM_\\*: set LLM_API_KEY to it, or in Python pass the model as "
        "'openai:MODEL'",
    ):
        outrider.OpenAICompatible.from_env()
    # The explicit variant for "use it if it is there".
    assert outrider.OpenAICompatible.from_env(required=False) is None
    assert outrider.OpenAICompatible.from_env("LIGHT_LLM", required=False) is None


def test_a_key_or_base_url_without_a_model_id_is_an_error_not_the_scout(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    message = re.escape(
        "LLM_MODEL_ID: not set, but LLM_BASE_URL is set (in the environment), so a model was "
        "meant to be used; set LLM_MODEL_ID"
    )
    with pytest.raises(outrider.ConfigError, match=message):
        outrider.SubagentLauncher(repo, trace_dir=False)
    with pytest.raises(outrider.ConfigError, match=message):
        outrider.OpenAICompatible.from_env(required=False)
    monkeypatch.delenv("LLM_BASE_URL")
    # Nothing at all configured: the scout, as documented.
    assert (
        outrider.SubagentLauncher(repo, trace_dir=False)
        .launch(outrider.SubagentRequest(TASK))
        .model_used
        == "offline"
    )


def test_cli_model_route_without_a_model_exits_2_naming_the_variable(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    for route in ("main", "light"):
        code = cli.main(["explore", TASK, "--root", str(repo), "--model", route, "--trace-dir", ""])
        out, err = capsys.readouterr()
        assert code == 2, out
        assert err.startswith("outrider: LLM_MODEL_ID: not set, so no model is configured"), err
        assert "OPENAI_API_KEY is set" in err
    # Asked for, or nothing asked at all: the scout, saying so.
    for argv in (["--model", "offline"], []):
        code = cli.main(["explore", TASK, "--root", str(repo), *argv])
        out, _ = capsys.readouterr()
        assert code == 0 and "offline scout" in out, out


def test_a_batch_with_a_key_but_no_model_id_is_an_error_not_the_scout(
    repo: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from outrider.batch import BackendSpec

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"question": TASK, "root": str(repo)}) + "\n")
    for name in ("LLM_API_KEY", "LLM_BASE_URL"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/v1" if name.endswith("URL") else "k-1")
        with pytest.raises(outrider.ConfigError, match=f"LLM_MODEL_ID: not set, but {name} is set"):
            outrider.explore_many(str(tasks), sink=None)
        code = cli.main(["batch", str(tasks), "--out", str(tmp_path / f"out-{name}")])
        _, err = capsys.readouterr()
        assert code == 2 and f"LLM_MODEL_ID: not set, but {name} is set" in err, err
        assert not (tmp_path / f"out-{name}" / "manifest.jsonl").exists()
        monkeypatch.delenv(name)
    # With a model id, the same variables explore reads: timeout, retries, temperature.
    monkeypatch.setenv("LLM_MODEL_ID", "m")
    monkeypatch.setenv("LLM_TIMEOUT", "7.5")
    monkeypatch.setenv("LLM_MAX_RETRIES", "1")
    spec = BackendSpec.from_env()
    assert spec is not None and dict(spec.settings) == {"timeout": 7.5, "max_retries": 1}
    monkeypatch.setenv("LLM_MAX_RETRIES", "lots")
    with pytest.raises(
        outrider.ConfigError, match="LLM_MAX_RETRIES: must be an integer, got 'lots'"
    ):
        BackendSpec.from_env()


# --- 3. a missing key is named before any request ---------------------------------------------


def test_a_missing_key_for_a_remote_server_is_named_before_sending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLM_MODEL_ID", "gpt-4.1-mini")
    with pytest.raises(outrider.ConfigError) as info:
        outrider.OpenAICompatible.from_env()
    assert str(info.value) == (
        "LLM settings: LLM_API_KEY is not set, and the server at https://api.openai.com/v1 is "
        "not on this machine, so every request would be refused (HTTP 401); set LLM_API_KEY to "
        "the provider's key (for a server that takes none, to any value, such as none)"
    )
    monkeypatch.setenv("LIGHT_LLM_MODEL_ID", "small")
    monkeypatch.setenv("LIGHT_LLM_BASE_URL", "https://gateway.example/v1")
    monkeypatch.setenv("LLM_API_KEY", "sk-main-key-123456")
    with pytest.raises(
        outrider.ConfigError,
        match=r"LIGHT_LLM settings: LIGHT_LLM_API_KEY is not set \(nor LLM_API_KEY for the "
        r"same base URL\), and the server at https://gateway\.example/v1 is not",
    ):
        outrider.OpenAICompatible.from_env("LIGHT_LLM")
    with pytest.raises(outrider.ConfigError, match="OpenAICompatible: api_key is not given"):
        outrider.OpenAICompatible("m", "https://api.example.com/v1")


@pytest.mark.parametrize(
    ("base_url", "options"),
    [
        ("http://127.0.0.1:9/v1", {}),
        ("http://localhost:9/v1", {}),
        ("http://[::1]:9/v1", {}),
        ("http://192.168.1.20:8000/v1", {}),
        ("https://gateway.example/v1", {"headers": {"api-key": "azure-key-1234"}}),
        ("https://gateway.example/v1?api-key=azure-key-1234", {}),
    ],
)
def test_servers_that_need_no_key_or_carry_one_elsewhere_are_taken(
    base_url: str, options: dict[str, Any]
) -> None:
    assert outrider.OpenAICompatible("m", base_url, **options).model == "m"


def test_a_model_named_for_a_route_only_the_scout_would_serve_is_refused(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OPENAI_API_KEY is the SDK's, not outrider's: naming a model does not make one.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000000000")
    served = "route would be served by the offline scout, which calls no model"
    with pytest.raises(
        outrider.ConfigError, match=f"main_model: names the model 'gpt-4.1', but the main {served}"
    ):
        outrider.SubagentLauncher(repo, None, main_model="gpt-4.1")
    with pytest.raises(
        outrider.ConfigError, match=f"light_model: names the model 'mini', but the light {served}"
    ):
        outrider.SubagentLauncher(repo, None, light_model="mini")
    with pytest.raises(outrider.ConfigError, match="main_model: names the model 'gpt-4.1'"):
        outrider.SubagentLauncher(repo, outrider.OfflineScout(), main_model="gpt-4.1")
    # A light model alone: light requests run on it, a main request is refused, not scouted.
    answer = {"status": "completed", "summary": "main is in app.py", "evidence": ["app.py:1"]}
    light = ScriptedLLM([[call("Read", path="app.py")], final(**answer)])
    launcher = outrider.SubagentLauncher(repo, light_llm=light)
    with pytest.raises(outrider.LaunchError, match="the main route has no model"):
        launcher.launch(outrider.SubagentRequest("Where is main?", model_choice="main"))
    done = launcher.launch(outrider.SubagentRequest("Where is main?"))
    assert (done.status, light.calls) == ("completed", 2)
    # Nothing asked for at all: the scout, as documented.
    scouted = outrider.SubagentLauncher(repo).launch(outrider.SubagentRequest("Where is main?"))
    assert scouted.model_name == "offline scout (no LLM)"
