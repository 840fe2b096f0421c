"""outrider: sandboxed, read-only explore sub-agents for LLM agents.

A main agent delegates a search to a child with a fresh context, only the Read/Grep/Glob tools,
hard step and token budgets, and a strict JSON result contract::

    import outrider

    result = outrider.ExploreResult.from_json(
        '{"status": "completed", "summary": "Auth is in src/auth.py", "evidence": ["src/auth.py:12"]}'
    )
    result.evidence  # ('src/auth.py:12',)
"""

from __future__ import annotations

import logging as _logging

# The Jupyter views register themselves in their one table (outrider._views).
from outrider import _display  # noqa: F401
from outrider._core import (
    EXPLORE_PROFILE,
    READONLY_TOOLS,
    VERIFICATION_PROFILE,
    CompletionVerdict,
    ExploreResult,
    OfflineScout,
    OpenAICompatible,
    RuntimeProfile,
    SubagentLaunchResult,
    SubagentRequest,
    VerificationResult,
    __version__,
    check_evidence,
    run_tool,
    tool_schemas,
)
from outrider._entry import MainAgent, SubagentLauncher, TaskTool
from outrider._mainrun import MainRunResult
from outrider.batch import aexplore_many, explore_many
from outrider.exceptions import (
    ArgumentTypeError,
    ConfigError,
    ContractError,
    ErrorDetails,
    InternalError,
    LaunchError,
    MissingExtraError,
    ModelError,
    OutriderError,
    PathError,
    ProfileError,
    ResultError,
    TraceDirError,
    TraceError,
)
from outrider.trace import Trace
from outrider.types import EvidenceCheck

# A library's warnings go where the application's logging sends them, not to stderr through
# logging's last-resort handler when the application configured none.
_logging.getLogger("outrider").addHandler(_logging.NullHandler())

__all__ = [
    "EXPLORE_PROFILE",
    "READONLY_TOOLS",
    "VERIFICATION_PROFILE",
    "ArgumentTypeError",
    "CompletionVerdict",
    "ConfigError",
    "ContractError",
    "ErrorDetails",
    "EvidenceCheck",
    "ExploreResult",
    "InternalError",
    "LaunchError",
    "MainAgent",
    "MainRunResult",
    "MissingExtraError",
    "ModelError",
    "OfflineScout",
    "OpenAICompatible",
    "OutriderError",
    "PathError",
    "ProfileError",
    "ResultError",
    "RuntimeProfile",
    "SubagentLaunchResult",
    "SubagentLauncher",
    "SubagentRequest",
    "TaskTool",
    "Trace",
    "TraceDirError",
    "TraceError",
    "VerificationResult",
    "__version__",
    "aexplore_many",
    "check_evidence",
    "explore_many",
    "run_tool",
    "tool_schemas",
]
