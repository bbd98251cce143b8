//! The external detector protocol's messages (`docs/detector-protocol.md`): one JSON
//! object per line. Pure: parsing and checking only, so each failure is testable
//! without a process. A message that breaks the framing is a [`ProtocolError`] (the
//! process is replaced); a well-framed answer with a bad span is one of spec 5.12's
//! fixed refusals (the process is kept).

use crate::engine::placeholder::Category;
use crate::engine::plugged::{CharSpan, PluggedError};
use serde_json::{Map, Value};

/// The protocol version this daemon speaks.
pub const PROTOCOL: u64 = 1;
/// Longest line a detector may send (an answer of 20,000 spans fits many times over).
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Longest name or version a hello may carry.
const MAX_IDENTITY_CHARS: usize = 200;
/// Most protected paths a hello may list.
const MAX_PROTECTED: usize = 256;

/// The message broke the protocol; the sentence is fixed and never holds the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub &'static str);

/// What a detector says about itself on its first line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub name: String,
    pub version: String,
    /// Absolute paths of files or directories the detector reads (never served).
    pub protected_paths: Vec<String>,
}

/// Whether `name` is a detector name as `--detector` accepts it:
/// `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn object(line: &str) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError("message is not a JSON object")),
        Err(_) => Err(ProtocolError("message is not JSON")),
    }
}

/// Parses the hello line.
pub fn parse_hello(line: &str) -> Result<Hello, ProtocolError> {
    let map = object(line)?;
    if map.get("type").and_then(Value::as_str) != Some("hello") {
        return Err(ProtocolError("first message is not a hello"));
    }
    if map.get("protocol").and_then(Value::as_u64) != Some(PROTOCOL) {
        return Err(ProtocolError("hello names an unsupported protocol version"));
    }
    let name = map
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| valid_name(n))
        .ok_or(ProtocolError("hello has no valid name"))?;
    let version = map
        .get("version")
        .and_then(Value::as_str)
        .filter(|v| !v.trim().is_empty() && v.chars().count() <= MAX_IDENTITY_CHARS)
        .filter(|v| !v.chars().any(char::is_control))
        .ok_or(ProtocolError("hello has no valid version"))?;
    let protected_paths = match map.get("protected_paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_PROTECTED => items
            .iter()
            .map(|p| {
                p.as_str()
                    .filter(|p| p.starts_with('/'))
                    .map(str::to_owned)
                    .ok_or(ProtocolError(
                        "hello lists a protected path that is not absolute",
                    ))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ProtocolError("hello's protected_paths is not a list")),
    };
    Ok(Hello {
        name: name.to_owned(),
        version: version.to_owned(),
        protected_paths,
    })
}

/// The request line for one text (without its newline).
pub fn request(id: u64, text: &str) -> String {
    serde_json::json!({"type": "detect", "id": id, "text": text}).to_string()
}

/// The outcome of one well-framed answer.
pub type Answer = Result<Vec<CharSpan>, PluggedError>;

/// Parses the answer to request `id`: `Err` breaks the protocol; `Ok(Err(_))` is a
/// refusal of this text (the detector said `error`, or a span or category is bad).
pub fn parse_answer(line: &str, id: u64) -> Result<Answer, ProtocolError> {
    let map = object(line)?;
    if map.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(ProtocolError("answer does not carry the request's id"));
    }
    match map.get("type").and_then(Value::as_str) {
        Some("error") => return Ok(Err(PluggedError::Failed)),
        Some("spans") => {}
        _ => return Err(ProtocolError("answer is neither spans nor error")),
    }
    let Some(Value::Array(items)) = map.get("spans") else {
        return Err(ProtocolError("answer has no spans list"));
    };
    if items.len() > crate::engine::plugged::MAX_DETECTOR_SPANS {
        return Ok(Err(PluggedError::Limit));
    }
    let mut spans = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(span) = item else {
            return Ok(Err(PluggedError::InvalidSpan));
        };
        let (Some(start), Some(end)) = (
            span.get("start").and_then(Value::as_u64),
            span.get("end").and_then(Value::as_u64),
        ) else {
            return Ok(Err(PluggedError::InvalidSpan));
        };
        let Some(category) = span
            .get("category")
            .and_then(Value::as_str)
            .and_then(Category::from_name)
        else {
            return Ok(Err(PluggedError::UnsupportedCategory));
        };
        spans.push(CharSpan {
            start,
            end,
            category,
        });
    }
    Ok(Ok(spans))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_is_checked_field_by_field() {
        let ok = r#"{"type":"hello","protocol":1,"name":"ner","version":"2.1","protected_paths":["/m"]}"#;
        let hello = parse_hello(ok).unwrap();
        assert_eq!(
            (hello.name.as_str(), hello.version.as_str()),
            ("ner", "2.1")
        );
        assert_eq!(hello.protected_paths, ["/m"]);
        for bad in [
            "not json",
            "[1]",
            r#"{"type":"spans","protocol":1,"name":"n","version":"1"}"#,
            r#"{"type":"hello","protocol":2,"name":"n","version":"1"}"#,
            r#"{"type":"hello","protocol":1,"name":"-n","version":"1"}"#,
            r#"{"type":"hello","protocol":1,"name":"n","version":" "}"#,
            r#"{"type":"hello","protocol":1,"name":"n"}"#,
            r#"{"type":"hello","protocol":1,"name":"n","version":"1","protected_paths":["rel"]}"#,
            r#"{"type":"hello","protocol":1,"name":"n","version":"1","protected_paths":"/x"}"#,
        ] {
            assert!(parse_hello(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_map_to_fixed_refusals_or_protocol_errors() {
        let spans = parse_answer(
            r#"{"type":"spans","id":3,"spans":[{"start":0,"end":2,"category":"PERSON"}]}"#,
            3,
        )
        .unwrap()
        .unwrap();
        assert_eq!((spans[0].start, spans[0].end), (0, 2));
        assert_eq!(spans[0].category, Category::PERSON);
        let refusal = |line: &str| parse_answer(line, 3).unwrap().unwrap_err();
        assert_eq!(refusal(r#"{"type":"error","id":3}"#), PluggedError::Failed);
        assert_eq!(
            refusal(r#"{"type":"spans","id":3,"spans":[{"start":-1,"end":2,"category":"ID"}]}"#),
            PluggedError::InvalidSpan
        );
        assert_eq!(
            refusal(r#"{"type":"spans","id":3,"spans":[{"start":0,"end":2.5,"category":"ID"}]}"#),
            PluggedError::InvalidSpan
        );
        assert_eq!(
            refusal(r#"{"type":"spans","id":3,"spans":[{"start":0,"end":2,"category":"id"}]}"#),
            PluggedError::UnsupportedCategory
        );
        for broken in [
            "{",
            "null",
            r#"{"type":"spans","id":4,"spans":[]}"#,
            r#"{"type":"spans","spans":[]}"#,
            r#"{"type":"hello","id":3}"#,
            r#"{"type":"spans","id":3}"#,
            r#"{"type":"spans","id":3,"spans":{}}"#,
        ] {
            assert!(parse_answer(broken, 3).is_err(), "{broken}");
        }
    }
}
