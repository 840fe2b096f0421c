use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::*;

fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
        // Written long ago: a file written in the last seconds is read again by the next
        // walk (it is racily clean), which would blur what these tests count.
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .and_then(|f| f.set_modified(long_ago))
            .expect("mtime");
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
    let held = store::CacheDir::open(cache.path(), ws.root(), true).expect("cache dir");
    held.save(ws.root(), &index);
    let mut loaded: Index = held.load(ws.root()).expect("loaded");
    loaded.rebuild_ids();
    assert_eq!(loaded.damage(), None);
    assert_eq!(loaded.files.len(), index.files.len());
    assert_eq!(top(&loaded, "JoinSet", 1), top(&index, "JoinSet", 1));
    assert!(held.load::<Index>(Path::new("/elsewhere")).is_none());
    // A cache directory inside the root is never used.
    assert!(store::CacheDir::open(&dir.path().join("cache"), ws.root(), true).is_none());
    assert!(!dir.path().join("cache").exists());
    use std::os::unix::fs::PermissionsExt;
    let file = cache
        .path()
        .join("index")
        .join(store::CacheDir::file_name(ws.root()));
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(mode & 0o077, 0, "cache file must be private: {mode:o}");
}

#[test]
fn the_disk_cache_keeps_every_index_a_batch_uses_under_its_size_bound() {
    // A batch over 40 repositories: under the default bound every index stays.
    let cache = tempfile::tempdir().expect("cache");
    let index = Index::default();
    for i in 0..40 {
        let root = PathBuf::from(format!("/tree/{i}"));
        let held = store::CacheDir::open(cache.path(), &root, true).expect("dir");
        held.save(&root, &index);
    }
    for i in 0..40 {
        let root = PathBuf::from(format!("/tree/{i}"));
        let held = store::CacheDir::open(cache.path(), &root, false).expect("dir");
        assert!(held.load::<Index>(&root).is_some(), "index {i} was evicted");
    }
}

#[test]
fn the_disk_cache_evicts_the_least_recently_used_past_its_bound() {
    let cache = tempfile::tempdir().expect("cache");
    let (_d, ws) = tree(FILES);
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    let root = |n: &str| PathBuf::from(format!("/tree/{n}"));
    let dir = |bound: u64| {
        store::CacheDir::open(cache.path(), &root("a"), true)
            .expect("dir")
            .with_max_total(bound)
    };
    dir(u64::MAX).save(&root("a"), &index);
    let file = cache
        .path()
        .join("index")
        .join(store::CacheDir::file_name(&root("a")));
    let one = std::fs::metadata(&file).expect("meta").len();
    // Room for three indexes.
    let bound = 3 * one + one / 2;
    let pause = || std::thread::sleep(std::time::Duration::from_millis(20));
    for n in ["b", "c"] {
        pause();
        dir(bound).save(&root(n), &index);
    }
    pause();
    // `a`, the oldest written, is used again: `b` is now the least recently used.
    assert!(dir(bound).load::<Index>(&root("a")).is_some());
    pause();
    dir(bound).save(&root("d"), &index);
    let held = dir(bound);
    let kept: Vec<bool> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| held.load::<Index>(&root(n)).is_some())
        .collect();
    assert_eq!(kept, [true, false, true, true]);
    // An index bigger than the whole bound is not cached, and evicts nothing.
    dir(one / 2).save(&root("e"), &index);
    assert!(dir(u64::MAX).load::<Index>(&root("e")).is_none());
    assert!(dir(u64::MAX).load::<Index>(&root("d")).is_some());
}

/// Every regular file under `dir` with its bytes (what a write inside it would change).
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let ty = e.file_type().expect("type");
            if ty.is_dir() {
                stack.push(e.path());
            } else if ty.is_file() {
                out.push((e.path(), std::fs::read(e.path()).expect("read")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_cache_directory_spelled_into_the_root_is_refused_before_it_exists() {
    let base = tempfile::tempdir().expect("base");
    let root = base.path().join("repo");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/a.rs"), "pub fn alpha_beta() {}\n").expect("write");
    std::os::unix::fs::symlink(&root, base.path().join("link")).expect("symlink");
    let ws = Workspace::new(&root).expect("workspace");
    let before = files_under(&root);
    let outside = base.path().join("cache-out");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::os::unix::fs::symlink(root.join("src"), outside.join("index")).expect("symlink");
    for spelling in [
        // `..` past a directory that does not exist yet.
        base.path().join("missing/../repo/.cache"),
        base.path().join("missing/deeper/../../repo/.cache"),
        // A symlink into the root, then a directory that does not exist yet.
        base.path().join("link/.cache"),
        base.path().join("link/src/.cache/deeper"),
        // Relative to a directory inside the root.
        root.join("src/../.cache"),
        // The cache directory is outside, but its `index` folder is a symlink into the root.
        outside.clone(),
    ] {
        assert!(
            store::CacheDir::open(&spelling, ws.root(), true).is_none(),
            "{spelling:?}"
        );
        let mut index = Index::default();
        let r = up_to_date(
            &mut index,
            &ws,
            false,
            Some(&spelling),
            None,
            &AtomicBool::new(false),
        );
        assert_eq!((r.read, index.files.len()), (1, 1), "{spelling:?}");
        assert_eq!(
            files_under(&root),
            before,
            "{spelling:?} wrote inside the root"
        );
        assert!(!root.join(".cache").exists(), "{spelling:?}");
    }
    // A cache directory beside the root, spelled with `..`, is used.
    let beside = root.join("../cache-beside");
    let mut index = Index::default();
    up_to_date(
        &mut index,
        &ws,
        false,
        Some(&beside),
        None,
        &AtomicBool::new(false),
    );
    assert!(base
        .path()
        .join("cache-beside/index")
        .join(store::CacheDir::file_name(ws.root()))
        .is_file());
    assert_eq!(files_under(&root), before);
}

#[test]
fn a_damaged_cache_is_rebuilt_never_trusted() {
    let (_d, ws) = tree(FILES);
    let cache = tempfile::tempdir().expect("cache");
    let mut good = Index::default();
    good.refresh(&ws, None, &AtomicBool::new(false));
    let expected = top(&good, "Where is JoinSet?", 1);
    let held = store::CacheDir::open(cache.path(), ws.root(), true).expect("dir");
    type Damage = fn(&mut Index);
    let damages: [(&str, Damage); 6] = [
        ("a term id past the vocabulary", |i| {
            let n = i.vocab.len() as u32;
            i.files[0].chunks.terms[0] = ((n + 7) << 8) | 1;
        }),
        ("a count of zero", |i| i.files[0].chunks.terms[0] &= !0xff),
        ("a chunk's terms past the list", |i| {
            i.files[0].chunks.chunks[0].terms_at = u32::MAX;
        }),
        ("chunks' terms out of order", |i| {
            let f = i
                .files
                .iter_mut()
                .find(|f| f.chunks.chunks.len() > 1)
                .expect("two chunks");
            f.chunks.chunks[1].terms_at = 0;
            f.chunks.chunks[0].terms_at = 1;
        }),
        ("a path out of the root", |i| {
            i.files[0].path = "../outside.rs".into();
        }),
        ("a term twice in the vocabulary", |i| {
            let first = i.vocab[0].clone();
            i.vocab.push(first);
        }),
    ];
    for (what, damage) in damages {
        let mut bad = Index {
            files: good.files.clone(),
            vocab: good.vocab.clone(),
            coverage: good.coverage.clone(),
            ..Index::default()
        };
        damage(&mut bad);
        held.save(ws.root(), &bad);
        let mut index = Index::default();
        let r = up_to_date(
            &mut index,
            &ws,
            false,
            Some(cache.path()),
            None,
            &AtomicBool::new(false),
        );
        assert_eq!(r.source, "built", "{what}");
        assert_eq!(top(&index, "Where is JoinSet?", 1), expected, "{what}");
        // The damaged file was overwritten by the rebuilt index.
        let mut again: Index = held.load(ws.root()).expect("rewritten");
        again.rebuild_ids();
        assert_eq!(again.damage(), None, "{what}");
    }
}

#[test]
fn a_question_is_read_up_to_a_bound_and_says_what_it_left_out() {
    // 100,000 distinct words (600 KB): read up to the bound, the rest counted.
    let words: Vec<String> = (0..100_000).map(|i| format!("w{i}x")).collect();
    let q = rank::parse(&words.join(" "));
    assert!(
        q.terms.len() <= rank::MAX_QUERY_TERMS + 40,
        "{}",
        q.terms.len()
    );
    assert_eq!(q.left_out + q.terms.len(), words.len());
    let last = q.last_read.clone().expect("last read");
    let first_out = q.first_left_out.clone().expect("first left out");
    let at = words
        .iter()
        .position(|w| *w == first_out)
        .expect("a word of the query");
    assert_eq!(words[at - 1], last);
    // Long words or many quoted ones: bounded by characters too.
    let long = format!("`{}`", "ab ".repeat(50_000));
    let q = rank::parse(&long);
    assert!(q.left_out > 40_000, "{}", q.left_out);
    // Short questions lose nothing.
    let q = rank::parse("Where is the `JoinSet` spawned?");
    assert_eq!((q.left_out, q.first_left_out, q.last_read), (0, None, None));
}

#[test]
fn ranking_gives_up_at_its_deadline() {
    let (_d, ws) = tree(FILES);
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    let q = rank::parse("JoinSet serialize");
    let many: Vec<IndexedFile> = (0..3)
        .flat_map(|_| index.files.clone())
        .cycle()
        .take(20_000)
        .enumerate()
        .map(|(i, mut f)| {
            f.path = format!("d/{i:06}.rs");
            f
        })
        .collect();
    index.files = many;
    let past = Some(Instant::now());
    assert!(rank::search_until(&index, &q, 10, None, past).is_none());
    assert!(rank::search_until(&index, &q, 10, None, None).is_some_and(|h| !h.is_empty()));
}

#[test]
fn a_search_never_waits_for_the_index_past_its_own_deadline() {
    use crate::tools::context::ToolContext;
    use crate::tools::tool::Tool;
    let (_d, ws) = tree(FILES);
    let (handle, _) = open(&ws, None, &AtomicBool::new(false)).expect("opened");
    // Another search holds the index (as a long one did, past its own caller's limit).
    let held = handle.lock().expect("lock");
    let (tx, rx) = std::sync::mpsc::channel();
    let ctx = ToolContext::new(ws.clone()).with_timeout(std::time::Duration::from_millis(200));
    std::thread::spawn(move || {
        let r =
            crate::tools::search::SearchTool.run(&ctx, &serde_json::json!({"query": "JoinSet"}));
        let _ = tx.send(r.to_value());
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the search answered while the index was held");
    drop(held);
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "TIMEOUT", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another search"),
        "{r}"
    );
}

#[test]
fn a_walk_cut_by_the_deadline_drops_nothing_for_good_and_leaves_the_disk_cache_whole() {
    let (_d, ws) = tree(FILES);
    let cache = tempfile::tempdir().expect("cache");
    let no = AtomicBool::new(false);
    let mut index = Index::default();
    up_to_date(&mut index, &ws, false, Some(cache.path()), None, &no);
    let n = index.files.len();
    assert!(n > 3, "{n}");
    // The next search has no time left: its walk stops at once.
    let mut late = Index::default();
    let r = up_to_date(
        &mut late,
        &ws,
        false,
        Some(cache.path()),
        Some(Instant::now()),
        &no,
    );
    assert!(r.walk_cut, "{r:?}");
    assert_eq!(r.dropped, 0, "{r:?}");
    assert!(!late.coverage.complete());
    assert_eq!(late.coverage.pending, n);
    // What it did not reach is still in the disk cache: the next search loads it whole.
    let held = store::CacheDir::open(cache.path(), ws.root(), false).expect("dir");
    let stored: Index = held.load(ws.root()).expect("stored");
    assert_eq!(stored.files.len(), n);
    let mut again = Index::default();
    let r = up_to_date(&mut again, &ws, false, Some(cache.path()), None, &no);
    assert_eq!((r.source, r.read, again.files.len()), ("disk", 0, n));
}
