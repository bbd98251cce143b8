//! A stdio MCP server driven with raw newline-delimited JSON-RPC: one request line out,
//! the response with the same id back (notifications in between are skipped). Used for
//! servers that must be compared byte for byte, without an SDK in the way.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one answer may take before the session is declared hung.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// A running stdio server.
pub struct RawSession {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: i64,
}

impl RawSession {
    /// Spawns `cmd` (stdin/stdout piped, stderr discarded) and runs `initialize` +
    /// `notifications/initialized` with protocol `2025-11-25`.
    pub fn start(name: &str, mut cmd: Command) -> RawSession {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {name}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = RawSession {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines: rx,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "redctx-e2e", "version": "1"}}),
        );
        assert!(
            init.get("result").is_some(),
            "{name}: initialize failed: {init}"
        );
        s.notify("notifications/initialized", json!({}));
        s
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{v}").unwrap_or_else(|e| panic!("{}: write: {e}", self.name));
        stdin.flush().unwrap();
    }

    /// Sends a notification (no answer expected).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns the whole response object.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(e) => panic!("{}: no answer to {method} (id {id}): {e}", self.name),
            };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{}: bad JSON line {line:?}: {e}", self.name));
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    /// `tools/call`; returns the `result` object (panics on a protocol error).
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let v = self.request("tools/call", json!({"name": tool, "arguments": args}));
        match v.get("result") {
            Some(r) => r.clone(),
            None => panic!("{}: {tool} {args}: protocol error {v}", self.name),
        }
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
            }
        }
    }
}
