//! The one trait every read-only tool implements; the registry runs tools only through it.

use serde_json::Value;

use crate::tools::context::ToolContext;
use crate::tools::envelope::ToolResult;

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (`Read`).
    fn name(&self) -> &'static str;
    /// What it does and how to use it well, written for the model.
    fn description(&self) -> std::borrow::Cow<'static, str>;
    /// The JSON schema of its arguments (an object schema, `additionalProperties: false`).
    fn parameters(&self) -> Value;
    /// Run one call. `args` is the argument object as the model sent it.
    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult;
}
