//! Shared harness of the end-to-end MCP tests: the real `redctx` and `redctxd` binaries,
//! a private daemon per test (own state dir, socket and vault dir), Fixture A of spec
//! 14.2/17, an rmcp client session per shim, and a raw newline-delimited JSON-RPC
//! session for servers driven line by line (the reference's `redctx-mcp`).
//!
//! Every test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

pub mod fixtures;
pub mod github;
pub mod ollama;
pub mod presidio;
pub mod raw;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The two binaries under test.
pub struct Bins {
    pub redctx: PathBuf,
    pub redctxd: PathBuf,
}

/// `redctx` and `redctxd` of this build. They live in other packages of the workspace,
/// so Cargo does not build them for this package's tests: build them once per test
/// binary (a no-op when fresh). `REDCTX_E2E_BIN_DIR` points at prebuilt binaries
/// instead (packaging, CI artifacts).
pub fn bins() -> &'static Bins {
    static B: OnceLock<Bins> = OnceLock::new();
    B.get_or_init(|| {
        if let Some(dir) = std::env::var_os("REDCTX_E2E_BIN_DIR") {
            let dir = PathBuf::from(dir);
            return Bins {
                redctx: dir.join("redctx"),
                redctxd: dir.join("redctxd"),
            };
        }
        // <target>/<profile>/deps/<this test>
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile> directory")
            .to_path_buf();
        let target_dir = profile_dir.parent().expect("target directory");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let mut c = Command::new(cargo);
        c.args([
            "build",
            "-q",
            "-p",
            "redctx-client",
            "--bin",
            "redctx",
            "-p",
            "redctx-daemon",
            "--bin",
            "redctxd",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
        if profile_dir.ends_with("release") {
            c.arg("--release");
        }
        let st = c.status().expect("run cargo build for redctx/redctxd");
        assert!(st.success(), "building redctx and redctxd failed");
        Bins {
            redctx: profile_dir.join("redctx"),
            redctxd: profile_dir.join("redctxd"),
        }
    })
}

/// Environment variables of the host that would change what a daemon or the reference
/// does; every child process gets them removed.
pub const SCRUBBED_ENV: &[&str] = &[
    "REDCTX_SOCKET",
    "REDACTED_CONTEXT_SALT",
    "REDACTED_CONTEXT_TERMS",
    "REDACTED_CONTEXT_DETECTOR_PROFILE",
    "XDG_RUNTIME_DIR",
];

/// One test's world: a private state dir (socket, cache, logs), a vault dir for salts,
/// and a directory for roots. Dropping it stops the daemon.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Default for Env {
    fn default() -> Self {
        Self::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        for d in ["state", "vault", "roots"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        Env { dir }
    }

    /// `REDCTX_STATE_DIR` of this test's daemon.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `REDACTED_CONTEXT_STATE_DIR` (the reference-compatible vault salt dir).
    pub fn vault(&self) -> PathBuf {
        self.dir.path().join("vault")
    }

    /// A fresh directory `roots/<parent>/<name>` for a root (the name matters: it
    /// becomes CLIENT terms).
    pub fn root_dir(&self, parent: &str, name: &str) -> PathBuf {
        let p = self.dir.path().join("roots").join(parent).join(name);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    }

    /// The environment every child of this test runs with.
    pub fn envs(&self) -> Vec<(OsString, Option<OsString>)> {
        let mut v: Vec<(OsString, Option<OsString>)> = vec![
            ("REDCTX_STATE_DIR".into(), Some(self.state().into())),
            (
                "REDCTX_DAEMON".into(),
                Some(bins().redctxd.clone().into_os_string()),
            ),
            (
                "REDACTED_CONTEXT_STATE_DIR".into(),
                Some(self.vault().into()),
            ),
        ];
        for k in SCRUBBED_ENV {
            v.push(((*k).into(), None));
        }
        v
    }

    pub fn apply(&self, c: &mut Command) {
        for (k, v) in self.envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
    }

    /// `redctx <args>` with this test's environment.
    pub fn redctx(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&bins().redctx);
        c.args(args);
        self.apply(&mut c);
        c
    }

    /// Runs `redctx <args>` to completion: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let o = self.redctx(args).stdin(Stdio::null()).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    /// `redctx --root <root> <args>`; panics unless it exits 0. Its stdout.
    #[track_caller]
    pub fn ok_on(&self, root: &Path, args: &[&str]) -> String {
        let mut all = vec!["--root", root.to_str().unwrap()];
        all.extend_from_slice(args);
        let (code, out, err) = self.run(&all);
        assert_eq!(code, 0, "redctx {args:?}: {err}");
        out
    }

    /// `redctx --root <root> bundle .` with limits high enough for every file of a test
    /// tree: the whole text an agent can get.
    #[track_caller]
    pub fn bundle_all(&self, root: &Path) -> String {
        self.ok_on(
            root,
            &[
                "bundle",
                "--max-files",
                "1000",
                "--max-total-chars",
                "10000000",
                ".",
            ],
        )
    }

    /// The daemon's pid, from `redctx daemon status` (None: not running).
    pub fn daemon_pid(&self) -> Option<u32> {
        let (code, out, _) = self.run(&["daemon", "status"]);
        if code != 0 {
            return None;
        }
        out.lines()
            .find_map(|l| l.strip_prefix("pid: "))
            .map(|p| p.trim().parse().unwrap())
    }

    /// Polls (with a deadline) until no daemon answers.
    pub fn wait_daemon_gone(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.daemon_pid().is_some() {
            assert!(
                Instant::now() < deadline,
                "daemon still answering after 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A `redctx mcp --root <root> <extra>` command line (std form).
    pub fn shim_command(&self, root: &Path, extra: &[&str]) -> Command {
        let mut c = self.redctx(&["mcp", "--root"]);
        c.arg(root).args(extra);
        c
    }

    /// An MCP session (rmcp client) with a new `redctx mcp` shim on `root`.
    pub async fn client(&self, root: &Path, extra: &[&str]) -> Mcp {
        let envs = self.envs();
        static SHIMS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SHIMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stderr_path = self.dir.path().join(format!("shim-{n}.stderr"));
        let stderr_file = std::fs::File::create(&stderr_path).unwrap();
        let cmd = tokio::process::Command::new(&bins().redctx).configure(|c| {
            c.arg("mcp").arg("--root").arg(root).args(extra);
            for (k, v) in &envs {
                match v {
                    Some(v) => c.env(k, v),
                    None => c.env_remove(k),
                };
            }
        });
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(stderr_file))
            .spawn()
            .expect("spawn redctx mcp");
        match ().serve(transport).await {
            Ok(service) => Mcp { service },
            Err(e) => panic!(
                "MCP session did not start: {e:?}; shim stderr: {:?}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            ),
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self
            .redctx(&["daemon", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// One tool answer, checked against the envelope of spec 3.1 (scenario 10).
#[derive(Clone, Debug)]
pub struct Answer {
    pub text: String,
    pub is_error: bool,
    /// The receipt in the reference's shape: our `builtin_detector` entry is moved to
    /// [`Answer::builtin_detector`], so goldens taken from the reference compare as is.
    pub receipt: Value,
    /// The receipt's `builtin_detector` entry (present when the detector layer ran).
    pub builtin_detector: Option<Value>,
}

impl Answer {
    /// The text with placeholders, path ids and GitHub aliases blanked, so leak checks
    /// only see what surrounds them (a raw value made of hex letters may occur in a
    /// digest).
    pub fn outside_tokens(&self) -> String {
        without_opaque_tokens(&self.text)
    }

    /// Panics unless this is a success.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert!(!self.is_error, "unexpected tool error: {}", self.text);
        &self.text
    }

    /// Panics unless this is an error; returns its text.
    #[track_caller]
    pub fn err(&self) -> &str {
        assert!(self.is_error, "expected a tool error, got: {}", self.text);
        &self.text
    }
}

/// Blanks placeholders (`[CAT_<hex>]`, linked forms, legacy shapes), `@p_<12hex>` ids
/// and `user_<16hex>` aliases.
pub fn without_opaque_tokens(text: &str) -> String {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"\[[A-Z_]+_(?:\d{2}|[0-9a-f]{8}|[0-9a-f]{32}(?:\.[0-9a-f]{8})?)\]|@?p_[0-9a-f]{12}|\buser_[0-9a-f]{16}\b",
        )
        .unwrap()
    })
    .replace_all(text, " ")
    .into_owned()
}

/// An MCP session with one shim.
pub struct Mcp {
    pub service: RunningService<RoleClient, ()>,
}

/// A JSON object literal as tool arguments.
pub fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// Checks the envelope of spec 3.1 / scenario 10 and extracts the answer.
#[track_caller]
pub fn answer_of(r: &CallToolResult) -> Answer {
    assert_eq!(r.content.len(), 1, "exactly one content block");
    let text = r.content[0]
        .as_text()
        .expect("a text content block")
        .text
        .clone();
    let s = r
        .structured_content
        .as_ref()
        .expect("structuredContent present");
    assert_eq!(
        s["text"].as_str(),
        Some(text.as_str()),
        "structuredContent.text == content[0].text (scenario 10)"
    );
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "structuredContent has text and receipt only");
    let mut receipt = s["receipt"].clone();
    assert!(
        receipt["detector_profile"].is_string() && receipt["counts_by_category"].is_object(),
        "receipt shape: {receipt}"
    );
    let builtin_detector = receipt
        .as_object_mut()
        .and_then(|o| o.remove("builtin_detector"));
    Answer {
        text,
        is_error: r.is_error == Some(true),
        receipt,
        builtin_detector,
    }
}

impl Mcp {
    /// `tools/call`; a protocol error is returned as is.
    pub async fn try_call(&self, tool: &str, args: Value) -> Result<Answer, ServiceError> {
        let r = self
            .service
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(obj(args)))
            .await?;
        Ok(answer_of(&r))
    }

    /// `tools/call` that must reach a handler (no protocol error).
    pub async fn call(&self, tool: &str, args: Value) -> Answer {
        match self.try_call(tool, args.clone()).await {
            Ok(a) => a,
            Err(e) => panic!("{tool} {args}: protocol error {e:?}"),
        }
    }
}

/// `@p_` + 12 hex of HMAC-SHA256(salt, rel) (spec 5.9), computed independently.
pub fn path_id(salt: &str, rel: &str) -> String {
    format!("@p_{}", &hmac_hex(salt, rel)[..12])
}

/// `[CAT_<32hex>]` of spec 5.3 for an already-normalized (casefolded, ASCII) value.
pub fn placeholder(salt: &str, category: &str, normalized: &str) -> String {
    format!(
        "[{category}_{}]",
        &hmac_hex(salt, &format!("{category}:{normalized}"))[..32]
    )
}

fn hmac_hex(salt: &str, msg: &str) -> String {
    use hmac::{Hmac, Mac};
    let key = if salt.is_empty() {
        "redacted-context-mcp-v1"
    } else {
        salt
    };
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    m.update(msg.as_bytes());
    m.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Polls `f` until it returns `Some` or the deadline passes.
pub fn poll<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
