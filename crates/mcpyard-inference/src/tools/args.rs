//! Reading a tool's arguments with errors that name the argument and what
//! it should be, so a model can fix its call.

use serde_json::{Map, Value};

use crate::engine::ModelRequest;
use crate::error::ToolError;

/// A call's arguments.
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

    /// Refuses keys that the tool's `inputSchema` does not declare (typos
    /// would otherwise be ignored).
    pub(crate) fn declared_in(&self, definition: &Value) -> Result<(), ToolError> {
        let allowed: Vec<&str> = definition
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let unknown: Vec<&str> = self
            .0
            .keys()
            .map(String::as_str)
            .filter(|k| !allowed.contains(k))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(ToolError::InvalidArguments(format!(
            "unknown argument(s) {}; this tool takes: {}",
            unknown
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            allowed.join(", ")
        )))
    }

    /// Removes an argument and returns it (to own a large value).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ToolError::InvalidArguments(format!(
                "`{key}` must be a string"
            ))),
        }
    }

    pub(crate) fn bool(&self, key: &str) -> Result<bool, ToolError> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ToolError::InvalidArguments(format!(
                "`{key}` must be true or false"
            ))),
        }
    }

    pub(crate) fn number(&self, key: &str) -> Result<Option<&Value>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(_)) => Ok(Some(v)),
            Some(_) => Err(ToolError::InvalidArguments(format!(
                "`{key}` must be a number"
            ))),
        }
    }

    pub(crate) fn integer(&self, key: &str, min: i64) -> Result<Option<&Value>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) if v.as_i64().is_some_and(|n| n >= min) => Ok(Some(v)),
            Some(_) => Err(ToolError::InvalidArguments(format!(
                "`{key}` must be an integer of at least {min}"
            ))),
        }
    }

    pub(crate) fn object(&self, key: &str) -> Result<Option<&Value>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(_) => Err(ToolError::InvalidArguments(format!(
                "`{key}` must be an object"
            ))),
        }
    }

    /// `model` and `allow_download`.
    pub(crate) fn model_request(&self) -> Result<ModelRequest, ToolError> {
        Ok(ModelRequest {
            model: self.string("model")?,
            allow_download: self.bool("allow_download")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Args;
    use serde_json::json;

    #[test]
    fn arguments_the_schema_does_not_declare_are_refused() {
        let tool = json!({"inputSchema": {"properties": {"prompt": {}, "model": {}}}});
        let fine = Args::new(json!({"prompt": "hi"})).expect("an object");
        assert!(fine.declared_in(&tool).is_ok());
        let typo = Args::new(json!({"promt": "hi"})).expect("an object");
        let err = typo.declared_in(&tool).expect_err("refused").to_string();
        assert!(err.contains("`promt`") && err.contains("prompt"), "{err}");
    }
}
