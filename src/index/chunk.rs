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
    terms: &mut Terms,
) -> FileChunks {
    let lines: Vec<&str> = text.lines().collect();
    let lang = Lang::of(path)
        .filter(|_| text.len() <= MAX_PARSE_BYTES && !super::paths::is_secondary_code(path));
    let defs: Vec<Def> = match lang {
        Some(l) => lang::definitions(l, text.as_bytes(), parser),
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
fn add_chunk(out: &mut FileChunks, terms: &mut Terms, lines: &[&str], chunk: Pending) {
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
