//! An index of a few texts held in memory rather than of a tree: lines another tool returned
//! (Grep's matches at their line numbers, a Read window) are chunked and ranked by the same
//! code and scoring as the index, so that there is one ranker whichever tool found the lines.
//!
//! Such a text is a fragment: a definition's first line without the rest of its body. Braces
//! left open are closed after the last line, so that the parser still sees the definition
//! (`fn parse(x) {` alone is a function; unclosed, it would be an error node).

use super::chunk::chunk_file;
use super::text::Terms;
use super::{Index, IndexedFile};

/// `text` with the braces it leaves open closed on a line after its last.
fn closed(text: &str) -> std::borrow::Cow<'_, str> {
    let open = text
        .matches('{')
        .count()
        .saturating_sub(text.matches('}').count());
    if open == 0 {
        text.into()
    } else {
        format!("{text}\n{}", "}".repeat(open)).into()
    }
}

/// An index of `texts` (relative path, text; fragments welcome), ranked like a tree's index.
pub(crate) fn of_texts(texts: &[(String, String)]) -> Index {
    let mut parser = tree_sitter::Parser::new();
    let mut terms = Terms::default();
    let mut files: Vec<IndexedFile> = texts
        .iter()
        .map(|(path, text)| IndexedFile {
            path: path.clone(),
            size: text.len() as u64,
            mtime: 0,
            chunks: chunk_file(path, &closed(text), &mut parser, &mut terms),
            facts: None,
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    let mut index = Index {
        files,
        vocab: terms.vocab,
        ..Index::default()
    };
    index.rebuild_ids();
    index.derive();
    index.coverage.files = index.files.len();
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::rank;

    #[test]
    fn an_unclosed_definition_is_still_one() {
        let texts = vec![(
            "src/gate.rs".to_string(),
            "\n\npub fn gate_feedback(reasons: &[String]) -> String {\n    let joined = 1;"
                .to_string(),
        )];
        let index = of_texts(&texts);
        let c = &index.files[0].chunks.chunks[0];
        assert_eq!(
            (c.start, c.kind_name(), c.name.as_str()),
            (3, "function", "gate_feedback")
        );
    }

    #[test]
    fn texts_rank_like_a_tree() {
        let texts = vec![
            (
                "docs/guide.md".to_string(),
                "the session cookie is signed\n".to_string(),
            ),
            (
                "src/session.py".to_string(),
                "\n\ndef sign_session_cookie(value):\n    return value\n".to_string(),
            ),
        ];
        let index = of_texts(&texts);
        let q = rank::parse("Where is the session cookie signed?");
        let hits = rank::search(&index, &q, 5, None);
        assert_eq!(index.files[hits[0].file].path, "src/session.py");
        let c = &index.files[hits[0].file].chunks.chunks[hits[0].chunk];
        assert_eq!((c.start, c.name.as_str()), (3, "sign_session_cookie"));
    }
}
