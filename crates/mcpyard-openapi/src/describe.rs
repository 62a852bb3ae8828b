//! Tool descriptions written for a model: what the operation does, what its
//! inputs are, and where the answer will be. Inputs the document leaves
//! undescribed (or describes as just "Request") get a conservative line of
//! guidance in their schema, never invented meaning.

use serde_json::{json, Value};

use crate::model::{Location, Operation, ResponseKind};

/// Ends the guidance written where the document describes nothing, so that
/// an audit of thin documentation can find those places.
pub const UNDESCRIBED: &str = "(not described by the API)";

/// A description longer than this is cut (documents paste whole guides).
const MAX_DESCRIPTION_CHARS: usize = 1_200;
/// Inputs named in the description; the schema has them all.
const MAX_NAMED_INPUTS: usize = 12;

/// What building the operation learnt that the description needs.
#[derive(Debug, Default, Clone)]
pub(crate) struct Hints {
    /// The referenced request object's name (`schema.OpenAIRequest`).
    pub(crate) request_object: Option<String>,
    /// Arguments that are the body's top-level fields.
    pub(crate) body_fields: Vec<String>,
    /// The argument that is the whole body.
    pub(crate) whole_body: Option<String>,
    pub(crate) response_media_type: Option<String>,
    /// What the JSON answer is: a referenced object's name, and whether the
    /// answer is a list of them.
    pub(crate) response_object: Option<(String, bool)>,
    /// The JSON answer's top-level fields (of the object, or of each item).
    pub(crate) response_fields: Vec<String>,
}

/// Answer fields named in the description.
const MAX_NAMED_FIELDS: usize = 12;

/// Descriptions that say nothing (what code generators write by default).
fn is_thin(description: &str) -> bool {
    let normalized = description
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    matches!(
        normalized.as_str(),
        "" | "request"
            | "body"
            | "request body"
            | "the request body"
            | "query params"
            | "params"
            | "parameters"
            | "input"
            | "payload"
            | "data"
            | "object"
    )
}

/// Sets a schema's description to `guidance` when it has none worth keeping.
pub(crate) fn ensure_description(schema: &mut Value, guidance: &str) {
    if let Value::Object(object) = schema {
        let keep = object
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|description| !is_thin(description));
        if !keep {
            object.insert("description".into(), json!(guidance));
        }
    }
}

pub(crate) fn parameter_guidance(name: &str, location: Location, path: &str) -> String {
    match location {
        Location::Path => format!("The `{{{name}}}` part of the path `{path}` {UNDESCRIBED}."),
        Location::Query => format!("The `{name}` query parameter {UNDESCRIBED}."),
        Location::Header => format!("The `{name}` request header {UNDESCRIBED}."),
        Location::Cookie => format!("The `{name}` cookie {UNDESCRIBED}."),
    }
}

pub(crate) fn field_guidance(name: &str) -> String {
    format!("The request body's `{name}` field {UNDESCRIBED}.")
}

pub(crate) fn body_guidance(media_type: &str, description: Option<&str>) -> String {
    match description {
        Some(description) if !is_thin(description) => description.to_string(),
        _ => format!(
            "The request body, sent as `{media_type}`, {UNDESCRIBED}; its shape is this schema."
        ),
    }
}

/// The tool's description.
pub(crate) fn tool_description(operation: &Operation, hints: &Hints) -> String {
    let mut text = String::new();
    if operation.deprecated {
        text.push_str("Deprecated. ");
    }
    let summary = operation.summary.as_deref().map(str::trim);
    let description = operation.description.as_deref().map(str::trim);
    match (summary, description) {
        (Some(summary), Some(description))
            if description.starts_with(summary.trim_end_matches('.')) =>
        {
            text.push_str(&sentence(&cut(description)));
        }
        (Some(summary), Some(description)) => {
            text.push_str(&sentence(summary));
            text.push(' ');
            text.push_str(&sentence(&cut(description)));
        }
        (Some(only), None) | (None, Some(only)) => text.push_str(&sentence(&cut(only))),
        (None, None) => text.push_str(&format!("Calls {} {}.", operation.method, operation.path)),
    }
    text.push_str("\n\n");
    text.push_str(&inputs(operation, hints));
    text.push('\n');
    text.push_str(&answer(operation, hints));
    text
}

fn inputs(operation: &Operation, hints: &Hints) -> String {
    if operation.websocket {
        return "Inputs: the opening messages to send (the path's parts as arguments).".to_string();
    }
    let properties = operation
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let required: Vec<&str> = operation
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = properties.filter(|properties| !properties.is_empty()) else {
        return "Inputs: none.".to_string();
    };
    let name = |argument: &str| {
        if required.contains(&argument) {
            format!("`{argument}` (required)")
        } else {
            format!("`{argument}`")
        }
    };
    let mut ordered: Vec<&String> = properties.keys().collect();
    // Required first, then in the order they come.
    ordered.sort_by_key(|argument| !required.contains(&argument.as_str()));
    let parameters: Vec<String> = ordered
        .iter()
        .filter(|argument| !hints.body_fields.contains(argument))
        .map(|argument| name(argument))
        .collect();
    let fields: Vec<String> = ordered
        .iter()
        .filter(|argument| hints.body_fields.contains(argument))
        .map(|argument| name(argument))
        .collect();
    let mut parts = Vec::new();
    if !parameters.is_empty() {
        parts.push(listing(&parameters));
    }
    if !fields.is_empty() {
        let object = match &hints.request_object {
            Some(object) => format!("the fields of the request object `{object}`"),
            None => "the request body's fields".to_string(),
        };
        parts.push(format!("{object}: {}", listing(&fields)));
    }
    let mut line = format!("Inputs: {}.", parts.join("; "));
    if let (Some(whole), Some(object)) = (&hints.whole_body, &hints.request_object) {
        line.push_str(&format!(
            " `{whole}` is a `{object}` object (see its schema)."
        ));
    }
    let files: Vec<&String> = operation
        .body
        .iter()
        .flat_map(|body| body.file_arguments.iter())
        .collect();
    if !files.is_empty() {
        let names: Vec<String> = files.iter().map(|file| format!("`{file}`")).collect();
        line.push_str(&format!(
            " {} take{} a file: a `data:` URL, `base64:...`, an `http(s)://` URL or a path under the input roots.",
            names.join(", "),
            if files.len() == 1 { "s" } else { "" }
        ));
    }
    line
}

fn listing(names: &[String]) -> String {
    if names.len() <= MAX_NAMED_INPUTS {
        return names.join(", ");
    }
    format!(
        "{}, and {} more (see the input schema)",
        names[..MAX_NAMED_INPUTS].join(", "),
        names.len() - MAX_NAMED_INPUTS
    )
}

fn answer(operation: &Operation, hints: &Hints) -> String {
    if operation.websocket {
        return "Answer: the messages the route sent, in `messages`, collected for a bounded time before it is closed.".to_string();
    }
    let media = hints.response_media_type.as_deref().unwrap_or("binary");
    let answer = match operation.response {
        ResponseKind::Json => {
            let mut shape = match &hints.response_object {
                Some((object, true)) => format!(" (a list of `{object}`"),
                Some((object, false)) => format!(" (a `{object}`"),
                None if hints.response_fields.is_empty() => String::new(),
                None => " (".to_string(),
            };
            if !hints.response_fields.is_empty() {
                let mut fields: Vec<String> = hints
                    .response_fields
                    .iter()
                    .take(MAX_NAMED_FIELDS)
                    .map(|field| format!("`{field}`"))
                    .collect();
                if hints.response_fields.len() > MAX_NAMED_FIELDS {
                    fields.push("…".to_string());
                }
                if shape.len() > 2 {
                    shape.push_str(": ");
                }
                shape.push_str(&format!("fields {}", fields.join(", ")));
            }
            if !shape.is_empty() {
                shape.push(')');
            }
            format!("Answer: the JSON result in `data`{shape}.")
        }
        ResponseKind::Text => "Answer: the text in `text`.".to_string(),
        ResponseKind::EventStream => {
            "Answer: an event stream; each event's data, in order, in `events`.".to_string()
        }
        ResponseKind::Binary => format!(
            "Answer: a file of type `{media}`, inline as `base64` when small, else saved and named by `saved_path` (with `size_bytes`, `mime_type`)."
        ),
        ResponseKind::Unknown => "Answer: `data` when the API answers JSON, `text` for text, a file in `base64` or `saved_path` otherwise.".to_string(),
    };
    format!("{answer} A failure has `ok: false` and the `status_code`.")
}

fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?', ')', ':']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    format!("{}…", cut.trim_end())
}
