//! `redctx discover` as a new user meets it: a generated knowledge folder with planted
//! clients, organizations, people and codenames (the shared generator's planted values,
//! `gen_monorepo.py`'s `EXACT_TERMS`), a stand-in model that names what each file holds,
//! invents a value and lists tool names, then the draft applied as the root's config.
//! The draft must name every planted value, keep tool names in `allow`, drop the
//! invention, never be served itself, and after it every planted value must be redacted
//! by `redctx cat`.

mod support;

use serde_json::json;
use support::Env;
use support::fixtures::write;
use support::ollama::{FakeOllama, Reply};

const CLIENTS: &[&str] = &[
    "Globex Corporation",
    "Initech",
    "Umbrella Health",
    "Soylent Foods",
    "Vandelay Industries",
];
const ORGS: &[&str] = &[
    "Acme Logistics",
    "Hooli Cloud",
    "Wonka Analytics",
    "Stark Robotics",
    "Tyrell Systems",
];
const PEOPLE: &[&str] = &[
    "Jane Holloway",
    "Marcus Oyelaran",
    "Priya Venkataraman",
    "Tomasz Brzezinski",
    "Eleanor Whitcombe",
];
const TERMS: &[&str] = &[
    "Project Nightingale",
    "BLUEHERON",
    "Operation Tidewater",
    "Falconridge",
];
const TOOLS: &[&str] = &["terraform", "kubectl", "grafana"];

#[test]
fn a_new_user_gets_a_draft_that_redacts_the_planted_values() {
    let env = Env::new();
    let root = env.root_dir("e2e", "kb");
    let ollama = FakeOllama::start();
    let mut rng = redctx_test_support::Rng(0x5eed_d15c);
    let mut planted: Vec<&str> = Vec::new();
    let files = 8;
    for i in 0..files {
        let client = *rng.pick(CLIENTS);
        let org = *rng.pick(ORGS);
        let (a, b) = (PEOPLE[i % PEOPLE.len()], PEOPLE[(i + 2) % PEOPLE.len()]);
        let term = *rng.pick(TERMS);
        let first = a.split(' ').next().unwrap();
        let text = format!(
            "# Meeting {i}\n\nAttendees: {a}, {b}\n\n{client} asked {org} about {term}.\n\
             Deploy with terraform and kubectl; dashboards in grafana.\n\
             {first} will follow up.\n"
        );
        let rel = format!("notes/meeting-{i}.md");
        write(&root, &rel, &text);
        planted.extend([client, org, a, b, term]);
        let answer = Reply::json(json!({
            "clients": [client, "Invented Client Ltd"],
            "organizations": [org],
            "people": [a, b, first],
            "terms": [term, "terraform", "kubectl"],
            "allow": ["grafana"],
            "aliases": {}
        }));
        // One model that needs the stricter retry.
        let replies = if i == 3 {
            vec![
                Reply::Answer("Here is the list you asked for.".into()),
                answer,
            ]
        } else {
            vec![answer]
        };
        ollama.script(&rel, replies);
    }
    planted.sort_unstable();
    planted.dedup();
    let r = root.to_str().unwrap();
    let out = env.ok_on(
        &root,
        &[
            "discover",
            "--endpoint",
            &ollama.endpoint,
            "--output",
            ".agent-context-redactor.toml",
        ],
    );
    assert_eq!(
        out,
        "Wrote discovery output to .agent-context-redactor.toml\n"
    );
    let draft = std::fs::read_to_string(root.join(".agent-context-redactor.toml")).unwrap();
    let (lists, allow) = draft.split_once("allow = [").expect("an allow list");
    for value in &planted {
        assert!(
            lists.contains(&format!("\"{value}\"")),
            "{value} missing:\n{draft}"
        );
    }
    // Tool names go to `allow`, except those the built-in allow list has already
    // (terraform), which the draft leaves out.
    for tool in TOOLS {
        assert!(
            !lists.contains(&format!("\"{tool}\"")),
            "{tool} redacted:\n{draft}"
        );
    }
    for tool in ["kubectl", "grafana"] {
        assert!(
            allow.contains(&format!("\"{tool}\"")),
            "{tool} not allowed:\n{draft}"
        );
    }
    assert!(!draft.contains("Invented Client"), "{draft}");
    // The first names used on their own are proposed as aliases of their people.
    assert!(draft.contains("[redaction.aliases]"), "{draft}");
    // Every file went to the model; the retried one twice.
    assert_eq!(ollama.requests().len(), files + 1);

    // The draft is a policy file: never served.
    let (code, _, err) = env.run(&["--root", r, "cat", ".agent-context-redactor.toml"]);
    assert_eq!(code, 1, "{err}");
    // Applied, it redacts every planted value (and each name's parts) in every file.
    for i in 0..files {
        let text = env.ok_on(&root, &["cat", &format!("notes/meeting-{i}.md")]);
        for value in &planted {
            for part in std::iter::once(*value).chain(value.split(' ')) {
                if part.len() >= 3 && !["Project", "Operation"].contains(&part) {
                    assert!(
                        !text.contains(part),
                        "{part} survives in meeting-{i}:\n{text}"
                    );
                }
            }
        }
        for tool in TOOLS {
            assert!(text.contains(tool), "{tool} lost in meeting-{i}:\n{text}");
        }
    }
}

/// Ours, beyond the reference: `discover-update --from-root --changed` classifies only
/// the files whose content changed since the last written run.
#[test]
fn update_from_root_sends_only_changed_files() {
    let env = Env::new();
    let root = env.root_dir("e2e", "kb");
    let ollama = FakeOllama::start();
    write(&root, "a.md", "Jane Holloway works for Initech.\n");
    write(&root, "b.md", "Marcus Oyelaran runs Falconridge.\n");
    ollama.script(
        "a.md",
        vec![Reply::json(
            json!({"people": ["Jane Holloway"], "clients": ["Initech"]}),
        )],
    );
    ollama.script(
        "b.md",
        vec![Reply::json(
            json!({"people": ["Marcus Oyelaran"], "terms": ["Falconridge"]}),
        )],
    );
    let e = ollama.endpoint.clone();
    let run = |extra: &[&str]| {
        ollama.reset();
        let mut args = vec!["discover-update", "--endpoint", e.as_str(), "--from-root"];
        args.extend_from_slice(extra);
        let out = env.ok_on(&root, &args);
        (out, ollama.requests().len())
    };
    let (out, sent) = run(&["--changed"]);
    assert_eq!(sent, 2, "{out}");
    assert!(
        out.starts_with("documents: 2\nmodel: gemma4:e4b\n"),
        "{out}"
    );
    assert!(out.ends_with("config_changed: true\n"), "{out}");
    let (out, sent) = run(&["--changed"]);
    assert_eq!(sent, 0, "{out}");
    assert!(out.starts_with("documents: 0\nmodel: skipped\n"), "{out}");
    assert!(out.ends_with("config_changed: false\n"), "{out}");
    write(
        &root,
        "b.md",
        "Marcus Oyelaran runs Falconridge for Soylent Foods.\n",
    );
    ollama.script(
        "b.md",
        vec![Reply::json(json!({"clients": ["Soylent Foods"]}))],
    );
    let (out, sent) = run(&["--changed"]);
    assert_eq!(sent, 1, "{out}");
    assert!(out.ends_with("config_changed: true\n"), "{out}");
    let config = std::fs::read_to_string(root.join(".agent-context-redactor.toml")).unwrap();
    for value in [
        "Jane Holloway",
        "Initech",
        "Marcus Oyelaran",
        "Falconridge",
        "Soylent Foods",
    ] {
        assert!(config.contains(value), "{value}: {config}");
    }
    // Without --changed every file goes again.
    assert_eq!(run(&[]).1, 2);
    // A file over the document limit is refused, never cut.
    let (code, _, err) = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "discover-update",
        "--endpoint",
        &e,
        "--from-root",
        "--max-chars-per-document",
        "10",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("exceeds --max-chars-per-document=10"), "{err}");
}

/// `--detector` instead of a model: a patterns file (outside the root) and the test
/// exec detector name the planted values; each category lands in its section, a tool
/// name stays a term (never `allow`), and no model is asked.
#[test]
fn a_detector_drafts_the_config_without_a_model() {
    let env = Env::new();
    let root = env.root_dir("e2e", "kb");
    let ollama = FakeOllama::start();
    write(
        &root,
        "notes/a.md",
        "Jane Holloway met Zorblax Quill of Acme Logistics.\n\
         Initech runs Falconridge with kubectl. Jane will call.\n",
    );
    write(&root, "notes/b.md", "Marcus Oyelaran joins Falconridge.\n");
    let rules = env.dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[patterns]]\ncategory = \"PERSON\"\nregex = \"Jane Holloway|Marcus Oyelaran|Jane\"\n\n\
         [[patterns]]\ncategory = \"ORG\"\nregex = \"Acme Logistics\"\n\n\
         [[patterns]]\ncategory = \"CLIENT\"\nregex = \"Initech\"\n\n\
         [[patterns]]\ncategory = \"SENSITIVE\"\nregex = \"Falconridge\"\n\n\
         [[patterns]]\ncategory = \"ENTITY\"\nregex = \"kubectl\"\n",
    )
    .unwrap();
    let prog = support::fixtures::test_detector(env.dir.path(), "ner", "");
    let patterns = format!("patterns={}", rules.display());
    let exec = format!("exec={}", prog.display());
    let draft = env.ok_on(
        &root,
        &["discover", "--detector", &patterns, "--detector", &exec],
    );
    let expected = "# Generated by redctx discover.\n\
        # Review before use; this file intentionally contains sensitive terms.\n\
        # Source: provider=detector detectors=patterns,test-ner root=.\n\n\
        [redaction]\n\
        clients = [\n  \"Initech\"\n]\n\
        organizations = [\n  \"Acme Logistics\"\n]\n\
        people = [\n  \"Jane Holloway\",\n  \"Zorblax Quill\",\n  \"Marcus Oyelaran\"\n]\n\
        terms = [\n  \"Falconridge\",\n  \"kubectl\"\n]\n\
        allow = []\n";
    assert!(draft.starts_with(expected), "{draft}");
    // Raw: no cleanup, so the lone first name stays; no alias proposals either.
    let raw = env.ok_on(
        &root,
        &["discover", "--detector", &patterns, "--raw-discovery"],
    );
    assert!(
        raw.contains("people = [\n  \"Jane Holloway\",\n  \"Jane\",\n  \"Marcus Oyelaran\"\n]"),
        "{raw}"
    );
    assert!(!raw.contains("[redaction.aliases]"), "{raw}");
    // Model options are refused with a detector (the reference's sentence).
    let (code, _, err) = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "discover",
        "--detector",
        &patterns,
        "--endpoint",
        &ollama.endpoint,
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "--model and --endpoint apply only to Ollama discovery; remove them when drafting \
         terms with --detector.\n"
    );

    // discover-update: from JSONL and from the root; the summary names the detectors.
    let kickoff = std::fs::read_to_string(root.join("notes/a.md")).unwrap();
    let input = env.dir.path().join("docs.jsonl");
    std::fs::write(
        &input,
        format!("{}\n", json!({"path": "notes/a.md", "text": kickoff})),
    )
    .unwrap();
    let out = env.ok_on(
        &root,
        &[
            "discover-update",
            "--detector",
            &patterns,
            "--input-jsonl",
            input.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out,
        "documents: 1\nmodel: skipped\ndetectors: patterns\n\
         discovered_counts: {\"clients\":1,\"organizations\":1,\"people\":1,\"terms\":2}\n\
         alias_counts: {\"discovered\":0,\"dropped\":0,\"seed\":0}\nconfig_changed: true\n"
    );
    let out = env.ok_on(
        &root,
        &["discover-update", "--detector", &patterns, "--from-root"],
    );
    assert!(out.starts_with("documents: 2\nmodel: skipped\n"), "{out}");
    assert!(out.ends_with("config_changed: true\n"), "{out}");
    let config = std::fs::read_to_string(root.join(".agent-context-redactor.toml")).unwrap();
    for value in ["Marcus Oyelaran", "Jane Holloway", "kubectl", "Initech"] {
        assert!(config.contains(value), "{value}: {config}");
    }
    assert!(ollama.requests().is_empty(), "a model was asked");
}

/// A detector that fails mid-run (exits, or answers garbage) ends the command with the
/// fixed `Detector failed.`, and no draft or config is written.
#[test]
fn a_failing_detector_fails_the_run_and_writes_nothing() {
    let env = Env::new();
    let root = env.root_dir("e2e", "kb");
    write(&root, "a.md", "Zorblax Quill met Initech.\n");
    for mode in ["crash", "bad-json"] {
        let prog =
            support::fixtures::test_detector(env.dir.path(), mode, &format!("--mode {mode}"));
        let exec = format!("exec={}", prog.display());
        let r = root.to_str().unwrap();
        let (code, out, err) = env.run(&[
            "--root",
            r,
            "discover",
            "--detector",
            &exec,
            "--output",
            "draft.toml",
        ]);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (1, "", "Detector failed.\n")
        );
        assert!(!root.join("draft.toml").exists());
        let (code, out, err) = env.run(&[
            "--root",
            r,
            "discover-update",
            "--detector",
            &exec,
            "--from-root",
        ]);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (1, "", "Detector failed.\n")
        );
        assert!(!root.join(".agent-context-redactor.toml").exists());
    }
}
