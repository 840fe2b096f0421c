//! The ranking's classes of miss, each on a small tree made for it: each test also ranks with
//! the class's knob at its neutral value and sees the miss come back, so it can fail.

use std::sync::atomic::AtomicBool;

use super::*;
use crate::tuning::Tuning;

/// An index of `files` and forty unrelated ones (a tree where the question's names are rare).
fn index_of(files: &[(&str, &str)]) -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().expect("tempdir");
    let unrelated: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("src/other/unit{i}.rs"),
                format!("pub fn unit_{i}() -> u32 {{ {i} }}\n"),
            )
        })
        .collect();
    let unrelated = unrelated.iter().map(|(a, b)| (a.as_str(), b.as_str()));
    for (path, text) in files.iter().copied().chain(unrelated) {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let ws = Workspace::new(dir.path()).expect("workspace");
    let mut index = Index::default();
    index.refresh(&ws, None, &AtomicBool::new(false));
    (dir, index)
}

/// The files of the best `n` hits, in order, ranked with `tuning`.
fn files(index: &Index, question: &str, tuning: &Tuning, n: usize) -> Vec<String> {
    let q = rank::parse_with(question, tuning);
    rank::search(index, &q, n, None)
        .into_iter()
        .map(|h| index.files[h.file].path.clone())
        .collect()
}

/// The score of `path`'s best hit for `question` ranked with `tuning` (0 when not ranked).
fn score(index: &Index, question: &str, tuning: &Tuning, path: &str) -> f64 {
    let q = rank::parse_with(question, tuning);
    rank::search(index, &q, 50, None)
        .into_iter()
        .filter(|h| index.files[h.file].path == path)
        .map(|h| h.score)
        .fold(0.0, f64::max)
}

fn tuned(f: impl FnOnce(&mut Tuning)) -> Tuning {
    let mut t = Tuning::default();
    f(&mut t);
    t
}

/// Filler files that hold `word` a few times each, so that it is common in the tree.
fn filler(word: &str, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                format!("src/misc/part{i}.rs"),
                format!(
                    "/// Part {i} of the {word} tool.\npub fn part_{i}() {{ let {word} = {i}; }}\n"
                ),
            )
        })
        .collect()
}

#[test]
fn adjacent_words_reach_the_one_name_code_spells_them_with() {
    let q = rank::parse("Where is the JSON object with named fields?");
    let terms: Vec<&str> = q.terms.iter().map(|t| t.term.as_str()).collect();
    assert!(
        terms.contains(&"jsonobject") && terms.contains(&"json_object"),
        "{terms:?}"
    );
    assert!(
        q.compounds.contains(&"jsonobject".to_string()),
        "{:?}",
        q.compounds
    );
    // Words split by a framing word or a comma are not one name.
    let q = rank::parse("Where is the object, with fields?");
    assert!(
        !q.compounds.iter().any(|c| c.contains("object")),
        "{:?}",
        q.compounds
    );
    let (_d, index) = index_of(&[
        (
            "src/value.rs",
            "/// A value.\npub struct JsonObject {\n    pairs: Vec<(String, Value)>,\n}\n",
        ),
        (
            "src/writer.rs",
            "/// Writes json: an object's named fields, a json array.\npub fn write_object(json: &mut Json, named: &[Field], fields: usize) {\n    json.object(named, fields);\n}\n",
        ),
    ]);
    let question = "Where is the JSON object with named fields?";
    assert_eq!(
        files(&index, question, &Tuning::default(), 1),
        ["src/value.rs"]
    );
    let off = tuned(|t| t.rank_compound = 0.0);
    assert_eq!(files(&index, question, &off, 1), ["src/writer.rs"]);
}

#[test]
fn a_file_named_after_the_question_s_name_rises_and_a_generic_suffix_is_no_part_of_it() {
    let mut tree: Vec<(String, String)> = vec![
        (
            "lib/store/changeset.ex".into(),
            "defmodule Store.Changeset do\n  def cast(data, attrs), do: {data, attrs}\nend\n".into(),
        ),
        (
            "lib/store/repo.ex".into(),
            "defmodule Store.Repo do\n  # Validates the params of a changeset before insert: a changeset with invalid params is refused.\n  def insert(changeset, params), do: {changeset, params}\nend\n".into(),
        ),
    ];
    tree.push((
        "src/Formatters/IMessagePackFormatter`1.cs".into(),
        "public interface IMessagePackFormatter<T> {\n  void Serialize(T value);\n}\n".into(),
    ));
    tree.push((
        "src/Resolver.cs".into(),
        "// Finds the IMessagePackFormatter of a type.\npublic class Resolver {\n  object Get() { return null; }\n}\n".into(),
    ));
    let files_ref: Vec<(&str, &str)> = tree.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let (_d, index) = index_of(&files_ref);
    let question = "How does a Store Changeset validate params?";
    assert_eq!(
        files(&index, question, &Tuning::default(), 1),
        ["lib/store/changeset.ex"]
    );
    let off = tuned(|t| t.rank_file_named = 0.0);
    let named = |t: &Tuning| score(&index, question, t, "lib/store/changeset.ex");
    assert!(named(&off) < named(&Tuning::default()));
    // Not a changelog for starting like one.
    let q = rank::parse(question);
    assert_eq!(rank::path_prior("lib/store/changeset.ex", &q), 1.0);
    assert!(rank::path_prior("CHANGES.md", &q) < 0.5);
    assert_eq!(
        files(
            &index,
            "Where is IMessagePackFormatter?",
            &Tuning::default(),
            1
        ),
        ["src/Formatters/IMessagePackFormatter`1.cs"]
    );
}

#[test]
fn copies_and_older_versions_rank_below_the_live_code() {
    let client = "// Sends the request and retries it.\npub fn send_request(retries: u32) -> u32 { retries }\n";
    let (_d, index) = index_of(&[
        ("api/v1/client.rs", client),
        ("api/v2/client.rs", client),
        (
            "legacy/parser.rs",
            "pub fn parse_header(line: &str) -> &str { line }\n",
        ),
        (
            "src/parser.rs",
            "pub fn parse_header(line: &str) -> &str { line }\n",
        ),
    ]);
    let d = Tuning::default();
    let neutral = tuned(|t| t.rank_copy_weight = 1.0);
    let q = "Where is the request sent and retried?";
    assert_eq!(
        files(&index, q, &d, 2),
        ["api/v2/client.rs", "api/v1/client.rs"]
    );
    assert_eq!(files(&index, q, &neutral, 1), ["api/v1/client.rs"]);
    let q = "Where is parse_header?";
    assert_eq!(
        files(&index, q, &d, 2),
        ["src/parser.rs", "legacy/parser.rs"]
    );
    assert_eq!(files(&index, q, &neutral, 1), ["legacy/parser.rs"]);
}

#[test]
fn a_module_of_re_exports_is_named_by_its_folder_but_the_definition_leads() {
    let (_d, index) = index_of(&[
        (
            "src/extract/mod.rs",
            "//! Pulls entries out of archives.\npub mod zip;\npub use zip::unpack;\n",
        ),
        ("src/extract/zip.rs", "pub fn unpack() {}\n"),
        (
            "src/cli/extract_flags.rs",
            "/// The archive flags.\npub fn extract_flags(archive: &str) -> &str { archive }\n",
        ),
    ]);
    let d = Tuning::default();
    let q = "Where does the Extract module pull entries out of archives?";
    assert_eq!(files(&index, q, &d, 1), ["src/extract/mod.rs"]);
    // The same text in a file that is not its folder's module file ranks lower.
    let (_e, plain) = index_of(&[
        (
            "src/extract/notes.rs",
            "//! Pulls entries out of archives.\npub mod zip;\npub use zip::unpack;\n",
        ),
        ("src/extract/zip.rs", "pub fn unpack() {}\n"),
        (
            "src/cli/extract_flags.rs",
            "/// The archive flags.\npub fn extract_flags(archive: &str) -> &str { archive }\n",
        ),
    ]);
    assert_eq!(files(&plain, q, &d, 1), ["src/cli/extract_flags.rs"]);
    // The definition asked for by name still beats its module.
    assert_eq!(
        files(&index, "Where is `unpack` in Extract?", &d, 1),
        ["src/extract/zip.rs"]
    );
}

#[test]
fn a_name_in_every_file_counts_by_how_rare_it_is_in_this_tree() {
    let mut tree: Vec<(String, String)> = filler("bash", 30);
    for i in 0..6 {
        tree.push((
            format!("src/shells/s{i}.rs"),
            format!("pub fn bash() -> u32 {{ {i} }}\n"),
        ));
    }
    tree.push((
        "src/plugins.rs".into(),
        "/// Plugins.\npub fn read_all(list: &[String]) {}\n".into(),
    ));
    let files_ref: Vec<(&str, &str)> = tree.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let (_d, index) = index_of(&files_ref);
    let q = "Where does the tool load plugins for Bash?";
    assert_eq!(files(&index, q, &Tuning::default(), 1), ["src/plugins.rs"]);
    let off = tuned(|t| t.rank_common_idf = 0.0);
    assert_ne!(files(&index, q, &off, 1), ["src/plugins.rs"]);
}

#[test]
fn tests_beside_the_code_rank_below_it() {
    let (_d, index) = index_of(&[
        (
            "src/runner/gate.rs",
            "pub struct Gate;\n\nimpl Gate {\n    /// The feedback built when the completion gate refuses an answer.\n    pub fn feedback(&self, reason: &str) -> String {\n        reason.to_string()\n    }\n}\n",
        ),
        (
            "src/runner/tests.rs",
            "#[test]\nfn completion_gate_feedback_is_built() {\n    // completion gate feedback: the gate's feedback on completion\n    let feedback = gate_feedback(\"completion\");\n    assert!(feedback.contains(\"completion\"));\n}\n",
        ),
        (
            "src/runner/steps.rs",
            "pub fn step() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn completion_gate_feedback_shows() {\n        // completion gate feedback, completion gate feedback\n        let feedback = super::step();\n    }\n}\n",
        ),
    ]);
    let q = "Where is the completion gate feedback built?";
    let got = files(&index, q, &Tuning::default(), 3);
    assert_eq!(got[0], "src/runner/gate.rs", "{got:?}");
    let off = tuned(|t| t.rank_test_weight = 1.0);
    for test in ["src/runner/tests.rs", "src/runner/steps.rs"] {
        let test_score = |t: &Tuning| score(&index, q, t, test);
        assert!(
            test_score(&Tuning::default()) < test_score(&off) * 0.5,
            "{test}"
        );
    }
    // Asked about tests, they are what is wanted.
    let got = files(
        &index,
        "Which tests check the completion gate feedback?",
        &Tuning::default(),
        1,
    );
    assert_ne!(got, ["src/runner/gate.rs"]);
}

#[test]
fn the_ranking_s_weights_are_the_profile_s_tuning() {
    // One file with three places that match, one with the exact name once: the weights decide.
    let (_d, index) = index_of(&[
        (
            "src/retry/policy.rs",
            "pub struct RetryPolicy;\n\nimpl RetryPolicy {\n    pub fn backoff_delay(&self) -> u64 { 1 }\n}\n",
        ),
        (
            "src/net/client.rs",
            "/// backoff for a retry\npub fn send() {}\n\n/// retry with backoff\npub fn resend() {}\n\n/// retry backoff delay\npub fn again() {}\n",
        ),
    ]);
    let q = "Where is `RetryPolicy` backoff computed for a retry?";
    let d = Tuning::default();
    assert_eq!(files(&index, q, &d, 1), ["src/retry/policy.rs"]);
    let exact = |t: &Tuning| score(&index, q, t, "src/retry/policy.rs");
    assert!(exact(&tuned(|t| t.rank_exact = 0.0)) < exact(&d));
    assert!(exact(&tuned(|t| t.rank_name = 0.0)) < exact(&d));
    let many = |t: &Tuning| score(&index, q, t, "src/net/client.rs");
    assert!(many(&tuned(|t| t.rank_file_share = 0.0)) < many(&d));
    assert!(many(&tuned(|t| t.rank_bm25_k1 = 0.0)) != many(&d));
}
