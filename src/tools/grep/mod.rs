//! Grep: a regex search over the files under a directory, in process (ripgrep's crates).
//!
//! The parts: `args` (the arguments and their checks), `engine` (ripgrep's regex engine, with a
//! bounded backtracking fallback for look-around and backreferences), `search` (the walk and
//! the per-file searcher), `output` (the result envelope).
//!
//! The walk is parallel (one [`Searcher`] per thread, reused for every file). Results are sorted
//! by (file, line) and cut to `limit`; to stop early, each file stops after the matches it could
//! contribute, and once `limit + 1` matches are known, files and directories whose path sorts
//! after the last one that could still matter are skipped. Lines are split on `\n` only, matched
//! line text that is not UTF-8 is decoded with replacement characters, and files with a NUL byte
//! are skipped as binary.
//!
//! ```
//! use outrider::api::{ToolContext, GrepTool, Tool, Workspace};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.py"), "import os\ndef main():\n    pass\n").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let r = GrepTool.run(&ctx, &json!({"pattern": "DEF MAIN"}));
//! assert_eq!(r.data["matches"], json!([{"file": "a.py", "line": 2, "text": "def main():"}]));
//! ```

mod args;
mod engine;
mod output;
mod search;

use std::time::Instant;

use serde_json::{json, Value};

pub(crate) use args::MAX_CONTEXT_LINES;
pub(crate) use engine::FANCY_BACKTRACK_LIMIT;

use crate::tools::context::{Interrupt, ToolContext};
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::grep::args::parse;
use crate::tools::grep::search::Stopped;
use crate::tools::params;
use crate::tools::tool::Tool;
use crate::tools::walk::{self, DEFAULT_RESULT_LIMIT, MAX_RESULT_LIMIT};

/// The Grep tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Search file contents with a regular expression (Rust regex syntax; look-around and \
         backreferences work too, more slowly) under a directory of the project. Case-insensitive unless \
         case_sensitive is true. Returns matching lines as {file, line, text}, sorted by file \
         and line, at most `limit` (default 100, max 200); more matches make the result partial, \
         so narrow `path`, `glob`, `type` or the pattern. Skips binary files, hidden files, \
         .gitignore'd files and build/dependency folders (node_modules, target, .venv, ...) \
         unless include_hidden / include_ignored. Use output_mode \"files_with_matches\" to find \
         files, \"count\" for counts per file, and context/before/after for surrounding lines. \
         Follow up with Read on the lines you need."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to search for (Rust regex syntax), matched within one line. Escape literal metacharacters, e.g. 'foo\\(' to find 'foo('."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search, relative to the project root.",
                    "default": "."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob. Without '/', it matches the file name at any depth ('*.py', '*.{ts,tsx}'); with '/', the path relative to `path` ('src/**/*.rs'). Supports *, ?, [a-z], {a,b} and **."
                },
                "type": {
                    "type": "string",
                    "description": format!("Only search files of this ripgrep file type, e.g. {}.", walk::COMMON_TYPES)
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Match case exactly. By default the search ignores case.",
                    "default": false
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "description": "content: matching lines; files_with_matches: file paths only; count: matching lines per file.",
                    "default": "content"
                },
                "context": {
                    "type": "integer",
                    "description": "Lines of context before and after each match (content mode).",
                    "default": 0,
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "before": {
                    "type": "integer",
                    "description": "Lines of context before each match; overrides context.",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "after": {
                    "type": "integer",
                    "description": "Lines of context after each match; overrides context.",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "limit": {
                    "type": "integer",
                    "description": "Most results to return (lines, files or counts, by output_mode).",
                    "default": DEFAULT_RESULT_LIMIT,
                    "minimum": 1,
                    "maximum": MAX_RESULT_LIMIT
                },
                "include_hidden": {
                    "type": "boolean",
                    "description": "Also search files and folders whose name starts with '.'.",
                    "default": false
                },
                "include_ignored": {
                    "type": "boolean",
                    "description": "Also search .gitignore'd files and build/dependency folders (node_modules, target, dist, .venv, ...).",
                    "default": false
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        grep(ctx, args)
    }
}

fn grep(ctx: &ToolContext, params: &Value) -> ToolResult {
    let started = Instant::now();
    if let Err(e) = params::object("Grep", params) {
        return *e;
    }
    let invalid = |msg: String| ToolResult::error(params, ErrorCode::InvalidParam, msg, 0);
    let mut req = match parse(params) {
        Ok(r) => r,
        Err(msg) => return invalid(msg),
    };
    // A file given as the path (models do it often, with a glob or a type beside it): search
    // that file alone; the file named exactly overrides the filters.
    {
        if let Ok(r) = ctx.workspace.resolve(&req.path) {
            if r.kind == crate::tools::workspace::EntryKind::File {
                req.rules.types = None;
                let (dir, name) = r.relative.rsplit_once('/').unwrap_or((".", &r.relative));
                match args::FileGlob::exact(name) {
                    Ok(only) => {
                        req.glob = Some(only);
                        req.path = dir.to_string();
                    }
                    Err(msg) => return invalid(msg),
                }
            }
        }
    }
    let engine = match engine::build(&req.pattern, req.case_sensitive) {
        Ok(m) => m,
        Err(msg) => return invalid(msg),
    };
    let ws = &ctx.workspace;
    let root = match walk::search_root(ws, &req.path, params, 0) {
        Ok(r) => r,
        Err(e) => return *e,
    };
    let rel_root = root.relative.clone();

    let found = match search::search(ctx, &req, &engine, &root) {
        Ok(found) => found,
        Err(stopped) => {
            let (code, msg) = match stopped {
                Stopped::Interrupted(Interrupt::Deadline) => (
                    ErrorCode::Timeout,
                    format!("Grep timed out searching '{rel_root}'; narrow the path, glob, type or pattern."),
                ),
                Stopped::Interrupted(Interrupt::Cancelled) => {
                    (ErrorCode::Timeout, format!("Grep of '{rel_root}' was cancelled."))
                }
                Stopped::BacktrackLimit => (
                    ErrorCode::InvalidParam,
                    format!(
                        "Regex pattern {:?} needs too much backtracking (over {FANCY_BACKTRACK_LIMIT} steps on one line of '{rel_root}'); simplify the look-around or backreference, or drop it.",
                        req.pattern
                    ),
                ),
            };
            return ToolResult::error(params, code, msg, started.elapsed().as_millis() as u64)
                .with_path_resolved(rel_root);
        }
    };
    output::finish(params, &req, found, rel_root, started, engine.kind())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Workspace;

    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        (dir, ctx)
    }

    fn matches(r: &ToolResult) -> Vec<(String, u64)> {
        r.data["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap().to_string(),
                    m["line"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_private_keys_body_lines_are_masked_matched_or_as_context() {
        let (_d, ctx) = setup(&[(
            "k.pem",
            "-----BEGIN EC PRIVATE KEY-----\nAAAAsecret1\nBBBBsecret2\n-----END EC PRIVATE KEY-----\nsecret3 = public\n",
        )]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "secret", "context": 1}));
        assert_eq!(
            r.data["matches"],
            json!([
                {"file": "k.pem", "line": 2, "text": "***",
                 "before": ["-----BEGIN EC PRIVATE KEY-----"], "after": ["***"]},
                {"file": "k.pem", "line": 3, "text": "***",
                 "before": ["***"], "after": ["-----END EC PRIVATE KEY-----"]},
                {"file": "k.pem", "line": 5, "text": "secret3 = public",
                 "before": ["-----END EC PRIVATE KEY-----"], "after": []},
            ])
        );
    }

    #[test]
    fn common_argument_slips_are_taken_or_named() {
        let (_d, ctx) = setup(&[
            ("src/a.rs", "fn hit() {}\n"),
            ("src/b.py", "hit = 1\n"),
            ("docs/c.md", "hit\n"),
        ]);
        let files = |args: Value| {
            let r = GrepTool.run(&ctx, &args);
            assert_eq!(r.status.as_str(), "success", "{args}: {}", r.to_json());
            matches(&r).into_iter().map(|(f, _)| f).collect::<Vec<_>>()
        };
        // A language name, an alias or an extension as `type`.
        for t in ["rust", "rs", ".rs", "*.rs", "RS"] {
            assert_eq!(
                files(json!({"pattern": "hit", "type": t})),
                ["src/a.rs"],
                "{t}"
            );
        }
        assert_eq!(
            files(json!({"pattern": "hit", "type": "python"})),
            ["src/b.py"]
        );
        // A file given as the path: that file alone.
        assert_eq!(
            files(json!({"pattern": "hit", "path": "src/b.py"})),
            ["src/b.py"]
        );
        assert_eq!(
            files(json!({"pattern": "hit", "path": "./docs/c.md"})),
            ["docs/c.md"]
        );
        // With a glob or a type beside it (a small model fills every field), the file still.
        assert_eq!(
            files(json!({"pattern": "hit", "path": "src/b.py", "glob": "src/b.py", "type": "rs"})),
            ["src/b.py"]
        );
        assert_eq!(
            files(json!({"pattern": "hit", "path": "src/b.py", "glob": "**/*.py"})),
            ["src/b.py"]
        );
        // A glob given as the path.
        assert_eq!(
            files(json!({"pattern": "hit", "path": "src/*.py"})),
            ["src/b.py"]
        );
        assert_eq!(
            files(json!({"pattern": "hit", "path": "**/*.md"})),
            ["docs/c.md"]
        );
        let both = GrepTool.run(
            &ctx,
            &json!({"pattern": "hit", "path": "*.py", "glob": "*.rs"}),
        );
        assert_eq!(
            both.to_value()["error"]["message"],
            json!("path \"*.py\" is a glob, and glob is given too: path is a directory; put the file pattern in glob only.")
        );
        let empty = GrepTool.run(&ctx, &json!({"pattern": ""}));
        assert_eq!(
            empty.to_value()["error"]["message"],
            json!("pattern is empty: give a word or regular expression to search for, e.g. 'def main'.")
        );
        let unknown = GrepTool.run(&ctx, &json!({"pattern": "x", "type": "klingon"}));
        assert_eq!(unknown.status.as_str(), "error");
    }

    #[test]
    fn sorted_and_limited_across_many_files() {
        let files: Vec<(String, String)> = (0..60)
            .map(|i| {
                (
                    format!("d{}/f{:02}.txt", i % 7, i),
                    "hit\nno\nhit\n".to_string(),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, ctx) = setup(&refs);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "limit": 7}));
        let mut all: Vec<(String, u64)> = files
            .iter()
            .flat_map(|(f, _)| [(f.clone(), 1), (f.clone(), 3)])
            .collect();
        all.sort();
        assert_eq!(matches(&r), all[..7].to_vec());
        assert_eq!(r.data["truncated"], json!(true));
        assert_eq!(r.data["truncation_reasons"], json!(["match_limit"]));
    }

    #[test]
    fn one_file_with_more_than_limit() {
        let body = "x\n".repeat(10);
        let (_d, ctx) = setup(&[("a.txt", &body)]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "x", "limit": 3}));
        assert_eq!(
            matches(&r),
            vec![
                ("a.txt".into(), 1),
                ("a.txt".into(), 2),
                ("a.txt".into(), 3)
            ]
        );
        assert_eq!(r.data["truncated"], json!(true));
        let exact = GrepTool.run(&ctx, &json!({"pattern": "x", "limit": 10}));
        assert_eq!(exact.data["truncated"], json!(false));
    }

    #[test]
    fn context_lines_overlap_per_match() {
        let (_d, ctx) = setup(&[("a.txt", "1\n2 hit\n3\n4 hit\n5\n6\n")]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "context": 1}));
        assert_eq!(
            r.data["matches"],
            json!([
                {"file": "a.txt", "line": 2, "text": "2 hit", "before": ["1"], "after": ["3"]},
                {"file": "a.txt", "line": 4, "text": "4 hit", "before": ["3"], "after": ["5"]}
            ])
        );
        let r = GrepTool.run(
            &ctx,
            &json!({"pattern": "hit", "before": 2, "after": 0, "limit": 1}),
        );
        assert_eq!(
            r.data["matches"],
            json!([{"file": "a.txt", "line": 2, "text": "2 hit", "before": ["1"]}])
        );
    }

    #[test]
    fn after_context_of_last_kept_match_is_complete() {
        let (_d, ctx) = setup(&[("a.txt", "hit\nhit\nz\n")]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "after": 2, "limit": 1}));
        assert_eq!(
            r.data["matches"],
            json!([{"file": "a.txt", "line": 1, "text": "hit", "after": ["hit", "z"]}])
        );
        assert_eq!(r.data["truncated"], json!(true));
    }

    #[test]
    fn look_around_and_backreferences_run_on_the_fallback_and_say_so() {
        let (_d, ctx) = setup(&[(
            "a.py",
            "self.name = 1\nother.name = 2\nfoobar\nfoobaz\nthe the end\n",
        )]);
        let found = |pattern: &str| {
            let r = GrepTool.run(&ctx, &json!({"pattern": pattern, "case_sensitive": true}));
            (matches(&r), r.data.get("engine").cloned())
        };
        let fancy = Some(json!("fancy"));
        assert_eq!(
            found(r"(?<=self\.)name"),
            (vec![("a.py".into(), 1)], fancy.clone())
        );
        assert_eq!(
            found(r"foo(?!bar)"),
            (vec![("a.py".into(), 4)], fancy.clone())
        );
        assert_eq!(
            found(r"foo(?=bar)"),
            (vec![("a.py".into(), 3)], fancy.clone())
        );
        assert_eq!(found(r"\b(\w+) \1\b"), (vec![("a.py".into(), 5)], fancy));
        assert_eq!(
            found(r"name = \d$"),
            (vec![("a.py".into(), 1), ("a.py".into(), 2)], None)
        );
    }

    #[test]
    fn a_catastrophic_fallback_pattern_fails_fast_with_a_clear_error() {
        let line = format!("{}!\n", "aaaa ".repeat(40));
        let (_d, ctx) = setup(&[("a.txt", &line.repeat(50))]);
        let started = Instant::now();
        let r = GrepTool.run(&ctx, &json!({"pattern": r"^(\w+\s?)*$(?<=x)"}));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(r.error_code(), Some(ErrorCode::InvalidParam));
        assert_eq!(
            r.text,
            format!("Regex pattern \"^(\\\\w+\\\\s?)*$(?<=x)\" needs too much backtracking (over {FANCY_BACKTRACK_LIMIT} steps on one line of '.'); simplify the look-around or backreference, or drop it.")
        );
        let bad = GrepTool.run(&ctx, &json!({"pattern": "(?<=a"}));
        assert_eq!(bad.error_code(), Some(ErrorCode::InvalidParam));
        assert!(
            bad.text.starts_with("Invalid regex pattern: "),
            "{}",
            bad.text
        );
    }

    #[test]
    fn a_line_past_the_limit_is_reported_not_silently_missed() {
        let long = format!(
            "first hit\n{}\nlast hit\n",
            "x".repeat(search::HEAP_LIMIT + 10)
        );
        let (_d, ctx) = setup(&[("big.txt", long.as_str()), ("small.txt", "hit\n")]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit"}));
        assert_eq!(
            matches(&r),
            vec![("big.txt".to_string(), 1), ("small.txt".to_string(), 1)]
        );
        assert_eq!(r.data["skipped_long_lines"], json!(1));
        assert_eq!(r.data["long_line_files"], json!(["big.txt"]));
        assert_eq!(r.data.get("unreadable"), None);
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Partial);
        assert!(
            r.text.ends_with(" 1 file(s) were searched only up to a line longer than 1 MiB ('big.txt' line 2); that line and the rest of the file were not searched, so matches there are not listed."),
            "{}",
            r.text
        );
        // A file that is one long line: 0 matches, but never a plain success.
        let one = format!("hit {} hit", "x".repeat(search::HEAP_LIMIT + 10));
        let (_d, ctx) = setup(&[("one.txt", one.as_str())]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit"}));
        assert_eq!(matches(&r), vec![]);
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Partial);
        assert_eq!(r.data["long_line_files"], json!(["one.txt"]));
        assert_eq!(
            r.data["long_lines"],
            json!([{"file": "one.txt", "line": 1}])
        );
        assert!(r.text.contains("('one.txt' line 1)"), "{}", r.text);
        let plain = GrepTool.run(&ctx, &json!({"pattern": "hit", "path": "small.txt"}));
        assert_eq!(plain.data.get("skipped_long_lines"), None);
    }

    /// A directory whose path is longer than PATH_MAX: even root cannot list it by path, which
    /// stands in for permission-denied entries (root reads through permission bits).
    #[allow(unsafe_code)] // raw *at calls build what no path can reach
    fn too_deep(base: &std::path::Path) {
        use std::ffi::CString;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let name = CString::new("d".repeat(250)).unwrap();
        let base = CString::new(base.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: plain syscalls on NUL-terminated names; every descriptor is owned once.
        let mut fd = unsafe {
            OwnedFd::from_raw_fd(libc::open(
                base.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY,
            ))
        };
        for _ in 0..18 {
            unsafe {
                assert_eq!(libc::mkdirat(fd.as_raw_fd(), name.as_ptr(), 0o755), 0);
                let next = libc::openat(
                    fd.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY,
                );
                assert!(next >= 0);
                fd = OwnedFd::from_raw_fd(next);
            }
        }
        let file = CString::new("deep.txt").unwrap();
        unsafe {
            let f = libc::openat(
                fd.as_raw_fd(),
                file.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT,
                0o644,
            );
            assert!(f >= 0);
            assert_eq!(libc::write(f, b"hit\n".as_ptr().cast(), 4), 4);
            libc::close(f);
        }
    }

    #[test]
    fn unreadable_directories_are_counted_and_reported() {
        let (d, ctx) = setup(&[("a.txt", "hit\n")]);
        too_deep(d.path());
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit"}));
        assert_eq!(matches(&r), vec![("a.txt".to_string(), 1)]);
        assert_eq!(r.data["unreadable"], json!(1));
        assert!(
            r.text
                .ends_with(" 1 file(s) or director(ies) could not be read and were skipped."),
            "{}",
            r.text
        );
        let g = crate::tools::glob::GlobTool.run(&ctx, &json!({"pattern": "**/*.txt"}));
        assert_eq!(g.data["paths"], json!(["a.txt"]));
        assert_eq!(g.data["unreadable"], json!(1));
        assert!(
            g.text
                .ends_with(" 1 director(ies) could not be read and were skipped."),
            "{}",
            g.text
        );
    }
}
