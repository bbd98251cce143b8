//! An in-memory [`RootView`] for renderer tests: a tree of files and directories, the
//! real [`Engine`] for ids and (default) redaction, and optional fixed "redactions" so
//! formats and receipt counts can be checked exactly without the pipeline.

use crate::engine::placeholder::casefold;
use crate::engine::{Counts, Engine, Policy, RedactOptions};
use crate::view::{Entry, EntryKind, Limits, RedactedDoc, RedactedPath, RootView, ViewError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

#[derive(Clone)]
struct Node {
    kind: EntryKind,
    raw: Vec<u8>,
    /// Served as text (extension or sniff).
    text: bool,
    /// Fixed redacted content: (line-preserving, plain, counts).
    redacted: Option<(String, String, Counts)>,
}

pub(crate) struct FakeView {
    engine: Engine,
    pub limits: Limits,
    nodes: BTreeMap<String, Node>,
    excluded: HashSet<String>,
    paths: HashMap<String, (String, Counts)>,
    names: HashMap<String, (String, Counts)>,
    /// Reads of a file that fail before content is served: (error, reads left to fail).
    failing: Mutex<HashMap<String, (ViewError, u32)>>,
}

impl FakeView {
    pub fn new(salt: &str) -> FakeView {
        Self::with_policy(Policy {
            salt: salt.into(),
            ..Policy::default()
        })
    }

    pub fn with_policy(policy: Policy) -> FakeView {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            ".".to_string(),
            Node {
                kind: EntryKind::Dir,
                raw: Vec::new(),
                text: false,
                redacted: None,
            },
        );
        FakeView {
            engine: Engine::new(Arc::new(policy)).expect("engine"),
            limits: Limits::default(),
            nodes,
            excluded: HashSet::new(),
            paths: HashMap::new(),
            names: HashMap::new(),
            failing: Mutex::default(),
        }
    }

    fn add_parents(&mut self, rel: &str) {
        let mut prefix = String::new();
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            self.nodes.entry(prefix.clone()).or_insert(Node {
                kind: EntryKind::Dir,
                raw: Vec::new(),
                text: false,
                redacted: None,
            });
        }
    }

    /// A text file.
    pub fn file(mut self, rel: &str, content: &str) -> Self {
        self.add_parents(rel);
        self.nodes.insert(
            rel.into(),
            Node {
                kind: EntryKind::File,
                raw: content.as_bytes().to_vec(),
                text: true,
                redacted: None,
            },
        );
        self
    }

    /// A file the view does not serve as text.
    pub fn binary(mut self, rel: &str, raw: &[u8]) -> Self {
        self.add_parents(rel);
        self.nodes.insert(
            rel.into(),
            Node {
                kind: EntryKind::File,
                raw: raw.to_vec(),
                text: false,
                redacted: None,
            },
        );
        self
    }

    /// A file listed as text (by extension) whose content turns out binary on read.
    pub fn text_ext_binary(mut self, rel: &str, raw: &[u8]) -> Self {
        self.add_parents(rel);
        self.nodes.insert(
            rel.into(),
            Node {
                kind: EntryKind::File,
                raw: raw.to_vec(),
                text: true,
                redacted: None,
            },
        );
        self
    }

    pub fn dir(mut self, rel: &str) -> Self {
        self.add_parents(&format!("{rel}/x"));
        self
    }

    /// A text file whose redacted forms are fixed.
    pub fn redacted_file(
        mut self,
        rel: &str,
        raw: &str,
        preserving: &str,
        plain: &str,
        counts: Counts,
    ) -> Self {
        self = self.file(rel, raw);
        if let Some(node) = self.nodes.get_mut(rel) {
            node.redacted = Some((preserving.into(), plain.into(), counts));
        }
        self
    }

    pub fn redacted_path(mut self, rel: &str, text: &str, counts: Counts) -> Self {
        self.paths.insert(rel.into(), (text.into(), counts));
        self
    }

    pub fn redacted_name(mut self, name: &str, text: &str, counts: Counts) -> Self {
        self.names.insert(name.into(), (text.into(), counts));
        self
    }

    /// The next `times` content reads of `rel` fail with `error` (a file changing or
    /// vanishing under a scan); later reads succeed.
    pub fn fail_reads(self, rel: &str, error: ViewError, times: u32) -> Self {
        self.failing
            .lock()
            .unwrap()
            .insert(rel.to_owned(), (error, times));
        self
    }

    /// Content reads of `rel` so far that failed on purpose are no longer pending.
    pub fn failures_left(&self, rel: &str) -> u32 {
        self.failing.lock().unwrap().get(rel).map_or(0, |(_, n)| *n)
    }

    pub fn exclude(mut self, rel: &str) -> Self {
        self.excluded.insert(rel.into());
        self
    }

    fn is_excluded(&self, rel: &str) -> bool {
        self.excluded
            .iter()
            .any(|ex| rel == ex || rel.starts_with(&format!("{ex}/")))
    }

    fn entry(&self, rel: &str) -> Option<Entry> {
        self.nodes.get(rel).map(|node| Entry {
            rel: rel.into(),
            kind: node.kind,
            size: if node.kind == EntryKind::Dir {
                4096
            } else {
                node.raw.len() as u64
            },
            stat: None,
            text: None,
        })
    }

    fn node(&self, entry: &Entry) -> Result<&Node, ViewError> {
        self.nodes.get(&*entry.rel).ok_or(ViewError::Missing)
    }
}

impl RootView for FakeView {
    fn search_screen(
        &self,
        _plan: &crate::search_index::plan::GramPlan,
    ) -> Option<Box<dyn crate::view::FileScreen + '_>> {
        None
    }

    fn passage_index(&self, _terms: &[String]) -> Option<Box<dyn crate::view::PassageIndex + '_>> {
        None
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn limits(&self) -> &Limits {
        &self.limits
    }

    fn resolve(&self, input: &str) -> Result<Entry, ViewError> {
        let id = input
            .strip_prefix("redctx://")
            .or_else(|| input.strip_prefix('@'))
            .unwrap_or(input);
        if id.starts_with("p_") && id.len() == 14 {
            let wanted = format!("@{id}");
            return self
                .nodes
                .keys()
                .find(|rel| self.engine.path_id(rel) == wanted)
                .filter(|rel| !self.is_excluded(rel))
                .and_then(|rel| self.entry(rel))
                .ok_or(ViewError::UnknownId(wanted));
        }
        if input.starts_with('/') {
            return Err(ViewError::OutsideRoot);
        }
        let parts: Vec<&str> = input
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") {
            return Err(ViewError::OutsideRoot);
        }
        let rel = if parts.is_empty() {
            ".".to_string()
        } else {
            parts.join("/")
        };
        let entry = self.entry(&rel).ok_or(ViewError::Missing)?;
        if self.is_excluded(&rel) {
            return Err(ViewError::Excluded);
        }
        Ok(entry)
    }

    fn watch_sync(&self) -> Option<crate::watch::Synced> {
        None
    }

    fn synced_children(
        &self,
        dir: &Entry,
        _proof: &crate::watch::Synced,
    ) -> Result<Arc<[Entry]>, ViewError> {
        self.children(dir).map(Arc::from)
    }

    fn children(&self, dir: &Entry) -> Result<Vec<Entry>, ViewError> {
        if dir.kind != EntryKind::Dir {
            return Err(ViewError::NotADirectory);
        }
        let prefix = if &*dir.rel == "." {
            String::new()
        } else {
            format!("{}/", dir.rel)
        };
        let mut children: Vec<Entry> = self
            .nodes
            .keys()
            .filter(|rel| {
                rel.as_str() != "."
                    && rel.starts_with(&prefix)
                    && !rel[prefix.len()..].contains('/')
            })
            .filter(|rel| !self.is_excluded(rel))
            .filter_map(|rel| self.entry(rel))
            .collect();
        children.sort_by_key(|e| (e.kind == EntryKind::File, casefold(e.name())));
        Ok(children)
    }

    fn is_text(&self, file: &Entry) -> bool {
        self.node(file)
            .map(|n| n.kind == EntryKind::File && n.text)
            .unwrap_or(false)
    }

    fn content(&self, file: &Entry, preserve_line_count: bool) -> Result<RedactedDoc, ViewError> {
        if let Some((error, left)) = self.failing.lock().unwrap().get_mut(&*file.rel)
            && *left > 0
        {
            *left -= 1;
            return Err(error.clone());
        }
        let node = self.node(file)?;
        if let Some((preserving, plain, counts)) = &node.redacted {
            let text = if preserve_line_count {
                preserving
            } else {
                plain
            };
            return Ok(RedactedDoc {
                text: text.as_str().into(),
                counts: counts.clone(),
            });
        }
        if !node.text || node.raw.contains(&0) {
            return Err(ViewError::NotText);
        }
        let raw = String::from_utf8_lossy(&node.raw);
        let redacted = self
            .engine
            .redact(
                &raw,
                RedactOptions {
                    preserve_line_count,
                    prose: false,
                    path: "",
                },
            )
            .map_err(|_| ViewError::Internal)?;
        Ok(RedactedDoc {
            text: redacted.text.into(),
            counts: redacted.counts,
        })
    }

    fn stat_line_count(&self, file: &Entry) -> Result<u64, ViewError> {
        let raw = &self.node(file)?.raw;
        let newlines = raw.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(newlines + u64::from(!raw.is_empty() && !raw.ends_with(b"\n")))
    }

    fn path(&self, rel: &str) -> RedactedPath {
        let (text, counts) = self.paths.get(rel).cloned().unwrap_or_else(|| {
            let redacted = self.engine.redact_path(rel).expect("path redaction");
            (redacted.text, redacted.counts)
        });
        RedactedPath {
            id: self.engine.path_id(rel).into(),
            text: text.into(),
            counts,
        }
    }

    fn name(&self, name: &str) -> RedactedPath {
        let (text, counts) = self.names.get(name).cloned().unwrap_or_else(|| {
            let redacted = self.engine.redact_path(name).expect("name redaction");
            (redacted.text, redacted.counts)
        });
        RedactedPath {
            id: Arc::from(""),
            text: text.into(),
            counts,
        }
    }
}
