//! Running the reference (redacted-context-mcp 0.10.1) as a differential oracle.
//!
//! The oracle is `tests/oracle/dump_reference.py`, run with the Python of the venv
//! made by `scripts/setup-oracle.sh`. One call redacts a whole corpus in every
//! requested (mode, profile) and returns the reference's derived policy lists, so our
//! `Policy` can be built from exactly the lists the reference used.

use super::{Corpus, repo_root};
use redctx_daemon::engine::{AliasGroup, Category, DetectorProfile, Mode, Policy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What to do about the oracle in this run.
pub enum OracleAvailability {
    /// Run it with this Python.
    Ready(PathBuf),
    /// `REDCTX_SKIP_ORACLE=1`: the caller prints SKIPPED and passes.
    Skipped,
}

/// The oracle's Python, found as every differential test finds it
/// ([`redctx_test_support::Oracle`]); a missing oracle is an error with the fix.
pub fn oracle_python() -> Result<OracleAvailability, String> {
    match redctx_test_support::Oracle::locate()? {
        redctx_test_support::Oracle::Skipped => Ok(OracleAvailability::Skipped),
        ready => Ok(OracleAvailability::Ready(
            ready.python().expect("a ready oracle has a Python"),
        )),
    }
}

/// The job sent to `dump_reference.py` on stdin.
#[derive(Serialize)]
pub struct Job<'a> {
    pub root: String,
    pub config_path: Option<String>,
    pub salt: &'a str,
    pub modes: Vec<&'a str>,
    pub profiles: Vec<&'a str>,
    pub files: &'a [String],
    pub paths: &'a [String],
    pub include_non_text: bool,
}

/// The reference's policy after config loading (dedupe, person expansion, root terms).
#[derive(Clone, Debug, Deserialize)]
pub struct RefPolicy {
    pub salt: String,
    pub salt_source: String,
    pub detector_profile: String,
    pub clients: Vec<String>,
    pub organizations: Vec<String>,
    pub people: Vec<String>,
    pub terms: Vec<String>,
    pub allow: Vec<String>,
    pub root_terms: Vec<String>,
    pub alias_groups: Vec<RefAliasGroup>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RefAliasGroup {
    pub canonical: String,
    pub category: String,
    pub aliases: Vec<String>,
}

/// How the reference decoded one file.
#[derive(Clone, Debug, Deserialize)]
pub struct RefFile {
    pub is_text: bool,
    pub bytes: u64,
    pub chars: u64,
    pub decoded_sha256: String,
}

/// One redaction call's outcome: text and receipt counts, or the exception text.
#[derive(Clone, Debug, Deserialize)]
pub struct RefOut {
    pub text: Option<String>,
    #[serde(default)]
    pub counts: BTreeMap<String, u64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RefFileRun {
    pub preserve: RefOut,
    pub flat: RefOut,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RefRun {
    pub mode: String,
    pub profile: String,
    pub files: BTreeMap<String, RefFileRun>,
    pub paths: BTreeMap<String, RefOut>,
}

/// Everything the oracle printed for one corpus.
#[derive(Clone, Debug, Deserialize)]
pub struct Dump {
    pub reference_version: String,
    pub policy: RefPolicy,
    pub files: BTreeMap<String, RefFile>,
    pub path_ids: BTreeMap<String, String>,
    pub runs: Vec<RefRun>,
}

/// Runs the oracle over `corpus` in every (mode, profile) given.
pub fn run(
    python: &PathBuf,
    corpus: &Corpus,
    modes: &[&str],
    profiles: &[&str],
) -> Result<Dump, String> {
    let script = repo_root().join("tests/oracle/dump_reference.py");
    let job = Job {
        root: corpus.root.to_string_lossy().into_owned(),
        config_path: corpus
            .config_path
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        salt: &corpus.salt,
        modes: modes.to_vec(),
        profiles: profiles.to_vec(),
        files: &corpus.files,
        paths: &corpus.paths,
        include_non_text: false,
    };
    let input = serde_json::to_vec(&job).map_err(|e| e.to_string())?;
    let mut child = Command::new(python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start the oracle {}: {e}", python.display()))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child
        .wait_with_output()
        .map_err(|e| format!("oracle did not finish: {e}"))?;
    writer
        .join()
        .expect("stdin writer thread")
        .map_err(|e| format!("could not send the job to the oracle: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "oracle failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let dump: Dump = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("could not parse the oracle's output: {e}"))?;
    if dump.reference_version != "0.10.1" {
        return Err(format!(
            "oracle is redacted-context-mcp {}, expected 0.10.1; rerun scripts/setup-oracle.sh",
            dump.reference_version
        ));
    }
    Ok(dump)
}

/// Our policy from the reference's derived lists, for byte parity: built-in detectors
/// off, lists copied verbatim (order kept), alias categories mapped by name.
pub fn policy_from_reference(
    reference: &RefPolicy,
    mode: Mode,
    profile: DetectorProfile,
) -> Result<Policy, String> {
    let alias_groups = reference
        .alias_groups
        .iter()
        .map(|g| {
            Ok(AliasGroup {
                canonical: g.canonical.clone(),
                category: Category::from_name(&g.category)
                    .ok_or_else(|| format!("unknown alias category {}", g.category))?,
                aliases: g.aliases.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Policy {
        salt: reference.salt.clone(),
        mode,
        detector_profile: profile,
        detectors: false,
        clients: reference.clients.clone(),
        organizations: reference.organizations.clone(),
        people: reference.people.clone(),
        terms: reference.terms.clone(),
        allow: reference.allow.clone(),
        alias_groups,
        root_terms: reference.root_terms.clone(),
        ..Policy::default()
    })
}
