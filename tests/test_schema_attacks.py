"""``output_schema`` under attack and in a new user's hands (#36 "output_schema", #37 item 4).

Each case goes through the real path: a scripted Python callable model (``ScriptedLLM``) or the
built-in HTTP client on a loopback server, the gate's own thread, the launch result and the
Task envelope. Every test here failed before its fix.
"""

from __future__ import annotations

import json
import pathlib
import threading
import time
from typing import ClassVar

import pydantic
import pytest
from loopback import completion, scripted
from test_schema import answer, launcher, users  # the schema tests' helpers, same tree

import outrider
from outrider.testing import ScriptedLLM, call

READ = [call("Read", path="src/app.py")]
TASK_ARGS = {
    "description": "Find it",
    "prompt": "What does main return?",
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


class Brief(pydantic.BaseModel):
    """A user's own type: no evidence, no status, nothing else allowed."""

    model_config = pydantic.ConfigDict(extra="forbid")
    answer: str
    functions: list[str]


# --- #37 item 4: any schema, evidence kept beside it -------------------------------------------


def test_a_model_without_evidence_is_taken_and_the_evidence_kept_beside_it(
    repo: pathlib.Path,
) -> None:
    llm = ScriptedLLM(
        [READ, answer(answer="1", functions=["main", "helper"], evidence=["src/app.py:1-5"])]
    )
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Brief)
    assert result.status == "completed", result
    assert result.result == Brief(answer="1", functions=["main", "helper"])  # forbid held
    assert result.evidence == ["src/app.py:1-5"]
    assert result.schema_errors == []
    system = llm.requests[0]["messages"][0]["content"]
    assert (
        '"evidence":{"type":"array"' in system
        and '"required":["answer","functions","evidence"]' in system
    )
    data = result.to_dict()
    assert data["evidence"] == ["src/app.py:1-5"] and data["result"] == {
        "answer": "1",
        "functions": ["main", "helper"],
    }
    assert "`src/app.py:1-5`" in result._repr_markdown_()
    back = outrider.SubagentLaunchResult.from_dict(data)
    assert back.evidence == ["src/app.py:1-5"]
    assert back.output(Brief) == result.result


def test_a_json_schema_without_evidence_is_taken_too_and_evidence_is_still_grounded(
    repo: pathlib.Path,
) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    unseen = answer(answer="1", evidence=["src/app.py:99"])
    llm = ScriptedLLM([READ, unseen, unseen])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=schema)
    assert result.status == "unverified"
    assert [c["evidence"] for c in result.ungrounded_evidence] == ["src/app.py:99"]
    # Not given at all: refused by name, then kept as partial, never completed.
    llm = ScriptedLLM([READ, answer(answer="1"), answer(answer="1")])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=schema)
    assert users(llm)[-1].startswith(
        "Return only a valid output_schema JSON object: evidence: is required"
    )
    assert result.status == "partial" and result.result == {"answer": "1"}


def test_an_answer_that_never_fits_is_partial_with_the_raw_object_and_the_errors(
    repo: pathlib.Path,
) -> None:
    bad = answer(answer=1, functions="main", evidence=["src/app.py:1"])
    llm = ScriptedLLM([READ, bad, bad])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Brief)
    llm.assert_complete()
    assert result.status == "partial", result
    assert result.result == {"answer": 1, "functions": "main"}  # as written, a dict
    assert result.evidence == ["src/app.py:1"]
    assert [e.split(":")[0] for e in result.schema_errors] == ["answer", "functions"]
    assert result.error is not None and "does not fit Brief" in result.error
    with pytest.raises(
        outrider.ResultError, match=r"did not fit Brief .*\.result holds the object"
    ):
        result.output(Brief)
    shown = result._repr_markdown_()
    assert (
        "did not fit Brief after the gate's retries" in shown
        and "**Does not fit the schema**" in shown
    )
    # The parent's envelope keeps it too: success with the errors, never INTERNAL_ERROR.
    task = outrider.TaskTool(launcher(repo, ScriptedLLM([READ, bad, bad])), output_schema=Brief)
    envelope = task.run(TASK_ARGS)
    assert envelope["status"] == "success", envelope
    assert envelope["data"]["status"] == "partial"
    assert envelope["data"]["result"] == {"answer": 1, "functions": "main"}
    assert len(envelope["data"]["schema_errors"]) == 2


def test_task_tool_run_takes_an_output_schema_as_the_constructor_does(repo: pathlib.Path) -> None:
    good = answer(answer="1", functions=["main"], evidence=["src/app.py:1"])
    task = outrider.TaskTool(launcher(repo, ScriptedLLM([READ, good])))
    envelope = task.run(TASK_ARGS, output_schema=Brief)
    assert envelope["status"] == "success", envelope
    assert envelope["data"]["output_schema"] == "Brief"
    assert envelope["data"]["result"] == {"answer": "1", "functions": ["main"]}
    assert envelope["data"]["evidence"] == ["src/app.py:1"]
    as_json = json.loads(
        outrider.TaskTool(launcher(repo, ScriptedLLM([READ, good]))).run_json(
            TASK_ARGS, output_schema=Brief
        )
    )
    assert as_json["data"]["output_schema"] == "Brief"
    with pytest.raises(outrider.ArgumentTypeError, match=r"^output_schema: must be a pydantic"):
        task.run(TASK_ARGS, output_schema=3)  # type: ignore[arg-type]


def test_the_http_client_answers_a_schema_without_evidence(repo: pathlib.Path) -> None:
    read = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "Read", "arguments": '{"path": "src/app.py"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    final = completion(
        answer(answer="1", functions=["main"], evidence=["src/app.py:1"], status="partial")
    )
    with scripted([read, final]) as server:
        client = outrider.OpenAICompatible(model="m", base_url=f"{server.base}/v1", api_key="k")
        result = launcher(repo, client).launch(outrider.SubagentRequest("x"), output_schema=Brief)
    assert result.status == "partial", result
    assert result.result == Brief(answer="1", functions=["main"])
    assert result.evidence == ["src/app.py:1"]
    assert (
        '"status":{"enum":["completed","partial","not_found","failed"]'
        in (server.bodies[0]["messages"][0]["content"])
    )


# --- #36: a schema's own status ----------------------------------------------------------------


@pytest.mark.parametrize("word", ["failed", "not_found", "Not Found"])
def test_a_schemas_own_failed_or_not_found_status_is_not_reported_completed(
    repo: pathlib.Path, word: str
) -> None:
    class Lookup(pydantic.BaseModel):
        status: str
        where: str | None = None
        evidence: list[str]

    llm = ScriptedLLM([READ, answer(status=word, where=None, evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Lookup)
    assert result.status == "partial", result
    assert isinstance(result.result, Lookup) and result.result.status == word
    assert result.error is not None and "own status is" in result.error
    envelope = outrider.TaskTool(
        launcher(repo, ScriptedLLM([READ, answer(status=word, evidence=["src/app.py:1"])])),
        output_schema=Lookup,
    ).run(TASK_ARGS)
    assert envelope["data"]["status"] == "partial"


# --- #36: what the gate validated is what the caller gets --------------------------------------


class Shifty(pydantic.BaseModel):
    """A validator with state: the second validation of the same input names another file."""

    calls: ClassVar[list[int]] = []
    functions: list[str]
    evidence: list[str]

    @pydantic.field_validator("evidence")
    @classmethod
    def drift(cls, value: list[str]) -> list[str]:
        cls.calls.append(1)
        return value if len(cls.calls) == 1 else ["../../etc/passwd:1"]


def test_output_hands_back_the_instance_the_gate_checked(repo: pathlib.Path) -> None:
    Shifty.calls.clear()
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Shifty)
    assert result.status == "completed", result
    first = result.output(Shifty)
    assert first.evidence == ["src/app.py:1"] and result.evidence == ["src/app.py:1"]
    assert result.result is first and result.output(Shifty) is first  # never validated again
    assert len(Shifty.calls) == 1
    # Rebuilt from data, a validation that changes the evidence is refused, not handed back.
    again = outrider.SubagentLaunchResult.from_dict(result.to_dict())
    with pytest.raises(outrider.ResultError, match="which the gate never checked"):
        again.output(Shifty)


# --- #36: validators under the run's deadline ---------------------------------------------------


class Slow(pydantic.BaseModel):
    functions: list[str]
    evidence: list[str]  # declared, so the case ran before outrider stopped requiring it

    @pydantic.field_validator("functions")
    @classmethod
    def sleepy(cls, value: list[str]) -> list[str]:
        time.sleep(30)
        return value


def test_a_validator_that_sleeps_ends_the_launch_at_its_limit_with_the_reason(
    repo: pathlib.Path,
) -> None:
    quick = outrider.EXPLORE_PROFILE.replace(name="quick", timeout_seconds=2)
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    started = time.monotonic()
    result = launcher(repo, llm, profiles=[quick]).launch(
        outrider.SubagentRequest("x", profile_name="quick"), output_schema=Slow
    )
    assert time.monotonic() - started < 8, time.monotonic() - started
    assert result.status == "partial", result
    assert result.terminal_reason == "timeout"
    assert result.result == {"functions": ["main"], "evidence": ["src/app.py:1"]}  # never validated
    assert result.error is not None
    assert "checking the answer against 'Slow' did not finish within the run's time limit" in (
        result.error
    )
    # Under policy "fail" it fails on the clock, saying why.
    strict = quick.replace(name="strict", on_budget_exhausted="fail")
    llm = ScriptedLLM([READ, answer(functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm, profiles=[strict]).launch(
        outrider.SubagentRequest("x", profile_name="strict"), output_schema=Slow
    )
    assert (result.status, result.failure_reason) == ("failed", "timeout")
    assert result.error is not None and "did not finish" in result.error


def test_a_pattern_driven_into_backtracking_ends_the_launch_at_its_limit(
    repo: pathlib.Path,
) -> None:
    # A back-reference needs the backtracking engine: each of these strings costs it about a
    # million steps before it gives up, so checking them all takes far longer than the limit.
    schema = {
        "type": "object",
        "properties": {
            "names": {"type": "array", "items": {"type": "string", "pattern": r"(a*)*\1b"}},
            # declared, so the case ran before outrider stopped requiring it
            "evidence": {"type": "array", "items": {"type": "string"}},
        },
    }
    names = [f"{'a' * 25}!{i}" for i in range(100)]
    quick = outrider.EXPLORE_PROFILE.replace(name="quick", timeout_seconds=2)
    llm = ScriptedLLM([READ, answer(names=names, evidence=["src/app.py:1"])])
    started = time.monotonic()
    result = launcher(repo, llm, profiles=[quick]).launch(
        outrider.SubagentRequest("x", profile_name="quick"), output_schema=schema
    )
    assert time.monotonic() - started < 8, time.monotonic() - started
    assert (result.status, result.terminal_reason) == ("partial", "timeout"), result
    assert result.error is not None and "did not finish within the run's time limit" in result.error


def test_a_validator_that_launches_on_its_own_launcher_is_refused_not_deadlocked(
    repo: pathlib.Path,
) -> None:
    seen: list[str] = []
    box: dict[str, outrider.SubagentLauncher] = {}

    class Reentrant(pydantic.BaseModel):
        functions: list[str]
        evidence: list[str]

        @pydantic.field_validator("functions")
        @classmethod
        def launch_again(cls, value: list[str]) -> list[str]:
            try:
                box["launcher"].launch(outrider.SubagentRequest("again"))
            except outrider.LaunchError as error:
                seen.append(str(error))
                raise ValueError("cannot launch here") from error
            return value

    quick = outrider.EXPLORE_PROFILE.replace(name="quick", timeout_seconds=20)
    good = answer(functions=["main"], evidence=["src/app.py:1"])
    box["launcher"] = launcher(
        repo, ScriptedLLM([READ, good, good]), profiles=[quick], max_concurrency=1
    )
    done: list[outrider.SubagentLaunchResult] = []
    worker = threading.Thread(
        target=lambda: done.append(
            box["launcher"].launch(
                outrider.SubagentRequest("x", profile_name="quick"), output_schema=Reentrant
            )
        ),
        daemon=True,
    )
    worker.start()
    worker.join(15)
    assert done, "the launch deadlocked on its own validator"
    assert seen and seen[0].startswith(
        "output_schema: outrider was called from inside the validator of 'Reentrant'"
    ), seen
    assert done[0].status == "partial" and done[0].schema_errors, done[0]


# --- #36: fenced drafts ------------------------------------------------------------------------


def test_a_retracted_fenced_draft_does_not_beat_the_final_answer(repo: pathlib.Path) -> None:
    draft = answer(
        status="completed", summary="main returns 2", findings=[], evidence=["src/app.py:1"]
    )
    last = answer(status="partial", summary="main returns helper()", evidence=["src/app.py:2"])
    both = f"Draft:\n```json\n{draft}\n```\nNo, that was wrong:\n```json\n{last}\n```"
    llm = ScriptedLLM([READ, both, last])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("What does main return?"))
    llm.assert_complete()
    assert users(llm)[-1].startswith(
        "Return only a valid ExploreResult JSON object: found 2 JSON objects in the answer"
    )
    assert result.status == "partial" and result.explore.summary == "main returns helper()"
    # The same for a caller's schema.
    llm = ScriptedLLM(
        [
            READ,
            "```json\n" + answer(answer="2", functions=[], evidence=["src/app.py:1"]) + "\n```\n"
            "```json\n"
            + answer(answer="1", functions=["main"], evidence=["src/app.py:1"])
            + "\n```",
            answer(answer="1", functions=["main"], evidence=["src/app.py:1"]),
        ]
    )
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Brief)
    assert "found 2 JSON objects" in users(llm)[-1]
    assert result.result == Brief(answer="1", functions=["main"])


def test_a_wrap_up_answer_that_does_not_fit_is_kept_too(repo: pathlib.Path) -> None:
    # Out of steps, the child's last (tool-less) answer does not fit: it stands as partial, as
    # written, with its errors (it used to end with no result at all).
    short = outrider.EXPLORE_PROFILE.replace(name="short", max_steps=1)
    llm = ScriptedLLM([READ, answer(answer=1, functions=["main"], evidence=["src/app.py:1"])])
    result = launcher(repo, llm, profiles=[short]).launch(
        outrider.SubagentRequest("x", profile_name="short"), output_schema=Brief
    )
    llm.assert_complete()
    assert result.status == "partial", result
    assert result.terminal_reason == "max_steps"
    assert result.result == {"answer": 1, "functions": ["main"]}
    assert result.schema_errors and result.schema_errors[0].startswith("answer: ")
    assert result.evidence == ["src/app.py:1"]


def test_aliased_fields_round_trip_as_the_child_was_told(repo: pathlib.Path) -> None:
    class Aliased(pydantic.BaseModel):
        file_name: str = pydantic.Field(alias="fileName")

    llm = ScriptedLLM([READ, answer(fileName="src/app.py", evidence=["src/app.py:1"])])
    result = launcher(repo, llm).launch(outrider.SubagentRequest("x"), output_schema=Aliased)
    assert result.status == "completed", result
    assert result.to_dict()["result"] == {"fileName": "src/app.py"}
    again = outrider.SubagentLaunchResult.from_dict(result.to_dict())
    assert again.output(Aliased).file_name == "src/app.py"
