//! Secret detectors: the built-in ones for common credentials, and the
//! configured patterns. A match is replaced by `[REDACTED:<name>]`.

use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, MatchKind};
use mcpyard_proto::Payload;
use regex::{Regex, RegexSet};
use serde_json::Value;

/// A built-in detector: its name, its pattern, and text that every match
/// contains (compared without case), which rules a string out at once.
struct Builtin {
    name: &'static str,
    pattern: &'static str,
    contains: &'static [&'static str],
}

/// The built-in detectors, in the order they are applied: spans that may
/// contain other matches (a PEM block) first, the loosest (bearer) last.
const BUILTIN: &[Builtin] = &[
    Builtin {
        name: "private_key",
        pattern: r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)",
        contains: &["-----BEGIN "],
    },
    Builtin {
        name: "aws_access_key",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16}\b",
        contains: &["AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA"],
    },
    Builtin {
        name: "aws_secret_key",
        pattern: r#"(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}"#,
        contains: &["secret"],
    },
    Builtin {
        name: "github_token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
        contains: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    },
    Builtin {
        name: "slack_token",
        pattern: r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
        contains: &["xox"],
    },
    Builtin {
        name: "slack_webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+",
        contains: &["hooks.slack.com"],
    },
    Builtin {
        name: "openai_key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,}",
        contains: &["sk-"],
    },
    Builtin {
        name: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
        contains: &["eyJ"],
    },
    Builtin {
        name: "bearer",
        pattern: r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*",
        contains: &["bearer"],
    },
];

/// The names of the built-in detectors, for the documentation and `check`.
pub fn builtin_detectors() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|d| d.name)
}

/// A pattern that is not a valid regular expression.
#[derive(Debug, thiserror::Error)]
#[error("pattern `{name}` is not a valid regular expression: {reason}")]
pub struct PatternError {
    pub name: String,
    pub reason: String,
}

/// Detectors compiled: a set that tells at once which match a string
/// (most strings match none and cost one pass), and each to replace.
#[derive(Debug)]
struct Compiled {
    any: RegexSet,
    detectors: Vec<(String, Regex)>,
}

impl Compiled {
    /// `None` when there is nothing to detect.
    fn new(patterns: impl Iterator<Item = (String, String)>) -> Result<Option<Self>, PatternError> {
        let mut detectors = Vec::new();
        for (name, pattern) in patterns {
            let regex = Regex::new(&pattern).map_err(|e| PatternError {
                name: name.clone(),
                reason: e.to_string(),
            })?;
            detectors.push((name, regex));
        }
        if detectors.is_empty() {
            return Ok(None);
        }
        let any =
            RegexSet::new(detectors.iter().map(|(_, r)| r.as_str())).map_err(|e| PatternError {
                name: "(all patterns)".into(),
                reason: e.to_string(),
            })?;
        Ok(Some(Self { any, detectors }))
    }
}

fn builtin_patterns() -> impl Iterator<Item = (String, String)> {
    BUILTIN
        .iter()
        .map(|d| (d.name.to_owned(), d.pattern.to_owned()))
}

/// The built-in detectors alone, compiled the first time a string gets
/// past their literals: a gateway whose results hold no candidate never
/// pays their memory (about 1.5 MiB), and a reload compiles them no more.
static BUILTIN_COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    Compiled::new(builtin_patterns())
        .ok()
        .flatten()
        .expect("the built-in detectors compile")
});

/// The literals of the built-in detectors, built the first time a string is
/// checked: an idle gateway never runs the code of the automaton and the
/// expression nor holds their heap (about 1 MiB resident together,
/// BENCHMARKS.md section 7), and a reload builds them no more.
static BUILTIN_LITERALS: LazyLock<Literals> = LazyLock::new(Literals::new);

/// The text the built-in detectors need. The literals of detectors that
/// match case exactly go to an Aho-Corasick automaton with leftmost
/// semantics, which lets it skip through text with its SIMD prefilter; the
/// few of `(?i)` detectors to a case-blind regular expression. One
/// case-blind automaton for all of them ran byte by byte, 16 instructions
/// a byte of every result.
#[derive(Debug)]
struct Literals {
    exact: AhoCorasick,
    any_case: Regex,
}

impl Literals {
    fn new() -> Self {
        let of = |any_case: bool| {
            BUILTIN
                .iter()
                .filter(move |d| d.pattern.starts_with("(?i)") == any_case)
                .flat_map(|d| d.contains.iter().copied())
        };
        let exact = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(of(false))
            .expect("the built-in detectors' literals build an automaton");
        let words: Vec<String> = of(true).map(regex::escape).collect();
        let any_case = Regex::new(&format!("(?i){}", words.join("|")))
            .expect("the built-in detectors' literals build an expression");
        Self { exact, any_case }
    }

    fn is_match(&self, text: &str) -> bool {
        self.exact.is_match(text) || self.any_case.is_match(text)
    }
}

/// Finds and replaces secrets in text and in every string of a JSON value.
#[derive(Debug, Clone)]
pub(crate) struct Redactor {
    /// With the built-in detectors alone, the text one of them needs
    /// ([`BUILTIN_LITERALS`]) is looked for first: a single pass of plain
    /// string search rules out nearly every string before the regular
    /// expressions run.
    builtin_only: bool,
    /// With configured patterns, every detector compiled at once (a bad
    /// pattern is refused when the configuration is read); `None`: the
    /// built-in detectors alone, [`BUILTIN_COMPILED`].
    own: Option<Arc<Compiled>>,
}

impl Redactor {
    /// The built-in detectors (when `builtin`) and then `patterns`
    /// (name, regular expression). `None` when there is nothing to detect.
    pub(crate) fn new(
        builtin: bool,
        patterns: &[(String, String)],
    ) -> Result<Option<Self>, PatternError> {
        if builtin && patterns.is_empty() {
            return Ok(Some(Self {
                builtin_only: true,
                own: None,
            }));
        }
        let builtin = builtin_patterns().filter(|_| builtin);
        let own = Compiled::new(builtin.chain(patterns.iter().cloned()))?;
        Ok(own.map(|own| Self {
            builtin_only: false,
            own: Some(Arc::new(own)),
        }))
    }

    /// The literals to look for before the detectors run, if any.
    fn needed(&self) -> Option<&'static Literals> {
        self.builtin_only.then(|| &*BUILTIN_LITERALS)
    }

    fn compiled(&self) -> &Compiled {
        self.own.as_deref().unwrap_or(&BUILTIN_COMPILED)
    }

    /// Whether `text` may hold a secret: false only when no detector can
    /// match it.
    fn may_hold(&self, text: &str) -> bool {
        if self.needed().is_some_and(|n| !n.is_match(text)) {
            return false;
        }
        self.compiled().any.is_match(text)
    }

    /// The text with every secret replaced; `None` when it has none.
    pub(crate) fn redact_str(&self, text: &str) -> Option<String> {
        if self.needed().is_some_and(|n| !n.is_match(text)) {
            return None;
        }
        let compiled = self.compiled();
        let hits = compiled.any.matches(text);
        if !hits.matched_any() {
            return None;
        }
        let mut out = text.to_owned();
        for i in hits.iter() {
            let (name, regex) = &compiled.detectors[i];
            let replaced = regex.replace_all(&out, format!("[REDACTED:{name}]").as_str());
            if let std::borrow::Cow::Owned(s) = replaced {
                out = s;
            }
        }
        Some(out)
    }

    /// Redacts every string of `value` in place, object keys included,
    /// but the bytes of MCP binary content: `data` of an image or audio
    /// block, `blob` of a resource's contents. Base64 may look like a token
    /// by chance, and a changed image is a broken one. Inside
    /// `structuredContent` nothing is binary: all of it is scanned.
    /// Returns how many strings changed.
    pub(crate) fn redact_value(&self, value: &mut Value) -> usize {
        self.redact_in(value, true)
    }

    /// Redacts a result like [`Redactor::redact_value`]. A result held as
    /// JSON text is searched for the built-in detectors' literals as it
    /// is, and parsed only when one may be in it: none of them holds a
    /// character JSON must escape, so only a `\u` escape could hide one.
    pub(crate) fn redact_result(&self, result: &mut Payload) -> usize {
        if let (Some(needed), Some(text)) = (self.needed(), result.text()) {
            if !text.contains("\\u") && !needed.is_match(text) {
                return 0;
            }
        }
        self.redact_value(result.value_mut())
    }

    /// Redacts a message's params, saying so in the log when it did.
    pub(crate) fn redact_message(&self, method: &str, params: &mut Option<Value>) {
        if let Some(params) = params.as_mut() {
            let changed = self.redact_value(params);
            if changed > 0 {
                tracing::info!(
                    method,
                    strings = changed,
                    "secrets redacted from a message to a client"
                );
            }
        }
    }

    fn redact_in(&self, value: &mut Value, content_blocks: bool) -> usize {
        match value {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items
                .iter_mut()
                .map(|v| self.redact_in(v, content_blocks))
                .sum(),
            Value::Object(map) => {
                let binary = if !content_blocks {
                    None
                } else {
                    match map.get("type").and_then(Value::as_str) {
                        Some("image" | "audio") => Some("data"),
                        // Resource contents, alone or embedded in a block.
                        _ if map.contains_key("uri") => Some("blob"),
                        _ => None,
                    }
                };
                let mut changed = self.redact_keys(map);
                for (key, v) in map.iter_mut() {
                    if Some(key.as_str()) == binary && v.is_string() {
                        continue;
                    }
                    changed += self.redact_in(v, content_blocks && key != "structuredContent");
                }
                changed
            }
            _ => 0,
        }
    }

    fn redact_string(&self, s: &mut String) -> usize {
        match self.redact_str(s) {
            Some(r) => {
                *s = r;
                1
            }
            None => 0,
        }
    }

    /// Keys are rewritten only when one holds a secret, keeping the order.
    fn redact_keys(&self, map: &mut serde_json::Map<String, Value>) -> usize {
        if !map.keys().any(|k| self.may_hold(k)) {
            return 0;
        }
        let mut changed = 0;
        *map = std::mem::take(map)
            .into_iter()
            .map(|(mut k, v)| {
                changed += self.redact_string(&mut k);
                (k, v)
            })
            .collect();
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtin() -> Redactor {
        Redactor::new(true, &[]).unwrap().unwrap()
    }

    #[test]
    fn each_builtin_detector_finds_its_kind_of_secret() {
        let r = builtin();
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "aws_access_key"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_key",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "private_key",
            ),
            ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqh (cut)", "private_key"),
            ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", "github_token"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "github_token",
            ),
            ("xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "slack_token"),
            (
                "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
                "slack_webhook",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "openai_key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                "jwt",
            ),
            ("Authorization: Bearer abcdefghijklmnop1234", "bearer"),
        ];
        for (text, name) in cases {
            let out = r
                .redact_str(text)
                .unwrap_or_else(|| panic!("{name}: {text}"));
            assert!(out.contains(&format!("[REDACTED:{name}]")), "{name}: {out}");
        }
    }

    #[test]
    fn the_builtin_detectors_compile_in_order_each_with_literals() {
        let compiled = &*BUILTIN_COMPILED;
        assert_eq!(compiled.detectors.len(), BUILTIN.len());
        for (d, (name, _)) in BUILTIN.iter().zip(&compiled.detectors) {
            assert_eq!(d.name, name);
            assert!(
                !d.contains.is_empty(),
                "{name} has no literal to rule text out"
            );
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let r = builtin();
        for text in [
            "hello world",
            "the sky-is blue",
            "a task-id 123e4567-e89b-12d3-a456-426614174000",
            "bearer of bad news",
        ] {
            assert_eq!(r.redact_str(text), None, "{text}");
        }
    }

    #[test]
    fn configured_patterns_are_named_and_bad_ones_refused() {
        let r = Redactor::new(false, &[("employee_id".into(), r"EMP-\d{6}".into())])
            .unwrap()
            .unwrap();
        assert_eq!(
            r.redact_str("id EMP-123456 ok").as_deref(),
            Some("id [REDACTED:employee_id] ok")
        );
        assert_eq!(r.redact_str("AKIAIOSFODNN7EXAMPLE"), None);
        let e = Redactor::new(false, &[("broken".into(), "(".into())]).unwrap_err();
        assert_eq!(e.name, "broken");
        assert!(Redactor::new(false, &[]).unwrap().is_none());
    }

    #[test]
    fn every_string_of_a_value_is_redacted_but_binary_data() {
        let r = builtin();
        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let mut v = json!({
            "content": [
                {"type": "text", "text": format!("your token is {token}")},
                {"type": "image", "data": token, "mimeType": "image/png"},
            ],
            "structuredContent": {"nested": [format!("again {token}")]},
        });
        assert_eq!(r.redact_value(&mut v), 2);
        assert_eq!(v["content"][1]["data"], token);
        assert!(!v["content"][0]["text"].as_str().unwrap().contains(token));
        assert!(!v["structuredContent"].to_string().contains(token));
    }

    fn text(json: &str) -> Payload {
        Payload::from_text(serde_json::value::RawValue::from_string(json.to_owned()).unwrap())
    }

    #[test]
    fn a_result_held_as_text_is_parsed_only_when_a_secret_may_be_in_it() {
        let r = builtin();
        let mut clean = text(r#"{"content":[{"type":"text","text":"nothing here"}]}"#);
        assert_eq!(r.redact_result(&mut clean), 0);
        assert!(clean.text().is_some(), "left as text");

        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let mut plain = text(&format!(
            r#"{{"content":[{{"type":"text","text":"{token}"}}]}}"#
        ));
        assert_eq!(r.redact_result(&mut plain), 1);
        assert!(!plain.to_value().to_string().contains(token));

        // The same token with its first letter escaped: the text does not
        // hold it as written, the value does.
        let escaped = format!(
            r#"{{"content":[{{"type":"text","text":"\u0067{}"}}]}}"#,
            &token[1..]
        );
        let mut escaped = text(&escaped);
        assert_eq!(r.redact_result(&mut escaped), 1);
        assert!(!escaped.to_value().to_string().contains(token));

        // With configured patterns every result is looked into.
        let own = Redactor::new(false, &[("word".into(), "secretword".into())])
            .unwrap()
            .unwrap();
        let mut result = text(r#"{"content":[{"type":"text","text":"a secretword"}]}"#);
        assert_eq!(own.redact_result(&mut result), 1);
    }

    #[test]
    fn structured_content_and_keys_are_scanned_whatever_their_shape() {
        let r = builtin();
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let mut v = json!({
            "content": [
                {"type": "resource", "resource": {"uri": "x://a", "mimeType": "application/octet-stream", "blob": token}},
            ],
            "structuredContent": {
                "file": {"mimeType": "text/plain", "data": format!("key {token}")},
                "image": {"type": "image", "mimeType": "image/png", "data": token},
                token: "a secret as a key",
            },
        });
        assert_eq!(r.redact_value(&mut v), 3, "{v}");
        assert_eq!(v["content"][0]["resource"]["blob"], token, "binary kept");
        assert!(!v["structuredContent"].to_string().contains(token), "{v}");
    }
}
