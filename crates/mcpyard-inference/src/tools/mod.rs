//! The tools and their dispatch table. A tool is one file here that
//! defines a `TOOL: ToolDef` (its definition and its call) and the struct
//! of its arguments (which parses the call and gives the definition its
//! `inputSchema`, see `args`), plus one line in [`TOOLS`].

mod agent;
mod analyze_image;
mod args;
mod call;
pub(crate) mod chat;
mod def;
mod embed;
mod generate_image;
mod list_models;
mod media;
mod omni;
mod speak;
mod transcribe_audio;
mod vision_chat;
mod visions;

pub(crate) use args::Args;
pub(crate) use call::Call;
pub(crate) use def::ToolDef;
pub use def::SOURCE_NAME;

/// Every tool the source offers.
pub(crate) const TOOLS: &[ToolDef] = &[
    list_models::TOOL,
    chat::TOOL,
    embed::TOOL,
    agent::TOOL,
    omni::TOOL,
    transcribe_audio::TOOL,
    generate_image::TOOL,
    speak::TOOL,
    analyze_image::TOOL,
];

/// The tool called `name`.
pub(crate) fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Inference;
    use crate::error::ToolError;
    use mcpyard_gateway::CallContext;

    #[test]
    fn every_definition_is_named_after_its_entry() {
        for t in TOOLS {
            let def = (t.definition)();
            assert_eq!(def["name"], t.name);
            assert_eq!(def["inputSchema"]["type"], "object", "{}", t.name);
            assert!(def["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert!(def["annotations"].is_object());
        }
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
    }

    /// The arguments each tool took when its schema was written by hand:
    /// the generated schemas must keep every one of them.
    const HAND_WRITTEN: &[(&str, &[&str])] = &[
        (
            "list_models",
            &["include_available", "include_suggested", "refresh"],
        ),
        (
            "chat",
            &[
                "allow_download",
                "chat_template_kwargs",
                "frequency_penalty",
                "max_tokens",
                "messages",
                "model",
                "presence_penalty",
                "response_format",
                "seed",
                "stop",
                "stream",
                "temperature",
                "tool_choice",
                "tools",
                "top_p",
            ],
        ),
        ("embed", &["allow_download", "input", "model"]),
        (
            "agent",
            &[
                "allow_download",
                "max_iterations",
                "max_seconds",
                "max_tokens",
                "messages",
                "model",
                "prompt",
                "save_media",
                "system",
                "tools",
            ],
        ),
        (
            "omni",
            &[
                "allow_download",
                "chat_template_kwargs",
                "frequency_penalty",
                "max_tokens",
                "messages",
                "model",
                "output_dir",
                "presence_penalty",
                "response_format",
                "seed",
                "stop",
                "temperature",
                "tool_choice",
                "tools",
                "top_p",
            ],
        ),
        (
            "transcribe_audio",
            &[
                "allow_download",
                "audio_base64",
                "audio_path",
                "filename",
                "language",
                "model",
                "prompt",
                "response_format",
                "temperature",
            ],
        ),
        (
            "generate_image",
            &[
                "allow_download",
                "cfg_scale",
                "model",
                "n",
                "negative_prompt",
                "output_dir",
                "output_path",
                "prompt",
                "seed",
                "size",
                "steps",
            ],
        ),
        (
            "speak",
            &[
                "allow_download",
                "input",
                "model",
                "output_path",
                "response_format",
                "speed",
                "voice",
            ],
        ),
        (
            "analyze_image",
            &[
                "allow_download",
                "event",
                "images",
                "keep_original",
                "max_tokens",
                "messages",
                "messages_position",
                "model",
                "numCtx",
                "preprocess",
                "preprocessing",
                "prompt",
                "requestId",
                "roomId",
                "stream",
                "task",
                "temperature",
            ],
        ),
    ];

    #[test]
    fn generated_schemas_keep_the_hand_written_arguments() {
        assert_eq!(HAND_WRITTEN.len(), TOOLS.len());
        for (name, expected) in HAND_WRITTEN {
            let tool = find(name).expect("listed tool exists");
            let schema = (tool.definition)()["inputSchema"].clone();
            let mut props: Vec<&str> = schema["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .map(String::as_str)
                .collect();
            props.sort_unstable();
            assert_eq!(&props, expected, "{name}");
            assert_eq!(schema["additionalProperties"], false, "{name}");
            let text = schema.to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$defs") && !text.contains("$schema"),
                "{name}: {text}"
            );
            assert!(!text.contains("\"null\""), "{name}: {text}");
        }
    }

    #[tokio::test]
    async fn every_tool_refuses_an_argument_it_does_not_declare() {
        let inference = Inference::new(crate::config::InferenceConfig::default());
        let call = Call::new(CallContext::detached(
            tokio_util::sync::CancellationToken::new(),
        ));
        for tool in TOOLS {
            let args = Args::new(serde_json::json!({"modle": "typo"})).expect("an object");
            let err = (tool.call)(&inference, args, &call)
                .await
                .expect_err("an unknown argument is refused");
            let text = err.to_string();
            // It names the typo and the arguments the tool does take.
            let first_declared = (tool.definition)()["inputSchema"]["properties"]
                .as_object()
                .and_then(|p| p.keys().next().cloned())
                .expect("a tool takes arguments");
            assert!(
                matches!(err, ToolError::InvalidArguments(_))
                    && text.contains("unknown argument `modle`")
                    && text.contains(&format!("`{first_declared}`")),
                "{}: {text}",
                tool.name
            );
        }
    }
}
