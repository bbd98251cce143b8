//! Differential test of `redctx discover` and `redctx discover-update` (spec 11): the
//! reference's CLI and ours run on the same root against the same stand-in Ollama
//! (`support::ollama`), which gives both the same scripted answers. Drafts (TOML and
//! JSON bytes, files written), summaries, exit codes and refusal messages must match.
//! The prompts differ by design (COMPAT.md), so only what they must carry is checked.
//!
//! Oracle: `redctx_test_support::Oracle`; `REDCTX_SKIP_ORACLE=1` skips.

mod support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::Env;
use support::fixtures::write;
use support::ollama::{FakeOllama, Reply};

fn oracle() -> Option<PathBuf> {
    redctx_test_support::Oracle::find().program("redctx")
}

/// A small knowledge folder: meeting notes, a plan, a readme with tools, a CSV.
fn make_root(env: &Env) -> PathBuf {
    let root = env.root_dir("d", "kb");
    write(
        &root,
        "notes/kickoff.md",
        "# Kickoff\n\nAvery Quinlan met Bram Okafor of Halvard Logistics.\n\
         Avery will send the Project Bluefin plan; write to avery.quinlan@example.invalid.\n\
         Client: Norrland Bank (NB). Ticket D12.3 is open.\n\
         Stack: terraform, kubectl and PostgreSQL.\n",
    );
    write(
        &root,
        "notes/plan.md",
        "Plan for Norrland Bank\n\nOwner: Bram Okafor (PM)\nbokafor@example.invalid approves.\n\
         The migration workflow of Bluefin runs in Germany.\n",
    );
    write(
        &root,
        "docs/readme.txt",
        "Nothing private here; see the design review.\n",
    );
    write(&root, "data/blob.bin", b"\x00\x01\x02");
    root
}

fn kickoff_answer() -> Reply {
    Reply::json(json!({
        "clients": ["Norrland Bank", "NB", "Germany", "client"],
        "organizations": ["Halvard Logistics", "Project Manager", "Invented Vendor GmbH"],
        "people": ["Avery Quinlan", "Bram Okafor", "Avery", "Data Engineer"],
        "terms": ["Project Bluefin", "terraform", "kubectl", "D12.3", "kickoff.md", "design review"],
        "allow": ["PostgreSQL", "kubectl", "Azure"],
        "aliases": {"Avery Quinlan": ["Avery", "AQ"], "Nobody Here": ["nobody"], "NB": "x"}
    }))
}

fn plan_answer() -> Reply {
    Reply::json(json!({
        "clients": ["norrland bank"],
        "organizations": [],
        "people": ["Bram Okafor (PM)", 42, null],
        "terms": ["Bluefin", "migration workflow", "likely typo"],
        "allow": [],
        "aliases": []
    }))
}

struct Sides {
    env: Env,
    root: PathBuf,
    cli: PathBuf,
    ollama: FakeOllama,
}

type Run = (i32, String, String);

impl Sides {
    fn reference(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut c = Command::new(&self.cli);
        c.arg("--root").arg(&self.root).args(args);
        self.env.apply(&mut c);
        c.current_dir(self.env.dir.path());
        run(c, stdin)
    }

    fn ours(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut all = vec!["--root", self.root.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut c = self.env.redctx(&all);
        c.current_dir(self.env.dir.path());
        run(c, stdin)
    }

    /// Both sides, the server's script restarted for each; (reference, ours).
    fn both(&self, args: &[&str], stdin: Option<&str>) -> (Run, Run) {
        self.ollama.reset();
        let r = self.reference(args, stdin);
        self.ollama.reset();
        let o = self.ours(args, stdin);
        (r, o)
    }

    /// Exit code and stdout equal; stderr equal when `same_stderr`.
    #[track_caller]
    fn same(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let (r, o) = self.both(args, stdin);
        assert_eq!(
            (o.0, &o.1),
            (r.0, &r.1),
            "{args:?}\nreference stderr: {}\nours: {}",
            r.2,
            o.2
        );
        // Ours adds a note when a draft lands where agents can read it (COMPAT.md).
        let stderr: String =
            o.2.lines()
                .filter(|l| !l.starts_with("Note: agents can read this file"))
                .map(|l| format!("{l}\n"))
                .collect();
        assert_eq!(stderr.trim_end(), r.2.trim_end(), "stderr of {args:?}");
        o
    }
}

fn run(mut c: Command, stdin: Option<&str>) -> Run {
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        // A command that refuses its arguments may exit before reading its input: the
        // pipe then breaks, and its output and status are what is compared.
        let written = child.stdin.take().unwrap().write_all(text.as_bytes());
        if let Err(err) = written {
            assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
        }
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn setup() -> Option<Sides> {
    let cli = oracle()?;
    let env = Env::new();
    let root = make_root(&env);
    let ollama = FakeOllama::start();
    ollama.script("notes/kickoff.md", vec![kickoff_answer()]);
    ollama.script("notes/plan.md", vec![plan_answer()]);
    Some(Sides {
        env,
        root,
        cli,
        ollama,
    })
}

#[test]
fn drafts_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let e = s.ollama.endpoint.clone();
    let base = ["discover", "--endpoint", e.as_str(), "--model", "m:1"];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    let (_, toml, _) = s.same(&with(&[]), None);
    assert!(
        toml.starts_with("# Generated by redctx discover.\n"),
        "{toml}"
    );
    assert!(toml.contains("\"Norrland Bank\""), "{toml}");
    assert!(!toml.contains("Invented Vendor"), "{toml}");
    s.same(&with(&["--format", "json"]), None);
    s.same(&with(&["--raw-discovery"]), None);
    s.same(&with(&["--raw-discovery", "--format", "json"]), None);
    s.same(&with(&["notes/plan.md"]), None);
    s.same(&with(&["--glob", "*.md", "--max-files", "1"]), None);
    s.same(&with(&["--max-chars-per-file", "40"]), None);
    s.same(
        &with(&["--max-chars-per-file", "40", "--fail-on-truncation"]),
        None,
    );
    s.same(&with(&["--max-total-raw-bytes", "100"]), None);

    // What the model was sent: one request per file, JSON mode, temperature 0, the
    // file's path and text in the prompt.
    s.ollama.reset();
    s.ours(&with(&[]), None);
    let requests = s.ollama.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    for r in &requests {
        assert_eq!(r["model"], "m:1");
        assert_eq!(r["stream"], false);
        assert_eq!(r["format"], "json");
        assert_eq!(r["options"]["temperature"], 0);
    }
    let prompt = requests
        .iter()
        .filter_map(|r| r["prompt"].as_str())
        .find(|p| p.contains("Path: notes/kickoff.md"))
        .unwrap();
    assert!(prompt.contains("Path: notes/kickoff.md"), "{prompt}");
    assert!(prompt.contains("Avery Quinlan met Bram Okafor"), "{prompt}");
}

#[test]
fn written_drafts_and_refusals_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let e = s.ollama.endpoint.clone();
    let draft = s.root.join("draft.toml");
    let args = [
        "discover",
        "--endpoint",
        e.as_str(),
        "--output",
        "draft.toml",
    ];
    s.ollama.reset();
    let r = s.reference(&args, None);
    let reference_bytes = std::fs::read(&draft).unwrap();
    std::fs::remove_file(&draft).unwrap();
    s.ollama.reset();
    let o = s.ours(&args, None);
    assert_eq!((o.0, &o.1), (r.0, &r.1), "{}", o.2);
    assert_eq!(std::fs::read(&draft).unwrap(), reference_bytes);
    // Exists: refused without --force, replaced with it.
    s.same(&args, None);
    let mut forced = args.to_vec();
    forced.push("--force");
    s.same(&forced, None);
    assert_eq!(std::fs::read(&draft).unwrap(), reference_bytes);
    s.same(
        &["discover", "--endpoint", &e, "--output", "../outside.toml"],
        None,
    );
    s.same(&["discover", "--endpoint", "http://10.9.8.7:11434"], None);
    s.same(&["discover", "--endpoint", "ftp://localhost:11434"], None);
    s.same(&["discover", "--endpoint", "localhost:11434"], None);
    // A usage error: both exit 2 (usage texts are clap's and argparse's).
    let (r, o) = s.both(&["discover", "--provider", "other"], None);
    assert_eq!((o.0, r.0), (2, 2));
    // A closed port.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    s.same(&["discover", "--endpoint", &closed], None);
}

#[test]
fn model_failures_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let e = s.ollama.endpoint.clone();
    let args = [
        "discover",
        "--endpoint",
        e.as_str(),
        "--model",
        "m:1",
        "notes/plan.md",
    ];
    // Not JSON, then JSON: the stricter retry is used.
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Answer("Sure! Here you go".into()), plan_answer()],
    );
    s.same(&args, None);
    // JSON inside prose is found without a retry.
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Answer(format!(
            "Result: {} hope this helps",
            json!({"people": ["Bram Okafor"], "clients": ["Norrland Bank"]})
        ))],
    );
    s.same(&args, None);
    // Never JSON.
    s.ollama
        .script("notes/plan.md", vec![Reply::Answer("[1, 2]".into())]);
    s.same(&args, None);
    // Ollama's own failures.
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Http(
            404,
            "Not Found",
            json!({"error": "model 'm:1' not found"}).to_string(),
        )],
    );
    s.same(&args, None);
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Http(500, "Internal Server Error", "boom".into())],
    );
    s.same(&args, None);
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Http(200, "OK", "not json at all".into())],
    );
    s.same(&args, None);
    s.ollama.script(
        "notes/plan.md",
        vec![Reply::Http(
            200,
            "OK",
            json!({"error": "out of memory"}).to_string(),
        )],
    );
    s.same(&args, None);
}

#[test]
fn a_model_that_does_not_answer_times_out() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let e = s.ollama.endpoint.clone();
    s.ollama.script("notes/plan.md", vec![Reply::Hang]);
    let args = [
        "discover",
        "--endpoint",
        e.as_str(),
        "--timeout",
        "1",
        "notes/plan.md",
    ];
    s.ollama.reset();
    let r = s.reference(&args, None);
    s.ollama.reset();
    let o = s.ours(&args, None);
    assert_eq!((o.0, o.1.as_str()), (r.0, ""), "{}", o.2);
    assert_eq!(o.2.trim_end(), "Ollama request timed out.");
}

fn jsonl(docs: &[(&str, &str)]) -> String {
    docs.iter()
        .map(|(p, t)| format!("{}\n", json!({"path": p, "text": t})))
        .collect()
}

#[test]
fn updates_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let e = s.ollama.endpoint.clone();
    let kickoff = std::fs::read_to_string(s.root.join("notes/kickoff.md")).unwrap();
    let plan = std::fs::read_to_string(s.root.join("notes/plan.md")).unwrap();
    let input = s.env.dir.path().join("docs.jsonl");
    std::fs::write(
        &input,
        jsonl(&[("notes/kickoff.md", &kickoff), ("notes/plan.md", &plan)]),
    )
    .unwrap();
    let input = input.to_str().unwrap();
    let config = s.root.join("policy.toml");
    let existing = "# Reviewed by hand.\nmode = \"strict\"\n\n[redaction]\nclients = [\"Old Client\"]\n\
                    allow = [\"Azure\"] # public\n\n[redaction.aliases]\n\"Old Client\" = [\"OC\"]\n\n\
                    [github.repos.kb]\nowner = \"o\"\nrepo = \"r\"\n";
    let seed = "[redaction]\npeople = [\"Avery Quinlan\"]\nallow = [\"Kafka\"]\nexclude_dirs = [\"tmp\"]\n\
                detector_profile = \"extended\"\n[redaction.aliases]\n\"Avery Quinlan\" = [\"AQ\"]\n";
    write(&s.root, "seed.toml", seed);
    let base = [
        "discover-update",
        "--endpoint",
        e.as_str(),
        "--model",
        "m:1",
        "--output-config",
        "policy.toml",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let cases: Vec<Vec<String>> = vec![
        with(&["--input-jsonl", input, "--check"]),
        with(&["--input-jsonl", input, "--dry-run"]),
        with(&[
            "--input-jsonl",
            input,
            "--dry-run",
            "--seed-config",
            "seed.toml",
        ]),
        with(&[
            "--input-jsonl",
            input,
            "--dry-run",
            "--include-discovered-allow",
            "--include-discovered-aliases",
        ]),
        with(&["--merge-only", "--seed-config", "seed.toml", "--dry-run"]),
        with(&["--merge-only", "--input-jsonl", input]),
        with(&[]),
        with(&["--input-jsonl", input, "--max-files", "1"]),
        with(&["--input-jsonl", input, "--max-chars-per-document", "50"]),
        with(&["--input-jsonl", input, "--max-total-chars", "100"]),
        with(&["--input-jsonl", input, "--output-config", "../x.toml"]),
        with(&["--input-jsonl", input, "--seed-config", "missing.toml"]),
        with(&["--input-jsonl", input, "--endpoint", "http://192.0.2.1:1"]),
    ];
    for existing_text in ["", existing] {
        for args in &cases {
            std::fs::write(&config, existing_text).unwrap();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            s.same(&args, None);
        }
    }
    // Writing: summary lines and the bytes on disk; then a second run changes nothing.
    let write_args = with(&[
        "--input-jsonl",
        "-",
        "--seed-config",
        "seed.toml",
        "--include-discovered-aliases",
    ]);
    let write_args: Vec<&str> = write_args.iter().map(String::as_str).collect();
    let stdin = jsonl(&[("notes/kickoff.md", &kickoff), ("notes/plan.md", &plan)]);
    std::fs::write(&config, existing).unwrap();
    s.ollama.reset();
    let r = s.reference(&write_args, Some(&stdin));
    let reference_bytes = std::fs::read(&config).unwrap();
    std::fs::write(&config, existing).unwrap();
    s.ollama.reset();
    let o = s.ours(&write_args, Some(&stdin));
    assert_eq!((o.0, &o.1), (r.0, &r.1), "{}", o.2);
    assert!(o.1.contains("config_changed: true"), "{}", o.1);
    assert_eq!(
        String::from_utf8(std::fs::read(&config).unwrap()).unwrap(),
        String::from_utf8(reference_bytes).unwrap()
    );
    let again = s.same(&write_args, Some(&stdin));
    assert!(again.1.contains("config_changed: false"), "{}", again.1);
    // Malformed input.
    for bad in [
        "{\"path\": \"a\"}\n",
        "not json\n",
        "[1]\n",
        "\n\n",
        "{\"path\":\"a\",\"text\":\"b\",\"sha256\":1}\n",
    ] {
        let args = with(&["--input-jsonl", "-"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        s.same(&args, Some(bad));
    }
}

/// Paths the tests above use exist where they expect.
#[test]
fn fixture_is_as_described() {
    let env = Env::new();
    let root = make_root(&env);
    assert!(Path::new(&root.join("notes/kickoff.md")).is_file());
}

/// A patterns rules file for the fixture: a rule per section, a category discovery
/// skips (EMAIL), a tool name (kept a term: detector terms never go to `allow`) and a
/// single first name (dropped by cleanup, kept by `--raw-discovery`).
const DISCOVERY_RULES: &str = "[[patterns]]\ncategory = \"PERSON\"\nregex = \"Avery Quinlan|Bram Okafor|Avery\"\n\n\
     [[patterns]]\ncategory = \"ORG\"\nregex = \"Halvard Logistics\"\n\n\
     [[patterns]]\ncategory = \"CLIENT\"\nregex = \"Norrland Bank\"\n\n\
     [[patterns]]\ncategory = \"SENSITIVE\"\nregex = \"Project Bluefin|Bluefin\"\n\n\
     [[patterns]]\ncategory = \"ENTITY\"\nregex = \"kubectl|design review\"\n\n\
     [[patterns]]\ncategory = \"EMAIL\"\nregex = \"avery\\\\.quinlan@example\\\\.invalid\"\n";

#[test]
fn detector_drafts_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let outside = s.env.dir.path().join("rules.toml");
    std::fs::write(&outside, DISCOVERY_RULES).unwrap();
    // A copy under the root: never sampled (it names every value itself).
    write(&s.root, "rules/discovery.toml", DISCOVERY_RULES);
    let spec = format!("patterns={}", outside.display());
    let inside = format!("patterns={}", s.root.join("rules/discovery.toml").display());
    for spec in [&spec, &inside] {
        let with = |extra: &[&'static str]| -> Vec<&str> {
            let mut v = vec!["discover", "--detector", spec.as_str()];
            v.extend_from_slice(extra);
            v
        };
        let (_, toml, _) = s.same(&with(&[]), None);
        assert!(
            toml.contains("# Source: provider=detector detectors=patterns root=.\n"),
            "{toml}"
        );
        assert!(toml.contains("terms = [\n  \"Project Bluefin\""), "{toml}");
        assert!(toml.contains("\"kubectl\""), "{toml}");
        s.same(&with(&["--format", "json"]), None);
        s.same(&with(&["--raw-discovery"]), None);
        s.same(&with(&["--raw-discovery", "--format", "json"]), None);
        s.same(&with(&["notes/plan.md"]), None);
        // Model options do not go with a detector; the refusal is the reference's.
        s.same(&with(&["--model", "m:1"]), None);
    }
    assert!(
        s.ollama.requests().is_empty(),
        "a detector run asked the model"
    );
    // A broken rules file: the same refusal.
    let broken = s.env.dir.path().join("broken.toml");
    std::fs::write(&broken, "[[patterns]\n").unwrap();
    let broken = format!("patterns={}", broken.display());
    s.same(&["discover", "--detector", broken.as_str()], None);
}

#[test]
fn detector_updates_match_the_reference() {
    let Some(s) = setup() else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let rules = s.env.dir.path().join("rules.toml");
    std::fs::write(&rules, DISCOVERY_RULES).unwrap();
    let spec = format!("patterns={}", rules.display());
    let kickoff = std::fs::read_to_string(s.root.join("notes/kickoff.md")).unwrap();
    let plan = std::fs::read_to_string(s.root.join("notes/plan.md")).unwrap();
    let stdin = jsonl(&[("notes/kickoff.md", &kickoff), ("notes/plan.md", &plan)]);
    let config = s.root.join("policy.toml");
    let base = [
        "discover-update",
        "--detector",
        spec.as_str(),
        "--output-config",
        "policy.toml",
        "--input-jsonl",
        "-",
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    for args in [
        with(&["--dry-run"]),
        with(&["--check"]),
        with(&["--dry-run", "--include-discovered-aliases"]),
        with(&["--endpoint", "http://127.0.0.1:9"]),
    ] {
        std::fs::write(&config, "").unwrap();
        s.same(&args, Some(&stdin));
    }
    // Written: the summary (no model; the detectors named) and the config's bytes.
    std::fs::write(&config, "").unwrap();
    let r = s.reference(&with(&[]), Some(&stdin));
    let reference_bytes = std::fs::read(&config).unwrap();
    std::fs::write(&config, "").unwrap();
    let o = s.ours(&with(&[]), Some(&stdin));
    assert_eq!((o.0, &o.1), (r.0, &r.1), "{}", o.2);
    assert!(
        o.1.contains("model: skipped\ndetectors: patterns\n"),
        "{}",
        o.1
    );
    assert_eq!(
        String::from_utf8(std::fs::read(&config).unwrap()).unwrap(),
        String::from_utf8(reference_bytes).unwrap()
    );
    let merge_only = [
        "discover-update",
        "--detector",
        spec.as_str(),
        "--output-config",
        "policy.toml",
        "--merge-only",
    ];
    s.same(&merge_only, None);
    assert!(
        s.ollama.requests().is_empty(),
        "a detector run asked the model"
    );
}
