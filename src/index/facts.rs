//! What the ranking needs to know of each file and chunk, worked out once when the file is read
//! (or its index loaded from the disk cache), never per question: the class of its path (a
//! test, docs, an example, a copy, a declaration file...), its version folder, which of a Rust
//! file's chunks sit in a test module, and a short hash of every key the ranking's name and path
//! bonuses look up for it (the parts of a definition's name and of its parent's, the name in its
//! spellings, the words of the path). A question hashes its own keys the same way: a chunk or a
//! file none of whose hashes the question holds cannot earn a name or path bonus, so that
//! bonus's string work is skipped; one whose hashes meet the question's gets the bonus worked
//! out from its strings, exactly as without these facts (a hash only ever skips work whose
//! answer is zero).

use std::hash::Hasher;

use super::chunk::FileChunks;
use super::paths::{is_copy_path, is_test_path, version_key, BENCH_DIRS, EXAMPLE_DIRS};
use super::text::{ident_terms, FxHasher};

/// A key's short hash, as a file's facts and a question's keys compare them.
pub(crate) fn key_hash(key: &str) -> u16 {
    let mut h = FxHasher::default();
    h.write(key.as_bytes());
    // The high bits of the last multiply depend on every byte.
    (h.finish() >> 48) as u16
}

/// A set of key hashes (a question's): 2^16 bits, one per hash.
pub(crate) struct KeySet {
    bits: Vec<u64>,
}

impl KeySet {
    /// The set of the hashes of `keys`.
    pub(crate) fn of<'a>(keys: impl Iterator<Item = &'a str>) -> KeySet {
        let mut bits = vec![0u64; 1 << 10];
        for k in keys {
            let h = key_hash(k);
            bits[usize::from(h >> 6)] |= 1 << (h & 63);
        }
        KeySet { bits }
    }

    /// Whether any of `hashes` is in the set.
    pub(crate) fn meets(&self, hashes: &[u16]) -> bool {
        hashes
            .iter()
            .any(|&h| self.bits[usize::from(h >> 6)] & (1 << (h & 63)) != 0)
    }
}

/// What a file's path is, for the ranking's weight of it ([`PathClass::NOTES`] and the rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PathClass(u16);

impl PathClass {
    /// The project's history and notes (`CHANGELOG.md`, `CHANGES`), not code.
    pub(crate) const NOTES: u16 = 1;
    /// A test (by its folder or name).
    pub(crate) const TEST: u16 = 1 << 1;
    /// Docs (by extension or folder).
    pub(crate) const DOC: u16 = 1 << 2;
    /// In an examples folder.
    pub(crate) const EXAMPLE: u16 = 1 << 3;
    /// In a benchmarks folder.
    pub(crate) const BENCH: u16 = 1 << 4;
    /// In a copy kept beside the live code (vendored, legacy, compat).
    pub(crate) const COPY: u16 = 1 << 5;
    /// Declarations only (`index.d.ts`, `mod.pyi`).
    pub(crate) const DECLARATIONS: u16 = 1 << 6;
    /// Data or configuration (`json`, `yaml`, `toml`...).
    pub(crate) const DATA: u16 = 1 << 7;
    /// Text that is neither docs, code nor a script (man pages, output, data).
    pub(crate) const NOT_CODE: u16 = 1 << 8;

    /// Whether the class has `flag`.
    pub(crate) fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }

    /// The class of `path` (`/`-separated, relative).
    pub(crate) fn of(path: &str) -> PathClass {
        let lower = path.to_ascii_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let dirs: Vec<&str> = lower.split('/').collect();
        let dirs = &dirs[..dirs.len().saturating_sub(1)];
        let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        let stem_name = name.split('.').next().unwrap_or(name);
        let mut class = 0u16;
        let mut set = |flag: u16, on: bool| {
            if on {
                class |= flag;
            }
        };
        // The project's history and notes (`CHANGELOG.md`, `CHANGES`, `release-notes.txt`),
        // not a source file whose name starts alike (`changeset.ex`, `history.py`).
        let lead: &str = stem_name
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or(stem_name);
        let notes = [
            "changelog",
            "changes",
            "history",
            "news",
            "release",
            "releases",
            "authors",
            "contributing",
        ];
        set(
            Self::NOTES,
            !is_code_name(name, ext) && notes.contains(&lead),
        );
        set(Self::TEST, is_test_path(path));
        let doc = ["md", "rst", "txt", "adoc", "markdown", "html", "tex"].contains(&ext)
            || in_dir(&["docs", "doc", "documentation", "site"]);
        set(Self::DOC, doc);
        set(Self::EXAMPLE, in_dir(EXAMPLE_DIRS));
        set(Self::BENCH, in_dir(BENCH_DIRS));
        set(Self::COPY, is_copy_path(path));
        let declarations = [".d.ts", ".d.mts", ".d.cts"]
            .iter()
            .any(|d| name.ends_with(d))
            || ext == "pyi";
        set(Self::DECLARATIONS, declarations);
        let data = [
            "json", "yaml", "yml", "toml", "xml", "csv", "lock", "cfg", "ini",
        ]
        .contains(&ext);
        set(Self::DATA, data);
        set(
            Self::NOT_CODE,
            !data && !doc && !is_code_name(name, ext) && !is_script_name(name, ext),
        );
        PathClass(class)
    }
}

/// Whether a file name without an extension is likely a script (`libexec/tool-rehash`,
/// `bin/deploy`): not one of the usual extension-less notes of a project.
pub(crate) fn is_script_name(name: &str, ext: &str) -> bool {
    const NOTES: &[&str] = &[
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "install",
        "version",
        "todo",
        "changelog",
        "changes",
        "news",
        "codeowners",
    ];
    ext.is_empty() && !name.starts_with('.') && !NOTES.contains(&name)
}

/// Whether a file name is source code of some language (parsed or not).
pub(crate) fn is_code_name(name: &str, ext: &str) -> bool {
    const CODE: &[&str] = &[
        "py", "pyi", "rs", "go", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "java", "c",
        "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "rb", "rake", "gemspec", "php", "cs", "kt",
        "kts", "swift", "scala", "sh", "bash", "zsh", "fish", "ps1", "lua", "ex", "exs", "erl",
        "hrl", "hs", "ml", "mli", "clj", "cljs", "m", "mm", "r", "jl", "dart", "zig", "nim", "sql",
        "y", "l", "yy", "ll", "jq", "proto", "vue", "svelte", "pl", "pm", "groovy", "gradle",
        "cmake", "mk", "el", "vim", "v", "sv", "vhd", "asm", "s", "f90", "pas", "ada", "cr", "elm",
        "fs", "fsx", "gleam", "odin", "sol", "tf", "nix", "hcl", "graphql", "gql", "wat",
    ];
    CODE.contains(&ext)
        || matches!(
            name,
            "makefile" | "dockerfile" | "rakefile" | "gemfile" | "justfile"
        )
}

/// Files that stand for their folder: a module's re-exports and docs (`extract/mod.rs`,
/// `pkg/__init__.py`, `lib/index.ts`, `plugin/init.lua`).
const MODULE_FILES: &[&str] = &["mod", "__init__", "index", "init"];

/// Whether a path is a module file ([`MODULE_FILES`]) inside a folder.
pub(crate) fn is_module_file(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    MODULE_FILES.contains(&stem) && parts.next().is_some_and(|d| !d.is_empty())
}

/// A file's name as it names what it holds: the identifier it starts with (`Formatter` for
/// ``Formatter`1.cs`` or `Formatter.generated.cs`), or its folder's name for a module file
/// ([`MODULE_FILES`]).
pub(crate) fn file_stem(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(name.len());
    let stem = &name[..end];
    match parts.next() {
        Some(dir) if MODULE_FILES.contains(&stem) && !dir.is_empty() => dir,
        _ => stem,
    }
}

/// The terms of a path's file name (a module file's: its folder's) and of its directories.
pub(crate) fn path_terms(path: &str) -> (Vec<String>, Vec<String>) {
    let mut parts = path.split('/').collect::<Vec<_>>();
    parts.pop();
    let stem_name = file_stem(path);
    let mut file = Vec::new();
    ident_terms(stem_name, &mut file);
    if !file.contains(&stem_name.to_lowercase()) {
        file.push(stem_name.to_lowercase());
    }
    let mut dirs = Vec::new();
    for d in parts {
        ident_terms(d, &mut dirs);
    }
    (file, dirs)
}

/// A name as compared across spellings: lowercase, without `_` and `-` (`JsonObject`,
/// `json_object` and `json-object` are one name).
pub(crate) fn joined_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The last part of a qualified name (`bar` of `Foo::bar` or `Foo.bar`), lowercased.
pub(crate) fn short_name(name: &str) -> String {
    name.rsplit([':', '.'])
        .next()
        .unwrap_or(name)
        .to_lowercase()
}

/// What the ranking needs of one file (see the module's docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct FileFacts {
    /// The class of its path.
    pub class: PathClass,
    /// Its path without version folders and its version, when a folder names one (`api/v1/x.go`).
    pub version: Option<(Box<str>, u32)>,
    /// The hashes of the keys its path bonus looks up: its name's and folders' terms, its
    /// name's joined spelling.
    pub path_keys: Box<[u16]>,
    /// Per chunk, where its name keys start in `name_keys` (one entry more than chunks).
    pub name_at: Box<[u32]>,
    /// The hashes of the keys a chunk's name bonus looks up, chunk after chunk.
    pub name_keys: Box<[u16]>,
    /// Per chunk of a Rust source file that is not a test, whether it lies in a test module
    /// (`#[cfg(test)] mod tests`); empty for every other file.
    pub in_test_module: Box<[bool]>,
}

impl FileFacts {
    /// The facts of the file at `path` cut into `chunks`.
    pub(crate) fn of(path: &str, chunks: &FileChunks) -> FileFacts {
        let (mut keys, dirs) = path_terms(path);
        keys.extend(dirs);
        keys.push(joined_name(file_stem(path)));
        let path_keys = hashes(&keys);
        let mut name_at = Vec::with_capacity(chunks.chunks.len() + 1);
        let mut name_keys: Vec<u16> = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        for c in &chunks.chunks {
            name_at.push(name_keys.len() as u32);
            if c.name.is_empty() || c.kind == 0 {
                continue;
            }
            parts.clear();
            let short = short_name(&c.name);
            ident_terms(&short, &mut parts);
            // A lowercase name without qualifier (`board_init`) is its own short name.
            if c.name != short {
                ident_terms(&c.name, &mut parts);
            }
            if !c.parent.is_empty() {
                ident_terms(&c.parent, &mut parts);
                parts.push(short_name(&c.parent));
            }
            parts.push(c.name.to_lowercase());
            parts.push(joined_name(&short));
            parts.push(short);
            name_keys.extend_from_slice(&hashes(&parts));
        }
        name_at.push(name_keys.len() as u32);
        let rust = std::path::Path::new(path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("rs"));
        let in_test_module = if rust && !is_test_path(path) {
            test_module_chunks(chunks)
        } else {
            Vec::new()
        };
        FileFacts {
            class: PathClass::of(path),
            version: match version_key(path) {
                (key, Some(v)) => Some((key.into(), v)),
                (_, None) => None,
            },
            path_keys,
            name_at: name_at.into(),
            name_keys: name_keys.into(),
            in_test_module: in_test_module.into(),
        }
    }

    /// The name key hashes of chunk `ci`.
    pub(crate) fn name_keys(&self, ci: usize) -> &[u16] {
        match (self.name_at.get(ci), self.name_at.get(ci + 1)) {
            (Some(&a), Some(&b)) => self.name_keys.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Per chunk, whether it lies in a Rust test module: its parent is `tests` or `test`, or a
/// module of that name holds its lines.
fn test_module_chunks(chunks: &FileChunks) -> Vec<bool> {
    let modules: Vec<(u32, u32)> = chunks
        .chunks
        .iter()
        .filter(|m| m.kind_name() == "module" && matches!(m.name.as_str(), "tests" | "test"))
        .map(|m| (m.start, m.end))
        .collect();
    chunks
        .chunks
        .iter()
        .map(|c| {
            matches!(c.parent.as_str(), "tests" | "test")
                || modules.iter().any(|&(s, e)| s <= c.start && c.end <= e)
        })
        .collect()
}

/// The hashes of `keys`, sorted, once each.
fn hashes(keys: &[String]) -> Box<[u16]> {
    let mut out: Vec<u16> = keys.iter().map(|k| key_hash(k)).collect();
    out.sort_unstable();
    out.dedup();
    out.into()
}
