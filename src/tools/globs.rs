//! File globs as Glob and Grep read them: `*` does not cross `/`, `**` does, leading `./` and `/`
//! are dropped, and compiled globs are memoised.

use globset::{GlobBuilder, GlobMatcher};

/// Build a `*`-does-not-cross-`/` glob; leading `./` and `/` are dropped.
pub(crate) fn build_glob(pattern: &str) -> Result<GlobMatcher, String> {
    static GLOBS: crate::tools::memo::Memo<GlobMatcher> = crate::tools::memo::Memo::new();
    GLOBS.get_or_try(pattern, || {
        let normalized = normalize_glob(pattern);
        GlobBuilder::new(&normalized)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| format!("Invalid glob pattern '{pattern}': {}", e.kind()))
    })
}

/// The reference's normalisation: leading "/" and "./" are stripped.
pub(crate) fn normalize_glob(pattern: &str) -> String {
    let mut p = pattern;
    loop {
        if let Some(rest) = p.strip_prefix("./") {
            p = rest;
        } else if let Some(rest) = p.strip_prefix('/') {
            p = rest;
        } else {
            return p.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_and_compiled() {
        assert_eq!(normalize_glob("./src/*.rs"), "src/*.rs");
        assert_eq!(normalize_glob("/*.rs"), "*.rs");
        let g = build_glob("src/*.rs").unwrap();
        assert!(g.is_match("src/a.rs") && !g.is_match("src/x/a.rs"));
        assert_eq!(
            build_glob("[z-a]").unwrap_err(),
            "Invalid glob pattern '[z-a]': invalid range; 'z' > 'a'"
        );
    }
}
