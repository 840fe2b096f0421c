#![no_main]
//! Globs, as Glob's pattern and Grep's glob filter: a listing or a clear error, never a panic,
//! never a path outside the root.

use libfuzzer_sys::fuzz_target;
use outrider::api::{run_tool, ToolArgs};
use serde_json::json;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(glob) = std::str::from_utf8(data) else {
        return;
    };
    let calls = [
        (
            "Glob",
            json!({"pattern": glob, "include_hidden": true, "include_ignored": true}),
        ),
        (
            "Grep",
            json!({"pattern": "e", "glob": glob, "output_mode": "files_with_matches"}),
        ),
    ];
    for (name, args) in calls {
        let envelope = run_tool(common::root(), name, ToolArgs::Json(outrider::api::Json::from_value(&args)), None, Some(2.0))
            .expect("run_tool with a good root, mode and timeout");
        common::assert_no_secret(&envelope.to_string(), glob);
        for path in envelope["data"]["paths"].as_array().into_iter().flatten() {
            let path = path.as_str().expect("paths are strings");
            assert!(
                !path.starts_with('/') && !path.split('/').any(|c| c == ".."),
                "{path}"
            );
            assert!(
                !path.starts_with("link_dir_out/"),
                "listed through a link out: {path}"
            );
        }
        if envelope["status"] == "error" {
            assert!(envelope["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()));
        }
    }
});
