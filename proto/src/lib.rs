//! Wire protocol between redctx clients (`redctx`, `redctx mcp`) and the daemon (`redctxd`).
//!
//! What it is for: the typed messages both sides exchange over the daemon's local socket,
//! their binary framing, and where that socket lives. Both binaries link this crate, so a
//! message shape can only change in one place.
//!
//! What it is not for: redaction or MCP. Tool arguments and receipts travel as JSON
//! *strings* because postcard cannot carry `serde_json::Value`; [`tools`] holds each
//! tool's contract (names, argument types, defaults, bounds) and the typed reading of its
//! arguments, but only the client speaks MCP and only the daemon knows what a tool does.
//!
//! # Conversation
//! ```text
//! client                                   daemon
//!   Hello{protocol_version, client_version} ->
//!                                          <- HelloReply::Ok{..} | HelloReply::Mismatch{..}
//!   ClientMessage::Request{id, request}    ->      (any number, pipelined)
//!   ClientMessage::Cancel{id}              ->      (optional)
//!                                          <- ServerMessage{id, response} (any order)
//! ```
//! Each frame is a little-endian `u32` byte length followed by that many postcard bytes
//! ([`write_frame`], [`read_frame`]). `Hello` and `HelloReply` are frozen: they must keep
//! decoding across versions so that a client can always tell the user which daemon runs
//! and how to restart it. Every other type may change; bump [`PROTOCOL_VERSION`] when
//! it does.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use redctx_proto::{read_frame, write_frame, ClientMessage, Request};
//! let mut buf = Vec::new();
//! write_frame(&mut buf, &ClientMessage::Request { id: 7, request: Request::Ping }).await.unwrap();
//! let back: Option<ClientMessage> = read_frame(&mut buf.as_slice()).await.unwrap();
//! assert_eq!(back, Some(ClientMessage::Request { id: 7, request: Request::Ping }));
//! # });
//! ```

pub mod paths;
pub mod tools;

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use std::path::PathBuf;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Version of every message shape below except the frozen handshake. A client and a
/// daemon talk only when this matches exactly (and their crate versions match).
pub const PROTOCOL_VERSION: u32 = 12;

/// Version of the crate, sent in the handshake so a mismatch can name both sides.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Largest frame either side accepts (64 MiB): bigger than any tool output the daemon
/// produces under its limits, small enough that a corrupt length cannot exhaust memory.
pub const MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// First frame a client sends. Frozen: never add, remove or reorder fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    pub client_version: String,
}

impl Hello {
    /// The handshake of this build.
    pub fn current() -> Self {
        Hello {
            protocol_version: PROTOCOL_VERSION,
            client_version: CRATE_VERSION.to_string(),
        }
    }
}

/// The daemon's answer to [`Hello`]. Frozen: never change existing variants or fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HelloReply {
    /// Versions match; requests may follow.
    Ok { daemon_version: String, pid: u32 },
    /// Versions differ; the daemon closes the connection after this frame. The pid lets
    /// `redctx daemon stop` end an incompatible daemon by signal.
    Mismatch {
        daemon_version: String,
        protocol_version: u32,
        pid: u32,
    },
}

/// A client frame after the handshake.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
// One message lives per frame and moment; boxing the request would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum ClientMessage {
    /// Run `request`; the daemon answers with a [`ServerMessage`] carrying the same `id`.
    /// Ids are chosen by the client and must be unique among its in-flight requests.
    Request { id: u64, request: Request },
    /// The client no longer wants the answer to request `id` (its caller went away).
    /// The daemon drops the work if it still can; no answer is sent for it.
    Cancel { id: u64 },
}

/// A daemon frame after the handshake: the answer to request `id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerMessage {
    pub id: u64,
    pub response: Response,
}

/// Which root to serve and under which options. Two specs with equal fields name the same
/// served root; the daemon keeps one index per distinct spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RootSpec {
    /// Absolute, canonical path of the root directory (the client canonicalizes it).
    pub path: PathBuf,
    /// Absolute path of the config file, if one was given (it may not exist).
    pub config: Option<PathBuf>,
    /// `strict`, `balanced` or `code`; `None` = the config's or the default mode.
    pub mode: Option<String>,
    /// Serve files the default policy treats as private.
    pub include_private: bool,
    /// Honour `.gitignore` files (the default; `--no-gitignore` turns it off).
    pub gitignore: bool,
    /// Extract documents (`--documents`; the config's `documents = true` also turns it on).
    pub documents: bool,
    /// `default` or `extended` (the CLI's `--detector-profile`); `None` = the config's,
    /// else `REDACTED_CONTEXT_DETECTOR_PROFILE`, else `default`.
    pub detector_profile: Option<String>,
    /// Operator limits; `None` fields take the daemon's defaults.
    pub limits: RootLimits,
    /// Plugged detectors (`--detector NAME=ARGUMENT`, spec 5.12) in launch order, the
    /// client having checked names and duplicates and made file arguments absolute.
    pub detectors: Vec<String>,
}

/// Operator limits a client may set per root (spec 6.5 and the `redctx-mcp` flags).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RootLimits {
    pub max_raw_bytes_per_file: Option<u64>,
    pub max_total_raw_bytes: Option<u64>,
    pub max_traversal_entries: Option<u64>,
    pub max_resource_bytes: Option<u64>,
}

/// Who sends a tool call, which decides how path arguments are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Caller {
    /// An agent through `redctx mcp`: it knows only redacted names, so a path argument
    /// is taken only where it holds nothing that would be redacted (files with redacted
    /// names are reached by their `@p_` ids).
    #[default]
    Agent,
    /// The local operator through the `redctx` CLI, who may name any file as it is on
    /// disk (the output is redacted all the same).
    Operator,
}

/// Everything a client can ask the daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Run tool `tool` (e.g. `redctx_read`) with arguments the client already validated
    /// against the tool's input schema (a JSON object, as text), for `caller`.
    CallTool {
        root: RootSpec,
        tool: String,
        arguments_json: String,
        caller: Caller,
    },
    /// The client found the arguments of `tool` invalid with `message` (spec 3.1). The
    /// daemon still runs the call's policy check first, so a blocked policy wins, then
    /// answers `message` as an error result with an empty receipt.
    RejectCall {
        root: RootSpec,
        tool: String,
        message: String,
    },
    /// One page of file resources. `cursor` is the opaque `nextCursor` of the previous
    /// page (`None` = first page); its format belongs to the daemon.
    ListResources {
        root: RootSpec,
        cursor: Option<String>,
    },
    /// Read one resource by URI (`redctx://p_<12hex>`), as the client received it.
    ReadResource { root: RootSpec, uri: String },
    /// Daemon facts: version, pid, uptime, served roots.
    Status,
    /// The roots the daemon currently serves.
    Roots,
    /// Answer `Response::Roots` with the entries of the root served at `root` (one per
    /// option set) the moment all of them are `ready` or one is `blocked` (at once when
    /// that holds already, or when none is served), else after `timeout_ms` with their
    /// progress then: `redctx status --wait` learns of "ready" without polling.
    WaitRoot { root: PathBuf, timeout_ms: u64 },
    /// Stop serving a root and drop its in-memory state.
    ForgetRoot { root: PathBuf },
    /// Answer `Response::Ok`, then stop the daemon cleanly.
    Shutdown,
    /// Answer `Response::Pong`; a liveness check.
    Ping,
    /// Time the daemon's own cold full-tree work on `root` (`redctx benchmark`): walk and
    /// text detection, reading, redaction, substring search. Nothing is cached or
    /// registered; the root's policy check applies as for a tool call.
    Benchmark {
        root: RootSpec,
        params: BenchmarkParams,
    },
    /// `redctx_submit_doc` from a session started with `--enable-writes`: a tool call
    /// (validated like `CallTool`, from an agent) that may write under `writes`. A call of
    /// the tool without writes enabled is an ordinary `CallTool`, answered `Writes are
    /// disabled…`. Never resent after a lost connection.
    SubmitDoc {
        root: RootSpec,
        arguments_json: String,
        writes: WriteOptions,
    },
    /// `redctx rehydrate`: each text with every placeholder and path reference the root's
    /// redaction knows replaced by its raw value (the operator's command; the answer is
    /// raw text, `Response::Rehydrated`).
    Rehydrate { root: RootSpec, texts: Vec<String> },
    /// `redctx discover`: the daemon samples the files, asks the local model and renders
    /// the draft (the operator's command: refused for `Caller::Agent`). `job` is the
    /// client's name for it in `DiscoverProgress`. Answered `Response::Discovered` when
    /// done; a disconnect cancels it between documents.
    Discover {
        root: RootSpec,
        caller: Caller,
        job: u64,
        params: DiscoverParams,
    },
    /// `redctx discover-update`: as `Discover`, ending in the monotonic config merge.
    DiscoverUpdate {
        root: RootSpec,
        caller: Caller,
        job: u64,
        params: DiscoverUpdateParams,
    },
    /// How far the running `Discover`/`DiscoverUpdate` named `job` is, for a progress bar
    /// (`Response::DiscoverProgress`; zeros for a job not running).
    DiscoverProgress { job: u64 },
}

/// The local model a discovery asks (Ollama's `/api/generate`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelParams {
    /// `None`: the default endpoint.
    pub endpoint: Option<String>,
    pub allow_remote_endpoint: bool,
    /// `None`: the default model tag.
    pub model: Option<String>,
    /// Per answer.
    pub timeout_ms: u64,
}

/// `redctx discover`'s options, as given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoverParams {
    pub model: ModelParams,
    /// The subcommand's `--detector` values (`NAME=ABSOLUTE PATH`, as `RootSpec`'s):
    /// when any, these detectors draft the terms and no model is asked.
    pub detectors: Vec<String>,
    /// Scopes (paths or ids); empty = the whole root.
    pub paths: Vec<String>,
    /// fnmatch patterns, as `bundle`'s.
    pub globs: Vec<String>,
    pub max_files: u64,
    /// Bytes of each file's sample (of a document's extracted text: characters).
    pub max_chars_per_file: u64,
    pub max_total_raw_bytes: u64,
    pub fail_on_truncation: bool,
    /// JSON instead of TOML.
    pub json: bool,
    pub raw_discovery: bool,
    /// Where under the root to write the draft (`None`: printed).
    pub output: Option<String>,
    pub force: bool,
}

/// `redctx discover-update`'s options, as given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoverUpdateParams {
    pub model: ModelParams,
    /// As `DiscoverParams::detectors`.
    pub detectors: Vec<String>,
    /// The JSONL documents the client read (`--input-jsonl`), unparsed.
    pub input_jsonl: Option<String>,
    pub max_files: u64,
    pub max_chars_per_document: u64,
    pub max_total_chars: u64,
    pub output_config: String,
    pub seed_config: Option<String>,
    pub include_discovered_allow: bool,
    pub include_discovered_aliases: bool,
    pub merge_only: bool,
    pub from_root: bool,
    pub changed: bool,
    pub globs: Vec<String>,
    pub dry_run: bool,
    pub check: bool,
}

/// The end of a `Discover`/`DiscoverUpdate`: what the CLI prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Discovered {
    pub stdout: String,
    pub stderr: String,
    /// Exit 1 (`discover-update --check` found a change).
    pub failed: bool,
}

/// How one `redctx mcp` session may write (spec 9.1). Per session, not per root: sessions
/// of one root with different write settings share its index and cache.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WriteOptions {
    /// The write sub-directory, root-relative POSIX, as `--write-subdir` gave it (the
    /// client checked it at start; the daemon checks it again on every call).
    pub subdir: String,
    /// `--max-submit-files`, when given: the reference's whole-root file budget of the
    /// rehydration map. `None`: no file count limit.
    pub max_submit_files: Option<u64>,
}

/// What `redctx benchmark` asks the daemon to measure, and under which budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchmarkParams {
    /// Text searched for in each file's redacted text.
    pub query: String,
    /// Compare case-folded text (the reference's default).
    pub ignore_case: bool,
    /// Most text files read (`File limit exceeded.`); `None` = unlimited.
    pub max_files: Option<u64>,
    /// Raw bytes of one file; `None` = the daemon's default.
    pub max_raw_bytes_per_file: Option<u64>,
    /// Raw bytes of all files read; `None` = the daemon's default.
    pub max_total_raw_bytes: Option<u64>,
    /// Traversal entries of the walk; `None` = the daemon's default.
    pub max_entries: Option<u64>,
}

/// The daemon's figures for [`Request::Benchmark`]: the reference's report keys, with
/// timings in nanoseconds measured inside the daemon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchmarkReport {
    /// Directories walked, the root included.
    pub directories: u64,
    /// Files walked (every kind).
    pub files: u64,
    /// Files served as text.
    pub text_files: u64,
    /// Sum of the sizes of all walked files.
    pub visible_bytes: u64,
    /// Characters (Unicode scalar values) of the decoded text files.
    pub text_characters: u64,
    /// Raw bytes of the text files that were redacted.
    pub redaction_read_bytes: u64,
    /// Text files whose redacted text contains the query.
    pub matches: u64,
    pub walk_and_text_detection_ns: u64,
    pub read_all_text_files_ns: u64,
    pub redact_each_file_as_one_chunk_ns: u64,
    pub search_redacted_text_ns: u64,
}

/// Everything the daemon can answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// Result of `CallTool` / `RejectCall`.
    ToolResult(ToolResult),
    /// Result of `ListResources`.
    Resources(ResourcePage),
    /// Result of `ReadResource`.
    ResourceText(ResourceText),
    /// Result of `Status`.
    Status(StatusInfo),
    /// Result of `Roots` and `WaitRoot`.
    Roots(Vec<RootInfo>),
    /// Result of `ForgetRoot`: whether the root was being served.
    Forgotten(bool),
    /// Result of `Shutdown`.
    Ok,
    /// Result of `Ping`.
    Pong,
    /// Result of `Benchmark`.
    Benchmark(BenchmarkReport),
    /// Result of `Rehydrate`: one text per text asked.
    Rehydrated(Vec<String>),
    /// Result of `Discover` and `DiscoverUpdate`.
    Discovered(Discovered),
    /// Result of `DiscoverProgress`: documents done, documents in all.
    DiscoverProgress { done: u64, total: u64 },
    /// The request failed; `message` is fixed, input-free text a user may see.
    Error(ErrorReply),
}

/// A tool call's outcome, the parts of MCP's `CallToolResult` the daemon decides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Redacted output, or a fixed error message when `is_error`.
    pub text: String,
    pub is_error: bool,
    /// The receipt object (spec 5.11) as JSON text.
    pub receipt_json: String,
}

/// One page of resources and the cursor of the next page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourcePage {
    pub resources: Vec<ResourceEntry>,
    /// `Some` when more resources follow.
    pub next_cursor: Option<String>,
}

/// One readable file as a resource; the client turns it into MCP's resource object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceEntry {
    /// Opaque path id without the `@`: `p_<12hex>`.
    pub id: String,
    /// Redacted root-relative path.
    pub title: String,
    pub mime_type: String,
    /// `st_size` of the file.
    pub size: u64,
}

/// Redacted content of one resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceText {
    /// Canonical URI of the resource (`redctx://p_<12hex>`).
    pub uri: String,
    pub mime_type: String,
    pub text: String,
}

/// What `redctx daemon status` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusInfo {
    pub daemon_version: String,
    pub protocol_version: u32,
    pub pid: u32,
    pub uptime_ms: u64,
    /// Connections open right now (including the one asking).
    pub connections: u64,
    /// Requests answered since start.
    pub requests_served: u64,
    pub roots: Vec<RootInfo>,
}

/// One served root, as far as a client needs to know it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootInfo {
    /// Absolute root path. Shown to the local user only, never to an MCP client.
    pub path: PathBuf,
    /// Short state word: `ready` once background indexing has completed a pass (what
    /// `redctx status --wait` waits for), `blocked` while the policy cannot be loaded, any
    /// other word (e.g. `indexing`) while work is in progress.
    pub state: String,
    /// Files currently known in the root's index.
    pub files: u64,
    // The fields below are optional so a daemon can add them one by one; a client prints
    // `unknown` for `None`.
    /// Files the current indexing pass will look at.
    pub files_seen: Option<u64>,
    /// Files whose redacted content is cached (read now or reused from before).
    pub files_indexed: Option<u64>,
    /// Files the current pass has not looked at yet.
    pub files_pending: Option<u64>,
    /// Raw bytes of the indexed files.
    pub bytes: Option<u64>,
    /// Size on disk of the root's content cache.
    pub cache_bytes: Option<u64>,
    /// `ok`, or `blocked (<fixed reason>)` while the policy cannot be loaded.
    pub policy: Option<String>,
    /// Filesystem watches this root uses.
    pub watches_used: Option<u64>,
    /// The system's watch limit (e.g. `fs.inotify.max_user_watches`).
    pub watch_limit: Option<u64>,
    /// Full rescans done because watch events were lost or the limit was hit.
    pub rescans: Option<u64>,
    /// The serve options that differ from the defaults, e.g. `mode balanced,
    /// include-private`: one path served under two option sets is two roots. Empty (or
    /// `None`) = the defaults.
    pub options: Option<String>,
    /// The root's documents, when it serves them (`--documents`); `None` otherwise.
    pub documents: Option<DocumentCounts>,
    /// The search index in use, if any.
    pub search_index: Option<SearchIndexInfo>,
}

/// The search index of a root: what `search` and `retrieve` answer from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchIndexInfo {
    /// Files it holds.
    pub files: u64,
    /// Its segments, and those whose passage index (what `retrieve` ranks from) is
    /// built; the rest are built in the background.
    pub segments: u32,
    pub passage_segments: u32,
}

/// What became of a root's documents: extracted in the background ahead of reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentCounts {
    /// Documents the root holds.
    pub total: u64,
    /// Extracted and cached in their current version.
    pub extracted: u64,
    /// Their current version could not be extracted.
    pub failed: u64,
    /// Not extracted yet.
    pub pending: u64,
}

/// A failed request: what kind (so the client picks a JSON-RPC code) and a fixed message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    pub kind: ErrorKind,
    pub message: String,
}

impl ErrorReply {
    /// Shorthand constructor.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReply {
            kind,
            message: message.into(),
        }
    }
}

/// Error classes; each maps to one MCP/JSON-RPC error code on the client side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorKind {
    /// The request's parameters are malformed (MCP `-32602`), e.g. a bad cursor.
    InvalidParams,
    /// A resource is missing, refused or over a limit (MCP `-32002`).
    Resource,
    /// The daemon failed unexpectedly (MCP `-32603`); details are in the daemon log.
    Internal,
    /// The daemon is stopping and takes no new work.
    ShuttingDown,
    /// The request is not supported by this daemon.
    Unsupported,
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("socket I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {0} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")]
    TooLarge(u64),
    #[error("connection closed in the middle of a frame")]
    Truncated,
    #[error("malformed message: {0}")]
    Decode(postcard::Error),
    #[error("message could not be encoded: {0}")]
    Encode(postcard::Error),
}

/// Encode `msg` and write it as one frame, then flush.
pub async fn write_frame<W, T>(w: &mut W, msg: &T) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin + ?Sized,
    T: Serialize + ?Sized,
{
    let body = postcard::to_allocvec(msg).map_err(FrameError::Encode)?;
    if body.len() as u64 > u64::from(MAX_FRAME_BYTES) {
        return Err(FrameError::TooLarge(body.len() as u64));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame).await?;
    w.flush().await?;
    Ok(())
}

/// Bytes of a frame's body allocated before they arrive.
const FRAME_PREALLOCATION: usize = 1 << 20;

/// Read one frame and decode it. `Ok(None)` means the peer closed the connection cleanly
/// at a frame boundary; a close inside a frame is [`FrameError::Truncated`].
pub async fn read_frame<R, T>(r: &mut R) -> Result<Option<T>, FrameError>
where
    R: AsyncRead + Unpin + ?Sized,
    T: DeserializeOwned,
{
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        got += n;
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(u64::from(len)));
    }
    // Grown as the bytes arrive: a peer that announces a large frame and stalls holds
    // what it sent, not the size it announced.
    let mut body = Vec::with_capacity((len as usize).min(FRAME_PREALLOCATION));
    r.take(u64::from(len)).read_to_end(&mut body).await?;
    if body.len() < len as usize {
        return Err(FrameError::Truncated);
    }
    postcard::from_bytes(&body)
        .map(Some)
        .map_err(FrameError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    fn sample_root() -> RootSpec {
        RootSpec {
            path: "/srv/repo".into(),
            config: Some("/srv/repo/redctx.toml".into()),
            mode: Some("strict".into()),
            include_private: false,
            gitignore: true,
            documents: true,
            detector_profile: Some("extended".into()),
            limits: RootLimits {
                max_traversal_entries: Some(10),
                ..Default::default()
            },
            detectors: vec!["patterns=/srv/rules.toml".into()],
        }
    }

    #[test]
    fn every_request_and_response_survives_a_frame_round_trip() {
        let requests = [
            Request::CallTool {
                root: sample_root(),
                tool: "redctx_read".into(),
                arguments_json: r#"{"path":"a.md"}"#.into(),
                caller: Caller::Operator,
            },
            Request::RejectCall {
                root: sample_root(),
                tool: "redctx_read".into(),
                message: "x".into(),
            },
            Request::ListResources {
                root: sample_root(),
                cursor: Some("200".into()),
            },
            Request::ReadResource {
                root: sample_root(),
                uri: "redctx://p_0123456789ab".into(),
            },
            Request::Status,
            Request::Roots,
            Request::WaitRoot {
                root: "/tmp/r".into(),
                timeout_ms: 250,
            },
            Request::ForgetRoot {
                root: "/srv/repo".into(),
            },
            Request::Shutdown,
            Request::Ping,
            Request::Benchmark {
                root: sample_root(),
                params: BenchmarkParams {
                    query: "q".into(),
                    ignore_case: true,
                    max_files: Some(3),
                    ..Default::default()
                },
            },
        ];
        let responses = [
            Response::ToolResult(ToolResult {
                text: "é\n".into(),
                is_error: true,
                receipt_json: "{}".into(),
            }),
            Response::Resources(ResourcePage {
                resources: vec![ResourceEntry {
                    id: "p_0123456789ab".into(),
                    title: "a.md".into(),
                    mime_type: "text/markdown".into(),
                    size: 3,
                }],
                next_cursor: None,
            }),
            Response::Error(ErrorReply::new(ErrorKind::Resource, "Resource not found.")),
            Response::Status(StatusInfo {
                roots: vec![RootInfo {
                    documents: Some(DocumentCounts {
                        total: 4,
                        extracted: 2,
                        failed: 1,
                        pending: 1,
                    }),
                    search_index: Some(SearchIndexInfo {
                        files: 9,
                        segments: 2,
                        passage_segments: 1,
                    }),
                    ..RootInfo::default()
                }],
                ..Default::default()
            }),
            Response::Forgotten(true),
            Response::Pong,
            Response::Benchmark(BenchmarkReport {
                directories: 2,
                search_redacted_text_ns: 1_000,
                ..Default::default()
            }),
        ];
        rt().block_on(async {
            let mut buf = Vec::new();
            for (i, r) in requests.iter().enumerate() {
                write_frame(
                    &mut buf,
                    &ClientMessage::Request {
                        id: i as u64,
                        request: r.clone(),
                    },
                )
                .await
                .unwrap();
            }
            for (i, r) in responses.iter().enumerate() {
                write_frame(
                    &mut buf,
                    &ServerMessage {
                        id: i as u64,
                        response: r.clone(),
                    },
                )
                .await
                .unwrap();
            }
            let mut rd = buf.as_slice();
            for (i, r) in requests.iter().enumerate() {
                let got: ClientMessage = read_frame(&mut rd).await.unwrap().unwrap();
                assert_eq!(
                    got,
                    ClientMessage::Request {
                        id: i as u64,
                        request: r.clone()
                    }
                );
            }
            for (i, r) in responses.iter().enumerate() {
                let got: ServerMessage = read_frame(&mut rd).await.unwrap().unwrap();
                assert_eq!(
                    got,
                    ServerMessage {
                        id: i as u64,
                        response: r.clone()
                    }
                );
            }
            assert!(
                read_frame::<_, ServerMessage>(&mut rd)
                    .await
                    .unwrap()
                    .is_none()
            );
        });
    }

    #[test]
    fn frame_layout_is_u32_le_length_then_postcard() {
        rt().block_on(async {
            let mut buf = Vec::new();
            write_frame(&mut buf, &Hello::current()).await.unwrap();
            let body = postcard::to_allocvec(&Hello::current()).unwrap();
            assert_eq!(&buf[..4], &(body.len() as u32).to_le_bytes());
            assert_eq!(&buf[4..], &body[..]);
        });
    }

    #[test]
    fn oversized_or_cut_frames_are_refused() {
        rt().block_on(async {
            let huge = (MAX_FRAME_BYTES + 1).to_le_bytes();
            let err = read_frame::<_, Hello>(&mut &huge[..]).await.unwrap_err();
            assert!(matches!(err, FrameError::TooLarge(_)));
            let cut = [5u8, 0, 0, 0, 1, 2];
            let err = read_frame::<_, Hello>(&mut &cut[..]).await.unwrap_err();
            assert!(matches!(err, FrameError::Truncated));
            let half_len = [5u8, 0];
            let err = read_frame::<_, Hello>(&mut &half_len[..])
                .await
                .unwrap_err();
            assert!(matches!(err, FrameError::Truncated));
        });
    }

    #[test]
    fn handshake_encoding_is_frozen() {
        // These bytes must never change: old clients and daemons rely on them to report
        // a version mismatch instead of failing to decode.
        let hello = Hello {
            protocol_version: 1,
            client_version: "0.1.0".into(),
        };
        assert_eq!(postcard::to_allocvec(&hello).unwrap(), b"\x01\x050.1.0");
        let reply = HelloReply::Mismatch {
            daemon_version: "9".into(),
            protocol_version: 2,
            pid: 300,
        };
        assert_eq!(
            postcard::to_allocvec(&reply).unwrap(),
            b"\x01\x019\x02\xac\x02"
        );
    }
}
