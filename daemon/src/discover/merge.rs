//! `discover-update`'s monotonic merge into an existing config: term lists only grow,
//! alias groups only gain aliases, and every line the merge does not own (comments,
//! other tables, other keys) stays as it was. The reference's line-based editing,
//! including its messages.

use super::Discovery;
use super::aliases::{configured, merge_proposals};
use super::draft::{alias_entry, quote, toml_array};
use crate::engine::config::{dedupe, parse_alias_groups};
use crate::engine::placeholder::normalize_value;
use crate::engine::python::text::{is_py_space, splitlines};
use crate::engine::wordlists::DEFAULT_ALLOW_TERMS;
use regex::Regex;
use std::sync::LazyLock;
use toml::{Table, Value};

type Groups = Vec<(String, Vec<String>)>;

static TOML_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[\[?[^\]]+\]\]?[\s\x1C-\x1F]*(?:#.*)?$").expect("valid"));
static REDACTION_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[[\s\x1C-\x1F]*redaction[\s\x1C-\x1F]*\][\s\x1C-\x1F]*(?:#.*)?$").expect("valid")
});
static REDACTION_SUBTABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[[\s\x1C-\x1F]*redaction[\s\x1C-\x1F]*\.").expect("valid"));
static REDACTION_ALIASES_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\[[\s\x1C-\x1F]*redaction[\s\x1C-\x1F]*\.[\s\x1C-\x1F]*aliases[\s\x1C-\x1F]*\][\s\x1C-\x1F]*(?:#.*)?$",
    )
    .expect("valid")
});
static TOP_LEVEL_ALIASES_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[[\s\x1C-\x1F]*aliases[\s\x1C-\x1F]*\][\s\x1C-\x1F]*(?:#.*)?$").expect("valid")
});
static ASSIGNMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\s\x1C-\x1F]*([A-Za-z0-9_-]+)[\s\x1C-\x1F]*=").expect("valid"));

/// Aliases added from the seed and from discovery, and proposals dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AliasCounts {
    pub seed: usize,
    pub discovered: usize,
    pub dropped: usize,
}

/// The result of [`update`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub config_text: String,
    pub changed: bool,
    pub alias_counts: AliasCounts,
}

fn strip(line: &str) -> &str {
    line.trim_matches(is_py_space)
}

/// `parse_redaction_toml`: the `[redaction]` table (or the top level).
pub fn redaction_table(text: &str) -> Result<Table, String> {
    if strip(text).is_empty() {
        return Ok(Table::new());
    }
    let mut data: Table = toml::from_str(text)
        .map_err(|_| "Existing redaction config is invalid TOML.".to_owned())?;
    match data.remove("redaction") {
        None => Ok(data),
        Some(Value::Table(t)) => Ok(t),
        Some(_) => Err("Redaction config must contain a table.".into()),
    }
}

fn string_list(table: &Table, key: &str) -> Result<Vec<String>, String> {
    match table.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("redaction.{key} must be an array of strings.")),
        Some(_) => Err(format!("redaction.{key} must be an array of strings.")),
    }
}

fn alias_groups(table: &Table) -> Result<Groups, String> {
    parse_alias_groups(table.get("aliases")).map_err(|e| e.to_string())
}

/// `config_people`: the people the given configs list, as written.
pub fn config_people(texts: &[Option<&str>]) -> Result<Vec<String>, String> {
    let mut people = Vec::new();
    for text in texts.iter().flatten() {
        if !text.is_empty() {
            people.extend(string_list(&redaction_table(text)?, "people")?);
        }
    }
    Ok(dedupe(&people))
}

/// `build_discovery_update`: `existing` with the seed's and the discovery's terms merged
/// in; the allow list is the seed's (else the existing one's), grown by discovery only
/// with `include_allow`; seed alias groups always merge, discovered ones only with
/// `include_aliases`; the seed's exclusions, term files and detector profile win.
pub fn update(
    existing: &str,
    discovery: &Discovery,
    seed: Option<&str>,
    include_allow: bool,
    include_aliases: bool,
) -> Result<Update, String> {
    let current = redaction_table(existing)?;
    let seed_table = redaction_table(seed.unwrap_or(""))?;
    let mut replacements: Vec<(&str, String)> = Vec::new();
    let mut merged = Discovery::default();
    for key in ["clients", "organizations", "people", "terms"] {
        let mut all = string_list(&seed_table, key)?;
        all.extend(string_list(&current, key)?);
        all.extend(discovery.bucket(key).iter().cloned());
        let values = dedupe(&all);
        replacements.push((key, toml_array(&values)));
        *merged.bucket_mut(key) = values;
    }
    let mut allow = if seed.is_some() {
        string_list(&seed_table, "allow")?
    } else {
        string_list(&current, "allow")?
    };
    if include_allow {
        allow.extend(discovery.allow.iter().cloned());
        allow = dedupe(&allow);
    }
    replacements.push(("allow", toml_array(&allow)));
    let existing_groups = alias_groups(&current)?;
    let known = configured(&merged);
    let seed_groups = if seed.is_some() {
        alias_groups(&seed_table)?
    } else {
        Vec::new()
    };
    let (mut groups, seed_added, mut dropped) =
        merge_proposals(&existing_groups, &seed_groups, &known, &allow);
    let mut discovered_added = 0;
    if include_aliases {
        let mut wide = allow.clone();
        wide.extend(DEFAULT_ALLOW_TERMS.iter().map(|s| s.to_string()));
        let (g, added, more) = merge_proposals(&groups, &discovery.aliases, &known, &wide);
        groups = g;
        discovered_added = added;
        dropped += more + discovery.dropped_aliases;
    }
    if seed.is_some() {
        for key in ["exclude_dirs", "exclude_globs", "term_files"] {
            if seed_table.contains_key(key) {
                replacements.push((key, toml_array(&string_list(&seed_table, key)?)));
            }
        }
        if let Some(profile) = seed_table.get("detector_profile") {
            let profile = match profile {
                Value::String(s) => s.trim_matches(is_py_space).to_owned(),
                other => other.to_string(),
            };
            if profile != "default" && profile != "extended" {
                return Err("redaction.detector_profile must be default or extended.".into());
            }
            replacements.push(("detector_profile", quote(&profile)));
        }
    }
    let text = replace_assignments(existing, &replacements)?;
    let config_text = write_alias_additions(&text, &existing_groups, &groups)?;
    Ok(Update {
        changed: config_text != existing,
        config_text,
        alias_counts: AliasCounts {
            seed: seed_added,
            discovered: discovered_added,
            dropped,
        },
    })
}

fn newline_of(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

fn lines_of(text: &str, newline: &str) -> Vec<String> {
    let mut lines: Vec<String> = splitlines(text, true)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Some(last) = lines.last_mut()
        && !last.ends_with(['\n', '\r'])
    {
        last.push_str(newline);
    }
    lines
}

fn header_after(lines: &[String], from: usize) -> usize {
    (from..lines.len())
        .find(|&i| TOML_HEADER.is_match(strip(&lines[i])))
        .unwrap_or(lines.len())
}

/// `replace_redaction_assignments`: each key's assignment in the `[redaction]` section
/// (or the top level) rewritten in place; missing keys appended to that section, before
/// its trailing blank lines.
fn replace_assignments(text: &str, replacements: &[(&str, String)]) -> Result<String, String> {
    let newline = newline_of(text);
    let mut lines = lines_of(text, newline);
    let mut has_table = lines.iter().any(|l| REDACTION_HEADER.is_match(strip(l)));
    if lines.is_empty() {
        lines.push(format!("[redaction]{newline}"));
        has_table = true;
    }
    if !has_table && lines.iter().any(|l| REDACTION_SUBTABLE.is_match(strip(l))) {
        let first = header_after(&lines, 0);
        lines.splice(
            first..first,
            [format!("[redaction]{newline}"), newline.to_owned()],
        );
        has_table = true;
    }
    let (start, end) = if has_table {
        let header = lines
            .iter()
            .position(|l| REDACTION_HEADER.is_match(strip(l)))
            .unwrap_or(0);
        (header + 1, header_after(&lines, header + 1))
    } else {
        (0, header_after(&lines, 0))
    };
    let mut found: Vec<&str> = Vec::new();
    let mut output: Vec<String> = Vec::new();
    let mut index = start;
    while index < end {
        let key = ASSIGNMENT
            .captures(&lines[index])
            .map(|c| c[1].to_owned())
            .unwrap_or_default();
        let Some((key, value)) = replacements.iter().find(|(k, _)| *k == key) else {
            output.push(lines[index].clone());
            index += 1;
            continue;
        };
        index = assignment_end(&lines, index, end, key)?;
        output.push(format!("{key} = {value}{newline}"));
        found.push(key);
    }
    let missing: Vec<&(&str, String)> = replacements
        .iter()
        .filter(|(k, _)| !found.contains(k))
        .collect();
    let mut trailing = Vec::new();
    while !missing.is_empty() && output.last().is_some_and(|l| strip(l).is_empty()) {
        trailing.insert(0, output.pop().unwrap_or_default());
    }
    if !missing.is_empty() && output.last().is_some_and(|l| !strip(l).is_empty()) {
        output.push(newline.to_owned());
    }
    for (key, value) in missing {
        output.push(format!("{key} = {value}{newline}"));
    }
    output.extend(trailing);
    lines.splice(start..end, output);
    Ok(lines.concat())
}

fn assignment_end(lines: &[String], start: usize, end: usize, key: &str) -> Result<usize, String> {
    for stop in start + 1..=end {
        if let Ok(parsed) = toml::from_str::<Table>(&lines[start..stop].concat())
            && parsed.contains_key(key)
        {
            return Ok(stop);
        }
    }
    Err(format!("Could not parse redaction.{key} assignment."))
}

fn entry_end(lines: &[String], start: usize, end: usize) -> Result<(usize, Table), String> {
    for stop in start + 1..=end {
        if let Ok(parsed) = toml::from_str::<Table>(&lines[start..stop].concat()) {
            return Ok((stop, parsed));
        }
    }
    Err("Could not parse a redaction.aliases entry.".into())
}

/// `write_alias_additions`: a group that gained aliases has its own entry rewritten, new
/// groups go at the end of the aliases table (created at the end of the file when
/// missing); the result must parse back to exactly `after`.
fn write_alias_additions(text: &str, before: &Groups, after: &Groups) -> Result<String, String> {
    if after == before {
        return Ok(text.to_owned());
    }
    let newline = newline_of(text);
    let mut lines = lines_of(text, newline);
    let previous: Vec<(String, &Vec<String>)> = before
        .iter()
        .map(|(c, a)| (normalize_value(c), a))
        .collect();
    let prior = |key: &str| previous.iter().find(|(k, _)| k == key).map(|(_, a)| *a);
    let mut updates: Vec<(String, String)> = Vec::new();
    let mut additions: Vec<String> = Vec::new();
    for (canonical, aliases) in after {
        let key = normalize_value(canonical);
        match prior(&key) {
            Some(old) if old != aliases => {
                updates.push((key, alias_entry(canonical, aliases, newline)));
            }
            Some(_) => {}
            None => additions.push(alias_entry(canonical, aliases, newline)),
        }
    }
    let redaction_form = lines
        .iter()
        .any(|l| REDACTION_HEADER.is_match(strip(l)) || REDACTION_SUBTABLE.is_match(strip(l)));
    let header_re: &Regex = if redaction_form {
        &REDACTION_ALIASES_HEADER
    } else {
        &TOP_LEVEL_ALIASES_HEADER
    };
    match lines.iter().position(|l| header_re.is_match(strip(l))) {
        None => {
            if !before.is_empty() {
                return Err("Existing alias groups must be a [redaction.aliases] table before more can be merged.".into());
            }
            if lines.last().is_some_and(|l| !strip(l).is_empty()) {
                lines.push(newline.to_owned());
            }
            let name = if redaction_form {
                "redaction.aliases"
            } else {
                "aliases"
            };
            lines.push(format!("[{name}]{newline}"));
            lines.extend(additions);
        }
        Some(header) => {
            let end = header_after(&lines, header + 1);
            let mut section: Vec<String> = Vec::new();
            let mut index = header + 1;
            while index < end {
                let stripped = strip(&lines[index]);
                if stripped.is_empty() || stripped.starts_with('#') {
                    section.push(lines[index].clone());
                    index += 1;
                    continue;
                }
                let (stop, entry) = entry_end(&lines, index, end)?;
                let key = normalize_value(entry.keys().next().map_or("", String::as_str));
                match updates.iter().find(|(k, _)| *k == key) {
                    Some((_, line)) => section.push(line.clone()),
                    None => section.extend(lines[index..stop].iter().cloned()),
                }
                index = stop;
            }
            let mut insert_at = section.len();
            while insert_at > 0 && strip(&section[insert_at - 1]).is_empty() {
                insert_at -= 1;
            }
            section.splice(insert_at..insert_at, additions);
            lines.splice(header + 1..end, section);
        }
    }
    let merged = lines.concat();
    let written = alias_groups(&redaction_table(&merged)?)?;
    let norm = |groups: &Groups| -> Vec<(String, Vec<String>)> {
        groups
            .iter()
            .map(|(c, a)| {
                (
                    normalize_value(c),
                    a.iter().map(|v| normalize_value(v)).collect(),
                )
            })
            .collect()
    };
    if norm(&written) != norm(after) {
        return Err("Could not merge alias groups into the redaction config.".into());
    }
    Ok(merged)
}
