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
        // Recorded from the start (it costs a copy of each value): a file whose
        // placeholders kept line breaks needs it, and running again would cost more.
        let mut made_keep = Made::default();
        let mut preserved = self.redact_recording(text, keep, &mut made_keep)?;
        // Without a kept line break the two runs see the same text.
        if !preserved.kept_line_breaks {
            return Ok((preserved, None));
        }
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
/// `keep_breaks`), counting each. One automaton pass over the text, whatever the number
/// of values (a file of many placeholders has as many values).
fn cover(redacted: &mut Redacted, made: &Made, keep_breaks: bool) {
    let mut values: Vec<(&str, &str, Category)> = made
        .0
        .iter()
        .filter(|(_, raw)| raw.trim().chars().count() >= MIN_VALUE_CHARS)
        .filter_map(|(placeholder, raw)| {
            Some((
                raw.as_str(),
                placeholder.as_str(),
                category_of(placeholder)?,
            ))
        })
        .collect();
    // One placeholder per value: the first a run made.
    values.sort_by(|a, b| a.0.cmp(b.0));
    values.dedup_by(|later, first| later.0 == first.0);
    if values.is_empty() {
        return;
    }
    let Ok(automaton) = aho_corasick::AhoCorasick::new(values.iter().map(|v| v.0)) else {
        return;
    };
    let text = &redacted.text;
    let placeholders: Vec<(usize, usize)> = PLACEHOLDER_RE
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let inside_placeholder = |start: usize, end: usize| {
        let i = placeholders.partition_point(|&(_, e)| e <= start);
        placeholders.get(i).is_some_and(|&(s, _)| s < end)
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    // Every occurrence, then the longest of those that start first, one at a time.
    let mut found: Vec<(usize, usize, usize)> = automaton
        .find_overlapping_iter(text)
        .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
        .filter(|&(start, end, v)| {
            let raw = values[v].0;
            let glued = (word(raw.chars().next()) && word(text[..start].chars().next_back()))
                || (word(raw.chars().next_back()) && word(text[end..].chars().next()));
            !glued && !inside_placeholder(start, end)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, v) in found {
        if start < at {
            continue;
        }
        let (raw, placeholder, category) = values[v];
        out.push_str(&text[at..start]);
        out.push_str(placeholder);
        if keep_breaks {
            out.extend(std::iter::repeat_n('\n', raw.matches('\n').count()));
        }
        redacted.counts.add(category, 1);
        at = end;
    }
    if at > 0 {
        out.push_str(&text[at..]);
        redacted.text = out;
    }
}

/// `[PERSON_…]` → `PERSON`.
fn category_of(placeholder: &str) -> Option<Category> {
    let name = placeholder.strip_prefix('[')?.split('_').next()?;
    Category::from_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Counts;

    fn covered(text: &str, made: &[(&str, &str)], keep_breaks: bool) -> (String, Counts) {
        let mut redacted = Redacted {
            text: text.to_owned(),
            ..Redacted::default()
        };
        let made = Made(
            made.iter()
                .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
                .collect(),
        );
        cover(&mut redacted, &made, keep_breaks);
        (redacted.text, redacted.counts)
    }

    #[test]
    fn only_whole_values_outside_placeholders_are_replaced_longest_first() {
        let p = "[PERSON_0123456789abcdef0123456789abcdef]";
        let text = format!("Henrik, Henriksen, {p} Henrik Larsen, Henrik Larsenx.");
        let (out, counts) = covered(
            &text,
            &[("[PERSON_a]", "Henrik"), ("[PERSON_b]", "Henrik Larsen")],
            false,
        );
        assert_eq!(
            out,
            format!("[PERSON_a], Henriksen, {p} [PERSON_b], [PERSON_a] Larsenx.")
        );
        assert_eq!(counts, {
            let mut c = Counts::default();
            c.add(Category::PERSON, 3);
            c
        });
        // A value over two lines keeps its line break in the line-keeping variant.
        let (out, _) = covered(
            "x Avery\nExampleson y",
            &[("[PERSON_c]", "Avery\nExampleson")],
            true,
        );
        assert_eq!(out, "x [PERSON_c]\n y");
    }

    #[test]
    fn many_values_are_all_covered() {
        let made: Vec<(String, String)> = (0..20_000)
            .map(|i| (format!("[EMAIL_{i:032x}]"), format!("user{i}@example.org")))
            .collect();
        let refs: Vec<(&str, &str)> = made.iter().map(|(p, r)| (p.as_str(), r.as_str())).collect();
        let text = "contact user19999@example.org or user7@example.org\n".repeat(5_000);
        let (out, _) = covered(&text, &refs, false);
        assert!(!out.contains("@example.org"), "{}", &out[..200]);
    }
}
