//! The scout end to end: the real loop and tools on generated trees, and its sentences checked
//! against the files.

use std::sync::Arc;

use regex::Regex;

use super::OfflineScout;
use crate::contract::ExploreResult;
use crate::profile::explore_profile;
use crate::runner::{CancelToken, ParsedResult, RunOutcome, RuntimeRunner, TerminalReason};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::Trace;

fn tree(files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    dir
}

fn owned(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

async fn explore(dir: &tempfile::TempDir, task: &str) -> (RunOutcome, ExploreResult) {
    explore_with(dir, task, false).await
}

/// The scout with the Search tool (the code index), as the launcher gives it.
async fn explore_indexed(dir: &tempfile::TempDir, task: &str) -> (RunOutcome, ExploreResult) {
    explore_with(dir, task, true).await
}

async fn explore_with(
    dir: &tempfile::TempDir,
    task: &str,
    indexed: bool,
) -> (RunOutcome, ExploreResult) {
    let profile = explore_profile();
    let mut registry = ToolRegistry::readonly().filtered(profile.tool_allowlist.iter().cloned());
    if indexed {
        registry = registry.with_search();
    }
    let runner = RuntimeRunner {
        model: Arc::new(OfflineScout),
        tool_schemas: Arc::new(registry.openai_tools()),
        registry: Arc::new(registry),
        workspace: Workspace::new(dir.path()).unwrap(),
        permissions: PermissionContext::readonly_subagent(),
        trace: Arc::new(Trace::in_memory("scout-test")),
        cancel: CancelToken::new(),
        extra_system: None,
        profile,
    };
    let out = runner
        .run(&format!("{task}\n\nStructured context:\n{{}}"))
        .await;
    let result = match &out.result {
        Some(ParsedResult::Explore(r)) => r.clone(),
        other => panic!("no explore result: {other:?} ({:?})", out.error),
    };
    (out, result)
}

fn line_of(dir: &tempfile::TempDir, path: &str, line: u64) -> Option<String> {
    let text = std::fs::read_to_string(dir.path().join(path)).ok()?;
    text.split('\n').nth(line as usize - 1).map(str::to_string)
}

/// Every checkable sentence of the result, checked against the tree; returns how many were
/// checked. Panics on the first false one.
fn check_sentences(dir: &tempfile::TempDir, r: &ExploreResult) -> usize {
    let defined = Regex::new(r"`([^`]+)` is defined at ([^\s:]+):(\d+)").unwrap();
    let quoted = Regex::new(r"^([^\s:]+):(\d+): «(.*?)(…)?»$").unwrap();
    let count = Regex::new(
        r"The search for /(.+)/( in source files)? found (\d+) matching line\(s\) in (\d+) file\(s\)",
    )
    .unwrap();
    let contain = Regex::new(r"^([^\s:]+):(\d+)-(\d+): .* Lines \d+-\d+ contain (.+)\.$").unwrap();
    let mut checked = 0;
    let all: Vec<&String> = std::iter::once(&r.summary)
        .chain(&r.findings)
        .chain(&r.unresolved_questions)
        .collect();
    for s in all {
        assert!(
            !s.to_lowercase().contains("no line mentions"),
            "a negative claim: {s}"
        );
        for c in defined.captures_iter(s) {
            let line = line_of(dir, &c[2], c[3].parse().unwrap()).unwrap_or_default();
            assert!(line.contains(&c[1]), "false: {s} (line is {line:?})");
            checked += 1;
        }
        if let Some(c) = quoted.captures(s) {
            let line = line_of(dir, &c[1], c[2].parse().unwrap()).unwrap_or_default();
            assert!(
                line.trim().starts_with(&c[3]),
                "false: {s} (line is {line:?})"
            );
            checked += 1;
        }
        if let Some(c) = count.captures(s) {
            let re = Regex::new(&format!("(?i){}", &c[1])).unwrap();
            let (mut lines, mut files) = (0, 0);
            let source_only = c.get(2).is_some();
            for e in walk(dir.path()) {
                if source_only && !is_source(&e.to_string_lossy()) {
                    continue;
                }
                let text = std::fs::read_to_string(&e).unwrap_or_default();
                let n = text.lines().filter(|l| re.is_match(l)).count();
                lines += n;
                files += usize::from(n > 0);
            }
            assert_eq!(
                (lines, files),
                (c[3].parse().unwrap(), c[4].parse().unwrap()),
                "false: {s}"
            );
            checked += 1;
        }
        if let Some(c) = contain.captures(s) {
            let (from, to): (u64, u64) = (c[2].parse().unwrap(), c[3].parse().unwrap());
            let text: String = (from..=to)
                .filter_map(|n| line_of(dir, &c[1], n))
                .collect::<Vec<_>>()
                .join("\n")
                .to_lowercase();
            for form in c[4].split(", ") {
                let form = form.trim_matches('\'');
                assert!(text.contains(form), "false: {s}");
            }
            checked += 1;
        }
    }
    checked
}

/// Whether a path is a source file (a count sentence may say it counted only those).
fn is_source(path: &str) -> bool {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    ["py", "rs", "go", "js", "ts", "java", "c", "h", "rb"].contains(&ext)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn cites_the_source_definition_over_docs_changelog_and_tests() {
    let noise = "The gate feedback changed.\n".repeat(300);
    let dir = tree(&owned(&[
        ("CHANGELOG.md", &noise),
        ("docs/gate.md", "# Gate feedback\nHow the gate feedback is built.\n"),
        (
            "tests/test_gate.py",
            "def test_gate_feedback():\n    assert gate_feedback('x')\n",
        ),
        (
            "src/runner.rs",
            "use std::fmt;\n\n/// Builds the text sent back.\npub fn gate_feedback(reasons: &[String]) -> String {\n    let joined = reasons.join(\"; \");\n    format!(\"Return only a valid JSON object: {joined}\")\n}\n\nfn other() {}\n",
        ),
        ("src/util.rs", "pub fn helper() -> u8 {\n    1\n}\n"),
    ]));
    let (out, r) = explore(&dir, "Where is the completion gate feedback built?").await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(r.evidence[0], "src/runner.rs:4-7");
    assert!(
        r.summary.starts_with("Offline scout (no LLM configured)"),
        "{}",
        r.summary
    );
    assert!(r.summary.contains("no model"), "{}", r.summary);
    assert!(check_sentences(&dir, &r) >= 2);
    assert!(
        out.token_usage <= 32_000 && out.steps <= 3,
        "{} tokens",
        out.token_usage
    );
}

#[tokio::test]
async fn a_truncated_search_is_reported_as_stopped_never_as_complete() {
    // Forty definitions named after "parse" sort before the one that matters.
    let mut files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("a{i:02}/parse_{i}.py"),
                format!("def parse_thing_{i}(x):\n    return x\n"),
            )
        })
        .collect();
    files.push((
        "z/config_loader.py".into(),
        "class ConfigLoader:\n    def parse_config(self, text):\n        return dict(line.split('=') for line in text.splitlines())\n".into(),
    ));
    let dir = tree(&files);
    let (_, r) = explore(&dir, "Where is the config file parsed?").await;
    check_sentences(&dir, &r);
    let open = r.unresolved_questions.join(" ");
    assert!(open.contains("stopped at its limit"), "{open}");
    assert!(
        !r.findings
            .iter()
            .any(|f| f.contains("definitions named after")),
        "{:?}",
        r.findings
    );
    // The index's ranking: the class named after the rarer word, whose range holds the method.
    assert_eq!(r.evidence[0], "z/config_loader.py:1-3");
}

#[tokio::test]
async fn named_identifier_counts_are_complete_and_true() {
    let dir = tree(&owned(&[
        (
            "src/auth.py",
            "def login(user):\n    return session_token(user)\n",
        ),
        ("src/token.py", "def session_token(user):\n    return 'x'\n"),
        ("README.md", "Call session_token to log in.\n"),
    ]));
    let (_, r) = explore(&dir, "Where is `session_token` defined?").await;
    assert_eq!(r.status, crate::contract::SubagentStatus::Completed);
    assert_eq!(r.evidence[0], "src/token.py:1-2");
    assert!(
        r.findings[0].contains("`session_token` is defined at src/token.py:1"),
        "{:?}",
        r.findings
    );
    assert!(check_sentences(&dir, &r) >= 2);
}

#[tokio::test]
async fn nothing_found_is_partial_and_claims_nothing_about_the_tree() {
    let dir = tree(&owned(&[("src/db.py", "def connect():\n    pass\n")]));
    let (_, r) = explore(&dir, "Where is the zebra frobnicator?").await;
    assert_eq!(r.status, crate::contract::SubagentStatus::Partial);
    assert!(r.evidence.is_empty());
    assert!(
        r.summary
            .ends_with("The searches returned no line matching the question's words."),
        "{}",
        r.summary
    );
}

#[tokio::test]
async fn a_best_match_without_the_key_terms_stays_partial() {
    let dir = tree(&owned(&[(
        "src/router.go",
        "package r\n\nfunc NewRouter() *Router {\n\treturn &Router{}\n}\n",
    )]));
    let (_, r) = explore(&dir, "Where does the router reject oversized headers?").await;
    assert_eq!(r.evidence[0], "src/router.go:3-5");
    assert_eq!(r.status, crate::contract::SubagentStatus::Partial);
    assert!(
        r.unresolved_questions[0].contains("does not show every key word"),
        "{:?}",
        r.unresolved_questions
    );
    check_sentences(&dir, &r);
}

#[tokio::test]
async fn long_matching_lines_stay_within_the_budgets() {
    // Minified bundles: every line is thousands of characters and holds the keywords.
    let line = "function renderTemplate(a){return cache.render(a)};".repeat(60);
    let bundle = format!("{line}\n").repeat(40);
    let mut files: Vec<(String, String)> = (0..6)
        .map(|i| (format!("dist_js/bundle{i}.js"), bundle.clone()))
        .collect();
    files.push((
        "src/templates.py".into(),
        "def render_template(name, context):\n    return cache_render(name, context)\n".into(),
    ));
    let dir = tree(&files);
    let (out, r) = explore(&dir, "Where is the template render cache?").await;
    assert!(
        out.terminal_reason.is_success(),
        "{:?}",
        out.terminal_reason
    );
    assert!(out.token_usage <= 32_000, "{} tokens", out.token_usage);
    assert!(!r.evidence.is_empty(), "{r:?}");
    check_sentences(&dir, &r);
}

#[tokio::test]
async fn prose_is_not_a_definition_and_a_missing_name_is_not_an_answer() {
    let dir = tree(&owned(&[
        (
            "src/models.py",
            "def iter_content(chunk_size=1):\n    \"\"\"Iterate over the body.\n\n    This\n    function differently behaves when streaming.\n    \"\"\"\n    return chunk_size\n",
        ),
        ("src/adapters.py", "def request_url(request, proxies):\n    return request.url\n"),
    ]));
    let (_, r) = explore(&dir, "Where is the function parse_url_v2 defined?").await;
    check_sentences(&dir, &r);
    assert_eq!(r.status, crate::contract::SubagentStatus::Partial, "{r:?}");
    assert!(
        r.unresolved_questions
            .iter()
            .any(|q| q.contains("found no line, so what the question names may not exist")),
        "{r:?}"
    );
    let text = format!("{} {:?}", r.summary, r.findings);
    assert!(!text.contains("`differently` is defined"), "{text}");
}

#[tokio::test]
async fn the_scout_cites_only_lines_it_saw_in_paths_evidence_can_carry() {
    // An empty file found by its name, and a definition in a file whose name holds a newline:
    // neither is citable as path:line, so neither may be the scout's evidence (#17).
    let dir = tree(&owned(&[
        ("src/config.py", ""),
        ("src/settings_loader.py", "x = 1\n"),
        ("odd/we\nird.py", "def load_config():\n    pass\n"),
    ]));
    for task in [
        "Where is the config file?",
        "Where is `load_config` defined?",
    ] {
        let (out, r) = explore(&dir, task).await;
        assert!(
            out.ungrounded_evidence.is_empty(),
            "{task}: {:?}",
            out.ungrounded_evidence
        );
        assert_eq!(out.terminal_reason, TerminalReason::Completed, "{task}");
        assert!(
            r.evidence
                .iter()
                .all(|e| !e.contains('\n') && !e.starts_with("src/config.py")),
            "{task}: {:?}",
            r.evidence
        );
    }
}

#[tokio::test]
async fn with_the_index_the_scout_cites_the_definition_it_read_and_every_sentence_is_true() {
    let files = owned(&[
        (
            "src/webapp/sessions.py",
            "import hmac\n\n\nclass SecureCookieSessionInterface:\n    \"\"\"Stores the session in a signed cookie.\"\"\"\n\n    def open_session(self, app, request):\n        return None\n\n    def save_session(self, app, session, response):\n        val = self.get_signing_serializer(app).dumps(dict(session))\n        response.set_cookie(app.config[\"SESSION_COOKIE_NAME\"], val)\n",
        ),
        ("src/webapp/app.py", "class WebApp:\n    def run(self):\n        pass\n"),
        ("tests/test_sessions.py", "def test_save_session():\n    assert save_session\n"),
        ("CHANGES.rst", "Session cookies are now saved and signed.\n"),
    ]);
    let dir = tree(&files);
    let (out, r) = explore_indexed(
        &dir,
        "Where is the signed session cookie saved into the response?",
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed, "{r:?}");
    assert!(
        out.ungrounded_evidence.is_empty(),
        "{:?}",
        out.ungrounded_evidence
    );
    assert_eq!(r.evidence[0], "src/webapp/sessions.py:10-12", "{r:?}");
    assert_eq!(
        r.status,
        crate::contract::SubagentStatus::Completed,
        "{r:?}"
    );
    assert!(
        out.tool_usage.contains_key("Search"),
        "{:?}",
        out.tool_usage
    );
    assert!(check_sentences(&dir, &r) >= 2, "{r:?}");
    // Asked for a name that nothing defines, it does not claim an answer.
    let (_, r) = explore_indexed(&dir, "Where is `TotallyMissingThing` defined?").await;
    assert_ne!(
        r.status,
        crate::contract::SubagentStatus::Completed,
        "{r:?}"
    );
}

#[test]
fn the_scout_takes_the_run_kind_and_budgets_as_values_not_from_the_prompt() {
    use crate::llm::request::RunFacts;
    use crate::llm::Message;
    let request = |system: &str, run: Option<RunFacts>| crate::llm::ChatRequest {
        model: None,
        messages: vec![
            Message::System {
                content: system.into(),
            },
            Message::User {
                content: "Where is render_template defined?".into(),
            },
        ],
        tools: Arc::new(Vec::new()),
        tool_choice: None,
        settings: None,
        deadline: None,
        run,
    };
    let answer = |r: crate::llm::ChatRequest| super::next_step(&r).content;
    // A prompt that mentions a verdict is not a verification; a run that is says so whatever
    // its prompt.
    let verdict_words = "Reply with \"verdict\": PASS or FAIL.";
    assert!(!answer(request(verdict_words, None)).contains("\"verdict\""));
    let verify = RunFacts {
        verification: true,
        ..RunFacts::default()
    };
    let text = answer(request("Explore.", Some(verify)));
    assert!(text.contains("\"verdict\":\"UNVERIFIED\""), "{text}");
    // Budgets: a run with a tiny total leaves no room for reads, one with the defaults does;
    // the words of the prompt change nothing.
    let mut messages = request("at most 10 tokens for the whole run", None).messages;
    messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![],
    });
    let big = crate::llm::ChatRequest {
        messages: messages.clone(),
        ..request("", None)
    };
    let tiny = crate::llm::ChatRequest {
        messages,
        run: Some(RunFacts {
            total_token_budget: 10,
            ..RunFacts::default()
        }),
        ..request("", None)
    };
    assert!(super::turn::read_allowance(&big, 0) > 0);
    assert_eq!(super::turn::read_allowance(&tiny, 0), 0);
}

fn session_files() -> Vec<(String, String)> {
    owned(&[
        (
            "src/webapp/sessions.py",
            "import hmac\n\n\nclass SecureCookieSessionInterface:\n    \"\"\"Stores the session in a signed cookie.\"\"\"\n\n    def open_session(self, app, request):\n        return None\n\n    def save_session(self, app, session, response):\n        val = self.get_signing_serializer(app).dumps(dict(session))\n        response.set_cookie(app.config[\"SESSION_COOKIE_NAME\"], val)\n",
        ),
        ("src/webapp/app.py", "class WebApp:\n    def run(self):\n        pass\n"),
        ("tests/test_sessions.py", "def test_save_session():\n    assert save_session\n"),
        ("CHANGES.rst", "Session cookies are now saved and signed.\n"),
    ])
}

#[tokio::test]
async fn with_grep_alone_the_index_ranks_what_grep_returned() {
    // One ranker: the lines Grep returned are ranked by the index's scoring, so the scout
    // without Search cites the same definition as with it, its whole block from its Read.
    let dir = tree(&session_files());
    let task = "Where is the signed session cookie saved into the response?";
    let (out, r) = explore(&dir, task).await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed, "{r:?}");
    assert!(
        !out.tool_usage.contains_key("Search"),
        "{:?}",
        out.tool_usage
    );
    assert!(
        out.ungrounded_evidence.is_empty(),
        "{:?}",
        out.ungrounded_evidence
    );
    let (_, indexed) = explore_indexed(&dir, task).await;
    assert_eq!(r.evidence[0], indexed.evidence[0], "{r:?}");
    assert_eq!(r.evidence[0], "src/webapp/sessions.py:10-12", "{r:?}");
    assert!(
        r.summary.contains("ranked by the code index's scoring"),
        "{}",
        r.summary
    );
    assert!(check_sentences(&dir, &r) >= 2, "{r:?}");
}

#[test]
fn a_verification_run_searches_reads_and_says_it_does_not_judge() {
    use crate::tools::context::ToolContext;
    let dir = tree(&session_files());
    let registry = ToolRegistry::readonly().with_search();
    let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
    let permissions = PermissionContext::readonly_subagent();
    let run = crate::llm::request::RunFacts {
        verification: true,
        ..crate::llm::request::RunFacts::default()
    };
    let mut calls: Vec<String> = Vec::new();
    let scouted = super::search_quietly(
        "Where is the signed session cookie saved into the response?",
        "Verify the candidate.",
        run,
        Arc::new(registry.openai_tools()),
        &mut |name, args| {
            calls.push(name.to_string());
            registry.execute(name, args, &ctx, &permissions)
        },
    );
    let v: serde_json::Value = serde_json::from_str(&scouted.text).unwrap();
    assert_eq!(v["verdict"], "UNVERIFIED", "{v}");
    assert!(
        v["reasons"][0].as_str().unwrap().contains("cannot judge"),
        "{v}"
    );
    assert_eq!(v["evidence"][0], "src/webapp/sessions.py:10-12", "{v}");
    assert_eq!(calls[0], "Search");
    assert!(calls.iter().any(|c| c == "Read"), "{calls:?}");
}
