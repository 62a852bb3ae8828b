//! Documents mcpyard knows, and what it gives them: the tool names their
//! users already know (by method and path), and what `expose = "default"`
//! lists (every tool of a small document; for a larger one, the common
//! operations of a known document, chosen by method and path so renaming a
//! tool keeps it listed; else none).

use crate::model::ApiDocument;

/// Documents of up to this many operations are listed whole.
pub const DEFAULT_LISTING_MAX_OPERATIONS: usize = 40;

/// A document mcpyard knows, recognised by its title or by paths every
/// version of it has.
struct KnownDocument {
    title_contains: &'static str,
    characteristic_paths: &'static [&'static str],
    common: &'static [(&'static str, &'static str)],
    /// Method, path, tool name: names in place of the derived ones.
    names: &'static [(&'static str, &'static str, &'static str)],
}

const KNOWN: &[KnownDocument] = &[KnownDocument {
    title_contains: "localai",
    characteristic_paths: &["/v1/chat/completions", "/models/apply", "/system"],
    // What most calls to a local LocalAI are, within the token budget of
    // the default listing (≤ 30 % of the whole catalogue's schemas): the
    // OpenAI-shaped operations carry LocalAI's 57-field request object
    // (~2,500 tokens each), so the legacy completion, model installation
    // and the rarer media operations are left to search.
    common: &[
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/images/generations"),
        ("POST", "/v1/audio/speech"),
        ("POST", "/v1/audio/transcriptions"),
        ("GET", "/v1/models"),
        ("GET", "/system"),
        ("POST", "/v1/rerank"),
        ("POST", "/v1/tokenize"),
        ("GET", "/models/available"),
    ],
    names: LOCALAI_NAMES,
}];

/// LocalAiMCP's names for LocalAI's operations: task words rather than
/// routes, and what its users have in their `expose` lists and prompts.
const LOCALAI_NAMES: &[(&str, &str, &str)] = &[
    ("POST", "/3d/generations", "generate_3d_asset"),
    ("POST", "/3d/remesh", "remesh_3d_asset"),
    ("GET", "/api/agent/jobs", "list_agent_jobs"),
    ("POST", "/api/agent/jobs/execute", "run_agent_job"),
    ("GET", "/api/agent/jobs/{id}", "get_agent_job"),
    ("DELETE", "/api/agent/jobs/{id}", "delete_agent_job"),
    ("POST", "/api/agent/jobs/{id}/cancel", "cancel_agent_job"),
    ("GET", "/api/agent/tasks", "list_agent_tasks"),
    ("POST", "/api/agent/tasks", "create_agent_task"),
    ("GET", "/api/agent/tasks/{id}", "get_agent_task"),
    ("PUT", "/api/agent/tasks/{id}", "update_agent_task"),
    ("DELETE", "/api/agent/tasks/{id}", "delete_agent_task"),
    ("POST", "/api/agent/tasks/{name}/execute", "run_agent_task"),
    ("GET", "/api/aliases", "list_model_aliases"),
    ("GET", "/api/backend-logs", "list_backend_log_models"),
    ("GET", "/api/backend-logs/{modelId}", "get_backend_logs"),
    (
        "POST",
        "/api/backend-logs/{modelId}/clear",
        "clear_backend_logs",
    ),
    ("GET", "/api/backend-traces", "list_backend_traces"),
    ("POST", "/api/backend-traces/clear", "clear_backend_traces"),
    ("GET", "/api/backend-traces/{id}", "get_backend_trace"),
    ("GET", "/api/branding", "get_branding"),
    (
        "POST",
        "/api/branding/asset/{kind}",
        "upload_branding_asset",
    ),
    (
        "DELETE",
        "/api/branding/asset/{kind}",
        "reset_branding_asset",
    ),
    ("GET", "/api/instructions", "list_instruction_guides"),
    ("GET", "/api/instructions/{name}", "get_instruction_guide"),
    (
        "PATCH",
        "/api/models/config-json/{name}",
        "update_model_config",
    ),
    (
        "GET",
        "/api/models/config-metadata",
        "list_model_config_fields",
    ),
    (
        "GET",
        "/api/models/config-metadata/autocomplete/{provider}",
        "autocomplete_model_config",
    ),
    (
        "PUT",
        "/api/models/toggle-pinned/{name}/{action}",
        "set_model_pin_state",
    ),
    ("POST", "/api/models/vram-estimate", "estimate_model_vram"),
    (
        "GET",
        "/api/models/{id}/load-status",
        "get_model_load_status",
    ),
    (
        "PUT",
        "/api/models/{name}/{action}",
        "set_model_enabled_state",
    ),
    ("GET", "/api/nodes/models", "list_cluster_models"),
    (
        "PUT",
        "/api/nodes/{id}/max-replicas-per-model",
        "set_node_max_replicas",
    ),
    (
        "DELETE",
        "/api/nodes/{id}/max-replicas-per-model",
        "reset_node_max_replicas",
    ),
    ("PUT", "/api/nodes/{id}/vram-budget", "set_node_vram_budget"),
    (
        "DELETE",
        "/api/nodes/{id}/vram-budget",
        "reset_node_vram_budget",
    ),
    ("GET", "/api/p2p", "list_p2p_nodes"),
    ("GET", "/api/p2p/token", "get_p2p_token"),
    ("POST", "/api/pii/analyze", "detect_pii"),
    ("POST", "/api/pii/redact", "redact_pii"),
    ("POST", "/api/router/decide", "route_prompt"),
    ("POST", "/api/router/{name}/corpus", "add_router_examples"),
    (
        "DELETE",
        "/api/router/{name}/corpus",
        "clear_router_examples",
    ),
    (
        "GET",
        "/api/router/{name}/corpus/stats",
        "get_router_corpus_stats",
    ),
    ("GET", "/api/traces", "list_request_traces"),
    ("POST", "/api/traces/clear", "clear_request_traces"),
    ("GET", "/api/traces/summary", "summarize_request_traces"),
    ("GET", "/api/traces/{id}", "get_request_trace"),
    ("GET", "/api/voice-profiles", "list_voice_profiles"),
    ("POST", "/api/voice-profiles", "create_voice_profile"),
    ("DELETE", "/api/voice-profiles/{id}", "delete_voice_profile"),
    (
        "GET",
        "/api/voice-profiles/{id}/audio",
        "get_voice_profile_audio",
    ),
    ("POST", "/audio/transform", "transform_audio"),
    (
        "POST",
        "/audio/transformations",
        "transform_audio_alternate",
    ),
    (
        "GET",
        "/audio/transformations/stream",
        "stream_audio_transform",
    ),
    ("POST", "/backend/load", "preload_model"),
    ("GET", "/backend/monitor", "get_backend_monitor"),
    ("POST", "/backend/shutdown", "shutdown_backend"),
    ("GET", "/backends", "list_backends"),
    ("POST", "/backends/apply", "install_backend"),
    ("GET", "/backends/available", "list_available_backends"),
    ("POST", "/backends/delete/{name}", "delete_backend"),
    ("GET", "/backends/galleries", "list_backend_galleries"),
    ("GET", "/backends/jobs", "list_backend_jobs"),
    ("GET", "/backends/jobs/{uuid}", "get_backend_job"),
    ("GET", "/backends/known", "list_known_backends"),
    ("POST", "/backends/upgrade/{name}", "upgrade_backend"),
    ("GET", "/backends/upgrades", "list_backend_upgrades"),
    ("POST", "/backends/upgrades/check", "check_backend_upgrades"),
    ("GET", "/branding/asset/{kind}", "get_branding_asset"),
    ("GET", "/metrics", "get_metrics"),
    ("POST", "/models/apply", "install_model"),
    ("GET", "/models/available", "list_installable_models"),
    ("POST", "/models/delete/{name}", "delete_model"),
    ("GET", "/models/galleries", "list_model_galleries"),
    ("GET", "/models/jobs", "list_model_jobs"),
    ("GET", "/models/jobs/{uuid}", "get_model_job"),
    ("GET", "/system", "get_system_info"),
    ("GET", "/tokenMetrics", "get_token_metrics"),
    ("POST", "/tts", "text_to_speech_legacy"),
    ("POST", "/v1/audio/classification", "classify_audio"),
    ("POST", "/v1/audio/diarization", "diarize_audio"),
    ("POST", "/v1/audio/speech", "text_to_speech"),
    ("POST", "/v1/audio/transcriptions", "transcribe_audio"),
    ("POST", "/v1/chat/completions", "chat"),
    ("POST", "/v1/completions", "complete_text"),
    ("POST", "/v1/depth", "estimate_depth"),
    ("POST", "/v1/detection", "detect_objects"),
    ("POST", "/v1/detokenize", "detokenize"),
    ("POST", "/v1/edits", "edit_text"),
    ("POST", "/v1/embeddings", "embed"),
    ("POST", "/v1/face/analyze", "analyze_face"),
    ("POST", "/v1/face/embed", "get_face_embedding"),
    ("POST", "/v1/face/forget", "forget_face"),
    ("POST", "/v1/face/identify", "identify_face"),
    ("POST", "/v1/face/register", "register_face"),
    ("POST", "/v1/face/verify", "verify_faces"),
    ("POST", "/v1/images/generations", "generate_image"),
    ("POST", "/v1/images/inpainting", "inpaint_image"),
    ("POST", "/v1/images/upscale", "upscale_image"),
    ("POST", "/v1/mcp/chat/completions", "chat_with_mcp_tools"),
    ("POST", "/v1/messages", "create_message"),
    ("GET", "/v1/models", "list_models"),
    ("GET", "/v1/models/capabilities", "list_model_capabilities"),
    ("POST", "/v1/moderations", "moderate_text"),
    ("POST", "/v1/rerank", "rerank"),
    ("POST", "/v1/responses", "create_response"),
    ("GET", "/v1/responses/{id}", "get_response"),
    ("POST", "/v1/responses/{id}/cancel", "cancel_response"),
    ("POST", "/v1/sound-generation", "generate_sound"),
    (
        "POST",
        "/v1/text-to-speech/{voice-id}",
        "text_to_speech_with_voice",
    ),
    ("GET", "/v1/tokenMetrics", "get_token_metrics_v1"),
    ("POST", "/v1/tokenize", "tokenize"),
    ("POST", "/v1/voice/analyze", "analyze_voice"),
    ("POST", "/v1/voice/embed", "get_speaker_embedding"),
    ("POST", "/v1/voice/forget", "forget_speaker"),
    ("POST", "/v1/voice/identify", "identify_speaker"),
    ("POST", "/v1/voice/register", "register_speaker"),
    ("POST", "/v1/voice/verify", "verify_speakers"),
    ("POST", "/vad", "detect_speech_segments"),
    ("POST", "/video", "generate_video"),
    ("GET", "/ws/backend-logs/{modelId}", "stream_backend_logs"),
];

/// The known document with this title and these paths.
fn recognise(title: &str, has_path: impl Fn(&str) -> bool) -> Option<&'static KnownDocument> {
    let title = title.to_ascii_lowercase();
    KNOWN.iter().find(|known| {
        title.contains(known.title_contains)
            || known.characteristic_paths.iter().all(|path| has_path(path))
    })
}

/// The names a known document's operations take (method, path, name), or
/// none for a document mcpyard does not know.
pub(crate) fn names(
    title: &str,
    has_path: impl Fn(&str) -> bool,
) -> &'static [(&'static str, &'static str, &'static str)] {
    recognise(title, has_path).map_or(&[], |known| known.names)
}

/// `None`: every tool; `Some(names)`: those tools only (maybe none).
pub fn default_listing(doc: &ApiDocument) -> Option<Vec<String>> {
    if doc.operations.len() <= DEFAULT_LISTING_MAX_OPERATIONS {
        return None;
    }
    let has_path = |path: &str| {
        doc.operations
            .iter()
            .any(|operation| operation.path == path)
    };
    let Some(known) = recognise(&doc.title, has_path) else {
        return Some(Vec::new());
    };
    Some(
        doc.operations
            .iter()
            .filter(|operation| {
                known.common.iter().any(|(method, path)| {
                    operation.method.as_str() == *method && operation.path == *path
                })
            })
            .map(|operation| operation.name.clone())
            .collect(),
    )
}
