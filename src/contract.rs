//! Result contracts: the strict JSON a child must answer with, and an explicit repair parse.
//!
//! `ExploreResult::from_json` and `VerificationResult::from_json` accept and reject exactly what
//! the reference does (a whole-string JSON object, no leading fence, case-insensitive status or
//! verdict, string arrays with blank items dropped, extra keys ignored) and keep its messages.
//! Every violation is also reported with a location and a stable machine `type`, so callers can
//! act on them one by one. `repair` is a separate, lenient entry point that pulls the one JSON
//! object out of a fenced or prose-wrapped answer and says which repair it made.

use std::collections::BTreeMap;
use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};

pub(crate) use crate::error::{ContractError, LocItem, Violation};
use crate::pyjson::{self as json, py_repr_str, py_strip, Json};

wire_enum! {
    /// Status of a sub-agent run or result.
    pub enum SubagentStatus {
        /// The child answered with a complete result.
        Completed = "completed",
        /// The child answered with what it found before running out.
        Partial = "partial",
        /// No result.
        Failed = "failed",
        /// Verification could not decide.
        Unverified = "unverified",
    }
}

wire_enum! {
    /// Verdict of a verification child.
    pub enum VerificationVerdict {
        /// The candidate meets the requirements.
        Pass = "PASS",
        /// It does not.
        Fail = "FAIL",
        /// It meets some of them.
        Partial = "PARTIAL",
        /// The child could not tell.
        Unverified = "UNVERIFIED",
    }
}

/// A repair name other than `fence`, `extract`, `quotes`, `commas` or `brackets`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a repair; expected fence, extract, quotes, commas or brackets")]
pub struct UnknownRepair(pub String);

wire_enum! {
    /// Which repair `repair` had to make to get a JSON object out of an answer.
    pub enum Repair {
        /// The answer was wrapped in a markdown code fence.
        Fence = "fence",
        /// The object was pulled out of surrounding prose.
        Extract = "extract",
        /// Quotes inside a string that do not end it were taken as part of it
        /// (`"a.go:3: Static("/static")"`, code quoted in an evidence item).
        Quotes = "quotes",
        /// A comma before a closing `]` or `}` (`"b.go:3",\n  ]`, as a small model ends a
        /// list) was dropped.
        Commas = "commas",
        /// A list left open was closed where the next key or the object's closing brace came
        /// (`"findings": ["a", "evidence": ["b"]`, a list a small model forgot to close); a
        /// trailing comma may have been dropped with it.
        Brackets = "brackets",
    }
    parse_error: |s| -> UnknownRepair { UnknownRepair(s.to_owned()) }
}

/// The reference's object parse: strip, refuse a leading fence, parse the whole string, require
/// an object.
pub(crate) fn parse_object(contract: &'static str, raw: &str) -> Result<Json, ContractError> {
    let text = py_strip(raw);
    if text.starts_with("```") {
        return Err(ContractError::single(
            contract,
            "structured child result must not use markdown fences",
            "markdown_fence",
            Json::Str(raw.to_string()),
        ));
    }
    let value = json::parse(text).map_err(|e| {
        ContractError::single(
            contract,
            e.to_string(),
            "json_invalid",
            Json::Str(raw.to_string()),
        )
    })?;
    if !matches!(value, Json::Object(_)) {
        return Err(ContractError::single(
            contract,
            "structured child result must be an object",
            "object_type",
            value,
        ));
    }
    Ok(value)
}

/// The lenient parse: strict first; then the first fenced block that holds an object; then the
/// one balanced JSON object found in the text. Returns the object and the repair made, if any.
/// When nothing can be recovered, the strict parse's error is returned.
pub(crate) fn repair_object(
    contract: &'static str,
    raw: &str,
) -> Result<(Json, Option<Repair>), ContractError> {
    let strict_err = match parse_object(contract, raw) {
        Ok(v) => return Ok((v, None)),
        Err(e) => e,
    };
    // The one object in a code fence. Several (a draft and its correction, a retracted
    // `completed` and the final `partial`) are as ambiguous as several bare objects, and so is
    // a fenced one beside another object outside the fences: neither is taken on its place.
    let mut fenced: Vec<Json> = fenced_blocks(raw)
        .into_iter()
        .filter_map(|block| parse_object(contract, block).ok())
        .collect();
    if !fenced.is_empty() {
        let outside = embedded_objects(&fence_regex().replace_all(raw, " "))
            .into_iter()
            .filter(|o| !matches!(o, Json::Object(items) if items.is_empty()))
            .count();
        return match (fenced.pop(), fenced.len() + outside) {
            (Some(v), 0) => Ok((v, Some(Repair::Fence))),
            (_, others) => Err(ambiguous(contract, others + 1, raw)),
        };
    }
    let objects = embedded_objects(raw);
    match objects.len() {
        1 => Ok((
            objects.into_iter().next().unwrap_or(Json::Null),
            Some(Repair::Extract),
        )),
        0 => {
            let blocks = fenced_blocks(raw);
            for candidate in blocks.iter().copied().chain([py_strip(raw)]) {
                if let Some(v) = escape_stray_quotes(candidate)
                    .and_then(|fixed| parse_object(contract, &fixed).ok())
                {
                    return Ok((v, Some(Repair::Quotes)));
                }
                // A trailing comma or a list left open, alone or after stray quotes were
                // escaped.
                // The text as written first: a list left open before a key
                // (`["a" "evidence": ...`) looks like stray quotes.
                let quoted = escape_stray_quotes(candidate);
                let mended = [Some(candidate), quoted.as_deref()]
                    .into_iter()
                    .flatten()
                    .find_map(|base| {
                        let (fixed, mended) = mend_structure(base)?;
                        Some((parse_object(contract, &fixed).ok()?, mended))
                    });
                if let Some((v, mended)) = mended {
                    let repair = if mended.brackets {
                        Repair::Brackets
                    } else {
                        Repair::Commas
                    };
                    return Ok((v, Some(repair)));
                }
            }
            // A fenced answer whose JSON does not parse: say what is wrong inside the fence,
            // not that fences are refused.
            match blocks.first() {
                Some(block) => Err(parse_object(contract, block).err().map_or(strict_err, |e| {
                    ContractError::single(
                        contract,
                        format!("the JSON in the answer's code fence does not parse: {e}"),
                        "json_invalid",
                        Json::Str(raw.to_string()),
                    )
                })),
                None => Err(strict_err),
            }
        }
        n => Err(ambiguous(contract, n, raw)),
    }
}

/// The refusal of an answer holding `n` JSON objects where one is expected.
fn ambiguous(contract: &'static str, n: usize, raw: &str) -> ContractError {
    ContractError::single(
        contract,
        format!("found {n} JSON objects in the answer; expected exactly one (the final answer alone, no drafts)"),
        "ambiguous",
        Json::Str(raw.to_string()),
    )
}

/// `text` with every `"` inside a string that does not end it escaped, when there is one: a
/// quote ends a string only when what follows it (past blanks) is `,` `:` `}` `]` or the end,
/// and it does not close a quoted part of the string (the quotes escaped so far in that string
/// are even: `"a.go:3: Static("/static", "/var")"` is one string). None when every quote
/// already fits.
fn escape_stray_quotes(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut changed = false;
    let mut stray = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !in_string {
            in_string = c == '"';
            stray = 0;
            out.push(c);
            continue;
        }
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            '"' => {
                let after = text[i + 1..].trim_start().chars().next();
                if stray.is_multiple_of(2) && matches!(after, None | Some(',' | ':' | '}' | ']')) {
                    in_string = false;
                    out.push('"');
                } else {
                    out.push_str("\\\"");
                    changed = true;
                    stray += 1;
                }
            }
            _ => out.push(c),
        }
    }
    changed.then_some(out)
}

/// What [`mend_structure`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Mended {
    /// A comma before a closing `]` or `}` was dropped.
    commas: bool,
    /// A list left open was closed before a key or the object's closing brace.
    brackets: bool,
}

/// `text` with two slips a small model makes in a JSON object mended, outside strings: a comma
/// right before a closing `]` or `}` (past blanks) is dropped, and a list still open where a
/// key (a string followed by `:`) or the enclosing object's `}` comes is closed there (`"findings":
/// ["a", "evidence": ["b"]` becomes `"findings": ["a"], "evidence": ["b"]`). None when neither
/// occurs. A doubled comma keeps its first (`,, }` stays invalid); an answer cut off before its
/// end is not completed (that would hide a truncated answer).
fn mend_structure(text: &str) -> Option<(String, Mended)> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut open: Vec<char> = Vec::new();
    let mut mended = Mended::default();
    let mut in_string = false;
    let mut chars = text.char_indices();
    // Closes the lists open right inside the innermost object, at the end of `out` but before
    // its trailing blanks and comma (the comma stays after the `]`).
    let close_lists = |out: &mut String, open: &mut Vec<char>| {
        let kept = out.trim_end().len();
        let had_comma = out[..kept].ends_with(',');
        let cut = if had_comma { kept - 1 } else { kept };
        let tail = out.split_off(cut);
        while open.last() == Some(&'[') && open.len() > 1 {
            open.pop();
            out.push(']');
        }
        out.push_str(&tail);
    };
    while let Some((i, c)) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        out.push(next);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        let rest = &text[i + c.len_utf8()..];
        match c {
            ',' if matches!(rest.trim_start().chars().next(), Some(']' | '}')) => {
                mended.commas = true;
                continue;
            }
            '"' if open.last() == Some(&'[') && open.contains(&'{') && string_is_key(rest) => {
                close_lists(&mut out, &mut open);
                if !out.trim_end().ends_with([',', '{']) {
                    out.push(',');
                }
                mended.brackets = true;
            }
            '}' if open.last() == Some(&'[') && open.contains(&'{') => {
                close_lists(&mut out, &mut open);
                mended.brackets = true;
            }
            _ => {}
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => open.push(c),
            ']' | '}' => {
                open.pop();
            }
            _ => {}
        }
        out.push(c);
    }
    (mended != Mended::default()).then_some((out, mended))
}

/// Whether the string whose body starts `rest` (just past its opening quote) is followed, past
/// blanks, by `:`: a key.
fn string_is_key(rest: &str) -> bool {
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => return rest[i + 1..].trim_start().starts_with(':'),
            _ => {}
        }
    }
    false
}

/// A markdown code fence and its body.
fn fence_regex() -> &'static Regex {
    static FENCE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    FENCE.get_or_init(|| {
        Regex::new(r"(?s)```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```").expect("valid fence regex")
    })
}

fn fenced_blocks(text: &str) -> Vec<&str> {
    fence_regex()
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect()
}

/// How many bytes the search for embedded objects may scan per byte of text, plus a floor. Each
/// `{` starts a scan to its closing brace, so a text of unclosed braces (a model answering a
/// megabyte of `{`) would take quadratic time; past this budget the search gives up.
const EMBEDDED_SCAN_FACTOR: usize = 8;
const EMBEDDED_SCAN_FLOOR: usize = 1 << 20;

/// Top-level balanced `{...}` spans that parse as JSON objects, left to right, not nested.
/// Nothing when the scan budget runs out: a partial search could miss a second object and
/// accept an ambiguous answer.
fn embedded_objects(text: &str) -> Vec<Json> {
    embedded_objects_counted(text).0
}

/// [`embedded_objects`], and the bytes its scans looked at (the work it did, which the budget
/// keeps linear in the text's length).
fn embedded_objects_counted(text: &str) -> (Vec<Json>, usize) {
    let bytes = text.as_bytes();
    let mut scanned = 0usize;
    let mut budget = bytes
        .len()
        .saturating_mul(EMBEDDED_SCAN_FACTOR)
        .saturating_add(EMBEDDED_SCAN_FLOOR);
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        let end = balanced_end(bytes, i);
        scanned += end.map_or(bytes.len(), |e| e + 1) - i;
        // The scan, and the parse of what it found, cost about the span's length each.
        let cost = end.map_or(bytes.len() - i, |e| 2 * (e + 1 - i));
        match budget.checked_sub(cost) {
            Some(left) => budget = left,
            None => return (Vec::new(), scanned),
        }
        match end {
            Some(end) => match json::parse(&text[i..=end]) {
                Ok(v @ Json::Object(_)) => {
                    found.push(v);
                    i = end + 1;
                }
                _ => i += 1,
            },
            None => i += 1,
        }
    }
    (found, scanned)
}

fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (j, &b) in bytes.iter().enumerate().skip(start) {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Read a list-of-strings field: missing or null is empty; anything but a list of str is a
/// violation; whitespace-only items are dropped and kept items are not stripped.
fn string_list(obj: &Json, key: &str, out: &mut Vec<Violation>) -> Vec<String> {
    let value = match obj.get(key) {
        None | Some(Json::Null) => return Vec::new(),
        Some(v) => v,
    };
    let Json::Array(items) = value else {
        out.push(Violation {
            loc: vec![LocItem::Key(key.into())],
            msg: "result list fields must be string arrays".into(),
            kind: "string_array",
            input: value.clone(),
        });
        return Vec::new();
    };
    let mut kept = Vec::with_capacity(items.len());
    for (idx, item) in items.iter().enumerate() {
        match item {
            Json::Str(s) => {
                if !py_strip(s).is_empty() {
                    kept.push(s.clone());
                }
            }
            other => out.push(Violation {
                loc: vec![LocItem::Key(key.into()), LocItem::Index(idx)],
                msg: "result list fields must be string arrays".into(),
                kind: "string_array",
                input: other.clone(),
            }),
        }
    }
    kept
}

/// `str(payload.get(key, ""))`: the value as Python's `str()` prints it.
fn field_str(obj: &Json, key: &str) -> (String, Json) {
    match obj.get(key) {
        None => (String::new(), Json::Str(String::new())),
        Some(v) => (v.py_str(), v.clone()),
    }
}

/// The terminal reason a result carries when none is given.
pub const UNKNOWN_REASON: &str = "unknown";

/// A tool-usage map: tool name → number of requested calls.
pub type ToolUsage = BTreeMap<String, u64>;

/// The result of an explore child.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExploreResult {
    /// `completed` or `partial`.
    pub status: SubagentStatus,
    /// Non-empty, stripped.
    pub summary: String,
    /// What was found.
    pub findings: Vec<String>,
    /// `relative/path:line` references.
    pub evidence: Vec<String>,
    /// What is still open.
    pub unresolved_questions: Vec<String>,
    /// Requested tool calls by name (from the run, not from the model).
    pub tool_usage: ToolUsage,
    /// Why the child stopped (from the run).
    pub terminal_reason: String,
    /// Where each evidence item came from, item for item (from the run, not from the model):
    /// `model` (cited by the model, in lines it saw), `index` (a place the code index ranked
    /// and the child was shown as a lead, not vouched for by the model), `both`, or `seen` (a
    /// place the child looked at before it stopped without an answer). Empty when unknown (a
    /// result parsed from text).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_sources: Vec<String>,
}

/// The values an [`ExploreResult::evidence_sources`] item may take.
pub const EVIDENCE_SOURCES: [&str; 4] = ["model", "index", "both", "seen"];

const EXPLORE: &str = "ExploreResult";
const VERIFICATION: &str = "VerificationResult";

impl ExploreResult {
    /// A placeholder (status `partial`, nothing found), to move a result out of a `&mut`.
    pub(crate) fn empty() -> Self {
        Self {
            status: SubagentStatus::Partial,
            summary: String::new(),
            findings: Vec::new(),
            evidence: Vec::new(),
            unresolved_questions: Vec::new(),
            tool_usage: ToolUsage::new(),
            terminal_reason: String::new(),
            evidence_sources: Vec::new(),
        }
    }

    /// Strict parse of a model's final answer, as the reference does it.
    pub fn from_json(
        raw: &str,
        tool_usage: ToolUsage,
        terminal_reason: &str,
    ) -> Result<Self, ContractError> {
        let obj = parse_object(EXPLORE, raw)?;
        Self::from_object(&obj, tool_usage, terminal_reason)
    }

    /// Lenient parse: also accepts a fenced or prose-wrapped answer; returns the repair made.
    pub fn repair(
        raw: &str,
        tool_usage: ToolUsage,
        terminal_reason: &str,
    ) -> Result<(Self, Option<Repair>), ContractError> {
        let (obj, repair) = repair_object(EXPLORE, raw)?;
        Ok((
            Self::from_object(&obj, tool_usage, terminal_reason)?,
            repair,
        ))
    }

    /// Validate an already-parsed object (the reference's rules after the JSON parse).
    pub fn from_object(
        obj: &Json,
        tool_usage: ToolUsage,
        terminal_reason: &str,
    ) -> Result<Self, ContractError> {
        let mut violations = Vec::new();
        let (raw_status, status_input) = field_str(obj, "status");
        let lowered = raw_status.to_lowercase();
        let status = match SubagentStatus::from_wire(&lowered) {
            None => {
                let msg = if obj.get("status").is_none() {
                    "status is missing; expected 'completed' or 'partial'".to_string()
                } else {
                    format!("{} is not a valid SubagentStatus", py_repr_str(&lowered))
                };
                violations.push(Violation {
                    loc: vec![LocItem::Key("status".into())],
                    msg,
                    kind: "status_invalid",
                    input: status_input,
                });
                None
            }
            Some(s @ (SubagentStatus::Completed | SubagentStatus::Partial)) => Some(s),
            Some(_) => {
                violations.push(Violation {
                    loc: vec![LocItem::Key("status".into())],
                    msg: "ExploreResult status must be completed or partial".into(),
                    kind: "status_not_allowed",
                    input: status_input,
                });
                None
            }
        };
        let summary = match obj.get("summary") {
            Some(Json::Str(s)) if !py_strip(s).is_empty() => Some(py_strip(s).to_string()),
            other => {
                violations.push(Violation {
                    loc: vec![LocItem::Key("summary".into())],
                    msg: "ExploreResult requires summary".into(),
                    kind: "summary_missing",
                    input: other.cloned().unwrap_or(Json::Null),
                });
                None
            }
        };
        let findings = string_list(obj, "findings", &mut violations);
        let evidence = string_list(obj, "evidence", &mut violations);
        let unresolved_questions = string_list(obj, "unresolved_questions", &mut violations);
        match (status, summary) {
            (Some(status), Some(summary)) if violations.is_empty() => Ok(ExploreResult {
                status,
                summary,
                findings,
                evidence,
                unresolved_questions,
                tool_usage,
                terminal_reason: terminal_reason.to_string(),
                evidence_sources: Vec::new(),
            }),
            _ => Err(ContractError {
                contract: EXPLORE,
                violations,
            }),
        }
    }

    /// Rebuild from `to_dict()` output: the contract rules plus typed `tool_usage` and
    /// `terminal_reason` taken from the dict itself.
    pub fn from_dict(obj: &Json) -> Result<Self, ContractError> {
        let mut extra = Vec::new();
        let tool_usage = dict_tool_usage(obj, &mut extra);
        let terminal_reason = dict_str(obj, "terminal_reason", UNKNOWN_REASON, &mut extra);
        let sources = dict_sources(obj, &mut extra);
        let built = Self::from_object(obj, tool_usage, &terminal_reason).map(|mut r| {
            r.evidence_sources = sources;
            r
        });
        let mut built = merge(EXPLORE, built, extra)?;
        if !built.evidence_sources.is_empty()
            && built.evidence_sources.len() != built.evidence.len()
        {
            return Err(ContractError::single(
                EXPLORE,
                format!(
                    "evidence_sources must have one item per evidence item ({}), got {}",
                    built.evidence.len(),
                    built.evidence_sources.len()
                ),
                "list_length",
                Json::Int(built.evidence_sources.len() as i64),
            ));
        }
        built.evidence_sources.shrink_to_fit();
        Ok(built)
    }

    /// The JSON form (`to_dict()`): status as its value, lists as arrays.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The result of a verification child.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VerificationResult {
    /// PASS, FAIL, PARTIAL or UNVERIFIED.
    pub verdict: VerificationVerdict,
    /// Why.
    pub reasons: Vec<String>,
    /// What was found.
    pub findings: Vec<String>,
    /// `relative/path:line` references.
    pub evidence: Vec<String>,
    /// The child's session id, when run by a launcher.
    pub child_session_id: Option<String>,
    /// The child's run id, when run by a launcher.
    pub child_run_id: Option<String>,
    /// Why the child stopped.
    pub terminal_reason: String,
    /// Requested tool calls by name.
    pub tool_usage: ToolUsage,
    /// Tokens used by the child.
    pub token_usage: u64,
}

/// Run metadata a verification result carries besides the model's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerificationMeta {
    /// The child's session id.
    pub child_session_id: Option<String>,
    /// The child's run id.
    pub child_run_id: Option<String>,
    /// Why the child stopped (`unknown` when empty).
    pub terminal_reason: String,
    /// Requested tool calls by name.
    pub tool_usage: ToolUsage,
    /// Tokens used.
    pub token_usage: u64,
}

impl VerificationResult {
    /// Strict parse of a model's final answer, as the reference does it.
    pub fn from_json(raw: &str, meta: VerificationMeta) -> Result<Self, ContractError> {
        let obj = parse_object(VERIFICATION, raw)?;
        Self::from_object(&obj, meta)
    }

    /// Lenient parse: also accepts a fenced or prose-wrapped answer; returns the repair made.
    pub fn repair(
        raw: &str,
        meta: VerificationMeta,
    ) -> Result<(Self, Option<Repair>), ContractError> {
        let (obj, repair) = repair_object(VERIFICATION, raw)?;
        Ok((Self::from_object(&obj, meta)?, repair))
    }

    /// Validate an already-parsed object.
    pub fn from_object(obj: &Json, meta: VerificationMeta) -> Result<Self, ContractError> {
        let mut violations = Vec::new();
        let (raw_verdict, input) = field_str(obj, "verdict");
        let upper = raw_verdict.to_uppercase();
        let verdict = VerificationVerdict::from_wire(&upper);
        if verdict.is_none() {
            violations.push(Violation {
                loc: vec![LocItem::Key("verdict".into())],
                msg: format!("{} is not a valid VerificationVerdict", py_repr_str(&upper)),
                kind: "verdict_invalid",
                input,
            });
        }
        let reasons = string_list(obj, "reasons", &mut violations);
        let findings = string_list(obj, "findings", &mut violations);
        let evidence = string_list(obj, "evidence", &mut violations);
        match verdict {
            Some(verdict) if violations.is_empty() => Ok(VerificationResult {
                verdict,
                reasons,
                findings,
                evidence,
                child_session_id: meta.child_session_id,
                child_run_id: meta.child_run_id,
                terminal_reason: if meta.terminal_reason.is_empty() {
                    "unknown".into()
                } else {
                    meta.terminal_reason
                },
                tool_usage: meta.tool_usage,
                token_usage: meta.token_usage,
            }),
            _ => Err(ContractError {
                contract: VERIFICATION,
                violations,
            }),
        }
    }

    /// Rebuild from `to_dict()` output.
    pub fn from_dict(obj: &Json) -> Result<Self, ContractError> {
        let mut extra = Vec::new();
        let meta = VerificationMeta {
            child_session_id: dict_opt_str(obj, "child_session_id", &mut extra),
            child_run_id: dict_opt_str(obj, "child_run_id", &mut extra),
            terminal_reason: dict_str(obj, "terminal_reason", UNKNOWN_REASON, &mut extra),
            tool_usage: dict_tool_usage(obj, &mut extra),
            token_usage: dict_uint(obj, "token_usage", &mut extra),
        };
        merge(VERIFICATION, Self::from_object(obj, meta), extra)
    }

    /// The JSON form (`to_dict()`).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// A tool-usage map given by a caller: `{tool name: call count >= 0}`; null means empty.
pub fn tool_usage_from_json(value: &Json, field: &str) -> Result<ToolUsage, crate::Error> {
    let items = match value {
        Json::Null => return Ok(ToolUsage::new()),
        Json::Object(items) => items,
        other => {
            return Err(crate::Error::wrong_type(
                field,
                "a dict of tool name to call count",
                other.type_name(),
            ))
        }
    };
    items
        .iter()
        .map(|(name, count)| {
            let at = format!("{field}[{}]", py_repr_str(name));
            Ok((name.clone(), count_from_json(count, &at)?))
        })
        .collect()
}

/// A count given by a caller: an int >= 0.
fn count_from_json(value: &Json, field: &str) -> Result<u64, crate::Error> {
    match value {
        Json::Int(n) if *n >= 0 => Ok(*n as u64),
        Json::Int(n) => Err(crate::Error::config(
            field,
            format!("must be >= 0, got {n}"),
        )),
        Json::BigInt(digits) => Err(crate::Error::config(
            field,
            format!("is out of range: {digits}"),
        )),
        other => Err(crate::Error::wrong_type(field, "int", other.type_name())),
    }
}

/// The text of a model answer given as bytes, or not at all: no answer is the empty text (as
/// the reference treats it); bytes must be UTF-8, else a contract error says where they break.
pub fn answer_text(raw: Option<&[u8]>, contract: &'static str) -> Result<String, ContractError> {
    let Some(bytes) = raw else {
        return Ok(String::new());
    };
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        let pos = e.utf8_error().valid_up_to();
        ContractError {
            contract,
            violations: vec![Violation {
                loc: vec![],
                msg: format!(
                    "structured child result is not valid UTF-8: invalid byte at offset {pos}"
                ),
                kind: "utf8_invalid",
                input: Json::Str(String::from_utf8_lossy(bytes).into_owned()),
            }],
        }
    })
}

/// A contract's answer as a front end parses it: strictly (`from_json`) or leniently
/// (`repair`), with the run metadata ([`Answer::Meta`]) a caller gives beside the text.
pub trait Answer: crate::args::Record {
    /// The metadata the parsers take: `(tool_usage, terminal_reason)` for an explore answer,
    /// [`VerificationMeta`] for a verdict.
    type Meta: Send;

    /// Parse `text`, leniently (a fenced or prose-wrapped answer, saying how it was repaired)
    /// or strictly, with metadata `meta`.
    fn parse(
        text: &str,
        meta: Self::Meta,
        lenient: bool,
    ) -> Result<(Self, Option<Repair>), crate::Error>;
}

impl crate::args::Record for ExploreResult {
    fn from_record(data: &Json) -> Result<Self, crate::Error> {
        Ok(Self::from_dict(data)?)
    }
}

impl crate::args::Record for VerificationResult {
    fn from_record(data: &Json) -> Result<Self, crate::Error> {
        Ok(Self::from_dict(data)?)
    }
}

impl Answer for ExploreResult {
    type Meta = (ToolUsage, String);

    fn parse(
        text: &str,
        (usage, reason): Self::Meta,
        lenient: bool,
    ) -> Result<(Self, Option<Repair>), crate::Error> {
        Ok(if lenient {
            Self::repair(text, usage, &reason)?
        } else {
            (Self::from_json(text, usage, &reason)?, None)
        })
    }
}

impl Answer for VerificationResult {
    type Meta = VerificationMeta;

    fn parse(
        text: &str,
        meta: Self::Meta,
        lenient: bool,
    ) -> Result<(Self, Option<Repair>), crate::Error> {
        Ok(if lenient {
            Self::repair(text, meta)?
        } else {
            (Self::from_json(text, meta)?, None)
        })
    }
}

impl VerificationMeta {
    /// The metadata a caller gives beside a verification answer, checked: `tool_usage` a
    /// `{name: count}` dict, `token_usage` an int >= 0 (null means 0).
    pub fn from_parts(
        child_session_id: Option<String>,
        child_run_id: Option<String>,
        terminal_reason: &str,
        tool_usage: &Json,
        token_usage: &Json,
    ) -> Result<Self, crate::Error> {
        let token_usage = match token_usage {
            Json::Null => 0,
            count => count_from_json(count, "token_usage")?,
        };
        Ok(VerificationMeta {
            child_session_id,
            child_run_id,
            terminal_reason: terminal_reason.to_string(),
            tool_usage: tool_usage_from_json(tool_usage, "tool_usage")?,
            token_usage,
        })
    }
}

/// Python's repr of a string, cut to 80 characters with an ellipsis.
fn short(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX - 1).collect();
        py_repr_str(&format!("{head}…"))
    } else {
        py_repr_str(s)
    }
}

/// Python's repr of a tuple of (shortened) strings.
fn tuple_repr(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| short(s)).collect();
    match parts.len() {
        0 => "()".into(),
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

fn optional_repr(v: &Option<String>) -> String {
    v.as_deref()
        .map(py_repr_str)
        .unwrap_or_else(|| "None".into())
}

impl fmt::Display for ExploreResult {
    /// The Python repr.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ExploreResult(status='{}', summary={}, findings={}, evidence={}, unresolved_questions={}, tool_usage={}, terminal_reason={})",
            self.status.as_str(),
            short(&self.summary),
            tuple_repr(&self.findings),
            tuple_repr(&self.evidence),
            tuple_repr(&self.unresolved_questions),
            crate::pyjson::py_repr_counts(&self.tool_usage),
            short(&self.terminal_reason)
        )
    }
}

impl fmt::Display for VerificationResult {
    /// The Python repr.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "VerificationResult(verdict='{}', reasons={}, findings={}, evidence={}, child_session_id={}, terminal_reason={}, tool_usage={}, token_usage={})",
            self.verdict.as_str(),
            tuple_repr(&self.reasons),
            tuple_repr(&self.findings),
            tuple_repr(&self.evidence),
            optional_repr(&self.child_session_id),
            short(&self.terminal_reason),
            crate::pyjson::py_repr_counts(&self.tool_usage),
            self.token_usage
        )
    }
}

fn merge<T>(
    contract: &'static str,
    built: Result<T, ContractError>,
    extra: Vec<Violation>,
) -> Result<T, ContractError> {
    match (built, extra.is_empty()) {
        (Ok(v), true) => Ok(v),
        (Ok(_), false) => Err(ContractError {
            contract,
            violations: extra,
        }),
        (Err(mut e), _) => {
            e.violations.extend(extra);
            Err(e)
        }
    }
}

fn dict_tool_usage(obj: &Json, out: &mut Vec<Violation>) -> ToolUsage {
    let mut usage = ToolUsage::new();
    match obj.get("tool_usage") {
        None | Some(Json::Null) => {}
        Some(Json::Object(items)) => {
            for (name, count) in items {
                match count {
                    Json::Int(n) if *n >= 0 => {
                        usage.insert(name.clone(), *n as u64);
                    }
                    other => out.push(Violation {
                        loc: vec![
                            LocItem::Key("tool_usage".into()),
                            LocItem::Key(name.clone()),
                        ],
                        msg: "tool_usage counts must be non-negative integers".into(),
                        kind: "int_type",
                        input: other.clone(),
                    }),
                }
            }
        }
        Some(other) => out.push(Violation {
            loc: vec![LocItem::Key("tool_usage".into())],
            msg: "tool_usage must be a mapping of tool name to count".into(),
            kind: "dict_type",
            input: other.clone(),
        }),
    }
    usage
}

/// `evidence_sources` of a `to_dict()` output: a list of [`EVIDENCE_SOURCES`] values.
fn dict_sources(obj: &Json, out: &mut Vec<Violation>) -> Vec<String> {
    let mut sources = Vec::new();
    match obj.get("evidence_sources") {
        None | Some(Json::Null) => {}
        Some(Json::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Json::Str(s) if EVIDENCE_SOURCES.contains(&s.as_str()) => {
                        sources.push(s.clone());
                    }
                    other => out.push(Violation {
                        loc: vec![LocItem::Key("evidence_sources".into()), LocItem::Index(i)],
                        msg: format!(
                            "evidence_sources items must be one of {}",
                            EVIDENCE_SOURCES.join(", ")
                        ),
                        kind: "enum",
                        input: other.clone(),
                    }),
                }
            }
        }
        Some(other) => out.push(Violation {
            loc: vec![LocItem::Key("evidence_sources".into())],
            msg: "evidence_sources must be a list of strings".into(),
            kind: "list_type",
            input: other.clone(),
        }),
    }
    sources
}

fn dict_str(obj: &Json, key: &str, default: &str, out: &mut Vec<Violation>) -> String {
    match obj.get(key) {
        None | Some(Json::Null) => default.to_string(),
        Some(Json::Str(s)) => s.clone(),
        Some(other) => {
            out.push(Violation {
                loc: vec![LocItem::Key(key.into())],
                msg: format!("{key} must be a string"),
                kind: "string_type",
                input: other.clone(),
            });
            default.to_string()
        }
    }
}

fn dict_opt_str(obj: &Json, key: &str, out: &mut Vec<Violation>) -> Option<String> {
    match obj.get(key) {
        None | Some(Json::Null) => None,
        Some(_) => Some(dict_str(obj, key, "", out)),
    }
}

fn dict_uint(obj: &Json, key: &str, out: &mut Vec<Violation>) -> u64 {
    match obj.get(key) {
        None | Some(Json::Null) => 0,
        Some(Json::Int(n)) if *n >= 0 => *n as u64,
        Some(other) => {
            out.push(Violation {
                loc: vec![LocItem::Key(key.into())],
                msg: format!("{key} must be a non-negative integer"),
                kind: "int_type",
                input: other.clone(),
            });
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_parsed_strictly_or_repaired_with_its_metadata() {
        let fenced = "```json\n{\"status\": \"completed\", \"summary\": \"s\"}\n```";
        let meta = || (ToolUsage::default(), "done".to_string());
        assert!(ExploreResult::parse(fenced, meta(), false).is_err());
        let (r, repair) = ExploreResult::parse(fenced, meta(), true).unwrap();
        assert_eq!(
            (r.terminal_reason.as_str(), repair),
            ("done", Some(Repair::Fence))
        );
        let meta = VerificationMeta::from_parts(None, None, "", &Json::Null, &Json::Int(7));
        let (v, repair) =
            VerificationResult::parse("{\"verdict\": \"PASS\"}", meta.unwrap(), false).unwrap();
        assert_eq!((v.token_usage, repair), (7, None));
        let bad = VerificationMeta::from_parts(None, None, "", &Json::Null, &Json::Int(-1));
        assert!(bad.is_err(), "token_usage is an int >= 0");
    }

    #[test]
    fn an_answer_given_as_bytes_or_not_at_all() {
        assert_eq!(answer_text(None, EXPLORE).unwrap(), "");
        assert_eq!(answer_text(Some("ü".as_bytes()), EXPLORE).unwrap(), "ü");
        let err = answer_text(Some(b"ok\xff"), EXPLORE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "structured child result is not valid UTF-8: invalid byte at offset 2"
        );
        assert_eq!(err.violations[0].kind, "utf8_invalid");
    }

    fn explore(raw: &str) -> Result<ExploreResult, ContractError> {
        ExploreResult::from_json(raw, ToolUsage::new(), "completed")
    }

    fn msg(raw: &str) -> String {
        explore(raw).unwrap_err().to_string()
    }

    #[test]
    fn accepts_reference_shape() {
        let r = explore(
            "  {\"status\":\"COMPLETED\",\"summary\":\"  s  \",\"findings\":[\"a\",\"  \",\" b \"],\"evidence\":null,\"x\":1}\n",
        )
        .unwrap();
        assert_eq!(r.status, SubagentStatus::Completed);
        assert_eq!(r.summary, "s");
        assert_eq!(r.findings, vec!["a".to_string(), " b ".to_string()]);
        assert!(r.evidence.is_empty());
        assert_eq!(r.terminal_reason, "completed");
    }

    #[test]
    fn reference_messages() {
        assert_eq!(
            msg("```json\n{}\n```"),
            "structured child result must not use markdown fences"
        );
        assert_eq!(msg(""), "Expecting value: line 1 column 1 (char 0)");
        assert_eq!(msg("[1]"), "structured child result must be an object");
        assert_eq!(
            msg("{\"summary\":\"s\"}"),
            "status is missing; expected 'completed' or 'partial'"
        );
        assert_eq!(
            msg("{\"status\":\"Done\",\"summary\":\"s\"}"),
            "'done' is not a valid SubagentStatus"
        );
        assert_eq!(
            msg("{\"status\":\"failed\",\"summary\":\"s\"}"),
            "ExploreResult status must be completed or partial"
        );
        assert_eq!(
            msg("{\"status\":\"partial\",\"summary\":\"  \"}"),
            "ExploreResult requires summary"
        );
        assert_eq!(
            msg("{\"status\":\"partial\",\"summary\":\"s\",\"findings\":[1]}"),
            "result list fields must be string arrays"
        );
        assert_eq!(
            msg("{\"status\":null,\"summary\":\"s\"}"),
            "'none' is not a valid SubagentStatus"
        );
        assert_eq!(
            msg("{\"status\":\"partial\",\"summary\":\"s\"} x"),
            "Extra data: line 1 column 36 (char 35)"
        );
    }

    #[test]
    fn all_violations_are_listed() {
        let e = explore("{\"status\":\"nope\",\"findings\":\"x\",\"evidence\":[\"ok\",2]}")
            .unwrap_err();
        let kinds: Vec<_> = e.violations.iter().map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            vec![
                "status_invalid",
                "summary_missing",
                "string_array",
                "string_array"
            ]
        );
        assert_eq!(
            e.violations[3].loc,
            vec![LocItem::Key("evidence".into()), LocItem::Index(1)]
        );
    }

    #[test]
    fn verification_verdicts() {
        for v in ["pass", "FAIL", "Partial", "unverified"] {
            let raw = format!("{{\"verdict\":\"{v}\"}}");
            let r = VerificationResult::from_json(&raw, VerificationMeta::default()).unwrap();
            assert_eq!(r.verdict.as_str(), v.to_uppercase());
            assert_eq!(r.terminal_reason, "unknown");
        }
        let e =
            VerificationResult::from_json("{\"verdict\":\"bogus\"}", VerificationMeta::default())
                .unwrap_err();
        assert_eq!(e.to_string(), "'BOGUS' is not a valid VerificationVerdict");
    }

    #[test]
    fn repair_reports_what_it_did() {
        let ok = "{\"status\":\"completed\",\"summary\":\"s\"}";
        let (_, r) = ExploreResult::repair(ok, ToolUsage::new(), "x").unwrap();
        assert_eq!(r, None);
        let fenced = format!("```json\n{ok}\n```");
        let (_, r) = ExploreResult::repair(&fenced, ToolUsage::new(), "x").unwrap();
        assert_eq!(r, Some(Repair::Fence));
        let prose = format!("Here you go: {ok} Hope it helps {{not json}}");
        let (res, r) = ExploreResult::repair(&prose, ToolUsage::new(), "x").unwrap();
        assert_eq!((res.summary.as_str(), r), ("s", Some(Repair::Extract)));
        let two = format!("{ok} and {ok}");
        assert_eq!(
            ExploreResult::repair(&two, ToolUsage::new(), "x")
                .unwrap_err()
                .violations[0]
                .kind,
            "ambiguous"
        );
        assert_eq!(
            ExploreResult::repair("no json", ToolUsage::new(), "x")
                .unwrap_err()
                .violations[0]
                .kind,
            "json_invalid"
        );
        let bad = "Result: {\"status\":\"done\",\"summary\":\"s\"}";
        assert_eq!(
            ExploreResult::repair(bad, ToolUsage::new(), "x")
                .unwrap_err()
                .violations[0]
                .kind,
            "status_invalid"
        );
    }

    #[test]
    fn two_fenced_objects_are_as_ambiguous_as_two_bare_ones() {
        // A retracted `completed` draft must not beat the final `partial` answer by coming first.
        let draft = "{\"status\":\"completed\",\"summary\":\"done\"}";
        let last = "{\"status\":\"partial\",\"summary\":\"not sure\"}";
        let kind = |text: &str| {
            ExploreResult::repair(text, ToolUsage::new(), "x")
                .unwrap_err()
                .violations[0]
                .kind
        };
        let two = format!("Draft:\n```json\n{draft}\n```\nNo, wait:\n```json\n{last}\n```");
        assert_eq!(kind(&two), "ambiguous");
        let msg = ExploreResult::repair(&two, ToolUsage::new(), "x")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("found 2 JSON objects in the answer; expected exactly one"));
        // A bare draft beside a fenced answer, either way round.
        assert_eq!(kind(&format!("{draft}\n```json\n{last}\n```")), "ambiguous");
        assert_eq!(
            kind(&format!("```json\n{draft}\n```\nactually {last}")),
            "ambiguous"
        );
        // One fenced object, with prose and an empty `{}` outside: taken.
        let one = format!("The config is `{{}}`.\n```json\n{last}\n```");
        let (r, repair) = ExploreResult::repair(&one, ToolUsage::new(), "x").unwrap();
        assert_eq!(
            (r.status, repair),
            (SubagentStatus::Partial, Some(Repair::Fence))
        );
    }

    #[test]
    fn repair_of_a_megabyte_of_braces_gives_up_in_linear_time() {
        // Each unclosed `{` used to start a scan to the end: 1 MiB of them ran for minutes.
        let ok = "{\"status\":\"completed\",\"summary\":\"s\"}";
        // The work is counted, not timed (a time limit failed on a loaded machine; bench/
        // measures the time): the bytes the scans look at stay within a linear budget, and
        // doubling the braces at most doubles them. A quadratic scan of 8192 braces looks at
        // 33 million bytes, far past the budget's 1.1 million.
        let work = |n: usize| embedded_objects_counted(&format!("{}{ok}", "{".repeat(n))).1;
        let (n, w1, w2) = (1 << 13, work(1 << 13), work(1 << 14));
        let bound = |len: usize| (EMBEDDED_SCAN_FACTOR + 1) * len + EMBEDDED_SCAN_FLOOR;
        assert!(
            w1 <= bound(n + ok.len()),
            "{w1} bytes scanned for {n} braces"
        );
        assert!(
            w2 <= 2 * w1,
            "{w2} bytes scanned for {} braces, {w1} for {n}",
            2 * n
        );
        let braces = format!("{}{ok}", "{".repeat(1 << 20));
        assert!(embedded_objects_counted(&braces).1 <= bound(braces.len()));
        let err = ExploreResult::repair(&braces, ToolUsage::new(), "x").unwrap_err();
        assert_eq!(err.violations[0].kind, "json_invalid");
        // Braces that close, as in prose quoting code, stay within the budget.
        let prose = format!("{} and then {ok}", "if (a) { b(); } ".repeat(100_000));
        let (res, r) = ExploreResult::repair(&prose, ToolUsage::new(), "x").unwrap();
        assert_eq!((res.summary.as_str(), r), ("s", Some(Repair::Extract)));
    }

    #[test]
    fn round_trips_through_dict() {
        let r = explore("{\"status\":\"partial\",\"summary\":\"s\",\"evidence\":[\"a.py:1\"]}")
            .unwrap();
        let back = ExploreResult::from_dict(&Json::from_value(&r.to_value())).unwrap();
        assert_eq!(back, r);
    }
}

#[cfg(test)]
mod quote_repair_tests {
    use super::*;

    /// What a 1.5B model wrote (asked where static files are served).
    const STRAY: &str = "```json\n{\n  \"status\": \"completed\",\n  \"summary\": \"Served by `Static`.\",\n  \"findings\": [\"routergroup.go:196-203\"],\n  \"evidence\": [\n    \"routergroup.go:196-203: router.Static(\"/static\", \"/var/www\")\"\n  ],\n  \"unresolved_questions\": []\n}\n```";

    #[test]
    fn quotes_inside_a_string_that_do_not_end_it_are_kept_in_it() {
        let (v, repair) = repair_object("ExploreResult", STRAY).unwrap();
        assert_eq!(repair, Some(Repair::Quotes));
        assert_eq!(
            v.to_value()["evidence"][0],
            serde_json::json!("routergroup.go:196-203: router.Static(\"/static\", \"/var/www\")")
        );
        // Well-formed JSON is never touched, and text without a stray quote is not "repaired".
        assert_eq!(escape_stray_quotes(r#"{"a": "b \"c\"", "d": ["e"]}"#), None);
        assert_eq!(
            escape_stray_quotes(r#"{"a": "say "hi" now"}"#).as_deref(),
            Some(r#"{"a": "say \"hi\" now"}"#)
        );
    }

    #[test]
    fn a_comma_before_a_closing_bracket_is_dropped_and_named() {
        // What a 1.5B model wrote: a list ended with a comma, twice in a row.
        let trailing = "```json\n{\n  \"status\": \"completed\",\n  \"summary\": \"s\",\n  \"findings\": [\n    \"config.go:1213-1244: find, ] here\",\n    \"flags.go:12-19\",\n  ],\n  \"evidence\": [\"config.go:1213-1244\"],\n}\n```";
        let (v, repair) = repair_object("ExploreResult", trailing).unwrap();
        assert_eq!(repair, Some(Repair::Commas));
        assert_eq!(
            v.to_value()["findings"],
            serde_json::json!(["config.go:1213-1244: find, ] here", "flags.go:12-19"])
        );
        // With stray quotes too; commas inside strings are kept; valid JSON is never touched.
        let both = r#"{"status": "completed", "summary": "s", "evidence": ["a.go:3: Static("/x", "/y")",]}"#;
        let (v, repair) = repair_object("ExploreResult", both).unwrap();
        assert_eq!(repair, Some(Repair::Commas));
        assert_eq!(
            v.to_value()["evidence"][0],
            serde_json::json!("a.go:3: Static(\"/x\", \"/y\")")
        );
        assert_eq!(mend_structure(r#"{"a": "b,]", "c": [1, 2]}"#), None);
        assert_eq!(
            mend_structure("[1, 2 , ]").map(|(t, _)| t).as_deref(),
            Some("[1, 2  ]")
        );
    }

    #[test]
    fn a_list_left_open_before_the_next_key_is_closed_and_named() {
        // What a 1.5B model wrote (a Go router's sub-router path): the findings list not closed.
        let open = "```json\n{\n  \"status\": \"completed\",\n  \"summary\": \"s\",\n  \"findings\": [\"The `Mount` function: a, b: c.\",\n  \"evidence\": [\"mux.go:318-327\"],\n  \"unresolved_questions\": []\n}\n```";
        let (v, repair) = repair_object("ExploreResult", open).unwrap();
        assert_eq!(repair, Some(Repair::Brackets));
        let v = v.to_value();
        assert_eq!(
            v["findings"],
            serde_json::json!(["The `Mount` function: a, b: c."])
        );
        assert_eq!(v["evidence"], serde_json::json!(["mux.go:318-327"]));
        // Without a comma before the key, and a list still open at the closing brace.
        let (v, repair) = repair_object(
            "ExploreResult",
            r#"{"status": "partial", "summary": "s", "findings": ["a" "evidence": ["b.go:1"}"#,
        )
        .unwrap();
        assert_eq!(repair, Some(Repair::Brackets));
        assert_eq!(v.to_value()["evidence"], serde_json::json!(["b.go:1"]));
        // A list of objects is not a list left open; keys inside strings are text.
        assert_eq!(
            mend_structure(r#"{"a": [{"b": 1}, {"c": ["d: e"]}]}"#),
            None
        );
        // Text around characters wider than a byte is walked by character.
        assert_eq!(
            mend_structure("{\"é\": [\"÷\" é, }").map(|(_, m)| m),
            Some(Mended {
                commas: true,
                brackets: true
            })
        );
        // A top-level list is never closed early, and an answer cut off stays cut off.
        assert_eq!(mend_structure(r#"["a", "b": 1]"#), None);
        assert!(repair_object(
            "ExploreResult",
            r#"{"status": "partial", "summary": "s", "findings": ["a""#
        )
        .is_err());
    }

    #[test]
    fn a_fenced_answer_that_does_not_parse_says_why_not_that_fences_are_refused() {
        let broken = "```json\n{\"status\": \"completed\", \"summary\": \"s\",, }\n```";
        let err = repair_object("ExploreResult", broken).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("the JSON in the answer's code fence does not parse: "),
            "{msg}"
        );
        assert_eq!(err.violations[0].kind, "json_invalid");
    }
}
