//! The loop driven end to end by a scripted model over real tools on a temporary tree.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::json;

use super::*;
use crate::runner::state::MAX_ANSWER_BYTES;

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
    // 16 MiB of `{` once kept the gate's repair busy for minutes past a 1 s limit. The limit
    // here is far off, so the run can only end early by the size check, on a loaded machine as
    // on an idle one (a 1 s limit made it end by the clock there); bench/clock.py measures the
    // time.
    let dir = tree();
    let quick = RuntimeProfile {
        timeout_seconds: 600.0,
        ..explore_profile()
    };
    for huge in [
        say(&"{".repeat(16 << 20)),
        calls(&[("Grep", json!({"pattern": "x".repeat(MAX_ANSWER_BYTES)}))]),
    ] {
        // Ended by the size check on the first answer, not by the clock (a time assertion here
        // failed on a loaded machine; bench/clock.py measures the time).
        let (out, model) = run(&dir, vec![huge, say(FINAL)], quick.clone()).await;
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
    let (out, model) = run(
        &dir,
        vec![say(&"x".repeat(MAX_ANSWER_BYTES)), say(FINAL)],
        quick,
    )
    .await;
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
async fn the_first_message_lists_leads_without_their_code_and_the_child_reads_before_it_answers() {
    let dir = tree();
    // The model answers from the lead at once, is told to read, reads, answers.
    let model = Scripted::new(vec![say(FINAL), read_app(), say(FINAL)]);
    let r = runner(&dir, model.clone(), explore_profile());
    let out = r.run("Where is the `main` function defined?").await;
    let first = last_user(&model, 0);
    assert_eq!(
        first,
        "Where is the `main` function defined?\n\nLeads (an offline search of the code index ranked these places, best first; you have not seen their lines, and they may not answer the task):\n1. src/app.py:1-2 (function `main`)\n\nRead a lead before you rely on it: your first reply is a tool call, for example:\n{\"name\":\"Read\",\"arguments\":{\"path\":\"src/app.py\",\"start_line\":1,\"limit\":40}}\nRead around what you find (the rest of a function, the definition of a name it uses) and Grep for other places when the task asks where something is used. Then reply with the final JSON object citing only lines you read."
    );
    let requests = model.requests();
    assert_eq!(requests[0].tool_choice.as_deref(), Some("required"));
    assert!(
        last_user(&model, 1).contains("Reply now with nothing but a tool call, for example:\n{\"name\":\"Read\",\"arguments\":{\"path\":\"src/app.py\",\"start_line\":1,\"limit\":40}}\n"),
        "{}",
        last_user(&model, 1)
    );
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (
            out.terminal_reason,
            out.model_calls,
            res.evidence.clone(),
            res.evidence_sources.clone()
        ),
        (
            TerminalReason::Completed,
            3,
            // Line 1 lies in the lead's place (1-2): the place the model vouched for.
            vec!["src/app.py:1-2".to_string()],
            vec!["both".to_string()]
        )
    );
    let off = RuntimeProfile {
        repo_map_hint: false,
        ..explore_profile()
    };
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    let out = runner(&dir, model.clone(), off)
        .run("Where is the `main` function defined?")
        .await;
    assert_eq!(
        last_user(&model, 0),
        "Where is the `main` function defined?"
    );
    let Some(ParsedResult::Explore(res)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(res.evidence_sources, ["model"]);
}

#[tokio::test]
async fn a_model_that_drops_the_index_first_place_cannot_push_it_out_of_the_top() {
    let (dir, task) = two_mains();
    // The index ranks src/app.py first (and src/cli.py); the model reads and cites only
    // src/cli.py: both stand, each with its source.
    let read_cli = calls(&[(
        "Read",
        json!({"path": "src/cli.py", "start_line": 69, "limit": 4}),
    )]);
    let model = Scripted::new(vec![read_cli, say(&cite("src/cli.py:71-72"))]);
    let out = runner(&dir, model, explore_profile()).run(task).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(r.status, SubagentStatus::Completed);
    let top: Vec<(String, String)> = r
        .evidence
        .iter()
        .cloned()
        .zip(r.evidence_sources.iter().cloned())
        .take(2)
        .collect();
    assert!(
        top.iter()
            .any(|(e, s)| e.starts_with("src/app.py:") && s == "index"),
        "{top:?}"
    );
    assert!(top.iter().any(|(e, _)| e == "src/cli.py:71-72"), "{top:?}");
}

#[tokio::test]
async fn the_profile_tuning_sets_how_many_leads_the_hint_lists_and_how_much_it_suggests_reading() {
    let (dir, task) = two_mains();
    let lead_lines = |model: &Scripted| -> Vec<String> {
        last_user(model, 0)
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(". src/"))
            .map(str::to_string)
            .collect()
    };
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert_eq!(lead_lines(&model).len(), 2, "{}", last_user(&model, 0));
    let tuned = explore_profile()
        .with_fields(&[(
            "tuning".into(),
            crate::pyjson::Json::Object(vec![
                ("leads".into(), crate::pyjson::Json::Int(1)),
                ("lead_read_lines".into(), crate::pyjson::Json::Int(7)),
            ]),
        )])
        .unwrap();
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    runner(&dir, model.clone(), tuned.clone()).run(task).await;
    assert_eq!(lead_lines(&model).len(), 1, "{}", last_user(&model, 0));
    assert!(last_user(&model, 0).contains("\"limit\":7}"));
    // No leads at all: the first message is the task alone.
    let none = tuned
        .with_fields(&[(
            "tuning".into(),
            crate::pyjson::Json::Object(vec![("leads".into(), crate::pyjson::Json::Int(0))]),
        )])
        .unwrap();
    let model = Scripted::new(vec![read_app(), say(FINAL)]);
    runner(&dir, model.clone(), none).run(task).await;
    assert_eq!(last_user(&model, 0), task);
}

#[tokio::test]
async fn a_summary_naming_code_the_child_never_saw_is_refused_once_then_partial_listing_it() {
    let dir = tree();
    let claim = r#"{"status": "completed", "summary": "main() in src/app.py calls load_config() from settings.py", "findings": [], "evidence": ["src/app.py:1"]}"#;
    let model = Scripted::new(vec![read_app(), say(claim), say(claim)]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run("Where is the `main` function defined?")
        .await;
    assert_eq!(
        last_user(&model, 2),
        "Your summary names `load_config`, `settings.py`, which you have not seen in this run. Read or Grep for them to check what they are, or leave them out; then reply with the ExploreResult JSON object again. A summary may only state what the lines you saw show."
    );
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(r.status, SubagentStatus::Partial);
    assert_eq!(
        r.unresolved_questions.last().map(String::as_str),
        Some("outrider: the summary names `load_config`, `settings.py`, which the child never saw in this run, so the answer is partial")
    );
    // The same answer after the child saw the names is completed.
    let seen = calls(&[(
        "Grep",
        json!({"pattern": "load_config|settings", "path": "."}),
    )]);
    std::fs::write(
        dir.path().join("settings.py"),
        "def load_config():\n    return {}\n",
    )
    .unwrap();
    let model = Scripted::new(vec![read_app(), seen, say(claim)]);
    let out = runner(&dir, model, explore_profile())
        .run("Where is the `main` function defined?")
        .await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (out.terminal_reason, r.status),
        (TerminalReason::Completed, SubagentStatus::Completed)
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
async fn a_finding_that_cites_seen_lines_joins_the_evidence() {
    let (dir, task) = two_mains();
    let read_both = || {
        calls(&[
            ("Read", json!({"path": "src/app.py"})),
            (
                "Read",
                json!({"path": "src/cli.py", "start_line": 69, "limit": 4}),
            ),
        ])
    };
    // The model lists one place as a finding and cites the other; a finding citing lines it
    // never saw stays a finding.
    let answer = r#"{"status": "completed", "summary": "s", "findings": ["src/cli.py:70-72", " src/cli.py:5", "src/app.py:1-2", "main is in cli.py"], "evidence": ["src/app.py:1-2"]}"#;
    let model = Scripted::new(vec![read_both(), say(answer)]);
    let out = runner(&dir, model.clone(), explore_profile())
        .run(task)
        .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("no explore result: {:?}", out.result)
    };
    assert_eq!(r.evidence[..2], ["src/app.py:1-2", "src/cli.py:70-72"]);
    assert_eq!(r.findings.len(), 4, "findings stay as written");
    // A completed answer whose only citation is a finding of seen lines stands on it; one whose
    // findings cite nothing seen is refused for having no evidence.
    let only =
        r#"{"status": "completed", "summary": "s", "findings": ["src/cli.py:71"], "evidence": []}"#;
    let out = runner(
        &dir,
        Scripted::new(vec![read_both(), say(only)]),
        explore_profile(),
    )
    .run(task)
    .await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("no explore result: {:?}", out.result)
    };
    assert_eq!(
        (out.terminal_reason, r.evidence.first().map(String::as_str)),
        // The finding lies in the index's place (71-72): cited as that place.
        (TerminalReason::Completed, Some("src/cli.py:71-72"))
    );
    assert_eq!(r.status, SubagentStatus::Completed);
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
    // The same item written twice is one.
    assert_eq!(r.evidence, ["src/app.py:1", "src/app.py:2"]);
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

/// The hint an explore child over `tree()` with `src/sessions.py` holding `text` gets for a
/// question about the session cookie.
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
async fn an_answer_that_only_restates_unread_leads_stands_as_partial_with_the_leads_as_the_index() {
    let dir = tree();
    // The model never reads: it cites the lead it was given, three times.
    let model = Scripted::new(vec![say(FINAL), say(FINAL), say(FINAL)]);
    let out = runner(&dir, model, explore_profile())
        .run("Where is the `main` function defined?")
        .await;
    assert!(
        out.ungrounded_evidence.is_empty(),
        "{:?}",
        out.ungrounded_evidence
    );
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{out:?}")
    };
    assert_eq!(
        (r.status, r.evidence.clone(), r.evidence_sources.clone()),
        (
            SubagentStatus::Partial,
            vec!["src/app.py:1-2".to_string()],
            vec!["index".to_string()]
        )
    );
    assert_eq!(
        r.unresolved_questions.first().map(String::as_str),
        Some("outrider: the child answered before searching enough, so this answer is partial")
    );
}

#[tokio::test]
async fn a_completed_answer_resting_on_search_matches_alone_stands_as_partial() {
    let dir = tree();
    // Grep showed line 1; the answer cites it, but no Read showed the code around it.
    let (out, model) = run(
        &dir,
        vec![
            calls(&[("Grep", json!({"pattern": "def main"}))]),
            say(FINAL),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(model.requests().len(), 2, "no model call is spent on it");
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{:?}", out.result)
    };
    assert_eq!(r.status, SubagentStatus::Partial);
    assert!(
        r.unresolved_questions
            .iter()
            .any(|q| q.contains("read none of the code it cites")),
        "{:?}",
        r.unresolved_questions
    );
    // The same answer after a Read of the lines it cites is completed.
    let (out, _) = run(&dir, vec![read_app(), say(FINAL)], explore_profile()).await;
    let Some(ParsedResult::Explore(r)) = &out.result else {
        panic!("{:?}", out.result)
    };
    assert_eq!(
        r.status,
        SubagentStatus::Completed,
        "{:?}",
        r.unresolved_questions
    );
}

#[tokio::test]
async fn a_search_repeated_is_not_run_again_and_says_so_but_a_read_is() {
    let dir = tree();
    let grep = || calls(&[("Grep", json!({"pattern": "def main"}))]);
    let (_, model) = run(
        &dir,
        vec![grep(), grep(), read_app(), read_app(), say(FINAL)],
        explore_profile(),
    )
    .await;
    let last_tool = |i: usize| {
        let Some(Message::Tool { content, .. }) = model.requests()[i].messages.last().cloned()
        else {
            panic!()
        };
        serde_json::from_str::<Value>(&content).unwrap()
    };
    let again = last_tool(2);
    let message = again["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Same call as step 1, whose result is above"),
        "{message}"
    );
    // A Read repeated runs: its earlier result may have been shortened since.
    assert_eq!(last_tool(4)["status"], "success", "{}", last_tool(4));
}

#[tokio::test]
async fn a_child_with_the_hint_alone_keeps_the_scouts_leads_and_not_its_whole_answer() {
    let dir = tree();
    let task = "Where is the `main` function defined?";
    let hinted = runner(&dir, Scripted::new(vec![]), explore_profile());
    let scout = hinted
        .scout_first(task)
        .await
        .expect("the scout finds main");
    assert_eq!(
        scout.leads.first().map(|l| l.path.as_str()),
        Some("src/app.py")
    );
    // Its text, answer and tool results were dropped once the leads were taken.
    assert!(scout.fallback.is_none());
    // The fallback keeps the answer it may return.
    let fallback = RuntimeProfile {
        scout_fallback: true,
        repo_map_hint: false,
        ..explore_profile()
    };
    let scout = runner(&dir, Scripted::new(vec![]), fallback)
        .scout_first(task)
        .await
        .expect("the scout finds main");
    assert!(scout.fallback.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_on_one_tree_take_turns_for_the_scout_and_each_still_gets_its_leads() {
    use crate::runner::assist::hint::{scouts_per_tree, tests::Searching};
    let dir = tree();
    let task = "Where is the `main` function defined?";
    let ws = Workspace::new(dir.path()).unwrap();
    // The tree's index, held by a thread of the test's: each scout's Search waits for it.
    let (index, _) =
        crate::index::open(&ws, None, &std::sync::atomic::AtomicBool::new(false)).unwrap();
    let (locked, release) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    let holder = std::thread::spawn(move || {
        let _held = index.lock().unwrap();
        locked.0.send(()).unwrap();
        release.1.recv().ok();
    });
    locked.1.recv().unwrap();
    // More children than scouts may search at once.
    let models: Vec<Arc<Scripted>> = (0..scouts_per_tree() + 6)
        .map(|_| Scripted::new(vec![read_app(), say(FINAL)]))
        .collect();
    let runs: Vec<_> = models
        .iter()
        .map(|m| {
            let child = runner(&dir, m.clone(), explore_profile());
            tokio::spawn(async move { child.run(task).await })
        })
        .collect();
    // The scouts allowed have reached the index; the others had time to as well, but wait for
    // a turn as tasks, not each on a thread of its own blocked on the index.
    let waiting = Instant::now();
    while Searching::most(ws.root()) < scouts_per_tree() && waiting.elapsed().as_secs() < 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let at_once = Searching::most(ws.root());
    release.0.send(()).unwrap();
    holder.join().unwrap();
    for run in runs {
        assert_eq!(
            run.await.unwrap().terminal_reason,
            TerminalReason::Completed
        );
    }
    assert_eq!(at_once, scouts_per_tree());
    assert_eq!(Searching::most(ws.root()), scouts_per_tree());
    for m in &models {
        assert!(
            last_user(m, 0).contains("1. src/app.py:1-2"),
            "{}",
            last_user(m, 0)
        );
    }
}
