#![no_main]
//! Path resolution: whatever the spelling, a resolved path is under the root (and its relative
//! form has no `..`), and the evidence check agrees that nothing outside can be cited.

use libfuzzer_sys::fuzz_target;
use outrider::Workspace;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(requested) = std::str::from_utf8(data) else {
        return;
    };
    let ws = Workspace::new(common::root()).expect("the fuzz root");
    if let Ok(resolved) = ws.resolve(requested) {
        assert!(
            resolved.path.starts_with(ws.root()),
            "{requested:?} -> {resolved:?}"
        );
        assert!(
            !resolved.relative.split('/').any(|c| c == ".."),
            "{resolved:?}"
        );
        assert!(!resolved.relative.starts_with('/'), "{resolved:?}");
    }
    let checks = outrider::check_evidence(&ws, &[format!("{requested}:1")]);
    let shown = format!("{checks:?}");
    common::assert_no_secret(&shown, requested);
});
