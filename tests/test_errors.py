"""Every error outrider raises is an OutriderError (with the natural builtin base as well), and
names the bad value and what was expected."""

from __future__ import annotations

import inspect
import pathlib
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from loopback import answering

import outrider
from outrider import (
    ArgumentTypeError,
    ConfigError,
    ContractError,
    LaunchError,
    ModelError,
    OutriderError,
    PathError,
    ProfileError,
    TraceDirError,
)
from outrider.testing import ScriptedLLM, final
from outrider.testing import call as tool_call

FINAL = '{"status": "completed", "summary": "s", "evidence": []}'
LOCAL = "http://127.0.0.1:9/v1"  # a server on this machine may take no key
# A value of the wrong type or an unknown name, typed as Any so each case needs no ignore comment.
BAD: Any = "root"
NUMBER: Any = 1


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


def cases(repo: pathlib.Path) -> list[tuple[Callable[[], Any], type[Exception], str]]:
    launcher = outrider.SubagentLauncher(repo, ScriptedLLM([FINAL]), trace_dir=False)
    return [
        # profiles
        (lambda: outrider.EXPLORE_PROFILE.replace(max_steps=0), ProfileError, "budgets must be"),
        (lambda: outrider.EXPLORE_PROFILE.replace(max_steps="3"), ArgumentTypeError, "max_steps"),
        (lambda: outrider.EXPLORE_PROFILE.replace(nope=1), ArgumentTypeError, "has no option"),
        (lambda: outrider.RuntimeProfile.from_dict(BAD), ArgumentTypeError, "must be a dict"),
        # contracts
        (lambda: outrider.ExploreResult.from_json("{}"), ContractError, "status is missing"),
        (lambda: outrider.ExploreResult.from_json(3), ArgumentTypeError, "str or bytes"),  # type: ignore[arg-type]
        (
            lambda: outrider.ExploreResult.from_json(FINAL, tool_usage={"Read": -1}),
            ConfigError,
            ">= 0",
        ),
        # requests and launches
        (
            lambda: outrider.SubagentRequest(profile_name="explore"),  # type: ignore[call-arg]
            ArgumentTypeError,
            "task: missing",
        ),
        (lambda: outrider.SubagentRequest(task=" "), ConfigError, "non-empty"),
        (lambda: outrider.SubagentRequest(task="t", model_choice="big"), LaunchError, "'light'"),
        (
            lambda: outrider.SubagentRequest(task="t", structured_context=[1]),  # type: ignore[arg-type]
            ArgumentTypeError,
            "must be a dict, got list",
        ),
        (
            lambda: launcher.launch(outrider.SubagentRequest("t", "nope")),
            LaunchError,
            "registered profiles: 'explore', 'verification'",
        ),
        (lambda: launcher.launch("t"), ArgumentTypeError, "SubagentRequest"),  # type: ignore[arg-type]
        (lambda: launcher.launch_many([], max_concurrency=0), ConfigError, "at least 1"),
        (lambda: launcher.verify(" "), ConfigError, "candidate"),
        (lambda: launcher.verify("x", requirements=[1]), ArgumentTypeError, "requirements"),  # type: ignore[arg-type]
        # launcher construction
        (lambda: outrider.SubagentLauncher(repo / "missing"), PathError, "missing"),
        (lambda: outrider.SubagentLauncher(42), ArgumentTypeError, "project_root"),  # type: ignore[arg-type]
        (lambda: outrider.SubagentLauncher(repo, 42), ArgumentTypeError, "main_llm"),  # type: ignore[arg-type]
        (
            lambda: outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=repo / "t"),
            TraceDirError,
            "inside the explored root",
        ),
        (
            lambda: outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=3),  # type: ignore[arg-type]
            ArgumentTypeError,
            "trace_dir",
        ),
        (
            lambda: outrider.SubagentLauncher(
                repo, ScriptedLLM([]), trace_dir=False, parent_trace=repo / "p.jsonl"
            ),
            ConfigError,
            "parent_trace",
        ),
        (
            lambda: outrider.SubagentLauncher(repo, ScriptedLLM([]), profiles=[1]),  # type: ignore[list-item]
            ArgumentTypeError,
            "RuntimeProfile",
        ),
        (
            lambda: outrider.SubagentLauncher(
                repo, ScriptedLLM([]), profiles={"x": outrider.EXPLORE_PROFILE.replace(name="deep")}
            ),
            ConfigError,
            "key 'x' names a profile called 'deep'",
        ),
        (
            lambda: outrider.SubagentLauncher(
                repo, ScriptedLLM([]), profiles=[outrider.EXPLORE_PROFILE] * 2
            ),
            ConfigError,
            "'explore' is given twice",
        ),
        (
            lambda: outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=""),
            TraceDirError,
            "the path is empty",
        ),
        (lambda: outrider.SubagentRequest("t", ""), ConfigError, "profile_name"),
        (
            lambda: launcher.verify("x", requirements={"todos": "abc"}),
            ArgumentTypeError,
            "requirements['todos']",
        ),
        (
            lambda: launcher.verify("x", requirements={"requires_verification": "no"}),
            ArgumentTypeError,
            "requirements['requires_verification']: must be a bool",
        ),
        (
            # A misspelt key used to be ignored: a child was launched instead of the PASS asked for.
            lambda: launcher.verify("x", requirements={"require_verification": False}),
            ConfigError,
            "requirements['require_verification']: unknown requirement key; the known keys are "
            "'todos', 'requires_verification', 'criteria', 'verification_kinds', "
            "'allow_unverified', 'has_incomplete_todos', 'incomplete_todos', "
            "'explicit_user_constraints'",
        ),
        (lambda: outrider.run_tool(repo, "Grep", {}, timeout=1e300), ConfigError, "timeout"),
        (
            lambda: outrider.run_tool(repo, "Grep", {}, runtime_mode=NUMBER),
            ArgumentTypeError,
            "runtime_mode",
        ),
        (lambda: outrider.tool_schemas(None, names=3), ArgumentTypeError, "names"),  # type: ignore[arg-type]
        (lambda: outrider.OpenAICompatible(None), ArgumentTypeError, "model"),  # type: ignore[arg-type]
        (lambda: outrider.OfflineScout.terms(None), ArgumentTypeError, "task"),  # type: ignore[arg-type]
        (
            lambda: outrider.EXPLORE_PROFILE.replace(timeout_seconds=1e300),
            ProfileError,
            "at most 31536000 seconds",
        ),
        # task tool and main agent
        (lambda: outrider.TaskTool(3), ArgumentTypeError, "TaskTool launcher"),  # type: ignore[arg-type]
        (lambda: outrider.TaskTool(launcher, subagent_types=[]), ConfigError, "subagent_types"),
        (
            lambda: outrider.TaskTool(launcher, subagent_types=["deep"]),
            ConfigError,
            "not registered",
        ),
        (lambda: outrider.MainAgent(repo, ScriptedLLM([]), max_steps=0), ProfileError, "budgets"),
        (
            lambda: outrider.MainAgent(repo, ScriptedLLM([]), max_steps=BAD),
            ArgumentTypeError,
            "max_steps",
        ),
        (lambda: outrider.MainAgent(repo, ScriptedLLM([])).run(" "), ConfigError, "task"),
        # the HTTP client
        (lambda: outrider.OpenAICompatible("m", "ftp://x"), ConfigError, "base_url"),
        (lambda: outrider.OpenAICompatible("m", max_retries=11), ConfigError, "max_retries"),
        (lambda: outrider.OpenAICompatible("m", timeout=0), ConfigError, "timeout"),
        (lambda: outrider.OpenAICompatible("m", LOCAL)([]), ArgumentTypeError, "request"),  # type: ignore[arg-type]
        # tools
        (lambda: outrider.run_tool(repo, "Read", runtime_mode=BAD), ConfigError, "runtime_mode"),
        (lambda: outrider.run_tool(repo, 3), ArgumentTypeError, "name"),  # type: ignore[arg-type]
        (lambda: outrider.tool_schemas("xml"), ConfigError, "format"),  # type: ignore[arg-type]
        (lambda: outrider.check_evidence(repo, [1]), ArgumentTypeError, "evidence item"),  # type: ignore[list-item]
    ]


def test_every_error_path_raises_an_outrider_error(repo: pathlib.Path) -> None:
    for i, (call, kind, words) in enumerate(cases(repo)):
        with pytest.raises(OutriderError) as info:
            call()
        assert isinstance(info.value, kind), (i, type(info.value), info.value)
        assert words in str(info.value), (i, str(info.value))


def test_builtin_bases_are_the_natural_ones() -> None:
    for cls in (ConfigError, ContractError, LaunchError, PathError, ProfileError, TraceDirError):
        assert issubclass(cls, ValueError) and issubclass(cls, OutriderError)
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ModelError, RuntimeError)
    assert issubclass(outrider.InternalError, RuntimeError)


def test_a_model_error_carries_its_kind_and_pickles() -> None:
    # Port 9 on loopback refuses at once: a connection error, not retried forever.
    client = outrider.OpenAICompatible("m", "http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(ModelError) as info:
        client({"messages": [{"role": "user", "content": "hi"}]})
    assert info.value.kind == "connection"
    again = pickle.loads(pickle.dumps(info.value))
    assert (type(again), str(again), again.kind) == (ModelError, str(info.value), "connection")


def test_reprs_are_python_style(repo: pathlib.Path) -> None:
    r = outrider.SubagentRequest(task="t")
    assert repr(r) == "SubagentRequest(profile_name='explore', task='t', model_choice=None)"
    # An honest child: it Reads the line it cites before a completed answer.
    read = [tool_call("Read", path="a.py")]
    answer = final(status="completed", summary="s", evidence=["a.py:1"])
    launcher = outrider.SubagentLauncher(repo, ScriptedLLM([read, answer]), trace_dir=False)
    result = launcher.launch(r)
    text = repr(result)
    assert text.startswith("SubagentLaunchResult(status='completed', profile_name='explore',")
    assert "Some(" not in text and '"' not in text
    assert "Some(" not in repr(launcher) and repr(launcher).endswith("max_concurrency=8)")
    assert repr(outrider.TaskTool(launcher)) == "TaskTool(subagent_types=['explore'])"


def test_a_short_key_does_not_mangle_error_messages() -> None:
    with answering(401, {"error": {"message": "bad key for model m"}}) as url:
        client = outrider.OpenAICompatible("m", url, "k", max_retries=0)
        with pytest.raises(ModelError) as info:
            client({"messages": [{"role": "user", "content": "hi"}]})
        assert str(info.value).endswith(
            "HTTP 401: bad key for model m; check the API key and that it may use model 'm'"
        ), str(info.value)
        assert "REDACTED" not in str(info.value)


def test_a_call_of_the_wrong_shape_is_an_argument_type_error(repo: pathlib.Path) -> None:
    """Too few, too many, repeated or unknown arguments to a native entry point: the binding
    (src/py/args.rs) names the entry point and the argument, as an ArgumentTypeError (a
    TypeError)."""
    o: Any = outrider
    launcher = o.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=False)
    calls: list[tuple[Callable[[], object], str]] = [
        (
            lambda: o.SubagentLauncher(),
            "SubagentLauncher: missing required argument 'project_root'",
        ),
        (
            lambda: o.SubagentLauncher(repo, None, None, False),
            "SubagentLauncher: takes at most 3 positional arguments (4 given)",
        ),
        (
            lambda: o.SubagentLauncher(repo, project_root=repo),
            "SubagentLauncher: got multiple values for argument 'project_root'",
        ),
        (lambda: o.SubagentLauncher(repo, tracedir=False), "has no option 'tracedir'; options are"),
        (lambda: o.MainAgent(repo), "MainAgent: missing required argument 'llm'"),
        (lambda: o.OpenAICompatible(), "OpenAICompatible: missing required argument 'model'"),
        (lambda: o.OpenAICompatible("m", nope=1), "OpenAICompatible: has no option 'nope'"),
        (lambda: o.OpenAICompatible.from_env("A", "B"), "from_env: takes at most 1 positional"),
        (lambda: o.run_tool(repo), "run_tool: missing required argument 'name'"),
        (lambda: o.run_tool(repo, "Read", {}, "x"), "run_tool: takes at most 3 positional"),
        (lambda: o.tool_schemas(fmt="openai"), "tool_schemas: has no option 'fmt'"),
        (lambda: o.TaskTool(), "TaskTool: missing required argument 'launcher'"),
        (
            lambda: o.TaskTool(launcher, ["explore"]),
            "TaskTool: takes at most 1 positional argument (2 given)",
        ),
        (lambda: o.OfflineScout("x"), "OfflineScout: takes at most 0 positional arguments"),
        (lambda: o.check_evidence(repo), "check_evidence: missing required argument 'evidence'"),
        (
            lambda: launcher.verify(),
            "SubagentLauncher.verify: missing required argument 'candidate'",
        ),
        (lambda: o.ExploreResult.from_json("{}", extra=1), "from_json: has no option 'extra'"),
    ]
    for call, words in calls:
        with pytest.raises(ArgumentTypeError) as info:
            call()
        assert isinstance(info.value, TypeError)
        assert words in str(info.value), (words, str(info.value))


def test_each_native_entry_point_binds_the_signature_it_shows(repo: pathlib.Path) -> None:
    """The parameters the binding applies (src/py/args.rs) are the ones `inspect.signature` and
    the stub show: the same names in the same order, as many by position, the required first."""
    o: Any = outrider
    launcher = o.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=False)
    entry_points = [o.SubagentLauncher, o.MainAgent, o.TaskTool, o.OpenAICompatible]
    entry_points += [o.OpenAICompatible.from_env, o.SubagentRequest, o.RuntimeProfile]
    entry_points += [o.ExploreResult, o.VerificationResult, o.run_tool, o.tool_schemas]
    entry_points += [o.check_evidence, launcher.verify, o.OfflineScout]
    for f in entry_points:
        params = list(inspect.signature(f).parameters.values())
        names = [p.name for p in params]
        by_position = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        required = [p.name for p in params if p.default is p.empty]
        with pytest.raises(ArgumentTypeError) as info:
            f(not_a_parameter=1)
        assert str(info.value).endswith("options are: " + ", ".join(names)), (f, names)
        with pytest.raises(ArgumentTypeError) as info:
            f(*[None] * (len(by_position) + 1))
        assert f"takes at most {len(by_position)} positional" in str(info.value), f
        if required:
            with pytest.raises(TypeError) as err:
                f()
            assert repr(required[0]) in str(err.value) or f".{required[0]}:" in str(err.value)
    for cls in (o.ExploreResult, o.VerificationResult):
        for parse in (cls.from_json, cls.repair):
            params = list(inspect.signature(parse).parameters.values())
            keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
            with pytest.raises(ArgumentTypeError) as info:
                parse("{}", not_a_parameter=1)
            assert str(info.value).endswith("options are: " + ", ".join(keywords)), parse


def test_list_options_take_dict_views_and_generators_but_not_endless_ones(
    repo: pathlib.Path,
) -> None:
    types = {"explore": 1}
    launcher = outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=False)
    tool = outrider.TaskTool(launcher, subagent_types=types.keys())
    assert tool.subagent_types == ["explore"]
    profile = outrider.EXPLORE_PROFILE.replace(tool_allowlist=(t for t in ["Read", "Grep"]))
    assert profile.tool_allowlist == frozenset({"Read", "Grep"})
    names = [s["function"]["name"] for s in outrider.tool_schemas(names={"Read": 0}.keys())]
    assert names == ["Read"]
    import itertools

    with pytest.raises(ConfigError, match=r"has more than 1048576 items"):
        outrider.tool_schemas(names=(str(i) for i in itertools.count()))


def test_a_value_that_contains_itself_is_refused_not_followed() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(
        ConfigError, match=r"nested more than 256 levels deep \(or contains itself\)"
    ):
        outrider.SubagentRequest("t", structured_context={"loop": loop})


def test_a_path_object_is_a_path_where_one_is_expected_and_nothing_else(
    repo: pathlib.Path,
) -> None:
    launcher = outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=repo.parent / "t")
    assert isinstance(launcher, outrider.SubagentLauncher)
    with pytest.raises(ArgumentTypeError, match="name: must be str, got PosixPath"):
        outrider.run_tool(repo, pathlib.Path("Read"))  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="JSON values only"):
        outrider.SubagentRequest("t", structured_context={"p": pathlib.Path("x")})
