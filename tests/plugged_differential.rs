//! Differential test of the `patterns` detector (spec 5.12): the reference's
//! `Redactor` with `--detector patterns=FILE` against our engine with the same rules
//! file, built-in detector layer off, texts redacted one by one: same bytes, same
//! per-category counts. Oracle: `redctx_test_support::Oracle` (skipped only with
//! `REDCTX_SKIP_ORACLE=1`).

use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::engine::{Engine, Mode, RedactOptions};
use redctx_daemon::policy_loader::PolicySource;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const RULES: &str = r#"
[[patterns]]
category = "ID"
regex = 'TICKET-\d{5}'

[[patterns]]
category = "CLIENT"
regex = 'cust-[a-z]+'
ignore_case = true

[[patterns]]
category = "SENSITIVE"
regex = 'host\s+[a-z]+\d'
"#;

/// Values whole, split by the baseline (strict's acronyms: remnants), across lines,
/// next to existing placeholders and allow-listed words.
const TEXTS: &[&str] = &[
    "Jane Doe filed TICKET-12345 today.\n",
    "host\nweb1 and host web1; [ID_0123456789abcdef0123456789abcdef] TICKET-11111\n",
    "The Project ACME uses cust-acme and Monday TICKET-22222, TICKET-22222-TICKET-22222\n",
    "see TICKET-12345 and ticket-12345, xTICKET-12345y here\n",
    "cust-acme wrote to CUST-ACME and Cust-acme; cust-acmex stays apart\n",
    "line one\nTICKET-00001\nline three TICKET-00001.\n",
    "a host  web1 and host web1 and HOST\tWEB1\n",
    "nothing to see\n",
    "TICKET-12345TICKET-54321 and TICKET-123456\n",
];

const SALT: &str = "plugged-differential-salt";

fn reference(
    python: &Path,
    root: &Path,
    config: &Path,
    rules: &Path,
    mode: &str,
    preserve: bool,
    texts: &[&str],
) -> Vec<Value> {
    let script = r#"
import json, sys
from pathlib import Path
from redacted_context_mcp import config as C, redaction as R, detectors as D
root, config, rules, mode, preserve = sys.argv[1:6]
texts = json.load(sys.stdin)
cfg = C.load_config(Path(root), Path(config))
dets = D.load_detectors(["patterns=" + rules])
out = []
for text in texts:
    r = R.Redactor(cfg, mode=mode, detectors=dets)
    red = r.redact(text, preserve_line_count=preserve == "1")
    out.append({"text": red, "receipt": r.receipt()})
print(json.dumps(out))
"#;
    let mut child = Command::new(python)
        .arg("-c")
        .arg(script)
        .args([root.as_os_str(), config.as_os_str(), rules.as_os_str()])
        .arg(mode)
        .arg(if preserve { "1" } else { "0" })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oracle python");
    serde_json::to_writer(child.stdin.take().unwrap(), texts).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle failed");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

fn ours(root: &Path, config: &Path, rules: &Path, mode: &str) -> Engine {
    let env = EnvOverrides::default();
    let source = PolicySource::new(root, Some(config), Mode::parse(mode), env, &[])
        .unwrap()
        .with_detectors(vec![("patterns".into(), rules.to_path_buf())]);
    let (policy, _) = source.load().expect("policy");
    assert!(!policy.detectors, "the built-in layer is off for parity");
    Engine::new(Arc::new(policy)).expect("engine")
}

#[test]
fn patterns_detector_matches_the_reference() {
    let Some(python) = redctx_test_support::Oracle::find().python() else {
        eprintln!("SKIPPED: REDCTX_SKIP_ORACLE=1");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().join("served");
    std::fs::create_dir(&root).unwrap();
    let root = std::fs::canonicalize(root).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[redaction]\nsalt = \"{SALT}\"\ndetectors = false\n"),
    )
    .unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    let mut mismatches = Vec::new();
    for mode in ["balanced", "strict"] {
        for preserve in [false, true] {
            let want = reference(&python, &root, &config, &rules, mode, preserve, TEXTS);
            let engine = ours(&root, &config, &rules, mode);
            for (text, want) in TEXTS.iter().zip(want) {
                let opts = RedactOptions {
                    preserve_line_count: preserve,
                    ..RedactOptions::default()
                };
                let got = engine.redact(text, opts).expect("redacts");
                let counts: serde_json::Map<String, Value> = got
                    .counts
                    .0
                    .iter()
                    .map(|(c, n)| (c.as_str().to_owned(), Value::from(*n)))
                    .collect();
                let (nominated, positional) = got.counts.1.first().copied().unwrap_or_default();
                let detectors = serde_json::json!([{
                    "name": "patterns", "version": "1",
                    "nominated": nominated, "positional": positional,
                }]);
                if got.text != want["text"]
                    || detectors != want["receipt"]["detectors"]
                    || Value::Object(counts.clone()) != want["receipt"]["counts_by_category"]
                {
                    mismatches.push(format!(
                    "{mode} preserve={preserve} {text:?}\n  reference {} {} {}\n  ours      {:?} {} {detectors}",
                    want["text"],
                    want["receipt"]["counts_by_category"],
                    want["receipt"]["detectors"],
                    got.text,
                    Value::Object(counts)
                ));
                }
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
