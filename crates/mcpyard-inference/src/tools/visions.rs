//! The argument shapes Visions' clients send to its `visions.analyze`
//! tool, accepted by `analyze_image`: `prompt` as a message array, the
//! `preprocessing` object (`enabled`, `variants`, `resize`, `parameters`)
//! and the fields that route its answer over Socket.IO, which mean nothing
//! here and are reported as unused.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::ToolError;
use crate::imaging::{Variant, DEFAULT_CLIP_LIMIT, DEFAULT_TILES};

/// `prompt`: the instruction as text, or (Visions) chat messages.
#[derive(Debug)]
pub(super) enum PromptArg {
    Text(String),
    Messages(Vec<Map<String, Value>>),
}

// By hand, for an error that says both forms.
impl<'de> Deserialize<'de> for PromptArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Self::Text(s)),
            Value::Array(items) => items
                .into_iter()
                .map(|m| match m {
                    Value::Object(m) => Ok(m),
                    _ => Err(D::Error::custom(
                        "each message must be an object such as {\"role\": \"user\", \"content\": \"...\"}",
                    )),
                })
                .collect::<Result<_, _>>()
                .map(Self::Messages),
            _ => Err(D::Error::custom(
                "expected a string, or messages such as [{\"role\": \"user\", \"content\": \"...\"}]",
            )),
        }
    }
}

impl JsonSchema for PromptArg {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PromptArg".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "object", "properties": {"role": {"type": "string"}, "content": {}}, "required": ["role"]}}
            ]
        })
    }
}

impl PromptArg {
    /// The instruction that goes with the images, and the messages that go
    /// before them: of a message array, the last user message with text
    /// content is the instruction, the others stay messages.
    pub(super) fn split(self) -> (Option<String>, Vec<Map<String, Value>>) {
        match self {
            Self::Text(t) if t.trim().is_empty() => (None, Vec::new()),
            Self::Text(t) => (Some(t), Vec::new()),
            Self::Messages(mut messages) => {
                let last_user_text = messages.iter().rposition(|m| {
                    m.get("role").and_then(Value::as_str) == Some("user")
                        && m.get("content")
                            .and_then(Value::as_str)
                            .is_some_and(|c| !c.trim().is_empty())
                });
                let instruction = last_user_text.and_then(|i| {
                    messages.remove(i).remove("content").and_then(|c| match c {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                });
                (instruction, messages)
            }
        }
    }
}

/// Visions' `preprocessing` object.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Preprocessing {
    /// Make the variants at all (Visions' default: false).
    #[serde(default)]
    enabled: bool,
    /// Which variants: original, grayscale, clahe (made here); denoised and sharpened are not made here.
    #[serde(default)]
    variants: VisionsVariants,
    /// Visions resizes every variant; not done here (see the result's notes).
    resize: Option<Map<String, Value>>,
    /// Visions' settings; `claheMaxSlope` is used as the CLAHE clip limit, the others are not.
    parameters: Option<Map<String, Value>>,
}

/// The switches of `preprocessing.variants`; absent ones take Visions'
/// defaults (original, grayscale, denoised and clahe on; sharpened off).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct VisionsVariants {
    original: Option<bool>,
    grayscale: Option<bool>,
    clahe: Option<bool>,
    denoised: Option<bool>,
    sharpened: Option<bool>,
}

/// What `preprocessing` asks for, in `analyze_image`'s terms.
#[derive(Debug)]
pub(super) struct Mapped {
    pub(super) variants: Vec<Variant>,
    /// Whether the original is sent too.
    pub(super) keep_original: bool,
    /// What was asked for and is not done here.
    pub(super) notes: Vec<String>,
}

impl Preprocessing {
    pub(super) fn map(self) -> Result<Mapped, ToolError> {
        let mut notes = Vec::new();
        if !self.enabled {
            return Ok(Mapped {
                variants: Vec::new(),
                keep_original: true,
                notes,
            });
        }
        let v = &self.variants;
        let mut variants = Vec::new();
        if v.grayscale.unwrap_or(true) {
            variants.push(Variant::Grayscale);
        }
        if v.clahe.unwrap_or(true) {
            variants.push(Variant::Equalize {
                clip_limit: clip_limit(self.parameters.as_ref())?,
                tiles: DEFAULT_TILES,
            });
        }
        let missing: Vec<&str> = [
            ("denoised", v.denoised.unwrap_or(true)),
            ("sharpened", v.sharpened.unwrap_or(false)),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| *name)
        .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "preprocessing variants {} are not made here (grayscale and clahe are)",
                missing.join(", ")
            ));
        }
        if self.resize.is_some() {
            notes.push(
                "preprocessing.resize was not applied: images are sent at their own size".into(),
            );
        }
        let unused: Vec<&str> = self
            .parameters
            .iter()
            .flat_map(|p| p.keys())
            .map(String::as_str)
            .filter(|k| *k != "claheMaxSlope")
            .collect();
        if !unused.is_empty() {
            notes.push(format!(
                "preprocessing.parameters {} were not used (claheMaxSlope is)",
                unused.join(", ")
            ));
        }
        let keep_original = v.original.unwrap_or(true);
        if !keep_original && variants.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`preprocessing` turns off the original and every variant made here (grayscale, clahe): no image would be sent".into(),
            ));
        }
        Ok(Mapped {
            variants,
            keep_original,
            notes,
        })
    }
}

/// `parameters.claheMaxSlope` (Visions' contrast limit) as the clip limit.
fn clip_limit(parameters: Option<&Map<String, Value>>) -> Result<f32, ToolError> {
    match parameters.and_then(|p| p.get("claheMaxSlope")) {
        None => Ok(DEFAULT_CLIP_LIMIT),
        Some(v) => match v.as_f64() {
            Some(c) if (1.0..=40.0).contains(&c) => Ok(c as f32),
            _ => Err(ToolError::InvalidArguments(
                "`preprocessing.parameters.claheMaxSlope` must be a number from 1 to 40".into(),
            )),
        },
    }
}

/// The note for Visions' Socket.IO routing fields that came, if any.
pub(super) fn routing_note(given: &[(&str, bool)]) -> Option<String> {
    let names: Vec<String> = given
        .iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "{} route answers over Socket.IO and were ignored: the answer is this result (and progress notifications when streamed)",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_array_gives_its_last_user_text_to_the_images() {
        let p: PromptArg = serde_json::from_value(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What do you see?"}
        ]))
        .expect("parses");
        let (instruction, rest) = p.split();
        assert_eq!(instruction.as_deref(), Some("What do you see?"));
        assert_eq!(rest.len(), 1);
        assert!(serde_json::from_value::<PromptArg>(json!(3)).is_err());
    }

    #[test]
    fn preprocessing_maps_to_variants_and_says_what_it_skips() {
        let p: Preprocessing = serde_json::from_value(json!({
            "enabled": true, "variants": {"grayscale": true, "clahe": true},
            "parameters": {"claheMaxSlope": 4, "blurSigma": 0.5}
        }))
        .expect("parses");
        let m = p.map().expect("maps");
        assert_eq!(
            m.variants,
            vec![
                Variant::Grayscale,
                Variant::Equalize {
                    clip_limit: 4.0,
                    tiles: DEFAULT_TILES
                }
            ]
        );
        assert!(m.keep_original);
        let notes = m.notes.join(" ");
        assert!(
            notes.contains("denoised") && notes.contains("blurSigma"),
            "{notes}"
        );
        let off: Preprocessing = serde_json::from_value(json!({"enabled": false})).expect("parses");
        assert!(off.map().expect("maps").variants.is_empty());
        assert!(
            serde_json::from_value::<Preprocessing>(json!({"variants": {"sepia": true}})).is_err()
        );
    }
}
