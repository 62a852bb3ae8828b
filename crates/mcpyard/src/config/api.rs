//! `[apis.NAME]`: an HTTP API described by an OpenAPI / Swagger document,
//! offered as tools. A document given as a file is loaded here, so a bad
//! document (or an `expose` name that matches no operation) stops the
//! gateway at start with the file and the place in it; a URL is fetched
//! when the source starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpyard_gateway::{Listing, SourceSpec};
use mcpyard_openapi::{ApiAuth, ApiConfig, ApiDocument, LoadOptions};
use serde::Deserialize;

use super::context::Context;
use super::error::ConfigError;
use super::expose::{self, RawExpose};
use super::redact;
use super::server::{check_name, check_prefix, duration};
use super::values::{parse_size, OrderedMap, RawDuration, RawSize};

/// `[apis.NAME]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApi {
    spec: String,
    base_url: Option<String>,
    prefix: Option<String>,
    expose: Option<RawExpose>,
    /// `bearer`, `basic`, or a `securitySchemes` name → its secret.
    auth: Option<OrderedMap<String>>,
    headers: Option<OrderedMap<String>>,
    timeout: Option<RawDuration>,
    max_response_bytes: Option<RawSize>,
    rename: Option<OrderedMap<String>>,
    pub(super) enabled: Option<bool>,
}

/// An API as `check` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiSummary {
    pub(crate) name: String,
    /// The document as written (a URL without its credentials and query).
    pub(crate) spec: String,
    pub(crate) prefix: String,
    pub(crate) enabled: bool,
    /// Known when the document is a file (a URL is fetched at start).
    pub(crate) document: Option<DocumentSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocumentSummary {
    pub(crate) title: String,
    pub(crate) operations: usize,
    /// Tools `tools/list` shows directly; the rest are found by search.
    pub(crate) exposed: usize,
    /// Operations the document leaves without a summary or description.
    pub(crate) undescribed_operations: Vec<String>,
    /// `operation.argument` of inputs the document leaves undescribed.
    pub(crate) undescribed_fields: Vec<String>,
    /// Which operations get which credential, and the `auth` keys never
    /// sent: names only, never a value.
    pub(crate) credentials: Vec<String>,
}

/// What the local-model tools' section shares with APIs: where file
/// arguments may be read from and where large answers are saved.
pub(crate) struct Files {
    pub(crate) input_roots: Vec<PathBuf>,
    pub(crate) output_dir: PathBuf,
}

/// Turns an entry into a source. `key` is `apis.NAME`. A disabled entry
/// is neither expanded nor loaded.
pub(crate) fn build(
    ctx: &Context<'_>,
    key: &str,
    name: &str,
    raw: RawApi,
    files: &Files,
) -> Result<(Option<SourceSpec>, ApiSummary), ConfigError> {
    check_name(ctx, key, name)?;
    // What a reload compares: the section as written and the document.
    let written = format!("{raw:?}");
    let field = |f: &str| format!("{key}.{f}");
    let written_spec = if is_url(&raw.spec) {
        redact::url(&raw.spec)
    } else {
        raw.spec.clone()
    };
    let mut summary = ApiSummary {
        name: name.to_owned(),
        spec: written_spec,
        prefix: raw.prefix.clone().unwrap_or_else(|| format!("{name}__")),
        enabled: raw.enabled.unwrap_or(true),
        document: None,
    };
    if !summary.enabled {
        return Ok((None, summary));
    }

    let spec = ctx.expand(&field("spec"), &raw.spec)?;
    if spec.trim().is_empty() {
        return Err(ctx.error(&field("spec"), "expected a file path or an http(s):// URL"));
    }
    let spec = if is_url(&spec) {
        spec
    } else {
        resolve(ctx.base_dir, &spec).display().to_string()
    };

    let prefix = match &raw.prefix {
        None => format!("{name}__"),
        Some(p) => {
            let p = ctx.expand(&field("prefix"), p)?;
            check_prefix(ctx, &field("prefix"), &p)?;
            p
        }
    };
    summary.prefix = prefix.clone();

    let base_url = raw
        .base_url
        .as_ref()
        .map(|u| {
            let u = ctx.expand(&field("base_url"), u)?;
            match url::Url::parse(&u) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(u),
                _ => Err(ctx.error(&field("base_url"), "expected an http:// or https:// URL")),
            }
        })
        .transpose()?;

    let auth = auth(ctx, &field("auth"), raw.auth)?;
    let headers = string_map(ctx, &field("headers"), raw.headers)?;
    let rename = string_map(ctx, &field("rename"), raw.rename)?;
    let timeout = match &raw.timeout {
        None => ApiConfig::DEFAULT_TIMEOUT,
        Some(t) => duration(ctx, &field("timeout"), t)?,
    };
    let max_response_bytes = match &raw.max_response_bytes {
        None => ApiConfig::DEFAULT_MAX_RESPONSE_BYTES,
        Some(RawSize::Bytes(n)) => *n,
        Some(RawSize::Text(t)) => parse_size(&ctx.expand(&field("max_response_bytes"), t)?)
            .map_err(|m| ctx.error(&field("max_response_bytes"), m))?,
    };
    if max_response_bytes == 0 {
        return Err(ctx.error(&field("max_response_bytes"), "must be more than zero"));
    }
    let listing = expose::listing(ctx, &field("expose"), raw.expose.as_ref())?;

    let config = ApiConfig {
        name: name.to_owned(),
        prefix: prefix.clone(),
        spec: spec.clone(),
        base_url,
        auth,
        headers,
        timeout,
        max_response_bytes,
        rename: rename.clone(),
        input_roots: files.input_roots.clone(),
        output_dir: files.output_dir.clone(),
    };

    let document = if is_url(&spec) {
        None
    } else {
        let options = LoadOptions {
            rename,
            prefix_len: prefix.len(),
        };
        // The loader's message names the file and the JSON pointer.
        let document = mcpyard_openapi::load_file(Path::new(&spec), &options).map_err(|e| {
            let at = match e {
                mcpyard_openapi::LoadError::Rename { .. } => "rename",
                _ => "spec",
            };
            ctx.error(&field(at), e.to_string())
        })?;
        check_listing(ctx, &field("expose"), &listing, &document)?;
        summary.document = Some(describe(&document, &listing, &config.auth));
        Some(document)
    };

    let made_from = (written, format!("{document:?}"));
    let source = match document {
        Some(document) => mcpyard_openapi::OpenApiSource::with_document(config, document),
        None => mcpyard_openapi::OpenApiSource::new(config),
    };
    let mut source = source.into_source_spec().with_fingerprint(&made_from);
    source.exposure.listing = listing;
    Ok((Some(source), summary))
}

/// An API may not share its name or its prefix with a server or an API
/// before it (the gateway checks servers among themselves): one would
/// shadow the other's tools. The local-model tools come later and may
/// merge with anything, as with servers.
pub(crate) fn check_collisions(
    ctx: &Context<'_>,
    key: &str,
    api: &SourceSpec,
    earlier: &[SourceSpec],
) -> Result<(), ConfigError> {
    let prefix = api.effective_prefix();
    for other in earlier {
        let kind = if other.upstream().is_some() {
            "servers"
        } else {
            "apis"
        };
        if other.name() == api.name() {
            return Err(ctx.error(
                key,
                format!("the name is also `[{kind}.{}]`'s", other.name()),
            ));
        }
        if !prefix.is_empty() && other.effective_prefix() == prefix {
            return Err(ctx.error(
                key,
                format!(
                    "prefix `{prefix}` is also `[{kind}.{}]`'s: their tools would shadow each other; set another `prefix`",
                    other.name()
                ),
            ));
        }
    }
    Ok(())
}

fn is_url(spec: &str) -> bool {
    let lower = spec.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// A relative path starts at the configuration file's directory; `~/` at
/// the home directory.
fn resolve(base_dir: Option<&Path>, path: &str) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    let path = PathBuf::from(path);
    match base_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

fn string_map(
    ctx: &Context<'_>,
    key: &str,
    raw: Option<OrderedMap<String>>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    raw.unwrap_or_default()
        .0
        .into_iter()
        .map(|(k, v)| Ok((k.clone(), ctx.expand(&format!("{key}.{k}"), &v)?)))
        .collect()
}

/// `bearer` and `basic` apply to any scheme of their kind; other keys name
/// a `securitySchemes` entry. An empty value (`${VAR:-}` with VAR unset)
/// is no credential: operations that need it fail without a request.
fn auth(
    ctx: &Context<'_>,
    key: &str,
    raw: Option<OrderedMap<String>>,
) -> Result<ApiAuth, ConfigError> {
    let mut auth = ApiAuth::default();
    for (name, value) in string_map(ctx, key, raw)? {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "bearer" => auth.bearer = Some(value),
            "basic" => {
                if !value.contains(':') {
                    return Err(ctx.error(&format!("{key}.basic"), "expected \"user:password\""));
                }
                auth.basic = Some(value);
            }
            _ => {
                auth.schemes.insert(name, value);
            }
        }
    }
    Ok(auth)
}

/// Credentials written in clear in the file rather than taken from the
/// environment.
pub(crate) fn clear_secrets(file: &str, key: &str, raw: &RawApi) -> Vec<String> {
    let sensitive_header = |name: &str| {
        let lower = name.to_ascii_lowercase();
        lower == "authorization"
            || lower.contains("token")
            || lower.contains("key")
            || lower.contains("secret")
    };
    let auth = raw
        .auth
        .iter()
        .flat_map(|m| &m.0)
        .map(|(n, v)| ("auth", n, v));
    let headers = raw
        .headers
        .iter()
        .flat_map(|m| &m.0)
        .filter(|(n, _)| sensitive_header(n))
        .map(|(n, v)| ("headers", n, v));
    auth.chain(headers)
        .filter(|(_, _, v)| !v.is_empty() && !super::expand::has_reference(v))
        .map(|(table, n, _)| {
            format!(
                "{file}: `{key}.{table}.{n}` is written in clear in the file; use \"${{VAR}}\" and set the variable instead"
            )
        })
        .collect()
}

/// Every name in an `expose` list must match an operation: a typo would
/// otherwise hide a tool silently.
fn check_listing(
    ctx: &Context<'_>,
    key: &str,
    listing: &Listing,
    document: &ApiDocument,
) -> Result<(), ConfigError> {
    let Listing::Only(patterns) = listing else {
        return Ok(());
    };
    for (i, pattern) in patterns.iter().enumerate() {
        if !document
            .operations
            .iter()
            .any(|op| mcpyard_gateway::glob_match(pattern, &op.name))
        {
            return Err(ctx.error(
                &format!("{key}[{i}]"),
                format!(
                    "`{pattern}` matches no operation of {} (names are without the prefix; `mcpyard list` shows them)",
                    document.origin
                ),
            ));
        }
    }
    Ok(())
}

fn describe(document: &ApiDocument, listing: &Listing, auth: &ApiAuth) -> DocumentSummary {
    let names = document.operations.iter().map(|op| op.name.as_str());
    let exposed = match listing {
        Listing::All => document.operations.len(),
        Listing::None => 0,
        Listing::Only(patterns) => names
            .filter(|n| patterns.iter().any(|p| mcpyard_gateway::glob_match(p, n)))
            .count(),
        Listing::Default => match mcpyard_openapi::default_listing(document) {
            None => document.operations.len(),
            Some(patterns) => names
                .filter(|n| patterns.iter().any(|p| mcpyard_gateway::glob_match(p, n)))
                .count(),
        },
    };
    let audit = mcpyard_openapi::audit(document);
    DocumentSummary {
        title: document.title.clone(),
        operations: document.operations.len(),
        exposed,
        undescribed_operations: audit.undescribed_operations,
        undescribed_fields: audit.undescribed_fields,
        credentials: mcpyard_openapi::credential_report(document, auth),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_the_catalog() {
        assert!(mcpyard_gateway::glob_match("list_*", "list_models"));
        assert!(mcpyard_gateway::glob_match("*_models", "list_models"));
        assert!(mcpyard_gateway::glob_match("get_?", "get_a"));
        assert!(!mcpyard_gateway::glob_match("get_?", "get_ab"));
        assert!(mcpyard_gateway::glob_match("exact", "exact"));
        assert!(!mcpyard_gateway::glob_match("exact", "exactly"));
    }

    const DOCUMENT: &str = r#"{"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
      "paths": {"/pets": {"get": {"operationId": "list_pets", "summary": "Lists the pets",
        "responses": {"200": {"description": "ok"}}},
      "post": {"operationId": "add_pet",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object",
          "properties": {"name": {"type": "string"}}}}}},
        "responses": {"200": {"description": "ok"}}}}}}"#;

    /// A configuration next to the pets document, in an environment with
    /// one secret.
    fn settings(api: &str) -> Result<super::super::Settings, ConfigError> {
        settings_with("", api)
    }

    fn settings_with(before: &str, api: &str) -> Result<super::super::Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pets.json"), DOCUMENT).unwrap();
        let lookup = |name: &str| (name == "PETS_TOKEN").then(|| "tok-93ab1".to_owned());
        super::super::from_text(
            "mcpyard.toml",
            Some(dir.path()),
            &format!("[inference]\nenabled = false\n\n{before}\n[apis.pets]\n{api}\n"),
            super::super::Format::Toml,
            &lookup,
        )
    }

    #[test]
    fn an_api_becomes_a_source_and_check_sees_its_document() {
        let s = settings(
            "spec = \"pets.json\"\nexpose = [\"list_*\"]\nauth = { bearer = \"${PETS_TOKEN}\" }",
        )
        .unwrap();
        let names: Vec<&str> = s.gateway.sources.iter().map(|x| x.name()).collect();
        assert!(names.contains(&"pets"), "{names:?}");
        let source = s
            .gateway
            .sources
            .iter()
            .find(|x| x.name() == "pets")
            .unwrap();
        assert_eq!(source.effective_prefix(), "pets__");
        assert_eq!(
            source.exposure.listing,
            Listing::Only(vec!["list_*".into()])
        );
        let doc = s.apis[0].document.as_ref().unwrap();
        assert_eq!((doc.operations, doc.exposed), (2, 1));
        assert_eq!(doc.undescribed_operations, ["add_pet"]);
        assert_eq!(doc.undescribed_fields, ["add_pet.name"]);
        assert!(!format!("{s:?}").contains("tok-93ab1"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn renamed_operations_are_exposed_by_their_new_names() {
        let s = settings(
            "spec = \"pets.json\"\nprefix = \"zoo_\"\nrename = { list_pets = \"pets\" }\nexpose = [\"pets\"]",
        )
        .unwrap();
        let source = s
            .gateway
            .sources
            .iter()
            .find(|x| x.name() == "pets")
            .unwrap();
        assert_eq!(source.effective_prefix(), "zoo_");
        assert_eq!(s.apis[0].document.as_ref().unwrap().exposed, 1);
        let e = settings("spec = \"pets.json\"\nrename = { feed_pets = \"feed\" }").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.rename"), "{e}");
        assert!(e.message.contains("feed_pets"), "{e}");
    }

    #[test]
    fn mistakes_fail_at_start_naming_the_key() {
        let e = settings("spec = \"pets.json\"\nexpose = [\"list_pets\", \"feed_*\"]").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.expose[1]"), "{e}");
        let e = settings("spec = \"missing.json\"").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.spec"), "{e}");
        assert!(e.message.contains("missing.json"), "{e}");
        let e = settings("spec = \"pets.json\"\nauth = { basic = \"no-colon\" }").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.auth.basic"), "{e}");
        let e = settings("spec = \"pets.json\"\nbase_url = \"ftp://x\"").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.base_url"), "{e}");
        let e = settings("spec = \"pets.json\"\ntimout = \"1s\"").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets.timout"), "{e}");
    }

    #[test]
    fn a_secret_in_clear_is_a_warning_and_a_disabled_api_is_not_loaded() {
        let s = settings("spec = \"pets.json\"\nauth = { bearer = \"written-here\" }").unwrap();
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("apis.pets.auth.bearer"));
        assert!(!s.warnings[0].contains("written-here"));
        let s = settings("spec = \"missing.json\"\nenabled = false").unwrap();
        assert!(!s.apis[0].enabled);
        assert!(!s.gateway.sources.iter().any(|x| x.name() == "pets"));
    }

    #[test]
    fn a_server_of_the_same_name_or_prefix_collides_with_the_api() {
        let e = settings_with(
            "[servers.pets]\ncommand = \"true\"\n",
            "spec = \"pets.json\"",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets"), "{e}");
        let e = settings_with(
            "[servers.animals]\ncommand = \"true\"\nprefix = \"pets__\"\n",
            "spec = \"pets.json\"",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("apis.pets"), "{e}");
    }

    #[test]
    fn relative_specs_start_at_the_config_file() {
        assert_eq!(
            resolve(Some(Path::new("/etc/mcpyard")), "apis/localai.json"),
            PathBuf::from("/etc/mcpyard/apis/localai.json")
        );
        assert_eq!(
            resolve(Some(Path::new("/etc/mcpyard")), "/srv/doc.yaml"),
            PathBuf::from("/srv/doc.yaml")
        );
    }
}
