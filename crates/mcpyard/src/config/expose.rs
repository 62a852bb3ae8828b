//! The `expose` setting of a source: which of its tools `tools/list` shows.
//! The rest stay callable, by name or through the search tools.

use mcpyard_gateway::Listing;
use serde::Deserialize;

use super::context::Context;
use super::ConfigError;

/// `expose` as written: `"*"`, `"none"` (or `"gateway-only"`), `"default"`, or a list of names
/// and `*` globs (the source's own names, without its prefix).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawExpose {
    Word(String),
    Names(Vec<String>),
}

/// The listing an `expose` value asks for; absent means `default`.
pub(crate) fn listing(
    ctx: &Context<'_>,
    key: &str,
    raw: Option<&RawExpose>,
) -> Result<Listing, ConfigError> {
    match raw {
        None => Ok(Listing::Default),
        Some(RawExpose::Word(word)) => match ctx.expand(key, word)?.trim() {
            "*" | "all" => Ok(Listing::All),
            // `gateway-only` is LocalAiMCP's word for the same.
            "none" | "gateway-only" => Ok(Listing::None),
            "default" => Ok(Listing::Default),
            _ => Err(ctx.error(
                key,
                r#"expected "*", "none" (or "gateway-only"), "default" or a list of tool names and globs"#,
            )),
        },
        Some(RawExpose::Names(names)) => {
            let names = names
                .iter()
                .enumerate()
                .map(|(i, n)| ctx.expand(&format!("{key}[{i}]"), n))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(i) = names.iter().position(|n| n.trim().is_empty()) {
                return Err(ctx.error(&format!("{key}[{i}]"), "a tool name cannot be empty"));
            }
            Ok(Listing::Only(names))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: Option<RawExpose>) -> Result<Listing, ConfigError> {
        let lookup = |_: &str| None;
        let ctx = Context {
            file: "mcpyard.toml",
            base_dir: None,
            lookup: &lookup,
        };
        listing(&ctx, "apis.x.expose", raw.as_ref())
    }

    #[test]
    fn words_lists_and_absence_become_listings() {
        assert_eq!(parse(None).unwrap(), Listing::Default);
        assert_eq!(
            parse(Some(RawExpose::Word("*".into()))).unwrap(),
            Listing::All
        );
        assert_eq!(
            parse(Some(RawExpose::Word("none".into()))).unwrap(),
            Listing::None
        );
        // LocalAiMCP's word for the same.
        assert_eq!(
            parse(Some(RawExpose::Word("gateway-only".into()))).unwrap(),
            Listing::None
        );
        assert_eq!(
            parse(Some(RawExpose::Names(vec!["get_*".into(), "echo".into()]))).unwrap(),
            Listing::Only(vec!["get_*".into(), "echo".into()])
        );
        let err = parse(Some(RawExpose::Word("some".into()))).unwrap_err();
        assert!(err.to_string().contains("apis.x.expose"), "{err}");
    }
}
