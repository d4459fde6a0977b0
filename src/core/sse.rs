//! Which characters of a Server-Sent Events body are progress: the rule the
//! stall guard's SSE predicate follows in both hosts, which scan each chunk
//! here with [`SseScan`] (`src/web/sse.rs`, and `js/sse.js` with one Wasm
//! call per chunk: bench/sse-scan.mjs measured it against a JS twin, which
//! was faster only on chunks far smaller than an event). A resumable read's
//! progress is this rule too, inside the streamed-read machine
//! (`crate::core::read`), which `js/resume.js` drives.
//!
//! A field's value, the common case, is skipped to the line's end in one
//! search rather than byte by byte.
//!
//! # Why
//! SSE servers send keep-alive comments (`: ping`) while the model is queued
//! or thinking, so that proxies do not time the connection out, and some
//! send an event that only sets the reconnection time (`retry: 3000`). Both
//! say "still here", neither is content: to stall detection they are
//! silence, and a stream that only says them has stalled.
//!
//! # Invariants (tests below)
//! 1. A character is progress iff it belongs to a line that carries a field
//!    other than `retry`: not a comment (first character `:`), not blank, and
//!    not a line whose field name is exactly `retry`.
//! 2. A field name that is a strict prefix of `retry` (`r`, `re`, …) is a
//!    field of its own: the line counts, at the character that shows it is
//!    not `retry` (the terminator for a line that is only that prefix).
//! 3. The state between chunks is where the scan is in the line (one byte),
//!    so chunk boundaries never change the answer for a line; bytes and
//!    UTF-16 units give the same answers (CR, LF, `:` and the letters of
//!    `retry` are ASCII and never occur inside a multi-byte character).

const LF: u16 = 10;
const CR: u16 = 13;
const COLON: u16 = 58;
const RETRY: [u16; 5] = [114, 101, 116, 114, 121]; // "retry"

// Where the scan is in a line.
const START: u8 = 0;
const COMMENT: u8 = 1;
const FIELD: u8 = 2;
const RETRY_VALUE: u8 = 3;
/// `NAME + k`: the line so far is the first `k` letters of `retry` (1…5).
const NAME: u8 = 3;

/// The line state one stream carries between chunks (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SseLine(u8);

impl SseLine {
    /// At the start of a line.
    pub const fn new() -> Self {
        Self(START)
    }

    /// Takes one character (a byte or a UTF-16 unit); whether it is progress.
    pub fn unit(&mut self, c: u16) -> bool {
        let s = self.0;
        if c == LF || c == CR {
            self.0 = START;
            return s > NAME && s < NAME + 5; // a prefix of `retry` ended: a field of its own
        }
        let (next, progress) = match s {
            START if c == COLON => (COMMENT, false),
            START if c == RETRY[0] => (NAME + 1, false),
            START | FIELD => (FIELD, true),
            COMMENT | RETRY_VALUE => (s, false),
            _ => {
                let k = usize::from(s - NAME);
                if k < 5 && c == RETRY[k] {
                    (s + 1, false)
                } else if k == 5 && c == COLON {
                    (RETRY_VALUE, false)
                } else {
                    (FIELD, true)
                }
            }
        };
        self.0 = next;
        progress
    }

    /// Takes `bytes`; whether any of them is progress.
    pub fn bytes(&mut self, bytes: &[u8]) -> bool {
        let mut progress = false;
        let mut i = 0;
        while i < bytes.len() {
            if self.0 == FIELD {
                // The common case, a field's value: every byte up to the line's end is progress.
                match bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r') {
                    Some(0) => {}
                    Some(k) => {
                        progress = true;
                        i += k;
                    }
                    None => return true,
                }
            }
            progress |= self.unit(u16::from(bytes[i]));
            i += 1;
        }
        progress
    }
}

/// The byte-order mark a body may start with, which the spec drops (once).
const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// One stream's progress scan: what both hosts' SSE predicates keep between
/// chunks (`createSseProgress` in JavaScript, as the byte `sseScanState`
/// gives; the Rust host's `sse_progress`), and what the streamed-read
/// machine scans an event stream's body with. It holds the [`SseLine`]
/// state and how much of a leading byte-order mark was seen, since a mark
/// split across the first chunks is still the one mark the spec drops. Text
/// is scanned as its UTF-8 bytes, where the mark is the same three bytes.
#[derive(Clone, Debug, Default)]
pub struct SseScan {
    line: SseLine,
    /// How many bytes of the mark the body began with so far; `None` once a
    /// byte showed the body under way.
    bom: Option<u8>,
}

impl SseScan {
    /// A stream not begun.
    pub const fn new() -> Self {
        Self { line: SseLine::new(), bom: Some(0) }
    }

    /// Takes one chunk; whether it holds progress (a leading mark never is;
    /// bytes that began like one and turned out not to be are text).
    pub fn bytes(&mut self, bytes: &[u8]) -> bool {
        let mut rest = bytes;
        let mut progress = false;
        while let (Some(seen), Some(&b)) = (self.bom, rest.first()) {
            if b == BOM[usize::from(seen)] {
                rest = &rest[1..];
                self.bom = if seen == 2 { None } else { Some(seen + 1) };
            } else {
                progress = self.line.bytes(&BOM[..usize::from(seen)]);
                self.bom = None;
            }
        }
        self.line.bytes(rest) | progress
    }

    /// The state as one byte, for a host that keeps it between chunks
    /// (`sseScanState` in JavaScript, which treats it as opaque); 0 is a
    /// stream not begun.
    pub fn raw(&self) -> u8 {
        self.line.0 | (self.bom.unwrap_or(3) << 4)
    }

    /// The state a host kept from [`SseScan::raw`]; a byte that is no state
    /// is a stream not begun.
    pub fn from_raw(raw: u8) -> Self {
        let (line, bom) = (raw & 0x0f, raw >> 4);
        if line >= NAME + 6 || bom > 3 {
            return Self::new();
        }
        Self { line: SseLine(line), bom: if bom == 3 { None } else { Some(bom) } }
    }
}

/// The `event: error` a host ends an event stream with when it fails after
/// content (a relay, a plan's streamed step): `data`, one line of JSON, as
/// one event. When the last byte sent, `last`, left a line open, a line feed
/// comes first, so the event starts a line of its own (`None`: nothing was
/// sent). Both hosts write it with this, never by hand.
pub fn error_event(last: Option<u8>, data: &str) -> String {
    let open = matches!(last, Some(b) if b != b'\n' && b != b'\r');
    format!("{}event: error\ndata: {data}\n\n", if open { "\n" } else { "" })
}

/// Whether a `Content-Type` value names Server-Sent Events: its essence
/// (the type and subtype, before any `;` parameter), without the HTTP
/// whitespace around it (tab, LF, CR and space, as Fetch trims a MIME type),
/// is `text/event-stream` in any case. Any other character, a Unicode space
/// included, makes it another type. Both hosts ask this, for every answer
/// they read (the `sse.isEventStream` rows of tests/conformance).
///
/// On bytes: the whitespace and `;` are ASCII, which no byte of a multi-byte
/// UTF-8 character is (decoding characters made this a large function of the `.wasm`).
pub fn is_event_stream(content_type: &str) -> bool {
    let bytes = content_type.as_bytes();
    let essence = bytes.split(|&b| b == b';').next().unwrap_or_default();
    let text = |b: &u8| !matches!(b, b'\t' | b'\n' | b'\r' | b' ');
    let start = essence.iter().position(text).unwrap_or(essence.len());
    let end = essence.iter().rposition(text).map_or(start, |i| i + 1);
    essence.get(start..end).unwrap_or_default().eq_ignore_ascii_case(b"text/event-stream")
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_is_its_essence_between_http_whitespace() {
        for yes in
            ["text/event-stream", "TEXT/Event-Stream", " \ttext/event-stream ; charset=utf-8", "text/event-stream;"]
        {
            assert!(is_event_stream(yes), "{yes:?}");
        }
        for no in [
            "",
            "text/event-streams",
            "text/html",
            "text/event-stream\u{85}",
            "\u{a0}text/event-stream",
            "text/event-stream\u{b}",
            "text/event-stream,text/html",
        ] {
            assert!(!is_event_stream(no), "{no:?}");
        }
    }

    fn chunks(parts: &[&str]) -> Vec<bool> {
        let mut s = SseLine::new();
        parts.iter().map(|p| s.bytes(p.as_bytes())).collect()
    }

    #[test]
    fn comments_blank_lines_and_retry_only_lines_are_not_progress() {
        assert_eq!(chunks(&[": ping\n\n", "retry: 3000\n\n", "retry\n\n", "\r\n"]), [false; 4]);
        assert_eq!(chunks(&["data: a\n\n", "id: 1\n\n", "event: x\n\n", "retryx: 1\n\n"]), [true; 4]);
        assert_eq!(chunks(&["retry: 5\ndata: a\n\n"]), [true], "an event with data as well is content");
    }

    #[test]
    fn prefixes_of_retry_are_fields_of_their_own() {
        assert_eq!(chunks(&["r: 1\n"]), [true]);
        assert_eq!(chunks(&["re", "\n"]), [false, true], "the terminator shows the name is `re`");
        assert_eq!(chunks(&["retr", "y", ": 9", "\n\n"]), [false; 4]);
        assert_eq!(chunks(&["ret", "ain: 1\n"]), [false, true]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_dropped_once_even_split_across_chunks() {
        let scan = |parts: &[&[u8]]| {
            let mut s = SseScan::new();
            parts.iter().map(|p| s.bytes(p)).collect::<Vec<_>>()
        };
        let mark = "\u{feff}".as_bytes();
        assert_eq!(scan(&[mark, b": ping\n\n"]), [false, false], "the mark then a keep-alive");
        assert_eq!(scan(&[&mark[..1], &mark[1..], b": ping\n"]), [false, false, false], "the mark split in two");
        assert_eq!(scan(&[&mark[..2], b"\xbf: ping\n"]), [false, false], "its last byte with the keep-alive");
        assert_eq!(scan(&[b"\xef\xbb\xbf\xef\xbb\xbf: x\n"]), [true], "a second mark is a field's characters");
        assert_eq!(scan(&[b"", mark, b"data: a\n"]), [false, false, true], "an empty chunk begins nothing");
        assert_eq!(scan(&[b"\xef\xbbx: 1\n"]), [true], "a mark's prefix then other bytes: a field");
        assert_eq!(scan(&[b"\xef\xbb", b"\n"]), [false, true], "a mark's prefix that ends a line is that line's text");
        assert_eq!(scan(&[b"data: a\n", mark]), [true, true], "a mark after the start is a field's characters");
    }

    #[test]
    fn the_state_a_host_keeps_as_a_byte_scans_on_as_the_scan_itself() {
        assert_eq!(SseScan::from_raw(0).raw(), SseScan::new().raw(), "0 is a stream not begun");
        for raw in [0xff, 0x4f, 0x0a] {
            assert_eq!(SseScan::from_raw(raw).raw(), 0, "{raw:#x} is no state");
        }
        let mark = "\u{feff}".as_bytes();
        let body: Vec<u8> = [mark, b": ping\nretry: 1\nre\ndata: a\n\n".as_slice()].concat();
        for at in 0..=body.len() {
            let mut whole = SseScan::new();
            let expect = [whole.bytes(&body[..at]), whole.bytes(&body[at..])];
            let mut kept = SseScan::from_raw(SseScan::new().raw());
            let first = kept.bytes(&body[..at]);
            let mut resumed = SseScan::from_raw(kept.raw());
            assert_eq!([first, resumed.bytes(&body[at..])], expect, "split at {at}");
            assert_eq!(resumed.raw(), whole.raw());
        }
    }

    #[test]
    fn an_error_event_starts_a_line_of_its_own() {
        assert_eq!(error_event(None, "{}"), "event: error\ndata: {}\n\n", "nothing sent");
        assert_eq!(error_event(Some(b'\n'), "{}"), "event: error\ndata: {}\n\n");
        assert_eq!(error_event(Some(b'\r'), "{}"), "event: error\ndata: {}\n\n", "a CR ends a line too");
        assert_eq!(error_event(Some(b'a'), "{}"), "\nevent: error\ndata: {}\n\n", "a line left open");
    }

    #[test]
    fn every_split_point_gives_the_same_answer_per_line() {
        for text in ["retry: 10\n", "data: x\n", ": c\n", "re\n", "retryy\n", "r\r\n"] {
            let whole = chunks(&[text]).iter().any(|&p| p);
            for at in 0..=text.len() {
                let (a, b) = text.split_at(at);
                let split = chunks(&[a, b]).iter().any(|&p| p);
                assert_eq!(split, whole, "{text:?} split at {at}");
            }
        }
    }
}
