//! A small hostile tree shared by the tool targets: a secret beside the root, symlinks out of
//! it, a loop and a FIFO. Nothing a target returns may name or hold the secret.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Planted outside the root; found in any output, it is an escape.
pub const SECRET: &str = "FUZZ-OUTSIDE-SECRET-41d7";

/// The root of the tree, built once per process.
pub fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("outrider-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::create_dir_all(base.join(format!("out-{SECRET}"))).unwrap();
        std::fs::write(base.join(format!("out-{SECRET}/{SECRET}.txt")), SECRET).unwrap();
        std::fs::write(base.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(root.join("README.md"), "# demo\nline two\n").unwrap();
        std::fs::write(root.join("src/main.py"), "def main():\n    return 1\n").unwrap();
        std::fs::write(root.join("src/pkg/util.rs"), "fn util() {}\n").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("ignored.txt"), "ignored\n").unwrap();
        symlink("../secret.txt", root.join("link_file_out")).unwrap();
        symlink(format!("../out-{SECRET}"), root.join("link_dir_out")).unwrap();
        symlink("..", root.join("src/pkg/up")).unwrap();
        symlink("../../..", root.join("src/pkg/upup")).unwrap();
        symlink("loop_b", root.join("loop_a")).unwrap();
        symlink("loop_a", root.join("loop_b")).unwrap();
        symlink("/dev/zero", root.join("zero")).unwrap();
        let fifo = std::ffi::CString::new(root.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc_mkfifo(fifo.as_ptr(), 0o600) };
        root
    })
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

/// Panic (a finding) if `text` holds the secret, after removing what the input itself said.
pub fn assert_no_secret(text: &str, input: &str) {
    let cleaned = text.replace(input, "");
    let escaped = serde_json::to_string(input).unwrap_or_default();
    let cleaned = cleaned.replace(escaped.trim_matches('"'), "");
    assert!(
        !cleaned.contains(SECRET) || input.contains("SECRET"),
        "outside data in the output for input {input:?}: {text}"
    );
}
