//! A tool's arguments: each tool declares one struct that both parses the
//! call (serde, unknown fields refused) and generates the tool's
//! `inputSchema` (schemars), so the two cannot drift. Parse errors name the
//! argument and what it should be, so a model can fix its call.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::engine::ModelRequest;
use crate::error::ToolError;

/// What the shared `model` argument means, for every model-using tool.
pub(crate) const MODEL_DOC: &str = "Model id as list_models shows it. Omit to use a loaded (else downloaded) model that can do the job.";
/// What the shared `allow_download` argument means.
pub(crate) const ALLOW_DOWNLOAD_DOC: &str = "Allow downloading the model when no server has it (Ollama, Lemonade, LocalAI). Downloads can be gigabytes: only set this when the user agreed.";

/// A call's arguments as they came: an object, not yet read by the tool.
#[derive(Debug, Clone, Default)]
pub(crate) struct Args(Map<String, Value>);

impl Args {
    /// Arguments from the call (`null` and absent mean none).
    pub(crate) fn new(v: Value) -> Result<Self, ToolError> {
        match v {
            Value::Object(m) => Ok(Self(m)),
            Value::Null => Ok(Self::default()),
            _ => Err(ToolError::InvalidArguments(
                "arguments must be an object".into(),
            )),
        }
    }

    /// The arguments as the tool's struct `T`. An argument whose value is
    /// `null` counts as absent, as it always has.
    pub(crate) fn parse<T: DeserializeOwned + JsonSchema>(self) -> Result<T, ToolError> {
        let object: Map<String, Value> = self.0.into_iter().filter(|(_, v)| !v.is_null()).collect();
        serde_path_to_error::deserialize(Value::Object(object))
            .map_err(|e| ToolError::InvalidArguments(explain::<T>(e)))
    }
}

/// A serde error as a sentence naming the argument: where it is (its path,
/// e.g. `images[1]`), then what serde expected there.
fn explain<T: JsonSchema>(e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let message = e.into_inner().to_string();
    // serde says "missing field `x`"; the schema says what `x` is.
    if let Some(field) = backticked(&message, "missing field `") {
        let schema = input_schema::<T>();
        let at = if path == "." {
            String::new()
        } else {
            format!("{path}.")
        };
        return match schema
            .pointer(&format!("/properties/{field}/description"))
            .and_then(Value::as_str)
            .filter(|_| path == ".")
        {
            Some(what) => format!("`{at}{field}` is required: {what}"),
            None => format!("`{at}{field}` is required"),
        };
    }
    if let Some(field) = backticked(&message, "unknown field `") {
        // The path ends with the unknown key itself; the place is its parent.
        let parent = path
            .strip_suffix(field)
            .map(|p| p.trim_end_matches('.'))
            .unwrap_or(&path);
        let expected = message.split_once(", expected ").map(|(_, e)| e);
        let (what, place) = if parent.is_empty() || parent == "." {
            ("argument", String::new())
        } else {
            ("key", format!(" in `{parent}`"))
        };
        return match expected {
            Some(list) => format!("unknown {what} `{field}`{place}; expected {list}"),
            None => format!("unknown {what} `{field}`{place}"),
        };
    }
    if path == "." {
        message
    } else {
        format!("`{path}`: {message}")
    }
}

/// The name in `prefix<name>`…, when `message` starts with `prefix`.
fn backticked<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    message.strip_prefix(prefix)?.split('`').next()
}

/// The JSON Schema of `T` as an MCP `inputSchema`: an object schema with
/// every subschema inline (clients resolve no `$ref`), no `$schema`, and
/// optional fields described by their type alone (absent or `null` both
/// mean "not given").
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        // The struct's name and doc are Rust's, not the tool's.
        root.remove("title");
        root.remove("description");
    }
    without_null(&mut schema);
    schema
}

/// Removes the `null` that schemars adds to each `Option`: an optional
/// argument is one that may be left out (`null` is still accepted as "left
/// out", as it always was), and some clients reject type arrays.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any)) = map.get_mut("anyOf") {
                any.retain(|s| s.get("type") != Some(&Value::from("null")));
                if any.len() == 1 {
                    if let Some(Value::Object(only)) = any.pop() {
                        map.remove("anyOf");
                        for (k, v) in only {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// `model` and `allow_download`, as every model-using tool takes them.
pub(crate) fn model_request(model: &Option<String>, allow_download: bool) -> ModelRequest {
    ModelRequest {
        model: model.clone(),
        allow_download,
    }
}

/// For `Option<String>` fields: a blank string means "not given", as a
/// model often sends `""` for an argument it means to leave out.
pub(crate) fn blank_is_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    Ok(s.filter(|s| !s.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::Args;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        /// What to say.
        prompt: String,
        model: Option<String>,
        count: Option<u32>,
    }

    #[test]
    fn arguments_the_schema_does_not_declare_are_refused() {
        let fine = Args::new(json!({"prompt": "hi"})).expect("an object");
        assert!(fine.parse::<Sample>().is_ok());
        let typo = Args::new(json!({"promt": "hi"})).expect("an object");
        let err = typo.parse::<Sample>().expect_err("refused").to_string();
        assert!(err.contains("`promt`") && err.contains("prompt"), "{err}");
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Nested {
        items: Vec<Sample>,
    }

    #[test]
    fn an_unknown_key_inside_an_argument_is_placed() {
        let err = Args::new(json!({"items": [{"prompt": "a"}, {"prompt": "b", "url": "x"}]}))
            .and_then(Args::parse::<Nested>)
            .expect_err("url is not a key of an item")
            .to_string();
        assert!(err.contains("unknown key `url` in `items[1]`"), "{err}");
        let err = Args::new(json!({"item": []}))
            .and_then(Args::parse::<Nested>)
            .expect_err("item is not an argument")
            .to_string();
        assert!(
            err.contains("unknown argument `item`; expected `items`"),
            "{err}"
        );
    }

    #[test]
    fn errors_name_the_argument_and_what_it_should_be() {
        let err = Args::new(json!({"prompt": "hi", "count": "two"}))
            .and_then(Args::parse::<Sample>)
            .expect_err("a string is not a count")
            .to_string();
        assert!(err.contains("`count`") && err.contains("u32"), "{err}");
        let err = Args::new(json!({}))
            .and_then(Args::parse::<Sample>)
            .expect_err("prompt is required")
            .to_string();
        assert!(err.contains("`prompt` is required: What to say."), "{err}");
    }

    #[test]
    fn null_and_absent_mean_none() {
        let s: Sample = Args::new(json!({"prompt": "p", "model": null}))
            .and_then(Args::parse)
            .expect("null is absent");
        assert!(s.model.is_none());
        assert!(Args::new(json!(null)).is_ok());
        assert!(Args::new(json!([1])).is_err());
    }
}
