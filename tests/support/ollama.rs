//! A stand-in for Ollama's `/api/generate` on a loopback port: it answers each prompt
//! from a script keyed by the `Path: <rel>` line every discovery prompt carries, and
//! records every request body, so tests need no model and can see what was sent.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with `{"response": <text>}`: the model's answer.
    Answer(String),
    /// A raw HTTP status and body.
    Http(u16, &'static str, String),
    /// Accept, read the request, never answer (until the client gives up).
    Hang,
}

impl Reply {
    /// An answer holding `value` as JSON text.
    pub fn json(value: Value) -> Reply {
        Reply::Answer(value.to_string())
    }
}

#[derive(Default)]
struct State {
    /// Per path, the replies to give in order (the last one repeats).
    script: HashMap<String, Vec<Reply>>,
    /// For paths not scripted.
    fallback: Option<Reply>,
    served: HashMap<String, usize>,
    requests: Vec<Value>,
}

/// The server; it stops with the test process.
#[derive(Clone)]
pub struct FakeOllama {
    pub endpoint: String,
    state: Arc<Mutex<State>>,
}

impl FakeOllama {
    pub fn start() -> FakeOllama {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        FakeOllama { endpoint, state }
    }

    /// Replies for the file at `rel`, in order (a retry gets the next one).
    pub fn script(&self, rel: &str, replies: Vec<Reply>) {
        self.state
            .lock()
            .unwrap()
            .script
            .insert(rel.to_owned(), replies);
    }

    pub fn fallback(&self, reply: Reply) {
        self.state.lock().unwrap().fallback = Some(reply);
    }

    /// Forget the requests and how far each script went.
    pub fn reset(&self) {
        let mut s = self.state.lock().unwrap();
        s.served.clear();
        s.requests.clear();
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn path_of(prompt: &str) -> String {
    prompt
        .lines()
        .find_map(|l| l.strip_prefix("Path: "))
        .unwrap_or("")
        .to_owned()
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0usize;
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = path_of(request["prompt"].as_str().unwrap_or(""));
    let reply = {
        let mut s = state.lock().unwrap();
        s.requests.push(request);
        let n = *s.served.get(&path).unwrap_or(&0);
        s.served.insert(path.clone(), n + 1);
        match s.script.get(&path) {
            Some(list) if !list.is_empty() => list[n.min(list.len() - 1)].clone(),
            _ => s.fallback.clone().unwrap_or(Reply::json(json!({}))),
        }
    };
    let (status, reason, body) = match reply {
        Reply::Answer(text) => (
            200,
            "OK",
            json!({"model": "m", "response": text, "done": true}).to_string(),
        ),
        Reply::Http(code, reason, body) => (code, reason, body),
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
