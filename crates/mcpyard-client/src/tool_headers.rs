//! 2026-07-28 (SEP-2243): a tool's input schema may mark top-level
//! parameters with `x-mcp-header: "Name"`; over Streamable HTTP a call of
//! that tool then mirrors each such argument into an `Mcp-Param-Name`
//! header, so the server (or a proxy in front of it) can route on it. A tool
//! whose declarations are invalid must not be called at all.

use std::collections::HashMap;

use serde_json::Value;

use crate::transport::encode_header_value;

/// The keyword in a property's schema.
const KEYWORD: &str = "x-mcp-header";
/// The prefix of the header an argument is mirrored into.
const PARAM_PREFIX: &str = "Mcp-Param-";

/// What a tool's input schema declares: the mirrored parameters, or why the
/// tool is refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Declared {
    /// (parameter, header name) for each marked parameter.
    Valid(Vec<(String, String)>),
    Invalid(String),
}

/// Reads the `x-mcp-header` declarations of one tool's input schema. The
/// name must be a non-empty HTTP token (ASCII letters, digits and
/// ``!#$%&'*+-.^_`|~``: no space, colon or control character), unique
/// without regard to case, and on a parameter of type string, integer or
/// boolean (not number: a float has no one text form).
pub(crate) fn declared(input_schema: &Value) -> Declared {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return Declared::Valid(Vec::new());
    };
    let mut found: Vec<(String, String)> = Vec::new();
    for (param, schema) in props {
        let Some(header) = schema.get(KEYWORD) else {
            continue;
        };
        let Some(header) = header.as_str() else {
            return Declared::Invalid(format!("`{param}`: {KEYWORD} is not a string"));
        };
        if header.is_empty() {
            return Declared::Invalid(format!("`{param}`: {KEYWORD} is empty"));
        }
        if !header.bytes().all(is_token_char) {
            return Declared::Invalid(format!(
                "`{param}`: {KEYWORD} {header:?} is not an HTTP header name"
            ));
        }
        if !is_primitive(schema.get("type")) {
            return Declared::Invalid(format!(
                "`{param}`: {KEYWORD} is only allowed on a string, integer or boolean"
            ));
        }
        if found.iter().any(|(_, h)| h.eq_ignore_ascii_case(header)) {
            return Declared::Invalid(format!("{KEYWORD} {header:?} is declared twice"));
        }
        found.push((param.clone(), header.to_owned()));
    }
    Declared::Valid(found)
}

/// RFC 9110 `tchar`.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a parameter's `type` may be mirrored (an absent `type` is let
/// through: only string, number and boolean values are mirrored anyway).
fn is_primitive(kind: Option<&Value>) -> bool {
    const PRIMITIVE: [&str; 3] = ["string", "integer", "boolean"];
    match kind {
        None => true,
        Some(Value::String(t)) => PRIMITIVE.contains(&t.as_str()),
        Some(Value::Array(types)) => {
            !types.is_empty()
                && types
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| PRIMITIVE.contains(&t)))
        }
        Some(_) => false,
    }
}

/// The `Mcp-Param-*` headers of one call: each declared parameter whose
/// argument is a string, number or boolean (null or absent: no header);
/// strings that are not plain visible ASCII go Base64-encoded.
pub(crate) fn headers_for(
    declared: &[(String, String)],
    arguments: &Value,
) -> Vec<(String, String)> {
    declared
        .iter()
        .filter_map(|(param, header)| {
            let value = match arguments.get(param)? {
                Value::String(s) => encode_header_value(s),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((format!("{PARAM_PREFIX}{header}"), value))
        })
        .collect()
}

/// What the client learned from `tools/list`, by tool name.
#[derive(Debug, Default)]
pub(crate) struct ToolTable {
    tools: HashMap<String, Declared>,
}

impl ToolTable {
    /// Records the tools of one `tools/list` page and drops from it the ones
    /// whose declarations are invalid (they must not be offered, nor called).
    pub(crate) fn learn(&mut self, page: &mut Value, label: &str) {
        let Some(tools) = page.get_mut("tools").and_then(Value::as_array_mut) else {
            return;
        };
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return true;
            };
            let found = tool
                .get("inputSchema")
                .map_or(Declared::Valid(Vec::new()), declared);
            let keep = matches!(found, Declared::Valid(_));
            if let Declared::Invalid(why) = &found {
                tracing::warn!(target: "mcpyard::upstream", server = %label, "tool {name} left out: {why}");
            }
            self.tools.insert(name.to_owned(), found);
            keep
        });
    }

    /// The headers of a call of `tool` with `arguments`, or why the tool may
    /// not be called. A tool never listed gets none.
    pub(crate) fn call_headers(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<Vec<(String, String)>, String> {
        match self.tools.get(tool) {
            None => Ok(Vec::new()),
            Some(Declared::Valid(declared)) => Ok(headers_for(declared, arguments)),
            Some(Declared::Invalid(why)) => Err(format!(
                "tool {tool} declares an invalid {KEYWORD} and may not be called: {why}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{declared, headers_for, Declared};
    use serde_json::json;

    fn schema(props: serde_json::Value) -> serde_json::Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn valid_declarations_are_read() {
        let found = declared(&schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Priority"},
            "q": {"type": "string"},
        })));
        let Declared::Valid(mut found) = found else {
            panic!("valid")
        };
        found.sort();
        assert_eq!(
            found,
            vec![
                ("n".to_owned(), "Priority".to_owned()),
                ("region".to_owned(), "Region".to_owned())
            ]
        );
    }

    #[test]
    fn invalid_declarations_refuse_the_tool() {
        for bad in [
            json!({"v": {"type": "string", "x-mcp-header": ""}}),
            json!({"v": {"type": "object", "x-mcp-header": "Data"}}),
            json!({"v": {"type": "array", "x-mcp-header": "Items"}}),
            json!({"v": {"type": "null", "x-mcp-header": "Nil"}}),
            json!({"v": {"type": "number", "x-mcp-header": "Score"}}),
            json!({"a": {"type": "string", "x-mcp-header": "R"}, "b": {"type": "string", "x-mcp-header": "r"}}),
            json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
        ] {
            assert!(
                matches!(declared(&schema(bad.clone())), Declared::Invalid(_)),
                "{bad}"
            );
        }
    }

    #[test]
    fn values_are_mirrored_and_encoded() {
        let declared = vec![
            ("s".to_owned(), "S".to_owned()),
            ("n".to_owned(), "N".to_owned()),
            ("b".to_owned(), "B".to_owned()),
            ("u".to_owned(), "U".to_owned()),
            ("z".to_owned(), "Z".to_owned()),
        ];
        let got = headers_for(
            &declared,
            &json!({"s": " padded ", "n": 3.5, "b": false, "z": null}),
        );
        assert_eq!(
            got,
            vec![
                (
                    "Mcp-Param-S".to_owned(),
                    "=?base64?IHBhZGRlZCA=?=".to_owned()
                ),
                ("Mcp-Param-N".to_owned(), "3.5".to_owned()),
                ("Mcp-Param-B".to_owned(), "false".to_owned()),
            ]
        );
    }
}
