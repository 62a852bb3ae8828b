//! Streamed response bodies: lines split from byte chunks, then grouped
//! as Server-Sent Events (chat streams, Lemonade's pull) or read as
//! newline-delimited JSON (Ollama's pull).

use bytes::{Buf, BytesMut};

/// The longest line kept; a longer one is a broken stream, not data.
const MAX_LINE: usize = 8 * 1024 * 1024;

/// Splits a byte stream into lines (`\n`, `\r\n`), across chunk borders.
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    buf: BytesMut,
}

impl LineSplitter {
    /// Adds a chunk and returns the complete lines it finished, or an error
    /// when a line grows past the cap.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(chunk);
        let mut lines = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let line = self.buf.split_to(pos);
            self.buf.advance(1);
            let mut text = String::from_utf8_lossy(&line).into_owned();
            if text.ends_with('\r') {
                text.pop();
            }
            lines.push(text);
        }
        if self.buf.len() > MAX_LINE {
            return Err(format!(
                "a line of the stream is longer than {MAX_LINE} bytes"
            ));
        }
        Ok(lines)
    }

    /// What is left when the stream ends (a last line without newline).
    pub(crate) fn finish(&mut self) -> Option<String> {
        if self.buf.is_empty() {
            return None;
        }
        let rest = self.buf.split();
        Some(
            String::from_utf8_lossy(&rest)
                .trim_end_matches('\r')
                .to_owned(),
        )
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty for the default `message`.
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Groups lines into events (a blank line ends one).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    event: String,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds one line; returns an event when the line completed one.
    pub(crate) fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.flush();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
        None
    }

    /// Ends the stream: an event still open is returned.
    pub(crate) fn flush(&mut self) -> Option<SseEvent> {
        if self.data.is_empty() && self.event.is_empty() {
            return None;
        }
        let ev = SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data).join("\n"),
        };
        Some(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_survive_chunk_borders() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"da").unwrap(), Vec::<String>::new());
        assert_eq!(s.push(b"ta: 1\r\n\nx").unwrap(), vec!["data: 1", ""]);
        assert_eq!(s.finish().as_deref(), Some("x"));
    }

    #[test]
    fn sse_events_group_data_lines() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for l in [
            ": comment",
            "event: progress",
            "data: {\"a\":1}",
            "",
            "data: x",
            "data: y",
            "",
        ] {
            out.extend(p.line(l));
        }
        assert_eq!(
            out,
            vec![
                SseEvent {
                    event: "progress".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x\ny".into()
                }
            ]
        );
    }
}
