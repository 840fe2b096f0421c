//! The launch layer's `tracing` events: the levels and fields a log reader (Python's `logging`
//! through the binding) sees. In a binary of its own: tracing caches each callsite's interest
//! process-wide, and tests on other threads registering the same callsites without a subscriber
//! would race with the one set here.

use std::sync::{Arc, Mutex};

use outrider::api::CancelToken;
use outrider::api::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, Message, ModelError, ToolCall,
};
use outrider::api::{LauncherOptions, SubagentLauncher, SubagentRequest, TraceDirSetting};
use serde_json::{json, Value};

/// Answers by how many tool results the request holds.
struct Scripted(fn(usize) -> ChatResponse);

impl ChatModel for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        let out = (self.0)(results);
        Box::pin(async move { Ok(out) })
    }
    fn describe(&self) -> String {
        "scripted".into()
    }
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

fn say(text: String) -> ChatResponse {
    ChatResponse {
        content: text,
        ..Default::default()
    }
}

#[test]
fn launch_events_come_at_the_levels_a_log_reader_expects() {
    use tracing_subscriber::layer::SubscriberExt;
    type Event = (tracing::Level, String, Vec<(String, String)>);
    #[derive(Default, Clone)]
    struct Events(Arc<Mutex<Vec<Event>>>);
    struct Visitor<'a>(&'a mut Vec<(String, String)>);
    impl tracing::field::Visit for Visitor<'_> {
        fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
            self.0.push((f.name().to_string(), format!("{v:?}")));
        }
        fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
            self.0.push((f.name().to_string(), v.to_string()));
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut fields = vec![];
            event.record(&mut Visitor(&mut fields));
            let message = fields
                .iter()
                .find(|(k, _)| k == "message")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            fields.retain(|(k, _)| k != "message");
            self.0
                .lock()
                .unwrap()
                .push((*event.metadata().level(), message, fields));
        }
    }
    // A denied Edit, a Read, then an answer in a code fence (repaired by the gate).
    let model = Scripted(|results| match results {
        0 => call("Edit", json!({"path": "src/app.py"})),
        1 => call("Read", json!({"path": "src/app.py"})),
        _ => say(format!(
            "```json\n{}\n```",
            json!({"status": "completed", "summary": "main", "findings": ["main"], "evidence": ["src/app.py:1-2"]})
        )),
    });
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.py"), "def main():\n    return 1\n").unwrap();
    let l = SubagentLauncher::new(
        dir.path(),
        LauncherOptions {
            main_model: Some(Arc::new(model)),
            trace_dir: TraceDirSetting::Off,
            ..LauncherOptions::default()
        },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = tracing::subscriber::with_default(subscriber, || {
        // The interest cache is process-wide: forget a "never" cached before this subscriber.
        tracing::callsite::rebuild_interest_cache();
        rt.block_on(l.launch(SubagentRequest::explore("x"), CancelToken::new()))
            .unwrap()
    });
    let id = r.child_session_id.clone();
    let seen = events.0.lock().unwrap().clone();
    let brief: Vec<(tracing::Level, &str)> =
        seen.iter().map(|(l, m, _)| (*l, m.as_str())).collect();
    use tracing::Level as L;
    assert_eq!(
        brief,
        vec![
            (L::INFO, "child started"),
            (L::DEBUG, "step"),
            (L::DEBUG, "model answered"),
            (L::DEBUG, "tool call"),
            (L::WARN, "tool call denied"),
            (L::DEBUG, "step"),
            (L::DEBUG, "model answered"),
            (L::DEBUG, "tool call"),
            (L::DEBUG, "step"),
            (L::DEBUG, "model answered"),
            (L::WARN, "the final answer was repaired to fit the contract"),
            (L::INFO, "child finished"),
        ]
    );
    let fields = |i: usize| -> Vec<(&str, &str)> {
        seen[i]
            .2
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    };
    assert_eq!(
        fields(4),
        vec![
            ("session_id", id.as_str()),
            ("step", "1"),
            ("tool", "Edit"),
            ("error_code", "PERMISSION_DENIED")
        ]
    );
    assert_eq!(
        fields(7),
        vec![
            ("session_id", id.as_str()),
            ("step", "2"),
            ("tool", "Read"),
            ("status", "success"),
            ("error_code", "")
        ]
    );
    let elapsed = r.elapsed_ms.to_string();
    let tokens = r.token_usage.to_string();
    let (input, output) = (r.input_tokens.to_string(), r.output_tokens.to_string());
    assert_eq!(
        fields(11),
        vec![
            ("session_id", id.as_str()),
            ("status", "completed"),
            ("terminal_reason", "completed"),
            ("tokens", tokens.as_str()),
            ("input_tokens", input.as_str()),
            ("output_tokens", output.as_str()),
            ("elapsed_ms", elapsed.as_str())
        ]
    );
}
