//! The round-trip check (spec 9.1 step 7): a document is written only if reading it
//! back would show none of the values just restored.
//!
//! A value glued to its neighbours (`foo[PERSON_x]bar`, two placeholders touching) can
//! fall outside the word boundaries redaction relies on, and would then be served raw to
//! the next session. So the restored text and target path are redacted again, by this
//! policy and by the same policy in balanced mode (the weakest mode another session may
//! serve the file in), and every restored value must be gone: path values whole,
//! placeholder values whole and by each distinctive word (3+ ASCII letters or digits,
//! neither allow-listed nor generic vocabulary).

use super::WriteError;
use crate::engine::placeholder::{PLACEHOLDER_RE, casefold};
use crate::engine::wordlists::{
    COMMON_CAPITALIZED_WORDS, DEFAULT_ALLOW_TERMS, GENERIC_ORG_WORDS, HEADING_TERMS,
    MONTHS_AND_DAYS, NON_PERSON_NAME_WORDS, PATH_ALLOW_TERMS, RESERVED_PLACEHOLDER_WORDS,
};
use crate::engine::{Engine, RedactOptions};
use crate::fs::is_prose_path;
use std::collections::HashSet;
use std::sync::LazyLock;

/// Generic vocabulary whose survival on read-back is expected (the reference's
/// `GENERIC_PROBE_STOPWORDS`), case-folded.
pub(crate) static STOPWORDS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    [
        DEFAULT_ALLOW_TERMS,
        PATH_ALLOW_TERMS,
        COMMON_CAPITALIZED_WORDS,
        HEADING_TERMS,
        MONTHS_AND_DAYS,
        GENERIC_ORG_WORDS,
        NON_PERSON_NAME_WORDS,
        RESERVED_PLACEHOLDER_WORDS,
    ]
    .iter()
    .flat_map(|list| list.iter())
    .map(|w| casefold(w))
    .collect()
});

/// Characters (not counting spaces) from which a restored value with no distinctive
/// word is looked for whole on read-back.
const WHOLE_VALUE_CHARS: usize = 6;

/// What was restored and where it goes.
pub struct Restored<'a> {
    pub target: &'a str,
    pub text: &'a str,
    /// Root-relative path the text is written to (read-back redacts it as that file).
    pub rel: &'a str,
    pub placeholder_values: &'a [String],
    pub path_values: &'a [String],
}

/// Fails with the reference's message when a restored value would show on read-back
/// under any of `engines`.
pub fn check(engines: &[&Engine], r: &Restored<'_>) -> Result<(), WriteError> {
    let mut haystacks = Vec::with_capacity(engines.len() * 2);
    for engine in engines {
        let options = RedactOptions {
            preserve_line_count: false,
            prose: is_prose_path(r.rel),
            path: r.rel,
        };
        let text = engine
            .redact(r.text, options)
            .map_err(|_| WriteError::Failed)?;
        let target = engine
            .redact_path(r.target)
            .map_err(|_| WriteError::Failed)?;
        for shown in [text.text, target.text] {
            haystacks.push(casefold(&PLACEHOLDER_RE.replace_all(&shown, "")));
        }
    }
    let shows = |probe: &str| !probe.is_empty() && haystacks.iter().any(|h| h.contains(probe));
    if r.path_values.iter().any(|v| shows(&casefold(v))) {
        return Err(WriteError::RoundTrip);
    }
    let allowed = |word: &str| engines[0].allows(word) || STOPWORDS.contains(word);
    for value in r.placeholder_values {
        let distinctive: Vec<String> = value
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| t.len() >= 3)
            .map(casefold)
            .filter(|t| !allowed(t))
            .collect();
        // The reference looks for the whole value only when it has a distinctive word;
        // one without (`10.12.30.4`, `+33 6 12 34 56 78`) is looked for too, from
        // WHOLE_VALUE_CHARS on, where finding it by accident is unlikely.
        let whole = !distinctive.is_empty()
            || value.chars().filter(|c| !c.is_whitespace()).count() >= WHOLE_VALUE_CHARS;
        if (whole && shows(&casefold(value))) || distinctive.iter().any(|t| shows(t)) {
            return Err(WriteError::RoundTrip);
        }
    }
    Ok(())
}
