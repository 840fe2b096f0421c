//! The scout's final answer. Every sentence it writes is about what its tools returned: a
//! definition it saw, a line it quotes, a count from a search that finished. A search that
//! stopped at its limit is said to have stopped, never to have found "nothing more".

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::query::{Keyword, Query};
use super::rank::Candidate;
use super::search::{Purpose, ReadWindow, SearchResult, CODE_GLOB};

/// One search, as the answer reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SearchFacts {
    /// What it was for.
    pub(crate) purpose: Purpose,
    /// Its pattern.
    pub(crate) pattern: String,
    /// Whether it was limited to source files.
    pub(crate) source_only: bool,
    /// Lines (or paths) returned.
    pub(crate) returned: usize,
    /// Distinct files among them.
    pub(crate) files: usize,
    /// It stopped at its limit.
    pub(crate) truncated: bool,
    /// It failed, or its result was cut to fit the context.
    pub(crate) failed: bool,
}

impl SearchFacts {
    /// Facts of one result.
    pub(crate) fn of(r: &SearchResult) -> Self {
        let mut files: Vec<&str> = r
            .lines
            .iter()
            .map(|h| h.file.as_str())
            .chain(r.paths.iter().map(String::as_str))
            .collect();
        files.sort_unstable();
        files.dedup();
        SearchFacts {
            purpose: r.purpose,
            pattern: r.pattern.clone(),
            source_only: r.glob.as_deref() == Some(CODE_GLOB),
            returned: r.lines.len() + r.paths.len(),
            files: files.len(),
            truncated: r.truncated,
            failed: r.failed,
        }
    }
}

/// What the scout carries from its search turn to its answer (in its own message, so a
/// compacted history loses nothing).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Notes {
    /// The candidates it cites, best first.
    pub(crate) picks: Vec<Candidate>,
    /// The searches it ran.
    pub(crate) searches: Vec<SearchFacts>,
}

/// The prefix of the scout's notes message.
pub(crate) const NOTES_PREFIX: &str = "scout notes: ";

/// The last line of a definition's block within what was read, if its end was seen: the
/// indentation rule for Python, braces (or a `;` before any brace) otherwise.
pub(crate) fn block_end(window: &[(u64, String)], start: u64, python: bool) -> Option<u64> {
    let idx = window.iter().position(|(n, _)| *n == start)?;
    if python {
        let indent = |s: &str| s.len() - s.trim_start().len();
        let base = indent(&window[idx].1);
        let mut last = start;
        let mut open = 0i64;
        for (n, text) in &window[idx..] {
            let t = text.trim();
            if *n > start
                && !t.is_empty()
                && open <= 0
                && indent(text) <= base
                && !t.starts_with([')', ']', '}'])
            {
                return Some(last);
            }
            open += text.matches(['(', '[', '{']).count() as i64
                - text.matches([')', ']', '}']).count() as i64;
            if !t.is_empty() {
                last = *n;
            }
        }
        return None;
    }
    let mut depth = 0i64;
    let mut opened = false;
    for (n, text) in &window[idx..] {
        let code = text.split("//").next().unwrap_or(text);
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some(*n);
        }
        if !opened && code.trim_end().ends_with(';') {
            return Some(*n);
        }
    }
    None
}

fn is_python(path: &str) -> bool {
    // The text after the last dot, case-sensitive: `x.py` and `x.pyi` (not `x.PY`).
    path.rsplit_once('.')
        .is_some_and(|(_, ext)| ext == "py" || ext == "pyi")
}

/// A cited place: `file:start-end`, and whether its lines were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cite {
    /// Path.
    pub(crate) file: String,
    /// First line.
    pub(crate) start: u64,
    /// Last line.
    pub(crate) end: u64,
    /// The text of those lines, when read.
    pub(crate) lines: Option<Vec<String>>,
}

impl Cite {
    /// `file:start` or `file:start-end`.
    pub(crate) fn evidence(&self) -> String {
        if self.end > self.start {
            format!("{}:{}-{}", self.file, self.start, self.end)
        } else {
            format!("{}:{}", self.file, self.start)
        }
    }
}

/// Where to cite a candidate, from what was read of it.
pub(crate) fn cite(c: &Candidate, reads: &[ReadWindow]) -> Cite {
    let window = reads
        .iter()
        .find(|w| w.file == c.file && w.lines.iter().any(|(n, _)| *n == c.line));
    let Some(w) = window else {
        return Cite {
            file: c.file.clone(),
            start: c.line,
            end: c.line,
            lines: None,
        };
    };
    // A file found by name: cite its first definition, if the read saw one.
    let start = if c.def.is_none() && c.text.is_empty() {
        w.lines
            .iter()
            .find(|(_, t)| super::search::definition_in(&c.file, t).is_some())
            .map(|(n, _)| *n)
            .unwrap_or(c.line)
    } else {
        c.line
    };
    let last_read = w.lines.last().map(|(n, _)| *n).unwrap_or(start);
    let end = if c.def.is_some() || start != c.line {
        block_end(&w.lines, start, is_python(&c.file)).unwrap_or(last_read)
    } else if c.text.is_empty() {
        last_read.min(start + 19)
    } else {
        start
    };
    let lines = w
        .lines
        .iter()
        .filter(|(n, _)| *n >= start && *n <= end)
        .map(|(_, t)| t.clone())
        .collect();
    Cite {
        file: c.file.clone(),
        start,
        end,
        lines: Some(lines),
    }
}

/// Cite each candidate; a plain line (not a definition) that lies within another candidate's
/// read block is preceded by that block, moved up to the line's place.
fn merge_contained(picks: Vec<Candidate>, reads: &[ReadWindow]) -> (Vec<Candidate>, Vec<Cite>) {
    let cites: Vec<Cite> = picks.iter().map(|c| cite(c, reads)).collect();
    let mut order: Vec<usize> = (0..picks.len()).collect();
    for i in (0..picks.len()).filter(|&i| picks[i].def.is_none()) {
        let inner = &cites[i];
        let outer = (0..picks.len()).find(|&j| {
            j > i
                && cites[j].file == inner.file
                && cites[j].lines.is_some()
                && cites[j].start <= inner.start
                && inner.end <= cites[j].end
                && (cites[j].start, cites[j].end) != (inner.start, inner.end)
        });
        if let Some(j) = outer {
            if let (Some(pi), Some(pj)) = (
                order.iter().position(|&x| x == i),
                order.iter().position(|&x| x == j),
            ) {
                // The block takes the line's place; the exact line follows it.
                order.remove(pj);
                order.insert(pi, j);
            }
        }
    }
    (
        order.iter().map(|&i| picks[i].clone()).collect(),
        order.iter().map(|&i| cites[i].clone()).collect(),
    )
}

/// Whether a cited block holds every key term of the question (keywords of full weight).
fn holds_key_terms(q: &Query, at: &Cite) -> bool {
    let needed: Vec<&Keyword> = q
        .search_keywords()
        .iter()
        .filter(|k| k.weight >= 0.9)
        .collect();
    match &at.lines {
        Some(lines) if !needed.is_empty() => {
            let text = lines.join("\n").to_lowercase();
            needed.iter().all(|k| k.in_text(&text))
        }
        _ => false,
    }
}

/// Among the read citations, those whose lines hold every key term go first (stable): a block
/// that does what the question says beats a name that only resembles it.
fn direct_first(q: &Query, picks: Vec<Candidate>, cites: Vec<Cite>) -> (Vec<Candidate>, Vec<Cite>) {
    let mut both: Vec<(Candidate, Cite)> = picks.into_iter().zip(cites).collect();
    let read = both
        .iter()
        .take_while(|(_, c)| c.lines.is_some())
        .count()
        .min(MAX_DIRECT);
    both[..read].sort_by_key(|(_, c)| !holds_key_terms(q, c));
    both.into_iter().unzip()
}

/// How many leading (read) citations [`direct_first`] may reorder.
const MAX_DIRECT: usize = 3;

/// The form of each keyword that occurs in `text` (lowercase), for the keywords that do.
fn present(kws: &[Keyword], text: &str) -> Vec<(usize, String)> {
    let lowered = text.to_lowercase();
    kws.iter()
        .enumerate()
        .filter_map(|(i, k)| {
            k.forms
                .iter()
                .find(|f| lowered.contains(f.as_str()))
                .map(|f| (i, f.clone()))
        })
        .collect()
}

/// A line as the scout quotes it: «text», cut at 160 characters with an ellipsis.
pub(crate) fn quote(text: &str) -> String {
    let t = text.trim();
    let shown: String = t.chars().take(160).collect();
    if shown.len() < t.len() {
        format!("«{shown}…»")
    } else {
        format!("«{shown}»")
    }
}

fn normalized(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '$')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The ExploreResult (or, for a verification run, the VerificationResult) JSON text.
pub(crate) fn final_answer(
    q: &Query,
    notes: &Notes,
    reads: &[ReadWindow],
    verification: bool,
) -> String {
    let kws = q.search_keywords();
    let words: Vec<&str> = kws.iter().map(|k| k.word.as_str()).collect();
    let (picks, cites) = merge_contained(notes.picks.clone(), reads);
    let (picks, cites) = direct_first(q, picks, cites);
    let notes = &Notes {
        picks,
        searches: notes.searches.clone(),
    };
    let mut evidence: Vec<String> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    for (c, at) in notes.picks.iter().zip(&cites) {
        if evidence.contains(&at.evidence()) {
            continue;
        }
        // Evidence is only what the scout saw (a line a search returned, or a window it read:
        // a file found by name and not read, or read empty, is a finding, not evidence), in a
        // path the `path:line` form can carry (no newline).
        let seen = at.lines.as_ref().is_some_and(|l| !l.is_empty()) || !c.text.is_empty();
        if seen && !at.file.contains('\n') {
            evidence.push(at.evidence());
        }
        let mut f = match &c.def {
            Some((kind, name)) => format!(
                "{}: `{name}` is defined at {}:{} ({kind}).",
                at.evidence(),
                c.file,
                c.line
            ),
            None if !c.text.is_empty() => format!("{}:{}: {}", c.file, c.line, quote(&c.text)),
            None if at.start != c.line => match at.lines.as_ref().and_then(|l| l.first()) {
                Some(first) => format!("{}:{}: {}", c.file, at.start, quote(first)),
                None => format!("{}: found by its file name.", at.evidence()),
            },
            None => format!("{}: found by its file name.", at.evidence()),
        };
        if let Some(lines) = &at.lines {
            let seen = present(kws, &lines.join("\n"));
            if !seen.is_empty() && at.end > at.start {
                let forms: Vec<String> = seen.iter().map(|(_, f)| format!("'{f}'")).collect();
                f.push_str(&format!(
                    " Lines {}-{} contain {}.",
                    at.start,
                    at.end,
                    forms.join(", ")
                ));
            }
        }
        findings.push(f);
    }
    for s in &notes.searches {
        if s.purpose == Purpose::Named && !s.truncated && !s.failed {
            let scope = if s.source_only {
                " in source files"
            } else {
                ""
            };
            findings.push(format!(
                "The search for /{}/{scope} found {} matching line(s) in {} file(s).",
                s.pattern, s.returned, s.files
            ));
        }
    }

    // Status: completed only when the best citation directly matches the question.
    let mut open: Vec<String> = Vec::new();
    let direct = match (notes.picks.first(), cites.first()) {
        (Some(best), Some(at)) => {
            let named_def = best
                .def
                .as_ref()
                .is_some_and(|(_, name)| q.named.iter().any(|n| normalized(n) == normalized(name)));
            let needed: Vec<&Keyword> = kws.iter().filter(|k| k.weight >= 0.9).collect();
            let all_terms = holds_key_terms(q, at);
            if !named_def && !all_terms {
                match &at.lines {
                    Some(lines) => {
                        let text = lines.join("\n").to_lowercase();
                        let missing: Vec<&str> = needed
                            .iter()
                            .filter(|k| !k.in_text(&text))
                            .map(|k| k.word.as_str())
                            .collect();
                        open.push(format!(
                            "The best match {} does not show every keyword of the question (not seen there: {}); a reader should confirm it answers the question.",
                            at.evidence(),
                            missing.join(", ")
                        ));
                    }
                    // Only what was read is claimed: an unread line is just unconfirmed.
                    None => open.push(format!(
                        "The best match {} was not read, so whether it answers the question is unconfirmed.",
                        at.evidence()
                    )),
                }
            }
            named_def || all_terms
        }
        _ => false,
    };
    // A name the question gives that no line holds: the answer can only be a guess.
    let mut direct = direct;
    for s in &notes.searches {
        if s.purpose == Purpose::Named && !s.truncated && !s.failed && s.returned == 0 {
            direct = false;
            let scope = if s.source_only {
                " in source files"
            } else {
                ""
            };
            open.push(format!(
                "The search for /{}/{scope} found no line, so what the question names may not exist under that name; the best match is only a guess.",
                s.pattern
            ));
        }
    }
    for s in &notes.searches {
        if s.failed {
            open.push(format!(
                "The search for {} failed or was cut to fit the context, so its results are missing.",
                s.purpose.describe()
            ));
        } else if s.truncated {
            open.push(format!(
                "The search for {} stopped at its limit of {} results (sorted by path), so later paths were not searched.",
                s.purpose.describe(),
                s.returned
            ));
        }
    }
    let any_cut = notes.searches.iter().any(|s| s.truncated || s.failed);
    let matched: Vec<&str> = notes
        .picks
        .iter()
        .flat_map(|c| c.matched.iter().map(String::as_str))
        .collect();
    let unmatched: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matched.contains(w))
        .collect();
    if !unmatched.is_empty() && !notes.picks.is_empty() {
        open.push(format!(
            "No cited definition or line was matched for: {}.",
            unmatched.join(", ")
        ));
    }

    let intro = "Offline scout (no LLM configured): a model-free keyword search over definitions, file names and lines; no model interpreted the results.";
    let summary = match (notes.picks.first(), cites.first()) {
        (Some(best), Some(at)) => {
            let lead = match &best.def {
                Some((kind, name)) => format!(
                    "Best match: `{name}` is defined at {}:{} ({kind}), cited as {}.",
                    best.file,
                    best.line,
                    at.evidence()
                ),
                None => format!("Best match: {}.", at.evidence()),
            };
            let others: Vec<String> = cites.iter().skip(1).take(3).map(Cite::evidence).collect();
            let others = if others.is_empty() {
                String::new()
            } else {
                format!(" Other candidates: {}.", others.join(", "))
            };
            format!(
                "{intro} Keywords: {}. {lead}{others}",
                words.join(", ")
            )
        }
        _ if words.is_empty() && q.named.is_empty() => {
            format!("{intro} The task names no searchable keyword, so nothing was searched.")
        }
        _ => format!(
            "{intro} Keywords: {}. The searches returned no definition, file name or line to cite{}.",
            words.join(", "),
            if any_cut {
                " (some stopped at their limits or failed; see the open questions)"
            } else {
                ""
            }
        ),
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
        "status": if direct { "completed" } else { "partial" },
        "summary": summary,
        "findings": findings,
        "evidence": evidence,
        "unresolved_questions": open,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: u64, text: &str) -> Vec<(u64, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (start + i as u64, l.to_string()))
            .collect()
    }

    fn cite_of(file: &str, start: u64, lines: Option<&[&str]>) -> Cite {
        Cite {
            file: file.into(),
            start,
            end: start + lines.map_or(0, |l| l.len() as u64 - 1),
            lines: lines.map(|l| l.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn pick(file: &str, line: u64) -> Candidate {
        Candidate {
            file: file.into(),
            line,
            text: String::new(),
            def: None,
            matched: vec![],
            score: 1.0,
        }
    }

    #[test]
    fn blocks_holding_every_key_term_go_first_among_read_ones() {
        let q = crate::llm::scout::query::parse("Where is the session cookie saved?");
        let picks = vec![pick("a.py", 1), pick("b.py", 10), pick("c.py", 5)];
        let cites = vec![
            cite_of("a.py", 1, Some(&["class SessionCookie:", "    pass"])),
            cite_of(
                "b.py",
                10,
                Some(&["def save(session):", "    set_cookie(session)"]),
            ),
            cite_of("c.py", 5, None),
        ];
        let (p, c) = direct_first(&q, picks, cites);
        let order: Vec<&str> = p.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(order, ["b.py", "a.py", "c.py"]);
        assert!(holds_key_terms(&q, &c[0]) && !holds_key_terms(&q, &c[1]));
        // An unread citation is never said to hold anything.
        assert!(!holds_key_terms(&q, &c[2]));
    }

    #[test]
    fn block_ends() {
        let py = window(
            10,
            "    @property\n    def size(\n        self,\n    ) -> int:\n        x = 1\n\n        return x\n\n    def other(self):\n        pass\n",
        );
        assert_eq!(block_end(&py, 11, true), Some(16));
        assert_eq!(block_end(&py, 18, true), None);
        let rs = window(
            1,
            "pub struct A(u8);\nfn f() {\n    if x { y }\n}\nfn g() {\n",
        );
        assert_eq!(block_end(&rs, 1, false), Some(1));
        assert_eq!(block_end(&rs, 2, false), Some(4));
        assert_eq!(block_end(&rs, 5, false), None);
    }
}
