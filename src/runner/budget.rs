//! What one model call may spend: its request fitted into the context budget (the history
//! re-sent as `resend` shortens it, then compacted), the total budget's check before the call,
//! an answer's size, and the usage counted after it.

use std::borrow::Cow;

use crate::llm::{estimate_tokens, ChatResponse, Message, ModelError, ModelErrorKind, Usage};
use crate::runner::compaction;
use crate::runner::outcome::TerminalReason;
use crate::runner::resend;
use crate::runner::state::{CallSpec, State, Stop, ANSWER_RESERVE_TOKENS, MAX_ANSWER_BYTES};
use crate::runner::RuntimeRunner;
use crate::trace::event;

/// An answer over [`MAX_ANSWER_BYTES`], as the error that ends the run.
pub(super) fn oversized(resp: &ChatResponse) -> Option<ModelError> {
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

impl RuntimeRunner {
    /// The messages of the next request, fitted into the context budget (the wrap-up's into
    /// what the total budget has left), and their estimated tokens. Decides whether the call
    /// may be made at all: refused when even a compacted request does not fit, or when the
    /// call and the wrap-up's reserve would overdraw the total budget.
    pub(super) fn fit(
        &self,
        step: u64,
        st: &State,
        spec: &CallSpec<'_>,
    ) -> Result<(Vec<Message>, u64), Stop> {
        let history = if self.profile.tuning.shrink_used_results > 0 {
            resend::shrink(&st.messages, &st.reads, self.profile.tool_result_format)
        } else {
            Cow::Borrowed(st.messages.as_slice())
        };
        let messages: Cow<'_, [Message]> = match spec.hint {
            Some(h) => {
                let hint = Message::User {
                    content: h.to_string(),
                };
                Cow::Owned([&history[..], &[hint]].concat())
            }
            None => history,
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

    /// The call's usage as the provider reported it, or estimated (and the run marked so)
    /// when it reported none; added to the run's counts and the call's span.
    pub(super) fn count(
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
}
