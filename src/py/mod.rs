//! Python bindings: the only module that knows about Python. Each class extracts its arguments,
//! calls one core function, and converts the result; every rule lives in the core.

mod agent;
mod contract;
mod convert;
mod errors;
mod hot;
mod launcher;
mod model;
mod openai;
mod profile;
mod runtime;
mod task;
mod tools;

use pyo3::prelude::*;
use pyo3::types::PyFrozenSet;

/// The names `outrider._core` exports: the one list `outrider/__init__.py` and `_core.pyi` are
/// checked against (tests/test_package.py).
pub const EXPORTS: [&str; 18] = [
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
];

/// Python's `hash()` of a frozen value, from the core's `Hash`.
fn hash_of(value: &impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The native core of outrider (`outrider._core`).
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::VERSION)?;
    m.add_class::<profile::PyRuntimeProfile>()?;
    m.add_class::<contract::PyExploreResult>()?;
    m.add_class::<contract::PyVerificationResult>()?;
    m.add_function(wrap_pyfunction!(contract::check_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(tools::run_tool, m)?)?;
    m.add_function(wrap_pyfunction!(tools::tool_schemas, m)?)?;
    m.add_class::<launcher::PySubagentRequest>()?;
    m.add_class::<launcher::PySubagentLaunchResult>()?;
    m.add_class::<launcher::PySubagentLauncher>()?;
    m.add_class::<openai::PyOpenAICompatible>()?;
    m.add_class::<task::PyTaskTool>()?;
    m.add_class::<agent::PyOfflineScout>()?;
    m.add_class::<agent::PyMainAgent>()?;
    m.add_class::<agent::PyCompletionVerdict>()?;
    let explore = profile::PyRuntimeProfile {
        inner: crate::explore_profile(),
    };
    m.add("EXPLORE_PROFILE", explore)?;
    let verification = profile::PyRuntimeProfile {
        inner: crate::verification_profile(),
    };
    m.add("VERIFICATION_PROFILE", verification)?;
    m.add(
        "READONLY_TOOLS",
        PyFrozenSet::new(m.py(), crate::READONLY_TOOLS)?,
    )?;
    m.add("__all__", EXPORTS.to_vec())?;
    Ok(())
}
