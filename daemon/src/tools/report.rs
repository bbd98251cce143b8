//! `doctor`, `audit` and `refresh_index`: answers about the policy and the server rather
//! than about file content.

use super::{ToolError, ToolOutput};
use crate::engine::placeholder::{PLACEHOLDER_RE, ordinary_placeholder};
use crate::engine::python::text::{char_len, is_py_space};
use crate::engine::wordlists::{
    DEFAULT_ALLOW_TERMS, DEFAULT_EXCLUDE_DIRS, DEFAULT_EXCLUDE_GLOBS, MONTHS_AND_DAYS,
};
use crate::engine::{Counts, Policy, RedactOptions};
use crate::fs::content::is_document_glob;
use crate::view::{RootView, ViewError};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A plugged detector as doctor lists it: name and version only (its arguments may be
/// private paths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluggedDetector {
    pub name: String,
    pub version: String,
}

/// What `doctor` needs beyond the policy: server facts the view does not carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DoctorArgs {
    /// Document extraction is on (the five document globs are then not excluded); the
    /// policy's own `documents` counts too.
    pub documents: bool,
    /// Loaded plugged detectors, in load order (the `detectors:` line).
    pub plugged_detectors: Vec<PluggedDetector>,
    /// Further `key: value` lines of ours, printed after every reference key.
    pub extra: Vec<(String, String)>,
}

/// `doctor`: the reference's keys in its order (spec 3.3), counts only, never a term.
/// `config_loaded` prints Python's `True`/`False`. After the reference's keys (and its
/// optional `detectors:` line) come ours: `builtin_detectors: true|false` (our secret/PII
/// detector layer), `root_terms: true|false` (whether the root's name is a client term;
/// off by default in code mode), then `args.extra`. Reads no content, so counts are empty.
pub fn doctor(view: &dyn RootView, args: &DoctorArgs) -> ToolOutput {
    let policy: &Policy = view.engine().policy();
    let allow: BTreeSet<&str> = DEFAULT_ALLOW_TERMS
        .iter()
        .chain(MONTHS_AND_DAYS)
        .copied()
        .chain(policy.allow.iter().map(String::as_str))
        .filter(|term| !term.is_empty())
        .collect();
    let dirs: BTreeSet<&str> = DEFAULT_EXCLUDE_DIRS
        .iter()
        .copied()
        .chain(policy.exclude_dirs.iter().map(String::as_str))
        .collect();
    let globs: BTreeSet<&str> = DEFAULT_EXCLUDE_GLOBS
        .iter()
        .copied()
        .filter(|glob| !((args.documents || policy.documents) && is_document_glob(glob)))
        .chain(policy.exclude_globs.iter().map(String::as_str))
        .collect();
    let mut out = String::new();
    let mut line = |key: &str, value: String| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&value);
        out.push('\n');
    };
    line("root", ".".into());
    line(
        "config_loaded",
        if policy.config_loaded {
            "True"
        } else {
            "False"
        }
        .into(),
    );
    line("mode", policy.mode.as_str().into());
    line("detector_profile", policy.detector_profile.as_str().into());
    line("salt_source", policy.salt_source.as_str().into());
    line(
        "random_vault_salt",
        (policy.salt_source == crate::engine::SaltSource::LocalState).to_string(),
    );
    line("clients", policy.clients.len().to_string());
    line("organizations", policy.organizations.len().to_string());
    line("people_terms", policy.people.len().to_string());
    line("other_terms", policy.terms.len().to_string());
    line("alias_groups", policy.alias_groups.len().to_string());
    line(
        "aliases",
        policy
            .alias_groups
            .iter()
            .map(|g| g.aliases.len())
            .sum::<usize>()
            .to_string(),
    );
    line("allow_terms", allow.len().to_string());
    line("excluded_dirs", dirs.len().to_string());
    line("excluded_globs", globs.len().to_string());
    if !args.plugged_detectors.is_empty() {
        let listed: Vec<String> = args
            .plugged_detectors
            .iter()
            .map(|d| format!("{} {}", d.name, d.version))
            .collect();
        line("detectors", listed.join(", "));
    }
    line("builtin_detectors", policy.detectors.to_string());
    line("root_terms", (!policy.root_terms.is_empty()).to_string());
    for (key, value) in &args.extra {
        line(key, value.clone());
    }
    ToolOutput::ok(out, Counts::default())
}

/// `format` of `audit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuditFormat {
    #[default]
    Text,
    Json,
}

/// What `audit` needs beyond the policy: the symlink scan (done by the index layer,
/// which sees the filesystem) and server facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditArgs {
    /// Text lines or indented JSON.
    pub format: AuditFormat,
    /// Raw root-relative paths of symlink/reparse entries that are not excluded, in
    /// scan order.
    pub links: Vec<String>,
    /// How many of those do not resolve (broken or looping).
    pub broken_links: u64,
    /// Controlled writes are on for this server (a WARN).
    pub writes_enabled: bool,
    /// Writes cannot leave their subdirectory (always true for us; FAIL otherwise).
    pub write_subdir_confined: bool,
    /// Plugged detectors loaded (0 leaves the check out).
    pub plugged_detectors: usize,
}

impl Default for AuditArgs {
    fn default() -> Self {
        AuditArgs {
            format: AuditFormat::Text,
            links: Vec::new(),
            broken_links: 0,
            writes_enabled: false,
            write_subdir_confined: true,
            plugged_detectors: 0,
        }
    }
}

/// The five values that must never survive redaction (spec 3.3).
const SYNTHETIC_VALUES: [&str; 5] = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_1234567890abcdefghijklmnopqrstuvwxyzABCD",
    "-----BEGIN PRIVATE KEY-----\nabc123\n-----END PRIVATE KEY-----",
    "4111 1111 1111 1111",
    "10.12.30.4",
];

fn check(category: &str, name: &str, status: &str, detail: String) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("category".into(), category.into());
    map.insert("name".into(), name.into());
    map.insert("status".into(), status.into());
    map.insert("detail".into(), detail.into());
    map
}

/// Alias-group forms that do not redact, alone, as one linked placeholder: a canonical
/// value must become its ordinary placeholder, an alias one placeholder carrying the
/// group's entity hex followed by `.`.
fn unlinked_alias_forms(view: &dyn RootView) -> Result<usize, ToolError> {
    let engine = view.engine();
    let policy = engine.policy();
    let mut unlinked = 0;
    for group in &policy.alias_groups {
        let ordinary = ordinary_placeholder(&policy.salt, group.category, &group.canonical);
        if engine
            .redact(&group.canonical, RedactOptions::default())?
            .text
            != ordinary
        {
            unlinked += 1;
        }
        // `[CAT_<entity>]` → `_<entity>.` marks a linked form of this group.
        let entity = &ordinary[ordinary.len() - 33..ordinary.len() - 1];
        let link = format!("_{entity}.");
        for alias in &group.aliases {
            let redacted = engine.redact(alias, RedactOptions::default())?.text;
            let whole = PLACEHOLDER_RE
                .find(&redacted)
                .is_some_and(|m| m.start() == 0 && m.end() == redacted.len());
            if !whole || !redacted.contains(&link) {
                unlinked += 1;
            }
        }
    }
    Ok(unlinked)
}

/// `audit`: the reference's checks in its order (spec 3.3). Text: one
/// `<category>: <name> <STATUS>[  <detail>]` line per check, then up to 10 `  - <ref>
/// <rpath>` lines and `  - and <n> more`. JSON: `{"checks": [...]}` indented by 2 as
/// Python's `json.dumps(indent=2, ensure_ascii=False)`. Any FAIL makes the answer an
/// error carrying the whole report. Receipt counts: the symlink paths (the synthetic and
/// alias probes use a throwaway redactor in the reference, so they are not counted).
pub fn audit(view: &dyn RootView, args: &AuditArgs) -> ToolOutput {
    let mut counts = Counts::default();
    match audit_inner(view, args, &mut counts) {
        Ok((text, failed)) => ToolOutput {
            text,
            is_error: failed,
            counts,
        },
        Err(error) => ToolOutput::error(error, counts),
    }
}

fn audit_inner(
    view: &dyn RootView,
    args: &AuditArgs,
    counts: &mut Counts,
) -> Result<(String, bool), ToolError> {
    let engine = view.engine();
    let policy = engine.policy();
    let mut refs = Vec::with_capacity(args.links.len());
    for rel in &args.links {
        let path = view.path(rel);
        counts.merge(&path.counts);
        refs.push(format!("{} {}", path.id, path.text));
    }
    let private_terms = policy.explicit.clients
        + policy.explicit.organizations
        + policy.explicit.people_terms
        + policy.explicit.terms
        + policy.environment_terms.len();
    let explicit = json!({
        "clients": policy.explicit.clients,
        "organizations": policy.explicit.organizations,
        "people_terms": policy.explicit.people_terms,
        "terms": policy.explicit.terms,
        "root_terms": policy.root_terms.len(),
        "environment_terms": policy.environment_terms.len(),
    });
    let broad_allow = policy
        .allow
        .iter()
        .filter(|t| char_len(t.trim_matches(is_py_space)) < 3 || t.contains('*'))
        .count();
    let synthetic = engine
        .redact(&SYNTHETIC_VALUES.join("\n"), RedactOptions::default())?
        .text;
    let leaked = SYNTHETIC_VALUES
        .iter()
        .filter(|value| synthetic.contains(*value))
        .count();

    let mut links = check(
        "containment",
        "symlink and reparse entries",
        if refs.is_empty() { "PASS" } else { "FAIL" },
        format!("{} found", refs.len()),
    );
    links.insert("refs".into(), Value::from(refs.clone()));
    let mut checks = vec![
        links,
        check(
            "containment",
            "broken or looping symlinks",
            if args.broken_links > 0 {
                "WARN"
            } else {
                "PASS"
            },
            format!("{} found", args.broken_links),
        ),
        check(
            "configuration",
            "random vault salt",
            if policy.salt_source == crate::engine::SaltSource::LocalState {
                "PASS"
            } else {
                "WARN"
            },
            policy.salt_source.as_str().into(),
        ),
        check(
            "configuration",
            "explicit private terms",
            if private_terms > 0 { "PASS" } else { "WARN" },
            serde_json::to_string(&explicit).unwrap_or_default(),
        ),
        check(
            "configuration",
            "overly broad allow entries",
            if broad_allow > 0 { "WARN" } else { "PASS" },
            format!("{broad_allow} candidates"),
        ),
    ];
    if !policy.alias_groups.is_empty() {
        let unlinked = unlinked_alias_forms(view)?;
        let aliases: usize = policy.alias_groups.iter().map(|g| g.aliases.len()).sum();
        checks.push(check(
            "configuration",
            "alias groups",
            if unlinked > 0 { "WARN" } else { "PASS" },
            format!(
                "{} groups, {aliases} aliases, {unlinked} forms not redacted as one linked placeholder on their own",
                policy.alias_groups.len()
            ),
        ));
    }
    if args.plugged_detectors > 0 {
        checks.push(check(
            "configuration",
            "plugged detectors",
            "PASS",
            format!(
                "{} active in addition to the built-in baseline",
                args.plugged_detectors
            ),
        ));
    }
    checks.extend([
        check(
            "redaction",
            "synthetic leak suite",
            if leaked > 0 { "FAIL" } else { "PASS" },
            format!("{leaked} raw values escaped"),
        ),
        check(
            "redaction",
            "placeholder collisions",
            "PASS",
            "collision detection enabled".into(),
        ),
        check(
            "redaction",
            "global placeholder collision absence",
            "NOT_TESTED",
            "collisions are detected when placeholders are generated".into(),
        ),
        check(
            "exposure",
            "read-only default",
            "PASS",
            "controlled writes require explicit MCP --enable-writes".into(),
        ),
        if args.writes_enabled {
            check(
                "exposure",
                "controlled writes currently enabled",
                "WARN",
                "enabled by current MCP server".into(),
            )
        } else {
            check(
                "exposure",
                "controlled writes currently disabled",
                "PASS",
                "disabled".into(),
            )
        },
        check(
            "exposure",
            "write subdirectory confinement",
            if args.write_subdir_confined {
                "PASS"
            } else {
                "FAIL"
            },
            "raw write path not reported".into(),
        ),
    ]);
    let failed = checks
        .iter()
        .any(|c| c.get("status").and_then(Value::as_str) == Some("FAIL"));

    let text = match args.format {
        AuditFormat::Json => {
            let checks: Vec<Value> = checks.into_iter().map(Value::Object).collect();
            let mut root = Map::new();
            root.insert("checks".into(), Value::Array(checks));
            let mut text = serde_json::to_string_pretty(&Value::Object(root))
                .map_err(|_| ToolError::Failed)?;
            text.push('\n');
            text
        }
        AuditFormat::Text => {
            let mut text = String::new();
            for c in &checks {
                let field = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or_default();
                text.push_str(&format!(
                    "{}: {} {}",
                    field("category"),
                    field("name"),
                    field("status")
                ));
                if !field("detail").is_empty() {
                    text.push_str("  ");
                    text.push_str(field("detail"));
                }
                text.push('\n');
                if let Some(Value::Array(list)) = c.get("refs") {
                    for r in list.iter().take(10) {
                        text.push_str(&format!("  - {}\n", r.as_str().unwrap_or_default()));
                    }
                    if list.len() > 10 {
                        text.push_str(&format!("  - and {} more\n", list.len() - 10));
                    }
                }
            }
            text
        }
    };
    Ok((text, failed))
}

/// `refresh_index`: asks the index layer to rescan (`rescan`), then answers
/// `Refreshed path index.\n`; a rescan over the traversal budget fails with its message.
pub fn refresh_index(rescan: impl FnOnce() -> Result<(), ViewError>) -> ToolOutput {
    match rescan() {
        Ok(()) => ToolOutput::ok("Refreshed path index.\n".into(), Counts::default()),
        Err(error) => ToolOutput::error(error.into(), Counts::default()),
    }
}
