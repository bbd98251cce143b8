//! The in-memory directory tree of one root: an arena of compact nodes, children kept in
//! the reference's listing order, and an id map for O(1) opaque-id resolution.
//!
//! Memory per entry is one [`Node`] (about 100 bytes), its name, one slot in the id map
//! and one `u32` in its parent's child list; full paths are rebuilt on demand.

use crate::engine::placeholder::casefold;
use crate::fs::StatKey;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// Index of a node in the arena.
pub type NodeId = u32;

/// Sentinel parent of the root and of free slots.
const NO_PARENT: NodeId = NodeId::MAX;

/// The root is always slot 0.
pub const ROOT: NodeId = 0;

pub(crate) mod flags {
    /// The slot holds a live entry.
    pub const ALIVE: u8 = 1;
    /// A directory whose children were read at least once.
    pub const SCANNED: u8 = 2;
    /// The directory's stored stat was old enough, when its children were read, that a
    /// later change is guaranteed to change it (see `racy` in `index`).
    pub const SETTLED: u8 = 4;
    /// `TEXT` below holds the sniff result for the stored stat.
    pub const TEXT_KNOWN: u8 = 8;
    pub const TEXT: u8 = 16;
}

#[derive(Debug)]
pub(crate) struct Node {
    pub parent: NodeId,
    pub name: Box<str>,
    /// Directories only; sorted by [`order`].
    pub children: Vec<NodeId>,
    pub stat: StatKey,
    /// Id key of the node's path (see [`id_key`]), kept so listings need no HMAC.
    pub id: u64,
    pub flags: u8,
}

impl Node {
    pub fn is_dir(&self) -> bool {
        self.stat.is_dir()
    }
}

/// Reference order: directories first, then files, by case-folded name; the raw name
/// breaks ties. ASCII names compare without allocating.
pub(crate) fn order(a_dir: bool, a: &str, b_dir: bool, b: &str) -> Ordering {
    (!a_dir)
        .cmp(&!b_dir)
        .then_with(|| fold_cmp(a, b))
        .then_with(|| a.cmp(b))
}

fn fold_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
    } else {
        casefold(a).cmp(&casefold(b))
    }
}

/// Parses the 12 hex digits of `@p_<12hex>` into the id map's key.
pub fn id_key(id: &str) -> Option<u64> {
    let hex = id.strip_prefix("@p_")?;
    if hex.len() != 12 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The arena.
#[derive(Debug)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    free: Vec<NodeId>,
    ids: HashMap<u64, NodeId>,
    collisions: HashSet<u64>,
    pub files: u64,
    pub dirs: u64,
}

impl Tree {
    /// A tree holding only the root.
    pub fn new(root_stat: StatKey, root_id: u64) -> Tree {
        let root = Node {
            parent: NO_PARENT,
            name: ".".into(),
            children: Vec::new(),
            stat: root_stat,
            id: root_id,
            flags: flags::ALIVE,
        };
        let mut ids = HashMap::new();
        ids.insert(root_id, ROOT);
        Tree {
            nodes: vec![root],
            free: Vec::new(),
            ids,
            collisions: HashSet::new(),
            files: 0,
            dirs: 0,
        }
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id as usize]
    }

    /// Root-relative path of a node (`.` for the root).
    pub fn rel(&self, mut id: NodeId) -> String {
        if id == ROOT {
            return ".".to_owned();
        }
        let mut parts = Vec::new();
        while id != ROOT && id != NO_PARENT {
            let node = self.node(id);
            parts.push(&*node.name);
            id = node.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Child of `dir` named exactly `name`.
    pub fn child(&self, dir: NodeId, name: &str) -> Option<NodeId> {
        let children = &self.node(dir).children;
        for as_dir in [true, false] {
            let found = children.binary_search_by(|&c| {
                let n = self.node(c);
                order(n.is_dir(), &n.name, as_dir, name)
            });
            if let Ok(pos) = found {
                return Some(children[pos]);
            }
        }
        None
    }

    /// Node of a root-relative path, if indexed.
    pub fn find(&self, rel: &str) -> Option<NodeId> {
        if rel == "." {
            return Some(ROOT);
        }
        let mut at = ROOT;
        for part in rel.split('/') {
            if !self.node(at).is_dir() {
                return None;
            }
            at = self.child(at, part)?;
        }
        Some(at)
    }

    /// Node of an opaque id; `Err(())` when two paths share it.
    pub fn by_id(&self, key: u64) -> Result<Option<NodeId>, ()> {
        if self.collisions.contains(&key) {
            return Err(());
        }
        Ok(self.ids.get(&key).copied())
    }

    /// Adds a child (the caller keeps `dir`'s children sorted unless `sorted` is false,
    /// in which case it must call [`Tree::sort_children`] afterwards).
    pub fn add_child(
        &mut self,
        dir: NodeId,
        name: &str,
        stat: StatKey,
        id: u64,
        sorted: bool,
    ) -> NodeId {
        let node = Node {
            parent: dir,
            name: name.into(),
            children: Vec::new(),
            stat,
            id,
            flags: flags::ALIVE,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = node;
                slot
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as NodeId
            }
        };
        if stat.is_dir() {
            self.dirs += 1;
        } else {
            self.files += 1;
        }
        match self.ids.get(&id) {
            Some(&other) if other != slot => {
                self.collisions.insert(id);
            }
            _ => {
                self.ids.insert(id, slot);
            }
        }
        if sorted {
            let pos = {
                let children = &self.node(dir).children;
                let is_dir = stat.is_dir();
                children
                    .binary_search_by(|&c| {
                        let n = self.node(c);
                        order(n.is_dir(), &n.name, is_dir, name)
                    })
                    .unwrap_or_else(|p| p)
            };
            self.node_mut(dir).children.insert(pos, slot);
        } else {
            self.node_mut(dir).children.push(slot);
        }
        slot
    }

    /// Restores reference order of a directory's children.
    pub fn sort_children(&mut self, dir: NodeId) {
        let mut children = std::mem::take(&mut self.node_mut(dir).children);
        children.sort_by_cached_key(|&c| {
            let n = self.node(c);
            crate::fs::reference_order_key(n.is_dir(), &n.name)
        });
        self.node_mut(dir).children = children;
    }

    /// Removes a node and its whole subtree; `id_of` recomputes ids of removed paths.
    pub fn remove(&mut self, id: NodeId, id_of: &dyn Fn(&str) -> u64) {
        if id == ROOT {
            self.clear_children(ROOT, id_of);
            return;
        }
        let parent = self.node(id).parent;
        self.node_mut(parent).children.retain(|&c| c != id);
        let rel = self.rel(id);
        self.free_subtree(id, rel, id_of);
    }

    /// Removes every descendant of `dir`, keeping `dir`.
    pub fn clear_children(&mut self, dir: NodeId, id_of: &dyn Fn(&str) -> u64) {
        let children = std::mem::take(&mut self.node_mut(dir).children);
        let base = self.rel(dir);
        for child in children {
            let rel = if base == "." {
                self.node(child).name.to_string()
            } else {
                format!("{base}/{}", self.node(child).name)
            };
            self.free_subtree(child, rel, id_of);
        }
    }

    fn free_subtree(&mut self, id: NodeId, rel: String, id_of: &dyn Fn(&str) -> u64) {
        let mut stack = vec![(id, rel)];
        while let Some((node_id, rel)) = stack.pop() {
            let node = std::mem::replace(
                self.node_mut(node_id),
                Node {
                    parent: NO_PARENT,
                    name: "".into(),
                    children: Vec::new(),
                    stat: StatKey::default(),
                    id: u64::MAX,
                    flags: 0,
                },
            );
            if node.is_dir() {
                self.dirs -= 1;
            } else {
                self.files -= 1;
            }
            let key = id_of(&rel);
            if self.ids.get(&key) == Some(&node_id) {
                self.ids.remove(&key);
            }
            for child in node.children {
                let child_rel = format!("{rel}/{}", self.node(child).name);
                stack.push((child, child_rel));
            }
            self.free.push(node_id);
        }
    }

    /// Releases spare capacity after a bulk build.
    pub fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// Number of live entries (root included).
    pub fn len(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}
