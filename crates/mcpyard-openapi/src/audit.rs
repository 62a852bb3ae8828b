//! An audit of thin documentation: the operations and inputs a document
//! leaves undescribed. A model picks a tool and fills its arguments from
//! these descriptions, so `mcpyard check` lists what is missing.

use serde_json::Value;

use crate::describe::UNDESCRIBED;
use crate::model::{ApiDocument, BodyShape};

/// How the loader's line for file arguments begins (it follows the
/// document's own words, if any).
const FILE_GUIDANCE_START: &str = "A file: a `data:";

/// What a document leaves undescribed, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Tool names of operations with neither a summary nor a description
    /// worth the name.
    pub undescribed_operations: Vec<String>,
    /// `tool.argument` of parameters and top-level body fields without a
    /// description.
    pub undescribed_fields: Vec<String>,
}

/// Words that say nothing about an input or an operation (LocalAI's
/// document describes most bodies as "Request").
const EMPTY_WORDS: [&str; 8] = [
    "request",
    "response",
    "body",
    "req",
    "input",
    "params",
    "parameters",
    "payload",
];

fn says_something(text: Option<&str>) -> bool {
    text.map(str::trim).is_some_and(|t| {
        let word = t.trim_end_matches('.').to_ascii_lowercase();
        t.chars().filter(|c| c.is_alphanumeric()).count() >= 3
            && !EMPTY_WORDS.contains(&word.as_str())
    })
}

/// Whether the document described an input: where it did not, the loader
/// wrote guidance ending with [`UNDESCRIBED`], which counts as nothing.
fn described(schema: &Value) -> bool {
    let Some(description) = schema.get("description").and_then(Value::as_str) else {
        return false;
    };
    // A file argument's own words come before the loader's line on files.
    let own = match description.find(FILE_GUIDANCE_START) {
        Some(at) => &description[..at],
        None => description,
    };
    !own.contains(UNDESCRIBED)
        && !own.trim().starts_with("The request body (")
        && says_something(Some(own))
}

/// Audits a loaded document.
pub fn audit(document: &ApiDocument) -> Audit {
    let mut audit = Audit::default();
    for op in &document.operations {
        if !says_something(op.summary.as_deref()) && !says_something(op.description.as_deref()) {
            audit.undescribed_operations.push(op.name.clone());
        }
        let mut field = |argument: &str| {
            audit
                .undescribed_fields
                .push(format!("{}.{argument}", op.name));
        };
        for parameter in &op.parameters {
            if !described(&parameter.schema) {
                field(&parameter.name.argument);
            }
        }
        let Some(body) = &op.body else { continue };
        match &body.shape {
            BodyShape::Fields(arguments) => {
                let properties = body.schema.get("properties");
                for argument in arguments {
                    let schema = properties.and_then(|p| p.get(&argument.wire));
                    if !schema.is_some_and(described) {
                        field(&argument.argument);
                    }
                }
            }
            BodyShape::Whole(argument) => {
                let schema = op.input_schema["properties"]
                    .get(argument)
                    .unwrap_or(&body.schema);
                if !described(schema) {
                    field(argument);
                }
            }
        }
    }
    audit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_words_are_no_description() {
        assert!(!says_something(None));
        assert!(!says_something(Some("  ")));
        assert!(!says_something(Some("Request")));
        assert!(!says_something(Some("request.")));
        assert!(says_something(Some("Lists the installed models")));
    }

    #[test]
    fn the_loaders_guidance_is_no_description() {
        let text = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
          "paths": {"/pets/{id}": {"put": {"summary": "Replaces a pet",
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
              {"name": "dry", "in": "query", "description": "Only check", "schema": {"type": "boolean"}}],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object",
              "properties": {"name": {"type": "string", "description": "The pet's name"},
                "tag": {"type": "string", "description": "Request"}}}}}},
            "responses": {"200": {"description": "ok"}}},
          "delete": {"parameters": [{"name": "id", "in": "path", "required": true}],
            "responses": {"204": {"description": "gone"}}}}}}"#;
        let document = crate::parse("pets.json", text, None, &Default::default()).unwrap();
        let found = audit(&document);
        let names: Vec<&str> = document
            .operations
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(found.undescribed_operations, [names[1]]);
        assert_eq!(
            found.undescribed_fields,
            [
                format!("{}.id", names[0]),
                format!("{}.tag", names[0]),
                format!("{}.id", names[1])
            ]
        );
    }

    #[test]
    fn an_empty_document_has_nothing_to_report() {
        let document = ApiDocument {
            origin: "x.json".into(),
            version: crate::DocVersion::OpenApi31,
            title: "x".into(),
            servers: Vec::new(),
            security_schemes: Default::default(),
            operations: Vec::new(),
        };
        assert_eq!(audit(&document), Audit::default());
    }
}
