//! Compiled patterns, kept between calls: compiling a case-insensitive regex or a glob costs more
//! than searching a small tree, and children of one launcher often repeat the same queries.

use std::collections::HashMap;
use std::sync::Mutex;

/// Entries kept before the memo starts over.
const CAPACITY: usize = 256;

/// A bounded memo of compiled values by key.
pub(crate) struct Memo<V> {
    map: Mutex<Option<HashMap<String, V>>>,
}

impl<V: Clone> Memo<V> {
    /// An empty memo (usable in a `static`).
    pub(crate) const fn new() -> Self {
        Memo {
            map: Mutex::new(None),
        }
    }

    /// The value for `key`, compiled by `make` on a miss (errors are not kept).
    pub(crate) fn get_or_try(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<V, String>,
    ) -> Result<V, String> {
        if let Some(v) = self
            .map
            .lock()
            .ok()
            .and_then(|m| m.as_ref().and_then(|m| m.get(key).cloned()))
        {
            return Ok(v);
        }
        let v = make()?;
        if let Ok(mut guard) = self.map.lock() {
            let map = guard.get_or_insert_with(HashMap::new);
            if map.len() >= CAPACITY {
                map.clear();
            }
            map.insert(key.to_string(), v.clone());
        }
        Ok(v)
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
}
