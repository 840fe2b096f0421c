"""Results as data: to_json, ==, pickling and pydantic (issue 10, point 5)."""

from __future__ import annotations

import json
import pathlib
import pickle
from typing import Any

import pydantic
import pytest

import outrider
from outrider.testing import ScriptedLLM, call, final


def launch(repo: pathlib.Path, summary: str = "main is in app.py") -> outrider.SubagentLaunchResult:
    llm = ScriptedLLM(
        [
            [call("Grep", pattern="def main")],
            final(status="completed", summary=summary, evidence=["app.py:1"]),
        ]
    )
    return outrider.SubagentLauncher(repo, llm, trace_dir=False).launch(
        outrider.SubagentRequest(task="Find main")
    )


def verdict(repo: pathlib.Path) -> outrider.CompletionVerdict:
    llm = ScriptedLLM(
        [json.dumps({"verdict": "PASS", "reasons": ["ok"], "findings": [], "evidence": []})]
    )
    return outrider.SubagentLauncher(repo, llm, trace_dir=False).verify("I added main()")


EXPLORE = outrider.ExploreResult(
    "completed", "Auth is in src/auth.py — ü", ["login()"], ["src/auth.py:12"], ["why?"]
)
VERIFICATION = outrider.VerificationResult("FAIL", ["main returns 1"], evidence=["app.py:2"])


def every_result(repo: pathlib.Path) -> list[Any]:
    return [EXPLORE, VERIFICATION, launch(repo), verdict(repo)]


def test_to_json_is_to_dict_as_json_for_every_result(repo: pathlib.Path) -> None:
    for obj in every_result(repo):
        text = obj.to_json()
        assert json.loads(text) == obj.to_dict(), type(obj).__name__
        assert json.loads(obj.to_json(indent=2)) == obj.to_dict()
    assert "ü" in EXPLORE.to_json() and "\n" in EXPLORE.to_json(indent=2)


def test_launch_results_and_verdicts_compare_by_value(repo: pathlib.Path) -> None:
    a, b = launch(repo), launch(repo)
    assert a == a and hash(a) == hash(a)
    # Two launches differ at least in their session ids.
    assert a != b and a.child_session_id != b.child_session_id
    as_dict: object = a.to_dict()
    text: object = "x"
    assert a != as_dict and a != text
    v1, v2 = verdict(repo), verdict(repo)
    assert v1 == v1 and hash(v1) == hash(v1)
    assert v1 != v2  # different verification children
    skipped = outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=False).verify(
        "x", requirements={"requires_verification": False}
    )
    again = outrider.SubagentLauncher(repo, ScriptedLLM([]), trace_dir=False).verify(
        "x", requirements={"requires_verification": False}
    )
    assert skipped.launch is None and skipped == again and hash(skipped) == hash(again)
    assert {skipped, again} == {skipped}


def test_contract_results_pickle(repo: pathlib.Path) -> None:
    for obj in (EXPLORE, VERIFICATION):
        assert pickle.loads(pickle.dumps(obj)) == obj
    result = launch(repo).result
    assert isinstance(result, outrider.ExploreResult)
    assert pickle.loads(pickle.dumps(result)) == result


def test_launch_results_pickle(repo: pathlib.Path) -> None:
    result = launch(repo)
    back = pickle.loads(pickle.dumps(result))
    assert back == result and back.to_dict() == result.to_dict()
    assert isinstance(back.result, outrider.ExploreResult)


def test_verdicts_pickle(repo: pathlib.Path) -> None:
    v = verdict(repo)
    back = pickle.loads(pickle.dumps(v))
    assert back == v and back.launch == v.launch


def test_pydantic_validates_and_serialises_launch_results(repo: pathlib.Path) -> None:
    adapter = pydantic.TypeAdapter(outrider.SubagentLaunchResult)
    result = launch(repo)
    assert adapter.validate_python(result) is result
    assert adapter.dump_python(result) == result.to_dict()
    assert json.loads(adapter.dump_json(result)) == result.to_dict()
    with pytest.raises(pydantic.ValidationError, match="expected a SubagentLaunchResult or a dict"):
        adapter.validate_python(3)


def test_pydantic_rebuilds_launch_results_from_dicts(repo: pathlib.Path) -> None:
    adapter = pydantic.TypeAdapter(outrider.SubagentLaunchResult)
    result = launch(repo)
    assert adapter.validate_python(result.to_dict()) == result
    assert adapter.validate_json(adapter.dump_json(result)) == result


def test_pydantic_models_hold_results(repo: pathlib.Path) -> None:
    class Report(pydantic.BaseModel):
        explore: outrider.ExploreResult
        check: outrider.VerificationResult | None = None
        launch: outrider.SubagentLaunchResult
        verdict: outrider.CompletionVerdict

    r, v = launch(repo), verdict(repo)
    report = Report.model_validate(
        {"explore": EXPLORE.to_dict(), "check": VERIFICATION, "launch": r, "verdict": v}
    )
    assert report.explore == EXPLORE and report.check is VERIFICATION
    dumped = json.loads(report.model_dump_json())
    assert dumped == {
        "explore": EXPLORE.to_dict(),
        "check": VERIFICATION.to_dict(),
        "launch": r.to_dict(),
        "verdict": v.to_dict(),
    }
    back = Report.model_validate({**dumped, "launch": r, "verdict": v})
    assert back == report
    with pytest.raises(pydantic.ValidationError, match="summary"):
        Report.model_validate({"explore": {"status": "completed"}, "launch": r, "verdict": v})


def test_the_core_is_not_overridden() -> None:
    """Methods the core defines stay the core's (pickling, ==, hash of contract results)."""
    for cls in (outrider.ExploreResult, outrider.VerificationResult):
        assert "slot wrapper" in repr(cls.__eq__)
        assert cls.__reduce__.__qualname__.endswith("__reduce__")
        assert "_interop" not in getattr(cls.__reduce__, "__module__", "")


def test_pydantic_json_schemas_describe_to_dict() -> None:
    """The schema a framework sees (e.g. as a tool's output type) lists every to_dict field."""
    for obj in (EXPLORE, VERIFICATION):
        adapter = pydantic.TypeAdapter(type(obj))
        for mode in ("validation", "serialization"):
            schema = adapter.json_schema(mode=mode)
            assert set(schema["properties"]) == set(obj.to_dict()), (type(obj), mode)
    explore = pydantic.TypeAdapter(outrider.ExploreResult).json_schema()
    assert explore["required"] == ["status", "summary"]
    assert explore["properties"]["status"]["enum"] == ["completed", "partial"]
    assert explore["properties"]["evidence"] == {
        "items": {"type": "string"},
        "title": "Evidence",
        "type": "array",
    }
    launch = pydantic.TypeAdapter(outrider.SubagentLaunchResult).json_schema()
    assert launch == {"additionalProperties": True, "type": "object"}
