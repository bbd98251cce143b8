//! Minimal documents written by the tests themselves (no binary fixtures): just the parts
//! each format's reader needs.

use std::io::Write;
use zip::write::SimpleFileOptions;

/// A zip of `(name, content)` members, deflated.
pub fn zip_of(members: &[(&str, String)]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content) in members {
        out.start_file(*name, SimpleFileOptions::default()).unwrap();
        out.write_all(content.as_bytes()).unwrap();
    }
    out.finish().unwrap().into_inner()
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// A paragraph of a Word body; `style` like `Heading1`, `list` for a numbered item.
pub fn docx_paragraph(text: &str, style: Option<&str>, list: bool) -> String {
    let mut ppr = String::new();
    if let Some(style) = style {
        ppr.push_str(&format!("<w:pStyle w:val=\"{style}\"/>"));
    }
    if list {
        ppr.push_str("<w:numPr><w:ilvl w:val=\"0\"/><w:numId w:val=\"1\"/></w:numPr>");
    }
    format!(
        "<w:p><w:pPr>{ppr}</w:pPr><w:r><w:t xml:space=\"preserve\">{}</w:t></w:r></w:p>",
        esc(text)
    )
}

/// A Word table of text cells.
pub fn docx_table(rows: &[&[&str]]) -> String {
    let mut out = String::from("<w:tbl>");
    for row in rows {
        out.push_str("<w:tr>");
        for cell in *row {
            out.push_str(&format!(
                "<w:tc>{}</w:tc>",
                docx_paragraph(cell, None, false)
            ));
        }
        out.push_str("</w:tr>");
    }
    out.push_str("</w:tbl>");
    out
}

/// A `.docx` whose body is `blocks` (from [`docx_paragraph`], [`docx_table`]).
pub fn docx(blocks: &[String]) -> Vec<u8> {
    let body = blocks.concat();
    zip_of(&[
        ("[Content_Types].xml", r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_owned()),
        // The package relationship names the main part, as Word writes it (readers such
        // as mammoth find the body through it).
        ("_rels/.rels", r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_owned()),
        ("word/document.xml", format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>"#)),
    ])
}

/// An `.xlsx` of sheets `(name, rows)` with inline strings.
pub fn xlsx(sheets: &[(&str, &[&[&str]])]) -> Vec<u8> {
    let mut members = vec![
        ("[Content_Types].xml".to_owned(), r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>"#.to_owned()),
    ];
    members.push(("_rels/.rels".to_owned(), r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.to_owned()));
    let mut list = String::new();
    let mut rels = String::new();
    for (i, (name, rows)) in sheets.iter().enumerate() {
        let n = i + 1;
        list.push_str(&format!(
            r#"<sheet name="{}" sheetId="{n}" r:id="rId{n}"/>"#,
            esc(name)
        ));
        rels.push_str(&format!(r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#));
        let mut data = String::new();
        for (r, row) in rows.iter().enumerate() {
            data.push_str(&format!("<row r=\"{}\">", r + 1));
            for (c, cell) in row.iter().enumerate() {
                let col = (b'A' + c as u8) as char;
                if let Ok(number) = cell.parse::<f64>() {
                    data.push_str(&format!("<c r=\"{col}{}\"><v>{number}</v></c>", r + 1));
                } else {
                    data.push_str(&format!(
                        "<c r=\"{col}{}\" t=\"inlineStr\"><is><t>{}</t></is></c>",
                        r + 1,
                        esc(cell)
                    ));
                }
            }
            data.push_str("</row>");
        }
        members.push((format!("xl/worksheets/sheet{n}.xml"), format!(r#"<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{data}</sheetData></worksheet>"#)));
    }
    members.push(("xl/workbook.xml".to_owned(), format!(r#"<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>{list}</sheets></workbook>"#)));
    members.push(("xl/_rels/workbook.xml.rels".to_owned(), format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#)));
    let borrowed: Vec<(&str, String)> = members
        .iter()
        .map(|(n, c)| (n.as_str(), c.clone()))
        .collect();
    zip_of(&borrowed)
}

/// A `.pptx` of slides `(title, body lines, notes)`.
pub fn pptx(slides: &[(&str, &[&str], Option<&str>)]) -> Vec<u8> {
    const P: &str = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships""#;
    let shape = |ph: &str, lines: &[&str]| {
        let paras: String = lines
            .iter()
            .map(|l| format!("<a:p><a:r><a:t>{}</a:t></a:r></a:p>", esc(l)))
            .collect();
        format!(
            r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="x"/><p:cNvSpPr/><p:nvPr><p:ph type="{ph}"/></p:nvPr></p:nvSpPr><p:txBody>{paras}</p:txBody></p:sp>"#
        )
    };
    let mut members = Vec::new();
    let mut ids = String::new();
    let mut rels = String::new();
    for (i, (title, body, notes)) in slides.iter().enumerate() {
        let n = i + 1;
        ids.push_str(&format!(r#"<p:sldId id="{}" r:id="rId{n}"/>"#, 255 + n));
        rels.push_str(&format!(r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide{n}.xml"/>"#));
        members.push((format!("ppt/slides/slide{n}.xml"), format!(r#"<?xml version="1.0"?><p:sld {P}><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:sld>"#, shape("title", &[title]), shape("body", body))));
        if let Some(notes) = notes {
            members.push((format!("ppt/slides/_rels/slide{n}.xml.rels"), format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide" Target="../notesSlides/notesSlide{n}.xml"/></Relationships>"#)));
            members.push((format!("ppt/notesSlides/notesSlide{n}.xml"), format!(r#"<?xml version="1.0"?><p:notes {P}><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:notes>"#, shape("sldImg", &[]), shape("body", &[notes]))));
        }
    }
    members.push(("ppt/presentation.xml".to_owned(), format!(r#"<?xml version="1.0"?><p:presentation {P}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"#)));
    members.push(("ppt/_rels/presentation.xml.rels".to_owned(), format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#)));
    let borrowed: Vec<(&str, String)> = members
        .iter()
        .map(|(n, c)| (n.as_str(), c.clone()))
        .collect();
    zip_of(&borrowed)
}

/// A one-page PDF with one text line per entry of `lines` (Helvetica, WinAnsi).
pub fn pdf(lines: &[&str]) -> Vec<u8> {
    pdf_pages(&[lines])
}

/// A PDF with one page per entry of `pages`, each with one text line per entry.
pub fn pdf_pages(pages: &[&[&str]]) -> Vec<u8> {
    let contents: Vec<Vec<u8>> = pages.iter().map(|lines| text_ops(lines)).collect();
    pdf_of(contents, false)
}

/// A hostile PDF: `pages` pages whose Flate-compressed content streams each inflate to
/// about `inflated_bytes` of text operators (a small file, much parsing).
pub fn pdf_inflating(pages: usize, inflated_bytes: usize) -> Vec<u8> {
    let op = b"(Lorem ipsum dolor sit amet) Tj T*\n";
    let mut ops = text_ops(&[]);
    ops.truncate(ops.len() - b"ET\n".len());
    while ops.len() < inflated_bytes {
        ops.extend_from_slice(op);
    }
    ops.extend_from_slice(b"ET\n");
    pdf_of(vec![ops; pages], true)
}

/// The content stream of one page: a text object with one line per entry of `lines`.
fn text_ops(lines: &[&str]) -> Vec<u8> {
    use lopdf::Object;
    use lopdf::content::{Content, Operation};
    let mut ops = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 12.into()]),
        Operation::new("TL", vec![14.into()]),
        Operation::new("Td", vec![72.into(), 720.into()]),
    ];
    for line in lines {
        ops.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
        ops.push(Operation::new("T*", vec![]));
    }
    ops.push(Operation::new("ET", vec![]));
    let mut out = Content { operations: ops }.encode().unwrap();
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// A PDF of one page per content stream (Helvetica, WinAnsi), compressed if asked.
fn pdf_of(contents: Vec<Vec<u8>>, compress: bool) -> Vec<u8> {
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica", "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids: Vec<Object> = Vec::new();
    for content in contents {
        let mut stream = Stream::new(dictionary! {}, content);
        if compress {
            stream.compress().unwrap();
        }
        let content_id = doc.add_object(stream);
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(pages_id, Object::Dictionary(dictionary! {
        "Type" => "Pages", "Kids" => kids, "Count" => count,
        "Resources" => resources_id, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
    }));
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A zip whose central directory declares more than 50 MB of expansion (the members
/// are tiny: only the declaration is checked first), as a `.docx`.
pub fn zip_bomb() -> Vec<u8> {
    let zeros = "0".repeat(6_000_000);
    let members: Vec<(String, String)> = (0..9)
        .map(|i| (format!("word/part{i}.xml"), zeros.clone()))
        .collect();
    let borrowed: Vec<(&str, String)> = members
        .iter()
        .map(|(n, c)| (n.as_str(), c.clone()))
        .collect();
    zip_of(&borrowed)
}
