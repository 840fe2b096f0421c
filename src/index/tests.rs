use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::*;

fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let ws = Workspace::new(dir.path()).expect("workspace");
    (dir, ws)
}

fn top(index: &Index, question: &str, n: usize) -> Vec<String> {
    let q = rank::parse(question);
    rank::search(index, &q, n, None)
        .into_iter()
        .map(|h| {
            let f = &index.files[h.file];
            let c = &f.chunks.chunks[h.chunk];
            format!("{}:{}:{}", f.path, c.start, c.name)
        })
        .collect()
}

const FILES: &[(&str, &str)] = &[
    (
        "src/serde/de.rs",
        "pub fn deserialize_any() {}\npub fn set_join_waker() {}\n",
    ),
    (
        "src/serde_core/ser.rs",
        "/// Turns a value into a data format.\npub trait Serialize {\n    fn serialize(&self);\n}\n",
    ),
    (
        "arch/x86/alpha.rs",
        "fn serialize_helper() { serialize(); serialize(); serialize(); }\n",
    ),
    (
        "tests/test_ser.rs",
        "fn test_serialize() { Serialize::serialize(); }\n",
    ),
    (
        "src/join_set.rs",
        "pub struct JoinSet<T> {\n    inner: Vec<T>,\n}\nimpl<T> JoinSet<T> {\n    pub fn spawn(&mut self) {}\n}\n",
    ),
    ("README.md", "# Serialize things\nSerialize and JoinSet are documented here.\n"),
    (".git/config", "[core]\n"),
    ("build/gen.rs", "pub trait Serialize {}\n"),
    (".gitignore", "ignored.rs\n"),
    ("ignored.rs", "pub trait Serialize {}\n"),
];

#[test]
fn exact_identifiers_and_definitions_rank_first() {
    let (_d, ws) = tree(FILES);
    let mut index = Index::default();
    let r = index.refresh(&ws, None, &AtomicBool::new(false));
    // Hidden, default-ignored and gitignored files are not indexed.
    let paths: Vec<&str> = index.files.iter().map(|f| f.path.as_str()).collect();
    assert!(
        !paths
            .iter()
            .any(|p| p.starts_with(".git/") || p.starts_with("build/") || *p == "ignored.rs"),
        "{paths:?}"
    );
    assert_eq!(r.read, index.files.len());
    assert!(index.coverage.complete());
    assert_eq!(
        top(&index, "Where is the Serialize trait defined?", 1),
        ["src/serde_core/ser.rs:2:Serialize"]
    );
    assert_eq!(
        top(&index, "Where is JoinSet?", 1),
        ["src/join_set.rs:1:JoinSet"]
    );
}

#[test]
fn refresh_reads_only_what_changed_and_drops_what_is_gone() {
    let (dir, ws) = tree(FILES);
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    let again = index.refresh(&ws, None, &AtomicBool::new(false));
    assert_eq!((again.read, again.dropped), (0, 0));
    std::fs::write(
        dir.path().join("src/join_set.rs"),
        "pub fn spawn_blocking_task() {}\n",
    )
    .expect("write");
    std::fs::remove_file(dir.path().join("src/serde/de.rs")).expect("rm");
    let changed = index.refresh(&ws, None, &AtomicBool::new(false));
    assert_eq!((changed.read, changed.dropped), (1, 1));
    assert_eq!(
        top(&index, "spawn_blocking_task", 1),
        ["src/join_set.rs:1:spawn_blocking_task"]
    );
    assert!(top(&index, "deserialize_any", 5)
        .iter()
        .all(|h| !h.starts_with("src/serde/de.rs")));
}

#[test]
fn a_deadline_leaves_files_pending_not_stale() {
    let (_d, ws) = tree(FILES);
    let mut index = Index::default();
    let past = Instant::now();
    index.refresh(&ws, Some(past), &AtomicBool::new(false));
    assert!(!index.coverage.complete());
    assert_eq!(index.files.len(), 0);
    assert!(index.coverage.pending > 0);
}

#[test]
fn the_disk_cache_round_trips_and_refuses_foreign_roots() {
    let (dir, ws) = tree(FILES);
    let cache = tempfile::tempdir().expect("cache");
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    let file = store::cache_file_in(cache.path().to_path_buf(), ws.root()).expect("cache file");
    store::save_to(&file, ws.root(), &index);
    let mut loaded: Index = store::load_from(&file, ws.root()).expect("loaded");
    loaded.rebuild_ids();
    assert_eq!(loaded.files.len(), index.files.len());
    assert_eq!(top(&loaded, "JoinSet", 1), top(&index, "JoinSet", 1));
    assert!(store::load_from::<Index>(&file, Path::new("/elsewhere")).is_none());
    // A cache directory inside the root is never used.
    assert!(store::cache_file_in(dir.path().join("cache"), ws.root()).is_none());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(mode & 0o077, 0, "cache file must be private: {mode:o}");
}

#[test]
fn the_disk_cache_keeps_only_the_most_recent_indexes() {
    let cache = tempfile::tempdir().expect("cache");
    let index = Index::default();
    for i in 0..(store::MAX_CACHED + 5) {
        let root = PathBuf::from(format!("/tree/{i}"));
        let file = store::cache_file_in(cache.path().to_path_buf(), &root).expect("file");
        store::save_to(&file, &root, &index);
    }
    let left = std::fs::read_dir(cache.path().join("index"))
        .expect("dir")
        .count();
    assert_eq!(left, store::MAX_CACHED);
}
