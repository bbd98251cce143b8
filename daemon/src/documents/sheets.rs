//! Spreadsheets (`.xlsx`, `.xls`) with calamine: each sheet in workbook order as a
//! `## <sheet name>` heading and a Markdown table of its used range (first row as the
//! header, one row one line), as MarkItDown lays them out.

use super::{DocError, markdown_table};
use calamine::{Data, Reader, Xls, Xlsx, open_workbook_from_rs};
use std::io::Cursor;

/// A workbook; `xls` picks the legacy binary format.
pub fn workbook(bytes: &[u8], xls: bool) -> Result<String, DocError> {
    let cursor = Cursor::new(bytes);
    let sheets = if xls {
        let mut book: Xls<_> = open_workbook_from_rs(cursor).map_err(|_| DocError::Failed)?;
        ranges(&mut book)?
    } else {
        let mut book: Xlsx<_> = open_workbook_from_rs(cursor).map_err(|_| DocError::Failed)?;
        ranges(&mut book)?
    };
    let mut out = Vec::new();
    for (name, rows) in sheets {
        out.push(format!("## {name}"));
        let table = markdown_table(&rows);
        if !table.is_empty() {
            out.push(table.trim_end().to_owned());
        }
    }
    Ok(out.join("\n\n") + "\n")
}

/// A sheet's name and its cells as text, row by row.
type Sheet = (String, Vec<Vec<String>>);

/// Each sheet in workbook order.
fn ranges<RS, R>(book: &mut R) -> Result<Vec<Sheet>, DocError>
where
    RS: std::io::Read + std::io::Seek,
    R: Reader<RS>,
{
    let mut sheets = Vec::new();
    for name in book.sheet_names() {
        let range = book.worksheet_range(&name).map_err(|_| DocError::Failed)?;
        let rows = range
            .rows()
            .map(|row| row.iter().map(cell).collect())
            .collect();
        sheets.push((name, rows));
    }
    Ok(sheets)
}

/// A cell as its value reads: integral floats without `.0`, empty cells empty.
fn cell(data: &Data) -> String {
    match data {
        Data::Empty => String::new(),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => other.to_string(),
    }
}
