"""Your own result schema (``output_schema``) and the parent's compact envelope (#20, items 2-3).

Scripted children answer; the gate's feedback is read from the requests the child received.
"""

from __future__ import annotations

import json
import pathlib
import pickle
from typing import Any

import pydantic
import pytest

import outrider
from outrider.testing import ScriptedLLM, call, final


class Functions(pydantic.BaseModel):
    """What the child must return: the functions it found, with evidence."""

    functions: list[str]
    evidence: list[str]

    @pydantic.field_validator("functions")
    @classmethod
    def named(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one function")
        return value


SCHEMA: dict[str, Any] = {
    "title": "Routes",
    "type": "object",
    "properties": {
        "routes": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "evidence": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["routes", "evidence"],
    "additionalProperties": False,
}

READ = [call("Read", path="src/app.py")]
TASK_ARGS = {
    "description": "List functions",
    "prompt": "Which functions?",
    "subagent_type": "explore",
}


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text(
        "def main():\n    return helper()\n\ndef helper():\n    return 1\n"
    )
    return root


def answer(**fields: Any) -> str:
    return json.dumps(fields)


def users(llm: ScriptedLLM) -> list[str]:
    """The user messages of the child's last request (its task, then the gate's feedback)."""
    return [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "user"]


def launcher(repo: pathlib.Path, llm: Any, **options: Any) -> outrider.SubagentLauncher:
    return outrider.SubagentLauncher(repo, llm, trace_dir=False, **options)


# --- item 2: the schema ------------------------------------------------------------------------


def test_a_pydantic_class_is_told_checked_retried_and_returned_as_an_instance(
    repo: pathlib.Path,
) -> None:
    llm = ScriptedLLM(
        [
            READ,
            answer(functions=[], evidence=["src/app.py:1"]),  # the class's own validator refuses
            answer(functions=["main", "helper"], evidence=["src/app.py:1", "src/app.py:4"]),
        ]
    )
    request = outrider.SubagentRequest("List the functions", output_schema=Functions)
    result = launcher(repo, llm).launch(request)
    llm.assert_complete()
    assert result.status == "completed", result
    assert isinstance(result.result, Functions)
    assert result.result == Functions(
        functions=["main", "helper"], evidence=["src/app.py:1", "src/app.py:4"]
    )
    assert result.output_schema == "Functions"
    system = llm.requests[0]["messages"][0]["content"]
    assert "validates against this JSON schema (Functions)" in system
    # The class's schema, with outrider's optional `status` beside its fields (it declares
    # `evidence` itself, so that one is shared).
    told = Functions.model_json_schema()
    told["properties"]["status"] = {
        "enum": ["completed", "partial", "not_found", "failed"],
        "description": "outrider's: completed (the default), partial, not_found or failed",
    }
    assert json.dumps(told, separators=(",", ":")) in system
    assert '"unresolved_questions": []' not in system  # ExploreResult's shape is not asked for
    feedback = users(llm)[-1]
    assert feedback.startswith("Return only a valid Functions JSON object: functions: ")
    assert "name at least one function" in feedback
    with pytest.raises(outrider.ResultError):
        _ = result.explore


def test_a_json_schema_dict_is_checked_by_the_core_and_comes_back_as_a_dict(
    repo: pathlib.Path,
) -> None:
    llm = ScriptedLLM(
        [
            READ,
            "```json\n" + answer(routes="GET /", evidence=["src/app.py:1"]) + "\n```",
            answer(routes=["GET /"], evidence=["src/app.py:1"]),
        ]
    )
    profile = outrider.EXPLORE_PROFILE.replace(name="routes", output_schema=SCHEMA)
    assert profile.output_schema == SCHEMA
    result = launcher(repo, llm, profiles=[profile]).launch(
        outrider.SubagentRequest("List the routes", profile_name="routes")
    )
    assert result.status == "completed"
    assert result.result == {"routes": ["GET /"], "evidence": ["src/app.py:1"]}
    assert users(llm)[-1] == (
        'Return only a valid Routes JSON object: routes: "GET /" is not of type "array"'
    )
    back = outrider.SubagentLaunchResult.from_dict(result.to_dict())
    assert back.result == result.result and back.output_schema == "Routes"
    assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict()


def test_retries_spent_end_partial_with_the_raw_object_and_the_reason(repo: pathlib.Path) -> None:
    # #37: an answer that never fits comes back partial, as written, with the violations (it
    # used to be `failed` with no result).
    bad = answer(routes=[], evidence=["src/app.py:1"])
    llm = ScriptedLLM([READ, bad, bad])  # gate_retries=1: one correction, then the end
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=SCHEMA)
    llm.assert_complete()
    assert result.status == "partial", result
    assert result.result == {"routes": [], "evidence": ["src/app.py:1"]}
    assert result.terminal_reason == "completion_gate_blocked"
    assert result.schema_errors == ["routes: [] has less than 1 item"]
    assert result.evidence == ["src/app.py:1"]
    assert result.error is not None
    assert "[] has less than 1 item" in result.error, result.error

    more = outrider.EXPLORE_PROFILE.replace(name="patient", gate_retries=3)
    llm = ScriptedLLM([READ, bad, bad, bad, answer(routes=["GET /"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm, profiles=[more]).launch(
        outrider.SubagentRequest("x", profile_name="patient", output_schema=SCHEMA)
    )
    llm.assert_complete()
    assert result.status == "completed" and result.model_calls == 5


def test_evidence_is_still_required_and_grounded(repo: pathlib.Path) -> None:
    # Not seen in this run: unverified, never completed, the ungrounded item listed.
    unseen = answer(functions=["main"], evidence=["src/app.py:99"])
    llm = ScriptedLLM([READ, unseen, unseen])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x", output_schema=Functions))
    assert result.status == "unverified"
    assert [c["evidence"] for c in result.ungrounded_evidence] == ["src/app.py:99"]
    assert "not grounded in what you saw" in users(llm)[-1]
    assert result.error is not None and "not grounded" in result.error

    # Missing: refused even though the schema gives it a default.
    class Loose(pydantic.BaseModel):
        functions: list[str]
        evidence: list[str] = []

    llm = ScriptedLLM([READ, answer(functions=["main"]), answer(functions=["main"], evidence=[])])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x", output_schema=Loose))
    assert users(llm)[-1].startswith("Return only a valid Loose JSON object: evidence: is required")
    # Given but empty, after the retry: kept, as partial, saying why (the object is unchanged).
    assert result.status == "partial"
    assert result.result == Loose(functions=["main"], evidence=[])
    assert result.error == (
        "outrider: the answer cited no line the child saw, so it is partial, not completed"
    )


def test_a_status_field_of_the_schema_says_partial(repo: pathlib.Path) -> None:
    class Found(pydantic.BaseModel):
        status: str
        functions: list[str]
        evidence: list[str]

    llm = ScriptedLLM(
        [READ, answer(status="partial", functions=["main"], evidence=["src/app.py:1"])]
    )
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x", output_schema=Found))
    assert result.status == "partial" and isinstance(result.result, Found)


def test_bad_schemas_are_refused_naming_the_value_and_what_was_expected(repo: pathlib.Path) -> None:
    cases: list[tuple[Any, type[Exception], str]] = [
        (
            3,
            outrider.ArgumentTypeError,
            "SubagentRequest.output_schema: must be a pydantic model class or a JSON-schema dict, "
            "got int",
        ),
        (
            Functions(functions=["a"], evidence=[]),
            outrider.ArgumentTypeError,
            "SubagentRequest.output_schema: must be a pydantic model class or a JSON-schema dict "
            "(pass the class itself, not an instance of it), got Functions",
        ),
        (
            {"type": "object", "properties": {"evidence": {"type": "array"}, "n": {"type": 5}}},
            outrider.ConfigError,
            "SubagentRequest.output_schema: is not a valid JSON schema: ",
        ),
        (
            {"type": "array", "items": {}},
            outrider.ConfigError,
            "SubagentRequest.output_schema: must describe a JSON object "
            '("type": "object"), got "type": "array"',
        ),
    ]
    for value, kind, message in cases:
        with pytest.raises(kind) as info:
            outrider.SubagentRequest("x", output_schema=value)
        assert str(info.value).startswith(message), (value, str(info.value))
    with pytest.raises(outrider.ConfigError, match=r"^RuntimeProfile\.output_schema: its 'evid"):
        outrider.EXPLORE_PROFILE.replace(
            output_schema={"type": "object", "properties": {"evidence": {"type": "string"}}}
        )
    with pytest.raises(outrider.ArgumentTypeError, match=r"^TaskTool\.output_schema: must be"):
        outrider.TaskTool(launcher(repo, ScriptedLLM([])), output_schema="Functions")  # type: ignore[arg-type]
    with pytest.raises(outrider.ProfileError, match="scout_fallback cannot be used"):
        outrider.EXPLORE_PROFILE.replace(scout_fallback=True, output_schema=Functions)


def test_the_offline_scout_cannot_answer_a_schema(repo: pathlib.Path) -> None:
    offline = outrider.SubagentLauncher(repo, trace_dir=False)
    with pytest.raises(outrider.LaunchError, match=r"^output_schema: 'Functions' needs a model"):
        offline.launch(outrider.SubagentRequest("x", output_schema=Functions))


def test_the_task_tool_gives_the_parent_the_schema_object(repo: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    task = outrider.TaskTool(launcher(repo, llm), output_schema=Functions)
    assert task.output_schema is Functions
    assert "It returns one JSON object of the 'Functions' schema" in task.description
    envelope = task.run(TASK_ARGS)
    assert envelope["status"] == "success"
    assert envelope["data"]["result"] == {"functions": ["main"], "evidence": ["src/app.py:1"]}
    assert envelope["data"]["output_schema"] == "Functions"
    assert envelope["data"]["evidence"] == ["src/app.py:1"]
    assert envelope["text"] == '{"functions":["main"],"evidence":["src/app.py:1"]}'


# --- item 3: the envelope ----------------------------------------------------------------------


def long_answer() -> str:
    return final(
        status="completed",
        summary="main() calls helper(), which returns 1.",
        findings=["main at src/app.py:1", "helper at src/app.py:4"],
        evidence=["src/app.py:1", "src/app.py:4"],
    )


def test_the_parent_gets_compact_json_without_echo_by_default(repo: pathlib.Path) -> None:
    args = dict(TASK_ARGS, prompt="Which functions are there? " * 30)
    compact = outrider.TaskTool(launcher(repo, ScriptedLLM([READ, long_answer()])))
    assert compact.reference_format is False
    text = compact.run_json(args)
    envelope = json.loads(text)
    assert list(envelope) == ["status", "data", "text", "stats"]
    assert envelope["text"] == "main() calls helper(), which returns 1."
    assert "summary" not in envelope["data"]["result"]  # it is `text`, not repeated
    assert "\n" not in text and "Which functions" not in text

    reference = outrider.TaskTool(
        launcher(repo, ScriptedLLM([READ, long_answer()])), reference_format=True
    )
    assert reference.reference_format is True
    assert "reference_format=True" in repr(reference)
    full = reference.run_json(args)
    assert full.startswith('{\n  "status": "success",\n  "data": {')
    assert json.loads(full)["context"]["params_input"] == args
    result_json = json.dumps(json.loads(full)["data"]["result"], separators=(",", ":"))
    # The compact envelope is a fraction of the reference one: the result plus a fixed part
    # (ids and stats, about 270 characters), whatever the prompt's length.
    assert len(text) * 3 < len(full), (len(text), len(full))
    assert len(text) - len(result_json) < 300, (len(text), len(result_json))


def test_bad_arguments_are_compact_too(repo: pathlib.Path) -> None:
    task = outrider.TaskTool(launcher(repo, ScriptedLLM([])))
    bad = task.run({"description": "d", "prompt": "p" * 5000})
    assert bad == {
        "status": "error",
        "data": {},
        "text": "Parameter 'subagent_type' must be 'explore'.",
        "stats": {"time_ms": 0},
        "error": {
            "code": "INVALID_PARAM",
            "message": "Parameter 'subagent_type' must be 'explore'.",
        },
    }
    with pytest.raises(outrider.ArgumentTypeError, match="reference_format: must be bool, got str"):
        outrider.TaskTool(launcher(repo, ScriptedLLM([])), reference_format="yes")  # type: ignore[arg-type]


def test_a_long_summary_is_cut_to_the_profile_cap_saying_so(repo: pathlib.Path) -> None:
    summary = "main() calls helper(); " * 40
    llm = ScriptedLLM([READ, final(status="completed", summary=summary, evidence=["src/app.py:1"])])
    capped = outrider.EXPLORE_PROFILE.replace(max_summary_chars=200)
    assert capped.max_summary_chars == 200
    task = outrider.TaskTool(launcher(repo, llm, profiles=[capped]))
    envelope = task.run(TASK_ARGS)
    text = envelope["text"]
    assert len(text) <= 200
    assert text.startswith("main() calls helper(); main()")
    assert text.endswith("characters shown]") and "max_summary_chars=200" in text
    assert f"of {len(summary.strip())} characters" in text
    assert "Keep the summary to at most 200 characters" in llm.requests[0]["messages"][0]["content"]
    with pytest.raises(outrider.ProfileError, match="max_summary_chars must be None or between"):
        outrider.EXPLORE_PROFILE.replace(max_summary_chars=10)


def test_views_show_the_answer_and_profiles_keep_the_schema_as_data(repo: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Functions)
    markdown = result._repr_markdown_()
    assert "**Functions:**" in markdown and '"functions": [\n    "main"\n  ]' in markdown
    assert "Functions:" in result._repr_html_()
    profile = outrider.EXPLORE_PROFILE.replace(name="fn", output_schema=Functions)
    assert profile.output_schema is Functions
    assert profile == outrider.EXPLORE_PROFILE.replace(name="fn", output_schema=Functions)
    assert hash(profile) == hash(
        outrider.EXPLORE_PROFILE.replace(name="fn", output_schema=Functions)
    )
    assert profile != outrider.EXPLORE_PROFILE.replace(name="fn", output_schema=SCHEMA)
    assert outrider.SubagentRequest("x", output_schema=Functions) == outrider.SubagentRequest(
        "x", output_schema=Functions
    )
    assert "output_schema='Functions'" in repr(profile)
    data = profile.to_dict()
    assert data["output_schema"] == Functions.model_json_schema()
    rebuilt = outrider.RuntimeProfile.from_dict(data)
    assert rebuilt.output_schema == Functions.model_json_schema()
    assert pickle.loads(pickle.dumps(profile)).output_schema == Functions.model_json_schema()
    assert profile.replace(output_schema=None).output_schema is None


def test_a_schema_child_gets_the_repo_map_hint_and_reads_a_lead(repo: pathlib.Path) -> None:
    # The scout answers ExploreResult whatever shape the child returns: its places are leads
    # for a schema child too, and the child reads one before it cites it.
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(
        outrider.SubagentRequest("Where is the `main` function defined?"), output_schema=Functions
    )
    assert "Leads (an offline search of the code index" in users(llm)[0]
    assert "1. src/app.py:1-2 (function `main`)" in users(llm)[0]
    assert (result.status, result.model_calls) == ("completed", 2)
    assert isinstance(result.result, Functions) and result.result.functions == ["main"]


def test_output_validates_a_result_held_as_data_into_the_class(repo: pathlib.Path) -> None:
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(
        outrider.SubagentRequest("Which functions?"), output_schema=Functions
    )
    again = outrider.SubagentLaunchResult.from_dict(result.to_dict())
    assert isinstance(again.result, dict)
    assert again.output(Functions) == Functions(functions=["main"], evidence=["src/app.py:1"])
    assert pickle.loads(pickle.dumps(result)).output(Functions).functions == ["main"]
    # A JSON-schema child's dict validates into a class too, or says why not.
    llm = ScriptedLLM([READ, answer(routes=["/"], evidence=["src/app.py:1"])])
    routed = launcher(repo, llm).launch(outrider.SubagentRequest("Routes?"), output_schema=SCHEMA)
    with pytest.raises(
        outrider.ResultError, match=r"(?s)does not validate as Functions: .*functions"
    ):
        routed.output(Functions)
