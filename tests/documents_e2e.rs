//! Documents (`--documents`, spec 8) on a real `redctxd` and its extraction worker: what
//! a user sees. Every document is written by the test itself
//! (`redctx_test_support::documents`).

mod support;

use redctx_test_support::documents as make;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;
use std::path::Path;
use support::fixtures::write;
use support::{Env, path_id};

const SALT: &str = "documents-salt";

fn config(extra: &str) -> String {
    format!(
        "[redaction]\nsalt = \"{SALT}\"\nclients = [\"Globex Industries\"]\npeople = [\"Dana Whitfield\"]\n{extra}"
    )
}

/// A root holding one document of each format, each with the client name planted.
fn documents_root(env: &Env, extra_config: &str) -> std::path::PathBuf {
    let root = env.root_dir("roots", "kb");
    write(&root, ".agent-context-redactor.toml", config(extra_config));
    let docx = make::docx(&[
        make::docx_paragraph("Master agreement", Some("Heading1"), false),
        make::docx_table(&[
            &["Party", "Contact"],
            &["Globex Industries", "Dana Whitfield"],
        ]),
    ]);
    write(&root, "contract.docx", docx);
    write(
        &root,
        "budget.XLSX",
        make::xlsx(&[(
            "Clients",
            &[&["Name", "Fee"], &["Globex Industries", "1200"]],
        )]),
    );
    write(
        &root,
        "deck.pptx",
        make::pptx(&[("Pitch", &["For Globex Industries"], Some("Dana presents"))]),
    );
    write(
        &root,
        "scan.pdf",
        make::pdf(&["Invoice for Globex Industries"]),
    );
    write(&root, "old.doc", "legacy bytes");
    write(&root, "notes.md", "plain text\n");
    root
}

fn refusal(env: &Env, root: &Path, flags: &[&str], command: &str, path: &str) -> String {
    let mut args = vec!["--root", root.to_str().unwrap()];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[command, path]);
    let (code, out, err) = env.run(&args);
    assert_eq!(code, 1, "{command} {path}: {out}");
    err.trim_end().to_owned()
}

#[test]
fn documents_are_read_as_prose_in_code_mode_whatever_their_suffix() {
    let env = Env::new();
    let root = env.root_dir("roots", "prose");
    write(&root, ".agent-context-redactor.toml", config(""));
    let sentence = "Meeting with Alice Thornbury and Bob Kowalczyk from Globalex Holdings Ltd.";
    write(
        &root,
        "minutes.docx",
        make::docx(&[make::docx_paragraph(sentence, None, false)]),
    );
    write(
        &root,
        "contacts.xlsx",
        make::xlsx(&[("Contacts", &[&["Name"], &["Alice Thornbury"]])]),
    );
    write(&root, "minutes.md", format!("{sentence}\n"));
    let read = |path: &str| env.ok_on(&root, &["--documents", "cat", path]);
    let markdown = read("minutes.md");
    for path in ["minutes.docx", "contacts.xlsx"] {
        let text = read(path);
        for raw in ["Thornbury", "Kowalczyk", "Globalex"] {
            assert!(!text.contains(raw), "{path}: {raw} in {text}");
        }
    }
    // The same sentence gets the same placeholders as in the Markdown note.
    let docx = read("minutes.docx");
    let line = markdown.lines().find(|l| l.starts_with("Meeting")).unwrap();
    assert!(docx.contains(line), "{docx}\n{markdown}");
}

#[test]
fn documents_are_extracted_redacted_and_refused_with_the_reference_messages() {
    let env = Env::new();
    let root = documents_root(&env, "");
    // Without the flag: the reference's default exclusions and messages.
    let listing = env.ok_on(&root, &["ls", "."]);
    assert!(!listing.contains("contract.docx"), "{listing}");
    assert_eq!(
        refusal(&env, &root, &["--include-private"], "cat", "contract.docx"),
        "Document extraction is disabled. Install the documents extra and start with --documents."
    );
    let flags = ["--documents"];
    assert_eq!(
        refusal(&env, &root, &flags, "cat", "old.doc"),
        "Legacy .doc and .ppt files are unsupported. Export them as .docx, .pptx, or PDF first."
    );
    // With it: the Markdown, redacted; the client name of a table cell is a placeholder.
    let on = |args: &[&str]| {
        let mut all = vec!["--documents"];
        all.extend_from_slice(args);
        env.ok_on(&root, &all)
    };
    let contract = on(&["cat", "contract.docx"]);
    assert!(contract.contains("# Master agreement"), "{contract}");
    assert!(contract.contains("| Party | Contact |"), "{contract}");
    assert!(contract.contains("[CLIENT_"), "{contract}");
    let budget = on(&["cat", "budget.XLSX"]);
    assert!(
        budget.contains("## Clients") && budget.contains("| 1200 |"),
        "{budget}"
    );
    let deck = on(&["cat", "deck.pptx"]);
    assert!(
        deck.contains("# Pitch") && deck.contains("### Notes:"),
        "{deck}"
    );
    let pdf = on(&["cat", "scan.pdf"]);
    assert!(pdf.contains("Invoice for [CLIENT_"), "{pdf}");
    for text in [&contract, &budget, &deck, &pdf] {
        assert!(
            !text.contains("Globex") && !text.contains("Whitfield"),
            "{text}"
        );
    }
    // Search finds words of documents, by their extracted line.
    let hits = on(&["grep", "Invoice"]);
    assert!(hits.contains(":1:scan.pdf:Invoice for [CLIENT_"), "{hits}");
    // The failures, each with its message on a read; the daemon survives them.
    write(&root, "bomb.docx", make::zip_bomb());
    write(
        &root,
        "broken.pptx",
        &make::pptx(&[("T", &["x"], None)])[..100],
    );
    assert_eq!(
        refusal(&env, &root, &flags, "cat", "bomb.docx"),
        "Document expanded-size or extracted-text limit exceeded."
    );
    assert_eq!(
        refusal(&env, &root, &flags, "cat", "broken.pptx"),
        "Document extraction failed. The document may be malformed, encrypted, or unsupported."
    );
    write(&root, "empty.docx", make::docx(&[]));
    assert_eq!(
        refusal(&env, &root, &flags, "cat", "empty.docx"),
        "Document contains no extractable text. Scanned documents require OCR outside this MCP."
    );
    write(&root, "big.pdf", vec![b'%'; 5_000_001]);
    assert_eq!(
        refusal(&env, &root, &flags, "cat", "big.pdf"),
        "Document input byte limit exceeded."
    );
    assert!(on(&["cat", "notes.md"]).ends_with("\nplain text\n"));
    // A whole-root search leaves the four failing documents out and says so; the
    // reference fails it on the first one, so one scanned PDF anywhere broke every
    // search (COMPAT.md).
    let hits = on(&["grep", "plain"]);
    assert!(hits.contains(":1:notes.md:plain text\n"), "{hits}");
    assert!(
        hits.ends_with(
            "[SKIPPED: 4 files that could not be read (over the size limit, no document \
             text, or a detector failure)]\n"
        ),
        "{hits}"
    );
    // `documents = true` in the config turns it on as the flag does.
    let root2 = documents_root(&env, "documents = true\n");
    let out = env.ok_on(&root2, &["cat", "contract.docx"]);
    assert!(out.contains("[CLIENT_") && !out.contains("Globex"), "{out}");
}

#[tokio::test]
async fn an_agent_reads_documents_and_their_resources_as_redacted_markdown() {
    let env = Env::new();
    let root = documents_root(&env, "");
    let c = env.client(&root, &["--documents"]).await;
    let id = path_id(SALT, "contract.docx");
    let bare = id.trim_start_matches('@');
    let r = c
        .call(
            "redctx_read",
            json!({"path": id, "start_line": 3, "end_line": 3}),
        )
        .await;
    assert!(r.ok().contains("| Party | Contact |"), "{}", r.text);
    let s = c.call("redctx_stat", json!({"path": id})).await;
    assert!(!s.ok().contains("lines:"), "{}", s.text);
    let uri = format!("redctx://{bare}");
    let page = c.service.list_resources(None).await.unwrap();
    let listed = page
        .resources
        .iter()
        .find(|r| r.uri == uri)
        .expect("listed");
    assert_eq!(listed.mime_type.as_deref(), Some("text/markdown"));
    let read = c
        .service
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    match &read.contents[0] {
        ResourceContents::TextResourceContents {
            text, mime_type, ..
        } => {
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
            assert!(
                text.contains("[CLIENT_") && !text.contains("Globex"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    let b = c.call("redctx_bundle", json!({})).await;
    assert!(
        b.ok().contains("# Pitch") && !b.text.contains("Globex"),
        "{}",
        b.text
    );
}

/// The `documents:` line of `redctx --documents status --root <root>`.
fn documents_line(env: &Env, root: &Path) -> Option<String> {
    let out = env.ok_on(
        root,
        &["--documents", "status", "--root", root.to_str().unwrap()],
    );
    out.lines()
        .find_map(|l| l.trim().strip_prefix("documents: "))
        .map(str::to_owned)
}

#[test]
fn status_counts_documents_extracted_in_the_background_and_edits_are_read_new() {
    let env = Env::new();
    let root = documents_root(&env, "");
    write(
        &root,
        "broken.pptx",
        &make::pptx(&[("T", &["x"], None)])[..100],
    );
    // The line shows once the pass has looked at every document, with no read made
    // (before the index pass has listed them, it counts none, also with 0 pending).
    let line = support::poll(
        "the documents pass",
        std::time::Duration::from_secs(120),
        || {
            documents_line(&env, &root)
                .filter(|l| l.contains(" 0 pending") && l.ends_with("(5 in the root)"))
        },
    );
    assert_eq!(line, "4 extracted, 1 failed, 0 pending (5 in the root)");
    // The same root served without documents too: two blocks, one documents line.
    let both = env.ok_on(&root, &["status", "--root", root.to_str().unwrap()]);
    assert_eq!(both.matches("  state: ").count(), 2, "{both}");
    assert_eq!(both.matches("  documents: ").count(), 1, "{both}");
    // Edited after pre-extraction: the next read has the new text.
    write(
        &root,
        "scan.pdf",
        make::pdf(&["Credit note for Globex Industries, revised"]),
    );
    let pdf = env.ok_on(&root, &["--documents", "cat", "scan.pdf"]);
    assert!(
        pdf.contains("Credit note for [CLIENT_") && !pdf.contains("Invoice"),
        "{pdf}"
    );
}

/// The nice value of process `pid` (field 19 of `/proc/PID/stat`).
fn nice_of(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

#[test]
fn a_background_extraction_worker_lowers_its_own_priority() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let ours = nice_of(std::process::id()).unwrap();
    for (mode, expected) in [(Some("background"), 15.max(ours)), (None, ours)] {
        let mut worker = Command::new(&support::bins().redctxd)
            .args(["--extract-worker", ".pdf"])
            .args(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // The worker renices itself before it reads its input, which is still open.
        let nice = support::poll(
            "the worker's priority",
            std::time::Duration::from_secs(20),
            || nice_of(worker.id()).filter(|n| *n == expected || mode.is_none()),
        );
        assert_eq!(nice, expected, "{mode:?}");
        let mut stdin = worker.stdin.take().unwrap();
        stdin
            .write_all(&make::pdf(&["Invoice for Globex Industries"]))
            .unwrap();
        drop(stdin);
        let out = worker.wait_with_output().unwrap();
        assert!(out.status.success(), "{mode:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Invoice for Globex"));
    }
}
