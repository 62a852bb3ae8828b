//! The operation model: a loaded document, whatever its version, reduced to
//! what a tool needs. Swagger 2.0, OpenAPI 3.0 and 3.1 all end up here, so
//! calling code never looks at the document again.

use std::collections::BTreeMap;

use serde_json::Value;

/// Which specification the document follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocVersion {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

/// A loaded document.
#[derive(Debug, Clone)]
pub struct ApiDocument {
    /// Where it came from (a file path or a URL), for messages.
    pub origin: String,
    pub version: DocVersion,
    /// `info.title`.
    pub title: String,
    /// Base URLs from `servers` (variables filled with their defaults) or
    /// Swagger's `schemes` + `host` + `basePath`, in document order; may be
    /// relative (resolved against the document's URL by the caller).
    pub servers: Vec<String>,
    /// `components.securitySchemes` / `securityDefinitions`, by scheme name.
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// In document order (paths, then methods in the order get, put, post,
    /// delete, options, head, patch, trace).
    pub operations: Vec<Operation>,
}

/// One method on one path.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The tool name, without the source's prefix: unique in the document.
    pub name: String,
    /// The upper-case HTTP method (`GET`, …).
    pub method: http::Method,
    /// The path template as written (`/v1/models/{id}`).
    pub path: String,
    pub operation_id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
    /// The tool's description, written for a model: what it does, its
    /// inputs, where the answer will be.
    pub tool_description: String,
    /// The tool's `inputSchema`: a JSON Schema object whose properties are
    /// the arguments below; recursive schemas are kept as `$defs` + `$ref`.
    pub input_schema: Value,
    /// The tool's `outputSchema` (the answer envelope, `data` typed by the
    /// 2xx response schema where there is one).
    pub output_schema: Option<Value>,
    /// Path, query, header and cookie parameters (path-level and
    /// operation-level merged).
    pub parameters: Vec<Parameter>,
    pub body: Option<RequestBody>,
    /// What the 2xx answer is declared to be, if the document says.
    pub response: ResponseKind,
    /// Alternatives: the call needs every scheme of one of them. The
    /// operation's own `security`, else the document's. `Some` of an empty
    /// list (`security: []`): no credentials. `None`: the document says
    /// nothing, and every credential configured for the API is sent.
    pub security: Option<Vec<SecurityRequirement>>,
    /// Per-operation (or per-path) `servers`, overriding the document's.
    pub servers: Vec<String>,
    /// A WebSocket route (`ws://`, or an operation the document marks as
    /// one): called as a bounded exchange, not a request.
    pub websocket: bool,
}

/// An argument of the tool and where it goes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    /// The name in the tool's input schema (after collisions between
    /// locations are resolved, e.g. `id` in the path and `body_id`).
    pub argument: String,
    /// The name on the wire.
    pub wire: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

/// Serialization style of a parameter (OpenAPI 3 `style`; Swagger 2.0's
/// `collectionFormat` maps onto these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Simple,
    Form,
    Label,
    Matrix,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

#[derive(Debug, Clone)]
pub struct Parameter {
    pub name: Argument,
    pub location: Location,
    pub required: bool,
    pub style: Style,
    pub explode: bool,
    /// The parameter's schema (as it appears in the input schema).
    pub schema: Value,
}

/// How the body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/json` and `*/*+json`.
    Json,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `multipart/form-data`.
    Multipart,
    /// `application/octet-stream` and other binary types: one file argument.
    Binary,
    /// `text/plain` and other text.
    Text,
}

/// How the body's arguments map to the tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyShape {
    /// An object body whose top-level properties are arguments of their own.
    Fields(Vec<Argument>),
    /// The whole body is one argument (arrays, scalars, free-form objects,
    /// binary bodies).
    Whole(String),
}

#[derive(Debug, Clone)]
pub struct RequestBody {
    /// The media type chosen from the document (JSON preferred).
    pub media_type: String,
    pub kind: BodyKind,
    pub required: bool,
    pub shape: BodyShape,
    /// Swagger 2.0's `in: body` parameter name (`request` in LocalAI's
    /// document): clients made from the document (LocalAiMCP's among them)
    /// send the body's fields wrapped under it, and that is accepted too.
    pub parameter: Option<String>,
    /// Arguments that are files (`format: binary` in multipart / form, or
    /// the whole body of a binary one): they take `data:` URLs, `base64:`,
    /// `http(s)://` URLs or paths under the input roots.
    pub file_arguments: Vec<String>,
    /// The body's schema, resolved (for validation of the whole body).
    pub schema: Value,
}

/// What a 2xx answer is declared to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseKind {
    /// Not declared: decided from the answer's `Content-Type`.
    #[default]
    Unknown,
    Json,
    Text,
    /// `text/event-stream`.
    EventStream,
    Binary,
}

/// Scheme names an operation needs together, with the scopes it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityRequirement {
    pub schemes: Vec<(String, Vec<String>)>,
}

/// A `securitySchemes` entry, as far as mcpyard can fill it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityScheme {
    /// `type: http, scheme: bearer`. (Swagger 2.0 has no bearer type: its
    /// documents, LocalAI's among them, declare an apiKey on
    /// `Authorization`, an [`SecurityScheme::ApiKey`] that `auth.bearer`
    /// fills as well.)
    Bearer,
    /// `type: http, scheme: basic` / Swagger `basic`.
    Basic,
    /// `type: apiKey` in a header, the query or a cookie.
    ApiKey { location: Location, name: String },
    /// OAuth 2 / OpenID Connect: a bearer token the configuration supplies.
    OAuth2,
    /// Anything else: operations that need only this cannot be given
    /// credentials.
    Unsupported(String),
}
