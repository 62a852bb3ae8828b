//! An operation plus the tool's arguments, serialized the way the document
//! says: path, query, header and cookie parameters in their styles, and
//! the body in its media type.

use percent_encoding::{utf8_percent_encode, AsciiSet};
use serde_json::{Map, Value};

use super::encode::COMPONENT;
use crate::{BodyKind, BodyShape, Location, Operation, Parameter, ResponseKind, Style};

use super::auth::Credential;
use super::files::{self, FileArgument};
use super::{CallError, Caller};

/// `name[key]` keeps its brackets, as the specification's examples show.
const DEEP_OBJECT_KEY: &AsciiSet = &COMPONENT.remove(b'[').remove(b']');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

/// A request ready to send.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Base URL + path + query.
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    None,
    Bytes {
        content_type: String,
        bytes: Vec<u8>,
    },
    Multipart(Vec<MultipartField>),
}

#[derive(Debug)]
pub(crate) enum MultipartField {
    Text(String, String),
    /// An object field: its JSON text, sent as `application/json`.
    Json(String, String),
    File(String, FileArgument),
}

/// A scalar as text on the wire (strings bare, everything else as JSON).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Builds the request: `base` is the resolved base URL.
pub(crate) async fn prepare(
    caller: &Caller,
    op: &Operation,
    base: &str,
    args: &Map<String, Value>,
    credentials: &[Credential],
) -> Result<Prepared, CallError> {
    let mut path = op.path.clone();
    let mut query: Vec<String> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    for p in &op.parameters {
        let Some(value) = args.get(&p.name.argument).filter(|v| !v.is_null()) else {
            continue;
        };
        match p.location {
            Location::Path => {
                path = path.replace(&format!("{{{}}}", p.name.wire), &path_value(p, value));
            }
            Location::Query => query.extend(query_pairs(p, value)),
            // OpenAPI: these three are described elsewhere in the document
            // (media types, security) and a parameter of that name is ignored.
            Location::Header
                if ["accept", "content-type", "authorization"]
                    .contains(&p.name.wire.to_ascii_lowercase().as_str()) => {}
            Location::Header => headers.push((p.name.wire.clone(), header_value(p, value))),
            Location::Cookie => cookies.push(format!("{}={}", p.name.wire, cookie_value(p, value))),
        }
    }
    if let Some(missing) = op
        .parameters
        .iter()
        .find(|p| p.location == Location::Path && path.contains(&format!("{{{}}}", p.name.wire)))
    {
        return Err(CallError::CannotSend(format!(
            "`{}` is required: it is part of the path `{}`",
            missing.name.argument, op.path
        )));
    }
    for c in credentials {
        match c {
            Credential::Authorization(v) => headers.push(("Authorization".into(), v.clone())),
            Credential::Header(n, v) => headers.push((n.clone(), v.clone())),
            Credential::Query(n, v) => query.push(format!("{}={}", enc(n), enc(v))),
            Credential::Cookie(n, v) => cookies.push(format!("{n}={}", enc(v))),
        }
    }
    for (name, value) in &caller.config.headers {
        headers.push((name.clone(), value.clone()));
    }
    // Ask for the answer the document declares, so a server that negotiates
    // sends it; a configured `Accept` wins.
    let accept = match op.response {
        ResponseKind::Json => Some("application/json"),
        ResponseKind::EventStream => Some("text/event-stream"),
        ResponseKind::Text | ResponseKind::Binary | ResponseKind::Unknown => None,
    };
    if let Some(accept) = accept.filter(|_| {
        !caller
            .config
            .headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("accept"))
    }) {
        headers.push(("Accept".into(), accept.into()));
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), cookies.join("; ")));
    }
    let mut url = format!("{}{}", base.trim_end_matches('/'), path);
    if !query.is_empty() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&query.join("&"));
    }
    let body = match &op.body {
        None => Body::None,
        Some(body) => {
            let value = match &body.shape {
                BodyShape::Whole(arg) => args.get(arg).cloned(),
                BodyShape::Fields(fields) => {
                    let object: Map<String, Value> = fields
                        .iter()
                        .filter_map(|f| args.get(&f.argument).map(|v| (f.wire.clone(), v.clone())))
                        .collect();
                    (!object.is_empty() || body.required).then_some(Value::Object(object))
                }
            };
            match value {
                None => Body::None,
                Some(value) => encode_body(caller, op, body, value).await?,
            }
        }
    };
    Ok(Prepared { url, headers, body })
}

/// The concrete media type the body's schema declares for part `wire`.
fn declared_media_type(body: &crate::RequestBody, wire: &str) -> Option<String> {
    let declared = body
        .schema
        .pointer(&format!(
            "/properties/{}",
            wire.replace('~', "~0").replace('/', "~1")
        ))?
        .get("contentMediaType")?
        .as_str()?;
    (!declared.contains('*')).then(|| declared.to_owned())
}

async fn encode_body(
    caller: &Caller,
    op: &Operation,
    body: &crate::RequestBody,
    value: Value,
) -> Result<Body, CallError> {
    // File arguments are named by argument; the body object holds wire names.
    let wire_is_file = |wire: &str| match &body.shape {
        BodyShape::Fields(fields) => fields
            .iter()
            .any(|f| f.wire == wire && body.file_arguments.contains(&f.argument)),
        BodyShape::Whole(arg) => body.file_arguments.contains(arg),
    };
    let media = body.media_type.clone();
    Ok(match body.kind {
        BodyKind::Json => Body::Bytes {
            content_type: media,
            bytes: serde_json::to_vec(&value).unwrap_or_default(),
        },
        BodyKind::Text => Body::Bytes {
            content_type: media,
            bytes: scalar(&value).into_bytes(),
        },
        BodyKind::Form => {
            let mut pairs = Vec::new();
            if let Value::Object(fields) = &value {
                for (k, v) in fields {
                    match v {
                        Value::Array(items) => {
                            pairs.extend(
                                items
                                    .iter()
                                    .map(|i| format!("{}={}", enc(k), enc(&scalar(i)))),
                            );
                        }
                        Value::Null => {}
                        other => pairs.push(format!("{}={}", enc(k), enc(&scalar(other)))),
                    }
                }
            }
            Body::Bytes {
                content_type: "application/x-www-form-urlencoded".into(),
                bytes: pairs.join("&").into_bytes(),
            }
        }
        BodyKind::Multipart => {
            let mut parts = Vec::new();
            let Value::Object(fields) = value else {
                return Err(CallError::CannotSend(format!(
                    "`{}` sends a multipart form: its arguments must be fields of an object",
                    op.name
                )));
            };
            for (k, v) in fields {
                let items = match v {
                    Value::Array(items) => items,
                    Value::Null => continue,
                    other => vec![other],
                };
                for item in items {
                    if wire_is_file(&k) {
                        let Value::String(s) = &item else {
                            return Err(CallError::File(format!(
                                "`{k}` is a file: pass a data: URL, base64:…, an http(s) URL or a path"
                            )));
                        };
                        let mut file =
                            files::resolve(&k, s, &caller.sandbox, &caller.fetcher).await?;
                        // What the bytes or the name did not tell, the
                        // document may (OpenAPI 3.1 `contentMediaType`).
                        file.mime_type = file.mime_type.or_else(|| declared_media_type(body, &k));
                        parts.push(MultipartField::File(k.clone(), file));
                    } else if item.is_object() {
                        parts.push(MultipartField::Json(k.clone(), item.to_string()));
                    } else {
                        parts.push(MultipartField::Text(k.clone(), scalar(&item)));
                    }
                }
            }
            Body::Multipart(parts)
        }
        BodyKind::Binary => {
            let arg = match &body.shape {
                BodyShape::Whole(arg) => arg.clone(),
                BodyShape::Fields(_) => "body".to_owned(),
            };
            let Value::String(s) = value else {
                return Err(CallError::File(format!(
                    "`{arg}` is a file: pass a data: URL, base64:…, an http(s) URL or a path"
                )));
            };
            let file = files::resolve(&arg, &s, &caller.sandbox, &caller.fetcher).await?;
            let content_type = if media.contains('*') {
                file.mime_type
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".into())
            } else {
                media
            };
            Body::Bytes {
                content_type,
                bytes: file.bytes,
            }
        }
    })
}

/// The items of an array, or the key/value pairs of an object, encoded.
enum Parts {
    One(String),
    List(Vec<String>),
    Pairs(Vec<(String, String)>),
}

fn parts(value: &Value, encode: bool) -> Parts {
    let e = |s: String| if encode { enc(&s) } else { s };
    match value {
        Value::Array(items) => Parts::List(items.iter().map(|i| e(scalar(i))).collect()),
        Value::Object(map) => Parts::Pairs(
            map.iter()
                .map(|(k, v)| (e(k.clone()), e(scalar(v))))
                .collect(),
        ),
        other => Parts::One(e(scalar(other))),
    }
}

/// A path parameter in its style (simple, label, matrix), percent-encoded.
fn path_value(p: &Parameter, value: &Value) -> String {
    let name = enc(&p.name.wire);
    let (prefix, sep) = match p.style {
        Style::Label => (".", if p.explode { "." } else { "," }),
        Style::Matrix => (";", if p.explode { ";" } else { "," }),
        _ => ("", ","),
    };
    match (p.style, parts(value, true)) {
        (Style::Matrix, Parts::One(v)) => format!(";{name}={v}"),
        (Style::Matrix, Parts::List(items)) if p.explode => {
            items.iter().map(|i| format!(";{name}={i}")).collect()
        }
        (Style::Matrix, Parts::List(items)) => format!(";{name}={}", items.join(",")),
        (Style::Matrix, Parts::Pairs(pairs)) if p.explode => {
            pairs.iter().map(|(k, v)| format!(";{k}={v}")).collect()
        }
        (Style::Matrix, Parts::Pairs(pairs)) => format!(";{name}={}", flat(&pairs).join(",")),
        (_, Parts::One(v)) => format!("{prefix}{v}"),
        (_, Parts::List(items)) => format!("{prefix}{}", items.join(sep)),
        (_, Parts::Pairs(pairs)) if p.explode => format!(
            "{prefix}{}",
            pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(sep)
        ),
        (_, Parts::Pairs(pairs)) => format!("{prefix}{}", flat(&pairs).join(sep)),
    }
}

fn flat(pairs: &[(String, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(k, v)| [k.clone(), v.clone()])
        .collect()
}

/// A query parameter as `name=value` pieces, in its style.
fn query_pairs(p: &Parameter, value: &Value) -> Vec<String> {
    let name = enc(&p.name.wire);
    match (p.style, parts(value, true)) {
        (_, Parts::One(v)) => vec![format!("{name}={v}")],
        (Style::DeepObject, _) => {
            let mut out = Vec::new();
            deep_object(&p.name.wire, value, &mut out);
            out
        }
        (Style::SpaceDelimited, Parts::List(items)) if !p.explode => {
            vec![format!("{name}={}", items.join("%20"))]
        }
        (Style::PipeDelimited, Parts::List(items)) if !p.explode => {
            vec![format!("{name}={}", items.join("|"))]
        }
        (_, Parts::List(items)) if p.explode => {
            items.iter().map(|i| format!("{name}={i}")).collect()
        }
        (Style::SpaceDelimited, Parts::List(items)) => {
            vec![format!("{name}={}", items.join("%20"))]
        }
        (Style::PipeDelimited, Parts::List(items)) => vec![format!("{name}={}", items.join("|"))],
        (_, Parts::List(items)) => vec![format!("{name}={}", items.join(","))],
        (_, Parts::Pairs(pairs)) if p.explode => {
            pairs.iter().map(|(k, v)| format!("{k}={v}")).collect()
        }
        (_, Parts::Pairs(pairs)) => vec![format!("{name}={}", flat(&pairs).join(","))],
    }
}

/// `name[key]=value`, nested objects as `name[a][b]=value`, arrays as
/// repeated `name[key]=item`.
fn deep_object(prefix: &str, value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                deep_object(&format!("{prefix}[{k}]"), v, out);
            }
        }
        Value::Array(items) => {
            for i in items {
                deep_object(prefix, i, out);
            }
        }
        Value::Null => {}
        other => out.push(format!(
            "{}={}",
            utf8_percent_encode(prefix, DEEP_OBJECT_KEY),
            enc(&scalar(other))
        )),
    }
}

/// A header parameter (style simple); header values are not encoded.
fn header_value(p: &Parameter, value: &Value) -> String {
    match parts(value, false) {
        Parts::One(v) => v,
        Parts::List(items) => items.join(","),
        Parts::Pairs(pairs) if p.explode => pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        Parts::Pairs(pairs) => flat(&pairs).join(","),
    }
}

/// A cookie parameter (style form, not exploded), value encoded.
fn cookie_value(_p: &Parameter, value: &Value) -> String {
    match parts(value, true) {
        Parts::One(v) => v,
        Parts::List(items) => items.join(","),
        Parts::Pairs(pairs) => flat(&pairs).join(","),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Argument;

    fn p(name: &str, location: Location, style: Style, explode: bool) -> Parameter {
        Parameter {
            name: Argument {
                argument: name.into(),
                wire: name.into(),
            },
            location,
            required: false,
            style,
            explode,
            schema: json!({}),
        }
    }

    #[test]
    fn path_styles_follow_the_specification_examples() {
        let object = json!({"R": 100, "G": 200});
        let cases = [
            (Style::Simple, false, json!("blue"), "blue"),
            (Style::Simple, false, json!(["a", "b"]), "a,b"),
            (Style::Simple, false, object.clone(), "G,200,R,100"),
            (Style::Simple, true, object.clone(), "G=200,R=100"),
            (Style::Label, false, json!("blue"), ".blue"),
            (Style::Label, true, json!(["a", "b"]), ".a.b"),
            (Style::Label, false, object.clone(), ".G,200,R,100"),
            (Style::Label, true, object.clone(), ".G=200.R=100"),
            (Style::Matrix, false, json!("blue"), ";color=blue"),
            (Style::Matrix, false, json!(["a", "b"]), ";color=a,b"),
            (Style::Matrix, false, object.clone(), ";color=G,200,R,100"),
            (Style::Matrix, true, object, ";G=200;R=100"),
            (Style::Simple, false, json!("a/b?c"), "a%2Fb%3Fc"),
        ];
        for (style, explode, value, expected) in cases {
            let param = p("color", Location::Path, style, explode);
            assert_eq!(
                path_value(&param, &value),
                expected,
                "{style:?} explode={explode} {value}"
            );
        }
    }

    #[test]
    fn query_objects_and_headers_follow_their_styles() {
        let object = json!({"R": 100, "G": 200});
        let form = p("color", Location::Query, Style::Form, true);
        assert_eq!(query_pairs(&form, &object), ["G=200", "R=100"]);
        let form = p("color", Location::Query, Style::Form, false);
        assert_eq!(query_pairs(&form, &object), ["color=G,200,R,100"]);
        let deep = p("color", Location::Query, Style::DeepObject, true);
        assert_eq!(
            query_pairs(&deep, &json!({"R": 100, "tags": ["a b", "c"]})),
            ["color[R]=100", "color[tags]=a%20b", "color[tags]=c"]
        );
        let header = p("X-Color", Location::Header, Style::Simple, true);
        assert_eq!(header_value(&header, &object), "G=200,R=100");
        assert_eq!(header_value(&header, &json!(true)), "true");
    }
}
