//! The launch layer end to end: scripted models over real tools on temporary trees.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::task_tool::TaskTool;
use super::*;
use crate::contract::SubagentStatus;
use crate::error::Error;
use crate::llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelErrorKind, ToolCall,
};
use crate::profile::{explore_profile, ModelChoice};
use crate::pyjson::Json;
use crate::runner::{CancelToken, ParsedResult, TerminalReason};
use crate::tools::envelope::ToolStatus;
use crate::tools::run::ToolArgs;
use crate::trace::Trace;

type Script = dyn Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync;

/// A model whose answer is computed from the request, with an optional delay; it records the
/// most calls it saw in flight at once.
struct FnModel {
    script: Box<Script>,
    delay: Duration,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    seen: Mutex<Vec<String>>,
}

impl FnModel {
    fn new(
        delay: Duration,
        script: impl Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(FnModel {
            script: Box::new(script),
            delay,
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            seen: Mutex::new(vec![]),
        })
    }
}

impl ChatModel for FnModel {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            self.seen.lock().unwrap().push(first_user(request));
            tokio::time::sleep(self.delay).await;
            let out = (self.script)(request);
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            out
        })
    }
    fn describe(&self) -> String {
        "fn model".into()
    }
}

fn first_user(r: &ChatRequest) -> String {
    r.messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn tool_results(r: &ChatRequest) -> usize {
    r.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count()
}

fn call(name: &str, args: Value) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        ..Default::default()
    }
}

fn say(text: impl Into<String>) -> ChatResponse {
    ChatResponse {
        content: text.into(),
        ..Default::default()
    }
}

fn answer(summary: &str, evidence: &str) -> ChatResponse {
    say(json!({"status": "completed", "summary": summary, "findings": [summary], "evidence": [evidence]}).to_string())
}

/// Reads `src/app.py`, then answers with its task's first word as the summary.
fn explorer(delay: Duration) -> Arc<FnModel> {
    FnModel::new(delay, |r| {
        Ok(if tool_results(r) == 0 {
            call("Read", json!({"path": "src/app.py"}))
        } else {
            let task = first_user(r);
            answer(
                task.split_whitespace().next().unwrap_or(""),
                "src/app.py:1-2",
            )
        })
    })
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), "def main():\n    return 1\n").unwrap();
    dir
}

fn launcher(dir: &tempfile::TempDir, model: Arc<dyn ChatModel>) -> SubagentLauncher {
    launcher_with(dir, model, LauncherOptions::default())
}

fn launcher_with(
    dir: &tempfile::TempDir,
    model: Arc<dyn ChatModel>,
    options: LauncherOptions,
) -> SubagentLauncher {
    SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(model),
            light_model: options.light_model.clone(),
            trace_dir: TraceDirSetting::Off,
            ..options
        },
    )
    .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn launch_completes_and_reports_to_the_parent() {
    let dir = tree();
    let parent = Arc::new(Trace::in_memory("parent-1"));
    let l = launcher_with(
        &dir,
        explorer(Duration::ZERO),
        LauncherOptions {
            parent_trace_handle: Some(parent.clone()),
            ..LauncherOptions::default()
        },
    );
    let r = rt()
        .block_on(l.launch(
            SubagentRequest::explore("main lives where?"),
            CancelToken::new(),
        ))
        .unwrap();
    assert_eq!(
        (r.status, r.terminal_reason, r.model_used, r.failure_reason),
        (
            SubagentStatus::Completed,
            TerminalReason::Completed,
            ModelRoute::Main,
            None
        )
    );
    assert_eq!(r.tool_usage, [("Read".to_string(), 1)].into());
    assert_eq!((r.model_calls, r.child_run_id.as_str()), (2, "run-1"));
    let v = r.to_value();
    assert_eq!(v["result"]["summary"], json!("main"));
    assert_eq!(v["terminal_reason"], json!("completed"));
    assert_eq!(v["ungrounded_evidence"], json!([]));
    let events: Vec<(String, Value)> = parent
        .events()
        .into_iter()
        .map(|e| (e.event.to_string(), e.payload))
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "subagent_requested",
            "subagent_started",
            "subagent_completed"
        ]
    );
    let done = &events[2].1;
    assert_eq!(done["parent_session_id"], json!("parent-1"));
    assert_eq!(done["child_session_id"], json!(r.child_session_id));
    assert_eq!(done["verdict"], json!("completed"));
    assert_eq!(done["tool_usage"], json!({"Read": 1}));
}

#[test]
fn a_failed_child_keeps_the_reference_reason_and_the_precise_cause() {
    let dir = tree();
    let model = FnModel::new(Duration::ZERO, |_| {
        Err(ModelError::new(ModelErrorKind::Auth, "401 bad key"))
    });
    let r = rt()
        .block_on(launcher(&dir, model).launch(SubagentRequest::explore("x"), CancelToken::new()))
        .unwrap();
    assert_eq!(
        (r.status, r.terminal_reason, r.failure_reason),
        (
            SubagentStatus::Failed,
            TerminalReason::RuntimeError,
            Some(TerminalReason::ModelError)
        )
    );
    assert!(r.result.is_none());
    assert_eq!(
        r.error.as_deref(),
        Some("child terminal reason: model_error: auth error: 401 bad key")
    );
    assert_eq!(r.to_value()["failure_reason"], json!("model_error"));
}

#[test]
fn ungrounded_evidence_is_unverified_never_completed() {
    let dir = tree();
    let model = FnModel::new(Duration::ZERO, |_| Ok(answer("made up", "src/nope.py:3")));
    let l = launcher(&dir, model);
    let r = rt()
        .block_on(l.launch(SubagentRequest::explore("x"), CancelToken::new()))
        .unwrap();
    assert_eq!(r.status, SubagentStatus::Unverified);
    assert_eq!(r.terminal_reason, TerminalReason::CompletedUnverified);
    assert_eq!(r.ungrounded_evidence.len(), 1);
    assert_eq!(r.ungrounded_evidence[0].reason, Some("not_found"));
    let envelope = task_tool::launch_envelope(
        &r,
        &json!({}),
        5,
        task_tool::EnvelopeFormat::Reference,
        None,
    );
    assert_eq!(envelope.status, ToolStatus::Unverified);
    assert_eq!(
        envelope.data["ungrounded_evidence"][0]["evidence"],
        json!("src/nope.py:3")
    );
    assert!(
        envelope.text.starts_with("UNVERIFIED: "),
        "{}",
        envelope.text
    );
    // The JSON form reads back to the same result (pickling in Python rests on this).
    let back = SubagentLaunchResult::from_value(&r.to_value()).unwrap();
    assert_eq!(back.to_value(), r.to_value());
    let mut bad = r.to_value();
    bad["ungrounded_evidence"][0]["reason"] = json!("made_up");
    let err = SubagentLaunchResult::from_value(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown evidence reason \"made_up\""), "{err}");
}

#[test]
fn refused_requests_name_what_is_registered() {
    let dir = tree();
    let l = launcher(&dir, explorer(Duration::ZERO));
    let bad = SubagentRequest {
        profile_name: "nope".into(),
        ..SubagentRequest::explore("x")
    };
    let err = rt()
        .block_on(l.launch(bad, CancelToken::new()))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Launch(LaunchError::UnknownProfile { .. })
    ));
    assert_eq!(
        err.to_string(),
        "unsupported runtime profile: nope (registered profiles: 'explore', 'verification')"
    );
}

#[test]
fn launcher_options_are_checked_once_here() {
    let dir = tree();
    let model: Arc<dyn ChatModel> = explorer(Duration::ZERO);
    let build = |o: LauncherOptions| {
        SubagentLauncher::new(
            dir.path(),
            LauncherOptions {
                main_model: Some(model.clone()),
                ..o
            },
        )
        .err()
        .map(|e| e.to_string())
    };
    assert_eq!(
        build(LauncherOptions {
            max_concurrency: Some(0),
            ..LauncherOptions::default()
        }),
        Some("max_concurrency: must be at least 1, got 0".into())
    );
    let inside = dir.path().join("traces");
    let msg = build(LauncherOptions {
        trace_dir: TraceDirSetting::Dir(inside),
        ..LauncherOptions::default()
    })
    .unwrap();
    assert!(msg.contains("is inside the explored root"), "{msg}");
    let bad_profile = crate::profile::RuntimeProfile {
        name: "deep".into(),
        max_steps: 0,
        ..explore_profile()
    };
    assert_eq!(
        build(LauncherOptions {
            profiles: vec![bad_profile],
            trace_dir: TraceDirSetting::Off,
            ..LauncherOptions::default()
        }),
        Some("profile 'deep': runtime profile budgets must be positive".into())
    );
    let parent_inside = dir.path().join("parent.jsonl");
    let msg = build(LauncherOptions {
        parent_trace: Some(parent_inside.clone()),
        trace_dir: TraceDirSetting::Off,
        ..LauncherOptions::default()
    })
    .unwrap();
    assert!(msg.starts_with("parent_trace: "), "{msg}");
    assert!(!parent_inside.exists());
    // A profile named like a built-in replaces it; the defaults fill the rest.
    let quick = crate::profile::RuntimeProfile {
        max_steps: 3,
        ..explore_profile()
    };
    let l = SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(model.clone()),
            trace_dir: TraceDirSetting::Off,
            profiles: vec![quick],
            ..LauncherOptions::default()
        },
    )
    .unwrap();
    assert_eq!(l.profile("explore").unwrap().max_steps, 3);
    assert_eq!(l.max_concurrency(), 8);
    assert_eq!(l.profile_names(), ["explore", "verification"]);
}

#[test]
fn light_requests_fall_back_to_main_and_use_light_when_configured() {
    let dir = tree();
    let main = explorer(Duration::ZERO);
    let light = explorer(Duration::ZERO);
    let with_light = launcher_with(
        &dir,
        main.clone(),
        LauncherOptions {
            light_model: Some(light.clone()),
            ..LauncherOptions::default()
        },
    );
    let rt = rt();
    let r = rt
        .block_on(with_light.launch(SubagentRequest::explore("a"), CancelToken::new()))
        .unwrap();
    assert_eq!(r.model_used, ModelRoute::Light);
    let r = rt
        .block_on(with_light.launch(
            SubagentRequest {
                model_choice: Some(ModelChoice::Main),
                ..SubagentRequest::explore("b")
            },
            CancelToken::new(),
        ))
        .unwrap();
    assert_eq!(r.model_used, ModelRoute::Main);
    assert_eq!(
        (
            main.seen.lock().unwrap().len(),
            light.seen.lock().unwrap().len()
        ),
        (2, 2)
    );
}

#[test]
fn launch_many_keeps_order_isolates_children_and_bounds_concurrency() {
    let dir = tree();
    let model = explorer(Duration::from_millis(30));
    let l = Arc::new(launcher(&dir, model.clone()));
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    let requests: Vec<SubagentRequest> = words
        .iter()
        .map(|w| SubagentRequest::explore(format!("{w} task")))
        .collect();
    let rt = rt();
    let results = rt
        .block_on(l.launch_many(requests.clone(), Some(2), CancelToken::new()))
        .unwrap();
    let summaries: Vec<String> = results
        .iter()
        .map(|r| {
            r.to_value()["result"]["summary"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(summaries, words);
    let ids: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r.child_session_id.as_str())
        .collect();
    assert_eq!(ids.len(), words.len());
    assert!(model.peak.load(Ordering::SeqCst) <= 2);
    assert_eq!(model.peak.load(Ordering::SeqCst), 2);
    // Each child saw only its own task.
    for seen in model.seen.lock().unwrap().iter() {
        assert_eq!(
            words.iter().filter(|w| seen.contains(*w)).count(),
            1,
            "{seen}"
        );
    }
    // One bad request refuses the batch before anything starts.
    let before = model.seen.lock().unwrap().len();
    let mut bad = requests;
    bad[3].profile_name = "nope".into();
    let err = rt
        .block_on(l.launch_many(bad, None, CancelToken::new()))
        .unwrap_err();
    assert!(err
        .to_string()
        .starts_with("requests[3]: unsupported runtime profile: nope"));
    assert_eq!(model.seen.lock().unwrap().len(), before);
    let err = rt
        .block_on(l.launch_many(vec![], Some(0), CancelToken::new()))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "max_concurrency: must be at least 1, got 0"
    );
}

#[test]
fn the_launchers_own_limit_bounds_every_launch_through_it() {
    let dir = tree();
    let model = explorer(Duration::from_millis(30));
    let l = Arc::new(launcher_with(
        &dir,
        model.clone(),
        LauncherOptions {
            max_concurrency: Some(1),
            ..LauncherOptions::default()
        },
    ));
    let requests = (0..3)
        .map(|i| SubagentRequest::explore(format!("t{i}")))
        .collect();
    rt().block_on(l.launch_many(requests, None, CancelToken::new()))
        .unwrap();
    assert_eq!(model.peak.load(Ordering::SeqCst), 1);
}

#[test]
fn a_launch_many_calls_own_limit_governs_over_the_launchers_default() {
    let dir = tree();
    let requests = |n: usize| -> Vec<SubagentRequest> {
        (0..n)
            .map(|i| SubagentRequest::explore(format!("t{i}")))
            .collect()
    };
    // Built without max_concurrency: 16 asked for run 16 at once (they ran 8: the default).
    // Without the repo-map hint, whose scout search (before the first model call) would
    // spread the children's calls apart on a loaded machine.
    let no_hint = || LauncherOptions {
        profiles: vec![crate::profile::RuntimeProfile {
            repo_map_hint: false,
            ..explore_profile()
        }],
        ..LauncherOptions::default()
    };
    let model = explorer(Duration::from_millis(200));
    let l = Arc::new(launcher_with(&dir, model.clone(), no_hint()));
    rt().block_on(l.launch_many(requests(16), Some(16), CancelToken::new()))
        .unwrap();
    assert_eq!(model.peak.load(Ordering::SeqCst), 16);
    // Without a limit of its own, the call keeps to the launcher's default.
    let model = explorer(Duration::from_millis(50));
    let l = Arc::new(launcher_with(&dir, model.clone(), no_hint()));
    rt().block_on(l.launch_many(requests(12), None, CancelToken::new()))
        .unwrap();
    assert_eq!(
        model.peak.load(Ordering::SeqCst),
        crate::agent::launcher::DEFAULT_MAX_CONCURRENCY
    );
    // A limit the launcher was given bounds every launch through it, whatever the call asks.
    let model = explorer(Duration::from_millis(50));
    let options = LauncherOptions {
        max_concurrency: Some(3),
        ..LauncherOptions::default()
    };
    let l = Arc::new(launcher_with(&dir, model.clone(), options));
    rt().block_on(l.launch_many(requests(8), Some(8), CancelToken::new()))
        .unwrap();
    assert_eq!(model.peak.load(Ordering::SeqCst), 3);
}

#[test]
fn children_waiting_their_turn_hold_no_trace_yet() {
    // launch_many without a limit on a default launcher: the children beyond the 8 running
    // must not exist yet (each held an open trace file and its buffer: 5000 peaked at 479 MiB).
    let dir = tree();
    let out = tempfile::tempdir().unwrap();
    let traces = out.path().join("traces");
    // The trace files that exist when the first model call is made (before any child ends).
    let seen_files = Arc::new(Mutex::new(None));
    let (watch, counted) = (traces.clone(), seen_files.clone());
    let model = FnModel::new(Duration::from_millis(20), move |_| {
        let files = std::fs::read_dir(&watch).map_or(0, |d| d.count());
        counted.lock().unwrap().get_or_insert(files);
        Ok(say(r#"{"status": "partial", "summary": "s"}"#))
    });
    let options = LauncherOptions {
        main_model: Some(model),
        trace_dir: TraceDirSetting::Dir(traces.clone()),
        trace_retention: Some(crate::trace::TraceRetention::KEEP_ALL),
        ..LauncherOptions::default()
    };
    let l = Arc::new(SubagentLauncher::new(dir.path(), options).unwrap());
    let requests = (0..40)
        .map(|i| SubagentRequest::explore(format!("t{i}")))
        .collect();
    rt().block_on(l.launch_many(requests, None, CancelToken::new()))
        .unwrap();
    assert_eq!(std::fs::read_dir(&traces).unwrap().count(), 40);
    let first = seen_files.lock().unwrap().unwrap();
    assert!(
        first <= 8,
        "{first} trace files existed when the first 8 children ran"
    );
}

/// A Task tool writing the reference's envelope (the contract these tests pin).
fn task_tool(dir: &tempfile::TempDir, model: Arc<dyn ChatModel>) -> TaskTool {
    TaskTool::new(Arc::new(launcher(dir, model)), None)
        .unwrap()
        .with_format(task_tool::EnvelopeFormat::Reference)
}

#[test]
fn the_default_envelope_is_compact_without_echo_or_repeated_summary() {
    let dir = tree();
    let tool = TaskTool::new(Arc::new(launcher(&dir, explorer(Duration::ZERO))), None).unwrap();
    let prompt = "Where is main? ".repeat(200);
    let args = json!({"description": "Find main", "prompt": prompt, "subagent_type": "explore"});
    let out = rt().block_on(tool.run(ToolArgs::Json(Json::from_value(&args)), CancelToken::new()));
    let v = out.to_value();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["status", "data", "text", "stats"]);
    assert_eq!(v["text"], json!("Find"));
    assert!(v["data"]["result"].get("summary").is_none());
    assert_eq!(v["data"]["result"]["evidence"], json!(["src/app.py:1-2"]));
    let text = out.to_json();
    assert!(
        !text.contains('\n') && !text.contains("Where is main?"),
        "{text}"
    );
    // The same call, reference format: indented, the prompt echoed, the summary in the result.
    let reference = task_tool(&dir, explorer(Duration::ZERO));
    let full =
        rt().block_on(reference.run(ToolArgs::Json(Json::from_value(&args)), CancelToken::new()));
    assert_eq!(full.to_value()["data"]["result"]["summary"], json!("Find"));
    assert!(full.to_json().contains("\n  \"context\": {"));
    // About a quarter of the reference's here (485 of 1907 bytes, `model_calls` included).
    assert!(
        text.len() * 3 < full.to_json().len(),
        "{} vs {}",
        text.len(),
        full.to_json().len()
    );
    // Bad arguments: compact too, no echo.
    let bad = rt().block_on(tool.run(ToolArgs::Text("{not json".into()), CancelToken::new()));
    assert!(bad.to_value().get("context").is_none());
    assert_eq!(bad.to_value()["error"]["code"], json!("INVALID_PARAM"));
}

fn run_task(tool: &TaskTool, input: ToolArgs) -> Value {
    rt().block_on(tool.run(input, CancelToken::new()))
        .to_value()
}

#[test]
fn task_envelopes_success_and_every_failure() {
    let dir = tree();
    let tool = task_tool(&dir, explorer(Duration::ZERO));
    let args =
        json!({"description": "Find main", "prompt": "Where is main?", "subagent_type": "explore"});
    let ok = run_task(&tool, ToolArgs::Json(Json::from_value(&args)));
    assert_eq!(ok["status"], json!("success"));
    assert_eq!(ok["text"], json!("Find"));
    assert_eq!(ok["data"]["status"], json!("completed"));
    assert_eq!(ok["data"]["profile"], json!("explore"));
    assert_eq!(ok["data"]["child_run_id"], json!("run-1"));
    assert_eq!(ok["data"]["result"]["evidence"], json!(["src/app.py:1-2"]));
    assert_eq!(
        (&ok["stats"]["tool_calls"], &ok["stats"]["model"]),
        (&json!(1), &json!("main"))
    );
    assert_eq!(ok["context"], json!({"cwd": ".", "params_input": args}));

    let bad_json = run_task(&tool, ToolArgs::Text("{not json".into()));
    assert_eq!(bad_json["error"]["code"], json!("INVALID_PARAM"));
    assert!(bad_json["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Task arguments must be a JSON object: "));
    assert_eq!(bad_json["context"]["params_input"], json!("{not json"));

    let missing = run_task(
        &tool,
        ToolArgs::Json(Json::from_value(&json!({"prompt": "p"}))),
    );
    assert_eq!(
        missing,
        json!({"status": "error", "data": {}, "text": "Parameter 'description' is required and must be non-empty.",
               "stats": {"time_ms": 0}, "context": {"cwd": ".", "params_input": {"prompt": "p"}},
               "error": {"code": "INVALID_PARAM", "message": "Parameter 'description' is required and must be non-empty."}})
    );
    let unusable = run_task(
        &tool,
        ToolArgs::Unusable {
            shown: "<object>".into(),
            reason: "arguments must hold only JSON values".into(),
        },
    );
    assert_eq!(
        unusable["error"]["message"],
        json!("Task arguments must be a JSON object: arguments must hold only JSON values")
    );

    let failing = FnModel::new(Duration::ZERO, |_| {
        Err(ModelError::new(ModelErrorKind::Server, "503"))
    });
    let failed = run_task(
        &task_tool(&dir, failing),
        ToolArgs::Json(Json::from_value(&args)),
    );
    assert_eq!(failed["error"]["code"], json!("INTERNAL_ERROR"));
    assert_eq!(
        failed["text"],
        json!("Explore subagent failed: child terminal reason: model_error: server error: 503")
    );
    let details = &failed["error"];
    assert_eq!(
        (
            &details["terminal_reason"],
            &details["failure_reason"],
            &details["tool_usage"],
            &details["trace_path"]
        ),
        (
            &json!("runtime_error"),
            &json!("model_error"),
            &json!({}),
            &Value::Null
        )
    );
    assert!(details["child_session_id"]
        .as_str()
        .unwrap()
        .starts_with("child-"));
    assert!(failed["stats"]["time_ms"].as_u64().unwrap() >= 1);

    let broken: task_tool::LauncherFactory = Box::new(|| {
        Err(task_tool::FactoryError::Raised {
            kind: "OSError".into(),
            message: "disk".into(),
        })
    });
    let lazy = TaskTool::with_factory(broken, None).unwrap();
    let not_started = run_task(&lazy, ToolArgs::Json(Json::from_value(&args)));
    assert_eq!(
        not_started["error"]["message"],
        json!("Task could not start: the launcher factory raised OSError: disk")
    );
    let err = TaskTool::new(
        Arc::new(launcher(&dir, explorer(Duration::ZERO))),
        Some(vec!["deep".into()]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "subagent_types: ['deep'] are not registered in the launcher (its profiles: ['explore', 'verification'])"
    );
}

#[test]
fn main_agent_runs_task_and_links_the_child() {
    let dir = tree();
    // The main model delegates once, then answers with the child's summary.
    let main = FnModel::new(Duration::ZERO, |r| {
        if first_user(r).starts_with("Find main") {
            // A child request (the Task description comes first).
            return Ok(if tool_results(r) == 0 {
                call("Read", json!({"path": "src/app.py"}))
            } else {
                answer("main is in src/app.py", "src/app.py:1")
            });
        }
        Ok(match tool_results(r) {
            0 => call(
                "Task",
                json!({"description": "Find main", "prompt": "Where is main?", "subagent_type": "explore"}),
            ),
            _ => say("main is defined in src/app.py:1"),
        })
    });
    let agent = MainAgent::new(
        dir.path(),
        main,
        MainAgentOptions {
            trace_dir: TraceDirSetting::Off,
            ..MainAgentOptions::default()
        },
    )
    .unwrap();
    let run = rt()
        .block_on(agent.run("How does main work?", CancelToken::new()))
        .unwrap();
    assert_eq!(run.terminal_reason, TerminalReason::Completed);
    assert_eq!(
        run.final_text.as_deref(),
        Some("main is defined in src/app.py:1")
    );
    assert_eq!(run.tool_usage, [("Task".to_string(), 1)].into());
    assert!(run.session_id.starts_with("main-"));
    let bad = MainAgent::new(
        dir.path(),
        explorer(Duration::ZERO),
        MainAgentOptions {
            max_steps: Some(0),
            trace_dir: TraceDirSetting::Off,
            ..MainAgentOptions::default()
        },
    );
    assert_eq!(
        bad.err().unwrap().to_string(),
        "runtime profile budgets must be positive"
    );
    let empty = rt()
        .block_on(agent.run("  ", CancelToken::new()))
        .unwrap_err();
    assert_eq!(empty.to_string(), "task: must be a non-empty string");
}

#[test]
fn verify_runs_the_deterministic_gate_first() {
    let dir = tree();
    let verifier = FnModel::new(Duration::ZERO, |_| {
        Ok(say(json!({"verdict": "FAIL", "reasons": ["main returns 1, not 2"], "findings": [], "evidence": ["src/app.py:2"]}).to_string()))
    });
    let l = launcher(&dir, verifier.clone());
    let rt = rt();
    let todo = rt
        .block_on(l.verify(
            "done",
            json!({"todos": [{"content": "tests", "status": "pending"}]}),
            Value::Null,
            CancelToken::new(),
        ))
        .unwrap();
    assert_eq!(todo.verdict.verdict, "FAIL");
    assert!(todo.launch.is_none());
    assert!(verifier.seen.lock().unwrap().is_empty());
    let v = rt
        .block_on(l.verify(
            "main returns 2",
            Value::Null,
            json!(["src/app.py:2"]),
            CancelToken::new(),
        ))
        .unwrap();
    assert_eq!(
        v.verdict,
        CompletionVerdict {
            verdict: "FAIL",
            reasons: vec!["main returns 1, not 2".into()],
            feedback: Some("Independent verification did not pass: main returns 1, not 2".into()),
        }
    );
    assert_eq!(v.launch.unwrap().profile_name, "verification");
    let err = rt
        .block_on(l.verify(" ", Value::Null, Value::Null, CancelToken::new()))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidate: must be the non-empty text of the completion to verify"
    );
    let err = rt
        .block_on(l.verify("x", json!([1]), Value::Null, CancelToken::new()))
        .unwrap_err();
    assert_eq!(err.to_string(), "requirements: must be a dict, got list");
}

#[test]
fn launch_is_traced_with_the_fields_a_person_debugging_needs() {
    use tracing_subscriber::layer::SubscriberExt;
    type Fields = Vec<(String, String)>;
    #[derive(Default, Clone)]
    struct Spans(Arc<Mutex<Vec<(String, Fields)>>>);
    struct Visitor<'a>(&'a mut Vec<(String, String)>);
    impl tracing::field::Visit for Visitor<'_> {
        fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
            self.0.push((f.name().to_string(), format!("{v:?}")));
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _id: &tracing::span::Id,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut fields = vec![];
            attrs.record(&mut Visitor(&mut fields));
            self.0
                .lock()
                .unwrap()
                .push((attrs.metadata().name().to_string(), fields));
        }
        fn on_record(
            &self,
            _id: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut fields = vec![];
            values.record(&mut Visitor(&mut fields));
            self.0.lock().unwrap().push(("record".to_string(), fields));
        }
    }
    let dir = tree();
    let l = launcher(&dir, explorer(Duration::ZERO));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The interest cache is process-wide: another test's thread can cache "never" for a
    // callsite between the rebuild and the launch; a second launch then sees the span.
    let (r, seen) = (0..3)
        .map(|_| {
            let spans = Spans::default();
            let subscriber = tracing_subscriber::registry().with(spans.clone());
            let r = tracing::subscriber::with_default(subscriber, || {
                tracing::callsite::rebuild_interest_cache();
                rt.block_on(l.launch(SubagentRequest::explore("x"), CancelToken::new()))
                    .unwrap()
            });
            let seen = spans.0.lock().unwrap().clone();
            (r, seen)
        })
        .find(|(_, seen)| seen.iter().any(|(n, _)| n == "launch"))
        .expect("a launch span in one of three launches");
    let launch = seen
        .iter()
        .find(|(n, _)| n == "launch")
        .expect("a launch span");
    let field = |name: &str| {
        launch
            .1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field("session_id"), Some(r.child_session_id.clone()));
    assert_eq!(field("profile").as_deref(), Some("explore"));
    assert_eq!(field("route").as_deref(), Some("main"));
    let recorded: Vec<(String, String)> = seen
        .iter()
        .filter(|(n, _)| n == "record")
        .flat_map(|(_, f)| f.clone())
        .collect();
    assert!(
        recorded.contains(&("status".into(), "\"completed\"".into())),
        "{recorded:?}"
    );
    assert!(recorded.iter().any(|(k, _)| k == "tokens"), "{recorded:?}");
}

#[test]
fn parent_trace_spelled_into_the_root_is_refused_and_a_lost_trace_is_reported() {
    let dir = tree();
    let out = tempfile::tempdir().unwrap();
    let root_name = dir.path().file_name().unwrap().to_owned();
    let spelled = out
        .path()
        .join("missing/../..")
        .join(&root_name)
        .join("parent.jsonl");
    let err = SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(explorer(Duration::ZERO)),
            parent_trace: Some(spelled),
            trace_dir: TraceDirSetting::Off,
            ..LauncherOptions::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.starts_with("parent_trace: ") && err.contains("is inside the explored root"),
        "{err}"
    );
    assert!(!dir.path().join("parent.jsonl").exists());
    assert!(!out.path().join("missing").exists());

    // The trace directory vanishes after the launcher was built: the child still runs, and the
    // result says why there is no trace file.
    let traces = out.path().join("traces");
    let l = SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(explorer(Duration::ZERO)),
            trace_dir: TraceDirSetting::Dir(traces.clone()),
            ..LauncherOptions::default()
        },
    )
    .unwrap();
    let ok = rt()
        .block_on(l.launch(SubagentRequest::explore("main?"), CancelToken::new()))
        .unwrap();
    assert_eq!(
        (ok.status, ok.trace_error.clone()),
        (SubagentStatus::Completed, None)
    );
    assert!(ok
        .trace_path
        .as_ref()
        .unwrap()
        .starts_with(crate::fspath::resolve(&traces)));
    std::fs::remove_dir_all(&traces).unwrap();
    let lost = rt()
        .block_on(l.launch(SubagentRequest::explore("main?"), CancelToken::new()))
        .unwrap();
    assert_eq!(
        (lost.status, lost.trace_path.clone()),
        (SubagentStatus::Completed, None)
    );
    let why = lost.trace_error.clone().unwrap();
    assert!(
        why.contains("cannot be created") && why.contains("No such file or directory"),
        "{why}"
    );
    assert_eq!(lost.to_value()["trace_error"], json!(why));
}

#[test]
fn profiles_given_by_key_must_be_named_alike() {
    let deep = crate::profile::RuntimeProfile {
        name: "deep".into(),
        ..explore_profile()
    };
    assert_eq!(
        profiles_by_key(vec![("deep".into(), deep.clone())]).unwrap(),
        vec![deep.clone()]
    );
    assert_eq!(
        profiles_by_key(vec![("x".into(), deep)])
            .unwrap_err()
            .to_string(),
        "profiles: key 'x' names a profile called 'deep'"
    );
}

/// Reports the same usage on every call: 10 prompt and 3 completion tokens.
fn with_usage(mut r: ChatResponse) -> ChatResponse {
    r.usage = Some(crate::llm::message::Usage {
        prompt_tokens: 10,
        completion_tokens: 3,
        total_tokens: 13,
        cached_tokens: 0,
    });
    r
}

#[test]
fn an_observer_sees_every_trace_event_as_recorded_and_each_finished_child() {
    let dir = tree();
    let traces = tempfile::tempdir().unwrap();
    let l = Arc::new(
        SubagentLauncher::new(
            dir.path(),
            LauncherOptions {
                main_model: Some(explorer(Duration::ZERO)),
                trace_dir: TraceDirSetting::Dir(traces.path().to_path_buf()),
                ..LauncherOptions::default()
            },
        )
        .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::<crate::trace::TraceEvent>::new()));
    let finished = Arc::new(Mutex::new(Vec::<String>::new()));
    let observer = LaunchObserver {
        on_event: Some(crate::trace::EventSink::new({
            let seen = seen.clone();
            move |e| seen.lock().unwrap().push(e.clone())
        })),
        on_finished: Some(Arc::new({
            let finished = finished.clone();
            move |r: &SubagentLaunchResult| {
                finished.lock().unwrap().push(r.child_session_id.clone());
            }
        })),
    };
    let requests = ["alpha", "beta", "gamma"]
        .map(|t| SubagentRequest::explore(format!("{t} where?")))
        .to_vec();
    let results = rt()
        .block_on(l.launch_many_observed(requests, Some(2), CancelToken::new(), observer))
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    let mut finished = finished.lock().unwrap().clone();
    let mut ids: Vec<String> = results.iter().map(|r| r.child_session_id.clone()).collect();
    finished.sort();
    ids.sort();
    assert_eq!(finished, ids);
    for r in &results {
        // What the observer saw of a child is its trace file, line for line.
        let observed: Vec<Value> = seen
            .iter()
            .filter(|e| e.session_id == r.child_session_id)
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        let written: Vec<Value> = std::fs::read_to_string(r.trace_path.as_ref().unwrap())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(observed, written);
        assert_eq!(written.last().unwrap()["event"], "session_summary");
    }
}

#[test]
fn results_and_envelopes_carry_input_and_output_tokens_beside_the_total() {
    let dir = tree();
    let model = FnModel::new(Duration::ZERO, |r| {
        Ok(with_usage(if tool_results(r) == 0 {
            call("Read", json!({"path": "src/app.py"}))
        } else {
            answer("main", "src/app.py:1-2")
        }))
    });
    let l = launcher(&dir, model);
    let r = rt()
        .block_on(l.launch(SubagentRequest::explore("x"), CancelToken::new()))
        .unwrap();
    assert_eq!(
        (r.token_usage, r.input_tokens, r.output_tokens),
        (26, 20, 6)
    );
    let d = r.to_value();
    assert_eq!(
        (&d["token_usage"], &d["input_tokens"], &d["output_tokens"]),
        (&json!(26), &json!(20), &json!(6))
    );
    let envelope = crate::agent::task_tool::launch_envelope(
        &r,
        &json!({}),
        5,
        task_tool::EnvelopeFormat::Reference,
        None,
    );
    let stats: Vec<(&str, &Value)> = envelope
        .stats
        .iter()
        .filter(|(k, _)| k.contains("token"))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    assert_eq!(
        stats,
        vec![
            ("token_usage", &json!(26)),
            ("input_tokens", &json!(20)),
            ("output_tokens", &json!(6))
        ]
    );
}

#[test]
fn a_launcher_prunes_old_traces_by_its_retention_when_built() {
    let dir = tree();
    let traces = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now();
    for i in 0..4u64 {
        let f = std::fs::File::create(traces.path().join(format!("trace-child-{i:032x}.jsonl")))
            .unwrap();
        f.set_modified(now - Duration::from_secs(60 * i)).unwrap();
    }
    std::fs::write(traces.path().join("mine.jsonl"), "").unwrap();
    let build = |retention: &str| {
        SubagentLauncher::new(
            dir.path(),
            LauncherOptions {
                main_model: Some(explorer(Duration::ZERO)),
                trace_dir: TraceDirSetting::Dir(traces.path().to_path_buf()),
                trace_retention: Some(crate::trace::TraceRetention::parse(retention).unwrap()),
                ..LauncherOptions::default()
            },
        )
        .unwrap()
    };
    let names = || {
        let mut n: Vec<String> = std::fs::read_dir(traces.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    build("off");
    assert_eq!(names().len(), 5);
    build("2");
    assert_eq!(
        names(),
        vec![
            "mine.jsonl".to_string(),
            format!("trace-child-{:032x}.jsonl", 0),
            format!("trace-child-{:032x}.jsonl", 1)
        ]
    );
}

fn routes_schema() -> crate::schema::OutputSchema {
    crate::schema::OutputSchema::from_json_schema(&json!({
        "title": "Routes", "type": "object",
        "properties": {"functions": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                       "evidence": {"type": "array", "items": {"type": "string"}}},
        "required": ["functions", "evidence"], "additionalProperties": false}))
    .unwrap()
}

fn system_prompt(r: &ChatRequest) -> String {
    r.messages
        .iter()
        .find_map(|m| match m {
            Message::System { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn last_user(r: &ChatRequest) -> String {
    r.messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn an_output_schema_is_told_checked_retried_and_returned() {
    let dir = tree();
    let feedback = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = feedback.clone();
    let model = FnModel::new(Duration::ZERO, move |r| {
        assert!(system_prompt(r).contains("validates against this JSON schema (Routes)"));
        assert!(!system_prompt(r).contains("\"unresolved_questions\": []"));
        Ok(match tool_results(r) {
            0 => call("Read", json!({"path": "src/app.py"})),
            _ if !last_user(r).contains("Return only") => {
                say(json!({"functions": "main", "evidence": ["src/app.py:1"]}).to_string())
            }
            _ => {
                seen.lock().unwrap().push(last_user(r));
                say(json!({"functions": ["main"], "evidence": ["src/app.py:1"]}).to_string())
            }
        })
    });
    let l = launcher(&dir, model);
    let mut request = SubagentRequest::explore("List functions");
    request.output_schema = Some(routes_schema());
    let r = rt()
        .block_on(l.launch(request, CancelToken::new()))
        .unwrap();
    assert_eq!(r.status, SubagentStatus::Completed, "{r}");
    let fb = feedback.lock().unwrap().clone();
    assert_eq!(fb.len(), 1);
    assert!(
        fb[0].starts_with(
            "Return only a valid Routes JSON object: functions: \"main\" is not of type \"array\""
        ),
        "{}",
        fb[0]
    );
    let Some(ParsedResult::Custom(c)) = &r.result else {
        panic!("{:?}", r.result)
    };
    assert_eq!(
        Value::Object(c.value.clone()),
        json!({"functions": ["main"], "evidence": ["src/app.py:1"]})
    );
    assert_eq!(r.output_schema.as_deref(), Some("Routes"));
    let back = SubagentLaunchResult::from_value(&r.to_value()).unwrap();
    assert_eq!(back.to_value(), r.to_value());
    assert!(matches!(back.result, Some(ParsedResult::Custom(_))));
}

#[test]
fn an_output_schema_never_met_is_partial_with_the_raw_object_and_evidence_is_still_grounded() {
    let dir = tree();
    let never = FnModel::new(Duration::ZERO, |r| {
        Ok(match tool_results(r) {
            0 => call("Read", json!({"path": "src/app.py"})),
            _ => say(json!({"functions": [], "evidence": ["src/app.py:1"]}).to_string()),
        })
    });
    let mut request = SubagentRequest::explore("List functions");
    request.output_schema = Some(routes_schema());
    let r = rt()
        .block_on(launcher(&dir, never).launch(request.clone(), CancelToken::new()))
        .unwrap();
    // #37: the object as written comes back, partial, with the violations (not `failed`).
    assert_eq!(r.status, SubagentStatus::Partial, "{r}");
    assert_eq!(r.terminal_reason, TerminalReason::CompletionGateBlocked);
    assert_eq!(r.schema_errors, ["functions: [] has less than 1 item"]);
    assert_eq!(
        r.evidence.as_deref(),
        Some(&["src/app.py:1".to_string()][..])
    );
    let Some(ParsedResult::Custom(c)) = &r.result else {
        panic!("{:?}", r.result)
    };
    assert_eq!(
        Value::Object(c.value.clone()),
        json!({"functions": [], "evidence": ["src/app.py:1"]})
    );
    let error = r.error.clone().unwrap();
    assert!(error.contains("[] has less than 1 item"), "{error}");
    let back = SubagentLaunchResult::from_value(&r.to_value()).unwrap();
    assert_eq!(back.to_value(), r.to_value());

    let unseen = FnModel::new(Duration::ZERO, |r| {
        Ok(match tool_results(r) {
            0 => call("Read", json!({"path": "src/app.py"})),
            _ => say(json!({"functions": ["main"], "evidence": ["src/app.py:9"]}).to_string()),
        })
    });
    let r = rt()
        .block_on(launcher(&dir, unseen).launch(request, CancelToken::new()))
        .unwrap();
    assert_eq!(r.status, SubagentStatus::Unverified);
    assert_eq!(r.ungrounded_evidence[0].evidence, "src/app.py:9");
    assert!(matches!(r.result, Some(ParsedResult::Custom(_))));
}

/// A schema with no `evidence` or `status` of its own, forbidding other fields.
fn summary_schema() -> crate::schema::OutputSchema {
    crate::schema::OutputSchema::from_json_schema(&json!({
        "title": "Brief", "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"], "additionalProperties": false}))
    .unwrap()
}

fn answering(answer: Value) -> Arc<dyn ChatModel> {
    FnModel::new(Duration::ZERO, move |r| {
        Ok(match tool_results(r) {
            0 => call("Read", json!({"path": "src/app.py"})),
            _ => say(answer.to_string()),
        })
    })
}

#[test]
fn a_schema_without_evidence_gets_it_kept_beside_its_object() {
    let dir = tree();
    let model = answering(json!({"summary": "main returns 1", "evidence": ["src/app.py:1-2"]}));
    let mut request = SubagentRequest::explore("What does main return?");
    request.output_schema = Some(summary_schema());
    let r = rt()
        .block_on(launcher(&dir, model).launch(request, CancelToken::new()))
        .unwrap();
    assert_eq!(r.status, SubagentStatus::Completed, "{r}");
    let Some(ParsedResult::Custom(c)) = &r.result else {
        panic!("{:?}", r.result)
    };
    assert_eq!(
        Value::Object(c.value.clone()),
        json!({"summary": "main returns 1"})
    );
    assert_eq!(r.to_value()["evidence"], json!(["src/app.py:1-2"]));
    assert!(r.schema_errors.is_empty());
    let back = SubagentLaunchResult::from_value(&r.to_value()).unwrap();
    assert_eq!(back.result.unwrap().evidence(), ["src/app.py:1-2"]);
}

#[test]
fn an_answers_own_failed_or_not_found_status_is_not_completed() {
    let dir = tree();
    for word in ["failed", "not_found"] {
        let model = answering(
            json!({"summary": "no such thing", "evidence": ["src/app.py:1"], "status": word}),
        );
        let mut request = SubagentRequest::explore("Where is the cache?");
        request.output_schema = Some(summary_schema());
        let r = rt()
            .block_on(launcher(&dir, model).launch(request, CancelToken::new()))
            .unwrap();
        assert_eq!(r.status, SubagentStatus::Partial, "{word}: {r}");
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.contains(&format!("own status is '{word}'")),
            "{error}"
        );
    }
}

/// A validator that never answers in time (a caller's slow validator, or a pattern that
/// backtracks for minutes).
struct Stuck;

impl crate::schema::AnswerValidator for Stuck {
    fn validate(
        &self,
        _: &Value,
    ) -> Result<crate::schema::Validated, Vec<crate::schema::SchemaViolation>> {
        std::thread::sleep(Duration::from_secs(30));
        Err(Vec::new())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn same_as(&self, _: &dyn crate::schema::AnswerValidator) -> bool {
        false
    }
}

#[test]
fn a_validator_that_never_returns_ends_the_launch_at_its_time_limit() {
    let dir = tree();
    let stuck = crate::schema::OutputSchema::with_validator(
        &json!({"type": "object"}),
        Some("Stuck"),
        Arc::new(Stuck),
    )
    .unwrap();
    for policy in ["partial", "fail"] {
        let profile = explore_profile()
            .with_fields(&[
                ("timeout_seconds".into(), Json::Float(2.0)),
                ("on_budget_exhausted".into(), Json::Str(policy.into())),
            ])
            .unwrap();
        let l = launcher_with(
            &dir,
            answering(json!({"summary": "s", "evidence": ["src/app.py:1"]})),
            LauncherOptions {
                profiles: vec![profile],
                ..LauncherOptions::default()
            },
        );
        let mut request = SubagentRequest::explore("What does main return?");
        request.output_schema = Some(stuck.clone());
        let started = std::time::Instant::now();
        let r = rt()
            .block_on(l.launch(request, CancelToken::new()))
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.contains(
                "checking the answer against 'Stuck' did not finish within the run's time limit"
            ),
            "{policy}: {error}"
        );
        if policy == "partial" {
            assert_eq!(r.status, SubagentStatus::Partial, "{r}");
            assert_eq!(r.terminal_reason, TerminalReason::Timeout);
            assert!(matches!(r.result, Some(ParsedResult::Custom(_))));
        } else {
            assert_eq!(r.status, SubagentStatus::Failed, "{r}");
            assert_eq!(r.failure_reason, Some(TerminalReason::Timeout));
        }
    }
}

#[test]
fn an_output_schema_needs_a_model_and_no_scout_fallback() {
    let dir = tree();
    let l = SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(Arc::new(crate::llm::scout::OfflineScout)),
            trace_dir: TraceDirSetting::Off,
            ..LauncherOptions::default()
        },
    )
    .unwrap();
    let mut request = SubagentRequest::explore("List functions");
    request.output_schema = Some(routes_schema());
    let err = rt()
        .block_on(l.launch(request, CancelToken::new()))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("output_schema: 'Routes' needs a model: the offline scout"),
        "{err}"
    );
    let p = explore_profile()
        .with_fields(&[("scout_fallback".into(), Json::Bool(true))])
        .unwrap();
    assert_eq!(
        p.with_output_schema(Some(routes_schema())).unwrap_err().0,
        "runtime profile scout_fallback cannot be used with output_schema: the offline scout answers only ExploreResult"
    );
}

#[test]
fn a_long_summary_is_cut_to_the_profile_cap_saying_so() {
    let dir = tree();
    let long = "word ".repeat(100);
    let model = FnModel::new(Duration::ZERO, move |r| {
        assert!(system_prompt(r).contains("Keep the summary to at most 120 characters"));
        Ok(match tool_results(r) {
            0 => call("Read", json!({"path": "src/app.py"})),
            _ => answer(long.trim(), "src/app.py:1"),
        })
    });
    let capped = explore_profile()
        .with_fields(&[("max_summary_chars".into(), Json::Int(120))])
        .unwrap();
    let l = launcher_with(
        &dir,
        model,
        LauncherOptions {
            profiles: vec![capped],
            ..LauncherOptions::default()
        },
    );
    let r = rt()
        .block_on(l.launch(SubagentRequest::explore("x"), CancelToken::new()))
        .unwrap();
    let Some(ParsedResult::Explore(e)) = &r.result else {
        panic!()
    };
    let n = e.summary.chars().count();
    assert!((110..=120).contains(&n), "{n}: {}", e.summary);
    assert!(
        e.summary.starts_with("word word")
            && e.summary
                .ends_with(" … [summary cut by max_summary_chars=120: 49 of 499 characters shown]"),
        "{}",
        e.summary
    );
    assert_eq!(
        explore_profile()
            .with_fields(&[("max_summary_chars".into(), Json::Int(5))])
            .unwrap_err()
            .to_string(),
        "runtime profile max_summary_chars must be None or between 100 and 1000000, got 5"
    );
}
