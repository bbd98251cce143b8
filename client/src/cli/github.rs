//! `redctx github` (alias `gh`): the reference CLI's GitHub commands, answered by the
//! daemon's `redctx_github_*` tools with the operator's messages. The token is the
//! daemon's: it reads the alias's `token_env` variable from its own environment.

use super::files::{Call, Printing};
use clap::{Args, Subcommand};
use redctx_proto::RootLimits;
use redctx_proto::tools as name;
use serde_json::{Map, Value, json};

/// `redctx github …`.
#[derive(Args, Debug)]
pub struct GithubArgs {
    #[command(subcommand)]
    pub command: GithubCommand,
}

/// The GitHub commands.
#[derive(Subcommand, Debug)]
pub enum GithubCommand {
    /// List the configured GitHub repo aliases.
    Repos,
    /// List an alias's issues as redacted lines; exits 1 when there are none.
    #[command(after_help = "Example:\n  redctx gh issues context --state all --label bug")]
    Issues(IssuesArgs),
    /// Print one redacted issue, optionally with its comments.
    #[command(after_help = "Example:\n  redctx gh issue context 42 --comments")]
    Issue(IssueArgs),
    /// Search an alias's issues (the query goes to GitHub unredacted); exits 1 when
    /// nothing matches.
    #[command(after_help = "Example:\n  redctx gh search context 'timeout label:bug'")]
    Search(SearchArgs),
}

/// `issues` options.
#[derive(Args, Debug)]
pub struct IssuesArgs {
    /// Configured repo alias, e.g. context.
    pub repo_alias: String,
    /// Issue state.
    #[arg(long, value_parser = ["open", "closed", "all"], default_value = "open")]
    pub state: String,
    /// Only issues with this label (repeatable: all of them).
    #[arg(long, value_name = "LABEL")]
    pub label: Vec<String>,
    /// Most issues.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 30,
        allow_negative_numbers = true
    )]
    pub limit: i64,
}

/// `issue` options.
#[derive(Args, Debug)]
pub struct IssueArgs {
    /// Configured repo alias, e.g. context.
    pub repo_alias: String,
    /// Issue number.
    #[arg(allow_negative_numbers = true)]
    pub number: i64,
    /// Include the issue's comments.
    #[arg(long)]
    pub comments: bool,
    /// Most comments.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        allow_negative_numbers = true
    )]
    pub max_comments: i64,
    /// Most redacted characters of the body and of each comment.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 30_000,
        allow_negative_numbers = true
    )]
    pub max_body_chars: i64,
}

/// `search` options.
#[derive(Args, Debug)]
pub struct SearchArgs {
    /// Configured repo alias, e.g. context.
    pub repo_alias: String,
    /// GitHub issue-search query (sent upstream unredacted).
    pub query: String,
    /// Issue state.
    #[arg(long, value_parser = ["open", "closed", "all"], default_value = "open")]
    pub state: String,
    /// Most issues.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 30,
        allow_negative_numbers = true
    )]
    pub limit: i64,
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl GithubCommand {
    /// The tool call this command line asks for.
    pub fn call(&self) -> Call {
        let (tool, arguments, printing) = match self {
            GithubCommand::Repos => (name::GITHUB_REPOS, json!({}), Printing::Plain),
            GithubCommand::Issues(a) => (
                name::GITHUB_LIST_ISSUES,
                json!({"repo_alias": a.repo_alias, "state": a.state, "labels": a.label, "limit": a.limit}),
                Printing::Search,
            ),
            GithubCommand::Issue(a) => (
                name::GITHUB_READ_ISSUE,
                json!({
                    "repo_alias": a.repo_alias,
                    "number": a.number,
                    "comments": a.comments,
                    "max_comments": a.max_comments,
                    "max_body_chars": a.max_body_chars,
                }),
                Printing::Plain,
            ),
            GithubCommand::Search(a) => (
                name::GITHUB_SEARCH_ISSUES,
                json!({"repo_alias": a.repo_alias, "query": a.query, "state": a.state, "limit": a.limit}),
                Printing::Search,
            ),
        };
        Call {
            tool,
            arguments: object(arguments),
            limits: RootLimits::default(),
            deadline: None,
            printing,
        }
    }
}
