//! The scout's one way of working: it asks the code index once with the whole question (the
//! Search tool) or, when only Grep is offered, Greps for the index's query terms and ranks what
//! came back with the index's ranking ([`super::grepped`]); then it Reads the best places (as
//! the budgets allow) and answers with up to [`MAX_EVIDENCE`] ranked places. Every place it
//! cites it saw: a Read window, or a line the Search or Grep result showed. Every sentence is
//! about what the tools returned. A verification run gets a verdict that says the scout does
//! not judge, with what it found.

use serde_json::{json, Value};

use super::grepped;
pub(crate) use super::place::{Found, Place};
use super::query::task_body;
use super::seen::{quote, reads, ReadWindow};
use super::turn::{calls_response, facts, fit_reads, read_allowance, task_text};
use crate::index::rank;
use crate::index::text::{ident_terms, idents};
use crate::llm::{ChatRequest, ChatResponse, Message, ToolCall};
use crate::tools::shown::Shown;

/// Places asked of the index.
const SEARCH_LIMIT: u64 = 12;
/// Places read whole before answering.
const MAX_READS: usize = 3;
/// Places cited, at most.
pub(crate) const MAX_EVIDENCE: usize = 10;
/// Fewest and most lines read per place.
const READ_LINES: (u64, u64) = (12, 60);
/// How the places were found, for the summary.
const HOW: &str =
    "a ranked search of the code index (definitions found by parsers, BM25 over definition-sized chunks)";
/// The call id of the scout's search.
const SEARCH_ID: &str = "scout_search";

/// Whether the request offers the Search tool.
pub(crate) fn offered(request: &ChatRequest) -> bool {
    request
        .tools
        .iter()
        .any(|t| t["function"]["name"].as_str() == Some("Search"))
}

/// The places the scout's search ranked, best first (empty when it found none or failed).
pub(crate) fn places(messages: &[Message]) -> Vec<Place> {
    let q = rank::parse(task_body(task_text(messages)));
    found(messages, &q).map(|f| f.places).unwrap_or_default()
}

/// What the scout's search found: the Search result in the conversation, else its Greps'.
fn found(messages: &[Message], q: &rank::Query) -> Result<Found, String> {
    let searched = messages
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == SEARCH_ID));
    if searched {
        search_result(messages)
    } else {
        Ok(grepped::places(messages, q))
    }
}

/// The Search result in the conversation: its places, or why there are none.
fn search_result(messages: &[Message]) -> Result<Found, String> {
    let (content, shown) = messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                shown,
                ..
            } if tool_call_id == SEARCH_ID => Some((content.as_str(), shown)),
            _ => None,
        })
        .ok_or_else(|| "the index search result is missing (cut to fit the context)".to_string())?;
    // The envelope's fields say how the search ended; its places are read from the values
    // kept beside the text.
    let env: Value = serde_json::from_str(content)
        .map_err(|_| "the index search result could not be read".to_string())?;
    if env["status"].as_str() == Some("error") {
        return Err(format!(
            "the index search failed: {}",
            env["error"]["message"].as_str().unwrap_or("unknown error")
        ));
    }
    let Some(Shown::Places(shown)) = shown.as_deref() else {
        return Err("the index search result was cut to fit the context".to_string());
    };
    let places = shown
        .iter()
        .map(|p| Place {
            file: p.file.clone(),
            start: p.start,
            end: p.end,
            kind: p.kind.clone(),
            name: p.name.clone(),
            lines: p.lines.clone(),
            extent_known: true,
        })
        .collect();
    let data = &env["data"];
    let mut notes = Vec::new();
    if data["complete"].as_bool() == Some(false) {
        notes.push(format!(
            "The index was incomplete ({} file(s) not indexed in time, {} over its file limit), so places in those files are missing.",
            data["files_pending"].as_u64().unwrap_or(0),
            data["files_over_limit"].as_u64().unwrap_or(0)
        ));
    }
    Ok(Found {
        places,
        how: HOW,
        nothing: format!(
            "The index ({} files) holds no place matching the question's words.",
            data["files_indexed"].as_u64().unwrap_or(0)
        ),
        notes,
    })
}

/// The scout's next step: search (the index when Search is offered, else Grep), read the best
/// places, answer.
pub(crate) fn next_step(request: &ChatRequest) -> ChatResponse {
    let messages = &request.messages;
    let turns = messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    let question = task_body(task_text(messages)).trim().to_string();
    let verification = facts(request).verification;
    let how = if offered(request) { HOW } else { grepped::HOW };
    let reply = |found: Result<Found, String>| ChatResponse {
        content: answer(
            &question,
            found.map_err(|why| (how, why)),
            &reads(messages),
            verification,
        ),
        finish_reason: Some("stop".into()),
        ..Default::default()
    };
    let q = rank::parse(&question);
    if turns == 0 && !request.tools.is_empty() {
        if q.terms.is_empty() {
            return reply(Err("the task names no searchable word".into()));
        }
        let calls = if offered(request) {
            vec![ToolCall {
                id: SEARCH_ID.into(),
                name: "Search".into(),
                arguments: json!({"query": question.chars().take(2_000).collect::<String>(), "limit": SEARCH_LIMIT}).to_string(),
            }]
        } else if grepped::offered(request) {
            grepped::calls(&q)
        } else {
            Vec::new()
        };
        if calls.is_empty() {
            return reply(Err("neither Search nor Grep was offered".into()));
        }
        return calls_response(calls, String::new());
    }
    if turns <= 2 && !request.tools.is_empty() {
        if let Some(calls) = grepped::retry(messages, &q).filter(|_| !offered(request)) {
            return calls_response(calls, String::new());
        }
    }
    let found = found(messages, &q);
    let read = messages
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id.starts_with("scout_read")));
    if turns <= 2 && !read && !request.tools.is_empty() {
        if let Ok(f) = &found {
            let calls = read_calls(request, &f.places);
            if !calls.is_empty() {
                return calls_response(calls, String::new());
            }
        }
    }
    reply(found)
}

/// Reads of the best distinct places, as many lines each as the budgets leave room for.
fn read_calls(request: &ChatRequest, places: &[Place]) -> Vec<ToolCall> {
    let mut targets: Vec<&Place> = Vec::new();
    for p in places {
        if targets.len() >= MAX_READS {
            break;
        }
        let overlaps = targets
            .iter()
            .any(|t| t.file == p.file && t.start <= p.end && p.start <= t.end);
        if !overlaps {
            targets.push(p);
        }
    }
    let lines_each = fit_reads(&mut targets, read_allowance(request, 0), 60, READ_LINES.0);
    targets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let want = (p.end - p.start + 1).clamp(1, READ_LINES.1.min(lines_each));
            ToolCall {
                id: format!("scout_read_{i}"),
                name: "Read".into(),
                arguments: json!({"path": p.file, "start_line": p.start, "limit": want})
                    .to_string(),
            }
        })
        .collect()
}

/// The words of the question that carry meaning, as index terms.
fn key_terms(q: &rank::Query) -> Vec<String> {
    q.terms
        .iter()
        .filter(|t| t.weight >= 1.0)
        .map(|t| t.term.clone())
        .collect()
}

fn terms_in(lines: &[(u64, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (_, l) in lines {
        for w in idents(l) {
            ident_terms(w, &mut out);
        }
    }
    out
}

/// A stretch of a place a Read showed: (start, end, the numbered lines of the window).
type ReadPart<'a> = (u64, u64, &'a [(u64, String)]);

/// The part of `place` a Read showed (to the place's end, or, for a place whose extent the
/// search did not show, to where it ends in the window).
fn read_part<'a>(place: &Place, windows: &'a [ReadWindow]) -> Option<ReadPart<'a>> {
    windows.iter().find_map(|w| {
        let first = w.lines.first()?.0;
        let last = w.lines.last()?.0;
        if w.file != place.file || place.start < first || last < place.start {
            return None;
        }
        let end = if place.extent_known {
            place.end
        } else {
            grepped::extent(place, &w.lines)
        };
        Some((place.start, end.min(last), w.lines.as_slice()))
    })
}

/// The ExploreResult: the ranked places as evidence (what was seen of each), findings that
/// say what each is, and whether the best one plainly answers the question. For a
/// verification run, a VerificationResult that says the scout does not judge, with the same
/// findings and evidence.
fn answer(
    question: &str,
    found: Result<Found, (&str, String)>,
    windows: &[ReadWindow],
    verification: bool,
) -> String {
    let intro = |how: &str| {
        format!("Offline scout (no LLM configured): {how}; no model interpreted the results.")
    };
    let Found {
        places,
        how,
        nothing,
        notes,
    } = match found {
        Ok(found) => found,
        Err((_, why)) if verification => {
            return verdict(&[], &[], &format!("Nothing was found: {why}."));
        }
        Err((how, why)) => {
            return json!({
                "status": "partial",
                "summary": format!("{} Nothing was found: {why}.", intro(how)),
                "findings": [],
                "evidence": [],
                "unresolved_questions": [format!("No place could be cited because {why}.")],
            })
            .to_string()
        }
    };
    let (evidence, findings) = cite_places(&places, windows);
    let mut open: Vec<String> = Vec::new();
    let direct = answers_directly(question, places.first(), windows, &mut open);
    open.extend(notes);
    if verification {
        return verdict(&findings, &evidence, "");
    }
    let summary = summary_of(&intro(how), &places, &evidence, &nothing);
    json!({
        "status": if direct && !evidence.is_empty() { "completed" } else { "partial" },
        "summary": summary,
        "findings": findings,
        "evidence": evidence,
        "unresolved_questions": open,
    })
    .to_string()
}

/// The evidence and findings for `places`, best first: what a Read showed of each, or the first
/// line the search showed of it.
fn cite_places(places: &[Place], windows: &[ReadWindow]) -> (Vec<String>, Vec<String>) {
    let mut evidence: Vec<String> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    for p in places {
        if evidence.len() >= MAX_EVIDENCE || p.file.contains('\n') {
            break;
        }
        let what = match &p.name {
            Some(name) if p.kind != "lines" && p.kind != "part" => {
                format!("`{name}` is defined at {}:{} ({})", p.file, p.start, p.kind)
            }
            Some(name) if p.kind == "part" => format!("part of `{name}` in {}", p.file),
            _ => format!("lines of {}", p.file),
        };
        match read_part(p, windows) {
            Some((start, end, _)) => {
                let cite = crate::evidence::citation(&p.file, start, end);
                let clipped = if p.extent_known && end < p.end {
                    format!(" (read to line {end} of {})", p.end)
                } else {
                    String::new()
                };
                findings.push(format!("{cite}: {what}{clipped}."));
                evidence.push(cite);
            }
            None => {
                // Only the lines the search showed were seen: cite the first of them.
                let Some((line, text)) = p.lines.first() else {
                    continue;
                };
                let cite = format!("{}:{line}", p.file);
                if evidence.contains(&cite) {
                    continue;
                }
                findings.push(format!(
                    "{cite}: {what}; line {line} reads {}.",
                    quote(text)
                ));
                evidence.push(cite);
            }
        }
    }
    (evidence, findings)
}

/// Whether the best place plainly answers the question: it defines a name the question names,
/// or what was seen of it holds every key word (else an open question says which are missing).
fn answers_directly(
    question: &str,
    best: Option<&Place>,
    windows: &[ReadWindow],
    open: &mut Vec<String>,
) -> bool {
    let q = rank::parse(question);
    let keys = key_terms(&q);
    let named = &q.names;
    match best {
        Some(best) => {
            let named_def = best.kind != "lines"
                && best.name.as_ref().is_some_and(|n| {
                    let short = n.rsplit([':', '.']).next().unwrap_or(n).to_lowercase();
                    named.iter().any(|x| *x == short || *x == n.to_lowercase())
                });
            let seen = match read_part(best, windows) {
                Some((_, _, lines)) => terms_in(lines),
                None => terms_in(&best.lines),
            };
            let missing: Vec<&str> = keys
                .iter()
                .filter(|k| !seen.contains(k))
                .map(String::as_str)
                .collect();
            if !named_def && !missing.is_empty() {
                open.push(format!(
                    "The best match {}:{} does not show every key word of the question (not seen there: {}); a reader should confirm it answers the question.",
                    best.file,
                    best.start,
                    missing.join(", ")
                ));
            }
            named_def || missing.is_empty()
        }
        None => false,
    }
}

/// The summary: the best match and the other candidates, or why there are none.
fn summary_of(intro: &str, places: &[Place], evidence: &[String], nothing: &str) -> String {
    match (places.first(), evidence.first()) {
        (Some(best), Some(cite)) => {
            let lead = match &best.name {
                Some(name) if best.kind != "lines" && best.kind != "part" => format!(
                    "Best match: `{name}` is defined at {}:{} ({}), cited as {cite}.",
                    best.file, best.start, best.kind
                ),
                _ => format!("Best match: {cite}."),
            };
            let others: Vec<&str> = evidence
                .iter()
                .skip(1)
                .take(4)
                .map(String::as_str)
                .collect();
            let others = if others.is_empty() {
                String::new()
            } else {
                format!(" Other candidates: {}.", others.join(", "))
            };
            format!("{intro} {lead}{others}")
        }
        _ => format!("{intro} {nothing}"),
    }
}

/// A verification run's VerificationResult: the scout does not judge a candidate; it says so,
/// with what it found (and, when it found nothing, why).
fn verdict(findings: &[String], evidence: &[String], nothing: &str) -> String {
    let mut reasons = vec![
        "The offline scout cannot judge a completion candidate; configure an LLM for verification."
            .to_string(),
    ];
    if !nothing.is_empty() {
        reasons.push(nothing.to_string());
    }
    json!({
        "verdict": "UNVERIFIED",
        "reasons": reasons,
        "findings": findings,
        "evidence": evidence,
    })
    .to_string()
}
