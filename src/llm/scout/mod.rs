//! The offline scout: a deterministic, model-free policy that explores through the same loop and
//! tools as a real model, and the default when no LLM is configured (its summary says so).
//!
//! It reads the question for the identifiers it names and its keywords ([`query`]), then runs
//! several narrow searches in one turn ([`search`]): definitions named after a keyword, after two
//! keywords, lines holding two keywords, lines naming a quoted identifier, file names. It ranks
//! what came back ([`rank`]): definitions above mentions, names and paths that hold more of the
//! keywords above fewer, source above tests, docs and changelogs. It Reads the best candidates
//! and answers ([`answer`]) citing each definition's block. Every file access is a tool call,
//! so the Workspace's confinement holds; every sentence is about what the tools returned.
//!
//! When the Search tool is offered (the launcher offers it to the scout wherever Grep is
//! allowed), the scout asks the code index instead ([`indexed`], [`crate::index`]): one ranked
//! search over definition-sized chunks, then Reads of the best places.

pub(crate) mod answer;
pub(crate) mod indexed;
pub(crate) mod query;
pub(crate) mod rank;
pub(crate) mod search;
pub(crate) mod turn;

use crate::llm::request::RunFacts;
use crate::llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, ToolCall, Usage,
};
use answer::{Notes, SearchFacts, NOTES_PREFIX};
use turn::{calls_response, facts, fit_reads, read_allowance, task_text};

pub use query::terms;

/// Candidates read before answering.
const MAX_READS: usize = 3;
/// Candidates cited.
const MAX_CITES: usize = 5;
/// Most and fewest lines read per candidate.
const READ_LINES: (u64, u64) = (12, 50);

/// The scout model.
#[derive(Debug, Clone, Default)]
pub struct OfflineScout;

/// Whether this request is a verification run: the scout does not judge those, it says so.
fn is_verification(request: &ChatRequest) -> bool {
    facts(request).verification
}

/// The notes the scout left in its read turn, if any.
fn notes_in(messages: &[Message]) -> Option<Notes> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant { content, .. } => content
            .strip_prefix(NOTES_PREFIX)
            .and_then(|j| serde_json::from_str(j).ok()),
        _ => None,
    })
}

/// Notes from the search results in the conversation.
fn notes_from_results(messages: &[Message], q: &query::Query) -> Notes {
    let results = search::results(messages);
    let ranked = rank::rank(&results, q);
    Notes {
        picks: rank::picks(&ranked, MAX_READS, MAX_CITES),
        searches: results.iter().map(SearchFacts::of).collect(),
    }
}

/// What the scout's quiet search found: its final text (an ExploreResult) and, when it asked
/// the code index, the places the index ranked, best first, each as the search showed it.
pub(crate) struct Scouted {
    pub(crate) text: String,
    pub(crate) places: Vec<indexed::Place>,
}

/// The scout's whole search on `task`, driven without a runner (no trace, no spans): the
/// first message is `task`, the system prompt `system`, the run `run`, the tools offered `tools`; each tool call
/// goes through `execute` (name and JSON arguments in, the result envelope as JSON text out, so
/// that every file access stays a confined tool call). Its final text, at most three turns on,
/// and the index's places.
pub(crate) fn search_quietly(
    task: &str,
    system: &str,
    run: RunFacts,
    tools: std::sync::Arc<Vec<serde_json::Value>>,
    execute: &mut dyn FnMut(&str, &str) -> String,
) -> Scouted {
    let mut request = ChatRequest {
        model: None,
        messages: vec![
            Message::System {
                content: system.to_string(),
            },
            Message::User {
                content: task.to_string(),
            },
        ],
        tools,
        tool_choice: Some("auto".into()),
        settings: None,
        deadline: None,
        run: Some(run),
    };
    loop {
        let resp = next_step(&request);
        if resp.tool_calls.is_empty() {
            return Scouted {
                text: resp.content,
                places: indexed::places(&request.messages),
            };
        }
        request.messages.push(Message::Assistant {
            content: resp.content.clone(),
            tool_calls: resp.tool_calls.clone(),
        });
        for call in &resp.tool_calls {
            request.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: execute(&call.name, &call.arguments),
            });
        }
    }
}

fn next_step(request: &ChatRequest) -> ChatResponse {
    // With the Search tool, the code index ranks; without it (a profile that offers Grep alone,
    // or a registry built by hand), the keyword searches below.
    if indexed::offered(request) && !is_verification(request) {
        return indexed::next_step(request);
    }
    let messages = &request.messages;
    let turns = messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    let q = query::parse(task_text(messages));
    let verification = is_verification(request);
    let reply = |content: String| ChatResponse {
        content,
        finish_reason: Some("stop".into()),
        ..Default::default()
    };
    let answer = || {
        // The searches' results, unless compaction cut them: then the notes kept in turn two.
        let fresh = notes_from_results(messages, &q);
        let notes = match notes_in(messages) {
            Some(kept) if fresh.picks.is_empty() => kept,
            _ => fresh,
        };
        reply(answer::final_answer(
            &q,
            &notes,
            &search::reads(messages),
            verification,
        ))
    };
    if request.tools.is_empty() || turns >= 2 {
        return answer();
    }
    if turns == 0 {
        let calls = search::first_calls(&q);
        if calls.is_empty() {
            return answer();
        }
        return calls_response(calls, String::new());
    }
    // Turn two: search within the likeliest files, and read the best candidates so far.
    let results = search::results(messages);
    // Only a definition search that stopped at its limit can have missed the likeliest files.
    let cut = results
        .iter()
        .any(|r| r.truncated && r.purpose != search::Purpose::Paths);
    let ranked = rank::rank(&results, &q);
    let mut calls = search::focus_calls(&q, &rank::focus_files(&ranked, &results, &q), cut);
    let notes = Notes {
        picks: rank::picks(&ranked, MAX_READS, MAX_CITES),
        searches: results.iter().map(SearchFacts::of).collect(),
    };
    let text = format!(
        "{NOTES_PREFIX}{}",
        serde_json::to_string(&notes).unwrap_or_default()
    );
    let seen: Vec<usize> = results
        .iter()
        .flat_map(|r| r.lines.iter().map(|h| h.text.chars().count()))
        .collect();
    let avg_line = if seen.is_empty() {
        60
    } else {
        (seen.iter().sum::<usize>() / seen.len()).clamp(30, 120)
    };
    // What the focused searches will add, at most (a match costs about its text plus 110).
    let focus_cost = calls.len() * (search::FOCUS_LIMIT as usize * (avg_line + 110) + 1_200);
    let allowance = read_allowance(request, text.chars().count() + focus_cost);
    let mut targets: Vec<&rank::Candidate> = Vec::new();
    for c in notes.picks.iter().take(MAX_READS) {
        if !targets
            .iter()
            .any(|t| t.file == c.file && t.line.abs_diff(c.line) < 40)
        {
            targets.push(c);
        }
    }
    let lines_each = fit_reads(&mut targets, allowance, avg_line, READ_LINES.0).min(READ_LINES.1);
    calls.extend(targets.iter().enumerate().map(|(i, c)| {
        ToolCall {
            id: format!("scout_read_{i}"),
            name: "Read".into(),
            arguments: serde_json::json!({
                "path": c.file,
                "start_line": c.line.saturating_sub(1).max(1),
                "limit": lines_each,
            })
            .to_string(),
        }
    }));
    if calls.is_empty() {
        return answer();
    }
    calls_response(calls, text)
}

impl ChatModel for OfflineScout {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let mut resp = next_step(request);
        // No tokens are spent, but budgets count what a model would have read.
        let prompt = crate::llm::estimate_tokens(request.char_len());
        resp.usage = Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: 0,
            total_tokens: prompt,
            cached_tokens: 0,
        });
        Box::pin(async move { Ok(resp) })
    }

    fn describe(&self) -> String {
        "offline scout (no LLM)".into()
    }

    fn route_label(&self) -> Option<&'static str> {
        Some("offline")
    }
}

#[cfg(test)]
mod tests;
