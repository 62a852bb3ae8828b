//! `mcpyard call` answering a server's `elicitation/create` from the
//! terminal: the message and one prompt per field on stderr, one answer
//! per line on stdin (typed, or piped from a script).
//!
//! The required fields are asked first. An empty line takes the field's
//! default (SEP-1034) or leaves an
//! optional field out; `!decline` or `!cancel` as an answer sends that
//! action instead. When stdin has ended, every field left takes its
//! default; a required field without one then declines the request.

use async_trait::async_trait;
use mcpyard_client::ElicitationHandler;
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

/// Tries per field before an unusable answer counts as no answer.
const TRIES: usize = 3;

/// Reads the answers from stdin, one request at a time.
pub(super) struct TerminalForm {
    lines: Mutex<Option<Lines<BufReader<Stdin>>>>,
}

impl TerminalForm {
    pub(super) fn new() -> Self {
        Self {
            lines: Mutex::new(Some(BufReader::new(tokio::io::stdin()).lines())),
        }
    }
}

#[async_trait]
impl ElicitationHandler for TerminalForm {
    async fn elicit(&self, params: Value, _: Option<RequestId>) -> Result<Value, ErrorObject> {
        let mut lines = self.lines.lock().await;
        let message = params.get("message").and_then(Value::as_str).unwrap_or("");
        eprintln!("\nThe server asks: {message}");
        if let Some(url) = params.get("url").and_then(Value::as_str) {
            eprintln!("Open {url} and finish there; then press Enter (or answer !decline).");
            return Ok(
                match next_answer(&mut lines).await.as_deref().map(str::trim) {
                    Some(action @ ("!decline" | "!cancel")) => json!({"action": &action[1..]}),
                    _ => json!({"action": "accept"}),
                },
            );
        }
        let schema = params.get("requestedSchema").cloned().unwrap_or_default();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let empty = Map::new();
        let fields = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        // Required fields first, in the schema's order of `required`; then
        // the optional ones (the object's own order is not kept in transit).
        let order = required
            .iter()
            .filter_map(|r| fields.get_key_value(*r))
            .chain(
                fields
                    .iter()
                    .filter(|(n, _)| !required.contains(&n.as_str())),
            );
        let mut content = Map::new();
        for (name, field) in order {
            let is_required = required.contains(&name.as_str());
            let mut value = None;
            for _ in 0..TRIES {
                eprint!("{}", prompt(name, field, is_required));
                let answer = next_answer(&mut lines).await;
                match answer.as_deref().map(str::trim) {
                    Some(action @ ("!decline" | "!cancel")) => {
                        return Ok(json!({"action": &action[1..]}))
                    }
                    None | Some("") => {
                        value = field.get("default").cloned();
                        break;
                    }
                    Some(text) => match parse(field, text) {
                        Ok(v) => {
                            value = Some(v);
                            break;
                        }
                        Err(why) => eprintln!("  {why}"),
                    },
                }
            }
            match value {
                Some(v) => {
                    content.insert(name.clone(), v);
                }
                None if is_required => {
                    eprintln!("  `{name}` is required and has no default: declining");
                    return Ok(json!({"action": "decline"}));
                }
                None => {}
            }
        }
        Ok(json!({"action": "accept", "content": content}))
    }

    fn capability(&self) -> Value {
        json!({"form": {}, "url": {}})
    }
}

/// The next line of stdin; `None` once it has ended (and from then on).
async fn next_answer(lines: &mut Option<Lines<BufReader<Stdin>>>) -> Option<String> {
    let reader = lines.as_mut()?;
    match reader.next_line().await {
        Ok(Some(line)) => Some(line),
        Ok(None) | Err(_) => {
            *lines = None;
            None
        }
    }
}

/// `  Title (type, one of a|b) [default]: `
fn prompt(name: &str, field: &Value, required: bool) -> String {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let mut hints = vec![kind(field).to_owned()];
    let choices = choices(field);
    if !choices.is_empty() {
        let sep = if kind(field) == "array" {
            ", several with commas"
        } else {
            ""
        };
        hints.push(format!("one of {}{sep}", choices.join(" | ")));
    }
    if required {
        hints.push("required".into());
    }
    let default = match field.get("default") {
        Some(d) => format!(
            " [{}]",
            d.as_str().map_or_else(|| d.to_string(), str::to_owned)
        ),
        None => String::new(),
    };
    if let Some(d) = field.get("description").and_then(Value::as_str) {
        eprintln!("  {d}");
    }
    format!("  {title} ({}){default}: ", hints.join(", "))
}

fn kind(field: &Value) -> &str {
    field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
}

/// The values an enum field takes: `enum`, or the `const`s of `oneOf` /
/// `anyOf` (for an array, of its `items`).
fn choices(field: &Value) -> Vec<String> {
    let of = if kind(field) == "array" {
        field.get("items").unwrap_or(&Value::Null)
    } else {
        field
    };
    if let Some(values) = of.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| of.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|o| o.get("const").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// An answer as the field's type, or why it is not one.
fn parse(field: &Value, text: &str) -> Result<Value, String> {
    let choices = choices(field);
    let choose = |t: &str| -> Result<Value, String> {
        if choices.is_empty() || choices.iter().any(|c| c == t) {
            Ok(Value::String(t.to_owned()))
        } else {
            Err(format!("expected one of {}", choices.join(" | ")))
        }
    };
    match kind(field) {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("expected yes or no".into()),
        },
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "expected a whole number".into()),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "expected a number".into()),
        "array" => text
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(choose)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => choose(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_take_the_fields_types_and_choices() {
        let b = json!({"type": "boolean"});
        assert_eq!(parse(&b, "yes"), Ok(json!(true)));
        assert!(parse(&b, "maybe").is_err());
        assert_eq!(parse(&json!({"type": "integer"}), "42"), Ok(json!(42)));
        assert!(parse(&json!({"type": "integer"}), "4.2").is_err());
        assert_eq!(parse(&json!({"type": "number"}), "3.5"), Ok(json!(3.5)));
        let pick = json!({"type": "string", "oneOf": [{"const": "hero-1"}, {"const": "hero-2"}]});
        assert_eq!(parse(&pick, "hero-2"), Ok(json!("hero-2")));
        assert!(parse(&pick, "hero-9").is_err());
        let several = json!({"type": "array", "items": {"enum": ["Guitar", "Piano"]}});
        assert_eq!(
            parse(&several, "Guitar, Piano"),
            Ok(json!(["Guitar", "Piano"]))
        );
        assert!(parse(&several, "Drums").is_err());
        assert_eq!(parse(&json!({"type": "string"}), "Ada"), Ok(json!("Ada")));
    }
}
