//! The offline scout's search before the model's first call: its ranked places become the
//! repo-map hint (the best of them opened for the child), and its answer the fallback when the
//! model gives no verified, completed one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::contract::{ExploreResult, SubagentStatus};
use crate::llm::scout::indexed::Place;
use crate::profile::ResultContract;
use crate::runner::observed::Observed;
use crate::runner::outcome::{ParsedResult, RunOutcome, TerminalReason};
use crate::runner::{RuntimeRunner, REPO_MAP_LINES, SCOUT_TIME_CAP, SCOUT_TIME_SHARE};
use crate::tools::context::ToolContext;
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;

/// The places the repo-map hint opens for the child, and the fewest and most lines of each.
const OPENED_PLACES: usize = 3;
const OPENED_LINES: (u64, u64) = (8, 16);
/// Most lines shown of the first place.
const FIRST_OPENED_LINES: u64 = 32;
/// Most places shown in two windows (a function longer than a window whose rest holds at
/// least half as many distinct words of the task as the window chosen, and two at least).
const SECOND_WINDOWS: usize = 2;
/// Two windows of a place at most this many lines apart are shown as one.
const MERGED_GAP: u64 = 4;
/// Most characters of a line the list shows of a place not opened.
const LISTED_LINE_CHARS: usize = 160;

/// The offline scout's search made before the model's first call.
pub(super) struct ScoutRun {
    /// Its final text.
    text: String,
    /// Its answer (every cited line one it saw).
    answer: ExploreResult,
    /// Its tool calls by name.
    tool_usage: BTreeMap<String, u64>,
    /// The places it cites, best first, each with the index's place it lies in.
    cited: Vec<Cited>,
    /// Its first places opened for the child.
    opened: Vec<Opened>,
}

/// One place the scout cites: the lines it saw of it, and the index's place (the definition's
/// whole extent, what it defines, the lines the search showed) when the citation lies in one.
struct Cited {
    path: String,
    start: u64,
    end: u64,
    place: Option<Place>,
}

impl Cited {
    /// The last line of the definition the citation lies in (the citation's own when unknown).
    fn defined_to(&self) -> u64 {
        self.place
            .as_ref()
            .map_or(self.end, |p| p.end)
            .max(self.end)
    }

    /// The window opened of this place, if one was.
    fn opened_in<'a>(&self, opened: &'a [Opened]) -> Option<&'a Opened> {
        opened
            .iter()
            .find(|o| o.path == self.path && o.place == self.start)
    }

    /// What the place is, in words (``method `add_env` ``), when the index said.
    fn what(&self) -> Option<String> {
        self.place
            .as_ref()
            .map(Place::what)
            .filter(|w| w != "lines")
    }
}

/// One place opened for the child, for the place the scout cites from line `place` of `path`:
/// one window, or two of a function longer than a window whose rest holds at least half as
/// many of the task's words as the first (the best first).
struct Opened {
    path: String,
    place: u64,
    parts: Vec<Window>,
}

/// A Read of lines `from` to `to`, its result as shown.
struct Window {
    from: u64,
    to: u64,
    shown: Value,
}

impl Window {
    /// The numbered lines shown.
    fn content(&self) -> &str {
        self.shown["data"]["content"].as_str().unwrap_or_default()
    }
}

impl Opened {
    /// Whether `path:line` lies near this place (it would show the same lines again).
    fn near(&self, path: &str, line: u64) -> bool {
        self.path == path && self.place.abs_diff(line) < OPENED_LINES.1
    }

    /// The first line shown.
    fn from(&self) -> u64 {
        self.parts
            .iter()
            .map(|w| w.from)
            .min()
            .unwrap_or(self.place)
    }

    /// The last line shown.
    fn to(&self) -> u64 {
        self.parts.iter().map(|w| w.to).max().unwrap_or(self.place)
    }

    /// The place as the list cites it: each window's lines (`a.py:3-18, a.py:40-55`).
    fn cited(&self) -> String {
        self.parts
            .iter()
            .map(|w| window_citation(&self.path, w.from, w.to))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A window as the hint lists it and as an answer gets it back (`a.py:3-18`).
fn window_citation(path: &str, from: u64, to: u64) -> String {
    format!("{path}:{from}-{to}")
}

/// The repo-map hint: the first message's text, a next call to suggest, and the Read results
/// of the places opened for the child.
pub(super) struct Lead {
    pub(super) hint: String,
    pub(super) example: Option<String>,
    /// The tool results whose lines the hint shows (tool name, result), which the child has
    /// then seen: the Read windows opened, and the lines listed of the places not opened.
    pub(super) shown: Vec<(&'static str, Value)>,
    /// The windows opened (path, first line, last line), best first.
    pub(super) windows: Vec<(String, u64, u64)>,
    /// The places opened, best first: an answer from the hint alone that leaves some out gets
    /// one second look (see [`SecondLook`]), and each place the answer that ends the run still
    /// leaves out is put to the model alone (see [`LookedAt`]).
    pub(super) looked: Vec<LookedAt>,
}

/// The system prompt of the check of a place left out (see [`LookedAt`]).
pub(super) const CHECK_SYSTEM: &str = "You check whether a piece of code answers a question about a codebase. Reply with one word: yes or no.";

/// Whether a model's reply to the check of a place left out is yes: its first word, whatever its case and
/// punctuation. Anything else (no, an explanation, nothing) is not.
pub(super) fn says_yes(reply: &str) -> bool {
    let word: String = reply
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect();
    word.eq_ignore_ascii_case("yes")
}

/// The places opened for the child, best first: an answer from the opened lines alone that
/// passes the index's first place over, or cites one place only while others were opened, is
/// asked once to weigh the ones it left out. A small model tends to pick the place whose words
/// echo the task's, which is less often right than the ranking's first, or to stop at the first
/// place that looks plausible.
pub(super) struct SecondLook<'a> {
    /// Each opened place, best first.
    pub(super) places: &'a [LookedAt],
}

/// One place opened for the child: its file (relative), its lines as cited and shown, how the
/// hint listed it (`routergroup.go:196-203 (method \`Static\`)`), its windows as cited and
/// their lines. [`SecondLook`] weighs the places an answer leaves out; and each place the answer
/// that ends the run still leaves out is put to the model alone: the task and its lines, and
/// one word back, yes or no. A small model that weighs several places at once passes the right
/// one over (koa-01: the error handler that builds the response, listed second, was shown and
/// left out twice); asked about it alone, it says yes. The places it says yes to join the
/// evidence after the answer's own items: the child saw each whole, and the model vouched for
/// each.
#[derive(Debug, Clone)]
pub(super) struct LookedAt {
    pub(super) path: String,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) listed: String,
    /// Its windows as cited (`a.py:3-18`), best first.
    pub(super) windows: Vec<String>,
    /// Its lines as the hint showed them: each window's path, then its numbered lines.
    pub(super) lines: String,
}

impl LookedAt {
    /// Whether `evidence` cites anything in or within a few lines of this place.
    pub(super) fn cited_by(&self, evidence: &[String]) -> bool {
        evidence.iter().any(|e| {
            crate::evidence::parse_citation(e).is_some_and(|(path, a, b)| {
                path.trim_start_matches("./") == self.path
                    && a <= self.end + 3
                    && b + 3 >= self.start
            })
        })
    }

    /// The question put to the model about this place alone.
    pub(super) fn question(&self, task: &str) -> String {
        format!(
            "Question: {task}\n\nCode from {} (line number | text):\n{}\n\nDo these lines do what the question asks about, in whole or in part? Reply yes or no.",
            self.listed, self.lines
        )
    }
}

impl SecondLook<'_> {
    /// The opened places (their indices, best first) an answer citing `evidence` leaves out,
    /// when it should weigh them: it passes the first over, or cites one place only. None when
    /// it cites them all, cites nothing, or cites several places among which the first.
    pub(super) fn left_out(&self, evidence: &[String]) -> Option<Vec<usize>> {
        if evidence.is_empty() || self.places.len() < 2 {
            return None;
        }
        let missed: Vec<usize> = (0..self.places.len())
            .filter(|&i| !self.places[i].cited_by(evidence))
            .collect();
        let first_missed = missed.first() == Some(&0);
        (!missed.is_empty() && (first_missed || evidence.len() == 1)).then_some(missed)
    }

    /// What the child is told about the places `left_out` named.
    pub(super) fn feedback(&self, evidence: &[String], missed: &[usize]) -> String {
        let cites = evidence.join(", ");
        let names = |ix: &[usize]| -> String {
            ix.iter()
                .filter_map(|&i| self.places.get(i))
                .map(|p| p.listed.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        };
        // Every place left out is weighed, not only the first: asked about "that place", a
        // small model added the first and left the right one (koa-01, listed second) out.
        let what = match missed.split_first() {
            Some((0, rest)) => {
                let nor = if rest.is_empty() {
                    String::new()
                } else {
                    format!(", nor {}, also opened", names(rest))
                };
                format!(
                    "it cites {cites} but not the place the index ranked first, {}{nor}, whose lines are shown above",
                    names(&[0])
                )
            }
            _ => format!(
                "it cites {cites} only, not {}, whose lines were opened above too",
                names(missed)
            ),
        };
        let (which, add, none) = if missed.len() == 1 {
            ("that place", "add it", "it does not")
        } else {
            ("any of them", "add each one that does", "none does")
        };
        format!(
            "Before this answer stands: {what}. If {which} answers the task too, {add} to the evidence (the best first); if {none}, reply with the same JSON object again."
        )
    }
}

/// What the scout's blocking search needs: the tools (confined, deadline-bound) and the task.
struct ScoutSearch {
    registry: Arc<ToolRegistry>,
    permissions: PermissionContext,
    ctx: ToolContext,
    task: String,
    system: String,
    tools: Arc<Vec<Value>>,
    /// Whether the best places are opened for the child (`repo_map_hint` with Read allowed).
    open: bool,
}

impl RuntimeRunner {
    /// Whether this child lets the scout search first: an explore child asking for the hint or
    /// the fallback, with Grep allowed, not already run by the offline model, not cancelled.
    fn wants_scout(&self) -> bool {
        (self.profile.repo_map_hint || self.profile.scout_fallback)
            && self.profile.result_contract == Some(ResultContract::Explore)
            && self.model.route_label() != Some("offline")
            && self.registry.names().contains(&"Grep")
            && !self.cancel.is_cancelled()
    }

    /// The offline scout's answer on `task` and the first place it cites opened, when this
    /// child will use them (see [`Self::run`]): every file access a confined tool call, no
    /// trace or span of its own, at most a tenth of the child's time (30 s at most). None when
    /// the scout has no answer whose evidence it saw.
    pub(super) async fn scout_first(&self, task: &str) -> Option<ScoutRun> {
        if !self.wants_scout() {
            return None;
        }
        let share = Duration::from_secs_f64(self.profile.timeout_seconds * SCOUT_TIME_SHARE);
        let deadline = Instant::now() + share.min(SCOUT_TIME_CAP);
        // The scout searches the code index (Search), which reads no more than Grep may.
        let registry = Arc::new(self.registry.with_search());
        let tools = Arc::new(registry.openai_tools());
        let search = ScoutSearch {
            registry,
            permissions: self.permissions.clone(),
            ctx: ToolContext::new(self.workspace.clone())
                .with_deadline(deadline)
                .with_cancel(self.cancel.flag()),
            task: task.to_string(),
            system: self.profile.rendered_system_prompt(),
            tools,
            open: self.profile.repo_map_hint && self.registry.names().contains(&"Read"),
        };
        let searching =
            tokio::task::spawn_blocking(crate::exec::inherit_caller_sync(move || search.run()));
        tokio::time::timeout_at(deadline.into(), crate::exec::spin_first(searching))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    }

    /// The model's outcome, or, with the profile's `scout_fallback`, the offline scout's answer
    /// in its place when the model gave no verified, completed answer (a completed scout answer
    /// in place of any other; a partial one in place of none, an unverified one, or one without
    /// evidence). The summary says so; the counts stay the model's, the scout's tool calls
    /// added.
    pub(super) fn with_scout_fallback(&self, out: RunOutcome, found: ScoutRun) -> RunOutcome {
        let model_answer = match &out.result {
            Some(ParsedResult::Explore(r)) if out.ungrounded_evidence.is_empty() => Some(r),
            _ => None,
        };
        if !self.profile.scout_fallback
            || self.profile.output_schema.is_some()
            // Only after the model answered or ran out: a model error (a bad key, a throttled
            // provider) must stay visible, never be covered by the scout.
            || !matches!(
                out.terminal_reason,
                TerminalReason::Completed
                    | TerminalReason::CompletedUnverified
                    | TerminalReason::CompletionGateBlocked
                    | TerminalReason::MaxSteps
                    | TerminalReason::TokenBudget
                    | TerminalReason::Timeout
            )
            || self.cancel.is_cancelled()
            || model_answer.is_some_and(|r| r.status == SubagentStatus::Completed)
        {
            return out;
        }
        let mut answer = found.answer;
        let better = answer.status == SubagentStatus::Completed
            || model_answer.is_none_or(|r| r.evidence.is_empty());
        if !better {
            return out;
        }
        let what = match (&out.result, out.ungrounded_evidence.is_empty()) {
            (Some(_), false) => "its evidence was not in what it saw".to_string(),
            (Some(_), true) => "its answer was partial".to_string(),
            (None, _) => format!("it stopped: {}", out.terminal_reason.as_str()),
        };
        tracing::info!(
            session_id = %self.trace.session_id(),
            model_outcome = %what,
            "the model gave no verified answer; the offline scout's answer is returned instead"
        );
        answer.summary = format!(
            "The model gave no verified answer ({what}); this is the offline scout's answer (a keyword search, no model). {}",
            answer.summary
        );
        let mut tool_usage = out.tool_usage;
        for (name, n) in found.tool_usage {
            *tool_usage.entry(name).or_insert(0) += n;
        }
        RunOutcome {
            terminal_reason: TerminalReason::Completed,
            final_text: Some(found.text),
            result: Some(ParsedResult::Explore(answer)),
            repair: None,
            error: None,
            tool_usage,
            ungrounded_evidence: Vec::new(),
            ..out
        }
    }

    /// The repo-map hint from the scout's run (`repo_map_hint`): its ranked places as a list
    /// marked unverified, the best of them opened for the child and the others listed with the
    /// lines the index showed of them. None when the profile does not ask for it or the scout
    /// found nothing.
    pub(super) fn lead(&self, scout: Option<&ScoutRun>) -> Option<Lead> {
        if !self.profile.repo_map_hint {
            return None;
        }
        let scout = scout?;
        let places: Vec<&Cited> = scout.cited.iter().take(REPO_MAP_LINES).collect();
        if places.is_empty() {
            return None;
        }
        let opened = &scout.opened;
        let read_args = |c: &Cited| serde_json::json!({"path": c.path, "start_line": c.start.saturating_sub(2).max(1), "limit": 40});
        // The first place not opened, else the first, is the next Read to suggest.
        let next = places
            .iter()
            .find(|c| !opened.iter().any(|o| o.near(&c.path, c.start)))
            .or(places.first());
        let example = next.map(|c| format!("Read with {}", read_args(c)));
        let hint = hint_text(&places, opened);
        // The opened places in the order listed, each as cited and as shown.
        let looked: Vec<LookedAt> = places
            .iter()
            .zip(&hint.listed)
            .filter_map(|(c, listed)| {
                let o = c.opened_in(opened)?;
                Some(LookedAt {
                    path: c.path.clone(),
                    start: c.start.min(o.from()),
                    end: c.end.max(c.start).max(o.to()),
                    listed: listed.clone(),
                    windows: o
                        .parts
                        .iter()
                        .map(|w| window_citation(&o.path, w.from, w.to))
                        .collect(),
                    lines: o
                        .parts
                        .iter()
                        .map(|w| format!("{}:\n{}", o.path, w.content().trim_end()))
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                })
            })
            .collect();
        let mut shown: Vec<(&'static str, Value)> = opened
            .iter()
            .flat_map(|o| &o.parts)
            .map(|w| ("Read", w.shown.clone()))
            .collect();
        if !hint.lines.is_empty() {
            shown.push((
                "Search",
                serde_json::json!({"status": "ok", "data": {"hits": hint.lines}}),
            ));
        }
        let windows = opened
            .iter()
            .flat_map(|o| o.parts.iter().map(|w| (o.path.clone(), w.from, w.to)))
            .collect();
        Some(Lead {
            hint: hint.text,
            example,
            shown,
            windows,
            looked,
        })
    }
}

/// Lines within which an item and the window around it are the same place.
const NEAR: u64 = 3;

/// Follows each evidence item that lies inside a window the hint opened, and more than
/// [`NEAR`] lines from one of its ends (a window hardly wider than the item adds nothing), with
/// the window as the hint listed it (`path:from-to`), once per window; returns the
/// items added. A small model often cites a few lines of a window it was shown and picks the
/// wrong few (a 1.5B model cited 51-62 of a 46-78 window whose answer was 72-78): the place it
/// pointed into, which the child saw whole, then stands beside its lines, the model's item
/// first.
pub(super) fn cite_windows(
    evidence: &mut Vec<String>,
    windows: &[(String, u64, u64)],
) -> Vec<String> {
    let mut added: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(evidence.len() + windows.len());
    for item in evidence.iter() {
        out.push(item.clone());
        let Some((path, a, b)) = crate::evidence::parse_citation(item) else {
            continue;
        };
        let path = super::observed::normalize(&path);
        let window = windows
            .iter()
            .find(|(p, from, to)| {
                *p == path && *from <= a && b <= *to && (from + NEAR < a || b + NEAR < *to)
            })
            .map(|(p, from, to)| window_citation(p, *from, *to));
        // A window the model cites itself, anywhere in its list, is not added again.
        if let Some(w) = window.filter(|w| !evidence.contains(w) && !added.contains(w)) {
            out.push(w.clone());
            added.push(w);
        }
    }
    *evidence = out;
    added
}

/// The hint's text, each place as it is listed (without its number), and the lines shown of
/// the places not opened (as Search hits: `{"file", "lines": [{"line", "text"}]}`).
struct HintText {
    text: String,
    listed: Vec<String>,
    lines: Vec<Value>,
}

/// The hint: the ranked places, each by the lines shown of it and what the index says it is
/// (a place not opened with the lines the index showed of it), then the windows opened.
fn hint_text(places: &[&Cited], opened: &[Opened]) -> HintText {
    let mut out = HintText {
        text: String::new(),
        listed: Vec::new(),
        lines: Vec::new(),
    };
    let mut list: Vec<String> = Vec::new();
    for (i, c) in places.iter().enumerate() {
        let what = c.what();
        let about = what.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
        // Each place by the lines opened of it: a small model copies the listed citation, and
        // a range longer than the window opened would cite lines it did not see; a first line
        // alone misses what the window shows further down.
        if let Some(o) = c.opened_in(opened) {
            let at = o.cited();
            let below = if o.parts.len() > 1 {
                "two parts opened below"
            } else {
                "opened below"
            };
            list.push(match &what {
                Some(w) => format!("{}. {at} ({w}, {below})", i + 1),
                None => format!("{}. {at} ({below})", i + 1),
            });
            out.listed.push(format!("{at}{about}"));
            continue;
        }
        // A place not opened: the lines the index showed of it (its definition line and best
        // matching lines), which the child then has seen and may cite.
        let shown: Vec<&(u64, String)> = c
            .place
            .as_ref()
            .map(|p| p.lines.iter().filter(|(n, _)| *n >= 1).collect())
            .unwrap_or_default();
        let at = format!("{}:{}", c.path, shown.first().map_or(c.start, |(n, _)| *n));
        if shown.is_empty() {
            list.push(format!("{}. {at}{about}", i + 1));
        } else {
            let width = shown
                .iter()
                .map(|(n, _)| n.to_string().len())
                .max()
                .unwrap_or(1);
            let rows: Vec<String> = shown
                .iter()
                .map(|(n, t)| {
                    let t: String = t.trim_end().chars().take(LISTED_LINE_CHARS).collect();
                    format!("   {n:>width$} | {t}")
                })
                .collect();
            list.push(format!("{}. {at}{about}:\n{}", i + 1, rows.join("\n")));
            out.lines.push(serde_json::json!({
                "file": c.path,
                "lines": shown.iter().map(|(n, t)| serde_json::json!({"line": n, "text": t})).collect::<Vec<_>>(),
            }));
        }
        out.listed.push(format!("{at}{about}"));
    }
    let list = format!(
        "Likely places (an offline search of the code index ranked them, best first; unverified, they may not answer the task):\n{}",
        list.join("\n")
    );
    out.text = if opened.is_empty() && out.lines.is_empty() {
        format!("{list}\nCheck them with your tools before you rely on them.")
    } else if opened.is_empty() {
        format!("{list}\n\nIf some of these places answer the task, reply with the final JSON object citing each one that does as it is listed above (relative/path:line), the best first; if none does, search further.")
    } else {
        let windows: Vec<String> = opened
            .iter()
            .flat_map(|o| {
                o.parts
                    .iter()
                    .map(|w| format!("{}:\n{}", o.path, w.content().trim_end()))
            })
            .collect();
        format!(
            "{list}\n\nOpened for you (line number | text):\n{}\n\nIf some of these places answer the task, reply with the final JSON object citing each one that does as it is listed above (relative/path:start-end), the best first; if none does, Read or Grep further.",
            windows.join("\n\n")
        )
    };
    out
}

impl ScoutSearch {
    /// The scout's search on the blocking pool: its answer, kept only when every place it
    /// cites is one it saw, and its first places opened.
    fn run(self) -> Option<ScoutRun> {
        let mut observed = Observed::default();
        let mut tool_usage: BTreeMap<String, u64> = BTreeMap::new();
        let mut execute = |name: &str, args: &str| -> String {
            *tool_usage.entry(name.to_string()).or_insert(0) += 1;
            let args = serde_json::from_str::<Value>(args).unwrap_or(Value::Null);
            let result = self
                .registry
                .execute(name, &args, &self.ctx, &self.permissions)
                .to_value();
            observed.record(name, &result);
            result.to_string()
        };
        let crate::llm::scout::Scouted { text, places } = crate::llm::scout::search_quietly(
            &self.task,
            &self.system,
            self.tools.clone(),
            &mut execute,
        );
        // The scout answers ExploreResult whatever the child's own result shape is.
        let Ok((answer, _)) =
            ExploreResult::repair(&text, crate::contract::ToolUsage::new(), "completed")
        else {
            return None;
        };
        // Each citation with the index's place it lies in (the definition's extent and name).
        let cited: Vec<Cited> = answer
            .evidence
            .iter()
            .filter_map(|e| crate::evidence::parse_citation(e))
            .map(|(path, start, end)| {
                let place = places
                    .iter()
                    .find(|p| p.file == path && p.start <= start && start <= p.end)
                    .cloned();
                Cited {
                    path,
                    start,
                    end,
                    place,
                }
            })
            .collect();
        // The scout cites only what it saw; a citation it did not see is not offered.
        if cited.is_empty()
            || cited
                .iter()
                .any(|c| !observed.saw_range(&c.path, c.start, c.end))
        {
            return None;
        }
        // A place's window may be sought over its whole definition, not only the part the
        // scout read.
        let opened = if self.open {
            self.open_places(&cited)
        } else {
            Vec::new()
        };
        Some(ScoutRun {
            text,
            answer,
            tool_usage,
            cited,
            opened,
        })
    }

    /// The first places, a short window each (distinct places only), so that the model can
    /// weigh them against each other.
    fn open_places(&self, places: &[Cited]) -> Vec<Opened> {
        let q = crate::index::rank::parse(&self.task);
        let mut opened: Vec<Opened> = Vec::new();
        let mut second_windows = 0;
        for c in places {
            let (path, start, end) = (&c.path, &c.start, &c.defined_to());
            if opened.len() >= OPENED_PLACES {
                break;
            }
            if opened.iter().any(|o| o.near(path, *start)) {
                continue;
            }
            let first = start.saturating_sub(1).max(1);
            // The best place is shown whole when it is short; the others as a first look.
            let most = if opened.is_empty() {
                FIRST_OPENED_LINES
            } else {
                OPENED_LINES.1
            };
            let span = end.saturating_sub(first) + 1;
            let limit = span.clamp(OPENED_LINES.0, most);
            // A place longer than its window is shown where it holds most of the task's words
            // (and where else in it half as many show, when that is another part).
            let mut windows = if span > most {
                // A routine's parts, not a class's (its methods are places of their own).
                let routine = c
                    .place
                    .as_ref()
                    .is_some_and(|p| crate::index::lang::is_leaf_kind(&p.kind));
                let second = routine && second_windows < SECOND_WINDOWS;
                self.focus(path, (first, *start, *end), &q, most, second)
            } else {
                Vec::new()
            };
            if windows.is_empty() {
                windows.push((first, limit));
            }
            let parts: Vec<Window> = windows
                .into_iter()
                .filter_map(|(from, limit)| self.read_window(path, from, limit))
                .collect();
            if parts.is_empty() {
                continue;
            }
            second_windows += parts.len() - 1;
            opened.push(Opened {
                path: path.clone(),
                place: *start,
                parts,
            });
        }
        opened
    }

    /// A Read of `limit` lines of `path` from line `from`, as the child would get it; None when
    /// it fails or shows no line.
    fn read_window(&self, path: &str, from: u64, limit: u64) -> Option<Window> {
        let shown = super::read_window(
            &self.registry,
            &self.ctx,
            &self.permissions,
            path,
            from,
            limit,
        )?;
        let to = numbered(shown["data"]["content"].as_str()?)
            .last()
            .map(|(n, _)| *n)?;
        Some(Window { from, to, shown })
    }

    /// The windows (first line, lines) to open of `path`'s lines `first..=end` (at most 400),
    /// of the place whose first line is `head`: the `width`-line window that shows the most of
    /// the task's words (see [`crate::index::rank::focus`]) and, when `second`
    /// allows and the rest of the lines (before or after it) hold a window of at most
    /// [`OPENED_LINES`]`.1` lines showing at least half as many distinct words (two at
    /// least), that one after it (one window when they are a few lines apart).
    /// Empty when the file cannot be read or no line holds a word. The file is read through
    /// the workspace's confinement (the index's reader, a Read would stop at its output cap),
    /// and only the windows chosen are shown to the child.
    fn focus(
        &self,
        path: &str,
        (first, head, end): (u64, u64, u64),
        q: &crate::index::rank::Query,
        width: u64,
        second: bool,
    ) -> Vec<(u64, u64)> {
        let Some(text) = crate::index::read_text(&self.ctx.workspace, path) else {
            return Vec::new();
        };
        let last = end.min(first.saturating_add(399));
        let lines: Vec<(u64, &str)> = text
            .lines()
            .zip(1u64..)
            .filter(|(_, n)| (first..=last).contains(n))
            .map(|(l, n)| (n, l))
            .collect();
        let Some(w) = usize::try_from(width).ok() else {
            return Vec::new();
        };
        let Some((start, terms)) = crate::index::rank::focus(&lines, q, w, Some(head)) else {
            return Vec::new();
        };
        let mut out = vec![(start, width)];
        if !second {
            return out;
        }
        let at = lines.iter().position(|(n, _)| *n == start).unwrap_or(0);
        let (before, after) = (&lines[..at], &lines[(at + w).min(lines.len())..]);
        let (shortest, widest) = (OPENED_LINES.0 as usize, OPENED_LINES.1 as usize);
        let other = [before, after]
            .into_iter()
            .filter(|part| part.len() >= shortest)
            .filter_map(|part| {
                let (from, found) = crate::index::rank::focus(part, q, widest, Some(head))?;
                // The window ends where the part does (never inside the first window).
                let to = part.last().map_or(from, |(n, _)| *n);
                Some((found, from, (to - from + 1).min(OPENED_LINES.1)))
            })
            .max_by_key(|&(found, from, _)| (found, std::cmp::Reverse(from)));
        // Half the words is a part worth a look (the rest of the branch the window shows, as
        // often as not); one word matched is no sign: it shows all through a definition named
        // after it.
        if let Some((_, from, lines)) = other.filter(|o| 2 * o.0 >= terms && o.0 >= 2) {
            // Windows a few lines apart are shown as one; else the best first.
            let (upper, lower) = if from < start {
                ((from, lines), (start, width))
            } else {
                ((start, width), (from, lines))
            };
            if upper.0 + upper.1 + MERGED_GAP >= lower.0 {
                return vec![(upper.0, lower.0 + lower.1 - upper.0)];
            }
            out.push((from, lines));
        }
        out
    }
}

/// The lines of a Read result's content (`  12 | text`), with their numbers.
fn numbered(content: &str) -> Vec<(u64, &str)> {
    content
        .lines()
        .filter_map(|l| {
            let (n, text) = l.split_once('|')?;
            let n = n.trim().parse().ok()?;
            Some((n, text.strip_prefix(' ').unwrap_or(text)))
        })
        .collect()
}
