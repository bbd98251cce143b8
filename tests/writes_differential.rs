//! Differential test of controlled writes (spec 9): the reference's `redctx-mcp
//! --enable-writes` and our `redctx mcp --enable-writes` each serve their own copy of
//! one root (same directory name, config and salt, so the same placeholders and ids);
//! the same `redctx_submit_doc` calls go to both, and the answers (text, isError) and
//! the files each left on disk (paths, bytes, modes) must be identical. The calls cover
//! a valid write and each failure of the check order of 9.1. The rehydrate CLI is
//! compared the same way on a redacted folder.
//!
//! The placeholders and ids the calls use come from the reference's own answers. Only
//! receipts are not compared (COMPAT: ours count the answer's redactions, the
//! reference's also every redaction of its whole-root map walk).
//!
//! Oracle: `redctx_test_support::Oracle`; `REDCTX_SKIP_ORACLE=1` skips.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::Env;
use support::fixtures::{NOTES, fixture_a, write};
use support::raw::RawSession;

const SALT: &str = "writes-salt";

fn oracle(program: &str) -> Option<PathBuf> {
    redctx_test_support::Oracle::find().program(program)
}

/// Fixture A plus a person known only inside the write sub-directory. The built-in
/// detector layer is off so both sides redact alike.
fn make_root(env: &Env, side: &str) -> PathBuf {
    let root = env.root_dir(side, "kb");
    fixture_a(&root, SALT, "detectors = false\n");
    let config = root.join(".agent-context-redactor.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "people = [\"Taylor Reed\", \"Jordan Vale\"]",
        "people = [\"Taylor Reed\", \"Jordan Vale\", \"Morgan Frost\"]",
    );
    std::fs::write(&config, text).unwrap();
    write(&root, "incoming/seed.md", "Morgan Frost wrote this.\n");
    write(
        &root,
        "docs/plan.md",
        "Owner: Jordan Vale\nClient Alpha roadmap.\n",
    );
    root
}

/// Every file under `dir` (relative path → bytes and mode), symlinks as their target.
fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, (target.to_string_lossy().into_owned().into_bytes(), 0));
            } else if meta.is_dir() {
                out.insert(format!("{rel}/"), (Vec::new(), 0));
                walk(base, &p, out);
            } else {
                let mode = meta.permissions().mode() & 0o777;
                out.insert(rel, (std::fs::read(&p).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

struct Pair {
    reference: RawSession,
    ours: RawSession,
    ref_root: PathBuf,
    our_root: PathBuf,
    compared: usize,
}

impl Pair {
    fn start(env: &Env, oracle: &Path, ref_root: &Path, our_root: &Path, flags: &[&str]) -> Pair {
        let mut r = Command::new(oracle);
        r.arg("--root")
            .arg(ref_root)
            .args(["--mode", "strict"])
            .args(flags);
        env.apply(&mut r);
        r.current_dir(env.dir.path());
        let mut ours = env.shim_command(our_root, &["--mode", "strict", "--no-gitignore"]);
        ours.args(flags);
        Pair {
            reference: RawSession::start("reference redctx-mcp", r),
            ours: RawSession::start("redctx mcp", ours),
            ref_root: ref_root.to_path_buf(),
            our_root: our_root.to_path_buf(),
            compared: 0,
        }
    }

    /// One call to both; panics on a difference of text, isError or disk. Returns the
    /// reference's text.
    #[track_caller]
    fn check(&mut self, tool: &str, args: Value) -> String {
        let want = self.reference.call(tool, args.clone());
        let have = self.ours.call(tool, args.clone());
        let text = |v: &Value| v["content"][0]["text"].as_str().unwrap().to_owned();
        let err = |v: &Value| v["isError"].as_bool().unwrap_or(false);
        assert_eq!(
            (text(&have), err(&have)),
            (text(&want), err(&want)),
            "{tool} {args}"
        );
        assert_eq!(
            tree(&self.our_root.join("incoming")),
            tree(&self.ref_root.join("incoming")),
            "files on disk after {tool} {args}"
        );
        self.compared += 1;
        eprintln!("{args} -> {:?}", text(&want));
        text(&want)
    }

    fn submit(&mut self, target: &str, text: &str, overwrite: Option<bool>) -> String {
        let mut args = json!({"target_path": target, "text": text});
        if let Some(o) = overwrite {
            args["overwrite"] = json!(o);
        }
        self.check("redctx_submit_doc", args)
    }

    /// Runs `f` on both roots (to set the disk up alike).
    fn both(&self, f: impl Fn(&Path)) {
        f(&self.ref_root);
        f(&self.our_root);
    }
}

fn placeholder_of(text: &str, near: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(near))
        .unwrap_or_else(|| panic!("no line with {near:?} in {text}"));
    let start = line.find('[').unwrap();
    let end = start + line[start..].find(']').unwrap() + 1;
    line[start..end].to_owned()
}

#[test]
fn submissions_match_the_reference() {
    let Some(oracle) = oracle("redctx-mcp") else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let env = Env::new();
    let ref_root = make_root(&env, "ref");
    let our_root = make_root(&env, "ours");

    // Without --enable-writes: hidden, still callable.
    {
        let mut p = Pair::start(&env, &oracle, &ref_root, &our_root, &[]);
        p.submit("a.md", "x", None);
        p.check("redctx_submit_doc", json!({"text": "x"}));
    }

    let mut p = Pair::start(&env, &oracle, &ref_root, &our_root, &["--enable-writes"]);
    // What an agent saw: the reference's own redaction of the notes and listing.
    let notes = p.reference.call("redctx_read", json!({"path": NOTES}));
    let notes = notes["content"][0]["text"].as_str().unwrap().to_owned();
    let _ = p.ours.call("redctx_list", json!({}));
    let listing = p.check("redctx_list", json!({"path": "docs"}));
    let plan_id = support::path_id(SALT, "docs/plan.md");
    assert!(listing.contains(&plan_id), "{listing}");
    let person = placeholder_of(&notes, "met");
    let seed = p
        .reference
        .call("redctx_read", json!({"path": "incoming/seed.md"}));
    let morgan = placeholder_of(seed["content"][0]["text"].as_str().unwrap(), "wrote");

    // Valid writes: placeholders, ids in both forms, a placeholder in the target path.
    p.submit(
        "notes/summary.md",
        &format!(
            "Reviewer {person} approved; see {plan_id} and redctx://{}.\n",
            &plan_id[1..]
        ),
        None,
    );
    p.submit("notes/full.md", &notes, None);
    let client = placeholder_of(&notes, "notes");
    p.submit(&format!("{client}/plan.md"), "Plan.\n", None);
    // Existing file, then overwrite; an existing directory.
    p.submit("notes/summary.md", "Second.\n", None);
    p.submit(
        "notes/summary.md",
        &format!("Second {person}.\n"),
        Some(true),
    );
    p.submit("notes", "x", Some(true));
    // Unresolved tokens: unknown, in the target, and known only inside incoming/.
    p.submit("u.md", "Hello [PERSON_deadbeef] and @p_000000000000.", None);
    p.submit("[PERSON_0123456789abcdef0123456789abcdef]/u.md", "x", None);
    p.submit("m.md", &format!("From {morgan}."), None);
    let many: String = (0..12).map(|i| format!("[ORG_{i:02}] ")).collect();
    p.submit("many.md", &many, None);
    // Target rules, in order.
    for target in [
        "",
        "  ",
        "a:b.md",
        "../escape.md",
        "/abs.md",
        ".",
        "a/../../b.md",
        "notes/.env",
        ".ENV",
        "keys/server.KEY",
        ".agent-context-redactor.toml",
    ] {
        p.submit(target, "x", None);
    }
    // A placeholder whose value holds `..` or `/` can only land inside incoming/.
    p.submit(&format!("{person}/../x.md"), "x", None);
    // Round trip: values glued to their neighbours.
    p.submit("glued.md", &format!("foo{person}bar"), None);
    p.submit("glued2.md", &format!("{person}approved"), None);
    p.submit("ok.md", &format!("Reviewer {person} approved."), None);
    // A document redacted before the alias group existed carries the alias's ordinary
    // (superseded) placeholder; it still rehydrates.
    let superseded = support::placeholder(SALT, "PERSON", "taylor");
    p.submit("old.md", &format!("Old note by {superseded}.\n"), None);
    // Symlink components (created alike in both roots).
    p.both(|root| {
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("incoming/link")).unwrap();
    });
    p.submit("link/x.md", "x", None);
    p.submit("link", "x", Some(true));
    // The new file's id resolves at once, on both sides alike.
    let wrote = p.submit("fresh.md", &format!("By {person}.\n"), None);
    let id = wrote
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap()
        .to_owned();
    p.check("redctx_stat", json!({"path": id}));
    p.check("redctx_read", json!({"path": id}));
    eprintln!("writes differential: {} calls compared", p.compared);
    drop(p);

    // An explicit --max-submit-files keeps the reference's whole-root budget.
    let mut p = Pair::start(
        &env,
        &oracle,
        &ref_root,
        &our_root,
        &["--enable-writes", "--max-submit-files", "2"],
    );
    p.submit("capped.md", "plain", None);
}

#[test]
fn rehydrate_cli_matches_the_reference() {
    let Some(cli) = oracle("redctx") else {
        eprintln!("SKIPPED: no reference oracle");
        return;
    };
    let env = Env::new();
    let root = make_root(&env, "shared");
    // A redacted folder, as the reference's bundle shows the notes and the plan.
    let run_ref = |args: &[&str]| {
        let mut c = Command::new(&cli);
        c.arg("--root")
            .arg(&root)
            .args(["--mode", "strict"])
            .args(args);
        env.apply(&mut c);
        c.current_dir(env.dir.path());
        let o = c.output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let run_ours = |args: &[&str]| {
        let mut all = vec!["--root", root.to_str().unwrap(), "--mode", "strict"];
        all.extend_from_slice(args);
        env.run(&all)
    };
    let (_, notes, _) = run_ref(&["cat", NOTES]);
    let notes: String = notes.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let (_, plan, _) = run_ref(&["cat", "docs/plan.md"]);
    let plan: String = plan.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let drafts = env.dir.path().join("drafts");
    write(&drafts, "a/notes.md", &notes);
    write(&drafts, "plan.md", format!("{plan}[PERSON_deadbeef]\n"));
    write(&drafts, "blob.bin", b"\x00\x01");
    let d = drafts.to_str().unwrap();
    let out = |side: &str| env.dir.path().join(side).to_string_lossy().into_owned();
    let file = format!("{d}/plan.md");
    let cases: Vec<Vec<String>> = vec![
        vec!["rehydrate".into(), file.clone()],
        vec![
            "rehydrate".into(),
            file.clone(),
            "--allow-raw-output".into(),
        ],
        vec![
            "rehydrate".into(),
            format!("{d}/none.md"),
            "--allow-raw-output".into(),
        ],
        vec!["rehydrate".into(), d.into(), "--allow-raw-output".into()],
        vec![
            "rehydrate".into(),
            d.into(),
            "--output".into(),
            format!("{d}/a"),
            "--allow-raw-output".into(),
        ],
        vec![
            "rehydrate".into(),
            d.into(),
            "--output".into(),
            file.clone(),
            "--allow-raw-output".into(),
        ],
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (rc, ro, re) = run_ref(&args);
        let (oc, oo, oe) = run_ours(&args);
        assert_eq!((oc, oo.as_str()), (rc, ro.as_str()), "{args:?}");
        assert_eq!(oe.trim_end(), re.trim_end(), "{args:?}");
    }
    // Folder output, then the same again without and with --force.
    for force in [false, false, true] {
        let mut results = Vec::new();
        for side in ["ref-out", "our-out"] {
            let mut args = vec!["rehydrate", d, "--output"];
            let o = out(side);
            args.push(&o);
            args.push("--allow-raw-output");
            if force {
                args.push("--force");
            }
            let r = if side == "ref-out" {
                run_ref(&args)
            } else {
                run_ours(&args)
            };
            results.push((r.0, r.1, r.2.trim_end().to_owned()));
        }
        assert_eq!(results[1], results[0], "force {force}");
        assert_eq!(
            tree(Path::new(&out("our-out"))),
            tree(Path::new(&out("ref-out")))
        );
    }
}
