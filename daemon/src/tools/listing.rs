//! `list`, `tree` and `stat`: metadata answers that read no file content (except the
//! line count of `stat`).

use super::walk::{Budget, walk};
use super::{ToolError, ToolOutput, format_entry};
use crate::cancel::Stop;
use crate::engine::Counts;
use crate::view::{EntryKind, RootView, TreeRow};

/// Arguments of `redctx_list` / `ls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListArgs {
    /// Path or id; default `.`.
    pub path: String,
    /// Walk the subtree (the start first) instead of listing children.
    pub recursive: bool,
    /// Only with `recursive`: 0 lists the start alone; `None` is unlimited.
    pub max_depth: Option<u32>,
}

impl Default for ListArgs {
    fn default() -> Self {
        ListArgs {
            path: ".".into(),
            recursive: false,
            max_depth: None,
        }
    }
}

/// Arguments of `redctx_tree` / `tree`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeArgs {
    /// Path or id; default `.`.
    pub path: String,
    /// Default 3; `None` is unlimited (CLI only).
    pub max_depth: Option<u32>,
}

impl Default for TreeArgs {
    fn default() -> Self {
        TreeArgs {
            path: ".".into(),
            max_depth: Some(3),
        }
    }
}

/// `list`: one `<ref>\t<kind>\t<size>\t<rpath>` line per entry (spec 3.3). Not
/// recursive: the children of a directory (each charged to the traversal budget), or the
/// file itself. Recursive: the walk from the start itself, honouring `max_depth`.
/// Nothing to list answers `OK\n`. `stop` ends the walk (every 1,024 entries).
pub fn list(view: &dyn RootView, args: &ListArgs, stop: &Stop) -> ToolOutput {
    let mut counts = Counts::default();
    let mut out = String::new();
    let result = (|| -> Result<(), ToolError> {
        let start = view.resolve(&args.path)?;
        let mut budget = Budget::from_limits(view.limits()).stopping(stop);
        if args.recursive {
            for item in walk(view, start, args.max_depth, true, &mut budget) {
                let (entry, _) = item?;
                format_entry(view, &entry, &mut counts, &mut out);
            }
        } else if start.kind == EntryKind::File {
            format_entry(view, &start, &mut counts, &mut out);
        } else {
            let children = view.children(&start)?;
            for _ in &children {
                budget.consume_entry()?;
            }
            for child in &children {
                format_entry(view, child, &mut counts, &mut out);
            }
        }
        Ok(())
    })();
    match result {
        Ok(()) => ToolOutput::ok(out, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

/// `tree`: a file start prints its `list` line (reference quirk); a directory prints the
/// pre-order walk to `max_depth`, two spaces per level, `<ref> <name>` with `/` after
/// directories. The start is always named `.`; other names are the last path component
/// redacted alone (`RootView::name`), so their counts are those of the names.
///
/// The walk is [`walk`]'s (the start costs one entry, each child of an expanded
/// directory one more, charged when the directory is expanded; counts are those of the
/// lines printed before a failure), over `RootView::tree_children`, whose rows carry the
/// ids and names: a depth-3 tree of a monorepo prints some ten thousand lines.
pub fn tree(view: &dyn RootView, args: &TreeArgs, stop: &Stop) -> ToolOutput {
    let mut counts = Counts::default();
    let mut out = String::new();
    let result = (|| -> Result<(), ToolError> {
        let start = view.resolve(&args.path)?;
        if start.kind == EntryKind::File {
            format_entry(view, &start, &mut counts, &mut out);
            return Ok(());
        }
        let mut budget = Budget::from_limits(view.limits()).stopping(stop);
        budget.consume_entry()?;
        let name = view.name(".");
        counts.merge(&name.counts);
        out.push_str(&view.engine().path_id(&start.rel));
        out.push(' ');
        out.push_str(&name.text);
        out.push_str("/\n");
        let expands = |depth: u32| args.max_depth.is_none_or(|max| depth < max);
        let mut stack: Vec<(std::vec::IntoIter<TreeRow>, u32)> = Vec::new();
        let mut expand = expands(0).then_some((start, 0));
        loop {
            if let Some((dir, depth)) = expand.take() {
                let rows = view.tree_children(&dir)?;
                for _ in &rows {
                    budget.consume_entry()?;
                }
                stack.push((rows.into_iter(), depth + 1));
            }
            let Some((rows, depth)) = stack.last_mut() else {
                break;
            };
            let depth = *depth;
            let Some(row) = rows.next() else {
                stack.pop();
                continue;
            };
            counts.merge(&row.name.counts);
            for _ in 0..depth {
                out.push_str("  ");
            }
            row.id.push_to(&mut out);
            out.push(' ');
            out.push_str(&row.name.text);
            if let Some(dir) = row.dir {
                out.push('/');
                if expands(depth) {
                    expand = Some((dir, depth));
                }
            }
            out.push('\n');
        }
        Ok(())
    })();
    match result {
        Ok(()) => ToolOutput::ok(out, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

/// `stat`: `id`, `path`, `type`, `size_bytes`, and `lines` for files the view serves as
/// text (count of `\n`, +1 for an unterminated last line: of the decoded text, or of the
/// raw bytes of a file named like text that is not). Counting lines charges
/// the file to the byte budget, so a text file over the per-file limit fails.
pub fn stat(view: &dyn RootView, path: &str) -> ToolOutput {
    let mut counts = Counts::default();
    let result = (|| -> Result<String, ToolError> {
        let entry = view.resolve(path)?;
        let rpath = view.path(&entry.rel);
        counts.merge(&rpath.counts);
        let is_dir = entry.kind == EntryKind::Dir;
        let mut out = format!(
            "id: {}\npath: {}\ntype: {}\nsize_bytes: {}\n",
            rpath.id,
            rpath.text,
            if is_dir { "directory" } else { "file" },
            entry.size
        );
        // Documents get no `lines`, extracted or not (the reference counts raw bytes'
        // line breaks only for text files).
        let document = matches!(
            crate::fs::ContentKind::of_name(entry.name()),
            crate::fs::ContentKind::Document(_)
        );
        if !is_dir && !document && view.is_text(&entry) {
            Budget::from_limits(view.limits()).consume_file(entry.size)?;
            let lines = view.stat_line_count(&entry)?;
            out.push_str(&format!("lines: {lines}\n"));
        }
        Ok(out)
    })();
    match result {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}
