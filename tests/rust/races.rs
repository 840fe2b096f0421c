//! Races against the read-only tools: a directory swapped for a symlink to outside in a loop
//! (`renameat2(RENAME_EXCHANGE)`), and a root replaced by a symlink after the workspace was
//! built, never make Read, Grep, Glob or the evidence check return outside names or content.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use outrider::api::check_evidence;
use outrider::api::PermissionContext;
use outrider::api::ToolContext;
use outrider::api::ToolRegistry;
use outrider::api::Workspace;
use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::{json, Value};

/// Content only the outside files hold.
const MARKER: &str = "OUTSIDE-MARKER-5d21";
/// A name only the outside directory holds.
const OUTSIDE_NAME: &str = "outside_only_name.txt";

/// `<tmp>/outside` holds the marker under the same name as an inside file (`inner.txt`, three
/// lines there, one line inside) and a name of its own; `<tmp>/root/d` is an inside directory,
/// `<tmp>/root/l` a symlink to the outside directory.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(
        outside.join("inner.txt"),
        format!("{MARKER}\n{MARKER}\n{MARKER}\n"),
    )
    .unwrap();
    std::fs::write(outside.join(OUTSIDE_NAME), format!("{MARKER}\n")).unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/inner.txt"), "inside\n").unwrap();
    std::fs::write(root.join("top.txt"), "inside top\n").unwrap();
    symlink(&outside, root.join("l")).unwrap();
    (dir, root)
}

fn run(ctx: &ToolContext, tool: &str, args: Value) -> String {
    ToolRegistry::readonly()
        .execute(tool, &args, ctx, &PermissionContext::readonly_subagent())
        .to_json()
}

fn escaped(text: &str) -> bool {
    text.contains(MARKER) || text.contains(OUTSIDE_NAME)
}

/// What one call showed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Saw {
    /// Something from outside: an escape.
    Outside,
    /// The inside content or names.
    Inside,
    /// Neither (an error, or the swap hid the directory).
    Nothing,
}

fn saw(text: &str, inside: &str) -> Saw {
    if escaped(text) {
        Saw::Outside
    } else if text.contains(inside) {
        Saw::Inside
    } else {
        Saw::Nothing
    }
}

/// One call the race runs: its name, and what its result showed.
type Call = (&'static str, fn(&ToolContext) -> Saw);

/// Every call the race runs, each in its own thread so the fast ones run often.
const CALLS: [Call; 6] = [
    ("Read d/inner.txt", |ctx| {
        saw(&run(ctx, "Read", json!({"path": "d/inner.txt"})), "inside")
    }),
    ("Grep root", |ctx| {
        saw(
            &run(ctx, "Grep", json!({"pattern": "MARKER|inside"})),
            "d/inner.txt",
        )
    }),
    ("Grep d", |ctx| {
        saw(
            &run(
                ctx,
                "Grep",
                json!({"pattern": "MARKER|inside", "path": "d"}),
            ),
            "d/inner.txt",
        )
    }),
    ("Glob **", |ctx| {
        saw(&run(ctx, "Glob", json!({"pattern": "**"})), "d/inner.txt")
    }),
    ("Glob d", |ctx| {
        saw(&run(ctx, "Glob", json!({"path": "d"})), "d/inner.txt")
    }),
    // The inside file has one line, the outside one three.
    ("check_evidence", |ctx| {
        let checks = check_evidence(
            &ctx.workspace,
            &["d/inner.txt:3".to_string(), "d/inner.txt:1".to_string()],
        );
        if checks[0].grounded {
            Saw::Outside
        } else if checks[1].grounded {
            Saw::Inside
        } else {
            Saw::Nothing
        }
    }),
];

#[test]
fn swapping_a_directory_for_an_outside_symlink_never_escapes() {
    let (_dir, root) = tree();
    let ctx = ToolContext::new(Workspace::new(&root).unwrap());
    let stop = AtomicBool::new(false);
    let swaps = AtomicU64::new(0);
    let started = Instant::now();
    let counts: Vec<(&str, u64, u64, u64)> = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(
                    CWD,
                    root.join("d"),
                    CWD,
                    root.join("l"),
                    RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE)");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        });
        let runners: Vec<_> = CALLS
            .iter()
            .map(|&(name, call)| {
                let ctx = &ctx;
                s.spawn(move || {
                    let (mut runs, mut escapes, mut inside) = (0u64, 0u64, 0u64);
                    while started.elapsed() < Duration::from_secs(2) {
                        match call(ctx) {
                            Saw::Outside => escapes += 1,
                            Saw::Inside => inside += 1,
                            Saw::Nothing => {}
                        }
                        runs += 1;
                    }
                    (name, runs, escapes, inside)
                })
            })
            .collect();
        let counts = runners.into_iter().map(|r| r.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        counts
    });
    eprintln!(
        "{} swaps; (call, runs, escapes, inside results): {counts:?}",
        swaps.load(Ordering::Relaxed)
    );
    for (name, runs, _, inside) in &counts {
        assert!(*runs > 10, "{name} ran only {runs} times");
        // The calls work while the race runs, they do not just fail.
        assert!(
            *inside > 0,
            "{name} never saw the inside directory in {runs} runs"
        );
    }
    let escaped: Vec<_> = counts.iter().filter(|c| c.2 > 0).collect();
    assert!(
        escaped.is_empty(),
        "outside content or names escaped: {escaped:?}"
    );
}

fn replace_root_with_outside_link(root: &Path) -> PathBuf {
    let moved = root.with_file_name("root-moved");
    std::fs::rename(root, &moved).unwrap();
    symlink(root.with_file_name("outside"), root).unwrap();
    moved
}

#[test]
fn a_root_replaced_by_a_symlink_is_not_followed() {
    let (_dir, root) = tree();
    let ctx = ToolContext::new(Workspace::new(&root).unwrap());
    replace_root_with_outside_link(&root);
    let results = [
        run(&ctx, "Read", json!({"path": "inner.txt"})),
        run(&ctx, "Read", json!({"path": "d/inner.txt"})),
        run(&ctx, "Grep", json!({"pattern": "MARKER|inside"})),
        run(&ctx, "Glob", json!({"pattern": "**"})),
        run(&ctx, "Glob", json!({})),
    ];
    for r in &results {
        assert!(!escaped(r), "outside content or names escaped: {r}");
    }
    // The original directory is still the one searched.
    assert!(results[1].contains("inside"), "{}", results[1]);
    assert!(results[2].contains("top.txt"), "{}", results[2]);
    assert!(results[3].contains("d/inner.txt"), "{}", results[3]);
    let evidence = check_evidence(
        &ctx.workspace,
        &["inner.txt:1".to_string(), "d/inner.txt:1".to_string()],
    );
    assert_eq!(
        evidence.iter().map(|e| e.grounded).collect::<Vec<_>>(),
        [false, true],
        "{evidence:?}"
    );
}
