//! Arguments checked against the operation's input schema before anything
//! is sent; each schema is compiled once, at its first call.

use std::sync::OnceLock;

use serde_json::Value;

/// One operation's compiled input schema.
#[derive(Debug, Default)]
pub(crate) struct InputCheck {
    compiled: OnceLock<Option<jsonschema::Validator>>,
}

impl InputCheck {
    /// The errors in `arguments` (instance path and message), empty when
    /// they fit. A schema that does not compile checks nothing: the API
    /// still validates the request itself.
    pub(crate) fn errors(&self, operation: &str, schema: &Value, arguments: &Value) -> Vec<String> {
        let validator = self.compiled.get_or_init(|| {
            match jsonschema::options()
                .should_validate_formats(false)
                .build(schema)
            {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!(operation, error = %e, "input schema does not compile; arguments are not checked");
                    None
                }
            }
        });
        let Some(validator) = validator else {
            return Vec::new();
        };
        validator
            .iter_errors(arguments)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("{at}: {}", e.masked())
            })
            .collect()
    }
}
