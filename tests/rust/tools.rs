//! Integration tests of the read-only tools through the public API only.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use outrider::api::explore_profile;
use outrider::api::PermissionContext;
use outrider::api::ToolContext;
use outrider::api::ToolRegistry;
use outrider::api::Trace;
use outrider::api::Workspace;
use outrider::api::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelErrorKind, ToolCall,
};
use outrider::api::{CancelToken, RuntimeRunner, TerminalReason};
use outrider::api::{ErrorCode, ToolResult, ToolStatus};
use outrider::api::{OutputBudget, MAX_TOOL_BATCH_BYTES};
use serde_json::{json, Value};

struct Tree {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    ctx: ToolContext,
}

fn tree(files: &[(&str, &[u8])]) -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    for (name, body) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    let ctx = ToolContext::new(Workspace::new(&root).unwrap());
    Tree {
        _dir: dir,
        root,
        ctx,
    }
}

fn run(t: &Tree, tool: &str, args: Value) -> ToolResult {
    ToolRegistry::readonly().execute(tool, &args, &t.ctx, &PermissionContext::readonly_subagent())
}

/// The envelope with clock-dependent values blanked, for whole-object comparisons.
fn stable(r: &ToolResult) -> Value {
    let mut v = r.to_value();
    v["stats"]["time_ms"] = json!(0);
    if v["stats"].get("file_mtime_ms").is_some() {
        v["stats"]["file_mtime_ms"] = json!(0);
    }
    let text = v["text"].as_str().unwrap().to_string();
    let re = regex::Regex::new(r"\(Took \d+ms\)").unwrap();
    v["text"] = json!(re.replace(&text, "(Took Nms)"));
    v
}

/// `(code, message)` of an error result.
fn err(r: &ToolResult) -> (String, String) {
    assert_eq!(r.status, ToolStatus::Error, "{}", r.to_json());
    let e = r.error.as_ref().unwrap();
    (e.code.as_str().to_string(), e.message.clone())
}

fn paths(r: &ToolResult) -> Vec<String> {
    serde_json::from_value(r.data["paths"].clone()).unwrap()
}

fn hits(r: &ToolResult) -> Vec<(String, u64, String)> {
    r.data["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r.to_json()))
        .iter()
        .map(|m| {
            (
                m["file"].as_str().unwrap().to_string(),
                m["line"].as_u64().unwrap(),
                m["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn h(file: &str, line: u64, text: &str) -> (String, u64, String) {
    (file.to_string(), line, text.to_string())
}

// ---------------------------------------------------------------- Read

#[test]
fn read_success_envelope() {
    let t = tree(&[("src/a.py", b"import os\n\ndef main():\n    pass\n")]);
    let args = json!({"path": "src/a.py"});
    assert_eq!(
        stable(&run(&t, "Read", args.clone())),
        json!({
            "status": "success",
            "data": {"content": "   1 | import os\n   2 | \n   3 | def main():\n   4 |     pass\n", "truncated": false},
            "text": "Read 4 lines from 'src/a.py' (Lines 1-4).\n(Took Nms)",
            "stats": {"time_ms": 0, "lines_read": 4, "chars_read": 60, "total_lines": 4,
                      "file_size_bytes": 32, "file_mtime_ms": 0, "encoding": "utf-8"},
            "context": {"cwd": ".", "params_input": args, "path_resolved": "src/a.py"}
        })
    );
}

#[test]
fn read_validation_messages() {
    let t = tree(&[("a.txt", b"x\n")]);
    let required = "Parameter 'path' is required.";
    let start = "start_line must be a positive integer (>= 1).";
    let limit = "limit must be an integer between 1 and 2000.";
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), required),
        (json!({"path": ""}), required),
        (json!({"path": null}), required),
        (json!({"path": false}), required),
        (
            json!({"path": 5}),
            "Path must be a non-empty relative string.",
        ),
        (
            json!({"path": ["a.txt"]}),
            "Path must be a non-empty relative string.",
        ),
        (json!({"path": "a.txt", "start_line": 0}), start),
        (json!({"path": "a.txt", "start_line": -3}), start),
        (json!({"path": "a.txt", "start_line": "2"}), start),
        (json!({"path": "a.txt", "start_line": 1.5}), start),
        (json!({"path": "a.txt", "start_line": 1.0}), start),
        (json!({"path": "a.txt", "start_line": true}), start),
        (json!({"path": "a.txt", "limit": 0}), limit),
        (json!({"path": "a.txt", "limit": 2001}), limit),
        (json!({"path": "a.txt", "limit": true}), limit),
        (json!({"path": "a.txt", "limit": "10"}), limit),
        (
            json!({"path": "a.txt", "offset": 3}),
            "Unknown argument 'offset' for Read; accepted arguments: path, start_line, limit.",
        ),
    ];
    for (args, message) in cases {
        let r = run(&t, "Read", args.clone());
        assert_eq!(err(&r), ("INVALID_PARAM".into(), message.into()), "{args}");
        assert_eq!(r.context["params_input"], args);
        assert_eq!(r.data, serde_json::Map::new());
    }
    let ok = run(
        &t,
        "Read",
        json!({"path": "a.txt", "start_line": 1, "limit": 2000}),
    );
    assert_eq!(ok.status, ToolStatus::Success);
}

#[test]
fn read_error_mapping() {
    let t = tree(&[
        ("a.txt", b"1\n2\n3\n"),
        ("bin.dat", b"\x7fELF\0\0"),
        ("d/x", b""),
    ]);
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "missing.txt",
            json!("missing.txt"),
            "NOT_FOUND",
            "File 'missing.txt' does not exist.",
        ),
        (
            "d/missing/x",
            json!("d/missing/x"),
            "NOT_FOUND",
            "File 'd/missing/x' does not exist.",
        ),
        (
            "d",
            json!("d"),
            "IS_DIRECTORY",
            "Path 'd' is a directory. Use Glob to explore it.",
        ),
        (
            "bin.dat",
            json!("bin.dat"),
            "BINARY_FILE",
            "File 'bin.dat' appears to be binary. Cannot read as text.",
        ),
        (
            "/etc/passwd",
            json!(null),
            "ACCESS_DENIED",
            "Access denied. Path '/etc/passwd' is outside project root.",
        ),
        (
            "../x",
            json!(null),
            "ACCESS_DENIED",
            "Access denied. Path '../x' is outside project root.",
        ),
    ];
    for (path, resolved, code, message) in cases {
        let r = run(&t, "Read", json!({"path": path}));
        assert_eq!(err(&r), (code.into(), message.into()), "{path}");
        assert_eq!(
            r.context
                .get("path_resolved")
                .cloned()
                .unwrap_or(Value::Null),
            resolved,
            "{path}"
        );
    }
    let past = run(&t, "Read", json!({"path": "a.txt", "start_line": 4}));
    assert_eq!(
        stable(&past),
        json!({"status": "error", "data": {},
               "text": "start_line (4) exceeds file length (3 lines). Valid range: 1 to 3.",
               "stats": {"time_ms": 0},
               "context": {"cwd": ".", "params_input": {"path": "a.txt", "start_line": 4},
                           "path_resolved": "a.txt", "total_lines": 3},
               "error": {"code": "INVALID_PARAM",
                         "message": "start_line (4) exceeds file length (3 lines). Valid range: 1 to 3."}})
    );
}

#[test]
fn read_pages_to_the_end() {
    let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let t = tree(&[("f.txt", body.as_bytes())]);
    let first = run(&t, "Read", json!({"path": "f.txt", "limit": 5}));
    assert_eq!(first.status, ToolStatus::Partial);
    assert!(first.text.ends_with(
        "[Truncated: Showing 5 of 12 lines. Use start_line=6 to continue (7 lines remaining).]"
    ));
    let last = run(
        &t,
        "Read",
        json!({"path": "f.txt", "start_line": 11, "limit": 5}),
    );
    assert_eq!(last.status, ToolStatus::Success);
    assert_eq!(
        last.data["content"],
        json!("  11 | line 11\n  12 | line 12\n")
    );
    assert_eq!(last.stats["lines_read"], json!(2));
    assert_eq!(last.data["truncated"], json!(false));
}

#[test]
fn read_crlf_and_line_rule_shared_with_grep() {
    let body = "a\r\nb\u{2028}c\u{0085}d\x0ce\r\nneedle\r\n";
    let t = tree(&[("w.txt", body.as_bytes())]);
    let r = run(&t, "Read", json!({"path": "w.txt"}));
    assert_eq!(
        r.data["content"],
        json!("   1 | a\n   2 | b\u{2028}c\u{0085}d\x0ce\n   3 | needle\n")
    );
    let g = run(&t, "Grep", json!({"pattern": "needle$"}));
    assert_eq!(hits(&g), vec![h("w.txt", 3, "needle")]);
    let g = run(&t, "Grep", json!({"pattern": "c.d"}));
    assert_eq!(hits(&g), vec![h("w.txt", 2, "b\u{2028}c\u{0085}d\x0ce")]);
}

#[test]
fn read_invalid_utf8_is_partial_with_warning() {
    let t = tree(&[("l.txt", b"ok\n\xff\xfe bad\n")]);
    let r = run(&t, "Read", json!({"path": "l.txt"}));
    let v = stable(&r);
    assert_eq!(v["status"], "partial");
    assert_eq!(
        v["data"],
        json!({"content": "   1 | ok\n   2 | \u{FFFD}\u{FFFD} bad\n", "truncated": false, "fallback_encoding": "replace"})
    );
    assert_eq!(
        v["text"],
        "Read 2 lines from 'l.txt' (Lines 1-2).\n(Took Nms)\n[Warning: Encoding issues detected. Some characters may be corrupted (using replacement).]"
    );
    assert_eq!(v["stats"]["encoding"], "utf-8 (replace)");
}

#[test]
fn read_large_file_is_streamed() {
    // 40 MB: only the requested window is kept, the rest is counted.
    let line = "0123456789".repeat(10) + "\n";
    let body = line.repeat(400_000);
    let t = tree(&[("big.log", body.as_bytes())]);
    let r = run(
        &t,
        "Read",
        json!({"path": "big.log", "start_line": 399_999, "limit": 10}),
    );
    assert_eq!(r.status, ToolStatus::Success);
    assert_eq!(r.stats["lines_read"], json!(2));
    assert_eq!(r.stats["total_lines"], json!(400_000));
    assert!(r.data["content"]
        .as_str()
        .unwrap()
        .starts_with("399999 | 0123"));
}

// ---------------------------------------------------------------- Grep

#[test]
fn grep_success_envelope_and_case() {
    let t = tree(&[
        ("b.py", b"Hello\n"),
        ("a.py", b"x\nhello world\n"),
        ("c.txt", b"nothing\n"),
    ]);
    let args = json!({"pattern": "hello"});
    assert_eq!(
        stable(&run(&t, "Grep", args.clone())),
        json!({
            "status": "success",
            "data": {"matches": [
                {"file": "a.py", "line": 2, "text": "hello world"},
                {"file": "b.py", "line": 1, "text": "Hello"}
            ], "truncated": false},
            "text": "Found 2 matching line(s) in '.'.",
            "stats": {"time_ms": 0, "matched_lines": 2, "searched_files": 3},
            "context": {"cwd": ".", "params_input": args, "path_resolved": "."}
        })
    );
    let cs = run(
        &t,
        "Grep",
        json!({"pattern": "Hello", "case_sensitive": true}),
    );
    assert_eq!(hits(&cs), vec![h("b.py", 1, "Hello")]);
}

#[test]
fn grep_validation_messages() {
    let t = tree(&[("a.txt", b"x\n")]);
    let range = "limit must be an integer between 1 and 200.";
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({}), "INVALID_PARAM", "pattern must be a non-empty string."),
        (json!({"pattern": ""}), "INVALID_PARAM", "pattern is empty: give a word or regular expression to search for, e.g. 'def main'."),
        (json!({"pattern": 5}), "INVALID_PARAM", "pattern must be a non-empty string."),
        (json!({"pattern": "x", "path": 5}), "INVALID_PARAM", "path and glob must be strings."),
        (json!({"pattern": "x", "glob": ["*"]}), "INVALID_PARAM", "path and glob must be strings."),
        (json!({"pattern": "x", "case_sensitive": "yes"}), "INVALID_PARAM", "case_sensitive must be a boolean."),
        (json!({"pattern": "x", "limit": 0}), "INVALID_PARAM", range),
        (json!({"pattern": "x", "limit": 201}), "INVALID_PARAM", range),
        (json!({"pattern": "x", "limit": true}), "INVALID_PARAM", range),
        (json!({"pattern": "x", "limit": 2.0}), "INVALID_PARAM", range),
        (
            json!({"pattern": "x", "output_mode": "lines"}),
            "INVALID_PARAM",
            "output_mode must be one of 'content', 'files_with_matches', 'count'; got \"lines\".",
        ),
        (json!({"pattern": "x", "context": 21}), "INVALID_PARAM", "context must be an integer between 0 and 20."),
        (json!({"pattern": "x", "before": -1}), "INVALID_PARAM", "before must be an integer between 0 and 20."),
        (json!({"pattern": "x", "after": true}), "INVALID_PARAM", "after must be an integer between 0 and 20."),
        (json!({"pattern": "x", "type": 3}), "INVALID_PARAM", "type must be a string naming a ripgrep file type."),
        (
            json!({"pattern": "x", "include_hidden": 1}),
            "INVALID_PARAM",
            "include_hidden and include_ignored must be booleans.",
        ),
        (
            json!({"pattern": "x", "regex": true, "-i": true}),
            "INVALID_PARAM",
            "Unknown arguments 'regex', '-i' for Grep; accepted arguments: pattern, path, glob, case_sensitive, limit, output_mode, context, before, after, type, include_hidden, include_ignored.",
        ),
        (json!({"pattern": "x", "glob": "[z-a]"}), "INVALID_PARAM", "Invalid glob pattern '[z-a]': invalid range; 'z' > 'a'"),
        (json!({"pattern": "x", "path": "nope"}), "NOT_FOUND", "Search path 'nope' does not exist."),
        (json!({"pattern": "x", "path": "/etc"}), "ACCESS_DENIED", "Absolute paths are not allowed."),
        (json!({"pattern": "x", "path": ".."}), "ACCESS_DENIED", "Path is outside project root."),
    ];
    for (args, code, message) in cases {
        assert_eq!(
            err(&run(&t, "Grep", args.clone())),
            (code.into(), message.into()),
            "{args}"
        );
    }
    let (code, message) = err(&run(&t, "Grep", json!({"pattern": "(unclosed"})));
    assert_eq!(code, "INVALID_PARAM");
    assert!(message.starts_with("Invalid regex pattern: "), "{message}");
    let (_, message) = err(&run(&t, "Grep", json!({"pattern": "x", "type": "pyhton"})));
    assert!(
        message.starts_with(
            "Unknown file type 'pyhton' for type; use a ripgrep type name such as py, rust"
        ),
        "{message}"
    );
    let (_, message) = err(&run(&t, "Grep", json!({"pattern": "(?<=a"})));
    assert!(message.starts_with("Invalid regex pattern: "), "{message}");
    // null means "not given"
    assert_eq!(
        run(
            &t,
            "Grep",
            json!({"pattern": "x", "glob": null, "limit": null})
        )
        .status,
        ToolStatus::Success
    );
}

#[test]
fn grep_ignore_rules() {
    let t = tree(&[
        ("src/a.py", b"needle\n"),
        (".hidden/h.py", b"needle\n"),
        (".env", b"needle\n"),
        ("node_modules/m.js", b"needle\n"),
        ("target/t.rs", b"needle\n"),
        ("src/__pycache__/c.py", b"needle\n"),
        ("src/build", b"needle\n"),
        ("logs/x.log", b"needle\n"),
        ("src/gen/g.py", b"needle\n"),
        (".gitignore", b"*.log\ngen/\n"),
    ]);
    let files = |r: &ToolResult| -> Vec<String> { hits(r).into_iter().map(|x| x.0).collect() };
    assert_eq!(
        files(&run(&t, "Grep", json!({"pattern": "needle"}))),
        ["src/a.py"]
    );
    assert_eq!(
        files(&run(
            &t,
            "Grep",
            json!({"pattern": "needle", "include_hidden": true})
        )),
        [".env", ".hidden/h.py", "src/a.py"]
    );
    assert_eq!(
        files(&run(
            &t,
            "Grep",
            json!({"pattern": "needle", "include_ignored": true})
        )),
        [
            "logs/x.log",
            "node_modules/m.js",
            "src/__pycache__/c.py",
            "src/a.py",
            "src/build",
            "src/gen/g.py",
            "target/t.rs"
        ]
    );
    // The root's .gitignore applies when searching a subdirectory, too.
    assert_eq!(
        files(&run(
            &t,
            "Grep",
            json!({"pattern": "needle", "path": "src"})
        )),
        ["src/a.py"]
    );
    // An explicitly named ignored directory is searched.
    assert_eq!(
        files(&run(
            &t,
            "Grep",
            json!({"pattern": "needle", "path": "node_modules"})
        )),
        ["node_modules/m.js"]
    );
}

#[test]
fn grep_glob_and_type_filters() {
    let t = tree(&[
        ("a.py", b"x\n"),
        ("b.py", b"x\n"),
        ("d.py", b"x\n"),
        ("src/deep/c.py", b"x\n"),
        ("src/e.rs", b"x\n"),
        ("src/f.ts", b"x\n"),
        ("README.md", b"x\n"),
    ]);
    let files = |args: Value| -> Vec<String> {
        hits(&run(&t, "Grep", args))
            .into_iter()
            .map(|x| x.0)
            .collect()
    };
    assert_eq!(
        files(json!({"pattern": "x", "glob": "*.py"})),
        ["a.py", "b.py", "d.py", "src/deep/c.py"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "glob": "[a-c].py"})),
        ["a.py", "b.py", "src/deep/c.py"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "glob": "*.{rs,ts}"})),
        ["src/e.rs", "src/f.ts"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "glob": "src/*"})),
        ["src/e.rs", "src/f.ts"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "glob": "src/**/*.py"})),
        ["src/deep/c.py"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "path": "src", "glob": "deep/*.py"})),
        ["src/deep/c.py"]
    );
    assert_eq!(files(json!({"pattern": "x", "type": "rust"})), ["src/e.rs"]);
    assert_eq!(files(json!({"pattern": "x", "type": "md"})), ["README.md"]);
    // A small model fills every optional field: empty strings are the field left unset.
    let all = files(json!({"pattern": "x"}));
    assert_eq!(all.len(), 7);
    assert_eq!(files(json!({"pattern": "x", "glob": "", "type": ""})), all);
    assert_eq!(
        files(json!({"pattern": "x", "glob": "  ", "type": " "})),
        all
    );
}

#[test]
fn grep_binary_non_utf8_and_long_lines() {
    let long = format!("{}\n", "é".repeat(3000));
    let t = tree(&[
        ("bin.dat", b"needle\0\x01\x02"),
        ("latin1.txt", b"caf\xe9 needle\n"),
        ("sep.txt", "a\u{2028}needle\u{2029}b\nneedle\n".as_bytes()),
        ("long.txt", long.as_bytes()),
    ]);
    assert_eq!(
        hits(&run(&t, "Grep", json!({"pattern": "needle"}))),
        vec![
            h("latin1.txt", 1, "caf\u{FFFD} needle"),
            h("sep.txt", 1, "a\u{2028}needle\u{2029}b"),
            h("sep.txt", 2, "needle"),
        ]
    );
    let r = run(&t, "Grep", json!({"pattern": "é+"}));
    let text = hits(&r)[0].2.clone();
    assert_eq!(text.chars().count(), 2000);
    assert_eq!(text, "é".repeat(1987) + "… [truncated]");
    assert_eq!(r.status, ToolStatus::Partial);
    assert_eq!(r.data["truncation_reasons"], json!(["line_length"]));
    assert_eq!(
        r.text,
        "Found 1 matching line(s) in '.'. Results were truncated; narrow the path, glob, pattern, or matching lines."
    );
}

#[test]
fn a_cut_grep_shows_definitions_then_a_few_per_file_then_the_rest() {
    // a.py mentions `load` eight times before c.py defines it; b.py mentions it once.
    let mentions: String = (0..8).map(|i| format!("x = load({i})\n")).collect();
    let t = tree(&[
        ("a.py", mentions.as_bytes()),
        ("b.py", b"load()\n"),
        ("c.py", b"import os\n\ndef load(path):\n    pass\n"),
    ]);
    let r = run(&t, "Grep", json!({"pattern": "load", "limit": 5}));
    assert_eq!(
        hits(&r)
            .into_iter()
            .map(|(f, l, _)| (f, l))
            .collect::<Vec<_>>(),
        [
            ("a.py".to_string(), 1),
            ("a.py".to_string(), 2),
            ("a.py".to_string(), 3),
            ("b.py".to_string(), 1),
            ("c.py".to_string(), 3)
        ]
    );
    assert_eq!(r.data["omitted"], json!(5));
    assert!(
        r.text.contains(" 5 more not shown: definitions first"),
        "{}",
        r.text
    );
}

#[test]
fn grep_limit_truncation_envelope() {
    let t = tree(&[("a.txt", b"x1\nx2\n"), ("b.txt", b"x3\n")]);
    let args = json!({"pattern": "x", "limit": 2});
    assert_eq!(
        stable(&run(&t, "Grep", args.clone())),
        json!({
            "status": "partial",
            "data": {"matches": [{"file": "a.txt", "line": 1, "text": "x1"}, {"file": "a.txt", "line": 2, "text": "x2"}],
                     "omitted": 1, "truncated": true, "truncation_reasons": ["match_limit"]},
            "text": "Found 2 matching line(s) in '.'. 1 more not shown: definitions first, then at most 3 per file, then the rest in path order. Results were truncated; narrow the path, glob, pattern, or matching lines.",
            "stats": {"time_ms": 0, "matched_lines": 2, "searched_files": 2},
            "context": {"cwd": ".", "params_input": args, "path_resolved": "."}
        })
    );
}

#[test]
fn grep_sorted_first_limit_is_exact_on_many_files() {
    let mut files = Vec::new();
    for d in 0..20 {
        for f in 0..30 {
            let body = if (d * 31 + f) % 3 == 0 {
                "a\nmatch here\nb\nmatch again\n"
            } else {
                "nothing\n"
            };
            files.push((
                format!("dir{d:02}/sub{}/f{f:02}.txt", f % 4),
                body.to_string(),
            ));
        }
    }
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_bytes()))
        .collect();
    let t = tree(&refs);
    let mut expected: Vec<(String, u64, String)> = files
        .iter()
        .filter(|(_, b)| b.contains("match"))
        .flat_map(|(f, _)| [h(f, 2, "match here"), h(f, 4, "match again")])
        .collect();
    expected.sort();
    for limit in [1, 5, 37, 200] {
        let r = run(&t, "Grep", json!({"pattern": "match", "limit": limit}));
        assert_eq!(hits(&r), expected[..limit].to_vec(), "limit {limit}");
        assert_eq!(r.data["truncated"], json!(expected.len() > limit));
    }
}

#[test]
fn grep_output_modes() {
    let t = tree(&[
        ("a.txt", b"x\nx\ny\n"),
        ("b.txt", b"x\n"),
        ("c.txt", b"none\n"),
    ]);
    let r = run(
        &t,
        "Grep",
        json!({"pattern": "x", "output_mode": "files_with_matches"}),
    );
    assert_eq!(
        r.to_value()["data"],
        json!({"files": ["a.txt", "b.txt"], "truncated": false})
    );
    assert_eq!(r.text, "Found 2 file(s) with matches in '.'.");
    let r = run(&t, "Grep", json!({"pattern": "x", "output_mode": "count"}));
    assert_eq!(
        r.to_value()["data"],
        json!({"counts": [{"file": "a.txt", "count": 2}, {"file": "b.txt", "count": 1}], "truncated": false})
    );
    assert_eq!(r.text, "Found 3 matching line(s) in 2 file(s) in '.'.");
    assert_eq!(r.stats["matched_lines"], json!(3));
    let r = run(
        &t,
        "Grep",
        json!({"pattern": "x", "output_mode": "files_with_matches", "limit": 1}),
    );
    assert_eq!(
        r.to_value()["data"],
        json!({"files": ["a.txt"], "truncated": true, "truncation_reasons": ["match_limit"]})
    );
}

#[test]
fn grep_context_lines() {
    let t = tree(&[("a.txt", b"one\ntwo\nthree\nfour\n")]);
    let r = run(
        &t,
        "Grep",
        json!({"pattern": "^(one|three)$", "context": 1}),
    );
    assert_eq!(
        r.data["matches"],
        json!([
            {"file": "a.txt", "line": 1, "text": "one", "before": [], "after": ["two"]},
            {"file": "a.txt", "line": 3, "text": "three", "before": ["two"], "after": ["four"]}
        ])
    );
}

#[test]
fn grep_skips_symlinks_and_special_files() {
    let t = tree(&[("real.txt", b"needle\n")]);
    symlink(t.root.join("real.txt"), t.root.join("link.txt")).unwrap();
    symlink(t.root.join("."), t.root.join("self")).unwrap();
    let r = run(&t, "Grep", json!({"pattern": "needle"}));
    assert_eq!(hits(&r), vec![h("real.txt", 1, "needle")]);
}

#[test]
fn deadline_and_cancel_give_timeout() {
    let t = tree(&[("a.txt", b"x\n")]);
    let late = t.ctx.clone().with_deadline(
        Instant::now()
            .checked_sub(Duration::from_millis(1))
            .unwrap(),
    );
    let reg = ToolRegistry::readonly();
    let perm = PermissionContext::readonly_subagent();
    let r = reg.execute("Grep", r#"{"pattern": "x"}"#, &late, &perm);
    assert_eq!(
        err(&r),
        (
            "TIMEOUT".into(),
            "Grep timed out searching '.'; narrow the path, glob, type or pattern.".into()
        )
    );
    let r = reg.execute("Glob", r#"{"pattern": "**"}"#, &late, &perm);
    assert_eq!(
        err(&r),
        (
            "TIMEOUT".into(),
            "Glob timed out walking '.'; narrow the path or pattern.".into()
        )
    );
    let r = reg.execute("Read", r#"{"path": "a.txt"}"#, &late, &perm);
    assert_eq!(err(&r).0, "TIMEOUT");
    let cancelled = t.ctx.clone();
    cancelled
        .cancel
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let r = reg.execute("Grep", r#"{"pattern": "x"}"#, &cancelled, &perm);
    assert_eq!(
        err(&r),
        ("TIMEOUT".into(), "Grep of '.' was cancelled.".into())
    );
}

// ---------------------------------------------------------------- Glob

#[test]
fn glob_lists_one_directory_with_marks() {
    let t = tree(&[
        ("b.py", b""),
        ("a.txt", b""),
        ("src/x.rs", b""),
        ("Zeta/y", b""),
        (".hidden", b""),
        ("node_modules/m.js", b""),
        ("ignored.log", b""),
        (".gitignore", b"*.log\n"),
    ]);
    symlink(t.root.join("a.txt"), t.root.join("link")).unwrap();
    let args = json!({});
    assert_eq!(
        stable(&run(&t, "Glob", args.clone())),
        json!({
            "status": "success",
            "data": {"paths": ["Zeta", "a.txt", "b.py", "src"], "truncated": false, "directories": ["Zeta", "src"]},
            "text": "Found 4 path(s) in '.'.",
            "stats": {"time_ms": 0, "matched": 4, "visited": 4},
            "context": {"cwd": ".", "params_input": args, "path_resolved": "."}
        })
    );
    assert_eq!(
        paths(&run(
            &t,
            "Glob",
            json!({"include_hidden": true, "include_ignored": true})
        )),
        [
            ".gitignore",
            ".hidden",
            "Zeta",
            "a.txt",
            "b.py",
            "ignored.log",
            "node_modules",
            "src"
        ]
    );
    assert_eq!(
        paths(&run(&t, "Glob", json!({"path": "src"}))),
        ["src/x.rs"]
    );
}

#[test]
fn glob_patterns() {
    let t = tree(&[
        ("a.py", b""),
        ("b.py", b""),
        ("z.py", b""),
        ("sub/deep.py", b""),
        ("sub/more/x.py", b""),
        ("sub/c.txt", b""),
        ("docs/a.md", b""),
    ]);
    let g = |args: Value| paths(&run(&t, "Glob", args));
    assert_eq!(g(json!({"pattern": "*.py"})), ["a.py", "b.py", "z.py"]);
    assert_eq!(
        g(json!({"pattern": "**/*.py"})),
        ["a.py", "b.py", "sub/deep.py", "sub/more/x.py", "z.py"]
    );
    assert_eq!(g(json!({"pattern": "[a-b].py"})), ["a.py", "b.py"]);
    assert_eq!(g(json!({"pattern": "[!a].py"})), ["b.py", "z.py"]);
    assert_eq!(
        g(json!({"pattern": "**/*.{md,txt}"})),
        ["docs/a.md", "sub/c.txt"]
    );
    assert_eq!(g(json!({"pattern": "?.py"})), ["a.py", "b.py", "z.py"]);
    assert_eq!(g(json!({"pattern": "sub/*"})), ["sub/c.txt", "sub/deep.py"]);
    assert_eq!(g(json!({"pattern": "./sub/*.py"})), ["sub/deep.py"]);
    assert_eq!(
        g(json!({"pattern": "*.py", "path": "sub"})),
        ["sub/deep.py"]
    );
    assert_eq!(g(json!({"pattern": "**"})).len(), 7);
    assert_eq!(g(json!({"pattern": "sub"})), Vec::<String>::new());
}

#[test]
fn glob_truncation_envelope() {
    let t = tree(&[("c.py", b""), ("a.py", b""), ("b.py", b"")]);
    let args = json!({"pattern": "*.py", "limit": 2});
    assert_eq!(
        stable(&run(&t, "Glob", args.clone())),
        json!({
            "status": "partial",
            "data": {"paths": ["a.py", "b.py"], "truncated": true},
            "text": "Found 2 path(s) in '.'. Results were truncated; narrow the path or pattern.",
            "stats": {"time_ms": 0, "matched": 2, "visited": 3},
            "context": {"cwd": ".", "params_input": args, "path_resolved": "."}
        })
    );
}

#[test]
fn glob_validation_messages() {
    let t = tree(&[("a.txt", b"")]);
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"path": 1}), "INVALID_PARAM", "path and pattern must be strings."),
        (json!({"pattern": 1}), "INVALID_PARAM", "path and pattern must be strings."),
        (json!({"pattern": ""}), "INVALID_PARAM", "pattern must not be empty when supplied."),
        (json!({"limit": 0}), "INVALID_PARAM", "limit must be an integer between 1 and 200."),
        (json!({"limit": 201}), "INVALID_PARAM", "limit must be an integer between 1 and 200."),
        (json!({"limit": false}), "INVALID_PARAM", "limit must be an integer between 1 and 200."),
        (json!({"include_hidden": "no"}), "INVALID_PARAM", "include_hidden and include_ignored must be booleans."),
        (json!({"include_ignored": 0}), "INVALID_PARAM", "include_hidden and include_ignored must be booleans."),
        (
            json!({"glob": "*.py"}),
            "INVALID_PARAM",
            "Unknown argument 'glob' for Glob; accepted arguments: path, pattern, limit, include_hidden, include_ignored.",
        ),
        (json!({"pattern": "{a"}), "INVALID_PARAM", "Invalid glob pattern '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"),
        (json!({"path": "missing"}), "NOT_FOUND", "Search path 'missing' does not exist."),
        (json!({"path": "a.txt"}), "INVALID_PARAM", "Search path 'a.txt' is not a directory."),
        (json!({"path": "/"}), "ACCESS_DENIED", "Absolute paths are not allowed."),
        (json!({"path": "x/../.."}), "ACCESS_DENIED", "Path is outside project root."),
    ];
    for (args, code, message) in cases {
        assert_eq!(
            err(&run(&t, "Glob", args.clone())),
            (code.into(), message.into()),
            "{args}"
        );
    }
}

// ---------------------------------------------------------------- Registry

#[test]
fn registry_schemas_are_complete() {
    let reg = ToolRegistry::readonly();
    assert_eq!(reg.names(), ["Glob", "Grep", "Read"]);
    let tools = reg.openai_tools();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Glob", "Grep", "Read"]);
    for t in &tools {
        assert_eq!(t["type"], "function");
        let p = &t["function"]["parameters"];
        assert_eq!(p["type"], "object");
        assert_eq!(p["additionalProperties"], false);
        let props = p["properties"].as_object().unwrap();
        assert!(!props.is_empty());
        for (name, prop) in props {
            assert!(prop["type"].is_string(), "{name}");
            assert!(
                prop["description"].as_str().is_some_and(|d| d.len() > 10),
                "{name}"
            );
        }
        assert!(t["function"]["description"].as_str().unwrap().len() > 200);
    }
    let grep = &tools[1]["function"]["parameters"];
    let keys: Vec<&String> = grep["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "pattern",
            "path",
            "glob",
            "type",
            "case_sensitive",
            "output_mode",
            "context",
            "before",
            "after",
            "limit",
            "include_hidden",
            "include_ignored"
        ]
    );
    assert_eq!(grep["required"], json!(["pattern"]));
    assert_eq!(
        grep["properties"]["output_mode"]["enum"],
        json!(["content", "files_with_matches", "count"])
    );
    assert_eq!(
        grep["properties"]["limit"],
        json!({"type": "integer", "description": "Most results to return (lines, files or counts, by output_mode).", "default": 100, "minimum": 1, "maximum": 200})
    );
    assert_eq!(
        tools[2]["function"]["parameters"],
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file (relative to project root). Required."},
                "start_line": {"type": "integer", "description": "First line to return, 1-based.", "default": 1, "minimum": 1},
                "limit": {"type": "integer", "description": "How many lines to return.", "default": 500, "minimum": 1, "maximum": 2000}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    );
    let anthropic = reg.anthropic_tools();
    assert_eq!(anthropic.len(), 3);
    for (a, o) in anthropic.iter().zip(&tools) {
        assert_eq!(
            a,
            &json!({"name": o["function"]["name"], "description": o["function"]["description"], "input_schema": o["function"]["parameters"]})
        );
    }
}

#[test]
fn registry_execute_pipeline() {
    let t = tree(&[("a.txt", b"x\n")]);
    let reg = ToolRegistry::readonly();
    let child = PermissionContext::readonly_subagent();
    let parse = reg.execute("Read", "{\"path\": ", &t.ctx, &child);
    assert_eq!(
        parse.to_value(),
        json!({"status": "error", "data": {}, "text": "Tool arguments parse error: EOF while parsing a value at line 1 column 9",
               "stats": {"time_ms": 0}, "context": {"cwd": ".", "params_input": "{\"path\": "},
               "error": {"code": "INVALID_PARAM", "message": "Tool arguments parse error: EOF while parsing a value at line 1 column 9"}})
    );
    assert_eq!(
        err(&reg.execute("Read", "[\"a.txt\"]", &t.ctx, &child)),
        (
            "INVALID_PARAM".into(),
            "Read arguments must be a JSON object; got array.".into()
        )
    );
    assert_eq!(
        reg.execute("Glob", "", &t.ctx, &child).status,
        ToolStatus::Success
    );
    assert_eq!(
        reg.execute("Glob", None, &t.ctx, &child).status,
        ToolStatus::Success
    );

    let bash = reg.execute("Bash", r#"{"command": "cat /etc/passwd"}"#, &t.ctx, &child);
    let mut v = bash.to_value();
    v["stats"]["time_ms"] = json!(0);
    assert_eq!(
        v,
        json!({"status": "error", "data": {}, "text": "Tool 'Bash' denied by permission core.",
               "stats": {"time_ms": 0},
               "context": {"cwd": ".", "params_input": {"command": "cat /etc/passwd"}, "runtime_mode": "readonly_subagent"},
               "error": {"code": "PERMISSION_DENIED", "message": "Tool 'Bash' denied by permission core.",
                         "permission": {"risk": "high", "action": "deny", "reason": "readonly_subagent blocks Bash",
                                        "policy_source": "risk_classifier",
                                        "input_summary": "Bash({\"command\":\"cat /etc/passwd\"})",
                                        "effective_action": "deny"}}})
    );
    for name in ["Edit", "Task", "mcp__fetch", "read", ""] {
        assert_eq!(
            err(&reg.execute(name, "{}", &t.ctx, &child)).0,
            "PERMISSION_DENIED",
            "{name}"
        );
    }
    let main = PermissionContext::main_agent();
    assert_eq!(
        err(&reg.execute("Task", "{}", &t.ctx, &main)),
        (
            "NOT_FOUND".into(),
            "No tool named 'Task' is available; available: Glob, Grep, Read.".into()
        )
    );
    assert_eq!(
        err(&reg.execute("Bash", r#"{"command": "ls"}"#, &t.ctx, &main)),
        (
            "PERMISSION_DENIED".into(),
            "Tool 'Bash' requires confirmation by permission core.".into()
        )
    );
    let only_read = reg.filtered(["Read"]);
    let blocked = only_read.execute("Grep", r#"{"pattern": "x"}"#, &t.ctx, &child);
    assert_eq!(
        err(&blocked),
        (
            "PERMISSION_DENIED".into(),
            "Tool 'Grep' denied by permission core.".into()
        )
    );
    assert_eq!(
        blocked.to_value()["error"]["permission"]["policy_source"],
        json!("runtime_allowlist")
    );
    assert_eq!(
        only_read
            .execute("Read", r#"{"path": "a.txt"}"#, &t.ctx, &child)
            .status,
        ToolStatus::Success
    );
    let value_args = json!({"path": "a.txt"});
    assert_eq!(
        only_read
            .execute("Read", &value_args, &t.ctx, &child)
            .status,
        ToolStatus::Success
    );
}

// ---------------------------------------------------------------- Budgets

#[test]
fn budget_cuts_large_read_to_a_useful_head() {
    let line = format!("{}\n", "z".repeat(64));
    let t = tree(&[("big.txt", line.repeat(2000).as_bytes())]);
    let r = run(&t, "Read", json!({"path": "big.txt", "limit": 2000}));
    assert!(r.to_json().len() > 50_000);
    let cut = OutputBudget::default().apply("Read", r.clone());
    assert_eq!(cut.status, ToolStatus::Partial);
    assert_eq!(cut.context, r.context);
    let data = &cut.data;
    assert_eq!(data["truncated"], json!(true));
    assert_eq!(
        data["truncation"]["original_bytes"],
        json!(r.to_json().len())
    );
    assert_eq!(data["truncation"]["reason"], json!("result_bytes"));
    let preview = data["preview"].as_str().unwrap();
    assert!(preview.contains(&format!("   1 | {}\n   2 | ", "z".repeat(64))));
    assert!(cut.to_json().len() < 10_000);
    assert!(cut.text.contains("start_line and limit"), "{}", cut.text);
    // Nothing was written into the root.
    let entries: Vec<_> = std::fs::read_dir(&t.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["big.txt"]);
    // A 500-line page passes whole.
    let page = run(&t, "Read", json!({"path": "big.txt", "limit": 500}));
    assert_eq!(OutputBudget::default().apply("Read", page.clone()), page);
}

#[test]
fn budget_batch_fits_after_cutting_largest() {
    let line = format!("{}\n", "q".repeat(60));
    let t = tree(&[("a.txt", line.repeat(580).as_bytes())]);
    let one = run(&t, "Read", json!({"path": "a.txt", "limit": 580}));
    let size = one.to_json().len();
    assert!(size < 50_000 && size * 5 > MAX_TOOL_BATCH_BYTES, "{size}");
    let batch: Vec<(String, ToolResult)> =
        (0..5).map(|_| ("Read".to_string(), one.clone())).collect();
    let out = OutputBudget::default().apply_batch(batch);
    let replaced: Vec<bool> = out.iter().map(|r| r.data.contains_key("preview")).collect();
    assert_eq!(replaced, [true, false, false, false, false]);
    assert!(out.iter().map(|r| r.to_json().len()).sum::<usize>() <= MAX_TOOL_BATCH_BYTES);
    assert_eq!(out[0].data["truncation"]["reason"], json!("batch_bytes"));
}

#[test]
fn envelope_codes_serialize() {
    let r = ToolResult::error(&json!({}), ErrorCode::BinaryFile, "b", 0);
    assert_eq!(r.to_value()["error"]["code"], "BINARY_FILE");
    assert!(Path::new(".").exists());
}

/// A model that, before each reply, may rewrite one file: what a user editing the tree between
/// an agent's turns looks like to the agent.
struct EditingModel {
    file: std::path::PathBuf,
    turns: std::sync::Mutex<std::collections::VecDeque<(Option<&'static str>, ChatResponse)>>,
}

impl ChatModel for EditingModel {
    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let turn = self.turns.lock().unwrap().pop_front();
        Box::pin(async move {
            match turn {
                Some((edit, reply)) => {
                    if let Some(body) = edit {
                        std::fs::write(&self.file, body).unwrap();
                    }
                    Ok(reply)
                }
                None => Err(ModelError::new(
                    ModelErrorKind::Callback,
                    "script exhausted",
                )),
            }
        })
    }
    fn describe(&self) -> String {
        "editing".into()
    }
}

fn read_call(path: &str) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: "call_0".into(),
            name: "Read".into(),
            arguments: json!({"path": path}).to_string(),
        }],
        ..Default::default()
    }
}

/// One child run over `root`; the `modified_externally` flag of each Read result, in order.
async fn child_reads(root: &Path, turns: Vec<(Option<&'static str>, ChatResponse)>) -> Vec<bool> {
    let profile = explore_profile();
    let registry = ToolRegistry::readonly().filtered(profile.tool_allowlist.iter().cloned());
    let runner = RuntimeRunner {
        model: Arc::new(EditingModel {
            file: root.join("f.txt"),
            turns: std::sync::Mutex::new(turns.into()),
        }),
        tool_schemas: Arc::new(registry.openai_tools()),
        registry: Arc::new(registry),
        workspace: Workspace::new(root).unwrap(),
        permissions: PermissionContext::readonly_subagent(),
        trace: Arc::new(Trace::in_memory("child-test")),
        cancel: CancelToken::new(),
        extra_system: None,
        profile,
    };
    let out = runner.run("Read f.txt.").await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed, "{out:?}");
    out.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => {
                let v: Value = serde_json::from_str(content).unwrap();
                assert_eq!(v["status"], "success", "{v}");
                Some(v["data"].get("modified_externally") == Some(&json!(true)))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn modified_externally_is_remembered_per_child_across_turns() {
    let t = tree(&[("f.txt", b"one\n")]);
    let done = ChatResponse {
        content:
            r#"{"status": "completed", "summary": "s", "findings": ["f"], "evidence": ["f.txt:1"]}"#
                .into(),
        ..Default::default()
    };
    // Child A: read, read again unchanged, then the file changes before its third read.
    let a = child_reads(
        &t.root,
        vec![
            (None, read_call("f.txt")),
            (None, read_call("f.txt")),
            (Some("two lines\nnow\n"), read_call("f.txt")),
            (None, done.clone()),
        ],
    )
    .await;
    assert_eq!(a, [false, false, true]);
    // The file changes after A's last read; child B never read it, so nothing is flagged for B
    // (a process-wide memory, as in the reference, would flag B's first read).
    std::fs::write(t.root.join("f.txt"), "three\n").unwrap();
    let b = child_reads(
        &t.root,
        vec![(None, read_call("f.txt")), (None, done.clone())],
    )
    .await;
    assert_eq!(b, [false]);
}
