//! One model call of the loop, within the budgets: the request fitted into the context, sent
//! with the deadline, its answer checked, counted and traced (the tool calls it asks for run
//! in `tool_calls`; what a call may spend is in `budget`).

use std::time::Instant;

use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

use crate::llm::{ChatRequest, ChatResponse, ModelError, ModelErrorKind};
use crate::runner::budget::oversized;
use crate::runner::outcome::TerminalReason;
use crate::runner::state::{CallSpec, State, Stop};
use crate::runner::RuntimeRunner;
use crate::trace::event;

/// The stop for a cancelled run.
pub(super) fn cancelled() -> Stop {
    Stop::Terminal(TerminalReason::Cancelled, "the run was cancelled".into())
}

/// How a model call that gave no answer ended (a cancelled one stops the run at once).
enum Sent {
    /// The deadline passed first.
    TimedOut,
    /// The model (or the check on its answer's size) failed.
    Failed(ModelError),
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
            run: Some(crate::llm::request::RunFacts::of(&self.profile)),
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
        let tool_call_format = self.text_calls(step, st, &mut resp, spec.tools);
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

    /// Send `request` and wait for the answer until `deadline`, or until the run is cancelled
    /// (the outer error); an answer over [`crate::runner::state::MAX_ANSWER_BYTES`] counts as a failed call. The
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
        st: &State,
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
        let calls = st
            .assists
            .model_output(&resp.content, &offered, step, cut)?;
        tracing::debug!(
            session_id = %self.trace.session_id(),
            step,
            calls = calls.len(),
            "the model wrote its tool calls as text; taking them as calls"
        );
        resp.tool_calls = calls;
        Some("text")
    }
}
