//! Completion verification: the reference's optional completion gate (§2.14). A verification
//! child independently checks a candidate against its requirements and evidence.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::contract::VerificationVerdict;
use crate::launcher::{SubagentLaunchResult, SubagentRequest};
use crate::runner::ParsedResult;

/// The task the verification child receives.
pub const VERIFY_TASK: &str = "Independently verify this completion candidate.";

/// The verdict of a verification gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletionVerdict {
    /// `PASS`, `FAIL` or `UNVERIFIED`.
    pub verdict: &'static str,
    /// Why (the child's reasons, or a fixed reason when it gave none).
    pub reasons: Vec<String>,
    /// What to tell the agent whose work failed verification.
    pub feedback: Option<String>,
}

/// The request: the candidate, requirements and evidence as structured context, route `main`.
pub fn verification_request(
    candidate: &str,
    requirements: Value,
    evidence: Vec<String>,
) -> SubagentRequest {
    let mut context = Map::new();
    context.insert("candidate".into(), json!({"final_text": candidate}));
    context.insert("requirements".into(), requirements);
    context.insert("evidence".into(), json!(evidence));
    SubagentRequest {
        profile_name: "verification".into(),
        task: VERIFY_TASK.into(),
        model_choice: None,
        structured_context: context,
        parent_session_id: None,
        parent_run_id: None,
    }
}

/// Map a finished verification launch to a verdict, as the reference does: PASS stays PASS,
/// UNVERIFIED stays UNVERIFIED, FAIL and PARTIAL become FAIL with feedback, and a child without a
/// verification result is UNVERIFIED (`verification_agent_error`).
pub fn verdict_of(launched: &SubagentLaunchResult) -> CompletionVerdict {
    let Some(ParsedResult::Verification(v)) = &launched.result else {
        let mut reasons = vec!["verification_agent_error".to_string()];
        if let Some(e) = &launched.error {
            reasons.push(e.clone());
        }
        return CompletionVerdict {
            verdict: "UNVERIFIED",
            reasons,
            feedback: None,
        };
    };
    let or = |fallback: &str| {
        if v.reasons.is_empty() {
            vec![fallback.to_string()]
        } else {
            v.reasons.clone()
        }
    };
    match v.verdict {
        VerificationVerdict::Pass => CompletionVerdict {
            verdict: "PASS",
            reasons: v.reasons.clone(),
            feedback: None,
        },
        VerificationVerdict::Unverified => CompletionVerdict {
            verdict: "UNVERIFIED",
            reasons: or("verification_agent_unverified"),
            feedback: None,
        },
        VerificationVerdict::Fail | VerificationVerdict::Partial => {
            let fallback = if v.verdict == VerificationVerdict::Fail {
                "verification_agent_fail"
            } else {
                "verification_agent_partial"
            };
            let reasons = or(fallback);
            let feedback = format!(
                "Independent verification did not pass: {}",
                reasons.join("; ")
            );
            CompletionVerdict {
                verdict: "FAIL",
                reasons,
                feedback: Some(feedback),
            }
        }
    }
}
