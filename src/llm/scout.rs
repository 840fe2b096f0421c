//! The offline scout: a deterministic, model-free policy that explores through the same loop and
//! tools as a real model. It pulls search terms from the task, Globs and Greps for them, Reads
//! the best hits, and answers with an ExploreResult whose evidence is the real `path:line` of
//! what it found. It is the default when no LLM is configured (and says so in its summary), and a
//! good benchmark driver: it costs nothing and always takes the same path.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, ToolCall, Usage,
};

/// Words that carry no search value.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
    "from",
    "what",
    "where",
    "which",
    "when",
    "how",
    "who",
    "why",
    "are",
    "is",
    "was",
    "were",
    "does",
    "did",
    "do",
    "can",
    "could",
    "should",
    "would",
    "will",
    "into",
    "onto",
    "about",
    "find",
    "show",
    "list",
    "tell",
    "explain",
    "describe",
    "return",
    "returns",
    "give",
    "all",
    "any",
    "each",
    "every",
    "some",
    "file",
    "files",
    "code",
    "repo",
    "repository",
    "project",
    "function",
    "functions",
    "class",
    "classes",
    "method",
    "methods",
    "defined",
    "define",
    "implemented",
    "implement",
    "used",
    "use",
    "uses",
    "please",
    "their",
    "there",
    "here",
    "them",
    "they",
    "its",
    "it's",
    "not",
    "but",
    "have",
    "has",
    "been",
    "being",
    "also",
    "only",
    "then",
    "than",
    "key",
    "main",
    "purpose",
    "paths",
    "path",
    "structured",
    "context",
    "summarize",
    "summary",
    "look",
    "search",
    "read",
    "explore",
    "relevant",
    "you",
    "your",
    "our",
    "out",
    "via",
    "per",
    "one",
    "two",
    "get",
    "set",
    "new",
];

/// Most terms searched at once.
const MAX_TERMS: usize = 5;
/// Most files read.
const MAX_READS: usize = 3;
/// Lines read around a hit.
const READ_WINDOW: u64 = 30;

/// The scout model.
#[derive(Debug, Clone, Default)]
pub struct OfflineScout;

/// Search terms from a task: identifiers and quoted strings first, then rarer (longer) words.
pub fn terms(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        if t.len() >= 3
            && !STOPWORDS.contains(&t.to_lowercase().as_str())
            && !out.iter().any(|o| o.eq_ignore_ascii_case(t))
        {
            out.push(t.to_string());
        }
    };
    // Quoted or back-ticked phrases are what the user named explicitly.
    for (i, part) in task.split(['`', '"', '\'']).enumerate() {
        if i % 2 == 1 && !part.contains(char::is_whitespace) {
            push(part);
        }
    }
    let body = task.split("\n\nStructured context:").next().unwrap_or(task);
    let mut words: Vec<&str> = body
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    // Identifiers (snake_case, CamelCase, dotted) before plain words; longer before shorter.
    words.sort_by_key(|w| {
        let ident = w.contains('_') || w.chars().skip(1).any(char::is_uppercase);
        (!ident, std::cmp::Reverse(w.len()))
    });
    for w in words {
        push(w);
    }
    out.truncate(MAX_TERMS);
    out
}

fn escape(term: &str) -> String {
    term.chars()
        .flat_map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

/// The tool results seen so far, by tool name, as parsed envelopes.
fn observations(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { name, content, .. } => serde_json::from_str(content)
                .ok()
                .map(|v| (name.clone(), v)),
            _ => None,
        })
        .collect()
}

/// A matching line: (line, text, index of the term it matched).
type LineHit = (u64, String, usize);

#[derive(Default)]
struct Hits {
    /// Matching lines by file.
    by_file: BTreeMap<String, Vec<LineHit>>,
    globbed: Vec<String>,
}

fn collect(obs: &[(String, Value)], terms: &[String]) -> Hits {
    let mut hits = Hits::default();
    let lowered: Vec<String> = terms.iter().map(|t| t.to_lowercase()).collect();
    for (name, env) in obs {
        match name.as_str() {
            "Grep" => {
                for m in env
                    .pointer("/data/matches")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (Some(file), Some(line), Some(text)) =
                        (m["file"].as_str(), m["line"].as_u64(), m["text"].as_str())
                    else {
                        continue;
                    };
                    let lt = text.to_lowercase();
                    let term = lowered
                        .iter()
                        .position(|t| lt.contains(t.as_str()))
                        .unwrap_or(0);
                    hits.by_file.entry(file.to_string()).or_default().push((
                        line,
                        text.trim().to_string(),
                        term,
                    ));
                }
            }
            "Glob" => {
                for p in env
                    .pointer("/data/paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(p) = p.as_str().filter(|p| !p.ends_with('/')) {
                        hits.globbed.push(p.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    hits
}

/// Files ranked by how many different terms they match, then by hits, then by name.
fn ranked(hits: &Hits) -> Vec<(&String, &Vec<LineHit>)> {
    let mut files: Vec<_> = hits.by_file.iter().collect();
    files.sort_by_key(|(name, h)| {
        let distinct: BTreeSet<usize> = h.iter().map(|x| x.2).collect();
        (
            std::cmp::Reverse(distinct.len()),
            std::cmp::Reverse(h.len()),
            name.to_string(),
        )
    });
    files
}

fn task_text(messages: &[Message]) -> &str {
    messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

fn final_answer(request: &ChatRequest) -> String {
    let task = task_text(&request.messages);
    let terms = terms(task);
    let hits = collect(&observations(&request.messages), &terms);
    let verification = request
        .messages
        .iter()
        .any(|m| matches!(m, Message::System { content } if content.contains("\"verdict\"")));
    let files = ranked(&hits);
    let mut evidence = Vec::new();
    let mut findings = Vec::new();
    for (file, h) in files.iter().take(MAX_READS + 2) {
        for (line, text, _) in h.iter().take(2) {
            evidence.push(format!("{file}:{line}"));
            let shown: String = text.chars().take(160).collect();
            findings.push(format!("{file}:{line}: {shown}"));
        }
    }
    let matched_terms: BTreeSet<usize> = hits.by_file.values().flatten().map(|x| x.2).collect();
    let missing: Vec<String> = terms
        .iter()
        .enumerate()
        .filter(|(i, _)| !matched_terms.contains(i))
        .map(|(_, t)| format!("No line mentions '{t}'."))
        .collect();
    let names: Vec<&str> = files
        .iter()
        .take(MAX_READS)
        .map(|(f, _)| f.as_str())
        .collect();
    let summary = if files.is_empty() {
        format!(
            "Offline scout (no LLM configured): no file mentions {}; {} file names matched. A model would be needed to go further.",
            if terms.is_empty() { "any search term".to_string() } else { terms.join(", ") },
            hits.globbed.len()
        )
    } else {
        format!(
            "Offline scout (no LLM configured): searched for {}; {} file(s) match, most relevant: {}. These are keyword hits, not an interpretation.",
            terms.join(", "),
            hits.by_file.len(),
            names.join(", ")
        )
    };
    if verification {
        return json!({
            "verdict": "UNVERIFIED",
            "reasons": ["The offline scout cannot judge a completion candidate; configure an LLM for verification."],
            "findings": findings,
            "evidence": evidence,
        })
        .to_string();
    }
    json!({
        "status": if files.is_empty() || !missing.is_empty() { "partial" } else { "completed" },
        "summary": summary,
        "findings": findings,
        "evidence": evidence,
        "unresolved_questions": missing,
    })
    .to_string()
}

fn next_step(request: &ChatRequest) -> ChatResponse {
    let turns = request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    let tools_available = !request.tools.is_empty();
    let reply = |content: String| ChatResponse {
        content,
        finish_reason: Some("stop".into()),
        ..Default::default()
    };
    if !tools_available || turns >= 2 {
        return reply(final_answer(request));
    }
    let terms = terms(task_text(&request.messages));
    if turns == 0 {
        if terms.is_empty() {
            return reply(final_answer(request));
        }
        let alternation = terms
            .iter()
            .map(|t| escape(t))
            .collect::<Vec<_>>()
            .join("|");
        let mut calls = vec![call(
            "scout_grep",
            "Grep",
            json!({"pattern": alternation, "limit": 100}),
        )];
        calls.push(call(
            "scout_glob",
            "Glob",
            json!({"pattern": format!("**/*{}*", terms[0].to_lowercase()), "limit": 50}),
        ));
        return ChatResponse {
            tool_calls: calls,
            finish_reason: Some("tool_calls".into()),
            ..Default::default()
        };
    }
    // Turn 2: read the best hits around their first matching line.
    let hits = collect(&observations(&request.messages), &terms);
    let reads: Vec<ToolCall> = ranked(&hits)
        .into_iter()
        .take(MAX_READS)
        .enumerate()
        .map(|(i, (file, h))| {
            let first = h.iter().map(|x| x.0).min().unwrap_or(1);
            let start = first.saturating_sub(5).max(1);
            call(
                &format!("scout_read_{i}"),
                "Read",
                json!({"path": file, "start_line": start, "limit": READ_WINDOW}),
            )
        })
        .collect();
    if reads.is_empty() {
        return reply(final_answer(request));
    }
    ChatResponse {
        tool_calls: reads,
        finish_reason: Some("tool_calls".into()),
        ..Default::default()
    }
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
mod tests {
    use super::*;

    #[test]
    fn terms_prefer_named_identifiers() {
        assert_eq!(
            terms("Find where `load_config` is defined and how the ConfigLoader reads YAML files"),
            vec!["load_config", "ConfigLoader", "YAML", "reads"]
        );
        assert!(terms("where is it?").is_empty());
    }
}
