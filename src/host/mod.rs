//! What an embedding host (the Python binding) needs around the core, as host-neutral mechanism
//! with Rust tests: a barrier threads pass to enter a host that may shut down, blocking on the
//! runtime while listening for interrupts, models that answer through a host callback, and the
//! core's log records forwarded to the host's logging.

pub(crate) mod block;
pub(crate) mod callback;
pub(crate) mod exit;
pub mod log;
