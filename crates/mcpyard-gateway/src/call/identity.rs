//! Who a call is made for.

/// The identity of the client a call is made for, as authentication
/// established it; exposure, policy, limits and the audit depend on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The API key's name, the token's subject, or the local user's name;
    /// empty for [`IdentityKind::Anonymous`].
    pub name: String,
    pub kind: IdentityKind,
    /// Groups the identity belongs to (from the key's configuration or the
    /// token's groups claim). [`EVERY_GROUP`] stands for all of them.
    pub groups: Vec<String>,
    /// OAuth scopes the token carries (empty for API keys).
    pub scopes: Vec<String>,
}

/// The group that stands for every group: the `MCPYARD_API_KEY` shorthand
/// and the local user of the stdio door are in it.
pub const EVERY_GROUP: &str = "*";

/// How an [`Identity`] was established.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IdentityKind {
    /// No authentication configured.
    #[default]
    Anonymous,
    /// A configured API key.
    ApiKey,
    /// An OAuth access token.
    Token,
    /// The stdio front door: the user who started the process.
    Local,
}

impl IdentityKind {
    /// The kind's name in status output and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Anonymous => "anonymous",
            IdentityKind::ApiKey => "api_key",
            IdentityKind::Token => "token",
            IdentityKind::Local => "local",
        }
    }

    /// The kind [`IdentityKind::as_str`] names; anonymous for any other
    /// name.
    pub fn from_name(name: &str) -> Self {
        match name {
            "api_key" => IdentityKind::ApiKey,
            "token" => IdentityKind::Token,
            "local" => IdentityKind::Local,
            _ => IdentityKind::Anonymous,
        }
    }
}

impl Identity {
    /// The identity of a client when no authentication is configured.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// A named identity of the given kind and groups, without scopes.
    pub fn named(kind: IdentityKind, name: impl Into<String>, groups: Vec<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            groups,
            scopes: Vec::new(),
        }
    }

    /// Whether the identity is in `group`: always when a configured key or
    /// the local user is in [`EVERY_GROUP`]. A token's groups are what its
    /// issuer wrote, so a `*` among them is only a group of that name.
    pub fn in_group(&self, group: &str) -> bool {
        let every = self.kind != IdentityKind::Token;
        self.groups
            .iter()
            .any(|g| g == group || (every && g == EVERY_GROUP))
    }

    /// `kind:name`, distinct across kinds of credential: what is owned and
    /// counted per identity is keyed by it.
    pub fn qualified_name(&self) -> String {
        let mut name = String::with_capacity(self.name.len() + 10);
        self.push_qualified_name(&mut name);
        name
    }

    /// Appends [`Identity::qualified_name`] to `out` (a key made of several
    /// parts, on every call).
    pub fn push_qualified_name(&self, out: &mut String) {
        out.push_str(self.kind.as_str());
        out.push(':');
        out.push_str(&self.name);
    }
}
