//! The completion gate: a final answer must meet the profile's contract (after the allowed
//! repairs) and cite evidence that exists in the workspace.

use std::fmt;
use std::str::FromStr;

use crate::contract::{
    ContractError, ExploreResult, Repair, ToolUsage, VerificationMeta, VerificationResult,
};
use std::time::Instant;

use crate::evidence::{check_evidence_until, EvidenceCheck};
use crate::profile::{ResultContract, RuntimeProfile};
use crate::runner::outcome::ParsedResult;
use crate::tools::workspace::Workspace;

/// The gate's verdict on a final answer.
pub(crate) enum Gate {
    /// Accepted, with the repair that was needed.
    Accept(ParsedResult, Option<Repair>),
    /// Refused: the feedback for the model, and the parsed answer when only evidence failed.
    Reject {
        /// What the model is told.
        feedback: String,
        /// The answer, its repair and the ungrounded evidence, when the contract held.
        parsed: Option<(ParsedResult, Option<Repair>, Vec<EvidenceCheck>)>,
    },
}

/// The final answer parsed by the profile's contract (with repair), or free text without one.
pub(crate) fn parse_answer(
    profile: &RuntimeProfile,
    text: &str,
) -> Result<(ParsedResult, Option<Repair>), ContractError> {
    match profile.result_contract {
        None => Ok((ParsedResult::Text(text.to_string()), None)),
        Some(ResultContract::Explore) => ExploreResult::repair(text, ToolUsage::new(), "completed")
            .map(|(r, rep)| (ParsedResult::Explore(r), rep)),
        Some(ResultContract::Verification) => {
            VerificationResult::repair(text, VerificationMeta::default())
                .map(|(r, rep)| (ParsedResult::Verification(r), rep))
        }
    }
}

/// The completion gate: the contract (with repair), then the evidence check, which gives up at
/// `deadline` (what it could not check is not grounded).
pub(crate) async fn check(
    profile: &RuntimeProfile,
    workspace: &Workspace,
    text: &str,
    deadline: Instant,
) -> Gate {
    let contract = profile.result_contract.map_or("", |c| c.as_str());
    let (result, repair) = match parse_answer(profile, text) {
        Ok(ok) => ok,
        Err(e) => {
            let mut reasons: Vec<String> = Vec::new();
            for v in &e.violations {
                if !reasons.contains(&v.msg) {
                    reasons.push(v.msg.clone());
                }
            }
            return Gate::Reject {
                feedback: format!(
                    "Return only a valid {contract} JSON object: {}",
                    reasons.join("; ")
                ),
                parsed: None,
            };
        }
    };
    let evidence = result.evidence().to_vec();
    if evidence.is_empty() {
        return Gate::Accept(result, repair);
    }
    let ws = workspace.clone();
    let items = evidence.clone();
    let checking =
        tokio::task::spawn_blocking(move || check_evidence_until(&ws, &items, Some(deadline)));
    // The check stops itself at the deadline; this bounds a read that blocks in the kernel.
    let checking = crate::exec::spin_first(checking);
    let checks = match tokio::time::timeout_at(deadline.into(), checking).await {
        Ok(Ok(checks)) => checks,
        _ => check_evidence_until(workspace, &evidence, Some(deadline)),
    };
    let ungrounded: Vec<EvidenceCheck> = checks.into_iter().filter(|c| !c.grounded).collect();
    if ungrounded.is_empty() {
        return Gate::Accept(result, repair);
    }
    let listed: Vec<String> = ungrounded.iter().map(|c| c.message.clone()).collect();
    Gate::Reject {
            feedback: format!(
                "Return only a valid {contract} JSON object: some evidence is not grounded in the repository. {} Cite only files and lines you have read or matched, as relative/path:line or relative/path:start-end.",
                listed.join(" ")
            ),
            parsed: Some((result, repair, ungrounded)),
        }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A repair name other than `fence` or `extract`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a repair; expected fence or extract")]
pub struct UnknownRepair(pub String);

impl FromStr for Repair {
    type Err = UnknownRepair;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Repair::Fence, Repair::Extract]
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRepair(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_round_trip_through_text_and_serde() {
        for repair in [Repair::Fence, Repair::Extract] {
            let text = repair.to_string();
            assert_eq!(text.parse::<Repair>(), Ok(repair));
            assert_eq!(
                serde_json::to_value(repair).unwrap(),
                serde_json::json!(text)
            );
        }
        assert_eq!(
            "fix".parse::<Repair>().unwrap_err().to_string(),
            "'fix' is not a repair; expected fence or extract"
        );
    }
}
