//! The repo-map hint: before the model's first call the offline scout asks the code index, and
//! its ranked places go to the child as leads (where to look, not what the code says). At the
//! end, the model's grounded citations and the leads are ranked together (reciprocal-rank
//! fusion), so a model that drops or demotes the index's right place cannot push it out of the
//! top, and every item says where it came from.
//!
//! The leads carry no code: a small model shown the code of its leads answers from them without
//! a tool call of its own (it did so in every run tried), while one shown only where to look
//! reads there first (`min_tool_calls`), and what it then cites it has seen.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

use tokio::sync::Semaphore;

use serde_json::Value;

use crate::contract::{ExploreResult, SubagentStatus, ToolUsage};
use crate::evidence::EvidenceCheck;
use crate::profile::ResultContract;
use crate::runner::assist::hooks::Assist;
pub(crate) use crate::runner::assist::lead::Lead;
use crate::runner::assist::Tuning;
use crate::runner::observed::Observed;
use crate::runner::outcome::{ParsedResult, RunOutcome, TerminalReason};
use crate::runner::provenance::Sourced;
use crate::runner::RuntimeRunner;
use crate::tools::context::ToolContext;
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;

/// The offline scout's search made before the model's first call: what the child keeps of it
/// while it runs.
pub(crate) struct ScoutRun {
    /// The places it cites, best first.
    pub(crate) leads: Vec<Lead>,
    /// Its whole answer, kept only for a profile with `scout_fallback` (the one use of it): a
    /// child with the hint alone holds its leads and nothing more.
    pub(crate) fallback: Option<ScoutAnswer>,
}

/// The scout's whole answer, for [`RuntimeRunner::with_scout_fallback`].
pub(crate) struct ScoutAnswer {
    /// Its final text.
    text: String,
    /// Its answer (every cited line one it saw).
    answer: ExploreResult,
    /// Its tool calls by name.
    tool_usage: BTreeMap<String, u64>,
}

/// The hint of one run: its leads, best first, and the knobs it was given.
pub(crate) struct Hint {
    leads: Vec<Lead>,
    tuning: Tuning,
}

impl Assist for Hint {
    fn first_message(&self) -> Option<String> {
        Some(leads_text(&self.leads, &self.tuning))
    }

    fn example_call(&self) -> Option<String> {
        self.leads.first().map(|l| read_example(l, &self.tuning))
    }

    fn ungrounded_items(
        &self,
        result: &mut ParsedResult,
        ungrounded: Vec<EvidenceCheck>,
    ) -> Vec<EvidenceCheck> {
        without_unread_leads(result, ungrounded, &self.leads)
    }

    /// A verified answer's evidence fused with the leads; unverified evidence is reported as
    /// the model wrote it, leads aside.
    fn finish(&self, answer: ExploreResult, verified: bool) -> ExploreResult {
        if verified {
            fused(answer, &self.leads, &self.tuning)
        } else {
            answer
        }
    }

    fn no_answer(
        &self,
        reason: TerminalReason,
        error: &str,
        _observed: &Observed,
    ) -> Option<ExploreResult> {
        Some(leads_only(&self.leads, reason, error))
    }
}

/// The text added to the first message: the leads, best first, and how to use them.
pub(crate) fn leads_text(leads: &[Lead], tuning: &Tuning) -> String {
    let list: Vec<String> = leads
        .iter()
        .enumerate()
        .map(|(i, l)| match &l.what {
            Some(w) => format!("{}. {} ({w})", i + 1, l.citation()),
            None => format!("{}. {}", i + 1, l.citation()),
        })
        .collect();
    let first = leads
        .first()
        .map(|l| read_example(l, tuning))
        .unwrap_or_default();
    format!(
        "Leads (an offline search of the code index ranked these places, best first; you have not seen their lines, and they may not answer the task):\n{}\n\nRead a lead before you rely on it: your first reply is a tool call, for example:\n{first}\nRead around what you find (the rest of a function, the definition of a name it uses) and Grep for other places when the task asks where something is used. Then reply with the final JSON object citing only lines you read.",
        list.join("\n")
    )
}

/// The Read to suggest for `lead` (from two lines above it), written as the call itself: a
/// small model that writes its calls as text copies it, and one that calls tools natively
/// reads it as the call to make.
pub(crate) fn read_example(lead: &Lead, tuning: &Tuning) -> String {
    let call = serde_json::json!({
        "name": "Read",
        "arguments": {
            "path": lead.path,
            "start_line": lead.start.saturating_sub(2).max(1),
            "limit": tuning.lead_read_lines,
        },
    });
    call.to_string()
}

/// The model's evidence (best first) and the leads (best first) ranked together by
/// reciprocal-rank fusion: each item scores `1 / (k + rank)` in each list it is in. A model
/// item citing lines of a lead is that lead too (`both`: cited as the lines of both, the lead's
/// score added once; a model that cites one line of a place vouches for the place). Ties go to
/// the index's item, then to the earlier one. Returns the items and their sources.
pub(crate) fn fuse(model: &[String], leads: &[Lead], k: f64) -> (Vec<String>, Vec<String>) {
    // (score, index first on ties, order, item, source)
    let mut ranked: Vec<(f64, u8, usize, String, &'static str)> = Vec::new();
    let mut matched = vec![false; leads.len()];
    for (i, item) in model.iter().enumerate() {
        let mut score = 1.0 / (k + i as f64 + 1.0);
        let mut source = "model";
        let mut cited = item.clone();
        if let Some(j) = leads.iter().position(|l| l.overlaps(item)) {
            if !matched[j] {
                score += 1.0 / (k + j as f64 + 1.0);
            }
            matched[j] = true;
            source = "both";
            if let Some((_, a, b)) = crate::evidence::parse_citation(item) {
                let lead = &leads[j];
                cited = crate::evidence::citation(&lead.path, a.min(lead.start), b.max(lead.end));
            }
        }
        ranked.push((score, 1, i, cited, source));
    }
    for (j, lead) in leads.iter().enumerate() {
        if !matched[j] {
            let score = 1.0 / (k + j as f64 + 1.0);
            ranked.push((score, 0, j, lead.citation(), "index"));
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut items = Vec::with_capacity(ranked.len());
    let mut sources = Vec::with_capacity(ranked.len());
    for (_, _, _, item, source) in ranked {
        if !items.contains(&item) {
            items.push(item);
            sources.push(source.to_string());
        }
    }
    (items, sources)
}

/// An explore answer with the leads fused into its evidence. A `completed` answer that cites
/// nothing of its own (every item the index's) stands as `partial`: the model vouched for none.
pub(crate) fn fused(mut r: ExploreResult, leads: &[Lead], tuning: &Tuning) -> ExploreResult {
    crate::runner::provenance::rewrite_explore(&mut r, "hint: rank fusion", |items| {
        let model: Vec<String> = items.iter().map(|s| s.item.clone()).collect();
        let (fused, sources) = fuse(&model, leads, tuning.fusion_k);
        *items = fused
            .into_iter()
            .zip(sources)
            .map(|(item, source)| Sourced::new(item, &source))
            .collect();
    });
    let vouched = r.evidence_sources.iter().any(|s| s != "index");
    if !vouched && r.status == SubagentStatus::Completed {
        r.status = SubagentStatus::Partial;
        r.unresolved_questions.push(
            "outrider: the model cited no line of its own; the evidence is the index's leads, unverified"
                .into(),
        );
    }
    r
}

/// The evidence items of `result` that cite a lead the child never read are the lead, not the
/// model's word: they leave the model's evidence (the leads join it as the index's when the run
/// finishes). Returns the rest of `ungrounded`.
fn without_unread_leads(
    result: &mut ParsedResult,
    ungrounded: Vec<EvidenceCheck>,
    leads: &[Lead],
) -> Vec<EvidenceCheck> {
    let (on_leads, rest): (Vec<_>, Vec<_>) = ungrounded
        .into_iter()
        .partition(|c| leads.iter().any(|l| l.overlaps(&c.evidence)));
    crate::runner::provenance::rewrite(result, "hint: unread leads", |items| {
        items.retain(|s| !on_leads.iter().any(|c| c.evidence == s.item));
    });
    rest
}

/// The partial answer of a run that stopped (`reason`, `error`) without one: the leads, each
/// marked `index`.
fn leads_only(leads: &[Lead], reason: TerminalReason, error: &str) -> ExploreResult {
    let findings = leads
        .iter()
        .map(|l| match &l.what {
            Some(w) => format!(
                "{}: {w} (a lead of the code index, not read by the model)",
                l.citation()
            ),
            None => format!(
                "{}: a lead of the code index, not read by the model",
                l.citation()
            ),
        })
        .collect();
    ExploreResult {
        status: SubagentStatus::Partial,
        summary: format!(
            "The child stopped ({}) before it could give an answer; these are the places the code index ranked for the task, as leads, not an answer.",
            reason.as_str()
        ),
        findings,
        evidence: leads.iter().map(Lead::citation).collect(),
        unresolved_questions: vec![format!("outrider: the task is not answered: {error}")],
        tool_usage: ToolUsage::new(),
        terminal_reason: reason.as_str().into(),
        evidence_sources: vec!["index".to_string(); leads.len()],
    }
}

/// What the scout's blocking search needs: the tools (confined, deadline-bound) and the task.
struct ScoutSearch {
    registry: Arc<ToolRegistry>,
    permissions: PermissionContext,
    ctx: ToolContext,
    task: String,
    system: String,
    run: crate::llm::request::RunFacts,
    tools: Arc<Vec<Value>>,
    /// Whether the child may need the scout's whole answer (`scout_fallback`); without it only
    /// the leads leave the search.
    keep_answer: bool,
}

/// The most scouts of one tree that search at once, whatever the cores.
const MAX_SCOUTS_PER_TREE: usize = 4;

/// Scouts of one tree that search at once: one a core, at most [`MAX_SCOUTS_PER_TREE`]. A
/// scout's search is work for a core, and the index ranks for one search of a tree at a time
/// (its lock), so more scouts of the same tree would only hold a blocking thread each (its
/// stack and its allocator's pages) while they waited: with many children in flight on one
/// tree, that was most of what each child held. The others wait for their turn as tasks, in
/// the order they came, within their own deadline.
pub(crate) fn scouts_per_tree() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_SCOUTS_PER_TREE)
    })
}

/// The turns of the scouts of the tree at `root`, shared by every child on it while any of
/// them holds or waits for one.
fn scout_turns(root: &Path) -> Arc<Semaphore> {
    static TURNS: Mutex<Option<HashMap<PathBuf, Weak<Semaphore>>>> = Mutex::new(None);
    let mut turns = TURNS.lock().unwrap_or_else(PoisonError::into_inner);
    let turns = turns.get_or_insert_with(HashMap::new);
    // Trees no child waits on any more.
    turns.retain(|_, t| t.strong_count() > 0);
    if let Some(t) = turns.get(root).and_then(Weak::upgrade) {
        return t;
    }
    let t = Arc::new(Semaphore::new(scouts_per_tree()));
    turns.insert(root.to_path_buf(), Arc::downgrade(&t));
    t
}

impl RuntimeRunner {
    /// Whether this child lets the scout search first: an explore child asking for the hint or
    /// the fallback, with Grep allowed, not already run by the offline model, not cancelled.
    fn wants_scout(&self) -> bool {
        (self.profile.repo_map_hint || self.profile.scout_fallback)
            && self.profile.result_contract == Some(ResultContract::Explore)
            && self.model.route_label() != Some("offline")
            && self.registry.names().contains(&"Grep")
            && !self.cancel.is_cancelled()
    }

    /// The offline scout's answer on `task`, when this child will use it (see
    /// [`Self::run`]): every file access a confined tool call, no trace or span of its own, a
    /// share of the child's time ([`Tuning::scout_time_share`], at most
    /// [`Tuning::scout_time_cap_seconds`]). None when the scout has no answer whose evidence it saw.
    pub(crate) async fn scout_first(&self, task: &str) -> Option<ScoutRun> {
        if !self.wants_scout() {
            return None;
        }
        let tuning = &self.profile.tuning;
        let share = std::time::Duration::from_secs_f64(
            self.profile.timeout_seconds * tuning.scout_time_share,
        );
        let deadline = Instant::now() + share.min(tuning.scout_time_cap());
        // A few scouts of this tree search at a time (see [`scouts_per_tree`]); waiting for a
        // turn counts against the scout's time, and a cancel ends the wait. What the search
        // needs (its tools' schemas, the prompt) is made once the turn comes, so that a child
        // waiting for one holds nothing of it.
        let turns = scout_turns(self.workspace.root());
        let searching = async {
            let turn = tokio::select! {
                turn = turns.acquire_owned() => turn.ok()?,
                () = self.cancel.cancelled() => return None,
            };
            let search = self.scout_search(task, deadline);
            let work = crate::exec::inherit_caller_sync(move || search.run());
            let found = crate::exec::spin_first(tokio::task::spawn_blocking(work)).await;
            // The turn ends once the search's thread is done with it, so that the next scout
            // finds it idle rather than starting another thread.
            drop(turn);
            found.ok().flatten()
        };
        tokio::time::timeout_at(deadline.into(), searching)
            .await
            .ok()
            .flatten()
    }

    /// What the scout's search on `task` needs, its tools bound by `deadline`.
    fn scout_search(&self, task: &str, deadline: Instant) -> ScoutSearch {
        let tuning = &self.profile.tuning;
        // The scout searches the code index (Search), which reads no more than Grep may.
        let registry = Arc::new(self.registry.with_search());
        let tools = Arc::new(registry.openai_tools());
        ScoutSearch {
            registry,
            permissions: self.permissions.clone(),
            ctx: ToolContext::new(self.workspace.clone())
                .with_deadline(deadline)
                .with_cancel(self.cancel.flag())
                .with_tuning(tuning.clone()),
            task: task.to_string(),
            system: self.profile.rendered_system_prompt(),
            run: crate::llm::request::RunFacts::of(&self.profile),
            tools,
            keep_answer: self.profile.scout_fallback,
        }
    }

    /// The hint this child gets: the scout's first places as leads (`repo_map_hint`,
    /// `tuning.leads` of them); none without it, or without a place.
    pub(crate) fn hint(&self, mut leads: Vec<Lead>) -> Option<Hint> {
        if !self.profile.repo_map_hint {
            return None;
        }
        let tuning = self.profile.tuning.clone();
        leads.truncate(usize::try_from(tuning.leads).unwrap_or(usize::MAX));
        leads.shrink_to_fit();
        (!leads.is_empty()).then_some(Hint { leads, tuning })
    }

    /// The model's outcome, or, with the profile's `scout_fallback`, the offline scout's answer
    /// in its place when the model gave no verified, completed answer (a completed scout answer
    /// in place of any other; a partial one in place of none, an unverified one, or one without
    /// evidence). The summary says so; the counts stay the model's, the scout's tool calls
    /// added.
    pub(crate) fn with_scout_fallback(&self, out: RunOutcome, found: ScoutAnswer) -> RunOutcome {
        let model_answer = match &out.result {
            Some(ParsedResult::Explore(r)) if out.ungrounded_evidence.is_empty() => Some(r),
            _ => None,
        };
        let vouched = |r: &ExploreResult| {
            r.evidence_sources.is_empty() || r.evidence_sources.iter().any(|s| s != "index")
        };
        if !self.profile.scout_fallback
            || self.profile.output_schema.is_some()
            // Only after the model answered or ran out: a model error (a bad key, a throttled
            // provider) must stay visible, never be covered by the scout.
            || !matches!(
                out.terminal_reason,
                TerminalReason::Completed
                    | TerminalReason::CompletedUnverified
                    | TerminalReason::CompletionGateBlocked
                    | TerminalReason::MaxSteps
                    | TerminalReason::TokenBudget
                    | TerminalReason::Timeout
            )
            || self.cancel.is_cancelled()
            || model_answer.is_some_and(|r| r.status == SubagentStatus::Completed)
        {
            return out;
        }
        let mut answer = found.answer;
        let better = answer.status == SubagentStatus::Completed
            || model_answer.is_none_or(|r| r.evidence.is_empty() || !vouched(r));
        if !better {
            return out;
        }
        let what = match (&out.result, out.ungrounded_evidence.is_empty()) {
            (Some(_), false) => "its evidence was not in what it saw".to_string(),
            (Some(_), true) => "its answer was partial".to_string(),
            (None, _) => format!("it stopped: {}", out.terminal_reason.as_str()),
        };
        tracing::info!(
            session_id = %self.trace.session_id(),
            model_outcome = %what,
            "the model gave no verified answer; the offline scout's answer is returned instead"
        );
        answer.summary = format!(
            "The model gave no verified answer ({what}); this is the offline scout's answer (a keyword search, no model). {}",
            answer.summary
        );
        answer.evidence_sources = vec!["index".to_string(); answer.evidence.len()];
        let mut tool_usage = out.tool_usage;
        for (name, n) in found.tool_usage {
            *tool_usage.entry(name).or_insert(0) += n;
        }
        RunOutcome {
            terminal_reason: TerminalReason::Completed,
            final_text: Some(found.text),
            result: Some(ParsedResult::Explore(answer)),
            repair: None,
            error: None,
            tool_usage,
            ungrounded_evidence: Vec::new(),
            ..out
        }
    }
}

impl ScoutSearch {
    /// The scout's search on the blocking pool: its answer, kept only when every place it
    /// cites is one it saw, and the places it cites as leads.
    fn run(self) -> Option<ScoutRun> {
        #[cfg(test)]
        let _searching = tests::Searching::enter(self.ctx.workspace.root());
        let mut observed = Observed::default();
        let mut tool_usage: BTreeMap<String, u64> = BTreeMap::new();
        let mut execute = |name: &str, args: &str| -> crate::tools::envelope::ToolResult {
            *tool_usage.entry(name.to_string()).or_insert(0) += 1;
            let args = serde_json::from_str::<Value>(args).unwrap_or(Value::Null);
            let result = self
                .registry
                .execute(name, &args, &self.ctx, &self.permissions);
            observed.record(&result);
            result
        };
        let crate::llm::scout::Scouted { text, places } = crate::llm::scout::search_quietly(
            &self.task,
            &self.system,
            self.run,
            self.tools.clone(),
            &mut execute,
        );
        // The scout answers ExploreResult whatever the child's own result shape is.
        let Ok((answer, _)) =
            ExploreResult::repair(&text, crate::contract::ToolUsage::new(), "completed")
        else {
            return None;
        };
        // Each citation with what the index's place it lies in defines.
        let leads: Vec<Lead> = answer
            .evidence
            .iter()
            .filter_map(|e| crate::evidence::parse_citation(e))
            .map(|(path, start, end)| {
                let what = places
                    .iter()
                    .find(|p| p.file == path && p.start <= start && start <= p.end)
                    .map(crate::llm::scout::indexed::Place::what)
                    .filter(|w| w != "lines");
                Lead {
                    path: crate::runner::observed::normalize(&path),
                    start,
                    end: end.max(start),
                    what,
                }
            })
            .collect();
        // The scout cites only what it saw; a citation it did not see is not offered.
        if leads.is_empty()
            || leads
                .iter()
                .any(|l| !observed.saw_range(&l.path, l.start, l.end))
        {
            return None;
        }
        // The rest of the search (its text, answer, tool results) is freed here, on the
        // thread that made it, unless the fallback may need the answer.
        let fallback = self.keep_answer.then_some(ScoutAnswer {
            text,
            answer,
            tool_usage,
        });
        Some(ScoutRun { leads, fallback })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Scouts in [`ScoutSearch::run`] now, and the most at once, by tree.
    static SEARCHING: Mutex<Option<HashMap<PathBuf, (usize, usize)>>> = Mutex::new(None);

    /// One scout searching a tree, until dropped.
    pub(crate) struct Searching(PathBuf);

    impl Searching {
        pub(crate) fn enter(root: &Path) -> Searching {
            let mut all = SEARCHING.lock().unwrap_or_else(PoisonError::into_inner);
            let (now, most) = all
                .get_or_insert_with(HashMap::new)
                .entry(root.to_path_buf())
                .or_default();
            *now += 1;
            *most = (*most).max(*now);
            Searching(root.to_path_buf())
        }

        /// The most scouts of the tree at `root` that searched at once.
        pub(crate) fn most(root: &Path) -> usize {
            let all = SEARCHING.lock().unwrap_or_else(PoisonError::into_inner);
            all.as_ref()
                .and_then(|a| a.get(root))
                .map_or(0, |&(_, most)| most)
        }
    }

    impl Drop for Searching {
        fn drop(&mut self) {
            let mut all = SEARCHING.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((now, _)) = all.as_mut().and_then(|a| a.get_mut(&self.0)) {
                *now -= 1;
            }
        }
    }

    fn lead(path: &str, start: u64, end: u64) -> Lead {
        Lead {
            path: path.into(),
            start,
            end,
            what: None,
        }
    }

    #[test]
    fn fusion_keeps_the_index_first_place_in_the_top_whatever_the_model_cites() {
        let leads = [lead("a.py", 10, 20), lead("b.py", 5, 9), lead("c.py", 1, 4)];
        // The model cites two other places, and the index's second place last.
        let model = [
            "x.py:3".to_string(),
            "y.py:8-9".to_string(),
            "b.py:6".to_string(),
        ];
        let (items, sources) = fuse(&model, &leads, 60.0);
        assert_eq!(
            (items, sources),
            (
                vec![
                    "b.py:5-9".to_string(),
                    "a.py:10-20".into(),
                    "x.py:3".into(),
                    "y.py:8-9".into(),
                    "c.py:1-4".into(),
                ],
                vec![
                    "both".to_string(),
                    "index".into(),
                    "model".into(),
                    "model".into(),
                    "index".into(),
                ]
            )
        );
    }

    #[test]
    fn fusion_without_leads_is_the_model_list_and_without_model_the_leads() {
        let (items, sources) = fuse(&["a.py:1".to_string()], &[], 60.0);
        assert_eq!(
            (items, sources),
            (vec!["a.py:1".to_string()], vec!["model".to_string()])
        );
        let (items, sources) = fuse(&[], &[lead("a.py", 1, 2), lead("b.py", 3, 3)], 60.0);
        assert_eq!(
            (items, sources),
            (
                vec!["a.py:1-2".to_string(), "b.py:3".into()],
                vec!["index".to_string(), "index".into()]
            )
        );
    }

    #[test]
    fn a_completed_answer_that_cites_only_leads_of_its_own_accord_is_not_partial_but_one_citing_nothing_is(
    ) {
        let t = Tuning::default();
        let answer = |evidence: Vec<String>| ExploreResult {
            status: SubagentStatus::Completed,
            summary: "s".into(),
            findings: vec![],
            evidence,
            unresolved_questions: vec![],
            tool_usage: ToolUsage::new(),
            terminal_reason: "completed".into(),
            evidence_sources: vec![],
        };
        let leads = [lead("a.py", 10, 20)];
        let r = fused(answer(vec!["a.py:12".into()]), &leads, &t);
        assert_eq!(r.status, SubagentStatus::Completed);
        assert_eq!(
            (r.evidence, r.evidence_sources),
            (vec!["a.py:10-20".to_string()], vec!["both".to_string()])
        );
        // A citation wider than the lead keeps its own lines.
        let r = fused(answer(vec!["a.py:8-25".into()]), &leads, &t);
        assert_eq!(r.evidence, ["a.py:8-25"]);
        let r = fused(answer(vec![]), &leads, &t);
        assert_eq!(r.status, SubagentStatus::Partial);
        assert_eq!(r.evidence, ["a.py:10-20"]);
        assert_eq!(
            r.unresolved_questions,
            ["outrider: the model cited no line of its own; the evidence is the index's leads, unverified"]
        );
    }
}
