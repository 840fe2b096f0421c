//! What a path is by its folders and its name: a test, an example, a benchmark, or a copy kept
//! beside the live code. Both the chunker (which does not parse secondary code) and the ranker
//! (which weighs it down) ask; it asks neither of them.

pub(crate) const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "fixtures",
    "e2e",
];
pub(crate) const EXAMPLE_DIRS: &[&str] = &[
    "examples",
    "example",
    "samples",
    "sample",
    "demo",
    "demos",
    "_examples",
];
pub(crate) const BENCH_DIRS: &[&str] = &["bench", "benches", "benchmark", "benchmarks"];

/// Folders that hold a copy kept beside the live code: vendored or third-party code, and the
/// old or compatibility versions of an API the project still ships.
pub(crate) const COPY_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    "third_party",
    "thirdparty",
    "third-party",
    "external",
    "deps",
    "legacy",
    "deprecated",
    "compat",
    "obsolete",
];

/// Languages whose test files are named `FooTest`, `FooTests` or `FooSpec` beside `Foo`.
const SUFFIX_TEST_LANGS: &[&str] = &["java", "kt", "kts", "cs", "scala", "swift", "php", "groovy"];

/// The folders of a lowercase path.
pub(crate) fn dirs_of(lower: &str) -> Vec<&str> {
    let mut dirs: Vec<&str> = lower.split('/').collect();
    dirs.pop();
    dirs
}

/// Whether a path is a test (by its folder or its name, in the usual spellings).
pub fn is_test_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    let stem_name = name.split('.').next().unwrap_or(name);
    dirs_of(&lower).iter().any(|d| TEST_DIRS.contains(d))
        || name.starts_with("test_")
        || stem_name.ends_with("_test")
        || stem_name.ends_with("_tests")
        || stem_name.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
        || (SUFFIX_TEST_LANGS.contains(&ext) && camel_test_name(path))
        || stem_name == "conftest"
        // A test module beside the code (`src/runner/tests.rs`, `pkg/test.py`).
        || (is_code_ext(ext) && (stem_name == "tests" || stem_name == "test"))
}

/// Whether a path is a test, an example or a benchmark: code that ranks low unless asked
/// for, and that the index splits into windows without parsing (over half of many trees'
/// bytes; parsing it would double a cold build).
pub fn is_secondary_code(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    is_test_path(path)
        || dirs_of(&lower)
            .iter()
            .any(|d| EXAMPLE_DIRS.contains(d) || BENCH_DIRS.contains(d))
}

/// Whether a path lies in a copy of code kept beside the live one ([`COPY_DIRS`]).
pub fn is_copy_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    dirs_of(&lower).iter().any(|d| COPY_DIRS.contains(d))
}

/// The version a folder named `v1`, `v2`, ... stands for.
pub fn version_dir(dir: &str) -> Option<u32> {
    let digits = dir.strip_prefix(['v', 'V'])?;
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A path with its version folders (`v1/`, `v2/`) taken out, and the highest version among
/// them (None without one): two paths with the same key are versions of one file.
pub fn version_key(path: &str) -> (String, Option<u32>) {
    let mut version = None;
    let mut key = Vec::new();
    for part in path.split('/') {
        match version_dir(part) {
            Some(v) => version = version.max(Some(v)),
            None => key.push(part),
        }
    }
    (key.join("/"), version)
}

/// Whether a file's name ends in the word `Test`, `Tests` or `Spec` (`RouterTests.swift`, not
/// `Attest.cs`).
fn camel_test_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    ["Test", "Tests", "Spec"]
        .iter()
        .any(|t| stem.len() > t.len() && stem.ends_with(t))
}

/// Extensions of source code that a test module may have.
fn is_code_ext(ext: &str) -> bool {
    [
        "rs", "py", "go", "js", "ts", "rb", "ex", "exs", "lua", "sh", "c", "cc", "cpp", "kt",
        "scala", "swift", "php", "cs", "java",
    ]
    .contains(&ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_beside_the_code_are_tests_in_every_usual_spelling() {
        for p in [
            "src/runner/tests.rs",
            "src/index/rank_tests.rs",
            "pkg/server_test.go",
            "lib/test_client.py",
            "spec/models/user_spec.rb",
            "lib/user_spec.rb",
            "src/main/java/FooTest.java",
            "Sources/App/RouterTests.swift",
            "src/Foo/BarTests.cs",
            "core/src/KoinSpec.kt",
            "lua/plugin_spec.lua",
            "test/mint_test.exs",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/runner/gate.rs",
            "src/latest.rs",
            "src/contest.py",
            "docs/tests.md",
            "src/Attest.cs",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
    }

    #[test]
    fn copies_and_versions_are_told_by_their_folders() {
        assert!(is_copy_path("lib/compat/io.py"));
        assert!(is_copy_path("third_party/zlib/inflate.c"));
        assert!(is_copy_path("src/Legacy/Parser.cs"));
        assert!(!is_copy_path("src/compatibility.rs"));
        assert_eq!(version_dir("v2"), Some(2));
        assert_eq!(version_dir("vendor"), None);
        assert_eq!(version_dir("v"), None);
        assert_eq!(
            version_key("api/v1/users.go"),
            ("api/users.go".to_string(), Some(1))
        );
        assert_eq!(
            version_key("api/users.go"),
            ("api/users.go".to_string(), None)
        );
    }
}
