//! A configuration error: which file, where in it, and what was expected.
//!
//! Messages name keys and environment variables, never the values they hold
//! (they may be secrets), and never print the file itself.

use std::fmt;

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigError {
    /// The file, as the user named it (or `<embedded default>`).
    pub(crate) file: String,
    /// 1-based line, when the parser knows it.
    pub(crate) line: Option<usize>,
    /// Dotted key path, e.g. `servers.everything.timeout`.
    pub(crate) key: Option<String>,
    /// What is wrong / what was expected.
    pub(crate) message: String,
}

impl ConfigError {
    pub(crate) fn at(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line: None,
            key: Some(key.into()),
            message: message.into(),
        }
    }

    pub(crate) fn file(file: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line: None,
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Rewrites a serde message so it does not quote the offending value:
/// `invalid type: string "Bearer abc", expected a map` becomes
/// `invalid type: a string, expected a map`. A value in the wrong place may
/// be a secret written in clear.
pub(crate) fn redact_serde_message(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(pos) = rest.find("string \"") {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + "string \"".len()..];
        out.push_str("a string");
        // The quoted value ends at the last `"` before `, expected` (a value
        // may itself contain quotes); fall back to the next quote.
        let end = after
            .find("\", expected")
            .or_else(|| after.find('"'))
            .map(|e| e + 1)
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The key an error is about: the path serde reached, plus the unknown
/// field itself when that is the complaint.
pub(crate) fn key_of(path: &str, message: &str) -> Option<String> {
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| field);
    match (path, unknown) {
        (".", None) => None,
        (".", Some(field)) => Some(field.to_owned()),
        // Some parsers have already stepped into the unknown key.
        (p, Some(field)) if p == field || p.ends_with(&format!(".{field}")) => Some(p.to_owned()),
        (p, Some(field)) => Some(format!("{p}.{field}")),
        (p, None) => Some(p.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_key() {
        let mut e = ConfigError::at("a.toml", "servers.x.timeout", "expected a duration");
        assert_eq!(
            e.to_string(),
            "a.toml: `servers.x.timeout`: expected a duration"
        );
        e.line = Some(7);
        assert_eq!(
            e.to_string(),
            "a.toml:7: `servers.x.timeout`: expected a duration"
        );
        assert_eq!(
            ConfigError::file("a.toml", "not found").to_string(),
            "a.toml: not found"
        );
    }

    #[test]
    fn serde_messages_lose_quoted_values() {
        assert_eq!(
            redact_serde_message(r#"invalid type: string "Bearer abc", expected a map"#),
            "invalid type: a string, expected a map"
        );
        assert_eq!(
            redact_serde_message(r#"invalid value: string "x"y", expected z"#),
            "invalid value: a string, expected z"
        );
        assert_eq!(
            redact_serde_message("invalid type: integer `5`, expected a string"),
            "invalid type: integer `5`, expected a string"
        );
    }
}
