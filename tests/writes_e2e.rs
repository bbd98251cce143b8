//! Controlled writes end to end through `redctx mcp --enable-writes` (spec 9.1, scenarios
//! 40-45): an agent reads a file, writes a note quoting its placeholders and ids, the
//! note is on disk with the raw values and reads back redacted, in this session and in a
//! second one; and the security properties no oracle can show: nothing written on any
//! failure, a placeholder whose value holds `..` or `/` never leaves the write
//! sub-directory, raw values never in an answer, the daemon's log or its cache file.
//! Expected texts are the spec's.

mod support;

use serde_json::json;
use std::path::Path;
use support::fixtures::{NOTES, fixture_a, write};
use support::{Env, Mcp, path_id, placeholder};

const SALT: &str = "e2e-writes-salt";

fn setup(env: &Env) -> std::path::PathBuf {
    let root = env.root_dir("w", "kb");
    fixture_a(&root, SALT, "");
    // Configured terms whose raw values would climb out of the write sub-directory.
    let config = root.join(".agent-context-redactor.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "terms = [\"Project Meridian\"]",
        "terms = [\"Project Meridian\", \"zz/../../../etc\", \"deep/../../x\"]",
    );
    std::fs::write(&config, text).unwrap();
    write(
        &root,
        "docs/escape.md",
        "see zz/../../../etc and deep/../../x\n",
    );
    root
}

async fn session(env: &Env, root: &Path, writes: bool) -> Mcp {
    let mut flags = vec!["--mode", "strict"];
    if writes {
        flags.push("--enable-writes");
    }
    env.client(root, &flags).await
}

/// Files under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_writes_a_note_that_reads_back_redacted_everywhere() {
    let env = Env::new();
    let root = setup(&env);
    let agent = session(&env, &root, true).await;
    let other = session(&env, &root, true).await;

    // Listed only with writes, with the spec's title and hints.
    let tools = agent.service.list_all_tools().await.unwrap();
    let submit = tools
        .iter()
        .find(|t| t.name == "redctx_submit_doc")
        .unwrap();
    assert_eq!(tools.len(), 15);
    assert_eq!(submit.title.as_deref(), Some("Submit Doc"));
    let a = submit.annotations.as_ref().unwrap();
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(false), Some(true), Some(false), Some(false))
    );
    assert_eq!(
        submit.input_schema["required"],
        json!(["target_path", "text"])
    );
    let info = agent.service.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap()
            .contains("redctx_submit_doc")
    );

    let notes_id = path_id(SALT, NOTES);
    let read = agent.call("redctx_read", json!({"path": notes_id})).await;
    let person = placeholder(SALT, "PERSON", "jordan vale");
    assert!(read.ok().contains(&person), "{}", read.text);
    let note = format!("Met {person} today; source {notes_id}.\n");
    let wrote = agent
        .call(
            "redctx_submit_doc",
            json!({"target_path": "notes/meeting.md", "text": note}),
        )
        .await;
    let new_id = path_id(SALT, "incoming/notes/meeting.md");
    assert!(wrote.ok().starts_with("Wrote rehydrated document.\nid: "));
    assert!(wrote.text.contains(&format!("id: {new_id}\n")));
    assert!(
        wrote.text.ends_with("\nreplacements: 2\n"),
        "{}",
        wrote.text
    );
    for raw in ["Jordan", "Vale", "Taylor", "Client Alpha"] {
        assert!(
            !wrote.outside_tokens().contains(raw),
            "{raw} in {}",
            wrote.text
        );
    }
    let on_disk = std::fs::read_to_string(root.join("incoming/notes/meeting.md")).unwrap();
    assert_eq!(on_disk, format!("Met Jordan Vale today; source {NOTES}.\n"));

    // Read back by id, redacted, in this session and in the other one.
    for s in [&agent, &other] {
        let back = s.call("redctx_read", json!({"path": new_id})).await;
        assert!(back.ok().contains(&person), "{}", back.text);
        assert!(!back.outside_tokens().contains("Jordan"), "{}", back.text);
        let hits = s.call("redctx_search", json!({"query": "today"})).await;
        assert!(hits.ok().contains(&new_id), "{}", hits.text);
    }
    // The second write to the same name fails, in the other session too.
    let again = other
        .call(
            "redctx_submit_doc",
            json!({"target_path": "notes/meeting.md", "text": "x"}),
        )
        .await;
    assert_eq!(
        again.err(),
        "Target already exists. Pass overwrite=true to replace it."
    );

    // A session without writes: hidden, and refused when called anyway.
    let reader = session(&env, &root, false).await;
    let names: Vec<String> = reader
        .service
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "redctx_submit_doc"));
    let refused = reader
        .call(
            "redctx_submit_doc",
            json!({"target_path": "a.md", "text": "x"}),
        )
        .await;
    assert_eq!(
        refused.err(),
        "Writes are disabled. Start the server with --enable-writes."
    );
}

const DOCUMENT_TARGET: &str = "Write target names a document format (.docx, .pptx, .pdf, \
     .xlsx, .xls, .doc, .ppt). Submit the text under a text name such as .md or .txt.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_leaves_the_write_subdirectory_and_failures_write_nothing() {
    let env = Env::new();
    let root = setup(&env);
    let agent = session(&env, &root, true).await;
    let read = agent
        .call(
            "redctx_read",
            json!({"path": path_id(SALT, "docs/escape.md")}),
        )
        .await;
    let climb = placeholder(SALT, "SENSITIVE", "zz/../../../etc");
    let deep = placeholder(SALT, "SENSITIVE", "deep/../../x");
    assert!(
        read.ok().contains(&climb) && read.text.contains(&deep),
        "{}",
        read.text
    );
    let person = placeholder(SALT, "PERSON", "jordan vale");
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::create_dir_all(root.join("incoming")).unwrap();
    std::os::unix::fs::symlink("../outside", root.join("incoming/link")).unwrap();

    let cases = [
        (
            climb.clone() + "/x.md",
            "target_path must be a relative file path inside the write subdirectory.",
        ),
        (
            format!("a/{deep}"),
            "target_path must be a relative file path inside the write subdirectory.",
        ),
        (
            climb.clone(),
            "target_path must be a relative file path inside the write subdirectory.",
        ),
        (
            "link/x.md".to_owned(),
            "target_path must not contain symlinks.",
        ),
        ("x/.env.local".to_owned(), "Write target is protected."),
        ("a:b".to_owned(), "target_path must not contain ':'."),
        // Documents are served as what extraction finds in their bytes, which the round
        // trip does not see: text can be laid out so extraction keeps only the value.
        ("leak.pdf".to_owned(), DOCUMENT_TARGET),
        ("sub/Deck.PPTX".to_owned(), DOCUMENT_TARGET),
        ("old.doc".to_owned(), DOCUMENT_TARGET),
    ];
    for (target, want) in &cases {
        let a = agent
            .call(
                "redctx_submit_doc",
                json!({"target_path": target, "text": format!("By {person}.")}),
            )
            .await;
        assert_eq!(a.err(), *want, "{target}");
        assert!(!a.text.contains("Jordan"));
    }
    let glued = agent
        .call(
            "redctx_submit_doc",
            json!({"target_path": "g.md", "text": format!("x{person}y")}),
        )
        .await;
    assert!(
        glued
            .err()
            .starts_with("Rehydrated document would not redact consistently")
    );
    // Unicode look-alikes of `.` and `/` are names, and stay inside.
    let look = agent
        .call(
            "redctx_submit_doc",
            json!({"target_path": "\u{2024}\u{2024}\u{2215}x.md", "text": "plain"}),
        )
        .await;
    look.ok();
    assert_eq!(
        files(&root.join("incoming")),
        ["\u{2024}\u{2024}\u{2215}x.md"]
    );
    assert!(files(&root.join("outside")).is_empty());
    assert!(!root.parent().unwrap().join("x.md").exists());

    // Raw content values never reach the daemon's log or its cache file as text (the
    // cache's file records are keyed by raw paths, ARCHITECTURE.md "Cache", so names
    // that occur in a path are not probed).
    agent
        .call("redctx_read", json!({"path": path_id(SALT, NOTES)}))
        .await;
    drop(agent);
    let _ = env.run(&["daemon", "stop"]);
    for f in files(&env.state()) {
        let bytes = std::fs::read(env.state().join(&f)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for raw in ["Jordan Vale", "Riverton Partners", "superSecret1234"] {
            assert!(!text.contains(raw), "{raw} in state file {f}");
        }
    }
}

/// The first placeholder of `category` in `text`.
fn first_placeholder(text: &str, category: &str) -> String {
    let at = text
        .find(&format!("[{category}_"))
        .unwrap_or_else(|| panic!("no {category} in {text}"));
    text[at..at + category.len() + 35].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_in_a_target_path_never_shows_its_value_in_code_mode() {
    let env = Env::new();
    let root = env.root_dir("w", "ops");
    write(
        &root,
        "hosts.md",
        "db_host = 10.12.30.4\nadmin = jo.kowalczyk@globalex.io\n",
    );
    let agent = env.client(&root, &["--enable-writes"]).await;
    let read = agent.call("redctx_read", json!({"path": "hosts.md"})).await;
    let ip = first_placeholder(read.ok(), "IP");
    let email = first_placeholder(read.ok(), "EMAIL");
    let raw = ["10.12.30.4", "jo.kowalczyk", "globalex"];

    // A whole name that is an address or an email: written, and named redacted.
    for target in [format!("{ip}.md"), format!("{email}.md")] {
        let a = agent
            .call(
                "redctx_submit_doc",
                json!({"target_path": target, "text": "hello"}),
            )
            .await;
        assert!(!a.is_error, "{target}: {}", a.text);
        let text = a.ok();
        assert!(text.starts_with("Wrote rehydrated document."), "{text}");
        for r in raw {
            assert!(!text.contains(r), "{r} in {text}");
        }
    }
    // Glued to a word, the address would not be redacted in the name: refused.
    let glued = agent
        .call(
            "redctx_submit_doc",
            json!({"target_path": format!("e-{ip}.md"), "text": "hello"}),
        )
        .await;
    assert!(
        glued
            .err()
            .starts_with("Rehydrated document would not redact consistently"),
        "{}",
        glued.text
    );
    assert!(!root.join("incoming/e-10.12.30.4.md").exists());
    assert!(root.join("incoming/10.12.30.4.md").exists());
    // Listings name the written files without their values.
    let tree = agent.call("redctx_tree", json!({"path": "."})).await;
    for r in raw {
        assert!(!tree.ok().contains(r), "{r} in {}", tree.text);
    }
}
