//! `--detector NAME[=ARGUMENT]` (spec 5.12): checked here so the operator gets the
//! reference's start-up messages, which name a detector but never echo its argument
//! (it may be a private path). The daemon reads and validates the rules file itself.

use std::path::{Path, PathBuf};

/// The detectors this build has (the reference's `presidio` and `gliner` adapters are
/// Python libraries; see COMPAT.md).
const AVAILABLE: &[&str] = &["patterns"];

/// `NAME` as the reference accepts it: `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// [`resolve`] against this process's working directory and `$HOME`.
pub fn resolve_here(values: &[String]) -> Result<Vec<String>, String> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    resolve(
        values,
        &std::env::current_dir().unwrap_or_default(),
        home.as_deref(),
    )
}

/// The `--detector` values in launch order as the daemon takes them (`NAME=ABSOLUTE
/// PATH`), or the sentence to print before exiting with status 1. `cwd` resolves a
/// relative rules file, `home` a leading `~`.
pub fn resolve(values: &[String], cwd: &Path, home: Option<&Path>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        let (name, argument) = match value.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a)),
            None => (value.trim(), None),
        };
        if !valid_name(name) {
            return Err("Invalid --detector value; expected NAME or NAME=ARGUMENT.".into());
        }
        if seen.contains(&name) {
            return Err(format!("Detector '{name}' was given more than once."));
        }
        seen.push(name);
        if !AVAILABLE.contains(&name) {
            return Err(format!(
                "Unknown detector. Name: {name}. Available: {}.",
                AVAILABLE.join(", ")
            ));
        }
        let Some(argument) = argument.map(str::trim).filter(|a| !a.is_empty()) else {
            return Err(
                "The patterns detector requires a rules file: --detector patterns=PATH.".into(),
            );
        };
        let path = expand(Path::new(argument), home);
        let path = cwd.join(path);
        // `resolve()` in the reference: symlinks followed, so the protected path is the
        // file itself.
        let path = std::fs::canonicalize(&path)
            .ok()
            .filter(|p| p.is_file() && std::fs::File::open(p).is_ok())
            .ok_or("The patterns detector rules file could not be read.")?;
        let path = path
            .to_str()
            .ok_or("The patterns detector rules file could not be read.")?;
        out.push(format!("{name}={path}"));
    }
    Ok(out)
}

fn expand(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(values: &[&str], dir: &Path) -> Result<Vec<String>, String> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        resolve(&values, dir, None)
    }

    #[test]
    fn messages_never_echo_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.toml"), "").unwrap();
        let canonical = std::fs::canonicalize(dir.path().join("rules.toml")).unwrap();
        assert_eq!(
            run(&["patterns=rules.toml"], dir.path()).unwrap(),
            [format!("patterns={}", canonical.display())]
        );
        let cases: &[(&[&str], &str)] = &[
            (
                &["-bad=secret-path"],
                "Invalid --detector value; expected NAME or NAME=ARGUMENT.",
            ),
            (
                &["=secret-path"],
                "Invalid --detector value; expected NAME or NAME=ARGUMENT.",
            ),
            (
                &["patterns=rules.toml", "patterns=secret-path"],
                "Detector 'patterns' was given more than once.",
            ),
            (
                &["gliner=secret-path"],
                "Unknown detector. Name: gliner. Available: patterns.",
            ),
            (
                &["patterns"],
                "The patterns detector requires a rules file: --detector patterns=PATH.",
            ),
            (
                &["patterns= "],
                "The patterns detector requires a rules file: --detector patterns=PATH.",
            ),
            (
                &["patterns=secret-path"],
                "The patterns detector rules file could not be read.",
            ),
            (
                &["patterns=."],
                "The patterns detector rules file could not be read.",
            ),
        ];
        for (values, want) in cases {
            assert_eq!(run(values, dir.path()).unwrap_err(), *want, "{values:?}");
        }
        assert!(valid_name(&"a".repeat(64)) && !valid_name(&"a".repeat(65)));
    }
}
