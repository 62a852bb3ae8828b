//! `embed`: embedding vectors for one text or many, from a local model.

use serde_json::{json, Value};

use super::{model_properties, Args, Call, ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::models::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "embed",
    definition,
    call,
};

/// Inputs per call: enough for batches, small enough to stay one request.
const MAX_INPUTS: usize = 2048;

fn definition() -> Value {
    let mut props = json!({
        "input": {
            "description": "The text to embed, or an array of texts.",
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_INPUTS}
            ]
        }
    });
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), model_properties()) {
        p.extend(extra);
    }
    json!({
        "name": "embed",
        "title": "Embed text with a local model",
        "description": "Computes embedding vectors for one text or many with a local embedding model. The vectors are in structuredContent.embeddings, in input order.",
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": ["input"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "dimensions": {"type": "integer"},
                "count": {"type": "integer"},
                "embeddings": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                "usage": {"type": ["object", "null"]}
            },
            "required": ["model", "backend", "dimensions", "count", "embeddings"]
        },
        "annotations": {
            "title": "Embed text with a local model",
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        }
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(async move {
        let input = check_input(args.get("input"))?;
        let count = input.as_array().map_or(1, Vec::len);
        let req = args.model_request()?;
        let resolved = inf.resolve(&req, Capability::Embeddings, call).await?;
        let backend = &resolved.backend;
        let path = backend.v1("/embeddings");
        let body = json!({"model": resolved.model, "input": input});
        let answer = match backend.post_json(&path, &body).await {
            Ok(v) => v,
            Err(e) => {
                inf.note_failure(&e).await;
                return Err(e.into());
            }
        };
        let vectors =
            parse_vectors(&answer, count).map_err(|detail| backend.malformed(&path, detail))?;
        let dimensions = vectors.first().map_or(0, Vec::len);
        let text = format!(
            "{count} embedding{} of dimension {dimensions} from `{}` on backend `{}` (vectors in structuredContent.embeddings).",
            if count == 1 { "" } else { "s" },
            resolved.model,
            backend.name()
        );
        Ok(json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {
                "model": resolved.model,
                "backend": backend.name(),
                "dimensions": dimensions,
                "count": count,
                "embeddings": vectors,
                "usage": answer.get("usage").filter(|u| u.is_object()),
            }
        }))
    })
}

fn check_input(v: Option<&Value>) -> Result<Value, ToolError> {
    let bad = || {
        ToolError::InvalidArguments(format!(
            "`input` must be a non-empty string or an array of 1 to {MAX_INPUTS} strings"
        ))
    };
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(json!(s)),
        Some(Value::Array(a))
            if !a.is_empty() && a.len() <= MAX_INPUTS && a.iter().all(Value::is_string) =>
        {
            Ok(json!(a))
        }
        _ => Err(bad()),
    }
}

/// The `data[].embedding` vectors in input order, checked to be flat
/// vectors of numbers, one per input, all of one dimension.
fn parse_vectors(v: &Value, count: usize) -> Result<Vec<Vec<f64>>, String> {
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no `data` array in the answer")?;
    if data.len() != count {
        return Err(format!("{} vectors for {count} inputs", data.len()));
    }
    let mut items: Vec<(u64, Vec<f64>)> = Vec::with_capacity(count);
    for (i, d) in data.iter().enumerate() {
        let emb = d
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("`data[{i}].embedding` is not an array"))?;
        if emb.first().is_some_and(Value::is_array) {
            return Err("the server returned one vector per token instead of one per input (a llama.cpp server needs a pooling type such as mean: `--pooling mean`)".into());
        }
        let vec: Option<Vec<f64>> = emb.iter().map(Value::as_f64).collect();
        let vec =
            vec.ok_or_else(|| format!("`data[{i}].embedding` holds something other than numbers"))?;
        let index = d.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
        items.push((index, vec));
    }
    items.sort_by_key(|(i, _)| *i);
    let vectors: Vec<Vec<f64>> = items.into_iter().map(|(_, v)| v).collect();
    if let Some(first) = vectors.first() {
        if first.is_empty() || vectors.iter().any(|v| v.len() != first.len()) {
            return Err("the vectors are empty or differ in dimension".into());
        }
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order() {
        let v = json!({"data": [
            {"index": 1, "embedding": [3.0, 4.0]},
            {"index": 0, "embedding": [1.0, 2.0]}
        ]});
        assert_eq!(
            parse_vectors(&v, 2).expect("parses"),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
    }

    #[test]
    fn per_token_vectors_are_explained() {
        let v = json!({"data": [{"index": 0, "embedding": [[1.0], [2.0]]}]});
        assert!(parse_vectors(&v, 1).unwrap_err().contains("pooling"));
        assert!(parse_vectors(&json!({"data": []}), 1).is_err());
    }

    #[test]
    fn inputs_are_checked() {
        assert!(check_input(Some(&json!(""))).is_err());
        assert!(check_input(Some(&json!([1]))).is_err());
        assert!(check_input(Some(&json!(["a", "b"]))).is_ok());
    }
}
