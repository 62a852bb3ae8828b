//! Who may use what: rules that allow or deny a tool, prompt or resource by
//! identity, group, scope, source, name (globs) and, through a CEL `when`
//! condition, anything else about the call, its arguments included. The
//! first rule that matches decides; none matching leaves the default.
//!
//! The policy is applied twice, the same way: when the catalogue is listed
//! for an identity (an item it may not use is left out of its lists, search
//! and `mcpyard__call_tool`), and on every routed call as the router's
//! [`PolicyLayer`], which alone sees the arguments.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Env, Program};
use mcpyard_proto::methods;
use serde_json::Value;

use crate::call::Identity;
use crate::call::ItemKind;
use crate::catalog::matches as glob_matches;
use crate::catalog::resource_uri;
use crate::router::{Layer, Next, RouteFuture, RoutedCall};
use crate::RouteError;

/// What a rule, or the default, does with the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Effect {
    #[default]
    Allow,
    Deny,
}

/// One item of the catalogue as the policy sees it: its kind, the name a
/// client uses (exposed tool or prompt name, or resource URI / URI
/// template) and the source that offers it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    pub kind: ItemKind,
    pub name: &'a str,
    pub source: &'a str,
}

/// One rule. Every filter that is set must match (an empty list matches
/// anything); within one list, any entry may. `tools`, `prompts` and
/// `resources` are globs over the names clients see; a rule that sets none
/// of them matches every item of its sources, one that sets some matches
/// only items of those kinds.
#[derive(Debug, Default)]
pub struct Rule {
    pub effect: Effect,
    /// Identity names (globs).
    pub identities: Vec<String>,
    /// The identity is in one of these groups.
    pub groups: Vec<String>,
    /// The identity's token carries one of these scopes.
    pub scopes: Vec<String>,
    /// Source names (globs).
    pub sources: Vec<String>,
    pub tools: Vec<String>,
    pub prompts: Vec<String>,
    pub resources: Vec<String>,
    pub when: Option<Condition>,
}

/// A compiled CEL condition. Variables: `identity` (`name`, `kind`,
/// `groups`, `scopes`), `source`, `kind` (`tool`, `prompt`, `resource`),
/// `name`, and, on calls only, `arguments` (the call's arguments, `{}` when
/// it has none).
#[derive(Debug)]
pub struct Condition {
    text: String,
    program: Program,
    /// Whether it reads `arguments`, which a listing cannot give it.
    uses_arguments: bool,
}

/// A `when` condition that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("`when` is not a valid CEL expression: {0}")]
pub struct ConditionError(String);

// Programs keep no interior state; the stdlib environment is built once.
static CEL_ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(Env::stdlib()));

impl Condition {
    pub fn compile(text: &str) -> Result<Self, ConditionError> {
        let program = CEL_ENV
            .compile(text)
            .map_err(|e| ConditionError(one_line(&e.to_string())))?;
        Ok(Self {
            text: text.to_owned(),
            uses_arguments: program.references().has_variable("arguments"),
            program,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// `Some(bool)` when the condition could be evaluated; `None` when it
    /// failed (a missing key, a type error...), which the caller resolves.
    fn evaluate(
        &self,
        identity: &Identity,
        item: Item<'_>,
        arguments: Option<&Value>,
    ) -> Option<bool> {
        let variables = Variables {
            identity,
            item,
            arguments: arguments.filter(|_| self.uses_arguments),
            identity_val: OnceLock::new(),
            arguments_val: OnceLock::new(),
        };
        let mut context = Context::with_env(CEL_ENV.clone());
        context.set_variable_resolver(&variables);
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(b)) => Some(b),
            Ok(other) => {
                tracing::debug!(condition = %self.text, value = ?other, "policy condition is not a bool");
                None
            }
            Err(e) => {
                tracing::debug!(condition = %self.text, error = %e, "policy condition failed");
                None
            }
        }
    }
}

/// A condition's variables, looked up by name as the program meets them
/// (no map of them is built per call), each converted at most once.
struct Variables<'a> {
    identity: &'a Identity,
    item: Item<'a>,
    /// `None` when the condition does not read them, or on a listing.
    arguments: Option<&'a Value>,
    identity_val: OnceLock<Box<dyn Val + 'a>>,
    arguments_val: OnceLock<Box<dyn Val + 'a>>,
}

impl VariableResolver for Variables<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let val: &(dyn Val + '_) = match variable {
            "identity" => self
                .identity_val
                .get_or_init(|| identity_val(self.identity))
                .as_ref(),
            "arguments" => {
                let arguments = self.arguments?;
                self.arguments_val
                    .get_or_init(|| json_val(arguments))
                    .as_ref()
            }
            "source" => return Some(CowVal::owned(CelString::from(self.item.source))),
            "kind" => return Some(CowVal::owned(CelString::from(self.item.kind.as_str()))),
            "name" => return Some(CowVal::owned(CelString::from(self.item.name))),
            _ => return None,
        };
        Some(CowVal::Borrowed(val))
    }
}

/// A JSON value as a CEL value that borrows its strings: what binding it
/// through serde makes (a positive integer is a `uint`, as serde_json
/// writes it out), without copying it twice on the way.
fn json_val(value: &Value) -> Box<dyn Val + '_> {
    match value {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Box::new(CelUInt::from(u)),
            (None, Some(i)) => Box::new(CelInt::from(i)),
            (None, None) => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(CelList::from(
            items.iter().map(json_val).collect::<Vec<_>>(),
        )),
        Value::Object(members) => Box::new(CelMap::from(
            members
                .iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), json_val(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// The identity as the map conditions read (`name`, `kind`, `groups`,
/// `scopes`), borrowing its strings.
fn identity_val(identity: &Identity) -> Box<dyn Val + '_> {
    fn strings(names: &[String]) -> Box<dyn Val + '_> {
        Box::new(CelList::from(
            names
                .iter()
                .map(|n| Box::new(CelString::from(n.as_str())) as Box<dyn Val + '_>)
                .collect::<Vec<_>>(),
        ))
    }
    let members: [(&str, Box<dyn Val + '_>); 4] = [
        ("name", Box::new(CelString::from(identity.name.as_str()))),
        ("kind", Box::new(CelString::from(identity.kind.as_str()))),
        ("groups", strings(&identity.groups)),
        ("scopes", strings(&identity.scopes)),
    ];
    Box::new(CelMap::from(
        members
            .into_iter()
            .map(|(k, v)| (CelMapKey::from(k), v))
            .collect::<HashMap<_, _>>(),
    ))
}

/// What the policy made of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Refused by rule `rule` (its index in the configuration), or by the
    /// default when `None`.
    Deny {
        rule: Option<usize>,
    },
}

/// The rules and the default, in configuration order.
#[derive(Debug, Default)]
pub struct Policy {
    pub default: Effect,
    pub rules: Vec<Rule>,
}

impl Policy {
    /// Whether a call of `item` with these arguments is allowed. A
    /// condition that cannot be evaluated makes a deny rule match and an
    /// allow rule not: an error never lets a call through.
    pub fn decide(&self, identity: &Identity, item: Item<'_>, arguments: &Value) -> Verdict {
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.applies(identity, item) {
                continue;
            }
            let matched = match &rule.when {
                None => true,
                Some(c) => c
                    .evaluate(identity, item, Some(arguments))
                    .unwrap_or(rule.effect == Effect::Deny),
            };
            if matched {
                return verdict(rule.effect, Some(index));
            }
        }
        verdict(self.default, None)
    }

    /// Whether `item` is listed for `identity`: allowed for some arguments.
    /// A condition over the arguments cannot be decided before a call, so
    /// an allow rule with one lists the item (calls are still checked) and
    /// a deny rule with one does not hide it.
    pub fn lists(&self, identity: &Identity, item: Item<'_>) -> Verdict {
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.applies(identity, item) {
                continue;
            }
            let matched = match &rule.when {
                None => true,
                Some(c) => match c.evaluate(identity, item, None) {
                    Some(b) => b,
                    None if c.uses_arguments => {
                        if rule.effect == Effect::Allow {
                            return Verdict::Allow;
                        }
                        false
                    }
                    None => rule.effect == Effect::Deny,
                },
            };
            if matched {
                return verdict(rule.effect, Some(index));
            }
        }
        verdict(self.default, None)
    }

    /// Whether every rule and the default allow everything: the policy can
    /// be skipped.
    pub fn allows_all(&self) -> bool {
        self.default == Effect::Allow && self.rules.iter().all(|r| r.effect == Effect::Allow)
    }
}

fn verdict(effect: Effect, rule: Option<usize>) -> Verdict {
    match effect {
        Effect::Allow => Verdict::Allow,
        Effect::Deny => Verdict::Deny { rule },
    }
}

impl Rule {
    /// Whether the rule's filters (all but `when`) match.
    fn applies(&self, identity: &Identity, item: Item<'_>) -> bool {
        let any =
            |patterns: &[String], value: &str| patterns.iter().any(|p| glob_matches(p, value));
        let names = match item.kind {
            ItemKind::Tool => &self.tools,
            ItemKind::Prompt => &self.prompts,
            ItemKind::Resource => &self.resources,
        };
        let names_match =
            if self.tools.is_empty() && self.prompts.is_empty() && self.resources.is_empty() {
                true
            } else if item.kind == ItemKind::Resource {
                // A URI template names every URI it describes.
                names.iter().any(|p| {
                    glob_matches(p, item.name)
                        || (p.contains('{') && resource_uri::template_matches(p, item.name))
                })
            } else {
                any(names, item.name)
            };
        names_match
            && (self.identities.is_empty()
                || self
                    .identities
                    .iter()
                    .any(|p| super::names_identity(p, identity)))
            && (self.groups.is_empty() || self.groups.iter().any(|g| identity.in_group(g)))
            && (self.scopes.is_empty() || self.scopes.iter().any(|s| identity.scopes.contains(s)))
            && (self.sources.is_empty() || any(&self.sources, item.source))
    }
}

/// The policy on the call path: a call it refuses never reaches its source
/// and is answered as for an unknown name.
#[derive(Debug)]
pub struct PolicyLayer {
    policy: Arc<Policy>,
}

impl PolicyLayer {
    pub fn new(policy: Arc<Policy>) -> Self {
        Self { policy }
    }
}

impl Layer for PolicyLayer {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let Some(kind) = item_kind(&call) else {
            return next.run(call);
        };
        let item = Item {
            kind,
            name: &call.target,
            source: call.source(),
        };
        let empty = Value::Object(Default::default());
        let arguments = call
            .request
            .params
            .get("arguments")
            .filter(|a| a.is_object());
        let verdict = self.policy.decide(
            &call.request.context.identity,
            item,
            arguments.unwrap_or(&empty),
        );
        match verdict {
            Verdict::Allow => next.run(call),
            Verdict::Deny { rule } => {
                tracing::debug!(
                    identity = %call.request.context.identity.name,
                    target = %call.target,
                    rule = ?rule,
                    "refused by the policy"
                );
                let refused = RouteError::Denied {
                    kind,
                    name: call.target.clone(),
                    rule,
                };
                Box::pin(async move { Err(refused) })
            }
        }
    }
}

/// What kind of item a routed call uses: by its method, and for
/// `completion/complete` by what it completes.
pub(crate) fn item_kind(call: &RoutedCall) -> Option<ItemKind> {
    match call.request.method {
        methods::TOOLS_CALL => Some(ItemKind::Tool),
        methods::PROMPTS_GET => Some(ItemKind::Prompt),
        methods::RESOURCES_READ => Some(ItemKind::Resource),
        methods::COMPLETION_COMPLETE => {
            match call
                .request
                .params
                .pointer("/ref/type")
                .and_then(Value::as_str)
            {
                Some("ref/prompt") => Some(ItemKind::Prompt),
                Some("ref/resource") => Some(ItemKind::Resource),
                _ => None,
            }
        }
        _ => None,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::IdentityKind;
    use serde_json::json;

    fn alice() -> Identity {
        Identity::named(IdentityKind::ApiKey, "alice", vec!["dev".into()])
    }

    #[test]
    fn arguments_bound_directly_evaluate_as_bound_through_serde() {
        let arguments = json!({
            "n": 3, "neg": -2, "f": 1.5, "big": u64::MAX, "s": "hé", "t": true,
            "nil": null, "list": ["a", "b", 3], "nested": {"k": true, "deep": {"x": [1]}},
        });
        let conditions = [
            "arguments.n == 3",
            "arguments.n == 3u",
            "arguments.n < 10",
            "arguments.neg < 0",
            "arguments.f > 1.0",
            "arguments.big == 18446744073709551615u",
            "type(arguments.s) == string && size(arguments.s) == 2",
            "arguments.s.startsWith('h')",
            "arguments.t",
            "arguments.nil == null",
            "arguments.list[1] == 'b'",
            "size(arguments.list) == 3 && arguments.list[2] == 3",
            "'s' in arguments && !('z' in arguments)",
            "has(arguments.nested.k) && arguments.nested.deep.x[0] == 1",
            "arguments.missing == 1",
            "arguments.s + 1",
            "type(arguments.n) == uint && type(arguments.neg) == int",
            "arguments.exists(k, k == 'nil')",
        ];
        for text in conditions {
            let program = CEL_ENV.compile(text).expect(text);
            let mut through_serde = Context::with_env(CEL_ENV.clone());
            through_serde.add_variable("arguments", &arguments).unwrap();
            let mut direct = Context::with_env(CEL_ENV.clone());
            direct.add_variable_as_val("arguments", json_val(&arguments));
            let (expected, got) = (program.execute(&through_serde), program.execute(&direct));
            match (&expected, &got) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{text}: {expected:?} through serde, {got:?} bound directly"),
            }
        }
    }

    fn bob() -> Identity {
        Identity::named(IdentityKind::ApiKey, "bob", vec!["ops".into()])
    }

    fn tool(name: &str) -> Item<'_> {
        Item {
            kind: ItemKind::Tool,
            name,
            source: "everything",
        }
    }

    fn rule(effect: Effect) -> Rule {
        Rule {
            effect,
            ..Rule::default()
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_none_leaves_the_default() {
        let policy = Policy {
            default: Effect::Deny,
            rules: vec![
                Rule {
                    groups: vec!["ops".into()],
                    tools: vec!["everything__*".into()],
                    ..rule(Effect::Allow)
                },
                Rule {
                    identities: vec!["ali*".into()],
                    tools: vec!["everything__echo".into()],
                    ..rule(Effect::Allow)
                },
            ],
        };
        let args = json!({});
        assert_eq!(
            policy.decide(&bob(), tool("everything__get-sum"), &args),
            Verdict::Allow
        );
        assert_eq!(
            policy.decide(&alice(), tool("everything__echo"), &args),
            Verdict::Allow
        );
        assert_eq!(
            policy.decide(&alice(), tool("everything__get-sum"), &args),
            Verdict::Deny { rule: None }
        );
        // A rule naming only tools says nothing about prompts.
        let prompt = Item {
            kind: ItemKind::Prompt,
            ..tool("everything__echo")
        };
        assert_eq!(
            policy.decide(&bob(), prompt, &args),
            Verdict::Deny { rule: None }
        );
    }

    #[test]
    fn scopes_and_sources_filter_too() {
        let mut token = alice();
        token.scopes = vec!["tools:write".into()];
        let policy = Policy {
            default: Effect::Allow,
            rules: vec![
                Rule {
                    scopes: vec!["tools:write".into()],
                    ..rule(Effect::Allow)
                },
                Rule {
                    sources: vec!["every*".into()],
                    ..rule(Effect::Deny)
                },
            ],
        };
        let args = json!({});
        assert_eq!(policy.decide(&token, tool("x"), &args), Verdict::Allow);
        assert_eq!(
            policy.decide(&alice(), tool("x"), &args),
            Verdict::Deny { rule: Some(1) }
        );
        let other = Item {
            source: "llm",
            ..tool("x")
        };
        assert_eq!(policy.decide(&alice(), other, &args), Verdict::Allow);
    }

    #[test]
    fn every_variable_is_bound_and_a_macro_variable_shadows_it() {
        let carol = Identity {
            name: "carol".into(),
            kind: IdentityKind::Token,
            groups: vec!["dev".into()],
            scopes: vec!["tools:read".into()],
        };
        let item = Item {
            kind: ItemKind::Tool,
            name: "fs__read",
            source: "fs",
        };
        let arguments = json!({"names": ["a", "b"]});
        let evaluate = |text: &str, arguments: Option<&Value>| {
            Condition::compile(text)
                .unwrap()
                .evaluate(&carol, item, arguments)
        };
        for text in [
            "identity.name == 'carol' && identity.kind == 'token'",
            "'tools:read' in identity.scopes && identity.groups == ['dev']",
            "source == 'fs' && kind == 'tool' && name == 'fs__read'",
            "arguments.names.exists(name, name == 'b') && name == 'fs__read'",
            "arguments.names.all(source, source != 'fs') && source == 'fs'",
            "size(arguments.names) == 2 && arguments.names[0] == 'a'",
        ] {
            assert_eq!(evaluate(text, Some(&arguments)), Some(true), "{text}");
        }
        // A listing has no arguments, and no other name is a variable.
        assert_eq!(evaluate("arguments.names == []", None), None);
        assert_eq!(evaluate("nobody == 1", Some(&arguments)), None);
    }

    #[test]
    fn cel_conditions_see_the_identity_the_item_and_the_arguments() {
        let policy = Policy {
            default: Effect::Allow,
            rules: vec![
                Rule {
                    when: Some(
                        Condition::compile("name == 'everything__get-sum' && arguments.a > 100")
                            .unwrap(),
                    ),
                    ..rule(Effect::Deny)
                },
                Rule {
                    when: Some(
                        Condition::compile("'ops' in identity.groups && kind == 'prompt'").unwrap(),
                    ),
                    ..rule(Effect::Deny)
                },
            ],
        };
        let sum = tool("everything__get-sum");
        assert_eq!(
            policy.decide(&alice(), sum, &json!({"a": 1, "b": 2})),
            Verdict::Allow
        );
        assert_eq!(
            policy.decide(&alice(), sum, &json!({"a": 101, "b": 2})),
            Verdict::Deny { rule: Some(0) }
        );
        // A deny condition over arguments does not hide the tool.
        assert_eq!(policy.lists(&alice(), sum), Verdict::Allow);
        let prompt = Item {
            kind: ItemKind::Prompt,
            ..tool("p")
        };
        assert_eq!(
            policy.lists(&bob(), prompt),
            Verdict::Deny { rule: Some(1) }
        );
        assert_eq!(policy.lists(&alice(), prompt), Verdict::Allow);
    }

    #[test]
    fn a_condition_that_fails_never_lets_a_call_through() {
        let policy = Policy {
            default: Effect::Deny,
            rules: vec![Rule {
                when: Some(Condition::compile("arguments.missing == 1").unwrap()),
                ..rule(Effect::Allow)
            }],
        };
        assert_eq!(
            policy.decide(&alice(), tool("x"), &json!({})),
            Verdict::Deny { rule: None }
        );
        // Listed: some arguments may be allowed.
        assert_eq!(policy.lists(&alice(), tool("x")), Verdict::Allow);
        let deny_on_error = Policy {
            default: Effect::Allow,
            rules: vec![Rule {
                when: Some(Condition::compile("arguments.size > 'x'").unwrap()),
                ..rule(Effect::Deny)
            }],
        };
        assert_eq!(
            deny_on_error.decide(&alice(), tool("x"), &json!({"size": 3})),
            Verdict::Deny { rule: Some(0) }
        );
    }

    #[test]
    fn a_bad_condition_is_reported_at_compile_time() {
        let err = Condition::compile("name == ").unwrap_err();
        assert!(err.to_string().contains("CEL"), "{err}");
    }
}
