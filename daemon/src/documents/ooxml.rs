//! Word and PowerPoint files: their XML parts read with a pull parser, turned into
//! Markdown blocks (one paragraph one line, blocks separated by a blank line).
//!
//! Word: `word/document.xml` in body order; a paragraph styled `Title` or `HeadingN` is a
//! heading, one with numbering a list item (indented by level), a table a Markdown table
//! (first row as header, each cell's paragraphs joined by spaces). PowerPoint: slides in
//! the order of `ppt/presentation.xml`, each under `<!-- Slide number: N -->` as
//! MarkItDown writes it, its title placeholder as a heading, other text frames as
//! paragraphs, tables as tables, then the speaker notes under `### Notes:`.

use super::zipguard::{self, Archive};
use super::{DocError, markdown_table};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// One XML event reduced to what the converters need.
enum Ev {
    /// Local name and attributes (qualified names).
    Start(Vec<u8>, Vec<(Vec<u8>, String)>),
    End(Vec<u8>),
    Text(String),
}

/// Walks `xml`, handing each event to `f` (local names, unescaped text). Malformed XML
/// is a failure.
fn walk(xml: &str, mut f: impl FnMut(Ev)) -> Result<(), DocError> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(false);
    let attrs = |e: &BytesStart<'_>| -> Vec<(Vec<u8>, String)> {
        e.attributes()
            .flatten()
            .map(|a| {
                let value = a
                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .map(|v| v.into_owned())
                    .unwrap_or_default();
                (a.key.as_ref().as_bytes().to_vec(), value)
            })
            .collect()
    };
    loop {
        match reader.read_event().map_err(|_| DocError::Failed)? {
            Event::Start(e) => f(Ev::Start(
                e.local_name().as_ref().as_bytes().to_vec(),
                attrs(&e),
            )),
            Event::Empty(e) => {
                let name = e.local_name().as_ref().as_bytes().to_vec();
                f(Ev::Start(name.clone(), attrs(&e)));
                f(Ev::End(name));
            }
            Event::End(e) => f(Ev::End(e.local_name().as_ref().as_bytes().to_vec())),
            Event::Text(e) => f(Ev::Text(e.xml10_content().into_owned())),
            Event::CData(e) => f(Ev::Text(e.xml10_content().into_owned())),
            Event::GeneralRef(e) => {
                let ch = match e.resolve_char_ref() {
                    Ok(Some(ch)) => Some(ch),
                    Ok(None) => match e.xml10_content().as_ref() {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                    Err(_) => None,
                };
                if let Some(ch) = ch {
                    f(Ev::Text(ch.to_string()));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// The value of attribute `name` by its local name (`w:val` for `val`).
fn attr<'a>(attrs: &'a [(Vec<u8>, String)], name: &[u8]) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| {
            let local = k.rsplit(|&c| c == b':').next().unwrap_or(k);
            local == name
        })
        .map(|(_, v)| v.as_str())
}

/// Collects blocks of Markdown: paragraphs and tables, nested tables flattened into
/// their cell.
#[derive(Default)]
struct Blocks {
    out: Vec<String>,
    para: String,
    /// Heading level or list level of the current paragraph.
    heading: Option<usize>,
    list: Option<usize>,
    /// Open tables: rows of cells.
    tables: Vec<Vec<Vec<String>>>,
    cell: Vec<String>,
}

impl Blocks {
    fn end_paragraph(&mut self) {
        let text = std::mem::take(&mut self.para);
        let text = text.trim();
        let (heading, list) = (self.heading.take(), self.list.take());
        if text.is_empty() {
            return;
        }
        if !self.tables.is_empty() {
            self.cell.push(text.to_owned());
            return;
        }
        let line = match (heading, list) {
            (Some(level), _) => format!("{} {text}", "#".repeat(level.clamp(1, 6))),
            (None, Some(level)) => format!("{}- {text}", "  ".repeat(level.min(8))),
            (None, None) => text.to_owned(),
        };
        self.out.push(line);
    }

    fn start_table(&mut self) {
        self.tables.push(Vec::new());
    }

    fn start_row(&mut self) {
        if self.tables.len() == 1
            && let Some(t) = self.tables.last_mut()
        {
            t.push(Vec::new());
        }
    }

    fn end_cell(&mut self) {
        if self.tables.len() == 1 {
            let text = std::mem::take(&mut self.cell).join(" ");
            if let Some(row) = self.tables.last_mut().and_then(|t| t.last_mut()) {
                row.push(text);
            }
        }
    }

    fn end_table(&mut self) {
        if let Some(rows) = self.tables.pop()
            && self.tables.is_empty()
        {
            let table = markdown_table(&rows);
            if !table.is_empty() {
                self.out.push(table.trim_end().to_owned());
            }
        }
    }

    fn finish(mut self) -> Vec<String> {
        self.end_paragraph();
        self.out
    }
}

/// A Word document.
pub fn docx(bytes: &[u8]) -> Result<String, DocError> {
    let mut archive = zipguard::open(bytes)?;
    let xml = zipguard::member(&mut archive, "word/document.xml")?.ok_or(DocError::Failed)?;
    let mut b = Blocks::default();
    let mut in_text = false;
    walk(&xml, |ev| match ev {
        Ev::Start(n, a) => match n.as_slice() {
            b"p" => b.para.clear(),
            b"pStyle" => {
                let style = attr(&a, b"val").unwrap_or("").to_ascii_lowercase();
                if style == "title" {
                    b.heading = Some(1);
                } else if let Some(level) = style.strip_prefix("heading") {
                    b.heading = level.trim().parse().ok();
                }
            }
            b"ilvl" => b.list = attr(&a, b"val").and_then(|v| v.parse().ok()),
            b"numPr" => b.list = b.list.or(Some(0)),
            b"t" => in_text = true,
            b"tab" if !in_text => b.para.push('\t'),
            b"br" | b"cr" => b.para.push(' '),
            b"tbl" => b.start_table(),
            b"tr" => b.start_row(),
            _ => {}
        },
        Ev::End(n) => match n.as_slice() {
            b"t" => in_text = false,
            b"p" => b.end_paragraph(),
            b"tc" => b.end_cell(),
            b"tbl" => b.end_table(),
            _ => {}
        },
        Ev::Text(t) if in_text => b.para.push_str(&t),
        Ev::Text(_) => {}
    })?;
    Ok(b.finish().join("\n\n") + "\n")
}

/// Targets of a part's relationships (`Id` → `Target`, `Type` suffix).
fn relationships(xml: &str) -> Result<Vec<(String, String, String)>, DocError> {
    let mut rels = Vec::new();
    walk(xml, |ev| {
        if let Ev::Start(n, a) = ev
            && n == b"Relationship"
        {
            rels.push((
                attr(&a, b"Id").unwrap_or("").to_owned(),
                attr(&a, b"Target").unwrap_or("").to_owned(),
                attr(&a, b"Type").unwrap_or("").to_owned(),
            ));
        }
    })?;
    Ok(rels)
}

/// `base` directory joined with a relative `target` (`../notesSlides/x.xml`).
fn resolve(base: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_owned();
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in target.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// A PowerPoint deck.
pub fn pptx(bytes: &[u8]) -> Result<String, DocError> {
    let mut archive = zipguard::open(bytes)?;
    let slides = slide_order(&mut archive)?;
    let mut out = Vec::new();
    for (number, slide) in slides.iter().enumerate() {
        let Some(xml) = zipguard::member(&mut archive, slide)? else {
            continue;
        };
        out.push(format!("<!-- Slide number: {} -->", number + 1));
        out.extend(slide_blocks(&xml, false)?);
        let (dir, file) = slide.rsplit_once('/').unwrap_or(("", slide));
        let rels_name = format!("{dir}/_rels/{file}.rels");
        if let Some(rels) = zipguard::member(&mut archive, &rels_name)? {
            for (_, target, kind) in relationships(&rels)? {
                if kind.ends_with("/notesSlide")
                    && let Some(notes) = zipguard::member(&mut archive, &resolve(dir, &target))?
                {
                    let notes = slide_blocks(&notes, true)?;
                    if !notes.is_empty() {
                        out.push("### Notes:".to_owned());
                        out.extend(notes);
                    }
                }
            }
        }
    }
    Ok(out.join("\n\n") + "\n")
}

/// Slide parts in presentation order; numeric order of the part names when the
/// presentation part does not say.
fn slide_order(archive: &mut Archive<'_>) -> Result<Vec<String>, DocError> {
    let mut ordered = Vec::new();
    if let (Some(pres), Some(rels)) = (
        zipguard::member(archive, "ppt/presentation.xml")?,
        zipguard::member(archive, "ppt/_rels/presentation.xml.rels")?,
    ) {
        let rels = relationships(&rels)?;
        walk(&pres, |ev| {
            if let Ev::Start(n, a) = ev
                && n == b"sldId"
                && let Some(id) = a
                    .iter()
                    .find(|(k, _)| k.contains(&b':') && k.ends_with(b":id"))
                    .map(|(_, v)| v.as_str())
                && let Some((_, target, _)) = rels.iter().find(|(rid, _, _)| rid == id)
            {
                ordered.push(resolve("ppt", target));
            }
        })?;
    }
    if ordered.is_empty() {
        let mut numbered: Vec<(u32, String)> = zipguard::names(archive)
            .into_iter()
            .filter_map(|name| {
                let n = name
                    .strip_prefix("ppt/slides/slide")?
                    .strip_suffix(".xml")?
                    .parse()
                    .ok()?;
                Some((n, name))
            })
            .collect();
        numbered.sort();
        ordered = numbered.into_iter().map(|(_, name)| name).collect();
    }
    Ok(ordered)
}

/// The blocks of one slide (or notes page: only its body placeholder).
fn slide_blocks(xml: &str, notes: bool) -> Result<Vec<String>, DocError> {
    let mut b = Blocks::default();
    let mut in_text = false;
    // Placeholder type of the current shape, and whether its text is kept.
    let mut placeholder: Option<String> = None;
    let mut keep = !notes;
    walk(xml, |ev| match ev {
        Ev::Start(n, a) => match n.as_slice() {
            b"sp" => {
                placeholder = None;
                keep = !notes;
            }
            b"ph" => {
                let kind = attr(&a, b"type").unwrap_or("body").to_owned();
                keep = !notes || kind == "body";
                placeholder = Some(kind);
            }
            b"p" => {
                b.para.clear();
                if matches!(placeholder.as_deref(), Some("title" | "ctrTitle")) && !notes {
                    b.heading = Some(1);
                }
            }
            b"t" => in_text = true,
            b"br" => b.para.push(' '),
            b"tbl" => b.start_table(),
            b"tr" => b.start_row(),
            _ => {}
        },
        Ev::End(n) => match n.as_slice() {
            b"t" => in_text = false,
            b"p" => {
                if keep {
                    b.end_paragraph();
                } else {
                    b.para.clear();
                    b.heading = None;
                }
            }
            b"tc" => b.end_cell(),
            b"tbl" => b.end_table(),
            _ => {}
        },
        Ev::Text(t) if in_text => b.para.push_str(&t),
        Ev::Text(_) => {}
    })?;
    Ok(b.finish())
}
