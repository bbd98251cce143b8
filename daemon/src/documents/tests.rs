//! Extraction of documents the tests write themselves: what a reader needs survives, in
//! order, and every refusal has the reference's message.

use super::*;
use redctx_test_support::documents as make;

fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

#[test]
fn docx_keeps_headings_paragraphs_lists_and_tables_in_order() {
    let bytes = make::docx(&[
        make::docx_paragraph("Quarterly plan", Some("Title"), false),
        make::docx_paragraph("Scope", Some("Heading2"), false),
        make::docx_paragraph("First a & b < c.", None, false),
        make::docx_paragraph("item one", None, true),
        make::docx_table(&[&["Name", "Owner"], &["Alpha | Beta", "Dana"]]),
        make::docx_paragraph("Last line.", None, false),
    ]);
    let md = convert(DocumentFormat::Docx, &bytes).unwrap();
    assert_eq!(
        md,
        "# Quarterly plan\n\n## Scope\n\nFirst a & b < c.\n\n- item one\n\n\
         | Name | Owner |\n| --- | --- |\n| Alpha \\| Beta | Dana |\n\nLast line.\n"
    );
}

#[test]
fn xlsx_sheets_are_headings_over_tables() {
    let bytes = make::xlsx(&[
        ("Budget", &[&["Item", "Cost"], &["Rent", "1200"]]),
        ("Staff", &[&["Name"], &["Dana"]]),
    ]);
    let md = convert(DocumentFormat::Xlsx, &bytes).unwrap();
    assert_eq!(
        md,
        "## Budget\n\n| Item | Cost |\n| --- | --- |\n| Rent | 1200 |\n\n\
         ## Staff\n\n| Name |\n| --- |\n| Dana |\n"
    );
}

#[test]
fn pptx_slides_have_titles_bodies_and_notes() {
    let bytes = make::pptx(&[
        ("Kickoff", &["Goals", "Timeline"], Some("Say hello")),
        ("Next", &["Ship it"], None),
    ]);
    let md = convert(DocumentFormat::Pptx, &bytes).unwrap();
    assert_eq!(
        md,
        "<!-- Slide number: 1 -->\n\n# Kickoff\n\nGoals\n\nTimeline\n\n### Notes:\n\nSay hello\n\n\
         <!-- Slide number: 2 -->\n\n# Next\n\nShip it\n"
    );
}

#[test]
fn pdf_text_comes_out_one_line_per_line() {
    let bytes = make::pdf(&["Contract between parties", "Signed in Berlin"]);
    let md = convert(DocumentFormat::Pdf, &bytes).unwrap();
    let lines: Vec<&str> = md.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        ["Contract between parties", "Signed in Berlin"],
        "{md:?}"
    );
}

#[test]
fn refusals_have_the_reference_messages() {
    // Declared expansion over 50 MB, and over 2,000 members: refused before parsing.
    let bomb = make::zip_bomb();
    assert!(bomb.len() < 1_000_000);
    assert_eq!(convert(DocumentFormat::Docx, &bomb), Err(DocError::Limit));
    let many: Vec<(String, String)> = (0..2001)
        .map(|i| (format!("m{i}"), String::new()))
        .collect();
    let many: Vec<(&str, String)> = many.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    assert_eq!(
        convert(DocumentFormat::Xlsx, &make::zip_of(&many)),
        Err(DocError::Limit)
    );
    // Truncated and garbage files are malformed, in every format.
    let docx = make::docx(&[make::docx_paragraph("text", None, false)]);
    for format in DocumentFormat::ALL {
        assert_eq!(
            convert(format, &docx[..docx.len() / 2]),
            Err(DocError::Failed),
            "{format:?}"
        );
        assert_eq!(
            convert(format, b"not a document"),
            Err(DocError::Failed),
            "{format:?}"
        );
    }
    // No text at all.
    let empty = make::docx(&[make::docx_paragraph("   ", None, false)]);
    assert_eq!(convert(DocumentFormat::Docx, &empty), Err(DocError::NoText));
    // Input over 5,000,000 bytes is refused before conversion.
    let big = vec![b' '; 5_000_001];
    assert_eq!(
        extract(DocumentFormat::Pdf, &big, DEADLINE),
        Err(DocError::InputLimit)
    );
    // Output over 1,000,000 characters.
    let long = "word ".repeat(210_000);
    let huge = make::docx(&[make::docx_paragraph(&long, None, false)]);
    assert_eq!(convert(DocumentFormat::Docx, &huge), Err(DocError::Limit));
    assert_eq!(
        DocError::NoText.to_string(),
        "Document contains no extractable text. Scanned documents require OCR outside this MCP."
    );
    assert_eq!(
        DocError::Failed.to_string(),
        "Document extraction failed. The document may be malformed, encrypted, or unsupported."
    );
    assert_eq!(
        DocError::from_code(DocError::NoText.code()),
        DocError::NoText
    );
    assert_eq!(DocError::from_code(139), DocError::Failed);
}

#[test]
fn the_in_process_fallback_extracts_within_the_deadline() {
    let bytes = make::docx(&[make::docx_paragraph("hello there", None, false)]);
    let md = extract(DocumentFormat::Docx, &bytes, DEADLINE).unwrap();
    assert_eq!(words(&md), ["hello", "there"]);
}

/// Extractions for tool calls take one of a few daemon-wide slots: a third waits until
/// one of two running ones ends.
#[test]
fn call_extractions_wait_for_a_free_slot() {
    assert_eq!(MAX_CALL_EXTRACTIONS, 2);
    let first = WorkerSlot::take().unwrap();
    let second = WorkerSlot::take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let third = std::thread::spawn(move || {
        let _slot = WorkerSlot::take().unwrap();
        tx.send(()).unwrap();
    });
    // Both slots are held here, so nothing (this test or another) lets the third in.
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(200))
            .is_err()
    );
    drop(first);
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("a freed slot is taken");
    third.join().unwrap();
    drop(second);
}

/// A worker whose call ends is killed then, not at its deadline: an agent that cancels
/// reads of slow documents does not keep the call slots busy.
#[test]
fn a_worker_ends_with_the_call_it_runs_for() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let hang = dir.path().join("hang.sh");
    std::fs::write(&hang, "#!/bin/sh\nexec sleep 60\n").unwrap();
    std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cancel = crate::cancel::Cancel::new();
    let stop = crate::cancel::Stop::on(&cancel);
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            cancel.cancel();
        })
    };
    let started = std::time::Instant::now();
    let result = stop.around(|| {
        worker::run(
            &hang,
            DocumentFormat::Pdf,
            b"%PDF",
            DEADLINE,
            worker::Priority::Normal,
        )
    });
    canceller.join().unwrap();
    assert_eq!(result, Err(DocError::Cancelled));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Without a stop, the deadline still rules.
    assert_eq!(
        worker::run(
            &hang,
            DocumentFormat::Pdf,
            b"%PDF",
            std::time::Duration::from_millis(200),
            worker::Priority::Normal,
        ),
        Err(DocError::Deadline)
    );
}
