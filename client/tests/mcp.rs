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
        assert_eq!(
            t["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
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
    for name in ["redctx_submit_doc", "/home/alice/secret.txt", "x\u{202e}y"] {
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

    // The first session survives: at most one call fails, with a clear message.
    let mut failures = 0;
    loop {
        match a
            .call_tool(
                CallToolRequestParams::new("redctx_stat")
                    .with_arguments(args(json!({"path": "z"}))),
            )
            .await
        {
            Ok(r) => {
                assert_eq!(r.is_error, Some(false));
                break;
            }
            Err(ServiceError::McpError(e)) => {
                assert!(e.message.contains("redctx daemon"), "{}", e.message);
                failures += 1;
                assert!(failures <= 1, "more than one failed call after the restart");
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(env.daemon_pid(), Some(new));
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

#[test]
fn a_daemon_that_cannot_start_gives_one_clear_line_and_exit_1() {
    let env = Env::new();
    let mut c = env.redctx(&["mcp", "--root"]);
    c.arg(env.root("alpha"))
        .env("REDCTX_DAEMON", "/bin/false")
        .stdin(Stdio::null());
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("redctx: could not start the redctx daemon"),
        "{err}"
    );
    assert!(err.contains("redctxd.log"), "{err}");
    assert!(o.stdout.is_empty());
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

/// Raw JSON-RPC lines in, answers by id out (for what the rmcp client can't express).
fn raw_session(env: &Env, lines: &[Value]) -> Vec<Value> {
    let mut c = env.redctx(&["mcp", "--root"]);
    c.arg(env.root("alpha"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let want = lines.iter().filter(|l| l.get("id").is_some()).count();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = Vec::new();
    let mut rd = BufReader::new(child.stdout.take().unwrap());
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
    assert_eq!(out[4]["result"]["tools"].as_array().unwrap().len(), 10);
}
