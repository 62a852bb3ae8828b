//! `${VAR}` expansion of configuration strings.
//!
//! Syntax, applied to every string value after the file is parsed (so a `$`
//! that is part of TOML or JSON syntax never matters):
//!
//! - `${VAR}`: the value of the environment variable `VAR`; an error when it
//!   is not set.
//! - `${VAR:-default}`: `default` when `VAR` is unset or empty (as in a shell).
//! - `${env:VAR}`: the same as `${VAR}` (the spelling VS Code uses).
//! - `$$`: a literal `$` (as in Docker Compose), so `$${VAR}` gives `${VAR}`.
//! - `${/}`: the path separator (VS Code's spelling; its other predefined
//!   variables, `${workspaceFolder}`..., are given by the loader's lookup).
//! - any other `$` is kept as it is.
//!
//! Variable names are `[A-Za-z_][A-Za-z0-9_]*`. Expanded values are secrets
//! as far as this module knows: no error carries one.

use std::fmt;

/// Why a string could not be expanded. Carries names, never values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${VAR}` with `VAR` unset and no default.
    Missing { var: String },
    /// `${` without a closing `}`.
    Unterminated,
    /// VS Code's `${input:ID}`, which only VS Code can answer.
    Input { id: String },
    /// Something between `${` and `}` that is not a variable reference.
    Unsupported { expr: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::Missing { var } => write!(
                f,
                "environment variable `{var}` is not set (write `${{{var}:-default}}` to give a default)"
            ),
            ExpandError::Unterminated => {
                f.write_str("`${` without a closing `}` (write `$$` for a literal `$`)")
            }
            ExpandError::Input { id } => write!(
                f,
                "`${{input:{id}}}` is a VS Code input variable, which only VS Code can prompt for; \
                 put the value in an environment variable and write `${{VAR}}` instead"
            ),
            ExpandError::Unsupported { expr } => write!(
                f,
                "`${{{expr}}}` is not a variable reference: expected `${{VAR}}` or `${{VAR:-default}}` \
                 with VAR made of letters, digits and `_` (write `$$` for a literal `$`)"
            ),
        }
    }
}

/// Expands `input`, looking variables up with `lookup`.
pub(crate) fn expand(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    // Fast path: most strings have no `$` at all.
    if !input.contains('$') {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or(ExpandError::Unterminated)?;
            out.push_str(&substitute(&body[..end], lookup)?);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${...}` body.
fn substitute(expr: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    if let Some(id) = expr.strip_prefix("input:") {
        return Err(ExpandError::Input { id: id.to_owned() });
    }
    // VS Code's short form of `${pathSeparator}`.
    if expr == "/" {
        return Ok(std::path::MAIN_SEPARATOR.to_string());
    }
    let expr_no_env = expr.strip_prefix("env:").unwrap_or(expr);
    let (name, default) = match expr_no_env.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (expr_no_env, None),
    };
    if !is_var_name(name) {
        return Err(ExpandError::Unsupported {
            expr: expr.to_owned(),
        });
    }
    match (lookup(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Ok(d.to_owned()),
        (Some(v), _) => Ok(v),
        (None, Some(d)) => Ok(d.to_owned()),
        (None, None) => Err(ExpandError::Missing {
            var: name.to_owned(),
        }),
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `s` contains a `${...}` reference (used to warn about secrets
/// written in clear).
pub(crate) fn has_reference(s: &str) -> bool {
    s.replace("$$", "").contains("${")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "HOME_DIR" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn ex(s: &str) -> Result<String, ExpandError> {
        expand(s, &env)
    }

    #[test]
    fn plain_strings_are_unchanged() {
        assert_eq!(ex("npx -y server").unwrap(), "npx -y server");
        assert_eq!(ex("").unwrap(), "");
    }

    #[test]
    fn variables_are_replaced_anywhere_in_the_string() {
        assert_eq!(ex("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(ex("${HOME_DIR}/x/${TOKEN}").unwrap(), "/home/u/x/s3cret");
        assert_eq!(ex("${env:TOKEN}").unwrap(), "s3cret");
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(ex("${NOPE:-fallback}").unwrap(), "fallback");
        assert_eq!(ex("${EMPTY:-fallback}").unwrap(), "fallback");
        assert_eq!(ex("${TOKEN:-fallback}").unwrap(), "s3cret");
        assert_eq!(ex("${NOPE:-}").unwrap(), "");
        assert_eq!(ex("${NOPE:-a:-b}").unwrap(), "a:-b");
        assert_eq!(ex("${EMPTY}").unwrap(), "");
    }

    #[test]
    fn dollar_dollar_is_a_literal_dollar() {
        assert_eq!(ex("$${TOKEN}").unwrap(), "${TOKEN}");
        assert_eq!(ex("a$$b").unwrap(), "a$b");
        assert_eq!(ex("$$$${TOKEN}").unwrap(), "$${TOKEN}");
    }

    #[test]
    fn a_lone_dollar_is_kept() {
        assert_eq!(ex("cost: 5$").unwrap(), "cost: 5$");
        assert_eq!(ex("$HOME").unwrap(), "$HOME");
    }

    #[test]
    fn a_missing_variable_is_an_error_naming_it() {
        let err = ex("x ${MISSING_VAR} y").unwrap_err();
        assert_eq!(
            err,
            ExpandError::Missing {
                var: "MISSING_VAR".into()
            }
        );
        assert!(err.to_string().contains("MISSING_VAR"));
    }

    #[test]
    fn malformed_references_are_errors() {
        assert_eq!(ex("${TOKEN").unwrap_err(), ExpandError::Unterminated);
        assert!(matches!(
            ex("${not valid}").unwrap_err(),
            ExpandError::Unsupported { .. }
        ));
        assert!(matches!(
            ex("${}").unwrap_err(),
            ExpandError::Unsupported { .. }
        ));
        assert!(matches!(
            ex("${1ABC}").unwrap_err(),
            ExpandError::Unsupported { .. }
        ));
    }

    #[test]
    fn vs_code_inputs_get_their_own_message() {
        let err = ex("${input:api-key}").unwrap_err();
        assert_eq!(
            err,
            ExpandError::Input {
                id: "api-key".into()
            }
        );
        assert!(err.to_string().contains("VS Code input"));
    }

    #[test]
    fn errors_never_carry_values() {
        let err = ex("${TOKEN} ${MISSING}").unwrap_err();
        assert!(!err.to_string().contains("s3cret"));
    }

    #[test]
    fn references_are_detected() {
        assert!(has_reference("${X}"));
        assert!(has_reference("Bearer ${X}"));
        assert!(!has_reference("literal"));
        assert!(!has_reference("$${X}"));
    }
}
