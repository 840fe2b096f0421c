//! A model that answers through a host callback (a Python callable): the host starts each call
//! and later reports how it ended through a [`Reply`]. This side waits, gives up when the run
//! does (and tells the host to cancel the call), and turns the report into a response or an
//! error that names the callable and what it did.

use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelError, ModelErrorKind};

/// How a host call ended, as the host reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A chat response, as JSON text.
    Json(String),
    /// The callable raised an exception of type `kind`; SDK errors carry an HTTP `status`.
    Raised {
        /// The exception's type name.
        kind: String,
        /// Its message.
        message: String,
        /// The HTTP status it carries, if any.
        status: Option<u16>,
    },
    /// It returned a value of none of the accepted shapes: the type's name and the value shown.
    WrongType {
        /// The returned value's type name.
        type_name: String,
        /// How the value shows (cut to 200 characters in the message).
        shown: String,
    },
    /// It returned a value that cannot be converted to JSON: why.
    Unusable(String),
}

/// Where the host reports one call's [`Outcome`]; only the first report counts.
#[derive(Debug)]
pub struct Reply(Mutex<Option<oneshot::Sender<Outcome>>>);

impl Reply {
    /// Report how the call ended.
    pub fn send(&self, outcome: Outcome) {
        if let Some(tx) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(outcome);
        }
    }
}

/// Run by the core when it stops waiting for a call that was started but not answered (the run
/// timed out or was cancelled): the host cancels what it can.
pub type Abandon = Box<dyn FnOnce() + Send>;

/// The host half of a [`CallbackModel`].
pub trait Host: Send + Sync {
    /// Start one call with the chat-completions request body (JSON text); the host reports to
    /// `reply` once, from any thread. The error is why the call could not start.
    fn start(&self, body: String, reply: Reply) -> Result<Abandon, ModelError>;
    /// The callable as messages name it (`model callable answer`).
    fn what(&self) -> String;
    /// The model as traces describe it (`python callable answer`).
    fn describe(&self) -> String;
}

/// A [`ChatModel`] whose calls a [`Host`] answers.
pub struct CallbackModel<H>(pub H);

/// Runs the abandon action of a call that was dropped before its answer came.
struct OnDrop(Option<Abandon>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(abandon) = self.0.take() {
            abandon();
        }
    }
}

impl Outcome {
    /// The response, or the error that says what the callable `what` did.
    pub fn into_response(self, what: &str) -> Result<ChatResponse, ModelError> {
        let unusable = |why: &dyn std::fmt::Display| {
            ModelError::new(
                ModelErrorKind::Callback,
                format!("{what} returned an unusable value: {why}"),
            )
        };
        match self {
            Outcome::Json(text) => {
                let value: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| unusable(&e))?;
                ChatResponse::from_value(&value).map_err(ModelError::from)
            }
            Outcome::Raised {
                kind,
                message,
                status,
            } => Err(match status {
                Some(code) => ModelError::callback_raised_status(what, &kind, &message, code),
                None => ModelError::callback_raised(what, &kind, &message),
            }),
            Outcome::WrongType { type_name, shown } => {
                Err(ModelError::unusable_return(what, &type_name, &shown))
            }
            Outcome::Unusable(why) => Err(unusable(&why)),
        }
    }
}

impl<H: Host> ChatModel for CallbackModel<H> {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let body = request.to_openai_string();
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let mut pending = OnDrop(Some(self.0.start(body, Reply(Mutex::new(Some(tx))))?));
            let answer = crate::exec::spin_first(rx).await;
            pending.0 = None;
            let what = self.0.what();
            let outcome = answer.map_err(|_| {
                ModelError::new(
                    ModelErrorKind::Callback,
                    format!("{what} ended without an answer"),
                )
            })?;
            outcome.into_response(&what)
        })
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A host that answers from another thread after `delay`, or never, or drops the reply.
    struct Scripted {
        answer: Option<Outcome>,
        delay: Duration,
        abandoned: Arc<AtomicUsize>,
    }

    impl Host for Scripted {
        fn start(&self, _body: String, reply: Reply) -> Result<Abandon, ModelError> {
            let (answer, delay) = (self.answer.clone(), self.delay);
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                match answer {
                    Some(a) => reply.send(a),
                    None => drop(reply),
                }
            });
            let abandoned = self.abandoned.clone();
            Ok(Box::new(move || {
                abandoned.fetch_add(1, Ordering::SeqCst);
            }))
        }
        fn what(&self) -> String {
            "model callable answer".into()
        }
        fn describe(&self) -> String {
            "python callable answer".into()
        }
    }

    fn call(answer: Option<Outcome>, delay: Duration) -> (Result<ChatResponse, ModelError>, usize) {
        let abandoned = Arc::new(AtomicUsize::new(0));
        let model = CallbackModel(Scripted {
            answer,
            delay,
            abandoned: abandoned.clone(),
        });
        let req = ChatRequest::from_openai(
            &serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .unwrap();
        let out = crate::exec::runtime().block_on(async {
            match tokio::time::timeout(Duration::from_millis(300), model.complete(&req)).await {
                Ok(out) => out,
                Err(_) => Err(ModelError::new(ModelErrorKind::Timeout, "gave up")),
            }
        });
        (out, abandoned.load(Ordering::SeqCst))
    }

    fn message(out: Result<ChatResponse, ModelError>) -> (ModelErrorKind, String, Option<u16>) {
        let e = out.expect_err("an error");
        (e.kind, e.message, e.status)
    }

    #[test]
    fn an_answer_becomes_the_response_and_nothing_is_abandoned() {
        let json = r#"{"content": "done", "tool_calls": []}"#.to_string();
        let (out, abandoned) = call(Some(Outcome::Json(json)), Duration::ZERO);
        assert_eq!(out.unwrap().content, "done");
        assert_eq!(abandoned, 0);
    }

    #[test]
    fn a_call_the_run_stops_waiting_for_is_abandoned_once() {
        let (out, abandoned) = call(Some(Outcome::Json("{}".into())), Duration::from_secs(2));
        assert_eq!(message(out).0, ModelErrorKind::Timeout);
        assert_eq!(abandoned, 1);
    }

    #[test]
    fn each_report_says_what_the_callable_did() {
        let cases = [
            (Outcome::Raised { kind: "ValueError".into(), message: "bad".into(), status: None },
             (ModelErrorKind::Callback, "model callable answer raised ValueError: bad".to_string(), None)),
            (Outcome::Raised { kind: "RateLimitError".into(), message: "slow".into(), status: Some(429) },
             (ModelErrorKind::RateLimit, "model callable answer raised RateLimitError: slow".to_string(), Some(429))),
            (Outcome::Raised { kind: "KeyboardInterrupt".into(), message: String::new(), status: None },
             (ModelErrorKind::Cancelled, "interrupted (KeyboardInterrupt)".to_string(), None)),
            (Outcome::Unusable("float NaN".into()),
             (ModelErrorKind::Callback, "model callable answer returned an unusable value: float NaN".to_string(), None)),
            (Outcome::Json("{not json".into()),
             (ModelErrorKind::Callback, "model callable answer returned an unusable value: key must be a string at line 1 column 2".to_string(), None)),
        ];
        for (outcome, expected) in cases {
            assert_eq!(message(call(Some(outcome), Duration::ZERO).0), expected);
        }
        let (kind, msg, _) = message(
            call(
                Some(Outcome::WrongType {
                    type_name: "int".into(),
                    shown: "3".into(),
                }),
                Duration::ZERO,
            )
            .0,
        );
        assert_eq!(kind, ModelErrorKind::Callback);
        assert!(
            msg.starts_with("model callable answer returned int 3; a model callable must return"),
            "{msg}"
        );
    }

    #[test]
    fn a_reply_dropped_unanswered_is_an_error_not_a_hang() {
        let (out, _) = call(None, Duration::ZERO);
        assert_eq!(
            message(out),
            (
                ModelErrorKind::Callback,
                "model callable answer ended without an answer".into(),
                None
            )
        );
    }
}
