//! The completion gate: a final answer must meet the profile's contract (after the allowed
//! repairs, see `answer`) and cite evidence that exists in the workspace.

use std::time::Instant;

use crate::contract::{ContractError, Repair, SubagentStatus};
use crate::evidence::EvidenceCheck;
use crate::profile::RuntimeProfile;
use crate::runner::answer::{parse_answer, Unparsed};
use crate::runner::assist::Assists;
use crate::runner::grounding::{
    cited_findings, grounding, seen_path_slips, ungrounded_feedback, with_cited_findings,
};
use crate::runner::observed::Observed;
use crate::runner::outcome::ParsedResult;
use crate::tools::workspace::Workspace;

/// The gate's verdict on a final answer.
pub(crate) enum Gate {
    /// Accepted, with the repair that was needed.
    Accept(ParsedResult, Option<Repair>),
    /// Refused: the feedback for the model, and the parsed answer when only evidence failed.
    Reject {
        /// Refused for exploring too little (`min_tool_calls`), which has retries of its own.
        exploring: bool,
        /// An assist's objection: the note the answer carries if it stands after all.
        note: Option<String>,
        /// What the model is told.
        feedback: String,
        /// The answer, its repair and the ungrounded evidence, when the contract held.
        parsed: Option<(ParsedResult, Option<Repair>, Vec<EvidenceCheck>)>,
    },
    /// The caller's `output_schema` validator did not finish in time: the answer as written
    /// (unchecked), its repair, and why.
    TimedOut(ParsedResult, Option<Repair>, String),
}

/// The refusal of an answer that does not meet the contract, naming each violation once.
fn contract_refusal(profile: &RuntimeProfile, e: &ContractError) -> Gate {
    let contract = profile.answer_shape();
    let mut reasons: Vec<String> = Vec::new();
    for v in &e.violations {
        if !reasons.contains(&v.msg) {
            reasons.push(v.msg.clone());
        }
    }
    Gate::Reject {
        exploring: false,
        note: None,
        feedback: format!(
            "Return only a valid {contract} JSON object: {}",
            reasons.join("; ")
        ),
        parsed: None,
    }
}

/// What the child did before its final answer, as the gate weighs it.
pub(crate) struct Exploration<'a> {
    /// The lines it was shown.
    pub(crate) observed: &'a Observed,
    /// Its tool calls that did not fail.
    pub(crate) successful_tools: u64,
    /// A first tool call to suggest (`Read with {...}`), from the repo-map hint.
    pub(crate) example: Option<&'a str>,
    /// The task: names a summary repeats from it are not claims about the code.
    pub(crate) task: &'a str,
    /// The run's assists, which may object to an answer or word a refusal.
    pub(crate) assists: &'a Assists,
}

/// The completion gate: the contract (with repair); enough exploration (`min_tool_calls`);
/// evidence that exists (a check that gives up at `deadline`: what it could not check is not
/// grounded) and that the child saw in this run; and, for a `completed` explore answer, at least
/// one such evidence item (a finding that is a bare citation of seen lines counts, and joins the
/// evidence).
/// A caller's `output_schema` validator is waited for until `validate_by`; an answer that does
/// not fit it is refused with its violations and kept (as written, partial) for the end.
pub(crate) async fn check(
    profile: &RuntimeProfile,
    workspace: &Workspace,
    text: &str,
    (validate_by, deadline): (Instant, Instant),
    seen: &Exploration<'_>,
) -> Gate {
    let contract = profile.answer_shape();
    let (mut result, repair) = match parse_answer(profile, text, validate_by).await {
        Ok(parsed) => parsed,
        Err(Unparsed::Contract(e)) => return unparsed(profile, text, seen, &e),
        Err(Unparsed::TimedOut(raw, repair, why)) => return Gate::TimedOut(raw, repair, why),
        Err(Unparsed::Misfit(raw, repair)) => {
            let ungrounded = grounding(workspace, raw.evidence(), deadline, seen.observed).await;
            let ParsedResult::Custom(c) = &raw else {
                unreachable!("only a caller's schema is a misfit")
            };
            let feedback = format!(
                "Return only a valid {contract} JSON object: {}",
                c.schema_errors().join("; ")
            );
            return Gate::Reject {
                exploring: false,
                note: None,
                feedback,
                parsed: Some((raw, repair, ungrounded)),
            };
        }
    };
    if let Some(feedback) = copied_template(&result, contract) {
        return Gate::Reject {
            exploring: false,
            note: None,
            feedback,
            parsed: None,
        };
    }
    seen_path_slips(&mut result, workspace, seen.observed);
    // The evidence and the findings that only cite are checked together, in one pass.
    let cited = cited_findings(&result);
    let mut items = result.evidence().to_vec();
    items.extend(cited.iter().cloned());
    let (ungrounded, unfit): (Vec<_>, Vec<_>) =
        grounding(workspace, &items, deadline, seen.observed)
            .await
            .into_iter()
            .partition(|c| !cited.contains(&c.evidence));
    if result.is_structured() {
        if let Some(feedback) = too_little_exploration(profile, seen) {
            return Gate::Reject {
                exploring: true,
                note: None,
                feedback,
                parsed: Some((result, repair, ungrounded)),
            };
        }
    }
    if !ungrounded.is_empty() {
        return Gate::Reject {
            exploring: false,
            note: None,
            feedback: ungrounded_feedback(contract, &ungrounded, seen.observed),
            parsed: Some((result, repair, ungrounded)),
        };
    }
    let result = with_cited_findings(result, cited, &unfit);
    if let Some(feedback) = missing_evidence(profile, &result) {
        return Gate::Reject {
            exploring: false,
            note: None,
            feedback,
            parsed: Some((result, repair, Vec::new())),
        };
    }
    if let Some(objection) = seen
        .assists
        .answer_accepted(&result, seen.observed, seen.task)
    {
        if !objection.ask_again {
            let result = crate::runner::grounding::downgraded(result, false, Some(&objection.note));
            return Gate::Accept(result, repair);
        }
        return Gate::Reject {
            exploring: false,
            feedback: objection.feedback,
            note: Some(objection.note),
            parsed: Some((result, repair, Vec::new())),
        };
    }
    Gate::Accept(result, repair)
}

/// The refusal of an answer that does not parse: an assist's, for a child that still owes tool
/// calls (a tool call written inside other text, told how to call it), else the contract's.
fn unparsed(
    profile: &RuntimeProfile,
    text: &str,
    seen: &Exploration<'_>,
    e: &ContractError,
) -> Gate {
    if seen.successful_tools < profile.min_tool_calls.max(0) as u64 {
        let offered: Vec<&str> = profile.tool_allowlist.iter().map(String::as_str).collect();
        if let Some(feedback) = seen.assists.answer_refused(text, &offered) {
            return Gate::Reject {
                exploring: true,
                note: None,
                feedback,
                parsed: None,
            };
        }
    }
    contract_refusal(profile, e)
}

/// The feedback for an explore answer that repeats the example from the instructions instead
/// of what the child found; None when it does not.
fn copied_template(result: &ParsedResult, contract: &str) -> Option<String> {
    let ParsedResult::Explore(r) = result else {
        return None;
    };
    let text = std::iter::once(&r.summary)
        .chain(&r.findings)
        .chain(&r.unresolved_questions)
        .find(|t| crate::runner::answer::is_template_text(t))?;
    Some(format!(
        "Your answer repeats the example from the instructions ({text:?}) instead of what you found. Replace every <...> with your own words about the lines you saw, and return the {contract} JSON object."
    ))
}

/// The feedback for a child that answered before the tool calls `min_tool_calls` asks for,
/// suggesting a first call (the repo-map hint's, else one of the tools it has); None when it
/// made enough.
fn too_little_exploration(profile: &RuntimeProfile, seen: &Exploration<'_>) -> Option<String> {
    let min = profile.min_tool_calls.max(0) as u64;
    if seen.successful_tools >= min {
        return None;
    }
    let contract = profile.answer_shape();
    let made = match seen.successful_tools {
        0 => "no successful tool call".to_string(),
        n => format!("only {n} successful tool call(s)"),
    };
    let offered: Vec<&str> = profile.tool_allowlist.iter().map(String::as_str).collect();
    if let Some(call) = seen.example {
        // The call itself, to copy: a small model that would not call a tool when told to
        // "call Read with ..." writes the call when shown it.
        return Some(format!(
            "You answered after {made}, but this task needs at least {min}: read before answering. Reply now with nothing but a tool call, for example:\n{call}\nThen reply with the {contract} JSON object citing the lines you saw."
        ));
    }
    let example = if offered.contains(&"Grep") {
        "Grep with {\"pattern\": \"<a name or phrase from the task>\"}"
    } else if offered.contains(&"Glob") {
        "Glob with {\"pattern\": \"**/*<a word from the task>*\"}"
    } else {
        "Read with {\"path\": \"<a file the task names>\"}"
    };
    let tools = match offered.as_slice() {
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
        [] => "a tool".into(),
    };
    Some(format!(
        "You answered after {made}, but this task needs at least {min}: search before answering. Call {tools} now (as a tool call; for example, call {example}), then reply with the {contract} JSON object citing the lines you saw."
    ))
}

/// The feedback for a `completed` answer that cites nothing; None when it is not one.
fn missing_evidence(profile: &RuntimeProfile, result: &ParsedResult) -> Option<String> {
    let completed_without_evidence = match result {
        ParsedResult::Explore(r) => r.status == SubagentStatus::Completed && r.evidence.is_empty(),
        ParsedResult::Custom(r) => r.status == SubagentStatus::Completed && r.evidence.is_empty(),
        _ => false,
    };
    if !completed_without_evidence {
        return None;
    }
    let contract = profile.answer_shape();
    // A caller's schema has outrider's `status` beside its fields, or its own.
    let otherwise = format!(", or, if you could not find it, reply with status \"partial\" and say what remains open in the {contract} JSON object.");
    Some(format!(
        "A \"completed\" answer must cite at least one line you saw (relative/path:line from a Read or Grep result). Add that evidence{otherwise}"
    ))
}
