//! One turn of the loop: a model call within the budgets, then the tool calls it asked for.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

use crate::llm::{
    estimate_tokens, ChatRequest, ChatResponse, Message, ModelErrorKind, ToolCall, Usage,
};
use crate::runner::context;
use crate::runner::outcome::TerminalReason;
use crate::runner::state::{State, Stop};
use crate::runner::RuntimeRunner;
use crate::tools::budget::OutputBudget;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::trace::event;

impl RuntimeRunner {
    /// One model call within budget: fit the context, call with timeout and cancellation, count
    /// tokens, log `model_output`.
    pub(crate) async fn call(
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
            self.trace.emit(
                step,
                &event::ContextCompaction {
                    shortened: compaction.shortened,
                    summarised: compaction.summarised,
                    before_tokens: compaction.before_tokens,
                    after_tokens: compaction.after_tokens,
                },
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
        let span = tracing::info_span!(
            "model_call",
            model = %self.model.describe(),
            prompt_estimate = estimated_prompt,
            status = Empty,
            duration_ms = Empty,
            prompt_tokens = Empty,
            completion_tokens = Empty,
            total_tokens = Empty,
            usage_estimated = Empty,
        );
        let started = Instant::now();
        let call = self.model.complete(&request).instrument(span.clone());
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline.into(), call) => r,
            _ = self.cancel.cancelled() => {
                span.record("status", "cancelled");
                return Err(Stop::Terminal(TerminalReason::Cancelled, "the run was cancelled".into()));
            }
        };
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        span.record(
            "status",
            match &outcome {
                Err(_) => "timeout",
                Ok(Err(e)) => e.kind.as_str(),
                Ok(Ok(_)) => "ok",
            },
        );
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
                self.trace.emit(
                    step,
                    &event::ModelErrorEvent {
                        kind: e.kind,
                        message: &e.message,
                        status: e.status,
                    },
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
        span.record("prompt_tokens", usage.prompt_tokens);
        span.record("completion_tokens", usage.completion_tokens);
        span.record("total_tokens", usage.total_tokens);
        span.record("usage_estimated", resp.usage.is_none());
        self.trace.emit(
            step,
            &event::ModelOutput {
                raw: &resp.content,
                usage,
                usage_estimated: resp.usage.is_none(),
                meta: event::ModelOutputMeta {
                    finish_reason: resp.finish_reason.as_deref(),
                    content_len: resp.content.chars().count(),
                    tool_calls_count: resp.tool_calls.len(),
                    prompt_estimate: estimated_prompt,
                },
                tool_calls: &resp.tool_calls,
            },
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
    pub(crate) async fn run_tools(
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
            self.trace.emit(
                step,
                &event::ToolCallEvent {
                    tool: &call.name,
                    args,
                    tool_call_id: &call.id,
                },
            );
            let span = tracing::info_span!(
                "tool_call",
                tool = %call.name,
                tool_call_id = %call.id,
                status = Empty,
                error_code = Empty,
                duration_ms = Empty,
            );
            let (registry, ctx, perms, call) = (
                self.registry.clone(),
                ctx.clone(),
                self.permissions.clone(),
                call.clone(),
            );
            handles.push(tokio::task::spawn_blocking(move || {
                let _entered = span.enter();
                let started = Instant::now();
                let result = registry.execute(&call.name, &call.arguments, &ctx, &perms);
                span.record("duration_ms", started.elapsed().as_millis() as u64);
                span.record("status", result.status.as_str());
                if let Some(code) = result.error_code() {
                    span.record("error_code", code.as_str());
                }
                result
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
            self.trace.emit(
                step,
                &event::ToolResultEvent {
                    tool: &call.name,
                    tool_call_id: &call.id,
                    status: result.status.as_str(),
                    error_code: result.error_code().map(|c| c.as_str()),
                    result: result.to_value(),
                },
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
}
