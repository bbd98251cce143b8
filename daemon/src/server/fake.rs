//! A test double for [`Backend`]: predictable answers, no files, no redaction.
//!
//! Test-only. A debug build's `redctxd --fake-backend` (or `REDCTX_FAKE_BACKEND=1`;
//! release builds have neither) serves it so the socket server and the `redctx mcp` shim
//! can be tested as real processes before, and independently of, the redaction backend. Its behaviour:
//! - `call_tool` answers `tool=<tool> root=<root path> args=<arguments_json>\n`; the
//!   argument `"path": "missing"` gives the error `Path does not exist.`; `"path": "slow"`
//!   waits until cancelled (at most 30 s), then counts and logs the cancellation; `"path":
//!   "huge"` answers a text one byte over a frame.
//! - a root whose last component is `blocked` has a blocked policy: every call answers
//!   [`BLOCKED_MESSAGE`].
//! - `benchmark` reports fixed figures that echo its parameters: `matches` is 1 when
//!   `ignore_case`, `text_characters` the query's length, `files` `max_files` (else 0),
//!   `visible_bytes` `max_entries` (else 0); the query `slow` waits until cancelled.
//! - resources: [`RESOURCE_COUNT`] files `p_000000000000`, `p_000000000001`, … with
//!   decimal-offset cursors (`cursor must be a string offset.` otherwise).

use super::{Backend, Cancel};
use redctx_proto::{
    BenchmarkParams, BenchmarkReport, ErrorKind, ErrorReply, ResourceEntry, ResourcePage,
    ResourceText, RootInfo, RootSpec, ToolResult,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Number of fake resources (more than two pages of 200).
pub const RESOURCE_COUNT: usize = 450;
/// Page size of the fake resource listing (the reference's page size).
pub const PAGE: usize = 200;
/// Error text of a root with a blocked policy.
pub const BLOCKED_MESSAGE: &str =
    "Context access is blocked until the operator repairs the local redaction configuration.";
/// Receipt of every fake answer.
pub const RECEIPT_JSON: &str = r#"{"detector_profile":"default","counts_by_category":{}}"#;

/// See the module docs.
#[derive(Default)]
pub struct FakeBackend {
    roots: Mutex<BTreeSet<PathBuf>>,
    cancelled: AtomicU64,
}

impl FakeBackend {
    /// A backend serving no root yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many `slow` calls noticed their cancellation.
    pub fn cancelled_count(&self) -> u64 {
        self.cancelled.load(Ordering::Relaxed)
    }

    fn touch(&self, root: &RootSpec) {
        self.roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(root.path.clone());
    }

    fn blocked(root: &RootSpec) -> Option<ToolResult> {
        (root.path.file_name().is_some_and(|n| n == "blocked")).then(|| error(BLOCKED_MESSAGE))
    }
}

fn error(text: &str) -> ToolResult {
    ToolResult {
        text: text.to_string(),
        is_error: true,
        receipt_json: RECEIPT_JSON.to_string(),
    }
}

fn resource_id(i: usize) -> String {
    format!("p_{i:012x}")
}

impl Backend for FakeBackend {
    fn call_tool(
        &self,
        root: &RootSpec,
        tool: &str,
        arguments_json: &str,
        _caller: redctx_proto::Caller,
        cancel: &Cancel,
    ) -> ToolResult {
        self.touch(root);
        if let Some(b) = Self::blocked(root) {
            return b;
        }
        if arguments_json.contains(r#""path":"missing""#) {
            return error("Path does not exist.");
        }
        if arguments_json.contains(r#""path":"slow""#) {
            let until = Instant::now() + Duration::from_secs(30);
            while Instant::now() < until {
                if cancel.is_cancelled() {
                    self.cancelled.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("fake slow call cancelled");
                    return error("Operation deadline exceeded.");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            return error("Operation deadline exceeded.");
        }
        if arguments_json.contains(r#""path":"huge""#) {
            return ToolResult {
                text: "x".repeat(redctx_proto::MAX_FRAME_BYTES as usize + 1),
                is_error: false,
                receipt_json: RECEIPT_JSON.to_string(),
            };
        }
        ToolResult {
            text: format!(
                "tool={tool} root={} args={arguments_json}\n",
                root.path.display()
            ),
            is_error: false,
            receipt_json: RECEIPT_JSON.to_string(),
        }
    }

    fn reject_call(&self, root: &RootSpec, _tool: &str, message: &str) -> ToolResult {
        self.touch(root);
        Self::blocked(root).unwrap_or_else(|| error(message))
    }

    fn list_resources(
        &self,
        root: &RootSpec,
        cursor: Option<&str>,
        _cancel: &Cancel,
    ) -> Result<ResourcePage, ErrorReply> {
        self.touch(root);
        let offset = match cursor {
            None => 0,
            Some(c) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => {
                c.parse::<usize>().unwrap_or(usize::MAX)
            }
            Some(_) => {
                return Err(ErrorReply::new(
                    ErrorKind::InvalidParams,
                    "cursor must be a string offset.",
                ));
            }
        };
        let end = offset.saturating_add(PAGE).min(RESOURCE_COUNT);
        let resources = (offset.min(end)..end)
            .map(|i| ResourceEntry {
                id: resource_id(i),
                title: format!("dir/file{i}.md"),
                mime_type: "text/markdown".into(),
                size: i as u64,
            })
            .collect();
        let next_cursor = (end < RESOURCE_COUNT).then(|| end.to_string());
        Ok(ResourcePage {
            resources,
            next_cursor,
        })
    }

    fn read_resource(
        &self,
        root: &RootSpec,
        uri: &str,
        _cancel: &Cancel,
    ) -> Result<ResourceText, ErrorReply> {
        self.touch(root);
        let not_found = || ErrorReply::new(ErrorKind::Resource, "Resource not found.");
        let id = uri.strip_prefix("redctx://").ok_or_else(not_found)?;
        let n = id
            .strip_prefix("p_")
            .filter(|h| h.len() == 12)
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .filter(|n| *n < RESOURCE_COUNT)
            .ok_or_else(not_found)?;
        Ok(ResourceText {
            uri: format!("redctx://{}", resource_id(n)),
            mime_type: "text/markdown".into(),
            text: format!("fake content {n}\n"),
        })
    }

    fn roots(&self) -> Vec<RootInfo> {
        let roots = self.roots.lock().unwrap_or_else(|p| p.into_inner());
        roots
            .iter()
            .map(|p| RootInfo {
                path: p.clone(),
                state: "ready".into(),
                files: RESOURCE_COUNT as u64,
                ..Default::default()
            })
            .collect()
    }

    fn benchmark(
        &self,
        root: &RootSpec,
        params: &BenchmarkParams,
        cancel: &Cancel,
    ) -> Result<BenchmarkReport, ErrorReply> {
        if let Some(b) = Self::blocked(root) {
            return Err(ErrorReply::new(ErrorKind::Resource, b.text));
        }
        if params.query == "slow" {
            let until = Instant::now() + Duration::from_secs(30);
            while Instant::now() < until && !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            self.cancelled.fetch_add(1, Ordering::Relaxed);
            return Err(ErrorReply::new(
                ErrorKind::Resource,
                "Operation deadline exceeded.",
            ));
        }
        Ok(BenchmarkReport {
            directories: 1,
            files: params.max_files.unwrap_or(0),
            text_files: 0,
            visible_bytes: params.max_entries.unwrap_or(0),
            text_characters: params.query.chars().count() as u64,
            redaction_read_bytes: 0,
            matches: u64::from(params.ignore_case),
            walk_and_text_detection_ns: 1_500_000,
            read_all_text_files_ns: 1_000,
            redact_each_file_as_one_chunk_ns: 2_000_000_000,
            search_redacted_text_ns: 1,
        })
    }

    fn forget_root(&self, root: &Path) -> bool {
        self.roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(root)
    }
}
