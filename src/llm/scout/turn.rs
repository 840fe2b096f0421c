//! What every scout turn needs, whichever way it searches: the task, the run's facts, the
//! room left for reads, and a tool-calls response.

use crate::llm::request::RunFacts;
use crate::llm::{ChatRequest, ChatResponse, Message, ToolCall};

/// The task: the first user message.
pub(crate) fn task_text(messages: &[Message]) -> &str {
    messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

/// The run this request belongs to, as the runner described it (a caller's own request: the
/// explore profile's budgets).
pub(crate) fn facts(request: &ChatRequest) -> RunFacts {
    request.run.unwrap_or_default()
}

/// Characters the read turn may add so that the answer's request still fits both budgets
/// (tokens counted at 3 characters, as the scout reports them).
pub(crate) fn read_allowance(request: &ChatRequest, notes_chars: usize) -> usize {
    let RunFacts {
        total_token_budget: total,
        context_token_budget: context,
        ..
    } = facts(request);
    let schema: usize = request.tools.iter().map(|t| t.to_string().len()).sum();
    let mut spent = 0usize;
    let mut before = 0usize;
    for m in &request.messages {
        if matches!(m, Message::Assistant { .. }) {
            spent += before + schema;
        }
        before += m.char_len();
    }
    let now = request.char_len();
    let total_chars = (total as usize * 3) * 9 / 10;
    let context_chars = (context as usize * 3) * 9 / 10;
    let by_total = total_chars.saturating_sub(spent + now + now + notes_chars);
    let by_context = context_chars.saturating_sub(now + notes_chars);
    by_total.min(by_context)
}

/// How many lines each of `targets` may be read with `allowance` characters (lines of about
/// `avg_line` characters): the last targets are dropped until each gets at least `fewest`.
pub(crate) fn fit_reads<T>(
    targets: &mut Vec<T>,
    allowance: usize,
    avg_line: usize,
    fewest: u64,
) -> u64 {
    while !targets.is_empty() {
        let each = (allowance / targets.len()).saturating_sub(400) as u64 / (avg_line + 12) as u64;
        if each >= fewest {
            return each;
        }
        targets.pop();
    }
    0
}

/// A response that calls `calls`, with `content` beside them.
pub(crate) fn calls_response(calls: Vec<ToolCall>, content: String) -> ChatResponse {
    ChatResponse {
        content,
        tool_calls: calls,
        finish_reason: Some("tool_calls".into()),
        ..Default::default()
    }
}
