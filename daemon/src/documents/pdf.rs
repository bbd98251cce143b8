//! PDF text with lopdf: the text operators of each page's content stream in order, one
//! text line per line the page's text positioning starts; pages separated by a blank
//! line. Content streams are inflated with a bound. Encrypted files fail (the reference
//! refuses them too: no password is ever tried beyond the empty one lopdf applies).

use super::{DocError, MAX_EXPANDED_BYTES};
use lopdf::Document;

pub fn pdf(bytes: &[u8]) -> Result<String, DocError> {
    let doc = Document::load_mem(bytes).map_err(|_| DocError::Failed)?;
    if doc.is_encrypted() {
        return Err(DocError::Failed);
    }
    let mut pages = Vec::new();
    for number in doc.get_pages().keys() {
        let text = doc
            .extract_text_with_limit(&[*number], MAX_EXPANDED_BYTES as usize)
            .map_err(|_| DocError::Failed)?;
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        if !lines.is_empty() {
            pages.push(lines.join("\n"));
        }
    }
    Ok(pages.join("\n\n") + "\n")
}
