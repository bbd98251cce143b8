//! The redctx daemon library: the redaction engine, the per-root index and cache, and
//! the socket server that answers clients.
//!
//! What it is for: turning a private directory tree into redacted text that is safe to
//! hand to an AI agent, and keeping that text fresh and fast to serve.
//! What it is not for: speaking MCP or JSON to agents (that is the `redctx` client's
//! job) or defining the wire format (that is `redctx-proto`).

pub mod agent_view;
pub mod bench_report;
pub mod budget;
pub mod cache;
pub mod cancel;
pub mod detectors;
pub mod discover;
pub mod documents;
pub mod engine;
pub mod fs;
pub mod github;
pub mod index;
pub mod memo;
pub mod passages;
pub mod policy_loader;
pub mod root;
pub mod search_index;
pub mod server;
pub mod service;
pub mod tally;
pub mod tools;
pub mod vault;
pub mod view;
pub mod watch;
pub mod writes;
