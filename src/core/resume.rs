//! Streams that recover: what a streamed read does when its upstream fails.
//!
//! # Why
//! A model's answer streams for tens of seconds, and connections break in
//! the middle of it. Retrying the whole call is right only while nothing has
//! reached the reader: after that, starting over would show the reader the
//! beginning twice. Server-Sent Events carry the way back in the standard
//! itself: an event's `id`, sent back as `Last-Event-ID` on reconnection,
//! and a server that honours it continues after that event. Any other body
//! can only be continued by the caller, who knows what the request meant
//! (for a model call: the partial answer, and "continue"), through a hook.
//!
//! [`Resume`] makes that choice, the same in both hosts (through the
//! streamed-read machine [`crate::core::read::Read`], which `js/resume.js` and
//! `src/web/resume.rs` drive): the host reports a failure with what it delivered,
//! and the machine answers what to do ([`Next`]) and how long to wait first.
//! *Whether* another attempt may be made at all, and the backoff, is the
//! retry loop's ([`crate::core::retry::RetryRun`]): the host asks it first
//! and asks this machine only when it allows one.
//!
//! Two helpers the machine uses are here too: [`EventCut`] cuts an event
//! stream on event boundaries (a reader never gets half an event, and the
//! half an attempt left behind is dropped) and reads each event's id, and
//! [`status_failure`] (the retry loop's, re-exported here) says how a non-ok
//! answer failed when the caller gave no `classify`.
//!
//! # Invariants (each is a test below)
//! 1. Before content reached the reader, the answer is [`Next::Retry`]: the
//!    request is made again as it was, and the reader never sees the failure.
//! 2. After content, a stream is never restarted as it was: an event stream
//!    whose delivered events carried an id resumes with `Last-Event-ID`
//!    ([`Next::LastEventId`]) unless the upstream has shown it ignores the
//!    header; otherwise the hook ([`Next::Hook`]) when the caller gave one;
//!    otherwise the stream ends ([`Next::End`]).
//! 3. An upstream that answered a `Last-Event-ID` request with an event
//!    already delivered ([`Resume::replayed`]) is never asked by id again.
//!    Nor is one whose answer could not be checked: once a stream delivered
//!    more ids than it remembers ([`DeliveredIds::checkable`]), a resumed
//!    stream's first id might be a forgotten one, so the hook decides, or
//!    the stream ends with the failure.
//! 4. The wait before an attempt is the retry loop's delay (backoff, or a
//!    server's wait) before content. After content, the first resume waits
//!    only for a server's wait: the upstream was answering, the connection
//!    broke, and the reader is waiting mid-answer. Later resumes back off.

use crate::core::error::{whole_code, Described, Message};
pub use crate::core::retry::status_failure;

/// What to do after a failure the retry loop allows another attempt for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Next {
    /// Make the request again as it was: nothing reached the reader.
    Retry = 0,
    /// Make it again with `Last-Event-ID`: the upstream continues after it.
    LastEventId = 1,
    /// Ask the caller's hook for the continuation.
    Hook = 2,
    /// End the stream with the failure.
    End = 3,
}

/// One resumable read's state between attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    hook: bool,
    ignored: bool,
    resumes: u32,
}

/// What the host delivered when an attempt failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Content reached the reader: an event of an event stream (a comment
    /// is not content), or any byte of another body.
    pub content: bool,
    /// The body is `text/event-stream`.
    pub event_stream: bool,
    /// A delivered event carried an id (sent back as `Last-Event-ID`).
    pub last_event_id: bool,
    /// The stream delivered more ids than it remembers: a resume by id
    /// could not be checked for a replay ([`DeliveredIds::checkable`]).
    pub unchecked: bool,
}

/// The flags of [`Delivered`] and [`Resume`] as one number (a host that
/// asks the machine with scalars).
pub mod flags {
    /// [`super::Delivered::content`].
    pub const CONTENT: u32 = 1;
    /// [`super::Delivered::event_stream`].
    pub const EVENT_STREAM: u32 = 2;
    /// [`super::Delivered::last_event_id`].
    pub const LAST_EVENT_ID: u32 = 4;
    /// The upstream ignored `Last-Event-ID` ([`super::Resume::replayed`]).
    pub const IGNORED: u32 = 8;
    /// The caller gave a resume hook.
    pub const HOOK: u32 = 16;
    /// [`super::Delivered::unchecked`].
    pub const UNCHECKED: u32 = 32;
}

impl Resume {
    /// A read with (`hook`) or without a resume hook.
    pub fn new(hook: bool) -> Self {
        Self { hook, ignored: false, resumes: 0 }
    }

    /// The state a host that keeps it as [`flags`] and a count describes.
    pub fn from_flags(bits: u32, resumes: u32) -> Self {
        Self { hook: bits & flags::HOOK != 0, ignored: bits & flags::IGNORED != 0, resumes }
    }

    /// An attempt failed after delivering `delivered`, and the retry loop
    /// allows another after `delay_ms`, of which `server_wait_ms` is what
    /// the upstream asked for: what to do, and the wait before it.
    pub fn after_failure(&mut self, delivered: Delivered, delay_ms: f64, server_wait_ms: Option<f64>) -> (Next, f64) {
        let next = self.next(delivered);
        let wait = match next {
            Next::Retry | Next::End => delay_ms,
            Next::LastEventId | Next::Hook => {
                let first = self.resumes == 0;
                self.resumes = self.resumes.saturating_add(1);
                if first {
                    server_wait_ms.map_or(0.0, |w| w.min(delay_ms))
                } else {
                    delay_ms
                }
            }
        };
        (next, if wait.is_nan() || wait < 0.0 { 0.0 } else { wait })
    }

    /// What to do after a failure (invariants 1–3), without counting it.
    pub fn next(&self, delivered: Delivered) -> Next {
        if !delivered.content {
            Next::Retry
        } else if delivered.event_stream && delivered.last_event_id && !delivered.unchecked && !self.ignored {
            Next::LastEventId
        } else if self.hook {
            Next::Hook
        } else {
            Next::End
        }
    }

    /// A stream asked with `Last-Event-ID` repeated an event already
    /// delivered: the upstream ignores the header (invariant 3).
    pub fn replayed(&mut self) {
        self.ignored = true;
    }

    /// Whether the upstream was seen to ignore `Last-Event-ID`.
    pub fn ignores_last_event_id(&self) -> bool {
        self.ignored
    }

    /// How many times the read resumed after content.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }
}

impl Delivered {
    /// From [`flags`].
    pub fn from_flags(bits: u32) -> Self {
        Self {
            content: bits & flags::CONTENT != 0,
            event_stream: bits & flags::EVENT_STREAM != 0,
            last_event_id: bits & flags::LAST_EVENT_ID != 0,
            unchecked: bits & flags::UNCHECKED != 0,
        }
    }
}

/// How many of the latest delivered ids a resumed stream's first id is
/// checked against, besides the stream's first ([`DeliveredIds`]): with
/// [`MAX_ID_BYTES`], a stream's memory budget for resuming by id. A stream
/// that delivered more ids than that and the first can no longer be
/// resumed by id unchecked ([`DeliveredIds::checkable`]).
pub const RECENT_IDS: usize = 1024;

/// An event id as [`DeliveredIds`] remembers it: the 32-bit FNV-1a hash of
/// its bytes.
pub fn id_hash(id: &[u8]) -> u32 {
    id.iter().fold(0x811c_9dc5_u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// The longest event id a stream keeps for resuming, in bytes: a longer
/// one is not sent back as `Last-Event-ID` (the stream is no longer
/// resumable by id from there, as if the event had none) and is not
/// remembered for the replay check. It bounds [`DeliveredIds`] to
/// [`RECENT_IDS`] + 1 ids of at most this many bytes per stream.
pub const MAX_ID_BYTES: usize = 1024;

/// The ids a stream delivered, as the replay check needs them: the first,
/// and the last [`RECENT_IDS`], compared exactly (a hash finds a candidate,
/// the bytes confirm it: two different ids never pass for each other). An
/// upstream that ignores `Last-Event-ID` starts again from its first event,
/// or repeats a recent one; either is caught. Ids longer than
/// [`MAX_ID_BYTES`] are not kept.
#[derive(Clone, Debug, Default)]
pub struct DeliveredIds {
    first: Option<(u32, Box<[u8]>)>,
    recent: Vec<(u32, Vec<u8>)>,
    count: usize,
}

impl DeliveredIds {
    /// An id reached the reader.
    pub fn record(&mut self, id: &str) {
        let bytes = id.as_bytes();
        if bytes.len() > MAX_ID_BYTES {
            return;
        }
        let hash = id_hash(bytes);
        if self.first.is_none() {
            self.first = Some((hash, bytes.into()));
        }
        if self.recent.len() < RECENT_IDS {
            self.recent.push((hash, bytes.to_vec()));
        } else {
            // The ring is full: the oldest entry's buffer takes the new id (no allocation per id).
            let entry = &mut self.recent[self.count % RECENT_IDS];
            entry.0 = hash;
            entry.1.clear();
            entry.1.extend_from_slice(bytes);
        }
        self.count += 1;
    }

    /// Whether every id delivered is remembered (the first and the last
    /// [`RECENT_IDS`] are all of them): only then does a resumed stream's
    /// first id that is not among them show it is new. Past that budget, a
    /// replay from a forgotten id would pass for a continuation.
    pub fn checkable(&self) -> bool {
        self.count <= RECENT_IDS + 1
    }

    /// Whether `id` is one of those remembered (exactly).
    pub fn contains(&self, id: &str) -> bool {
        let bytes = id.as_bytes();
        let h = id_hash(bytes);
        self.first.as_ref().is_some_and(|e| e.0 == h && *e.1 == *bytes)
            || self.recent.iter().any(|e| e.0 == h && *e.1 == *bytes)
    }
}

/// Why a resumed attempt's ok answer cannot be spliced onto what the reader
/// got, or `None` when it can.
///
/// - A resume by `Last-Event-ID` (`by_id`) needs an event stream
///   (`event_stream`): anything else (a proxy's HTML error page answered 200)
///   is `"not-event-stream"`.
/// - A hook's continuation of a body that is not an event stream
///   (`!stream_is_sse`) is a byte range: it needs a 206 (`status`) whose
///   `Content-Range` starts (`range_start`) exactly where the reader is
///   (`delivered`); a 200 that ignored `Range` would append the whole body
///   again (`"not-partial"`), another start would skip or repeat bytes
///   (`"range-mismatch"`).
///
/// Either refusal is a failed attempt (the retry loop decides what comes
/// next), never content.
pub fn resume_refusal(
    by_id: bool,
    stream_is_sse: bool,
    status: u16,
    event_stream: bool,
    range_start: Option<f64>,
    delivered: f64,
) -> Option<&'static str> {
    if by_id {
        return (!event_stream).then_some("not-event-stream");
    }
    if stream_is_sse {
        return None;
    }
    if status != 206 {
        return Some("not-partial");
    }
    (range_start != Some(delivered)).then_some("range-mismatch")
}

/// The first position of a `Content-Range: bytes first-last/size` value;
/// `None` for anything else.
pub fn content_range_start(value: &str) -> Option<f64> {
    // A plain byte scan (the standard library's trimming and parsing weigh in the `.wasm`).
    let b = value.as_bytes();
    let rest = b.strip_prefix(b"bytes ")?;
    let mut n: u64 = 0;
    let mut digits = 0;
    for &c in rest {
        match c {
            b'0'..=b'9' if digits < 15 => {
                n = n * 10 + u64::from(c - b'0');
                digits += 1;
            }
            b'-' if digits > 0 => return Some(n as f64),
            _ => return None,
        }
    }
    None
}

/// The longest event an [`EventCut`] holds, in bytes, unless the caller
/// sets another (`maxEventBytes`): an event stream that sends a longer one
/// (counting its lines' ends and its blank line) ends at the byte past the
/// cap with [`CutRefusal::EventTooLarge`]. An event is held whole until its
/// blank line (a reader never gets half of one), so this bounds what a
/// stream holds.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The longest line of an event stream an [`EventCut`] takes, in bytes (its
/// end not counted), unless the caller sets another (`maxLineBytes`): past
/// it the stream ends with [`CutRefusal::LineTooLong`]. The line being read
/// is held apart from its event (its field name and an id's value are read
/// from it), so this bounds that copy.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The largest cap a caller may set for `maxEventBytes` or `maxLineBytes`.
pub const MAX_CAP_BYTES: f64 = 1_073_741_824.0;

/// Why an [`EventCut`] refused a stream: one of its caps was passed. The
/// stream ends with it at once (it is never retried: the same upstream would
/// send the same event again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutRefusal {
    /// An event longer than the event cap.
    EventTooLarge,
    /// A line longer than the line cap.
    LineTooLong,
}

impl CutRefusal {
    /// Its stable code: `EVENT_TOO_LARGE` or `LINE_TOO_LONG`.
    pub fn code(self) -> &'static str {
        match self {
            Self::EventTooLarge => "EVENT_TOO_LARGE",
            Self::LineTooLong => "LINE_TOO_LONG",
        }
    }

    /// The option that sets the cap it passed.
    pub fn option(self) -> &'static str {
        match self {
            Self::EventTooLarge => "maxEventBytes",
            Self::LineTooLong => "maxLineBytes",
        }
    }

    /// The message a reader gets, for a cap of `cap` bytes.
    pub fn message(self, cap: f64) -> Message {
        let id = match self {
            Self::EventTooLarge => msg::EVENT_TOO_LARGE,
            Self::LineTooLong => msg::LINE_TOO_LONG,
        };
        Message::new(id).arg("max", cap).arg("option", self.option())
    }
}

/// A cap given for `maxEventBytes` or `maxLineBytes` (`param`) that is not
/// a whole number of bytes from 1 to [`MAX_CAP_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapError {
    /// The option, as the caller wrote it (`"options.maxEventBytes"`).
    pub param: &'static str,
    /// The value given.
    pub value: f64,
}

impl Described for CapError {
    fn code(&self) -> &'static str {
        whole_code(self.value, 1.0, MAX_CAP_BYTES)
    }

    fn param(&self) -> Option<String> {
        Some(self.param.into())
    }

    fn message(&self) -> Message {
        Message::new(msg::CAP).arg("param", self.param).arg("max", MAX_CAP_BYTES).arg("value", self.value)
    }
}

crate::described_error!(display CapError);

/// Checks a cap for `param` (`maxEventBytes`, `maxLineBytes`): the bytes.
pub fn check_cap(param: &'static str, value: f64) -> Result<usize, CapError> {
    if value.is_finite() && value.fract() == 0.0 && (1.0..=MAX_CAP_BYTES).contains(&value) {
        Ok(value as usize)
    } else {
        Err(CapError { param, value })
    }
}

/// The resumable stream's message templates.
pub mod msg {
    crate::templates! { "resume";
        /// [`CapError`](super::CapError).
        CAP = "'{param}' must be a whole number of bytes from 1 to {max}: current value is {value}";
        /// [`CutRefusal::EventTooLarge`](super::CutRefusal::EventTooLarge).
        EVENT_TOO_LARGE = "the event stream sent an event longer than {max} bytes (the cap set by {option})";
        /// [`CutRefusal::LineTooLong`](super::CutRefusal::LineTooLong).
        LINE_TOO_LONG = "the event stream sent a line longer than {max} bytes (the cap set by {option})";
        /// [`not_resumable`](super::not_resumable).
        NOT_RESUMABLE = "the stream failed after {bytes} bytes reached the reader and could not be resumed (by event id or by the resume hook)";
    }
}

/// The reason a read that ends after [`Next::End`] reports (the retry
/// loop still allowed an attempt, but none could continue the stream).
pub const NOT_RESUMABLE: &str = "not-resumable";

/// The message of a read that ended after [`Next::End`] with `bytes`
/// delivered: the hosts' `RetryFailed` with reason [`NOT_RESUMABLE`] and
/// the failure as its cause.
pub fn not_resumable(bytes: f64) -> Message {
    Message::new(msg::NOT_RESUMABLE).arg("bytes", bytes)
}

/// One complete event cut from an event stream by [`EventCut`]: its bytes
/// are the next `len` of those pushed that were not dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// How many bytes it has, as the upstream sent them, its blank line included.
    pub len: usize,
    /// It has a field line other than `retry` (`data:`, `id:`, …): it is
    /// content. An event of comments only (`: ping`), or one that only sets
    /// the reconnection time (`retry: 3000`), is not.
    pub content: bool,
    /// The value of its last valid `id` field, if it had one: the stream's
    /// last event ID once the event is delivered.
    pub id: Option<String>,
}

/// Cuts an event stream's bytes on event boundaries, so that a reader is
/// never given part of an event: a stream that breaks mid-event and is
/// continued elsewhere must not leave half an event in front of the next.
/// It holds no bytes: it counts them. Whoever pushes them keeps them, and
/// the cut says how many make each event ([`Event::len`]) and how many a
/// push drops at the front ([`EventCut::push`]), so an event held whole
/// past a raised cap is held once, where it was read.
///
/// # Invariants (each is a test below)
/// 1. An event ends at a blank line; lines end at LF, CR or CRLF, in any
///    mix, and a CRLF split across chunks is one line end.
/// 2. Bytes are counted exactly as received, in order, cut only after
///    a blank line: chunk boundaries never change what is cut.
/// 3. An `id` field's value is what follows `id:` and one optional space;
///    a value with NUL is ignored (as the Server-Sent Events standard says).
/// 4. [`EventCut::drop_partial`] forgets the event in progress: the next
///    bytes start a fresh event. A byte-order mark that opens a later
///    attempt's body is dropped (a reader strips only the stream's first):
///    it is at the front of what is held, as nothing is held before it.
/// 5. No event longer than the event cap and no line longer than the line
///    cap is held: the byte past either is refused ([`CutRefusal`]), the
///    events completed before it are given, and every later push is refused
///    too. Where the refusal falls does not depend on chunk boundaries.
#[derive(Clone, Debug)]
pub struct EventCut {
    /// The bytes of the event in progress (held by whoever pushed them).
    pending: usize,
    /// The start of the line being read (enough for a field name and an
    /// id's value up to its cap), and its whole length in `line_len`.
    line: Vec<u8>,
    line_len: usize,
    after_cr: bool,
    content: bool,
    id: Option<String>,
    /// How much of a leading byte-order mark was matched; `None`: past it.
    bom: Option<usize>,
    keep_bom: bool,
    dropped: usize,
    /// An id's buffer given back ([`EventCut::recycle_id`]), for the next id.
    spare_id: Option<String>,
    max_event: usize,
    max_line: usize,
    refused: Option<CutRefusal>,
}

impl Default for EventCut {
    fn default() -> Self {
        Self::new()
    }
}

const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

impl EventCut {
    /// A cutter for a stream's first body.
    pub fn new() -> Self {
        Self::with_caps(MAX_EVENT_BYTES, MAX_LINE_BYTES)
    }

    /// A cutter for a stream's first body with an event cap and a line cap
    /// of its own, in bytes ([`check_cap`] checks a caller's).
    pub fn with_caps(max_event: usize, max_line: usize) -> Self {
        Self {
            pending: 0,
            line: Vec::new(),
            line_len: 0,
            after_cr: false,
            content: false,
            id: None,
            bom: Some(0),
            keep_bom: true,
            dropped: 0,
            spare_id: None,
            max_event,
            max_line,
            refused: None,
        }
    }

    /// The cap passed, once one was (invariant 5).
    pub fn refused(&self) -> Option<CutRefusal> {
        self.refused
    }

    /// Forgets the event in progress (an attempt failed), and expects a new
    /// body: its leading byte-order mark is dropped.
    pub fn drop_partial(&mut self) {
        self.pending = 0;
        self.line.clear();
        self.line_len = 0;
        self.after_cr = false;
        self.content = false;
        self.id = None;
        self.bom = Some(0);
        self.keep_bom = false;
    }

    /// Whether part of an event is held.
    pub fn has_partial(&self) -> bool {
        self.pending > 0
    }

    /// How many bytes the event in progress has (an event the upstream
    /// never finished, at the end of the body), forgetting it.
    pub fn take_rest(&mut self) -> usize {
        self.line.clear();
        self.line_len = 0;
        self.content = false;
        self.id = None;
        std::mem::take(&mut self.pending)
    }

    /// Gives back the buffer of an event's id that is no longer needed, for
    /// the next id to fill (no allocation per event with an id).
    pub fn recycle_id(&mut self, id: String) {
        self.spare_id = Some(id);
    }

    /// How many bytes of a byte-order mark the last push dropped
    /// (invariant 4): the first so many held, before any event's.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Adds `chunk`; every event it completes is pushed to `out`. Refused
    /// at the byte that passes a cap, and from then on (invariant 5).
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Event>) -> Result<(), CutRefusal> {
        self.dropped = 0;
        if let Some(refusal) = self.refused {
            return Err(refusal);
        }
        let mut rest = chunk;
        while let (Some(matched), Some(&b)) = (self.bom, rest.first()) {
            if b == BOM[matched] {
                if self.keep_bom {
                    self.pending += 1;
                }
                rest = &rest[1..];
                self.bom = if matched == 2 { None } else { Some(matched + 1) };
                if matched == 2 && !self.keep_bom {
                    self.dropped = BOM.len();
                }
            } else {
                // Not a mark after all: what matched is text.
                self.line.extend_from_slice(&BOM[..matched]);
                self.line_len += matched;
                if !self.keep_bom {
                    self.pending += matched;
                }
                self.bom = None;
            }
        }
        let mut i = 0;
        while let Some(&b) = rest.get(i) {
            if b == b'\r' || b == b'\n' {
                if self.pending >= self.max_event {
                    return Err(*self.refused.insert(CutRefusal::EventTooLarge));
                }
                self.pending += 1;
                i += 1;
                if std::mem::take(&mut self.after_cr) && b == b'\n' {
                    continue;
                }
                self.after_cr = b == b'\r';
                self.end_line(out);
                continue;
            }
            self.after_cr = false;
            // A run of the line's bytes, to its end or the chunk's: taken whole, checked against the caps
            // as byte by byte (the event's first, then the line's, at the byte that passes either).
            let run = &rest[i..];
            let run = &run[..run.iter().position(|&c| c == b'\r' || c == b'\n').unwrap_or(run.len())];
            let room_event = self.max_event.saturating_sub(self.pending);
            let room_line = self.max_line.saturating_sub(self.line_len);
            if run.len() > room_event.min(room_line) {
                let (taken, refusal) = if room_event <= room_line {
                    (room_event, CutRefusal::EventTooLarge)
                } else {
                    (room_line + 1, CutRefusal::LineTooLong)
                };
                self.pending += taken;
                return Err(*self.refused.insert(refusal));
            }
            self.pending += run.len();
            let keep = LINE_KEEP.saturating_sub(self.line.len()).min(run.len());
            self.line.extend_from_slice(&run[..keep]);
            self.line_len += run.len();
            i += run.len();
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let line = std::mem::take(&mut self.line);
        let len = std::mem::take(&mut self.line_len);
        if len == 0 {
            out.push(Event {
                len: std::mem::take(&mut self.pending),
                content: std::mem::take(&mut self.content),
                id: self.id.take(),
            });
        } else if line[0] != b':' {
            // `line` holds the line's first LINE_KEEP bytes: a name without its colon among them is
            // neither `retry` nor `id`.
            let (name, value, value_len) = match line.iter().position(|&c| c == b':') {
                Some(i) => (&line[..i], &line[i + 1..], len - i - 1),
                None if len == line.len() => (&line[..], &[][..], 0),
                None => (&[][..], &[][..], 0),
            };
            // An event that only sets the reconnection time is not content (src/core/sse.rs).
            if name != b"retry" {
                self.content = true;
            }
            if name == b"id" {
                let (value, value_len) = match value.strip_prefix(b" ") {
                    Some(v) => (v, value_len - 1),
                    None => (value, value_len),
                };
                if value_len > MAX_ID_BYTES {
                    // Past the cap: no longer resumable by id from here (as an empty id says).
                    self.id = Some(String::new());
                } else if !value.contains(&0) {
                    let mut id = self.spare_id.take().unwrap_or_default();
                    id.clear();
                    id.push_str(&String::from_utf8_lossy(value));
                    self.id = Some(id);
                }
            }
        }
        self.line = line;
        self.line.clear();
    }
}

/// How much of a line an [`EventCut`] keeps to read it: a field name and an
/// id's value up to [`MAX_ID_BYTES`] (its length is counted apart).
const LINE_KEEP: usize = MAX_ID_BYTES + 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_remembered_as_the_first_and_the_last_recent_ones() {
        // FNV-1a 32-bit test vectors (the JavaScript host's Math.imul loop gives the same bits).
        assert_eq!(id_hash(b""), 0x811c_9dc5);
        assert_eq!(id_hash(b"a"), 0xe40c_292c);
        assert_eq!(id_hash(b"foobar"), 0xbf9c_f968);
        let mut ids = DeliveredIds::default();
        for i in 1..=3_000 {
            ids.record(&i.to_string());
        }
        assert!(ids.contains("1"), "the first");
        assert!(ids.contains("3000") && ids.contains(&(3_001 - RECENT_IDS).to_string()), "the last RECENT_IDS");
        assert!(!ids.contains(&(3_000 - RECENT_IDS).to_string()), "older ones are forgotten");
        assert!(!ids.contains("3001"));
        assert!(!ids.checkable(), "a replay from a forgotten id could pass for new");
        let mut ids = DeliveredIds::default();
        for i in 1..=RECENT_IDS + 1 {
            ids.record(&i.to_string());
            assert!(ids.checkable(), "{i} ids: all remembered");
        }
        ids.record("x");
        assert!(!ids.checkable(), "one more: the first of the ring is forgotten");
    }

    const SSE_WITH_ID: Delivered =
        Delivered { content: true, event_stream: true, last_event_id: true, unchecked: false };

    fn all_delivered() -> impl Iterator<Item = Delivered> {
        (0..16u32).map(|b| Delivered {
            content: b & 1 != 0,
            event_stream: b & 2 != 0,
            last_event_id: b & 4 != 0,
            unchecked: b & 8 != 0,
        })
    }

    /// An event with its bytes, as whoever holds the pushed bytes takes them.
    #[derive(Debug, PartialEq)]
    struct Got {
        bytes: Vec<u8>,
        content: bool,
        id: Option<String>,
    }

    /// A cut and the bytes pushed to it, held as a host holds them.
    struct Holder {
        cut: EventCut,
        held: Vec<u8>,
    }

    impl Holder {
        fn new(cut: EventCut) -> Self {
            Self { cut, held: Vec::new() }
        }

        fn push(&mut self, chunk: &[u8], out: &mut Vec<Got>) -> Result<(), CutRefusal> {
            self.held.extend_from_slice(chunk);
            let mut events = Vec::new();
            let r = self.cut.push(chunk, &mut events);
            self.held.drain(..self.cut.dropped());
            for e in events {
                out.push(Got { bytes: self.held.drain(..e.len).collect(), content: e.content, id: e.id });
            }
            r
        }

        fn rest(&mut self) -> Vec<u8> {
            let n = self.cut.take_rest();
            self.held.drain(..n).collect()
        }
    }

    fn cut(chunks: &[&[u8]]) -> (Vec<Got>, Vec<u8>) {
        let mut c = Holder::new(EventCut::new());
        let mut out = Vec::new();
        for chunk in chunks {
            c.push(chunk, &mut out).unwrap();
        }
        (out, c.rest())
    }

    #[test]
    fn a_resumed_answer_is_spliced_only_when_it_continues_where_the_reader_is() {
        // By id: an event stream, whatever its status (it is ok: non-ok answers never get here).
        assert_eq!(resume_refusal(true, true, 200, true, None, 10.0), None);
        assert_eq!(resume_refusal(true, true, 200, false, None, 10.0), Some("not-event-stream"));
        // A hook continuing an event stream (a chat "continue"): a new stream is fine.
        assert_eq!(resume_refusal(false, true, 200, true, None, 10.0), None);
        // A hook continuing bytes: a 206 from exactly where the reader is.
        assert_eq!(resume_refusal(false, false, 206, false, Some(7.0), 7.0), None);
        assert_eq!(resume_refusal(false, false, 200, false, None, 7.0), Some("not-partial"));
        assert_eq!(resume_refusal(false, false, 206, false, Some(0.0), 7.0), Some("range-mismatch"));
        assert_eq!(resume_refusal(false, false, 206, false, None, 7.0), Some("range-mismatch"));
        assert_eq!(content_range_start("bytes 7-26/27"), Some(7.0));
        assert_eq!(content_range_start("bytes 7-*/*"), Some(7.0));
        for bad in ["", "bytes */27", "bytes -5/27", "items 7-8/9", "bytes 7", "bytes 99999999999999999-1/2"] {
            assert_eq!(content_range_start(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ids_that_hash_alike_are_told_apart() {
        // "costarring" and "liquid" collide in 32-bit FNV-1a.
        assert_eq!(id_hash(b"costarring"), id_hash(b"liquid"));
        let mut ids = DeliveredIds::default();
        ids.record("costarring");
        assert!(ids.contains("costarring"));
        assert!(!ids.contains("liquid"), "a new id is not taken for a replay");
        let long = "x".repeat(MAX_ID_BYTES + 1);
        ids.record(&long);
        assert!(!ids.contains(&long), "an id past the cap is not kept");
    }

    #[test]
    fn an_event_that_only_sets_retry_is_not_content() {
        let (events, _) = cut(&[b"retry: 3000\n\n", b"retry: 1\ndata: a\n\n", b"re\n\n"]);
        let content: Vec<bool> = events.iter().map(|e| e.content).collect();
        assert_eq!(content, [false, true, true]);
    }

    #[test]
    fn events_end_at_any_blank_line_and_chunks_do_not_matter() {
        let body: &[u8] = b": hi\n\nid: 1\ndata: a\n\nid:2\r\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\ndata: e";
        let (whole, rest) = cut(&[body]);
        let ids: Vec<_> = whole.iter().map(|e| e.id.as_deref()).collect();
        assert_eq!(ids, [None, Some("1"), Some("2"), None, None]);
        assert_eq!(whole.iter().map(|e| e.content).collect::<Vec<_>>(), [false, true, true, true, true]);
        // The LF of the CRLF that ended the last event opens what follows.
        assert_eq!(rest, b"\ndata: e");
        let joined: Vec<u8> = whole.iter().flat_map(|e| e.bytes.clone()).chain(rest.clone()).collect();
        assert_eq!(joined, body);
        for split in 0..=body.len() {
            for split2 in split..=body.len() {
                let (events, r) = cut(&[&body[..split], &body[split..split2], &body[split2..]]);
                assert_eq!(events, whole, "split at {split}, {split2}");
                assert_eq!(r, rest);
            }
        }
    }

    #[test]
    fn long_lines_are_read_from_their_start_wherever_the_chunks_fall() {
        let at_cap = format!("id: {}\n\n", "x".repeat(MAX_ID_BYTES));
        let past_cap = format!("id: {}\n\n", "x".repeat(MAX_ID_BYTES + 1));
        let long_data = format!("data: {}\n\n", "y".repeat(5_000));
        let long_name = format!("{}: 1\nid: 7\n\n", "i".repeat(3_000));
        let body = [at_cap.as_str(), &past_cap, &long_data, &long_name].concat();
        let whole = cut(&[body.as_bytes()]).0;
        let ids: Vec<_> = whole.iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, [Some("x".repeat(MAX_ID_BYTES)), Some(String::new()), None, Some("7".into())]);
        assert!(whole.iter().all(|e| e.content));
        for step in [1, 7, 1_000, 1_027, 4_096] {
            let pieces: Vec<&[u8]> = body.as_bytes().chunks(step).collect();
            assert_eq!(cut(&pieces).0, whole, "chunks of {step}");
        }
    }

    #[test]
    fn a_crlf_is_one_line_end_even_split() {
        // "data: x\r" then "\n\r\n": one event, not two.
        let (events, rest) = cut(&[b"data: x\r", b"\n\r\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].bytes, b"data: x\r\n\r");
        assert_eq!(rest, b"\n");
    }

    #[test]
    fn ids_as_the_standard_reads_them() {
        let (events, _) = cut(&[b"id:  two spaces\n\nid\n\nid: a\0b\n\nid: x\nid: y\n\n"]);
        let ids: Vec<_> = events.iter().map(|e| e.id.as_deref()).collect();
        assert_eq!(ids, [Some(" two spaces"), Some(""), None, Some("y")]);
    }

    #[test]
    fn a_dropped_partial_event_is_never_given_back() {
        let mut c = Holder::new(EventCut::new());
        let mut out = Vec::new();
        c.push(b"id: 1\ndata: a\n\nid: 2\nda", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(c.cut.has_partial());
        c.cut.drop_partial();
        c.held.clear();
        assert!(!c.cut.has_partial());
        c.push(b"\xef\xbb\xbfid: 2\ndata: b\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].bytes, b"id: 2\ndata: b\n\n");
        assert_eq!(out[1].id.as_deref(), Some("2"));
        // The first body's mark is the reader's to strip: given back, not parsed.
        let (events, _) = cut(&[b"\xef\xbb", b"\xbfid: 9\n\n"]);
        assert_eq!(events[0].bytes, b"\xef\xbb\xbfid: 9\n\n");
        assert_eq!(events[0].id.as_deref(), Some("9"));
        // A partial mark is text.
        let (events, _) = cut(&[b"\xef:x\n\n"]);
        assert_eq!(events[0].bytes, b"\xef:x\n\n");
        assert!(events[0].content);
    }

    fn cut_capped(chunks: &[&[u8]], max_event: usize, max_line: usize) -> (Vec<Got>, Option<CutRefusal>) {
        let mut c = Holder::new(EventCut::with_caps(max_event, max_line));
        let mut out = Vec::new();
        let mut refused = None;
        for chunk in chunks {
            if let Err(r) = c.push(chunk, &mut out) {
                refused = Some(r);
            }
        }
        assert_eq!(refused, c.cut.refused());
        (out, refused)
    }

    #[test]
    fn an_event_or_a_line_past_its_cap_is_refused_wherever_the_chunks_fall() {
        // An event of exactly the cap passes; one byte more is refused.
        let body: &[u8] = b"data: a\n\ndata: bbbb\n\ndata: c\n\n";
        let (events, refused) = cut_capped(&[body], 14, 100);
        assert_eq!((events.len(), refused), (3, None), "\"data: bbbb\\n\\n\" is 12 bytes");
        let (events, refused) = cut_capped(&[body], 11, 100);
        assert_eq!(refused, Some(CutRefusal::EventTooLarge));
        assert_eq!(events.len(), 1, "the events before the refused one are given");
        // A line: its end is not counted.
        let (_, refused) = cut_capped(&[body], 100, 10);
        assert_eq!(refused, None);
        let (events, refused) = cut_capped(&[body], 100, 9);
        assert_eq!((events.len(), refused), (1, Some(CutRefusal::LineTooLong)));
        for split in 0..=body.len() {
            for (max_event, max_line) in [(11, 100), (100, 9), (14, 10)] {
                let whole = cut_capped(&[body], max_event, max_line);
                assert_eq!(cut_capped(&[&body[..split], &body[split..]], max_event, max_line), whole, "split {split}");
            }
        }
        // An event that never ends is refused at the byte past the cap, and so is every later push.
        let mut c = EventCut::with_caps(1_000, 1_000_000);
        let mut out = Vec::new();
        let piece = [b'x'; 300];
        assert_eq!(c.push(b"data: ", &mut out), Ok(()));
        assert_eq!(c.push(&piece, &mut out), Ok(()));
        assert_eq!(c.push(&piece, &mut out), Ok(()));
        assert_eq!(c.push(&piece, &mut out), Ok(()));
        assert_eq!(c.push(&piece, &mut out), Err(CutRefusal::EventTooLarge));
        assert_eq!(c.pending, 1_000, "nothing past the cap is held");
        assert_eq!(c.push(b"\n\n", &mut out), Err(CutRefusal::EventTooLarge));
        assert!(out.is_empty());
        assert_eq!(CutRefusal::EventTooLarge.code(), "EVENT_TOO_LARGE");
        assert_eq!(CutRefusal::LineTooLong.code(), "LINE_TOO_LONG");
        assert_eq!(
            CutRefusal::LineTooLong.message(9.0).to_string(),
            "the event stream sent a line longer than 9 bytes (the cap set by maxLineBytes)"
        );
        assert_eq!(EventCut::new().max_event, MAX_EVENT_BYTES);
    }

    #[test]
    fn caps_are_whole_numbers_of_bytes() {
        assert_eq!(check_cap("options.maxEventBytes", 1.0), Ok(1));
        assert_eq!(check_cap("options.maxEventBytes", MAX_CAP_BYTES), Ok(MAX_CAP_BYTES as usize));
        for (value, code) in [
            (0.0, "OUT_OF_RANGE"),
            (-1.0, "OUT_OF_RANGE"),
            (1.5, "NOT_WHOLE"),
            (f64::NAN, "NOT_FINITE"),
            (MAX_CAP_BYTES + 1.0, "OUT_OF_RANGE"),
        ] {
            let e = check_cap("options.maxLineBytes", value).unwrap_err();
            assert_eq!(e.code(), code, "{value}");
            assert_eq!(e.param().as_deref(), Some("options.maxLineBytes"));
        }
    }

    #[test]
    fn nothing_delivered_is_retried_as_it_was() {
        for hook in [false, true] {
            for d in all_delivered().filter(|d| !d.content) {
                let mut r = Resume::new(hook);
                r.replayed();
                assert_eq!(r.after_failure(d, 120.0, None), (Next::Retry, 120.0), "{d:?}");
                assert_eq!(r.resumes(), 0);
            }
        }
    }

    #[test]
    fn after_content_never_restarts() {
        for hook in [false, true] {
            for ignored in [false, true] {
                for d in all_delivered().filter(|d| d.content) {
                    let mut r = Resume::new(hook);
                    if ignored {
                        r.replayed();
                    }
                    let (next, _) = r.after_failure(d, 50.0, None);
                    assert_ne!(next, Next::Retry, "{d:?} hook {hook} ignored {ignored}");
                    let by_id = d.event_stream && d.last_event_id && !d.unchecked && !ignored;
                    let expected = if by_id {
                        Next::LastEventId
                    } else if hook {
                        Next::Hook
                    } else {
                        Next::End
                    };
                    assert_eq!(next, expected, "{d:?} hook {hook} ignored {ignored}");
                }
            }
        }
    }

    #[test]
    fn an_upstream_that_replays_is_not_asked_by_id_again() {
        let mut r = Resume::new(true);
        assert_eq!(r.next(SSE_WITH_ID), Next::LastEventId);
        r.replayed();
        assert!(r.ignores_last_event_id());
        assert_eq!(r.next(SSE_WITH_ID), Next::Hook);
        let mut r = Resume::new(false);
        r.replayed();
        assert_eq!(r.next(SSE_WITH_ID), Next::End);
    }

    #[test]
    fn a_resume_by_id_that_cannot_be_checked_is_not_made() {
        let unchecked = Delivered { unchecked: true, ..SSE_WITH_ID };
        assert_eq!(Resume::new(true).next(unchecked), Next::Hook);
        assert_eq!(Resume::new(false).next(unchecked), Next::End);
        assert_eq!(Resume::new(false).next(SSE_WITH_ID), Next::LastEventId);
    }

    #[test]
    fn the_first_resume_waits_only_for_the_server() {
        let mut r = Resume::new(true);
        assert_eq!(r.after_failure(SSE_WITH_ID, 200.0, None), (Next::LastEventId, 0.0));
        assert_eq!(r.after_failure(SSE_WITH_ID, 200.0, None), (Next::LastEventId, 200.0));
        let mut r = Resume::new(true);
        let plain = Delivered { content: true, ..Delivered::default() };
        // A server's wait is kept (the retry loop's delay already holds it).
        assert_eq!(r.after_failure(plain, 1_500.0, Some(1_500.0)), (Next::Hook, 1_500.0));
        assert_eq!(r.resumes(), 1);
        // Never negative or NaN.
        let mut r = Resume::new(false);
        assert_eq!(r.after_failure(Delivered::default(), f64::NAN, None), (Next::Retry, 0.0));
    }

    #[test]
    fn flags_round_trip() {
        for bits in 0..64u32 {
            let d = Delivered::from_flags(bits);
            let r = Resume::from_flags(bits, 2);
            assert_eq!(d.content, bits & flags::CONTENT != 0);
            assert_eq!(d.event_stream, bits & flags::EVENT_STREAM != 0);
            assert_eq!(d.last_event_id, bits & flags::LAST_EVENT_ID != 0);
            assert_eq!(d.unchecked, bits & flags::UNCHECKED != 0);
            assert_eq!(r.ignores_last_event_id(), bits & flags::IGNORED != 0);
            assert_eq!(r.resumes(), 2);
            assert_eq!(
                r.next(d) == Next::Hook,
                d.content
                    && bits & flags::HOOK != 0
                    && !(d.event_stream
                        && d.last_event_id
                        && bits & flags::IGNORED == 0
                        && bits & flags::UNCHECKED == 0)
            );
        }
    }
}
