//! The reference pages against the code: every key the file structs read
//! is documented in `docs/`, every documented key is read, and every
//! relative link of `README.md` and `docs/` leads somewhere.
//!
//! The keys come from the structs themselves: [`Probe`] is a serde
//! `Deserializer` that feeds a struct every field it asks for in
//! `deserialize_struct` and records the field names as dotted paths
//! (`servers.*.command`, `auth.keys[].name`), one element of each sequence
//! and one entry of each map (a `*`: a name the user chooses). A value
//! read through `deserialize_any` (an untagged enum, a `serde_json::Value`)
//! is a leaf, and of an enum only the first variant is followed: the
//! configuration has no struct behind either today.
//!
//! The documented keys come from the key tables of the pages: a table whose
//! header's first cell is `key` lists, in backticks in its first column,
//! keys relative to the section the heading above it names in backticks
//! (`` ## `[servers.NAME]` ``, `` ## `[[auth.keys]]` ``; a heading naming
//! none is the top level). A section's own key is documented by its
//! heading; `NAME`, `TOOL` and `<...>` stand for user-chosen names.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use super::file::ConfigFile;

/// A user-chosen name (a map key) in a key path.
const ANY: &str = "*";

#[derive(Debug)]
struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// What one run of the probe found.
#[derive(Default)]
struct Record {
    keys: BTreeSet<String>,
    /// Structs already enumerated, by name and fields, and where: the same
    /// struct under a second key (`mcpServers.*` beside `servers.*`, a
    /// server's `auth` beside its `oauth`) is that key's alone to document.
    structs: BTreeMap<(&'static str, Vec<&'static str>), String>,
    /// Paths whose `deserialize_any` is answered with a number rather than
    /// a string (a value that is parsed as it is read, such as a duration).
    numeric: BTreeSet<String>,
    last_any: Option<String>,
    /// Fields not fed: the aliases of a field fed already (serde lists a
    /// field's other spellings among its fields, and two spellings of one
    /// field are a duplicate).
    skipped: BTreeSet<String>,
    last_field: Option<String>,
}

/// The deserializer that records the fields asked for at `path`.
#[derive(Clone, Copy)]
struct Probe<'a> {
    path: &'a str,
    /// False below a struct already enumerated elsewhere.
    recording: bool,
    record: &'a RefCell<Record>,
}

impl<'a> Probe<'a> {
    fn child(&self, path: &'a str) -> Probe<'a> {
        Probe { path, ..*self }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let numeric = {
            let mut record = self.record.borrow_mut();
            record.last_any = Some(self.path.to_owned());
            record.numeric.contains(self.path)
        };
        if numeric {
            v.visit_u64(1)
        } else {
            v.visit_str("1")
        }
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bool(false)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_i64(1)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_i64(1)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_i64(1)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_i64(1)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(1)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(1)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(1)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(1)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(1.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(1.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_char('x')
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("x")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("x")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(b"x")
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(b"x")
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_some(self)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let path = format!("{}[]", self.path);
        v.visit_seq(Elements {
            probe: self.child(&path),
            left: 1,
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        let path = format!("{}[]", self.path);
        v.visit_seq(Elements {
            probe: self.child(&path),
            left: len,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let path = join(self.path, ANY);
        v.visit_map(Entries {
            probe: self.child(&path),
            keys: vec!["NAME"],
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let mut recording = self.recording;
        if recording {
            let mut record = self.record.borrow_mut();
            let first = record
                .structs
                .entry((name, fields.to_vec()))
                .or_insert_with(|| self.path.to_owned());
            recording = *first == self.path;
            if recording {
                for field in fields {
                    let key = join(self.path, field);
                    record.keys.insert(key);
                }
            }
        }
        v.visit_map(Fields {
            probe: Probe { recording, ..self },
            fields,
            at: 0,
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_enum(Variant {
            probe: self,
            name: variants.first().copied().unwrap_or("x"),
        })
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("x")
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
}

/// One element of a sequence (or `len` of a tuple), at `path[]`.
struct Elements<'a> {
    probe: Probe<'a>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Elements<'_> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.probe).map(Some)
    }
}

/// One entry of a map, at `path.*`.
struct Entries<'a> {
    probe: Probe<'a>,
    keys: Vec<&'static str>,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.keys.pop() {
            Some(key) => seed.deserialize(key.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self.probe)
    }
}

/// Every field of a struct, each at `path.field`.
struct Fields<'a> {
    probe: Probe<'a>,
    fields: &'static [&'static str],
    at: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        loop {
            let Some(field) = self.fields.get(self.at) else {
                return Ok(None);
            };
            let path = join(self.probe.path, field);
            let mut record = self.probe.record.borrow_mut();
            if record.skipped.contains(&path) {
                self.at += 1;
                continue;
            }
            record.last_field = Some(path);
            drop(record);
            return seed.deserialize((*field).into_deserializer()).map(Some);
        }
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let path = join(self.probe.path, self.fields[self.at]);
        self.at += 1;
        seed.deserialize(self.probe.child(&path))
    }
}

/// The first variant of an enum.
struct Variant<'a> {
    probe: Probe<'a>,
    name: &'static str,
}

impl<'de, 'a> EnumAccess<'de> for Variant<'a> {
    type Error = Error;
    type Variant = Probe<'a>;
    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Probe<'a>), Error> {
        let value = seed.deserialize(self.name.into_deserializer())?;
        Ok((value, self.probe))
    }
}

impl<'de> VariantAccess<'de> for Probe<'_> {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_struct("variant", fields, v)
    }
}

/// Every key the configuration file structs read.
fn code_keys() -> BTreeSet<String> {
    let mut numeric = BTreeSet::new();
    let mut skipped = BTreeSet::new();
    for _ in 0..1000 {
        let record = RefCell::new(Record {
            numeric: numeric.clone(),
            skipped: skipped.clone(),
            ..Record::default()
        });
        let probe = Probe {
            path: "",
            recording: true,
            record: &record,
        };
        let result = <ConfigFile as serde::Deserialize>::deserialize(probe);
        let record = record.into_inner();
        match result {
            Ok(_) => return record.keys,
            Err(e) if e.0.starts_with("duplicate field") => {
                // The last field fed was an alias of one fed before.
                let at = record.last_field.unwrap_or_default();
                assert!(skipped.insert(at.clone()), "{e} (at `{at}`)");
            }
            Err(e) => {
                // A value parsed as it is read took the string: give that
                // place a number next time.
                let at = record.last_any.unwrap_or_default();
                assert!(
                    numeric.insert(at.clone()),
                    "the probe cannot read the configuration structs: {e} (at `{at}`)"
                );
            }
        }
    }
    panic!("the probe gave up: too many retries");
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `README.md` and every page of `docs/`, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            (p, text)
        })
        .collect()
}

/// The spans between backticks of a line.
fn backticked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A documented path in the probe's spelling: user-chosen names as `*`.
fn normalise(path: &str) -> String {
    path.split('.')
        .map(|segment| {
            let (name, rest) = match segment.find("[]") {
                Some(at) => segment.split_at(at),
                None => (segment, ""),
            };
            let placeholder = (name.starts_with('<') && name.ends_with('>'))
                || (!name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase()));
            if placeholder {
                format!("{ANY}{rest}")
            } else {
                segment.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// A key and the keys holding it: `auth.keys[].name` documents `auth`,
/// `auth.keys` and itself.
fn with_ancestors(path: &str, into: &mut BTreeSet<String>) {
    let segments: Vec<&str> = path.split('.').collect();
    for end in 1..=segments.len() {
        let key = segments[..end].join(".");
        let key = key.strip_suffix("[]").unwrap_or(&key);
        if !key.ends_with(ANY) {
            into.insert(key.to_owned());
        }
    }
}

/// The sections a heading names: `` `[servers.NAME]` `` is `servers.*`,
/// `` `[[auth.keys]]` `` is `auth.keys[]`.
fn sections(heading: &str) -> Vec<String> {
    backticked(heading)
        .into_iter()
        .filter_map(|span| {
            if let Some(inner) = span.strip_prefix("[[").and_then(|s| s.strip_suffix("]]")) {
                Some(format!("{}[]", normalise(inner)))
            } else {
                let inner = span.strip_prefix('[').and_then(|s| s.strip_suffix(']'))?;
                Some(normalise(inner))
            }
        })
        .collect()
}

/// Every key the pages document, with the page that documents it.
fn documented_keys() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (path, text) in pages() {
        let page = path
            .strip_prefix(root())
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut prefixes = vec![String::new()];
        let mut in_code = false;
        let mut in_key_table = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            if line.starts_with('#') {
                let named = sections(line);
                prefixes = if named.is_empty() {
                    vec![String::new()]
                } else {
                    named
                };
                let mut keys = BTreeSet::new();
                for p in prefixes.iter().filter(|p| !p.is_empty()) {
                    with_ancestors(p, &mut keys);
                }
                for k in keys {
                    out.entry(k).or_insert_with(|| page.clone());
                }
                continue;
            }
            if !line.starts_with('|') {
                in_key_table = false;
                continue;
            }
            let first = line
                .trim_start_matches('|')
                .split('|')
                .next()
                .unwrap_or("")
                .trim();
            if first == "key" {
                in_key_table = true;
                continue;
            }
            if !in_key_table || first.starts_with("---") {
                continue;
            }
            let mut keys = BTreeSet::new();
            for key in backticked(first) {
                for prefix in &prefixes {
                    with_ancestors(&join(prefix, &normalise(key)), &mut keys);
                }
            }
            for k in keys {
                out.entry(k).or_insert_with(|| page.clone());
            }
        }
    }
    out
}

/// A path as the pages spell it.
fn shown(path: &str) -> String {
    path.replace(ANY, "NAME")
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let code = code_keys();
    assert!(
        code.contains("servers.*.command") && code.contains("auth.keys[].name"),
        "the probe missed nested keys: {code:?}"
    );
    let documented = documented_keys();
    let undocumented: Vec<String> = code
        .iter()
        .filter(|k| !documented.contains_key(*k))
        .map(|k| shown(k))
        .collect();
    let stale: Vec<String> = documented
        .iter()
        .filter(|(k, _)| !code.contains(*k))
        .map(|(k, page)| format!("{} ({page})", shown(k)))
        .collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "keys the configuration reads but no key table of docs/ documents:\n  {}\n\
         keys docs/ documents that the configuration does not read:\n  {}\n\
         (a key table is a table whose first header cell is `key`, under a heading \
         naming its section in backticks, such as `[servers.NAME]`)",
        undocumented.join("\n  "),
        stale.join("\n  "),
    );
}

/// The anchor GitHub gives a heading.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(anchor(line));
        }
    }
    out
}

/// The targets of the Markdown links `[text](target)` outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let pages = pages();
    let root = root();
    let mut broken = Vec::new();
    for (path, text) in &pages {
        let shown = path.strip_prefix(&root).unwrap_or(path).display();
        for target in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                path.clone()
            } else {
                path.parent().unwrap().join(file)
            };
            if !resolved.exists() {
                broken.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if let Some(fragment) = fragment {
                let text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&text).contains(fragment) {
                    broken.push(format!("{shown}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links leading nowhere:\n  {}",
        broken.join("\n  ")
    );
}
