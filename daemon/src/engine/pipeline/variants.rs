//! Both variants of a file's redaction, made to agree on what they hide.
//!
//! A file is served two ways: with every line break a redacted value spanned kept after
//! its placeholder (read, search, retrieve: line numbers hold) and without (bundle,
//! resources). They are two runs of the stages, and a kept line break moves what followed
//! a multi-line value onto a line of its own, so rules that read lines (an `Attendees:`
//! line, a speaker label, a heading) can decide differently: `Henrik` after a two-line
//! name was raw in one variant and `[PERSON_…]` in the other, and lining the two up told
//! the agent whose placeholder that was.
//!
//! So a value either run redacted is redacted in both: wherever a variant still shows
//! it, whole and on word boundaries, it becomes the placeholder a run gave it (with its
//! line breaks again in the line-keeping variant). The reference has the
//! same two runs and this leak (COMPAT.md).

use super::{Engine, EngineError, Record, RedactOptions, Redacted};
use crate::engine::placeholder::{Category, PLACEHOLDER_RE};

/// Raw values shorter than this (in characters) are not looked for in the other
/// variant: too likely to be an ordinary piece of a word or a number.
const MIN_VALUE_CHARS: usize = 3;

/// The placeholders a run made, with the raw text each replaced.
#[derive(Default)]
struct Made(Vec<(String, String)>);

impl Record for Made {
    fn placeholder(&mut self, placeholder: &str, raw: &str) {
        self.0.push((placeholder.to_owned(), raw.to_owned()));
    }
}

impl Engine {
    /// The line-keeping variant of `text` and, when it differs, the plain one, each
    /// hiding every value either hides. `options.preserve_line_count` is ignored.
    pub fn redact_variants(
        &self,
        text: &str,
        options: RedactOptions<'_>,
    ) -> Result<(Redacted, Option<Redacted>), EngineError> {
        let keep = RedactOptions {
            preserve_line_count: true,
            ..options
        };
        let preserved = self.redact(text, keep)?;
        // Without a kept line break the two runs see the same text.
        if !preserved.kept_line_breaks {
            return Ok((preserved, None));
        }
        let mut made_keep = Made::default();
        let mut preserved = self.redact_recording(text, keep, &mut made_keep)?;
        let mut made_plain = Made::default();
        let plain_options = RedactOptions {
            preserve_line_count: false,
            ..options
        };
        let mut plain = self.redact_recording(text, plain_options, &mut made_plain)?;
        // Both runs' values, in both: a run can also leave raw elsewhere a value it
        // redacted in one place (the heuristics decide per occurrence), and covering it
        // in one variant only would show the difference again.
        made_keep.0.append(&mut made_plain.0);
        cover(&mut preserved, &made_keep, true);
        cover(&mut plain, &made_keep, false);
        Ok((preserved, Some(plain)))
    }
}

/// Replaces, in `redacted`, every whole occurrence outside placeholders of a raw value
/// `made` holds by its placeholder (followed by the value's line breaks when
/// `keep_breaks`), counting each.
fn cover(redacted: &mut Redacted, made: &Made, keep_breaks: bool) {
    let mut values: Vec<&(String, String)> = made
        .0
        .iter()
        .filter(|(_, raw)| raw.trim().chars().count() >= MIN_VALUE_CHARS)
        .collect();
    // Longest first, so a value is replaced before a shorter one inside it.
    values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.1.cmp(&b.1)));
    values.dedup_by(|a, b| a.1 == b.1);
    for (placeholder, raw) in values {
        if !redacted.text.contains(raw.as_str()) {
            continue;
        }
        let Some(category) = category_of(placeholder) else {
            continue;
        };
        let mut shown = placeholder.clone();
        if keep_breaks {
            shown.extend(std::iter::repeat_n('\n', raw.matches('\n').count()));
        }
        let (text, n) = replace_outside_placeholders(&redacted.text, raw, &shown);
        if n > 0 {
            redacted.text = text;
            redacted.counts.add(category, n);
        }
    }
}

/// `[PERSON_…]` → `PERSON`.
fn category_of(placeholder: &str) -> Option<Category> {
    let name = placeholder.strip_prefix('[')?.split('_').next()?;
    Category::from_name(name)
}

/// `text` with each occurrence of `raw` that lies outside every placeholder and is not
/// part of a longer word replaced by `shown`, and how many there were.
fn replace_outside_placeholders(text: &str, raw: &str, shown: &str) -> (String, u64) {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let first_word = word(raw.chars().next());
    let last_word = word(raw.chars().next_back());
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut at = 0;
    for placeholder in PLACEHOLDER_RE.find_iter(text) {
        let (piece, k) = replace_in(
            &text[at..placeholder.start()],
            raw,
            shown,
            (first_word, last_word),
            word,
        );
        out.push_str(&piece);
        n += k;
        out.push_str(placeholder.as_str());
        at = placeholder.end();
    }
    let (piece, k) = replace_in(&text[at..], raw, shown, (first_word, last_word), word);
    out.push_str(&piece);
    (out, n + k)
}

fn replace_in(
    piece: &str,
    raw: &str,
    shown: &str,
    (first_word, last_word): (bool, bool),
    word: impl Fn(Option<char>) -> bool,
) -> (String, u64) {
    let mut out = String::with_capacity(piece.len());
    let mut n = 0;
    let mut from = 0;
    while let Some(i) = piece[from..].find(raw) {
        let start = from + i;
        let end = start + raw.len();
        let glued = (first_word && word(piece[..start].chars().next_back()))
            || (last_word && word(piece[end..].chars().next()));
        out.push_str(&piece[from..start]);
        if glued {
            out.push_str(raw);
        } else {
            out.push_str(shown);
            n += 1;
        }
        from = end;
    }
    out.push_str(&piece[from..]);
    (out, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_values_outside_placeholders_are_replaced() {
        let text = "Henrik, Henriksen, [PERSON_0123456789abcdef0123456789abcdef] Henrik.";
        let (out, n) = replace_outside_placeholders(text, "Henrik", "[PERSON_x]");
        assert_eq!(
            out,
            "[PERSON_x], Henriksen, [PERSON_0123456789abcdef0123456789abcdef] [PERSON_x]."
        );
        assert_eq!(n, 2);
    }
}
