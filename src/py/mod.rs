//! Python bindings: the only module that knows about Python. It converts and delegates; every
//! rule lives in the core.

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

use crate::profile::{explore_profile, verification_profile, READONLY_TOOLS};

/// The native core of outrider (`outrider._core`).
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
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
    m.add(
        "EXPLORE_PROFILE",
        profile::PyRuntimeProfile::new(explore_profile()),
    )?;
    m.add(
        "VERIFICATION_PROFILE",
        profile::PyRuntimeProfile::new(verification_profile()),
    )?;
    m.add(
        "READONLY_TOOLS",
        convert::frozenset(py, READONLY_TOOLS.iter().map(|s| s.to_string()))?,
    )?;
    let all = [
        "EXPLORE_PROFILE",
        "READONLY_TOOLS",
        "VERIFICATION_PROFILE",
        "CompletionVerdict",
        "ExploreResult",
        "MainAgent",
        "OfflineScout",
        "OpenAICompatible",
        "RuntimeProfile",
        "VerificationResult",
        "__version__",
        "SubagentLaunchResult",
        "SubagentLauncher",
        "SubagentRequest",
        "TaskTool",
        "check_evidence",
        "run_tool",
        "tool_schemas",
    ];
    m.add("__all__", all.to_vec())?;
    Ok(())
}
