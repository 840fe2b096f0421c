//! The ReAct loop that drives one agent: native tool calling, budgets that hold, a completion
//! gate, and a trace.
//!
//! One step is one model call (plus at most one in-step retry after an empty answer). Tool calls
//! of a turn run concurrently on the blocking pool and go back in call order. The loop stops on
//! a valid final answer or on one of the [`TerminalReason`]s; when steps or tokens run out and the
//! profile says `on_budget_exhausted = "partial"`, one last tool-less call asks for the result.

pub mod context;

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::contract::{
    ContractError, ExploreResult, Repair, SubagentStatus, ToolUsage, VerificationMeta,
    VerificationResult,
};
use crate::evidence::{check_evidence, EvidenceCheck};
use crate::llm::{
    estimate_tokens, ChatModel, ChatRequest, ChatResponse, Message, ModelErrorKind, ToolCall, Usage,
};
use crate::profile::RuntimeProfile;
use crate::tools::budget::OutputBudget;
use crate::tools::context::{ReadMemory, ToolContext};
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::Trace;

/// The hint added (not stored) when the model answered with nothing.
pub const EMPTY_RESPONSE_HINT: &str =
    "Your last reply had no content and no tool calls. Reply with the final answer in content, or call a tool.";

/// Why a run stopped. The first nine are the reference's; `timeout`, `cancelled` and
/// `context_budget` are ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalReason {
    /// A valid final answer.
    Completed,
    /// A final answer whose evidence could not all be grounded after the gate's retries.
    CompletedUnverified,
    /// Two empty answers.
    EmptyResponseFailed,
    /// Invalid final answers beyond the gate's retries.
    CompletionGateBlocked,
    /// The step budget ran out.
    MaxSteps,
    /// The token budget ran out.
    TokenBudget,
    /// The model failed (error, refusal, unusable answer).
    ModelError,
    /// The wall-clock limit passed.
    Timeout,
    /// Someone cancelled the run.
    Cancelled,
    /// Even a fully compacted request does not fit the context budget.
    ContextBudget,
}

impl TerminalReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::CompletedUnverified => "completed_unverified",
            TerminalReason::EmptyResponseFailed => "empty_response_failed",
            TerminalReason::CompletionGateBlocked => "completion_gate_blocked",
            TerminalReason::MaxSteps => "max_steps",
            TerminalReason::TokenBudget => "token_budget",
            TerminalReason::ModelError => "model_error",
            TerminalReason::Timeout => "timeout",
            TerminalReason::Cancelled => "cancelled",
            TerminalReason::ContextBudget => "context_budget",
        }
    }

    /// Whether the run ended with a final answer the gate accepted.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            TerminalReason::Completed | TerminalReason::CompletedUnverified
        )
    }
}

/// A cancellation signal shared by a run, its tools and whoever may cancel it.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl CancelToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel: running model calls are abandoned and tools stop at their next check.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag tools poll.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// A parsed final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedResult {
    /// An explore answer.
    Explore(ExploreResult),
    /// A verification answer.
    Verification(VerificationResult),
    /// Free text, for a profile without a result contract (a main agent).
    Text(String),
}

impl ParsedResult {
    fn evidence(&self) -> &[String] {
        match self {
            ParsedResult::Explore(r) => &r.evidence,
            ParsedResult::Verification(r) => &r.evidence,
            ParsedResult::Text(_) => &[],
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Why it stopped.
    pub terminal_reason: TerminalReason,
    /// The accepted final text, if any.
    pub final_text: Option<String>,
    /// The parsed result: the accepted answer, or the wrap-up answer after a budget ran out.
    pub result: Option<ParsedResult>,
    /// The repair the gate made to accept the answer, if any.
    pub repair: Option<Repair>,
    /// What went wrong, for runs without a result.
    pub error: Option<String>,
    /// Model calls made (in-step retries and the wrap-up included).
    pub model_calls: u64,
    /// Steps used.
    pub steps: u64,
    /// Requested tool calls by name (denied and unknown ones included).
    pub tool_usage: ToolUsage,
    /// Tokens used: provider-reported where given, estimated otherwise.
    pub token_usage: u64,
    /// Whether any call's usage had to be estimated.
    pub usage_estimated: bool,
    /// Evidence items the gate could not ground (kept on a `completed_unverified` result).
    pub ungrounded_evidence: Vec<EvidenceCheck>,
    /// The whole conversation of the run.
    pub messages: Vec<Message>,
}

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

enum Stop {
    Terminal(TerminalReason, String),
    Exhausted(TerminalReason, String),
}

struct State {
    messages: Vec<Message>,
    tokens: u64,
    estimated: bool,
    calls: u64,
    tool_usage: BTreeMap<String, u64>,
    read_memory: ReadMemory,
}

enum Gate {
    Accept(ParsedResult, Option<Repair>),
    Reject {
        feedback: String,
        parsed: Option<(ParsedResult, Option<Repair>, Vec<EvidenceCheck>)>,
    },
}

impl RuntimeRunner {
    /// Run the loop on `task` (the rendered user message) until it stops.
    pub async fn run(&self, task: &str) -> RunOutcome {
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(self.profile.timeout_seconds);
        let mut system = self.profile.rendered_system_prompt();
        if let Some(extra) = &self.extra_system {
            system.push_str("\n\n");
            system.push_str(extra);
        }
        let mut st = State {
            messages: vec![
                Message::System { content: system },
                Message::User {
                    content: task.to_string(),
                },
            ],
            tokens: 0,
            estimated: false,
            calls: 0,
            tool_usage: BTreeMap::new(),
            read_memory: ReadMemory::new(),
        };
        let tools = self.tool_schemas.clone();
        let schema_chars: usize = tools.iter().map(|t| t.to_string().len()).sum();
        self.trace.log(
            "run_start",
            0,
            json!({
                "profile": self.profile.name, "max_steps": self.profile.max_steps,
                "context_token_budget": self.profile.context_token_budget,
                "total_token_budget": self.profile.total_token_budget,
                "tools": self.registry.names(), "model": self.model.describe(),
            }),
        );
        self.trace.log("user_input", 0, json!({"content": task}));
        let max_steps = self.profile.max_steps.max(1) as u64;
        let mut empty_retry_used = false;
        let mut gate_blocks = 0i64;
        let mut step = 0u64;
        let stop = loop {
            step += 1;
            let mut hint = None;
            let resp = loop {
                match self
                    .call(step, &mut st, &tools, schema_chars, hint, deadline)
                    .await
                {
                    Err(stop) => break Err(stop),
                    Ok(r) if r.tool_calls.is_empty() && r.content.trim().is_empty() => {
                        if empty_retry_used {
                            break Err(Stop::Terminal(
                                TerminalReason::EmptyResponseFailed,
                                "the model returned no content and no tool calls twice".into(),
                            ));
                        }
                        empty_retry_used = true;
                        self.trace.log(
                            "empty_response_retry",
                            step,
                            json!({"finish_reason": r.finish_reason}),
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
                    .run_tools(step, &mut st, &resp.tool_calls, deadline)
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
            match self.gate(&text).await {
                Gate::Accept(result, repair) => {
                    st.messages.push(Message::Assistant {
                        content: text.clone(),
                        tool_calls: vec![],
                    });
                    self.trace.log(
                        "completion_gate_verdict",
                        step,
                        json!({"verdict": "PASS", "repair": repair.map(Repair::as_str)}),
                    );
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
                Gate::Reject { feedback, parsed } => {
                    gate_blocks += 1;
                    self.trace.log(
                        "completion_gate_verdict",
                        step,
                        json!({"verdict": "FAIL", "feedback": feedback, "blocks": gate_blocks}),
                    );
                    st.messages.push(Message::Assistant {
                        content: text.clone(),
                        tool_calls: vec![],
                    });
                    if gate_blocks > self.profile.gate_retries {
                        if let Some((result, repair, ungrounded)) = parsed {
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
                        break Stop::Terminal(TerminalReason::CompletionGateBlocked, feedback);
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
            Stop::Exhausted(reason, error) => self.wrap_up(st, step, reason, error, deadline).await,
        }
    }

    /// One model call within budget: fit the context, call with timeout and cancellation, count
    /// tokens, log `model_output`.
    async fn call(
        &self,
        step: u64,
        st: &mut State,
        tools: &Arc<Vec<Value>>,
        schema_chars: usize,
        hint: Option<&str>,
        deadline: Instant,
    ) -> Result<ChatResponse, Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Terminal(
                TerminalReason::Cancelled,
                "the run was cancelled".into(),
            ));
        }
        let with_hint;
        let messages: &[Message] = match hint {
            Some(h) => {
                with_hint = [
                    st.messages.as_slice(),
                    &[Message::User {
                        content: h.to_string(),
                    }],
                ]
                .concat();
                &with_hint
            }
            None => &st.messages,
        };
        let budget = self.profile.context_token_budget as u64;
        let (view, compaction) = context::fit(messages, schema_chars, budget).map_err(|needed| {
            Stop::Terminal(
                TerminalReason::ContextBudget,
                format!(
                    "the request needs about {needed} tokens even after compacting the history, but context_token_budget is {budget}"
                ),
            )
        })?;
        if compaction.shortened + compaction.summarised > 0 {
            self.trace.log(
                "context_compaction",
                step,
                json!({"shortened": compaction.shortened, "summarised": compaction.summarised,
                       "before_tokens": compaction.before_tokens, "after_tokens": compaction.after_tokens}),
            );
        }
        let request = ChatRequest {
            model: self.model.model_id(),
            messages: view.unwrap_or_else(|| messages.to_vec()),
            tools: tools.clone(),
            tool_choice: if tools.is_empty() {
                None
            } else {
                Some("auto".into())
            },
        };
        let estimated_prompt = compaction.after_tokens;
        st.calls += 1;
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline.into(), self.model.complete(&request)) => r,
            _ = self.cancel.cancelled() => {
                return Err(Stop::Terminal(TerminalReason::Cancelled, "the run was cancelled".into()));
            }
        };
        let resp = match outcome {
            Err(_) => {
                return Err(Stop::Terminal(
                    TerminalReason::Timeout,
                    format!(
                        "the run exceeded its wall-clock limit of {}s",
                        self.profile.timeout_seconds
                    ),
                ))
            }
            Ok(Err(e)) if e.kind == ModelErrorKind::Cancelled => {
                return Err(Stop::Terminal(TerminalReason::Cancelled, e.to_string()))
            }
            Ok(Err(e)) => {
                self.trace.log(
                    "model_error",
                    step,
                    json!({"kind": e.kind.as_str(), "message": e.message, "status": e.status}),
                );
                return Err(Stop::Terminal(TerminalReason::ModelError, e.to_string()));
            }
            Ok(Ok(r)) => r,
        };
        let usage = match resp.usage {
            Some(u) => u,
            None => {
                st.estimated = true;
                let completion = estimate_tokens(
                    resp.content.chars().count()
                        + resp
                            .tool_calls
                            .iter()
                            .map(|c| c.name.len() + c.arguments.len())
                            .sum::<usize>(),
                );
                Usage {
                    prompt_tokens: estimated_prompt,
                    completion_tokens: completion,
                    total_tokens: estimated_prompt + completion,
                }
            }
        };
        st.tokens += usage.total_tokens;
        self.trace.log(
            "model_output",
            step,
            json!({
                "raw": resp.content,
                "usage": usage,
                "usage_estimated": resp.usage.is_none(),
                "meta": {"finish_reason": resp.finish_reason, "content_len": resp.content.chars().count(),
                         "tool_calls_count": resp.tool_calls.len(), "prompt_estimate": estimated_prompt},
                "tool_calls": resp.tool_calls,
            }),
        );
        if st.tokens > self.profile.total_token_budget as u64 {
            return Err(Stop::Exhausted(
                TerminalReason::TokenBudget,
                format!(
                    "used {} tokens of a total_token_budget of {}",
                    st.tokens, self.profile.total_token_budget
                ),
            ));
        }
        Ok(resp)
    }

    /// Run one turn's tool calls concurrently; append their results in call order.
    async fn run_tools(
        &self,
        step: u64,
        st: &mut State,
        calls: &[ToolCall],
        deadline: Instant,
    ) -> Result<(), Stop> {
        let ctx = ToolContext::new(self.workspace.clone())
            .with_deadline(deadline)
            .with_cancel(self.cancel.flag())
            .with_read_memory(st.read_memory.clone());
        let mut handles = Vec::with_capacity(calls.len());
        for call in calls {
            *st.tool_usage.entry(call.name.clone()).or_insert(0) += 1;
            let args = serde_json::from_str::<Value>(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            self.trace.log(
                "tool_call",
                step,
                json!({"tool": call.name, "args": args, "tool_call_id": call.id}),
            );
            let (registry, ctx, perms, call) = (
                self.registry.clone(),
                ctx.clone(),
                self.permissions.clone(),
                call.clone(),
            );
            handles.push(tokio::task::spawn_blocking(move || {
                registry.execute(&call.name, &call.arguments, &ctx, &perms)
            }));
        }
        let mut results = Vec::with_capacity(handles.len());
        for (handle, call) in handles.into_iter().zip(calls) {
            let result = match handle.await {
                Ok(r) => r,
                Err(e) => ToolResult::error(
                    &Value::String(call.arguments.clone()),
                    ErrorCode::InternalError,
                    format!("Tool '{}' failed unexpectedly: {e}", call.name),
                    0,
                ),
            };
            results.push((call.name.clone(), result));
        }
        let results = OutputBudget::default().apply_batch(results);
        self.record_results(step, st, calls, results, deadline)
    }

    /// Log and append a turn's results in call order; stop on cancellation or the deadline.
    fn record_results(
        &self,
        step: u64,
        st: &mut State,
        calls: &[ToolCall],
        results: Vec<ToolResult>,
        deadline: Instant,
    ) -> Result<(), Stop> {
        for (result, call) in results.iter().zip(calls) {
            self.trace.log(
                "tool_result",
                step,
                json!({"tool": call.name, "tool_call_id": call.id, "status": result.status.as_str(),
                       "error_code": result.error_code().map(|c| c.as_str()), "result": result.to_value()}),
            );
            st.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: result.to_json(),
            });
        }
        if self.cancel.is_cancelled() {
            return Err(Stop::Terminal(
                TerminalReason::Cancelled,
                "the run was cancelled".into(),
            ));
        }
        if Instant::now() >= deadline {
            return Err(Stop::Terminal(
                TerminalReason::Timeout,
                format!(
                    "the run exceeded its wall-clock limit of {}s",
                    self.profile.timeout_seconds
                ),
            ));
        }
        Ok(())
    }

    fn parse(&self, text: &str) -> Result<(ParsedResult, Option<Repair>), ContractError> {
        if self.profile.result_contract.is_empty() {
            return Ok((ParsedResult::Text(text.to_string()), None));
        }
        if self.profile.result_contract == "ExploreResult" {
            ExploreResult::repair(text, ToolUsage::new(), "completed")
                .map(|(r, rep)| (ParsedResult::Explore(r), rep))
        } else {
            VerificationResult::repair(text, VerificationMeta::default())
                .map(|(r, rep)| (ParsedResult::Verification(r), rep))
        }
    }

    /// The completion gate: the contract (with repair), then the evidence check.
    async fn gate(&self, text: &str) -> Gate {
        let contract = &self.profile.result_contract;
        let (result, repair) = match self.parse(text) {
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
        let ws = self.workspace.clone();
        let checks = tokio::task::spawn_blocking(move || check_evidence(&ws, &evidence))
            .await
            .unwrap_or_default();
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

    /// After a budget ran out: one tool-less call for the JSON result (policy `partial`).
    async fn wrap_up(
        &self,
        mut st: State,
        step: u64,
        reason: TerminalReason,
        error: String,
        deadline: Instant,
    ) -> RunOutcome {
        if self.profile.on_budget_exhausted != "partial" || self.cancel.is_cancelled() {
            return self.finish(st, step, reason, None, None, None, Some(error), vec![]);
        }
        let contract = &self.profile.result_contract;
        let partial = if contract == "ExploreResult" {
            " with status \"partial\""
        } else {
            ""
        };
        st.messages.push(Message::User {
            content: format!(
                "Budget exhausted ({error}). Do not call tools. Reply now with the {contract} JSON object{partial}: what you found so far, the evidence you actually saw, and what remains open."
            ),
        });
        self.trace
            .log("wrap_up", step, json!({"reason": reason.as_str()}));
        let saved_budget = st.tokens;
        // The wrap-up call is allowed past the token budget: it is the one that salvages the run.
        st.tokens = 0;
        let resp = self
            .call(step, &mut st, &Arc::new(Vec::new()), 0, None, deadline)
            .await;
        st.tokens += saved_budget;
        let text = match resp {
            Ok(r) if !r.content.trim().is_empty() => r.content.trim().to_string(),
            Ok(_) => {
                return self.finish(
                    st,
                    step,
                    reason,
                    None,
                    None,
                    None,
                    Some(format!("{error}; the wrap-up answer was empty")),
                    vec![],
                )
            }
            Err(Stop::Terminal(_, e) | Stop::Exhausted(_, e)) => {
                return self.finish(
                    st,
                    step,
                    reason,
                    None,
                    None,
                    None,
                    Some(format!("{error}; the wrap-up call failed: {e}")),
                    vec![],
                )
            }
        };
        st.messages.push(Message::Assistant {
            content: text.clone(),
            tool_calls: vec![],
        });
        match self.parse(&text) {
            Ok((mut result, repair)) => {
                if let ParsedResult::Explore(r) = &mut result {
                    r.status = SubagentStatus::Partial;
                }
                self.finish(
                    st,
                    step,
                    reason,
                    Some(text),
                    Some(result),
                    repair,
                    Some(error),
                    vec![],
                )
            }
            Err(e) => self.finish(
                st,
                step,
                reason,
                None,
                None,
                None,
                Some(format!(
                    "{error}; the wrap-up answer was not a valid {contract}: {e}"
                )),
                vec![],
            ),
        }
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
        self.trace.log(
            "terminal",
            step,
            json!({"reason": reason.as_str(), "details": {"error": error, "has_result": result.is_some(),
                   "repair": repair.map(Repair::as_str), "total_tokens": st.tokens, "usage_estimated": st.estimated}}),
        );
        self.trace
            .log("run_end", step, json!({"model_calls": st.calls}));
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
            usage_estimated: st.estimated,
            ungrounded_evidence: ungrounded,
            messages: st.messages,
        }
    }
}

#[cfg(test)]
mod tests;
