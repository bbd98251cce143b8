//! The `redctx` client: the MCP stdio shim (`redctx mcp`) and daemon management.
//!
//! What it is for: everything MCP and JSON (tool catalogue, argument validation, result
//! envelopes, protocol negotiation through rmcp) and finding or starting the daemon.
//! What it is not for: redaction, policy or caching; those live in the daemon, so the
//! shim starts in milliseconds and any number of shims share one warm daemon.
//!
//! Code map: [`daemon`] (endpoint, start on demand, pipelined connection), [`tools`]
//! (catalogue and validation), [`mcp`] (the rmcp `ServerHandler`), [`stdio_guard`] (the
//! line-level JSON-RPC checks in front of rmcp), [`cli`] (commands).

pub mod cli;
pub mod daemon;
pub mod mcp;
pub mod stdio_guard;
pub mod tools;
