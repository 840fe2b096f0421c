//! The OpenAI-compatible client against a scripted HTTP/1.1 server on 127.0.0.1, and its
//! configuration from environment variables and `.env` text.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outrider::api::Error;
use outrider::api::{config_from_lookup, env_or_dotenv, load_dotenv, parse_dotenv};
use outrider::api::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelErrorKind, ToolCall, Usage,
};
use outrider::api::{OpenAICompatible, OpenAICompatibleConfig};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/recorder.rs"]
mod recorder;

const KEY: &str = "sk-test-0123456789abcdef";

/// What the server does with one request.
#[derive(Clone)]
enum Step {
    /// Answer with a status, extra headers and a body.
    Reply(u16, Vec<(&'static str, String)>, String),
    /// Read the request and never answer.
    Hang,
    /// Write these bytes as they are (status line, headers, body), then close.
    Raw(Vec<u8>),
    /// Write `head`, then `chunk` `times` times with `pause` before each, then close.
    Stream {
        head: String,
        chunk: Vec<u8>,
        times: usize,
        pause: Duration,
    },
    /// Write these bytes, then reset the connection (RST rather than an orderly close).
    Reset(Vec<u8>),
}

fn json_reply(status: u16, body: Value) -> Step {
    Step::Reply(status, vec![], body.to_string())
}

/// One request the server received.
#[derive(Debug, Clone)]
struct Recorded {
    request_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Server {
    base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// A server that answers the n-th request with `script[n]` (500 once the script is used up).
    async fn start(script: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (recorded, script) = (Arc::clone(&recorded), script.clone());
                tokio::spawn(serve(stream, recorded, script));
            }
        });
        Server { base_url, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    fn model(&self, configure: impl FnOnce(&mut OpenAICompatibleConfig)) -> OpenAICompatible {
        let mut config = OpenAICompatibleConfig::new("test-model", self.base_url.as_str());
        config.api_key = Some(KEY.into());
        configure(&mut config);
        OpenAICompatible::new(config).unwrap()
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

/// One connection: read the head and a Content-Length body, answer, close.
async fn serve(mut stream: TcpStream, recorded: Arc<Mutex<Vec<Recorded>>>, script: Vec<Step>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let index = {
        let mut all = recorded.lock().unwrap();
        all.push(Recorded {
            request_line,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        all.len() - 1
    };
    let step = script.get(index).cloned().unwrap_or_else(|| {
        Step::Reply(
            500,
            vec![],
            r#"{"error": {"message": "script exhausted"}}"#.into(),
        )
    });
    match step {
        Step::Hang => {
            // Hold the connection until the client gives up and closes it.
            while matches!(stream.read(&mut chunk).await, Ok(n) if n > 0) {}
        }
        Step::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Step::Stream {
            head,
            chunk,
            times,
            pause,
        } => {
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for _ in 0..times {
                tokio::time::sleep(pause).await;
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = stream.shutdown().await;
        }
        Step::Reset(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.flush().await;
            let std = stream.into_std().unwrap();
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: a valid socket and a correctly sized option value.
            unsafe {
                use std::os::fd::AsRawFd;
                libc::setsockopt(
                    std.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&raw const linger).cast::<libc::c_void>(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            drop(std);
        }
        Step::Reply(status, extra, body) => {
            let mut response = format!(
                "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in extra {
                response.push_str(&format!("{k}: {v}\r\n"));
            }
            response.push_str("\r\n");
            response.push_str(&body);
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    }
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    })
}

fn final_answer(content: &str) -> ChatResponse {
    ChatResponse {
        content: content.into(),
        tool_calls: vec![],
        finish_reason: Some("stop".into()),
        usage: Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            total_tokens: 12,
            cached_tokens: 0,
        }),
    }
}

fn simple_request() -> ChatRequest {
    ChatRequest {
        model: None,
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: Default::default(),
        tool_choice: None,
        deadline: None,
        run: None,
        settings: None,
    }
}

fn error(kind: ModelErrorKind, status: Option<u16>, message: String) -> ModelError {
    ModelError {
        kind,
        message,
        status,
    }
}

#[tokio::test]
async fn success_with_tool_calls_sends_bearer_and_full_body() {
    let server = Server::start(vec![json_reply(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "Grep", "arguments": "{\"pattern\": \"def main\"}"}}]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
        }),
    )])
    .await;
    let model = server.model(|c| {
        c.temperature = Some(0.5);
        c.max_tokens = Some(256);
    });
    let grep_schema =
        json!({"type": "function", "function": {"name": "Grep", "parameters": {"type": "object"}}});
    let request = ChatRequest {
        model: None,
        messages: vec![
            Message::System {
                content: "explore".into(),
            },
            Message::User {
                content: "find main".into(),
            },
        ],
        tools: vec![grep_schema.clone()].into(),
        tool_choice: Some("auto".into()),
        deadline: None,
        run: None,
        settings: None,
    };

    let response = model.complete(&request).await.unwrap();

    assert_eq!(
        response,
        ChatResponse {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "Grep".into(),
                arguments: r#"{"pattern": "def main"}"#.into(),
            }],
            finish_reason: Some("tool_calls".into()),
            usage: Some(Usage {
                prompt_tokens: 50,
                completion_tokens: 7,
                total_tokens: 57,
                cached_tokens: 0,
            }),
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&sent.body).unwrap(),
        json!({
            "model": "test-model",
            "messages": [{"role": "system", "content": "explore"}, {"role": "user", "content": "find main"}],
            "tools": [grep_schema],
            "tool_choice": "auto",
            "temperature": 0.5,
            "max_tokens": 256,
            "stop": ["\n\n\n\n"],
        })
    );
}

#[tokio::test]
async fn no_tools_means_no_tool_choice_and_no_key_means_no_auth_header() {
    let server = Server::start(vec![json_reply(200, completion("done"))]).await;
    let model = server.model(|c| c.api_key = None);
    let mut request = simple_request();
    request.model = Some("other-model".into());
    request.tool_choice = Some("none".into());

    assert_eq!(
        model.complete(&request).await.unwrap(),
        final_answer("done")
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), None);
    // A server on this machine gets an answer cap (local servers default to none).
    assert_eq!(
        serde_json::from_str::<Value>(&sent.body).unwrap(),
        json!({"model": "other-model", "messages": [{"role": "user", "content": "hi"}],
               "max_tokens": outrider::api::LOCAL_MAX_TOKENS, "stop": ["\n\n\n\n"],
               "temperature": outrider::api::LOCAL_TEMPERATURE})
    );
}

/// The body `simple_request()` is sent with by a client of `base` configured by `configure`.
fn body_for(base: &str, configure: impl FnOnce(&mut OpenAICompatibleConfig)) -> Value {
    let mut config = OpenAICompatibleConfig::new("m", base);
    config.api_key = Some(KEY.into()); // a remote server is refused without one
    configure(&mut config);
    OpenAICompatible::new(config)
        .unwrap()
        .request_body(&simple_request())
}

#[test]
fn only_a_local_server_gets_a_default_answer_cap() {
    let body = |base: &str, max: Option<u64>| body_for(base, |c| c.max_tokens = max);
    assert_eq!(
        body("http://127.0.0.1:8080/v1", None)["max_tokens"],
        json!(512)
    );
    assert_eq!(
        body("http://localhost:11434/v1", None)["max_tokens"],
        json!(512)
    );
    assert_eq!(
        body("http://127.0.0.1:8080/v1", Some(50))["max_tokens"],
        json!(50)
    );
    assert_eq!(
        body("https://api.openai.com/v1", None).get("max_tokens"),
        None
    );
}

#[test]
fn only_a_local_server_gets_a_default_temperature() {
    let body = |base: &str, t: Option<f64>| body_for(base, |c| c.temperature = t);
    assert_eq!(
        body("http://127.0.0.1:8080/v1", None)["temperature"],
        json!(0.0)
    );
    assert_eq!(
        body("http://[::1]:11434/v1", None)["temperature"],
        json!(0.0)
    );
    assert_eq!(
        body("http://127.0.0.1:8080/v1", Some(0.7))["temperature"],
        json!(0.7)
    );
    assert_eq!(
        body("https://api.openai.com/v1", None).get("temperature"),
        None
    );
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = Server::start(vec![
        Step::Reply(
            429,
            vec![("Retry-After", "1".into())],
            json!({"error": {"message": "slow down"}}).to_string(),
        ),
        json_reply(200, completion("after the wait")),
    ])
    .await;
    let model = server.model(|_| {});
    let started = Instant::now();

    let response = model.complete(&simple_request()).await.unwrap();

    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(response, final_answer("after the wait"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn each_retry_is_a_tracing_event_with_attempt_wait_and_status() {
    let server = Server::start(vec![
        Step::Reply(
            429,
            vec![("Retry-After", "0".into())],
            json!({"error": {"message": "slow down"}}).to_string(),
        ),
        Step::Reply(503, vec![("Retry-After", "0".into())], "busy".into()),
        json_reply(200, completion("third time")),
    ])
    .await;
    let model = server.model(|_| {});
    let recorder = recorder::Recorder::default();
    let response = {
        let _guard = tracing::subscriber::set_default(recorder.clone());
        // Other tests' threads may have cached "never" for a callsite before this subscriber
        // existed (tracing's interest cache is process-wide): ask again now that it does.
        tracing::callsite::rebuild_interest_cache();
        model.complete(&simple_request()).await.unwrap()
    };
    assert_eq!(response, final_answer("third time"));
    let retries: Vec<recorder::Recorded> = recorder
        .records()
        .into_iter()
        .filter(|r| r.name == "retry")
        .collect();
    let event = |attempt: &str, status: &str, kind: &str| recorder::Recorded {
        kind: "event",
        name: "retry".into(),
        parent: None,
        fields: [
            ("attempt", attempt),
            ("kind", kind),
            ("message", "model call failed; retrying"),
            ("retry_after", "true"),
            ("status", status),
            ("wait_ms", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    assert_eq!(
        retries,
        vec![event("1", "429", "rate_limit"), event("2", "503", "server")]
    );
}

#[tokio::test]
async fn rate_limit_gives_up_after_max_retries() {
    let throttled = Step::Reply(
        429,
        vec![("Retry-After", "0".into())],
        json!({"error": {"message": "quota exceeded"}}).to_string(),
    );
    let server = Server::start(vec![throttled.clone(), throttled]).await;
    let model = server.model(|c| c.max_retries = 1);

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!(
        err,
        error(
            ModelErrorKind::RateLimit,
            Some(429),
            format!(
                "{} answered HTTP 429 (rate limited): quota exceeded (gave up after 2 attempts)",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = Server::start(vec![
        json_reply(500, json!({"error": {"message": "boom"}})),
        Step::Reply(502, vec![], "<html>bad gateway</html>".into()),
        json_reply(200, completion("third time")),
    ])
    .await;
    let model = server.model(|_| {});

    assert_eq!(
        model.complete(&simple_request()).await.unwrap(),
        final_answer("third time")
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn server_errors_past_the_retries_name_the_last_status() {
    let server = Server::start(vec![
        json_reply(503, json!({"error": {"message": "overloaded"}})),
        Step::Reply(502, vec![], "<html>bad gateway</html>".into()),
    ])
    .await;
    let model = server.model(|c| c.max_retries = 1);

    assert_eq!(
        model.complete(&simple_request()).await.unwrap_err(),
        error(
            ModelErrorKind::Server,
            Some(502),
            format!(
                "{} answered HTTP 502: <html>bad gateway</html> (gave up after 2 attempts)",
                server.endpoint()
            )
        )
    );
}

#[tokio::test]
async fn unauthorized_is_auth_without_retry_and_hides_the_key() {
    // Providers echo the key they refused; it must not reach the message.
    let server = Server::start(vec![json_reply(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error"}}),
    )])
    .await;
    let model = server.model(|_| {});

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!(
        err,
        error(
            ModelErrorKind::Auth,
            Some(401),
            format!(
                "{} answered HTTP 401: Incorrect API key provided: [REDACTED].; check the API key and that it may use model 'test-model'",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
    assert!(!format!("{err} {err:?} {model:?}").contains(KEY));
}

#[tokio::test]
async fn context_length_is_not_retried() {
    let server = Server::start(vec![json_reply(
        400,
        json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}}),
    )])
    .await;
    let model = server.model(|_| {});

    assert_eq!(
        model.complete(&simple_request()).await.unwrap_err(),
        error(
            ModelErrorKind::ContextTooLong,
            Some(400),
            format!(
                "{} answered HTTP 400: the prompt does not fit the model's context window: This model's maximum context length is 8192 tokens.",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_invalid_requests_without_retry() {
    let server = Server::start(vec![json_reply(
        422,
        json!({"detail": "messages: field required"}),
    )])
    .await;
    let model = server.model(|_| {});

    assert_eq!(
        model.complete(&simple_request()).await.unwrap_err(),
        error(
            ModelErrorKind::InvalidRequest,
            Some(422),
            format!(
                "{} refused the request with HTTP 422: messages: field required",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn hung_server_times_out_on_every_attempt() {
    let server = Server::start(vec![Step::Hang, Step::Hang]).await;
    let model = server.model(|c| {
        c.timeout = Duration::from_secs(1);
        c.max_retries = 1;
    });
    let started = Instant::now();

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err,
        error(
            ModelErrorKind::Timeout,
            None,
            format!(
                "no complete answer from {} within 1 s (the timeout); raise it if the model is slow (gave up after 2 attempts)",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn non_json_body_is_a_bad_response_without_retry() {
    let server = Server::start(vec![Step::Reply(
        200,
        vec![],
        "<html>login page</html>".into(),
    )])
    .await;
    let model = server.model(|_| {});

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!(
        err,
        error(
            ModelErrorKind::BadResponse,
            Some(200),
            format!(
                "{} answered HTTP 200 with a body that is not JSON (expected value at line 1 column 1): <html>login page</html>",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn json_that_is_not_a_completion_is_a_bad_response() {
    let server = Server::start(vec![json_reply(200, json!({"choices": []}))]).await;
    let model = server.model(|_| {});

    assert_eq!(
        model.complete(&simple_request()).await.unwrap_err(),
        error(
            ModelErrorKind::BadResponse,
            Some(200),
            format!(
                r#"{} answered HTTP 200 with JSON that is not a chat completion (model response has no choices: choices = []): {{"choices":[]}}"#,
                server.endpoint()
            )
        )
    );
}

#[tokio::test]
async fn connection_refused_is_a_connection_error_after_the_retries() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config =
        OpenAICompatibleConfig::new("test-model", format!("http://127.0.0.1:{port}/v1"));
    config.max_retries = 1;
    let model = OpenAICompatible::new(config).unwrap();

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!((err.kind, err.status), (ModelErrorKind::Connection, None));
    assert_eq!(
        err.message,
        format!("could not connect to http://127.0.0.1:{port}/v1/chat/completions: Connection refused (os error 111) (gave up after 2 attempts)")
    );
}

#[test]
fn base_url_suffixes_are_stripped_and_describe_names_the_model() {
    for raw in [
        "http://localhost:8000/v1",
        "http://localhost:8000/v1/",
        "http://localhost:8000/v1/chat/completions",
        "http://localhost:8000/v1/completions/",
    ] {
        let model = OpenAICompatible::new(OpenAICompatibleConfig::new("m", raw)).unwrap();
        assert_eq!(
            (
                model.endpoint(),
                model.config().base_url.as_str(),
                model.describe(),
                model.model_id()
            ),
            (
                "http://localhost:8000/v1/chat/completions",
                "http://localhost:8000/v1",
                "openai-compatible m at http://localhost:8000/v1".to_string(),
                Some("m".to_string())
            ),
            "{raw}"
        );
    }
}

#[test]
fn config_validation_names_the_bad_value() {
    let check = |configure: &dyn Fn(&mut OpenAICompatibleConfig)| {
        let mut config = OpenAICompatibleConfig::new("gpt-4o-mini", "https://api.openai.com/v1");
        configure(&mut config);
        OpenAICompatible::new(config).unwrap_err().to_string()
    };
    assert_eq!(
        check(&|c| c.model = "  ".into()),
        "model: the model id is empty; name the model to call, e.g. gpt-4o-mini"
    );
    assert_eq!(
        check(&|c| c.base_url = "ftp://example.com".into()),
        "base_url: 'ftp://example.com' is not an http(s) URL; use an http(s) URL such as https://api.openai.com/v1"
    );
    assert_eq!(
        check(&|c| c.base_url = "localhost:8000/v1".into()),
        "base_url: 'localhost:8000/v1' is not an http(s) URL; use an http(s) URL such as https://api.openai.com/v1"
    );
    assert_eq!(
        check(&|c| c.base_url = "api.openai.com/v1".into()),
        "base_url: 'api.openai.com/v1' is not a URL (relative URL without a base); use an http(s) URL such as https://api.openai.com/v1"
    );
    assert_eq!(
        check(&|c| c.timeout = Duration::ZERO),
        "timeout: 0 s would fail every request; use a positive number of seconds"
    );
    assert_eq!(
        check(&|c| c.temperature = Some(f64::NAN)),
        "temperature: NaN is not a temperature; use a number >= 0 such as 0.5"
    );
    assert_eq!(
        check(&|c| c.max_tokens = Some(0)),
        "max_tokens: 0 leaves no room for an answer; use a positive number or leave it unset"
    );
    assert_eq!(
        check(&|c| c.extra_headers = vec![("bad header".into(), "v".into())]),
        "extra_headers: 'bad header' is not a valid HTTP header name"
    );
    assert_eq!(
        check(&|c| c.api_key = Some("sk-line\nbreak".into())),
        "api_key: the key has characters an HTTP header cannot carry (a newline or a control character?)"
    );
    assert_eq!(
        outrider::api::duration_from_secs("timeout", -1.0)
            .unwrap_err()
            .to_string(),
        "timeout: -1 is not a positive number of seconds; use e.g. 120"
    );
    assert_eq!(
        outrider::api::duration_from_secs("timeout", f64::INFINITY)
            .unwrap_err()
            .to_string(),
        "timeout: inf is not a positive number of seconds; use e.g. 120"
    );
}

#[test]
fn debug_output_hides_the_key_and_header_values() {
    let mut config = OpenAICompatibleConfig::new("m", "https://user:pw@example.com/v1");
    config.api_key = Some(KEY.into());
    config.extra_headers = vec![("X-Gateway-Token".into(), "gw-secret-value".into())];
    let shown = format!(
        "{config:?} {:?}",
        OpenAICompatible::new(config.clone()).unwrap()
    );
    assert!(
        !shown.contains(KEY) && !shown.contains("gw-secret-value") && !shown.contains("pw@"),
        "{shown}"
    );
    assert!(shown.contains(r#"api_key: Some("***")"#), "{shown}");
    // The Python repr: credentials masked or left out, Python quoting.
    assert_eq!(
        OpenAICompatible::new(config).unwrap().to_string(),
        "OpenAICompatible(model='m', base_url='https://example.com/v1', api_key='***', timeout=120.0, max_retries=2)"
    );
}

// ---- environment ----

fn lookup_from(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

fn expected(model: &str, base_url: &str, key: Option<&str>) -> OpenAICompatibleConfig {
    let mut config = OpenAICompatibleConfig::new(model, base_url);
    config.api_key = key.map(str::to_owned);
    config
}

#[test]
fn main_route_reads_llm_variables_with_defaults() {
    let env = lookup_from(&[("LLM_MODEL_ID", "gpt-4o-mini"), ("LLM_API_KEY", KEY)]);
    assert_eq!(
        config_from_lookup("LLM", &env).unwrap(),
        Some(expected(
            "gpt-4o-mini",
            "https://api.openai.com/v1",
            Some(KEY)
        ))
    );

    let env = lookup_from(&[
        ("LLM_MODEL_ID", "qwen"),
        ("LLM_BASE_URL", "http://localhost:8000/v1/chat/completions"),
        ("LLM_TIMEOUT", "30.5"),
        ("LLM_MAX_RETRIES", "0"),
    ]);
    let mut want = expected("qwen", "http://localhost:8000/v1", None);
    want.timeout = Duration::from_secs_f64(30.5);
    want.max_retries = 0;
    assert_eq!(config_from_lookup("LLM", &env).unwrap(), Some(want));

    assert_eq!(config_from_lookup("LLM", &lookup_from(&[])).unwrap(), None);
    assert_eq!(
        config_from_lookup("LLM", &lookup_from(&[("LLM_MODEL_ID", "  ")])).unwrap(),
        None
    );
}

#[test]
fn light_route_falls_back_to_the_main_key_and_url() {
    let main = [
        ("LLM_MODEL_ID", "big"),
        ("LLM_API_KEY", "sk-main"),
        ("LLM_BASE_URL", "https://gateway.example/v1"),
        ("LLM_TIMEOUT", "60"),
    ];
    assert_eq!(
        config_from_lookup("LIGHT_LLM", &lookup_from(&main)).unwrap(),
        None
    );

    let mut vars = main.to_vec();
    vars.push(("LIGHT_LLM_MODEL_ID", "small"));
    let mut want = expected("small", "https://gateway.example/v1", Some("sk-main"));
    want.timeout = Duration::from_secs(60);
    want.temperature = Some(0.5);
    assert_eq!(
        config_from_lookup("LIGHT_LLM", &lookup_from(&vars)).unwrap(),
        Some(want.clone())
    );

    vars.extend([
        ("LIGHT_LLM_API_KEY", "sk-light"),
        ("LIGHT_LLM_BASE_URL", "http://127.0.0.1:9000/v1/"),
        ("LIGHT_LLM_TEMPERATURE", "0"),
    ]);
    want.api_key = Some("sk-light".into());
    want.base_url = "http://127.0.0.1:9000/v1".into();
    want.temperature = Some(0.0);
    assert_eq!(
        config_from_lookup("LIGHT_LLM", &lookup_from(&vars)).unwrap(),
        Some(want)
    );
}

#[test]
fn bad_environment_values_name_the_variable_and_value() {
    let fail = |pairs: &[(&str, &str)], prefix: &str| {
        let mut vars = vec![("LLM_MODEL_ID", "m"), ("LIGHT_LLM_MODEL_ID", "s")];
        vars.extend_from_slice(pairs);
        config_from_lookup(prefix, &lookup_from(&vars))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        fail(&[("LLM_TIMEOUT", "abc")], "LLM"),
        "LLM_TIMEOUT: 'abc' is not a number of seconds; set it to a positive number such as 120"
    );
    assert_eq!(
        fail(&[("LLM_TIMEOUT", "0")], "LLM"),
        "LLM_TIMEOUT: 0 is not a positive number of seconds; use e.g. 120"
    );
    assert_eq!(
        fail(&[("LLM_MAX_RETRIES", "-1")], "LIGHT_LLM"),
        "LLM_MAX_RETRIES: '-1' is not a whole number >= 0; set it to the number of retries, such as 2"
    );
    assert_eq!(
        fail(&[("LIGHT_LLM_TEMPERATURE", "warm")], "LIGHT_LLM"),
        "LIGHT_LLM_TEMPERATURE: 'warm' is not a number; use a temperature such as 0.5"
    );
    assert_eq!(
        fail(&[("LLM_BASE_URL", "ftp://x")], "LIGHT_LLM"),
        "LLM_BASE_URL: 'ftp://x' is not an http(s) URL; use an http(s) URL such as https://api.openai.com/v1"
    );
    assert_eq!(
        fail(&[], "llm"),
        "prefix: 'llm' is not a variable prefix; use upper-case letters, digits and _, such as LLM or LIGHT_LLM"
    );
}

#[test]
fn dotenv_text_is_parsed_like_python_dotenv() {
    let text = "\
# a comment

LLM_MODEL_ID=gpt-4o-mini
export LLM_API_KEY = 'sk-single # not a comment'
LLM_BASE_URL=\"http://localhost:8000/v1\"  # trailing comment
LLM_TIMEOUT=30 # seconds
EMPTY=
HASH=abc#def
ESCAPED=\"a\\nb \\\"q\\\"\"
MULTI=\"line one
line two\"
not an assignment
1BAD=x
WINDOWS=crlf\r
LLM_MODEL_ID=later-wins
";
    assert_eq!(
        parse_dotenv(text),
        [
            ("LLM_MODEL_ID", "gpt-4o-mini"),
            ("LLM_API_KEY", "sk-single # not a comment"),
            ("LLM_BASE_URL", "http://localhost:8000/v1"),
            ("LLM_TIMEOUT", "30"),
            ("EMPTY", ""),
            ("HASH", "abc#def"),
            ("ESCAPED", "a\nb \"q\""),
            ("MULTI", "line one\nline two"),
            ("WINDOWS", "crlf"),
            ("LLM_MODEL_ID", "later-wins"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
}

#[test]
fn dotenv_file_fills_in_but_never_overrides_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    std::fs::write(
        &path,
        "PATH=/from/dotenv\nOUTRIDER_TEST_ONLY_IN_DOTENV=yes\nLLM_MODEL_ID=from-file\nLLM_MODEL_ID=second\nLLM_API_KEY=k\n",
    )
    .unwrap();
    let dotenv = load_dotenv(&path);

    assert_eq!(env_or_dotenv("PATH", &dotenv), std::env::var("PATH").ok());
    assert_eq!(
        env_or_dotenv("OUTRIDER_TEST_ONLY_IN_DOTENV", &dotenv),
        Some("yes".into())
    );
    assert_eq!(
        config_from_lookup("LLM", &|name| dotenv
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone()))
        .unwrap()
        .map(|c| c.model),
        Some("second".into())
    );
    assert_eq!(load_dotenv(&dir.path().join("missing.env")), vec![]);
}

#[test]
fn error_type_is_the_core_invalid_argument() {
    let err = config_from_lookup(
        "LLM",
        &lookup_from(&[("LLM_MODEL_ID", "m"), ("LLM_TIMEOUT", "x")]),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { ref field, .. } if field == "LLM_TIMEOUT"));
}

/// The time left in a message such as `... but the run has 2.9 s left`.
fn seconds_left(message: &str) -> f64 {
    let tail = message.rsplit("the run has ").next().unwrap_or_default();
    tail.trim_end_matches(" s left").parse().unwrap_or(f64::NAN)
}

/// One call with a 3 s deadline to a server that first answers `status` with `Retry-After:
/// retry_after` and `body`, then a completion saying `then`: the outcome, how long the call
/// took, and the server (for its endpoint and requests).
async fn call_throttled(
    status: u16,
    retry_after: &str,
    body: String,
    then: &str,
) -> (Result<ChatResponse, ModelError>, Duration, Server) {
    let server = Server::start(vec![
        Step::Reply(status, vec![("Retry-After", retry_after.into())], body),
        json_reply(200, completion(then)),
    ])
    .await;
    let model = server.model(|_| {});
    let started = Instant::now();
    let request = ChatRequest {
        deadline: Some(started + Duration::from_secs(3)),
        run: None,
        settings: None,
        ..simple_request()
    };
    let out = model.complete(&request).await;
    (out, started.elapsed(), server)
}

#[tokio::test]
async fn a_retry_after_in_seconds_beyond_the_deadline_ends_the_call_at_once() {
    let (err, elapsed, server) = call_throttled(
        429,
        "99999",
        json!({"error": {"message": "slow down"}}).to_string(),
        "too late",
    )
    .await;
    let err = err.unwrap_err();

    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}"); // far below the 3 s deadline, on a loaded CI host too
    let left = seconds_left(&err.message);
    assert!((2.0..=3.0).contains(&left), "{}", err.message);
    assert_eq!(
        err,
        error(
            ModelErrorKind::RateLimit,
            Some(429),
            format!(
                "{} answered HTTP 429 (rate limited): slow down; the provider asked to wait 99999 s (Retry-After) but the run has {left:.1} s left",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_ends_a_call_without_a_deadline_at_once() {
    // Called directly (no run deadline), with retries left: it waited 60 s per retry.
    let server = Server::start(vec![
        Step::Reply(
            429,
            vec![("Retry-After", "99999".into())],
            json!({"error": {"message": "slow down"}}).to_string(),
        ),
        json_reply(200, completion("too late")),
    ])
    .await;
    let model = server.model(|c| {
        c.timeout = Duration::from_secs(3);
        c.max_retries = 2;
    });
    let started = Instant::now();
    let err = model.complete(&simple_request()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err,
        error(
            ModelErrorKind::RateLimit,
            Some(429),
            format!(
                "{} answered HTTP 429 (rate limited): slow down; the provider asked to wait 99999 s (Retry-After), more than the 60 s a retry waits at most",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_date_beyond_the_deadline_ends_the_call_at_once() {
    let (err, elapsed, server) = call_throttled(
        503,
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "down for maintenance".into(),
        "too late",
    )
    .await;
    let err = err.unwrap_err();

    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}"); // far below the 3 s deadline, on a loaded CI host too
    let left = seconds_left(&err.message);
    assert_eq!(
        err,
        error(
            ModelErrorKind::RateLimit,
            Some(503),
            format!(
                "{} answered HTTP 503: down for maintenance; the provider asked to wait practically forever (Retry-After) but the run has {left:.1} s left",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_within_the_deadline_is_waited_out() {
    let (response, elapsed, _server) = call_throttled(
        429,
        "1",
        json!({"error": {"message": "slow down"}}).to_string(),
        "after the wait",
    )
    .await;
    let response = response.unwrap();

    assert!(elapsed >= Duration::from_secs(1));
    assert_eq!(response, final_answer("after the wait"));
}

#[test]
fn a_child_throttled_past_its_deadline_fails_at_once_as_rate_limited() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(Server::start(vec![Step::Reply(
        429,
        vec![("Retry-After", "99999".into())],
        json!({"error": {"message": "slow down"}}).to_string(),
    )]));
    let dir = tempfile::tempdir().unwrap();
    let launcher = outrider::SubagentLauncher::new(
        dir.path(),
        outrider::LauncherOptions {
            main_model: Some(Arc::new(server.model(|_| {}))),
            trace_dir: outrider::TraceDirSetting::Off,
            profiles: vec![outrider::RuntimeProfile {
                timeout_seconds: 3.0,
                ..outrider::explore_profile()
            }],
            ..Default::default()
        },
    )
    .unwrap();
    let started = Instant::now();

    let result = rt
        .block_on(launcher.launch(
            outrider::SubagentRequest::explore("find main"),
            outrider::CancelToken::new(),
        ))
        .unwrap();

    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (
            result.status,
            result.terminal_reason,
            result.failure_reason,
            result.model_calls
        ),
        (
            outrider::SubagentStatus::Failed,
            outrider::TerminalReason::RuntimeError,
            Some(outrider::TerminalReason::RateLimited),
            1
        )
    );
    let error = result.error.unwrap();
    assert!(
        error.starts_with("child terminal reason: rate_limited: rate_limit error: ")
            && error.contains("the provider asked to wait 99999 s (Retry-After)"),
        "{error}"
    );
}

#[tokio::test]
async fn an_echoed_key_never_reaches_the_launch_result_or_the_traces() {
    // A configured key of no known shape, and a credential-shaped one the server adds.
    const PLAIN_KEY: &str = "plain-configured-key-0123";
    const OTHER: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let server = Server::start(vec![json_reply(
        401,
        json!({"error": {"message": format!("key {PLAIN_KEY} refused; try {OTHER}")}}),
    )])
    .await;
    let model = server.model(|c| c.api_key = Some(PLAIN_KEY.into()));
    let out = tempfile::tempdir().unwrap();
    let root = out.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let launcher = outrider::SubagentLauncher::new(
        &root,
        outrider::LauncherOptions {
            main_model: Some(Arc::new(model)),
            trace_dir: outrider::TraceDirSetting::Dir(out.path().join("traces")),
            parent_trace: Some(out.path().join("parent.jsonl")),
            ..Default::default()
        },
    )
    .unwrap();
    let result = launcher
        .launch(
            outrider::SubagentRequest::explore("find main"),
            outrider::api::CancelToken::new(),
        )
        .await
        .unwrap();
    let error = result.error.clone().unwrap();
    assert!(
        error.contains("HTTP 401: key [REDACTED] refused; try gh*_***"),
        "{error}"
    );
    let child = std::fs::read_to_string(result.trace_path.as_ref().unwrap()).unwrap();
    let parent = std::fs::read_to_string(out.path().join("parent.jsonl")).unwrap();
    assert!(child.contains("model_error"), "{child}");
    for text in [&error, &child, &parent, &format!("{result:?} {launcher:?}")] {
        assert!(!text.contains(PLAIN_KEY) && !text.contains(OTHER), "{text}");
    }
}

// --- The HTTP fault suite: hostile and broken servers -------------------------------------------

/// A response head announcing a JSON body of `length` bytes (or none: read until close).
fn head(status: u16, length: Option<usize>, extra: &str) -> String {
    let length = length.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
    format!("HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\n{length}{extra}Connection: close\r\n\r\n")
}

/// A 100 MiB body of spaces, sent in 1 MiB writes, with or without a Content-Length.
fn hundred_mib(with_length: bool) -> Step {
    Step::Stream {
        head: head(200, with_length.then_some(100 << 20), ""),
        chunk: vec![b' '; 1 << 20],
        times: 100,
        pause: Duration::ZERO,
    }
}

/// The first 20 bytes of a completion whose head announces all of it.
fn truncated_completion() -> Vec<u8> {
    let body = completion("cut short").to_string();
    let mut bytes = head(200, Some(body.len()), "").into_bytes();
    bytes.extend_from_slice(&body.as_bytes()[..20]);
    bytes
}

#[tokio::test]
async fn a_body_announced_over_the_size_cap_is_refused_without_reading_it() {
    let server = Server::start(vec![hundred_mib(true)]).await;
    let model = server.model(|_| {});
    let started = Instant::now();

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err,
        error(
            ModelErrorKind::BadResponse,
            Some(200),
            format!(
                "{} answered HTTP 200 with a 104857600-byte body (Content-Length), over the 8 MiB limit; refused without reading it",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_body_streaming_past_the_size_cap_is_cut_off_there() {
    let server = Server::start(vec![hundred_mib(false)]).await;
    let model = server.model(|_| {});

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!(
        err,
        error(
            ModelErrorKind::BadResponse,
            Some(200),
            format!(
                "{} answered HTTP 200 with a body over the 8 MiB limit; stopped reading it there",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(outrider::api::MAX_RESPONSE_BYTES, 8 << 20);
}

#[tokio::test]
async fn a_body_just_under_the_size_cap_is_read() {
    // The cap refuses only what is over it: a completion padded to the limit still parses.
    let body = completion("padded").to_string();
    let padded = format!(
        "{body}{}",
        " ".repeat(outrider::api::MAX_RESPONSE_BYTES - body.len())
    );
    let server = Server::start(vec![Step::Reply(200, vec![], padded)]).await;
    let model = server.model(|_| {});

    let response = model.complete(&simple_request()).await.unwrap();

    assert_eq!(response, final_answer("padded"));
}

#[tokio::test]
async fn an_error_body_is_read_only_up_to_its_cap() {
    // A 429 with a 100 MiB body is still a retryable rate limit; only its start is read.
    let server = Server::start(vec![
        Step::Stream {
            head: head(429, Some(100 << 20), "Retry-After: 0\r\n"),
            chunk: vec![b' '; 1 << 20],
            times: 100,
            pause: Duration::ZERO,
        },
        json_reply(200, completion("after the flood")),
    ])
    .await;
    let model = server.model(|_| {});

    let response = model.complete(&simple_request()).await.unwrap();

    assert_eq!(response, final_answer("after the flood"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_compressed_body_is_refused_and_never_asked_for() {
    // A gzip bomb: a few bytes that would inflate to gigabytes if anything decoded them.
    let bomb: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff\xed\xc1\x01\x0d\x00\x00\x00";
    let mut bytes = head(200, Some(bomb.len()), "Content-Encoding: gzip\r\n").into_bytes();
    bytes.extend_from_slice(bomb);
    let server = Server::start(vec![Step::Raw(bytes)]).await;
    let model = server.model(|_| {});

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!(
        err,
        error(
            ModelErrorKind::BadResponse,
            Some(200),
            format!(
                "{} answered HTTP 200 with a body in Content-Encoding 'gzip', which outrider does not ask for or decode; refused without reading it",
                server.endpoint()
            )
        )
    );
    assert_eq!(server.requests()[0].header("accept-encoding"), None);
}

#[tokio::test]
async fn redirects_are_reported_not_followed_so_the_key_stays_home() {
    for status in [301, 302, 303, 307, 308] {
        let elsewhere = Server::start(vec![json_reply(200, completion("followed"))]).await;
        let target = elsewhere.endpoint();
        let server = Server::start(vec![Step::Reply(
            status,
            vec![("Location", target.clone())],
            String::new(),
        )])
        .await;
        let model = server.model(|_| {});

        let err = model.complete(&simple_request()).await.unwrap_err();

        assert_eq!(
            err,
            error(
                ModelErrorKind::InvalidRequest,
                Some(status),
                format!(
                    "{} answered HTTP {status}, a redirect to {target}; set the base URL to where it points",
                    server.endpoint()
                )
            )
        );
        assert_eq!(server.requests().len(), 1, "HTTP {status}");
        assert_eq!(elsewhere.requests().len(), 0, "HTTP {status} was followed");
    }
}

#[tokio::test]
async fn a_reset_or_truncated_answer_is_retried_then_succeeds() {
    let server = Server::start(vec![
        Step::Reset(truncated_completion()),
        Step::Raw(truncated_completion()),
        json_reply(200, completion("third time")),
    ])
    .await;
    let model = server.model(|_| {});

    let response = model.complete(&simple_request()).await.unwrap();

    assert_eq!(response, final_answer("third time"));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_truncated_answer_past_the_retries_is_a_connection_error() {
    let server = Server::start(vec![Step::Raw(truncated_completion())]).await;
    let model = server.model(|c| c.max_retries = 0);

    let err = model.complete(&simple_request()).await.unwrap_err();

    assert_eq!((err.kind, err.status), (ModelErrorKind::Connection, None));
    assert!(
        err.message
            .starts_with(&format!("the request to {} failed: ", server.endpoint()))
            && err.message.contains("error reading a body from connection"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_body_trickling_at_one_byte_a_second_hits_the_timeout() {
    let body = completion("slowly").to_string();
    let server = Server::start(vec![Step::Stream {
        head: head(200, Some(body.len()), ""),
        chunk: b" ".to_vec(),
        times: body.len(),
        pause: Duration::from_secs(1),
    }])
    .await;
    let model = server.model(|c| {
        c.timeout = Duration::from_millis(1500);
        c.max_retries = 0;
    });
    let started = Instant::now();

    let err = model.complete(&simple_request()).await.unwrap_err();

    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_eq!(
        err,
        error(
            ModelErrorKind::Timeout,
            None,
            format!(
                "no complete answer from {} within 1.5 s (the timeout); raise it if the model is slow",
                server.endpoint()
            )
        )
    );
}

/// One fault case run through a whole launch: the server's script, the launch's
/// `timeout_seconds`, and what the result must say.
struct Fault {
    name: &'static str,
    script: Vec<Step>,
    timeout_seconds: f64,
    status: outrider::SubagentStatus,
    reason: Option<outrider::TerminalReason>,
    /// A fragment of the result's error (None: no error).
    error: Option<&'static str>,
}

fn fault(
    name: &'static str,
    script: Vec<Step>,
    timeout_seconds: f64,
    reason: Option<outrider::TerminalReason>,
    error: Option<&'static str>,
) -> Fault {
    let status = if reason.is_none() {
        outrider::SubagentStatus::Completed
    } else {
        outrider::SubagentStatus::Failed
    };
    Fault {
        name,
        script,
        timeout_seconds,
        status,
        reason,
        error,
    }
}

/// A case whose launch reaches its wall-clock limit: partial, with the index's leads, the
/// limit named in its open questions.
fn with_leads(name: &'static str, script: Vec<Step>, timeout_seconds: f64) -> Fault {
    Fault {
        status: outrider::SubagentStatus::Partial,
        ..fault(name, script, timeout_seconds, None, None)
    }
}

/// What one launch against a faulty server gave: the case's name, the time past its limit.
async fn run_fault(case: Fault) -> (String, f64) {
    let server = Server::start(case.script).await;
    let model = server.model(|_| {});
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "def main():\n    pass\n").unwrap();
    let launcher = outrider::SubagentLauncher::new(
        dir.path(),
        outrider::LauncherOptions {
            main_model: Some(Arc::new(model)),
            trace_dir: outrider::TraceDirSetting::Dir(dir.path().join("../traces")),
            profiles: vec![outrider::RuntimeProfile {
                timeout_seconds: case.timeout_seconds,
                ..outrider::explore_profile()
            }],
            ..Default::default()
        },
    )
    .unwrap();
    let started = Instant::now();
    let result = launcher
        .launch(
            outrider::SubagentRequest::explore("find main"),
            outrider::CancelToken::new(),
        )
        .await
        .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    let name = case.name;
    assert!(
        elapsed <= case.timeout_seconds + 0.5,
        "{name}: {elapsed:.2} s under a {} s limit",
        case.timeout_seconds
    );
    let (status, reason) = (result.status, result.failure_reason);
    // A case that expects the leads: when the index's search did not finish within its share
    // of a 1 s limit (a loaded machine), there are none, and the child fails on the clock.
    let no_leads = case.status == outrider::SubagentStatus::Partial
        && (status, reason)
            == (
                outrider::SubagentStatus::Failed,
                Some(outrider::TerminalReason::Timeout),
            );
    if no_leads {
        let error = result.error.as_deref().unwrap_or_default();
        assert!(error.contains("wall-clock limit"), "{name}: {error}");
        return (name.to_string(), elapsed - case.timeout_seconds);
    }
    assert_eq!(
        (status, reason),
        (case.status, case.reason),
        "{name}: {:?}",
        result.error
    );
    match (case.error, result.error.as_deref()) {
        (None, None) => {}
        (Some(want), Some(got)) => assert!(got.contains(want), "{name}: {got}"),
        (want, got) => panic!("{name}: error {got:?}, expected {want:?}"),
    }
    if case.status == outrider::SubagentStatus::Partial {
        let Some(outrider::api::ParsedResult::Explore(r)) = &result.result else {
            panic!("{name}: no explore result: {result:?}")
        };
        assert!(
            r.evidence_sources.iter().all(|s| s == "index")
                && r.unresolved_questions
                    .iter()
                    .any(|q| q.contains("wall-clock limit")),
            "{name}: {r:?}"
        );
    }
    let trace = std::fs::read_to_string(result.trace_path.as_ref().unwrap()).unwrap();
    let shown = format!("{result:?} {launcher:?} {trace}");
    assert!(!shown.contains(KEY), "{name}: the key leaked: {shown}");
    (name.to_string(), elapsed - case.timeout_seconds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_fault_ends_a_launch_within_its_limit_with_a_clear_reason() {
    use outrider::TerminalReason::{ModelError as Model, RateLimited};
    let answer = || {
        json_reply(
            200,
            completion(
                r#"{"status": "completed", "summary": "main is in a.py", "evidence": ["a.py:1"]}"#,
            ),
        )
    };
    // An honest child reads before it answers: the first success is a Read of a.py.
    let read_a = || {
        json_reply(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\": \"a.py\"}"}}
            ]}, "finish_reason": "tool_calls"}]}),
        )
    };
    let throttled = |after: &str| {
        Step::Reply(
            429,
            vec![("Retry-After", after.into())],
            json!({"error": {"message": "slow down"}}).to_string(),
        )
    };
    let always = |step: Step| vec![step; 3];
    // The limit of the cases that must end by their own error, not by the clock: roomy, so
    // that a loaded CI machine does not turn them into timeouts.
    const ROOMY: f64 = 10.0;
    let echo = json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}});
    let cases = vec![
        fault(
            "429, Retry-After 1",
            vec![throttled("1"), read_a(), answer()],
            ROOMY,
            None,
            None,
        ),
        fault(
            "429, Retry-After 99999",
            vec![throttled("99999")],
            3.0,
            Some(RateLimited),
            Some("asked to wait 99999 s"),
        ),
        fault(
            "429, Retry-After date",
            vec![throttled("Fri, 31 Dec 9999 23:59:59 GMT")],
            3.0,
            Some(RateLimited),
            Some("practically forever"),
        ),
        fault(
            "5xx burst then success",
            vec![
                json_reply(500, json!({})),
                Step::Reply(502, vec![("Retry-After", "0".into())], "bad gateway".into()),
                read_a(),
                answer(),
            ],
            ROOMY,
            None,
            None,
        ),
        fault(
            "5xx past the retries",
            always(json_reply(503, json!({"error": "overloaded"}))),
            ROOMY,
            Some(Model),
            Some("HTTP 503: overloaded"),
        ),
        fault(
            "401 echoing the key",
            vec![json_reply(401, echo)],
            ROOMY,
            Some(Model),
            Some("auth error: "),
        ),
        fault(
            "403",
            vec![json_reply(403, json!({"error": "forbidden"}))],
            ROOMY,
            Some(Model),
            Some("HTTP 403: forbidden; check the API key"),
        ),
        fault(
            "404",
            vec![json_reply(404, json!({"error": "no such model"}))],
            ROOMY,
            Some(Model),
            Some("HTTP 404: no such model; check the base URL"),
        ),
        // A run that reaches its limit returns the index's leads as a partial answer, saying
        // why in its open questions.
        with_leads("hang", always(Step::Hang), 1.0),
        fault(
            "reset then success",
            vec![Step::Reset(truncated_completion()), read_a(), answer()],
            ROOMY,
            None,
            None,
        ),
        fault(
            "reset past the retries",
            always(Step::Reset(truncated_completion())),
            ROOMY,
            Some(Model),
            Some("connection error: "),
        ),
        fault(
            "truncated past the retries",
            always(Step::Raw(truncated_completion())),
            ROOMY,
            Some(Model),
            Some("connection error: "),
        ),
        fault(
            "non-JSON body",
            vec![Step::Reply(200, vec![], "<html>login</html>".into())],
            ROOMY,
            Some(Model),
            Some("not JSON"),
        ),
        fault(
            "choices: []",
            vec![json_reply(200, json!({"choices": []}))],
            ROOMY,
            Some(Model),
            Some("model response has no choices"),
        ),
        fault(
            "100 MiB body",
            vec![hundred_mib(true)],
            ROOMY,
            Some(Model),
            Some("over the 8 MiB limit"),
        ),
        fault(
            "100 MiB body, no length",
            vec![hundred_mib(false)],
            ROOMY,
            Some(Model),
            Some("over the 8 MiB limit"),
        ),
        with_leads(
            "1 byte/s trickle",
            vec![Step::Stream {
                head: head(200, Some(400), ""),
                chunk: b" ".to_vec(),
                times: 400,
                pause: Duration::from_secs(1),
            }],
            1.0,
        ),
        fault(
            "307 to another port",
            vec![Step::Reply(
                307,
                vec![("Location", "http://127.0.0.1:9/v1/chat/completions".into())],
                String::new(),
            )],
            ROOMY,
            Some(Model),
            Some("a redirect to http://127.0.0.1:9/v1/chat/completions"),
        ),
        fault(
            "gzip bomb",
            vec![Step::Raw(
                format!(
                    "{}\x1f\u{8b}",
                    head(200, Some(3), "Content-Encoding: gzip\r\n")
                )
                .into_bytes(),
            )],
            ROOMY,
            Some(Model),
            Some("Content-Encoding 'gzip'"),
        ),
    ];
    let count = cases.len();
    let handles: Vec<_> = cases
        .into_iter()
        .map(|c| tokio::spawn(run_fault(c)))
        .collect();
    let mut worst = (String::new(), f64::MIN);
    for handle in handles {
        let (name, past) = handle.await.unwrap();
        if past > worst.1 {
            worst = (name, past);
        }
    }
    assert_eq!(count, 19);
    // The figure the README quotes: the worst time a launch ran past its limit (negative: within).
    eprintln!(
        "http faults: {count} launches, worst past the limit: {:+.2} s ({})",
        worst.1, worst.0
    );
}

fn dotenv_at(path: &str, pairs: &[(&str, &str)]) -> outrider::api::DotEnv {
    outrider::api::DotEnv {
        path: path.into(),
        pairs: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

#[test]
fn a_key_goes_only_to_the_base_url_set_beside_it() {
    use outrider::api::config_from_sources;
    let env = lookup_from(&[("LLM_MODEL_ID", "m"), ("LLM_API_KEY", "user-key")]);
    // The environment's key with a .env's base URL: refused, naming both places, not the key.
    let file = dotenv_at("/work/.env", &[("LLM_BASE_URL", "http://other.example/v1")]);
    let err = config_from_sources("LLM", &env, Some(&file))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("LLM_BASE_URL: http://other.example/v1 is set in /work/.env but LLM_API_KEY in the environment;"),
        "{err}"
    );
    assert!(!err.contains("user-key"));
    // The default base URL goes with a key from anywhere; a .env's key with its own URL too.
    let config = config_from_sources("LLM", &env, None).unwrap().unwrap();
    assert_eq!(config.api_key.as_deref(), Some("user-key"));
    assert_eq!(config.env_file, None);
    let file = dotenv_at(
        "/work/.env",
        &[
            ("LLM_API_KEY", "their-key"),
            ("LLM_BASE_URL", "http://theirs.example/v1"),
        ],
    );
    let config = config_from_sources("LLM", &lookup_from(&[("LLM_MODEL_ID", "m")]), Some(&file))
        .unwrap()
        .unwrap();
    assert_eq!(
        (config.api_key.as_deref(), config.base_url.as_str()),
        (Some("their-key"), "http://theirs.example/v1")
    );
    assert_eq!(config.env_file, Some("/work/.env".into()));
}

#[test]
fn the_light_route_borrows_the_main_key_only_for_the_main_base_url() {
    use outrider::api::config_from_sources;
    let env = lookup_from(&[
        ("LLM_MODEL_ID", "m"),
        ("LLM_API_KEY", "user-key"),
        ("LLM_BASE_URL", "http://user.example/v1"),
    ]);
    // A .env that adds a light route at another host: no key goes there.
    let file = dotenv_at(
        "/work/.env",
        &[
            ("LIGHT_LLM_MODEL_ID", "x"),
            ("LIGHT_LLM_BASE_URL", "http://other.example/v1"),
        ],
    );
    // (and a light route with no key for a server that needs one is refused before any call)
    let refused = config_from_sources("LIGHT_LLM", &env, Some(&file)).unwrap_err();
    assert!(
        refused.to_string().starts_with(
            "LIGHT_LLM settings: LIGHT_LLM_API_KEY is not set (nor LLM_API_KEY for the same base \
             URL), and the server at http://other.example/v1 is not on this machine"
        ),
        "{refused}"
    );
    // The same host as the main route, spelled with a trailing slash: the key is lent.
    let file = dotenv_at(
        "/work/.env",
        &[
            ("LIGHT_LLM_MODEL_ID", "x"),
            ("LIGHT_LLM_BASE_URL", "http://user.example/v1/"),
        ],
    );
    let light = config_from_sources("LIGHT_LLM", &env, Some(&file))
        .unwrap()
        .unwrap();
    assert_eq!(light.api_key.as_deref(), Some("user-key"));
    // With the default base URL for main, a .env's light URL still gets no key.
    let env = lookup_from(&[("LLM_MODEL_ID", "m"), ("LLM_API_KEY", "user-key")]);
    let file = dotenv_at(
        "/work/.env",
        &[
            ("LIGHT_LLM_MODEL_ID", "x"),
            ("LIGHT_LLM_BASE_URL", "http://other.example/v1"),
        ],
    );
    let refused = config_from_sources("LIGHT_LLM", &env, Some(&file)).unwrap_err();
    assert!(refused.to_string().contains("LIGHT_LLM_API_KEY is not set"));
}

#[test]
fn a_dotenv_that_is_not_a_small_regular_file_is_refused_unread() {
    use outrider::api::{read_env_file, EnvFile, MAX_DOTENV_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.env");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let big = dir.path().join("big.env");
    std::fs::write(&big, vec![b'#'; MAX_DOTENV_BYTES as usize + 1]).unwrap();
    for (path, why) in [
        (fifo.clone(), "it is not a regular file"),
        ("/dev/zero".into(), "it is not a regular file"),
        (dir.path().to_path_buf(), "it is not a regular file"),
        (big.clone(), "over the 1048576-byte limit"),
    ] {
        let err = read_env_file(&EnvFile::Path(path.clone()), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("env_file: {}: ", path.display())) && err.contains(why),
            "{err}"
        );
    }
    assert_eq!(read_env_file(&EnvFile::Off, None).unwrap(), None);
}
