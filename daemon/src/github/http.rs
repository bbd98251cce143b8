//! One GET to the GitHub REST API, with the reference's limits (30 s, 8 MiB body) and
//! the conditional and rate-limit headers the cache and the messages need.
//!
//! Client: `ureq` (blocking, rustls, no OpenSSL). Roots: the PEM bundle named by
//! `SSL_CERT_FILE` in the daemon's environment when set (the reference's own hint),
//! else the platform's verifier. The token travels only in the `Authorization` header;
//! no error of this module carries it, the URL or any upstream text.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use ureq::tls::{PemItem, RootCerts, TlsConfig};

/// Largest body read (the reference's `GITHUB_MAX_RESPONSE_BYTES`).
pub const MAX_BODY: u64 = 8 * 1024 * 1024;

/// The reference's per-request timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Wait suggested after a rate-limit answer that names none (GitHub's advice for
/// secondary limits: at least a minute).
const DEFAULT_WAIT_SECS: u64 = 60;

/// The longest Etag kept (a longer one is not used for a conditional request).
const MAX_ETAG: usize = 512;

/// What came back.
#[derive(Debug)]
pub enum Reply {
    /// 2xx: the body (at most [`MAX_BODY`]) and its Etag.
    Body { body: Vec<u8>, etag: Option<String> },
    /// 304 to a conditional request: the cached answer still holds.
    NotModified,
    /// A 403 or 429 that says it is a rate limit; `wait` in whole seconds.
    RateLimited { status: u16, wait: u64 },
    /// Any other status.
    Status(u16),
}

/// Why no reply came back. Never carries input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpError {
    /// Resolve or connect failed (the reference's `URLError`).
    Unreachable,
    /// The server's certificate did not verify, or the CA bundle could not be read.
    Tls,
    /// No complete answer within the deadline.
    Timeout,
    /// The body is over [`MAX_BODY`].
    TooLarge,
    /// Anything else (a connection cut mid-answer, a malformed answer or URL).
    Broken,
}

/// A request's parts besides the URL.
pub struct Get<'a> {
    pub url: &'a str,
    pub token: Option<&'a str>,
    /// Sent as `If-None-Match` (the cache's Etag for this request).
    pub etag: Option<&'a str>,
}

/// The process's client: one agent (its connection pool and TLS set-up are shared).
fn agent() -> &'static Result<ureq::Agent, HttpError> {
    static AGENT: OnceLock<Result<ureq::Agent, HttpError>> = OnceLock::new();
    AGENT.get_or_init(|| {
        let roots = roots()?;
        let timeout = test_timeout().unwrap_or(TIMEOUT);
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .user_agent("redacted-context-mcp")
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build();
        Ok(ureq::Agent::new_with_config(config))
    })
}

/// TEST ONLY: `REDCTX_TEST_GITHUB_TIMEOUT_MS` shortens the 30 s deadline, so a test of an
/// answer that never completes need not wait 30 s.
fn test_timeout() -> Option<Duration> {
    let ms: u64 = std::env::var("REDCTX_TEST_GITHUB_TIMEOUT_MS")
        .ok()?
        .parse()
        .ok()?;
    tracing::warn!("GitHub request timeout is {ms} ms (REDCTX_TEST_GITHUB_TIMEOUT_MS, test only)");
    Some(Duration::from_millis(ms))
}

/// `SSL_CERT_FILE`'s certificates, or the platform verifier.
fn roots() -> Result<RootCerts, HttpError> {
    let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) else {
        return Ok(RootCerts::PlatformVerifier);
    };
    let pem = std::fs::read(path).map_err(|_| HttpError::Tls)?;
    let certs: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c.to_owned()),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(HttpError::Tls);
    }
    Ok(RootCerts::Specific(Arc::new(certs)))
}

/// Sends `get` and reads the answer.
pub fn fetch(get: &Get<'_>) -> Result<Reply, HttpError> {
    let agent = agent().as_ref().map_err(|e| *e)?;
    let mut request = agent
        .get(get.url)
        .header("Accept", "application/vnd.github+json");
    if let Some(token) = get.token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    if let Some(etag) = get.etag {
        request = request.header("If-None-Match", etag);
    }
    let mut response = request.call().map_err(classify)?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    match status {
        200..=299 => {
            let etag = header("etag").filter(|e| e.len() <= MAX_ETAG);
            let body = response
                .body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_vec()
                .map_err(classify)?;
            Ok(Reply::Body { body, etag })
        }
        304 if get.etag.is_some() => Ok(Reply::NotModified),
        403 | 429 => {
            let retry_after = header("retry-after");
            let remaining = header("x-ratelimit-remaining");
            let reset = header("x-ratelimit-reset");
            Ok(
                match rate_limit_wait(status, retry_after, remaining, reset, now()) {
                    Some(wait) => Reply::RateLimited { status, wait },
                    None => Reply::Status(status),
                },
            )
        }
        _ => Ok(Reply::Status(status)),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether a 403/429 is a rate limit, and how many seconds to wait: `Retry-After`
/// (seconds) first, then `X-RateLimit-Reset` when `X-RateLimit-Remaining` is 0, else a
/// minute. A 403 with neither header is an ordinary refusal.
pub fn rate_limit_wait(
    status: u16,
    retry_after: Option<String>,
    remaining: Option<String>,
    reset: Option<String>,
    now: u64,
) -> Option<u64> {
    let number = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse::<u64>().ok());
    let exhausted = number(&remaining) == Some(0);
    if status == 403 && retry_after.is_none() && !exhausted {
        return None;
    }
    let wait = number(&retry_after)
        .or_else(|| {
            exhausted
                .then(|| number(&reset).map(|r| r.saturating_sub(now)))
                .flatten()
        })
        .unwrap_or(DEFAULT_WAIT_SECS);
    // A day at most: a reset far away is a clock or header problem.
    Some(wait.clamp(1, 86_400))
}

fn classify(e: ureq::Error) -> HttpError {
    use std::io::ErrorKind;
    match e {
        ureq::Error::BodyExceedsLimit(_) => HttpError::TooLarge,
        ureq::Error::Timeout(t) => match t {
            ureq::Timeout::Resolve | ureq::Timeout::Connect => HttpError::Unreachable,
            _ => HttpError::Timeout,
        },
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => HttpError::Unreachable,
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused
            | ErrorKind::AddrNotAvailable
            | ErrorKind::NotFound
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable => HttpError::Unreachable,
            ErrorKind::TimedOut | ErrorKind::WouldBlock => HttpError::Timeout,
            _ => HttpError::Broken,
        },
        ureq::Error::Rustls(rustls::Error::InvalidCertificate(_)) => HttpError::Tls,
        ureq::Error::Rustls(_) => HttpError::Unreachable,
        ureq::Error::Tls(_) => HttpError::Unreachable,
        _ => HttpError::Broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_answers_and_their_wait() {
        let s = |v: &str| Some(v.to_owned());
        // An ordinary 403 (no access) is no rate limit.
        assert_eq!(rate_limit_wait(403, None, s("42"), s("1000"), 900), None);
        assert_eq!(rate_limit_wait(403, None, None, None, 900), None);
        // Primary limit: wait until the reset.
        assert_eq!(
            rate_limit_wait(403, None, s("0"), s("1000"), 900),
            Some(100)
        );
        // Retry-After wins; 429 always is one.
        assert_eq!(
            rate_limit_wait(429, s("7"), s("0"), s("1000"), 900),
            Some(7)
        );
        assert_eq!(rate_limit_wait(429, None, None, None, 900), Some(60));
        // A reset already past still asks for a second; a date in Retry-After is a minute.
        assert_eq!(rate_limit_wait(403, None, s("0"), s("10"), 900), Some(1));
        assert_eq!(
            rate_limit_wait(403, s("Wed, 21 Oct 2026 07:28:00 GMT"), None, None, 900),
            Some(60)
        );
    }
}
