//! A lead: one place the code index ranked for the task (a leaf type, so that the run's state
//! can hold leads without depending on the assist that finds them).

/// One place the index ranked: lines of a file, and what the index says they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lead {
    pub(crate) path: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// ``method `add_env` ``, when the index said.
    pub(crate) what: Option<String>,
}

impl Lead {
    /// The lead as an evidence item (`a.py:3-18`).
    pub(crate) fn citation(&self) -> String {
        crate::evidence::citation(&self.path, self.start, self.end)
    }

    /// Whether the evidence item `item` cites lines of this lead.
    pub(crate) fn overlaps(&self, item: &str) -> bool {
        crate::evidence::parse_citation(item).is_some_and(|(path, a, b)| {
            crate::runner::observed::normalize(&path) == self.path
                && a <= self.end
                && b >= self.start
        })
    }
}
