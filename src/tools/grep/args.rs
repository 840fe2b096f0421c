//! Grep's arguments: what each means, and the checks that say what is wrong with them.

use std::path::Path;

use globset::GlobMatcher;
use serde_json::Value;

use crate::tools::globs::{build_glob, normalize_glob};
use crate::tools::params;
use crate::tools::walk::{self, WalkRules, DEFAULT_RESULT_LIMIT, MAX_RESULT_LIMIT};

/// The most context lines before or after a match.
pub(crate) const MAX_CONTEXT_LINES: i64 = 20;

pub(crate) const ACCEPTED: [&str; 12] = [
    "pattern",
    "path",
    "glob",
    "case_sensitive",
    "limit",
    "output_mode",
    "context",
    "before",
    "after",
    "type",
    "include_hidden",
    "include_ignored",
];

/// What Grep returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OutputMode {
    /// Matching lines: `data.matches[{file, line, text[, before, after]}]`.
    Content,
    /// Files with at least one match: `data.files[...]`.
    FilesWithMatches,
    /// Matching lines per file: `data.counts[{file, count}]`.
    Count,
}

impl OutputMode {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "content" => Some(OutputMode::Content),
            "files_with_matches" => Some(OutputMode::FilesWithMatches),
            "count" => Some(OutputMode::Count),
            _ => None,
        }
    }
}

/// Validated arguments.
pub(crate) struct Request {
    pub(crate) pattern: String,
    pub(crate) path: String,
    pub(crate) glob: Option<FileGlob>,
    pub(crate) case_sensitive: bool,
    pub(crate) limit: usize,
    pub(crate) mode: OutputMode,
    pub(crate) before: usize,
    pub(crate) after: usize,
    pub(crate) rules: WalkRules,
}

/// A glob filter: on the file name when the glob has no `/`, else on the path under the root.
pub(crate) struct FileGlob {
    matcher: GlobMatcher,
    on_name: bool,
}

impl FileGlob {
    /// The one file `name` (a path relative to the search directory), wildcards in it literal.
    pub(crate) fn exact(name: &str) -> Result<Self, String> {
        Ok(FileGlob {
            matcher: build_glob(&globset::escape(name))?,
            on_name: false,
        })
    }

    pub(crate) fn is_match(&self, rel_to_search: &Path) -> bool {
        if self.on_name {
            rel_to_search
                .file_name()
                .is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(rel_to_search)
        }
    }
}

/// A path that is a glob, split into the directory before its first wildcard component and the
/// rest (`src/**/*.rs` -> `src`, `**/*.rs`); None for a plain path.
fn split_glob_path(path: &str) -> Option<(String, String)> {
    let wild = |c: &str| c.contains(['*', '?', '[', '{']);
    let parts: Vec<&str> = path.split('/').collect();
    let first = parts.iter().position(|c| wild(c))?;
    let dir = parts[..first].join("/");
    let dir = if dir.is_empty() { ".".to_string() } else { dir };
    Some((dir, parts[first..].join("/")))
}

/// How many times `limit` content matches are collected to choose the shown ones from.
pub(crate) const RANK_POOL: usize = 4;

impl Request {
    /// The matches collected before choosing the `limit` shown (content mode), else `limit`.
    pub(crate) fn pool(&self) -> usize {
        if self.mode == OutputMode::Content {
            self.limit.saturating_mul(RANK_POOL)
        } else {
            self.limit
        }
    }
}

/// Read and check Grep's arguments; the error is the message the model gets.
pub(crate) fn parse(params: &Value) -> Result<Request, String> {
    let args = params
        .as_object()
        .ok_or("Grep arguments must be a JSON object.")?;
    let pattern = match params::get(args, "pattern") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(
            "pattern is empty: give a word or regular expression to search for, e.g. 'def main'."
                .into(),
        ),
        _ => return Err("pattern must be a non-empty string.".into()),
    };
    let (Ok(path), Ok(glob)) = (params::str_opt(args, "path"), params::str_opt(args, "glob"))
    else {
        return Err("path and glob must be strings.".into());
    };
    // Small models fill every optional field: an empty glob means "no glob", as null does.
    let glob = glob.filter(|g| !g.trim().is_empty());
    // A glob given as the path ('src/**/*.rs', '*.py'): search its directory with it as glob.
    let (path, glob) = match path.map(split_glob_path) {
        Some(Some((dir, pattern))) if glob.is_none() => (Some(dir), Some(pattern)),
        Some(Some(_)) => {
            return Err(format!(
                "path {:?} is a glob, and glob is given too: path is a directory; put the file pattern in glob only.",
                path.unwrap_or_default()
            ))
        }
        _ => (path.map(str::to_string), glob.map(str::to_string)),
    };
    let (path, glob) = (path.as_deref(), glob.as_deref());
    let Ok(case_sensitive) = params::bool_or(args, "case_sensitive", false) else {
        return Err("case_sensitive must be a boolean.".into());
    };
    let Ok(limit) = params::int_in(args, "limit", DEFAULT_RESULT_LIMIT, 1, MAX_RESULT_LIMIT) else {
        return Err("limit must be an integer between 1 and 200.".into());
    };
    let mode = match params::get(args, "output_mode") {
        None => OutputMode::Content,
        Some(v) => v.as_str().and_then(OutputMode::parse).ok_or_else(|| {
            format!("output_mode must be one of 'content', 'files_with_matches', 'count'; got {v}.")
        })?,
    };
    let mut context = [0usize; 3];
    for (slot, key) in context.iter_mut().zip(["context", "before", "after"]) {
        *slot = params::int_in(args, key, 0, 0, MAX_CONTEXT_LINES)
            .map_err(|()| format!("{key} must be an integer between 0 and {MAX_CONTEXT_LINES}."))?
            as usize;
    }
    let before = if params::get(args, "before").is_some() {
        context[1]
    } else {
        context[0]
    };
    let after = if params::get(args, "after").is_some() {
        context[2]
    } else {
        context[0]
    };
    let (include_hidden, include_ignored) = walk::visibility_args(args)?;
    let types = match params::str_opt(args, "type") {
        Err(()) => return Err("type must be a string naming a ripgrep file type.".into()),
        Ok(None) => None,
        // An empty type, like an empty glob, is the field left unset.
        Ok(Some(name)) if name.trim().is_empty() => None,
        Ok(Some(name)) => Some(walk::select_type(name)?),
    };
    if let Some(msg) = params::unknown_arguments("Grep", args, &ACCEPTED) {
        return Err(msg);
    }
    let glob = match glob {
        None => None,
        Some(g) => {
            let normalized = normalize_glob(g);
            Some(FileGlob {
                matcher: build_glob(g)?,
                on_name: !normalized.contains('/'),
            })
        }
    };
    let path = walk::search_path(path);
    Ok(Request {
        pattern,
        path,
        glob,
        case_sensitive,
        limit: limit as usize,
        mode,
        before,
        after,
        rules: WalkRules {
            include_hidden,
            include_ignored,
            types,
        },
    })
}
