//! The reference's text of the GitHub tools (spec 10), from redacted records only.
//!
//! Fields are rendered in the order the reference redacts them, and their counts are
//! added as they are rendered, so a field the engine refused stops the answer with the
//! counts of what came before (the reference's receipt of a failed call).

use super::records::{Comment, Detail, Field, Summary};
use crate::engine::python::text::truncate_redacted;
use crate::engine::{Counts, EngineError};

/// Counts of the fields rendered so far.
#[derive(Default)]
pub struct Tally(pub Counts);

impl Tally {
    fn take<'a>(&mut self, field: &'a Field) -> Result<&'a str, EngineError> {
        match &field.0 {
            Ok((text, counts)) => {
                self.0.merge(counts);
                Ok(text)
            }
            Err(e) => Err(e.clone()),
        }
    }

    fn labels(&mut self, labels: &[Field]) -> Result<String, EngineError> {
        let mut out = Vec::with_capacity(labels.len());
        for label in labels {
            out.push(self.take(label)?);
        }
        Ok(if out.is_empty() {
            "-".to_owned()
        } else {
            out.join(", ")
        })
    }
}

fn number(n: Option<u64>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// One list or search line, newline-terminated.
pub fn summary_line(alias: &str, s: &Summary, tally: &mut Tally) -> Result<String, EngineError> {
    let state = tally.take(&s.state)?;
    let updated = tally.take(&s.updated)?;
    let title = tally.take(&s.title)?;
    let labels = tally.labels(&s.labels)?;
    Ok(format!(
        "{alias}#{}\tstate={state}\tupdated={updated}\tcomments={}\tlabels={labels}\tuntrusted_title={title}\n",
        number(s.number),
        s.comments
    ))
}

/// The detail text of one issue and its comments: right-stripped, one final newline.
pub fn detail_text(
    alias: &str,
    issue: &Detail,
    comments: &[&Comment],
    max_body_chars: usize,
    tally: &mut Tally,
) -> Result<String, EngineError> {
    let title = tally.take(&issue.title)?;
    let body = truncate_redacted(tally.take(&issue.body)?, max_body_chars);
    let state = tally.take(&issue.state)?;
    let created = tally.take(&issue.created)?;
    let updated = tally.take(&issue.updated)?;
    let labels = tally.labels(&issue.labels)?;
    let mut lines: Vec<String> = vec![
        format!("repo: {alias}"),
        format!("issue: #{}", number(issue.number)),
        format!("state: {state}"),
        format!("title: {title}"),
        format!("created_at: {created}"),
        format!("updated_at: {updated}"),
        format!("labels: {labels}"),
        format!("assignees: {}", issue.assignees),
        String::new(),
        "body_untrusted_external:".to_owned(),
        body,
    ];
    for (i, comment) in comments.iter().enumerate() {
        let body = truncate_redacted(tally.take(&comment.body)?, max_body_chars);
        let created = tally.take(&comment.created)?;
        lines.extend([
            String::new(),
            format!("comment {}:", i + 1),
            format!("created_at: {created}"),
            format!("author: {}", comment.author),
            "comment_untrusted_external:".to_owned(),
            body,
        ]);
    }
    let text = lines.join("\n");
    // Python's `rstrip()`: every trailing whitespace character.
    let trimmed = text.trim_end_matches(crate::engine::python::text::is_py_space);
    Ok(format!("{trimmed}\n"))
}
