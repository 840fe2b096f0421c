//! Where each evidence item came from: every change to an answer's evidence list, by the
//! answer's reading, the gate or an assist, goes through [`rewrite`], which keeps an explore
//! answer's `evidence_sources` in step with its items and logs (at TRACE, counts only) who
//! changed it.
//!
//! An item keeps the source it had; an item a rewrite adds gets the source the rewrite gives it
//! (`model`, `index`, `both` or `seen`, see [`crate::contract::EVIDENCE_SOURCES`]).

use crate::contract::ExploreResult;
use crate::runner::outcome::ParsedResult;

/// One evidence item and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced {
    pub(crate) item: String,
    pub(crate) source: String,
}

impl Sourced {
    /// `item`, from `source`.
    pub(crate) fn new(item: impl Into<String>, source: &str) -> Self {
        Self {
            item: item.into(),
            source: source.to_string(),
        }
    }
}

/// Give every item of a freshly read explore answer the source `model` (what the model wrote
/// about sources, if anything, is not its to say).
pub(crate) fn from_model(result: &mut ParsedResult) {
    if let ParsedResult::Explore(r) = result {
        r.evidence_sources = vec!["model".to_string(); r.evidence.len()];
    }
}

/// Change `result`'s evidence with `change` on behalf of `by` (who changes it, for the log):
/// `change` gets the items with their sources and leaves the items that stand. An answer
/// without sources (a verification or a caller's schema) has `model` for each item.
pub(crate) fn rewrite(result: &mut ParsedResult, by: &str, change: impl FnOnce(&mut Vec<Sourced>)) {
    match result {
        ParsedResult::Explore(r) => rewrite_explore(r, by, change),
        ParsedResult::Verification(v) => rewrite_list(&mut v.evidence, None, by, change),
        ParsedResult::Custom(c) => rewrite_list(&mut c.evidence, None, by, change),
        ParsedResult::Text(_) => {}
    }
}

/// [`rewrite`] of an explore answer.
pub(crate) fn rewrite_explore(
    r: &mut ExploreResult,
    by: &str,
    change: impl FnOnce(&mut Vec<Sourced>),
) {
    rewrite_list(&mut r.evidence, Some(&mut r.evidence_sources), by, change);
}

/// The one place an evidence list changes.
fn rewrite_list(
    evidence: &mut Vec<String>,
    sources: Option<&mut Vec<String>>,
    by: &str,
    change: impl FnOnce(&mut Vec<Sourced>),
) {
    let known = sources.as_deref().filter(|s| s.len() == evidence.len());
    let mut items: Vec<Sourced> = evidence
        .iter()
        .enumerate()
        .map(|(i, e)| Sourced::new(e.clone(), known.map_or("model", |s| s[i].as_str())))
        .collect();
    let before = items.clone();
    change(&mut items);
    if items != before {
        // Counts only: an item's text is a path, which may name a secret file.
        let kept = items.iter().filter(|s| before.contains(s)).count();
        tracing::trace!(
            by,
            before = before.len(),
            kept,
            after = items.len(),
            "evidence rewritten"
        );
    }
    *evidence = items.iter().map(|s| s.item.clone()).collect();
    if let Some(sources) = sources {
        *sources = items.into_iter().map(|s| s.source).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(evidence: &[&str]) -> ParsedResult {
        let mut r = ExploreResult::empty();
        r.evidence = evidence.iter().map(|e| e.to_string()).collect();
        let mut p = ParsedResult::Explore(r);
        from_model(&mut p);
        p
    }

    #[test]
    fn items_keep_their_source_and_added_ones_get_the_rewriters() {
        let mut p = answer(&["a.py:1", "b.py:2"]);
        rewrite(&mut p, "test", |items| {
            items.retain(|s| s.item != "a.py:1");
            items.push(Sourced::new("c.py:3", "index"));
        });
        let ParsedResult::Explore(r) = p else {
            unreachable!()
        };
        assert_eq!(r.evidence, ["b.py:2", "c.py:3"]);
        assert_eq!(r.evidence_sources, ["model", "index"]);
    }
}
