//! GitHub's JSON, read the way the reference reads it, into *redacted* records.
//!
//! This is the redaction boundary of the GitHub source: every piece of upstream text
//! (state, title, timestamps, labels, bodies) goes through the root's [`Engine`] here,
//! field by field, with its counts kept beside it. What leaves this module holds no raw
//! text, so the cache may keep it. Only validated non-negative integers (number,
//! comment count, assignee count) and salted author aliases are kept unredacted.
//!
//! The reference turns each field into text with Python's `str()` (`None`, `True`, a
//! list's `repr`, …); [`py_str`] does the same, so odd upstream values render alike.

use crate::engine::config::{py_float_repr, py_repr_str};
use crate::engine::placeholder::github_user_alias;
use crate::engine::python::text::is_py_space;
use crate::engine::{Counts, Engine, EngineError, RedactOptions};
use serde_json::{Map, Value};

/// One redacted field: its text and counts, or the engine's failure, raised only if the
/// field is rendered (the reference redacts at render time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field(pub Result<(String, Counts), EngineError>);

impl Field {
    fn of(engine: &Engine, raw: &str) -> Field {
        let opts = RedactOptions {
            preserve_line_count: false,
            // Issues are prose: in code mode the name heuristics run on them.
            prose: true,
            path: "",
        };
        Field(engine.redact(raw, opts).map(|r| (r.text, r.counts)))
    }

    /// Bytes held (for the cache's bound).
    fn size(&self) -> usize {
        self.0.as_ref().map_or(0, |(t, _)| t.len())
    }
}

/// What the list and search lines show of one issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// `None` when upstream sent no non-negative integer (printed as `?`).
    pub number: Option<u64>,
    pub state: Field,
    pub updated: Field,
    pub title: Field,
    pub labels: Vec<Field>,
    pub comments: u64,
}

/// What `redctx_github_read_issue` shows of the issue itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detail {
    pub number: Option<u64>,
    pub state: Field,
    pub title: Field,
    pub created: Field,
    pub updated: Field,
    pub labels: Vec<Field>,
    pub assignees: u64,
    pub body: Field,
}

/// One comment: its time, body and the author's opaque alias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub created: Field,
    pub author: String,
    pub body: Field,
}

/// An item of an upstream array: `None` for what the reference drops (not an object, or
/// a pull request where issues are listed).
pub type Item<T> = Option<T>;

/// Python's `str()` of a decoded JSON value.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(b) => (if *b { "True" } else { "False" }).to_owned(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.to_string(),
            (None, Some(i), _) => i.to_string(),
            (None, None, Some(f)) => py_float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => py_repr_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python truthiness of a JSON value (`x or ""`).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `str(issue.get(key, ""))`.
fn text_of(map: &Map<String, Value>, key: &str) -> String {
    map.get(key).map(py_str).unwrap_or_default()
}

/// `str(issue.get(key) or "")`.
fn body_of(map: &Map<String, Value>, key: &str) -> String {
    match map.get(key) {
        Some(v) if truthy(v) => py_str(v),
        _ => String::new(),
    }
}

/// A real non-negative integer (never a boolean, float or string).
fn count_of(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// Label names: an object's `name`, anything else as `str()`, stripped, empty ones left out.
fn labels_of(engine: &Engine, map: &Map<String, Value>) -> Vec<Field> {
    let Some(Value::Array(labels)) = map.get("labels") else {
        return Vec::new();
    };
    labels
        .iter()
        .filter_map(|label| {
            let name = match label {
                Value::Object(o) => text_of(o, "name"),
                other => py_str(other),
            };
            let name = name.trim_matches(is_py_space);
            (!name.is_empty()).then(|| Field::of(engine, name))
        })
        .collect()
}

/// An object that is an issue (not a pull request).
fn issue_object(value: &Value) -> Option<&Map<String, Value>> {
    value
        .as_object()
        .filter(|o| !o.contains_key("pull_request"))
}

/// One summary per item of an issues array (`None` for what is dropped).
pub fn summaries(engine: &Engine, items: &[Value]) -> Vec<Item<Summary>> {
    items
        .iter()
        .map(|item| {
            let o = issue_object(item)?;
            Some(Summary {
                number: count_of(o.get("number")),
                state: Field::of(engine, &text_of(o, "state")),
                updated: Field::of(engine, &text_of(o, "updated_at")),
                title: Field::of(engine, &text_of(o, "title")),
                labels: labels_of(engine, o),
                comments: count_of(o.get("comments")).unwrap_or(0),
            })
        })
        .collect()
}

/// The issue of `/issues/<n>`, or `None` when the answer is not an issue object.
pub fn detail(engine: &Engine, data: &Value) -> Option<Detail> {
    let o = issue_object(data)?;
    Some(Detail {
        number: count_of(o.get("number")),
        state: Field::of(engine, &text_of(o, "state")),
        title: Field::of(engine, &text_of(o, "title")),
        created: Field::of(engine, &text_of(o, "created_at")),
        updated: Field::of(engine, &text_of(o, "updated_at")),
        labels: labels_of(engine, o),
        assignees: match o.get("assignees") {
            Some(Value::Array(a)) => a.len() as u64,
            _ => 0,
        },
        body: Field::of(engine, &body_of(o, "body")),
    })
}

/// One comment per item of a comments array (`None` for a non-object).
pub fn comments(engine: &Engine, repo_alias: &str, items: &[Value]) -> Vec<Item<Comment>> {
    let salt = &engine.policy().salt;
    items
        .iter()
        .map(|item| {
            let o = item.as_object()?;
            let login = match o.get("user") {
                Some(Value::Object(user)) => text_of(user, "login"),
                _ => String::new(),
            };
            let login = login.trim_matches(is_py_space);
            let author = if login.is_empty() {
                "user_unknown".to_owned()
            } else {
                github_user_alias(salt, repo_alias, login)
            };
            Some(Comment {
                created: Field::of(engine, &text_of(o, "created_at")),
                author,
                body: Field::of(engine, &body_of(o, "body")),
            })
        })
        .collect()
}

/// Bytes a record holds, for the cache's bound.
pub trait Size {
    fn size(&self) -> usize;
}

impl Size for Summary {
    fn size(&self) -> usize {
        64 + self.state.size()
            + self.updated.size()
            + self.title.size()
            + self.labels.iter().map(Field::size).sum::<usize>()
    }
}

impl Size for Detail {
    fn size(&self) -> usize {
        64 + self.state.size()
            + self.title.size()
            + self.created.size()
            + self.updated.size()
            + self.body.size()
            + self.labels.iter().map(Field::size).sum::<usize>()
    }
}

impl Size for Comment {
    fn size(&self) -> usize {
        64 + self.created.size() + self.author.len() + self.body.size()
    }
}

impl<T: Size> Size for Option<T> {
    fn size(&self) -> usize {
        self.as_ref().map_or(8, Size::size)
    }
}

impl<T: Size> Size for Vec<T> {
    fn size(&self) -> usize {
        self.iter().map(Size::size).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_str_of_json_values() {
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(5)), "5");
        assert_eq!(py_str(&json!(-5)), "-5");
        assert_eq!(py_str(&json!(1.0)), "1.0");
        assert_eq!(py_str(&json!(1e16)), "1e+16");
        assert_eq!(py_str(&json!("it's")), "it's");
        assert_eq!(py_str(&json!(["a", 1, null])), "['a', 1, None]");
        assert_eq!(py_str(&json!({"k": "it's"})), "{'k': \"it's\"}");
    }

    #[test]
    fn truthiness_is_pythons() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!("x"),
            json!([0]),
            json!({"a": 1}),
        ] {
            assert!(truthy(&v), "{v}");
        }
    }
}
