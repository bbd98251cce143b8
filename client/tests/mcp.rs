//! `redctx mcp` as an agent sees it: the real shim binary driven by the rmcp client (or
//! raw JSON-RPC lines), talking to a real `redctxd` that serves the fake backend
//! (`REDCTX_FAKE_BACKEND=1`, test only) from a temporary state directory.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorCode, PaginatedRequestParams,
    ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{REDCTX, redctxd};

/// A temporary state dir (hence a private daemon) and roots; stops the daemon on drop.
struct Env {
    state: tempfile::TempDir,
    roots: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let roots = tempfile::tempdir().unwrap();
        for r in ["alpha", "beta", "blocked"] {
            std::fs::create_dir(roots.path().join(r)).unwrap();
        }
        Env {
            state: tempfile::tempdir().unwrap(),
            roots,
        }
    }

    fn root(&self, name: &str) -> PathBuf {
        self.roots.path().join(name).canonicalize().unwrap()
    }

    fn socket(&self) -> PathBuf {
        self.state.path().join("run").join("redctxd.sock")
    }

    fn apply(&self, c: &mut Command) {
        c.env("REDCTX_STATE_DIR", self.state.path())
            .env("REDCTX_FAKE_BACKEND", "1")
            .env("REDCTX_DAEMON", redctxd())
            .env_remove("REDCTX_SOCKET");
    }

    fn redctx(&self, args: &[&str]) -> Command {
        let mut c = Command::new(REDCTX);
        c.args(args);
        self.apply(&mut c);
        c
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let o = self.redctx(args).stdin(Stdio::null()).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    async fn client(&self, root: &str) -> RunningService<RoleClient, ()> {
        let root = self.root(root);
        let std_cmd = {
            let mut c = Command::new(REDCTX);
            self.apply(&mut c);
            c
        };
        let cmd = tokio::process::Command::new(REDCTX).configure(|c| {
            c.arg("mcp").arg("--root").arg(&root);
            for (k, v) in std_cmd.get_envs() {
                match v {
                    Some(v) => c.env(k, v),
                    None => c.env_remove(k),
                };
            }
        });
        ().serve(TokioChildProcess::new(cmd).unwrap())
            .await
            .expect("MCP session starts")
    }

    /// The daemon's pid, from `redctx daemon status`.
    fn daemon_pid(&self) -> Option<u32> {
        let (code, out, _) = self.run(&["daemon", "status"]);
        if code != 0 {
            return None;
        }
        out.lines()
            .find_map(|l| l.strip_prefix("pid: "))
            .map(|p| p.parse().unwrap())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self
            .redctx(&["daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn call(c: &RunningService<RoleClient, ()>, tool: &str, a: Value) -> CallToolResult {
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(a)))
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> &str {
    r.content[0].as_text().expect("text block").text.as_str()
}

/// The envelope of spec 3.1 and scenario 10: structured text equals the text block.
fn assert_envelope(r: &CallToolResult) {
    assert_eq!(r.content.len(), 1);
    let s = r.structured_content.as_ref().expect("structuredContent");
    assert_eq!(s["text"], text(r));
    assert_eq!(
        s["receipt"],
        json!({"detector_profile": "default", "counts_by_category": {}})
    );
    assert_eq!(s.as_object().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_has_the_reference_names_titles_schemas_and_annotations() {
    let env = Env::new();
    let c = env.client("alpha").await;
    let tools = c.list_all_tools().await.unwrap();
    let got: Vec<(String, String)> = tools
        .iter()
        .map(|t| (t.name.to_string(), t.title.clone().unwrap()))
        .collect();
    let want = [
        ("redctx_tree", "Tree"),
        ("redctx_list", "List"),
        ("redctx_read", "Read"),
        ("redctx_search", "Search"),
        ("redctx_retrieve", "Retrieve"),
        ("redctx_stat", "Stat"),
        ("redctx_bundle", "Bundle"),
        ("redctx_doctor", "Doctor"),
        ("redctx_audit", "Audit"),
        ("redctx_refresh_index", "Refresh Index"),
        ("redctx_github_repos", "Github Repos"),
        ("redctx_github_list_issues", "Github List Issues"),
        ("redctx_github_read_issue", "Github Read Issue"),
        ("redctx_github_search_issues", "Github Search Issues"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);

    let v: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    for t in &v {
        // Spec 3.2: the GitHub tools that call GitHub are open-world.
        let open = t["name"].as_str().unwrap().starts_with("redctx_github_")
            && t["name"] != "redctx_github_repos";
        assert_eq!(
            t["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": open}),
            "{}",
            t["name"]
        );
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["inputSchema"]["additionalProperties"], false);
        assert_eq!(t["outputSchema"]["required"], json!(["text", "receipt"]));
        assert_eq!(t["outputSchema"]["additionalProperties"], false);
        assert!(t["description"].as_str().unwrap().len() > 100);
    }
    let by = |n: &str| v.iter().find(|t| t["name"] == n).unwrap()["inputSchema"].clone();
    // Parameters of spec 3.2: types, defaults, bounds, required.
    assert_eq!(by("redctx_read")["required"], json!(["path"]));
    assert_eq!(
        by("redctx_read")["properties"]["max_chars"]["default"],
        120000
    );
    assert_eq!(by("redctx_read")["properties"]["start_line"]["minimum"], 1);
    assert_eq!(by("redctx_search")["required"], json!(["query"]));
    assert_eq!(
        by("redctx_search")["properties"]["ignore_case"]["default"],
        true
    );
    assert_eq!(
        by("redctx_search")["properties"]["paths"]["items"],
        json!({"type": "string"})
    );
    assert_eq!(
        by("redctx_retrieve")["properties"]["query"]["maxLength"],
        2000
    );
    assert_eq!(
        by("redctx_retrieve")["properties"]["max_chars"]["minimum"],
        256
    );
    assert_eq!(
        by("redctx_retrieve")["properties"]["max_chars"]["maximum"],
        100000
    );
    assert_eq!(
        by("redctx_retrieve")["properties"]["max_results"]["maximum"],
        50
    );
    assert_eq!(by("redctx_tree")["properties"]["max_depth"]["default"], 3);
    assert!(
        by("redctx_list")["properties"]["max_depth"]
            .get("default")
            .is_none()
    );
    assert_eq!(
        by("redctx_bundle")["properties"]["max_files"]["default"],
        80
    );
    assert_eq!(
        by("redctx_audit")["properties"]["format"]["enum"],
        json!(["text", "json"])
    );
    assert_eq!(by("redctx_doctor")["properties"], json!({}));
    assert!(by("redctx_stat").get("required").is_some());
    assert!(by("redctx_tree").get("required").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_info_and_capabilities() {
    let env = Env::new();
    let c = env.client("alpha").await;
    let info = c.peer_info().unwrap();
    let v = serde_json::to_value(&*info).unwrap();
    assert_eq!(v["protocolVersion"], "2025-11-25");
    assert_eq!(
        v["serverInfo"],
        json!({"name": "redacted-context", "title": "Redacted Context", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(
        v["capabilities"],
        json!({"tools": {"listChanged": false}, "resources": {"listChanged": false}})
    );
    assert!(v["instructions"].as_str().unwrap().contains("@p_<id>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_give_the_spec_messages_as_tool_errors() {
    let env = Env::new();
    let c = env.client("alpha").await;
    // Spec 14.2 scenario 13 (the GitHub case is absent: no GitHub tools yet).
    let cases = [
        (
            "redctx_search",
            json!({"query": "x", "context": -1}),
            "context must be at least 0.",
        ),
        (
            "redctx_search",
            json!({"query": "x", "max_results": 0}),
            "max_results must be at least 1.",
        ),
        (
            "redctx_search",
            json!({"query": "x", "paths": [123]}),
            "paths[0] must be a string.",
        ),
        (
            "redctx_read",
            json!({"path": "a", "max_chars": true}),
            "max_chars must be an integer.",
        ),
        (
            "redctx_read",
            json!({"path": "a", "b": 1, "a": 2}),
            "Unexpected argument(s): a, b.",
        ),
        (
            "redctx_stat",
            json!({}),
            "Missing required argument(s): path.",
        ),
        (
            "redctx_audit",
            json!({"format": "xml"}),
            "format must be one of: text, json.",
        ),
    ];
    for (tool, a, msg) in cases {
        let r = call(&c, tool, a).await;
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert_eq!(text(&r), msg);
        assert_envelope(&r);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_policy_wins_over_argument_errors() {
    let env = Env::new();
    let c = env.client("blocked").await;
    let r = call(&c, "redctx_stat", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with("Context access is blocked"),
        "{}",
        text(&r)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_calls_reach_the_daemon_with_their_root_and_arguments() {
    let env = Env::new();
    let c = env.client("alpha").await;
    let r = call(
        &c,
        "redctx_read",
        json!({"path": "docs/a.md", "start_line": 2}),
    )
    .await;
    assert_eq!(r.is_error, Some(false));
    assert_eq!(
        text(&r),
        format!(
            "tool=redctx_read root={} args={{\"path\":\"docs/a.md\",\"start_line\":2}}\n",
            env.root("alpha").display()
        )
    );
    assert_envelope(&r);
    let r = call(&c, "redctx_read", json!({"path": "missing"})).await;
    assert_eq!((r.is_error, text(&r)), (Some(true), "Path does not exist."));
    assert_envelope(&r);
    // No arguments at all is an empty object.
    let r = c
        .call_tool(CallToolRequestParams::new("redctx_doctor"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    assert!(text(&r).ends_with("args={}\n"));
}

/// The reference answers `Unknown tool: <name>`; ours is fixed, because no error text may
/// carry agent input (the name could be anything the agent read). See COMPAT.md.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tools_are_protocol_errors_that_do_not_echo_the_name() {
    let env = Env::new();
    let c = env.client("alpha").await;
    // (`redctx_submit_doc` is no unknown tool: hidden without --enable-writes, it still
    // answers `Writes are disabled…`, tests/writes_e2e.rs.)
    for name in ["redctx_github_nope", "/home/alice/secret.txt", "x\u{202e}y"] {
        let err = c
            .call_tool(CallToolRequestParams::new(name.to_string()))
            .await
            .unwrap_err();
        match err {
            ServiceError::McpError(e) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
                assert_eq!(e.message, "Unknown tool.");
                assert_eq!(e.data, None);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_paged_by_200_and_readable() {
    let env = Env::new();
    let c = env.client("alpha").await;
    let p1 = c.list_resources(None).await.unwrap();
    assert_eq!(p1.resources.len(), 200);
    assert_eq!(p1.next_cursor.as_deref(), Some("200"));
    let r0 = serde_json::to_value(&p1.resources[0]).unwrap();
    assert_eq!(r0["uri"], "redctx://p_000000000000");
    assert_eq!(r0["name"], "@p_000000000000");
    assert_eq!(r0["title"], "dir/file0.md");
    assert_eq!(r0["mimeType"], "text/markdown");
    assert_eq!(
        r0["annotations"],
        json!({"audience": ["assistant"], "priority": 0.5})
    );
    let p2 = c
        .list_resources(Some(
            PaginatedRequestParams::default().with_cursor(Some("200".into())),
        ))
        .await
        .unwrap();
    assert_eq!(p2.next_cursor.as_deref(), Some("400"));
    let p3 = c
        .list_resources(Some(
            PaginatedRequestParams::default().with_cursor(Some("400".into())),
        ))
        .await
        .unwrap();
    assert_eq!((p3.resources.len(), p3.next_cursor), (50, None));

    let read = c
        .read_resource(ReadResourceRequestParams::new("redctx://p_000000000007"))
        .await
        .unwrap();
    match &read.contents[0] {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            assert_eq!(uri, "redctx://p_000000000007");
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
            assert_eq!(text, "fake content 7\n");
        }
        other => panic!("{other:?}"),
    }
    let err = c
        .read_resource(ReadResourceRequestParams::new("redctx://p_deadbeefdead"))
        .await
        .unwrap_err();
    match err {
        ServiceError::McpError(e) => {
            assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND);
            assert_eq!(e.message, "Resource not found.");
        }
        other => panic!("{other:?}"),
    }
    let err = c
        .list_resources(Some(
            PaginatedRequestParams::default().with_cursor(Some("abc".into())),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ServiceError::McpError(ref e) if e.code == ErrorCode::INVALID_PARAMS
        && e.message == "cursor must be a string offset."),
        "{err:?}"
    );

    let t = c.list_resource_templates(None).await.unwrap();
    let t = serde_json::to_value(&t.resource_templates).unwrap();
    assert_eq!(t[0]["uriTemplate"], "redctx://{path_id}");
    assert_eq!(t[0]["name"], "redacted_context_file");
    assert_eq!(t[0]["title"], "Redacted Context File");
    assert_eq!(t[0]["mimeType"], "text/plain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_shims_on_two_roots_share_one_daemon_without_cross_answers() {
    let env = Env::new();
    let (a, b) = tokio::join!(env.client("alpha"), env.client("beta"));
    let alpha = env.root("alpha").display().to_string();
    let beta = env.root("beta").display().to_string();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let (peer, want) = if i % 2 == 0 {
            (a.peer().clone(), alpha.clone())
        } else {
            (b.peer().clone(), beta.clone())
        };
        tasks.spawn(async move {
            let p = CallToolRequestParams::new("redctx_stat")
                .with_arguments(args(json!({"path": format!("f{i}")})));
            let r = peer.call_tool(p).await.unwrap();
            assert_eq!(
                text(&r),
                format!("tool=redctx_stat root={want} args={{\"path\":\"f{i}\"}}\n")
            );
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let (code, out, _) = env.run(&["daemon", "status"]);
    assert_eq!(code, 0);
    assert!(out.contains("roots: 2"), "{out}");
    assert!(out.contains(&alpha) && out.contains(&beta), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_session_is_replaced_and_its_stale_socket_cleaned() {
    let env = Env::new();
    let a = env.client("alpha").await;
    assert_eq!(
        call(&a, "redctx_stat", json!({"path": "x"})).await.is_error,
        Some(false)
    );
    let old = env.daemon_pid().expect("daemon running");
    let st = env.socket();
    let md = std::fs::metadata(&st).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(st.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );

    // SAFETY: killing the test's own daemon.
    assert_eq!(unsafe { libc::kill(old as i32, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while env.daemon_pid().is_some() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(st.exists(), "SIGKILL leaves the socket file behind");

    // A new shim starts a new daemon, which replaces the stale socket.
    let b = env.client("beta").await;
    assert_eq!(
        call(&b, "redctx_stat", json!({"path": "y"})).await.is_error,
        Some(false)
    );
    let new = env.daemon_pid().expect("a new daemon");
    assert_ne!(new, old);

    // The first session survives without a failed call: its connection died with the
    // old daemon, and the link reconnects before (or retries after) sending.
    let r = call(&a, "redctx_stat", json!({"path": "z"})).await;
    assert_eq!(r.is_error, Some(false));
    assert_eq!(env.daemon_pid(), Some(new));
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: signalling the test's own daemon.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
}

/// A call in flight when the daemon dies is sent again to a new daemon, which the shim
/// starts itself (every tool is read-only, so a second run is safe): the agent gets its
/// answer instead of "daemon unavailable". Then the same between two calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_when_the_daemon_is_killed_is_answered_by_a_new_daemon() {
    let env = Env::new();
    let c = env.client("alpha").await;
    let alpha = env.root("alpha").display().to_string();
    assert_eq!(
        call(&c, "redctx_stat", json!({"path": "x"})).await.is_error,
        Some(false)
    );
    let old = env.daemon_pid().expect("daemon running");

    // A stopped daemon reads nothing and answers nothing: the call stays in flight.
    kill(old, libc::SIGSTOP);
    let peer = c.peer().clone();
    let in_flight = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("redctx_stat")
                .with_arguments(args(json!({"path": "in-flight"}))),
        )
        .await
    });
    // Time for the request to reach the socket; the outcome below does not depend on it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!in_flight.is_finished(), "a stopped daemon answered");
    kill(old, libc::SIGKILL);
    let r = tokio::time::timeout(Duration::from_secs(30), in_flight)
        .await
        .expect("the call does not hang")
        .unwrap()
        .expect("the call is answered");
    assert_eq!(
        text(&r),
        format!("tool=redctx_stat root={alpha} args={{\"path\":\"in-flight\"}}\n")
    );
    let new = env.daemon_pid().expect("a new daemon");
    assert_ne!(new, old);

    // Killed between two calls, with the next call sent at once.
    kill(new, libc::SIGKILL);
    let r = call(&c, "redctx_stat", json!({"path": "after"})).await;
    assert_eq!(
        text(&r),
        format!("tool=redctx_stat root={alpha} args={{\"path\":\"after\"}}\n")
    );
    let newer = env.daemon_pid().expect("another daemon");
    assert!(newer != new && newer != old);
}

/// Many shims starting at once (an agent host opening 16 sessions) start one daemon: the
/// others wait on the start lock and find it running. Without the lock each spawned a
/// daemon of its own, all but one of which exited "already running".
#[test]
fn sixteen_starts_at_once_start_exactly_one_daemon() {
    const N: usize = 16;
    let env = Env::new();
    let go = std::sync::Arc::new(std::sync::Barrier::new(N));
    let runs: Vec<_> = (0..N)
        .map(|_| {
            let mut cmd = env.redctx(&["daemon", "start"]);
            cmd.stdin(Stdio::null());
            let go = go.clone();
            std::thread::spawn(move || {
                go.wait();
                cmd.output().unwrap()
            })
        })
        .collect();
    let outs: Vec<_> = runs.into_iter().map(|t| t.join().unwrap()).collect();
    let mut started = 0;
    for o in &outs {
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        if out.starts_with("started redctx daemon") {
            started += 1;
        } else {
            assert!(out.contains("already running"), "{out}");
        }
    }
    assert_eq!(started, 1);
    // No second redctxd was ever spawned: it would have logged losing the race.
    let log = env.state.path().join("logs").join("redctxd.stderr");
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(!log.contains("already running"), "{log}");
    // The start lock sits next to the socket, private.
    use std::os::unix::fs::PermissionsExt;
    let lock = env.state.path().join("run").join("redctxd.sock.start.lock");
    let mode = std::fs::metadata(lock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn daemon_start_status_stop() {
    let env = Env::new();
    let (code, out, err) = env.run(&["daemon", "status"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("not running"), "{out}");
    let (code, out, err) = env.run(&["daemon", "start"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("started redctx daemon"), "{out}");
    let (code, out, _) = env.run(&["daemon", "start"]);
    assert_eq!(code, 0);
    assert!(out.contains("already running"), "{out}");
    let (code, out, _) = env.run(&["daemon", "status"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!(
            "version: {} (protocol {})",
            env!("CARGO_PKG_VERSION"),
            redctx_proto::PROTOCOL_VERSION
        )),
        "{out}"
    );
    assert!(out.contains("uptime: "), "{out}");
    let (code, out, _) = env.run(&["daemon", "restart"]);
    assert_eq!(code, 0);
    assert!(out.contains("stopped") && out.contains("started"), "{out}");
    let (code, out, _) = env.run(&["daemon", "stop"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("stopped redctx daemon (pid "), "{out}");
    assert!(!env.socket().exists());
    let (code, out, _) = env.run(&["daemon", "stop"]);
    assert_eq!((code, out.trim()), (0, "redctx daemon is not running"));
}

/// `redctx mcp` whose daemon cannot be started still answers `initialize` (so the host
/// lists the server) and the lists that need no daemon; every request that needs the
/// daemon gets one fixed, path-free error, and the reason is written to stderr once.
fn assert_serves_with_a_fixed_start_error(mut cmd: Command, reason: &str, private: &[&str]) {
    let mut shim = RawShim::spawn(&mut cmd);
    let want_error = json!({"code": -32603, "message": "The redctx daemon could not be started; the operator should run `redctx daemon status`."});
    shim.send_json(&init(1, "2025-06-18"));
    let r = shim.recv();
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["serverInfo"]["name"], "redacted-context");
    shim.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    shim.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let r = shim.recv();
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 14);
    for (id, method, params) in [
        (
            3,
            "tools/call",
            json!({"name": "redctx_read", "arguments": {"path": "a"}}),
        ),
        (4, "resources/list", json!({})),
        (
            5,
            "resources/read",
            json!({"uri": "redctx://p_000000000001"}),
        ),
        (
            6,
            "tools/call",
            json!({"name": "redctx_doctor", "arguments": {}}),
        ),
    ] {
        shim.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = shim.recv();
        assert_eq!(r["id"], id);
        assert_eq!(r["error"], want_error, "{method}");
        for p in private {
            assert!(!r.to_string().contains(p), "{r}");
        }
    }
    let (code, rest, err) = shim.finish();
    assert_eq!(code, 0, "{err}");
    assert!(rest.is_empty(), "{rest:?}");
    let reported: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("could not start the redctx daemon"))
        .collect();
    assert_eq!(reported.len(), 1, "{err}");
    assert!(reported[0].starts_with("redctx mcp: "), "{err}");
    assert!(reported[0].contains(reason), "{err}");
}

#[test]
fn a_state_dir_that_cannot_be_created_still_serves_initialize_and_fixed_errors() {
    let env = Env::new();
    // A path under a regular file: creating it fails even for root.
    let file = env.state.path().join("file.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let state = file.join("state");
    let mut cmd = env.redctx(&["mcp", "--root"]);
    cmd.arg(env.root("alpha")).env("REDCTX_STATE_DIR", &state);
    assert_serves_with_a_fixed_start_error(cmd, "Not a directory", &["file.txt", "/state"]);
    assert!(!state.exists());
}

#[test]
fn a_daemon_that_cannot_start_is_reported_once_and_calls_get_a_fixed_error() {
    let env = Env::new();
    let mut cmd = env.redctx(&["mcp", "--root"]);
    cmd.arg(env.root("alpha"))
        .env("REDCTX_DAEMON", "/bin/false");
    assert_serves_with_a_fixed_start_error(cmd, "redctxd.log", &["redctxd.log", "/bin/false"]);
}

#[test]
fn a_missing_root_is_refused_before_anything_starts() {
    let env = Env::new();
    let o = env
        .redctx(&["mcp", "--root", "/nonexistent/dir"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("redctx: Root must be an existing directory"),
        "{err}"
    );
    assert!(env.daemon_pid().is_none());
}

/// A `redctx mcp` shim on root `alpha`: the process, its stdin, its stdout by lines.
fn spawn_shim(
    env: &Env,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let mut c = env.redctx(&["mcp", "--root"]);
    c.arg(env.root("alpha"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// Raw JSON-RPC lines in, answers by id out (for what the rmcp client can't express).
fn raw_session(env: &Env, lines: &[Value]) -> Vec<Value> {
    let (mut child, mut stdin, mut rd) = spawn_shim(env);
    let want = lines.iter().filter(|l| l.get("id").is_some()).count();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = Vec::new();
    while out.len() < want {
        let mut line = String::new();
        assert!(
            rd.read_line(&mut line).unwrap() > 0,
            "shim closed stdout early"
        );
        out.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    child.wait().unwrap();
    out.sort_by_key(|v| v["id"].as_i64());
    out
}

#[test]
fn a_cancelled_tool_call_stops_its_work_in_the_daemon() {
    let env = Env::new();
    let (mut child, mut stdin, mut rd) = spawn_shim(&env);
    writeln!(stdin, "{}", init(1, "2025-06-18")).unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    rd.read_line(&mut line).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "redctx_read", "arguments": {"path": "slow"}}});
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "the agent moved on"}});
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    // The call is in the daemon (its slow work runs until cancelled, 30 s at most).
    std::thread::sleep(Duration::from_millis(500));
    writeln!(stdin, "{cancel}").unwrap();
    stdin.flush().unwrap();
    // The session stays open: only the cancellation can stop the work.
    let log = env.state.path().join("logs").join("redctxd.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("fake slow call cancelled")
    {
        assert!(
            Instant::now() < deadline,
            "the daemon's work was not cancelled: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    child.wait().unwrap();
}

fn init(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

#[test]
fn initialize_echoes_known_versions_and_falls_back_to_2025_11_25() {
    let env = Env::new();
    for (asked, got) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let out = raw_session(&env, &[init(1, asked)]);
        assert_eq!(out[0]["result"]["protocolVersion"], got, "asked {asked}");
        assert!(out[0]["result"].get("resultType").is_none());
    }
}

#[test]
fn legacy_ping_answers_empty_and_tools_call_after_initialize_works_raw() {
    let env = Env::new();
    let out = raw_session(
        &env,
        &[
            init(1, "2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "redctx_read", "arguments": {"path": "a", "max_chars": true}}}),
        ],
    );
    assert_eq!(out[1]["result"], json!({}));
    assert_eq!(
        out[2]["result"],
        json!({"content": [{"type": "text", "text": "max_chars must be an integer."}],
               "structuredContent": {"text": "max_chars must be an integer.",
                                     "receipt": {"detector_profile": "default", "counts_by_category": {}}},
               "isError": true})
    );
}

fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn stateless_2026_07_28_requests_work_without_initialize() {
    let env = Env::new();
    let out = raw_session(
        &env,
        &[
            modern(1, "server/discover", json!({})),
            modern(
                2,
                "tools/call",
                json!({"name": "redctx_read", "arguments": {"path": "a"}}),
            ),
            modern(3, "ping", json!({})),
            modern(
                4,
                "resources/read",
                json!({"uri": "redctx://p_deadbeefdead"}),
            ),
            modern(5, "tools/list", json!({})),
        ],
    );
    assert_eq!(out[0]["result"]["supportedVersions"], json!(["2026-07-28"]));
    let call = &out[1]["result"];
    assert_eq!(call["resultType"], "complete");
    assert_eq!(call["isError"], false);
    assert_eq!(
        call["structuredContent"]["text"],
        call["content"][0]["text"]
    );
    let info = json!({"name": "redacted-context", "title": "Redacted Context", "version": env!("CARGO_PKG_VERSION")});
    assert_eq!(call["_meta"]["io.modelcontextprotocol/serverInfo"], info);
    assert_eq!(out[2]["error"]["code"], -32601);
    assert_eq!(
        out[3]["error"],
        json!({"code": -32602, "message": "Resource not found."})
    );
    assert_eq!(out[4]["result"]["ttlMs"], 300000);
    assert_eq!(out[4]["result"]["cacheScope"], "public");
    assert_eq!(out[4]["result"]["tools"].as_array().unwrap().len(), 14);
}

/// A `redctx mcp` process driven line by line: bytes in, one parsed JSON reply at a time
/// out (a reader thread, so a missing answer fails the test instead of hanging it).
struct RawShim {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// How long a test waits for one answer before it fails ("does not hang", not a timing).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

impl RawShim {
    fn spawn(cmd: &mut Command) -> RawShim {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match out.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let line = String::from_utf8(line).expect("replies are UTF-8");
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        RawShim {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    fn send_json(&mut self, v: &Value) {
        self.send(format!("{v}\n").as_bytes());
    }

    /// The next reply line, which must be one JSON value.
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_WITHIN)
            .expect("an answer within 30 s");
        assert!(line.ends_with('\n'), "{line}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {line}"))
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Close stdin and wait: exit code, reply lines not read yet, stderr.
    fn finish(mut self) -> (i32, Vec<String>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_WITHIN;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("redctx mcp did not exit after its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let rest = self.lines.iter().collect();
        let err = self.stderr.take().unwrap().join().unwrap();
        (status.code().unwrap_or(-1), rest, err)
    }
}

impl Env {
    fn raw_shim(&self, root: &str) -> RawShim {
        let mut cmd = self.redctx(&["mcp", "--root"]);
        cmd.arg(self.root(root));
        RawShim::spawn(&mut cmd)
    }
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// Spec 2.1: every line that is not JSON gets `-32700` with id null, JSON that is not a
/// request gets `-32600`, blank lines nothing, and the next line is served. (rmcp alone
/// answered none of the first kind.) No error text carries the line's content.
#[test]
fn lines_that_are_not_json_rpc_get_one_fixed_error_each_and_serving_goes_on() {
    let env = Env::new();
    let mut shim = env.raw_shim("alpha");
    shim.send_json(&init(1, "2025-06-18"));
    assert_eq!(shim.recv()["id"], 1);
    let parse = rpc_error(Value::Null, -32700, "Parse error.");
    let invalid = rpc_error(Value::Null, -32600, "Invalid request.");
    let deep = "[".repeat(100_000);
    let cases: Vec<(&[u8], Value)> = vec![
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"/secret/a""#,
            parse.clone(),
        ),
        (b"\xff\xfe/secret/\x80\x81", parse.clone()),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"\ud800/secret"}}"#,
            parse.clone(),
        ),
        (deep.as_bytes(), parse.clone()),
        (b"not json at all /secret/b", parse.clone()),
        (b"[1,2]", invalid.clone()),
        (b"\"/secret/c\"", invalid.clone()),
        (b"{}", invalid.clone()),
        (
            br#"{"jsonrpc":"2.0","id":4,"method":{"secret":1}}"#,
            rpc_error(json!(4), -32600, "Invalid request."),
        ),
        // rmcp alone answered `-32601 /secret/m`.
        (
            br#"{"jsonrpc":"2.0","id":5,"method":"/secret/m"}"#,
            rpc_error(json!(5), -32601, "Method not found."),
        ),
    ];
    for (i, (line, want)) in cases.iter().enumerate() {
        shim.send(line);
        shim.send(b"\n");
        let got = shim.recv();
        assert_eq!(&got, want, "case {i}");
        assert!(!got.to_string().contains("secret"));
        // The next line is served (the guard's answer is queued before it forwards it).
        let id = 100 + i as i64;
        shim.send_json(&ping(id));
        assert_eq!(
            shim.recv(),
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        );
    }
    // Blank lines get nothing.
    shim.send(b"\n   \t\r\n\r\n");
    shim.send_json(&ping(200));
    assert_eq!(shim.recv()["id"], 200);

    // A line of exactly 10 MiB is served.
    let head = r#"{"jsonrpc":"2.0","id":201,"method":"ping","params":{"pad":""#;
    let tail = r#""}}"#;
    let pad = 10 * 1024 * 1024 - head.len() - tail.len();
    shim.send(format!("{head}{}{tail}\n", "x".repeat(pad)).as_bytes());
    assert_eq!(
        shim.recv(),
        json!({"jsonrpc": "2.0", "id": 201, "result": {}})
    );
    // One byte more is refused, before the line has even ended (an endless line costs
    // no memory), once, and the line after it is served.
    let too_long = rpc_error(Value::Null, -32600, "Request line exceeds maximum size.");
    shim.send(format!("{head}{}", "x".repeat(pad + tail.len() + 1)).as_bytes());
    assert_eq!(shim.recv(), too_long);
    shim.send("y".repeat(3 * 1024 * 1024).as_bytes());
    shim.send(format!("{tail}\n").as_bytes());
    shim.send_json(&ping(202));
    assert_eq!(
        shim.recv(),
        json!({"jsonrpc": "2.0", "id": 202, "result": {}})
    );

    assert!(shim.alive());
    // A last line without a line break is still answered when stdin closes.
    shim.send(b"{\"broken");
    let (code, rest, _) = shim.finish();
    assert_eq!(code, 0);
    let rest: Vec<Value> = rest
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rest, vec![parse]);
}

/// splitmix64: a tiny deterministic generator, so every run feeds the same lines.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn string(&mut self, max: usize) -> String {
        const CHARS: &[char] = &[
            'a', 'b', 'Z', '0', '7', '/', '.', '-', '_', ' ', '"', '\\', '\n', '\t', '\0', '{',
            ']', 'é', 'ß', '😀', '\u{202e}', '\u{ffff}',
        ];
        let s: String = (0..self.below(max + 1))
            .map(|_| *self.pick(CHARS))
            .collect();
        // The fake backend's `slow` path waits until cancelled.
        if s == "slow" { "slew".into() } else { s }
    }

    fn value(&mut self, depth: u32) -> Value {
        match self.below(if depth < 3 { 9 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.below(200) as i64 - 100),
            3 => json!(*self.pick(&[i64::MIN, i64::MAX, 0, 1, 120000, 1 << 53])),
            4 => json!(self.below(1000) as f64 / 7.0),
            5 | 6 => json!(self.string(12)),
            7 => Value::Array((0..self.below(4)).map(|_| self.value(depth + 1)).collect()),
            _ => self.object(depth + 1),
        }
    }

    fn object(&mut self, depth: u32) -> Value {
        const KEYS: &[&str] = &[
            "path",
            "paths",
            "query",
            "max_chars",
            "start_line",
            "end_line",
            "max_depth",
            "ignore_case",
            "regex",
            "context",
            "max_results",
            "format",
            "max_files",
            "x",
        ];
        let mut m = serde_json::Map::new();
        for _ in 0..self.below(4) {
            let k = if self.below(5) == 0 {
                self.string(6)
            } else {
                self.pick(KEYS).to_string()
            };
            m.insert(k, self.value(depth));
        }
        Value::Object(m)
    }
}

/// Tool names the shim does not serve, beside the served ones (`redctx_proto::tools`).
const OTHER_TOOL_NAMES: &[&str] = &["redctx_github_nope", "REDCTX_READ", ""];

/// One generated request (a whole JSON-RPC message with id `id`).
fn fuzz_request(rng: &mut Rng, id: i64) -> Value {
    let (method, params) = match rng.below(8) {
        0..=2 => {
            let name = match rng.below(12) {
                0 | 1 => rng.string(10),
                2 => rng.pick(OTHER_TOOL_NAMES).to_string(),
                _ => rng.pick(&redctx_proto::tools::ALL).to_string(),
            };
            let args = match rng.below(10) {
                0 => rng.value(0),
                1 => Value::Null,
                _ => rng.object(0),
            };
            (
                "tools/call".to_string(),
                json!({"name": name, "arguments": args}),
            )
        }
        3 => ("tools/list".into(), json!({})),
        4 => ("resources/list".into(), json!({"cursor": rng.value(2)})),
        5 => (
            "resources/read".into(),
            json!({"uri": format!("redctx://{}", rng.string(14))}),
        ),
        6 => (
            "ping".into(),
            if rng.below(2) == 0 {
                json!({})
            } else {
                rng.value(1)
            },
        ),
        _ => (rng.string(12), rng.object(0)),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One generated item: a few lines' worth of bytes (it may itself hold line breaks).
fn fuzz_item(rng: &mut Rng, id: i64) -> Vec<u8> {
    match rng.below(20) {
        0..=5 => fuzz_request(rng, id).to_string().into_bytes(),
        6..=11 => {
            // A request with byte-level damage.
            let mut b = fuzz_request(rng, id).to_string().into_bytes();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(b.len());
                match rng.below(5) {
                    0 => b.truncate(at),
                    1 => b[at] = rng.next() as u8,
                    2 => b.insert(at, *rng.pick(b"{}[]\",:\\\x00\xff\n 1")),
                    3 => {
                        b.remove(at);
                    }
                    _ => {
                        let end = (at + rng.below(16)).min(b.len());
                        let dup = b[at..end].to_vec();
                        b.splice(at..at, dup);
                    }
                }
                if b.is_empty() {
                    break;
                }
            }
            b
        }
        12 => {
            // Deep nesting, closed or not, bare or inside a request.
            let n = *rng.pick(&[50usize, 127, 129, 1000, 100_000]);
            let nest = format!(
                "{}{}",
                "[".repeat(n),
                if rng.below(2) == 0 {
                    "]".repeat(n)
                } else {
                    String::new()
                }
            );
            if rng.below(2) == 0 {
                nest.into_bytes()
            } else {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"redctx_read","arguments":{{"path":{nest}}}}}}}"#).into_bytes()
            }
        }
        13 => {
            // A huge string argument.
            let len = *rng.pick(&[1 << 10, 1 << 16, 1 << 20]);
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "redctx_search", "arguments": {"query": "q".repeat(len)}}})
            .to_string()
            .into_bytes()
        }
        14 => {
            // Wrong shapes: params, ids, batches.
            let shapes = [
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": rng.value(3)}),
                json!({"jsonrpc": "2.0", "id": rng.value(2), "method": "ping"}),
                json!({"jsonrpc": "2.0", "id": id, "method": rng.value(2)}),
                json!([fuzz_request(rng, id)]),
                json!({"jsonrpc": "2.0", "id": id}),
                json!({"jsonrpc": "2.0", "id": id, "result": rng.value(1)}),
            ];
            rng.pick(&shapes).to_string().into_bytes()
        }
        15 => {
            // Notifications: never answered. (Not `notifications/cancelled`, which may
            // rightly suppress the answer of a request still running.)
            let method = *rng.pick(&[
                "notifications/initialized",
                "notifications/x",
                "ping",
                "tools/call",
            ]);
            json!({"jsonrpc": "2.0", "method": method, "params": rng.object(0)})
                .to_string()
                .into_bytes()
        }
        16 => (0..rng.below(40)).map(|_| rng.next() as u8).collect(),
        17 => b"  \t\r".to_vec(),
        _ => rng.string(30).into_bytes(),
    }
}

/// What the shim must answer to `line`: `None` for no answer, else the answer's `id`.
/// JSON-RPC's rules, written from the test's side: blank lines, notifications and
/// responses get nothing; anything else one answer, carrying the request's id when the
/// line has a valid one.
fn expected_answer(line: &[u8]) -> Option<Value> {
    if line.len() > 10 * 1024 * 1024 {
        return Some(Value::Null);
    }
    let line = line
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(line)
        .trim_ascii();
    if line.is_empty() {
        return None;
    }
    let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(line) else {
        return Some(Value::Null);
    };
    let (method, id) = (o.contains_key("method"), o.get("id"));
    if method && id.is_none() || !method && (o.contains_key("result") || o.contains_key("error")) {
        return None;
    }
    let id = id.and_then(|v| serde_json::from_value::<rmcp::model::RequestId>(v.clone()).ok());
    Some(id.map_or(Value::Null, |i| serde_json::to_value(i).unwrap()))
}

/// Random and damaged JSON-RPC lines into a real `redctx mcp`: it never dies, every line
/// that needs an answer gets exactly one, every answer is one line of JSON, and the run
/// ends in bounded time.
#[test]
fn fuzzed_json_rpc_lines_each_get_at_most_one_json_answer_and_the_shim_survives() {
    let started = Instant::now();
    let env = Env::new();
    for seed in [1u64, 2, 3] {
        let mut rng = Rng(seed);
        let mut stream = Vec::new();
        for i in 0..500 {
            stream.extend(fuzz_item(&mut rng, 1000 + i));
            stream.push(b'\n');
        }
        if seed == 1 {
            stream.extend(vec![b'['; 10 * 1024 * 1024 + 1]);
            stream.push(b'\n');
        }
        let mut want: Vec<String> = stream
            .split(|&b| b == b'\n')
            .filter_map(expected_answer)
            .map(|id| id.to_string())
            .collect();
        let mut shim = env.raw_shim("alpha");
        shim.send_json(&init(1, "2025-06-18"));
        assert_eq!(shim.recv()["id"], 1);
        // Write from another thread: answers are read while the input is still going in.
        let mut stdin = shim.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            stdin.write_all(&stream).unwrap();
            stdin.flush().unwrap();
            stdin
        });
        let mut got = Vec::new();
        for _ in 0..want.len() {
            let a = shim.recv();
            let o = a.as_object().expect("an answer is an object");
            assert_eq!(o["jsonrpc"], "2.0");
            assert!(o.contains_key("result") != o.contains_key("error"), "{a}");
            if let Some(e) = o.get("error") {
                assert!(e["code"].is_i64() && e["message"].is_string(), "{a}");
                if e["message"].as_str().unwrap().starts_with("Unknown tool") {
                    assert_eq!(e["message"], "Unknown tool.");
                }
                if e["code"] == -32601 {
                    assert_eq!(e["message"], "Method not found.");
                }
            }
            got.push(o["id"].to_string());
        }
        shim.stdin = Some(writer.join().unwrap());
        // Nothing more than that: the answer to a last ping comes next.
        shim.send_json(&ping(1));
        assert_eq!(
            shim.recv(),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            "seed {seed}"
        );
        assert!(shim.alive(), "seed {seed}: the shim died");
        let (code, rest, _) = shim.finish();
        assert_eq!(code, 0, "seed {seed}");
        assert!(
            rest.is_empty(),
            "seed {seed}: answers nobody asked for: {rest:?}"
        );
        want.sort();
        got.sort();
        assert_eq!(got, want, "seed {seed}: answers by id");
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
