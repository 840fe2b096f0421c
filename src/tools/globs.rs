//! File globs as Glob and Grep read them: `*` does not cross `/`, `**` does, leading `./` and `/`
//! are dropped, and compiled globs are memoised.

use globset::{GlobBuilder, GlobMatcher};

/// Glob length accepted, in bytes.
pub(crate) const MAX_GLOB_BYTES: usize = 1024;

/// Build a `*`-does-not-cross-`/` glob; leading `./` and `/` are dropped.
pub(crate) fn build_glob(pattern: &str) -> Result<GlobMatcher, String> {
    static GLOBS: crate::tools::memo::Memo<GlobMatcher> = crate::tools::memo::Memo::new();
    if pattern.len() > MAX_GLOB_BYTES {
        return Err(format!(
            "Glob pattern is {} bytes long; globs may be at most {MAX_GLOB_BYTES} bytes.",
            pattern.len()
        ));
    }
    GLOBS.get_or_try_sized(pattern, || {
        let normalized = normalize_glob(pattern);
        GlobBuilder::new(&normalized)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            // An estimate: a glob compiles to a regex a small multiple of its length.
            .map(|g| (g.compile_matcher(), (64 << 10) + 512 * pattern.len()))
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
        assert_eq!(
            build_glob(&"*".repeat(MAX_GLOB_BYTES + 1)).unwrap_err(),
            "Glob pattern is 1025 bytes long; globs may be at most 1024 bytes."
        );
        assert!(build_glob(&format!("{}.rs", "a".repeat(MAX_GLOB_BYTES - 3))).is_ok());
    }
}
