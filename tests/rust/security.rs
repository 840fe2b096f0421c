//! Attacks on the read-only tools: nothing outside the root is read or listed, nothing hangs,
//! nothing panics, and the tree is byte-for-byte unchanged afterwards.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use outrider::api::PermissionContext;
use outrider::api::ToolContext;
use outrider::api::ToolRegistry;
use outrider::api::Workspace;
use outrider::api::{ToolResult, ToolStatus};
use serde_json::{json, Value};

const SECRET: &str = "TOPSECRET-7f3a";

struct Arena {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {path:?}"
    );
}

/// A root with ordinary files, and next to it an "outside" directory holding the secret.
/// Inside the root: symlinks to the outside file and directory, a loop, a FIFO, /proc and /dev
/// links.
fn arena() -> Arena {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(dir.path().join("sibling.txt"), format!("{SECRET}\n")).unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("src/sub")).unwrap();
    std::fs::write(root.join("src/main.py"), "def main():\n    return 1\n").unwrap();
    std::fs::write(root.join("src/sub/util.py"), "x = 1\n").unwrap();
    std::fs::write(root.join("notes.txt"), "hello\n").unwrap();
    std::fs::write(root.join("weird name ü.txt"), "weird\n").unwrap();
    symlink(outside.join("secret.txt"), root.join("out_file")).unwrap();
    symlink(&outside, root.join("out_dir")).unwrap();
    symlink("../../outside/secret.txt", root.join("src/rel_out")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink(".", root.join("self_loop")).unwrap();
    symlink("/proc/self", root.join("proc_self")).unwrap();
    symlink("/dev/zero", root.join("zero")).unwrap();
    symlink("/etc/passwd", root.join("passwd")).unwrap();
    symlink("notes.txt", root.join("in_link")).unwrap();
    mkfifo(&root.join("fifo"));
    mkfifo(&root.join("src/pipe.py"));
    let ctx = ToolContext::new(Workspace::new(&root).unwrap());
    Arena {
        _dir: dir,
        root,
        ctx,
    }
}

/// Every entry under `root` (not following links): path → (kind, bytes or link target, mtime).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (String, Vec<u8>, i64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let (kind, body) = if ft.is_symlink() {
                (
                    "link",
                    std::fs::read_link(&p)
                        .unwrap()
                        .as_os_str()
                        .as_bytes()
                        .to_vec(),
                )
            } else if ft.is_dir() {
                stack.push(p.clone());
                ("dir", Vec::new())
            } else if ft.is_file() {
                ("file", std::fs::read(&p).unwrap())
            } else {
                ("special", Vec::new())
            };
            out.insert(p, (kind.to_string(), body, m.mtime()));
        }
    }
    out
}

/// Run one call on a watchdog: a call that blocks fails the test instead of hanging it.
fn call(a: &Arena, tool: &str, args: Value) -> ToolResult {
    let (tx, rx) = mpsc::channel();
    let ctx = a.ctx.clone();
    let tool_name = tool.to_string();
    let args2 = args.clone();
    std::thread::spawn(move || {
        let r = ToolRegistry::readonly().execute(
            &tool_name,
            &args2,
            &ctx,
            &PermissionContext::readonly_subagent(),
        );
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{tool} {args} did not return within 20 s"));
    let json = r.to_json();
    assert!(
        !json.contains(SECRET),
        "{tool} {args} leaked the secret: {json}"
    );
    assert!(
        !json.contains("root:x:0:0"),
        "{tool} {args} leaked /etc/passwd: {json}"
    );
    r
}

fn code(r: &ToolResult) -> String {
    match &r.error {
        Some(e) => e.code.as_str().to_string(),
        None => r.status.as_str().to_string(),
    }
}

fn listed(r: &ToolResult) -> Vec<String> {
    if let Some(p) = r.data.get("paths") {
        return serde_json::from_value(p.clone()).unwrap();
    }
    if let Some(m) = r.data.get("matches") {
        return m
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["file"].as_str().unwrap().to_string())
            .collect();
    }
    Vec::new()
}

/// `(tool, args, expected code)`: the attack table.
fn attacks() -> Vec<(&'static str, Value, &'static str)> {
    let long = "a/".repeat(3000) + "x";
    let deep_dots = "../".repeat(50) + "etc/passwd";
    vec![
        // traversal
        ("Read", json!({"path": "../sibling.txt"}), "ACCESS_DENIED"),
        (
            "Read",
            json!({"path": "../outside/secret.txt"}),
            "ACCESS_DENIED",
        ),
        (
            "Read",
            json!({"path": "src/../../sibling.txt"}),
            "ACCESS_DENIED",
        ),
        (
            "Read",
            json!({"path": "src/sub/../../../outside/secret.txt"}),
            "ACCESS_DENIED",
        ),
        ("Read", json!({"path": deep_dots}), "ACCESS_DENIED"),
        ("Read", json!({"path": "./../sibling.txt"}), "ACCESS_DENIED"),
        (
            "Grep",
            json!({"pattern": "TOP", "path": ".."}),
            "ACCESS_DENIED",
        ),
        (
            "Grep",
            json!({"pattern": "TOP", "path": "src/../.."}),
            "ACCESS_DENIED",
        ),
        ("Glob", json!({"path": ".."}), "ACCESS_DENIED"),
        ("Glob", json!({"path": "../outside"}), "ACCESS_DENIED"),
        ("Glob", json!({"pattern": "../*"}), "success"),
        ("Glob", json!({"pattern": "../outside/*"}), "success"),
        (
            "Grep",
            json!({"pattern": "TOP", "glob": "../**"}),
            "success",
        ),
        // absolute
        ("Read", json!({"path": "/etc/passwd"}), "ACCESS_DENIED"),
        ("Read", json!({"path": "//etc/passwd"}), "ACCESS_DENIED"),
        ("Read", json!({"path": "\\etc\\passwd"}), "ACCESS_DENIED"),
        (
            "Grep",
            json!({"pattern": "root", "path": "/etc"}),
            "ACCESS_DENIED",
        ),
        (
            "Grep",
            json!({"pattern": "root", "path": "/"}),
            "ACCESS_DENIED",
        ),
        ("Glob", json!({"path": "/"}), "ACCESS_DENIED"),
        ("Glob", json!({"path": "/tmp"}), "ACCESS_DENIED"),
        ("Glob", json!({"pattern": "/etc/*"}), "success"),
        // symlinks out (file, directory, relative)
        ("Read", json!({"path": "out_file"}), "ACCESS_DENIED"),
        (
            "Read",
            json!({"path": "out_dir/secret.txt"}),
            "ACCESS_DENIED",
        ),
        ("Read", json!({"path": "src/rel_out"}), "ACCESS_DENIED"),
        ("Read", json!({"path": "passwd"}), "ACCESS_DENIED"),
        (
            "Grep",
            json!({"pattern": "TOP", "path": "out_dir"}),
            "ACCESS_DENIED",
        ),
        ("Glob", json!({"path": "out_dir"}), "ACCESS_DENIED"),
        (
            "Glob",
            json!({"pattern": "**", "path": "out_dir"}),
            "ACCESS_DENIED",
        ),
        (
            "Grep",
            json!({"pattern": "TOP", "include_hidden": true, "include_ignored": true}),
            "success",
        ),
        (
            "Glob",
            json!({"pattern": "**/*", "include_hidden": true, "include_ignored": true}),
            "success",
        ),
        ("Glob", json!({"pattern": "out_dir/*"}), "success"),
        // loops
        ("Read", json!({"path": "loop_a"}), "INTERNAL_ERROR"),
        (
            "Grep",
            json!({"pattern": "x", "path": "loop_b"}),
            "INTERNAL_ERROR",
        ),
        ("Glob", json!({"path": "loop_a"}), "INTERNAL_ERROR"),
        (
            "Read",
            json!({"path": "self_loop/self_loop/self_loop/notes.txt"}),
            "success",
        ),
        ("Glob", json!({"pattern": "self_loop/**"}), "success"),
        // FIFOs and devices: refused without opening, never blocking
        ("Read", json!({"path": "fifo"}), "INVALID_PARAM"),
        ("Read", json!({"path": "src/pipe.py"}), "INVALID_PARAM"),
        ("Grep", json!({"pattern": "x", "glob": "*.py"}), "success"),
        (
            "Grep",
            json!({"pattern": "x", "path": "fifo"}),
            "INVALID_PARAM",
        ),
        ("Glob", json!({"path": "fifo"}), "INVALID_PARAM"),
        ("Read", json!({"path": "zero"}), "ACCESS_DENIED"),
        ("Read", json!({"path": "/dev/zero"}), "ACCESS_DENIED"),
        ("Read", json!({"path": "/dev/stdin"}), "ACCESS_DENIED"),
        // /proc
        (
            "Read",
            json!({"path": "/proc/self/environ"}),
            "ACCESS_DENIED",
        ),
        (
            "Read",
            json!({"path": "proc_self/environ"}),
            "ACCESS_DENIED",
        ),
        (
            "Grep",
            json!({"pattern": "PATH", "path": "proc_self"}),
            "ACCESS_DENIED",
        ),
        ("Glob", json!({"path": "proc_self/fd"}), "ACCESS_DENIED"),
        // NUL bytes
        (
            "Read",
            json!({"path": "notes.txt\u{0}.png"}),
            "INVALID_PARAM",
        ),
        (
            "Grep",
            json!({"pattern": "x", "path": "src\u{0}"}),
            "INVALID_PARAM",
        ),
        ("Glob", json!({"path": "\u{0}"}), "INVALID_PARAM"),
        ("Grep", json!({"pattern": "a\u{0}b"}), "INVALID_PARAM"),
        // odd paths
        ("Read", json!({"path": long}), "INVALID_PARAM"),
        (
            "Grep",
            json!({"pattern": "x", "path": "b".repeat(300)}),
            "INVALID_PARAM",
        ),
        ("Read", json!({"path": "."}), "IS_DIRECTORY"),
        ("Read", json!({"path": "~/.bashrc"}), "NOT_FOUND"),
        ("Read", json!({"path": "notes.txt/"}), "success"),
        ("Read", json!({"path": "weird name ü.txt"}), "success"),
        ("Read", json!({"path": "in_link"}), "success"),
        ("Read", json!({"path": "line\nbreak"}), "NOT_FOUND"),
        ("Read", json!({"path": " "}), "NOT_FOUND"),
        ("Glob", json!({"path": "src/./sub/.."}), "success"),
        ("Grep", json!({"pattern": "x", "path": "./"}), "success"),
        // wrong argument types
        ("Read", json!({"path": ["../sibling.txt"]}), "INVALID_PARAM"),
        (
            "Read",
            json!({"path": {"p": "/etc/passwd"}}),
            "INVALID_PARAM",
        ),
        ("Grep", json!({"pattern": ["x"]}), "INVALID_PARAM"),
        ("Grep", json!({"pattern": "x", "path": 0}), "INVALID_PARAM"),
        ("Glob", json!({"pattern": {"x": 1}}), "INVALID_PARAM"),
        ("Glob", json!({"limit": "1e9"}), "INVALID_PARAM"),
        ("Read", json!("../sibling.txt"), "INVALID_PARAM"),
        // not read-only, or unknown
        (
            "Bash",
            json!({"command": "cat ../sibling.txt"}),
            "PERMISSION_DENIED",
        ),
        (
            "Edit",
            json!({"path": "notes.txt", "old": "hello", "new": "x"}),
            "PERMISSION_DENIED",
        ),
        ("Task", json!({"prompt": "x"}), "PERMISSION_DENIED"),
        ("Write", json!({"path": "x"}), "PERMISSION_DENIED"),
        (
            "mcp__filesystem__read",
            json!({"path": "/etc/passwd"}),
            "PERMISSION_DENIED",
        ),
        ("READ", json!({"path": "notes.txt"}), "PERMISSION_DENIED"),
        ("Read ", json!({"path": "notes.txt"}), "PERMISSION_DENIED"),
    ]
}

#[test]
fn attack_table() {
    let a = arena();
    let before = snapshot(&a.root);
    let cases = attacks();
    assert!(cases.len() >= 75, "{}", cases.len());
    let mut failures = Vec::new();
    for (tool, args, expected) in &cases {
        let r = call(&a, tool, args.clone());
        if code(&r) != *expected {
            failures.push(format!(
                "{tool} {args}: expected {expected}, got {}",
                r.to_json()
            ));
        }
        for p in listed(&r) {
            let abs = a.root.join(p.trim_end_matches('/'));
            let target = std::fs::canonicalize(&abs).unwrap_or_else(|_| abs.clone());
            assert!(
                target.starts_with(&a.root)
                    || target.starts_with(std::fs::canonicalize(&a.root).unwrap()),
                "{tool} {args} listed {p}"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(snapshot(&a.root), before, "the tree changed");
}

#[test]
fn walks_never_list_links_or_special_files() {
    let a = arena();
    let all = call(
        &a,
        "Glob",
        json!({"pattern": "**", "include_hidden": true, "include_ignored": true}),
    );
    assert_eq!(
        listed(&all),
        [
            "notes.txt",
            "src/main.py",
            "src/sub/util.py",
            "weird name ü.txt"
        ]
    );
    let listing = call(&a, "Glob", json!({}));
    assert_eq!(listing.status, ToolStatus::Success);
    let names = listed(&listing);
    for bad in [
        "out_file",
        "out_dir/",
        "loop_a",
        "proc_self/",
        "zero",
        "passwd",
        "in_link",
        "self_loop/",
    ] {
        assert!(!names.contains(&bad.to_string()), "{bad} listed: {names:?}");
    }
    let grep = call(
        &a,
        "Grep",
        json!({"pattern": ".", "include_hidden": true, "include_ignored": true, "limit": 200}),
    );
    let mut files = listed(&grep);
    files.dedup();
    assert_eq!(
        files,
        [
            "notes.txt",
            "src/main.py",
            "src/main.py",
            "src/sub/util.py",
            "weird name ü.txt"
        ]
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
    );
}

#[test]
fn ignore_files_above_the_root_are_not_consulted() {
    let a = arena();
    // A .gitignore next to the root (outside it) must not hide files inside the root.
    std::fs::write(
        a.root.parent().unwrap().join(".gitignore"),
        "*.py\nnotes.txt\n",
    )
    .unwrap();
    let r = call(&a, "Glob", json!({"pattern": "**/*.py"}));
    assert_eq!(listed(&r), ["src/main.py", "src/sub/util.py"]);
    let r = call(&a, "Grep", json!({"pattern": "hello"}));
    assert_eq!(listed(&r), ["notes.txt"]);
}

#[test]
fn file_swapped_for_fifo_does_not_block() {
    let a = arena();
    let ws = Workspace::new(&a.root).unwrap();
    let resolved = ws.resolve_file("notes.txt").unwrap();
    std::fs::remove_file(a.root.join("notes.txt")).unwrap();
    mkfifo(&a.root.join("notes.txt"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(ws.open(&resolved).map(|_| ()).map_err(|e| e.kind()));
    });
    let outcome = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("open blocked on a FIFO");
    assert!(
        matches!(outcome, Err("not_regular" | "conflict")),
        "{outcome:?}"
    );
}

#[test]
fn file_swapped_for_symlink_is_refused() {
    let a = arena();
    let ws = Workspace::new(&a.root).unwrap();
    let resolved = ws.resolve_file("notes.txt").unwrap();
    std::fs::remove_file(a.root.join("notes.txt")).unwrap();
    symlink(
        a.root.parent().unwrap().join("sibling.txt"),
        a.root.join("notes.txt"),
    )
    .unwrap();
    let err = ws.open(&resolved).unwrap_err();
    assert_eq!(err.kind(), "conflict");
}

/// Ignore files are read through the workspace: a FIFO `.gitignore` cannot hang a search, a
/// symlinked one is not followed out of the root (its rules, which would hide everything, are
/// not applied), one linked to /dev/zero cannot exhaust memory, and each refusal is reported.
#[test]
fn hostile_ignore_files_are_refused_and_reported() {
    for (name, make) in [("fifo", 0), ("outside", 1), ("zero", 2), ("nested-fifo", 3)] {
        let a = arena();
        let outside_rules = a.root.parent().unwrap().join("outside/rules");
        std::fs::write(&outside_rules, "*\n").unwrap();
        match make {
            0 => mkfifo(&a.root.join(".gitignore")),
            1 => symlink(&outside_rules, a.root.join(".gitignore")).unwrap(),
            2 => symlink("/dev/zero", a.root.join(".ignore")).unwrap(),
            _ => mkfifo(&a.root.join("src/.gitignore")),
        }
        let before = snapshot(&a.root);
        for tool in ["Grep", "Glob"] {
            let args = if tool == "Grep" {
                json!({"pattern": "return", "output_mode": "files_with_matches"})
            } else {
                json!({"pattern": "**/*.py"})
            };
            let r = call(&a, tool, args);
            assert_eq!(
                r.data["refused_ignore_files"],
                json!(1),
                "{name} {tool}: {r:?}"
            );
            let found = r.to_json();
            assert!(found.contains("src/main.py"), "{name} {tool}: {found}");
        }
        assert_eq!(snapshot(&a.root), before, "{name}: the tree changed");
    }
}

/// Ordinary ignore files still work at every depth, with whitelists.
#[test]
fn plain_ignore_files_still_apply() {
    let a = arena();
    // Nothing above the root is consulted: a FIFO there is never opened nor counted.
    mkfifo(&a.root.parent().unwrap().join(".gitignore"));
    std::fs::write(a.root.join(".gitignore"), "*.txt\n!keep.txt\n").unwrap();
    std::fs::write(a.root.join("keep.txt"), "kept\n").unwrap();
    std::fs::write(a.root.join("src/.ignore"), "sub/\n").unwrap();
    let r = call(&a, "Glob", json!({"pattern": "**/*"}));
    let paths = listed(&r);
    assert!(paths.contains(&"keep.txt".to_string()), "{paths:?}");
    assert!(!paths.contains(&"notes.txt".to_string()), "{paths:?}");
    assert!(paths.contains(&"src/main.py".to_string()), "{paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with("src/sub")), "{paths:?}");
    assert_eq!(r.data.get("refused_ignore_files"), None);
}
