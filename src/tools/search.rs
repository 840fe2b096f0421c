//! `Search`: ranked code search over the workspace's index ([`crate::index`]). A question or a
//! few words in; the best definition-sized places out, each with its definition line and the
//! lines that matched best, read from the file now (so what it shows is what the file says).
//!
//! The offline scout searches with it; a model may be offered it by naming it in a profile's
//! tools. Like Grep it is read-only: it reads files only through the workspace (listed by the
//! confined walk, opened beneath the root), and its cache lives outside the root.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::context::ToolContext;
use super::envelope::{ErrorCode, ToolResult};
use super::params;
use super::shown::SearchPlace;
use super::tool::Tool;
use crate::index::{self, rank, text};

/// Places returned when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u64 = 10;
/// The most places one call returns.
pub(crate) const MAX_LIMIT: u64 = 30;
/// Lines shown per place: its definition line and the best-matching others.
const LINES_PER_HIT: usize = 3;
/// Characters kept of a shown line.
const LINE_CHARS: usize = 200;

/// The Search tool.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SearchTool;

impl Tool for SearchTool {
    fn name(&self) -> &'static str {
        "Search"
    }

    fn description(&self) -> Cow<'static, str> {
        "Ranked code search: give a question or a few words (identifiers work best as written, \
         e.g. 'where are failed requests retried with backoff', 'ConfigLoader load'). Returns the best \
         places in the project, definition-sized (a function, method, class, or a block of \
         lines), best first, each with its range, what it defines, and the lines that matched. \
         Definitions of a named identifier and files named after the query rank first; tests, \
         docs and examples last unless asked for. Read a place's range to see all of it."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "The question or words to search for."
                },
                "path": {
                    "type": "string",
                    "description": "Only places in this directory (relative to the project root).",
                    "default": "."
                },
                "limit": {
                    "type": "integer",
                    "description": "Most places to return.",
                    "default": DEFAULT_LIMIT,
                    "minimum": 1,
                    "maximum": MAX_LIMIT
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        search(ctx, args)
    }
}

struct Request {
    query: String,
    path: Option<String>,
    limit: usize,
}

fn parse(args: &Value) -> Result<Request, String> {
    let obj = args.as_object().cloned().unwrap_or_default();
    for key in obj.keys() {
        if !["query", "path", "limit"].contains(&key.as_str()) {
            return Err(format!(
                "Unknown argument '{key}' for Search; expected query, path, limit."
            ));
        }
    }
    let query = match obj.get("query") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) => {
            return Err("query is empty; give the words or question to search for.".into())
        }
        Some(other) => {
            return Err(format!(
                "query must be a string, got {}.",
                params::json_type_name(other)
            ))
        }
        None => return Err("query is required: the words or question to search for.".into()),
    };
    let limit = match obj.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(format!(
                    "limit must be an integer from 1 to {MAX_LIMIT}, got {v}."
                ))
            }
        },
    } as usize;
    let path = match obj.get("path") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() || s == "." => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!(
                "path must be a string, got {}.",
                params::json_type_name(other)
            ))
        }
    };
    Ok(Request { query, path, limit })
}

fn search(ctx: &ToolContext, args: &Value) -> ToolResult {
    let started = Instant::now();
    if let Err(e) = params::object("Search", args) {
        return *e;
    }
    let req = match parse(args) {
        Ok(r) => r,
        Err(msg) => return ToolResult::error(args, ErrorCode::InvalidParam, msg, 0),
    };
    let ws = &ctx.workspace;
    // A directory filter must name a directory inside the workspace.
    let under = match &req.path {
        None => None,
        Some(p) => match super::walk::search_root(ws, p, args, 0) {
            Ok(r) if r.relative == "." => None,
            Ok(r) => Some(r.relative.clone()),
            Err(e) => return *e,
        },
    };
    let stopped = |what: &str| {
        let msg = if ctx.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            "Search was cancelled.".to_string()
        } else {
            format!("Search timed out {what}; try again with fewer words or a narrower path.")
        };
        let elapsed = started.elapsed().as_millis() as u64;
        ToolResult::error(args, ErrorCode::Timeout, msg, elapsed)
    };
    // The query is read before the index is held.
    let q = rank::parse_with(&req.query, &ctx.tuning);
    let busy = "waiting for the index (another search of this project held it)";
    let Some((handle, refresh)) = index::open(ws, ctx.deadline, &ctx.cancel) else {
        return stopped(busy);
    };
    let Some(index) = index::lock_until(&handle, ctx.deadline, &ctx.cancel) else {
        return stopped(busy);
    };
    let Some(hits) = rank::search_until(&index, &q, req.limit, under.as_deref(), ctx.deadline)
    else {
        return stopped("ranking the index");
    };
    let query_terms: Vec<String> = q.terms.iter().map(|t| t.term.clone()).collect();
    // What the places need of the index is copied out, and the index let go before their
    // files are read: another search of this tree need not wait for those reads.
    let ranked: Vec<Ranked> = hits
        .iter()
        .map(|h| Ranked {
            path: index.files[h.file].path.clone(),
            chunk: index.files[h.file].chunks.chunks[h.chunk].clone(),
            score: h.score,
        })
        .collect();
    let (cov, chunks) = (index.coverage.clone(), index.chunk_count());
    drop(index);
    let (shown, places) = show_hits(ctx, &ranked, &query_terms);
    let mut data = Map::new();
    let n = shown.len();
    data.insert("hits".into(), Value::Array(shown));
    data.insert("files_indexed".into(), json!(cov.files));
    data.insert("chunks".into(), json!(chunks));
    data.insert("complete".into(), json!(cov.complete()));
    if !cov.complete() {
        data.insert("files_pending".into(), json!(cov.pending));
        data.insert("files_over_limit".into(), json!(cov.over_limit));
    }
    let elapsed = started.elapsed().as_millis() as u64;
    let mut summary = format!(
        "{n} place{} for '{}' (index of {} files, {}).",
        if n == 1 { "" } else { "s" },
        shorten(&req.query, 200),
        cov.files,
        refresh.source
    );
    if q.left_out > 0 {
        summary.push_str(&left_out_note(&q));
        data.insert("query_terms".into(), json!(query_terms));
        data.insert("query_words_left_out".into(), json!(q.left_out));
    }
    let result = if cov.complete() {
        ToolResult::success(args, data, summary, elapsed)
    } else {
        let why = if cov.pending > 0 {
            format!(
                "{} files were not indexed before the time limit; places in them are missing.",
                cov.pending
            )
        } else {
            format!(
                "the tree is over the index's limits ({} files, {} MiB of text); {} files were left out.",
                index::MAX_FILES,
                index::MAX_TOTAL_BYTES >> 20,
                cov.over_limit
            )
        };
        ToolResult::partial(args, data, format!("{summary} Incomplete: {why}"), elapsed)
    };
    result
        .with_shown(super::shown::Shown::Places(places))
        .with_stat("files_read", refresh.read as u64)
        .with_stat("index_ms", refresh.ms)
}

/// A ranked place as the index holds it: its file, its chunk and its score.
struct Ranked {
    path: String,
    chunk: index::chunk::Chunk,
    score: f64,
}

/// Each ranked place as the model sees it: its range, what it defines, and its definition line
/// and best-matching lines, read from the file now (a place whose lines are gone is left out).
fn show_hits(
    ctx: &ToolContext,
    hits: &[Ranked],
    query_terms: &[String],
) -> (Vec<Value>, Vec<SearchPlace>) {
    let mut shown = Vec::new();
    let mut places = Vec::new();
    // Each file is read once, through the workspace, however many of its places rank.
    let mut texts: HashMap<&str, Option<String>> = HashMap::new();
    for h in hits {
        let (path, c) = (&h.path, &h.chunk);
        let text = texts
            .entry(path.as_str())
            .or_insert_with(|| index::read_text(&ctx.workspace, path));
        let Some(lines) = text.as_deref().and_then(|t| file_lines(t, c.start, c.end)) else {
            continue;
        };
        let (kind, name) = if c.is_definition() && defines(&lines, c.start, &c.name) {
            (c.kind_name(), c.name.as_str())
        } else if c.kind_name() == "part" {
            ("part", c.name.as_str())
        } else {
            ("lines", "")
        };
        let picked = pick_lines(&lines, c.start, c.is_definition(), query_terms);
        let mut hit = Map::new();
        hit.insert("file".into(), json!(path));
        hit.insert("start".into(), json!(c.start));
        hit.insert("end".into(), json!(c.end));
        hit.insert("kind".into(), json!(kind));
        if !name.is_empty() {
            hit.insert("name".into(), json!(name));
        }
        hit.insert("score".into(), json!((h.score * 100.0).round() / 100.0));
        hit.insert(
            "lines".into(),
            Value::Array(
                picked
                    .iter()
                    .map(|(n, t)| json!({"line": n, "text": t}))
                    .collect(),
            ),
        );
        shown.push(Value::Object(hit));
        places.push(SearchPlace {
            file: path.clone(),
            start: u64::from(c.start),
            end: u64::from(c.end),
            kind: kind.to_string(),
            name: (!name.is_empty()).then(|| name.to_string()),
            lines: picked.into_iter().map(|(n, t)| (u64::from(n), t)).collect(),
        });
    }
    (shown, places)
}

/// What a query too long to read whole says: where reading stopped and how much was left.
fn left_out_note(q: &rank::Query) -> String {
    let quote = |w: &Option<String>| shorten(w.as_deref().unwrap_or(""), 40);
    let read = match &q.last_read {
        Some(_) => format!("up to the word '{}'", quote(&q.last_read)),
        None => "none of its words".to_string(),
    };
    format!(
        " The query is too long: Search read {read} ({} terms, listed in data.query_terms; at most {} characters and {} terms are read) and left out the {} words from '{}' on. Ask with a few words instead.",
        q.terms.len(),
        rank::MAX_QUERY_CHARS,
        rank::MAX_QUERY_TERMS,
        q.left_out,
        quote(&q.first_left_out),
    )
}

/// `text` itself when it has at most `max` characters, else its first `max` and an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Lines `start..=end` of a file's text (1-based, with their numbers, each cut to
/// [`LINE_CHARS`]); None when the file has none of them now.
fn file_lines(text: &str, start: u32, end: u32) -> Option<Vec<(u32, String)>> {
    let lines: Vec<(u32, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u32 + 1, l))
        .skip_while(|(n, _)| *n < start)
        .take_while(|(n, _)| *n <= end)
        .map(|(n, l)| (n, l.chars().take(LINE_CHARS).collect()))
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// Whether the definition's first line names it (the file still says what the index says).
fn defines(lines: &[(u32, String)], start: u32, name: &str) -> bool {
    let short = name.rsplit([':', '.']).next().unwrap_or(name);
    lines
        .iter()
        .find(|(n, _)| *n == start)
        .is_some_and(|(_, l)| l.contains(short))
}

/// The lines to show of a place: its first line when it is a definition, then the lines that
/// hold the most query terms, in line order.
fn pick_lines(
    lines: &[(u32, String)],
    start: u32,
    definition: bool,
    query_terms: &[String],
) -> Vec<(u32, String)> {
    let mut scored: Vec<(usize, u32)> = Vec::new();
    for (n, l) in lines {
        if definition && *n == start {
            continue;
        }
        let mut terms = Vec::new();
        for w in text::idents(l) {
            text::ident_terms(w, &mut terms);
        }
        let hits = query_terms.iter().filter(|t| terms.contains(t)).count();
        if hits > 0 {
            scored.push((hits, *n));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<u32> = scored
        .into_iter()
        .take(LINES_PER_HIT - usize::from(definition))
        .map(|(_, n)| n)
        .collect();
    if definition || keep.is_empty() {
        keep.push(start);
    }
    keep.sort_unstable();
    keep.dedup();
    lines
        .iter()
        .filter(|(n, _)| keep.contains(n))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Workspace;

    fn ctx(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let ws = Workspace::new(dir.path()).expect("workspace");
        (dir, ToolContext::new(ws))
    }

    const TREE: &[(&str, &str)] = &[
        (
            "src/sessions.py",
            "import hmac\n\n\nclass SessionInterface:\n    \"\"\"Signs the session cookie.\"\"\"\n\n    def save_session(self, app, session, response):\n        value = self.sign(session)\n        response.set_cookie(app.cookie_name, value)\n",
        ),
        ("src/app.py", "def run(app):\n    return app\n"),
        ("tests/test_sessions.py", "def test_save_session():\n    save_session()\n"),
    ];

    #[test]
    fn ranked_places_with_their_definition_line_read_from_the_file() {
        let (_d, ctx) = ctx(TREE);
        let r = SearchTool
            .run(
                &ctx,
                &json!({"query": "where is the session cookie saved on the response?"}),
            )
            .to_value();
        assert_eq!(r["status"], "success", "{r}");
        let first = &r["data"]["hits"][0];
        assert_eq!(
            (
                first["file"].as_str(),
                first["start"].as_u64(),
                first["kind"].as_str(),
                first["name"].as_str()
            ),
            (
                Some("src/sessions.py"),
                Some(7),
                Some("method"),
                Some("save_session")
            ),
            "{r}"
        );
        assert_eq!(
            first["lines"][0],
            json!({"line": 7, "text": "    def save_session(self, app, session, response):"})
        );
        // The test file ranks below the source it tests.
        let files: Vec<&str> = r["data"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|h| h["file"].as_str())
            .collect();
        let src = files.iter().position(|f| *f == "src/sessions.py");
        let test = files.iter().position(|f| *f == "tests/test_sessions.py");
        assert!(src < test || test.is_none(), "{files:?}");
        assert_eq!(r["data"]["complete"], true);
    }

    #[test]
    fn bad_arguments_name_the_value_and_what_was_expected() {
        let (_d, ctx) = ctx(TREE);
        for (args, says) in [
            (json!({}), "query is required"),
            (json!({"query": "  "}), "query is empty"),
            (json!({"query": 3}), "query must be a string, got integer"),
            (
                json!({"query": "x", "limit": 0}),
                "limit must be an integer from 1 to 30, got 0",
            ),
            (
                json!({"query": "x", "limit": "9"}),
                "limit must be an integer from 1 to 30, got \"9\"",
            ),
            (
                json!({"query": "x", "glob": "*.py"}),
                "Unknown argument 'glob'",
            ),
        ] {
            let r = SearchTool.run(&ctx, &args).to_value();
            assert_eq!(r["status"], "error", "{args}");
            assert!(
                r["error"]["message"].as_str().unwrap().contains(says),
                "{args}: {r}"
            );
        }
        let r = SearchTool
            .run(&ctx, &json!({"query": "x", "path": "../.."}))
            .to_value();
        assert_eq!(r["status"], "error", "{r}");
    }

    #[test]
    fn a_directory_filter_keeps_places_inside_it() {
        let (_d, ctx) = ctx(TREE);
        let r = SearchTool
            .run(&ctx, &json!({"query": "save_session", "path": "tests"}))
            .to_value();
        let files: Vec<&str> = r["data"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|h| h["file"].as_str())
            .collect();
        assert_eq!(files, ["tests/test_sessions.py"], "{r}");
    }

    #[test]
    fn a_deadline_before_the_index_is_built_gives_a_partial_result_that_says_so() {
        let (_d, ctx) = ctx(&[("src/only.py", "def unique_name_for_deadline():\n    pass\n")]);
        let ctx = ctx.with_deadline(Instant::now());
        let r = SearchTool
            .run(&ctx, &json!({"query": "unique_name_for_deadline"}))
            .to_value();
        assert_eq!(r["status"], "partial", "{r}");
        assert!(
            r["text"]
                .as_str()
                .unwrap()
                .contains("not indexed before the time limit"),
            "{r}"
        );
    }
}
