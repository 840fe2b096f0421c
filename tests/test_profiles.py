"""RuntimeProfile: the reference's fields, numbers, validation order and messages, and ours."""

from __future__ import annotations

import copy
import pathlib
import pickle
from typing import Any

import pytest

import outrider
from outrider import EXPLORE_PROFILE, VERIFICATION_PROFILE, ProfileError, RuntimeProfile


def test_builtin_numbers_match_the_reference() -> None:
    # Issue #34: the assists' knobs, at their defaults (test_tuning_... checks their values).
    assert EXPLORE_PROFILE.to_dict()["tuning"] == VERIFICATION_PROFILE.tuning
    assert EXPLORE_PROFILE.to_dict() | {"system_prompt": None, "tuning": None} == {
        "name": "explore",
        "system_prompt": None,
        "tool_allowlist": frozenset({"Glob", "Grep", "Read"}),
        "max_steps": 12,
        "context_token_budget": 16_000,
        "total_token_budget": 32_000,
        "model_choice": "light",
        "context_source_policy": "self_contained_task_and_structured_context",
        "completion_policy": "structured_result",
        "result_contract": "ExploreResult",
        "recursive_subagents": False,
        "gate_retries": 1,
        "on_budget_exhausted": "partial",
        "timeout_seconds": 300.0,
        # Issue #18: an answer needs a successful tool call first, and the child's first
        # message carries the keyword search's likely places.
        "min_tool_calls": 1,
        "repo_map_hint": True,
        "tool_result_format": "json",
        "scout_fallback": False,
        # Issue #20: the contract's own shape, and no cap on the summary.
        "output_schema": None,
        "max_summary_chars": None,
        "tuning": None,
    }
    assert VERIFICATION_PROFILE.to_dict() | {"system_prompt": None, "tuning": None} == {
        "name": "verification",
        "system_prompt": None,
        "tool_allowlist": frozenset({"Glob", "Grep", "Read"}),
        "max_steps": 10,
        "context_token_budget": 20_000,
        "total_token_budget": 40_000,
        "model_choice": "main",
        "context_source_policy": "completion_candidate_requirements_evidence",
        "completion_policy": "structured_result",
        "result_contract": "VerificationResult",
        "recursive_subagents": False,
        "gate_retries": 1,
        "on_budget_exhausted": "partial",
        "timeout_seconds": 300.0,
        "min_tool_calls": 1,
        "repo_map_hint": False,
        "tool_result_format": "json",
        "scout_fallback": False,
        # Issue #20: the contract's own shape, and no cap on the summary.
        "output_schema": None,
        "max_summary_chars": None,
        "tuning": None,
    }
    assert outrider.READONLY_TOOLS == frozenset({"Glob", "Grep", "Read"})


# How each prompt shows the evidence format and asks for JSON alone. The explore prompt shows the
# answer's shape with <...> placeholders (a weak model copied the concrete example, #18).
EVIDENCE_FORMAT = {
    "explore": '"evidence": ["<path>:<line>", "<path>:<first>-<last>"]',
    "verification": '"evidence": ["relative/path.py:42", "relative/path.py:10-20"]',
}
JSON_ONLY = {
    "explore": "exactly one JSON object, no fences, no other text",
    "verification": "exactly one JSON object and nothing else",
}


@pytest.mark.parametrize("profile", [EXPLORE_PROFILE, VERIFICATION_PROFILE])
def test_system_prompts_tell_the_child_what_it_needs(profile: RuntimeProfile) -> None:
    text = profile.rendered_system_prompt
    assert f"{profile.max_steps} model turns" in text
    assert f"{profile.total_token_budget} tokens" in text
    assert f"{profile.context_token_budget} tokens" in text
    assert "start_line" in text  # paging through Read
    assert EVIDENCE_FORMAT[profile.name] in text
    assert JSON_ONLY[profile.name] in text
    assert "{max_steps}" not in text
    assert "{max_steps}" in profile.system_prompt
    assert profile.replace(max_steps=20).rendered_system_prompt.count("20 model turns") == 1


def make(**changes: Any) -> RuntimeProfile:
    fields: dict[str, Any] = {"name": "p", "system_prompt": "be useful"} | changes
    return RuntimeProfile(**fields)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": ""}, "runtime profile requires name and system prompt"),
        ({"system_prompt": "   "}, "runtime profile requires name and system prompt"),
        ({"name": "", "max_steps": 0}, "runtime profile requires name and system prompt"),
        ({"max_steps": 0}, "runtime profile budgets must be positive"),
        ({"context_token_budget": -1}, "runtime profile budgets must be positive"),
        (
            {"total_token_budget": 0, "model_choice": "x"},
            "runtime profile budgets must be positive",
        ),
        ({"model_choice": "heavy"}, "runtime profile model choice must be main or light"),
        (
            {"model_choice": "x", "recursive_subagents": True},
            "runtime profile model choice must be main or light",
        ),
        ({"recursive_subagents": True}, "formal subagent profiles cannot recurse"),
        ({"tool_allowlist": {"Read", "Task"}}, "formal subagent profiles cannot recurse"),
        ({"tool_allowlist": {"Task", "Edit"}}, "formal subagent profiles cannot recurse"),
        (
            {"tool_allowlist": ["Read", "Edit"]},
            "formal subagent profiles must be strictly read-only",
        ),
        ({"tool_allowlist": ("Bash",)}, "formal subagent profiles must be strictly read-only"),
        (
            {"tool_allowlist": ["TodoWrite", "Read"]},
            "formal subagent profiles may only use Glob, Grep, Read and Search; got 'TodoWrite'",
        ),
        (
            {"result_contract": "Other"},
            "runtime profile result contract must be ExploreResult or VerificationResult, got 'Other'",
        ),
        ({"gate_retries": 11}, "runtime profile gate_retries must be between 0 and 10, got 11"),
        (
            {"on_budget_exhausted": "wait"},
            "runtime profile on_budget_exhausted must be 'partial' or 'fail', got 'wait'",
        ),
        (
            {"timeout_seconds": 0},
            "runtime profile timeout_seconds must be a positive number of seconds, got 0.0",
        ),
        (
            {"timeout_seconds": float("inf")},
            "runtime profile timeout_seconds must be a positive number of seconds, got inf",
        ),
        (
            {"timeout_seconds": 1e300},
            "runtime profile timeout_seconds must be at most 31536000 seconds (a year), got 1e+300",
        ),
    ],
)
def test_validation_order_and_messages(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError) as info:
        make(**changes)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": 5}, "RuntimeProfile.name: must be str, got int"),
        ({"max_steps": "12"}, "RuntimeProfile.max_steps: must be int, got str"),
        ({"max_steps": True}, "RuntimeProfile.max_steps: must be int, got bool"),
        ({"max_steps": 1.5}, "RuntimeProfile.max_steps: must be int, got float"),
        (
            {"tool_allowlist": "Read"},
            "RuntimeProfile.tool_allowlist: must be an iterable of tool names such as {'Read', 'Grep', 'Glob'}, not a single str",
        ),
        (
            {"tool_allowlist": 3},
            "RuntimeProfile.tool_allowlist: must be an iterable of str, got int",
        ),
        (
            {"tool_allowlist": ["Read", 1]},
            "RuntimeProfile.tool_allowlist item: must be str, got int",
        ),
        ({"recursive_subagents": 0}, "RuntimeProfile.recursive_subagents: must be bool, got int"),
        ({"timeout_seconds": "10"}, "RuntimeProfile.timeout_seconds: must be a number, got str"),
    ],
)
def test_wrong_types_name_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError) as info:
        make(**changes)
    assert str(info.value) == message


def test_huge_int_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match=r"RuntimeProfile.max_steps: is out of range: 1{30}"):
        make(max_steps=int("1" * 30))


def test_allowlist_accepts_any_iterable() -> None:
    for names in (
        ["Read"],
        ("Read", "Grep"),
        {"Glob"},
        frozenset({"Read"}),
        iter(["Grep"]),
        (n for n in ["Read"]),
    ):
        profile = make(tool_allowlist=names)
        assert isinstance(profile.tool_allowlist, frozenset)
    # No tools at all only with no tool calls required (explore requires one).
    assert make(tool_allowlist=[], min_tool_calls=0).tool_allowlist == frozenset()
    with pytest.raises(
        outrider.ProfileError, match="min_tool_calls is 1 but tool_allowlist is empty"
    ):
        make(tool_allowlist=[])


def test_profiles_are_frozen_values() -> None:
    p = make(max_steps=3)
    with pytest.raises(AttributeError):
        p.max_steps = 4  # type: ignore[misc]
    assert p == make(max_steps=3)
    assert p != make(max_steps=4)
    assert hash(p) == hash(make(max_steps=3))
    assert p != "p"
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p) == p
    assert RuntimeProfile.from_dict(p.to_dict()) == p
    assert repr(p).startswith(
        "RuntimeProfile(name='p', tool_allowlist={'Glob', 'Grep', 'Read'}, max_steps=3,"
    )


def test_replace_validates_again() -> None:
    deeper = EXPLORE_PROFILE.replace(name="deep", max_steps=20, tool_allowlist=["Read", "Grep"])
    assert (deeper.name, deeper.max_steps, deeper.tool_allowlist) == (
        "deep",
        20,
        frozenset({"Read", "Grep"}),
    )
    assert EXPLORE_PROFILE.max_steps == 12
    assert EXPLORE_PROFILE.replace() == EXPLORE_PROFILE
    with pytest.raises(ProfileError, match="^runtime profile budgets must be positive$"):
        EXPLORE_PROFILE.replace(max_steps=0)
    with pytest.raises(
        TypeError,
        match="RuntimeProfile: has no option 'max_step'; options are: name, system_prompt",
    ):
        EXPLORE_PROFILE.replace(max_step=3)


def test_from_dict_requires_the_identity_fields() -> None:
    with pytest.raises(TypeError, match="RuntimeProfile.system_prompt: missing"):
        RuntimeProfile.from_dict({"name": "x"})
    with pytest.raises(TypeError, match="RuntimeProfile.from_dict data: must be a dict, got list"):
        RuntimeProfile.from_dict([("name", "x")])  # type: ignore[arg-type]


def test_tuning_is_a_profile_field_that_changes_what_the_child_is_given(
    repo: pathlib.Path,
) -> None:
    from outrider import SubagentLauncher
    from outrider.testing import ScriptedLLM, call, final

    assert EXPLORE_PROFILE.tuning == {
        "leads": 3,
        "fusion_k": 60.0,
        "lead_read_lines": 40,
        "scout_time_share": 0.1,
        "scout_time_cap_seconds": 30.0,
        "min_checked_name": 3,
        "shrink_used_results": 1,
        "rank_compound": 0.5,
        "rank_file_named": 1.0 / 3.0,
        "rank_copy_weight": 0.4,
        "rank_test_weight": 0.4,
        "rank_common_idf": 1.4,
        "rank_bm25_k1": 1.2,
        "rank_bm25_b": 0.75,
        "rank_name": 2.0,
        "rank_exact": 6.0,
        "rank_path_file": 1.5,
        "rank_path_dir": 0.5,
        "rank_parent": 0.5,
        "rank_file_share": 0.25,
        "rank_same_file_decay": 0.55,
    }
    tuned = EXPLORE_PROFILE.replace(tuning={"lead_read_lines": 7})
    assert tuned.tuning["lead_read_lines"] == 7 and tuned.tuning["leads"] == 3
    assert tuned != EXPLORE_PROFILE and hash(tuned) != hash(EXPLORE_PROFILE)
    assert RuntimeProfile.from_dict(tuned.to_dict()) == tuned
    assert "tuning={'leads': 3, 'fusion_k': 60.0, 'lead_read_lines': 7," in repr(tuned)
    assert "tuning=" not in repr(EXPLORE_PROFILE)
    answer = {"status": "completed", "summary": "main is in app.py", "evidence": ["app.py:1"]}

    def first_message(profile: RuntimeProfile) -> str:
        llm = ScriptedLLM([call("Read", path="app.py"), final(**answer)])
        SubagentLauncher(repo, llm, profiles=[profile]).launch(
            outrider.SubagentRequest(task="Where is main defined?")
        )
        content = llm.requests[0]["messages"][1]["content"]
        assert isinstance(content, str)
        return content

    assert '"limit":7}' in first_message(tuned)
    assert '"limit":40}' in first_message(EXPLORE_PROFILE)
    assert "Leads" not in first_message(EXPLORE_PROFILE.replace(tuning={"leads": 0}))
    assert "Leads" in first_message(EXPLORE_PROFILE)
    for bad, message in [
        ({"lead": 1}, r"RuntimeProfile.tuning: has no option 'lead'; options are: leads, "),
        ({"leads": "5"}, r"RuntimeProfile.tuning\['leads'\]: must be int, got str"),
        ({"leads": -1}, r"RuntimeProfile.tuning\['leads'\]: must be between 0 and 1000, got -1"),
        ({"fusion_k": float("nan")}, r"tuning\['fusion_k'\]: must be a number between 0 and"),
        ([1], r"RuntimeProfile.tuning: must be a dict of knob names to numbers, got list"),
    ]:
        with pytest.raises((TypeError, ValueError), match=message):
            EXPLORE_PROFILE.replace(tuning=bad)
