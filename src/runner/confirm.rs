//! The places the repo-map hint opened that an accepted answer leaves out, each put to the
//! model alone (see [`LookedAt`]): the ones it says answer the task join the evidence.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::contract::SubagentStatus;
use crate::llm::Message;
use crate::runner::ending::Ending;
use crate::runner::lead::{says_yes, LookedAt, CHECK_SYSTEM};
use crate::runner::state::{CallSpec, State};
use crate::runner::RuntimeRunner;

/// The most tokens a check's answer may have: one word, and room for a full stop.
const CHECK_ANSWER_TOKENS: u64 = 8;
/// The most time one check may take (the run's own limits bound it too).
const CHECK_TIME_CAP: Duration = Duration::from_secs(30);

impl RuntimeRunner {
    /// Puts each of `places` that the accepted explore answer of `ending` leaves out to
    /// the model alone (a fresh two-message conversation, no tools, a one-word answer) and adds
    /// the windows of each it says yes to after the answer's own evidence. Only while exploring
    /// time is left and the run is not cancelled; a check that fails, runs out of time or would
    /// overdraw the token budget ends the checks, and the answer stands as it was. Each check
    /// is a model call of the run: its tokens count, and the trace shows it. The deadlines are
    /// the end of exploring (no check starts after it) and the run's wall-clock limit.
    pub(super) async fn confirm_left_out(
        &self,
        st: &mut State,
        step: u64,
        task: &str,
        places: &[LookedAt],
        ending: &mut Ending,
        (explore_deadline, deadline): (Instant, Instant),
    ) {
        let Some(r) = ending.accepted_explore_mut() else {
            return;
        };
        if !matches!(
            r.status,
            SubagentStatus::Completed | SubagentStatus::Partial
        ) || r.evidence.is_empty()
        {
            return;
        }
        let no_tools = Arc::new(Vec::new());
        for check in places {
            if check.cited_by(&r.evidence) {
                continue;
            }
            let now = Instant::now();
            if self.cancel.is_cancelled() || now >= explore_deadline {
                return;
            }
            let conversation = vec![
                Message::System {
                    content: CHECK_SYSTEM.to_string(),
                },
                Message::User {
                    content: check.question(task),
                },
            ];
            // The check goes through the run's own call (budget, tokens, trace), which sends
            // the state's messages: the check's two stand in for the history meanwhile.
            let history = std::mem::replace(&mut st.messages, conversation);
            let spec = CallSpec {
                tools: &no_tools,
                schema_chars: 0,
                hint: None,
                reserve: 0,
                wrap_up: false,
                tool_choice: "auto",
                answer_tokens: Some(CHECK_ANSWER_TOKENS),
            };
            let answered = self
                .call(step, st, spec, deadline.min(now + CHECK_TIME_CAP))
                .await;
            st.messages = history;
            let Ok(resp) = answered else {
                return;
            };
            if !says_yes(&resp.content) {
                continue;
            }
            for w in &check.windows {
                if !r.evidence.contains(w) {
                    r.evidence.push(w.clone());
                    st.confirmed_places.push(w.clone());
                }
            }
        }
    }
}
