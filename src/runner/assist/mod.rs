//! Small-model assists, behind one seam: each one is chosen by the profile and hooks into the
//! plain loop at a few named points only, so that the loop (`steps`, `turn`, `gate`, `ending`)
//! knows no particular assist.
//!
//! | assist | profile option | hooks |
//! |---|---|---|
//! | [`hint::Hint`]: the code index's ranked places as leads | `repo_map_hint` | first message, the too-little-exploration example, finish (rank fusion) |
//! | [`text_calls`]: tool calls a model wrote as text | always | model output |
//! | the contract's repairs (`crate::contract`) | always | answer parse |
//!
//! Every change an assist makes to an answer's evidence is recorded with its source (see
//! [`crate::contract::ExploreResult::evidence_sources`]); its knobs live in [`Tuning`].
//!
//! Assists removed because they did not pay on questions they were not tuned on (see
//! CHANGELOG.md): windows of code opened in the first message, a second look at the places
//! left out, a yes/no check of each place left out, the opening of cited lines the child had not
//! seen, and the following of an item by the window around it.

pub(crate) mod hint;
pub(crate) mod lead;
pub(crate) mod text_calls;

use std::time::Duration;

/// Every knob of the assists, in one place, with the values the runtime uses by default.
/// None is fitted to a named benchmark question.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// Ranked places the hint lists as leads.
    pub leads: usize,
    /// The `k` of reciprocal-rank fusion (`1 / (k + rank)`): 60, the usual value, so that a
    /// place both lists rank beats any place only one does.
    pub fusion_k: f64,
    /// Lines the hint suggests reading of a lead (from two lines above its first).
    pub lead_read_lines: u64,
    /// The share of `timeout_seconds` the offline scout may spend before the first call.
    pub scout_time_share: f64,
    /// The most time the offline scout may spend before the first call.
    pub scout_time_cap: Duration,
    /// The shortest name a summary may use without it being checked against what the child
    /// saw (shorter words are English as often as code).
    pub min_checked_name: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            leads: 3,
            fusion_k: 60.0,
            lead_read_lines: 40,
            scout_time_share: 0.1,
            scout_time_cap: Duration::from_secs(30),
            min_checked_name: 3,
        }
    }
}
