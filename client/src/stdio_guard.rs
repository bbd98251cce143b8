//! The line-level guard between the agent's stdin/stdout and rmcp.
//!
//! Why it exists: rmcp's stdio transport drops a line that is not JSON (malformed text,
//! invalid UTF-8, a lone surrogate escape such as `"\ud800"`, nesting past serde_json's
//! recursion limit) without a word, answers well-formed JSON that is no JSON-RPC message
//! with an `Invalid request` that carries no `id` at all, and drops lines over its own
//! 16 MiB cap silently. An agent that sent such a line waits for an answer that never
//! comes. JSON-RPC 2.0 and the reference (spec 2.1) answer each of them, so `redctx mcp`
//! reads stdin itself and hands rmcp only lines that rmcp parses as a JSON-RPC message.
//!
//! What a line gets (decided by [`judge`]):
//! - blank (whitespace only): nothing;
//! - longer than [`MAX_LINE_BYTES`]: `-32600 Request line exceeds maximum size.`, `id`
//!   null; the rest of the line is skipped without being buffered (stdin is read in
//!   64 KiB chunks, so an endless line costs no memory) and the next line is served;
//! - not JSON: `-32700 Parse error.`, `id` null;
//! - JSON that is not an object: `-32600 Invalid request.`, `id` null;
//! - an object that is no JSON-RPC message: `-32600 Invalid request.` with its `id` when
//!   that is a valid id, else null; but a malformed notification (a `method`, no `id`) or
//!   response (no `method`, a `result` or an `error`) is dropped, since JSON-RPC never
//!   answers those;
//! - a request for a method MCP does not define: `-32601 Method not found.` (rmcp would
//!   put the method name in the message), or for `tools/call` / `resources/read` with
//!   params of the wrong shape, the reference's fixed `-32602` texts;
//! - anything else goes to rmcp unchanged (less a UTF-8 byte order mark and surrounding
//!   whitespace), which answers it.
//!
//! Every message is a fixed sentence: nothing of the line is echoed except a valid `id`.
//!
//! Output: rmcp writes into an in-process pipe; one task copies its whole lines and the
//! guard's own replies to the real stdout, so a reply is never interleaved with another.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest request line served, in bytes without its line break (the reference's 10 MiB).
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;

/// How much of stdin is read at once.
const CHUNK_BYTES: usize = 64 * 1024;

/// Buffer of each in-process pipe between the guard and rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// JSON-RPC's parse error.
pub const PARSE_ERROR: (i32, &str) = (-32700, "Parse error.");
/// JSON-RPC's invalid request (valid JSON that is no request).
pub const INVALID_REQUEST: (i32, &str) = (-32600, "Invalid request.");
/// A method that is not served (fixed: the reference's `Method not found: <method>`
/// echoes it).
pub const METHOD_NOT_FOUND: (i32, &str) = (-32601, "Method not found.");
/// A line over [`MAX_LINE_BYTES`].
pub const LINE_TOO_LONG: (i32, &str) = (-32600, "Request line exceeds maximum size.");

/// What to do with one input line.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Hand these bytes (one JSON-RPC message) to rmcp.
    Forward(&'a [u8]),
    /// Answer with this JSON line (without its line break) instead.
    Reply(String),
    /// Neither: a blank line, a malformed notification or response.
    Ignore,
}

/// Decide what `line` (without its line break) gets; see the module doc.
pub fn judge(line: &[u8]) -> Verdict<'_> {
    let line = line
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(line)
        .trim_ascii();
    if line.is_empty() {
        return Verdict::Ignore;
    }
    if let Ok(msg) = serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        // rmcp would answer a method it does not know with the method as the message.
        if let JsonRpcMessage::Request(r) = &msg
            && let ClientRequest::CustomRequest(c) = &r.request
        {
            let id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
            return Verdict::Reply(error_line(id, unknown_method(&c.method)));
        }
        return Verdict::Forward(line);
    }
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(v) => v,
        Err(_) => return Verdict::Reply(error_line(Value::Null, PARSE_ERROR)),
    };
    let Value::Object(obj) = value else {
        return Verdict::Reply(error_line(Value::Null, INVALID_REQUEST));
    };
    let has = |k: &str| obj.contains_key(k);
    let notification = has("method") && !has("id");
    let response = !has("method") && (has("result") || has("error"));
    if notification || response {
        return Verdict::Ignore;
    }
    let id = obj
        .get("id")
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
        .map_or(Value::Null, |id| {
            serde_json::to_value(id).unwrap_or(Value::Null)
        });
    Verdict::Reply(error_line(id, INVALID_REQUEST))
}

/// The answer to a request rmcp could not read as an MCP request: a method it does not
/// know, or one of ours whose params have the wrong shape (the reference's texts).
fn unknown_method(method: &str) -> (i32, &'static str) {
    match method {
        "tools/call" => (
            -32602,
            "tools/call requires string name and object arguments.",
        ),
        "resources/read" => (-32602, "resources/read requires string uri."),
        _ => METHOD_NOT_FOUND,
    }
}

/// One JSON-RPC error response line, keys in the reference's order.
fn error_line(id: Value, (code, message): (i32, &str)) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The guard running between `input`/`output` (stdin/stdout) and rmcp.
pub struct Guard {
    /// rmcp reads its requests here.
    pub rmcp_input: DuplexStream,
    /// rmcp writes its answers here.
    pub rmcp_output: DuplexStream,
    /// Ends once rmcp and the guard have both finished writing and everything reached
    /// `output` (or `output` failed).
    pub flushed: JoinHandle<()>,
}

/// Start the guard's tasks on the current runtime.
pub fn spawn<R, W>(input: R, output: W) -> Guard
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_input) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_output, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (lines_tx, lines_rx) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(pump_input(input, to_rmcp, lines_tx.clone()));
    tokio::spawn(collect_rmcp_lines(from_rmcp, lines_tx));
    let flushed = tokio::spawn(write_lines(lines_rx, output));
    Guard {
        rmcp_input,
        rmcp_output,
        flushed,
    }
}

/// Read `input` line by line (bounded), forward good lines to rmcp, answer the rest.
/// Returning drops `to_rmcp`, which rmcp sees as the end of its input.
async fn pump_input<R: AsyncRead + Unpin>(
    mut input: R,
    mut to_rmcp: DuplexStream,
    replies: mpsc::Sender<Vec<u8>>,
) {
    let mut lines = LineSplitter::default();
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        // A read error ends the input like EOF does.
        let n: usize = input.read(&mut chunk).await.unwrap_or_default();
        let events = if n == 0 {
            lines.finish()
        } else {
            lines.push(&chunk[..n])
        };
        for event in events {
            let verdict = match &event {
                Line::Whole(l) => judge(l),
                Line::TooLong => Verdict::Reply(error_line(Value::Null, LINE_TOO_LONG)),
            };
            match verdict {
                Verdict::Forward(msg) => {
                    let ok = to_rmcp.write_all(msg).await.is_ok()
                        && to_rmcp.write_all(b"\n").await.is_ok();
                    if !ok {
                        return; // rmcp has stopped
                    }
                }
                Verdict::Reply(mut reply) => {
                    reply.push('\n');
                    if replies.send(reply.into_bytes()).await.is_err() {
                        return; // stdout is gone
                    }
                }
                Verdict::Ignore => {}
            }
        }
        if n == 0 {
            return;
        }
    }
}

/// Copy rmcp's output to the writer, one whole line at a time.
async fn collect_rmcp_lines(from_rmcp: DuplexStream, lines: mpsc::Sender<Vec<u8>>) {
    let mut rd = tokio::io::BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match rd.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if lines.send(line).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The only writer of `output`.
async fn write_lines<W: AsyncWrite + Unpin>(mut lines: mpsc::Receiver<Vec<u8>>, mut output: W) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// One event of the line splitter.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A complete line, without its `\n`.
    Whole(Vec<u8>),
    /// A line went over [`MAX_LINE_BYTES`]; reported once, its rest is skipped.
    TooLong,
}

/// Splits a byte stream into lines of at most [`MAX_LINE_BYTES`], never holding more.
#[derive(Default)]
struct LineSplitter {
    buf: Vec<u8>,
    /// Skipping the rest of an over-long line until its `\n`.
    skipping: bool,
}

impl LineSplitter {
    fn push(&mut self, mut bytes: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let nl = bytes.iter().position(|&b| b == b'\n');
            let (part, rest, ends) = match nl {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            if !self.skipping {
                if self.buf.len() + part.len() > MAX_LINE_BYTES {
                    self.buf = Vec::new();
                    self.skipping = true;
                    out.push(Line::TooLong);
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            if ends {
                if self.skipping {
                    self.skipping = false;
                } else {
                    out.push(Line::Whole(std::mem::take(&mut self.buf)));
                }
            }
            bytes = rest;
        }
        out
    }

    /// End of input: a last line without `\n` still counts.
    fn finish(&mut self) -> Vec<Line> {
        let last = std::mem::take(&mut self.buf);
        if self.skipping || last.is_empty() {
            Vec::new()
        } else {
            vec![Line::Whole(last)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &[u8]) -> Value {
        match judge(line) {
            Verdict::Reply(r) => serde_json::from_str(&r).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn error(id: Value, (code, message): (i32, &str)) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
    }

    #[test]
    fn requests_go_to_rmcp_trimmed() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut padded = b"\xEF\xBB\xBF \t".to_vec();
        padded.extend_from_slice(ping);
        padded.extend_from_slice(b" \r");
        assert_eq!(judge(&padded), Verdict::Forward(&ping[..]));
        let list = br#"{"jsonrpc":"2.0","id":"a","method":"resources/list","params":{}}"#;
        assert_eq!(judge(list), Verdict::Forward(&list[..]));
    }

    #[test]
    fn unknown_methods_and_misshapen_calls_get_fixed_texts() {
        for (line, id, want) in [
            (
                &br#"{"jsonrpc":"2.0","id":"a","method":"/home/x/secret","params":{}}"#[..],
                json!("a"),
                METHOD_NOT_FOUND,
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#,
                json!(2),
                (-32602, "tools/call requires string name and object arguments."),
            ),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"redctx_read","arguments":[]}}"#,
                json!(3),
                (-32602, "tools/call requires string name and object arguments."),
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":5}}"#,
                json!(4),
                (-32602, "resources/read requires string uri."),
            ),
        ] {
            assert_eq!(reply(line), error(id, want), "{:?}", line);
        }
    }

    #[test]
    fn lines_that_are_not_json_get_a_fixed_parse_error() {
        let deep = "[".repeat(100_000);
        for bad in [
            &b"{"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
            b"\xff\xfe{}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#,
            deep.as_bytes(),
            b"secret-value /home/user/private.txt",
        ] {
            let r = reply(bad);
            assert_eq!(r, error(Value::Null, PARSE_ERROR));
            assert!(!r.to_string().contains("secret"));
        }
    }

    #[test]
    fn json_that_is_no_request_gets_invalid_request_with_its_id() {
        for (line, id) in [
            (&b"[]"[..], Value::Null),
            (b"42", Value::Null),
            (b"\"ping\"", Value::Null),
            (b"{}", Value::Null),
            (br#"{"jsonrpc":"2.0","id":7}"#, json!(7)),
            (br#"{"jsonrpc":"2.0","id":"x","method":5}"#, json!("x")),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
            ),
            (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
        ] {
            assert_eq!(reply(line), error(id, INVALID_REQUEST), "{:?}", line);
        }
    }

    #[test]
    fn blank_lines_and_malformed_notifications_or_responses_get_nothing() {
        for line in [
            &b""[..],
            b"  \t\r",
            br#"{"jsonrpc":"2.0","method":5}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#,
            br#"{"id":1,"error":"no"}"#,
            br#"{"id":1,"result":7,"extra":true}"#,
        ] {
            assert_eq!(judge(line), Verdict::Ignore, "{:?}", line);
        }
        // A truncated response is not JSON, so nothing says it was a response: answered.
        assert_eq!(
            reply(br#"{"jsonrpc":"2.0","id":1,"result":{"#),
            error(Value::Null, PARSE_ERROR)
        );
    }

    #[test]
    fn the_splitter_caps_lines_and_resumes_after_them() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"ab"), vec![]);
        assert_eq!(
            s.push(b"c\nd\n\n"),
            vec![
                Line::Whole(b"abc".to_vec()),
                Line::Whole(b"d".to_vec()),
                Line::Whole(vec![])
            ]
        );
        // Exactly the cap is a line; one byte more is too long, reported once while the
        // line is still arriving, and its tail is skipped without being kept.
        let at_cap = vec![b'x'; MAX_LINE_BYTES];
        let mut events = s.push(&at_cap);
        events.extend(s.push(b"\n"));
        assert_eq!(events, vec![Line::Whole(at_cap)]);
        let chunk = vec![b'y'; CHUNK_BYTES];
        let mut events = Vec::new();
        for _ in 0..(MAX_LINE_BYTES / CHUNK_BYTES + 20) {
            events.extend(s.push(&chunk));
            assert!(s.buf.len() <= MAX_LINE_BYTES);
        }
        assert_eq!(events, vec![Line::TooLong]);
        assert!(s.buf.is_empty());
        assert_eq!(s.push(b"yy\nok\n"), vec![Line::Whole(b"ok".to_vec())]);
        // A last line without a line break still counts; a skipped one does not.
        assert_eq!(s.push(b"tail"), vec![]);
        assert_eq!(s.finish(), vec![Line::Whole(b"tail".to_vec())]);
    }
}
