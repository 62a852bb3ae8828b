//! What `check` says of `[inference]`, the local models source.

/// `check`'s line on the local models source.
pub(super) fn describe_inference(c: &mcpyard_inference::InferenceConfig) -> String {
    if !c.enabled {
        return "off".into();
    }
    let mut parts = vec![format!("tools as `{}<tool>`", c.prefix)];
    if !c.backends.is_empty() {
        let names: Vec<&str> = c.backends.iter().map(|b| b.name.as_str()).collect();
        parts.push(format!("backends {}", names.join(", ")));
    }
    if c.discovery_enabled() {
        let ports: Vec<String> = c.discover_ports.iter().map(u16::to_string).collect();
        parts.push(format!("discovery on 127.0.0.1 ports {}", ports.join(", ")));
    }
    parts.push(format!("output {}", c.effective_output_dir().display()));
    format!("on ({})", parts.join("; "))
}
