"""``SubagentLauncher.verify`` takes the reference system's ``CompletionRequirements`` keys with
their meaning (#37.10): code written for it keeps working."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

import outrider
from outrider.testing import ScriptedLLM, call

PASS = json.dumps(
    {"verdict": "PASS", "reasons": ["main() exists"], "findings": [], "evidence": ["app.py:1"]}
)
# The reference's CompletionRequirements.to_trace_payload() for "add main() and run the tests".
REFERENCE = {
    "requires_verification": True,
    "verification_kinds": ["tests"],
    "allow_unverified": False,
    "has_incomplete_todos": False,
    "incomplete_todos": [],
    "explicit_user_constraints": ["tests"],
}
TESTS_PASSED = {
    "requirement_id": "verification:tests",
    "tool_name": "Bash",
    "command": "pytest -q",
    "status": "success",
    "step": 3,
    "valid": True,
    "invalid_reason": None,
}


def verifier(repo: pathlib.Path, *script: Any) -> tuple[outrider.SubagentLauncher, ScriptedLLM]:
    llm = ScriptedLLM(list(script))
    return outrider.SubagentLauncher(repo, llm, trace_dir=False), llm


def test_the_reference_requirements_reach_a_verification_child_with_their_evidence(
    repo: pathlib.Path,
) -> None:
    launcher, llm = verifier(repo, [call("Read", path="app.py")], PASS)
    verdict = launcher.verify("I added main()", REFERENCE, ["app.py:1", TESTS_PASSED])
    assert (verdict.verdict, verdict.reasons) == ("PASS", ["main() exists"])
    llm.assert_complete()
    context = llm.requests[0]["messages"][-1]["content"]
    assert '"explicit_user_constraints": ["tests"]' in context
    assert '"requirement_id": "verification:tests"' in context


def test_a_verification_kind_without_passing_evidence_decides_without_a_child(
    repo: pathlib.Path,
) -> None:
    launcher, llm = verifier(repo)
    missing = launcher.verify("I added main()", REFERENCE, ["app.py:1"])
    assert (missing.verdict, missing.reasons, missing.launch) == (
        "FAIL",
        ["missing_verification_evidence:tests"],
        None,
    )
    assert missing.feedback is not None and "tests" in missing.feedback
    stale = {**TESTS_PASSED, "valid": False, "invalid_reason": "modified_after_verification:5"}
    assert launcher.verify("done", REFERENCE, [stale]).reasons == ["verification_invalid:tests"]
    soft = launcher.verify("done", {**REFERENCE, "allow_unverified": True})
    assert (soft.verdict, soft.reasons) == (
        "UNVERIFIED",
        ["verification_unverified", "missing_verification_evidence:tests"],
    )
    todos = launcher.verify(
        "done", {**REFERENCE, "has_incomplete_todos": True, "incomplete_todos": ["docs"]}
    )
    assert (todos.verdict, todos.reasons) == (
        "FAIL",
        ["incomplete_todo: docs", "missing_verification_evidence:tests"],
    )
    assert llm.requests == []


def test_only_keys_neither_system_knows_are_refused(repo: pathlib.Path) -> None:
    launcher, _ = verifier(repo)
    with pytest.raises(
        outrider.ConfigError,
        match=r"requirements\['verification_kind'\]: "
        "unknown requirement key; the known keys are 'todos', "
        "'requires_verification', 'criteria', 'verification_kinds', "
        "'allow_unverified', 'has_incomplete_todos', 'incomplete_todos', "
        "'explicit_user_constraints'",
    ):
        launcher.verify("done", {"verification_kind": ["tests"]})
    with pytest.raises(
        outrider.ArgumentTypeError, match=r"evidence\[0\]\['valid'\]: must be a bool"
    ):
        launcher.verify("done", REFERENCE, [{**TESTS_PASSED, "valid": "yes"}])
    with pytest.raises(
        outrider.ConfigError,
        match=r"requirements\['has_incomplete_todos'\]: is "
        r"False, but the requirements list incomplete todos \(\['x'\]\)",
    ):
        launcher.verify("done", {"has_incomplete_todos": False, "incomplete_todos": ["x"]})
