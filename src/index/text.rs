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

/// Words whose stems a thread remembers, at most (the words of code repeat: `init`, `reg`).
const MAX_STEMS_KEPT: usize = 50_000;

thread_local! {
    /// Word → its stem, as [`index_stem`] made it on this thread.
    static STEMS: std::cell::RefCell<FxMap<String, String>> =
        std::cell::RefCell::new(FxMap::default());
}

/// A word as the index keeps it: Snowball's English stem of the lowercase word.
pub(crate) fn index_stem(word: &str) -> String {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    if let Some(stem) = STEMS.with(|s| s.borrow().get(word).cloned()) {
        return stem;
    }
    let stemmer =
        STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    let lower = word.to_lowercase();
    let s = stemmer.stem(&lower);
    let stem = if s.len() < 2 { lower } else { s.into_owned() };
    STEMS.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < MAX_STEMS_KEPT {
            s.insert(word.to_string(), stem.clone());
        }
    });
    stem
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

/// A vocabulary the threads reading one index's files intern their terms in together (id →
/// term, term → id): each term is kept once for the whole build, not once per thread and then
/// again in the index.
pub(crate) type Shared = std::sync::Mutex<(Vec<String>, TermIds)>;

fn hash_term(term: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(term.as_bytes());
    h.finish()
}

/// Term → id over a vocabulary (id → term): the table holds ids only and finds a term by
/// comparing the vocabulary's text, so that each term's text is kept once.
#[derive(Debug, Default)]
pub(crate) struct TermIds(hashbrown::HashTable<u32>);

impl TermIds {
    /// The id of `term` in `vocab`, if it has one.
    pub(crate) fn get(&self, vocab: &[String], term: &str) -> Option<u32> {
        self.0
            .find(hash_term(term), |&id| vocab[id as usize] == term)
            .copied()
    }

    /// Take `vocab`'s term `id` in; false (and left out) when the term is there already.
    pub(crate) fn insert(&mut self, vocab: &[String], id: u32) -> bool {
        let term = vocab[id as usize].as_str();
        if self.get(vocab, term).is_some() {
            return false;
        }
        self.0.insert_unique(hash_term(term), id, |&other| {
            hash_term(&vocab[other as usize])
        });
        true
    }

    /// The terms it holds.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The id of `term` in the vocabulary `vocab` (id → term) with `ids` (term → id), added when
/// new.
pub(crate) fn intern_in(vocab: &mut Vec<String>, ids: &mut TermIds, term: &str) -> u32 {
    if let Some(id) = ids.get(vocab, term) {
        return id;
    }
    let id = vocab.len() as u32;
    vocab.push(term.to_string());
    ids.insert(vocab, id);
    id
}

/// Turns text into term ids, interning terms in its own vocabulary (or a [`Shared`] one) and
/// remembering each identifier's terms (identifiers repeat: most are looked up, not split
/// again).
#[derive(Debug, Default)]
pub(crate) struct Terms<'v> {
    /// Term text → id.
    ids: TermIds,
    /// Id → term text (empty when the vocabulary is shared).
    pub vocab: Vec<String>,
    /// Identifier → its term ids.
    seen: FxMap<String, Vec<u32>>,
    /// The vocabulary shared with other threads, if any: terms are interned there.
    shared: Option<&'v Shared>,
}

impl<'v> Terms<'v> {
    /// Terms interned in `shared`.
    pub(crate) fn sharing(shared: &'v Shared) -> Terms<'v> {
        Terms {
            shared: Some(shared),
            ..Terms::default()
        }
    }

    /// The id of `term`, added when new.
    pub(crate) fn id(&mut self, term: &str) -> u32 {
        intern_in(&mut self.vocab, &mut self.ids, term)
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
            let ids: Vec<u32> = match self.shared {
                Some(shared) => {
                    let mut guard = shared
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let (vocab, ids) = &mut *guard;
                    buf.iter().map(|t| intern_in(vocab, ids, t)).collect()
                }
                None => buf.iter().map(|t| self.id(t)).collect(),
            };
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
