//! Document schemas (Swagger 2.0, OpenAPI 3.0, 3.1) to JSON Schema 2020-12.
//!
//! A `$ref` is inlined while that keeps the schema small and finite; a
//! reference back to a schema being inlined (a cycle), a deep chain, or a
//! schema already grown large becomes `{"$ref": "#/$defs/NAME"}` with the
//! target converted once into `$defs`. The walk keeps the chain of
//! references being inlined (the visited set), so a recursive schema never
//! inlines forever; the recursion itself is bounded by the document's nesting
//! (the JSON and YAML parsers stop at 128 levels) times a few levels of
//! inlining.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::load::refs::Location;
use crate::load::{LoadError, Resolver};
use crate::model::DocVersion;

/// References inlined inside each other before `$defs` take over.
const MAX_INLINE_DEPTH: usize = 6;
/// Schema objects produced for one tool before every further reference goes
/// to `$defs` (a shared schema inlined at many places grows fast).
const INLINE_NODE_BUDGET: usize = 2_000;
/// Nesting below this is cut (as `{}`, which accepts anything).
const MAX_NESTING: usize = 256;

const JSON_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "array", "object", "null",
];

/// Which way the data goes: request schemas leave out `readOnly` properties,
/// response schemas `writeOnly` ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Request,
    Response,
}

/// Converts the schemas of one tool (its input schema or its output schema),
/// collecting the `$defs` they share.
#[derive(Debug)]
pub(crate) struct SchemaBuilder<'r> {
    resolver: &'r Resolver,
    version: DocVersion,
    direction: Direction,
    defs: BTreeMap<String, Value>,
    def_names: HashMap<Location, String>,
    pending: Vec<Location>,
    inlining: Vec<Location>,
    nodes: usize,
}

impl<'r> SchemaBuilder<'r> {
    pub(crate) fn new(resolver: &'r Resolver, version: DocVersion, direction: Direction) -> Self {
        SchemaBuilder {
            resolver,
            version,
            direction,
            defs: BTreeMap::new(),
            def_names: HashMap::new(),
            pending: Vec::new(),
            inlining: Vec::new(),
            nodes: 0,
        }
    }

    /// The schema written at `at`, converted.
    pub(crate) fn convert(&mut self, at: &Location, schema: &Value) -> Result<Value, LoadError> {
        self.convert_node(at, schema, 0)
    }

    /// The `$defs` the converted schemas refer to (empty when none).
    pub(crate) fn finish(mut self) -> Result<Map<String, Value>, LoadError> {
        while let Some(target) = self.pending.pop() {
            let value = self
                .resolver
                .get(&target)
                .cloned()
                .unwrap_or(Value::Bool(true));
            self.inlining = vec![target.clone()];
            let converted = self.convert_node(&target, &value, 0)?;
            let name = self.def_names[&target].clone();
            self.defs.insert(name, converted);
        }
        Ok(self.defs.into_iter().collect())
    }

    fn convert_node(
        &mut self,
        at: &Location,
        schema: &Value,
        depth: usize,
    ) -> Result<Value, LoadError> {
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(flag) => return Ok(Value::Bool(*flag)),
            _ => return Ok(json!({})),
        };
        if depth > MAX_NESTING {
            return Ok(json!({}));
        }
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.convert_ref(at, reference, object, depth);
        }
        self.nodes += 1;
        let legacy = self.version != DocVersion::OpenApi31;
        let mut out = Map::new();
        let mut nullable = false;
        let mut skipped_properties = Vec::new();
        for (key, value) in object {
            match key.as_str() {
                "nullable" | "x-nullable" => nullable = value.as_bool() == Some(true),
                key if key.starts_with("x-") => {}
                "discriminator" | "xml" | "externalDocs" | "$schema" | "$id" | "$anchor"
                | "$dynamicAnchor" | "$dynamicRef" | "$comment" | "$vocabulary"
                | "collectionFormat" | "allowEmptyValue" | "in" | "name" | "style" | "explode"
                | "allowReserved" => {}
                "example" => {
                    if !object.contains_key("examples") {
                        out.insert("examples".into(), Value::Array(vec![value.clone()]));
                    }
                }
                "examples" => {
                    if value.is_array() {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "type" => {
                    if let Some(kind) = convert_type(value) {
                        out.insert(key.clone(), kind);
                    }
                    if value.as_str() == Some("file") {
                        out.insert("format".into(), json!("binary"));
                    }
                }
                "format" => {
                    if object.get("type").and_then(Value::as_str) != Some("file") {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "required" => {
                    if let Value::Array(names) = value {
                        let mut unique: Vec<Value> = Vec::new();
                        for name in names.iter().filter(|name| name.is_string()) {
                            if !unique.contains(name) {
                                unique.push(name.clone());
                            }
                        }
                        out.insert(key.clone(), Value::Array(unique));
                    }
                }
                "enum" => {
                    if matches!(value, Value::Array(items) if !items.is_empty()) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "properties" => {
                    let mut properties = Map::new();
                    if let Value::Object(entries) = value {
                        let base = at.child("properties");
                        for (name, property) in entries {
                            if self.left_out(property) {
                                skipped_properties.push(name.clone());
                                continue;
                            }
                            let converted =
                                self.convert_node(&base.child(name), property, depth + 1)?;
                            properties.insert(name.clone(), converted);
                        }
                    }
                    out.insert(key.clone(), Value::Object(properties));
                }
                "patternProperties" | "dependentSchemas" | "$defs" | "definitions" => {
                    if let Value::Object(entries) = value {
                        let base = at.child(key);
                        let mut converted = Map::new();
                        for (name, entry) in entries {
                            converted.insert(
                                name.clone(),
                                self.convert_node(&base.child(name), entry, depth + 1)?,
                            );
                        }
                        let key = if key == "definitions" { "$defs" } else { key };
                        out.insert(key.to_string(), Value::Object(converted));
                    }
                }
                "items" => match value {
                    // Draft 4's tuple form is 2020-12's `prefixItems`.
                    Value::Array(items) => {
                        let converted = self.convert_list(&at.child(key), items, depth)?;
                        out.insert("prefixItems".into(), converted);
                    }
                    _ => {
                        let converted = self.convert_node(&at.child(key), value, depth + 1)?;
                        out.insert(key.clone(), converted);
                    }
                },
                "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => {
                    let converted = self.convert_node(&at.child(key), value, depth + 1)?;
                    out.insert(key.clone(), converted);
                }
                "additionalItems" => {}
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    if let Value::Array(items) = value {
                        if !items.is_empty() {
                            let converted = self.convert_list(&at.child(key), items, depth)?;
                            out.insert(key.clone(), converted);
                        }
                    }
                }
                "exclusiveMaximum" | "exclusiveMinimum" if value.is_boolean() => {}
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        if legacy {
            // 3.0 / 2.0: `exclusiveMaximum: true` qualifies `maximum`.
            for (flag, bound) in [
                ("exclusiveMaximum", "maximum"),
                ("exclusiveMinimum", "minimum"),
            ] {
                if object.get(flag) == Some(&Value::Bool(true)) {
                    if let Some(limit) = out.remove(bound) {
                        out.insert(flag.into(), limit);
                    }
                }
            }
        }
        if !skipped_properties.is_empty() {
            if let Some(Value::Array(required)) = out.get_mut("required") {
                required.retain(|name| {
                    !skipped_properties
                        .iter()
                        .any(|skipped| Some(skipped.as_str()) == name.as_str())
                });
            }
        }
        if nullable {
            make_nullable(&mut out);
        }
        Ok(Value::Object(out))
    }

    fn convert_list(
        &mut self,
        at: &Location,
        items: &[Value],
        depth: usize,
    ) -> Result<Value, LoadError> {
        let mut converted = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            converted.push(self.convert_node(&at.child(&index.to_string()), item, depth + 1)?);
        }
        Ok(Value::Array(converted))
    }

    fn convert_ref(
        &mut self,
        at: &Location,
        reference: &str,
        siblings: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, LoadError> {
        let target = self.resolver.target(at, reference)?;
        let by_name = self.inlining.contains(&target)
            || self.inlining.len() >= MAX_INLINE_DEPTH
            || self.nodes >= INLINE_NODE_BUDGET;
        let mut converted = if by_name {
            let name = self.def_name(&target);
            json!({ "$ref": format!("#/$defs/{name}") })
        } else {
            let value = self
                .resolver
                .get(&target)
                .cloned()
                .unwrap_or(Value::Bool(true));
            self.inlining.push(target);
            let converted = self.convert_node(
                &self.inlining[self.inlining.len() - 1].clone(),
                &value,
                depth + 1,
            );
            self.inlining.pop();
            converted?
        };
        // A description next to a `$ref` says what this use of it means.
        if let (Some(description), Value::Object(out)) =
            (siblings.get("description"), &mut converted)
        {
            out.insert("description".into(), description.clone());
        }
        if siblings.get("nullable").and_then(Value::as_bool) == Some(true) {
            if let Value::Object(out) = &mut converted {
                if out.contains_key("$ref") {
                    converted = json!({ "anyOf": [converted, { "type": "null" }] });
                } else {
                    make_nullable(out);
                }
            }
        }
        Ok(converted)
    }

    fn def_name(&mut self, target: &Location) -> String {
        if let Some(name) = self.def_names.get(target) {
            return name.clone();
        }
        let last = target.pointer.rsplit('/').next().unwrap_or("schema");
        let last = last.replace("~1", "/").replace("~0", "~");
        let mut base: String = last
            .chars()
            .map(|character| {
                if character.is_ascii_alphanumeric() || "_.-".contains(character) {
                    character
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base == "#" {
            base = "schema".into();
        }
        let mut name = base.clone();
        let mut counter = 2;
        while self.def_names.values().any(|taken| *taken == name) {
            name = format!("{base}_{counter}");
            counter += 1;
        }
        self.def_names.insert(target.clone(), name.clone());
        self.pending.push(target.clone());
        name
    }

    /// Whether a property is left out in this direction (`readOnly` in a
    /// request, `writeOnly` in a response), looking through one `$ref`.
    fn left_out(&self, property: &Value) -> bool {
        let flag = match self.direction {
            Direction::Request => "readOnly",
            Direction::Response => "writeOnly",
        };
        if property.get(flag).and_then(Value::as_bool) == Some(true) {
            return true;
        }
        false
    }
}

fn convert_type(value: &Value) -> Option<Value> {
    match value {
        Value::String(kind) if kind == "file" => Some(json!("string")),
        Value::String(kind) if JSON_TYPES.contains(&kind.as_str()) => Some(value.clone()),
        Value::Array(kinds) => {
            let mut valid: Vec<Value> = Vec::new();
            for kind in kinds {
                if let Some(name) = kind.as_str() {
                    if JSON_TYPES.contains(&name) && !valid.contains(kind) {
                        valid.push(kind.clone());
                    }
                }
            }
            (!valid.is_empty()).then_some(Value::Array(valid))
        }
        _ => None,
    }
}

/// 3.0's `nullable: true`: `null` joins the type (and the enum).
fn make_nullable(schema: &mut Map<String, Value>) {
    match schema.get_mut("type") {
        Some(Value::String(kind)) => {
            let kind = kind.clone();
            if kind != "null" {
                schema.insert("type".into(), json!([kind, "null"]));
            }
        }
        Some(Value::Array(kinds)) if !kinds.iter().any(|kind| kind == "null") => {
            kinds.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
}

/// Checks that a schema compiles as Draft 2020-12. Patterns the regex engine
/// refuses (documents carry other dialects' regexes) are removed first if
/// they are what fails.
pub(crate) fn ensure_compiles(schema: &mut Value) -> Result<(), String> {
    if jsonschema::draft202012::new(schema).is_ok() {
        return Ok(());
    }
    remove_patterns(schema);
    jsonschema::draft202012::new(schema)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

fn remove_patterns(schema: &mut Value) {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                if object.get("pattern").is_some_and(Value::is_string) {
                    object.remove("pattern");
                }
                if object
                    .get("patternProperties")
                    .is_some_and(Value::is_object)
                {
                    object.remove("patternProperties");
                }
                stack.extend(object.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}
