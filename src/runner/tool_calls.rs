//! The tool calls of one turn: run concurrently on the blocking pool, each confined and bound
//! by the run's deadline, their results budgeted, recorded (what the child saw) and appended to
//! the history in call order.

use std::time::Instant;

use serde_json::Value;
use tracing::field::Empty;

use crate::llm::{Message, ToolCall};
use crate::runner::resend::ShownRead;
use crate::runner::state::{State, Stop};
use crate::runner::turn::cancelled;
use crate::runner::RuntimeRunner;
use crate::tools::budget::OutputBudget;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::registry::{parse_tool_arguments, unparsable_arguments, RawArguments};
use crate::trace::event;

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
            .with_read_memory(st.read_memory.clone())
            .with_tuning(self.profile.tuning.clone());
        let mut handles = Vec::with_capacity(calls.len());
        let mut canonical = Vec::with_capacity(calls.len());
        for call in calls {
            *st.tool_usage.entry(call.name.clone()).or_insert(0) += 1;
            let args = CallArguments::parse(&call.arguments);
            // A search repeated shows the same list; a Read may be repeated (its earlier result
            // may have been shortened since).
            let done = st
                .succeeded
                .iter()
                .filter(|_| call.name != "Read")
                .find(|(name, canonical, _)| *name == call.name && *canonical == args.canonical)
                .map(|(_, _, at)| {
                    format!("Same call as step {at}, whose result is above: running it again shows nothing new. Make a different call (another pattern, path or line range), or reply with the final JSON object.")
                });
            let repeated = done.or_else(|| {
                st.last_failure
                    .as_ref()
                    .filter(|(name, canonical, _, _)| *name == call.name && *canonical == args.canonical)
                    .map(|(_, _, at, error)| {
                        format!("Same call as step {at}, which failed with: {error} Change the arguments or use another tool.")
                    })
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
    /// failed one, or a search that succeeded earlier in the run, is not run again: its result
    /// is `repeated`, the message saying so.
    fn start_tool(
        &self,
        call: &ToolCall,
        args: CallArguments,
        repeated: Option<String>,
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
                // The same call would fail the same way, or show what it showed: say so instead
                // of running it again.
                (Some(message), _) => {
                    ToolResult::error(&args.echo, ErrorCode::InvalidParam, message, 0)
                }
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
                st.observed.record(result);
                st.last_failure = None;
                if st.succeeded.len() < crate::runner::state::MAX_SUCCEEDED {
                    st.succeeded.push((call.name.clone(), args.clone(), step));
                }
            }
            let content = crate::runner::render::tool_result(
                self.profile.tool_result_format,
                &call.name,
                result,
                &shown,
            );
            if call.name == "Read" {
                let compact_json = !content.starts_with("{\n");
                let at = st.messages.len();
                st.reads.extend(ShownRead::of(at, result, compact_json));
            }
            st.messages.push(Message::Tool {
                shown: Some(std::sync::Arc::new(result.shown.clone())),
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
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
