//! Words of code: identifiers split at camelCase and snake_case boundaries, lowercased and
//! lightly stemmed, so that a question's words meet a name's parts as whole tokens (`marked`
//! never matches inside `Benchmark`), while a whole identifier stays one exact token
//! (`getAdapter` is `getadapter` as well as `get` and `adapter`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::words::{split_words, words};

/// A fast hash for short keys the index interns by the million (the Fx hash rustc uses):
/// not resistant to chosen collisions, which only slow a build down.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(i)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, FxBuild>;
/// What builds an [`FxHasher`] (for a set keyed by it).
pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;

/// Identifiers longer than this are cut (minified code, data blobs).
const MAX_IDENT: usize = 64;

/// A word as the index keeps it: Snowball's English stem of the lowercase word.
pub(crate) fn index_stem(word: &str) -> String {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    let stemmer =
        STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    let lower = word.to_lowercase();
    let s = stemmer.stem(&lower);
    if s.len() < 2 {
        lower
    } else {
        s.into_owned()
    }
}

/// The index terms of one identifier-like run: its parts stemmed and, when it has several
/// parts, the whole lowercased. Pure numbers and one-letter parts give nothing.
pub(crate) fn ident_terms(ident: &str, out: &mut Vec<String>) {
    let ident = if ident.len() > MAX_IDENT {
        let mut end = MAX_IDENT;
        while !ident.is_char_boundary(end) {
            end -= 1;
        }
        &ident[..end]
    } else {
        ident
    };
    let parts = split_words(ident);
    let useful = |p: &str| p.len() >= 2 && !p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() > 1 {
        let whole = ident.trim_matches('_').to_lowercase();
        if useful(&whole) {
            out.push(whole);
        }
    }
    for p in parts {
        if useful(&p) {
            let s = index_stem(&p);
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
}

/// The identifier-like runs of a text (letters, digits, `_`), in order.
pub(crate) fn idents(text: &str) -> impl Iterator<Item = &str> {
    words(text).filter(|w| w.chars().any(char::is_alphabetic))
}

/// Turns text into term ids, interning terms in its own vocabulary and remembering each
/// identifier's terms (identifiers repeat: most are looked up, not split again).
#[derive(Debug, Default)]
pub(crate) struct Terms {
    /// Term text → id.
    ids: FxMap<String, u32>,
    /// Id → term text.
    pub vocab: Vec<String>,
    /// Identifier → its term ids.
    seen: FxMap<String, Vec<u32>>,
}

impl Terms {
    /// The id of `term`, added when new.
    pub(crate) fn id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.vocab.len() as u32;
        self.vocab.push(term.to_string());
        self.ids.insert(term.to_string(), id);
        id
    }

    /// Add the term ids of every identifier in `text` to `out` (repeats included: they are
    /// term frequencies).
    pub(crate) fn add_text(&mut self, text: &str, out: &mut Vec<u32>) {
        let mut buf = Vec::new();
        for word in idents(text) {
            if let Some(ids) = self.seen.get(word) {
                out.extend_from_slice(ids);
                continue;
            }
            buf.clear();
            ident_terms(word, &mut buf);
            let ids: Vec<u32> = buf.iter().map(|t| self.id(t)).collect();
            out.extend_from_slice(&ids);
            if self.seen.len() < 100_000 {
                self.seen.insert(word.to_string(), ids);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        for w in idents(s) {
            ident_terms(w, &mut out);
        }
        out
    }

    #[test]
    fn identifiers_are_whole_and_split() {
        assert_eq!(terms("getAdapter"), ["getadapter", "get", "adapt"]);
        assert_eq!(terms("suggestions"), terms("suggest"));
        assert_eq!(
            terms("set_join_waker"),
            ["set_join_waker", "set", "join", "waker"]
        );
        assert_eq!(terms("Benchmark"), ["benchmark"]);
        assert_eq!(terms("x = 42; HTTP2"), ["http2"]);
    }

    #[test]
    fn interning_counts_repeats() {
        let mut t = Terms::default();
        let mut out = Vec::new();
        t.add_text("session session Session", &mut out);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|&i| t.vocab[i as usize] == "session"));
    }
}
