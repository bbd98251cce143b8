//! Documents compared with the reference (`redctx --documents cat`, MarkItDown in
//! `.venv-documents`): the same words per document, the same refusals and messages.
//!
//! The Markdown is not byte-identical (COMPAT: extracted in Rust, laid out like
//! MarkItDown but not by it), so text is compared as the set of its lower-case words;
//! each format's overlap (Jaccard) is printed and must reach the floor below. Both sides
//! run `balanced` (the reference's default) on one root with the built-in detector layer
//! off, so redaction treats the words alike.
//!
//! Oracle: `redctx_test_support::Oracle::documents`; `REDCTX_SKIP_ORACLE=1` skips.

mod support;

use redctx_test_support::Oracle;
use redctx_test_support::documents as make;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use support::Env;
use support::fixtures::write;

/// Word overlap every format must reach. The differences COMPAT lists (list markers,
/// `NaN` in empty cells, pdfminer's layout) add or drop a few tokens, not words.
const FLOOR: f64 = 0.9;

fn words(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip(1) // the `--- @p_… path lines a-b ---` header
        .flat_map(|line| line.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 2 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| w != "nan") // pandas' empty cell (COMPAT)
        .collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let inter = a.intersection(b).count() as f64;
    let union = a.union(b).count() as f64;
    if union == 0.0 { 1.0 } else { inter / union }
}

/// The reference's `redctx --root R --documents --mode balanced cat PATH`: (exit code,
/// stdout, stderr).
fn reference(program: &Path, root: &Path, path: &str) -> (i32, String, String) {
    let out = Command::new(program)
        .args([
            "--root",
            root.to_str().unwrap(),
            "--documents",
            "--mode",
            "balanced",
        ])
        .args(["cat", path])
        .env_remove("REDACTED_CONTEXT_SALT")
        .output()
        .expect("run the reference");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ours(env: &Env, root: &Path, path: &str) -> (i32, String, String) {
    let root = root.to_str().unwrap();
    env.run(&[
        "--root",
        root,
        "--documents",
        "--mode",
        "balanced",
        "cat",
        path,
    ])
}

fn corpus(root: &Path, python: &Path) -> Vec<(&'static str, &'static str)> {
    let docx = make::docx(&[
        make::docx_paragraph("quarterly migration plan", Some("Heading1"), false),
        make::docx_paragraph(
            "the storage cluster moves to the new region before the audit window closes",
            None,
            false,
        ),
        make::docx_paragraph("freeze deploys during the cutover", None, true),
        make::docx_paragraph("verify backups twice", None, true),
        make::docx_table(&[
            &["component", "owner", "status"],
            &["storage", "platform", "ready"],
            &["billing", "finance", "blocked"],
        ]),
    ]);
    write(root, "plan.docx", docx);
    // Spreadsheets and slides as the libraries people script them with write them
    // (openpyxl, python-pptx, both in the documents oracle's venv).
    let script = format!(
        r#"
import openpyxl, pptx
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "costs"
for row in [["item", "amount", "note"], ["compute", 1200, "reserved instances"], ["network", 340, "egress heavy"]]:
    ws.append(row)
ws2 = wb.create_sheet("travel")
for row in [["trip", "days"], ["onsite workshop", 3]]:
    ws2.append(row)
wb.save(r"{xlsx}")
deck = pptx.Presentation()
for title, lines, notes in [("roadmap overview", ["three milestones this year", "hiring stays flat"], "speaker notes mention the hiring freeze"), ("risks", ["vendor lock", "schedule slip"], None)]:
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = "\n".join(lines)
    if notes:
        slide.notes_slide.notes_text_frame.text = notes
deck.save(r"{pptx}")
"#,
        xlsx = root.join("budget.xlsx").display(),
        pptx = root.join("deck.pptx").display(),
    );
    let made = Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("run the documents venv's Python");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    write(
        root,
        "memo.pdf",
        make::pdf(&[
            "memo about the office move",
            "desks are assigned by team",
            "parking permits expire in spring",
        ]),
    );
    vec![
        ("docx", "plan.docx"),
        ("xlsx", "budget.xlsx"),
        ("pptx", "deck.pptx"),
        ("pdf", "memo.pdf"),
    ]
}

#[test]
fn extracted_documents_hold_the_references_words() {
    let Some(program) = Oracle::documents() else {
        println!("SKIPPED: REDCTX_SKIP_ORACLE=1");
        return;
    };
    let env = Env::new();
    let root = env.root_dir("documents-differential", "kb");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\nsalt = \"documents-differential\"\ndetectors = false\n",
    );
    let mut report = Vec::new();
    let python = program.with_file_name("python");
    for (format, path) in corpus(&root, &python) {
        let (ref_code, ref_out, ref_err) = reference(&program, &root, path);
        assert_eq!(ref_code, 0, "reference {path}: {ref_err}");
        let (code, out, err) = ours(&env, &root, path);
        assert_eq!(code, 0, "redctx {path}: {err}");
        let (theirs, mine) = (words(&ref_out), words(&out));
        let overlap = jaccard(&theirs, &mine);
        report.push(format!(
            "{format}: overlap {overlap:.3} ({} words reference, {} ours; only reference: {:?}; only ours: {:?})",
            theirs.len(),
            mine.len(),
            theirs.difference(&mine).collect::<Vec<_>>(),
            mine.difference(&theirs).collect::<Vec<_>>(),
        ));
        assert!(overlap >= FLOOR, "{}", report.join("\n"));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn refusals_match_the_reference() {
    let Some(program) = Oracle::documents() else {
        println!("SKIPPED: REDCTX_SKIP_ORACLE=1");
        return;
    };
    let env = Env::new();
    let root = env.root_dir("documents-refusals", "kb");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\nsalt = \"documents-refusals\"\ndetectors = false\n",
    );
    write(&root, "legacy.doc", "legacy bytes");
    write(&root, "slides.ppt", "legacy bytes");
    // A zip that is no Office document, and one cut in half.
    write(&root, "broken.docx", "PK\u{3}\u{4} not really a zip");
    let whole = make::docx(&[make::docx_paragraph("some text", None, false)]);
    write(&root, "truncated.docx", &whole[..whole.len() / 2]);
    write(&root, "bomb.docx", make::zip_bomb());
    let mut big = make::pdf(&["big"]);
    big.resize(5_100_000, b' ');
    write(&root, "big.pdf", big);
    for path in [
        "legacy.doc",
        "slides.ppt",
        "broken.docx",
        "truncated.docx",
        "bomb.docx",
        "big.pdf",
    ] {
        let (ref_code, ref_out, ref_err) = reference(&program, &root, path);
        let (code, out, err) = ours(&env, &root, path);
        assert_eq!(
            (code != 0, out.is_empty()),
            (ref_code != 0, ref_out.is_empty()),
            "{path}: reference {ref_code} {ref_out:?} {ref_err:?}; ours {code} {out:?} {err:?}"
        );
        assert_eq!(
            err.trim_end().rsplit('\n').next(),
            ref_err.trim_end().rsplit('\n').next(),
            "{path}"
        );
    }
}
