//! B+tree algorithms over one bucket's tree: lookup, insert with eager split, delete with
//! merge/redistribute, and spill (serialise dirty nodes to freshly allocated pages at commit).
//!
//! A tree is a root [`Child`] plus an arena of dirty nodes; `Child::Page(0)` is the empty tree.
//! Clean subtrees are read straight from pager pages without copying, through a
//! [`PageSource`] (the snapshot a transaction reads): this module knows no transaction or database.

use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use crate::error::{Error, Result};
use crate::node::{
    branch_entry, branch_entry_size, leaf_entry, leaf_entry_size, Child, Entries, KeyBytes,
    LeafValue, Node,
};
use crate::page::{self, LeafSlot, PageId, HEADER_SIZE};
use crate::source::PageSource;

/// Deepest tree (plus bucket nesting) we follow; deeper means a cycle in a corrupt image.
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug)]
pub struct Tree {
    pub root: Child,
    pub nodes: Vec<Node>,
}

impl Tree {
    pub fn new(root: PageId) -> Tree {
        Tree {
            root: Child::Page(root),
            nodes: Vec::new(),
        }
    }
}

/// A found leaf entry: in a clean page (zero-copy) or in a dirty node (copied out).
pub enum Found<Pg> {
    Page(Pg, LeafSlot),
    Dirty(LeafValue),
}

/// How `put` treats an existing entry under the key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// Insert or replace a value; a bucket there is `IncompatibleValue`.
    Value,
    /// Insert a new bucket; anything there is `BucketExists`.
    NewBucket,
    /// Replace a bucket header (commit of a nested bucket).
    SetBucket,
}

fn check_mode(mode: PutMode, old: Option<&LeafValue>) -> Result<()> {
    match (mode, old) {
        (PutMode::Value, Some(LeafValue::Bucket { .. })) => Err(Error::IncompatibleValue),
        (PutMode::NewBucket, Some(_)) => Err(Error::BucketExists),
        (PutMode::SetBucket, Some(LeafValue::Bucket { .. })) => Ok(()),
        (PutMode::SetBucket, _) => Err(Error::Corrupted("nested bucket entry vanished")),
        _ => Ok(()),
    }
}

/// Find `key`.
pub fn lookup<S: PageSource>(src: &S, tree: &Tree, key: &[u8]) -> Result<Option<Found<S::Page>>> {
    let mut child = tree.root;
    for _ in 0..MAX_DEPTH {
        match child {
            Child::Page(0) => return Ok(None),
            Child::Page(id) => return lookup_pages(src, id, key),
            Child::Dirty(i) => {
                let node = tree
                    .nodes
                    .get(i)
                    .ok_or(Error::Corrupted("dangling dirty node"))?;
                match &node.entries {
                    Entries::Leaf(e) => {
                        return Ok(match e.binary_search_by(|(k, _)| page::key_cmp(k, key)) {
                            Ok(i) => Some(Found::Dirty(e[i].1.clone())),
                            Err(_) => None,
                        })
                    }
                    Entries::Branch(e) => child = e[branch_index(e, key)].1,
                }
            }
        }
    }
    Err(Error::Corrupted("tree too deep"))
}

fn lookup_pages<S: PageSource>(
    src: &S,
    mut id: PageId,
    key: &[u8],
) -> Result<Option<Found<S::Page>>> {
    for _ in 0..MAX_DEPTH {
        let buf = src.page(id)?;
        let (leaf, count) = page::node_header(&buf, id)?;
        if leaf {
            return Ok(match page::leaf_search(&buf, count, key)? {
                Ok(i) => {
                    let slot = page::leaf_slot(&buf, i)?;
                    Some(Found::Page(buf, slot))
                }
                Err(_) => None,
            });
        }
        let i = page::branch_search(&buf, count, key)?;
        id = page::branch_slot(&buf, i)?.1;
    }
    Err(Error::Corrupted("tree too deep"))
}

/// Child index for `key` in a dirty branch: the last entry whose key is `<= key`, or 0.
pub fn branch_index(entries: &[(KeyBytes, Child)], key: &[u8]) -> usize {
    entries.get(1..).map_or(0, |rest| {
        rest.partition_point(|(k, _)| page::key_cmp(k, key).is_le())
    })
}

/// Mutating access to a tree inside a write transaction: clean pages are read from `src` (the
/// snapshot the transaction began from) and copied into dirty nodes.
pub struct WriteCtx<'a, S: PageSource> {
    pub src: S,
    /// Pages this transaction stopped using (freed at commit).
    pub freed: &'a mut Vec<(PageId, u64)>,
}

impl<S: PageSource> WriteCtx<'_, S> {
    /// Make `child` a dirty node (copy-on-write) and return its arena index.
    fn materialize(&mut self, nodes: &mut Vec<Node>, child: Child) -> Result<usize> {
        match child {
            Child::Dirty(i) => Ok(i),
            Child::Page(0) => {
                nodes.push(Node::empty_leaf());
                Ok(nodes.len() - 1)
            }
            Child::Page(id) => {
                let buf = self.src.page(id)?;
                let node = Node::from_page(&buf, id)?;
                self.freed.push((id, 1));
                nodes.push(node);
                Ok(nodes.len() - 1)
            }
        }
    }

    /// Insert or replace `key`; returns the value it replaced.
    pub fn put(
        &mut self,
        tree: &mut Tree,
        key: &[u8],
        value: LeafValue,
        mode: PutMode,
    ) -> Result<Option<LeafValue>> {
        let root = self.materialize(&mut tree.nodes, tree.root)?;
        tree.root = Child::Dirty(root);
        let (old, split) = self.insert(&mut tree.nodes, root, key, value, mode, 0)?;
        if let Some((sep, right)) = split {
            let left_key = KeyBytes::from_slice(tree.nodes[root].first_key());
            tree.nodes.push(Node::branch(vec![
                (left_key, Child::Dirty(root)),
                (sep, Child::Dirty(right)),
            ]));
            tree.root = Child::Dirty(tree.nodes.len() - 1);
        }
        Ok(old)
    }

    #[allow(clippy::type_complexity)]
    fn insert(
        &mut self,
        nodes: &mut Vec<Node>,
        idx: usize,
        key: &[u8],
        value: LeafValue,
        mode: PutMode,
        depth: usize,
    ) -> Result<(Option<LeafValue>, Option<(KeyBytes, usize)>)> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        let page_size = self.src.page_size();
        let (old, appended) = match &mut nodes[idx].entries {
            Entries::Leaf(e) => match e.binary_search_by(|(k, _)| page::key_cmp(k, key)) {
                Ok(i) => {
                    check_mode(mode, Some(&e[i].1))?;
                    let grow = leaf_entry_size(key, &value);
                    let old = mem::replace(&mut e[i].1, value);
                    let shrink = leaf_entry_size(key, &old);
                    nodes[idx].size = nodes[idx].size + grow - shrink;
                    (Some(old), false)
                }
                Err(i) => {
                    check_mode(mode, None)?;
                    let size = leaf_entry_size(key, &value);
                    e.insert(i, (KeyBytes::from_slice(key), value));
                    let appended = i + 1 == e.len();
                    nodes[idx].size += size;
                    (None, appended)
                }
            },
            Entries::Branch(e) => {
                let i = branch_index(e, key);
                let child = e[i].1;
                let c = self.materialize(nodes, child)?;
                if let Entries::Branch(e) = &mut nodes[idx].entries {
                    e[i].1 = Child::Dirty(c);
                }
                let (old, split) = self.insert(nodes, c, key, value, mode, depth + 1)?;
                let mut appended = false;
                if let Some((sep, right)) = split {
                    let size = branch_entry_size(&sep);
                    if let Entries::Branch(e) = &mut nodes[idx].entries {
                        e.insert(i + 1, (sep, Child::Dirty(right)));
                        appended = i + 2 == e.len();
                    }
                    nodes[idx].size += size;
                }
                (old, appended)
            }
        };
        if nodes[idx].size > page_size && nodes[idx].len() >= 2 {
            let at = nodes[idx].split_point(appended);
            let right = nodes[idx].split_off(at);
            let sep = KeyBytes::from_slice(right.first_key());
            nodes.push(right);
            return Ok((old, Some((sep, nodes.len() - 1))));
        }
        Ok((old, None))
    }

    /// Remove `key` (which the caller has checked exists); returns its value.
    pub fn delete(&mut self, tree: &mut Tree, key: &[u8]) -> Result<Option<LeafValue>> {
        if tree.root == Child::Page(0) {
            return Ok(None);
        }
        let root = self.materialize(&mut tree.nodes, tree.root)?;
        tree.root = Child::Dirty(root);
        let old = self.remove(&mut tree.nodes, root, key, 0)?;
        // Collapse a root branch with a single child, and an empty root leaf to the empty tree.
        while let Child::Dirty(r) = tree.root {
            match &tree.nodes[r].entries {
                Entries::Branch(e) if e.len() == 1 => tree.root = e[0].1,
                Entries::Leaf(e) if e.is_empty() => tree.root = Child::Page(0),
                _ => break,
            }
        }
        Ok(old)
    }

    /// Remove every key in `[start, end)` (`end` `None`: to the last key) in one descent of the
    /// tree, appending their values to `removed` in key order. A nested bucket in the range is
    /// [`Error::IncompatibleValue`] (then, as after any error, the caller must drop the
    /// transaction: leaves left of it may be emptied already).
    pub fn delete_range(
        &mut self,
        tree: &mut Tree,
        start: &[u8],
        end: Option<&[u8]>,
        removed: &mut Vec<LeafValue>,
    ) -> Result<()> {
        if tree.root == Child::Page(0) || end.is_some_and(|e| start >= e) {
            return Ok(());
        }
        let root = self.materialize(&mut tree.nodes, tree.root)?;
        tree.root = Child::Dirty(root);
        self.remove_range(&mut tree.nodes, root, start, end, removed, 0)?;
        while let Child::Dirty(r) = tree.root {
            match &tree.nodes[r].entries {
                Entries::Branch(e) if e.len() == 1 => tree.root = e[0].1,
                Entries::Branch(e) if e.is_empty() => tree.root = Child::Page(0),
                Entries::Leaf(e) if e.is_empty() => tree.root = Child::Page(0),
                _ => break,
            }
        }
        Ok(())
    }

    /// Free the clean subtree at page `id` whole: its pages, and (in `removed`, in key order)
    /// the values of its leaves, read straight from the pages with [`Node::from_page`]'s
    /// checks; a nested bucket's reference is refused as in a leaf of the range.
    fn drop_subtree(
        &mut self,
        id: PageId,
        removed: &mut Vec<LeafValue>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        let buf = self.src.page(id)?;
        let (leaf, count) = page::node_header(&buf, id)?;
        for i in 0..count {
            if leaf {
                let (_, v) = leaf_entry(&buf, i)?;
                if matches!(v, LeafValue::Bucket { .. }) {
                    return Err(Error::IncompatibleValue);
                }
                removed.push(v);
            } else {
                let (_, child) = branch_entry(&buf, i)?;
                self.drop_subtree(child, removed, depth + 1)?;
            }
        }
        self.freed.push((id, 1));
        Ok(())
    }

    fn remove_range(
        &mut self,
        nodes: &mut Vec<Node>,
        idx: usize,
        start: &[u8],
        end: Option<&[u8]>,
        removed: &mut Vec<LeafValue>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        let before_end = |k: &KeyBytes| end.is_none_or(|e| page::key_cmp(k, e).is_lt());
        let (first, last) = match &mut nodes[idx].entries {
            Entries::Leaf(e) => {
                let lo = e.partition_point(|(k, _)| page::key_cmp(k, start).is_lt());
                let hi = lo + e[lo..].partition_point(|(k, _)| before_end(k));
                if e[lo..hi]
                    .iter()
                    .any(|(_, v)| matches!(v, LeafValue::Bucket { .. }))
                {
                    return Err(Error::IncompatibleValue);
                }
                let mut shrink = 0;
                for (k, v) in e.drain(lo..hi) {
                    shrink += leaf_entry_size(&k, &v);
                    removed.push(v);
                }
                nodes[idx].size -= shrink;
                return Ok(());
            }
            // Children `first..=last` may hold keys of the range: child i holds keys from its
            // own key (entry 0: from anything) up to the next entry's key.
            Entries::Branch(e) => (
                branch_index(e, start),
                e.get(1..)
                    .map_or(0, |rest| rest.partition_point(|(k, _)| before_end(k))),
            ),
        };
        for i in first..=last {
            let Entries::Branch(e) = &nodes[idx].entries else {
                return Err(Error::Corrupted("branch changed kind"));
            };
            // A clean child strictly between the first and the last holds only keys of the
            // range (from its key, above `start`, to the next one, below `end`): its pages are
            // freed as they are, without decoding them into nodes that would be emptied. It is
            // replaced by an empty node, which goes below like any emptied child.
            match e[i].1 {
                Child::Page(id) if first < i && i < last && id != 0 => {
                    self.drop_subtree(id, removed, depth + 1)?;
                    nodes.push(Node::empty_leaf());
                    let c = nodes.len() - 1;
                    if let Entries::Branch(e) = &mut nodes[idx].entries {
                        e[i].1 = Child::Dirty(c);
                    }
                    continue;
                }
                _ => {}
            }
            let c = self.materialize(nodes, e[i].1)?;
            if let Entries::Branch(e) = &mut nodes[idx].entries {
                e[i].1 = Child::Dirty(c);
            }
            self.remove_range(nodes, c, start, end, removed, depth + 1)?;
        }
        // Emptied children go (right to left, so the indices left of them hold)...
        let mut kept = last + 1 - first;
        for i in (first..=last).rev() {
            let child = match &nodes[idx].entries {
                Entries::Branch(e) => e[i].1,
                Entries::Leaf(_) => return Err(Error::Corrupted("branch changed kind")),
            };
            let Child::Dirty(c) = child else {
                continue;
            };
            if nodes[c].len() == 0 {
                if let Entries::Branch(e) = &mut nodes[idx].entries {
                    let (k, _) = e.remove(i);
                    nodes[idx].size -= branch_entry_size(&k);
                }
                kept -= 1;
            }
        }
        // ...and those left under a quarter page merge with or borrow from a neighbour, right
        // to left (a merge leaves its result at the left index, which is checked next).
        let quarter = self.src.page_size() / 4;
        for i in (first..first + kept).rev() {
            let Entries::Branch(e) = &nodes[idx].entries else {
                return Err(Error::Corrupted("branch changed kind"));
            };
            if i >= e.len() {
                continue;
            }
            if let Child::Dirty(c) = e[i].1 {
                if nodes[c].size < quarter {
                    self.rebalance(nodes, idx, i)?;
                }
            }
        }
        Ok(())
    }

    fn remove(
        &mut self,
        nodes: &mut Vec<Node>,
        idx: usize,
        key: &[u8],
        depth: usize,
    ) -> Result<Option<LeafValue>> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        match &mut nodes[idx].entries {
            Entries::Leaf(e) => match e.binary_search_by(|(k, _)| page::key_cmp(k, key)) {
                Ok(i) => {
                    let (k, v) = e.remove(i);
                    nodes[idx].size -= leaf_entry_size(&k, &v);
                    Ok(Some(v))
                }
                Err(_) => Ok(None),
            },
            Entries::Branch(e) => {
                let i = branch_index(e, key);
                let child = e[i].1;
                let c = self.materialize(nodes, child)?;
                if let Entries::Branch(e) = &mut nodes[idx].entries {
                    e[i].1 = Child::Dirty(c);
                }
                let old = self.remove(nodes, c, key, depth + 1)?;
                if nodes[c].size < self.src.page_size() / 4 {
                    self.rebalance(nodes, idx, i)?;
                }
                Ok(old)
            }
        }
    }

    /// Child `i` of branch `parent` is under a quarter page: merge it with a neighbour, or, if the
    /// two do not fit one page, share their entries evenly.
    fn rebalance(&mut self, nodes: &mut Vec<Node>, parent: usize, i: usize) -> Result<()> {
        let Entries::Branch(e) = &nodes[parent].entries else {
            return Ok(());
        };
        if e.len() < 2 {
            return Ok(());
        }
        let (l, r) = if i > 0 { (i - 1, i) } else { (0, 1) };
        let (lchild, rchild, sep) = (e[l].1, e[r].1, e[r].0.clone());
        let lc = self.materialize(nodes, lchild)?;
        let rc = self.materialize(nodes, rchild)?;
        if let Entries::Branch(e) = &mut nodes[parent].entries {
            e[l].1 = Child::Dirty(lc);
            e[r].1 = Child::Dirty(rc);
        }
        let left = mem::replace(&mut nodes[lc], Node::empty_leaf());
        let right = mem::replace(&mut nodes[rc], Node::empty_leaf());
        let merged = match (left.entries, right.entries) {
            (Entries::Leaf(mut a), Entries::Leaf(b)) => {
                a.extend(b);
                Node::leaf(a)
            }
            (Entries::Branch(mut a), Entries::Branch(mut b)) => {
                // The right node's first key is not compared; the parent's separator is its bound.
                b[0].0 = sep;
                a.extend(b);
                Node::branch(a)
            }
            _ => return Err(Error::Corrupted("siblings of different kinds")),
        };
        let page_size = self.src.page_size();
        if merged.size <= page_size {
            nodes[lc] = merged;
            if let Entries::Branch(e) = &mut nodes[parent].entries {
                let (k, _) = e.remove(r);
                nodes[parent].size -= branch_entry_size(&k);
            }
        } else {
            let mut left = merged;
            let at = left.split_point(false);
            let right = left.split_off(at);
            let new_sep = KeyBytes::from_slice(right.first_key());
            nodes[lc] = left;
            nodes[rc] = right;
            if let Entries::Branch(e) = &mut nodes[parent].entries {
                let old = mem::replace(&mut e[r].0, new_sep);
                let new_len = e[r].0.len();
                nodes[parent].size = nodes[parent].size + new_len - old.len();
            }
        }
        Ok(())
    }

    /// Write every dirty node of `tree` to new pages (appended to `writes`), children first, and
    /// return the new root page (0 for an empty tree). `alloc(n)` hands out `n` contiguous pages.
    pub fn spill(
        &mut self,
        tree: &mut Tree,
        alloc: &mut dyn FnMut(u64) -> Result<PageId>,
        writes: &mut Vec<(PageId, Vec<u8>)>,
    ) -> Result<PageId> {
        let root = match tree.root {
            Child::Page(id) => return Ok(id),
            Child::Dirty(r) => r,
        };
        if tree.nodes[root].is_leaf() && tree.nodes[root].len() == 0 {
            tree.root = Child::Page(0);
            tree.nodes.clear();
            return Ok(0);
        }
        let mut pieces = self.spill_node(&mut tree.nodes, root, alloc, writes, 0)?;
        while pieces.len() > 1 {
            let node = Node::branch(
                pieces
                    .into_iter()
                    .map(|(k, id)| (k, Child::Page(id)))
                    .collect(),
            );
            tree.nodes.push(node);
            let idx = tree.nodes.len() - 1;
            pieces = self.spill_node(&mut tree.nodes, idx, alloc, writes, 0)?;
        }
        let id = pieces
            .first()
            .map(|p| p.1)
            .ok_or(Error::Corrupted("empty spill"))?;
        tree.root = Child::Page(id);
        tree.nodes.clear();
        Ok(id)
    }

    fn spill_node(
        &mut self,
        nodes: &mut Vec<Node>,
        idx: usize,
        alloc: &mut dyn FnMut(u64) -> Result<PageId>,
        writes: &mut Vec<(PageId, Vec<u8>)>,
        depth: usize,
    ) -> Result<Vec<(KeyBytes, PageId)>> {
        if depth > MAX_DEPTH {
            return Err(Error::Corrupted("tree too deep"));
        }
        let mut node = mem::replace(&mut nodes[idx], Node::empty_leaf());
        if let Entries::Branch(entries) = node.entries {
            let mut clean = Vec::with_capacity(entries.len());
            for (key, child) in entries {
                match child {
                    Child::Page(_) => clean.push((key, child)),
                    Child::Dirty(c) => {
                        let pieces = self.spill_node(nodes, c, alloc, writes, depth + 1)?;
                        for (n, (k, id)) in pieces.into_iter().enumerate() {
                            let k = if n == 0 { key.clone() } else { k };
                            clean.push((k, Child::Page(id)));
                        }
                    }
                }
            }
            node = Node::branch(clean);
        }
        // Nodes are kept within a page by eager splits; a separator change in a merge can push a
        // branch a little over, so cut greedily here as the last word.
        let page_size = self.src.page_size();
        let mut parts = Vec::new();
        while node.size > page_size && node.len() >= 2 {
            let mut used = HEADER_SIZE;
            let mut at = 0;
            while at < node.len() && used + node.entry_size(at) <= page_size {
                used += node.entry_size(at);
                at += 1;
            }
            let rest = node.split_off(at.max(1));
            parts.push(node);
            node = rest;
        }
        parts.push(node);
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            let id = alloc(1)?;
            let mut buf = vec![0u8; page_size];
            part.write_page(&mut buf, id);
            out.push((KeyBytes::from_slice(part.first_key()), id));
            writes.push((id, buf));
        }
        Ok(out)
    }
}
