//! Completion verification: the reference's optional check of a main agent's finished work
//! (§2.14, which the reference calls a completion gate; here "gate" is only the runner's check
//! of a child's final answer). Deterministic
//! checks run first and decide alone when they can; only then does a verification child
//! independently check the candidate against its requirements and evidence.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::agent::launcher::SubagentLauncher;
use crate::agent::request::SubagentRequest;
use crate::agent::result::SubagentLaunchResult;
use crate::contract::VerificationVerdict;
use crate::error::Error;
use crate::runner::{CancelToken, ParsedResult};

/// The task the verification child receives.
pub(crate) const VERIFY_TASK: &str = "Independently verify this completion candidate.";

/// The verdict of a completion verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletionVerdict {
    /// `PASS`, `FAIL` or `UNVERIFIED`.
    pub verdict: &'static str,
    /// Why (the child's reasons, or a fixed reason when it gave none).
    pub reasons: Vec<String>,
    /// What to tell the agent whose work failed verification.
    pub feedback: Option<String>,
}

impl CompletionVerdict {
    /// Rebuild a verdict from its parts (`to_dict()` in Python); `verdict` must be `PASS`,
    /// `FAIL` or `UNVERIFIED`.
    pub fn from_parts(
        verdict: &str,
        reasons: Vec<String>,
        feedback: Option<String>,
    ) -> Result<Self, Error> {
        let verdict = ["PASS", "FAIL", "UNVERIFIED"]
            .into_iter()
            .find(|v| *v == verdict)
            .ok_or_else(|| {
                Error::config(
                    "CompletionVerdict.from_dict data['verdict']",
                    format!(
                        "must be 'PASS', 'FAIL' or 'UNVERIFIED', got {}",
                        crate::pyjson::py_repr_str(verdict)
                    ),
                )
            })?;
        Ok(CompletionVerdict {
            verdict,
            reasons,
            feedback,
        })
    }
}

impl Verification {
    /// Rebuild from the JSON form of `CompletionVerdict.to_dict()` with an optional `launch` (a
    /// launch result's JSON form); a bad or unknown key is refused by name.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Parts {
            verdict: String,
            #[serde(default)]
            reasons: Vec<String>,
            #[serde(default)]
            feedback: Option<String>,
            #[serde(default)]
            launch: Option<SubagentLaunchResult>,
        }
        let parts = Parts::deserialize(v)
            .map_err(|e| Error::config("CompletionVerdict.from_dict data", e.to_string()))?;
        let verdict = CompletionVerdict::from_parts(&parts.verdict, parts.reasons, parts.feedback)?;
        Ok(Verification {
            verdict,
            launch: parts.launch,
        })
    }
}

impl std::fmt::Display for CompletionVerdict {
    /// The Python repr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::pyjson::py_repr_str as q;
        write!(
            f,
            "CompletionVerdict(verdict={}, reasons={}, feedback={})",
            q(self.verdict),
            crate::pyjson::py_repr_list(&self.reasons),
            self.feedback.as_deref().map_or("None".into(), q)
        )
    }
}

/// A verification: the verdict, and the child's launch when one was needed.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The verdict.
    pub verdict: CompletionVerdict,
    /// The verification child's launch; None when the deterministic checks decided alone.
    pub launch: Option<SubagentLaunchResult>,
}

/// A verification is shown and handed out as its verdict; pickling keeps the launch too.
impl Serialize for Verification {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.verdict.serialize(s)
    }
}

impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.verdict.fmt(f)
    }
}

impl crate::args::Record for Verification {
    fn from_record(data: &crate::pyjson::Json) -> Result<Self, Error> {
        Self::from_value(&data.to_value())
    }

    fn state(&self) -> Value {
        let mut state = serde_json::to_value(&self.verdict).unwrap_or_default();
        let launch = self.launch.as_ref().map(SubagentLaunchResult::to_value);
        state["launch"] = launch.unwrap_or_default();
        state
    }
}

/// The keys `requirements` may have: the reference's `CompletionRequirements` fields, outrider's
/// `todos` (the todo items themselves) and the free-form `criteria` a verification child checks
/// the candidate against.
pub(crate) const REQUIREMENT_KEYS: [&str; 8] = [
    "todos",
    "requires_verification",
    "criteria",
    "verification_kinds",
    "allow_unverified",
    "has_incomplete_todos",
    "incomplete_todos",
    "explicit_user_constraints",
];

fn type_name(v: &Value) -> &'static str {
    crate::pyjson::Json::from_value(v).type_name()
}

/// `requirements[key]` as a list of str (absent or None: empty), or an error naming it.
fn str_list(requirements: &Map<String, Value>, key: &str) -> Result<Vec<String>, Error> {
    let bad = |v: &Value| {
        Error::wrong_type(
            format!("requirements['{key}']"),
            "a list of str",
            type_name(v),
        )
    };
    match requirements.get(key) {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| bad(v)))
            .collect(),
        Some(other) => Err(bad(other)),
    }
}

/// `requirements[key]` as a bool (absent or None: None), or an error naming it.
fn opt_bool(requirements: &Map<String, Value>, key: &str) -> Result<Option<bool>, Error> {
    match requirements.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(Error::wrong_type(
            format!("requirements['{key}']"),
            "a bool",
            type_name(other),
        )),
    }
}

/// The requirement keys are known, and `criteria` is a str or a list of str.
fn check_keys(requirements: &Map<String, Value>) -> Result<(), Error> {
    // A misspelt key (`require_verification`, `todo`) would otherwise change nothing, silently.
    if let Some(unknown) = requirements
        .keys()
        .find(|k| !REQUIREMENT_KEYS.contains(&k.as_str()))
    {
        return Err(Error::config(
            format!("requirements['{unknown}']"),
            format!(
                "unknown requirement key; the known keys are {} (put free-form requirements \
                 for the verification child under 'criteria')",
                REQUIREMENT_KEYS.map(|k| format!("'{k}'")).join(", ")
            ),
        ));
    }
    if let Some(criteria) = requirements.get("criteria") {
        let ok = match criteria {
            Value::String(_) | Value::Null => true,
            Value::Array(items) => items.iter().all(Value::is_string),
            _ => false,
        };
        if !ok {
            return Err(Error::wrong_type(
                "requirements['criteria']",
                "a str or a list of str",
                type_name(criteria),
            ));
        }
    }
    str_list(requirements, "explicit_user_constraints")?;
    Ok(())
}

/// The open todo items: those of `todos` that are not done, then `incomplete_todos`; and whether
/// `has_incomplete_todos` says there are some without naming them. `has_incomplete_todos:
/// false` beside open items is refused: the two say opposite things.
fn open_todos(requirements: &Map<String, Value>) -> Result<(Vec<String>, bool), Error> {
    let todos = match requirements.get("todos") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => {
            return Err(Error::wrong_type(
                "requirements['todos']",
                "a list of {'content': ..., 'status': ...} dicts",
                type_name(other),
            ))
        }
    };
    let mut open = Vec::new();
    for (i, item) in todos.iter().enumerate() {
        let Value::Object(todo) = item else {
            return Err(Error::wrong_type(
                format!("requirements['todos'][{i}]"),
                "a dict with 'content' and 'status'",
                type_name(item),
            ));
        };
        if let Some(text) = open_todo(todo) {
            open.push(text);
        }
    }
    for text in str_list(requirements, "incomplete_todos")? {
        if !open.contains(&text) {
            open.push(text);
        }
    }
    match opt_bool(requirements, "has_incomplete_todos")? {
        Some(false) if !open.is_empty() => Err(Error::config(
            "requirements['has_incomplete_todos']",
            format!(
                "is False, but the requirements list incomplete todos ({}); make them agree",
                crate::pyjson::py_repr_list(&open)
            ),
        )),
        flag => Ok((open.clone(), flag == Some(true) && open.is_empty())),
    }
}

/// One item of `evidence`: a str (a citation or a note for the verification child), or a dict
/// in the reference's `VerificationEvidence` form, `{"requirement_id": "verification:tests",
/// "status": "success"[, "valid": true, "command": ..., ...]}`, which the deterministic check of
/// `verification_kinds` reads. Returns the items, each checked.
pub(crate) fn evidence_items(evidence: Value) -> Result<Vec<Value>, Error> {
    const EXPECTED: &str =
        "a list of str or of {'requirement_id': ..., 'status': ...} evidence dicts";
    let items = match evidence {
        Value::Null => return Ok(vec![]),
        Value::Array(items) => items,
        other => return Err(Error::wrong_type("evidence", EXPECTED, type_name(&other))),
    };
    for (i, item) in items.iter().enumerate() {
        let Value::Object(map) = item else {
            if item.is_string() {
                continue;
            }
            return Err(Error::wrong_type(
                format!("evidence[{i}]"),
                "a str or an evidence dict",
                type_name(item),
            ));
        };
        let field = |k: &str| format!("evidence[{i}]['{k}']");
        match map.get("requirement_id") {
            Some(Value::String(_)) => {}
            Some(other) => {
                return Err(Error::wrong_type(
                    field("requirement_id"),
                    "a str such as 'verification:tests'",
                    type_name(other),
                ))
            }
            None => {
                return Err(Error::config(
                    format!("evidence[{i}]"),
                    "an evidence dict needs 'requirement_id' (such as 'verification:tests') and \
                     'status' ('success' when the check passed)",
                ))
            }
        }
        if let Some(v) = map.get("status").filter(|v| !v.is_string()) {
            return Err(Error::wrong_type(field("status"), "a str", type_name(v)));
        }
        if let Some(v) = map.get("valid").filter(|v| !v.is_boolean() && !v.is_null()) {
            return Err(Error::wrong_type(field("valid"), "a bool", type_name(v)));
        }
    }
    Ok(items)
}

/// The reference's check of `verification_kinds` against the evidence dicts: per kind, passed
/// (a `verification:<kind>` item with status `success`, not marked invalid), failed or stale
/// (items, none passed: `verification_invalid:<kind>`), or missing
/// (`missing_verification_evidence:<kind>`, which `allow_unverified` turns into an UNVERIFIED
/// verdict instead of a FAIL). Returns the failures and the kinds left unverified.
fn kind_checks(
    requirements: &Map<String, Value>,
    evidence: &[Value],
) -> Result<(Vec<String>, Vec<String>), Error> {
    let kinds = str_list(requirements, "verification_kinds")?;
    let allow_unverified = opt_bool(requirements, "allow_unverified")?.unwrap_or(false);
    let (mut failed, mut unverified) = (Vec::new(), Vec::new());
    if opt_bool(requirements, "requires_verification")? == Some(false) {
        return Ok((failed, unverified)); // the reference checks kinds only when required
    }
    for kind in kinds {
        let id = format!("verification:{kind}");
        let relevant: Vec<&Map<String, Value>> = evidence
            .iter()
            .filter_map(Value::as_object)
            .filter(|m| {
                m.get("requirement_id")
                    .and_then(Value::as_str)
                    .is_some_and(|r| r == id || r == kind)
            })
            .collect();
        let passed = relevant.iter().any(|m| {
            m.get("status").and_then(Value::as_str) == Some("success")
                && m.get("valid").and_then(Value::as_bool) != Some(false)
        });
        if passed {
            continue;
        }
        if !relevant.is_empty() {
            failed.push(format!("verification_invalid:{kind}"));
        } else if allow_unverified {
            unverified.push(kind);
        } else {
            failed.push(format!("missing_verification_evidence:{kind}"));
        }
    }
    Ok((failed, unverified))
}

/// The deterministic part of the verification (§2.14 steps 1-2), which needs no model: an
/// incomplete todo (`todos`, `incomplete_todos`, `has_incomplete_todos`) or a verification kind
/// without passing evidence fails the candidate (a missing one is UNVERIFIED instead with
/// `allow_unverified`), and `requires_verification: false` passes it without a child.
/// `explicit_user_constraints` and `criteria` are for the verification child. Returns None when
/// a verification child must decide; an error naming a key of the wrong type.
pub(crate) fn deterministic_verdict(
    requirements: &Map<String, Value>,
    evidence: &[Value],
) -> Result<Option<CompletionVerdict>, Error> {
    check_keys(requirements)?;
    let (open, unnamed_open) = open_todos(requirements)?;
    let (failed, unverified) = kind_checks(requirements, evidence)?;
    let mut reasons: Vec<String> = open
        .iter()
        .map(|t| format!("incomplete_todo: {t}"))
        .collect();
    let mut feedback = Vec::new();
    if unnamed_open {
        reasons.push("incomplete_todos".into());
        feedback.push("Finish the incomplete todo items before completing.".to_string());
    } else if !open.is_empty() {
        feedback.push(format!(
            "Finish the incomplete todo items before completing: {}",
            open.join("; ")
        ));
    }
    for reason in &failed {
        let (what, kind) = reason.split_once(':').unwrap_or((reason, ""));
        feedback.push(if what == "verification_invalid" {
            format!("The {kind} verification failed or is stale: run it again and pass its result.")
        } else {
            format!("No evidence that the {kind} verification ran: run it and pass its result.")
        });
    }
    reasons.extend(failed);
    if !reasons.is_empty() {
        return Ok(Some(CompletionVerdict {
            verdict: "FAIL",
            reasons,
            feedback: Some(feedback.join(" ")),
        }));
    }
    if !unverified.is_empty() {
        let mut reasons = vec!["verification_unverified".to_string()];
        reasons.extend(
            unverified
                .iter()
                .map(|k| format!("missing_verification_evidence:{k}")),
        );
        return Ok(Some(CompletionVerdict {
            verdict: "UNVERIFIED",
            reasons,
            feedback: None,
        }));
    }
    match opt_bool(requirements, "requires_verification")? {
        None | Some(true) => Ok(None),
        Some(false) => Ok(Some(CompletionVerdict {
            verdict: "PASS",
            reasons: vec!["verification_not_required".into()],
            feedback: None,
        })),
    }
}

/// A todo item that is not done: its `status` is not `completed`/`done`/`cancelled`, or
/// `done` is false, or it says neither (an unknown state counts as open). Its text, when open.
fn open_todo(todo: &Map<String, Value>) -> Option<String> {
    let text = ["content", "title", "task", "text"]
        .iter()
        .find_map(|k| todo.get(*k).and_then(Value::as_str))
        .unwrap_or("(unnamed todo)");
    let open = match (todo.get("status"), todo.get("done")) {
        (Some(Value::String(s)), _) => !matches!(
            s.to_ascii_lowercase().as_str(),
            "completed" | "complete" | "done" | "cancelled" | "canceled"
        ),
        (_, Some(Value::Bool(done))) => !done,
        _ => true,
    };
    open.then(|| text.to_string())
}

/// The request: the candidate, requirements and evidence as structured context, route from the
/// profile (`main`).
pub(crate) fn verification_request(
    candidate: &str,
    requirements: Map<String, Value>,
    evidence: Vec<Value>,
) -> SubagentRequest {
    let mut context = Map::new();
    context.insert("candidate".into(), json!({"final_text": candidate}));
    context.insert("requirements".into(), Value::Object(requirements));
    context.insert("evidence".into(), Value::Array(evidence));
    SubagentRequest {
        profile_name: "verification".into(),
        task: VERIFY_TASK.into(),
        structured_context: context,
        model_choice: None,
        parent_session_id: None,
        parent_run_id: None,
        parent_tool_call_id: None,
        output_schema: None,
    }
}

/// Map a finished verification launch to a verdict, as the reference does: PASS stays PASS,
/// UNVERIFIED stays UNVERIFIED, FAIL and PARTIAL become FAIL with feedback, and a child without a
/// verification result is UNVERIFIED (`verification_agent_error`).
pub(crate) fn verdict_of(launched: &SubagentLaunchResult) -> CompletionVerdict {
    let Some(ParsedResult::Verification(v)) = &launched.result else {
        let mut reasons = vec!["verification_agent_error".to_string()];
        if let Some(e) = &launched.error {
            reasons.push(e.clone());
        }
        return CompletionVerdict {
            verdict: "UNVERIFIED",
            reasons,
            feedback: None,
        };
    };
    let or = |fallback: &str| {
        if v.reasons.is_empty() {
            vec![fallback.to_string()]
        } else {
            v.reasons.clone()
        }
    };
    match v.verdict {
        VerificationVerdict::Pass => CompletionVerdict {
            verdict: "PASS",
            reasons: v.reasons.clone(),
            feedback: None,
        },
        VerificationVerdict::Unverified => CompletionVerdict {
            verdict: "UNVERIFIED",
            reasons: or("verification_agent_unverified"),
            feedback: None,
        },
        VerificationVerdict::Fail | VerificationVerdict::Partial => {
            let fallback = if v.verdict == VerificationVerdict::Fail {
                "verification_agent_fail"
            } else {
                "verification_agent_partial"
            };
            let reasons = or(fallback);
            let feedback = format!(
                "Independent verification did not pass: {}",
                reasons.join("; ")
            );
            CompletionVerdict {
                verdict: "FAIL",
                reasons,
                feedback: Some(feedback),
            }
        }
    }
}

impl SubagentLauncher {
    /// Verify a completion candidate: the deterministic checks first, then (when they do not
    /// decide) a verification child. `requirements` must be a JSON object or null.
    pub async fn verify(
        &self,
        candidate: &str,
        requirements: Value,
        evidence: Value,
        cancel: CancelToken,
    ) -> Result<Verification, Error> {
        if candidate.trim().is_empty() {
            return Err(Error::config(
                "candidate",
                "must be the non-empty text of the completion to verify",
            ));
        }
        let requirements = match requirements {
            Value::Null => Map::new(),
            Value::Object(m) => m,
            other => {
                return Err(Error::wrong_type(
                    "requirements",
                    "a dict",
                    crate::pyjson::Json::from_value(&other).type_name(),
                ))
            }
        };
        let evidence = evidence_items(evidence)?;
        if let Some(verdict) = deterministic_verdict(&requirements, &evidence)? {
            return Ok(Verification {
                verdict,
                launch: None,
            });
        }
        let launched = self
            .launch(
                verification_request(candidate, requirements, evidence),
                cancel,
            )
            .await?;
        Ok(Verification {
            verdict: verdict_of(&launched),
            launch: Some(launched),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reqs(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn deterministic_verdict_ok(r: &Map<String, Value>) -> Option<CompletionVerdict> {
        deterministic_verdict(r, &[]).unwrap()
    }

    #[test]
    fn a_verdict_is_rebuilt_from_its_dict_and_bad_keys_are_named() {
        let v = Verification::from_value(
            &json!({"verdict": "FAIL", "reasons": ["r"], "feedback": "fix"}),
        )
        .unwrap();
        assert_eq!(
            v.verdict,
            CompletionVerdict {
                verdict: "FAIL",
                reasons: vec!["r".into()],
                feedback: Some("fix".into())
            }
        );
        assert!(v.launch.is_none());
        let err = |v: Value| Verification::from_value(&v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"verdict": "MAYBE"})),
            "CompletionVerdict.from_dict data['verdict']: must be 'PASS', 'FAIL' or 'UNVERIFIED', got 'MAYBE'"
        );
        assert!(err(json!({"verdict": "PASS", "extra": 1})).contains("unknown field `extra`"));
        assert!(err(json!({"reasons": []})).contains("missing field `verdict`"));
    }

    #[test]
    fn a_verification_is_handed_out_as_its_verdict_and_pickled_with_its_launch() {
        use crate::args::Record;
        let v = Verification::from_value(&json!({"verdict": "PASS", "reasons": ["ok"]})).unwrap();
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            json!({"verdict": "PASS", "reasons": ["ok"], "feedback": null})
        );
        assert_eq!(v.to_string(), v.verdict.to_string());
        let state = v.state();
        assert_eq!(state["launch"], Value::Null);
        let back = Verification::from_record(&crate::pyjson::Json::from_value(&state)).unwrap();
        assert_eq!(back.verdict, v.verdict);
        assert!(back.launch.is_none());
    }

    #[test]
    fn malformed_requirements_are_refused_by_name() {
        let err = |v: Value| {
            deterministic_verdict(&reqs(v), &[])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"todos": "abc"})),
            "requirements['todos']: must be a list of {'content': ..., 'status': ...} dicts, got str"
        );
        assert_eq!(
            err(json!({"todos": ["abc"]})),
            "requirements['todos'][0]: must be a dict with 'content' and 'status', got str"
        );
        assert_eq!(
            err(json!({"requires_verification": "no"})),
            "requirements['requires_verification']: must be a bool, got str"
        );
        assert_eq!(
            err(json!({"require_verification": false})),
            "requirements['require_verification']: unknown requirement key; the known keys are \
             'todos', 'requires_verification', 'criteria', 'verification_kinds', \
             'allow_unverified', 'has_incomplete_todos', 'incomplete_todos', \
             'explicit_user_constraints' (put free-form requirements for the verification child \
             under 'criteria')"
        );
        assert_eq!(
            err(json!({"verification_kinds": "tests"})),
            "requirements['verification_kinds']: must be a list of str, got str"
        );
        assert_eq!(
            err(json!({"allow_unverified": 1})),
            "requirements['allow_unverified']: must be a bool, got int"
        );
        assert_eq!(
            err(json!({"explicit_user_constraints": [1]})),
            "requirements['explicit_user_constraints']: must be a list of str, got int"
        );
        assert_eq!(
            err(json!({"has_incomplete_todos": false, "incomplete_todos": ["x"]})),
            "requirements['has_incomplete_todos']: is False, but the requirements list \
             incomplete todos (['x']); make them agree"
        );
        let bad_evidence = |v: Value| evidence_items(v).unwrap_err().to_string();
        assert_eq!(
            bad_evidence(json!("a.py:1")),
            "evidence: must be a list of str or of {'requirement_id': ..., 'status': ...} \
             evidence dicts, got str"
        );
        assert_eq!(
            bad_evidence(json!([{"status": "success"}])),
            "evidence[0]: an evidence dict needs 'requirement_id' (such as \
             'verification:tests') and 'status' ('success' when the check passed)"
        );
        assert_eq!(
            bad_evidence(
                json!(["a.py:1", {"requirement_id": "verification:tests", "valid": "yes"}])
            ),
            "evidence[1]['valid']: must be a bool, got str"
        );
        assert_eq!(
            err(json!({"criteria": 3})),
            "requirements['criteria']: must be a str or a list of str, got int"
        );
        assert!(
            deterministic_verdict(&reqs(json!({"criteria": ["login() exists"]})), &[])
                .unwrap()
                .is_none()
        );
        // A todo that says nothing of its state is open.
        assert_eq!(
            deterministic_verdict_ok(&reqs(json!({"todos": [{"content": "a"}]})))
                .unwrap()
                .reasons,
            vec!["incomplete_todo: a".to_string()]
        );
    }

    #[test]
    fn deterministic_checks_decide_without_a_child() {
        assert_eq!(
            deterministic_verdict_ok(&reqs(json!({"todos": [
                {"content": "write tests", "status": "in_progress"},
                {"content": "ship", "status": "completed"},
                {"title": "docs", "done": false}
            ]}))),
            Some(CompletionVerdict {
                verdict: "FAIL",
                reasons: vec![
                    "incomplete_todo: write tests".into(),
                    "incomplete_todo: docs".into()
                ],
                feedback: Some(
                    "Finish the incomplete todo items before completing: write tests; docs".into()
                ),
            })
        );
        assert_eq!(
            deterministic_verdict_ok(&reqs(json!({"requires_verification": false}))),
            Some(CompletionVerdict {
                verdict: "PASS",
                reasons: vec!["verification_not_required".into()],
                feedback: None
            })
        );
        // Incomplete todos fail even when verification is not required.
        assert_eq!(
            deterministic_verdict_ok(&reqs(json!({"requires_verification": false,
                "todos": [{"content": "x", "status": "pending"}]})))
            .unwrap()
            .verdict,
            "FAIL"
        );
        assert_eq!(
            deterministic_verdict_ok(&reqs(
                json!({"todos": [{"content": "x", "status": "done"}]})
            )),
            None
        );
        assert_eq!(deterministic_verdict_ok(&Map::new()), None);
    }

    #[test]
    fn the_reference_requirement_keys_keep_their_meaning() {
        let passed =
            json!({"requirement_id": "verification:tests", "status": "success", "valid": true});
        let failed =
            json!({"requirement_id": "verification:lint", "status": "error", "valid": true});
        let verdict = |r: Value, e: &[Value]| deterministic_verdict(&reqs(r), e).unwrap();
        // Evidence for every kind: the verification child decides.
        let kinds = json!({"requires_verification": true, "verification_kinds": ["tests"],
            "allow_unverified": false, "has_incomplete_todos": false, "incomplete_todos": [],
            "explicit_user_constraints": ["tests"]});
        assert_eq!(verdict(kinds.clone(), std::slice::from_ref(&passed)), None);
        // No evidence: FAIL, naming the kind; with allow_unverified, UNVERIFIED.
        let missing = verdict(kinds.clone(), &[]).unwrap();
        assert_eq!(
            (missing.verdict, missing.reasons),
            (
                "FAIL",
                vec!["missing_verification_evidence:tests".to_string()]
            )
        );
        let mut soft = kinds.clone();
        soft["allow_unverified"] = json!(true);
        assert_eq!(
            verdict(soft, &[]),
            Some(CompletionVerdict {
                verdict: "UNVERIFIED",
                reasons: vec![
                    "verification_unverified".into(),
                    "missing_verification_evidence:tests".into()
                ],
                feedback: None,
            })
        );
        // Evidence that failed, or was made stale by a later edit: FAIL whatever allow_unverified.
        let stale =
            json!({"requirement_id": "verification:tests", "status": "success", "valid": false});
        let lint = json!({"verification_kinds": ["tests", "lint"], "allow_unverified": true});
        let v = verdict(lint, &[stale, failed]).unwrap();
        assert_eq!(
            (v.verdict, v.reasons.clone()),
            (
                "FAIL",
                vec![
                    "verification_invalid:tests".to_string(),
                    "verification_invalid:lint".to_string()
                ]
            )
        );
        assert!(v
            .feedback
            .unwrap()
            .contains("The tests verification failed or is stale"));
        // Kinds are checked only when verification is required, as the reference does.
        let off = json!({"requires_verification": false, "verification_kinds": ["tests"]});
        assert_eq!(verdict(off, &[]).unwrap().verdict, "PASS");
        // Incomplete todos named by the reference's keys.
        let todos = verdict(
            json!({"has_incomplete_todos": true, "incomplete_todos": ["docs"]}),
            &[],
        )
        .unwrap();
        assert_eq!(
            (todos.verdict, todos.reasons, todos.feedback.as_deref()),
            (
                "FAIL",
                vec!["incomplete_todo: docs".to_string()],
                Some("Finish the incomplete todo items before completing: docs")
            )
        );
        let unnamed = verdict(json!({"has_incomplete_todos": true}), &[]).unwrap();
        assert_eq!(unnamed.reasons, vec!["incomplete_todos".to_string()]);
    }
}
