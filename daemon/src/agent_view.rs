//! The view of a served root that an agent's tool calls get.
//!
//! An agent knows the root only through redacted output: `@p_` ids and redacted paths.
//! A path it types is therefore either one it saw (nothing in it was redacted) or a guess
//! at a raw name it was never shown. Resolving guesses against the disk would make every
//! path argument a yes/no question about raw names: `clients/Acme Corp` existing or not
//! tells the agent whether Acme is a client, even though every answer is redacted. So a
//! path argument whose redaction differs from itself is answered as a path that does not
//! exist, before the disk is asked anything, whether or not a file has that name. Files
//! with redacted names stay reachable by their ids, as the listings show them.
//!
//! The operator's CLI (`Caller::Operator`) gets the served root itself: its user may name
//! any file as it is on disk, and its output is redacted all the same.

use crate::engine::Engine;
use crate::fs::{self, PathInput};
use crate::root::ServedRoot;
use crate::search_index::plan::GramPlan;
use crate::view::{
    Entry, FileScreen, Limits, PassageIndex, RedactedDoc, RedactedPath, RootView, TreeRow,
    ViewError,
};
use crate::watch::Synced;
use std::sync::Arc;

/// A [`ServedRoot`] as an agent may address it: ids as usual, paths only where they hold
/// nothing that would be redacted (see the module doc). Everything else is the root's.
pub struct AgentView<'a>(pub &'a ServedRoot);

impl AgentView<'_> {
    /// Refuses a path argument that names something the agent was never shown.
    fn check_named(&self, input: &str) -> Result<(), ViewError> {
        let rel = match fs::parse_input(input, self.0.root())? {
            PathInput::Id(_) => return Ok(()),
            PathInput::Rel(rel) => rel,
        };
        let shown = self
            .0
            .engine()
            .redact_path(&rel)
            .map_err(|_| ViewError::Internal)?;
        if shown.text == rel {
            Ok(())
        } else {
            Err(ViewError::Missing)
        }
    }
}

impl RootView for AgentView<'_> {
    fn engine(&self) -> &Engine {
        self.0.engine()
    }

    fn limits(&self) -> &Limits {
        self.0.limits()
    }

    fn resolve(&self, input: &str) -> Result<Entry, ViewError> {
        self.check_named(input)?;
        self.0.resolve(input)
    }

    fn children(&self, dir: &Entry) -> Result<Vec<Entry>, ViewError> {
        self.0.children(dir)
    }

    fn watch_sync(&self) -> Option<Synced> {
        self.0.watch_sync()
    }

    fn synced_children(&self, dir: &Entry, proof: &Synced) -> Result<Arc<[Entry]>, ViewError> {
        self.0.synced_children(dir, proof)
    }

    fn tree_children(&self, dir: &Entry) -> Result<Vec<TreeRow>, ViewError> {
        self.0.tree_children(dir)
    }

    fn is_text(&self, file: &Entry) -> bool {
        self.0.is_text(file)
    }

    fn content(&self, file: &Entry, preserve_line_count: bool) -> Result<RedactedDoc, ViewError> {
        self.0.content(file, preserve_line_count)
    }

    fn stat_line_count(&self, file: &Entry) -> Result<u64, ViewError> {
        self.0.stat_line_count(file)
    }

    fn path(&self, rel: &str) -> RedactedPath {
        self.0.path(rel)
    }

    fn name(&self, name: &str) -> RedactedPath {
        self.0.name(name)
    }

    fn search_screen(&self, plan: &GramPlan) -> Option<Box<dyn FileScreen + '_>> {
        self.0.search_screen(plan)
    }

    fn passage_index(&self, terms: &[String]) -> Option<Box<dyn PassageIndex + '_>> {
        self.0.passage_index(terms)
    }
}
