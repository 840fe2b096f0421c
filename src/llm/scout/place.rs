//! A place the scout's search ranked (a Search hit, or lines Grep returned ranked by the
//! index's scoring), and what one search found.

/// One place the Search result showed: a chunk of a file, what it defines, and the lines the
/// search showed of it (its definition line and best-matching lines).
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// The file, relative to the root.
    pub(crate) file: String,
    /// The chunk's first and last lines (a definition's whole extent).
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// `function`, `method`, `class`, ... for a definition; `part` for a piece of a long one;
    /// `lines` for plain lines.
    pub(crate) kind: String,
    /// The name defined, or the definition a part belongs to.
    pub(crate) name: Option<String>,
    /// The lines the search showed, with their numbers.
    pub(crate) lines: Vec<(u64, String)>,
    /// Whether `end` is the place's real last line (a definition the index parsed whole), not
    /// just how far the scout reads it.
    pub(crate) extent_known: bool,
}

/// What a search found: its places, best first, and how to speak of it.
pub(crate) struct Found {
    /// The places, best first.
    pub(crate) places: Vec<Place>,
    /// How the places were found, for the summary.
    pub(crate) how: &'static str,
    /// What to say when there is no place.
    pub(crate) nothing: String,
    /// Open questions about what the search could not see.
    pub(crate) notes: Vec<String>,
}

impl Place {
    /// What the place is, in words: "method `add_env`", "part of `Arg`", "lines".
    pub(crate) fn what(&self) -> String {
        match &self.name {
            Some(name) if self.kind == "part" => format!("part of `{name}`"),
            Some(name) if self.kind != "lines" => format!("{} `{name}`", self.kind),
            _ => "lines".to_string(),
        }
    }
}
