//! The README's Install and First run sections, followed literally by a new user on a
//! fresh machine: an empty HOME and XDG directories, nothing of redctx's in the
//! environment, `PATH` holding only `~/.cargo/bin` and the system directories.
//!
//! The commands come from README.md itself, so the README cannot drift from what works:
//! - Install: each `cargo install --path <crate>` is replaced by copying the binary this
//!   test build already made to `~/.cargo/bin` (where cargo installs it); any other
//!   install command fails the test until this file learns it.
//! - First run: each command runs as written (with the temp root for
//!   `/abs/path/to/repo`) through `sh -c`; `redctx mcp` gets the README's JSON lines on
//!   stdin. Every step's user-visible output is checked against what the README promises.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

/// The fenced blocks (language, lines) of the README section titled `title`.
fn blocks(readme: &str, title: &str) -> Vec<(String, Vec<String>)> {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README has no `## {title}` section"));
    let body = &readme[start + 1..];
    let body = &body[..body[3..].find("\n## ").map_or(body.len(), |i| i + 3)];
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in body.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(lang)) => current = Some((lang.to_string(), Vec::new())),
            (Some(_), Some(_)) => out.push(current.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// A shell line without its trailing `# comment` (none of the README's commands quote `#`).
fn command_of(line: &str) -> String {
    line.split(" #").next().unwrap_or(line).trim().to_string()
}

/// A new user's machine: HOME, XDG dirs and PATH, all empty and private to this test.
struct Machine {
    home: tempfile::TempDir,
    root: PathBuf,
}

impl Machine {
    fn new() -> Machine {
        let home = tempfile::tempdir().unwrap();
        for d in [".config", ".local/state", "run", ".cargo/bin"] {
            std::fs::create_dir_all(home.path().join(d)).unwrap();
        }
        let root = home.path().join("src/shop");
        let files: &[(&str, &str)] = &[
            (
                "README.md",
                "# Shop\n\nMaintained by Jane Doe <jane.doe@corp.io>.\n",
            ),
            ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
            (
                "config/app.env",
                "DB_PASSWORD=correct-horse-battery-staple\n",
            ),
        ];
        for (rel, text) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Machine { home, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.home.path().join(rel)
    }

    /// `sh -c line` as the user types it, in their home directory.
    fn shell(&self, line: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(line)
            .current_dir(self.home.path())
            .env_clear()
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.path(".config"))
            .env("XDG_STATE_HOME", self.path(".local/state"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.path(".cargo/bin").display()
                ),
            );
        c
    }

    /// The socket where the README's state table says it is.
    fn socket(&self) -> PathBuf {
        self.path("run/redctx/redctxd.sock")
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // A failed assertion must not leave a daemon behind.
        if self.socket().exists() {
            let _ = self.shell("redctx daemon stop").output();
        }
    }
}

fn text(o: &Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `cargo install --path <crate>`: the binary that crate installs, as this build made it.
fn installed_binary(command: &str) -> &'static Path {
    match command.split_whitespace().collect::<Vec<_>>()[..] {
        ["cargo", "install", "--path", "client"] => Path::new(common::REDCTX),
        ["cargo", "install", "--path", "daemon"] => common::redctxd(),
        _ => panic!("README install step {command:?} is not one this test knows how to follow"),
    }
}

/// Run `redctx mcp` as written, send the README's JSON lines, return the answers by id.
fn mcp_session(m: &Machine, command: &str, lines: &[String]) -> Vec<Value> {
    let mut child = m
        .shell(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let want = lines.iter().filter(|l| l.contains("\"id\"")).count();
    let mut rd = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    while answers.len() < want {
        let mut line = String::new();
        assert!(
            rd.read_line(&mut line).unwrap() > 0,
            "redctx mcp closed stdout early"
        );
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin); // Ctrl-D
    assert!(
        child.wait().unwrap().success(),
        "redctx mcp did not exit cleanly"
    );
    answers.sort_by_key(|v| v["id"].as_i64());
    answers
}

#[test]
fn the_readme_install_and_first_run_work_on_a_fresh_machine() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let m = Machine::new();

    // Install.
    let install = blocks(&readme, "Install");
    let (_, lines) = install.first().expect("an install block");
    let mut installed = Vec::new();
    for line in lines
        .iter()
        .map(|l| command_of(l))
        .filter(|l| !l.is_empty())
    {
        let built = installed_binary(&line);
        let dest = m.path(".cargo/bin").join(built.file_name().unwrap());
        std::fs::copy(built, &dest).unwrap();
        installed.push(dest.file_name().unwrap().to_string_lossy().into_owned());
    }
    assert_eq!(
        installed,
        ["redctx", "redctxd"],
        "the README installs both binaries"
    );

    // First run: shell blocks run in order; the JSON block is what the user pastes into
    // the `redctx mcp` of the block before it.
    let first_run = blocks(&readme, "First run");
    let root = m.root.to_str().unwrap();
    let mut steps = Vec::new();
    for (i, (lang, lines)) in first_run.iter().enumerate() {
        if lang != "sh" {
            continue;
        }
        for line in lines
            .iter()
            .map(|l| command_of(l))
            .filter(|l| !l.is_empty())
        {
            let command = line.replace("/abs/path/to/repo", root);
            if command.starts_with("redctx mcp ") {
                let json = first_run[i + 1..]
                    .iter()
                    .find(|(lang, _)| lang == "json")
                    .map(|(_, l)| l.clone())
                    .expect("the README shows the MCP lines to paste");
                let answers = mcp_session(&m, &command, &json);
                let init = &answers[0]["result"];
                assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
                assert!(init["capabilities"]["tools"].is_object(), "{init}");
                let tree = &answers[1]["result"];
                assert_eq!(tree["isError"], false, "{tree}");
                let shown = tree["content"][0]["text"].as_str().unwrap();
                // Opaque ids and, in the default code mode, readable names.
                assert!(shown.contains("@p_") && shown.contains("src"), "{shown}");
                steps.push("mcp");
                continue;
            }
            let out = text(&m.shell(&command).output().unwrap());
            match command.as_str() {
                "redctx daemon start" => {
                    assert_eq!(out.0, 0, "{out:?}");
                    assert!(out.1.starts_with("started redctx daemon "), "{out:?}");
                    // Where the README's state table says things live.
                    let socket = m.socket();
                    assert!(
                        out.1.contains(&format!("socket {})", socket.display())),
                        "{out:?}"
                    );
                    assert!(m.path(".local/state/redctx/logs/redctxd.log").is_file());
                    steps.push("start");
                }
                c if c.starts_with("redctx status ") && c.ends_with(" --wait") => {
                    assert_eq!(out.0, 0, "{out:?}");
                    assert_eq!(out.1.lines().last(), Some("ready: 3 files"), "{out:?}");
                    steps.push("status");
                }
                "redctx daemon stop" => {
                    assert_eq!(out.0, 0, "{out:?}");
                    assert!(out.1.starts_with("stopped redctx daemon (pid "), "{out:?}");
                    assert!(!m.socket().exists());
                    steps.push("stop");
                }
                other => panic!("README first-run step {other:?} has no check in this test"),
            }
        }
    }
    assert_eq!(steps, ["start", "status", "mcp", "stop"]);
    // The vault the README's state table names: shared with the reference, per root.
    let vaults = m.path(".local/state/redacted-context-mcp/vaults");
    let salts = std::fs::read_dir(&vaults)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".salt")
        })
        .count();
    assert_eq!(salts, 1, "{}", vaults.display());
}
