"""Type stubs for the native core, ``outrider._core`` (hand-written; checked by mypy.stubtest)."""

from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, Final, Literal, final

from outrider.types import EvidenceCheck

__all__ = [
    "EXPLORE_PROFILE",
    "READONLY_TOOLS",
    "VERIFICATION_PROFILE",
    "ExploreResult",
    "RuntimeProfile",
    "VerificationResult",
    "__version__",
    "check_evidence",
]

__version__: Final[str]

READONLY_TOOLS: Final[frozenset[str]]
"""The only tools a formal sub-agent may use: Glob, Grep, Read."""

@final
class RuntimeProfile:
    """A sub-agent profile: allowed tools, budgets, model route, result contract. Frozen.

    Validation raises :class:`outrider.ProfileError` (a ``ValueError``) with the reference
    messages, in the reference's order; a wrong type raises ``TypeError`` naming the field.
    Fields after ``name`` and ``system_prompt`` default to the explore profile's values.
    """

    def __new__(
        cls,
        name: str,
        system_prompt: str,
        tool_allowlist: Iterable[str] | None = None,
        max_steps: int | None = None,
        context_token_budget: int | None = None,
        total_token_budget: int | None = None,
        model_choice: str | None = None,
        context_source_policy: str | None = None,
        completion_policy: str | None = None,
        result_contract: str | None = None,
        recursive_subagents: bool | None = None,
        *,
        gate_retries: int | None = None,
        on_budget_exhausted: str | None = None,
        timeout_seconds: float | None = None,
    ) -> RuntimeProfile: ...
    @property
    def name(self) -> str: ...
    @property
    def system_prompt(self) -> str:
        """The prompt template; ``{max_steps}``, ``{context_token_budget}`` and
        ``{total_token_budget}`` are filled in when the child starts."""
    @property
    def rendered_system_prompt(self) -> str:
        """The system prompt the child receives, budgets filled in."""
    @property
    def tool_allowlist(self) -> frozenset[str]: ...
    @property
    def max_steps(self) -> int: ...
    @property
    def context_token_budget(self) -> int: ...
    @property
    def total_token_budget(self) -> int: ...
    @property
    def model_choice(self) -> str: ...
    @property
    def context_source_policy(self) -> str: ...
    @property
    def completion_policy(self) -> str: ...
    @property
    def result_contract(self) -> str: ...
    @property
    def recursive_subagents(self) -> bool: ...
    @property
    def gate_retries(self) -> int:
        """Corrective retries after an invalid final answer (0..10; the reference allows 1)."""
    @property
    def on_budget_exhausted(self) -> str:
        """``"partial"``: one last tool-less call asks for the result; ``"fail"``: stop."""
    @property
    def timeout_seconds(self) -> float:
        """Wall-clock limit for one child."""
    def replace(self, **changes: Any) -> RuntimeProfile:
        """A copy with some fields changed, validated again."""
    def to_dict(self) -> dict[str, Any]:
        """Every field, the allow-list as a frozenset."""
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeProfile:
        """Build and validate a profile from :meth:`to_dict` output."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __copy__(self) -> RuntimeProfile: ...
    def __deepcopy__(self, memo: Any) -> RuntimeProfile: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

EXPLORE_PROFILE: Final[RuntimeProfile]
"""explore: Glob/Grep/Read, 12 steps, 16 000 context / 32 000 total tokens, light model."""
VERIFICATION_PROFILE: Final[RuntimeProfile]
"""verification: Glob/Grep/Read, 10 steps, 20 000 / 40 000 tokens, main model."""

@final
class ExploreResult:
    """The validated answer of an explore child. Frozen; compares by value; pickles."""

    def __new__(
        cls,
        status: str,
        summary: str,
        findings: Iterable[str] | None = None,
        evidence: Iterable[str] | None = None,
        unresolved_questions: Iterable[str] | None = None,
        tool_usage: Mapping[str, int] | None = None,
        terminal_reason: str = "unknown",
    ) -> ExploreResult: ...
    @classmethod
    def from_json(
        cls,
        text: str | bytes | None,
        *,
        tool_usage: Mapping[str, int] | None = None,
        terminal_reason: str = "unknown",
    ) -> ExploreResult:
        """Strict parse, exactly as the reference: raises :class:`outrider.ContractError`."""
    @classmethod
    def repair(
        cls,
        text: str | bytes | None,
        *,
        tool_usage: Mapping[str, int] | None = None,
        terminal_reason: str = "unknown",
    ) -> tuple[ExploreResult, Literal["fence", "extract"] | None]:
        """Lenient parse: also takes a fenced or prose-wrapped answer; says which repair it made."""
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExploreResult:
        """Rebuild (and validate) from :meth:`to_dict` output."""
    def to_dict(self) -> dict[str, Any]: ...
    @property
    def status(self) -> Literal["completed", "partial"]: ...
    @property
    def summary(self) -> str: ...
    @property
    def findings(self) -> tuple[str, ...]: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...
    @property
    def unresolved_questions(self) -> tuple[str, ...]: ...
    @property
    def tool_usage(self) -> dict[str, int]: ...
    @property
    def terminal_reason(self) -> str: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __copy__(self) -> ExploreResult: ...
    def __deepcopy__(self, memo: Any) -> ExploreResult: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class VerificationResult:
    """The validated verdict of a verification child. Frozen; compares by value; pickles."""

    def __new__(
        cls,
        verdict: str,
        reasons: Iterable[str] | None = None,
        findings: Iterable[str] | None = None,
        evidence: Iterable[str] | None = None,
        child_session_id: str | None = None,
        child_run_id: str | None = None,
        terminal_reason: str = "unknown",
        tool_usage: Mapping[str, int] | None = None,
        token_usage: int | None = None,
    ) -> VerificationResult: ...
    @classmethod
    def from_json(
        cls,
        text: str | bytes | None,
        *,
        child_session_id: str | None = None,
        child_run_id: str | None = None,
        terminal_reason: str = "unknown",
        tool_usage: Mapping[str, int] | None = None,
        token_usage: int | None = None,
    ) -> VerificationResult:
        """Strict parse, exactly as the reference: raises :class:`outrider.ContractError`."""
    @classmethod
    def repair(
        cls,
        text: str | bytes | None,
        *,
        child_session_id: str | None = None,
        child_run_id: str | None = None,
        terminal_reason: str = "unknown",
        tool_usage: Mapping[str, int] | None = None,
        token_usage: int | None = None,
    ) -> tuple[VerificationResult, Literal["fence", "extract"] | None]:
        """Lenient parse: also takes a fenced or prose-wrapped answer."""
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerificationResult: ...
    def to_dict(self) -> dict[str, Any]: ...
    @property
    def verdict(self) -> Literal["PASS", "FAIL", "PARTIAL", "UNVERIFIED"]: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...
    @property
    def findings(self) -> tuple[str, ...]: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...
    @property
    def child_session_id(self) -> str | None: ...
    @property
    def child_run_id(self) -> str | None: ...
    @property
    def terminal_reason(self) -> str: ...
    @property
    def tool_usage(self) -> dict[str, int]: ...
    @property
    def token_usage(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __copy__(self) -> VerificationResult: ...
    def __deepcopy__(self, memo: Any) -> VerificationResult: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def check_evidence(root: str | PathLike[str], evidence: str | Iterable[str]) -> list[EvidenceCheck]:
    """Say for each ``path:line`` / ``path:start-end`` item whether the file exists under
    ``root`` and the lines are in range (``reason`` names the problem when not)."""
