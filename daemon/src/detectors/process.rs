//! One external detector process (`--detector exec=PROGRAM`): started by the daemon,
//! spoken to one request at a time over its stdin and stdout (`protocol.rs`), with a
//! deadline per request. Any broken message, a timeout or an exit replaces the process:
//! the call that met it fails closed, and the next start waits out a back-off that
//! grows with each failure in a row and resets once a restarted process answers.
//!
//! Tool calls go first: a background thread (the index pass, marked by
//! [`super::mark_background_thread`]) waits while a foreground call is queued.
//!
//! The child's stderr goes to the daemon log, but only until the process is sent its
//! first text: after that a line may quote the text, so only its length is logged.

use super::protocol::{self, Answer, Hello, MAX_LINE_BYTES, ProtocolError};
use crate::engine::plugged::PluggedError;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a detector may take: to say hello after it starts, to answer one text; and
/// the first and longest wait before a restart.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub hello: Duration,
    pub request: Duration,
    pub backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Timeouts {
    /// A model may load for a while; one text gets the reference's tool deadline.
    fn default() -> Timeouts {
        Timeouts {
            hello: Duration::from_secs(120),
            request: Duration::from_secs(30),
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// Why a detector could not be started; fixed sentences (the program's path and output
/// stay in the log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("The exec detector program could not be started.")]
    Spawn,
    #[error("The exec detector did not say hello in time.")]
    HelloTimeout,
    #[error("The exec detector's hello broke the detector protocol.")]
    BadHello,
}

/// What the stdout reader hands over.
enum Line {
    Text(String),
    /// Longer than [`MAX_LINE_BYTES`], or not UTF-8.
    Broken,
    Eof,
}

/// A running child and the threads around it.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    /// Set before the first text is written: the stderr logger stops quoting lines.
    seen_text: Arc<AtomicBool>,
}

impl Drop for Running {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // The whole process group: a wrapper script's own children go too.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain syscall; the group was created for this child at spawn.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct State {
    running: Option<Running>,
    next_id: u64,
    /// Failures in a row; the back-off doubles with each.
    failures: u32,
    /// No restart before this.
    retry_at: Option<Instant>,
}

/// One external detector: its identity (the first hello) and its process.
pub struct ExecDetector {
    program: PathBuf,
    hello: Hello,
    timeouts: Timeouts,
    state: Mutex<State>,
    /// Foreground calls waiting for the process; background ones yield to them.
    foreground: AtomicUsize,
    turn: Condvar,
    /// Processes started (the first included), for tests and the log.
    starts: AtomicUsize,
}

impl std::fmt::Debug for ExecDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecDetector")
            .field("name", &self.hello.name)
            .field("version", &self.hello.version)
            .finish_non_exhaustive()
    }
}

impl ExecDetector {
    /// Starts `program` and reads its hello, which fixes the detector's identity.
    pub fn start(program: &Path, timeouts: Timeouts) -> Result<ExecDetector, StartError> {
        let (running, hello) = spawn(program, timeouts.hello, None)?;
        Ok(ExecDetector {
            program: program.to_path_buf(),
            hello,
            timeouts,
            state: Mutex::new(State {
                running: Some(running),
                next_id: 1,
                failures: 0,
                retry_at: None,
            }),
            foreground: AtomicUsize::new(0),
            turn: Condvar::new(),
            starts: AtomicUsize::new(1),
        })
    }

    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Processes started so far.
    pub fn starts(&self) -> usize {
        self.starts.load(Ordering::Relaxed)
    }

    /// The detector's spans for `text` (code points), or a fixed refusal.
    pub fn detect(&self, text: &str) -> Answer {
        let background = super::is_background_thread();
        if !background {
            self.foreground.fetch_add(1, Ordering::SeqCst);
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if background {
            while self.foreground.load(Ordering::SeqCst) > 0 {
                state = self.turn.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        } else {
            self.foreground.fetch_sub(1, Ordering::SeqCst);
        }
        let answer = self.detect_locked(&mut state, text);
        drop(state);
        self.turn.notify_all();
        answer
    }

    fn detect_locked(&self, state: &mut State, text: &str) -> Answer {
        if state.running.is_none() {
            if state.retry_at.is_some_and(|at| Instant::now() < at) {
                return Err(PluggedError::Failed);
            }
            self.starts.fetch_add(1, Ordering::Relaxed);
            match spawn(&self.program, self.timeouts.hello, Some(&self.hello)) {
                Ok((running, _)) => state.running = Some(running),
                Err(e) => {
                    tracing::warn!(detector = %self.hello.name, "detector restart failed: {e}");
                    self.failed(state);
                    return Err(PluggedError::Failed);
                }
            }
        }
        let running = state.running.as_mut().expect("a running detector");
        let id = state.next_id;
        state.next_id += 1;
        match exchange(running, id, text, self.timeouts.request) {
            Ok(answer) => {
                state.failures = 0;
                state.retry_at = None;
                answer
            }
            Err(why) => {
                tracing::warn!(
                    detector = %self.hello.name,
                    "detector replaced: {why}; the text is refused"
                );
                state.running = None;
                self.failed(state);
                Err(PluggedError::Failed)
            }
        }
    }

    fn failed(&self, state: &mut State) {
        state.failures = state.failures.saturating_add(1);
        let factor = 1u32 << state.failures.saturating_sub(1).min(16);
        let wait = self
            .timeouts
            .backoff
            .saturating_mul(factor)
            .min(self.timeouts.max_backoff);
        state.retry_at = Some(Instant::now() + wait);
    }
}

/// Sends one request and reads its answer.
fn exchange(
    running: &mut Running,
    id: u64,
    text: &str,
    deadline: Duration,
) -> Result<Answer, String> {
    running.seen_text.store(true, Ordering::SeqCst);
    let mut line = protocol::request(id, text);
    line.push('\n');
    let stdin = running.stdin.take().ok_or("no stdin")?;
    // Written from a thread, so a detector that stops reading cannot stall past the
    // deadline; the handle comes back when the write is done.
    let (back, written) = channel();
    std::thread::Builder::new()
        .name("redctx-detector-in".into())
        .spawn(move || {
            let mut stdin = stdin;
            let ok = stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.flush());
            let _ = back.send(ok.map(|()| stdin));
        })
        .map_err(|_| "no thread for the request")?;
    let until = Instant::now() + deadline;
    let answer = match running.lines.recv_timeout(deadline) {
        Ok(Line::Text(line)) => {
            protocol::parse_answer(&line, id).map_err(|ProtocolError(why)| why.to_owned())
        }
        Ok(Line::Broken) => Err("answer too long or not UTF-8".to_owned()),
        Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => Err("the process exited".to_owned()),
        Err(RecvTimeoutError::Timeout) => Err("no answer before the deadline".to_owned()),
    }?;
    match written.recv_timeout(until.saturating_duration_since(Instant::now())) {
        Ok(Ok(stdin)) => running.stdin = Some(stdin),
        _ => return Err("the request was not taken".to_owned()),
    }
    Ok(answer)
}

/// Starts the program in its own process group with piped stdio, and reads its hello
/// (which must equal `expected` on a restart).
fn spawn(
    program: &Path,
    hello_deadline: Duration,
    expected: Option<&Hello>,
) -> Result<(Running, Hello), StartError> {
    let mut command = Command::new(program);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir("/")
        .process_group(0);
    // A program written a moment ago can be busy (`ETXTBSY`) while a child forked by
    // another thread still holds the writer's descriptor until its own exec: brief, so
    // retried for up to ~200 ms.
    let mut attempts = 0;
    let mut child = loop {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 20 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => {
                break other.map_err(|e| {
                    tracing::warn!(program = %program.display(), error = %e, "detector could not start");
                    StartError::Spawn
                })?;
            }
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let stdin = child.stdin.take();
    let seen_text = Arc::new(AtomicBool::new(false));
    let (tx, lines) = channel();
    let label = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let running = Running {
        child,
        stdin,
        lines,
        seen_text: seen_text.clone(),
    };
    let threads = (|| -> std::io::Result<()> {
        if let Some(stdout) = stdout {
            std::thread::Builder::new()
                .name("redctx-detector-out".into())
                .spawn(move || read_lines(stdout, &tx))?;
        }
        if let Some(stderr) = stderr {
            let label = label.clone();
            std::thread::Builder::new()
                .name("redctx-detector-err".into())
                .spawn(move || log_stderr(stderr, &label, &seen_text))?;
        }
        Ok(())
    })();
    threads.map_err(|_| StartError::Spawn)?;
    let hello = match running.lines.recv_timeout(hello_deadline) {
        Ok(Line::Text(line)) => protocol::parse_hello(&line).map_err(|ProtocolError(why)| {
            tracing::warn!(program = %label, "detector hello refused: {why}");
            StartError::BadHello
        })?,
        Ok(_) | Err(RecvTimeoutError::Disconnected) => return Err(StartError::BadHello),
        Err(RecvTimeoutError::Timeout) => return Err(StartError::HelloTimeout),
    };
    if expected.is_some_and(|e| *e != hello) {
        tracing::warn!(program = %label, "restarted detector names another identity");
        return Err(StartError::BadHello);
    }
    // Drop of `running` on any error above kills the child.
    Ok((running, hello))
}

/// Forwards stdout lines (each at most [`MAX_LINE_BYTES`]) until EOF.
fn read_lines(stdout: impl Read, tx: &std::sync::mpsc::Sender<Line>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut buf = Vec::new();
        // A read error ends the stream like EOF.
        let n = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .unwrap_or_default();
        if n == 0 {
            let _ = tx.send(Line::Eof);
            return;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() > MAX_LINE_BYTES {
            let _ = tx.send(Line::Broken);
            return;
        }
        let line = match String::from_utf8(buf) {
            Ok(line) => Line::Text(line),
            Err(_) => Line::Broken,
        };
        if tx.send(line).is_err() {
            return;
        }
    }
}

/// Logs the child's stderr: quoted (shortened, control characters escaped) until it was
/// sent a text, then only each line's length.
fn log_stderr(stderr: impl Read, label: &str, seen_text: &AtomicBool) {
    let reader = BufReader::new(stderr);
    for line in reader.split(b'\n') {
        let Ok(line) = line else { return };
        if seen_text.load(Ordering::SeqCst) {
            tracing::info!(
                detector = %label,
                bytes = line.len(),
                "detector wrote a line to stderr (not logged: it may quote a text)"
            );
        } else {
            let text = String::from_utf8_lossy(&line);
            let shown: String = text
                .chars()
                .take(500)
                .flat_map(char::escape_default)
                .collect();
            tracing::warn!(detector = %label, "detector stderr: {shown}");
        }
    }
}
