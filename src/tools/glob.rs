//! Glob: find files by name pattern, or list one directory.
//!
//! With a `pattern`, the tree under `path` is walked (in parallel) and every file whose path
//! relative to `path` matches is returned; `*` and `?` do not cross `/`, `**/` matches zero or more
//! directories, and `[a-z]` ranges and `{a,b}` braces work. Without a pattern, the entries of
//! `path` itself are listed; as in the reference, a directory's path has no trailing `/`, and
//! `data.directories` names the listed entries that are directories (so they can still be told
//! apart). Results are sorted by code point and cut to `limit`.
//!
//! ```
//! use outrider::api::{ToolContext, GlobTool, Tool, Workspace};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join("src")).unwrap();
//! std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
//! std::fs::write(dir.path().join("build.rs"), "").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let r = GlobTool.run(&ctx, &json!({"pattern": "**/*.rs"}));
//! assert_eq!(r.data["paths"], json!(["build.rs", "src/main.rs"]));
//! let r = GlobTool.run(&ctx, &json!({}));
//! assert_eq!(r.data["paths"], json!(["build.rs", "src"]));
//! assert_eq!(r.data["directories"], json!(["src"]));
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use globset::GlobMatcher;
use serde_json::{json, Map, Value};

use super::context::{Interrupt, ToolContext};
use super::envelope::{elapsed_ms, ErrorCode, ToolResult};
use super::globs::build_glob;
use super::params;
use super::tool::Tool;
use super::walk::{
    self, Entry, Kind, Visit, Walk, WalkRules, DEFAULT_RESULT_LIMIT, MAX_RESULT_LIMIT,
};

const ACCEPTED: [&str; 5] = [
    "path",
    "pattern",
    "limit",
    "include_hidden",
    "include_ignored",
];

/// The Glob tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

impl Tool for GlobTool {
    fn name(&self) -> &'static str {
        "Glob"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Find files by glob pattern, or list a directory. With `pattern`, returns the files under \
         `path` whose path relative to `path` matches: '*' and '?' stay within one folder, '**/' \
         spans any number of folders (so '**/*.py' finds Python files at any depth, '*.py' only \
         directly in `path`), and [a-z] ranges and {a,b} braces work. Without `pattern`, lists \
         the entries of `path` (not recursive); `directories` names the folders among them. Paths are relative to the \
         project root, sorted, at most `limit` (default 100, max 200); more make the result \
         partial. Hidden, .gitignore'd and build/dependency folders are skipped unless \
         include_hidden / include_ignored."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob matched against file paths relative to `path`, e.g. '**/*.py', 'src/**/test_*.rs', '*.{json,yaml}'. Omit to list the directory."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search or list, relative to the project root.",
                    "default": "."
                },
                "limit": {
                    "type": "integer",
                    "description": "Most paths to return.",
                    "default": DEFAULT_RESULT_LIMIT,
                    "minimum": 1,
                    "maximum": MAX_RESULT_LIMIT
                },
                "include_hidden": {
                    "type": "boolean",
                    "description": "Also return entries whose name starts with '.'.",
                    "default": false
                },
                "include_ignored": {
                    "type": "boolean",
                    "description": "Also return .gitignore'd entries and build/dependency folders (node_modules, target, dist, .venv, ...).",
                    "default": false
                }
            },
            "required": [],
            "additionalProperties": false
        })
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        glob(ctx, args)
    }
}

struct Request {
    path: String,
    pattern: Option<GlobMatcher>,
    limit: usize,
    rules: WalkRules,
}

fn parse(params: &Value) -> Result<Request, String> {
    let args = params
        .as_object()
        .ok_or("Glob arguments must be a JSON object.")?;
    let (Ok(path), Ok(pattern)) = (
        params::str_opt(args, "path"),
        params::str_opt(args, "pattern"),
    ) else {
        return Err("path and pattern must be strings.".into());
    };
    if pattern == Some("") {
        return Err("pattern must not be empty when supplied.".into());
    }
    let Ok(limit) = params::int_in(args, "limit", DEFAULT_RESULT_LIMIT, 1, MAX_RESULT_LIMIT) else {
        return Err("limit must be an integer between 1 and 200.".into());
    };
    let (include_hidden, include_ignored) = walk::visibility_args(args)?;
    if let Some(msg) = params::unknown_arguments("Glob", args, &ACCEPTED) {
        return Err(msg);
    }
    let pattern = match pattern {
        None => None,
        Some(p) => Some(build_glob(&p.replace('\\', "/"))?),
    };
    let path = walk::search_path(path);
    Ok(Request {
        path,
        pattern,
        limit: limit as usize,
        rules: WalkRules {
            include_hidden,
            include_ignored,
            types: None,
        },
    })
}

fn glob(ctx: &ToolContext, params: &Value) -> ToolResult {
    let started = Instant::now();
    if let Err(e) = params::object("Glob", params) {
        return *e;
    }
    let req = match parse(params) {
        Ok(r) => r,
        Err(msg) => return ToolResult::error(params, ErrorCode::InvalidParam, msg, 0),
    };
    let ws = &ctx.workspace;
    let root = match walk::search_root(ws, &req.path, params, 0) {
        Ok(r) => r,
        Err(e) => return *e,
    };
    let rel_root = root.relative.clone();
    let search_dir = root.path.clone();
    let ws_root: PathBuf = ws.root().to_path_buf();

    let found: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let interrupted: Mutex<Option<Interrupt>> = Mutex::new(None);
    let unreadable = AtomicU64::new(0);
    // Without a pattern, the search directory's own entries only.
    let walker = Walk::new(ws, &req.rules, req.pattern.is_none().then_some(1));
    walker.run(&root, &mut || -> walk::Visitor<'_> {
        let mut collector = Collector {
            found: &found,
            interrupted: &interrupted,
            unreadable: &unreadable,
            req: &req,
            ws_root: &ws_root,
            search_dir: &search_dir,
            ctx,
            local: Vec::new(),
        };
        Box::new(move |entry| collector.visit(entry))
    });

    if let Some(why) = interrupted
        .into_inner()
        .unwrap_or(None)
        .or_else(|| ctx.interrupted())
    {
        let msg = match why {
            Interrupt::Deadline => {
                format!("Glob timed out walking '{rel_root}'; narrow the path or pattern.")
            }
            Interrupt::Cancelled => format!("Glob of '{rel_root}' was cancelled."),
        };
        return ToolResult::error(
            params,
            ErrorCode::Timeout,
            msg,
            started.elapsed().as_millis() as u64,
        )
        .with_path_resolved(rel_root);
    }
    // Listed directories were collected with a trailing '/': the reference's paths carry none.
    let mut paths: Vec<(String, bool)> = found
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|p| match p.strip_suffix('/') {
            Some(dir) => (dir.to_string(), true),
            None => (p, false),
        })
        .collect();
    paths.sort_unstable();
    let total = paths.len();
    let truncated = total > req.limit;
    paths.truncate(req.limit);
    let n = paths.len();
    let mut data = Map::new();
    let directories: Vec<&String> = paths.iter().filter(|(_, d)| *d).map(|(p, _)| p).collect();
    data.insert(
        "paths".into(),
        json!(paths.iter().map(|(p, _)| p).collect::<Vec<_>>()),
    );
    data.insert("truncated".into(), Value::from(truncated));
    if req.pattern.is_none() {
        data.insert("directories".into(), json!(directories));
    }
    let mut text = format!("Found {n} path(s) in '{rel_root}'.");
    let unreadable = unreadable.into_inner();
    // Only when non-zero, so ordinary results stay as they were.
    if unreadable > 0 {
        data.insert("unreadable".into(), Value::from(unreadable));
        text.push_str(&format!(
            " {unreadable} director(ies) could not be read and were skipped."
        ));
    }
    let refused = walker.refused_ignore_files();
    if refused > 0 {
        data.insert("refused_ignore_files".into(), Value::from(refused));
        text.push_str(&format!(
            " {refused} ignore file(s) were not read (a symlink, a special file or over 1 MiB); their rules were not applied."
        ));
    }
    if truncated {
        text.push_str(" Results were truncated; narrow the path or pattern.");
    }
    let time_ms = elapsed_ms(started);
    let result = if truncated {
        ToolResult::partial(params, data, text, time_ms)
    } else {
        ToolResult::success(params, data, text, time_ms)
    };
    let listed = paths.into_iter().map(|(p, _)| p).collect();
    result
        .with_shown(super::shown::Shown::Paths(listed))
        .with_stat("matched", n)
        .with_stat("visited", total)
        .with_path_resolved(rel_root)
}

/// Collects the hits of one walker thread without locking, and hands them over when dropped.
struct Collector<'s> {
    found: &'s Mutex<Vec<String>>,
    interrupted: &'s Mutex<Option<Interrupt>>,
    unreadable: &'s AtomicU64,
    req: &'s Request,
    ws_root: &'s Path,
    search_dir: &'s Path,
    ctx: &'s ToolContext,
    local: Vec<String>,
}

impl Collector<'_> {
    fn hit(&self, entry: &Entry) -> Option<String> {
        let rel = walk::rel_str(entry.path(), self.ws_root);
        match &self.req.pattern {
            None if entry.kind() == Kind::Dir => Some(format!("{rel}/")),
            None => Some(rel),
            Some(_) if entry.kind() != Kind::File => None,
            Some(m) => {
                let under = entry
                    .path()
                    .strip_prefix(self.search_dir)
                    .unwrap_or(entry.path());
                m.is_match(under).then_some(rel)
            }
        }
    }
}

impl Collector<'_> {
    fn visit(&mut self, entry: Result<Entry, std::io::Error>) -> Visit {
        if let Some(why) = self.ctx.interrupted() {
            *self.interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
            return Visit::Quit;
        }
        match entry {
            Ok(entry) => {
                if let Some(hit) = self.hit(&entry) {
                    self.local.push(hit);
                }
            }
            // A directory that cannot be opened or listed.
            Err(_) => {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
            }
        }
        Visit::Continue
    }
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.append(&mut self.local);
    }
}
