//! The reference's requests (spec 10): paths, query strings, pagination and which items
//! count, each answer fetched through the cache and turned into redacted records.

use super::GitHubError;
use super::cache::{Answer, Cache, Lookup};
use super::http::{self, Get, Reply};
use super::records::{self, Comment, Detail, Summary};
use crate::cancel::Stop;
use crate::engine::Engine;
use crate::engine::policy::GitHubRepo;
use serde_json::Value;
use std::sync::Arc;

/// Pages one `list` reads at most: 10,000 issues and pull requests.
pub const MAX_PAGES: i64 = 100;

/// One alias's requests under one engine.
pub struct Repo<'a> {
    pub engine: &'a Engine,
    pub config: &'a GitHubRepo,
    pub cache: &'a Cache,
    pub stop: &'a Stop,
}

/// Python's `urllib.parse.quote(s, safe="")`, or `quote_plus` with `plus`: every byte
/// but ASCII letters, digits and `_.-~` percent-encoded (upper-case hex).
fn quote(s: &str, plus: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                out.push(b as char)
            }
            b' ' if plus => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `urlencode` of the non-empty pairs, in order.
fn query(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}={}", quote(k, true), quote(v, true)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `min(100, max(1, n))`.
fn per_page(n: i64) -> i64 {
    n.clamp(1, 100)
}

impl Repo<'_> {
    /// `<api_url without trailing />/repos/<owner>/<repo>`.
    fn repo_path(&self) -> String {
        format!(
            "{}/repos/{}/{}",
            self.config.api_url.trim_end_matches('/'),
            quote(&self.config.owner, false),
            quote(&self.config.repo, false)
        )
    }

    fn url(base: String, pairs: &[(&str, String)]) -> String {
        let q = query(pairs);
        if q.is_empty() {
            base
        } else {
            format!("{base}?{q}")
        }
    }

    /// The token from the daemon's environment, when set and not empty.
    fn token(&self) -> Option<String> {
        std::env::var(&self.config.token_env)
            .ok()
            .filter(|t| !t.is_empty())
    }

    /// The cache key: the policy (salt included), the alias and its set-up, a digest
    /// of the token, the request. Length-prefixed parts; nothing of it is kept but the hash.
    fn key(&self, url: &str, token: Option<&str>) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"redctx-github\0");
        h.update(&self.engine.policy().fingerprint());
        for part in [
            self.config.alias.as_str(),
            self.config.token_env.as_str(),
            token.unwrap_or(""),
            url,
        ] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        *h.finalize().as_bytes()
    }

    /// One request's redacted answer: from the cache while fresh, else from GitHub (a
    /// `304` to the cache's Etag serves the cached answer).
    fn answer(
        &self,
        url: &str,
        build: impl Fn(&Value) -> Answer,
    ) -> Result<Arc<Answer>, GitHubError> {
        self.stop.check().map_err(GitHubError::Stopped)?;
        let token = self.token();
        let key = self.key(url, token.as_deref());
        let etag = match self.cache.lookup(&key) {
            Lookup::Fresh(answer) => return Ok(answer),
            Lookup::Stale { etag } => Some(etag),
            Lookup::Miss => None,
        };
        let get = |etag: Option<&str>| {
            http::fetch(&Get {
                url,
                token: token.as_deref(),
                etag,
            })
            .map_err(GitHubError::Http)
        };
        let mut reply = get(etag.as_deref())?;
        if matches!(reply, Reply::NotModified) {
            match self.cache.revalidated(&key) {
                Some(answer) => return Ok(answer),
                // Evicted meanwhile: ask once more, unconditionally.
                None => reply = get(None)?,
            }
        }
        match reply {
            Reply::Body { body, etag } => {
                let text = String::from_utf8_lossy(&body);
                let value: Value =
                    serde_json::from_str(&text).map_err(|_| GitHubError::InvalidJson)?;
                let answer = Arc::new(build(&value));
                self.cache.store(key, answer.clone(), etag);
                Ok(answer)
            }
            Reply::RateLimited { status, wait } => Err(GitHubError::RateLimited {
                alias: self.config.alias.clone(),
                status,
                wait,
            }),
            Reply::Status(status) => Err(GitHubError::Status {
                alias: self.config.alias.clone(),
                status,
            }),
            Reply::NotModified => Err(GitHubError::Status {
                alias: self.config.alias.clone(),
                status: 304,
            }),
        }
    }

    /// Up to `limit` issues: pages of `min(100, what is missing)` until a page is short,
    /// empty or not an array, or [`MAX_PAGES`] were read; pull requests and non-objects
    /// are skipped.
    pub fn list(
        &self,
        state: &str,
        labels: &[String],
        limit: i64,
    ) -> Result<Vec<Summary>, GitHubError> {
        let mut issues: Vec<Summary> = Vec::new();
        let mut page: i64 = 1;
        // Bounded by pages as well as by `limit`: pull requests are fetched and dropped,
        // so a server answering full pages of them (or an agent asking for 10^8 issues)
        // kept the loop going until the call was cancelled.
        while (issues.len() as i64) < limit && page <= MAX_PAGES {
            let url = Self::url(
                format!("{}/issues", self.repo_path()),
                &[
                    ("state", state.to_owned()),
                    ("labels", labels.join(",")),
                    (
                        "per_page",
                        per_page(limit - issues.len() as i64).to_string(),
                    ),
                    ("page", page.to_string()),
                ],
            );
            let engine = self.engine;
            let answer = self.answer(&url, |v| {
                Answer::IssuePage(v.as_array().map(|items| records::summaries(engine, items)))
            })?;
            let Answer::IssuePage(Some(items)) = &*answer else {
                break;
            };
            if items.is_empty() {
                break;
            }
            for item in items.iter().flatten() {
                issues.push(item.clone());
                if issues.len() as i64 >= limit {
                    break;
                }
            }
            if items.len() < 100 {
                break;
            }
            page += 1;
        }
        Ok(issues)
    }

    /// One search request, scoped to the repo and `is:issue` (and the state unless
    /// `all`); the query goes upstream as typed.
    pub fn search(&self, q: &str, state: &str, limit: i64) -> Result<Vec<Summary>, GitHubError> {
        let mut search = format!(
            "{q} repo:{}/{} is:issue",
            self.config.owner, self.config.repo
        );
        if state != "all" {
            search.push_str(&format!(" state:{state}"));
        }
        let url = Self::url(
            format!(
                "{}/search/issues",
                self.config.api_url.trim_end_matches('/')
            ),
            &[("q", search), ("per_page", per_page(limit).to_string())],
        );
        let engine = self.engine;
        let answer = self.answer(&url, |v| {
            let items = match v.as_object().and_then(|o| o.get("items")) {
                Some(Value::Array(items)) => records::summaries(engine, items),
                _ => Vec::new(),
            };
            Answer::Search(items)
        })?;
        let Answer::Search(items) = &*answer else {
            return Ok(Vec::new());
        };
        let take = usize::try_from(limit.max(0)).unwrap_or(usize::MAX);
        Ok(items.iter().take(take).flatten().cloned().collect())
    }

    /// The issue, then (when asked) up to `max_comments` comments.
    pub fn detail(
        &self,
        number: i64,
        comments: bool,
        max_comments: i64,
    ) -> Result<(Detail, Vec<Comment>), GitHubError> {
        let base = format!("{}/issues/{number}", self.repo_path());
        let engine = self.engine;
        let answer = self.answer(&base, |v| {
            Answer::Issue(records::detail(engine, v).map(Box::new))
        })?;
        let Answer::Issue(Some(issue)) = &*answer else {
            return Err(GitHubError::NotFound);
        };
        let mut list = Vec::new();
        if comments && max_comments > 0 {
            let url = Self::url(
                format!("{base}/comments"),
                &[("per_page", per_page(max_comments).to_string())],
            );
            let alias = self.config.alias.as_str();
            let answer = self.answer(&url, |v| {
                Answer::Comments(
                    v.as_array()
                        .map(|items| records::comments(engine, alias, items))
                        .unwrap_or_default(),
                )
            })?;
            if let Answer::Comments(items) = &*answer {
                let take = usize::try_from(max_comments).unwrap_or(usize::MAX);
                list = items.iter().take(take).flatten().cloned().collect();
            }
        }
        Ok((Detail::clone(issue), list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_pythons() {
        assert_eq!(quote("a b/c:d,e~_.-", false), "a%20b%2Fc%3Ad%2Ce~_.-");
        assert_eq!(quote("a b/c", true), "a+b%2Fc");
        assert_eq!(quote("é", false), "%C3%A9");
        assert_eq!(
            query(&[
                ("state", "open".into()),
                ("labels", String::new()),
                ("page", "1".into())
            ]),
            "state=open&page=1"
        );
        assert_eq!(per_page(0), 1);
        assert_eq!(per_page(150), 100);
    }
}
