"""Type stubs for the native core, ``outrider._core`` (hand-written; checked by mypy.stubtest)."""

from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from typing import Any, Final, Literal, TypeVar, final, overload

from typing_extensions import Self, disjoint_base

from outrider.types import (
    EvidenceCheck,
    ModelCallable,
    ModelClient,
    ModelSettings,
    OnEvent,
    OutputSchema,
    TerminalReason,
    ToolEnvelope,
)

__all__ = [
    "EXPLORE_PROFILE",
    "READONLY_TOOLS",
    "VERIFICATION_PROFILE",
    "CompletionVerdict",
    "ExploreResult",
    "MainAgent",
    "OfflineScout",
    "OpenAICompatible",
    "RuntimeProfile",
    "SubagentLaunchResult",
    "SubagentLauncher",
    "SubagentRequest",
    "TaskTool",
    "VerificationResult",
    "__version__",
    "check_evidence",
    "run_tool",
    "tool_schemas",
]

__version__: Final[str]

_T = TypeVar("_T")

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
        min_tool_calls: int | None = None,
        repo_map_hint: bool | None = None,
        tool_result_format: Literal["json", "compact"] | None = None,
        scout_fallback: bool | None = None,
        output_schema: OutputSchema | None = None,
        max_summary_chars: int | None = None,
        tuning: Mapping[str, float] | None = None,
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
        """Wall-clock limit for one child; a share of it is kept for the wrap-up answer, so a
        run that reaches it still answers ``partial``."""
    @property
    def min_tool_calls(self) -> int:
        """Successful tool calls required before a final answer is accepted (0..20; explore
        and verification: 1). The places the repo-map hint opened for the child count as one."""
    @property
    def repo_map_hint(self) -> bool:
        """Whether the offline scout searches before the first model call and the child's
        first message lists its ranked places (at most 3, marked as unverified hints), opened
        (numbered lines the child has then seen: up to 32 of the first, 16 of the others).
        An accepted answer citing lines inside an opened window gets the window, as listed,
        right after that item. Explore: True."""
    @property
    def tool_result_format(self) -> Literal["json", "compact"]:
        """``"json"``: the envelope (default); ``"compact"``: ``path:line:text`` lines for Grep,
        numbered lines for Read, paths for Glob (fewer tokens)."""
    @property
    def scout_fallback(self) -> bool:
        """When the model gives no verified, completed answer, the offline scout's answer to
        the task (if it has one) is returned instead, its summary saying so (never after a
        model error, which stays visible). The scout searches before the first model call, so a
        timeout leaves it its answer. Default False; not with ``output_schema``."""
    @property
    def output_schema(self) -> OutputSchema | None:
        """The caller's own result shape, in place of ``result_contract``'s: a pydantic model
        class or a JSON-schema dict, as given; None (default) for the contract's. The child is
        told the schema in its system prompt (in place of the prompt's ``Answer:`` paragraph),
        with outrider's ``evidence`` (required, grounded) and ``status`` (``completed``,
        ``partial``, ``not_found`` or ``failed``) beside its fields unless it declares them;
        the completion gate checks each final answer against it (with the same repairs and
        ``gate_retries``), and :attr:`SubagentLaunchResult.result` is the class's instance that
        passed (a dict for a JSON schema), the evidence in
        :attr:`SubagentLaunchResult.evidence`. Pickling keeps the schema as a JSON-schema dict
        (a class is not kept)."""
    @property
    def max_summary_chars(self) -> int | None:
        """The most characters of the summary the result keeps (100..1 000 000; None, the
        default: no limit). The child is told the limit; a longer summary is cut to it, ending
        in ``… [summary cut by max_summary_chars=N: K of M characters shown]``. With an
        ``output_schema`` the answer object is never changed: the cap applies to the Task
        envelope's ``text``."""
    @property
    def tuning(self) -> dict[str, float]:
        """The knobs of the small-model assists (a copy), each with its default unless set:
        ``leads`` (3, the code index's places the repo-map hint lists), ``fusion_k`` (60, the
        ``k`` of the reciprocal-rank fusion of the model's citations with the leads),
        ``lead_read_lines`` (40, lines the hint suggests reading of a lead),
        ``scout_time_share`` (0.1) and ``scout_time_cap_seconds`` (30, the offline scout's
        time before the first call), ``min_checked_name`` (3, the shortest name a summary is
        checked for), ``shrink_used_results`` (1: a Read result the model has cited, or read
        again, is re-sent as its cited lines and a note of what was cut; 0 re-sends it whole),
        and the code index's ranking: ``rank_compound`` (0.5, the weight of an
        identifier compound of adjacent question words, ``jsonobject`` for "JSON object"),
        ``rank_file_named`` (1/3 of the exact-name bonus, for a file named as the question's
        name), ``rank_copy_weight`` (0.4, vendored, legacy, compatibility and older ``vN/``
        copies), ``rank_test_weight`` (0.4, tests when the question does not ask for them) and
        ``rank_common_idf`` (1.4, the idf over files under which a named word's bonuses fade),
        and the ranking's weights: ``rank_bm25_k1`` (1.2) and ``rank_bm25_b`` (0.75),
        ``rank_name`` (2, a question word in a definition's name), ``rank_exact`` (6, the
        exact identifier named), ``rank_path_file`` (1.5) and ``rank_path_dir`` (0.5, a word in
        the file's name or a folder's), ``rank_parent`` (0.5, in the enclosing definition's
        name), ``rank_file_share`` (0.25, what a file's best chunk gains of its next ones) and
        ``rank_same_file_decay`` (0.55, each further chunk of a file ranked).
        Set some with ``replace(tuning={"leads": 5})``: for experiments; an unknown knob or an
        out-of-range value raises naming it."""
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
        terminal_reason: str | None = None,
    ) -> ExploreResult: ...
    @classmethod
    def from_json(
        cls,
        text: str | bytes | None,
        *,
        tool_usage: Mapping[str, int] | None = None,
        terminal_reason: str | None = None,
    ) -> ExploreResult:
        """Strict parse, exactly as the reference: raises :class:`outrider.ContractError`."""
    @classmethod
    def repair(
        cls,
        text: str | bytes | None,
        *,
        tool_usage: Mapping[str, int] | None = None,
        terminal_reason: str | None = None,
    ) -> tuple[ExploreResult, Literal["fence", "extract", "quotes", "commas", "brackets"] | None]:
        """Lenient parse: also takes a fenced or prose-wrapped answer, one whose strings hold
        unescaped quotes (code quoted in evidence), or one with a comma before a closing ``]``
        or ``}``; says which repair it made."""
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
    def evidence_sources(self) -> tuple[Literal["model", "index", "both", "seen"], ...]:
        """Where each evidence item came from, item for item: ``model`` (the model cited it, in
        lines the child saw), ``index`` (a place the code index ranked, shown as a lead, not
        vouched for by the model), ``both``, or ``seen`` (looked at by a child that stopped
        without an answer). Empty when unknown (a result parsed from text)."""
    @property
    def tool_usage(self) -> dict[str, int]: ...
    @property
    def terminal_reason(self) -> str: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __copy__(self) -> ExploreResult: ...
    def __deepcopy__(self, memo: Any) -> ExploreResult: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON text (non-ASCII kept)."""
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """pydantic support: an instance validates as is, a dict through :meth:`from_dict`; serialises as :meth:`to_dict`."""
    def _repr_html_(self) -> str:
        """Jupyter: an HTML view (escaped, theme-neutral colours, long parts folded)."""
    def _repr_markdown_(self) -> str:
        """Jupyter: the same as Markdown."""

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
        terminal_reason: str | None = None,
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
        terminal_reason: str | None = None,
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
        terminal_reason: str | None = None,
        tool_usage: Mapping[str, int] | None = None,
        token_usage: int | None = None,
    ) -> tuple[
        VerificationResult, Literal["fence", "extract", "quotes", "commas", "brackets"] | None
    ]:
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
    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON text (non-ASCII kept)."""
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """pydantic support: an instance validates as is, a dict through :meth:`from_dict`; serialises as :meth:`to_dict`."""
    def _repr_html_(self) -> str:
        """Jupyter: an HTML view (escaped, theme-neutral colours, long parts folded)."""
    def _repr_markdown_(self) -> str:
        """Jupyter: the same as Markdown."""

def check_evidence(root: str | PathLike[str], evidence: str | Iterable[str]) -> list[EvidenceCheck]:
    """Say for each ``path:line`` / ``path:start-end`` item whether the file exists under
    ``root`` and the lines are in range (``reason`` names the problem when not)."""

def run_tool(
    root: str | PathLike[str],
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    runtime_mode: Literal["readonly_subagent", "main_agent"] | None = None,
    timeout: float | None = None,
) -> ToolEnvelope:
    """Run one read-only tool (Read, Grep, Glob, or Search: ranked search of the code index)
    confined to ``root`` and return the envelope the model would see. Bad arguments, denied or
    unknown tools give an error envelope, never an exception; only a bad ``root``, ``name`` type,
    ``runtime_mode`` (default ``readonly_subagent``, a child's permissions) or ``timeout``
    raises."""

def tool_schemas(
    format: Literal["openai", "anthropic"] | None = None, names: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """The complete JSON schemas of Read, Grep and Glob (or of ``names``), sorted by name, as
    OpenAI ``{"type": "function", "function": {...}}`` (the default) or Anthropic ``{name,
    description, input_schema}`` tool definitions."""

@final
class OpenAICompatible:
    """The built-in client for ``POST {base_url}/chat/completions`` (timeouts, retries with
    backoff and jitter on 408/409/429/5xx honouring Retry-After, classified errors)."""

    def __new__(
        cls,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        max_retries: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> OpenAICompatible: ...
    @overload
    @classmethod
    def from_env(
        cls,
        prefix: str | None = None,
        *,
        env_file: str | PathLike[str] | Literal[False] | None = None,
        root: str | PathLike[str] | None = None,
        required: Literal[True] = True,
    ) -> OpenAICompatible:
        """From ``{prefix}_MODEL_ID`` / ``_API_KEY`` / ``_BASE_URL`` (``prefix`` defaults to
        ``LLM``). An unset ``{prefix}_MODEL_ID`` is a :class:`~outrider.ConfigError` naming it
        and what else to set; with ``required=False`` it gives None instead, when neither the
        key nor the base URL is set either (either without the model id is still an error:
        a model was meant). A missing key for a server that is not on this machine (loopback or
        private-network address) is an error naming ``{prefix}_API_KEY`` before any request is
        sent; a server that takes no key gets any value. A ``.env`` file fills in what the
        environment leaves unset: ``env_file=None`` reads ``./.env`` unless it lies inside
        ``root`` (the explored root), ``False`` reads none, a path reads that file (an error if
        it is not a readable regular file of at most 1 MiB). A key is sent only to the base URL
        configured in the same place (environment or the same ``.env``); the light route
        borrows ``LLM_API_KEY`` only for the main route's base URL."""
    @overload
    @classmethod
    def from_env(
        cls,
        prefix: str | None = None,
        *,
        env_file: str | PathLike[str] | Literal[False] | None = None,
        root: str | PathLike[str] | None = None,
        required: bool,
    ) -> OpenAICompatible | None: ...
    @property
    def env_file(self) -> str | None:
        """The ``.env`` file some settings came from (``from_env``), else None."""
    def __call__(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One call; returns ``{content, tool_calls, finish_reason, usage}``. A failed call raises
        :class:`outrider.ModelError` (``.kind`` says which: ``auth``, ``rate_limit``, ...)."""
    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_retries(self) -> int: ...

@final
class SubagentRequest:
    """A request for one child (frozen)."""

    def __new__(
        cls,
        task: str,
        profile_name: str | None = None,
        structured_context: Mapping[str, Any] | None = None,
        model_choice: str | None = None,
        parent_session_id: str | None = None,
        parent_run_id: str | None = None,
        *,
        output_schema: OutputSchema | None = None,
    ) -> SubagentRequest:
        """``output_schema`` replaces the profile's result shape for this child (see
        :attr:`RuntimeProfile.output_schema`)."""
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubagentRequest:
        """Rebuild from :meth:`to_dict` output, validated as the constructor validates (pickling
        rests on it)."""
    @property
    def profile_name(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def structured_context(self) -> dict[str, Any]: ...
    @property
    def model_choice(self) -> str | None: ...
    @property
    def parent_session_id(self) -> str | None: ...
    @property
    def parent_run_id(self) -> str | None: ...
    @property
    def output_schema(self) -> OutputSchema | None:
        """The schema the child answers in, as given; None for the profile's."""
    def render(self) -> str:
        """The child's first message: ``<task>\\n\\nStructured context:\\n<sorted JSON>``."""
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...

@final
class SubagentLaunchResult:
    """What a launch produced (frozen)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubagentLaunchResult:
        """Rebuild from :meth:`to_dict` output; a bad or unknown key raises ConfigError."""
    @property
    def status(self) -> Literal["completed", "partial", "failed", "unverified"]: ...
    @property
    def profile_name(self) -> str: ...
    @property
    def child_session_id(self) -> str: ...
    @property
    def child_run_id(self) -> str: ...
    @property
    def result(self) -> ExploreResult | VerificationResult | Any | None:
        """The validated answer: an :class:`ExploreResult` or :class:`VerificationResult`, or,
        with an ``output_schema``, the very instance of its pydantic class that passed the gate
        (never validated again) or the validated dict; the object as the child wrote it (a
        dict) when it did not fit (see :attr:`schema_errors`); None when the child failed."""
    @property
    def evidence(self) -> list[str]:
        """The ``path:line`` items the answer cites, as the gate checked them, whatever its
        shape: with an ``output_schema``, kept beside your object (which need not hold them)."""
    @property
    def schema_errors(self) -> list[str]:
        """With an ``output_schema``: how the answer did not fit it after the gate's retries
        (``result`` is then the object as written, the status not ``completed``); empty when it
        fits."""
    @property
    def output_schema(self) -> str | None:
        """The name of the ``output_schema`` the result follows (its ``title``, a pydantic
        class's name), when one was used. A result rebuilt by :meth:`from_dict` (or unpickled)
        holds the answer as a dict."""
    def output(self, cls: type[_T]) -> _T:
        """``result`` as an instance of ``cls`` (the ``output_schema`` class, or ``dict``),
        typed as such; :class:`outrider.ResultError` when the child failed or returned another
        type."""
    @property
    def explore(self) -> ExploreResult:
        """``result`` as an :class:`ExploreResult`; :class:`outrider.ResultError` when the child
        failed (no result) or returned a verification verdict."""
    @property
    def verification(self) -> VerificationResult:
        """``result`` as a :class:`VerificationResult`; :class:`outrider.ResultError` otherwise."""
    @property
    def model_used(self) -> Literal["light", "main", "offline"]: ...
    @property
    def model_name(self) -> str:
        """The model behind :attr:`model_used`: the id sent in requests (``"gpt-4.1-mini"``), or,
        for a backend that sends none (a callable choosing its own model), its description
        (``"python callable my_llm"``); ``""`` in a result saved before it existed."""
    @property
    def task(self) -> str:
        """The task the child was given: the question asked."""
    @property
    def terminal_reason(self) -> TerminalReason:
        """Why the child stopped, with the reference's names: ``runtime_error`` for every failed
        child (the precise cause is in :attr:`failure_reason`), ``completed_unverified`` for an
        answer whose evidence could not be grounded (status ``unverified``)."""
    @property
    def failure_reason(self) -> TerminalReason | None:
        """The precise cause of a failed child (``timeout``, ``model_error``, ...); else None."""
    @property
    def ungrounded_evidence(self) -> list[EvidenceCheck]:
        """Evidence items the completion gate could not find in the files (status
        ``unverified``); empty otherwise."""
    @property
    def error(self) -> str | None:
        """Why the child failed; for an ``output_schema`` result that is not ``completed``, why
        (its own object has no place for outrider's notes)."""
    @property
    def elapsed_ms(self) -> int: ...
    @property
    def tool_usage(self) -> dict[str, int]: ...
    @property
    def token_usage(self) -> int: ...
    @property
    def input_tokens(self) -> int:
        """Of :attr:`token_usage`, the prompt (input) tokens, summed over the model calls."""
    @property
    def cached_input_tokens(self) -> int:
        """Of ``input_tokens``, those the provider read from its prompt cache (billed at a
        discount; ``prompt_tokens_details.cached_tokens`` or Anthropic's
        ``cache_read_input_tokens``); 0 when the provider does not say."""
    @property
    def output_tokens(self) -> int:
        """Of :attr:`token_usage`, the completion (output) tokens."""
    @property
    def usage_estimated(self) -> bool:
        """True when some model call reported no usage and its tokens were estimated."""
    @property
    def repair(self) -> Literal["fence", "extract", "quotes", "commas", "brackets"] | None:
        """The repair the completion gate made to accept the final answer, if any."""
    @property
    def model_calls(self) -> int: ...
    @property
    def trace_path(self) -> str | None: ...
    @property
    def trace_error(self) -> str | None:
        """Why the trace file is missing or incomplete (not creatable, or a write failed)."""
    def to_dict(self) -> dict[str, Any]: ...
    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON text (non-ASCII kept)."""
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """pydantic support: an instance validates as is; serialises as :meth:`to_dict`."""
    def _repr_html_(self) -> str:
        """Jupyter: an HTML view (escaped, theme-neutral colours, long parts folded)."""
    def _repr_markdown_(self) -> str:
        """Jupyter: the same as Markdown."""
    def __eq__(self, other: object, /) -> bool:
        """Equal when every field is (:meth:`to_dict`)."""
    def __hash__(self) -> int: ...

# Extended by outrider._entry.SubagentLauncher, the class users get.
@disjoint_base
class SubagentLauncher:
    """Launches sandboxed read-only children over ``project_root``.

    ``main_llm`` and ``light_llm`` are callables (sync or async), :class:`OpenAICompatible`,
    :class:`OfflineScout`, an ``openai.OpenAI``/``AsyncOpenAI`` or
    ``anthropic.Anthropic``/``AsyncAnthropic`` client or its bound ``chat.completions.create``
    / ``messages.create`` (through :mod:`outrider.adapters`; the model's name comes from
    ``main_model``/``light_model``, a :class:`~outrider.ConfigError` naming them when it is
    not given), or a ``"provider:model"`` string (``"openai:gpt-4.1"``,
    ``"anthropic:claude-haiku-4-5"``, ``"litellm:..."``; the key from ``OPENAI_API_KEY`` /
    ``ANTHROPIC_API_KEY``, see :func:`outrider.adapters.from_string`). Without ``main_llm``,
    ``LLM_*`` from the environment is used when ``LLM_MODEL_ID`` is set, else the offline scout
    (model-free; ``model_used`` is then ``"offline"``); ``LLM_API_KEY`` or ``LLM_BASE_URL``
    without ``LLM_MODEL_ID`` is a ConfigError naming it. Without ``light_llm`` the light route
    comes from ``LIGHT_LLM_*`` when set, else falls back to main. ``trace_dir`` defaults to
    ``~/.local/state/outrider/traces`` (``False`` keeps traces in memory) and must be outside
    the root.
    """

    def __new__(
        cls,
        project_root: str | PathLike[str],
        main_llm: ModelCallable
        | Callable[..., Any]
        | ModelClient
        | str
        | OpenAICompatible
        | OfflineScout
        | None = None,
        light_llm: ModelCallable
        | Callable[..., Any]
        | ModelClient
        | str
        | OpenAICompatible
        | OfflineScout
        | None = None,
        *,
        trace_dir: str | PathLike[str] | Literal[False] | None = None,
        parent_trace: str | PathLike[str] | None = None,
        profiles: Iterable[RuntimeProfile] | Mapping[str, RuntimeProfile] | None = None,
        max_concurrency: int | None = None,
        main_model: str | None = None,
        light_model: str | None = None,
        model_settings: ModelSettings | None = None,
        trace_retention: int | str | Literal[False] | None = None,
        env_file: str | PathLike[str] | Literal[False] | None = None,
    ) -> Self:
        """``max_concurrency`` bounds the children running at once through this launcher
        (default 8; a ``launch_many`` call's own ``max_concurrency`` overrides the default, not
        a value given here). ``main_model``/``light_model`` name the model each route's requests carry
        (the ``"model"`` of the request dict a callable receives; a ``light_model`` without a
        ``light_llm`` sends light requests to ``main_llm`` under that name), and
        ``model_settings`` (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``extra_body``)
        go with every request. ``trace_retention`` says which old traces are deleted from
        ``trace_dir`` when the launcher is built: a file count (the newest are kept), an age
        (``"30d"``, ``"12h"``), both (``"1000,30d"``), or ``False`` for none; default
        ``$OUTRIDER_TRACE_KEEP``, else ``"1000,30d"``. Only outrider's own
        ``trace-child-*``/``trace-main-*`` files are deleted. ``env_file`` is the ``.env`` the
        default models read when ``main_llm``/``light_llm`` are None (as
        :meth:`OpenAICompatible.from_env`; ``./.env`` is not read when it lies inside
        ``project_root``)."""
    def verify(
        self,
        candidate: str,
        requirements: Mapping[str, Any] | None = None,
        evidence: Iterable[str | Mapping[str, Any]] | None = None,
    ) -> CompletionVerdict:
        """The reference's completion gate. ``requirements`` takes the keys of the reference's
        ``CompletionRequirements`` (``requires_verification``, ``verification_kinds``,
        ``allow_unverified``, ``has_incomplete_todos``, ``incomplete_todos``,
        ``explicit_user_constraints``; ``to_trace_payload()`` of one as it is), and outrider's
        ``todos`` and ``criteria``. Deterministic checks first, with no child: an incomplete
        todo (an item of ``todos``, ``{"content", "status"}``, not done; an item of
        ``incomplete_todos``; ``has_incomplete_todos=True``) is FAIL; so is each of
        ``verification_kinds`` (``"tests"``, ``"lint"``, ...) without passing evidence, an
        ``evidence`` dict in the reference's ``VerificationEvidence`` form
        ``{"requirement_id": "verification:tests", "status": "success"[, "valid": True]}``
        (``missing_verification_evidence:tests``; one that failed or was marked invalid:
        ``verification_invalid:tests``), or UNVERIFIED instead for a missing one with
        ``allow_unverified=True`` (kinds are checked only when ``requires_verification`` is not
        False, as the reference does); and ``requires_verification=False`` is PASS. Otherwise a
        verification child decides, given the candidate, the requirements (free-form ones under
        ``criteria``, a str or a list of str; ``explicit_user_constraints``, a list of str, are
        shown to it as well) and the evidence (``"path:line"`` strings and the dicts): PASS,
        FAIL with feedback, or UNVERIFIED when it gives no verdict. Any other requirement key
        is a :class:`~outrider.ConfigError` naming it and the known ones."""
    @property
    def profiles(self) -> list[str]: ...
    @property
    def has_light_model(self) -> bool: ...
    # The native halves of the entry points in outrider._entry: each blocks (GIL released,
    # Ctrl-C heard) or, with ``awaitable``, returns an asyncio future of the running loop.
    def _launch(
        self,
        request: SubagentRequest,
        on_event: OnEvent | None,
        awaitable: bool,
        output_schema: OutputSchema | None = None,
    ) -> Any: ...
    def _launch_many(
        self,
        requests: Iterable[SubagentRequest],
        max_concurrency: int | None,
        on_event: OnEvent | None,
        on_finished: Callable[[], object] | None,
        awaitable: bool,
    ) -> Any: ...

@final
class CompletionVerdict:
    """The verdict of :meth:`SubagentLauncher.verify`."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompletionVerdict:
        """Rebuild from :meth:`to_dict` output (``{verdict, reasons, feedback}``), with an optional
        ``launch`` (a :class:`SubagentLaunchResult` or its dict); ``to_dict`` leaves the launch
        out, pickling keeps it."""
    @property
    def verdict(self) -> Literal["PASS", "FAIL", "UNVERIFIED"]: ...
    @property
    def reasons(self) -> list[str]: ...
    @property
    def feedback(self) -> str | None:
        """``Independent verification did not pass: ...`` on FAIL."""
    @property
    def launch(self) -> SubagentLaunchResult | None:
        """The verification child's launch; None when the deterministic checks decided."""
    def to_dict(self) -> dict[str, Any]: ...
    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON text (non-ASCII kept)."""
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """pydantic support: an instance validates as is; serialises as :meth:`to_dict`."""
    def _repr_html_(self) -> str:
        """Jupyter: an HTML view (escaped, theme-neutral colours, long parts folded)."""
    def _repr_markdown_(self) -> str:
        """Jupyter: the same as Markdown."""
    def __eq__(self, other: object, /) -> bool:
        """Equal when every field is (:meth:`to_dict` and the launch)."""
    def __hash__(self) -> int: ...

@final
class OfflineScout:
    """A deterministic, model-free explorer: a ranked search of the code index (or, given Grep
    alone, Grep for the task's terms ranked the same way), Reads of the best places, an answer
    with grounded ``path:line`` evidence. The default when no LLM is configured."""

    def __new__(cls) -> OfflineScout: ...
    @staticmethod
    def terms(task: str) -> list[str]:
        """The search terms the scout takes from ``task``."""

# Extended by outrider._entry.TaskTool, the class users get.
@disjoint_base
class TaskTool:
    """The Task tool for a main agent: validates arguments (reference messages and order),
    launches a child, and returns the standard envelope. ``launcher`` may be a zero-argument
    factory, built on first use. ``subagent_types`` are the profiles reachable (default
    ``["explore"]``).

    The envelope is compact by default: JSON without indentation, no ``context`` (so the
    prompt is not echoed back), and ``data.result`` without the ``summary`` that ``text``
    carries. ``reference_format=True`` gives the reference's envelope instead
    (``{status, data, text, stats, context{cwd, params_input}}``, indented by 2, the result
    whole). ``output_schema`` makes every child answer in that shape (``data.result`` is the
    validated object; ``text`` its ``summary`` field, else the object as JSON)."""

    def __new__(
        cls,
        launcher: SubagentLauncher | Callable[[], SubagentLauncher],
        *,
        subagent_types: Iterable[str] | None = None,
        reference_format: bool = False,
        output_schema: OutputSchema | None = None,
    ) -> Self: ...
    @property
    def reference_format(self) -> bool:
        """Whether envelopes follow the reference's format (see the class docs)."""
    @property
    def output_schema(self) -> OutputSchema | None:
        """The schema every child answers in, as given; None for each profile's own."""
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...
    @property
    def subagent_types(self) -> list[str]: ...
    def openai_schema(self) -> dict[str, Any]: ...
    def anthropic_schema(self) -> dict[str, Any]: ...
    def _run(
        self,
        args: Mapping[str, Any] | str,
        awaitable: bool,
        output_schema: OutputSchema | None = None,
    ) -> Any:
        """The native half of ``run``, ``run_json`` and ``run_async`` (``outrider._entry``)."""

# Extended by outrider._entry.MainAgent, the class users get.
@disjoint_base
class MainAgent:
    """A main agent (``main_agent`` mode) with Read, Grep, Glob and the Task tool, running the same
    loop as a child, so a whole parent-to-child exploration runs in one call. Its trace links to
    each child's trace."""

    def __new__(
        cls,
        project_root: str | PathLike[str],
        llm: ModelCallable
        | Callable[..., Any]
        | ModelClient
        | str
        | OpenAICompatible
        | OfflineScout,
        light_llm: ModelCallable
        | Callable[..., Any]
        | ModelClient
        | str
        | OpenAICompatible
        | OfflineScout
        | None = None,
        *,
        launcher: SubagentLauncher | None = None,
        trace_dir: str | PathLike[str] | Literal[False] | None = None,
        subagent_types: Iterable[str] | None = None,
        max_steps: int | None = None,
        total_token_budget: int | None = None,
        context_token_budget: int | None = None,
        timeout_seconds: float | None = None,
        model: str | None = None,
        light_model: str | None = None,
        model_settings: ModelSettings | None = None,
        trace_retention: int | str | Literal[False] | None = None,
    ) -> Self:
        """``model``, ``light_model``, ``model_settings`` and ``trace_retention`` as for
        :class:`SubagentLauncher`; they reach the children too."""
    def _run(self, task: str, on_event: OnEvent | None, awaitable: bool) -> Any:
        """The native half of ``run`` and ``run_async`` (``outrider._entry``)."""

@final
class _ModelInbox:
    """Where outrider's model threads wait for jobs (private to ``outrider._aio``)."""

    def put(self, job: Callable[[], None]) -> None: ...
    def get(self, timeout: float) -> Callable[[], None] | None: ...

_TRACE_EVENTS: tuple[str, ...]
"""Every trace event name, in the core's order (``EventKind::ALL``)."""
_TERMINAL_REASONS: tuple[str, ...]
"""Every terminal reason, in the core's order (``TerminalReason::ALL``)."""

def _redact(text: str) -> str:
    """``text`` with every secret the core knows of removed."""

def _register_secret(value: object) -> None:
    """Remove ``value`` (a str of 8 or more characters) from everything the core reports."""
