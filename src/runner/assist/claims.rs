//! What a summary may name. A `completed` explore answer is a claim about the code: every name
//! its summary uses as code (an identifier, a file, a number) must be a word of a line the child
//! saw in this run, or the answer is refused once with the names it has not seen, and stands as
//! `partial` after that, listing them. A summary that rests on names the child never saw is the
//! commonest way a small model is wrong while sure ("also used in reloader.rb").
//!
//! A `completed` answer must also rest on code the child read in context: at least one of its
//! evidence items must overlap a Read window. Lines a search matched show that a name occurs
//! there, not what the code around it does; an answer built on match lines alone stands as
//! `partial` at once (asking again costs a small model a minute and it rarely reads then).

use crate::contract::SubagentStatus;
use crate::profile::RuntimeProfile;
use crate::runner::assist::{Assist, Objection};
use crate::runner::observed::{words, Observed};
use crate::runner::outcome::ParsedResult;

/// The assist that holds a summary to the names the child saw (always on for an explore
/// answer).
pub(crate) struct Claims {
    /// The contract's name, for the feedback.
    contract: String,
    /// The shortest name checked ([`crate::tuning::Tuning::min_checked_name`]).
    min_len: usize,
}

impl Claims {
    /// The check for `profile`'s answers.
    pub(crate) fn new(profile: &RuntimeProfile) -> Self {
        Self {
            contract: profile.answer_shape().to_string(),
            min_len: usize::try_from(profile.tuning.min_checked_name).unwrap_or(usize::MAX),
        }
    }
}

impl Assist for Claims {
    /// A summary naming what the child never saw (and the task does not name) is refused
    /// once with those names; it stands as partial, listing them, after that.
    fn answer_accepted(
        &self,
        result: &ParsedResult,
        observed: &Observed,
        task: &str,
    ) -> Option<Objection> {
        let ParsedResult::Explore(r) = result else {
            return None;
        };
        let names: Vec<String> = unseen_names(&r.summary, observed, self.min_len)
            .into_iter()
            .filter(|n| !named_in(n, task))
            .collect();
        if !names.is_empty() {
            return Some(Objection {
                feedback: feedback(&self.contract, &names),
                note: note(&names),
                ask_again: true,
            });
        }
        if r.status == SubagentStatus::Completed {
            return unread(&r.evidence, observed);
        }
        None
    }
}

/// The objection to a `completed` answer none of whose `evidence` items overlaps a Read
/// window (it stands as partial at once), or None when one does (or when it cites nothing the
/// gate could place).
fn unread(evidence: &[String], observed: &Observed) -> Option<Objection> {
    let cited: Vec<(String, u64, u64)> = evidence
        .iter()
        .filter_map(|e| crate::evidence::parse_citation(e))
        .collect();
    if cited.is_empty() || cited.iter().any(|(p, s, e)| observed.read_any(p, *s, *e)) {
        return None;
    }
    let note = "outrider: the child read none of the code it cites (only lines a search matched), so the answer is partial";
    Some(Objection {
        feedback: note.into(),
        note: note.into(),
        ask_again: false,
    })
}

/// The names `summary` uses as code that the child did not see (each once, in order), words of
/// at least `min_len` characters (numbers of at least three digits).
pub(crate) fn unseen_names(summary: &str, observed: &Observed, min_len: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in code_names(summary) {
        let unseen = words(&name).any(|w| {
            let checked = if w.chars().all(|c| c.is_ascii_digit()) {
                w.len() >= 3
            } else {
                w.chars().count() >= min_len
            };
            checked && !observed.saw_word(w)
        });
        if unseen && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Whether every word of `name` is a word of `text` (a name the task itself uses).
pub(crate) fn named_in(name: &str, text: &str) -> bool {
    let known: std::collections::HashSet<&str> = words(text).collect();
    words(name).all(|w| known.contains(w))
}

/// The feedback for a summary naming `names` the child has not seen.
pub(crate) fn feedback(contract: &str, names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "Your summary names {}, which you have not seen in this run. Read or Grep for them to check what they are, or leave them out; then reply with the {contract} JSON object again. A summary may only state what the lines you saw show.",
        quoted.join(", ")
    )
}

/// The note an answer keeps when it stands with `names` unseen.
pub(crate) fn note(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "outrider: the summary names {}, which the child never saw in this run, so the answer is partial",
        quoted.join(", ")
    )
}

/// The names `text` uses as code: whatever is inside backticks, and outside them each token
/// shaped like code (a call `f()`, a path or file name `a/b.py`, a dotted or `::` name, a
/// `snake_case` or `camelCase` word, a number). A citation's line numbers are not names.
fn code_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            if !part.trim().is_empty() {
                names.push(part.trim().to_string());
            }
            continue;
        }
        // The last few words: a number in "lines 153 and 245" is a line, not a value.
        let mut previous: Vec<&str> = Vec::new();
        for raw in part.split_whitespace() {
            let token = raw.trim_matches(|c: char| {
                !(c.is_alphanumeric() || c == '_' || c == '/' || c == '(' || c == ')')
            });
            let token = token.trim_end_matches(['(', ')']).trim_start_matches('(');
            // `path:12-20`: the path is a name, the numbers are lines.
            let token = token.split(':').next().unwrap_or_default();
            let after_line = previous.iter().rev().take(3).any(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_ascii_lowercase()
                    .starts_with("line")
            });
            previous.push(raw);
            let numbers = token.chars().all(|c| c.is_ascii_digit() || c == '-');
            if token.is_empty() || after_line && numbers {
                continue;
            }
            if looks_like_code(raw, token) {
                names.push(token.to_string());
            } else {
                // `400-599`: each number.
                names.extend(
                    token
                        .split('-')
                        .filter(|n| n.len() >= 3 && n.chars().all(|c| c.is_ascii_digit()))
                        .map(str::to_string),
                );
            }
        }
    }
    names
}

/// Whether `token` (as written, `raw`) is shaped like code rather than English.
fn looks_like_code(raw: &str, token: &str) -> bool {
    let has_letter = token.chars().any(char::is_alphabetic);
    if !has_letter {
        return false;
    }
    let call = raw.contains("()") || raw.contains('(') && raw.ends_with(')');
    let joined = token.contains("::")
        || token.contains('/')
        || token.split('.').filter(|p| !p.is_empty()).count() >= 2;
    let snake = token.contains('_');
    let chars: Vec<char> = token.chars().collect();
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
        || chars
            .windows(3)
            .any(|w| w[0].is_uppercase() && w[1].is_uppercase() && w[2].is_lowercase())
            // An acronym's plural (`URLs`) is English.
            && !(token.ends_with('s')
                && token[..token.len() - 1].chars().all(char::is_uppercase));
    call || joined || snake || camel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(lines: &[&str], path: &str) -> Observed {
        let lines = (1..).zip(lines.iter().map(|l| (*l).to_string())).collect();
        let read = crate::tools::envelope::ToolResult::success(
            &serde_json::json!({}),
            serde_json::Map::new(),
            "",
            1,
        )
        .with_shown(crate::tools::shown::Shown::Lines {
            path: path.into(),
            lines,
        });
        let mut o = Observed::default();
        o.record(&read);
        o
    }

    #[test]
    fn names_shaped_like_code_are_checked_against_the_lines_seen_and_english_is_not() {
        let o = seen(
            &[
                "def redirect_location(response):",
                "    if response.status_code in (301, 302):",
                "        return response.headers['Location']",
            ],
            "lib/http/client.py",
        );
        let summary = "The `redirect_location` function in lib/http/client.py (lines 1-3) reads the Location header when response.status_code is 301 or 302; it is also used in reloader.rb and calls follow_redirects(), with statuses 400-599 passing. URLs and JSON are English.";
        assert_eq!(
            unseen_names(summary, &o, 3),
            ["reloader.rb", "follow_redirects", "400", "599"]
        );
        assert!(unseen_names(
            "The `redirect_location` function in client.py returns the Location header.",
            &o,
            3
        )
        .is_empty());
    }

    #[test]
    fn a_citation_and_line_numbers_are_not_names() {
        let o = seen(&["fn main() {}"], "src/main.rs");
        assert!(unseen_names(
            "main() is at src/main.rs:1, see line 120 and lines 130-140, lines 153 and 245.",
            &o,
            3
        )
        .is_empty());
    }
}
