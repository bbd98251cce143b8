//! The GitHub source (spec 10) end to end, against a local stand-in for the GitHub REST
//! API (`support::github`): no test reaches the internet.
//!
//! - Differential: the reference's `redctx-mcp` and CLI and ours, pointed at the same
//!   server through the same config (`api_url`), answer every recorded case (issues with
//!   labels and assignees, pull requests mixed in, comments, pagination over a page of
//!   exactly 100 items, search, odd field types, 401, 404, invalid JSON, a body over
//!   8 MiB, an unreachable API, a stalled answer) with identical text, `isError` and
//!   receipt, CLI stdout, stderr and exit code; and both send the same requests (path,
//!   query, `Accept`, `User-Agent`, `Authorization`).
//! - Ours only: the cache (a repeated call inside the freshness window asks nothing; after
//!   it, it asks with `If-None-Match` and a `304` serves the cached redacted answer),
//!   rate-limit answers, and a leak check over every output and the daemon's log.
//!
//! Oracle: `redctx_test_support::Oracle`; `REDCTX_SKIP_ORACLE=1` skips the reference's
//! half (the checks of our own answers still run).

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::Env;
use support::github::{FakeGitHub, Recorded, Reply};
use support::raw::RawSession;

const TOKEN: &str = "ghp_TESTTOKENabcdefghijklmnopqrstuvwxyz0123";
const REPO_PATH: &str = "/repos/acme-corp/atlas-secret";

/// Raw values planted upstream that no output may show.
const PLANTED: &[&str] = &[
    "Taylor Reed",
    "Jordan Vale",
    "Client Alpha",
    "taylor.reed@example.com",
    "ghp_1234567890abcdefghijklmnopqrstuvwxyzABCD",
    "AKIAIOSFODNN7EXAMPLE",
    "hunter2hunter2",
    "acme-corp",
    "atlas-secret",
    "secret-author-login",
    "jordan-vale-login",
    "taylor-assignee",
    "10.12.30.4",
];

fn oracle(program: &str) -> Option<PathBuf> {
    redctx_test_support::Oracle::find().program(program)
}

/// Issue `n` of the recorded repository: every 7th is a pull request, every 5th closed;
/// labels, assignees and planted values vary with `n`.
fn item(n: u64) -> Value {
    let mut labels = Vec::new();
    if n.is_multiple_of(3) {
        labels.push(json!({"name": "bug", "color": "f00"}));
    }
    if n.is_multiple_of(4) {
        labels.push(json!({"name": "Client Alpha escalation"}));
    }
    if n.is_multiple_of(6) {
        labels.push(json!({"name": "taylor.reed@example.com"}));
    }
    let title = match n % 4 {
        0 => format!("Taylor Reed reports timeout #{n}"),
        1 => format!("Crash in acme-corp/atlas-secret sync {n}"),
        2 => format!("Leaked key AKIAIOSFODNN7EXAMPLE in build {n}"),
        _ => format!("Plain issue number {n}"),
    };
    let mut v = json!({
        "number": n,
        "state": if n.is_multiple_of(5) { "closed" } else { "open" },
        "title": title,
        "created_at": format!("2026-01-{:02}T09:00:00Z", n % 28 + 1),
        "updated_at": format!("2026-03-{:02}T10:00:00Z", n % 28 + 1),
        "labels": labels,
        "assignees": (0..n % 3).map(|i| json!({"login": format!("taylor-assignee-{i}")})).collect::<Vec<_>>(),
        "comments": n % 4,
        "user": {"login": "secret-author-login"},
        "body": format!("Body of {n}: contact taylor.reed@example.com from Client Alpha."),
    });
    if n.is_multiple_of(7) {
        v["pull_request"] = json!({"url": "https://example.invalid/pr"});
    }
    v
}

/// Issue 7 in detail (its number is a pull request in the list; here it is an issue).
fn issue_seven() -> Value {
    json!({
        "number": 7,
        "state": "open",
        "title": "Taylor Reed cannot log in to Client Alpha portal",
        "created_at": "2026-02-01T08:00:00Z",
        "updated_at": "2026-02-03T09:30:00Z",
        "labels": [{"name": "bug"}, {"name": "Client Alpha escalation"}, "raw-label", {"name": "   "}],
        "assignees": [{"login": "taylor-assignee"}, {"login": "other"}],
        "user": {"login": "secret-author-login"},
        "body": "Steps: Jordan Vale pasted `password = hunter2hunter2` and the token \
                 ghp_1234567890abcdefghijklmnopqrstuvwxyzABCD.\nServer 10.12.30.4 answered.\n\
                 Email taylor.reed@example.com for access.\n",
    })
}

fn comments() -> Vec<Value> {
    vec![
        json!({"created_at": "2026-02-02T10:00:00Z", "user": {"login": "jordan-vale-login"},
               "body": "I am Jordan Vale; key AKIAIOSFODNN7EXAMPLE rotated."}),
        json!({"created_at": "2026-02-02T11:00:00Z", "user": null, "body": null}),
        json!("not an object"),
        json!({"created_at": "2026-02-02T12:00:00Z", "user": {"login": "  "},
               "body": "Taylor Reed confirmed the fix for Client Alpha."}),
        json!({"created_at": 20260203, "user": {"login": "jordan-vale-login"}, "body": ["list", 1]}),
    ]
}

/// An issue whose fields have the wrong types (the reference prints Python's `str()`).
fn odd_issue() -> Value {
    json!({
        "number": "12",
        "title": null,
        "updated_at": 1.5,
        "created_at": true,
        "labels": ["  spaced  ", {"name": 5}, 7, {"color": "x"}, ["nested"]],
        "assignees": "taylor-assignee",
        "comments": -1,
        "body": 0,
    })
}

/// How long a stalled answer waits before closing.
static STALL_SECS: AtomicU64 = AtomicU64::new(40);

fn route(req: &Recorded) -> Reply {
    let path = req.path().to_owned();
    let num = |name: &str, default: u64| {
        req.param(name)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    };
    if path == format!("{REPO_PATH}/issues") {
        let state = req.param("state").unwrap_or_else(|| "open".into());
        let wanted: Vec<String> = req
            .param("labels")
            .map(|l| l.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        let all: Vec<Value> = (1..=230u64)
            .rev()
            .map(item)
            .filter(|v| state == "all" || v["state"] == state.as_str())
            .filter(|v| {
                wanted.iter().all(|w| {
                    v["labels"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|l| l["name"] == w.as_str())
                })
            })
            .collect();
        let (per_page, page) = (num("per_page", 30) as usize, num("page", 1) as usize);
        let start = (page - 1) * per_page;
        let slice: Vec<Value> = all.into_iter().skip(start).take(per_page).collect();
        return Reply::json(200, &Value::Array(slice));
    }
    if path == "/repos/acme-corp/ops-private/issues" {
        return Reply::json(200, &json!([]));
    }
    if path == format!("{REPO_PATH}/issues/7/comments") {
        let per_page = num("per_page", 30) as usize;
        let list: Vec<Value> = comments().into_iter().take(per_page).collect();
        return Reply::json(200, &Value::Array(list));
    }
    if path == "/search/issues" {
        let per_page = num("per_page", 30) as usize;
        let items: Vec<Value> = [3u64, 14, 8, 21, 5].into_iter().map(item).collect();
        let mut items: Vec<Value> = items.into_iter().take(per_page).collect();
        if per_page > 3 {
            items.push(odd_issue());
        }
        return Reply::json(
            200,
            &json!({"total_count": 6, "incomplete_results": false, "items": items}),
        );
    }
    if let Some(n) = path.strip_prefix(&format!("{REPO_PATH}/issues/")) {
        let secret = json!({"message": "API rate limit exceeded for Taylor Reed (10.12.30.4)"});
        return match n {
            "7" => Reply::json(200, &issue_seven()),
            "12" => Reply::json(200, &odd_issue()),
            "401" => Reply::json(401, &json!({"message": "Bad credentials for Taylor Reed"})),
            "403" => Reply::json(403, &secret).header("Retry-After", "42"),
            "429" => {
                let reset = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    + 3600;
                Reply::json(429, &secret)
                    .header("X-RateLimit-Remaining", "0")
                    .header("X-RateLimit-Reset", &reset.to_string())
            }
            "998" => Reply::json(
                403,
                &json!({"message": "Resource not accessible by Taylor Reed"}),
            ),
            "999" => Reply::raw(200, b"{not json, Taylor Reed"),
            "888" => {
                let mut body = vec![b' '; 8 * 1024 * 1024 + 1];
                body[0] = b'[';
                *body.last_mut().unwrap() = b']';
                Reply::raw(200, &body)
            }
            "555" => {
                let mut r = Reply::json(200, &issue_seven());
                r.stall = Some(Duration::from_secs(STALL_SECS.load(Ordering::SeqCst)));
                r
            }
            other => match other.parse::<u64>() {
                Ok(n) if (1..=230).contains(&n) => Reply::json(200, &item(n)),
                _ => Reply::json(404, &json!({"message": "Not Found"})),
            },
        };
    }
    Reply::json(404, &json!({"message": "Not Found"}))
}

/// The served root: `kb` with a strict-mode-parity config (built-in detector layer off)
/// and three aliases: `context` (token in `GITHUB_TOKEN`), `ops` (api_url with a trailing
/// slash, token variable unset) and `Zeta` (nothing listens there).
fn make_root(env: &Env, server: &FakeGitHub) -> PathBuf {
    let root = env.root_dir("gh", "kb");
    let config = format!(
        "[redaction]\nsalt = \"gh-salt\"\ndetectors = false\nclients = [\"Client Alpha\"]\n\
         people = [\"Taylor Reed\", \"Jordan Vale\"]\n\n\
         [github.repos.context]\nowner = \"acme-corp\"\nrepo = \"atlas-secret\"\napi_url = \"{url}\"\n\n\
         [github.repos.ops]\nowner = \"acme-corp\"\nrepo = \"ops-private\"\napi_url = \"{url}/\"\n\
         token_env = \"OPS_GH_TOKEN_UNSET\"\n\n\
         [github.repos.Zeta]\nowner = \"zeta-org\"\nrepo = \"zeta\"\napi_url = \"http://127.0.0.1:1\"\n",
        url = server.url
    );
    std::fs::write(root.join(".agent-context-redactor.toml"), config).unwrap();
    std::fs::write(root.join("notes.md"), "nothing here\n").unwrap();
    root
}

/// The environment both sides' processes get on top of the test's: the token, and for
/// our daemon the test-only cache window and request timeout.
fn with_github_env(env: &Env, c: &mut Command, extra: &[(&str, &str)]) {
    env.apply(c);
    c.env("GITHUB_TOKEN", TOKEN)
        .env_remove("OPS_GH_TOKEN_UNSET");
    c.env_remove("SSL_CERT_FILE");
    for (k, v) in extra {
        c.env(k, v);
    }
}

/// What a request looked like, minus what only one side sends (`If-None-Match`,
/// `Accept-Encoding`, `Connection`, `Host` details).
fn shape(
    r: &Recorded,
) -> (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    (
        r.method.clone(),
        r.target.clone(),
        r.header("accept").map(str::to_owned),
        r.header("user-agent").map(str::to_owned),
        r.header("authorization").map(str::to_owned),
    )
}

struct Side {
    session: RawSession,
}

/// Every MCP case: (tool, arguments).
fn mcp_cases() -> Vec<(&'static str, Value)> {
    vec![
        ("redctx_github_repos", json!({})),
        ("redctx_github_list_issues", json!({})),
        (
            "redctx_github_list_issues",
            json!({"state": "closed", "limit": 5}),
        ),
        (
            "redctx_github_list_issues",
            json!({"state": "all", "labels": ["bug"], "limit": 7}),
        ),
        (
            "redctx_github_list_issues",
            json!({"state": "all", "labels": ["bug", "Client Alpha escalation"]}),
        ),
        // Page 1 has exactly 100 items (pull requests among them), so page 2 is asked.
        (
            "redctx_github_list_issues",
            json!({"state": "all", "limit": 150}),
        ),
        (
            "redctx_github_list_issues",
            json!({"state": "all", "limit": 1000}),
        ),
        ("redctx_github_list_issues", json!({"limit": 1})),
        ("redctx_github_list_issues", json!({"repo_alias": "ops"})),
        ("redctx_github_list_issues", json!({"repo_alias": "nope"})),
        ("redctx_github_list_issues", json!({"repo_alias": "Zeta"})),
        ("redctx_github_list_issues", json!({"state": "pending"})),
        ("redctx_github_list_issues", json!({"limit": 0})),
        ("redctx_github_read_issue", json!({"number": 7})),
        (
            "redctx_github_read_issue",
            json!({"number": 7, "comments": true}),
        ),
        (
            "redctx_github_read_issue",
            json!({"number": 7, "comments": true, "max_comments": 2, "max_body_chars": 45}),
        ),
        (
            "redctx_github_read_issue",
            json!({"number": 7, "comments": true, "max_comments": 0}),
        ),
        (
            "redctx_github_read_issue",
            json!({"number": 7, "max_body_chars": 1}),
        ),
        (
            "redctx_github_read_issue",
            json!({"number": 12, "comments": true}),
        ),
        ("redctx_github_read_issue", json!({"number": 3})),
        ("redctx_github_read_issue", json!({"number": 14})),
        ("redctx_github_read_issue", json!({"number": 4040})),
        ("redctx_github_read_issue", json!({"number": 401})),
        ("redctx_github_read_issue", json!({"number": 998})),
        ("redctx_github_read_issue", json!({"number": 999})),
        ("redctx_github_read_issue", json!({"number": 888})),
        (
            "redctx_github_read_issue",
            json!({"number": 3, "repo_alias": "Zeta"}),
        ),
        ("redctx_github_read_issue", json!({"number": 0})),
        ("redctx_github_read_issue", json!({})),
        (
            "redctx_github_search_issues",
            json!({"query": "timeout label:bug"}),
        ),
        (
            "redctx_github_search_issues",
            json!({"query": "Taylor Reed", "state": "all"}),
        ),
        (
            "redctx_github_search_issues",
            json!({"query": "x", "state": "closed", "limit": 2}),
        ),
        (
            "redctx_github_search_issues",
            json!({"query": "x", "repo_alias": "ops", "limit": 500}),
        ),
        (
            "redctx_github_search_issues",
            json!({"query": "x", "repo_alias": "nope"}),
        ),
    ]
}

/// Every CLI case (arguments after `--root R --mode strict`).
fn cli_cases() -> Vec<Vec<&'static str>> {
    vec![
        vec!["gh", "repos"],
        vec!["github", "issues", "context"],
        vec![
            "gh", "issues", "context", "--state", "all", "--label", "bug", "--limit", "150",
        ],
        vec!["gh", "issues", "ops"],
        vec!["gh", "issues", "nope"],
        vec!["gh", "issues", "context", "--limit", "0"],
        vec!["gh", "issues", "context", "--limit", "-3"],
        vec![
            "gh",
            "issue",
            "context",
            "7",
            "--comments",
            "--max-comments",
            "3",
            "--max-body-chars",
            "60",
        ],
        vec!["gh", "issue", "context", "12", "--comments"],
        vec!["gh", "issue", "context", "14"],
        vec!["gh", "issue", "context", "4040"],
        vec!["gh", "issue", "context", "999"],
        vec!["gh", "issue", "context", "888"],
        vec!["gh", "issue", "context", "7", "--max-comments", "-1"],
        vec!["gh", "issue", "context", "7", "--max-body-chars", "0"],
        vec!["gh", "issue", "Zeta", "7"],
        vec![
            "gh",
            "search",
            "context",
            "timeout label:bug",
            "--state",
            "all",
            "--limit",
            "3",
        ],
        vec!["gh", "search", "ops", "nothing"],
    ]
}

fn text(v: &Value) -> String {
    v["content"][0]["text"].as_str().unwrap().to_owned()
}

fn run(mut c: Command) -> (i32, String, String) {
    let o = c.stdin(Stdio::null()).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_no_leak(what: &str, text: &str) {
    for raw in PLANTED.iter().chain([&TOKEN]) {
        assert!(!text.contains(raw), "{what} shows {raw:?}:\n{text}");
    }
}

fn ours_session(env: &Env, root: &Path, extra: &[(&str, &str)]) -> RawSession {
    let mut c = env.shim_command(root, &["--mode", "strict", "--no-gitignore"]);
    with_github_env(env, &mut c, extra);
    RawSession::start("redctx mcp", c)
}

fn our_cli(env: &Env, root: &Path, args: &[&str], extra: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = support::Env::redctx(env, &["--root", root.to_str().unwrap(), "--mode", "strict"]);
    c.args(args);
    with_github_env(env, &mut c, extra);
    run(c)
}

#[test]
fn tools_and_cli_match_the_reference_request_for_request() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    // Our daemon revalidates every call (so requests are comparable call by call).
    let fresh0 = [("REDCTX_TEST_GITHUB_FRESH_MS", "0")];
    let mut ours = Side {
        session: ours_session(&env, &root, &fresh0),
    };
    let reference = oracle("redctx-mcp").map(|program| {
        let mut c = Command::new(program);
        c.arg("--root").arg(&root).args(["--mode", "strict"]);
        with_github_env(&env, &mut c, &[]);
        c.current_dir(env.dir.path());
        Side {
            session: RawSession::start("reference redctx-mcp", c),
        }
    });
    if reference.is_none() {
        eprintln!("SKIPPED: reference half (REDCTX_SKIP_ORACLE=1)");
    }
    let mut reference = reference;
    let mut compared = 0;
    for (tool, args) in mcp_cases() {
        server.clear();
        let have = ours.session.call(tool, args.clone());
        let have_requests: Vec<_> = server.requests().iter().map(shape).collect();
        assert_no_leak(&format!("{tool} {args}"), &text(&have));
        let Some(r) = reference.as_mut() else {
            continue;
        };
        server.clear();
        let want = r.session.call(tool, args.clone());
        let want_requests: Vec<_> = server.requests().iter().map(shape).collect();
        assert_eq!(
            (text(&have), &have["isError"]),
            (text(&want), &want["isError"]),
            "{tool} {args}"
        );
        assert_eq!(
            have["structuredContent"]["receipt"], want["structuredContent"]["receipt"],
            "receipt of {tool} {args}"
        );
        assert_eq!(have_requests, want_requests, "requests of {tool} {args}");
        compared += 1;
    }
    // tools/list: the GitHub tools' titles, schemas and annotations, descriptions aside.
    let strip = |mut v: Value| {
        fn walk(v: &mut Value) {
            match v {
                Value::Object(m) => {
                    m.remove("description");
                    m.values_mut().for_each(walk);
                }
                Value::Array(a) => a.iter_mut().for_each(walk),
                _ => {}
            }
        }
        walk(&mut v);
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"].as_str().unwrap().starts_with("redctx_github_"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let have_tools = strip(ours.session.request("tools/list", json!({}))["result"].clone());
    assert_eq!(have_tools.len(), 4);
    if let Some(r) = reference.as_mut() {
        let want_tools = strip(r.session.request("tools/list", json!({}))["result"].clone());
        assert_eq!(have_tools, want_tools);
    }

    // The CLI, against the reference CLI.
    let ref_cli = oracle("redctx");
    for args in cli_cases() {
        server.clear();
        let have = our_cli(&env, &root, &args, &fresh0);
        let have_requests: Vec<_> = server.requests().iter().map(shape).collect();
        assert_no_leak(&format!("{args:?}"), &format!("{}{}", have.1, have.2));
        let Some(program) = &ref_cli else { continue };
        server.clear();
        let mut c = Command::new(program);
        c.arg("--root")
            .arg(&root)
            .args(["--mode", "strict"])
            .args(&args);
        with_github_env(&env, &mut c, &[]);
        let want = run(c);
        let want_requests: Vec<_> = server.requests().iter().map(shape).collect();
        assert_eq!(have, want, "redctx {args:?}");
        assert_eq!(have_requests, want_requests, "requests of {args:?}");
        compared += 1;
    }
    if reference.is_some() {
        assert_eq!(compared, mcp_cases().len() + cli_cases().len());
    }
    // The token reached the server only in the Authorization header, and never a log.
    let logs = read_all(&env.state());
    assert!(!logs.contains(TOKEN), "the daemon logged the token");
    assert_no_leak("daemon log", &logs);
}

/// Every file under `dir`, concatenated (lossy).
fn read_all(dir: &Path) -> String {
    let mut out = String::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.push_str(&read_all(&p));
            } else if p.extension().is_some_and(|x| x != "redb") {
                out.push_str(&String::from_utf8_lossy(
                    &std::fs::read(&p).unwrap_or_default(),
                ));
            }
        }
    }
    out
}

#[test]
fn requests_carry_the_reference_shapes() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    let mut ours = ours_session(&env, &root, &[]);
    let r = ours.call(
        "redctx_github_list_issues",
        json!({"state": "all", "labels": ["bug", "Client Alpha escalation"], "limit": 150}),
    );
    assert_eq!(r["isError"], false);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "fewer than 100 labelled issues: one page");
    let q = reqs[0].query();
    assert_eq!(reqs[0].path(), format!("{REPO_PATH}/issues"));
    assert_eq!(
        q,
        [
            ("state".into(), "all".into()),
            ("labels".into(), "bug,Client Alpha escalation".into()),
            ("per_page".into(), "100".into()),
            ("page".into(), "1".into())
        ]
    );
    assert!(
        reqs[0]
            .target
            .contains("labels=bug%2CClient+Alpha+escalation")
    );
    assert_eq!(
        reqs[0].header("accept"),
        Some("application/vnd.github+json")
    );
    assert_eq!(reqs[0].header("user-agent"), Some("redacted-context-mcp"));
    assert_eq!(
        reqs[0].header("authorization").map(str::to_owned),
        Some(format!("Bearer {TOKEN}"))
    );

    // Pagination: page 1 is exactly 100 items (some pull requests), so page 2 asks for
    // what is still missing.
    server.clear();
    let r = ours.call(
        "redctx_github_list_issues",
        json!({"state": "all", "limit": 150}),
    );
    assert!(
        !text(&r).contains("context#7\t"),
        "pull requests are left out"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].param("per_page").as_deref(), Some("100"));
    let is_issue = |n: &u64| !n.is_multiple_of(7);
    let first_page_issues = (131..=230u64).filter(is_issue).count();
    let missing = 150 - first_page_issues;
    assert_eq!(reqs[1].param("per_page"), Some(missing.to_string()));
    assert_eq!(reqs[1].param("page").as_deref(), Some("2"));
    // The reference's quirk, kept: page 2 of pages of `missing` items overlaps page 1,
    // and a page shorter than 100 ends the listing.
    let second_page_issues = (1..=230u64)
        .rev()
        .skip(missing)
        .take(missing)
        .filter(is_issue)
        .count();
    assert_eq!(
        text(&r).lines().count(),
        first_page_issues + second_page_issues.min(missing)
    );

    // Search: the query as typed, scoped to the repo; one request.
    server.clear();
    ours.call(
        "redctx_github_search_issues",
        json!({"query": "timeout label:bug", "limit": 500}),
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].param("q").as_deref(),
        Some("timeout label:bug repo:acme-corp/atlas-secret is:issue state:open")
    );
    assert_eq!(reqs[0].param("per_page").as_deref(), Some("100"));

    // An alias whose token variable is unset sends no Authorization; its api_url's
    // trailing slash is dropped.
    server.clear();
    let r = ours.call("redctx_github_list_issues", json!({"repo_alias": "ops"}));
    assert_eq!(text(&r), "No matches.\n");
    let reqs = server.requests();
    assert_eq!(reqs[0].path(), "/repos/acme-corp/ops-private/issues");
    assert_eq!(reqs[0].header("authorization"), None);

    // Comments only when asked, with per_page = max_comments.
    server.clear();
    ours.call(
        "redctx_github_read_issue",
        json!({"number": 7, "comments": true, "max_comments": 3}),
    );
    let targets: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        [
            format!("{REPO_PATH}/issues/7"),
            format!("{REPO_PATH}/issues/7/comments?per_page=3")
        ]
    );
}

#[test]
fn answers_are_cached_redacted_and_revalidated_with_etags() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    // Every call revalidates.
    let mut ours = ours_session(&env, &root, &[("REDCTX_TEST_GITHUB_FRESH_MS", "0")]);
    let args = json!({"number": 7, "comments": true});
    let first = ours.call("redctx_github_read_issue", args.clone());
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|r| r.header("if-none-match").is_none()));
    server.clear();
    let second = ours.call("redctx_github_read_issue", args.clone());
    let sent = server.requests();
    assert_eq!(sent.len(), 2, "one conditional request per cached answer");
    for r in &sent {
        let etag = r.header("if-none-match").expect("conditional request");
        assert!(etag.starts_with("W/\""), "{etag}");
    }
    assert_eq!(text(&second), text(&first));
    assert_eq!(
        second["structuredContent"]["receipt"], first["structuredContent"]["receipt"],
        "a 304 still counts the cached answer's redactions"
    );
    assert_no_leak("cached answer", &text(&second));

    // Another session (same daemon) reuses the cache too.
    server.clear();
    let mut other = ours_session(&env, &root, &[("REDCTX_TEST_GITHUB_FRESH_MS", "0")]);
    let third = other.call("redctx_github_read_issue", args);
    assert_eq!(text(&third), text(&first));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("if-none-match").is_some())
    );
}

#[test]
fn a_fresh_answer_is_served_without_a_request() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    // The default window (30 s).
    let mut ours = ours_session(&env, &root, &[]);
    let first = ours.call("redctx_github_list_issues", json!({"limit": 5}));
    assert_eq!(server.requests().len(), 1);
    server.clear();
    let second = ours.call("redctx_github_list_issues", json!({"limit": 5}));
    assert!(server.requests().is_empty(), "served from the cache");
    assert_eq!(text(&second), text(&first));
    // A different request is a different entry.
    ours.call("redctx_github_list_issues", json!({"limit": 6}));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn rate_limits_answer_a_fixed_message_with_the_wait() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    let mut ours = ours_session(&env, &root, &[]);
    let r = ours.call("redctx_github_read_issue", json!({"number": 403}));
    assert_eq!(r["isError"], true);
    assert_eq!(
        text(&r),
        "GitHub request failed for repo alias 'context' (403): rate limit reached; retry in 42 seconds."
    );
    let r = ours.call("redctx_github_read_issue", json!({"number": 429}));
    let t = text(&r);
    let wait: u64 = t
        .strip_prefix(
            "GitHub request failed for repo alias 'context' (429): rate limit reached; retry in ",
        )
        .and_then(|rest| rest.strip_suffix(" seconds."))
        .unwrap_or_else(|| panic!("{t}"))
        .parse()
        .unwrap();
    assert!((3000..=3600).contains(&wait), "{wait}");
    // A 403 without rate-limit headers is the reference's refusal.
    let r = ours.call("redctx_github_read_issue", json!({"number": 998}));
    assert!(text(&r).starts_with("GitHub request failed for repo alias 'context' (403). Check"));
    // The CLI says the same.
    let (code, out, err) = our_cli(&env, &root, &["gh", "issue", "context", "403"], &[]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "GitHub request failed for repo alias 'context' (403): rate limit reached; retry in 42 seconds.\n"
    );
}

/// A stalled answer: our daemon gives up at its (shortened, test-only) deadline; the
/// reference at its 30 s one. Both answer `Tool execution failed.` over MCP.
#[test]
fn a_stalled_answer_fails_at_the_deadline() {
    let server = FakeGitHub::start(route);
    let env = Env::new();
    let root = make_root(&env, &server);
    let extra = [("REDCTX_TEST_GITHUB_TIMEOUT_MS", "2000")];
    let mut ours = ours_session(&env, &root, &extra);
    let args = json!({"number": 555});
    let reference = oracle("redctx-mcp").map(|program| {
        let mut c = Command::new(program);
        c.arg("--root").arg(&root).args(["--mode", "strict"]);
        with_github_env(&env, &mut c, &[]);
        let args = args.clone();
        // Runs beside ours: the reference's deadline is 30 s.
        std::thread::spawn(move || {
            let mut s = RawSession::start("reference redctx-mcp", c);
            s.call("redctx_github_read_issue", args)
        })
    });
    let have = ours.call("redctx_github_read_issue", args.clone());
    assert_eq!(
        (text(&have).as_str(), &have["isError"]),
        ("Tool execution failed.", &json!(true))
    );
    let (code, out, err) = our_cli(&env, &root, &["gh", "issue", "context", "555"], &extra);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (1, "", "GitHub did not answer within 30 seconds.\n")
    );
    if let Some(handle) = reference {
        let want = handle.join().unwrap();
        assert_eq!(
            (text(&have), &have["isError"]),
            (text(&want), &want["isError"])
        );
        assert_eq!(
            have["structuredContent"]["receipt"],
            want["structuredContent"]["receipt"]
        );
    }
}

/// Full pages of pull requests only, for ever.
fn endless_pull_requests(req: &Recorded) -> Reply {
    let page: Vec<Value> = (0..100)
        .map(|n| {
            let mut v = item(n + 1);
            v["pull_request"] = json!({"url": "x"});
            v
        })
        .collect();
    if req.path() == format!("{REPO_PATH}/issues") {
        return Reply::json(200, &Value::Array(page));
    }
    Reply::json(404, &json!({}))
}

/// A list reads at most 100 pages, whatever `limit` asks: pull requests are fetched
/// and dropped, so a repository of full pages of them (or a limit of 10^8) kept one call
/// going until it was cancelled.
#[test]
fn a_list_reads_at_most_a_hundred_pages() {
    let server = FakeGitHub::start(endless_pull_requests);
    let env = Env::new();
    let root = make_root(&env, &server);
    let mut ours = ours_session(&env, &root, &[]);
    let r = ours.call(
        "redctx_github_list_issues",
        json!({"limit": 100_000_000, "state": "all"}),
    );
    assert_eq!(r["isError"], false, "{}", text(&r));
    assert_eq!(server.requests().len(), 100);
}
