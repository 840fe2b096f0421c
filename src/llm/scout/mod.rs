//! The offline scout: a deterministic, model-free policy that explores through the same loop and
//! tools as a real model, and the default when no LLM is configured (its summary says so).
//!
//! It asks the code index with the whole question: the Search tool when it is offered (the
//! launcher offers it to the scout wherever Grep is allowed), or, with Grep alone, Grep searches
//! for the index's query terms whose lines the index's own ranking orders ([`grepped`],
//! [`crate::index::scratch`]). There is one ranker and one vocabulary ([`crate::index::words`]).
//! It Reads the best places and answers ([`indexed`]) citing what it saw. Every file access is a
//! tool call, so the Workspace's confinement holds; every sentence is about what the tools
//! returned. A verification run gets a verdict saying the scout does not judge.

pub(crate) mod grepped;
pub(crate) mod indexed;
pub(crate) mod place;
pub(crate) mod query;
pub(crate) mod seen;
pub(crate) mod turn;

use crate::llm::request::RunFacts;
use crate::llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, Usage};

pub use query::terms;

/// The scout model.
#[derive(Debug, Clone, Default)]
pub struct OfflineScout;

/// What the scout's quiet search found: its final text (an ExploreResult) and the places it
/// ranked, best first, each as the search showed it.
pub(crate) struct Scouted {
    pub(crate) text: String,
    pub(crate) places: Vec<indexed::Place>,
}

/// The scout's whole search on `task`, driven without a runner (no trace, no spans): the
/// first message is `task`, the system prompt `system`, the run `run`, the tools offered `tools`; each tool call
/// goes through `execute` (name and JSON arguments in, the tool's result out, so
/// that every file access stays a confined tool call). Its final text, at most three turns on,
/// and the index's places.
pub(crate) fn search_quietly(
    task: &str,
    system: &str,
    run: RunFacts,
    tools: std::sync::Arc<Vec<serde_json::Value>>,
    execute: &mut dyn FnMut(&str, &str) -> crate::tools::envelope::ToolResult,
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
            let result = execute(&call.name, &call.arguments);
            request.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: result.to_value().to_string(),
                shown: Some(std::sync::Arc::new(result.shown)),
            });
        }
    }
}

fn next_step(request: &ChatRequest) -> ChatResponse {
    indexed::next_step(request)
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
