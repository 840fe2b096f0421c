//! What the loop fixes before its first step: the deadlines, the first message (the task and
//! the assists' text), the state, the tokens kept for the wrap-up; and the retries it counts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::llm::{estimate_tokens, Message};
use crate::profile::BudgetPolicy;
use crate::runner::assist::Assists;
use crate::runner::outcome::TerminalReason;
use crate::runner::state::{State, Stop, ANSWER_RESERVE_TOKENS};
use crate::runner::{
    RuntimeRunner, WRAP_UP_HISTORY_CHARS, WRAP_UP_NOTE_CHARS, WRAP_UP_TIME_CAP, WRAP_UP_TIME_SHARE,
};
use crate::trace::event;

/// What the loop fixes before its first step.
pub(super) struct Plan {
    /// The run's wall-clock limit.
    pub(super) deadline: Instant,
    /// When exploring stops (before `deadline` by the wrap-up's share, under policy `partial`).
    pub(super) explore_deadline: Instant,
    /// The tool schemas offered, and their size in characters.
    pub(super) tools: Arc<Vec<Value>>,
    pub(super) schema_chars: usize,
    /// Tokens each call leaves unspent for the wrap-up.
    pub(super) wrap_reserve: u64,
    pub(super) max_steps: u64,
    /// The tool calls the child owes before its answer is taken (`min_tool_calls`).
    pub(super) min_tools: u64,
    /// The next call the repo-map hint suggests, quoted in the gate's feedback.
    pub(super) example: Option<String>,
    /// The first message (the task and the hint's leads): names a summary repeats from it are
    /// the caller's or the index's, not claims the model made up.
    pub(super) task: String,
}

impl Plan {
    /// The stop for a run that used all its steps (a wrap-up may follow).
    pub(super) fn steps_spent(&self) -> Stop {
        Stop::Exhausted(
            TerminalReason::MaxSteps,
            format!("used all {} steps", self.max_steps),
        )
    }
}

/// The retries a run has used so far.
#[derive(Default)]
pub(super) struct Retries {
    /// The one retry of an empty answer.
    pub(super) empty_retry_used: bool,
    /// The provider refused `tool_choice: "required"`: `auto` from then on.
    pub(super) required_refused: bool,
    /// The gate's refusals, for too little exploration and for anything else.
    pub(super) gate_blocks: i64,
    pub(super) explore_blocks: i64,
}

impl RuntimeRunner {
    /// The plan and the first state of a run on `task` with `assists`; its first events
    /// written.
    pub(super) fn plan(&self, task: &str, assists: Assists) -> (Plan, State) {
        let (deadline, explore_deadline) = self.deadlines();
        let first = match assists.first_message() {
            Some(more) => format!("{task}\n\n{more}"),
            None => task.to_string(),
        };
        let example = assists.example_call();
        let st = self.first_state(&first, assists);
        let plan = Plan {
            deadline,
            explore_deadline,
            schema_chars: self.tool_schemas.iter().map(|t| t.to_string().len()).sum(),
            tools: self.tool_schemas.clone(),
            wrap_reserve: self.wrap_reserve(&st),
            max_steps: self.profile.max_steps.max(1) as u64,
            min_tools: self.profile.min_tool_calls.max(0) as u64,
            example,
            task: first.clone(),
        };
        self.emit_run_start(&first);
        (plan, st)
    }

    /// The run's wall-clock deadline, and when exploring stops: under policy `partial`, early
    /// enough for the wrap-up to answer, so that a run that reaches its time limit still
    /// returns what it found (partial) instead of nothing.
    fn deadlines(&self) -> (Instant, Instant) {
        let deadline = Instant::now() + Duration::from_secs_f64(self.profile.timeout_seconds);
        let explore_deadline = if self.profile.on_budget_exhausted == BudgetPolicy::Partial {
            let keep = Duration::from_secs_f64(self.profile.timeout_seconds * WRAP_UP_TIME_SHARE)
                .min(WRAP_UP_TIME_CAP);
            deadline.checked_sub(keep).unwrap_or(deadline)
        } else {
            deadline
        };
        (deadline, explore_deadline)
    }

    /// The state before the first call: the system prompt (with any extra system text), the
    /// first user message, and the run's assists.
    fn first_state(&self, first: &str, assists: Assists) -> State {
        let mut system = self.profile.rendered_system_prompt();
        if let Some(extra) = &self.extra_system {
            system.push_str("\n\n");
            system.push_str(extra);
        }
        let mut st = State::new(system, first.to_string());
        st.assists = assists;
        st
    }

    /// The tokens every call before the wrap-up leaves unspent (policy `partial`), so that the
    /// wrap-up (system prompt, task, compacted history, answer) can always be made.
    fn wrap_reserve(&self, st: &State) -> u64 {
        if self.profile.on_budget_exhausted != BudgetPolicy::Partial {
            return 0;
        }
        let fixed: usize = st.messages.iter().map(Message::char_len).sum();
        estimate_tokens(fixed + WRAP_UP_NOTE_CHARS + WRAP_UP_HISTORY_CHARS) + ANSWER_RESERVE_TOKENS
    }

    /// The run's first events: its budgets, tools and model, and the first user message.
    fn emit_run_start(&self, first: &str) {
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
        self.trace.emit(0, &event::UserInput { content: first });
    }
}
