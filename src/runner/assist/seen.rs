//! The places the child saw, as leads, for an explore child that ended without an answer (after
//! the hint's leads, when it had some): each a line it was shown, none an answer.

use crate::contract::{ExploreResult, SubagentStatus, ToolUsage};
use crate::runner::assist::Assist;
use crate::runner::observed::Observed;
use crate::runner::outcome::TerminalReason;

/// The most places a partial answer built without the model cites.
const SEEN_CITES: usize = 5;

/// The assist that returns the places the child saw when it has no answer.
pub(crate) struct Seen;

impl Assist for Seen {
    fn no_answer(
        &self,
        reason: TerminalReason,
        error: &str,
        observed: &Observed,
    ) -> Option<ExploreResult> {
        if observed.is_empty() {
            return None;
        }
        let (findings, evidence) = seen_places(observed);
        Some(ExploreResult {
            status: SubagentStatus::Partial,
            summary: format!(
                "The child stopped ({}) before it could give an answer; these are the places it searched and read, as leads, not an answer.",
                reason.as_str()
            ),
            findings,
            evidence_sources: vec!["seen".to_string(); evidence.len()],
            evidence,
            unresolved_questions: vec![format!("outrider: the task is not answered: {error}")],
            tool_usage: ToolUsage::new(),
            terminal_reason: reason.as_str().into(),
        })
    }
}

/// The places a child saw, as findings and their citations (at most [`SEEN_CITES`]): the Grep
/// matches first, then one line of each file it read that no match cites.
fn seen_places(observed: &Observed) -> (Vec<String>, Vec<String>) {
    let mut evidence: Vec<String> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    for (path, line, text) in observed.hits() {
        if evidence.len() >= SEEN_CITES {
            break;
        }
        let cite = format!("{path}:{line}");
        if !evidence.contains(&cite) {
            findings.push(format!("{cite}: {}", text.trim()));
            evidence.push(cite);
        }
    }
    for (path, line) in observed.files() {
        if evidence.len() >= SEEN_CITES {
            break;
        }
        if !evidence.iter().any(|e| e.starts_with(&format!("{path}:"))) {
            findings.push(format!("{path}:{line}: read"));
            evidence.push(format!("{path}:{line}"));
        }
    }
    (findings, evidence)
}
