//! The warm index: an unchanged tree is not walked again, and every change to it is seen by the
//! next search (that postings rank as the pass over every chunk did: `rank_reference`).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Bring `index` up to date as a Search does (warm, no disk cache).
fn warm(index: &mut Index, ws: &Workspace) -> Refresh {
    up_to_date(index, ws, true, None, None, &AtomicBool::new(false))
}

fn paths_for(index: &Index, question: &str) -> Vec<String> {
    let q = rank::parse(question);
    let mut out: Vec<String> = rank::search(index, &q, 50, None)
        .into_iter()
        .map(|h| index.files[h.file].path.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(target_os = "linux")]
#[test]
fn an_unchanged_tree_is_not_walked_and_every_change_is_seen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "src/alpha.rs", "pub fn quokka() {}\n");
    write(root, "src/deep/beta.rs", "pub fn narwhal() {}\n");
    write(root, "gamma.py", "def axolotl():\n    pass\n");
    write(root, ".gitignore", "*.tmp\n");
    std::fs::create_dir_all(root.join(".git/info")).expect("git");
    let ws = Workspace::new(root).expect("ws");
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    assert!(index.watch.is_some(), "inotify watches are made on Linux");
    let walks = index.walks;
    for _ in 0..3 {
        let r = warm(&mut index, &ws);
        assert_eq!((r.read, r.dropped, r.source), (0, 0, "memory"));
    }
    assert_eq!(index.walks, walks, "an unchanged tree was walked again");

    // Edited in place (same size, other words).
    // (what, the change, a question, the files that answer it after the change)
    type Step<'a> = (&'a str, Box<dyn Fn() + 'a>, &'a str, Vec<&'a str>);
    let mut steps: Vec<Step<'_>> = Vec::new();
    steps.push((
        "edit in place",
        Box::new(|| write(root, "src/deep/beta.rs", "pub fn gorilla() {}\n")),
        "gorilla",
        vec!["src/deep/beta.rs"],
    ));
    steps.push((
        "a new file in a new directory",
        Box::new(|| write(root, "lib/new/eps.rs", "pub fn capybara() {}\n")),
        "capybara",
        vec!["lib/new/eps.rs"],
    ));
    steps.push((
        "a new file in the directory made by the last change",
        Box::new(|| write(root, "lib/new/zeta.rs", "pub fn wombat() {}\n")),
        "wombat",
        vec!["lib/new/zeta.rs"],
    ));
    steps.push((
        "a deleted file",
        Box::new(|| std::fs::remove_file(root.join("gamma.py")).expect("rm")),
        "axolotl",
        vec![],
    ));
    steps.push((
        "a renamed file",
        Box::new(|| {
            std::fs::rename(root.join("src/alpha.rs"), root.join("src/deep/omega.rs")).expect("mv");
        }),
        "quokka",
        vec!["src/deep/omega.rs"],
    ));
    steps.push((
        "a changed ignore file",
        Box::new(|| write(root, ".gitignore", "*.tmp\nlib/\n")),
        "capybara",
        vec![],
    ));
    steps.push((
        "a changed .git/info/exclude",
        Box::new(|| write(root, ".git/info/exclude", "src/deep/omega.rs\n")),
        "quokka",
        vec![],
    ));
    for (what, change, question, expected) in steps {
        change();
        warm(&mut index, &ws);
        assert_eq!(paths_for(&index, question), expected, "{what}");
        let walks = index.walks;
        warm(&mut index, &ws);
        assert_eq!(index.walks, walks, "{what}: walked again with no change");
    }
}

#[test]
fn two_children_of_one_root_share_one_index_built_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..40 {
        write(
            dir.path(),
            &format!("src/m{i}.rs"),
            &format!("pub fn thing_{i}() {{}}\n"),
        );
    }
    write(dir.path(), "src/lynx.rs", "pub fn lynx_pounce() {}\n");
    let barrier = std::sync::Barrier::new(2);
    let children: Vec<(Arc<Mutex<Index>>, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (root, barrier) = (dir.path(), &barrier);
                scope.spawn(move || {
                    // Each child has its own workspace of the same root, as launches do.
                    let ws = Workspace::new(root).expect("ws");
                    barrier.wait();
                    let (handle, _) =
                        open_in(&ws, None, None, &AtomicBool::new(false)).expect("open");
                    let found = {
                        let index =
                            lock_until(&handle, None, &AtomicBool::new(false)).expect("lock");
                        paths_for(&index, "lynx pounce")
                    };
                    (handle, found)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("child"))
            .collect()
    });
    assert!(
        Arc::ptr_eq(&children[0].0, &children[1].0),
        "two children of one root hold two indexes"
    );
    assert_eq!(children[0].1, ["src/lynx.rs"]);
    assert_eq!(children[0].1, children[1].1);
    let index = children[0].0.lock().expect("lock");
    assert_eq!(index.walks, 1, "the second child walked the tree again");
}
