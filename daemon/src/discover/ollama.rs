//! The one network call of redctx: Ollama's `/api/generate` for `redctx discover` and
//! `discover-update` (operator requests only; ARCHITECTURE.md says why).
//!
//! Raw private text goes in the request body, so the endpoint is checked first: loopback
//! plain http or any https, other plain-http hosts only with `--allow-remote-endpoint`.
//! Every failure is the reference's sentence.

use serde_json::{Value, json};
use std::time::Duration;

/// Largest answer read (the reference reads any size; a runaway server cannot fill memory).
const MAX_BODY_BYTES: u64 = 64 << 20;

/// A checked endpoint and model.
pub struct Ollama {
    endpoint: String,
    model: String,
    agent: ureq::Agent,
}

/// The reference's endpoint rule (`validate_local_ollama_endpoint`).
pub fn check_endpoint(endpoint: &str, allow_remote: bool) -> Result<(), String> {
    let url = url_parts(endpoint);
    let Some((scheme, host)) = url else {
        return Err("Ollama endpoint must be an http:// or https:// URL.".into());
    };
    if allow_remote || scheme == "https" {
        return Ok(());
    }
    let host = host.to_lowercase();
    let host = host.trim_end_matches('.');
    if matches!(host, "localhost" | "127.0.0.1" | "::1" | "0.0.0.0") || host.ends_with(".localhost")
    {
        return Ok(());
    }
    Err(
        "Refusing to send private documents to a non-local Ollama endpoint over plain http. \
         Use a loopback endpoint or https, or pass --allow-remote-endpoint to acknowledge the \
         exposure."
            .into(),
    )
}

/// `(scheme, hostname)` as Python's `urlparse` gives them, when the scheme is http(s)
/// and a host is present.
fn url_parts(endpoint: &str) -> Option<(String, String)> {
    let (scheme, rest) = endpoint.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        inner.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    (!host.is_empty()).then(|| (scheme, host.to_owned()))
}

impl Ollama {
    /// Checks the endpoint (unless `allow_remote`) and prepares a client.
    pub fn new(
        endpoint: &str,
        model: &str,
        timeout: Duration,
        allow_remote: bool,
    ) -> Result<Ollama, String> {
        let endpoint = endpoint.trim_end_matches('/').to_owned();
        if !allow_remote {
            check_endpoint(&endpoint, false)?;
        } else if url_parts(&endpoint).is_none() {
            return Err("Ollama endpoint must be an http:// or https:// URL.".into());
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        Ok(Ollama {
            endpoint,
            model: model.to_owned(),
            agent,
        })
    }

    fn generate_url(&self) -> String {
        if self.endpoint.ends_with("/api/generate") {
            self.endpoint.clone()
        } else {
            format!("{}/api/generate", self.endpoint)
        }
    }

    /// The model's `response` text for `prompt` (JSON mode, temperature 0, no streaming).
    pub fn generate(&self, prompt: &str) -> Result<String, String> {
        let payload = json!({
            "model": self.model,
            "prompt": prompt,
            "stream": false,
            "format": "json",
            "options": {"temperature": 0},
        });
        let unreachable = || {
            format!(
                "Could not reach local Ollama at {}. Start Ollama and try again.",
                self.endpoint
            )
        };
        let mut response = self
            .agent
            .post(&self.generate_url())
            .header("Content-Type", "application/json")
            .send(payload.to_string().as_bytes())
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => "Ollama request timed out.".to_owned(),
                _ => unreachable(),
            })?;
        let status = response.status();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => "Ollama request timed out.".to_owned(),
                _ => unreachable(),
            })?;
        let body = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            let reason = status
                .canonical_reason()
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            return Err(format!(
                "Ollama request failed for model '{model}' ({code}{reason}). {detail}Run `ollama \
                 list` to see installed model names, or `ollama pull {model}` to install this \
                 exact tag.",
                model = self.model,
                code = status.as_u16(),
                detail = error_detail(&body),
            ));
        }
        let data: Value =
            serde_json::from_str(&body).map_err(|_| "Ollama returned invalid JSON.".to_owned())?;
        if let Some(error) = data.get("error").filter(|e| truthy(e)) {
            return Err(format!(
                "Ollama returned an error for model '{}': {}. Run `ollama list` to see installed \
                 model names.",
                self.model,
                py_str(error)
            ));
        }
        Ok(data.get("response").map(py_str).unwrap_or_default())
    }
}

/// `extract_ollama_error`: the body's `error` (or the body itself when not JSON) and ". ".
fn error_detail(body: &str) -> String {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    let detail = match serde_json::from_str::<Value>(body) {
        Ok(data) => data
            .get("error")
            .map(py_str)
            .unwrap_or_default()
            .trim()
            .to_owned(),
        Err(_) => trimmed.to_owned(),
    };
    if detail.is_empty() {
        String::new()
    } else {
        format!("{detail}. ")
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
    }
}

fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_the_references_rule() {
        for ok in [
            "http://localhost:11434",
            "http://LOCALHOST.:1",
            "http://127.0.0.1",
            "http://[::1]:11434/",
            "http://0.0.0.0",
            "http://gpu.localhost",
            "https://models.example.com",
        ] {
            assert_eq!(check_endpoint(ok, false), Ok(()), "{ok}");
        }
        assert!(
            check_endpoint("http://10.0.0.5:11434", false)
                .unwrap_err()
                .starts_with("Refusing")
        );
        assert_eq!(check_endpoint("http://10.0.0.5:11434", true), Ok(()));
        for bad in ["ftp://localhost", "localhost:11434", "http://", "file:///x"] {
            assert!(
                check_endpoint(bad, true)
                    .unwrap_err()
                    .starts_with("Ollama endpoint"),
                "{bad}"
            );
        }
    }
}
