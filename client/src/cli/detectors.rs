//! `--detector NAME[=ARGUMENT]` (spec 5.12): checked here so the operator gets the
//! reference's start-up messages, which name a detector but never echo its argument
//! (it may be a private path). The daemon reads and validates the rules file itself.

use std::path::{Path, PathBuf};

/// The detectors this build has: `patterns`, and `exec` for a detector process that
/// speaks `docs/detector-protocol.md` (the reference's `presidio` and `gliner` are
/// Python libraries; `adapters/presidio/` runs Presidio through `exec`; see COMPAT.md).
const AVAILABLE: &[&str] = &["exec", "patterns"];

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
        let argument = argument.map(str::trim).filter(|a| !a.is_empty());
        if name == "exec" {
            let program = argument
                .ok_or("The exec detector requires a program: --detector exec=/path/to/program.")?;
            out.push(format!("exec={}", program_path(program, cwd, home)?));
            continue;
        }
        let Some(argument) = argument else {
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

/// An exec detector's program: an executable regular file, symlinks resolved (the
/// daemon starts it, and never serves it if it is under the root).
fn program_path(program: &str, cwd: &Path, home: Option<&Path>) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = cwd.join(expand(Path::new(program), home));
    std::fs::canonicalize(&path)
        .ok()
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .and_then(|p| p.to_str().map(str::to_owned))
        .ok_or_else(|| "The exec detector program could not be run.".to_owned())
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
                "Unknown detector. Name: gliner. Available: exec, patterns.",
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
            (
                &["exec"],
                "The exec detector requires a program: --detector exec=/path/to/program.",
            ),
            (
                &["exec=rules.toml"],
                "The exec detector program could not be run.",
            ),
            (
                &["exec=secret-path"],
                "The exec detector program could not be run.",
            ),
        ];
        for (values, want) in cases {
            assert_eq!(run(values, dir.path()).unwrap_err(), *want, "{values:?}");
        }
        assert!(valid_name(&"a".repeat(64)) && !valid_name(&"a".repeat(65)));
    }
}
