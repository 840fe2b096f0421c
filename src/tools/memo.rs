//! Compiled patterns, kept between calls: compiling a case-insensitive regex or a glob costs more
//! than searching a small tree, and children of one launcher often repeat the same queries.
//!
//! The memo is bounded in entries and in bytes: each value comes with an upper bound of the
//! memory it holds (its compiled size limit, see `grep::engine`), so a few valid but huge
//! patterns cannot keep gigabytes alive.

use std::collections::HashMap;
use std::sync::Mutex;

/// Entries kept before the memo starts over.
pub(crate) const CAPACITY: usize = 256;
/// Estimated bytes kept before the memo starts over.
pub(crate) const MAX_BYTES: usize = 128 << 20;

struct Inner<V> {
    map: HashMap<String, (V, usize)>,
    bytes: usize,
}

/// A bounded memo of compiled values by key.
pub(crate) struct Memo<V> {
    inner: Mutex<Option<Inner<V>>>,
    capacity: usize,
    max_bytes: usize,
}

impl<V: Clone> Memo<V> {
    /// An empty memo with the default bounds (usable in a `static`).
    pub(crate) const fn new() -> Self {
        Memo::bounded(CAPACITY, MAX_BYTES)
    }

    /// An empty memo keeping at most `capacity` entries and `max_bytes` estimated bytes.
    pub(crate) const fn bounded(capacity: usize, max_bytes: usize) -> Self {
        Memo {
            inner: Mutex::new(None),
            capacity,
            max_bytes,
        }
    }

    /// The value for `key`, compiled by `make` on a miss (errors are not kept), counted at its
    /// key's length.
    #[cfg(test)]
    pub(crate) fn get_or_try(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<V, String>,
    ) -> Result<V, String> {
        self.get_or_try_sized(key, || make().map(|v| (v, key.len())))
    }

    /// The value for `key`, compiled by `make` on a miss; `make` also returns an upper bound of
    /// the bytes the value holds. A value larger than the whole budget is returned, not kept.
    pub(crate) fn get_or_try_sized(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<(V, usize), String>,
    ) -> Result<V, String> {
        if let Some(v) = self.inner.lock().ok().and_then(|m| {
            m.as_ref()
                .and_then(|m| m.map.get(key).map(|(v, _)| v.clone()))
        }) {
            return Ok(v);
        }
        let (v, bytes) = make()?;
        let bytes = bytes.saturating_add(key.len());
        if bytes > self.max_bytes {
            return Ok(v);
        }
        if let Ok(mut guard) = self.inner.lock() {
            let inner = guard.get_or_insert_with(|| Inner {
                map: HashMap::new(),
                bytes: 0,
            });
            if inner.map.len() >= self.capacity || inner.bytes + bytes > self.max_bytes {
                inner.map.clear();
                inner.bytes = 0;
            }
            if let Some((_, old)) = inner.map.insert(key.to_string(), (v.clone(), bytes)) {
                inner.bytes -= old;
            }
            inner.bytes += bytes;
        }
        Ok(v)
    }

    /// Entries and estimated bytes held now.
    #[cfg(test)]
    pub(crate) fn usage(&self) -> (usize, usize) {
        self.inner
            .lock()
            .ok()
            .and_then(|m| m.as_ref().map(|m| (m.map.len(), m.bytes)))
            .unwrap_or((0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_misses_and_errors() {
        static M: Memo<usize> = Memo::new();
        let mut made = 0;
        for _ in 0..3 {
            let v = M.get_or_try("a", || {
                made += 1;
                Ok(7)
            });
            assert_eq!(v, Ok(7));
        }
        assert_eq!(made, 1);
        assert_eq!(
            M.get_or_try("bad", || Err("no".into())),
            Err::<usize, _>("no".into())
        );
        assert_eq!(M.get_or_try("bad", || Ok(1)), Ok(1));
    }

    #[test]
    fn bounded_in_entries_and_bytes() {
        let m: Memo<u32> = Memo::bounded(4, 1000);
        for i in 0..10u32 {
            m.get_or_try(&format!("k{i}"), || Ok(i)).unwrap();
            assert!(m.usage().0 <= 4, "{:?}", m.usage());
        }
        let m: Memo<u32> = Memo::bounded(100, 1000);
        for i in 0..10u32 {
            let v = m
                .get_or_try_sized(&format!("k{i}"), || Ok((i, 298)))
                .unwrap();
            assert_eq!(v, i);
            let (entries, bytes) = m.usage();
            assert!(entries <= 3 && bytes <= 1000, "{entries} {bytes}");
        }
        // Too big for the whole budget: returned, never kept.
        assert_eq!(m.get_or_try_sized("huge", || Ok((7, 5000))), Ok(7));
        let mut made = 0;
        m.get_or_try_sized("huge", || {
            made += 1;
            Ok((7, 5000))
        })
        .unwrap();
        assert_eq!(made, 1);
    }
}
