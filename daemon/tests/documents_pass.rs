//! The background pre-extraction of documents (`--documents`): after the index pass every
//! document is in the cache without a read, a read then starts no extraction, failures
//! are counted and remembered, and an edit is never answered with the old text.

use redctx_daemon::cache::Cache;
use redctx_daemon::documents::DocError;
use redctx_daemon::documents::backlog::DocumentCounts;
use redctx_daemon::engine::{Engine, Policy};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::view::{RootView, ViewError};
use redctx_test_support::documents as make;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

fn engine() -> Arc<Engine> {
    let policy = Policy {
        salt: "documents-pass-salt".into(),
        documents: true,
        clients: vec!["Globex Industries".into()],
        ..Policy::default()
    };
    Arc::new(Engine::new(Arc::new(policy)).unwrap())
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Every file counts as settled (no racy window), so remembered outcomes are trusted.
fn settled() -> RootOptions {
    RootOptions {
        index: IndexOptions {
            gitignore: true,
            threads: 2,
            racy_window_ns: 0,
        },
        ..RootOptions::default()
    }
}

fn serve(root: &Path, cache: Arc<Cache>) -> Arc<ServedRoot> {
    let root = Arc::new(ServedRoot::open(root, engine(), Some(cache), settled()).unwrap());
    root.spawn_indexing();
    assert!(root.wait_documents(Duration::from_secs(120)), "pass stuck");
    root
}

fn text(root: &ServedRoot, rel: &str) -> Result<String, ViewError> {
    let entry = root.resolve(rel)?;
    root.content(&entry, true).map(|doc| doc.text.to_string())
}

fn contract(line: &str) -> Vec<u8> {
    make::docx(&[
        make::docx_paragraph("Master agreement", Some("Heading1"), false),
        make::docx_paragraph(line, None, false),
    ])
}

#[test]
fn documents_are_extracted_in_the_background_and_reads_start_no_worker() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(
        &root,
        "docs/contract.docx",
        &contract("Signed with Globex Industries."),
    );
    write(
        &root,
        "docs/invoice.pdf",
        &make::pdf(&["Invoice for Globex Industries"]),
    );
    write(
        &root,
        "broken.pptx",
        &make::pptx(&[("T", &["x"], None)])[..100],
    );
    write(&root, "notes.md", b"plain text\n");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let served = serve(&root, cache);
    // Each document extracted once, by the pass alone: nothing was read.
    assert_eq!(
        served.document_counts(),
        Some(DocumentCounts {
            total: 3,
            extracted: 2,
            failed: 1,
            pending: 0,
        })
    );
    assert_eq!(served.counters().extractions.load(Relaxed), 3);
    let reads_before = served.counters().content_reads.load(Relaxed);
    let contract = text(&served, "docs/contract.docx").unwrap();
    assert!(
        contract.contains("# Master agreement") && contract.contains("[CLIENT_"),
        "{contract}"
    );
    assert!(!contract.contains("Globex"), "{contract}");
    let invoice = text(&served, "docs/invoice.pdf").unwrap();
    assert!(invoice.contains("Invoice for [CLIENT_"), "{invoice}");
    // The malformed file's failure is remembered for its version: no second worker.
    assert_eq!(
        text(&served, "broken.pptx"),
        Err(ViewError::Document(DocError::Failed))
    );
    assert_eq!(served.counters().extractions.load(Relaxed), 3);
    assert_eq!(served.counters().content_reads.load(Relaxed), reads_before);
}

#[test]
fn an_edited_document_is_read_new_and_extracted_again_by_the_watcher_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "contract.docx", &contract("First version."));
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let served = serve(&root, cache);
    assert!(
        text(&served, "contract.docx")
            .unwrap()
            .contains("First version.")
    );
    // Edited after pre-extraction: a read answers the new text at once.
    write(&root, "contract.docx", &contract("Second, longer version."));
    let now = text(&served, "contract.docx").unwrap();
    assert!(
        now.contains("Second, longer version.") && !now.contains("First"),
        "{now}"
    );
    assert_eq!(served.counters().extractions.load(Relaxed), 2);
    // Edited again and reported by the watcher: pending until the pass extracts it.
    write(
        &root,
        "contract.docx",
        &contract("Third version, longest of all."),
    );
    served.upsert("contract.docx");
    assert!(served.wait_documents(Duration::from_secs(120)));
    assert_eq!(
        served.document_counts().map(|c| (c.extracted, c.pending)),
        Some((1, 0))
    );
    assert_eq!(served.counters().extractions.load(Relaxed), 3);
    let last = text(&served, "contract.docx").unwrap();
    assert!(last.contains("Third version"), "{last}");
    assert_eq!(served.counters().extractions.load(Relaxed), 3);
    // Deleted: no longer counted.
    std::fs::remove_file(root.join("contract.docx")).unwrap();
    served.remove("contract.docx");
    assert_eq!(served.document_counts().map(|c| c.total), Some(0));
}

#[test]
fn a_restart_finds_the_documents_in_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    write(&root, "a.pdf", &make::pdf(&["Alpha line"]));
    {
        let cache = Arc::new(Cache::open(&state).unwrap());
        let served = serve(&root, cache.clone());
        assert_eq!(served.counters().extractions.load(Relaxed), 1);
        cache.flush();
    }
    let cache = Arc::new(Cache::open(&state).unwrap());
    let served = serve(&root, cache);
    assert_eq!(served.document_counts().map(|c| c.extracted), Some(1));
    assert_eq!(served.counters().extractions.load(Relaxed), 0);
}

#[test]
fn without_documents_there_is_no_count_and_no_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "a.pdf", &make::pdf(&["Alpha line"]));
    let policy = Policy {
        salt: "documents-pass-salt".into(),
        ..Policy::default()
    };
    let engine = Arc::new(Engine::new(Arc::new(policy)).unwrap());
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let opts = RootOptions {
        include_private: true,
        ..RootOptions::default()
    };
    let served = Arc::new(ServedRoot::open(&root, engine, Some(cache), opts).unwrap());
    served.spawn_indexing();
    assert!(served.wait_finished(Duration::from_secs(60)));
    assert_eq!(served.document_counts(), None);
    assert_eq!(served.counters().extractions.load(Relaxed), 0);
}

#[test]
fn reads_racing_the_pass_extract_each_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    // Different bytes per document: identical ones share one cached extraction (the
    // cache is keyed by content), and a read finding it would make the count racy.
    for name in ["a.pdf", "b.pdf", "c.pdf"] {
        let lines: Vec<String> = (0..40)
            .map(|i| format!("Line {i} for Globex Industries in {name}"))
            .collect();
        let page: Vec<&str> = lines.iter().map(String::as_str).collect();
        let pages = vec![page.as_slice(); 60];
        write(&root, name, &make::pdf_pages(&pages));
    }
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let served = Arc::new(ServedRoot::open(&root, engine(), Some(cache), settled()).unwrap());
    served.spawn_indexing();
    // Two readers of every document while the pass extracts them: one extraction each.
    std::thread::scope(|s| {
        for _ in 0..2 {
            for name in ["c.pdf", "b.pdf", "a.pdf"] {
                let served = &served;
                s.spawn(move || {
                    let text = text(served, name).unwrap();
                    assert!(text.contains("Line 39 for [CLIENT_"), "{name}");
                });
            }
        }
    });
    assert!(served.wait_documents(Duration::from_secs(120)));
    assert_eq!(served.counters().extractions.load(Relaxed), 3);
    assert_eq!(served.document_counts().map(|c| c.extracted), Some(3));
}
