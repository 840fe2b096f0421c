//! A `tracing` subscriber for tests: it records every span and event with its fields and the
//! name of its parent span, so a test can compare what a run reported as a whole.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One span or event as the subscriber saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `span` or `event`.
    pub kind: &'static str,
    /// The span or event name.
    pub name: String,
    /// The name of the parent span, if any.
    pub parent: Option<String>,
    /// Every field recorded, as text (strings without quotes).
    pub fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Inner {
    next: AtomicU64,
    /// Records in creation order; a span's id is its position + 1.
    records: Mutex<Vec<Recorded>>,
    /// Span ids by record position.
    span_at: Mutex<HashMap<u64, usize>>,
    /// Entered spans per thread, innermost last.
    stacks: Mutex<HashMap<ThreadId, Vec<u64>>>,
}

/// The recording subscriber; clones share one record.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Inner>);

impl Recorder {
    /// Everything recorded so far.
    pub fn records(&self) -> Vec<Recorded> {
        self.0.records.lock().unwrap().clone()
    }

    fn current(&self) -> Option<u64> {
        let stacks = self.0.stacks.lock().unwrap();
        stacks
            .get(&std::thread::current().id())
            .and_then(|s| s.last().copied())
    }

    fn name_of(&self, id: u64) -> Option<String> {
        let at = *self.0.span_at.lock().unwrap().get(&id)?;
        Some(self.0.records.lock().unwrap()[at].name.clone())
    }

    fn parent(&self, explicit: Option<&Id>, contextual: bool) -> Option<String> {
        match explicit {
            Some(id) => self.name_of(id.into_u64()),
            None if contextual => self.current().and_then(|id| self.name_of(id)),
            None => None,
        }
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = self.parent(attrs.parent(), attrs.is_contextual());
        let mut records = self.0.records.lock().unwrap();
        records.push(Recorded {
            kind: "span",
            name: attrs.metadata().name().to_owned(),
            parent,
            fields,
        });
        self.0.span_at.lock().unwrap().insert(id, records.len() - 1);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let Some(at) = self
            .0
            .span_at
            .lock()
            .unwrap()
            .get(&span.into_u64())
            .copied()
        else {
            return;
        };
        let mut records = self.0.records.lock().unwrap();
        values.record(&mut Fields(&mut records[at].fields));
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let parent = self.parent(event.parent(), event.is_contextual());
        self.0.records.lock().unwrap().push(Recorded {
            kind: "event",
            name: event.metadata().name().to_owned(),
            parent,
            fields,
        });
    }

    fn enter(&self, span: &Id) {
        let mut stacks = self.0.stacks.lock().unwrap();
        stacks
            .entry(std::thread::current().id())
            .or_default()
            .push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        let mut stacks = self.0.stacks.lock().unwrap();
        if let Some(stack) = stacks.get_mut(&std::thread::current().id()) {
            if let Some(pos) = stack.iter().rposition(|id| *id == span.into_u64()) {
                stack.remove(pos);
            }
        }
    }
}
