//! Small-model assists, behind one seam: each one is chosen by the profile and hooks into the
//! plain loop at a few named points only, so that the loop (`steps`, `turn`, `gate`, `ending`)
//! knows no particular assist.
//!
//! Each assist implements [`Assist`], a few hooks with defaults that do nothing; the loop calls
//! [`Assists`], the run's list, at those points and nowhere else:
//!
//! | assist | profile option | hooks |
//! |---|---|---|
//! | [`hint::Hint`]: the code index's ranked places as leads | `repo_map_hint` | first message, example call, ungrounded items (unread leads), finish (rank fusion), no answer |
//! | [`text_calls::TextCalls`]: tool calls a model wrote as text | always | model output, answer refused |
//! | [`claims::Claims`]: a summary names only what the child saw | always | answer accepted |
//! | [`seen::Seen`]: the places the child saw, when it ends without an answer | an ExploreResult | no answer |
//! | the contract's repairs (`crate::contract`) | always | answer parse (inside the contract's parser) |
//!
//! Every change an assist makes to an answer's evidence is recorded with its source (see
//! [`crate::contract::ExploreResult::evidence_sources`]); its knobs live in [`Tuning`], the
//! profile's `tuning`.
//!
//! Assists removed because they did not pay on questions they were not tuned on (see
//! CHANGELOG.md): windows of code opened in the first message, a second look at the places
//! left out, a yes/no check of each place left out, the opening of cited lines the child had not
//! seen, and the following of an item by the window around it.

pub(crate) mod claims;
pub(crate) mod hint;
mod hooks;
pub(crate) mod lead;
mod seen;
pub(crate) mod text_calls;

pub(crate) use crate::tuning::Tuning;
pub(crate) use hooks::{Assist, Objection};

use crate::contract::ExploreResult;
use crate::evidence::EvidenceCheck;
use crate::llm::ToolCall;
use crate::profile::ResultContract;
use crate::runner::assist::lead::Lead;
use crate::runner::observed::Observed;
use crate::runner::outcome::{ParsedResult, TerminalReason};
use crate::runner::RuntimeRunner;

/// The assists of one run, chosen by its profile, hooked in order.
#[derive(Default)]
pub(crate) struct Assists {
    list: Vec<Box<dyn Assist>>,
}

impl RuntimeRunner {
    /// The assists this run's profile chooses: text tool calls and the summary's claims
    /// always; the hint with the scout's places, `leads` (`repo_map_hint`); for an explore
    /// answer in ExploreResult's shape, the places the child saw when it ends without an answer
    /// (after the hint's leads).
    pub(crate) fn assists(&self, leads: Vec<Lead>) -> Assists {
        let mut list: Vec<Box<dyn Assist>> = vec![
            Box::new(text_calls::TextCalls),
            Box::new(claims::Claims::new(&self.profile)),
        ];
        if let Some(hint) = self.hint(leads) {
            list.push(Box::new(hint));
        }
        if self.profile.result_contract == Some(ResultContract::Explore)
            && self.profile.output_schema.is_none()
        {
            list.push(Box::new(seen::Seen));
        }
        Assists { list }
    }
}

impl Assists {
    /// Every assist's first-message text, each in its own paragraph.
    pub(crate) fn first_message(&self) -> Option<String> {
        let parts: Vec<String> = self.list.iter().filter_map(|a| a.first_message()).collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// The first assist's example call.
    pub(crate) fn example_call(&self) -> Option<String> {
        self.list.iter().find_map(|a| a.example_call())
    }

    /// The first assist's reading of the model's output as tool calls.
    pub(crate) fn model_output(
        &self,
        content: &str,
        offered: &[&str],
        step: u64,
        cut: bool,
    ) -> Option<Vec<ToolCall>> {
        self.list
            .iter()
            .find_map(|a| a.model_output(content, offered, step, cut))
    }

    /// The first assist's feedback for an answer that did not parse from a child that still
    /// owes tool calls.
    pub(crate) fn answer_refused(&self, text: &str, offered: &[&str]) -> Option<String> {
        self.list
            .iter()
            .find_map(|a| a.answer_refused(text, offered))
    }

    /// The first assist's objection to an answer the gate would take.
    pub(crate) fn answer_accepted(
        &self,
        result: &ParsedResult,
        observed: &Observed,
        task: &str,
    ) -> Option<Objection> {
        self.list
            .iter()
            .find_map(|a| a.answer_accepted(result, observed, task))
    }

    /// The ungrounded items no assist accounts for.
    pub(crate) fn ungrounded_items(
        &self,
        result: &mut ParsedResult,
        ungrounded: Vec<EvidenceCheck>,
    ) -> Vec<EvidenceCheck> {
        self.list
            .iter()
            .fold(ungrounded, |rest, a| a.ungrounded_items(result, rest))
    }

    /// The answer after every assist's finish.
    pub(crate) fn finish(&self, answer: ExploreResult, verified: bool) -> ExploreResult {
        self.list.iter().fold(answer, |r, a| a.finish(r, verified))
    }

    /// The first assist's answer for a run that ended without one.
    pub(crate) fn no_answer(
        &self,
        reason: TerminalReason,
        error: &str,
        observed: &Observed,
    ) -> Option<ExploreResult> {
        self.list
            .iter()
            .find_map(|a| a.no_answer(reason, error, observed))
    }
}
