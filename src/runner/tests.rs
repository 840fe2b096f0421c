//! The loop driven end to end by a scripted model over real tools on a temporary tree.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::json;

use super::*;

use crate::contract::{Repair, SubagentStatus};
use crate::llm::{
    estimate_tokens, BoxFuture, ChatRequest, ChatResponse, Message, ModelError, ModelErrorKind,
    ToolCall, Usage,
};
use crate::profile::explore_profile;
use crate::trace::EventKind;

enum Step {
    Reply(ChatResponse),
    Fail(ModelError),
    Slow(Duration, ChatResponse),
}

struct Scripted {
    steps: Mutex<Vec<Step>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Scripted {
            steps: Mutex::new(steps.into_iter().rev().collect()),
            requests: Mutex::new(vec![]),
        })
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ChatModel for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        self.requests.lock().unwrap().push(request.clone());
        let step = self.steps.lock().unwrap().pop();
        Box::pin(async move {
            match step {
                Some(Step::Reply(r)) => Ok(r),
                Some(Step::Fail(e)) => Err(e),
                Some(Step::Slow(d, r)) => {
                    tokio::time::sleep(d).await;
                    Ok(r)
                }
                None => Err(ModelError::new(
                    ModelErrorKind::Callback,
                    "script exhausted",
                )),
            }
        })
    }
    fn describe(&self) -> String {
        "scripted".into()
    }
}

fn calls(list: &[(&str, Value)]) -> Step {
    Step::Reply(ChatResponse {
        tool_calls: list
            .iter()
            .enumerate()
            .map(|(i, (n, a))| ToolCall {
                id: format!("call_{i}"),
                name: n.to_string(),
                arguments: a.to_string(),
            })
            .collect(),
        ..Default::default()
    })
}

fn say(text: &str) -> Step {
    Step::Reply(ChatResponse {
        content: text.into(),
        ..Default::default()
    })
}

fn with_usage(step: Step, total: u64) -> Step {
    match step {
        Step::Reply(mut r) => {
            r.usage = Some(Usage {
                prompt_tokens: total,
                completion_tokens: 0,
                total_tokens: total,
                cached_tokens: 0,
            });
            Step::Reply(r)
        }
        other => other,
    }
}

/// The Read an honest child makes before citing `src/app.py:1`.
fn read_app() -> Step {
    calls(&[("Read", json!({"path": "src/app.py"}))])
}

const FINAL: &str = r#"{"status": "completed", "summary": "main is in src/app.py", "findings": ["f"], "evidence": ["src/app.py:1"]}"#;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), "def main():\n    return 1\n").unwrap();
    std::fs::write(dir.path().join("big.txt"), "y".repeat(150) + "\n").unwrap();
    let big: String = (0..2000)
        .map(|i| format!("line {i} {}\n", "z".repeat(60)))
        .collect();
    std::fs::write(dir.path().join("big.txt"), big).unwrap();
    dir
}

fn runner(dir: &tempfile::TempDir, model: Arc<Scripted>, profile: RuntimeProfile) -> RuntimeRunner {
    let registry = ToolRegistry::readonly().filtered(profile.tool_allowlist.iter().cloned());
    RuntimeRunner {
        model,
        tool_schemas: Arc::new(registry.openai_tools()),
        registry: Arc::new(registry),
        workspace: Workspace::new(dir.path()).unwrap(),
        permissions: PermissionContext::readonly_subagent(),
        trace: Arc::new(Trace::in_memory("child-test")),
        cancel: CancelToken::new(),
        extra_system: None,
        profile,
    }
}

async fn run(
    dir: &tempfile::TempDir,
    steps: Vec<Step>,
    profile: RuntimeProfile,
) -> (RunOutcome, Arc<Scripted>) {
    let model = Scripted::new(steps);
    // No word of this task is in the tree, so the offline scout finds no place to hint at
    // (tests of the hint give their own task).
    let out = runner(dir, model.clone(), profile)
        .run("Find the entry point.\n\nStructured context:\n{}")
        .await;
    (out, model)
}

#[tokio::test]
async fn happy_path_runs_tools_concurrently_and_returns_in_order() {
    let dir = tree();
    let (out, model) = run(
        &dir,
        vec![
            calls(&[
                ("Glob", json!({"pattern": "**/*.py"})),
                ("Grep", json!({"pattern": "def main"})),
                ("Read", json!({"path": "src/app.py"})),
            ]),
            say(FINAL),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        out.tool_usage,
        BTreeMap::from([("Glob".into(), 1), ("Grep".into(), 1), ("Read".into(), 1)])
    );
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(r.summary, "main is in src/app.py");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    // A tool call is required until the child has made one.
    assert_eq!(reqs[0].tool_choice.as_deref(), Some("required"));
    assert_eq!(reqs[1].tool_choice.as_deref(), Some("auto"));
    assert_eq!(reqs[0].tools.len(), 3);
    let ids: Vec<&str> = reqs[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec!["call_0", "call_1", "call_2"]);
    assert!(out.usage_estimated && out.token_usage > 0);
}

#[tokio::test]
async fn gate_retry_then_block_with_the_reference_feedback() {
    let dir = tree();
    let (out, model) = run(
        &dir,
        vec![read_app(), say("not json"), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let feedback = model.requests()[2].messages.last().cloned().unwrap();
    assert_eq!(
        feedback,
        Message::User { content: "Return only a valid ExploreResult JSON object: Expecting value: line 1 column 1 (char 0)".into() }
    );
    let (out, model) = run(
        &dir,
        vec![read_app(), say("nope"), say("still nope")],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletionGateBlocked);
    assert_eq!(model.requests().len(), 3);
    // What it read stands as a lead: a partial answer, never an answer it did not give.
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (r.status, r.evidence.clone()),
        (SubagentStatus::Partial, vec!["src/app.py:1".to_string()])
    );
    assert!(r.unresolved_questions[0].starts_with(
        "outrider: the task is not answered: the model's answers never met the contract"
    ));
    // Having seen nothing, it has nothing to give.
    let (out, _) = run(
        &dir,
        vec![say("nope"), say("still nope")],
        explore_profile(),
    )
    .await;
    assert_eq!(
        (out.terminal_reason, out.result.is_none()),
        (TerminalReason::CompletionGateBlocked, true)
    );
}

#[tokio::test]
async fn repaired_answers_are_accepted_and_recorded() {
    let dir = tree();
    let (out, _) = run(
        &dir,
        vec![read_app(), say(&format!("Here:\n```json\n{FINAL}\n```"))],
        explore_profile(),
    )
    .await;
    assert_eq!(
        (out.terminal_reason, out.repair),
        (TerminalReason::Completed, Some(Repair::Fence))
    );
}

#[tokio::test]
async fn ungrounded_evidence_goes_back_then_is_unverified() {
    let dir = tree();
    let bad = FINAL.replace("src/app.py:1", "src/app.py:99");
    let (out, model) = run(
        &dir,
        vec![read_app(), say(&bad), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Message::User { content } = model.requests()[2].messages.last().cloned().unwrap() else {
        panic!()
    };
    assert!(
        content.contains("cites line 99, but 'src/app.py' has 2 lines. Of that file you saw src/app.py:1-2: cite those lines, or drop it."),
        "{content}"
    );
    let (out, _) = run(
        &dir,
        vec![read_app(), say(&bad), say(&bad)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(out.ungrounded_evidence.len(), 1);
}

#[tokio::test]
async fn max_steps_with_and_without_wrap_up() {
    let dir = tree();
    let profile = RuntimeProfile {
        max_steps: 3,
        on_budget_exhausted: crate::profile::BudgetPolicy::Fail,
        ..explore_profile()
    };
    let steps = || {
        (0..3)
            .map(|_| calls(&[("Glob", json!({}))]))
            .collect::<Vec<_>>()
    };
    let (out, model) = run(&dir, steps(), profile.clone()).await;
    assert_eq!(
        (out.terminal_reason, out.result.is_none()),
        (TerminalReason::MaxSteps, true)
    );
    assert_eq!(model.requests().len(), 3);
    assert_eq!(out.tool_usage["Glob"], 3);

    let mut s = steps();
    s.push(say(FINAL));
    let (out, model) = run(
        &dir,
        s,
        RuntimeProfile {
            on_budget_exhausted: crate::profile::BudgetPolicy::Partial,
            ..profile
        },
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::MaxSteps);
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(r.status, SubagentStatus::Partial);
    let last = model.requests().pop().unwrap();
    assert!(last.tools.is_empty() && last.tool_choice.is_none());
}

#[tokio::test]
async fn token_budget_from_reported_usage_and_from_estimates() {
    let dir = tree();
    let profile = RuntimeProfile {
        on_budget_exhausted: crate::profile::BudgetPolicy::Fail,
        ..explore_profile()
    };
    let (out, model) = run(
        &dir,
        vec![
            with_usage(calls(&[("Glob", json!({}))]), 20_000),
            with_usage(calls(&[("Glob", json!({}))]), 12_000),
            with_usage(say(FINAL), 1),
        ],
        profile.clone(),
    )
    .await;
    // 32 000 exactly is the whole budget: the third call is refused before it is made.
    assert_eq!(
        (out.terminal_reason, model.requests().len(), out.token_usage),
        (TerminalReason::TokenBudget, 2, 32_000)
    );
    let error = out.error.unwrap();
    assert!(
        error.starts_with(
            "used 32000 tokens of a total_token_budget of 32000; the next call needs about "
        ) && error.ends_with(" prompt + 1000 answer)"),
        "{error}"
    );

    // A provider reporting more than the estimate is reported as it is, and nothing more is spent.
    let (out, model) = run(
        &dir,
        vec![
            with_usage(calls(&[("Glob", json!({}))]), 20_000),
            with_usage(calls(&[("Glob", json!({}))]), 13_000),
            with_usage(say(FINAL), 1),
        ],
        profile.clone(),
    )
    .await;
    assert_eq!(
        (out.terminal_reason, model.requests().len(), out.token_usage),
        (TerminalReason::TokenBudget, 2, 33_000)
    );
    // With a wrap-up allowed, it is not made either: nothing is left to pay for it.
    let (out, model) = run(
        &dir,
        vec![
            with_usage(calls(&[("Glob", json!({}))]), 20_000),
            with_usage(calls(&[("Glob", json!({}))]), 13_000),
            say(FINAL),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(
        (
            out.terminal_reason,
            model.requests().len(),
            out.token_usage,
            out.result.is_none()
        ),
        (TerminalReason::TokenBudget, 2, 33_000, true)
    );
    let error = out.error.unwrap();
    assert!(
        error.contains("; the wrap-up call failed: no room for the wrap-up: 0 of total_token_budget 32000 tokens are left, but even a compacted request needs about "),
        "{error}"
    );

    let tiny = RuntimeProfile {
        total_token_budget: 8_000,
        ..profile
    };
    let steps = (0..12)
        .map(|_| calls(&[("Read", json!({"path": "src/app.py"}))]))
        .collect();
    let (out, model) = run(&dir, steps, tiny).await;
    assert_eq!(out.terminal_reason, TerminalReason::TokenBudget);
    assert!(out.usage_estimated);
    assert!((1..12).contains(&model.requests().len()));
    assert!(out.token_usage <= 8_000, "{}", out.token_usage);
}

/// A model exploring the way a real one does: with tools it reads the next 100 lines of a long
/// file, without tools (the wrap-up) it answers `partial` citing what it read. With `usage`, it
/// reports a provider's count (about 4 characters a token) instead of leaving it to the estimate.
struct Explorer {
    reads: Mutex<u64>,
    usage: bool,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ChatModel for Explorer {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        self.requests.lock().unwrap().push(request.clone());
        let mut reads = self.reads.lock().unwrap();
        let mut response = if request.tools.is_empty() {
            let last = (*reads * 100).max(1);
            ChatResponse {
                content: json!({"status": "partial", "summary": "big.txt holds numbered lines",
                    "findings": [format!("lines 1-{last} are numbered")],
                    "evidence": [format!("big.txt:1-{last}")]})
                .to_string(),
                ..Default::default()
            }
        } else {
            let start = 1 + *reads * 100;
            *reads += 1;
            ChatResponse {
                tool_calls: vec![ToolCall {
                    id: format!("call_{reads}"),
                    name: "Read".into(),
                    arguments: json!({"path": "big.txt", "start_line": start, "limit": 100})
                        .to_string(),
                }],
                ..Default::default()
            }
        };
        if self.usage {
            let prompt = request.char_len() as u64 / 4;
            let completion = (response.content.len()
                + response
                    .tool_calls
                    .iter()
                    .map(|c| c.arguments.len())
                    .sum::<usize>()) as u64
                / 4
                + 10;
            response.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt + completion,
                cached_tokens: 0,
            });
        }
        Box::pin(async move { Ok(response) })
    }
    fn describe(&self) -> String {
        "explorer".into()
    }
}

#[tokio::test]
async fn an_exploration_of_100_line_reads_ends_within_the_explore_budgets_with_an_answer() {
    let dir = tree();
    // The model's own reads only: no Read opened for it by the repo-map hint.
    let profile = RuntimeProfile {
        repo_map_hint: false,
        ..explore_profile()
    };
    for usage in [false, true] {
        let model = Arc::new(Explorer {
            reads: Mutex::new(0),
            usage,
            requests: Mutex::new(vec![]),
        });
        let mut r = runner(&dir, Scripted::new(vec![]), profile.clone());
        r.model = model.clone();
        let out = r.run("Find what big.txt holds.").await;
        let reads = *model.reads.lock().unwrap();
        let requests = model.requests.lock().unwrap().clone();
        assert!(
            out.token_usage <= profile.total_token_budget as u64,
            "usage {usage}: {} tokens",
            out.token_usage
        );
        // The total budget is the sum of what every call sends and receives, and each call
        // re-sends the history: 32 000 tokens pay for a handful of 100-line reads, not 12.
        assert_eq!(
            (
                out.terminal_reason,
                requests.len() as u64,
                out.usage_estimated
            ),
            (TerminalReason::TokenBudget, reads + 1, !usage),
            "usage {usage}: {:?}",
            out.error
        );
        assert!((4..12).contains(&reads), "usage {usage}: {reads} reads");
        let Some(ParsedResult::Explore(result)) = &out.result else {
            panic!("usage {usage}: {out:?}")
        };
        assert_eq!(
            (result.status, &result.evidence),
            (
                SubagentStatus::Partial,
                &vec![format!("big.txt:1-{}", reads * 100)]
            )
        );
        assert!(requests.last().unwrap().tools.is_empty());
        eprintln!("usage {usage}: {reads} reads, {} tokens", out.token_usage);
    }
}

#[tokio::test]
async fn every_phase_ends_within_the_wall_clock_limit() {
    let dir = tree();
    let limit = 0.5;
    let quick = RuntimeProfile {
        timeout_seconds: limit,
        ..explore_profile()
    };
    let within = |started: Instant| {
        let took = started.elapsed().as_secs_f64();
        assert!(took < limit + 0.5, "took {took} s under a {limit} s limit");
    };

    // A model that does not answer.
    let started = Instant::now();
    let (out, _) = run(
        &dir,
        vec![Step::Slow(Duration::from_secs(30), ChatResponse::default())],
        quick.clone(),
    )
    .await;
    within(started);
    assert_eq!(out.terminal_reason, TerminalReason::Timeout);

    // A tool that ignores its deadline.
    struct Stuck;
    impl crate::tools::tool::Tool for Stuck {
        fn name(&self) -> &'static str {
            "Read"
        }
        fn description(&self) -> std::borrow::Cow<'static, str> {
            "never returns in time".into()
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn run(
            &self,
            _: &crate::tools::context::ToolContext,
            args: &Value,
        ) -> crate::tools::envelope::ToolResult {
            std::thread::sleep(Duration::from_secs(3));
            crate::tools::envelope::ToolResult::error(
                args,
                crate::tools::envelope::ErrorCode::InternalError,
                "too late",
                3_000,
            )
        }
    }
    let model = Scripted::new(vec![calls(&[("Read", json!({"path": "src/app.py"}))])]);
    let mut r = runner(&dir, model, quick.clone());
    let mut registry = ToolRegistry::readonly();
    registry.register(Arc::new(Stuck));
    r.registry = Arc::new(registry);
    let started = Instant::now();
    let out = r.run("task").await;
    within(started);
    assert_eq!(out.terminal_reason, TerminalReason::Timeout);
    // The tool's result, then the wrap-up's request (the model gave no answer: nothing seen).
    let Some(Message::Tool { content, .. }) = out
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Tool { .. }))
    else {
        panic!("{:?}", out.messages)
    };
    let error: Value = serde_json::from_str::<Value>(content).unwrap()["error"].clone();
    assert_eq!(
        error,
        json!({"code": "TIMEOUT", "message": "Tool 'Read' did not finish before the run's wall-clock limit of 0.5s"})
    );

    // A final answer citing a 2 GiB sparse file forty times, given just before exploring must
    // stop (a fifth of the limit is kept for a wrap-up): what the gate could not check in time
    // is not grounded, and the run ends unverified.
    std::fs::File::create(dir.path().join("huge.bin"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let evidence: Vec<String> = (0..40).map(|i| format!("huge.bin:{}", 2 + i)).collect();
    let answer =
        json!({"status": "completed", "summary": "s", "findings": ["f"], "evidence": evidence});
    let started = Instant::now();
    let (out, model) = run(
        &dir,
        vec![Step::Slow(
            Duration::from_millis(350),
            ChatResponse {
                content: answer.to_string(),
                ..Default::default()
            },
        )],
        quick,
    )
    .await;
    within(started);
    assert_eq!(
        (out.terminal_reason, model.requests().len()),
        (TerminalReason::CompletedUnverified, 1)
    );
    assert_eq!(out.ungrounded_evidence.len(), 40);
    for c in &out.ungrounded_evidence {
        assert!(matches!(c.reason, Some("timeout" | "too_large")), "{c:?}");
    }
}

#[tokio::test]
async fn context_budget_holds_for_every_request() {
    let dir = tree();
    let budget = 6_000u64;
    let profile = RuntimeProfile {
        context_token_budget: budget as i64,
        max_steps: 8,
        ..explore_profile()
    };
    let steps: Vec<Step> = (0..8)
        .map(|i| {
            calls(&[(
                "Read",
                json!({"path": "big.txt", "start_line": 1 + i * 200, "limit": 200}),
            )])
        })
        .chain([say(FINAL)])
        .collect();
    let (out, model) = run(&dir, steps, profile).await;
    assert_eq!(out.terminal_reason, TerminalReason::MaxSteps);
    for req in model.requests() {
        assert!(
            estimate_tokens(req.char_len()) <= budget,
            "a request of {} tokens",
            estimate_tokens(req.char_len())
        );
    }
}

#[tokio::test]
async fn forbidden_and_unknown_tools_are_refused_fed_back_and_counted() {
    let dir = tree();
    let (out, model) = run(
        &dir,
        vec![
            calls(&[
                ("Bash", json!({"command": "rm -rf /"})),
                ("Task", json!({})),
                ("Nope", json!({})),
            ]),
            read_app(),
            say(FINAL),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        out.tool_usage,
        BTreeMap::from([
            ("Bash".into(), 1),
            ("Nope".into(), 1),
            ("Read".into(), 1),
            ("Task".into(), 1)
        ])
    );
    let fed: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(
                serde_json::from_str::<Value>(content).unwrap()["error"]["code"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(fed, vec!["PERMISSION_DENIED"; 3]);
}

#[tokio::test]
async fn an_answer_over_the_size_limit_ends_the_run_at_once() {
    // 16 MiB of `{` once kept the gate's repair busy for minutes past a 1 s limit.
    let dir = tree();
    let quick = RuntimeProfile {
        timeout_seconds: 1.0,
        ..explore_profile()
    };
    for huge in [
        say(&"{".repeat(16 << 20)),
        calls(&[("Grep", json!({"pattern": "x".repeat(MAX_ANSWER_BYTES)}))]),
    ] {
        let started = Instant::now();
        let (out, model) = run(&dir, vec![huge, say(FINAL)], quick.clone()).await;
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!(model.requests().len(), 1);
        let error = out.error.unwrap_or_default();
        assert_eq!(out.terminal_reason, TerminalReason::ModelError, "{error}");
        assert!(
            error.starts_with("bad_response error: the model's answer is ")
                && error.ends_with(
                    " bytes (content and tool calls), over the 1 MiB limit for one answer"
                ),
            "{error}"
        );
    }
    // Just under the limit is an answer like any other: the gate refuses it, and the next
    // request, which carries it, no longer fits the context budget.
    let started = Instant::now();
    let (out, model) = run(
        &dir,
        vec![say(&"x".repeat(MAX_ANSWER_BYTES)), say(FINAL)],
        quick,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        out.terminal_reason,
        TerminalReason::ContextBudget,
        "{:?}",
        out.error
    );
}

#[tokio::test]
async fn model_errors_empty_answers_timeouts_and_cancellation() {
    let dir = tree();
    let (out, _) = run(
        &dir,
        vec![Step::Fail(ModelError::new(ModelErrorKind::Server, "boom"))],
        explore_profile(),
    )
    .await;
    assert_eq!(
        (out.terminal_reason, out.error.as_deref()),
        (TerminalReason::ModelError, Some("server error: boom"))
    );

    let (out, model) = run(
        &dir,
        vec![read_app(), say(""), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        model.requests()[2].messages.last(),
        Some(&Message::User {
            content: EMPTY_RESPONSE_HINT.into()
        })
    );
    let (out, _) = run(&dir, vec![say(""), say("  ")], explore_profile()).await;
    assert_eq!(out.terminal_reason, TerminalReason::EmptyResponseFailed);

    let quick = RuntimeProfile {
        timeout_seconds: 0.2,
        ..explore_profile()
    };
    let started = Instant::now();
    let (out, _) = run(
        &dir,
        vec![Step::Slow(Duration::from_secs(5), ChatResponse::default())],
        quick,
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Timeout);
    assert!(started.elapsed() < Duration::from_secs(2));

    let model = Scripted::new(vec![Step::Slow(
        Duration::from_secs(5),
        ChatResponse::default(),
    )]);
    let r = runner(&dir, model, explore_profile());
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = r.run("task").await;
    assert_eq!(out.terminal_reason, TerminalReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn trace_records_the_reference_events() {
    let dir = tree();
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    let r = runner(&dir, model, explore_profile());
    let out = r.run("task").await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let names: Vec<EventKind> = r.trace.events().into_iter().map(|e| e.event).collect();
    use EventKind::*;
    assert_eq!(
        names,
        vec![
            RunStart,
            UserInput,
            ModelOutput,
            ToolCall,
            ToolResult,
            ModelOutput,
            CompletionGateVerdict,
            Terminal,
            RunEnd
        ]
    );
}

/// `time_ms` set to 0 everywhere: the one value that differs from run to run.
fn without_times(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if k == "time_ms" {
                        json!(0)
                    } else {
                        without_times(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_times).collect()),
        other => other,
    }
}

#[tokio::test]
async fn trace_json_is_byte_for_byte_what_it_was_before_typed_payloads() {
    let dir = tree();
    let model = Scripted::new(vec![
        calls(&[("Glob", json!({"pattern": "*.py"})), ("Nope", json!({}))]),
        say("not json"),
        with_usage(say(FINAL), 11),
    ]);
    let r = runner(&dir, model, explore_profile());
    r.run("task").await;
    let events: Vec<Value> = r
        .trace
        .events()
        .into_iter()
        .map(|e| without_times(json!([e.event, e.step, e.payload])))
        .collect();
    // Recorded from the json!-built payloads this replaced; key order matters to readers.
    let golden = include_str!("testdata/trace_golden.json");
    assert_eq!(
        serde_json::to_string_pretty(&events).unwrap() + "\n",
        golden
    );
}

#[path = "../../tests/rust/support/recorder.rs"]
mod recorder;

/// A span's name, parent and fields, without the durations that differ from run to run.
fn shape(r: &recorder::Recorded) -> (String, Option<String>, Vec<(String, String)>) {
    let fields = r
        .fields
        .iter()
        .filter(|(k, _)| k.as_str() != "duration_ms")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (r.name.clone(), r.parent.clone(), fields)
}

#[tokio::test]
async fn a_run_reports_step_model_tool_and_gate_spans() {
    let dir = tree();
    // Other tests' threads may cache "never" for a callsite (tracing's interest cache is
    // process-wide) between the rebuild and the run: a run that missed its spans is made again.
    let mut attempt = 0;
    let (out, records) = loop {
        attempt += 1;
        let model = Scripted::new(vec![
            with_usage(
                calls(&[("Read", json!({"path": "src/app.py"})), ("Nope", json!({}))]),
                30,
            ),
            with_usage(say(FINAL), 40),
        ]);
        let recorder = recorder::Recorder::default();
        let out = {
            let _guard = tracing::subscriber::set_default(recorder.clone());
            tracing::callsite::rebuild_interest_cache();
            runner(&dir, model, explore_profile()).run("task").await
        };
        let records = recorder.records();
        let spans = records.iter().filter(|r| r.kind != "event").count();
        if spans >= 7 || attempt == 3 {
            break (out, records);
        }
    };
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let f = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let model_call = |total: &str| {
        (
            "model_call".to_string(),
            Some("step".to_string()),
            f(&[
                ("completion_tokens", "0"),
                ("model", "scripted"),
                ("prompt_estimate", records_prompt_estimate(&records, total)),
                ("prompt_tokens", total),
                ("status", "ok"),
                ("total_tokens", total),
                ("usage_estimated", "false"),
            ]),
        )
    };
    let step = |n: &str| {
        (
            "step".to_string(),
            None,
            f(&[("session_id", "child-test"), ("step", n)]),
        )
    };
    // The spans only: the events inside them are checked in tests/rust/logging.rs.
    assert_eq!(
        records
            .iter()
            .filter(|r| r.kind != "event")
            .map(shape)
            .collect::<Vec<_>>(),
        vec![
            step("1"),
            model_call("30"),
            (
                "tool_call".into(),
                Some("step".into()),
                f(&[
                    ("status", "success"),
                    ("tool", "Read"),
                    ("tool_call_id", "call_0")
                ])
            ),
            (
                "tool_call".into(),
                Some("step".into()),
                f(&[
                    ("error_code", "PERMISSION_DENIED"),
                    ("status", "error"),
                    ("tool", "Nope"),
                    ("tool_call_id", "call_1")
                ])
            ),
            step("2"),
            model_call("40"),
            (
                "completion_gate".into(),
                Some("step".into()),
                f(&[("verdict", "pass")])
            ),
        ]
    );
    for r in records
        .iter()
        .filter(|r| r.name != "step" && r.kind != "event")
    {
        assert!(r.fields.contains_key("duration_ms"), "{r:?}");
    }
}

/// The prompt estimate a model_call span recorded (it depends on the prompt's exact size).
fn records_prompt_estimate<'a>(records: &'a [recorder::Recorded], total: &str) -> &'a str {
    records
        .iter()
        .find(|r| {
            r.name == "model_call"
                && r.fields.get("total_tokens").map(String::as_str) == Some(total)
        })
        .and_then(|r| r.fields.get("prompt_estimate"))
        .map(String::as_str)
        .unwrap_or("missing")
}

/// The user message the model saw last before request `n`.
fn last_user(model: &Scripted, n: usize) -> String {
    model.requests()[n]
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn tool_calls_written_as_text_are_taken_as_calls() {
    let dir = tree();
    let text = "```json\n{\"name\": \"Read\", \"arguments\": {\"path\": \"src/app.py\"}}\n```";
    let r = runner(
        &dir,
        Scripted::new(vec![say(text), say(FINAL)]),
        explore_profile(),
    );
    let out = r.run("task").await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(out.tool_usage, BTreeMap::from([("Read".into(), 1)]));
    let first = r
        .trace
        .events()
        .into_iter()
        .find(|e| e.event == EventKind::ModelOutput)
        .unwrap();
    assert_eq!(first.payload["meta"]["tool_call_format"], json!("text"));
    assert_eq!(first.payload["raw"], json!(text));
    assert_eq!(first.payload["tool_calls"][0]["name"], json!("Read"));
    // The history carries it as a call, so the next request pairs it with its result.
    let Message::Assistant {
        content,
        tool_calls,
    } = &out.messages[2]
    else {
        panic!("{:?}", out.messages)
    };
    assert_eq!((content.as_str(), tool_calls.len()), ("", 1));
}

#[tokio::test]
async fn an_answer_before_any_tool_call_is_refused_then_partial() {
    let dir = tree();
    let (out, model) = run(
        &dir,
        vec![say(FINAL), read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert!(
        last_user(&model, 1).starts_with("You answered after no successful tool call, but this task needs at least 1: search before answering."),
        "{}",
        last_user(&model, 1)
    );
    // Answering from its head three times (refusals for too little exploration get one more
    // retry than others): no evidence stands as partial, saying why.
    let bare = r#"{"status": "completed", "summary": "main is somewhere", "findings": [], "evidence": []}"#;
    let (out, model) = run(
        &dir,
        vec![say(bare), say(bare), say(bare)],
        explore_profile(),
    )
    .await;
    assert_eq!(model.requests().len(), 3);
    assert!(
        last_user(&model, 1).ends_with("Call Glob, Grep or Read now (as a tool call; for example, call Grep with {\"pattern\": \"<a name or phrase from the task>\"}), then reply with the ExploreResult JSON object citing the lines you saw."),
        "{}",
        last_user(&model, 1)
    );
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (
            out.terminal_reason,
            r.status,
            r.unresolved_questions.clone()
        ),
        (
            TerminalReason::Completed,
            SubagentStatus::Partial,
            vec![
                "outrider: the child answered before searching enough, so this answer is partial"
                    .to_string()
            ]
        )
    );
    // Citing lines it never saw: unverified.
    let (out, _) = run(
        &dir,
        vec![say(FINAL), say(FINAL), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(out.ungrounded_evidence[0].reason, Some("unobserved"));
    // With min_tool_calls 0 the first answer is weighed on its evidence alone.
    let free = RuntimeProfile {
        min_tool_calls: 0,
        ..explore_profile()
    };
    let (_, model) = run(&dir, vec![say(FINAL)], free).await;
    assert_eq!(model.requests()[0].tool_choice.as_deref(), Some("auto"));
}

#[tokio::test]
async fn evidence_that_exists_but_was_never_seen_is_unobserved() {
    let dir = tree();
    // The child read lines 1-10 of big.txt and a failed Grep; it cites line 500.
    let answer = r#"{"status": "completed", "summary": "s", "findings": [], "evidence": ["big.txt:500", "big.txt:3-5"]}"#;
    let (out, model) = run(
        &dir,
        vec![
            calls(&[
                ("Read", json!({"path": "big.txt", "limit": 10})),
                ("Grep", json!({"pattern": "("})),
            ]),
            say(answer),
            say(answer),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(
        out.ungrounded_evidence
            .iter()
            .map(|c| (c.evidence.as_str(), c.reason))
            .collect::<Vec<_>>(),
        [("big.txt:500", Some("unobserved"))]
    );
    let feedback = last_user(&model, 2);
    assert!(
        feedback.contains("Evidence \"big.txt:500\" exists, but you did not see line 500 of 'big.txt' in this run"),
        "{feedback}"
    );
    // A Grep match and its context lines are seen.
    let cite = r#"{"status": "completed", "summary": "s", "findings": [], "evidence": ["src/app.py:1-2"]}"#;
    let (out, _) = run(
        &dir,
        vec![
            calls(&[("Grep", json!({"pattern": "def main", "context": 1}))]),
            say(cite),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(
        out.terminal_reason,
        TerminalReason::Completed,
        "{:?}",
        out.ungrounded_evidence
    );
}

#[tokio::test]
async fn a_completed_answer_without_evidence_gets_feedback_then_stands_as_partial() {
    let dir = tree();
    let bare = r#"{"status": "completed", "summary": "File 'src/main.rs' does not exist.", "findings": [], "evidence": []}"#;
    let (out, model) = run(
        &dir,
        vec![read_app(), say(bare), say(bare)],
        explore_profile(),
    )
    .await;
    assert!(last_user(&model, 2)
        .starts_with("A \"completed\" answer must cite at least one line you saw"));
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status),
        (TerminalReason::Completed, SubagentStatus::Partial)
    );
    // A partial answer without evidence is fine as it is.
    let partial = bare.replace("completed", "partial");
    let (out, model) = run(&dir, vec![read_app(), say(&partial)], explore_profile()).await;
    assert_eq!(
        (out.terminal_reason, model.requests().len()),
        (TerminalReason::Completed, 2)
    );
}

#[tokio::test]
async fn the_same_failing_call_twice_is_named_not_run_again() {
    let dir = tree();
    let missing = || calls(&[("Read", json!({"path": "nope.py"}))]);
    let (_, model) = run(
        &dir,
        vec![missing(), missing(), read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    let Some(Message::Tool { content, .. }) = model.requests()[2].messages.last().cloned() else {
        panic!()
    };
    let v: Value = serde_json::from_str(&content).unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Same call as step 1, which failed with: "),
        "{message}"
    );
    assert!(
        message.ends_with("Change the arguments or use another tool."),
        "{message}"
    );
}

#[tokio::test]
async fn a_timeout_keeps_time_for_a_partial_answer() {
    let dir = tree();
    let quick = RuntimeProfile {
        timeout_seconds: 1.0,
        ..explore_profile()
    };
    let partial = FINAL.replace("completed", "partial");
    let slow = Step::Slow(Duration::from_secs(5), ChatResponse::default());
    let started = Instant::now();
    let (out, model) = run(&dir, vec![read_app(), slow, say(&partial)], quick.clone()).await;
    assert!(started.elapsed() < Duration::from_millis(1500));
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status),
        (TerminalReason::Timeout, SubagentStatus::Partial)
    );
    assert!(last_user(&model, 2)
        .starts_with("Budget exhausted (the run exceeded its wall-clock limit of 1s)"));
    // No wrap-up answer: the places it saw become the partial answer.
    let slow = Step::Slow(Duration::from_secs(5), ChatResponse::default());
    let (out, _) = run(&dir, vec![read_app(), slow], quick).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status, r.evidence.clone()),
        (
            TerminalReason::Timeout,
            SubagentStatus::Partial,
            vec!["src/app.py:1".to_string()]
        )
    );
    assert!(r.unresolved_questions[0].starts_with("outrider: the task is not answered: "));
}

#[tokio::test]
async fn the_first_message_lists_likely_places_and_opens_the_first_unless_turned_off() {
    let dir = tree();
    let model = Scripted::new(vec![say(FINAL)]);
    let r = runner(&dir, model.clone(), explore_profile());
    let out = r.run("Where is the `main` function defined?").await;
    let first = last_user(&model, 0);
    assert_eq!(
        first,
        "Where is the `main` function defined?\n\nLikely places (an offline search of the code index ranked them, best first; unverified, they may not answer the task):\n1. src/app.py:1-2 (function `main`, opened below)\n\nOpened for you (line number | text):\nsrc/app.py:\n   1 | def main():\n   2 |     return 1\n\nIf some of these places answer the task, reply with the final JSON object citing each one that does as it is listed above (relative/path:start-end), the best first; if none does, Read or Grep further."
    );
    // The opened lines were seen, and that look counts as the one tool call explore asks
    // for: the answer citing src/app.py:1-2 is completed on the first call, with no tool call
    // in the conversation and none counted.
    assert_eq!(model.requests()[0].messages.len(), 2);
    assert_eq!(
        (out.terminal_reason, out.model_calls, out.tool_usage.len()),
        (TerminalReason::Completed, 1, 0)
    );
    let off = RuntimeProfile {
        repo_map_hint: false,
        ..explore_profile()
    };
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    runner(&dir, model.clone(), off)
        .run("Where is the `main` function defined?")
        .await;
    assert_eq!(
        last_user(&model, 0),
        "Where is the `main` function defined?"
    );
}

#[tokio::test]
async fn a_provider_that_refuses_required_is_asked_with_auto() {
    let dir = tree();
    let refused = Step::Fail(ModelError {
        status: Some(400),
        ..ModelError::new(
            ModelErrorKind::InvalidRequest,
            "tool_choice required is not supported",
        )
    });
    let (out, model) = run(
        &dir,
        vec![refused, read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let choices: Vec<Option<String>> = model
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [
            Some("required".into()),
            Some("auto".into()),
            Some("auto".into())
        ]
    );
}

#[tokio::test]
async fn compact_results_reach_the_model_as_plain_lines() {
    let dir = tree();
    let compact = RuntimeProfile {
        tool_result_format: crate::profile::ToolResultFormat::Compact,
        ..explore_profile()
    };
    let (out, model) = run(
        &dir,
        vec![
            calls(&[("Grep", json!({"pattern": "def main"}))]),
            say(FINAL),
        ],
        compact,
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Some(Message::Tool { content, .. }) = model.requests()[1].messages.last().cloned() else {
        panic!()
    };
    assert_eq!(
        content,
        "Found 1 matching line(s) in '.'.\nsrc/app.py:1:def main():"
    );
}

#[tokio::test]
async fn the_request_prefix_stays_byte_stable_and_cached_tokens_are_summed() {
    let dir = tree();
    let cached = |step: Step, n: u64| match step {
        Step::Reply(mut r) => {
            r.usage = Some(Usage {
                prompt_tokens: 1000,
                completion_tokens: 10,
                total_tokens: 1010,
                cached_tokens: n,
            });
            Step::Reply(r)
        }
        other => other,
    };
    let (out, model) = run(
        &dir,
        vec![
            cached(calls(&[("Grep", json!({"pattern": "def main"}))]), 0),
            cached(read_app(), 800),
            cached(say(FINAL), 900),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!((out.cached_input_tokens, out.input_tokens), (1700, 3000));
    // Each request starts with every byte of the one before (a provider's prompt cache hits).
    let reqs = model.requests();
    for pair in reqs.windows(2) {
        let (a, b) = (
            serde_json::to_string(&pair[0].messages).unwrap(),
            serde_json::to_string(&pair[1].messages).unwrap(),
        );
        assert!(
            b.starts_with(&a[..a.len() - 1]),
            "the history was rewritten"
        );
        assert_eq!(pair[0].tools, pair[1].tools);
    }
}

#[tokio::test]
async fn an_answer_that_copies_the_template_is_sent_back() {
    let dir = tree();
    let copied = r#"{"status": "completed", "summary": "<the answer, one paragraph>", "findings": [], "evidence": ["src/app.py:1"]}"#;
    let (out, model) = run(
        &dir,
        vec![read_app(), say(copied), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert!(
        last_user(&model, 2).starts_with(
            "Your answer repeats the example from the instructions (\"<the answer, one paragraph>\")"
        ),
        "{}",
        last_user(&model, 2)
    );
}

#[tokio::test]
async fn exploration_feedback_names_only_the_tools_offered_and_a_verdict_without_looking_is_unverified(
) {
    let dir = tree();
    let read_only = RuntimeProfile {
        tool_allowlist: ["Read".to_string()].into(),
        repo_map_hint: false,
        ..explore_profile()
    };
    let (_, model) = run(&dir, vec![say(FINAL), read_app(), say(FINAL)], read_only).await;
    assert!(
        last_user(&model, 1).contains("Call Read now (as a tool call; for example, call Read with {\"path\": \"<a file the task names>\"})"),
        "{}",
        last_user(&model, 1)
    );
    let fail = r#"{"verdict": "FAIL", "reasons": ["it is broken"], "evidence": []}"#;
    let (out, _) = run(
        &dir,
        vec![say(fail), say(fail), say(fail)],
        crate::profile::verification_profile(),
    )
    .await;
    let Some(ParsedResult::Verification(v)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(v.verdict, crate::contract::VerificationVerdict::Unverified);
    assert_eq!(
        v.reasons.last().map(String::as_str),
        Some("outrider: the verifier answered before reading the repository enough, so its verdict is UNVERIFIED")
    );
}

#[tokio::test]
async fn a_tool_call_written_inside_prose_is_quoted_back_as_the_reply_to_make() {
    let dir = tree();
    let prose = "First I search.\n```json\n{\"name\": \"Read\", \"arguments\": {\"path\": \"src/app.py\"}}\n```\nThen I answer.";
    let (out, model) = run(
        &dir,
        vec![say(prose), read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        last_user(&model, 1),
        "Your reply wrote a tool call inside other text, so no tool ran. To call a tool, reply with nothing but the call, for example:\n{\"name\":\"Read\",\"arguments\":{\"path\":\"src/app.py\"}}"
    );
}

/// The tree with a second `main`, at line 71 of `src/cli.py` (70 lines of `x = 1` before it),
/// and the task that finds both.
fn two_mains() -> (tempfile::TempDir, &'static str) {
    let dir = tree();
    let other = format!("{}def main():\n    pass\n", "x = 1\n".repeat(70));
    std::fs::write(dir.path().join("src/cli.py"), other).unwrap();
    (dir, "Where is the `main` function defined?")
}

/// A completed explore answer citing `evidence`.
fn cite(evidence: &str) -> String {
    format!(
        r#"{{"status": "completed", "summary": "s", "findings": [], "evidence": ["{evidence}"]}}"#
    )
}

#[tokio::test]
async fn only_the_opened_lines_of_a_listed_place_may_be_cited() {
    let (dir, task) = two_mains();
    // Both places are listed and opened, src/cli.py around its line 71 only.
    let model = Scripted::new(vec![say(&cite("src/cli.py:71"))]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    let hint = last_user(&model, 0);
    assert!(
        hint.contains("src/cli.py:70-72") && hint.contains("src/app.py:1-2"),
        "{hint}"
    );
    assert!(
        hint.contains("  71 | def main():") && !hint.contains("   5 | x = 1"),
        "{hint}"
    );
    assert_eq!(
        out.terminal_reason,
        TerminalReason::Completed,
        "{:?}",
        out.ungrounded_evidence
    );
    // A line of that file outside the window exists but was not seen.
    let model = Scripted::new(vec![say(&cite("src/cli.py:5")), say(&cite("src/cli.py:5"))]);
    let out = runner(&dir, model, explore_profile()).run(task).await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(out.ungrounded_evidence[0].reason, Some("unobserved"));
    // A range seen in part (too long to open for the child): the feedback names the part
    // that may be cited.
    let model = Scripted::new(vec![
        say(&cite("src/cli.py:20-72")),
        say(&cite("src/cli.py:70-72")),
    ]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert!(
        last_user(&model, 1)
            .contains("You saw src/cli.py:70-72 of it: cite that, or Read the rest first."),
        "{}",
        last_user(&model, 1)
    );
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
}

#[tokio::test]
async fn unseen_lines_near_what_the_child_saw_are_opened_for_it_once() {
    let (dir, task) = two_mains();
    // The hint opened src/cli.py:70-72; the child cites 60-65, near but unseen: the runtime
    // opens 58-67 for it, and the same answer then stands, its lines seen.
    let model = Scripted::new(vec![
        say(&cite("src/cli.py:60-65")),
        say(&cite("src/cli.py:60-65")),
    ]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    let feedback = last_user(&model, 1);
    assert!(
        feedback.starts_with("Your evidence \"src/cli.py:60-65\" cites lines you had not seen, so they are opened for you below (line number | text)."),
        "{feedback}"
    );
    assert!(
        feedback.contains("src/cli.py:\n  58 | x = 1\n")
            && feedback.contains("  67 | x = 1")
            && !feedback.contains("  57 |")
            && !feedback.contains("  68 |"),
        "{feedback}"
    );
    assert_eq!(
        (out.terminal_reason, out.ungrounded_evidence.len()),
        (TerminalReason::Completed, 0),
        "{:?}",
        out.ungrounded_evidence
    );
    // Only once a run: a second unseen range is refused as before, and with the retries spent
    // the answer is unverified.
    let model = Scripted::new(vec![
        say(&cite("src/cli.py:60-65")),
        say(&cite("src/cli.py:40-45")),
        say(&cite("src/cli.py:40-45")),
    ]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(out.ungrounded_evidence[0].evidence, "src/cli.py:40-45");
    // Another unseen item that is not opened (in a file the child never saw) keeps the gate's
    // word, before the opened lines.
    let both = r#"{"status": "completed", "summary": "s", "findings": [], "evidence": ["src/cli.py:60-65", "big.txt:9"]}"#;
    let model = Scripted::new(vec![say(both), say(&cite("src/cli.py:60-65"))]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    let feedback = last_user(&model, 1);
    assert!(
        feedback.starts_with("Return only a valid ExploreResult JSON object: some evidence is not grounded in what you saw. Evidence \"big.txt:9\" exists, but you did not see line 9")
            && feedback.contains("\n\nYour evidence \"src/cli.py:60-65\" cites lines you had not seen"),
        "{feedback}"
    );
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
}

#[tokio::test]
async fn a_finding_that_cites_seen_lines_joins_the_evidence() {
    let (dir, task) = two_mains();
    // The hint opened src/cli.py:70-72 and src/app.py:1-2. The model lists one place as a
    // finding and cites the other; a finding citing lines it never saw stays a finding.
    let answer = r#"{"status": "completed", "summary": "s", "findings": ["src/cli.py:70-72", " src/cli.py:5", "src/app.py:1-2", "main is in cli.py"], "evidence": ["src/app.py:1-2"]}"#;
    let model = Scripted::new(vec![say(answer)]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("no explore result: {:?}", out.result)
    };
    assert_eq!(r.evidence, ["src/app.py:1-2", "src/cli.py:70-72"]);
    assert_eq!(r.findings.len(), 4, "findings stay as written");
    assert_eq!(
        model.requests().len(),
        1,
        "no second look: both places are cited"
    );
    // A completed answer whose only citation is a finding of seen lines stands on it; one whose
    // findings cite nothing seen is refused for having no evidence.
    let only =
        r#"{"status": "completed", "summary": "s", "findings": ["src/cli.py:71"], "evidence": []}"#;
    let out = runner(&dir, Scripted::new(vec![say(only)]), explore_profile())
        .run(task)
        .await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("no explore result: {:?}", out.result)
    };
    assert_eq!(
        (out.terminal_reason, r.evidence.as_slice()),
        (
            TerminalReason::Completed,
            // The window the hint opened around it (70-72) is hardly wider: not added.
            ["src/cli.py:71".to_string()].as_slice()
        )
    );
    let unseen =
        r#"{"status": "completed", "summary": "s", "findings": ["src/cli.py:5"], "evidence": []}"#;
    let model = Scripted::new(vec![say(unseen), say(unseen), say(unseen)]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert!(
        last_user(&model, 1)
            .starts_with("A \"completed\" answer must cite at least one line you saw"),
        "{}",
        last_user(&model, 1)
    );
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("no explore result: {:?}", out.result)
    };
    assert_eq!((r.status, r.evidence.len()), (SubagentStatus::Partial, 0));
}

#[tokio::test]
async fn places_not_opened_are_listed_with_the_lines_the_index_showed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let body = "    x = 1\n".repeat(12);
    for name in ["a", "b", "c"] {
        let text = format!("# {name}\n\ndef load_settings():\n{body}");
        std::fs::write(dir.path().join(format!("src/{name}.py")), text).unwrap();
    }
    // Without Read nothing is opened: each place is listed with the lines the index showed.
    let no_read = RuntimeProfile {
        tool_allowlist: ["Grep", "Glob"].iter().map(|t| t.to_string()).collect(),
        ..explore_profile()
    };
    let task = "Where is the `load_settings` function defined?";
    let cite = |e: &str| {
        format!(r#"{{"status": "completed", "summary": "s", "findings": [], "evidence": ["{e}"]}}"#)
    };
    let probe = Scripted::new(vec![say(&cite("src/a.py:3"))]);
    runner(&dir, probe.clone(), no_read.clone()).run(task).await;
    let hint = last_user(&probe, 0);
    assert!(!hint.contains("opened below"), "{hint}");
    let first = hint
        .lines()
        .find_map(|l| l.strip_prefix("1. "))
        .unwrap_or_else(|| panic!("{hint}"));
    let (at, what) = first.split_once(' ').unwrap_or_else(|| panic!("{hint}"));
    assert_eq!(what, "(function `load_settings`):", "{hint}");
    let (path, line) = at.split_once(':').unwrap_or_else(|| panic!("{hint}"));
    assert_eq!(line, "3", "{hint}");
    assert!(
        hint.contains(&format!(
            "1. {at} (function `load_settings`):\n   3 | def load_settings():\n"
        )),
        "{hint}"
    );
    assert!(
        hint.ends_with("the best first; if none does, search further."),
        "{hint}"
    );
    // That listed line was seen: an answer citing it stands.
    let model = Scripted::new(vec![say(&cite(at))]);
    let out = runner(&dir, model, no_read.clone()).run(task).await;
    assert_eq!(
        (out.terminal_reason, out.ungrounded_evidence.len()),
        (TerminalReason::Completed, 0)
    );
    // A line of its body the hint did not show was not.
    let unseen = format!("{path}:6");
    let model = Scripted::new(vec![say(&cite(&unseen)), say(&cite(&unseen))]);
    // (Without Read, the runtime does not open it for the child either.)
    let out = runner(&dir, model, no_read).run(task).await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(out.ungrounded_evidence[0].reason, Some("unobserved"));
}

#[tokio::test]
async fn the_scout_answers_when_the_model_gave_no_verified_answer_and_says_so() {
    let dir = tree();
    let task = "Where is the `main` function defined?";
    let unseen = r#"{"status": "completed", "summary": "main is in big.txt", "findings": [], "evidence": ["big.txt:9"]}"#;
    let model = || Scripted::new(vec![read_app(), say(unseen), say(unseen)]);
    let on = RuntimeProfile {
        scout_fallback: true,
        ..explore_profile()
    };
    let out = runner(&dir, model(), on.clone()).run(task).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status, out.ungrounded_evidence.len()),
        (TerminalReason::Completed, SubagentStatus::Completed, 0)
    );
    assert!(r.summary.starts_with("The model gave no verified answer (its evidence was not in what it saw); this is the offline scout's answer (a keyword search, no model)."), "{}", r.summary);
    assert!(
        r.evidence.iter().any(|e| e.starts_with("src/app.py:1")),
        "{:?}",
        r.evidence
    );
    // The model's own calls are still counted, the scout's added; the model's tokens kept.
    assert_eq!(out.model_calls, 3);
    assert!(out.tool_usage["Read"] >= 1);
    // Off: the model's unverified answer stands.
    let off = RuntimeProfile {
        scout_fallback: false,
        ..explore_profile()
    };
    let out = runner(&dir, model(), off).run(task).await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
    // A completed, verified answer of the model's is never replaced.
    let out = runner(
        &dir,
        Scripted::new(vec![read_app(), say(FINAL)]),
        explore_profile(),
    )
    .run(task)
    .await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(r.summary, "main is in src/app.py");
}

#[tokio::test]
async fn a_call_failing_three_times_names_the_first_failure_once() {
    let dir = tree();
    let missing = || calls(&[("Read", json!({"path": "nope.py"}))]);
    let (_, model) = run(
        &dir,
        vec![missing(), missing(), missing(), read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    let Some(Message::Tool { content, .. }) = model.requests()[3].messages.last().cloned() else {
        panic!()
    };
    let v: Value = serde_json::from_str(&content).unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Same call as step 1, which failed with: "),
        "{message}"
    );
    assert_eq!(message.matches("Same call as step").count(), 1, "{message}");
}

#[tokio::test]
async fn an_answer_without_a_status_stands_as_partial_not_refused() {
    let dir = tree();
    let no_status =
        r#"{"summary": "main is in app.py", "findings": [], "evidence": ["src/app.py:1"]}"#;
    let (out, model) = run(&dir, vec![read_app(), say(no_status)], explore_profile()).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status, model.requests().len()),
        (TerminalReason::Completed, SubagentStatus::Partial, 2)
    );
    assert_eq!(
        r.unresolved_questions,
        ["outrider: the answer gave no status, so it stands as partial"]
    );
    // Any other violation is still refused, the missing status named with it.
    let bad = r#"{"summary": "", "findings": [], "evidence": ["src/app.py:1"]}"#;
    let (out, _) = run(
        &dir,
        vec![read_app(), say(bad), say(bad)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletionGateBlocked);
}

#[tokio::test]
async fn list_items_written_as_objects_are_taken_as_text_and_citations() {
    let dir = tree();
    let slips = r#"{"status": "completed", "summary": "main is in app.py",
        "findings": [{"line": 1, "text": "def main():"}, 2],
        "evidence": [{"path": "src/app.py", "line": 1}, {"file": "src/app.py", "start_line": 1, "end_line": 2}],
        "unresolved_questions": "none"}"#;
    let (out, model) = run(&dir, vec![read_app(), say(slips)], explore_profile()).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status, model.requests().len()),
        (TerminalReason::Completed, SubagentStatus::Completed, 2)
    );
    assert_eq!(r.findings, ["line: 1, text: def main():", "2"]);
    assert_eq!(r.evidence, ["src/app.py:1", "src/app.py:1-2"]);
    assert_eq!(r.unresolved_questions, ["none"]);
    // An evidence object that is not a citation is still refused.
    let bad = r#"{"status": "completed", "summary": "s", "findings": [], "evidence": [{"where": "app"}]}"#;
    let (out, _) = run(
        &dir,
        vec![read_app(), say(bad), say(bad)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletionGateBlocked);
}

#[tokio::test]
async fn several_citations_in_one_evidence_item_are_one_item_each() {
    let dir = tree();
    let joined = r#"{"status": "completed", "summary": "main", "findings": [],
        "evidence": ["src/app.py:1, src/app.py:2", "src/app.py:1:def main():"]}"#;
    let (out, _) = run(&dir, vec![read_app(), say(joined)], explore_profile()).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(r.evidence, ["src/app.py:1", "src/app.py:2", "src/app.py:1"]);
    // A comma inside something that is not a list of citations is left for the check.
    let odd = r#"{"status": "completed", "summary": "main", "findings": [],
        "evidence": ["src/app.py:1, and more"]}"#;
    let (out, _) = run(
        &dir,
        vec![read_app(), say(odd), say(odd)],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletedUnverified);
}

#[tokio::test]
async fn an_answer_from_the_hint_that_leaves_opened_places_out_gets_one_second_look() {
    let (dir, task) = two_mains();
    let cite = |e: &[&str]| {
        let items: Vec<String> = e.iter().map(|i| format!("\"{i}\"")).collect();
        format!(
            r#"{{"status": "completed", "summary": "s", "findings": [], "evidence": [{}]}}"#,
            items.join(", ")
        )
    };
    // Which of the two places the index ranks first, from the hint itself.
    let probe = Scripted::new(vec![say(&cite(&["src/app.py:1"]))]);
    runner(&dir, probe.clone(), explore_profile())
        .run(task)
        .await;
    let hint = last_user(&probe, 0);
    let listed = |n: &str| -> String {
        hint.lines()
            .find_map(|l| l.strip_prefix(n))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_default()
            .to_string()
    };
    let (first, second) = (listed("1. "), listed("2. "));
    let (first, second) = (first.as_str(), second.as_str());
    // Each place is listed by the lines opened of it.
    let mut both = [first, second];
    both.sort_unstable();
    assert_eq!(both, ["src/app.py:1-2", "src/cli.py:70-72"], "{hint}");

    // Passing the first place over: asked once to weigh it; the next answer stands.
    let model = Scripted::new(vec![say(&cite(&[second])), say(&cite(&[first, second]))]);
    let r = runner(&dir, model.clone(), explore_profile());
    let out = r.run(task).await;
    let asked = last_user(&model, 1);
    assert!(
        asked.starts_with(&format!(
            "Before this answer stands: it cites {second} but not the place the index ranked first, {first}"
        )),
        "{asked}"
    );
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, out.model_calls, res.evidence.clone()),
        (
            TerminalReason::Completed,
            2,
            vec![first.to_string(), second.to_string()]
        )
    );
    let verdicts: Vec<String> = r
        .trace
        .events()
        .iter()
        .filter(|e| e.event == "completion_gate_verdict")
        .map(|e| {
            e.payload["verdict"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(verdicts, ["FAIL", "PASS"]);

    // An answer after the second look that no longer passes the gate never replaces the one
    // that stood (here: a line it never saw).
    // (The first place, still left out, is then put to the model alone: it says no.)
    let model = Scripted::new(vec![
        say(&cite(&[second])),
        say(&cite(&["src/cli.py:5"])),
        say("No."),
    ]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, res.evidence.clone(), out.model_calls),
        (TerminalReason::Completed, vec![second.to_string()], 3)
    );
    assert!(out.ungrounded_evidence.is_empty());

    // Citing the first place only: asked once about the other place opened; the same answer
    // again stands.
    let model = Scripted::new(vec![say(&cite(&[first])), say(&cite(&[first])), say("no")]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert_eq!(
        last_user(&model, 1),
        format!("Before this answer stands: it cites {first} only, not {second} (function `main`), whose lines were opened above too. If that place answers the task too, add it to the evidence (the best first); if it does not, reply with the same JSON object again.")
    );
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::Completed, 3)
    );
    // Citing both, or having looked further with a tool call of its own: no second look.
    let model = Scripted::new(vec![say(&cite(&[first, second]))]);
    let out = runner(&dir, model, explore_profile()).run(task).await;
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::Completed, 1)
    );
    let look = calls(&[("Read", json!({"path": "src/app.py"}))]);
    // (The place it left out is still put to the model alone: no.)
    let model = Scripted::new(vec![look, say(&cite(&["src/app.py:1"])), say("no")]);
    let out = runner(&dir, model, explore_profile()).run(task).await;
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::Completed, 3)
    );
}

#[tokio::test]
async fn a_long_first_place_is_opened_where_it_answers_and_listed_by_the_lines_shown() {
    let dir = tree();
    let mut body = String::from("def cors(options):\n");
    for i in 0..70 {
        body.push_str(&format!("    value{i} = options.get({i})\n"));
    }
    body.push_str("    if request.method == 'OPTIONS':  # preflight\n");
    body.push_str("        return answer_preflight(options)\n");
    for i in 0..30 {
        body.push_str(&format!("    tail{i} = {i}\n"));
    }
    std::fs::write(dir.path().join("src/cors.py"), body).unwrap();
    let hint = first_message(&dir, "Where are CORS preflight OPTIONS requests answered?").await;
    let first = hint
        .lines()
        .find_map(|l| l.strip_prefix("1. src/cors.py:"))
        .unwrap_or_else(|| panic!("{hint}"));
    // The best part first (the rest, holding the def line's words, may follow as a second).
    let range = first.split([' ', ',']).next().unwrap_or_default();
    let (a, b) = range.split_once('-').unwrap_or_else(|| panic!("{hint}"));
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    // The window shown holds the preflight branch (line 72), not only the def line.
    assert!(a <= 72 && 73 <= b && b - a < 32, "{hint}");
    assert!(
        hint.contains("  72 |     if request.method == 'OPTIONS':  # preflight"),
        "{hint}"
    );
}

#[tokio::test]
async fn an_answer_the_output_limit_cut_short_is_told_so() {
    let dir = tree();
    let cut = "```json\n{\"status\": \"completed\", \"summary\": \"It looks for an adapter, then it looks for an adapter, then it looks";
    let cut_step = Step::Reply(ChatResponse {
        content: cut.into(),
        finish_reason: Some("length".into()),
        ..ChatResponse::default()
    });
    let (out, model) = run(
        &dir,
        vec![read_app(), cut_step, say(FINAL)],
        explore_profile(),
    )
    .await;
    assert!(
        last_user(&model, 2).starts_with("Your answer was cut off at the output token limit"),
        "{}",
        last_user(&model, 2)
    );
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    // The same text ended by the model itself is refused for what it is.
    let (_, model) = run(
        &dir,
        vec![read_app(), say(cut), say(FINAL)],
        explore_profile(),
    )
    .await;
    assert!(
        last_user(&model, 2).starts_with("Return only a valid ExploreResult JSON object"),
        "{}",
        last_user(&model, 2)
    );
}

/// A 120-line function whose lines `a` and `b` (and the ones after each) hold the task's words.
fn long_function_with_two_parts(a: usize, b: usize) -> String {
    let mut body = String::from("def handle(scope):\n");
    for i in 2..=120 {
        let line = if i == a || i == b {
            "    if scope['session'] and cookie:  # session cookie".to_string()
        } else if i == a + 1 || i == b + 1 {
            "        drop_session_cookie(scope)".to_string()
        } else {
            format!("    filler{i} = {i}")
        };
        body.push_str(&line);
        body.push('\n');
    }
    body
}

#[tokio::test]
async fn a_long_place_whose_rest_holds_the_words_as_well_is_opened_in_two_parts() {
    let dir = tree();
    std::fs::write(
        dir.path().join("src/sessions.py"),
        long_function_with_two_parts(20, 90),
    )
    .unwrap();
    let second = r#"{"status": "completed", "summary": "the second part drops it", "findings": [], "evidence": ["src/sessions.py:90-91"]}"#;
    let model = Scripted::new(vec![say(second)]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run("Where is the session cookie dropped?")
        .await;
    let hint = last_user(&model, 0);
    let listed = hint
        .lines()
        .find(|l| l.starts_with("1. src/sessions.py:"))
        .unwrap_or_else(|| panic!("{hint}"));
    // Both parts, each cited by the lines shown of it, and both shown.
    assert!(
        listed.ends_with("(function `handle`, two parts opened below)"),
        "{hint}"
    );
    let parts: Vec<(u64, u64)> = listed
        .trim_start_matches("1. ")
        .split(" (")
        .next()
        .unwrap_or_default()
        .split(", ")
        .map(|c| {
            let (a, b) = c
                .trim_start_matches("src/sessions.py:")
                .split_once('-')
                .unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(parts.len(), 2, "{hint}");
    assert!(parts[0].0 <= 20 && 21 <= parts[0].1, "{hint}");
    assert!(
        parts[1].0 <= 90 && 91 <= parts[1].1 && parts[1].1 - parts[1].0 < 16,
        "{hint}"
    );
    assert!(
        hint.contains("  91 |         drop_session_cookie(scope)"),
        "{hint}"
    );
    // The second part's lines were shown, so an answer citing them stands without a tool call.
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::Completed, 1),
        "{:?}",
        out.ungrounded_evidence
    );
}

/// The first message (with the repo-map hint) an explore child over `dir` gets for `task`.
async fn first_message(dir: &tempfile::TempDir, task: &str) -> String {
    let model = Scripted::new(vec![say(FINAL)]);
    runner(dir, model.clone(), explore_profile())
        .run(task)
        .await;
    last_user(&model, 0)
}

/// The hint an explore child over `tree()` with `src/sessions.py` holding `text` gets for a
/// question about the session cookie.
async fn session_hint(dir: &tempfile::TempDir, text: &str) -> String {
    std::fs::write(dir.path().join("src/sessions.py"), text).unwrap();
    first_message(dir, "Where is the session cookie dropped?").await
}

#[tokio::test]
async fn parts_of_a_long_place_a_few_lines_apart_are_one_window_and_a_lone_part_is_one() {
    let dir = tree();
    // The two parts 22 lines apart: the windows touch, and are shown as one.
    let hint = session_hint(&dir, &long_function_with_two_parts(20, 42)).await;
    assert!(!hint.contains("two parts"), "{hint}");
    assert!(hint.contains("  21 |") && hint.contains("  43 |"), "{hint}");
    // One part only: one window of it.
    let hint = session_hint(&dir, &long_function_with_two_parts(20, 0)).await;
    assert!(
        !hint.contains("two parts") && hint.contains("  21 |"),
        "{hint}"
    );
    assert!(!hint.contains("  91 |"), "{hint}");
    // A rest that holds half the words the window chosen holds is opened too; one word is not.
    let half = long_function_with_two_parts(20, 0)
        .replace("    filler90 = 90", "    if session: cookie = None");
    let hint = session_hint(&dir, &half).await;
    assert!(
        hint.contains("two parts") && hint.contains("  90 |"),
        "{hint}"
    );
    let one = long_function_with_two_parts(20, 0).replace("    filler90 = 90", "    cookie = None");
    let hint = session_hint(&dir, &one).await;
    assert!(
        !hint.contains("two parts") && !hint.contains("  90 |"),
        "{hint}"
    );
    // A class's parts are its members, each a place of its own: one window of it.
    let class =
        long_function_with_two_parts(20, 90).replacen("def handle(scope):", "class Handle:", 1);
    let hint = session_hint(&dir, &class).await;
    assert!(hint.contains("(class `Handle`, opened below)"), "{hint}");
    assert!(
        !hint.contains("two parts") && !hint.contains("  91 |"),
        "{hint}"
    );
}

#[tokio::test]
async fn an_item_inside_a_window_the_hint_opened_is_followed_by_the_window() {
    let dir = tree();
    std::fs::write(
        dir.path().join("src/sessions.py"),
        long_function_with_two_parts(20, 90),
    )
    .unwrap();
    let task = "Where is the session cookie dropped?";
    let answer = |evidence: &str| {
        say(&format!(
            r#"{{"status": "completed", "summary": "it is dropped there", "findings": [], "evidence": [{evidence}]}}"#
        ))
    };
    // The window of the second part, as the hint listed it.
    let hint = first_message(&dir, task).await;
    let listed = hint
        .lines()
        .find(|l| l.starts_with("1. src/sessions.py:"))
        .unwrap_or_else(|| panic!("{hint}"));
    let second = listed
        .trim_start_matches("1. ")
        .split(" (")
        .next()
        .and_then(|l| l.split(", ").nth(1))
        .unwrap_or_else(|| panic!("{hint}"))
        .to_string();
    let run_with = |evidence: &'static str, profile: RuntimeProfile| {
        let dir = &dir;
        async move {
            let r = runner(dir, Scripted::new(vec![answer(evidence)]), profile);
            let out = r.run(task).await;
            let Some(ParsedResult::Explore(res)) = &out.result else {
                panic!("{:?}", out.error)
            };
            let details = r
                .trace
                .events()
                .into_iter()
                .find(|e| e.event == "terminal")
                .map(|e| e.payload["details"].clone())
                .unwrap_or_default();
            (out.terminal_reason, res.evidence.clone(), details)
        }
    };
    // Two lines inside the second window: the window follows them.
    let (reason, evidence, details) =
        run_with(r#""src/sessions.py:90-91""#, explore_profile()).await;
    assert_eq!(reason, TerminalReason::Completed);
    assert_eq!(
        evidence,
        ["src/sessions.py:90-91", second.as_str()],
        "{hint}"
    );
    assert_eq!(details["cited_windows"], json!([second]));
    // The window itself, cited as listed: nothing is added.
    let (_, evidence, details) = run_with(
        Box::leak(format!("\"{second}\"").into_boxed_str()),
        explore_profile(),
    )
    .await;
    assert_eq!(evidence, [second.as_str()]);
    assert!(details.get("cited_windows").is_none(), "{details}");
    // Without the hint no window was opened: the lines stand alone (after a Read, as a
    // hint-less child must look first).
    let mut plain = explore_profile();
    plain.repo_map_hint = false;
    let r = runner(
        &dir,
        Scripted::new(vec![
            calls(&[("Read", json!({"path": "src/sessions.py"}))]),
            answer(r#""src/sessions.py:90-91""#),
        ]),
        plain,
    );
    let out = r.run(task).await;
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{:?} {:?}", out.error, r.trace.events())
    };
    assert_eq!(res.evidence, ["src/sessions.py:90-91"]);
}

#[test]
fn cite_windows_adds_each_window_once_after_the_first_item_inside_it() {
    let windows = vec![("a.py".to_string(), 10, 40), ("b.py".to_string(), 1, 20)];
    let mut evidence: Vec<String> = ["./a.py:12-14", "a.py:30", "b.py:1-20", "a.py:41", "c.py:12"]
        .map(String::from)
        .to_vec();
    let added = super::lead::cite_windows(&mut evidence, &windows);
    assert_eq!(added, ["a.py:10-40"]);
    assert_eq!(
        evidence,
        [
            "./a.py:12-14",
            "a.py:10-40",
            "a.py:30",
            "b.py:1-20",
            "a.py:41",
            "c.py:12"
        ]
    );
    // A window the model cites itself after a line inside it is not listed twice.
    let mut evidence: Vec<String> = ["a.py:12", "a.py:10-40"].map(String::from).to_vec();
    super::lead::cite_windows(&mut evidence, &windows);
    assert_eq!(evidence, ["a.py:12", "a.py:10-40"]);
    // No window: nothing changes.
    let mut evidence: Vec<String> = ["a.py:12"].map(String::from).to_vec();
    assert!(super::lead::cite_windows(&mut evidence, &[]).is_empty());
    assert_eq!(evidence, ["a.py:12"]);
}

#[test]
fn a_second_look_asks_to_weigh_every_place_left_out_not_only_the_first() {
    use super::lead::{LookedAt, SecondLook};
    let place = |path: &str, start, end, listed: &str| LookedAt {
        path: path.into(),
        start,
        end,
        listed: listed.into(),
        windows: Vec::new(),
        lines: String::new(),
    };
    let look = SecondLook {
        places: &[
            place("app.js", 237, 252, "app.js:237-252 (method `onerror`)"),
            place(
                "ctx.js",
                120,
                161,
                "ctx.js:146-161, ctx.js:120-135 (method `onerror`)",
            ),
            place("res.js", 83, 93, "res.js:83-93 (method `status`)"),
        ],
    };
    let evidence = vec!["res.js:83-93".to_string()];
    let missed = look
        .left_out(&evidence)
        .expect("the first place is passed over");
    assert_eq!(missed, [0, 1]);
    assert_eq!(
        look.feedback(&evidence, &missed),
        "Before this answer stands: it cites res.js:83-93 but not the place the index ranked first, app.js:237-252 (method `onerror`), nor ctx.js:146-161, ctx.js:120-135 (method `onerror`), also opened, whose lines are shown above. If any of them answers the task too, add each one that does to the evidence (the best first); if none does, reply with the same JSON object again."
    );
    // One place cited of three, the first among them: both others are weighed.
    let evidence = vec!["app.js:238".to_string()];
    let missed = look.left_out(&evidence).expect("one place of three");
    assert_eq!(missed, [1, 2]);
    assert!(
        look.feedback(&evidence, &missed).ends_with(
            "whose lines were opened above too. If any of them answers the task too, add each one that does to the evidence (the best first); if none does, reply with the same JSON object again."
        ),
        "{}",
        look.feedback(&evidence, &missed)
    );
}

#[tokio::test]
async fn a_path_that_drops_a_directory_of_the_one_file_seen_is_mended_and_no_other_is() {
    let dir = tree();
    std::fs::create_dir_all(dir.path().join("lib/builder")).unwrap();
    std::fs::create_dir_all(dir.path().join("other/builder")).unwrap();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("lib/builder/parser.rs"), &text).unwrap();
    std::fs::write(dir.path().join("other/builder/parser.rs"), &text).unwrap();
    let answer = |evidence: &str| {
        say(&format!(
            r#"{{"status": "completed", "summary": "s", "findings": [], "evidence": ["{evidence}"]}}"#
        ))
    };
    let read = |path: &str| calls(&[("Read", json!({"path": path, "start_line": 1, "limit": 20}))]);
    let mut profile = explore_profile();
    profile.repo_map_hint = false;
    profile.gate_retries = 0;
    let run_with = |steps: Vec<Step>| {
        let (dir, profile) = (&dir, profile.clone());
        async move {
            let out = runner(dir, Scripted::new(steps), profile)
                .run("Find the entry point.")
                .await;
            let evidence = match &out.result {
                Some(ParsedResult::Explore(r)) => r.evidence.clone(),
                _ => Vec::new(),
            };
            (out.terminal_reason, evidence)
        }
    };
    // `lib/parser.rs` does not exist; the one file of that name seen is lib/builder/parser.rs.
    assert_eq!(
        run_with(vec![
            read("lib/builder/parser.rs"),
            answer("lib/parser.rs:3-5")
        ])
        .await,
        (
            TerminalReason::Completed,
            vec!["lib/builder/parser.rs:3-5".to_string()]
        )
    );
    // Lines the child did not see in that file: not mended, refused.
    assert_eq!(
        run_with(vec![
            read("lib/builder/parser.rs"),
            answer("lib/parser.rs:25")
        ])
        .await
        .0,
        TerminalReason::CompletedUnverified
    );
    // Two files of that name seen: which one is meant is not known.
    assert_eq!(
        run_with(vec![
            read("lib/builder/parser.rs"),
            read("other/builder/parser.rs"),
            answer("builder/parser.rs:3"),
        ])
        .await
        .0,
        TerminalReason::CompletedUnverified
    );
    // An absolute path, or one that climbs out, is never taken for the file seen.
    for hostile in [
        "/lib/parser.rs:3",
        "../lib/builder/parser.rs:3",
        "/proc/self/cwd/lib/builder/parser.rs:3",
    ] {
        assert_eq!(
            run_with(vec![read("lib/builder/parser.rs"), answer(hostile)])
                .await
                .0,
            TerminalReason::CompletedUnverified,
            "{hostile}"
        );
    }
    // A path that names a file that exists is never taken for another.
    std::fs::write(dir.path().join("lib/parser.rs"), &text).unwrap();
    assert_eq!(
        run_with(vec![
            read("lib/builder/parser.rs"),
            answer("lib/parser.rs:3")
        ])
        .await
        .0,
        TerminalReason::CompletedUnverified
    );
}

#[tokio::test]
async fn a_place_the_answer_left_out_is_put_to_the_model_alone_and_joins_the_evidence_on_yes() {
    let (dir, task) = two_mains();
    // Citing one place, twice (the second look asks about the other): the other place is then
    // asked about alone, and the model says yes.
    let model = Scripted::new(vec![
        say(&cite("src/cli.py:71")),
        say(&cite("src/cli.py:71")),
        with_usage(say(" Yes."), 40),
    ]);
    let r = runner(&dir, model.clone(), explore_profile());
    let out = r.run(task).await;
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, res.status, out.model_calls),
        (TerminalReason::Completed, SubagentStatus::Completed, 3)
    );
    assert_eq!(res.evidence, ["src/cli.py:71", "src/app.py:1-2"]);
    // The check: a fresh conversation, no tools, a one-word answer, the place's lines shown.
    let check = &model.requests()[2];
    assert!(check.tools.is_empty());
    assert_eq!(check.messages.len(), 2);
    assert_eq!(check.settings.as_ref().and_then(|s| s.max_tokens), Some(8));
    let asked = last_user(&model, 2);
    assert!(asked.starts_with(&format!("Question: {task}")), "{asked}");
    assert!(
        asked.contains(
            "Code from src/app.py:1-2 (function `main`) (line number | text):\nsrc/app.py:\n"
        ),
        "{asked}"
    );
    assert!(asked.contains("def main():"), "{asked}");
    assert!(asked.ends_with("Reply yes or no."), "{asked}");
    // Its tokens count, and the trace names the place added.
    assert!(out.token_usage >= 40, "{}", out.token_usage);
    let terminal = r
        .trace
        .events()
        .into_iter()
        .find(|e| e.event == "terminal")
        .unwrap();
    assert_eq!(
        terminal.payload["details"]["confirmed_places"],
        json!(["src/app.py:1-2"])
    );

    for (reply, yes) in [
        ("Yes", true),
        ("**yes**", true),
        ("YES, it does", true),
        ("yesterday", false),
        ("no", false),
        ("", false),
    ] {
        assert_eq!(super::lead::says_yes(reply), yes, "{reply}");
    }
    // An answer other than yes adds nothing; a failed check leaves the answer as it stood.
    for reply in [
        say("No, it does not."),
        say("The code defines main."),
        Step::Fail(ModelError::new(ModelErrorKind::Server, "boom")),
    ] {
        let model = Scripted::new(vec![
            say(&cite("src/cli.py:71")),
            say(&cite("src/cli.py:71")),
            reply,
        ]);
        let out = runner(&dir, model, explore_profile()).run(task).await;
        let Some(ParsedResult::Explore(res)) = &out.result else {
            panic!("{out:?}")
        };
        assert_eq!(
            (out.terminal_reason, res.evidence.clone(), out.model_calls),
            (
                TerminalReason::Completed,
                vec!["src/cli.py:71".to_string()],
                3
            )
        );
    }

    // No hint, or an answer that is not accepted as it is: nothing is asked.
    let mut profile = explore_profile();
    profile.repo_map_hint = false;
    let model = Scripted::new(vec![read_app(), say(&cite("src/app.py:1"))]);
    let out = runner(&dir, model, profile).run(task).await;
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::Completed, 2)
    );
    let model = Scripted::new(vec![say(&cite("src/cli.py:5")), say(&cite("src/cli.py:5"))]);
    let out = runner(&dir, model, explore_profile()).run(task).await;
    assert_eq!(
        (out.terminal_reason, out.model_calls),
        (TerminalReason::CompletedUnverified, 2)
    );
}
