//! The loop driven end to end by a scripted model over real tools on a temporary tree.

use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::contract::Repair;
use crate::llm::{
    estimate_tokens, BoxFuture, ChatRequest, ChatResponse, ModelError, ModelErrorKind, ToolCall,
    Usage,
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
            });
            Step::Reply(r)
        }
        other => other,
    }
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
    let out = runner(dir, model.clone(), profile)
        .run("Find main.\n\nStructured context:\n{}")
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
    assert_eq!(reqs[0].tool_choice.as_deref(), Some("auto"));
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
    let (out, model) = run(&dir, vec![say("not json"), say(FINAL)], explore_profile()).await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let feedback = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(
        feedback,
        Message::User { content: "Return only a valid ExploreResult JSON object: Expecting value: line 1 column 1 (char 0)".into() }
    );
    let (out, model) = run(
        &dir,
        vec![say("nope"), say("still nope")],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::CompletionGateBlocked);
    assert_eq!(model.requests().len(), 2);
    assert!(out.result.is_none());
}

#[tokio::test]
async fn repaired_answers_are_accepted_and_recorded() {
    let dir = tree();
    let (out, _) = run(
        &dir,
        vec![say(&format!("Here:\n```json\n{FINAL}\n```"))],
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
    let (out, model) = run(&dir, vec![say(&bad), say(FINAL)], explore_profile()).await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let Message::User { content } = model.requests()[1].messages.last().cloned().unwrap() else {
        panic!()
    };
    assert!(
        content.contains("cites line 99, but 'src/app.py' has 2 lines"),
        "{content}"
    );
    let (out, _) = run(&dir, vec![say(&bad), say(&bad)], explore_profile()).await;
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
    // 32 000 exactly is within budget (strictly-greater test), so the third call happens.
    assert_eq!(
        (out.terminal_reason, model.requests().len()),
        (TerminalReason::TokenBudget, 3)
    );
    assert_eq!(out.token_usage, 32_001);

    let tiny = RuntimeProfile {
        total_token_budget: 3_000,
        ..profile
    };
    let steps = (0..12)
        .map(|_| calls(&[("Read", json!({"path": "src/app.py"}))]))
        .collect();
    let (out, model) = run(&dir, steps, tiny).await;
    assert_eq!(out.terminal_reason, TerminalReason::TokenBudget);
    assert!(out.usage_estimated);
    assert!(model.requests().len() < 12);
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
            say(FINAL),
        ],
        explore_profile(),
    )
    .await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        out.tool_usage,
        BTreeMap::from([("Bash".into(), 1), ("Nope".into(), 1), ("Task".into(), 1)])
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

    let (out, model) = run(&dir, vec![say(""), say(FINAL)], explore_profile()).await;
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        model.requests()[1].messages.last(),
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
    let model = Scripted::new(vec![calls(&[("Glob", json!({}))]), say(FINAL)]);
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
    let model = Scripted::new(vec![
        with_usage(
            calls(&[("Glob", json!({"pattern": "*.py"})), ("Nope", json!({}))]),
            30,
        ),
        with_usage(say(FINAL), 40),
    ]);
    let recorder = recorder::Recorder::default();
    let out = {
        let _guard = tracing::subscriber::set_default(recorder.clone());
        runner(&dir, model, explore_profile()).run("task").await
    };
    assert_eq!(out.terminal_reason, TerminalReason::Completed);
    let records = recorder.records();
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
    assert_eq!(
        records.iter().map(shape).collect::<Vec<_>>(),
        vec![
            step("1"),
            model_call("30"),
            (
                "tool_call".into(),
                Some("step".into()),
                f(&[
                    ("status", "success"),
                    ("tool", "Glob"),
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
    for r in records.iter().filter(|r| r.name != "step") {
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
