//! Value types shared by the file formats: durations and sizes written as
//! text, and maps that keep the order of the file.
//!
//! They deserialize the raw form only; the text is parsed after `${VAR}`
//! expansion (see `server.rs` and `mod.rs`), so a duration can itself come
//! from the environment.

use std::fmt;
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

/// A duration as written: `"30s"`, `"2m"`, `"500ms"` (humantime), or a
/// number of seconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawDuration {
    Text(String),
    Seconds(u64),
}

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a duration such as "30s", "2m" or "500ms", or a number of seconds"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDuration, E> {
                Ok(RawDuration::Text(v.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDuration, E> {
                Ok(RawDuration::Seconds(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDuration, E> {
                u64::try_from(v)
                    .map(RawDuration::Seconds)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses an (expanded) duration. The error says what was expected and
/// does not repeat the value.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!(r#"expected a duration such as "30s", "2m" or "500ms" ({e})"#))
}

/// A byte size as written: `"4MiB"`, `"512KB"`, `"1048576"`, or a number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawSize {
    Text(String),
    Bytes(u64),
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a size such as "4MiB" or "512KB", or a number of bytes"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSize, E> {
                u64::try_from(v)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses an (expanded) size: a number followed by an optional unit, `B`,
/// `KB`/`MB`/`GB` (powers of 1000) or `K`/`KiB`/`M`/`MiB`/`G`/`GiB` (powers of 1024).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let expected = || r#"expected a size such as "4MiB", "512KB" or a number of bytes"#.to_owned();
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| expected())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "k" | "kib" => 1 << 10,
        "mb" => 1000 * 1000,
        "m" | "mib" => 1 << 20,
        "gb" => 1000 * 1000 * 1000,
        "g" | "gib" => 1 << 30,
        _ => return Err(expected()),
    };
    n.checked_mul(mult)
        .ok_or_else(|| "size is too large".to_owned())
}

/// A string-keyed map that keeps the file's order (server order decides
/// the order of the merged tool list) and rejects duplicate keys (which
/// JSON parsers otherwise resolve silently, last one winning).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OrderedMap<V>(pub(crate) Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table (map of names to values)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<(String, V)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("duplicate key `{key}`")));
                    }
                    let value = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(OrderedMap(entries))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

/// `HOST:PORT` with an IP address, or `localhost:PORT`.
pub(crate) fn parse_listen(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    if let Ok(addr) = text.parse() {
        return Some(addr);
    }
    let port = text.strip_prefix("localhost:")?.parse().ok()?;
    Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_humantime() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        let err = parse_duration("soon").unwrap_err();
        assert!(err.contains("expected a duration"), "{err}");
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("4 MB").unwrap(), 4_000_000);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("99999999999999GiB").is_err());
    }

    #[test]
    fn ordered_map_keeps_order_and_rejects_duplicates() {
        let m: OrderedMap<u32> = serde_json::from_str(r#"{"b":1,"a":2,"c":3}"#).unwrap();
        let keys: Vec<_> = m.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        let err = serde_json::from_str::<OrderedMap<u32>>(r#"{"a":1,"a":2}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `a`"), "{err}");
    }

    #[test]
    fn raw_values_accept_text_or_numbers() {
        let d: RawDuration = serde_json::from_str("\"30s\"").unwrap();
        assert_eq!(d, RawDuration::Text("30s".into()));
        let d: RawDuration = serde_json::from_str("45").unwrap();
        assert_eq!(d, RawDuration::Seconds(45));
        assert!(serde_json::from_str::<RawDuration>("-1").is_err());
        assert!(serde_json::from_str::<RawDuration>("true").is_err());
        let s: RawSize = serde_json::from_str("\"4MiB\"").unwrap();
        assert_eq!(s, RawSize::Text("4MiB".into()));
    }
}
