//! How a run ends: the wrap-up after a budget ran out, an assist's partial answer when there
//! is none, and the one place that writes the terminal events and builds the outcome.

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use crate::contract::{ExploreResult, SubagentStatus};
use crate::llm::Message;
use crate::profile::{BudgetPolicy, ResultContract};
use crate::runner::answer::{parse_answer, Unparsed};
use crate::runner::grounding;
use crate::runner::outcome::{ParsedResult, RunOutcome, TerminalReason};
use crate::runner::provenance;
use crate::runner::state::{CallSpec, Ending, State, Stop};
use crate::runner::RuntimeRunner;
use crate::trace::event;

impl RuntimeRunner {
    /// The stop for a run that reached the end of its exploring time: a wrap-up when the
    /// profile allows one, else the end.
    pub(crate) fn out_of_time(&self) -> Stop {
        if self.profile.on_budget_exhausted == BudgetPolicy::Partial {
            Stop::Exhausted(TerminalReason::Timeout, self.timeout_message())
        } else {
            Stop::Terminal(TerminalReason::Timeout, self.timeout_message())
        }
    }

    /// After a budget ran out: one tool-less call for the JSON result (policy `partial`). When
    /// that call cannot be made or gives no valid answer, an explore child's partial answer is
    /// built from the places it saw.
    pub(super) async fn wrap_up(
        &self,
        mut st: State,
        step: u64,
        reason: TerminalReason,
        error: String,
        deadline: Instant,
    ) -> RunOutcome {
        if self.profile.on_budget_exhausted != BudgetPolicy::Partial || self.cancel.is_cancelled() {
            return self.finish(st, step, Ending::stopped(reason, error));
        }
        let contract = self.profile.answer_shape().to_string();
        let text = match self
            .wrap_up_answer(&mut st, step, reason, &error, deadline)
            .await
        {
            Ok(text) => text,
            Err(why) => {
                return self.without_answer(st, step, reason, format!("{error}; {why}"));
            }
        };
        st.messages.push(Message::Assistant {
            content: text.clone(),
            tool_calls: vec![],
        });
        // An answer that does not fit a caller's schema stands as written, partial, saying why.
        let parsed = match parse_answer(&self.profile, &text, deadline).await {
            Ok(parsed) => Ok(parsed),
            Err(Unparsed::Misfit(raw, repair)) => Ok((raw, repair)),
            Err(Unparsed::Contract(e)) => Err(format!(
                "the wrap-up answer was not a valid {contract}: {e}"
            )),
            Err(Unparsed::TimedOut(_, _, why)) => Err(why),
        };
        match parsed {
            Ok((mut result, repair)) => {
                match &mut result {
                    ParsedResult::Explore(r) => r.status = SubagentStatus::Partial,
                    ParsedResult::Custom(r) => r.status = SubagentStatus::Partial,
                    _ => {}
                }
                // A partial answer is held to the same evidence rule as a final one.
                let ungrounded = grounding::grounding(
                    &self.workspace,
                    result.evidence(),
                    deadline,
                    &st.observed,
                )
                .await;
                let ungrounded = st.assists.ungrounded_items(&mut result, ungrounded);
                let ending = Ending::answered(reason, text, result, repair)
                    .with_error(error)
                    .with_ungrounded(ungrounded);
                self.finish(st, step, ending)
            }
            Err(why) => self.without_answer(st, step, reason, format!("{error}; {why}")),
        }
    }

    /// The wrap-up call: the instruction to answer now without tools, and the model's answer
    /// to it; the error says why there is none (an empty answer, a failed call).
    async fn wrap_up_answer(
        &self,
        st: &mut State,
        step: u64,
        reason: TerminalReason,
        error: &str,
        deadline: Instant,
    ) -> Result<String, String> {
        let contract = self.profile.answer_shape();
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
        let spec = CallSpec {
            tools: &Arc::new(Vec::new()),
            schema_chars: 0,
            hint: None,
            reserve: 0,
            wrap_up: true,
            tool_choice: "auto",
        };
        match self.call(step, st, spec, deadline).instrument(span).await {
            Ok(r) if !r.content.trim().is_empty() => Ok(r.content.trim().to_string()),
            Ok(_) => Err("the wrap-up answer was empty".into()),
            Err(Stop::Terminal(_, e) | Stop::Exhausted(_, e) | Stop::Refused(e)) => {
                Err(format!("the wrap-up call failed: {e}"))
            }
        }
    }

    /// The end of a run that stopped without an answer (its wrap-up gave none): for an explore
    /// child, an assist's partial answer (the hint's leads, or the places it saw); else none.
    pub(super) fn without_answer(
        &self,
        st: State,
        step: u64,
        reason: TerminalReason,
        error: String,
    ) -> RunOutcome {
        // A caller's own schema gets its own answer or none: leads in ExploreResult's shape
        // would not be the type it asked for.
        if self.profile.result_contract != Some(ResultContract::Explore)
            || self.profile.output_schema.is_some()
        {
            return self.finish(st, step, Ending::stopped(reason, error));
        }
        match st.assists.no_answer(reason, &error, &st.observed) {
            Some(result) => {
                let ending =
                    Ending::stopped(reason, error).with_result(ParsedResult::Explore(result));
                self.finish(st, step, ending)
            }
            None => self.finish(st, step, Ending::stopped(reason, error)),
        }
    }

    /// Write the terminal events, flush the trace, and build the outcome from what the run
    /// accumulated and how it ended.
    pub(super) fn finish(&self, st: State, step: u64, ending: Ending) -> RunOutcome {
        let Ending {
            reason,
            final_text,
            mut result,
            repair,
            error,
            ungrounded,
        } = ending;
        // The model's answer, each item its own, as the assists finish it (the hint ranks its
        // leads in).
        if let (Some(ParsedResult::Explore(r)), Some(_)) = (&mut result, &final_text) {
            provenance::rewrite_explore(r, "finish: one of each", |items| {
                let mut seen = std::collections::HashSet::new();
                items.retain(|s| seen.insert(s.item.clone()));
            });
            let answer = std::mem::replace(r, ExploreResult::empty());
            let verified = reason != TerminalReason::CompletedUnverified;
            *r = st.assists.finish(answer, verified);
            // The offline scout is the code index searching on its own: no model vouched.
            if self.model.route_label() == Some("offline") {
                provenance::rewrite_explore(r, "finish: offline scout", |items| {
                    for s in items.iter_mut() {
                        s.source = "index".into();
                    }
                });
            }
        }
        let evidence: Vec<(String, String)> = match &result {
            Some(ParsedResult::Explore(r)) => r
                .evidence
                .iter()
                .cloned()
                .zip(r.evidence_sources.iter().cloned())
                .collect(),
            _ => Vec::new(),
        };
        self.trace.emit(
            step,
            &event::Terminal {
                reason,
                details: event::TerminalDetails {
                    error: error.as_deref(),
                    has_result: result.is_some(),
                    repair,
                    evidence: &evidence,
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
