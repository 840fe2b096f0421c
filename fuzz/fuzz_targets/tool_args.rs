#![no_main]
//! Tool arguments as a model sends them (JSON text) to Read, Grep and Glob on a hostile tree:
//! an envelope every time, never a panic, never outside data.

use libfuzzer_sys::fuzz_target;
use outrider::api::{run_tool, ToolArgs};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let name = ["Read", "Grep", "Glob"][usize::from(which) % 3];
    let envelope = run_tool(
        common::root(),
        name,
        ToolArgs::Text(text.into()),
        None,
        Some(2.0),
    )
    .expect("run_tool with a good root, mode and timeout");
    let status = envelope["status"].as_str().expect("status");
    assert!(
        ["success", "partial", "error"].contains(&status),
        "{envelope}"
    );
    common::assert_no_secret(&envelope.to_string(), text);
});
