//! The model side: the [`ChatModel`] trait every backend implements, and the OpenAI
//! chat-completions shaped requests and responses it trades in.
//!
//! The parts live in their own files: [`message`] (the conversation), [`request`] (one call),
//! [`wire`] (the one OpenAI JSON encoder of a request, and its decoder), [`response`] (the
//! normaliser of a backend's answer), [`error`] (how a call fails), [`openai`] (the built-in HTTP
//! client). Their types are re-exported here.

pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod message;
pub(crate) mod openai;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod scout;
pub(crate) mod settings;
pub(crate) mod wire;

pub use error::{ModelError, ModelErrorKind};
pub use message::{Message, ToolCall, Usage};
pub(crate) use request::{estimate_tokens, ChatRequest, ModelSettings};
pub use response::ChatResponse;
pub(crate) use wire::WireOptions;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A chat model: anything that turns a [`ChatRequest`] into a [`ChatResponse`].
///
/// Implementations must not block the async runtime: blocking work belongs in
/// `tokio::task::spawn_blocking`.
pub trait ChatModel: Send + Sync {
    /// Make one call.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;

    /// The model id sent in requests, when the backend has one.
    fn model_id(&self) -> Option<String> {
        None
    }

    /// The settings sent with every request (see [`settings::Configured`]).
    fn settings(&self) -> Option<std::sync::Arc<ModelSettings>> {
        None
    }

    /// A short description for traces and messages (`openai-compatible gpt-4o-mini`, ...).
    fn describe(&self) -> String;

    /// The route name to report instead of `light`/`main` (the offline scout says `offline`).
    fn route_label(&self) -> Option<&'static str> {
        None
    }
}
