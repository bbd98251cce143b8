//! The search index changes how long a search takes, never what it answers: on generated
//! trees, for literal, case-folded and regex queries (with and without required
//! literals, Unicode, placeholders), scopes and caps, the answer with the index equals
//! the answer of reading every file, byte for byte and count for count; the same after
//! edits, deletes, renames, a restart and a policy change.

use redctx_daemon::agent_view::AgentView;
use redctx_daemon::cache::Cache;
use redctx_daemon::cancel::Stop;
use redctx_daemon::engine::{Engine, Mode, Policy};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::tools::{RetrieveArgs, SearchArgs, retrieve, search};
use redctx_test_support::Rng;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Words that exercise folding (ß, Σ/σ/ς, the Kelvin sign, dotted İ), identifiers,
/// configured terms (redacted into placeholders) and values the detectors redact.
const WORDS: &[&str] = &[
    "alpha",
    "Beta",
    "GAMMA",
    "mutex",
    "Mutex",
    "fn",
    "let",
    "Straße",
    "STRASSE",
    "strasse",
    "ΣΊΣΥΦΟΣ",
    "σίσυφος",
    "\u{212A}elvin",
    "kelvin",
    "İstanbul",
    "snake_case_name",
    "CamelCaseName",
    "0xdeadbeef",
    "b6e0.9271",
    "Globex",
    "Initech Corp",
    "Jane Roe",
    "jane.roe@example.com",
    "password = \"Sup3rS3cretValue!\"",
    "token: ghp_0123456789abcdefABCDEF0123456789abcd",
    "https://intranet.globex.internal/path",
    "192.168.12.34",
    "TODO",
    "fixme",
    "[not a placeholder]",
    "日本語",
    "\t",
    "emoji🦀crab",
];

fn policy(salt: &str, mode: Mode) -> Policy {
    Policy {
        salt: salt.into(),
        mode,
        clients: vec!["Globex".into()],
        organizations: vec!["Initech Corp".into()],
        people: vec!["Jane Roe".into()],
        ..Policy::default()
    }
}

fn line(rng: &mut Rng) -> String {
    let n = 1 + rng.below(8);
    (0..n)
        .map(|_| rng.pick(WORDS).to_string())
        .collect::<Vec<_>>()
        .join(if rng.below(3) == 0 { "_" } else { " " })
}

fn text(rng: &mut Rng) -> String {
    let lines = rng.below(40);
    let mut out: String = (0..lines).map(|_| line(rng) + "\n").collect();
    if rng.below(5) == 0 {
        out.push_str(&line(rng)); // no final newline
    }
    out
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
}

const DIRS: &[&str] = &["src", "src/deep/er", "docs", "Globex", "notes/Jane Roe"];
const NAMES: &[&str] = &[
    "a.rs",
    "b.txt",
    "README.md",
    "Globex-plan.md",
    "c.py",
    "data.json",
    "raw.bin",
];

fn generate(root: &Path, rng: &mut Rng, files: usize) -> Vec<String> {
    let mut rels = Vec::new();
    for i in 0..files {
        let rel = format!("{}/{}{}", rng.pick(DIRS), i, rng.pick(NAMES));
        let content = if rel.ends_with(".bin") {
            vec![0u8, 159, 146, 150, 0, 1, 2]
        } else {
            text(rng).into_bytes()
        };
        write(root, &rel, &content);
        rels.push(rel);
    }
    // A file named like text that is not text (the `[SKIPPED: …]` line).
    write(root, "docs/utf16.txt", b"\xff\xfeh\x00i\x00");
    rels
}

fn queries(rng: &mut Rng, count: usize) -> Vec<SearchArgs> {
    const REGEXES: &[&str] = &[
        r"EMAIL_[0-9a-f]{4}",
        r"(?:alpha|gamma)\s+\w+",
        r"\bSTRA",
        r"[A-Z]{3}",
        r"\d+",
        r"kelvin|mutex",
        r"ΣΊΣ",
        r"CLIENT_[0-9a-f]+\]",
        r"^let ",
        r"snake_[a-z]+_name",
    ];
    const LITERALS: &[&str] = &[
        "mutex",
        "MUTEX",
        "straße",
        "STRASSE",
        "σίσυφος",
        "kelvin",
        "[PERSON_",
        "[CLIENT_",
        "_case",
        "deadbeef",
        "b6e0.9271",
        "person",
        "ghp_",
        "Sup3r",
        "globex",
        "crab",
        "日本",
        "absent-in-every-file",
        "fn",
        "alpha Beta",
    ];
    (0..count)
        .map(|_| {
            let regex = rng.below(3) == 0;
            let query = if regex {
                rng.pick(REGEXES).to_string()
            } else {
                rng.pick(LITERALS).to_string()
            };
            SearchArgs {
                query,
                regex,
                ignore_case: rng.below(2) == 0,
                context: [0, 0, 1, 3][rng.below(4)],
                max_results: [1, 7, 50, 200, 100_000][rng.below(5)],
                paths: if rng.below(4) == 0 {
                    vec![rng.pick(DIRS).to_string()]
                } else {
                    Vec::new()
                },
                glob: if rng.below(5) == 0 {
                    vec!["*.md".into()]
                } else {
                    Vec::new()
                },
                ..SearchArgs::default()
            }
        })
        .collect()
}

fn serve(root: &Path, cache: &Arc<Cache>, policy: Policy) -> ServedRoot {
    let engine = Arc::new(Engine::new(Arc::new(policy)).unwrap());
    let opts = RootOptions {
        index: IndexOptions {
            gitignore: true,
            threads: 2,
            // Every record settled at once (the files' ctime is now): the index then
            // covers every file, and freshness rests on the stat comparison alone.
            racy_window_ns: 0,
        },
        ..RootOptions::default()
    };
    let view = ServedRoot::open(root, engine, Some(cache.clone()), opts).unwrap();
    view.index_all();
    view.refresh_search_index();
    view
}

/// Every query's answer with the index equals its answer without; returns how many
/// files the index ruled out over all queries (so a test can tell it was used).
fn assert_same_answers(view: &ServedRoot, queries: &[SearchArgs], stage: &str) -> u64 {
    let index = view.search_index().expect("an index was built");
    let before = view.counters().screened_out.load(Ordering::Relaxed);
    let indexed: Vec<_> = queries
        .iter()
        .map(|q| search(view, q, &Stop::never()))
        .collect();
    let used = view.counters().screened_out.load(Ordering::Relaxed) - before;
    view.set_search_index(None);
    for (q, with_index) in queries.iter().zip(indexed) {
        let scanned = search(view, q, &Stop::never());
        assert_eq!(with_index.text, scanned.text, "{stage}: {q:?}");
        assert_eq!(with_index.counts, scanned.counts, "{stage}: {q:?}");
        assert_eq!(with_index.is_error, scanned.is_error, "{stage}: {q:?}");
    }
    view.set_search_index(Some(index));
    used
}

#[test]
fn indexed_search_answers_exactly_as_a_scan_through_edits_restarts_and_policy_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut rng = Rng(0x5eed_1dea_u64);
    let mut rels = generate(&root, &mut rng, 160);
    let queries = queries(&mut rng, 120);

    let view = serve(&root, &cache, policy("search-index-salt", Mode::Balanced));
    assert!(view.search_index().unwrap().len() > 150);
    let used = assert_same_answers(&view, &queries, "fresh index");
    assert!(used > 1_000, "the index ruled out only {used} files");

    // Edits (in place, growing and shrinking), deletes and renames after the build:
    // those files are read, the rest still ruled out.
    for k in 0..30 {
        let at = rng.below(rels.len());
        let rel = rels[at].clone();
        match k % 3 {
            0 => write(
                &root,
                &rel,
                format!("mutex kelvin {}\n", line(&mut rng)).as_bytes(),
            ),
            1 => {
                std::fs::remove_file(root.join(&rel)).unwrap();
                view.remove(&rel);
                rels.remove(at);
            }
            _ => {
                let renamed = format!("src/renamed{k}.md");
                std::fs::rename(root.join(&rel), root.join(&renamed)).unwrap();
                view.remove(&rel);
                view.upsert(&renamed);
                rels[at] = renamed;
            }
        }
    }
    let used = assert_same_answers(&view, &queries, "after edits");
    assert!(used > 500, "the index ruled out only {used} files");
    drop(view);

    // A restart loads the published index instead of building one.
    let view = serve(&root, &cache, policy("search-index-salt", Mode::Balanced));
    assert_same_answers(&view, &queries, "after a restart");
    drop(view);

    // Another policy: its own index (placeholders differ), same agreement.
    let view = serve(&root, &cache, policy("another-salt", Mode::Strict));
    let used = assert_same_answers(&view, &queries, "under another policy");
    assert!(used > 500, "the index ruled out only {used} files");
}

/// Retrieve answers (text, counts, errors) with the index equal those without, before
/// the passage index is built (or while it is out of date) and after; returns the files
/// the second round left unread.
fn assert_same_retrievals(view: &ServedRoot, queries: &[RetrieveArgs], stage: &str) -> u64 {
    let first: Vec<_> = queries
        .iter()
        .map(|q| retrieve(view, q, &Stop::never()))
        .collect();
    view.build_passages();
    let index = view.search_index().expect("an index was built");
    assert!(
        index.passages_built(),
        "{stage}: the passage index is built"
    );
    let before = view.counters().screened_out.load(Ordering::Relaxed);
    let second: Vec<_> = queries
        .iter()
        .map(|q| retrieve(view, q, &Stop::never()))
        .collect();
    let used = view.counters().screened_out.load(Ordering::Relaxed) - before;
    let mismatches = view.counters().passage_mismatches.load(Ordering::Relaxed);
    assert_eq!(mismatches, 0, "{stage}: printed passages were as indexed");
    view.set_search_index(None);
    for ((q, a), b) in queries.iter().zip(first).zip(second) {
        let scanned = retrieve(view, q, &Stop::never());
        for with_index in [&a, &b] {
            assert_eq!(with_index.text, scanned.text, "{stage}: {q:?}");
            assert_eq!(with_index.counts, scanned.counts, "{stage}: {q:?}");
            assert_eq!(with_index.is_error, scanned.is_error, "{stage}: {q:?}");
        }
    }
    view.set_search_index(Some(index));
    used
}

fn retrieve_queries(rng: &mut Rng, count: usize) -> Vec<RetrieveArgs> {
    const TERMS: &[&str] = &[
        "mutex",
        "kelvin",
        "Straße",
        "σίσυφος",
        "gamma",
        "crab",
        "snake",
        "camelcasename",
        "istanbul",
        "absent",
        "fixme",
        "todo",
        "日本語",
    ];
    (0..count)
        .map(|_| {
            let n = 1 + rng.below(3);
            let query = (0..n)
                .map(|_| *rng.pick(TERMS))
                .collect::<Vec<_>>()
                .join(" ");
            RetrieveArgs {
                query,
                max_results: [1, 3, 8][rng.below(3)],
                max_chars: [300, 12_000][rng.below(2)],
                paths: if rng.below(4) == 0 {
                    vec![rng.pick(DIRS).to_string()]
                } else {
                    Vec::new()
                },
                // Caps that fail a call part-way: its receipt counts the files before
                // the failure only, with the index as without.
                max_passages: (rng.below(5) == 0).then(|| 20 + rng.below(300) as u64),
                max_files: (rng.below(6) == 0).then(|| 5 + rng.below(80) as u64),
                ..RetrieveArgs::default()
            }
        })
        .collect()
}

#[test]
fn indexed_retrieve_answers_exactly_as_a_scan_through_edits_deletes_and_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut rng = Rng(0xbead);
    let rels = generate(&root, &mut rng, 120);
    let queries = retrieve_queries(&mut rng, 40);
    let view = serve(&root, &cache, policy("retrieve-salt", Mode::Balanced));
    let used = assert_same_retrievals(&view, &queries, "fresh index");
    assert!(used > 40 * 60, "the index left only {used} files unread");
    // Edited files are read again (the index holds their old text).
    for rel in rels.iter().step_by(7) {
        write(
            &root,
            rel,
            format!("{}\n{}\n", line(&mut rng), line(&mut rng)).as_bytes(),
        );
    }
    let used = assert_same_retrievals(&view, &queries, "after edits");
    assert!(
        used > 40 * 50,
        "after edits, the index left only {used} files unread"
    );
    // Deleted and new files, and long lines cut into pieces.
    for rel in rels.iter().skip(3).step_by(11) {
        std::fs::remove_file(root.join(rel)).unwrap();
    }
    let long: String = (0..400).map(|_| line(&mut rng) + " ").collect();
    write(
        &root,
        "src/new-long.txt",
        format!("{long}\n{long}\n").as_bytes(),
    );
    assert_same_retrievals(&view, &queries, "after deletes and a new file");
}

#[test]
fn the_passage_index_is_stored_and_a_restart_ranks_from_it_unread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut rng = Rng(0xfeed);
    generate(&root, &mut rng, 60);
    // Long lines too: pieces of one line are passages of their own.
    let long: String = (0..300).map(|_| line(&mut rng) + " ").collect();
    write(&root, "docs/long.md", format!("{long}\n").as_bytes());
    let queries = retrieve_queries(&mut rng, 20);
    let view = serve(&root, &cache, policy("learn-salt", Mode::Code));
    view.build_passages();
    let expected: Vec<_> = queries
        .iter()
        .map(|q| retrieve(&view, q, &Stop::never()))
        .collect();
    drop(view);
    // Served again over the same cache: the stored passage index is loaded, not rebuilt.
    let view = serve(&root, &cache, policy("learn-salt", Mode::Code));
    assert!(view.search_index().unwrap().passages_built());
    let texts = 60 - generate_binaries(&root);
    for (q, expected) in queries.iter().zip(&expected) {
        let before = view.counters().screened_out.load(Ordering::Relaxed);
        let got = retrieve(&view, q, &Stop::never());
        let unread = view.counters().screened_out.load(Ordering::Relaxed) - before;
        assert_eq!(&got, expected, "{q:?}");
        // A file cap ends the walk early: only a whole walk leaves every file unread.
        if q.paths.is_empty() && q.max_files.is_none() {
            assert!(
                unread as usize >= texts,
                "{q:?}: only {unread} files unread"
            );
        }
        view.set_search_index(None);
        assert_eq!(got, retrieve(&view, q, &Stop::never()), "scan: {q:?}");
        view.refresh_search_index();
    }
}

/// Files of a generated tree that are not text.
fn generate_binaries(root: &Path) -> usize {
    walk_files(root)
        .iter()
        .filter(|p| p.ends_with(".bin") || p.ends_with("utf16.txt"))
        .count()
}

fn walk_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path.to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn a_root_served_under_two_policies_at_once_keeps_both_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut rng = Rng(0xd0d0);
    generate(&root, &mut rng, 40);
    let first = serve(&root, &cache, policy("two-policies", Mode::Code));
    let second = serve(&root, &cache, policy("two-policies", Mode::Strict));
    let args = SearchArgs {
        query: "absent-in-every-file".into(),
        ..SearchArgs::default()
    };
    for view in [&first, &second] {
        let before = view.counters().screened_out.load(Ordering::Relaxed);
        assert_eq!(search(view, &args, &Stop::never()).text, "No matches.\n");
        let ruled_out = view.counters().screened_out.load(Ordering::Relaxed) - before;
        assert!(ruled_out >= 30, "only {ruled_out} files ruled out");
    }
    // The second build did not drop the first one's postings, and a restart of the first
    // finds its index in the database.
    drop(first);
    let again = ServedRoot::open(
        &root,
        Arc::new(Engine::new(Arc::new(policy("two-policies", Mode::Code))).unwrap()),
        Some(cache.clone()),
        RootOptions::default(),
    )
    .unwrap();
    again.refresh_search_index();
    assert!(again.search_index().is_some_and(|i| i.len() >= 40));
}

#[test]
fn receipts_of_ruled_out_files_keep_plugged_detector_counts() {
    // A plugged detector's counts travel in the receipt beside the categories'; a file
    // the index rules out must add them as reading it would.
    use redctx_daemon::engine::plugged::{PluggedDef, PluggedKind, patterns};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    for i in 0..20 {
        write(
            &root,
            &format!("notes/t{i}.md"),
            format!("see TICKET-{i}0042 today\n").as_bytes(),
        );
    }
    let rules =
        patterns::parse_rules("[[patterns]]\ncategory='ID'\nregex='TICKET-[0-9]+'\n").unwrap();
    let plugged = Policy {
        plugged: vec![PluggedDef {
            name: "patterns".into(),
            version: patterns::VERSION.into(),
            kind: PluggedKind::Patterns(rules),
        }],
        ..policy("plugged-salt", Mode::Code)
    };
    let view = serve(&root, &cache, plugged);
    // `_` keeps the reference's raw screen off, so every searched file counts.
    let args = SearchArgs {
        query: "absent_in_every_file".into(),
        ..SearchArgs::default()
    };
    let before = view.counters().screened_out.load(Ordering::Relaxed);
    let indexed = search(&view, &args, &Stop::never());
    assert!(view.counters().screened_out.load(Ordering::Relaxed) - before >= 20);
    assert!(
        !indexed.counts.1.is_empty(),
        "no plugged counts: {:?}",
        indexed.counts
    );
    view.set_search_index(None);
    assert_eq!(indexed, search(&view, &args, &Stop::never()));
}

#[test]
fn a_file_changed_after_the_build_is_found_with_its_new_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    write(&root, "a.txt", b"nothing here\n");
    write(&root, "b.txt", b"the needle is here\n");
    let view = serve(&root, &cache, policy("fresh-salt", Mode::Balanced));
    let args = SearchArgs {
        query: "fresh needle".into(),
        ..SearchArgs::default()
    };
    assert_eq!(search(&view, &args, &Stop::never()).text, "No matches.\n");
    // Written just now, with no watcher and no refresh: the stat differs from the
    // indexed one, so the file is read.
    std::fs::write(root.join("a.txt"), "a fresh needle appears\n").unwrap();
    let out = search(&view, &args, &Stop::never()).text;
    assert!(out.ends_with(":a fresh needle appears\n"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn agent_calls_use_the_index_too() {
    // An agent's calls go through `AgentView`; a wrapper that forgot to pass the index
    // on would answer the same, only slowly, so this counts the files ruled out.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut rng = Rng(7);
    generate(&root, &mut rng, 40);
    let view = serve(&root, &cache, policy("agent-salt", Mode::Code));
    let before = view.counters().screened_out.load(Ordering::Relaxed);
    let args = SearchArgs {
        query: "absent-in-every-file".into(),
        ..SearchArgs::default()
    };
    let out = search(&AgentView(&view), &args, &Stop::never());
    assert_eq!(out.text, "No matches.\n");
    let ruled_out = view.counters().screened_out.load(Ordering::Relaxed) - before;
    assert!(ruled_out >= 35, "only {ruled_out} files ruled out");
}

/// Passages holding the same terms the same number of times but first in another order
/// have scores a few ulps apart (float addition is not associative): the passage index
/// does not store that order, so an indexed answer must read it back to rank them as a
/// scan does, at the last place too.
#[test]
fn indexed_retrieve_ranks_passages_that_differ_only_in_term_order_as_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let words = ["alpha", "gamma", "delta", "kelvin", "mutex"];
    let mut lines = Vec::new();
    permutations(Vec::new(), words.to_vec(), &mut lines);
    for (file, line) in lines.iter().enumerate() {
        write(
            &root,
            &format!("p/{file}.md"),
            format!("{line}\nfiller\n").as_bytes(),
        );
    }
    // Other files, so the terms' document frequencies are not all alike.
    for i in 0..40 {
        write(&root, &format!("q/{i}.txt"), words[i % 3].as_bytes());
    }
    let view = serve(&root, &cache, policy("order-salt", Mode::Code));
    view.build_passages();
    let queries: Vec<RetrieveArgs> = [1, 5, 17, 50]
        .into_iter()
        .map(|max_results| RetrieveArgs {
            query: words.join(" "),
            max_results,
            max_chars: 100_000,
            ..RetrieveArgs::default()
        })
        .collect();
    let used = assert_same_retrievals(&view, &queries, "term orders");
    assert!(used >= 4 * 120, "the index left only {used} files unread");
}

/// Every order of `rest` after `prefix`, joined with spaces.
fn permutations(prefix: Vec<&str>, rest: Vec<&str>, out: &mut Vec<String>) {
    if rest.is_empty() {
        out.push(prefix.join(" "));
    }
    for i in 0..rest.len() {
        let (mut p, mut r) = (prefix.clone(), rest.clone());
        p.push(r.remove(i));
        permutations(p, r, out);
    }
}
