//! Alias groups of a draft: deterministic proposals from the texts
//! (`propose_alias_groups`) and the monotonic merge that keeps only what the config
//! loader would accept (`merge_alias_proposals`).

use super::{Discovery, is_probable_person, normalize_person, py_islower};
use crate::engine::config::{
    MAX_ALIASES_PER_GROUP, alias_value_over_limits, collapse_whitespace, dedupe,
    expand_person_terms, py_strip,
};
use crate::engine::pipeline::claimed_before_configured_terms;
use crate::engine::placeholder::{casefold, normalize_value};
use crate::engine::python::re::{Finder, PyPattern, substitute};
use crate::engine::python::text::{is_py_space, is_py_word};
use crate::engine::stages::patterns::{domain, email, handle, url};
use crate::engine::wordlists::{DEFAULT_ALLOW_TERMS, RESERVED_PLACEHOLDER_WORDS};
use crate::writes::round_trip::STOPWORDS;
use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

type Groups = Vec<(String, Vec<String>)>;

static NAME_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[^\W\d_]+(?:['-][^\W\d_]+)*").expect("valid"));
static NAME_WORD_FULL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^\W\d_]+(?:['-][^\W\d_]+)*$").expect("valid"));
static EMAIL: LazyLock<PyPattern> = LazyLock::new(email);

/// `person_name_tokens`: whitespace-split, punctuation-trimmed tokens of a name.
fn name_tokens(name: &str) -> Vec<String> {
    normalize_person(name)
        .split(is_py_space)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.trim_matches(['.', ',', ';', ':', '(', ')', '[', ']', '{', '}'])
                .to_owned()
        })
        .collect()
}

/// Every match of `pattern` in `text`, left to right (Python `finditer`).
fn find_all<'t>(pattern: &PyPattern, text: &'t str) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos <= text.len() {
        let Some((s, e)) = pattern.find_at(text, pos) else {
            break;
        };
        out.push(&text[s..e]);
        pos = if e > s {
            e
        } else {
            e + text[e..].chars().next().map_or(1, char::len_utf8)
        };
    }
    out
}

/// Review-only alias proposals for multi-word names in `people` (`known` widens the
/// ambiguity checks): a standalone first name that no other known name shares and the
/// texts never use as an ordinary lower-case word, and email addresses whose local part
/// spells exactly one known person. See the reference's `propose_alias_groups`.
pub fn propose(texts: &[String], people: &[String], known: &[String]) -> Groups {
    let candidates: Vec<String> = dedupe(people)
        .into_iter()
        .filter(|n| is_probable_person(n, false))
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let mut all = candidates.clone();
    all.extend(known.iter().filter(|n| name_tokens(n).len() >= 2).cloned());
    let known = dedupe(&all);
    let mut owners: HashMap<String, HashSet<String>> = HashMap::new();
    for name in &known {
        for token in name_tokens(name) {
            owners
                .entry(casefold(&token))
                .or_default()
                .insert(normalize_value(name));
        }
    }
    let mut prose_lower: HashSet<String> = HashSet::new();
    let scrubbers = [url(), email(), domain(), handle()];
    for text in texts {
        let mut text = text.clone();
        for pattern in &scrubbers {
            if let Some(t) = substitute(pattern as &dyn Finder, &text, |_| " ".to_owned()) {
                text = t;
            }
        }
        for m in NAME_WORD.find_iter(&text) {
            if py_islower(m.as_str()) {
                prose_lower.insert(m.as_str().to_owned());
            }
        }
    }
    let unambiguous_first = |name: &str| -> Option<String> {
        let first = name_tokens(name).into_iter().next()?;
        let key = casefold(&first);
        let sole_owner = owners
            .get(&key)
            .is_some_and(|o| o.len() == 1 && o.contains(&normalize_value(name)));
        if first.chars().count() < 3
            || !NAME_WORD_FULL.is_match(&first)
            || !first.chars().next().is_some_and(char::is_uppercase)
            || !sole_owner
            || STOPWORDS.contains(&key)
            || prose_lower.contains(&key)
        {
            return None;
        }
        Some(first)
    };
    let mut proposals: Groups = Vec::new();
    let push = |proposals: &mut Groups, name: &str, alias: String| match proposals
        .iter_mut()
        .find(|(n, _)| n == name)
    {
        Some((_, a)) => a.push(alias),
        None => proposals.push((name.to_owned(), vec![alias])),
    };
    for name in &candidates {
        if let Some(first) = unambiguous_first(name)
            && standalone_first_name(texts, &first, &known)
        {
            push(&mut proposals, name, first);
        }
    }
    let mut seen = HashSet::new();
    for text in texts {
        for address in find_all(&EMAIL, text) {
            if !seen.insert(casefold(address)) {
                continue;
            }
            let owners: Vec<&String> = known
                .iter()
                .filter(|n| email_names_person(address, n, &unambiguous_first))
                .collect();
            if owners.len() == 1 && candidates.contains(owners[0]) {
                push(&mut proposals, owners[0], address.to_owned());
            }
        }
    }
    proposals
        .into_iter()
        .map(|(n, a)| (n, dedupe(&a)))
        .collect()
}

/// Whether `first` occurs on its own (case-sensitive, not inside an address, handle or
/// path) outside the known full names starting with it, and is never followed on its line
/// by another capitalised word.
fn standalone_first_name(texts: &[String], first: &str, known: &[String]) -> bool {
    let full_names: Vec<Regex> = known
        .iter()
        .filter_map(|name| {
            let tokens = name_tokens(name);
            (tokens.first().map(|t| casefold(t)) == Some(casefold(first))).then(|| {
                let body: Vec<String> = tokens.iter().map(|t| regex::escape(t)).collect();
                Regex::new(&format!(r"(?i)^(?:{})", body.join(r"[\s\x1C-\x1F]+"))).expect("escaped")
            })
        })
        .collect();
    static FOLLOWING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[ \t]+([^\W\d_][\w'-]*)").expect("valid"));
    let mut standalone = false;
    for text in texts {
        let mut pos = 0;
        while let Some(found) = text[pos..].find(first) {
            let start = pos + found;
            let end = start + first.len();
            pos = start + first.chars().next().map_or(1, char::len_utf8);
            let before = text[..start].chars().next_back();
            if before.is_some_and(|c| is_py_word(c) || matches!(c, '@' | '.' | '/' | '-')) {
                continue;
            }
            let mut rest = text[end..].chars();
            match rest.next() {
                Some(c) if is_py_word(c) => continue,
                Some('@' | '.' | '-') if rest.next().is_some_and(is_py_word) => continue,
                _ => {}
            }
            pos = end;
            if full_names.iter().any(|full| full.is_match(&text[start..])) {
                continue;
            }
            if let Some(caps) = FOLLOWING.captures(&text[end..])
                && caps[1].chars().next().is_some_and(char::is_uppercase)
            {
                return false;
            }
            standalone = true;
        }
    }
    standalone
}

/// Whether an address's local part (before any `+tag`) spells `name`: both names in
/// either order, initial and surname, or the first name alone when it is unambiguous.
fn email_names_person(
    address: &str,
    name: &str,
    unambiguous_first: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let local = address.split('@').next().unwrap_or("");
    let local = casefold(local.split('+').next().unwrap_or(""));
    let parts: Vec<&str> = local
        .split(['.', '_', '-'])
        .filter(|p| !p.is_empty())
        .collect();
    let tokens: Vec<String> = name_tokens(name)
        .iter()
        .filter(|t| t.chars().count() >= 2)
        .map(|t| casefold(t))
        .collect();
    if tokens.len() < 2 || parts.is_empty() {
        return false;
    }
    let (first, last) = (tokens[0].as_str(), tokens[tokens.len() - 1].as_str());
    let initial: String = first.chars().take(1).collect();
    let mut sorted_parts = parts.clone();
    sorted_parts.sort_unstable();
    let mut sorted_tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    sorted_tokens.sort_unstable();
    if parts.len() >= 2 && sorted_parts == sorted_tokens {
        return true;
    }
    if parts == [first, last] || parts == [last, first] || parts == [initial.as_str(), last] {
        return true;
    }
    if parts.len() == 1 {
        let joined: String = tokens.concat();
        let shapes = [
            joined,
            format!("{first}{last}"),
            format!("{last}{first}"),
            format!("{initial}{last}"),
        ];
        if shapes.contains(&local) {
            return true;
        }
    }
    parts == [first] && unambiguous_first(name).is_some()
}

/// The normalized values a draft's lists would configure (`draft_categories`).
pub fn configured(result: &Discovery) -> HashSet<String> {
    result
        .clients
        .iter()
        .chain(&result.organizations)
        .chain(&expand_person_terms(&result.people))
        .chain(&result.terms)
        .map(|v| normalize_value(v))
        .collect()
}

/// `draft_alias_groups`: the model's groups plus (with `propose`) the deterministic
/// proposals, kept only where the draft's own lists support them.
pub fn finish_draft(
    result: Discovery,
    texts: &[String],
    propose_groups: bool,
    known: &[String],
) -> Discovery {
    let mut proposals = result.aliases.clone();
    if propose_groups {
        proposals.extend(propose(texts, &result.people, known));
    }
    if proposals.is_empty() {
        return result;
    }
    let mut allow = result.allow.clone();
    allow.extend(DEFAULT_ALLOW_TERMS.iter().map(|s| s.to_string()));
    let (groups, _, dropped) = merge_proposals(
        &[],
        &super::merge_alias_lists(proposals),
        &configured(&result),
        &allow,
    );
    Discovery {
        aliases: groups,
        dropped_aliases: result.dropped_aliases + dropped,
        ..result
    }
}

/// `merge_alias_proposals`: `groups` kept exactly; each proposal appends new aliases to
/// its group or becomes a new group, dropping what the loader would refuse (the salt's
/// form-suffix check is left to loading). Returns `(groups, added, dropped)`.
pub fn merge_proposals(
    groups: &[(String, Vec<String>)],
    proposals: &[(String, Vec<String>)],
    configured: &HashSet<String>,
    allow: &[String],
) -> (Groups, usize, usize) {
    let allowed: HashSet<String> = allow.iter().map(|a| normalize_value(a)).collect();
    let mut merged: Groups = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut owner: HashMap<String, String> = HashMap::new();
    for (canonical, aliases) in groups {
        let key = normalize_value(canonical);
        let i = *at.entry(key.clone()).or_insert_with(|| {
            merged.push((canonical.clone(), Vec::new()));
            merged.len() - 1
        });
        for alias in aliases {
            owner.entry(normalize_value(alias)).or_insert(key.clone());
            merged[i].1.push(alias.clone());
        }
    }
    let existing: HashSet<String> = at.keys().cloned().collect();
    let mut canonicals = existing.clone();
    canonicals.extend(proposals.iter().map(|(c, _)| normalize_value(c)));
    let reserved = |key: &str| RESERVED_PLACEHOLDER_WORDS.contains(&key);
    let (mut added, mut dropped) = (0, 0);
    for (canonical, aliases) in proposals {
        let canonical = collapse_whitespace(py_strip(canonical));
        let key = normalize_value(&canonical);
        if !existing.contains(&key)
            && (canonical.is_empty()
                || !configured.contains(&key)
                || owner.contains_key(&key)
                || reserved(&key)
                || alias_value_over_limits(&canonical)
                || claimed_before_configured_terms(&canonical))
        {
            dropped += aliases.len();
            continue;
        }
        let i = *at.entry(key.clone()).or_insert_with(|| {
            merged.push((canonical.clone(), Vec::new()));
            merged.len() - 1
        });
        let mut present: HashSet<String> = merged[i].1.iter().map(|a| normalize_value(a)).collect();
        for alias in aliases {
            let alias = collapse_whitespace(py_strip(alias));
            let normalized = normalize_value(&alias);
            if !alias.is_empty() && present.contains(&normalized) {
                continue;
            }
            if alias.is_empty()
                || reserved(&normalized)
                || alias_value_over_limits(&alias)
                || canonicals.contains(&normalized)
                || owner.contains_key(&normalized)
                || allowed.contains(&normalized)
                || merged[i].1.len() >= MAX_ALIASES_PER_GROUP
            {
                dropped += 1;
                continue;
            }
            merged[i].1.push(alias);
            present.insert(normalized.clone());
            owner.insert(normalized, key.clone());
            added += 1;
        }
    }
    merged.retain(|(_, a)| !a.is_empty());
    (merged, added, dropped)
}
