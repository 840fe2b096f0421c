//! Reading a final answer: the one JSON object of the profile's contract or the caller's
//! `output_schema` (with the contract's repairs and a small model's slips mended), its evidence
//! items cut to their citations; a caller's validator run on a thread of its own, bounded by the
//! run's deadline. The completion gate (`gate`) judges what this reads.

use std::time::Instant;

use crate::contract::{
    repair_object, ContractError, ExploreResult, Repair, ToolUsage, VerificationMeta,
    VerificationResult,
};
use crate::profile::{ResultContract, RuntimeProfile};
use crate::pyjson::Json;
use crate::runner::outcome::ParsedResult;
use crate::runner::provenance::{self, Sourced};
use crate::schema::OutputSchema;

/// Why a final answer was not taken as parsed.
pub(crate) enum Unparsed {
    /// It does not meet the contract (no JSON object, or the contract's own rules).
    Contract(ContractError),
    /// Its object does not fit the caller's `output_schema`: the object as written (partial,
    /// its violations listed) and its repair.
    Misfit(ParsedResult, Option<Repair>),
    /// The caller's validator did not finish before the deadline: the object as written, its
    /// repair, and why.
    TimedOut(ParsedResult, Option<Repair>, String),
}

/// The final answer parsed by the profile's `output_schema` or contract (with repair), or free
/// text without one. An evidence item written with a note after its citation (`src/a.py:14
/// class A`, as a hint or Grep line reads) is cut to the citation: the note is the model's,
/// the check is on the lines; an item holding several citations (`a.ts:15-22, b.ts:3-8`)
/// becomes one item each.
/// A caller's validator runs on a thread of its own and is waited for until `validate_by`.
pub(crate) async fn parse_answer(
    profile: &RuntimeProfile,
    text: &str,
    validate_by: Instant,
) -> Result<(ParsedResult, Option<Repair>), Unparsed> {
    if let Some(schema) = &profile.output_schema {
        return parse_custom(schema, text, validate_by).await;
    }
    let mut parsed = parse_contract(profile, text).map_err(Unparsed::Contract)?;
    if matches!(parsed.0, ParsedResult::Text(_) | ParsedResult::Custom(_)) {
        return Ok(parsed);
    }
    provenance::from_model(&mut parsed.0);
    provenance::rewrite(&mut parsed.0, "answer: citations", |items| {
        *items = std::mem::take(items)
            .into_iter()
            .flat_map(|s| {
                citations(&s.item)
                    .into_iter()
                    .map(move |c| Sourced::new(c, &s.source))
            })
            .collect();
    });
    Ok(parsed)
}

/// The citations of one evidence item as written: several in one item (`a.ts:15-22, b.ts:3-8`)
/// one each; a citation with a note after it, the citation; anything else as written.
fn citations(item: &str) -> Vec<String> {
    let parts: Vec<&str> = item.split([',', ';']).map(str::trim).collect();
    if parts.len() > 1
        && parts
            .iter()
            .all(|p| crate::evidence::parse_citation(p).is_some())
    {
        return parts.into_iter().map(str::to_string).collect();
    }
    vec![crate::evidence::citation_of_noted(item).unwrap_or_else(|| item.to_string())]
}

/// The answer parsed by the profile's contract, as written.
fn parse_contract(
    profile: &RuntimeProfile,
    text: &str,
) -> Result<(ParsedResult, Option<Repair>), ContractError> {
    match profile.result_contract {
        None => Ok((ParsedResult::Text(text.to_string()), None)),
        Some(ResultContract::Explore) => {
            match ExploreResult::repair(text, ToolUsage::new(), "completed") {
                Ok((r, rep)) => Ok((ParsedResult::Explore(r), rep)),
                Err(e) => leniently(text, &e).ok_or(e),
            }
        }
        Some(ResultContract::Verification) => {
            VerificationResult::repair(text, VerificationMeta::default())
                .map(|(r, rep)| (ParsedResult::Verification(r), rep))
        }
    }
}

/// An answer checked against a caller's schema: the one JSON object (with the same repairs as a
/// contract's), its secrets redacted before any validator sees it, then the schema and
/// outrider's fields (see [`OutputSchema::check`]), on a thread of its own that is waited for
/// until `validate_by` (a caller's validator may be slow, or never return: it is then left to
/// finish on its own).
async fn parse_custom(
    schema: &OutputSchema,
    text: &str,
    validate_by: Instant,
) -> Result<(ParsedResult, Option<Repair>), Unparsed> {
    const WHAT: &str = crate::schema::UNTITLED;
    let (object, repair) = repair_object(WHAT, text).map_err(Unparsed::Contract)?;
    let serde_json::Value::Object(mut map) = object.to_value() else {
        return Err(Unparsed::Contract(ContractError::single(
            WHAT,
            "structured child result must be an object",
            "object_type",
            object,
        )));
    };
    crate::redact::redact_map_strings(&mut map);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (checker, answer) = (schema.clone(), map.clone());
    let spawned = std::thread::Builder::new()
        .name("outrider-validate".into())
        .spawn(move || {
            let _ = tx.send(checker.check_until(&answer, Some(validate_by)));
        });
    let checked = match spawned {
        Ok(_) => tokio::time::timeout_at(validate_by.into(), rx).await,
        Err(e) => {
            let why = format!("the answer could not be checked against {}: no thread to run its validator on ({e})", schema.name());
            return Err(Unparsed::TimedOut(
                ParsedResult::Custom(schema.unchecked(&map, &why)),
                repair,
                why,
            ));
        }
    };
    match checked {
        Ok(Ok(checked)) if checked.fits() => Ok((ParsedResult::Custom(checked), repair)),
        Ok(Ok(checked)) => Err(Unparsed::Misfit(ParsedResult::Custom(checked), repair)),
        Ok(Err(_)) => {
            // The checking thread ended without an answer: a validator that panicked.
            let why = format!(
                "checking the answer against {} stopped without a verdict (its validator panicked)",
                crate::pyjson::py_repr_str(schema.name())
            );
            let mut raw = schema.unchecked(&map, &why);
            raw.notes.push(format!("outrider: {why}"));
            Err(Unparsed::Misfit(ParsedResult::Custom(raw), repair))
        }
        Err(_) => {
            let why = format!(
                "checking the answer against {} did not finish within the run's time limit: its validator is slow or never returns (it is left to finish on its own thread)",
                crate::pyjson::py_repr_str(schema.name())
            );
            tracing::warn!(schema = %schema.name(), "an output_schema validator ran past the run's time limit");
            Err(Unparsed::TimedOut(
                ParsedResult::Custom(schema.unchecked(&map, &why)),
                repair,
                why,
            ))
        }
    }
}

/// An explore answer that meets the contract but for a small model's slips: a missing
/// `status` (it then stands as `partial`, never `completed`, saying so in its open questions),
/// one string where a list belongs, list items written as objects or numbers instead of strings (a finding as `{"line": 5,
/// "text": "..."}` is kept as `line: 5, text: ...`; an evidence item as `{"path": "a.py",
/// "line": 5}` as `a.py:5`, checked like any other). None when anything else is wrong.
fn leniently(text: &str, e: &ContractError) -> Option<(ParsedResult, Option<Repair>)> {
    if e.violations.is_empty() {
        return None;
    }
    let (Json::Object(mut items), repair) =
        crate::contract::repair_object("ExploreResult", text).ok()?
    else {
        return None;
    };
    // Judged by the violations' kinds and the answer itself, never by a message's wording.
    let no_status = !items.iter().any(|(k, _)| k == "status");
    let fixable = |v: &crate::error::Violation| {
        v.kind == "string_array" || (v.kind == "status_invalid" && no_status)
    };
    if !e.violations.iter().all(fixable) {
        return None;
    }
    for (key, value) in &mut items {
        // One string where a list belongs: a list of that one string.
        if matches!(
            key.as_str(),
            "findings" | "unresolved_questions" | "evidence"
        ) {
            if let Json::Str(one) = value {
                *value = Json::Array(vec![Json::Str(std::mem::take(one))]);
            }
        }
        match (key.as_str(), value) {
            ("findings" | "unresolved_questions", Json::Array(list)) => {
                for item in list.iter_mut() {
                    if !matches!(item, Json::Str(_)) {
                        *item = Json::Str(flat_text(item));
                    }
                }
            }
            ("evidence", Json::Array(list)) => {
                for item in list.iter_mut() {
                    if let Some(cite) = citation_object(item) {
                        *item = Json::Str(cite);
                    }
                }
            }
            _ => {}
        }
    }
    if no_status {
        items.push(("status".into(), Json::Str("partial".into())));
    }
    let object = Json::Object(items);
    let mut r = ExploreResult::from_object(&object, ToolUsage::new(), "completed").ok()?;
    if no_status {
        r.unresolved_questions
            .push("outrider: the answer gave no status, so it stands as partial".into());
    }
    Some((ParsedResult::Explore(r), repair))
}

/// A JSON value as one line of text: a string as is, an object as `key: value, ...`, an array
/// as its items joined by `; `.
fn flat_text(v: &Json) -> String {
    match v {
        Json::Str(s) => s.clone(),
        Json::Null => String::new(),
        Json::Bool(b) => b.to_string(),
        Json::Int(n) => n.to_string(),
        Json::Float(f) => f.to_string(),
        Json::BigInt(n) => n.clone(),
        Json::Array(items) => items.iter().map(flat_text).collect::<Vec<_>>().join("; "),
        Json::Object(items) => items
            .iter()
            .map(|(k, v)| format!("{k}: {}", flat_text(v)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `{"path"|"file": "a.py", "line"|"start_line": 5[, "end_line": 9]}` as `a.py:5[-9]`.
fn citation_object(v: &Json) -> Option<String> {
    let path = match v.get("path").or_else(|| v.get("file"))? {
        Json::Str(p) => p.clone(),
        _ => return None,
    };
    let line = |k: &str| match v.get(k) {
        Some(Json::Int(n)) if *n > 0 => Some(*n),
        _ => None,
    };
    let start = line("line").or_else(|| line("start_line"))?;
    Some(match line("end_line") {
        Some(end) if end != start => format!("{path}:{start}-{end}"),
        _ => format!("{path}:{start}"),
    })
}

/// Whether `text` is one of the answer template's placeholders (a weak model copies them).
pub(crate) fn is_template_text(text: &str) -> bool {
    [
        "<the answer, one paragraph>",
        "<one fact each>",
        "one paragraph that answers the task",
        "one fact per item",
        "what you could not settle",
    ]
    .contains(&text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_round_trip_through_text_and_serde() {
        for repair in [
            Repair::Fence,
            Repair::Extract,
            Repair::Quotes,
            Repair::Commas,
            Repair::Brackets,
        ] {
            let text = repair.to_string();
            assert_eq!(text.parse::<Repair>(), Ok(repair));
            assert_eq!(
                serde_json::to_value(repair).unwrap(),
                serde_json::json!(text)
            );
        }
        assert_eq!(
            "fix".parse::<Repair>().unwrap_err().to_string(),
            "'fix' is not a repair; expected fence, extract, quotes, commas or brackets"
        );
    }
}
