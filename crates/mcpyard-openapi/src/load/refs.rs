//! `$ref`s: local ones (`#/components/schemas/Pet`) and references to files
//! next to the document (`common.yaml#/Pet`). Every file a document refers to
//! is read once, up front, so that resolving never does I/O.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{document, LoadError};

/// Where a value is: which document (0 is the one loaded, others are files it
/// refers to) and its JSON pointer there, in `#/a/b` form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Location {
    pub(crate) doc: usize,
    pub(crate) pointer: String,
}

impl Location {
    pub(crate) fn child(&self, key: &str) -> Location {
        Location {
            doc: self.doc,
            pointer: join_pointer(&self.pointer, key),
        }
    }
}

/// `#/paths` + `/v1/models` → `#/paths/~1v1~1models`.
pub(crate) fn join_pointer(pointer: &str, key: &str) -> String {
    let mut joined = String::with_capacity(pointer.len() + key.len() + 1);
    joined.push_str(pointer);
    joined.push('/');
    for character in key.chars() {
        match character {
            '~' => joined.push_str("~0"),
            '/' => joined.push_str("~1"),
            other => joined.push(other),
        }
    }
    joined
}

#[derive(Debug)]
struct Document {
    origin: String,
    dir: Option<PathBuf>,
    value: Value,
}

/// The loaded document and the files it refers to.
#[derive(Debug)]
pub(crate) struct Resolver {
    documents: Vec<Document>,
    /// (referring document, file as written) → document.
    files: HashMap<(usize, String), usize>,
}

/// A chain of `$ref`s longer than this is taken for a loop.
const MAX_REF_HOPS: usize = 64;

impl Resolver {
    pub(crate) fn new(
        origin: &str,
        value: Value,
        base_dir: Option<&Path>,
    ) -> Result<Resolver, LoadError> {
        let mut resolver = Resolver {
            documents: vec![Document {
                origin: origin.to_string(),
                dir: base_dir.map(Path::to_path_buf),
                value,
            }],
            files: HashMap::new(),
        };
        let mut by_path: HashMap<PathBuf, usize> = HashMap::new();
        let mut next = 0;
        while next < resolver.documents.len() {
            let doc = next;
            next += 1;
            for file in external_files(&resolver.documents[doc].value) {
                if resolver.files.contains_key(&(doc, file.clone())) {
                    continue;
                }
                let found = resolver.read_referenced(doc, &file, &mut by_path)?;
                resolver.files.insert((doc, file), found);
            }
        }
        Ok(resolver)
    }

    fn read_referenced(
        &mut self,
        doc: usize,
        file: &str,
        by_path: &mut HashMap<PathBuf, usize>,
    ) -> Result<usize, LoadError> {
        let referring = &self.documents[doc];
        let fail = |message: String| {
            let pointer = pointer_of_ref(&referring.value, file).unwrap_or_else(|| "#".into());
            LoadError::invalid(&referring.origin, &pointer, message)
        };
        if file.contains("://") {
            return Err(fail(format!(
                "$ref to `{file}`: references to URLs are not followed; save the file next to the document"
            )));
        }
        let Some(dir) = &referring.dir else {
            return Err(fail(format!(
                "$ref to `{file}`: references to other files are followed only for a document read from a file"
            )));
        };
        let path = dir.join(file);
        let canonical = path
            .canonicalize()
            .map_err(|error| fail(format!("$ref to `{file}`: cannot read it: {error}")))?;
        if let Some(&found) = by_path.get(&canonical) {
            return Ok(found);
        }
        let origin = path.display().to_string();
        let text = document::read_file(&canonical)?;
        let parsed = document::parse_text(&origin, &text)?;
        self.documents.push(Document {
            origin,
            dir: canonical.parent().map(Path::to_path_buf),
            value: parsed.value,
        });
        let index = self.documents.len() - 1;
        by_path.insert(canonical, index);
        Ok(index)
    }

    pub(crate) fn root(&self) -> &Value {
        &self.documents[0].value
    }

    pub(crate) fn origin(&self, doc: usize) -> &str {
        &self.documents[doc].origin
    }

    /// The value at a location (which exists: locations come from walking).
    pub(crate) fn get(&self, location: &Location) -> Option<&Value> {
        lookup(&self.documents[location.doc].value, &location.pointer)
    }

    pub(crate) fn error(&self, at: &Location, message: impl Into<String>) -> LoadError {
        LoadError::invalid(self.origin(at.doc), &at.pointer, message)
    }

    /// Where `reference`, written at `at`, points.
    pub(crate) fn target(&self, at: &Location, reference: &str) -> Result<Location, LoadError> {
        let (file, fragment) = match reference.split_once('#') {
            Some((file, fragment)) => (file, fragment),
            None => (reference, ""),
        };
        let doc = if file.is_empty() {
            at.doc
        } else {
            *self
                .files
                .get(&(at.doc, file.to_string()))
                .ok_or_else(|| self.error(at, format!("$ref `{reference}` points nowhere")))?
        };
        let location = Location {
            doc,
            pointer: format!("#{}", percent_decode(fragment)),
        };
        if self.get(&location).is_none() {
            return Err(self.error(at, format!("$ref `{reference}` points nowhere")));
        }
        Ok(location)
    }

    /// Follows `$ref`s from the value at `at` until a value that is not one
    /// (parameters, request bodies, responses, path items). Returns the final
    /// location and value.
    pub(crate) fn follow<'a>(
        &'a self,
        at: Location,
        value: &'a Value,
    ) -> Result<(Location, &'a Value), LoadError> {
        let mut location = at;
        let mut current = value;
        for _ in 0..MAX_REF_HOPS {
            let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
                return Ok((location, current));
            };
            let target = self.target(&location, reference)?;
            current = self.get(&target).expect("target checked to exist");
            location = target;
        }
        Err(self.error(&location, "$ref chain loops"))
    }
}

/// `#/a/b` (or `#`, or `/a/b`) looked up in a value.
fn lookup<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
    if pointer.is_empty() {
        Some(value)
    } else {
        value.pointer(pointer)
    }
}

/// Fragments may be percent-encoded (`#/paths/~1pets~1%7Bid%7D`).
fn percent_decode(fragment: &str) -> String {
    if !fragment.contains('%') {
        return fragment.to_string();
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' && index + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).ok();
            if let Some(byte) = hex.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                decoded.push(byte);
                index += 3;
                continue;
            }
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The file parts of every `$ref` to another file in a document.
fn external_files(value: &Value) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(reference)) = object.get("$ref") {
                    let file = reference.split('#').next().unwrap_or_default();
                    if !file.is_empty() && !files.iter().any(|known| known == file) {
                        files.push(file.to_string());
                    }
                }
                stack.extend(object.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    files
}

/// Where the first `$ref` to `file` is written, for a message.
fn pointer_of_ref(value: &Value, file: &str) -> Option<String> {
    let mut stack = vec![(value, "#".to_string())];
    while let Some((value, pointer)) = stack.pop() {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(reference)) = object.get("$ref") {
                    if reference.split('#').next() == Some(file) {
                        return Some(pointer);
                    }
                }
                for (key, child) in object {
                    stack.push((child, join_pointer(&pointer, key)));
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    stack.push((child, join_pointer(&pointer, &index.to_string())));
                }
            }
            _ => {}
        }
    }
    None
}
