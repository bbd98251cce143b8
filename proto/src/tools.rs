//! Each tool's contract, defined once: its name, title and arguments (JSON type, default,
//! bounds, required or not), and the typed argument struct the daemon dispatches on.
//!
//! One `tool_contracts!` entry per tool declares a struct whose fields *are* the
//! arguments: a field's name is the argument's name, its Rust type gives the JSON type
//! ([`ArgValue::TYPE`]), and its [`ArgSpec`] gives the default and bounds. From that one
//! entry come
//! - [`ToolSpec`] (`<Args>::SPEC`, all of them in [`SPECS`]): the table the shim renders
//!   into its published input schemas and validates calls against (`redctx-client`'s
//!   `tools.rs`), and the tool list of its instructions text;
//! - the struct's lenient reading of a JSON arguments object (`<Args>::from_json`), which
//!   the daemon's dispatch (`redctx-daemon`'s `service.rs`) uses.
//!
//! The reading never fails: the shim has already validated an agent's call with the
//! reference's messages, and the daemon must still answer anything else (the CLI's own
//! keys, an older client, a fuzzer) without echoing it. So a missing argument, or one of
//! the wrong JSON type, takes the default ([`ArgValue::from_json`] lists the rules, which
//! are the reference's: `true` is no integer, `1.0` is no integer, a negative number is
//! no count).
//!
//! Names, types and numbers only: what a tool does belongs to the daemon, how it is
//! described to an agent (descriptions, instructions prose) to the shim.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `redctx_tree`: a directory as an indented tree.
pub const TREE: &str = "redctx_tree";
/// `redctx_list`: a directory's entries, one per line.
pub const LIST: &str = "redctx_list";
/// `redctx_read`: one file, or a line range of it.
pub const READ: &str = "redctx_read";
/// `redctx_search`: grep-style lines.
pub const SEARCH: &str = "redctx_search";
/// `redctx_retrieve`: ranked passages.
pub const RETRIEVE: &str = "redctx_retrieve";
/// `redctx_stat`: metadata of one path.
pub const STAT: &str = "redctx_stat";
/// `redctx_bundle`: several files in one answer.
pub const BUNDLE: &str = "redctx_bundle";
/// `redctx_submit_doc`: the one write (listed only with `--enable-writes`).
pub const SUBMIT_DOC: &str = "redctx_submit_doc";
/// `redctx_doctor`: the redaction setup.
pub const DOCTOR: &str = "redctx_doctor";
/// `redctx_audit`: checks of the redaction setup.
pub const AUDIT: &str = "redctx_audit";
/// `redctx_refresh_index`: re-walk the root.
pub const REFRESH_INDEX: &str = "redctx_refresh_index";
/// `redctx_github_repos`: the configured repo aliases (no request upstream).
pub const GITHUB_REPOS: &str = "redctx_github_repos";
/// `redctx_github_list_issues`: one line per issue of a repo alias.
pub const GITHUB_LIST_ISSUES: &str = "redctx_github_list_issues";
/// `redctx_github_read_issue`: one issue, optionally with comments.
pub const GITHUB_READ_ISSUE: &str = "redctx_github_read_issue";
/// `redctx_github_search_issues`: GitHub's issue search, one line per issue.
pub const GITHUB_SEARCH_ISSUES: &str = "redctx_github_search_issues";

/// Every tool served, in the order `tools/list` gives them (the reference's);
/// [`SUBMIT_DOC`] is listed only when writes are enabled ([`ToolSpec::writes`]).
pub const ALL: [&str; 15] = [
    TREE,
    LIST,
    READ,
    SEARCH,
    RETRIEVE,
    STAT,
    BUNDLE,
    SUBMIT_DOC,
    DOCTOR,
    AUDIT,
    REFRESH_INDEX,
    GITHUB_REPOS,
    GITHUB_LIST_ISSUES,
    GITHUB_READ_ISSUE,
    GITHUB_SEARCH_ISSUES,
];

/// Argument defaults, as the JSON values an agent may omit.
pub mod defaults {
    /// `redctx_tree` `max_depth`.
    pub const TREE_MAX_DEPTH: u64 = 3;
    /// `redctx_read` `max_chars`.
    pub const READ_MAX_CHARS: u64 = 120_000;
    /// `redctx_search` `ignore_case` (the CLI's `grep` is case-sensitive unless `-i`).
    pub const SEARCH_IGNORE_CASE: bool = true;
    /// `redctx_search` `context`.
    pub const SEARCH_CONTEXT: u64 = 0;
    /// `redctx_search` `max_results` (output lines).
    pub const SEARCH_MAX_RESULTS: u64 = 200;
    /// `redctx_retrieve` `max_results` (passages).
    pub const RETRIEVE_MAX_RESULTS: i64 = 8;
    /// `redctx_retrieve` `max_chars`.
    pub const RETRIEVE_MAX_CHARS: i64 = 12_000;
    /// `redctx_bundle` `max_files`.
    pub const BUNDLE_MAX_FILES: u64 = 80;
    /// `redctx_bundle` `max_chars_per_file`.
    pub const BUNDLE_MAX_CHARS_PER_FILE: u64 = 30_000;
    /// `redctx_bundle` `max_total_chars`.
    pub const BUNDLE_MAX_TOTAL_CHARS: u64 = 300_000;
    /// `repo_alias` of the GitHub tools.
    pub const GITHUB_REPO_ALIAS: &str = "context";
    /// `state` of the GitHub list and search tools.
    pub const GITHUB_STATE: &str = "open";
    /// `limit` of the GitHub list and search tools.
    pub const GITHUB_LIMIT: i64 = 30;
    /// `redctx_github_read_issue` `max_comments`.
    pub const GITHUB_MAX_COMMENTS: i64 = 20;
    /// `redctx_github_read_issue` `max_body_chars`.
    pub const GITHUB_MAX_BODY_CHARS: i64 = 30_000;
}

/// JSON type of an argument, as its input schema publishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// `"type": "string"`.
    String,
    /// `"type": "string"` limited to these values (`"enum"`).
    StringOneOf(&'static [&'static str]),
    /// `"type": "integer"`: a JSON number without fraction (never a boolean or `1.0`).
    Integer,
    /// `"type": "boolean"`.
    Boolean,
    /// `"type": "array"` of strings.
    StringArray,
}

/// A default an agent may rely on, published as the schema's `"default"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgDefault {
    String(&'static str),
    Integer(i64),
    Boolean(bool),
    /// `[]`.
    EmptyArray,
}

/// One argument of a tool. Build it with [`arg`] and the methods below; the name and the
/// type are filled in from the argument struct's field by `tool_contracts!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    /// The JSON key (the struct field's name).
    pub name: &'static str,
    /// The JSON type (from the field's Rust type).
    pub ty: ArgType,
    /// The call is rejected without it.
    pub required: bool,
    /// The value a call that leaves the argument out gets; `None`: no published default
    /// (the field is an `Option`, or the argument is required).
    pub default: Option<ArgDefault>,
    /// Smallest accepted integer (published and checked by the shim).
    pub minimum: Option<i64>,
    /// Largest integer (published only: the tool answers a larger one itself, spec 3.1).
    pub maximum: Option<i64>,
    /// Longest string (published only, like `maximum`).
    pub max_length: Option<u64>,
    /// Only the CLI sends it (`redctx head`, `redctx grep --max-files`, …): left out of
    /// the published schema, so an agent that sends it is told it is unexpected.
    pub cli_only: bool,
}

/// An argument with no default, bounds or requirement yet.
pub const fn arg() -> ArgSpec {
    ArgSpec {
        name: "",
        ty: ArgType::String,
        required: false,
        default: None,
        minimum: None,
        maximum: None,
        max_length: None,
        cli_only: false,
    }
}

impl ArgSpec {
    /// The call must carry it.
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// Published default; also what the typed struct holds when it is left out.
    pub const fn default(mut self, value: ArgDefault) -> Self {
        self.default = Some(value);
        self
    }
    /// Smallest accepted integer.
    pub const fn min(mut self, n: i64) -> Self {
        self.minimum = Some(n);
        self
    }
    /// Largest integer (published only).
    pub const fn max(mut self, n: i64) -> Self {
        self.maximum = Some(n);
        self
    }
    /// Longest string (published only).
    pub const fn max_length(mut self, n: u64) -> Self {
        self.max_length = Some(n);
        self
    }
    /// Sent by the CLI only.
    pub const fn cli_only(mut self) -> Self {
        self.cli_only = true;
        self
    }
    /// The same spec under `name` with type `ty` (used by `tool_contracts!`).
    pub const fn field(mut self, name: &'static str, ty: ArgType) -> Self {
        self.name = name;
        self.ty = ty;
        self
    }
}

/// One tool's contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    /// Name in `tools/list` and `tools/call`.
    pub name: &'static str,
    /// Human title in `tools/list`.
    pub title: &'static str,
    /// Every argument, in schema order; CLI-only ones last.
    pub args: &'static [ArgSpec],
}

impl ToolSpec {
    /// The arguments an agent may send, in schema order.
    pub fn published(&self) -> impl Iterator<Item = &'static ArgSpec> + use<> {
        self.args.iter().filter(|a| !a.cli_only)
    }

    /// The tool writes (annotated destructive, listed only when writes are enabled,
    /// never retried after a lost connection).
    pub fn writes(&self) -> bool {
        self.name == SUBMIT_DOC
    }

    /// The argument called `name` (CLI-only ones included).
    pub fn arg(&self, name: &str) -> Option<&'static ArgSpec> {
        self.args.iter().find(|a| a.name == name)
    }
}

/// The contract of the tool called `name`.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}

/// A Rust type an argument field may have: its JSON type, and how a JSON value (or its
/// absence) becomes a value of it.
pub trait ArgValue: Sized {
    /// The JSON type the schema publishes.
    const TYPE: ArgType;
    /// The field's value for `value` (`None`: left out) under the argument's `default`.
    /// A value of the wrong JSON type counts as left out. Integers take only what
    /// serde_json reads as `u64` (`i64` for an `i64` field): no booleans, fractions
    /// (`1.0` included), strings or, for counts, negative numbers. Without a published
    /// default, a field falls back to its type's zero (`""`, `false`, `[]`, `0`, `None`).
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self;
}

impl ArgValue for String {
    const TYPE: ArgType = ArgType::String;
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self {
        match (value.and_then(Value::as_str), default) {
            (Some(s), _) => s.to_owned(),
            (None, Some(ArgDefault::String(d))) => d.to_owned(),
            (None, _) => String::new(),
        }
    }
}

impl ArgValue for bool {
    const TYPE: ArgType = ArgType::Boolean;
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self {
        match (value.and_then(Value::as_bool), default) {
            (Some(b), _) => b,
            (None, Some(ArgDefault::Boolean(d))) => d,
            (None, _) => false,
        }
    }
}

impl ArgValue for u64 {
    const TYPE: ArgType = ArgType::Integer;
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self {
        match (value.and_then(Value::as_u64), default) {
            (Some(n), _) => n,
            (None, Some(ArgDefault::Integer(d))) => u64::try_from(d).unwrap_or(0),
            (None, _) => 0,
        }
    }
}

/// A signed count: the tool itself answers a negative or too large value (`redctx_retrieve`'s
/// bounds, spec 3.2).
impl ArgValue for i64 {
    const TYPE: ArgType = ArgType::Integer;
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self {
        match (value.and_then(Value::as_i64), default) {
            (Some(n), _) => n,
            (None, Some(ArgDefault::Integer(d))) => d,
            (None, _) => 0,
        }
    }
}

/// An optional count: `None` when left out or not a `u64`.
impl ArgValue for Option<u64> {
    const TYPE: ArgType = ArgType::Integer;
    fn from_json(value: Option<&Value>, _default: Option<ArgDefault>) -> Self {
        value.and_then(Value::as_u64)
    }
}

/// A list of strings: the strings of an array (other items dropped), else empty.
impl ArgValue for Vec<String> {
    const TYPE: ArgType = ArgType::StringArray;
    fn from_json(value: Option<&Value>, _default: Option<ArgDefault>) -> Self {
        value
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `redctx_audit` `format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditFormat {
    /// One line per check.
    #[default]
    Text,
    /// `{"checks": [...]}`.
    Json,
}

/// `"json"` is JSON; anything else is the text report.
impl ArgValue for AuditFormat {
    const TYPE: ArgType = ArgType::StringOneOf(&["text", "json"]);
    fn from_json(value: Option<&Value>, _default: Option<ArgDefault>) -> Self {
        match value.and_then(Value::as_str) {
            Some("json") => AuditFormat::Json,
            _ => AuditFormat::Text,
        }
    }
}

/// `state` of the GitHub list and search tools: published as an enum, kept as sent (the
/// tool answers a value outside it: the CLI and other clients skip the shim's check).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct GithubState(pub String);

impl ArgValue for GithubState {
    const TYPE: ArgType = ArgType::StringOneOf(&["open", "closed", "all"]);
    fn from_json(value: Option<&Value>, default: Option<ArgDefault>) -> Self {
        GithubState(String::from_json(value, default))
    }
}

impl std::ops::Deref for GithubState {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Declares each tool's argument struct and its [`ToolSpec`], and [`SPECS`] in
/// `tools/list` order. One entry per tool:
///
/// ```text
/// /// doc
/// StructName for NAME_CONSTANT, "Title" {
///     /// doc
///     field: RustType = arg().default(..).min(..),
/// }
/// ```
macro_rules! tool_contracts {
    ($(
        $(#[$meta:meta])*
        $Args:ident for $name:ident, $title:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $spec:expr ),* $(,)?
        }
    )*) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Debug, PartialEq, Eq, Serialize)]
            pub struct $Args {
                $( $(#[$fmeta])* pub $field: $ty, )*
            }

            impl $Args {
                /// The contract: name, title, arguments.
                pub const SPEC: ToolSpec = ToolSpec {
                    name: $name,
                    title: $title,
                    args: &[ $( $spec.field(stringify!($field), <$ty as ArgValue>::TYPE) ),* ],
                };

                /// Reads a JSON arguments object leniently (see [`ArgValue::from_json`]);
                /// anything but an object reads as `{}`.
                #[allow(unused_variables)]
                pub fn from_json(value: &Value) -> Self {
                    let empty = Map::new();
                    let map = value.as_object().unwrap_or(&empty);
                    $Args {
                        $( $field: <$ty as ArgValue>::from_json(
                            map.get(stringify!($field)),
                            Self::SPEC.arg(stringify!($field)).and_then(|a| a.default),
                        ), )*
                    }
                }
            }

            /// Every argument left out.
            impl Default for $Args {
                fn default() -> Self {
                    Self::from_json(&Value::Object(Map::new()))
                }
            }

            /// Lenient, like `from_json`: it never fails on a JSON value (a
            /// self-describing format is needed).
            impl<'de> Deserialize<'de> for $Args {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    Ok(Self::from_json(&Value::deserialize(d)?))
                }
            }
        )*

        /// Every tool's contract, in `tools/list` order (that of [`ALL`]).
        pub const SPECS: [&ToolSpec; ALL.len()] = [ $( &$Args::SPEC ),* ];
    };
}

use ArgDefault::{Boolean, EmptyArray, Integer};

tool_contracts! {
    /// `redctx_tree` arguments.
    TreeArgs for TREE, "Tree" {
        /// Where to start.
        path: String = arg().default(ArgDefault::String(".")),
        /// Levels below `path`.
        max_depth: u64 = arg().default(Integer(defaults::TREE_MAX_DEPTH as i64)).min(0),
    }

    /// `redctx_list` arguments.
    ListArgs for LIST, "List" {
        /// Directory to list.
        path: String = arg().default(ArgDefault::String(".")),
        /// The whole subtree, `path` first.
        recursive: bool = arg().default(Boolean(false)),
        /// Levels below `path` (with `recursive`); unlimited when left out.
        max_depth: Option<u64> = arg().min(0),
    }

    /// `redctx_read` arguments.
    ReadArgs for READ, "Read" {
        /// The file.
        path: String = arg().required(),
        /// First line, 1-based.
        start_line: Option<u64> = arg().min(1),
        /// Last line, 1-based, inclusive.
        end_line: Option<u64> = arg().min(1),
        /// Most characters returned.
        max_chars: u64 = arg().default(Integer(defaults::READ_MAX_CHARS as i64)).min(1),
        /// Number each line.
        line_numbers: bool = arg().default(Boolean(false)),
        /// `redctx head -n N`: the first N lines (wins over `tail` and the range).
        head: Option<u64> = arg().cli_only(),
        /// `redctx tail -n N`: the last N lines (wins over the range).
        tail: Option<u64> = arg().cli_only(),
    }

    /// `redctx_search` arguments.
    SearchArgs for SEARCH, "Search" {
        /// Substring or regex.
        query: String = arg().required(),
        /// Files or directories in scope.
        paths: Vec<String> = arg().default(EmptyArray),
        /// Case-insensitive matching.
        ignore_case: bool = arg().default(Boolean(defaults::SEARCH_IGNORE_CASE)),
        /// `query` is a regex.
        regex: bool = arg().default(Boolean(false)),
        /// Lines around each match.
        context: u64 = arg().default(Integer(defaults::SEARCH_CONTEXT as i64)).min(0),
        /// Globs a file must match.
        glob: Vec<String> = arg().default(EmptyArray),
        /// Most output lines.
        max_results: u64 = arg().default(Integer(defaults::SEARCH_MAX_RESULTS as i64)).min(1),
        /// `redctx grep --max-files`: most files read.
        max_files: Option<u64> = arg().cli_only(),
    }

    /// `redctx_retrieve` arguments.
    RetrieveArgs for RETRIEVE, "Retrieve" {
        /// Words to rank passages by.
        query: String = arg().required().max_length(2000),
        /// Files or directories in scope.
        paths: Vec<String> = arg().default(EmptyArray),
        /// Globs a file must match.
        glob: Vec<String> = arg().default(EmptyArray),
        /// Most passages (the tool answers values outside 1..=50).
        max_results: i64 = arg().default(Integer(defaults::RETRIEVE_MAX_RESULTS)).min(1).max(50),
        /// Character budget (the tool answers values outside 256..=100000).
        max_chars: i64 = arg().default(Integer(defaults::RETRIEVE_MAX_CHARS)).min(256).max(100_000),
        /// `redctx retrieve --max-files`: most files read.
        max_files: Option<u64> = arg().cli_only(),
    }

    /// `redctx_stat` arguments.
    StatArgs for STAT, "Stat" {
        /// File or directory.
        path: String = arg().required(),
    }

    /// `redctx_bundle` arguments.
    BundleArgs for BUNDLE, "Bundle" {
        /// Files or directories in scope.
        paths: Vec<String> = arg().default(EmptyArray),
        /// Globs a file must match.
        glob: Vec<String> = arg().default(EmptyArray),
        /// Most files.
        max_files: u64 = arg().default(Integer(defaults::BUNDLE_MAX_FILES as i64)).min(1),
        /// Most characters per file.
        max_chars_per_file: u64 =
            arg().default(Integer(defaults::BUNDLE_MAX_CHARS_PER_FILE as i64)).min(1),
        /// No file is started past this many characters.
        max_total_chars: u64 =
            arg().default(Integer(defaults::BUNDLE_MAX_TOTAL_CHARS as i64)).min(1),
    }

    /// `redctx_submit_doc` arguments.
    SubmitDocArgs for SUBMIT_DOC, "Submit Doc" {
        /// File path under the write sub-directory; placeholders in it are restored.
        target_path: String = arg().required(),
        /// Document text with placeholders and path references to restore.
        text: String = arg().required(),
        /// Replace an existing file.
        overwrite: bool = arg().default(Boolean(false)),
    }

    /// `redctx_doctor` takes no arguments.
    DoctorArgs for DOCTOR, "Doctor" {}

    /// `redctx_audit` arguments.
    AuditArgs for AUDIT, "Audit" {
        /// Text or JSON report.
        format: AuditFormat = arg().default(ArgDefault::String("text")),
    }

    /// `redctx_refresh_index` takes no arguments.
    RefreshIndexArgs for REFRESH_INDEX, "Refresh Index" {}

    /// `redctx_github_repos` takes no arguments.
    GithubReposArgs for GITHUB_REPOS, "Github Repos" {}

    /// `redctx_github_list_issues` arguments. Counts are signed: the tool answers a
    /// value below its minimum with the reference CLI's message (`--limit must be …`).
    GithubListIssuesArgs for GITHUB_LIST_ISSUES, "Github List Issues" {
        /// Repo alias from the policy.
        repo_alias: String = arg().default(ArgDefault::String(defaults::GITHUB_REPO_ALIAS)),
        /// `open`, `closed` or `all`.
        state: GithubState = arg().default(ArgDefault::String(defaults::GITHUB_STATE)),
        /// Labels an issue must all carry.
        labels: Vec<String> = arg().default(EmptyArray),
        /// Most issues.
        limit: i64 = arg().default(Integer(defaults::GITHUB_LIMIT)).min(1),
    }

    /// `redctx_github_read_issue` arguments.
    GithubReadIssueArgs for GITHUB_READ_ISSUE, "Github Read Issue" {
        /// Repo alias from the policy.
        repo_alias: String = arg().default(ArgDefault::String(defaults::GITHUB_REPO_ALIAS)),
        /// Issue number.
        number: i64 = arg().required().min(1),
        /// Also fetch comments.
        comments: bool = arg().default(Boolean(false)),
        /// Most comments.
        max_comments: i64 = arg().default(Integer(defaults::GITHUB_MAX_COMMENTS)).min(0),
        /// Most redacted characters of the body and of each comment.
        max_body_chars: i64 = arg().default(Integer(defaults::GITHUB_MAX_BODY_CHARS)).min(1),
    }

    /// `redctx_github_search_issues` arguments.
    GithubSearchIssuesArgs for GITHUB_SEARCH_ISSUES, "Github Search Issues" {
        /// Repo alias from the policy.
        repo_alias: String = arg().default(ArgDefault::String(defaults::GITHUB_REPO_ALIAS)),
        /// GitHub issue-search terms, sent upstream as typed.
        query: String = arg().required(),
        /// `open`, `closed` or `all`.
        state: GithubState = arg().default(ArgDefault::String(defaults::GITHUB_STATE)),
        /// Most issues (one request returns at most 100).
        limit: i64 = arg().default(Integer(defaults::GITHUB_LIMIT)).min(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_follow_the_tool_list() {
        let names: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
        assert_eq!(names, ALL);
        for s in SPECS {
            assert_eq!(spec(s.name), Some(s));
            let published = s.published().count();
            assert!(
                s.args[published..].iter().all(|a| a.cli_only),
                "{}: CLI-only arguments come last",
                s.name
            );
        }
        assert_eq!(spec("redctx_nope"), None);
    }

    /// A left-out argument reads as the published default, and a default's JSON type is
    /// the argument's: the table and the structs cannot disagree.
    #[test]
    fn published_defaults_are_what_the_structs_hold() {
        fn check<T: Serialize + Default>(spec: &ToolSpec) {
            let value = serde_json::to_value(T::default()).unwrap();
            let fields: Vec<&str> = value
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let names: Vec<&str> = spec.args.iter().map(|a| a.name).collect();
            assert_eq!(fields, names, "{}", spec.name);
            for a in spec.args {
                let held = &value[a.name];
                match (a.default, a.ty) {
                    (Some(ArgDefault::String(s)), ArgType::String | ArgType::StringOneOf(_)) => {
                        assert_eq!(held, s, "{}.{}", spec.name, a.name)
                    }
                    (Some(ArgDefault::Integer(n)), ArgType::Integer) => {
                        assert_eq!(held, &json!(n), "{}.{}", spec.name, a.name)
                    }
                    (Some(ArgDefault::Boolean(b)), ArgType::Boolean) => {
                        assert_eq!(held, b, "{}.{}", spec.name, a.name)
                    }
                    (Some(ArgDefault::EmptyArray), ArgType::StringArray) => {
                        assert_eq!(held, &json!([]), "{}.{}", spec.name, a.name)
                    }
                    (None, _) => assert!(
                        a.required || held.is_null() || held == &json!([]),
                        "{}.{}: no default but holds {held}",
                        spec.name,
                        a.name
                    ),
                    (d, t) => panic!("{}.{}: default {d:?} for type {t:?}", spec.name, a.name),
                }
                if let ArgType::StringOneOf(values) = a.ty {
                    assert!(values.contains(&held.as_str().unwrap()));
                }
            }
        }
        check::<TreeArgs>(&TreeArgs::SPEC);
        check::<ListArgs>(&ListArgs::SPEC);
        check::<ReadArgs>(&ReadArgs::SPEC);
        check::<SearchArgs>(&SearchArgs::SPEC);
        check::<RetrieveArgs>(&RetrieveArgs::SPEC);
        check::<StatArgs>(&StatArgs::SPEC);
        check::<BundleArgs>(&BundleArgs::SPEC);
        check::<SubmitDocArgs>(&SubmitDocArgs::SPEC);
        check::<DoctorArgs>(&DoctorArgs::SPEC);
        check::<AuditArgs>(&AuditArgs::SPEC);
        check::<RefreshIndexArgs>(&RefreshIndexArgs::SPEC);
        check::<GithubReposArgs>(&GithubReposArgs::SPEC);
        check::<GithubListIssuesArgs>(&GithubListIssuesArgs::SPEC);
        check::<GithubReadIssueArgs>(&GithubReadIssueArgs::SPEC);
        check::<GithubSearchIssuesArgs>(&GithubSearchIssuesArgs::SPEC);
    }

    #[test]
    fn wrong_types_read_as_left_out() {
        let a = ReadArgs::from_json(&json!({
            "path": 5, "start_line": -1, "end_line": 2.0, "max_chars": true,
            "line_numbers": "yes", "head": "3", "tail": 4
        }));
        assert_eq!(
            a,
            ReadArgs {
                path: String::new(),
                start_line: None,
                end_line: None,
                max_chars: defaults::READ_MAX_CHARS,
                line_numbers: false,
                head: None,
                tail: Some(4),
            }
        );
        let r = RetrieveArgs::from_json(&json!({"max_results": -3, "max_chars": u64::MAX}));
        assert_eq!(
            (r.max_results, r.max_chars),
            (-3, defaults::RETRIEVE_MAX_CHARS)
        );
        let s = SearchArgs::from_json(&json!({"paths": ["a", 1, null, "b"], "glob": "*.md"}));
        assert_eq!((s.paths, s.glob), (vec!["a".into(), "b".into()], vec![]));
        assert_eq!(
            AuditArgs::from_json(&json!({"format": "json"})).format,
            AuditFormat::Json
        );
        assert_eq!(
            AuditArgs::from_json(&json!({"format": "xml"})).format,
            AuditFormat::Text
        );
        assert_eq!(TreeArgs::from_json(&json!([1, 2])), TreeArgs::default());
        let t: TreeArgs = serde_json::from_str(r#"{"max_depth": 7, "zzz": 1}"#).unwrap();
        assert_eq!((t.path.as_str(), t.max_depth), (".", 7));
    }
}
