//! One turn of the loop: a model call within the budgets, then the tool calls it asked for.

use std::borrow::Cow;
use std::time::Instant;

use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

use crate::llm::{
    estimate_tokens, ChatRequest, ChatResponse, Message, ModelError, ModelErrorKind, ToolCall,
    Usage,
};
use crate::runner::compaction;
use crate::runner::outcome::TerminalReason;
use crate::runner::state::{CallSpec, State, Stop, ANSWER_RESERVE_TOKENS, MAX_ANSWER_BYTES};
use crate::runner::RuntimeRunner;
use crate::tools::budget::OutputBudget;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::registry::{parse_tool_arguments, unparsable_arguments, RawArguments};
use crate::trace::event;

/// Tokens kept for one answer when deciding whether a call fits the total budget: a final
/// An answer over [`MAX_ANSWER_BYTES`], as the error that ends the run.
fn oversized(resp: &ChatResponse) -> Option<ModelError> {
    let size = resp.content.len()
        + resp
            .tool_calls
            .iter()
            .map(|c| c.id.len() + c.name.len() + c.arguments.len())
            .sum::<usize>();
    (size > MAX_ANSWER_BYTES).then(|| {
        ModelError::new(
            ModelErrorKind::BadResponse,
            format!(
                "the model's answer is {size} bytes (content and tool calls), over the {} MiB limit for one answer",
                MAX_ANSWER_BYTES >> 20
            ),
        )
    })
}

/// The stop for a cancelled run.
fn cancelled() -> Stop {
    Stop::Terminal(TerminalReason::Cancelled, "the run was cancelled".into())
}

/// How a model call that gave no answer ended (a cancelled one stops the run at once).
enum Sent {
    /// The deadline passed first.
    TimedOut,
    /// The model (or the check on its answer's size) failed.
    Failed(ModelError),
}

/// One tool call's arguments, parsed once: the value the tool runs on (or the parser's
/// message), the spelling the trace and a refused repeat echo, and the canonical spelling that
/// tells a repeated call.
struct CallArguments {
    /// As the model sent them.
    raw: String,
    /// As the tool gets them (missing or empty is `{}`).
    parsed: Result<Value, String>,
    /// As echoed: the JSON value when they parse, else the text itself.
    echo: Value,
    /// Keys sorted, no spaces (the trimmed text when they do not parse).
    canonical: String,
}

impl CallArguments {
    /// Parse the arguments of one call.
    fn parse(raw: &str) -> Self {
        let parsed = parse_tool_arguments(RawArguments::from(raw));
        let (echo, canonical) = match &parsed {
            Ok(v) if !raw.trim().is_empty() => {
                (v.clone(), crate::tools::permissions::sorted(v).to_string())
            }
            _ => (Value::String(raw.to_string()), raw.trim().to_string()),
        };
        Self {
            raw: raw.to_string(),
            parsed,
            echo,
            canonical,
        }
    }
}

impl RuntimeRunner {
    /// The error of a run that hit its wall-clock limit.
    pub(crate) fn timeout_message(&self) -> String {
        format!(
            "the run exceeded its wall-clock limit of {}s",
            self.profile.timeout_seconds
        )
    }

    /// One model call within budget: fit the context, check that the call (and the reserve
    /// after it) fits the total budget, call with timeout and cancellation, count tokens, log
    /// `model_output`.
    pub(crate) async fn call(
        &self,
        step: u64,
        st: &mut State,
        spec: CallSpec<'_>,
        deadline: Instant,
    ) -> Result<ChatResponse, Stop> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let (messages, estimated_prompt) = self.fit(step, st, &spec)?;
        let request = ChatRequest {
            model: self.model.model_id(),
            messages,
            tools: spec.tools.clone(),
            tool_choice: if spec.tools.is_empty() {
                None
            } else {
                Some(spec.tool_choice.into())
            },
            deadline: Some(deadline),
            settings: self.model.settings(),
        };
        st.calls += 1;
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
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
        let mut resp = match self.send(&request, deadline, &span).await? {
            Ok(resp) => resp,
            Err(Sent::TimedOut) if spec.wrap_up => {
                return Err(Stop::Terminal(
                    TerminalReason::Timeout,
                    self.timeout_message(),
                ))
            }
            Err(Sent::TimedOut) => return Err(self.out_of_time()),
            Err(Sent::Failed(e)) => return Err(self.failed(step, e, spec.tool_choice)),
        };
        let tool_call_format = self.text_calls(step, &mut resp, spec.tools);
        let usage = self.count(step, st, &resp, estimated_prompt, &span);
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
                    tool_call_format,
                },
                tool_calls: &resp.tool_calls,
            },
        );
        if tool_call_format.is_some() {
            // The text was the calls: the history carries them as calls, not as an answer.
            resp.content = String::new();
        }
        // A provider may report more than was estimated: the count stays what it reported, and
        // the check before the next call (the wrap-up included) refuses to spend any more.
        Ok(resp)
    }

    /// The messages of the next request, fitted into the context budget (the wrap-up's into
    /// what the total budget has left), and their estimated tokens. Decides whether the call
    /// may be made at all: refused when even a compacted request does not fit, or when the
    /// call and the wrap-up's reserve would overdraw the total budget.
    fn fit(&self, step: u64, st: &State, spec: &CallSpec<'_>) -> Result<(Vec<Message>, u64), Stop> {
        let messages: Cow<'_, [Message]> = match spec.hint {
            Some(h) => {
                let hint = Message::User {
                    content: h.to_string(),
                };
                Cow::Owned([st.messages.as_slice(), &[hint]].concat())
            }
            None => Cow::Borrowed(&st.messages),
        };
        let total = self.profile.total_token_budget as u64;
        let left = total.saturating_sub(st.tokens);
        let context_budget = self.profile.context_token_budget as u64;
        // The wrap-up is compacted into what is left, so that it never overdraws the budget.
        let budget = if spec.wrap_up {
            context_budget.min(left.saturating_sub(ANSWER_RESERVE_TOKENS))
        } else {
            context_budget
        };
        let (view, compaction) = compaction::fit(&messages, spec.schema_chars, budget).map_err(|needed| {
            if spec.wrap_up {
                Stop::Terminal(
                    TerminalReason::TokenBudget,
                    format!(
                        "no room for the wrap-up: {left} of total_token_budget {total} tokens are left, but even a compacted request needs about {needed} plus {ANSWER_RESERVE_TOKENS} for the answer"
                    ),
                )
            } else {
                Stop::Terminal(
                    TerminalReason::ContextBudget,
                    format!(
                        "the request needs about {needed} tokens even after compacting the history, but context_token_budget is {budget}"
                    ),
                )
            }
        })?;
        let estimated_prompt = compaction.after_tokens;
        let cost = estimated_prompt + ANSWER_RESERVE_TOKENS;
        let reserve = spec.reserve;
        if !spec.wrap_up && cost + reserve > left {
            let kept = if reserve > 0 {
                format!(" and {reserve} are kept for the wrap-up")
            } else {
                String::new()
            };
            return Err(Stop::Exhausted(
                TerminalReason::TokenBudget,
                format!(
                    "used {} tokens of a total_token_budget of {total}; the next call needs about {cost} ({estimated_prompt} prompt + {ANSWER_RESERVE_TOKENS} answer){kept}",
                    st.tokens
                ),
            ));
        }
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
        Ok((
            view.unwrap_or_else(|| messages.into_owned()),
            estimated_prompt,
        ))
    }

    /// Send `request` and wait for the answer until `deadline`, or until the run is cancelled
    /// (the outer error); an answer over [`MAX_ANSWER_BYTES`] counts as a failed call. The
    /// call's span gets its status and duration.
    async fn send(
        &self,
        request: &ChatRequest,
        deadline: Instant,
        span: &tracing::Span,
    ) -> Result<Result<ChatResponse, Sent>, Stop> {
        let started = Instant::now();
        let call = self.model.complete(request).instrument(span.clone());
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline.into(), call) => r,
            () = self.cancel.cancelled() => {
                span.record("status", "cancelled");
                return Err(cancelled());
            }
        };
        let outcome = match outcome {
            Ok(Ok(resp)) => Ok(oversized(&resp).map_or(Ok(resp), Err)),
            other => other,
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
        Ok(match outcome {
            Err(_) => Err(Sent::TimedOut),
            Ok(Err(e)) => Err(Sent::Failed(e)),
            Ok(Ok(resp)) => Ok(resp),
        })
    }

    /// The stop for a failed model call. Decides between a provider that does not take
    /// `tool_choice: "required"` (asked again with `auto`), a cancelled call, a provider that
    /// throttles past every retry (`rate_limited`), and a model error.
    fn failed(&self, step: u64, e: ModelError, tool_choice: &str) -> Stop {
        // Only a 400/422 can be a provider that does not take `required`.
        if e.kind == ModelErrorKind::InvalidRequest
            && matches!(e.status, Some(400 | 422))
            && tool_choice == "required"
        {
            tracing::info!(
                session_id = %self.trace.session_id(),
                step,
                error = %crate::redact::redact_cow(&e.message),
                "the provider refused tool_choice \"required\"; asking with \"auto\""
            );
            return Stop::Refused(e.to_string());
        }
        if e.kind == ModelErrorKind::Cancelled {
            return Stop::Terminal(TerminalReason::Cancelled, e.to_string());
        }
        // INFO: the failure ends up in the run's result (`error`, `failure_reason`), which
        // `outrider explore` prints; a warning here said it a second time.
        tracing::info!(
            session_id = %self.trace.session_id(),
            step,
            kind = e.kind.as_str(),
            error = %crate::redact::redact_cow(&e.message),
            "model call failed"
        );
        self.trace.emit(
            step,
            &event::ModelErrorEvent {
                kind: e.kind,
                message: &e.message,
                status: e.status,
            },
        );
        // A provider that throttles us past the deadline (or past every retry) is not a
        // broken model: say so, so that the caller retries later instead of elsewhere.
        let reason = if e.kind == ModelErrorKind::RateLimit {
            TerminalReason::RateLimited
        } else {
            TerminalReason::ModelError
        };
        Stop::Terminal(reason, e.to_string())
    }

    /// Tool calls the model wrote as text instead of calling them, taken as calls when it
    /// made none and tools were offered; `Some("text")` when they were (the trace's
    /// `tool_call_format`).
    fn text_calls(
        &self,
        step: u64,
        resp: &mut ChatResponse,
        tools: &[Value],
    ) -> Option<&'static str> {
        if !resp.tool_calls.is_empty() || tools.is_empty() {
            return None;
        }
        let offered: Vec<&str> = tools
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        let cut = resp.finish_reason.as_deref() == Some("length");
        let calls = crate::runner::assist::text_calls::parse(&resp.content, &offered, step, cut)?;
        tracing::debug!(
            session_id = %self.trace.session_id(),
            step,
            calls = calls.len(),
            "the model wrote its tool calls as text; taking them as calls"
        );
        resp.tool_calls = calls;
        Some("text")
    }

    /// The call's usage as the provider reported it, or estimated (and the run marked so)
    /// when it reported none; added to the run's counts and the call's span.
    fn count(
        &self,
        step: u64,
        st: &mut State,
        resp: &ChatResponse,
        estimated_prompt: u64,
        span: &tracing::Span,
    ) -> Usage {
        let usage = resp.usage.unwrap_or_else(|| {
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
                cached_tokens: 0,
            }
        });
        st.tokens += usage.total_tokens;
        st.input_tokens += usage.prompt_tokens;
        st.output_tokens += usage.completion_tokens;
        st.cached_tokens += usage.cached_tokens;
        span.record("prompt_tokens", usage.prompt_tokens);
        span.record("completion_tokens", usage.completion_tokens);
        span.record("total_tokens", usage.total_tokens);
        span.record("usage_estimated", resp.usage.is_none());
        tracing::debug!(
            session_id = %self.trace.session_id(),
            step,
            tool_calls = resp.tool_calls.len(),
            input_tokens = usage.prompt_tokens,
            output_tokens = usage.completion_tokens,
            finish_reason = resp.finish_reason.as_deref().unwrap_or(""),
            "model answered"
        );
        usage
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
        let mut canonical = Vec::with_capacity(calls.len());
        for call in calls {
            *st.tool_usage.entry(call.name.clone()).or_insert(0) += 1;
            let args = CallArguments::parse(&call.arguments);
            let repeated = st
                .last_failure
                .as_ref()
                .and_then(|(name, canonical, at, error)| {
                    (*name == call.name && *canonical == args.canonical)
                        .then(|| (*at, error.clone()))
                });
            self.trace.emit(
                step,
                &event::ToolCallEvent {
                    tool: &call.name,
                    args: args.echo.clone(),
                    tool_call_id: &call.id,
                },
            );
            canonical.push(args.canonical.clone());
            handles.push(self.start_tool(call, args, repeated, &ctx));
        }
        let mut results = Vec::with_capacity(handles.len());
        for (handle, call) in handles.into_iter().zip(calls) {
            results.push((
                call.name.clone(),
                self.collect(handle, call, deadline).await,
            ));
        }
        let results = OutputBudget::default().apply_batch(results);
        self.record_results(step, st, calls, &canonical, results, deadline)
    }

    /// Start one tool call on the blocking pool, in its own span. A call that repeats the last
    /// failed one (`repeated`: its step and error) is not run again: its result says so.
    fn start_tool(
        &self,
        call: &ToolCall,
        args: CallArguments,
        repeated: Option<(u64, String)>,
        ctx: &ToolContext,
    ) -> tokio::task::JoinHandle<ToolResult> {
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
            "tool_call",
            tool = %call.name,
            tool_call_id = %call.id,
            status = Empty,
            error_code = Empty,
            duration_ms = Empty,
        );
        let mut ctx = ctx.clone();
        ctx.call_id = Some(call.id.clone());
        let (registry, perms, name) = (
            self.registry.clone(),
            self.permissions.clone(),
            call.name.clone(),
        );
        tokio::task::spawn_blocking(crate::exec::inherit_caller_sync(move || {
            let _entered = span.enter();
            let started = Instant::now();
            let result = match (repeated, &args.parsed) {
                // The same call fails the same way: say so instead of running it again.
                (Some((at, error)), _) => ToolResult::error(
                    &args.echo,
                    ErrorCode::InvalidParam,
                    format!(
                        "Same call as step {at}, which failed with: {error} Change the arguments or use another tool."
                    ),
                    0,
                ),
                (None, Ok(value)) => registry.execute_parsed(&name, value, &ctx, &perms),
                (None, Err(e)) => unparsable_arguments(RawArguments::from(&args.raw), e),
            };
            span.record("duration_ms", started.elapsed().as_millis() as u64);
            span.record("status", result.status.as_str());
            if let Some(code) = result.error_code() {
                span.record("error_code", code.as_str());
            }
            result
        }))
    }

    /// A started tool call's result, or the error envelope for one that did not finish before
    /// `deadline` (it is left to finish on its thread; the run ends after this turn) or failed
    /// on its thread.
    async fn collect(
        &self,
        handle: tokio::task::JoinHandle<ToolResult>,
        call: &ToolCall,
        deadline: Instant,
    ) -> ToolResult {
        // Tools stop themselves at the deadline; this bounds one that blocks anyway.
        let handle = crate::exec::spin_first(handle);
        match tokio::time::timeout_at(deadline.into(), handle).await {
            Ok(Ok(r)) => r,
            Err(_) => ToolResult::error(
                &Value::String(call.arguments.clone()),
                ErrorCode::Timeout,
                format!(
                    "Tool '{}' did not finish before the run's wall-clock limit of {}s",
                    call.name, self.profile.timeout_seconds
                ),
                0,
            ),
            Ok(Err(e)) => ToolResult::error(
                &Value::String(call.arguments.clone()),
                ErrorCode::InternalError,
                format!("Tool '{}' failed unexpectedly: {e}", call.name),
                0,
            ),
        }
    }

    /// Log and append a turn's results in call order (`canonical`: each call's arguments as
    /// [`CallArguments::canonical`]); stop on cancellation or the deadline.
    fn record_results(
        &self,
        step: u64,
        st: &mut State,
        calls: &[ToolCall],
        canonical: &[String],
        results: Vec<ToolResult>,
        deadline: Instant,
    ) -> Result<(), Stop> {
        for ((result, call), args) in results.iter().zip(calls).zip(canonical) {
            self.log_result(step, call, result);
            let shown = result.to_value();
            if result.error_code().is_some() {
                // A repeat keeps the first failure's step and message (no nested notes).
                let repeat = st
                    .last_failure
                    .as_ref()
                    .is_some_and(|(n, a, _, _)| *n == call.name && a == args);
                if !repeat {
                    let message = shown["error"]["message"].as_str().unwrap_or_default();
                    st.last_failure = Some((
                        call.name.clone(),
                        args.clone(),
                        step,
                        message.chars().take(300).collect(),
                    ));
                }
            } else {
                st.successful_tools += 1;
                st.observed.record(&call.name, &shown);
                st.last_failure = None;
            }
            st.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: crate::runner::render::tool_result(
                    self.profile.tool_result_format,
                    &call.name,
                    result,
                    &shown,
                ),
            });
        }
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        if Instant::now() >= deadline {
            return Err(self.out_of_time());
        }
        Ok(())
    }

    /// Log one tool result (a denied call as a warning) and write its trace event.
    fn log_result(&self, step: u64, call: &ToolCall, result: &ToolResult) {
        let code = result.error_code();
        tracing::debug!(
            session_id = %self.trace.session_id(),
            step,
            tool = %call.name,
            status = result.status.as_str(),
            error_code = code.map_or("", |c| c.as_str()),
            "tool call"
        );
        if matches!(
            code,
            Some(ErrorCode::PermissionDenied | ErrorCode::AccessDenied)
        ) {
            tracing::warn!(
                session_id = %self.trace.session_id(),
                step,
                tool = %call.name,
                error_code = code.map_or("", |c| c.as_str()),
                "tool call denied"
            );
        }
        self.trace.emit(
            step,
            &event::ToolResultEvent {
                tool: &call.name,
                tool_call_id: &call.id,
                status: result.status.as_str(),
                error_code: code.map(|c| c.as_str()),
                result: result.to_value(),
            },
        );
    }
}
