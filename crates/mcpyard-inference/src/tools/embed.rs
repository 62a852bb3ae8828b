//! `embed`: embedding vectors for one text or many, from a local model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "embed",
    definition,
    call,
};

/// Inputs per call: enough for batches, small enough to stay one request.
const MAX_INPUTS: usize = 2048;

/// `embed`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EmbedArgs {
    /// The text to embed, or an array of texts.
    input: Input,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a non-empty string or an array of 1 to 2048 strings"
)]
enum Input {
    One(String),
    Many(#[schemars(length(min = 1, max = MAX_INPUTS))] Vec<String>),
}

fn definition() -> Value {
    json!({
        "name": "embed",
        "title": "Embed text with a local model",
        "description": "Computes embedding vectors for one text or many with a local embedding model. The vectors are in structuredContent.embeddings, in input order.",
        "inputSchema": input_schema::<EmbedArgs>(),
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
        let args: EmbedArgs = args.parse()?;
        let input = check_input(args.input)?;
        let count = input.as_array().map_or(1, Vec::len);
        let req = model_request(&args.model, args.allow_download);
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

/// The input as sent to the server, once its size is checked.
fn check_input(input: Input) -> Result<Value, ToolError> {
    let fits = match &input {
        Input::One(s) => !s.is_empty(),
        Input::Many(a) => !a.is_empty() && a.len() <= MAX_INPUTS,
    };
    if !fits {
        return Err(ToolError::InvalidArguments(format!(
            "`input` must be a non-empty string or an array of 1 to {MAX_INPUTS} strings"
        )));
    }
    Ok(json!(input))
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
        let check_input = |input: Option<&Value>| {
            Args::new(json!({ "input": input }))
                .and_then(Args::parse::<EmbedArgs>)
                .and_then(|a| check_input(a.input))
        };
        assert!(check_input(Some(&json!(""))).is_err());
        assert!(check_input(Some(&json!([1]))).is_err());
        assert!(check_input(Some(&json!(["a", "b"]))).is_ok());
    }
}
