//! The regex engines Grep runs: ripgrep's engine first, and a bounded backtracking engine for the
//! look-around and backreferences models often write, which ripgrep's engine refuses.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use grep_matcher::{Match, Matcher, NoCaptures};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};

use crate::tools::memo::Memo;

/// Backtracking steps the fallback engine may take on one line before it gives up, so that a
/// pathological pattern (`(a+)+$` on a long run of `a`) fails fast instead of hanging the search.
pub(crate) const FANCY_BACKTRACK_LIMIT: usize = 100_000;

/// Bytes a compiled pattern may take (its automaton); a larger one is refused, so that a valid
/// but huge pattern (`a{1000}{1000}`) cannot take gigabytes.
pub(super) const REGEX_SIZE_LIMIT: usize = 10 << 20;
/// Bytes the lazy DFA of one search may grow to before it falls back to slower matching.
pub(super) const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;
/// Pattern length accepted, in bytes.
pub(super) const MAX_PATTERN_BYTES: usize = 4096;
/// Most patterns compile under this: tried first, so the memo can count them as small.
const SMALL_SIZE_LIMIT: usize = 256 << 10;

wire_enum! {
    /// Which engine a search used.
    pub(super) enum EngineKind {
        /// ripgrep's finite-automata engine: linear time, no look-around or backreferences.
        Plain = "plain",
        /// The backtracking fallback (`fancy-regex`), bounded by [`FANCY_BACKTRACK_LIMIT`].
        Fancy = "fancy",
    }
}

/// A compiled pattern, ready for the searcher.
#[derive(Debug)]
pub(crate) enum Engine {
    /// The fast path.
    Plain(RegexMatcher),
    /// The fallback, with its own record of a blown backtrack limit.
    Fancy(FancyMatcher),
}

impl Engine {
    /// Which engine this is.
    pub(crate) fn kind(&self) -> EngineKind {
        match self {
            Engine::Plain(_) => EngineKind::Plain,
            Engine::Fancy(_) => EngineKind::Fancy,
        }
    }

    /// Whether the fallback gave up on a line because of its backtrack limit.
    pub(crate) fn gave_up(&self) -> bool {
        match self {
            Engine::Plain(_) => false,
            Engine::Fancy(m) => m.gave_up.load(Ordering::Relaxed),
        }
    }
}

/// Compile `pattern`: ripgrep's engine when it accepts the pattern; the fallback only when it
/// refuses it for look-around or a backreference and the fallback accepts it. Any other refusal
/// is today's `Invalid regex pattern: ...` message.
pub(crate) fn build(pattern: &str, case_sensitive: bool) -> Result<Engine, String> {
    static PLAIN: Memo<RegexMatcher> = Memo::new();
    static FANCY: Memo<Arc<fancy_regex::Regex>> = Memo::new();
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "Regex pattern is {} bytes long; patterns may be at most {MAX_PATTERN_BYTES} bytes.",
            pattern.len()
        ));
    }
    let key = format!("{case_sensitive}\0{pattern}");
    let plain = PLAIN.get_or_try_sized(&key, || {
        let build = |limit: usize| {
            RegexMatcherBuilder::new()
                .case_insensitive(!case_sensitive)
                // (?m): ^ and $ match at line boundaries inside the searcher's buffer, as in
                // ripgrep.
                .multi_line(true)
                .crlf(true)
                .ban_byte(Some(0))
                .size_limit(limit)
                .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
                .build(pattern)
                .map_err(|e| e.to_string())
        };
        // The memo counts each pattern at its size limit: the small one when it fits.
        match build(SMALL_SIZE_LIMIT) {
            Ok(m) => Ok((m, SMALL_SIZE_LIMIT + REGEX_DFA_SIZE_LIMIT)),
            Err(e) if is_size_refusal(&e) => build(REGEX_SIZE_LIMIT)
                .map(|m| (m, REGEX_SIZE_LIMIT + REGEX_DFA_SIZE_LIMIT))
                .map_err(|e| refusal_message(&e)),
            Err(e) => Err(refusal_message(&e)),
        }
    });
    let refusal = match plain {
        Ok(m) => return Ok(Engine::Plain(m)),
        Err(msg) => msg,
    };
    if !needs_fallback(&refusal) {
        return Err(refusal);
    }
    let regex = FANCY.get_or_try_sized(&key, || {
        // An inline flag: the builder's case option does not reach look-around in fancy-regex 0.14.
        let flagged = if case_sensitive {
            Cow::Borrowed(pattern)
        } else {
            Cow::Owned(format!("(?i){pattern}"))
        };
        fancy_regex::RegexBuilder::new(&flagged)
            .backtrack_limit(FANCY_BACKTRACK_LIMIT)
            .delegate_size_limit(REGEX_SIZE_LIMIT)
            .delegate_dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
            .build()
            .map(|r| (Arc::new(r), REGEX_SIZE_LIMIT + REGEX_DFA_SIZE_LIMIT))
            .map_err(|e| {
                let e = e.to_string();
                if is_size_refusal(&e) {
                    refusal_message(&e)
                } else {
                    refusal.clone()
                }
            })
    })?;
    Ok(Engine::Fancy(FancyMatcher {
        regex,
        gave_up: AtomicBool::new(false),
    }))
}

/// Whether an engine refused a pattern for its compiled size.
fn is_size_refusal(msg: &str) -> bool {
    msg.contains("size limit")
}

/// The message for a refused pattern, naming the limit when size was the reason.
fn refusal_message(msg: &str) -> String {
    if is_size_refusal(msg) {
        format!(
            "Invalid regex pattern: it compiles to more than the {} MiB limit ({msg}); use smaller repetition counts or a simpler pattern.",
            REGEX_SIZE_LIMIT >> 20
        )
    } else {
        format!("Invalid regex pattern: {msg}")
    }
}

/// Whether ripgrep's engine refused a pattern for a feature only the fallback has.
fn needs_fallback(refusal: &str) -> bool {
    refusal.contains("look-around") || refusal.contains("backreference")
}

/// The fallback as a searcher matcher. It sets no line terminator, so the searcher hands it one
/// line at a time (terminator stripped): a match never spans lines, as with the plain engine.
#[derive(Debug)]
pub(crate) struct FancyMatcher {
    regex: Arc<fancy_regex::Regex>,
    gave_up: AtomicBool,
}

/// The fallback gave up on a line (its backtrack limit).
#[derive(Debug)]
pub(crate) struct FancyError(String);

impl fmt::Display for FancyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Matcher for FancyMatcher {
    type Captures = NoCaptures;
    type Error = FancyError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, FancyError> {
        let text = String::from_utf8_lossy(haystack);
        let exact = matches!(text, Cow::Borrowed(_));
        if at > text.len() || !text.is_char_boundary(at) {
            return Ok(None);
        }
        match self.regex.find_from_pos(&text, at) {
            // Offsets into replacement-decoded text do not map back to bytes: report the line.
            Ok(Some(m)) if exact => Ok(Some(Match::new(m.start(), m.end()))),
            Ok(Some(_)) => Ok(Some(Match::new(at, haystack.len()))),
            Ok(None) => Ok(None),
            Err(e) => {
                self.gave_up.store(true, Ordering::Relaxed);
                Err(FancyError(e.to_string()))
            }
        }
    }

    fn new_captures(&self) -> Result<NoCaptures, FancyError> {
        Ok(NoCaptures::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(engine: &Engine, line: &str) -> bool {
        match engine {
            Engine::Plain(m) => m.is_match(line.as_bytes()).unwrap(),
            Engine::Fancy(m) => m.is_match(line.as_bytes()).unwrap(),
        }
    }

    #[test]
    fn plain_first_fallback_only_for_look_around_and_backreferences() {
        let plain = build(r"fn\s+main", false).unwrap();
        assert_eq!(plain.kind(), EngineKind::Plain);
        for (pattern, yes, no) in [
            (r"foo(?=bar)", "foobar", "foobaz"),
            (r"(?<=self\.)name", "self.name", "other.name"),
            (r"(?<!_)id\b", "id = 1", "_id = 1"),
            (r"(\w+) \1", "the the", "the cat"),
        ] {
            let engine = build(pattern, true).unwrap();
            assert_eq!(
                (engine.kind(), found(&engine, yes), found(&engine, no)),
                (EngineKind::Fancy, true, false),
                "{pattern}"
            );
        }
        assert!(found(&build("FOO(?=bar)", false).unwrap(), "foobar"));
    }

    #[test]
    fn invalid_patterns_keep_the_plain_message() {
        let err = build("(unclosed", false).unwrap_err();
        assert!(err.starts_with("Invalid regex pattern: "), "{err}");
        let err = build("(?<=a", false).unwrap_err();
        assert!(err.starts_with("Invalid regex pattern: "), "{err}");
    }

    #[test]
    fn catastrophic_backtracking_gives_up_quickly() {
        let engine = build(r"^(\w+\s?)*$(?<=x)", true).unwrap();
        let line = format!("{}!", "aaaa ".repeat(40));
        let Engine::Fancy(m) = &engine else {
            panic!("expected the fallback")
        };
        // The work is bounded by the backtrack limit it gave up at, not by a clock (a time
        // assertion fails on a loaded machine).
        assert!(m.is_match(line.as_bytes()).is_err());
        assert!(engine.gave_up());
    }

    #[test]
    fn huge_and_long_patterns_are_refused_naming_the_limit() {
        let started = std::time::Instant::now();
        for pattern in ["a{1000}{1000}", r"\w{1000}{100}"] {
            let err = build(pattern, true).unwrap_err();
            assert!(
                err.starts_with("Invalid regex pattern: it compiles to more than the 10 MiB limit"),
                "{pattern}: {err}"
            );
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let long = "x".repeat(MAX_PATTERN_BYTES + 1);
        assert_eq!(
            build(&long, true).unwrap_err(),
            "Regex pattern is 4097 bytes long; patterns may be at most 4096 bytes."
        );
        assert!(build(&"x".repeat(MAX_PATTERN_BYTES), true).is_ok());
        // A pattern between the small and the full limit still compiles.
        assert_eq!(build("a{20000}", true).unwrap().kind(), EngineKind::Plain);
    }
}
