//! The loop: one step after another (a model answer, then its tool calls or the completion
//! gate's verdict on its final text) until the run stops.

use std::time::Instant;

use tracing::field::Empty;
use tracing::Instrument;

use crate::contract::Repair;
use crate::evidence::EvidenceCheck;
use crate::llm::{ChatResponse, Message};
use crate::profile::BudgetPolicy;
use crate::runner::assist::Assists;

use crate::runner::gate::{self, Gate};
use crate::runner::grounding;
use crate::runner::outcome::{ParsedResult, RunOutcome, TerminalReason};
use crate::runner::plan::{Plan, Retries};
use crate::runner::state::{CallSpec, Ending, State, Stop};
use crate::runner::{RuntimeRunner, EMPTY_RESPONSE_HINT};
use crate::trace::event;

/// The feedback for a final answer that did not parse because the output token limit cut it
/// short (the provider's `finish_reason` is `length`): often a small model repeating itself.
const CUT_OFF_FEEDBACK: &str = "Your answer was cut off at the output token limit before its JSON object ended (a long or repeating summary). Reply with the JSON object again, short: a summary of one or two sentences and only the findings and evidence you need.";

/// What one step decided.
enum Next {
    /// Go on with the next step.
    Continue,
    /// Leave the loop: end now, or wrap up.
    Stop(Stop),
    /// End the run now.
    End(Box<Ending>),
    /// End the run without an answer: an assist's partial one, if any (reason, error).
    NoAnswer(TerminalReason, String),
}

/// The gate's refusal of a final answer (see [`Gate::Reject`]).
struct Refusal {
    exploring: bool,
    note: Option<String>,
    feedback: String,
    parsed: Option<(ParsedResult, Option<Repair>, Vec<EvidenceCheck>)>,
}

impl RuntimeRunner {
    /// The model's loop on `task` until it stops, with the run's `assists` hooked in.
    pub(super) async fn run_model(&self, task: &str, assists: Assists) -> RunOutcome {
        let (plan, mut st) = self.plan(task, assists);
        let mut retries = Retries::default();
        let mut step = 0u64;
        let stop = loop {
            step += 1;
            match self.step(step, &mut st, &plan, &mut retries).await {
                Next::Continue => {}
                Next::Stop(stop) => break stop,
                Next::End(ending) => return self.finish(st, step, *ending),
                Next::NoAnswer(reason, error) => {
                    return self.without_answer(st, step, reason, error)
                }
            }
        };
        match stop {
            Stop::Terminal(reason, error) => self.finish(st, step, Ending::stopped(reason, error)),
            Stop::Refused(error) => {
                self.finish(st, step, Ending::stopped(TerminalReason::ModelError, error))
            }
            Stop::Exhausted(reason, error) => {
                self.wrap_up(st, step, reason, error, plan.deadline).await
            }
        }
    }

    /// One step: the model's answer, then either its tool calls run or its final text judged
    /// by the completion gate. Decides whether the loop goes on.
    async fn step(&self, step: u64, st: &mut State, plan: &Plan, retries: &mut Retries) -> Next {
        tracing::debug!(session_id = %self.trace.session_id(), step, "step");
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET, "step", session_id = %self.trace.session_id(), step);
        let resp = match self.answer(step, st, plan, retries, &span).await {
            Ok(r) => r,
            Err(stop) => return Next::Stop(stop),
        };
        if !resp.tool_calls.is_empty() {
            return self.act(step, st, plan, resp, &span).await;
        }
        let text = resp.content.trim().to_string();
        let cut_off = matches!(resp.finish_reason.as_deref(), Some("length" | "max_tokens"));
        match self.judge(st, plan, &text, &span).await {
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
                let ending = Ending::answered(TerminalReason::Completed, text, result, repair);
                self.trace.emit(step, &event::GateVerdict::Pass { repair });
                Next::End(Box::new(ending))
            }
            Gate::Reject {
                feedback,
                parsed,
                exploring,
                note,
            } => {
                // An answer the output limit cut short fails the contract for that reason.
                let feedback = if cut_off && parsed.is_none() {
                    CUT_OFF_FEEDBACK.to_string()
                } else {
                    feedback
                };
                let refusal = Refusal {
                    exploring,
                    note,
                    feedback,
                    parsed,
                };
                self.refused(step, st, plan, retries, text, refusal)
            }
            Gate::TimedOut(raw, repair, why) => {
                let blocks = retries.gate_blocks + retries.explore_blocks + 1;
                let feedback = crate::redact::redact_cow(&why);
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
                self.validation_timed_out(st, plan, text, (raw, repair), why)
                    .await
            }
        }
    }

    /// The end of a run whose answer the caller's validator did not check in time: under
    /// policy `partial`, the answer as written stands as partial (its evidence grounded in the
    /// time kept for the end), saying why; else the run fails on the clock, saying why.
    async fn validation_timed_out(
        &self,
        st: &State,
        plan: &Plan,
        text: String,
        (mut raw, repair): (ParsedResult, Option<Repair>),
        why: String,
    ) -> Next {
        if self.profile.on_budget_exhausted != BudgetPolicy::Partial {
            return Next::Stop(Stop::Terminal(TerminalReason::Timeout, why));
        }
        let ungrounded =
            grounding::grounding(&self.workspace, raw.evidence(), plan.deadline, &st.observed)
                .await;
        let ungrounded = st.assists.ungrounded_items(&mut raw, ungrounded);
        let ending = Ending::answered(TerminalReason::Timeout, text, raw, repair)
            .with_error(why)
            .with_ungrounded(ungrounded);
        Next::End(Box::new(ending))
    }

    /// The model's answer for this step. Decides the `tool_choice` (`required` while the child
    /// still owes a tool call, unless the provider refused it), and retries once, with a hint,
    /// an answer with neither content nor tool calls.
    async fn answer(
        &self,
        step: u64,
        st: &mut State,
        plan: &Plan,
        retries: &mut Retries,
        span: &tracing::Span,
    ) -> Result<ChatResponse, Stop> {
        let mut hint = None;
        loop {
            let tool_choice = if st.successful_tools < plan.min_tools && !retries.required_refused {
                "required"
            } else {
                "auto"
            };
            let spec = CallSpec {
                tools: &plan.tools,
                schema_chars: plan.schema_chars,
                hint,
                reserve: plan.wrap_reserve,
                wrap_up: false,
                tool_choice,
            };
            let called = self
                .call(step, st, spec, plan.explore_deadline)
                .instrument(span.clone())
                .await;
            match called {
                Err(Stop::Refused(_)) if tool_choice == "required" => {
                    retries.required_refused = true;
                }
                Err(Stop::Refused(e)) => return Err(Stop::Terminal(TerminalReason::ModelError, e)),
                Err(stop) => return Err(stop),
                Ok(r) if r.tool_calls.is_empty() && r.content.trim().is_empty() => {
                    if retries.empty_retry_used {
                        return Err(Stop::Terminal(
                            TerminalReason::EmptyResponseFailed,
                            "the model returned no content and no tool calls twice".into(),
                        ));
                    }
                    retries.empty_retry_used = true;
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
                Ok(r) => return Ok(r),
            }
        }
    }

    /// Run the answer's tool calls and keep their results. Decides whether the steps ran out.
    async fn act(
        &self,
        step: u64,
        st: &mut State,
        plan: &Plan,
        resp: ChatResponse,
        span: &tracing::Span,
    ) -> Next {
        st.messages.push(Message::Assistant {
            content: resp.content,
            tool_calls: resp.tool_calls.clone(),
        });
        if let Err(stop) = self
            .run_tools(step, st, &resp.tool_calls, plan.explore_deadline)
            .instrument(span.clone())
            .await
        {
            return Next::Stop(stop);
        }
        self.trace.flush();
        if step >= plan.max_steps {
            return Next::Stop(plan.steps_spent());
        }
        Next::Continue
    }

    /// The completion gate's verdict on the final text `text`, recorded on its own span.
    async fn judge(&self, st: &State, plan: &Plan, text: &str, step_span: &tracing::Span) -> Gate {
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
            parent: step_span,
            "completion_gate",
            verdict = Empty,
            repair = Empty,
            duration_ms = Empty
        );
        let started = Instant::now();
        let seen = gate::Exploration {
            observed: &st.observed,
            successful_tools: st.successful_tools,
            example: plan.example.as_deref(),
            task: &plan.task,
            assists: &st.assists,
        };
        // A caller's validator is bounded like exploring: under policy `partial` the time
        // after it is the answer's, to ground its evidence.
        let deadlines = (plan.explore_deadline, plan.deadline);
        let verdict = gate::check(&self.profile, &self.workspace, text, deadlines, &seen)
            .instrument(span.clone())
            .await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        match &verdict {
            Gate::Accept(_, repair) => {
                span.record("verdict", "pass");
                if let Some(r) = repair {
                    span.record("repair", r.as_str());
                }
            }
            Gate::Reject { .. } => {
                span.record("verdict", "fail");
            }
            Gate::TimedOut(..) => {
                span.record("verdict", "timeout");
            }
        }
        verdict
    }

    /// A final answer the gate refused. Decides whether the child gets another try (its
    /// feedback), or whether its refusals are spent (or its exploring time is up), and then
    /// how the run ends.
    fn refused(
        &self,
        step: u64,
        st: &mut State,
        plan: &Plan,
        retries: &mut Retries,
        text: String,
        refusal: Refusal,
    ) -> Next {
        // Too little exploration gets one more chance than other refusals (a small model often
        // needs telling twice to call a tool), unless the profile allows no retries at all.
        let allowed = self.profile.gate_retries;
        let spent = if refusal.exploring {
            retries.explore_blocks += 1;
            retries.explore_blocks > if allowed == 0 { 0 } else { allowed + 1 }
        } else {
            retries.gate_blocks += 1;
            retries.gate_blocks > allowed
        };
        let out_of_time = Instant::now() >= plan.explore_deadline;
        let blocks = retries.gate_blocks + retries.explore_blocks;
        tracing::warn!(
            session_id = %self.trace.session_id(),
            step,
            blocks,
            // The feedback quotes the model's answer, which may quote a key it read.
            feedback = %crate::redact::redact_cow(&refusal.feedback),
            "the completion gate refused the final answer"
        );
        self.trace.emit(
            step,
            &event::GateVerdict::Fail {
                feedback: &refusal.feedback,
                blocks,
            },
        );
        st.messages.push(Message::Assistant {
            content: text.clone(),
            tool_calls: vec![],
        });
        if spent || out_of_time {
            return self.last_refusal(text, refusal, out_of_time, &st.assists);
        }
        st.messages.push(Message::User {
            content: refusal.feedback,
        });
        if step >= plan.max_steps {
            return Next::Stop(plan.steps_spent());
        }
        Next::Continue
    }

    /// The end after the gate's last allowed refusal (or at the end of the exploring time).
    /// Decides what stands: an answer that met the contract and cites nothing false, as
    /// partial; one with evidence the child was not shown, as unverified; without one, the
    /// wrap-up (out of time) or the places the child saw, as leads.
    /// Ungrounded items an assist accounts for (a lead the child never read, say) leave the
    /// model's evidence first.
    fn last_refusal(
        &self,
        text: String,
        refusal: Refusal,
        out_of_time: bool,
        assists: &Assists,
    ) -> Next {
        if let Some((mut result, repair, ungrounded)) = refusal.parsed {
            let ungrounded = assists.ungrounded_items(&mut result, ungrounded);
            if ungrounded.is_empty() {
                // Nothing it cites is false; it explored too little, cited nothing, or did not
                // fit the caller's schema: it stands as partial, saying why.
                let misfit = matches!(&result, ParsedResult::Custom(c) if !c.fits());
                let result =
                    grounding::downgraded(result, refusal.exploring, refusal.note.as_deref());
                let reason = if misfit {
                    TerminalReason::CompletionGateBlocked
                } else {
                    TerminalReason::Completed
                };
                let ending = Ending::answered(reason, text, result, repair);
                return Next::End(Box::new(ending));
            }
            let ending =
                Ending::answered(TerminalReason::CompletedUnverified, text, result, repair)
                    .with_ungrounded(ungrounded);
            return Next::End(Box::new(ending));
        }
        if out_of_time {
            return Next::Stop(self.out_of_time());
        }
        // No answer met the contract: what the child saw is still worth returning, as leads
        // (or nothing, when it saw nothing).
        let error = format!(
            "the model's answers never met the contract; the last refusal: {}",
            refusal.feedback
        );
        Next::NoAnswer(TerminalReason::CompletionGateBlocked, error)
    }
}
