//! What an answer's evidence may be, as the gate and the end of a run weigh it: items that
//! exist in the workspace and that the child saw (`grounding`), with the feedback for those
//! that are not; a small model's slips mended (a dropped directory, a finding that is only a
//! citation); and what an answer becomes once its refusals are spent (`downgraded`). Every
//! change to an answer's evidence goes through [`crate::runner::provenance::rewrite`].

use std::time::Instant;

use crate::contract::{SubagentStatus, VerificationVerdict};
use crate::evidence::{check_evidence_until, require_observed, EvidenceCheck};
use crate::runner::observed::Observed;
use crate::runner::outcome::ParsedResult;
use crate::runner::provenance::{self, Sourced};
use crate::tools::workspace::Workspace;

/// Mends an evidence item whose relative path names no file, when the child saw exactly one file that
/// it can only mean: the same file name, and every directory written one of the seen file's, in
/// order (a small model drops one: `clap_builder/src/value_parser.rs` for the
/// `clap_builder/src/builder/value_parser.rs` it read), and the lines cited seen in that file.
/// The item then cites that file (a warning logs it). Anything else is left for the grounding
/// check to refuse.
pub(crate) fn seen_path_slips(
    result: &mut ParsedResult,
    workspace: &Workspace,
    observed: &Observed,
) {
    provenance::rewrite(result, "gate: seen path slips", |items| {
        for item in items.iter_mut() {
            if let Some(now) = mended(&item.item, workspace, observed) {
                item.item = now;
            }
        }
    });
}

/// The citation `item` means, when it is a path slip of a file the child saw (see
/// [`seen_path_slips`]).
fn mended(item: &str, workspace: &Workspace, observed: &Observed) -> Option<String> {
    let (path, start, end) = crate::evidence::parse_citation(item)?;
    // Only a relative path inside the root is a slip: an absolute one, `~` or `..` names
    // something else (`/proc/self/cwd/README.md` is not the README.md seen).
    let raw = path.trim();
    if raw.starts_with(['/', '\\', '~'])
        || raw.split(['/', '\\']).any(|c| c == ".." || c.contains(':'))
    {
        return None;
    }
    let written = crate::runner::observed::normalize(&path);
    let files = observed.files();
    // Only a path that names nothing: not one the workspace refuses (a link out of the
    // root), nor a file that exists.
    if files.iter().any(|(f, _)| *f == written)
        || !matches!(workspace.resolve_file(&written), Err(e) if e.kind() == "not_found")
    {
        return None;
    }
    let parts: Vec<&str> = written.split('/').collect();
    let mut candidates = files.iter().map(|(f, _)| f).filter(|f| {
        let theirs: Vec<&str> = f.split('/').collect();
        // Directories dropped, never added: every part written is in the file seen.
        theirs.last() == parts.last() && in_order(&parts, &theirs)
    });
    let (Some(only), None) = (candidates.next(), candidates.next()) else {
        return None;
    };
    if !observed.saw_range(only, start, end) {
        return None;
    }
    let now = crate::evidence::citation(only, start, end);
    tracing::warn!(written = %crate::redact::redact_cow(item), now = %crate::redact::redact_cow(&now), "an evidence path the child slipped on was mended to the file it saw");
    Some(now)
}

/// Whether every item of `short` appears in `long`, in order.
fn in_order(short: &[&str], long: &[&str]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|s| rest.any(|l| l == s))
}

/// The findings of an explore answer that are nothing but a citation (`binding/json.go:32-39`,
/// as a small model lists a place it weighed) and are not in its evidence already.
pub(crate) fn cited_findings(result: &ParsedResult) -> Vec<String> {
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
pub(crate) fn with_cited_findings(
    mut result: ParsedResult,
    cited: Vec<String>,
    unfit: &[EvidenceCheck],
) -> ParsedResult {
    if let ParsedResult::Explore(_) = &result {
        provenance::rewrite(&mut result, "gate: cited findings", |items| {
            items.extend(
                cited
                    .into_iter()
                    .filter(|c| !unfit.iter().any(|u| &u.evidence == c))
                    .map(|c| Sourced::new(c, "model")),
            );
        });
    }
    result
}

/// The feedback for evidence that is not grounded: each item's problem (with the part of a
/// range the child did see, which it may cite), and the lines it has seen so far.
pub(crate) fn ungrounded_feedback(
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
/// (too little exploration, `completed` with no evidence, or an assist's objection, whose `note`
/// it then carries) it stands as `partial` (a
/// verification verdict as `UNVERIFIED`), saying why in its open questions or reasons.
pub(crate) fn downgraded(
    mut result: ParsedResult,
    exploring: bool,
    note: Option<&str>,
) -> ParsedResult {
    match &mut result {
        ParsedResult::Explore(r) if note.is_some() => {
            r.status = SubagentStatus::Partial;
            r.unresolved_questions.extend(note.map(str::to_string));
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
