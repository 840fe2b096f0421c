//! The completion gate: a final answer must meet the profile's contract (after the allowed
//! repairs, see `answer`) and cite evidence that exists in the workspace.

use std::time::Instant;

use crate::contract::{ContractError, Repair};
pub(crate) use crate::runner::answer::{parse_answer, Unparsed};

use crate::contract::{SubagentStatus, VerificationVerdict};
use crate::evidence::{check_evidence_until, require_observed, EvidenceCheck};
use crate::profile::RuntimeProfile;
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
        /// Refused for a summary naming what the child never saw (see [`crate::runner::claims`]).
        unseen_names: Vec<String>,
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
        unseen_names: Vec::new(),
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
                unseen_names: Vec::new(),
                feedback,
                parsed: Some((raw, repair, ungrounded)),
            };
        }
    };
    if let Some(feedback) = copied_template(&result, contract) {
        return Gate::Reject {
            exploring: false,
            unseen_names: Vec::new(),
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
                unseen_names: Vec::new(),
                feedback,
                parsed: Some((result, repair, ungrounded)),
            };
        }
    }
    if !ungrounded.is_empty() {
        return Gate::Reject {
            exploring: false,
            unseen_names: Vec::new(),
            feedback: ungrounded_feedback(contract, &ungrounded, seen.observed),
            parsed: Some((result, repair, ungrounded)),
        };
    }
    let result = with_cited_findings(result, cited, &unfit);
    if let Some(feedback) = missing_evidence(profile, &result) {
        return Gate::Reject {
            exploring: false,
            unseen_names: Vec::new(),
            feedback,
            parsed: Some((result, repair, Vec::new())),
        };
    }
    if let ParsedResult::Explore(r) = &result {
        let min = usize::try_from(profile.tuning.min_checked_name).unwrap_or(usize::MAX);
        let names = crate::runner::claims::unseen_names(&r.summary, seen.observed, min)
            .into_iter()
            .filter(|n| !crate::runner::claims::named_in(n, seen.task))
            .collect::<Vec<_>>();
        if !names.is_empty() {
            return Gate::Reject {
                exploring: false,
                feedback: crate::runner::claims::feedback(contract, &names),
                unseen_names: names,
                parsed: Some((result, repair, Vec::new())),
            };
        }
    }
    Gate::Accept(result, repair)
}

/// Mends an evidence item whose relative path names no file, when the child saw exactly one file that
/// it can only mean: the same file name, and every directory written one of the seen file's, in
/// order (a small model drops one: `clap_builder/src/value_parser.rs` for the
/// `clap_builder/src/builder/value_parser.rs` it read), and the lines cited seen in that file.
/// The item then cites that file (a warning logs it). Anything else is left for the grounding
/// check to refuse.
fn seen_path_slips(result: &mut ParsedResult, workspace: &Workspace, observed: &Observed) {
    let Some(evidence) = result.evidence_mut() else {
        return;
    };
    let files = observed.files();
    for item in evidence.iter_mut() {
        let Some((path, start, end)) = crate::evidence::parse_citation(item) else {
            continue;
        };
        // Only a relative path inside the root is a slip: an absolute one, `~` or `..` names
        // something else (`/proc/self/cwd/README.md` is not the README.md seen).
        let raw = path.trim();
        if raw.starts_with(['/', '\\', '~'])
            || raw.split(['/', '\\']).any(|c| c == ".." || c.contains(':'))
        {
            continue;
        }
        let written = crate::runner::observed::normalize(&path);
        // Only a path that names nothing: not one the workspace refuses (a link out of the
        // root), nor a file that exists.
        if files.iter().any(|(f, _)| *f == written)
            || !matches!(workspace.resolve_file(&written), Err(e) if e.kind() == "not_found")
        {
            continue;
        }
        let parts: Vec<&str> = written.split('/').collect();
        let mut candidates = files.iter().map(|(f, _)| f).filter(|f| {
            let theirs: Vec<&str> = f.split('/').collect();
            // Directories dropped, never added: every part written is in the file seen.
            theirs.last() == parts.last() && in_order(&parts, &theirs)
        });
        let (Some(only), None) = (candidates.next(), candidates.next()) else {
            continue;
        };
        if observed.saw_range(only, start, end) {
            let now = crate::evidence::citation(only, start, end);
            tracing::warn!(written = %crate::redact::redact_cow(item), now = %crate::redact::redact_cow(&now), "an evidence path the child slipped on was mended to the file it saw");
            *item = now;
        }
    }
}

/// Whether every item of `short` appears in `long`, in order.
fn in_order(short: &[&str], long: &[&str]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|s| rest.any(|l| l == s))
}

/// The findings of an explore answer that are nothing but a citation (`binding/json.go:32-39`,
/// as a small model lists a place it weighed) and are not in its evidence already.
fn cited_findings(result: &ParsedResult) -> Vec<String> {
    let ParsedResult::Explore(r) = result else {
        return Vec::new();
    };
    let mut cited: Vec<String> = Vec::new();
    for finding in &r.findings {
        let item = finding.trim();
        if crate::evidence::parse_citation(item).is_some()
            && !r.evidence.iter().any(|e| e.trim() == item)
            && !cited.iter().any(|c| c == item)
        {
            cited.push(item.to_string());
        }
    }
    cited
}

/// An explore answer with its `cited` findings added to its evidence, after the model's own
/// items, except those the check found `unfit` (missing, or never shown to the child): the
/// model named them as found, the gate checked them. An unfit finding stays a finding and
/// refuses nothing.
fn with_cited_findings(
    mut result: ParsedResult,
    cited: Vec<String>,
    unfit: &[EvidenceCheck],
) -> ParsedResult {
    if let ParsedResult::Explore(r) = &mut result {
        r.evidence.extend(
            cited
                .into_iter()
                .filter(|c| !unfit.iter().any(|u| &u.evidence == c)),
        );
    }
    result
}

/// The refusal of an answer that does not parse. Decides whether it is a tool call written
/// inside other text by a child that still owes tool calls (told how to call it), or an
/// answer that does not meet the contract.
fn unparsed(
    profile: &RuntimeProfile,
    text: &str,
    seen: &Exploration<'_>,
    e: &ContractError,
) -> Gate {
    if seen.successful_tools < profile.min_tool_calls.max(0) as u64 {
        let offered: Vec<&str> = profile.tool_allowlist.iter().map(String::as_str).collect();
        if let Some(call) = crate::runner::assist::text_calls::embedded(text, &offered) {
            return Gate::Reject {
                exploring: true,
                unseen_names: Vec::new(),
                feedback: format!(
                    "Your reply wrote a tool call inside other text, so no tool ran. To call a tool, reply with nothing but the call, for example:\n{call}"
                ),
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
    let example = match seen.example {
        Some(e) => e.to_string(),
        None if offered.contains(&"Grep") => {
            "Grep with {\"pattern\": \"<a name or phrase from the task>\"}".into()
        }
        None if offered.contains(&"Glob") => {
            "Glob with {\"pattern\": \"**/*<a word from the task>*\"}".into()
        }
        None => "Read with {\"path\": \"<a file the task names>\"}".into(),
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

/// The feedback for evidence that is not grounded: each item's problem (with the part of a
/// range the child did see, which it may cite), and the lines it has seen so far.
pub(super) fn ungrounded_feedback(
    contract: &str,
    ungrounded: &[EvidenceCheck],
    observed: &Observed,
) -> String {
    let listed: Vec<String> = ungrounded
        .iter()
        .map(|c| {
            // A range the child saw only part of: name the part it can cite.
            let part = match (c.reason, &c.path, c.start_line, c.end_line) {
                (Some("unobserved"), Some(path), Some(start), Some(end)) => {
                    observed.seen_part(path, start, end)
                }
                _ => None,
            };
            match (part, &c.path) {
                (Some((a, b)), Some(path)) => format!(
                    "{} You saw {} of it: cite that, or Read the rest first.",
                    c.message,
                    crate::evidence::citation(path, a, b)
                ),
                // Lines of a file it saw elsewhere (a range past the file's end, say, with
                // another window's numbers): name what it did see of that file.
                (None, Some(path)) => match observed.seen_of(path, 3) {
                    seen if seen.is_empty() => c.message.clone(),
                    seen => format!(
                        "{} Of that file you saw {}: cite those lines, or drop it.",
                        c.message,
                        seen.join(", ")
                    ),
                },
                _ => c.message.clone(),
            }
        })
        .collect();
    let seen_so_far = match observed.ranges(6) {
        r if r.is_empty() => "You have not seen any lines yet: Read or Grep first.".to_string(),
        r => format!("Lines you have seen so far: {}.", r.join(", ")),
    };
    format!(
        "Return only a valid {contract} JSON object: some evidence is not grounded in what you saw. {} Cite only files and lines you have read or matched in this run, as relative/path:line or relative/path:start-end. {seen_so_far}",
        listed.join(" ")
    )
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

/// The evidence items that are not grounded: missing, out of range, not checked before
/// `deadline`, or never shown to the child (`unobserved`).
pub(crate) async fn grounding(
    workspace: &Workspace,
    evidence: &[String],
    deadline: Instant,
    observed: &Observed,
) -> Vec<EvidenceCheck> {
    if evidence.is_empty() {
        return Vec::new();
    }
    let ws = workspace.clone();
    let items = evidence.to_vec();
    let checking =
        tokio::task::spawn_blocking(move || check_evidence_until(&ws, &items, Some(deadline)));
    // The check stops itself at the deadline; this bounds a read that blocks in the kernel.
    let checking = crate::exec::spin_first(checking);
    let mut checks = match tokio::time::timeout_at(deadline.into(), checking).await {
        Ok(Ok(checks)) => checks,
        _ => check_evidence_until(workspace, evidence, Some(deadline)),
    };
    require_observed(&mut checks, |path, start, end| {
        observed.saw_range(path, start, end)
    });
    checks.into_iter().filter(|c| !c.grounded).collect()
}

/// What an answer the gate kept refusing becomes once the retries are spent, when its contract
/// held: with ungrounded evidence, it is kept and the run is `completed_unverified`; otherwise
/// (too little exploration, or `completed` with no evidence) it stands as `partial` (a
/// verification verdict as `UNVERIFIED`), saying why in its open questions or reasons.
pub(crate) fn downgraded(
    mut result: ParsedResult,
    exploring: bool,
    unseen_names: &[String],
) -> ParsedResult {
    match &mut result {
        ParsedResult::Explore(r) if !unseen_names.is_empty() => {
            r.status = SubagentStatus::Partial;
            r.unresolved_questions
                .push(crate::runner::claims::note(unseen_names));
        }
        ParsedResult::Explore(r) => {
            r.status = SubagentStatus::Partial;
            r.unresolved_questions.push(if exploring {
                "outrider: the child answered before searching enough, so this answer is partial"
                    .into()
            } else {
                "outrider: the answer cited no line the child saw, so it is partial, not completed"
                    .into()
            });
        }
        ParsedResult::Verification(v) => {
            // A verdict, PASS or FAIL, given without looking is no verdict.
            v.verdict = VerificationVerdict::Unverified;
            v.reasons.push(
                "outrider: the verifier answered before reading the repository enough, so its verdict is UNVERIFIED".into(),
            );
        }
        // An answer that does not fit says so already.
        ParsedResult::Custom(r) if !r.fits() => r.status = SubagentStatus::Partial,
        ParsedResult::Custom(r) => {
            r.status = SubagentStatus::Partial;
            r.notes.push(if exploring {
                "outrider: the child answered before searching enough, so this answer is partial"
                    .into()
            } else {
                "outrider: the answer cited no line the child saw, so it is partial, not completed"
                    .into()
            });
        }
        ParsedResult::Text(_) => {}
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_round_trip_through_text_and_serde() {
        for repair in [
            Repair::Fence,
            Repair::Extract,
            Repair::Quotes,
            Repair::Commas,
            Repair::Brackets,
        ] {
            let text = repair.to_string();
            assert_eq!(text.parse::<Repair>(), Ok(repair));
            assert_eq!(
                serde_json::to_value(repair).unwrap(),
                serde_json::json!(text)
            );
        }
        assert_eq!(
            "fix".parse::<Repair>().unwrap_err().to_string(),
            "'fix' is not a repair; expected fence, extract, quotes, commas or brackets"
        );
    }
}
