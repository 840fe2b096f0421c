//! The ReAct loop that drives one agent: native tool calling, budgets that hold, a completion
//! gate, and a trace.
//!
//! One step is one model call (plus at most one in-step retry after an empty answer). Tool calls
//! of a turn run concurrently on the blocking pool and go back in call order. The loop stops on
//! a valid final answer or on one of the [`TerminalReason`]s; when steps or tokens run out and the
//! profile says `on_budget_exhausted = "partial"`, one last tool-less call asks for the result.
//!
//! Budgets are checked before a call, not after: a call is made only if its estimated cost (the
//! request plus [`ANSWER_RESERVE_TOKENS`]) and the wrap-up's reserve fit what is left of
//! `total_token_budget`, and the wrap-up is compacted into what is left. The wall-clock deadline
//! goes into every request, bounds every tool call, and stops the evidence check.
//!
//! The parts: [`outcome`] (what a run produced), [`cancel`] (the cancellation token), `turn` (one
//! model call and its tool calls), `gate` (the completion gate), `state` (what a run
//! accumulates), [`context`] (fitting the history into the context budget).

pub mod cancel;
pub mod context;
mod gate;
pub mod observed;
pub mod outcome;
mod render;
mod state;
mod text_calls;
mod turn;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

pub use cancel::{CancelToken, Owner};
pub use gate::UnknownRepair;
pub use outcome::{ParsedResult, RunOutcome, TerminalReason, UnknownTerminalReason};
pub use state::{ANSWER_RESERVE_TOKENS, MAX_ANSWER_BYTES};

use crate::contract::{Repair, SubagentStatus};
use crate::evidence::EvidenceCheck;
use crate::llm::{estimate_tokens, ChatModel, Message};
use crate::profile::{BudgetPolicy, ResultContract, RuntimeProfile};
use crate::runner::gate::Gate;
use crate::runner::state::CallSpec;
use crate::runner::state::{State, Stop};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::{event, Trace};

/// The hint added (not stored) when the model answered with nothing.
pub const EMPTY_RESPONSE_HINT: &str =
    "Your last reply had no content and no tool calls. Reply with the final answer in content, or call a tool.";

/// The share of `timeout_seconds` kept for the wrap-up answer (policy `partial`), at most
/// [`WRAP_UP_TIME_CAP`]: exploring stops that much before the limit.
pub const WRAP_UP_TIME_SHARE: f64 = 0.2;
/// The most time kept for the wrap-up answer.
pub const WRAP_UP_TIME_CAP: Duration = Duration::from_secs(60);
/// Likely places listed with `repo_map_hint`.
pub const REPO_MAP_LINES: usize = 5;
/// The share of `timeout_seconds` the offline scout may spend before the model's first call.
pub const SCOUT_TIME_SHARE: f64 = 0.1;
/// The most time the offline scout spends before the model's first call.
pub const SCOUT_TIME_CAP: Duration = Duration::from_secs(30);
/// The places the repo-map hint opens for the child, and the fewest and most lines of each.
const OPENED_PLACES: usize = 3;
const OPENED_LINES: (u64, u64) = (8, 16);

/// The offline scout's search made before the model's first call.
struct ScoutRun {
    /// Its final text.
    text: String,
    /// Its answer (every cited line one it saw).
    answer: crate::contract::ExploreResult,
    /// Its tool calls by name.
    tool_usage: BTreeMap<String, u64>,
    /// Its first places opened for the child.
    opened: Vec<Opened>,
}

/// One place opened for the child: a Read of `path` from line `from`, its result as shown.
struct Opened {
    path: String,
    from: u64,
    shown: Value,
}

impl Opened {
    /// Whether `path:line` lies near this window (it would show the same lines again).
    fn near(&self, path: &str, line: u64) -> bool {
        self.path == path && self.from.abs_diff(line) < OPENED_LINES.1
    }

    /// The numbered lines shown.
    fn content(&self) -> &str {
        self.shown["data"]["content"].as_str().unwrap_or_default()
    }
}

/// The repo-map hint: the first message's text, a next call to suggest, and the Read results
/// of the places opened for the child.
struct Lead {
    hint: String,
    example: Option<String>,
    opened: Vec<Value>,
}
/// The most places a partial answer built without the model cites.
const SEEN_CITES: usize = 5;

/// Characters kept for the wrap-up's instruction when reserving its tokens.
const WRAP_UP_NOTE_CHARS: usize = 600;
/// Characters of history a wrap-up may carry when it has to be compacted hard: the compacted
/// summary and one shortened observation.
const WRAP_UP_HISTORY_CHARS: usize = context::SUMMARY_CHARS + context::KEEP_CHARS;

/// What one run needs.
pub struct RuntimeRunner {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// Budgets, prompt and contract.
    pub profile: RuntimeProfile,
    /// Tools, already filtered to the profile's allow-list.
    pub registry: Arc<ToolRegistry>,
    /// The registry's OpenAI schemas (computed once, shared by every call).
    pub tool_schemas: Arc<Vec<Value>>,
    /// The confined root.
    pub workspace: Workspace,
    /// `readonly_subagent` for a child.
    pub permissions: PermissionContext,
    /// Where events go.
    pub trace: Arc<Trace>,
    /// Cancellation.
    pub cancel: CancelToken,
    /// Extra system text (e.g. a tool catalogue for a main agent), appended to the prompt.
    pub extra_system: Option<String>,
}

impl RuntimeRunner {
    /// Run the loop on `task` (the rendered user message) until it stops. An explore child
    /// with `repo_map_hint` or `scout_fallback` first lets the offline scout search (a few
    /// milliseconds to a second): its ranking is the hint, its best place is opened for the
    /// model, and its answer is the fallback when the model gives no verified, completed one.
    pub async fn run(&self, task: &str) -> RunOutcome {
        let scout = self.scout_first(task).await;
        let out = self.run_model(task, scout.as_ref()).await;
        match scout {
            Some(scout) => self.with_scout_fallback(out, scout),
            None => out,
        }
    }

    /// The offline scout's answer on `task` and the first place it cites opened, when this
    /// child will use them (see [`Self::run`]): every file access a confined tool call, no
    /// trace or span of its own, at most a tenth of the child's time (30 s at most). None when
    /// the scout has no answer whose evidence it saw.
    async fn scout_first(&self, task: &str) -> Option<ScoutRun> {
        let wanted = self.profile.repo_map_hint || self.profile.scout_fallback;
        if !wanted
            || self.profile.result_contract != Some(ResultContract::Explore)
            || self.model.route_label() == Some("offline")
            || !self.registry.names().contains(&"Grep")
            || self.cancel.is_cancelled()
        {
            return None;
        }
        let share = Duration::from_secs_f64(self.profile.timeout_seconds * SCOUT_TIME_SHARE);
        let deadline = Instant::now() + share.min(SCOUT_TIME_CAP);
        // The scout searches the code index (Search), which reads no more than Grep may.
        let registry = Arc::new(self.registry.with_search());
        let perms = self.permissions.clone();
        let ctx = crate::tools::context::ToolContext::new(self.workspace.clone())
            .with_deadline(deadline)
            .with_cancel(self.cancel.flag());
        let (task, system, tools) = (
            task.to_string(),
            self.profile.rendered_system_prompt(),
            Arc::new(registry.openai_tools()),
        );
        let open = self.profile.repo_map_hint && self.registry.names().contains(&"Read");
        let searching = tokio::task::spawn_blocking(crate::exec::inherit_caller_sync(move || {
            let mut observed = observed::Observed::default();
            let mut tool_usage: BTreeMap<String, u64> = BTreeMap::new();
            let mut execute = |name: &str, args: &str| -> String {
                *tool_usage.entry(name.to_string()).or_insert(0) += 1;
                let args = serde_json::from_str::<Value>(args).unwrap_or(Value::Null);
                let result = registry.execute(name, &args, &ctx, &perms).to_value();
                observed.record(name, &result);
                result.to_string()
            };
            let text = crate::llm::scout::search_quietly(&task, &system, tools, &mut execute);
            // The scout answers ExploreResult whatever the child's own result shape is.
            let Ok((answer, _)) = crate::contract::ExploreResult::repair(
                &text,
                crate::contract::ToolUsage::new(),
                "completed",
            ) else {
                return None;
            };
            let places: Vec<(String, u64, u64)> = answer
                .evidence
                .iter()
                .filter_map(|e| crate::evidence::parse_citation(e))
                .collect();
            // The scout cites only what it saw; a citation it did not see is not offered.
            if places.is_empty()
                || places
                    .iter()
                    .any(|(path, start, end)| !observed.saw_range(path, *start, *end))
            {
                return None;
            }
            // The first places, a short window each (distinct places only), so that the
            // model can weigh them against each other.
            let mut opened: Vec<Opened> = Vec::new();
            for (path, start, end) in places.iter().filter(|_| open) {
                if opened.len() >= OPENED_PLACES {
                    break;
                }
                if opened.iter().any(|o| o.near(path, *start)) {
                    continue;
                }
                let from = start.saturating_sub(1).max(1);
                let limit = (end.saturating_sub(from) + 1).clamp(OPENED_LINES.0, OPENED_LINES.1);
                let args = serde_json::json!({"path": path, "start_line": from, "limit": limit});
                let shown = registry.execute("Read", &args, &ctx, &perms).to_value();
                if shown["status"].as_str() != Some("error") && shown["data"]["content"].is_string()
                {
                    opened.push(Opened {
                        path: path.clone(),
                        from,
                        shown,
                    });
                }
            }
            Some(ScoutRun {
                text,
                answer,
                tool_usage,
                opened,
            })
        }));
        let found = tokio::time::timeout_at(deadline.into(), crate::exec::spin_first(searching))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        found
    }

    /// The model's outcome, or, with the profile's `scout_fallback`, the offline scout's answer
    /// in its place when the model gave no verified, completed answer (a completed scout answer
    /// in place of any other; a partial one in place of none, an unverified one, or one without
    /// evidence). The summary says so; the counts stay the model's, the scout's tool calls
    /// added.
    fn with_scout_fallback(&self, out: RunOutcome, found: ScoutRun) -> RunOutcome {
        let model_answer = match &out.result {
            Some(ParsedResult::Explore(r)) if out.ungrounded_evidence.is_empty() => Some(r),
            _ => None,
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
            || model_answer.is_none_or(|r| r.evidence.is_empty());
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

    /// The model's loop on `task` until it stops; `scout` is the offline scout's run, whose
    /// places are the repo-map hint.
    async fn run_model(&self, task: &str, scout: Option<&ScoutRun>) -> RunOutcome {
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(self.profile.timeout_seconds);
        // Exploring stops early enough for the wrap-up to answer, so that a run that reaches
        // its time limit still returns what it found (partial) instead of nothing.
        let explore_deadline = if self.profile.on_budget_exhausted == BudgetPolicy::Partial {
            let keep = Duration::from_secs_f64(self.profile.timeout_seconds * WRAP_UP_TIME_SHARE)
                .min(WRAP_UP_TIME_CAP);
            deadline.checked_sub(keep).unwrap_or(deadline)
        } else {
            deadline
        };
        let mut system = self.profile.rendered_system_prompt();
        if let Some(extra) = &self.extra_system {
            system.push_str("\n\n");
            system.push_str(extra);
        }
        let lead = self.lead(scout);
        let first = match &lead {
            Some(lead) => format!("{task}\n\n{}", lead.hint),
            None => task.to_string(),
        };
        let example = lead.as_ref().and_then(|l| l.example.clone());
        let mut st = State {
            messages: vec![
                Message::System { content: system },
                Message::User {
                    content: first.clone(),
                },
            ],
            tokens: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            estimated: false,
            calls: 0,
            tool_usage: BTreeMap::new(),
            read_memory: crate::tools::context::ReadMemory::new(),
            observed: observed::Observed::default(),
            successful_tools: 0,
            given_looks: 0,
            last_failure: None,
        };
        if let Some(lead) = lead.as_ref().filter(|l| !l.opened.is_empty()) {
            // The windows opened for the child are in its first message: it has seen those
            // lines, and that look counts as one of the tool calls `min_tool_calls` asks for.
            for shown in &lead.opened {
                st.observed.record("Read", shown);
            }
            st.successful_tools = 1;
            st.given_looks = 1;
        }
        let tools = self.tool_schemas.clone();
        let schema_chars: usize = tools.iter().map(|t| t.to_string().len()).sum();
        // Every call before the wrap-up leaves this much of the total budget unspent, so the
        // wrap-up (system prompt, task, compacted history, answer) can always be made.
        let wrap_reserve = if self.profile.on_budget_exhausted == BudgetPolicy::Partial {
            let fixed: usize = st.messages.iter().map(Message::char_len).sum();
            estimate_tokens(fixed + WRAP_UP_NOTE_CHARS + WRAP_UP_HISTORY_CHARS)
                + ANSWER_RESERVE_TOKENS
        } else {
            0
        };
        self.trace.emit(
            0,
            &event::RunStart {
                profile: &self.profile.name,
                max_steps: self.profile.max_steps,
                context_token_budget: self.profile.context_token_budget,
                total_token_budget: self.profile.total_token_budget,
                tools: self.registry.names(),
                model: &self.model.describe(),
                model_id: self.model.model_id().map(|m| crate::redact::redact_str(&m)),
            },
        );
        self.trace.emit(0, &event::UserInput { content: &first });
        let max_steps = self.profile.max_steps.max(1) as u64;
        let min_tools = self.profile.min_tool_calls.max(0) as u64;
        let mut empty_retry_used = false;
        let mut required_refused = false;
        let mut gate_blocks = 0i64;
        let mut explore_blocks = 0i64;
        let mut step = 0u64;
        let stop = loop {
            step += 1;
            tracing::debug!(session_id = %self.trace.session_id(), step, "step");
            let step_span = tracing::info_span!(target: crate::trace::SPAN_TARGET, "step", session_id = %self.trace.session_id(), step);
            let mut hint = None;
            let resp = loop {
                // Ask for a tool call while the child still owes one; a provider that refuses
                // `required` is asked with `auto` from then on.
                let tool_choice = if st.successful_tools < min_tools && !required_refused {
                    "required"
                } else {
                    "auto"
                };
                match self
                    .call(
                        step,
                        &mut st,
                        CallSpec {
                            tools: &tools,
                            schema_chars,
                            hint,
                            reserve: wrap_reserve,
                            wrap_up: false,
                            tool_choice,
                        },
                        explore_deadline,
                    )
                    .instrument(step_span.clone())
                    .await
                {
                    Err(Stop::Refused(_)) if tool_choice == "required" => {
                        required_refused = true;
                    }
                    Err(Stop::Refused(e)) => {
                        break Err(Stop::Terminal(TerminalReason::ModelError, e))
                    }
                    Err(stop) => break Err(stop),
                    Ok(r) if r.tool_calls.is_empty() && r.content.trim().is_empty() => {
                        if empty_retry_used {
                            break Err(Stop::Terminal(
                                TerminalReason::EmptyResponseFailed,
                                "the model returned no content and no tool calls twice".into(),
                            ));
                        }
                        empty_retry_used = true;
                        tracing::warn!(
                            session_id = %self.trace.session_id(),
                            step,
                            "the model answered with nothing; retrying the step once"
                        );
                        self.trace.emit(
                            step,
                            &event::EmptyResponseRetry {
                                finish_reason: r.finish_reason.as_deref(),
                            },
                        );
                        hint = Some(EMPTY_RESPONSE_HINT);
                    }
                    Ok(r) => break Ok(r),
                }
            };
            let resp = match resp {
                Ok(r) => r,
                Err(stop) => break stop,
            };
            if !resp.tool_calls.is_empty() {
                st.messages.push(Message::Assistant {
                    content: resp.content.clone(),
                    tool_calls: resp.tool_calls.clone(),
                });
                if let Err(stop) = self
                    .run_tools(step, &mut st, &resp.tool_calls, explore_deadline)
                    .instrument(step_span.clone())
                    .await
                {
                    break stop;
                }
                self.trace.flush();
                if step >= max_steps {
                    break Stop::Exhausted(
                        TerminalReason::MaxSteps,
                        format!("used all {max_steps} steps"),
                    );
                }
                continue;
            }
            let text = resp.content.trim().to_string();
            let gate_span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
                parent: &step_span,
                "completion_gate",
                verdict = Empty,
                repair = Empty,
                duration_ms = Empty
            );
            let gate_started = Instant::now();
            let seen = gate::Exploration {
                observed: &st.observed,
                successful_tools: st.successful_tools,
                example: example.as_deref(),
            };
            let verdict = gate::check(&self.profile, &self.workspace, &text, deadline, &seen)
                .instrument(gate_span.clone())
                .await;
            gate_span.record("duration_ms", gate_started.elapsed().as_millis() as u64);
            match &verdict {
                Gate::Accept(_, repair) => {
                    gate_span.record("verdict", "pass");
                    if let Some(r) = repair {
                        gate_span.record("repair", r.as_str());
                    }
                }
                Gate::Reject { .. } => {
                    gate_span.record("verdict", "fail");
                }
            }
            match verdict {
                Gate::Accept(result, repair) => {
                    if let Some(r) = repair {
                        tracing::warn!(
                            session_id = %self.trace.session_id(),
                            step,
                            repair = r.as_str(),
                            "the final answer was repaired to fit the contract"
                        );
                    }
                    st.messages.push(Message::Assistant {
                        content: text.clone(),
                        tool_calls: vec![],
                    });
                    self.trace.emit(step, &event::GateVerdict::Pass { repair });
                    return self.finish(
                        st,
                        step,
                        TerminalReason::Completed,
                        Some(text),
                        Some(result),
                        repair,
                        None,
                        vec![],
                    );
                }
                Gate::Reject {
                    feedback,
                    parsed,
                    exploring,
                } => {
                    // Too little exploration gets one more chance than other refusals (a
                    // small model often needs telling twice to call a tool), unless the
                    // profile allows no retries at all.
                    let retries = self.profile.gate_retries;
                    let spent = if exploring {
                        explore_blocks += 1;
                        explore_blocks > if retries == 0 { 0 } else { retries + 1 }
                    } else {
                        gate_blocks += 1;
                        gate_blocks > self.profile.gate_retries
                    };
                    let blocks = gate_blocks + explore_blocks;
                    tracing::warn!(
                        session_id = %self.trace.session_id(),
                        step,
                        blocks,
                        feedback = %feedback,
                        "the completion gate refused the final answer"
                    );
                    self.trace.emit(
                        step,
                        &event::GateVerdict::Fail {
                            feedback: &feedback,
                            blocks,
                        },
                    );
                    st.messages.push(Message::Assistant {
                        content: text.clone(),
                        tool_calls: vec![],
                    });
                    let out_of_time = Instant::now() >= explore_deadline;
                    if spent || out_of_time {
                        if let Some((result, repair, ungrounded)) = parsed {
                            if ungrounded.is_empty() {
                                // Nothing it cites is false; it explored too little or cited
                                // nothing: it stands as partial, saying why.
                                return self.finish(
                                    st,
                                    step,
                                    TerminalReason::Completed,
                                    Some(text),
                                    Some(gate::downgraded(result, exploring)),
                                    repair,
                                    None,
                                    vec![],
                                );
                            }
                            return self.finish(
                                st,
                                step,
                                TerminalReason::CompletedUnverified,
                                Some(text),
                                Some(result),
                                repair,
                                None,
                                ungrounded,
                            );
                        }
                        if out_of_time {
                            break self.out_of_time();
                        }
                        // No answer met the contract: what the child saw is still worth
                        // returning, as leads (or nothing, when it saw nothing).
                        let error = format!(
                            "the model's answers never met the contract; the last refusal: {feedback}"
                        );
                        return self.partial_from_seen(
                            st,
                            step,
                            TerminalReason::CompletionGateBlocked,
                            error,
                        );
                    }
                    st.messages.push(Message::User { content: feedback });
                    if step >= max_steps {
                        break Stop::Exhausted(
                            TerminalReason::MaxSteps,
                            format!("used all {max_steps} steps"),
                        );
                    }
                }
            }
        };
        match stop {
            Stop::Terminal(reason, error) => {
                self.finish(st, step, reason, None, None, None, Some(error), vec![])
            }
            Stop::Refused(error) => self.finish(
                st,
                step,
                TerminalReason::ModelError,
                None,
                None,
                None,
                Some(error),
                vec![],
            ),
            Stop::Exhausted(reason, error) => self.wrap_up(st, step, reason, error, deadline).await,
        }
    }

    /// The stop for a run that reached the end of its exploring time: a wrap-up when the
    /// profile allows one, else the end.
    pub(crate) fn out_of_time(&self) -> Stop {
        if self.profile.on_budget_exhausted == BudgetPolicy::Partial {
            Stop::Exhausted(TerminalReason::Timeout, self.timeout_message())
        } else {
            Stop::Terminal(TerminalReason::Timeout, self.timeout_message())
        }
    }

    /// The repo-map hint from the scout's run (`repo_map_hint`): its ranked places as a list
    /// marked unverified, and the lines of the first one, opened for the child. None when the
    /// profile does not ask for it or the scout found nothing.
    fn lead(&self, scout: Option<&ScoutRun>) -> Option<Lead> {
        if !self.profile.repo_map_hint {
            return None;
        }
        let answer = &scout?.answer;
        let places: Vec<(String, u64, u64)> = answer
            .evidence
            .iter()
            .filter_map(|e| crate::evidence::parse_citation(e))
            .take(REPO_MAP_LINES)
            .collect();
        if places.is_empty() {
            return None;
        }
        // Each place by the line it starts at: a small model copies the listed citation, and a
        // range longer than the window opened would cite lines it did not see.
        let listed: Vec<String> = answer
            .evidence
            .iter()
            .filter(|e| crate::evidence::parse_citation(e).is_some())
            .zip(&places)
            .enumerate()
            .map(|(i, (cite, (path, start, _)))| {
                let about = answer
                    .findings
                    .iter()
                    .find_map(|f| f.strip_prefix(cite.as_str())?.strip_prefix(": "))
                    .map(|f| f.split(". ").next().unwrap_or(f).trim_end_matches('.'))
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default();
                format!("{}. {path}:{start}{about}", i + 1)
            })
            .collect();
        let opened: &[Opened] = scout.map_or(&[], |s| &s.opened);
        let read_args = |(path, start, _): &(String, u64, u64)| serde_json::json!({"path": path, "start_line": start.saturating_sub(2).max(1), "limit": 40});
        // The first place not opened, else the first, is the next Read to suggest.
        let next = places
            .iter()
            .find(|(path, start, _)| !opened.iter().any(|o| o.near(path, *start)))
            .or(places.first());
        let example = next.map(|p| format!("Read with {}", read_args(p)));
        let list = format!(
            "Likely places (an offline search of the code index ranked them; unverified, they may not answer the task):\n{}",
            listed.join("\n")
        );
        let hint = if opened.is_empty() {
            format!("{list}\nRead around them to check before you rely on them.")
        } else {
            let windows: Vec<String> = opened
                .iter()
                .map(|o| format!("{}:\n{}", o.path, o.content().trim_end()))
                .collect();
            format!(
                "{list}\n\nOpened for you (line number | text):\n{}\n\nIf some of these lines answer the task, reply with the final JSON object citing the ones that do (relative/path:line); if none does, Read or Grep further.",
                windows.join("\n\n")
            )
        };
        Some(Lead {
            hint,
            example,
            opened: opened.iter().map(|o| o.shown.clone()).collect(),
        })
    }

    /// After a budget ran out: one tool-less call for the JSON result (policy `partial`). When
    /// that call cannot be made or gives no valid answer, an explore child's partial answer is
    /// built from the places it saw.
    async fn wrap_up(
        &self,
        mut st: State,
        step: u64,
        reason: TerminalReason,
        error: String,
        deadline: Instant,
    ) -> RunOutcome {
        if self.profile.on_budget_exhausted != BudgetPolicy::Partial || self.cancel.is_cancelled() {
            return self.finish(st, step, reason, None, None, None, Some(error), vec![]);
        }
        let contract = self.profile.answer_shape().to_string();
        let partial = if self.profile.result_contract == Some(ResultContract::Explore)
            && self.profile.output_schema.is_none()
        {
            " with status \"partial\""
        } else {
            ""
        };
        st.messages.push(Message::User {
            content: format!(
                "Budget exhausted ({error}). Do not call tools. Reply now with the {contract} JSON object{partial}: what you found so far, the evidence you actually saw, and what remains open."
            ),
        });
        self.trace.emit(step, &event::WrapUp { reason });
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
            "wrap_up",
            session_id = %self.trace.session_id(),
            step,
            reason = reason.as_str()
        );
        let resp = self
            .call(
                step,
                &mut st,
                CallSpec {
                    tools: &Arc::new(Vec::new()),
                    schema_chars: 0,
                    hint: None,
                    reserve: 0,
                    wrap_up: true,
                    tool_choice: "auto",
                },
                deadline,
            )
            .instrument(span)
            .await;
        let text = match resp {
            Ok(r) if !r.content.trim().is_empty() => r.content.trim().to_string(),
            Ok(_) => {
                let why = format!("{error}; the wrap-up answer was empty");
                return self.partial_from_seen(st, step, reason, why);
            }
            Err(Stop::Terminal(_, e) | Stop::Exhausted(_, e) | Stop::Refused(e)) => {
                let why = format!("{error}; the wrap-up call failed: {e}");
                return self.partial_from_seen(st, step, reason, why);
            }
        };
        st.messages.push(Message::Assistant {
            content: text.clone(),
            tool_calls: vec![],
        });
        match gate::parse_answer(&self.profile, &text) {
            Ok((mut result, repair)) => {
                match &mut result {
                    ParsedResult::Explore(r) => r.status = SubagentStatus::Partial,
                    ParsedResult::Custom(r) => r.status = SubagentStatus::Partial,
                    _ => {}
                }
                // A partial answer is held to the same evidence rule as a final one.
                let ungrounded =
                    gate::grounding(&self.workspace, result.evidence(), deadline, &st.observed)
                        .await;
                self.finish(
                    st,
                    step,
                    reason,
                    Some(text),
                    Some(result),
                    repair,
                    Some(error),
                    ungrounded,
                )
            }
            Err(e) => {
                let why = format!("{error}; the wrap-up answer was not a valid {contract}: {e}");
                self.partial_from_seen(st, step, reason, why)
            }
        }
    }

    /// The end of a run whose wrap-up gave no answer: for an explore child that saw something,
    /// a partial answer listing the places it saw (each one a line it was shown), else none.
    fn partial_from_seen(
        &self,
        st: State,
        step: u64,
        reason: TerminalReason,
        error: String,
    ) -> RunOutcome {
        // Only a child that searched itself has places of its own to give.
        // A caller's own schema gets its own answer or none: leads in ExploreResult's shape
        // would not be the type it asked for.
        if self.profile.result_contract != Some(ResultContract::Explore)
            || self.profile.output_schema.is_some()
            || st.observed.is_empty()
            || st.successful_tools <= st.given_looks
        {
            return self.finish(st, step, reason, None, None, None, Some(error), vec![]);
        }
        let mut evidence: Vec<String> = Vec::new();
        let mut findings: Vec<String> = Vec::new();
        for (path, line, text) in st.observed.hits() {
            if evidence.len() >= SEEN_CITES {
                break;
            }
            let cite = format!("{path}:{line}");
            if !evidence.contains(&cite) {
                findings.push(format!("{cite}: {}", text.trim()));
                evidence.push(cite);
            }
        }
        for (path, line) in st.observed.files() {
            if evidence.len() >= SEEN_CITES {
                break;
            }
            if !evidence.iter().any(|e| e.starts_with(&format!("{path}:"))) {
                findings.push(format!("{path}:{line}: read"));
                evidence.push(format!("{path}:{line}"));
            }
        }
        let result = crate::contract::ExploreResult {
            status: SubagentStatus::Partial,
            summary: format!(
                "The child stopped ({}) before it could give an answer; these are the places it searched and read, as leads, not an answer.",
                reason.as_str()
            ),
            findings,
            evidence,
            unresolved_questions: vec![format!(
                "outrider: the task is not answered: {error}"
            )],
            tool_usage: crate::contract::ToolUsage::new(),
            terminal_reason: reason.as_str().into(),
        };
        self.finish(
            st,
            step,
            reason,
            None,
            Some(ParsedResult::Explore(result)),
            None,
            Some(error),
            vec![],
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        st: State,
        step: u64,
        reason: TerminalReason,
        final_text: Option<String>,
        result: Option<ParsedResult>,
        repair: Option<Repair>,
        error: Option<String>,
        ungrounded: Vec<EvidenceCheck>,
    ) -> RunOutcome {
        self.trace.emit(
            step,
            &event::Terminal {
                reason,
                details: event::TerminalDetails {
                    error: error.as_deref(),
                    has_result: result.is_some(),
                    repair,
                    total_tokens: st.tokens,
                    usage_estimated: st.estimated,
                },
            },
        );
        self.trace.emit(
            step,
            &event::RunEnd {
                model_calls: st.calls,
            },
        );
        self.trace.flush();
        RunOutcome {
            terminal_reason: reason,
            final_text,
            result,
            repair,
            error,
            model_calls: st.calls,
            steps: step,
            tool_usage: st.tool_usage,
            token_usage: st.tokens,
            input_tokens: st.input_tokens,
            output_tokens: st.output_tokens,
            cached_input_tokens: st.cached_tokens,
            usage_estimated: st.estimated,
            ungrounded_evidence: ungrounded,
            messages: st.messages,
        }
    }
}

#[cfg(test)]
mod tests;
