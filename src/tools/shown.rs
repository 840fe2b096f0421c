//! What a tool result showed, as values kept beside the text the model sees: the lines a Read
//! window showed with their numbers, Grep's matches, Glob's paths, Search's places. The
//! runtime reads these back (what the child saw, what the scout found) instead of parsing the
//! text; they are never serialised, so the model's text is the same with or without them.
//!
//! A result cut to fit an output budget, and an error, show nothing: the model did not see
//! their lines.

/// One Grep match: its file, line and text, and the context lines around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// Relative to the root, `/`-separated.
    pub file: String,
    /// 1-based.
    pub line: u64,
    /// The line as shown (cut to Grep's line limit).
    pub text: String,
    /// The context lines before it, in order (the nearest last).
    pub before: Vec<String>,
    /// The context lines after it, in order.
    pub after: Vec<String>,
}

/// One place a Search showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPlace {
    /// Relative to the root.
    pub file: String,
    /// The chunk's first and last lines.
    pub start: u64,
    /// Its last line.
    pub end: u64,
    /// `function`, `class`, ... for a definition, `part` for a piece of one, `lines` otherwise.
    pub kind: String,
    /// The name defined (or the definition a part belongs to).
    pub name: Option<String>,
    /// The lines shown, with their numbers.
    pub lines: Vec<(u64, String)>,
}

/// What one tool result showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Shown {
    /// Nothing to read back: an error, a result cut to fit, or a tool that shows no lines.
    #[default]
    Nothing,
    /// A Read window: the file (relative to the root) and its lines, with their numbers.
    Lines {
        /// The file.
        path: String,
        /// (line number, text), in order.
        lines: Vec<(u64, String)>,
    },
    /// Grep's matches (content mode), in the order shown.
    Matches(Vec<GrepMatch>),
    /// Paths listed (Glob, or Grep listing files).
    Paths(Vec<String>),
    /// Search's places, best first.
    Places(Vec<SearchPlace>),
}
