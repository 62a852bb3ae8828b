//! Tool names: from `operationId` (snake_case), else from method and path
//! (`GET /v1/models` → `list_models`, `POST /v1/images/generations` →
//! `create_image_generation`, `GET /models/{id}` → `get_model`), unique in
//! the document and short enough for model APIs once prefixed.
//!
//! Collisions: the operations sharing a name are ordered by path length,
//! then path, then method; the first keeps the name, the others get what
//! tells them apart (the path segments the name left out, e.g. `_v1`, else
//! the method), and a number as a last resort. A name that would be too long
//! is cut and ends with a short hash of method and path, so it stays stable.

use std::collections::{BTreeMap, HashMap, HashSet};

/// What naming needs of an operation.
#[derive(Debug, Clone)]
pub(crate) struct NameSource<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) operation_id: Option<&'a str>,
    pub(crate) websocket: bool,
}

/// Leading path segments that say nothing about the operation.
const NOISE_SEGMENTS: [&str; 3] = ["api", "apis", "ws"];
/// Last words that are actions: `POST /models/apply` → `apply_models`.
const ACTIONS: [&str; 52] = [
    "add",
    "analyze",
    "apply",
    "approve",
    "archive",
    "cancel",
    "check",
    "clear",
    "clone",
    "close",
    "compare",
    "convert",
    "decide",
    "delete",
    "deploy",
    "detokenize",
    "disable",
    "download",
    "embed",
    "enable",
    "estimate",
    "execute",
    "export",
    "forget",
    "identify",
    "import",
    "install",
    "invoke",
    "load",
    "login",
    "logout",
    "merge",
    "open",
    "publish",
    "redact",
    "refresh",
    "register",
    "reject",
    "remesh",
    "remove",
    "rerank",
    "reset",
    "restart",
    "restore",
    "revoke",
    "run",
    "search",
    "shutdown",
    "start",
    "stop",
    "tokenize",
    "verify",
];
/// More actions, kept apart so the list above stays readable.
const MORE_ACTIONS: [&str; 10] = [
    "sync",
    "test",
    "toggle",
    "transform",
    "trigger",
    "unload",
    "update",
    "upgrade",
    "upload",
    "upscale",
];
/// Last words that describe which ones: `GET /backends/available` →
/// `list_available_backends`.
const QUALIFIERS: [&str; 8] = [
    "active",
    "all",
    "available",
    "current",
    "installed",
    "known",
    "latest",
    "recent",
];
/// Words ending in `s` that are not plurals (or read better unchanged).
const NOT_PLURAL: [&str; 20] = [
    "address",
    "alias",
    "analysis",
    "access",
    "bus",
    "class",
    "diagnostics",
    "data",
    "metrics",
    "news",
    "process",
    "progress",
    "settings",
    "stats",
    "status",
    "success",
    "tts",
    "canvas",
    "series",
    "species",
];

/// Every operation's name, in order; `max_len` is what is left of 64
/// characters after the prefix.
pub(crate) fn assign(sources: &[NameSource<'_>], max_len: usize) -> Vec<String> {
    let mut names: Vec<String> = sources
        .iter()
        .map(|source| base_name(source, max_len))
        .collect();
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, name) in names.iter().enumerate() {
        groups.entry(name.clone()).or_default().push(index);
    }
    let mut taken: HashSet<String> = names.iter().cloned().collect();
    let mut colliding: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|group| group.len() > 1)
        .collect();
    colliding.sort();
    for mut group in colliding {
        group.sort_by(|&a, &b| {
            let (a, b) = (&sources[a], &sources[b]);
            (a.path.len(), a.path, method_rank(a.method)).cmp(&(
                b.path.len(),
                b.path,
                method_rank(b.method),
            ))
        });
        let base = names[group[0]].clone();
        for &index in &group[1..] {
            let source = &sources[index];
            let mut candidates: Vec<String> = Vec::new();
            let left_out = left_out_segments(source.path);
            if !left_out.is_empty() {
                candidates.push(format!("{base}_{}", left_out.join("_")));
            }
            candidates.push(format!("{base}_{}", source.method.to_ascii_lowercase()));
            let chosen = candidates
                .into_iter()
                .map(|candidate| fit(&candidate, source, max_len))
                .find(|candidate| !taken.contains(candidate))
                .unwrap_or_else(|| {
                    (2..)
                        .map(|number| fit(&format!("{base}_{number}"), source, max_len))
                        .find(|candidate| !taken.contains(candidate))
                        .expect("some number is free")
                });
            taken.insert(chosen.clone());
            names[index] = chosen;
        }
    }
    names
}

/// Gives the operations of a known document the names its users know
/// (`known`: method, path, name), where such a name fits in `max_len` and
/// no other operation has it; an operation left out keeps its derived name.
pub(crate) fn apply_known(
    names: &mut [String],
    sources: &[NameSource<'_>],
    known: &[(&str, &str, &str)],
    max_len: usize,
) {
    let wanted: Vec<Option<&str>> = sources
        .iter()
        .map(|source| {
            known
                .iter()
                .find(|(method, path, _)| *method == source.method && *path == source.path)
                .map(|(_, _, name)| *name)
                .filter(|name| name.len() <= max_len)
        })
        .collect();
    // A name is given only where it is unique among the names all would
    // then have (a newer version of the document may derive one of them).
    let proposed: Vec<&str> = names
        .iter()
        .zip(&wanted)
        .map(|(derived, wanted)| wanted.unwrap_or(derived))
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &proposed {
        *count.entry(name).or_default() += 1;
    }
    let taken: HashSet<&str> = names
        .iter()
        .zip(&wanted)
        .filter(|(_, wanted)| wanted.is_none())
        .map(|(derived, _)| derived.as_str())
        .collect();
    let chosen: Vec<String> = names
        .iter()
        .zip(&wanted)
        .map(|(derived, wanted)| match wanted {
            Some(name) if count[name] == 1 && !taken.contains(name) => (*name).to_owned(),
            _ => derived.clone(),
        })
        .collect();
    // Falling back may clash in turn (a derived name that is another's
    // known one): then the document keeps its derived names whole.
    let distinct: HashSet<&String> = chosen.iter().collect();
    if distinct.len() == chosen.len() {
        names.clone_from_slice(&chosen);
    }
}

/// Applies the rename map; a key that names no operation, or a new name that
/// is invalid or taken, is an error (its message).
pub(crate) fn apply_renames(
    names: &mut [String],
    rename: &BTreeMap<String, String>,
    max_len: usize,
) -> Result<(), String> {
    let positions: HashMap<String, usize> = names
        .iter()
        .enumerate()
        .map(|(index, name)| (name.clone(), index))
        .collect();
    for (from, to) in rename {
        let Some(&index) = positions.get(from) else {
            let mut close: Vec<&String> = names
                .iter()
                .filter(|name| shares_word(name, from))
                .take(5)
                .collect();
            close.sort();
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!(
                    " (similar names: {})",
                    close
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(format!("`{from}` names no operation of the document{hint}"));
        };
        if to.is_empty()
            || to.len() > max_len
            || !to.chars().all(|character| {
                character.is_ascii_alphanumeric() || character == '_' || character == '-'
            })
        {
            return Err(format!(
                "`{to}` (for `{from}`) is not a tool name: 1 to {max_len} letters, digits, `_` or `-`"
            ));
        }
        names[index] = to.clone();
    }
    let mut seen = HashSet::new();
    for name in names.iter() {
        if !seen.insert(name) {
            return Err(format!("two operations would be named `{name}`"));
        }
    }
    Ok(())
}

fn shares_word(name: &str, other: &str) -> bool {
    let words: HashSet<&str> = other.split('_').filter(|word| word.len() > 2).collect();
    name.split('_').any(|word| words.contains(word))
}

fn method_rank(method: &str) -> usize {
    [
        "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
    ]
    .iter()
    .position(|known| known.eq_ignore_ascii_case(method))
    .unwrap_or(usize::MAX)
}

fn base_name(source: &NameSource<'_>, max_len: usize) -> String {
    let name = match source
        .operation_id
        .map(snake_case)
        .filter(|name| !name.is_empty())
    {
        Some(name) => name,
        None => derive(source.method, source.path, source.websocket),
    };
    fit(&name, source, max_len)
}

/// Cuts a name to `max_len`, ending it with a hash of method and path so two
/// long names that share a beginning stay apart.
fn fit(name: &str, source: &NameSource<'_>, max_len: usize) -> String {
    if name.len() <= max_len {
        return name.to_string();
    }
    let hash = fnv1a(format!("{} {}", source.method, source.path).as_bytes());
    let suffix = format!("_{:06x}", hash & 0xff_ffff);
    let keep = max_len.saturating_sub(suffix.len());
    let mut cut = name[..keep].trim_end_matches('_').to_string();
    cut.push_str(&suffix);
    cut
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// `listPets` → `list_pets`, `getHTTPStatus` → `get_http_status`,
/// `repos/get-content` → `repos_get_content`.
pub(crate) fn snake_case(text: &str) -> String {
    let characters: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 4);
    for (index, &character) in characters.iter().enumerate() {
        if character.is_ascii_alphanumeric() {
            if character.is_ascii_uppercase() && index > 0 {
                let previous = characters[index - 1];
                let next_is_lower = characters
                    .get(index + 1)
                    .is_some_and(|next| next.is_ascii_lowercase());
                if previous.is_ascii_lowercase()
                    || previous.is_ascii_digit()
                    || (previous.is_ascii_uppercase() && next_is_lower)
                {
                    out.push('_');
                }
            }
            out.push(character.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_');
    let mut collapsed = String::with_capacity(trimmed.len());
    for character in trimmed.chars() {
        if character == '_' && collapsed.ends_with('_') {
            continue;
        }
        collapsed.push(character);
    }
    collapsed
}

#[derive(Debug)]
enum Segment {
    Literal(Vec<String>),
    Parameter,
}

fn segments(path: &str) -> Vec<Segment> {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            if segment.starts_with('{') || segment.starts_with(':') {
                Segment::Parameter
            } else {
                Segment::Literal(
                    snake_case(segment)
                        .split('_')
                        .filter(|word| !word.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            }
        })
        .filter(|segment| !matches!(segment, Segment::Literal(words) if words.is_empty()))
        .collect()
}

fn is_version(word: &str) -> bool {
    let mut characters = word.chars();
    characters.next() == Some('v')
        && word.len() > 1
        && characters.all(|character| character.is_ascii_digit())
}

/// Whether a segment is left out of derived names: versions anywhere, and
/// `api` / `ws` at the start.
fn is_noise(words: &[String], at_start: bool) -> bool {
    words.len() == 1
        && (is_version(&words[0]) || (at_start && NOISE_SEGMENTS.contains(&words[0].as_str())))
}

/// The path segments a derived name leaves out (`v1`, `api`), to tell
/// colliding names apart.
fn left_out_segments(path: &str) -> Vec<String> {
    let mut left_out = Vec::new();
    let mut at_start = true;
    for segment in segments(path) {
        if let Segment::Literal(words) = &segment {
            if is_noise(words, at_start) {
                left_out.push(words.join("_"));
                continue;
            }
        }
        at_start = false;
    }
    left_out
}

fn singular(word: &str) -> String {
    if NOT_PLURAL.contains(&word) || word.len() <= 3 || word.ends_with("ss") || word.ends_with("us")
    {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for ending in ["sses", "shes", "ches", "xes", "zes"] {
        if word.ends_with(ending) {
            return word[..word.len() - 2].to_string();
        }
    }
    match word.strip_suffix('s') {
        Some(stem) => stem.to_string(),
        None => word.to_string(),
    }
}

fn is_plural(word: &str) -> bool {
    singular(word) != word
}

/// A name from method and path.
fn derive(method: &str, path: &str, websocket: bool) -> String {
    let mut at_start = true;
    // Literal words, each with whether a parameter follows its segment.
    let mut words: Vec<(String, bool)> = Vec::new();
    // Indexes of words that end a segment (only those are nouns to put in
    // the singular: `max-replicas-per-model` stays as written).
    let mut segment_ends: Vec<usize> = Vec::new();
    let mut ends_with_parameter = false;
    for segment in segments(path) {
        match segment {
            Segment::Literal(segment_words) => {
                if is_noise(&segment_words, at_start) {
                    continue;
                }
                at_start = false;
                ends_with_parameter = false;
                words.extend(segment_words.into_iter().map(|word| (word, false)));
                segment_ends.push(words.len() - 1);
            }
            Segment::Parameter => {
                ends_with_parameter = true;
                if let Some(last) = words.last_mut() {
                    last.1 = true;
                }
            }
        }
    }
    if words.is_empty() {
        let verb = match method {
            "GET" => "get",
            other => return format!("{}_root", other.to_ascii_lowercase()),
        };
        return format!("{verb}_root");
    }
    let method = method.to_ascii_uppercase();
    let last_index = words.len() - 1;
    let last = words[last_index].0.clone();

    // Modifiers read in the singular (`backend_galleries`), unless a
    // parameter follows (then they name one item anyway).
    let phrase = |words: &[(String, bool)], head_singular: bool| -> String {
        let count = words.len();
        words
            .iter()
            .enumerate()
            .map(|(index, (word, followed))| {
                let is_head = index + 1 == count;
                let ends_segment = segment_ends.contains(&index);
                if (!is_head && ends_segment) || (is_head && head_singular) || *followed {
                    singular(word)
                } else {
                    word.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("_")
    };

    if websocket {
        let rest: Vec<(String, bool)> = words
            .iter()
            .filter(|(word, _)| word != "stream" && word != "ws" && word != "websocket")
            .cloned()
            .collect();
        let rest = if rest.is_empty() { words.clone() } else { rest };
        let count = rest.len();
        let joined = rest
            .iter()
            .enumerate()
            .map(|(index, (word, _))| {
                if index + 1 < count {
                    singular(word)
                } else {
                    word.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("_");
        return format!("stream_{joined}");
    }

    let is_verb = |word: &str| ACTIONS.contains(&word) || MORE_ACTIONS.contains(&word);
    // A last segment that starts with an action: `PUT
    // /models/toggle-pinned/{name}` → `toggle_model_pinned`.
    let last_segment_start = segment_ends.iter().rev().nth(1).map_or(0, |end| end + 1);
    if method != "GET" && method != "HEAD" && last_index > last_segment_start {
        let verb = &words[last_segment_start].0;
        if is_verb(verb) {
            let object = words[last_segment_start + 1..]
                .iter()
                .map(|(word, _)| word.as_str())
                .collect::<Vec<_>>()
                .join("_");
            return if last_segment_start == 0 {
                format!("{verb}_{object}")
            } else {
                format!(
                    "{verb}_{}_{object}",
                    phrase(&words[..last_segment_start], true)
                )
            };
        }
    }
    let is_action = is_verb(&last);
    // Actions that read: `GET /files/download` → `download_files`.
    let reads = ["search", "download", "export"].contains(&last.as_str());
    let is_action = is_action && (reads || (method != "GET" && method != "HEAD"));
    if is_action && last_index > 0 {
        let rest = &words[..last_index];
        let head_singular =
            ends_with_parameter || rest.last().is_some_and(|(_, followed)| *followed);
        return format!("{last}_{}", phrase(rest, head_singular));
    }
    if is_action {
        return last;
    }
    if QUALIFIERS.contains(&last.as_str())
        && last_index > 0
        && method == "GET"
        && !ends_with_parameter
    {
        return format!("list_{last}_{}", phrase(&words[..last_index], false));
    }

    match method.as_str() {
        "GET" => {
            if ends_with_parameter {
                format!("get_{}", phrase(&words, true))
            } else if is_plural(&last) {
                format!("list_{}", phrase(&words, false))
            } else {
                format!("get_{}", phrase(&words, false))
            }
        }
        "POST" => format!("create_{}", phrase(&words, true)),
        "PUT" | "PATCH" => format!("update_{}", phrase(&words, ends_with_parameter)),
        "DELETE" => format!("delete_{}", phrase(&words, ends_with_parameter)),
        other => format!("{}_{}", other.to_ascii_lowercase(), phrase(&words, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(method: &str, path: &str) -> String {
        derive(method, path, false)
    }

    #[test]
    fn known_names_replace_derived_ones_unless_they_would_clash() {
        let source = |method, path| NameSource {
            method,
            path,
            operation_id: None,
            websocket: false,
        };
        let sources = [
            source("POST", "/v1/chat/completions"),
            source("GET", "/system"),
            source("POST", "/chat"),
        ];
        let derived = assign(&sources, 50);
        assert_eq!(derived[2], "create_chat");
        // `create_chat` is already the derived name of an operation the table
        // does not name: that one keeps it, the known one stays derived.
        let known = [
            ("POST", "/v1/chat/completions", "create_chat"),
            ("GET", "/system", "get_system_info"),
        ];
        let mut names = derived.clone();
        apply_known(&mut names, &sources, &known, 50);
        assert_eq!(
            names,
            [derived[0].as_str(), "get_system_info", "create_chat"]
        );
        // A known name too long for the room left by the prefix is not used.
        let mut names = derived.clone();
        apply_known(&mut names, &sources, &known, 10);
        assert_eq!(names[1], derived[1]);
    }

    #[test]
    fn derived_names_read_well() {
        assert_eq!(name("GET", "/v1/models"), "list_models");
        assert_eq!(
            name("POST", "/v1/images/generations"),
            "create_image_generation"
        );
        assert_eq!(name("GET", "/models/{id}"), "get_model");
        assert_eq!(name("DELETE", "/models/{id}"), "delete_model");
        assert_eq!(
            name("POST", "/v1/chat/completions"),
            "create_chat_completion"
        );
        assert_eq!(name("POST", "/models/apply"), "apply_models");
        assert_eq!(name("POST", "/backends/delete/{name}"), "delete_backend");
        assert_eq!(
            name("GET", "/backends/available"),
            "list_available_backends"
        );
        assert_eq!(name("GET", "/system"), "get_system");
        assert_eq!(name("POST", "/v1/tokenize"), "tokenize");
        assert_eq!(name("GET", "/search"), "search");
        assert_eq!(
            name("PUT", "/models/toggle-pinned/{name}/{action}"),
            "toggle_model_pinned"
        );
        assert_eq!(name("POST", "/run-report"), "run_report");
        assert_eq!(name("GET", "/reports/export"), "export_reports");
        assert_eq!(name("GET", "/backend/monitor"), "get_backend_monitor");
    }

    #[test]
    fn operation_ids_become_snake_case() {
        assert_eq!(snake_case("listPets"), "list_pets");
        assert_eq!(snake_case("getHTTPStatus"), "get_http_status");
        assert_eq!(snake_case("repos/get-content"), "repos_get_content");
        assert_eq!(snake_case("Pets.Create"), "pets_create");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let source = NameSource {
            method: "GET",
            path: "/x",
            operation_id: Some("a_very_long_operation_identifier_that_goes_on_and_on_forever_more"),
            websocket: false,
        };
        let names = assign(std::slice::from_ref(&source), 40);
        assert!(
            names[0].len() <= 40 && names[0].starts_with("a_very_long"),
            "{}",
            names[0]
        );
        assert_eq!(names, assign(&[source], 40));
    }
}
