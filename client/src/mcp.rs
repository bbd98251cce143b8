//! `redctx mcp`: the MCP stdio server an agent talks to, forwarding to the daemon.
//!
//! Split of work: this side owns everything MCP and JSON (tool list, argument validation,
//! result envelopes, JSON-RPC error codes, protocol versions via rmcp); the daemon owns
//! everything about the root (policy, redaction, receipts, resources). The shim keeps no
//! cache and no policy, so any number of shims can share one warm daemon.
//!
//! Validation happens here, but its error result still goes through the daemon
//! (`Request::RejectCall`): the reference checks the live policy *before* the
//! arguments, and the receipt (detector profile) is policy data the shim doesn't have.

use crate::daemon::{ClientError, Link, Retry};
use crate::tools;
use redctx_proto::tools as name;
use redctx_proto::{Caller, ErrorKind, ErrorReply, Request, Response, RootSpec, WriteOptions};
use rmcp::model::{
    Annotations, CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    DiscoverResult, Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use std::sync::{Arc, OnceLock};

/// Server name reported in `serverInfo` (the reference's, so clients see the same server).
pub const SERVER_NAME: &str = "redacted-context";
/// Human title reported in `serverInfo`.
pub const SERVER_TITLE: &str = "Redacted Context";

/// Instructions sent with `initialize` / `server/discover`: `INSTRUCTIONS_HEAD`, the
/// tool list rendered from `TOOL_ROLES`, then `INSTRUCTIONS_TAIL`, and `WRITES_NOTE`
/// for a session that may write.
pub fn instructions(writes_enabled: bool) -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    static WITH_WRITES: OnceLock<String> = OnceLock::new();
    if writes_enabled {
        return WITH_WRITES.get_or_init(|| format!("{} {WRITES_NOTE}", instructions(false)));
    }
    TEXT.get_or_init(|| {
        let roles: Vec<String> = TOOL_ROLES
            .iter()
            .enumerate()
            .map(|(i, (names, role))| {
                let and = if i + 1 == TOOL_ROLES.len() {
                    "and "
                } else {
                    ""
                };
                format!("{and}{} {role}", names.join(" and "))
            })
            .collect();
        format!(
            "{INSTRUCTIONS_HEAD} Tools: {}. {INSTRUCTIONS_TAIL}",
            roles.join(", ")
        )
    })
}

const INSTRUCTIONS_HEAD: &str = "This server gives read-only access to a confidential local \
directory through redacted views. Every result (file text, paths, search hits, errors) has \
sensitive values replaced by stable placeholders such as [PERSON_<hex>], and files are named by \
opaque @p_<id> references: pass those references back to the tools instead of guessing real \
names.";

/// Every tool of the contract (`redctx_proto::tools::SPECS`) once, in the order the
/// instructions introduce them, with what it is for; tools sharing a role are named
/// together.
const TOOL_ROLES: &[(&[&str], &str)] = &[
    (&[name::TREE, name::LIST], "for structure"),
    (&[name::STAT], "for metadata"),
    (&[name::READ], "for one file or a line range"),
    (&[name::BUNDLE], "for several files at once"),
    (
        &[name::SEARCH],
        "for exact or regex matches on single lines",
    ),
    (
        &[name::RETRIEVE],
        "for ranked passages with line citations answering a multi-word question",
    ),
    (
        &[name::DOCTOR, name::AUDIT],
        "to inspect the redaction setup",
    ),
    (&[name::REFRESH_INDEX], "if a reference stops resolving"),
    (
        &[
            name::GITHUB_REPOS,
            name::GITHUB_LIST_ISSUES,
            name::GITHUB_SEARCH_ISSUES,
            name::GITHUB_READ_ISSUE,
        ],
        "for the configured GitHub repos' issues (redacted, untrusted text; search queries go upstream unredacted)",
    ),
];

const INSTRUCTIONS_TAIL: &str = "The same redacted files are also available as \
redctx://p_<id> resources. Changes to the local redaction config or term files apply before the \
next request; if the config cannot be reloaded, tools report that access is blocked until the \
operator repairs it.";

/// Appended when the session was started with `--enable-writes`.
const WRITES_NOTE: &str = "Controlled writes are enabled: redctx_submit_doc saves a finished \
document into the configured write subdirectory of the root, restoring the real values behind \
its placeholders and references locally.";

/// Description of each listed resource.
const RESOURCE_DESCRIPTION: &str = "A redacted text file of the served root.";

/// What the agent reads when the daemon could not be started (a state directory that
/// cannot be written, no `redctxd`, a daemon that dies at start). Path-free; the reason is
/// on stderr.
pub const START_FAILED_MESSAGE: &str =
    "The redctx daemon could not be started; the operator should run `redctx daemon status`.";

/// The MCP server of one `redctx mcp` process: one root, one daemon link.
///
/// It serves even when the daemon cannot be reached: `initialize` and the lists that need
/// no daemon are answered, and each request that needs it gets a fixed error (the link
/// tries to connect, or start the daemon, again every time).
#[derive(Clone)]
pub struct Shim {
    root: Arc<RootSpec>,
    link: Arc<Link>,
    /// `--enable-writes`: where this session may write; `None` hides the write tool.
    writes: Option<Arc<WriteOptions>>,
    /// The last daemon error written to stderr, so a lasting failure is logged once.
    last_logged: Arc<std::sync::Mutex<Option<String>>>,
}

impl Shim {
    /// Serve `root` through `link`.
    pub fn new(root: RootSpec, link: Link) -> Self {
        Shim {
            root: Arc::new(root),
            link: Arc::new(link),
            writes: None,
            last_logged: Arc::default(),
        }
    }

    /// The same shim, allowed to write as `writes` says (`--enable-writes`).
    pub fn with_writes(mut self, writes: Option<WriteOptions>) -> Self {
        self.writes = writes.map(Arc::new);
        self
    }

    /// Write a daemon error in full (paths included) to stderr, the host's log for the
    /// local user, unless it is the one written last.
    pub fn report(&self, e: &ClientError) {
        let text = e.to_string();
        let mut last = self.last_logged.lock().unwrap_or_else(|p| p.into_inner());
        if last.as_deref() != Some(text.as_str()) {
            log_stderr(&text);
            *last = Some(text);
        }
    }

    /// Sends `request` to the daemon. When the client cancels the MCP request
    /// (`notifications/cancelled`, which sets `ctx.ct`), the call is dropped, and with
    /// it the daemon's request: its work stops instead of running to its end.
    async fn ask(
        &self,
        request: Request,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Response, McpError> {
        // A write is never sent twice: after a lost connection it may have happened.
        let retry = match request {
            Request::SubmitDoc { .. } => Retry::Never,
            _ => Retry::Once,
        };
        let answer = tokio::select! {
            answer = self.link.request_with(request, retry) => answer,
            () = ctx.ct.cancelled() => {
                return Err(McpError::invalid_request("Request cancelled.", None));
            }
        };
        answer.map_err(|e| {
            // The agent gets a fixed, path-free message; the detail goes to stderr.
            self.report(&e);
            let msg = match e {
                ClientError::Lost(_) => "The connection to the redctx daemon was lost; retry the call.",
                ClientError::Mismatch { .. } => {
                    "The redctx daemon runs another version; the operator must run `redctx daemon restart`."
                }
                ClientError::StartFailed { .. } | ClientError::Setup(_) => START_FAILED_MESSAGE,
                _ => "The redctx daemon is unavailable; the operator should check `redctx daemon status`.",
            };
            McpError::internal_error(msg, None)
        })
    }
}

fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

fn server_info() -> Implementation {
    let mut info = Implementation::new(SERVER_NAME, redctx_proto::CRATE_VERSION);
    info.title = Some(SERVER_TITLE.to_string());
    info
}

/// Stateless (2026-07-28) results name their server in `_meta`, as the reference does.
fn modern_meta(ctx: &RequestContext<RoleServer>) -> Option<MetaObject> {
    is_modern(ctx).then(|| {
        let mut m = JsonObject::new();
        let info = serde_json::to_value(server_info()).unwrap_or_default();
        m.insert("io.modelcontextprotocol/serverInfo".into(), info);
        MetaObject(m)
    })
}

/// Map a daemon error to the JSON-RPC error of spec 12.1.
fn mcp_error(e: ErrorReply) -> McpError {
    match e.kind {
        ErrorKind::InvalidParams => McpError::invalid_params(e.message, None),
        ErrorKind::Resource => McpError::resource_not_found(e.message, None),
        ErrorKind::Internal | ErrorKind::ShuttingDown | ErrorKind::Unsupported => {
            McpError::internal_error(e.message, None)
        }
    }
}

fn unexpected(r: &Response) -> McpError {
    log_stderr(&format!("unexpected daemon answer: {}", variant(r)));
    McpError::internal_error("Internal error.", None)
}

fn variant(r: &Response) -> &'static str {
    match r {
        Response::ToolResult(_) => "ToolResult",
        Response::Resources(_) => "Resources",
        Response::ResourceText(_) => "ResourceText",
        Response::Status(_) => "Status",
        Response::Roots(_) => "Roots",
        Response::Forgotten(_) => "Forgotten",
        Response::Ok => "Ok",
        Response::Pong => "Pong",
        Response::Benchmark(_) => "Benchmark",
        Response::Rehydrated(_) => "Rehydrated",
        Response::Discovered(_) => "Discovered",
        Response::DiscoverProgress { .. } => "DiscoverProgress",
        Response::Error(_) => "Error",
    }
}

/// The shim has no log file; stderr is the MCP host's log.
fn log_stderr(msg: &str) {
    eprintln!("redctx mcp: {msg}");
}

/// Capabilities of spec 2.2: tools and resources, neither announcing list changes.
pub fn capabilities() -> ServerCapabilities {
    let mut caps = ServerCapabilities::builder()
        .enable_tools()
        .enable_resources()
        .build();
    if let Some(t) = caps.tools.as_mut() {
        t.list_changed = Some(false);
    }
    if let Some(r) = caps.resources.as_mut() {
        r.list_changed = Some(false);
    }
    caps
}

impl ServerHandler for Shim {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(server_info())
            .with_instructions(instructions(self.writes.is_some()))
    }

    /// Like the reference, `server/discover` offers only the stateless 2026-07-28 era;
    /// the older versions are negotiated through `initialize`.
    async fn discover(&self, _ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Ok(DiscoverResult::from_server_info(
            vec![ProtocolVersion::V_2026_07_28],
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut r =
            ListToolsResult::with_all_items(tools::catalogue(self.writes.is_some()).to_vec());
        r.meta = modern_meta(&ctx);
        if is_modern(&ctx) {
            r = r.with_ttl_ms(300_000).with_cache_scope(CacheScope::Public);
        }
        Ok(r)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some(spec) = name::spec(&name) else {
            // Fixed, unlike the reference's `Unknown tool: <name>` (COMPAT.md): no error
            // text carries agent input.
            return Err(McpError::invalid_params("Unknown tool.", None));
        };
        let args = request.arguments.unwrap_or_default();
        let root = (*self.root).clone();
        let req = match tools::validate(spec, &args) {
            Ok(()) if spec.writes() && self.writes.is_some() => Request::SubmitDoc {
                root,
                arguments_json: serde_json::Value::Object(args).to_string(),
                writes: self.writes.as_deref().cloned().unwrap_or_default(),
            },
            Ok(()) => Request::CallTool {
                root,
                tool: name,
                arguments_json: serde_json::Value::Object(args).to_string(),
                caller: Caller::Agent,
            },
            Err(message) => Request::RejectCall {
                root,
                tool: name,
                message,
            },
        };
        match self.ask(req, &ctx).await? {
            Response::ToolResult(t) => {
                let receipt: serde_json::Value =
                    serde_json::from_str(&t.receipt_json).map_err(|_| {
                        log_stderr("daemon sent a malformed receipt");
                        McpError::internal_error("Internal error.", None)
                    })?;
                let mut r = CallToolResult::success(vec![ContentBlock::text(t.text.clone())]);
                r.structured_content = Some(json!({"text": t.text, "receipt": receipt}));
                r.is_error = Some(t.is_error);
                r.meta = modern_meta(&ctx);
                Ok(r.into())
            }
            Response::Error(e) => Err(mcp_error(e)),
            other => Err(unexpected(&other)),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|p| p.cursor);
        let page = match self
            .ask(
                Request::ListResources {
                    root: (*self.root).clone(),
                    cursor,
                },
                &ctx,
            )
            .await?
        {
            Response::Resources(p) => p,
            Response::Error(e) => return Err(mcp_error(e)),
            other => return Err(unexpected(&other)),
        };
        let resources = page
            .resources
            .into_iter()
            .map(|e| {
                Resource::new(format!("redctx://{}", e.id), format!("@{}", e.id))
                    .with_title(e.title)
                    .with_description(RESOURCE_DESCRIPTION)
                    .with_mime_type(e.mime_type)
                    .with_size(e.size)
                    .with_annotations(
                        Annotations::default()
                            .with_audience(vec![Role::Assistant])
                            .with_priority(0.5),
                    )
            })
            .collect();
        let mut r = ListResourcesResult::with_all_items(resources);
        r.next_cursor = page.next_cursor;
        r.meta = modern_meta(&ctx);
        if is_modern(&ctx) {
            r = r.with_ttl_ms(0).with_cache_scope(CacheScope::Private);
        }
        Ok(r)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut t = ResourceTemplate::new("redctx://{path_id}", "redacted_context_file");
        t.title = Some("Redacted Context File".into());
        t.description = Some("Read one redacted text file by its opaque p_<id> path id.".into());
        t.mime_type = Some("text/plain".into());
        let mut r = ListResourceTemplatesResult::with_all_items(vec![t]);
        r.meta = modern_meta(&ctx);
        if is_modern(&ctx) {
            r = r.with_ttl_ms(300_000).with_cache_scope(CacheScope::Public);
        }
        Ok(r)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let req = Request::ReadResource {
            root: (*self.root).clone(),
            uri: request.uri,
        };
        match self.ask(req, &ctx).await? {
            Response::ResourceText(t) => {
                let c = ResourceContents::text(t.text, t.uri).with_mime_type(t.mime_type);
                let mut r = ReadResourceResult::new(vec![c]);
                r.meta = modern_meta(&ctx);
                Ok(r.into())
            }
            Response::Error(e) => Err(mcp_error(e)),
            other => Err(unexpected(&other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_introduce_every_tool_once() {
        let mut introduced: Vec<&str> = TOOL_ROLES
            .iter()
            .flat_map(|(names, _)| names.iter().copied())
            .collect();
        introduced.sort_unstable();
        let mut all: Vec<&str> = name::ALL
            .into_iter()
            .filter(|t| *t != name::SUBMIT_DOC)
            .collect();
        all.sort_unstable();
        assert_eq!(introduced, all);
        for tool in all {
            assert_eq!(instructions(false).matches(tool).count(), 1, "{tool}");
            assert_eq!(instructions(true).matches(tool).count(), 1, "{tool}");
        }
        assert!(!instructions(false).contains(name::SUBMIT_DOC));
        assert_eq!(instructions(true).matches(name::SUBMIT_DOC).count(), 1);
        assert!(instructions(true).starts_with(instructions(false)));
        assert!(instructions(false).contains(
            "Tools: redctx_tree and redctx_list for structure, redctx_stat for metadata, "
        ));
        assert!(instructions(false).ends_with(
            "redctx_doctor and redctx_audit to inspect the redaction setup, \
redctx_refresh_index if a reference stops resolving, and redctx_github_repos and \
redctx_github_list_issues and redctx_github_search_issues and redctx_github_read_issue \
for the configured GitHub repos' issues (redacted, untrusted text; search queries go \
upstream unredacted). The same redacted files are also \
available as redctx://p_<id> resources. Changes to the local redaction config or term \
files apply before the next request; if the config cannot be reloaded, tools report \
that access is blocked until the operator repairs it."
        ));
    }
}
