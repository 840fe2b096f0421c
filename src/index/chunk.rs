//! A file cut into definition-sized chunks: each definition's own lines (a class's header and
//! fields, not its methods, which are chunks of their own), with the comment or decorator lines
//! just above it; long definitions in parts; the lines outside any definition in windows. Each
//! chunk holds the term ids of its words, with their counts, for BM25.

use serde::{Deserialize, Serialize};
use tree_sitter::Parser;

use super::lang::{self, Def, Lang};
use super::text::Terms;

/// A definition with more of its own lines than this is cut into parts of [`PART_LINES`].
const MAX_OWN_LINES: usize = 150;
/// Lines per part of a long definition.
const PART_LINES: usize = 100;
/// Lines per window outside definitions.
const WINDOW_LINES: usize = 50;
/// Comment and decorator lines above a definition that belong to it, at most.
const MAX_LEAD_LINES: usize = 12;
/// Files bigger than this are split into windows without parsing (generated code, mostly).
pub(crate) const MAX_PARSE_BYTES: usize = 512 * 1024;

/// The kinds a chunk may have, by their stored code.
pub(crate) const KINDS: [&str; 18] = [
    "lines",
    "part",
    "function",
    "method",
    "class",
    "struct",
    "enum",
    "union",
    "trait",
    "interface",
    "impl",
    "module",
    "namespace",
    "type",
    "macro",
    "constructor",
    "record",
    "other",
];

fn kind_code(kind: &str) -> u8 {
    KINDS
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(KINDS.len() - 1) as u8
}

/// One chunk of a file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// First line, 1-based: a definition's line (its leading comments are counted, not cited).
    pub start: u32,
    /// Last line, inclusive: the whole definition for a definition's chunk.
    pub end: u32,
    /// Index into [`KINDS`].
    pub kind: u8,
    /// The definition's name; empty for a window.
    pub name: String,
    /// Definitions enclosing it (0: top level).
    pub depth: u32,
    /// The name of the definition that encloses it (a method's class), if any.
    pub parent: String,
    /// Its words (term occurrences), for BM25's length normalisation.
    pub len: u32,
    /// Where its terms start in the file's term list (they run to the next chunk's).
    pub terms_at: u32,
}

impl Chunk {
    /// Its kind's name.
    pub(crate) fn kind_name(&self) -> &'static str {
        KINDS.get(self.kind as usize).copied().unwrap_or("other")
    }

    /// Whether it is a definition (not a window or the part of one).
    pub(crate) fn is_definition(&self) -> bool {
        self.kind >= 2
    }
}

/// A file's chunks and their terms: per chunk, `(term id << 8) | count` (count at most 255),
/// sorted by term id.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct FileChunks {
    /// In source order.
    pub chunks: Vec<Chunk>,
    /// Packed terms of every chunk, chunk after chunk.
    pub terms: Vec<u32>,
    /// The language it was parsed as, if any.
    pub lang: Option<String>,
}

impl FileChunks {
    /// The packed terms of chunk `i`.
    pub(crate) fn chunk_terms(&self, i: usize) -> &[u32] {
        let from = self.chunks[i].terms_at as usize;
        let to = self
            .chunks
            .get(i + 1)
            .map_or(self.terms.len(), |c| c.terms_at as usize);
        self.terms.get(from.min(to)..to).unwrap_or(&[])
    }

    /// Why these chunks cannot be what the index wrote (a term id outside a vocabulary of
    /// `vocab` terms, a count of 0, a chunk's terms out of order or past the list), if so.
    pub(crate) fn damage(&self, vocab: usize) -> Option<String> {
        let mut at = 0usize;
        for (i, c) in self.chunks.iter().enumerate() {
            let from = c.terms_at as usize;
            if from < at || from > self.terms.len() {
                return Some(format!(
                    "chunk {i}'s terms start at {from}, outside {at}..={}",
                    self.terms.len()
                ));
            }
            at = from;
        }
        if let Some(p) = self
            .terms
            .iter()
            // A count (the low byte) of 0 is never written.
            .find(|&&p| (p >> 8) as usize >= vocab || p.trailing_zeros() >= 8)
        {
            return Some(format!(
                "term {} (count {}) in a vocabulary of {vocab}",
                p >> 8,
                p & 0xff
            ));
        }
        None
    }
}

/// A chunk before it is interned: start, end, kind, name, parent, depth, its own lines.
type Pending = (u32, u32, u8, String, String, u32, Vec<usize>);

fn is_lead_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("//")
        || t.starts_with("/*")
        || t.starts_with('*')
        || t.starts_with('#') && !t.starts_with("#include") && !t.starts_with("#define")
        || t.starts_with('@')
        || t.starts_with("#[")
}

/// Cut `text` (the file at `path`) into chunks, interning its terms in `terms`.
pub(crate) fn chunk_file(
    path: &str,
    text: &str,
    parser: &mut Parser,
    terms: &mut Terms<'_>,
) -> FileChunks {
    let lines: Vec<&str> = text.lines().collect();
    let lang = Lang::of_file(path, text)
        .filter(|_| text.len() <= MAX_PARSE_BYTES && !super::paths::is_secondary_code(path));
    // A file without a parser, or whose parse failed or ran past its budget, is cut by its
    // shape; text that is not code (prose, data) and secondary code only into windows.
    let parsed = lang.and_then(|l| lang::definitions(l, text.as_bytes(), parser));
    let lang = lang.filter(|_| parsed.is_some());
    let defs: Vec<Def> = match parsed {
        Some(defs) => defs,
        None if text.len() <= MAX_PARSE_BYTES && has_shape(path) => super::shape::definitions(text),
        None => Vec::new(),
    };
    // Lines by owner, in order.
    let mut owned: Vec<Vec<usize>> = vec![Vec::new(); defs.len()];
    let mut loose: Vec<usize> = Vec::new();
    for (l, o) in owners(&defs, &lines).into_iter().enumerate() {
        match o {
            None => loose.push(l),
            Some(o) => owned[o].push(l),
        }
    }
    // Chunks in source order: definitions by their start, windows by theirs.
    let mut pending = definition_chunks(&defs, &owned, lines.len());
    pending.extend(windows(&loose, &lines));
    pending.sort_by_key(|p| (p.0, std::cmp::Reverse(p.1)));
    let mut out = FileChunks {
        lang: lang.map(|l| l.name().to_string()),
        ..FileChunks::default()
    };
    for chunk in pending {
        add_chunk(&mut out, terms, &lines, chunk);
    }
    out
}

/// Extensions of text that is not code: prose and data, cut into windows only.
const NOT_CODE: &[&str] = &[
    "md",
    "markdown",
    "mdx",
    "rst",
    "txt",
    "text",
    "adoc",
    "asciidoc",
    "org",
    "tex",
    "json",
    "jsonl",
    "json5",
    "yaml",
    "yml",
    "toml",
    "xml",
    "html",
    "htm",
    "xhtml",
    "svg",
    "csv",
    "tsv",
    "lock",
    "ini",
    "cfg",
    "conf",
    "properties",
    "ipynb",
    "po",
    "pot",
    "sum",
    "mod",
    "log",
    "diff",
    "patch",
    "css",
    "scss",
    "less",
    "sql",
    "map",
    "snap",
    "golden",
    "out",
    "err",
];

/// Whether a file without a parse may be cut by its shape: code, by its extension (not prose,
/// data, or secondary code, which is only windowed as when it parses).
fn has_shape(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if super::paths::is_secondary_code(path) {
        return false;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            !NOT_CODE.contains(&ext.to_ascii_lowercase().as_str())
        }
        // A dotfile or no extension (a README, a LICENSE; a shell script has its parser).
        _ => false,
    }
}

/// The definition (index into `defs`) each line belongs to, if any: outer first, inner
/// overwrite; a definition also takes the comment and decorator lines just above it.
fn owners(defs: &[Def], lines: &[&str]) -> Vec<Option<usize>> {
    let n = lines.len();
    let mut owner: Vec<Option<usize>> = vec![None; n];
    for (i, d) in defs.iter().enumerate() {
        let (s, e) = (d.start as usize, (d.end as usize).min(n));
        if s == 0 || s > e {
            continue;
        }
        let parent = owner[s - 1];
        for o in &mut owner[s - 1..e] {
            *o = Some(i);
        }
        let mut l = s - 1;
        let mut taken = 0;
        while l > 0
            && taken < MAX_LEAD_LINES
            && owner[l - 1] == parent
            && is_lead_line(lines[l - 1])
        {
            owner[l - 1] = Some(i);
            l -= 1;
            taken += 1;
        }
    }
    owner
}

/// Each definition's chunk (its whole range), and after it its parts when its own lines
/// (`owned[i]`) are too many for one chunk; `n` is the file's line count.
fn definition_chunks(defs: &[Def], owned: &[Vec<usize>], n: usize) -> Vec<Pending> {
    // The enclosing definition of each: the nearest earlier one one level up that contains it.
    let parents: Vec<String> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            defs[..i]
                .iter()
                .rev()
                .find(|p| p.depth + 1 == d.depth && p.start <= d.start && d.end <= p.end)
                .map(|p| p.name.clone())
                .unwrap_or_default()
        })
        .collect();
    let mut pending: Vec<Pending> = Vec::new();
    for (i, d) in defs.iter().enumerate() {
        let body = &owned[i];
        if body.is_empty() {
            continue;
        }
        let end = (d.end as usize).min(n) as u32;
        let whole = body.len() <= MAX_OWN_LINES;
        for (k, part) in body
            .chunks(if whole { body.len() } else { PART_LINES })
            .enumerate()
        {
            // The first part is the definition (its whole range); later ones are its parts.
            let (start, end, kind) = if k == 0 {
                (d.start, end, kind_code(d.kind))
            } else {
                (
                    part[0] as u32 + 1,
                    part[part.len() - 1] as u32 + 1,
                    kind_code("part"),
                )
            };
            pending.push((
                start,
                end,
                kind,
                d.name.clone(),
                parents[i].clone(),
                d.depth,
                part.to_vec(),
            ));
        }
    }
    pending
}

/// Windows of at most [`WINDOW_LINES`] over runs of `loose` lines (those outside any
/// definition); a window of blank lines only is dropped.
fn windows(loose: &[usize], lines: &[&str]) -> Vec<Pending> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    let flush = |run: &mut Vec<usize>, pending: &mut Vec<Pending>| {
        if run.iter().any(|&l| !lines[l].trim().is_empty()) {
            let (first, last) = (run[0] as u32 + 1, run[run.len() - 1] as u32 + 1);
            pending.push((
                first,
                last,
                0,
                String::new(),
                String::new(),
                0,
                std::mem::take(run),
            ));
        }
        run.clear();
    };
    for &l in loose {
        if run.last().is_some_and(|&p| p + 1 != l) || run.len() >= WINDOW_LINES {
            flush(&mut run, &mut pending);
        }
        run.push(l);
    }
    flush(&mut run, &mut pending);
    pending
}

/// Intern a pending chunk's words (its lines, and its name once more) and add it to `out`;
/// a chunk with neither words nor name is dropped.
fn add_chunk(out: &mut FileChunks, terms: &mut Terms<'_>, lines: &[&str], chunk: Pending) {
    let (start, end, kind, name, parent, depth, body) = chunk;
    let mut ids: Vec<u32> = Vec::new();
    for &l in &body {
        terms.add_text(lines[l], &mut ids);
    }
    // The name counts again: a definition is about what it is called.
    if !name.is_empty() {
        terms.add_text(&name, &mut ids);
    }
    if ids.is_empty() && name.is_empty() {
        return;
    }
    let len = ids.len() as u32;
    ids.sort_unstable();
    let terms_at = out.terms.len() as u32;
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j < ids.len() && ids[j] == ids[i] {
            j += 1;
        }
        let count = (j - i).min(255) as u32;
        out.terms.push((ids[i] << 8) | count);
        i = j;
    }
    out.chunks.push(Chunk {
        start,
        end,
        kind,
        name,
        depth,
        parent,
        len,
        terms_at,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dev check, not run in CI: `OUTRIDER_TREE=<dir> cargo test --no-default-features --lib
    /// dev_chunk_tree -- --ignored --nocapture` chunks every file of the tree (under 1 MiB, not
    /// under `.git`) in one thread and prints the total time, the slowest files and how many
    /// fell back to their shape; `OUTRIDER_UNBOUNDED=1` lifts the parse budget (the "before").
    #[test]
    #[ignore = "a dev check on the tree named by OUTRIDER_TREE"]
    fn dev_chunk_tree() {
        let Ok(root) = std::env::var("OUTRIDER_TREE") else {
            return;
        };
        if std::env::var("OUTRIDER_UNBOUNDED").is_ok() {
            lang::TEST_BUDGET.set(Some(lang::Budget {
                checks: u64::MAX,
                cpu_us: u64::MAX,
            }));
        }
        if std::env::var("OUTRIDER_NO_PARSE").is_ok() {
            lang::TEST_BUDGET.set(Some(lang::Budget {
                checks: 0,
                cpu_us: 0,
            }));
        }
        let mut stack = vec![std::path::PathBuf::from(&root)];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("dir").flatten() {
                let p = e.path();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() && e.file_name() != ".git" {
                    stack.push(p);
                } else if ft.is_file() {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut parser = Parser::new();
        let mut terms = Terms::default();
        let (mut n, mut bytes, mut parsed, mut shaped) = (0usize, 0usize, 0usize, 0usize);
        let mut slow: Vec<(f64, String, usize, bool)> = Vec::new();
        let started = std::time::Instant::now();
        let cpu = lang::thread_cpu_us();
        for p in &files {
            let Ok(text) = std::fs::read_to_string(p) else {
                continue;
            };
            if text.len() > 1 << 20 {
                continue;
            }
            let rel = p
                .strip_prefix(&root)
                .unwrap_or(p)
                .to_string_lossy()
                .to_string();
            let t = lang::thread_cpu_us();
            let fc = chunk_file(&rel, &text, &mut parser, &mut terms);
            let secs = (lang::thread_cpu_us() - t) as f64 / 1e6;
            n += 1;
            bytes += text.len();
            let grammar = Lang::of_file(&rel, &text).is_some() && text.len() <= MAX_PARSE_BYTES;
            parsed += usize::from(fc.lang.is_some());
            let fell =
                grammar && fc.lang.is_none() && !super::super::paths::is_secondary_code(&rel);
            shaped += usize::from(fell);
            slow.push((secs, rel, text.len(), fell));
        }
        let total = started.elapsed().as_secs_f64();
        let cpu = (lang::thread_cpu_us() - cpu) as f64 / 1e6;
        slow.sort_by(|a, b| b.0.total_cmp(&a.0));
        println!(
            "{n} files, {bytes} bytes, {parsed} parsed, {shaped} past budget: {cpu:.2}s CPU, \
             {total:.2}s wall"
        );
        for (secs, rel, len, fell) in slow.iter().take(15) {
            println!(
                "  {:7.1} ms {len:>8} B {} {rel}",
                secs * 1000.0,
                if *fell { "shape" } else { "parse" }
            );
        }
    }

    #[test]
    fn definitions_own_their_lines_and_windows_take_the_rest() {
        let src = "import os\nimport sys\n\n# Builds the app.\n@decorator\nclass App:\n    x = 1\n\n    def route(self):\n        return os.path\n\nVALUE = 3\n";
        let mut terms = Terms::default();
        let fc = chunk_file("app.py", src, &mut Parser::new(), &mut terms);
        let got: Vec<(u32, u32, &str, &str)> = fc
            .chunks
            .iter()
            .map(|c| (c.start, c.end, c.kind_name(), c.name.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 3, "lines", ""),
                (6, 10, "class", "App"),
                (9, 10, "method", "route"),
                (11, 12, "lines", ""),
            ]
        );
        // The class chunk holds its comment and decorator words, not its method's.
        let class_terms: Vec<&str> = fc
            .chunk_terms(1)
            .iter()
            .map(|p| terms.vocab[(p >> 8) as usize].as_str())
            .collect();
        assert!(class_terms.contains(&"build"), "{class_terms:?}");
        assert!(class_terms.contains(&"decor"), "{class_terms:?}");
        assert!(!class_terms.contains(&"path"), "{class_terms:?}");
    }

    fn shape_of(fc: &FileChunks) -> Vec<(u32, u32, &str, &str)> {
        fc.chunks
            .iter()
            .map(|c| (c.start, c.end, c.kind_name(), c.name.as_str()))
            .collect()
    }

    #[test]
    fn a_language_without_a_parser_is_cut_by_its_shape_and_prose_into_windows() {
        // Haskell-like: a module, a type, a class with its methods, an instance.
        let src = "module Shapes where\n\nimport Data.List (sortOn)\n\ndata Shape = Circle Double | Square Double\n\nclass HasArea a where\n  area :: a -> Double\n  perimeter :: a -> Double\n\ninstance HasArea Shape where\n  area (Circle r) = pi * r * r\n  area (Square s) = s * s\n  perimeter _ = 0\n";
        let mut terms = Terms::default();
        let fc = chunk_file("src/Shapes.hs", src, &mut Parser::new(), &mut terms);
        assert_eq!(fc.lang, None);
        assert_eq!(
            shape_of(&fc),
            vec![
                (1, 1, "module", "Shapes"),
                (2, 4, "lines", ""),
                (5, 5, "type", "Shape"),
                (7, 9, "class", "HasArea"),
                (11, 14, "impl", "HasArea"),
            ]
        );
        // The same words in prose are not definitions.
        let notes = "# Notes\n\nclass HasArea covers shapes.\ndef area is below.\n";
        let fc = chunk_file("docs/notes.md", notes, &mut Parser::new(), &mut terms);
        assert_eq!(shape_of(&fc), vec![(1, 4, "lines", "")]);
    }

    #[test]
    fn a_parse_past_its_budget_falls_back_to_the_shape() {
        let src = "#include <stdio.h>\n\nstatic int add(int a, int b)\n{\n  return a + b;\n}\n\nstruct point {\n  int x;\n};\n\nint main(void) {\n  return add(1, 2);\n}\n";
        let mut terms = Terms::default();
        let parsed = chunk_file("src/add.c", src, &mut Parser::new(), &mut terms);
        assert_eq!(parsed.lang.as_deref(), Some("c"));
        lang::TEST_BUDGET.set(Some(lang::Budget {
            checks: 0,
            cpu_us: 0,
        }));
        let cut = chunk_file("src/add.c", src, &mut Parser::new(), &mut terms);
        lang::TEST_BUDGET.set(None);
        assert_eq!(cut.lang, None);
        assert_eq!(
            shape_of(&cut),
            vec![
                (1, 2, "lines", ""),
                (3, 6, "function", "add"),
                (8, 10, "struct", "point"),
                (12, 14, "function", "main"),
            ]
        );
        // The parse's own chunks name the same definitions.
        let names = |fc: &FileChunks| -> Vec<String> {
            fc.chunks
                .iter()
                .filter(|c| c.is_definition())
                .map(|c| c.name.clone())
                .collect()
        };
        assert_eq!(names(&parsed), names(&cut));
    }

    #[test]
    fn long_definitions_come_in_parts_and_unknown_files_in_windows() {
        let body: String = (0..320).map(|i| format!("    x{i} = {i}\n")).collect();
        let src = format!("def big():\n{body}");
        let mut terms = Terms::default();
        let fc = chunk_file("big.py", &src, &mut Parser::new(), &mut terms);
        let kinds: Vec<(&str, u32, u32)> = fc
            .chunks
            .iter()
            .map(|c| (c.kind_name(), c.start, c.end))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("function", 1, 321),
                ("part", 101, 200),
                ("part", 201, 300),
                ("part", 301, 321)
            ]
        );
        let text: String = (0..120).map(|i| format!("word{i}\n")).collect();
        let fc = chunk_file("notes.txt", &text, &mut Parser::new(), &mut terms);
        let ranges: Vec<(u32, u32)> = fc.chunks.iter().map(|c| (c.start, c.end)).collect();
        assert_eq!(ranges, vec![(1, 50), (51, 100), (101, 120)]);
    }
}
