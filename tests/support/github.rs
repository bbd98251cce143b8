//! A local stand-in for the GitHub REST API: a `TcpListener` on 127.0.0.1 that serves
//! recorded answers from a route function and records every request it receives
//! (method, target, headers). Answers carry an Etag and a matching `If-None-Match` gets
//! a `304`, as GitHub does. Nothing leaves the machine.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The decoded query pairs (`+` is a space), in order.
    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else {
            return Vec::new();
        };
        q.split('&')
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(k), decode(v))
            })
            .collect()
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.query()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the route answers.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Send the headers and half the body, then wait this long before closing: an
    /// answer that does not complete.
    pub stall: Option<Duration>,
}

impl Reply {
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            stall: None,
        }
    }

    pub fn raw(status: u16, body: &[u8]) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_vec(),
            stall: None,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }
}

type Route = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// The running server; stops when dropped.
pub struct FakeGitHub {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl FakeGitHub {
    pub fn start(route: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FakeGitHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let route: Arc<Route> = Arc::new(route);
        {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let requests = requests.clone();
                    let route = route.clone();
                    let stop = stop.clone();
                    std::thread::spawn(move || serve(stream, &requests, &*route, &stop));
                }
            });
        }
        FakeGitHub {
            url: format!("http://127.0.0.1:{port}"),
            requests,
            stop,
            port,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Forgets the recorded requests.
    pub fn clear(&self) {
        self.requests.lock().unwrap().clear();
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut stream: TcpStream, requests: &Mutex<Vec<Recorded>>, route: &Route, stop: &AtomicBool) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 1 << 20 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let target = first.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let req = Recorded {
        method,
        target,
        headers,
    };
    requests.lock().unwrap().push(req.clone());
    let mut reply = route(&req);
    // Etags as GitHub sends them; a matching conditional request is answered 304.
    if reply.status == 200 {
        let etag = format!("W/\"{}\"", blake(&reply.body));
        if req.header("if-none-match") == Some(etag.as_str()) {
            reply = Reply::raw(304, b"").header("ETag", &etag);
        } else {
            reply.headers.push(("ETag".into(), etag));
        }
    }
    let mut out = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let declared = reply.body.len() + usize::from(reply.stall.is_some()) * 64;
    if reply.status != 304 {
        out.push_str(&format!("Content-Length: {declared}\r\n"));
    }
    out.push_str("\r\n");
    if stream.write_all(out.as_bytes()).is_err() {
        return;
    }
    match reply.stall {
        None => {
            let _ = stream.write_all(&reply.body);
        }
        Some(wait) => {
            let _ = stream.write_all(&reply.body[..reply.body.len() / 2]);
            let _ = stream.flush();
            let end = std::time::Instant::now() + wait;
            while std::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let _ = stream.flush();
}

fn blake(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    d.iter().take(10).map(|b| format!("{b:02x}")).collect()
}
