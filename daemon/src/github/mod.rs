//! The GitHub issues source (spec 10): the four `redctx_github_*` tools over the
//! `[github.repos.<alias>]` tables of a root's policy.
//!
//! Issue text is untrusted and private: every piece of it is redacted by the root's own
//! engine as soon as it arrives (`records`), before it is cached (`cache`) or rendered
//! (`render`); `api` holds the reference's request shapes and `http` the client. The
//! token comes from the daemon's environment (the variable the alias's `token_env`
//! names), goes only into the `Authorization` header, and is never logged or echoed.
//!
//! Validation order, messages and texts are the reference's. An agent sees only the
//! messages of the reference's safe list (others become `Tool execution failed.`); the
//! operator's CLI sees the reference CLI's message.

mod api;
pub mod cache;
pub mod http;
pub mod records;
mod render;

use crate::cancel::{Stop, Stopped};
use crate::engine::{Counts, Engine, EngineError};
use crate::tools::ToolOutput;
use redctx_proto::Caller;
use redctx_proto::tools as contract;
use render::Tally;
use serde_json::Value;

/// Why a GitHub call failed.
#[derive(Debug)]
pub enum GitHubError {
    UnknownAlias,
    BadState,
    /// `--limit must be at least 1.` and kin: the CLI flag's name and the minimum.
    Below(&'static str, i64),
    NotFound,
    InvalidJson,
    /// A status GitHub answered with (the reference's message, with the alias).
    Status {
        alias: String,
        status: u16,
    },
    /// Ours: a rate-limit answer, with the wait.
    RateLimited {
        alias: String,
        status: u16,
        wait: u64,
    },
    Http(http::HttpError),
    Engine(EngineError),
    Stopped(Stopped),
}

/// The reference's message for a TLS failure starts with this (its safe-list prefix).
const TLS_PREFIX: &str = "Could not verify GitHub's TLS certificate.";
const FAILED: &str = "Tool execution failed.";

impl GitHubError {
    /// The message for `caller`: the operator gets every message; an agent only those on
    /// the reference's safe list (spec 12.2), else [`FAILED`].
    pub fn message(&self, caller: Caller) -> String {
        use http::HttpError;
        let agent = caller == Caller::Agent;
        match self {
            GitHubError::UnknownAlias => "Unknown GitHub repo alias.".to_owned(),
            GitHubError::BadState => "GitHub state must be open, closed, or all.".to_owned(),
            GitHubError::Below(flag, min) => format!("{flag} must be at least {min}."),
            GitHubError::NotFound => "GitHub issue was not found.".to_owned(),
            GitHubError::InvalidJson if agent => FAILED.to_owned(),
            GitHubError::InvalidJson => "GitHub returned invalid JSON.".to_owned(),
            GitHubError::Status { alias, status } => format!(
                "GitHub request failed for repo alias '{alias}' ({status}). Check that the repo \
                 alias is configured and its token environment variable (token_env) has access."
            ),
            GitHubError::RateLimited {
                alias,
                status,
                wait,
            } => format!(
                "GitHub request failed for repo alias '{alias}' ({status}): rate limit reached; \
                 retry in {wait} {}.",
                if *wait == 1 { "second" } else { "seconds" }
            ),
            GitHubError::Http(HttpError::Unreachable) => "Could not reach GitHub API.".to_owned(),
            GitHubError::Http(HttpError::TooLarge) => "GitHub response too large.".to_owned(),
            GitHubError::Http(HttpError::Tls) => format!(
                "{TLS_PREFIX} The redctx daemon has no CA bundle that verifies it; restart the \
                 daemon with `SSL_CERT_FILE=/etc/ssl/cert.pem` (or another PEM bundle) in its \
                 environment."
            ),
            // The reference lets these escape as exceptions: `Tool execution failed.` for
            // an agent, a traceback on the CLI.
            GitHubError::Http(HttpError::Timeout) if !agent => {
                "GitHub did not answer within 30 seconds.".to_owned()
            }
            GitHubError::Http(HttpError::Broken) if !agent => {
                "Could not reach GitHub API.".to_owned()
            }
            GitHubError::Http(_) => FAILED.to_owned(),
            GitHubError::Engine(EngineError::Plugged(p)) => p.to_string(),
            GitHubError::Engine(_) => FAILED.to_owned(),
            GitHubError::Stopped(Stopped::Deadline) => "Operation deadline exceeded.".to_owned(),
            GitHubError::Stopped(Stopped::Cancelled) => "Operation cancelled.".to_owned(),
        }
    }
}

impl From<EngineError> for GitHubError {
    fn from(e: EngineError) -> Self {
        GitHubError::Engine(e)
    }
}

/// The GitHub source of the daemon: the answer cache shared by every root and session.
#[derive(Default)]
pub struct GitHub {
    cache: cache::Cache,
}

/// Whether `tool` is one of the four GitHub tools.
pub fn is_github_tool(tool: &str) -> bool {
    matches!(
        tool,
        contract::GITHUB_REPOS
            | contract::GITHUB_LIST_ISSUES
            | contract::GITHUB_READ_ISSUE
            | contract::GITHUB_SEARCH_ISSUES
    )
}

fn state_ok(state: &str) -> Result<(), GitHubError> {
    match state {
        "open" | "closed" | "all" => Ok(()),
        _ => Err(GitHubError::BadState),
    }
}

fn at_least(value: i64, min: i64, flag: &'static str) -> Result<(), GitHubError> {
    if value < min {
        return Err(GitHubError::Below(flag, min));
    }
    Ok(())
}

impl GitHub {
    pub fn new(cache: cache::Cache) -> GitHub {
        GitHub { cache }
    }

    /// The entries held by the answer cache (tests and status).
    pub fn cached_answers(&self) -> usize {
        self.cache.len()
    }

    /// Answers `tool` (one of [`is_github_tool`]) with `engine`'s policy and redaction.
    pub fn call(
        &self,
        engine: &Engine,
        tool: &str,
        args: &Value,
        caller: Caller,
        stop: &Stop,
    ) -> ToolOutput {
        let mut tally = Tally::default();
        let result = self.run(engine, tool, args, stop, &mut tally);
        match result {
            Ok(text) => ToolOutput::ok(text, tally.0),
            Err(e) => {
                if !matches!(e, GitHubError::Engine(_)) {
                    // Failures before rendering redacted nothing.
                    tally.0 = Counts::default();
                }
                ToolOutput {
                    text: e.message(caller),
                    is_error: true,
                    counts: tally.0,
                }
            }
        }
    }

    fn repo<'a>(
        &'a self,
        engine: &'a Engine,
        alias: &str,
        stop: &'a Stop,
    ) -> Result<api::Repo<'a>, GitHubError> {
        let config = engine
            .policy()
            .github_repos
            .iter()
            .find(|r| r.alias == alias)
            .ok_or(GitHubError::UnknownAlias)?;
        Ok(api::Repo {
            engine,
            config,
            cache: &self.cache,
            stop,
        })
    }

    fn run(
        &self,
        engine: &Engine,
        tool: &str,
        args: &Value,
        stop: &Stop,
        tally: &mut Tally,
    ) -> Result<String, GitHubError> {
        let no_matches = |text: String| {
            if text.is_empty() {
                "No matches.\n".to_owned()
            } else {
                text
            }
        };
        match tool {
            contract::GITHUB_REPOS => {
                let mut aliases: Vec<&str> = engine
                    .policy()
                    .github_repos
                    .iter()
                    .map(|r| r.alias.as_str())
                    .collect();
                aliases.sort_unstable();
                Ok(aliases.iter().map(|a| format!("{a}\n")).collect())
            }
            contract::GITHUB_LIST_ISSUES => {
                let a = contract::GithubListIssuesArgs::from_json(args);
                state_ok(&a.state)?;
                at_least(a.limit, 1, "--limit")?;
                let repo = self.repo(engine, &a.repo_alias, stop)?;
                let issues = repo.list(&a.state, &a.labels, a.limit)?;
                let mut text = String::new();
                for issue in &issues {
                    text.push_str(&render::summary_line(&a.repo_alias, issue, tally)?);
                }
                Ok(no_matches(text))
            }
            contract::GITHUB_SEARCH_ISSUES => {
                let a = contract::GithubSearchIssuesArgs::from_json(args);
                state_ok(&a.state)?;
                at_least(a.limit, 1, "--limit")?;
                let repo = self.repo(engine, &a.repo_alias, stop)?;
                let issues = repo.search(&a.query, &a.state, a.limit)?;
                let mut text = String::new();
                for issue in &issues {
                    text.push_str(&render::summary_line(&a.repo_alias, issue, tally)?);
                }
                Ok(no_matches(text))
            }
            contract::GITHUB_READ_ISSUE => {
                let a = contract::GithubReadIssueArgs::from_json(args);
                at_least(a.max_comments, 0, "--max-comments")?;
                at_least(a.max_body_chars, 1, "--max-body-chars")?;
                let repo = self.repo(engine, &a.repo_alias, stop)?;
                let (issue, comments) = repo.detail(a.number, a.comments, a.max_comments)?;
                let comments: Vec<&records::Comment> = comments.iter().collect();
                let max = usize::try_from(a.max_body_chars).unwrap_or(usize::MAX);
                Ok(render::detail_text(
                    &a.repo_alias,
                    &issue,
                    &comments,
                    max,
                    tally,
                )?)
            }
            _ => Err(GitHubError::Engine(EngineError::DetectorFailed)),
        }
    }
}
