//! A `text/event-stream` decoder with a size cap.
//!
//! Written here rather than taken from a crate because a server must not be
//! able to make the client buffer an endless event: the decoder fails once
//! the unfinished line or the event's data passes the cap. It follows the
//! WHATWG parsing rules (LF, CR or CRLF line ends, `:` comments, one
//! optional space after the colon, `id` persisting across events).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` when the server gave none).
    pub event: String,
    /// The `data:` lines, joined with newlines.
    pub data: String,
    /// The last event id seen on the stream, if any.
    pub id: Option<String>,
    /// A reconnection delay the server asked for, in milliseconds.
    pub retry: Option<u64>,
}

/// The server sent an event (or a line) larger than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLarge(pub usize);

/// Incremental decoder: feed it chunks, it returns complete events.
#[derive(Debug)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// How far `buf` was already searched for a line end.
    scanned: usize,
    /// The previous chunk ended on CR: a leading LF belongs to it.
    skip_lf: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    max: usize,
}

impl SseDecoder {
    /// A decoder that fails once a line or an event passes `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            skip_lf: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
            max,
        }
    }

    /// Starts from a known last event id (when resuming a stream).
    pub fn with_last_id(mut self, id: Option<String>) -> Self {
        self.last_id = id;
        self
    }

    /// The last event id seen.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last reconnection delay the server asked for, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Adds a chunk and returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut chunk = chunk;
        if self.skip_lf && !chunk.is_empty() {
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
            self.skip_lf = false;
        }
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                let line = self.buf[start..i].to_vec();
                self.line(&line, &mut events)?;
                if b == b'\r' {
                    if i + 1 < self.buf.len() {
                        if self.buf[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max {
            return Err(EventTooLarge(self.max));
        }
        Ok(events)
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        let mut line = line;
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix("\u{feff}".as_bytes()) {
                line = rest;
            }
        }
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                let event = std::mem::take(&mut self.event);
                events.push(SseEvent {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data,
                    id: self.last_id.clone(),
                    retry: self.retry,
                });
            } else {
                self.event.clear();
            }
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(p) => {
                let v = &text[p + 1..];
                (&text[..p], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    return Err(EventTooLarge(self.max));
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(dec: &mut SseDecoder, chunks: &[&[u8]]) -> Vec<SseEvent> {
        chunks
            .iter()
            .flat_map(|c| dec.feed(c).expect("within cap"))
            .collect()
    }

    #[test]
    fn parses_events_split_across_chunks_and_line_endings() {
        let mut dec = SseDecoder::new(1024);
        let events = all(
            &mut dec,
            &[
                b"event: endpoint\r",
                b"\ndata: /message?x=1\r\n\r\n: comment\n",
                b"id: 7\ndata: {\"a\":\ndata:1}\n\nretry: 50\rdata: z\r\r",
            ],
        );
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].event, "endpoint");
        assert_eq!(events[0].data, "/message?x=1");
        assert_eq!(events[1].event, "message");
        assert_eq!(events[1].data, "{\"a\":\n1}");
        assert_eq!(events[1].id.as_deref(), Some("7"));
        assert_eq!(events[2].data, "z");
        assert_eq!(events[2].id.as_deref(), Some("7"));
        assert_eq!(events[2].retry, Some(50));
    }

    #[test]
    fn event_without_data_is_not_dispatched_but_keeps_its_id() {
        let mut dec = SseDecoder::new(1024);
        let events = all(&mut dec, &[b"id: abc\n\n"]);
        assert!(events.is_empty());
        assert_eq!(dec.last_id(), Some("abc"));
    }

    #[test]
    fn data_past_the_cap_is_an_error() {
        let mut dec = SseDecoder::new(16);
        assert!(dec.feed(b"data: 0123456789\n").is_ok());
        assert_eq!(dec.feed(b"data: 0123456789\n"), Err(EventTooLarge(16)));
    }

    #[test]
    fn an_endless_line_is_an_error() {
        let mut dec = SseDecoder::new(16);
        assert!(dec.feed(b"data: 0123").is_ok());
        assert!(dec.feed(b"456789abcdefghij").is_err());
    }
}
