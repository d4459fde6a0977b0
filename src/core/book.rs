//! A timeout book: latencies recorded where the work happens, flushed as
//! bytes to one aggregator, and the fleet's derived timeouts served back.
//!
//! # Why
//! A Worker runs in many isolates, each of which sees a sliver of the
//! traffic and forgets it at eviction. Each isolate records into per-bucket
//! [`LatencySketch`]es (only successes: a timed-out call has no latency,
//! only a lower bound), counts its timeouts and errors apart (the censoring
//! guard needs them), and now and then *flushes* what it recorded since the
//! last flush to an aggregator, which merges the sketches exactly (sketches
//! add) and derives one table for the fleet.
//!
//! # The flush bytes
//! The bytes cross from isolates to the aggregator, so the aggregator reads
//! bytes it did not write, possibly from another version, possibly hostile.
//! [`FlushBatch::from_bytes`] checks every field and every cap before it
//! allocates for it, never panics, and refuses trailing bytes. Layout,
//! little-endian:
//! ```text
//! "EDTB"            4 bytes, magic
//! version           u8 (1)
//! relative error    f64, every sketch's
//! bucket count      u32, at most MAX_BUCKETS
//! per bucket:
//!   name length     u16, 1 ..= MAX_NAME_BYTES
//!   name            UTF-8
//!   in force ms     f64, the timeout in force when recorded, 0 < v ≤ 2^53 − 1; NaN = absent
//!   timeouts        u64, at most MAX_COUNT
//!   errors          u64, at most MAX_COUNT
//!   sketch length   u32 (0 = no successes)
//!   sketch          LatencySketch::to_bytes
//! ```
//! A batch is at most [`MAX_FLUSH_BYTES`] (256 KiB): 1 024 buckets of
//! sketches of 1 ms … 1 h (under 2 KB each at 1%) fit in about 2 MB, so a
//! batch that large is the caller's sign to flush more often or keep fewer
//! buckets, and an aggregator never reads more than that per request.
//!
//! # Invariants (tested in `book/tests.rs`)
//! 1. `from_bytes(to_bytes(b))` equals `b` (names, counts, in-force values
//!    bit for bit, sketches answering alike).
//! 2. `from_bytes` of any byte string returns `Ok` or `Err`, never panics,
//!    and allocates at most what the input's length justifies.
//! 3. A decoded batch satisfies every cap: at most [`MAX_BUCKETS`] buckets,
//!    distinct names of 1 ..= [`MAX_NAME_BYTES`] bytes of UTF-8, counts at
//!    most [`MAX_COUNT`], an in-force value [`valid_in_force`] (or absent),
//!    every sketch valid and of the batch's relative error.

use crate::core::deadline::check_ms;
use crate::core::error::{Described, Message};
use crate::core::sketch::{BytesError, LatencySketch, MAX_COUNT, MAX_RELATIVE_ERROR, MIN_RELATIVE_ERROR};

mod serve;
pub use serve::{
    check_bucket, check_option, msg as serve_msg, names_held, warning, Schedule, ServeError, ServeOptions, TableRow,
    MAX_SERVED_MS, MAX_STEP_FACTOR, REFRESH_LEASE_MS,
};

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;

/// The first four bytes of every flush.
pub const MAGIC: [u8; 4] = *b"EDTB";
/// The flush format version [`FlushBatch::to_bytes`] writes and the newest
/// [`FlushBatch::from_bytes`] reads.
pub const VERSION: u8 = 1;
/// The most bytes a flush may have: 256 KiB.
pub const MAX_FLUSH_BYTES: usize = 256 * 1024;
/// The most buckets a flush may carry.
pub const MAX_BUCKETS: usize = 1024;
/// The longest bucket name, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 256;

/// One bucket of a flush: what an isolate recorded for it since its last flush.
#[derive(Debug, Clone)]
pub struct FlushBucket {
    /// The bucket's name (1 ..= [`MAX_NAME_BYTES`] bytes of UTF-8).
    pub name: String,
    /// The timeout in force while these were recorded, when the isolate knew it.
    pub in_force_ms: Option<f64>,
    /// Calls that timed out: no latency, only a lower bound (the in-force timeout).
    pub timeouts: u64,
    /// Calls that failed otherwise: not latencies of the upstream's work.
    pub errors: u64,
    /// The latencies of the calls that succeeded.
    pub successes: LatencySketch,
}

/// What isolates send to the aggregator: buckets recorded since the last flush.
#[derive(Debug, Clone)]
pub struct FlushBatch {
    /// Every sketch's relative error.
    pub relative_error: f64,
    /// The buckets, at most [`MAX_BUCKETS`], names distinct.
    pub buckets: Vec<FlushBucket>,
}

/// Why bytes are not a flush (or a flush could not be written).
#[derive(Debug, Clone, PartialEq)]
pub enum BookError {
    /// It does not start with the flush format's magic bytes.
    Foreign,
    /// Written by a newer format version than this package reads.
    Version {
        /// The version the bytes declare.
        found: u8,
    },
    /// Longer than [`MAX_FLUSH_BYTES`].
    TooLarge {
        /// The length in bytes.
        len: usize,
    },
    /// It ends before `field` is complete.
    Truncated {
        /// The field being read when the bytes ran out.
        field: &'static str,
    },
    /// A field holds a value no flush can have; `detail` (a [`msg`] template) says which.
    Invalid {
        /// The bucket's position, from 0; `None` for the batch's own fields.
        bucket: Option<usize>,
        /// The field's name (`relativeError`, `name`, `timeouts`, …).
        field: &'static str,
        /// What is wrong with it.
        detail: Message,
    },
    /// A bucket's sketch has another relative error than the batch: merging
    /// it would be wrong.
    Mismatch {
        /// The bucket's position, from 0.
        bucket: usize,
        /// The batch's relative error.
        ours: f64,
        /// The sketch's.
        theirs: f64,
    },
    /// A bucket's sketch bytes are not a sketch.
    Sketch {
        /// The bucket's position, from 0.
        bucket: usize,
        /// Why.
        error: BytesError,
    },
    /// Bytes left over after the last bucket.
    Trailing {
        /// How many bytes are left over.
        extra: usize,
    },
}

/// The book's message templates.
pub mod msg {
    crate::templates! { "book";
        /// Every refusal of flush bytes: `reason` is one of the next ones.
        NOT_A_FLUSH = "'bytes' is not a valid timeout book flush: {reason}";
        /// [`BookError::Foreign`](super::BookError::Foreign).
        FOREIGN = "it does not start with the flush format's magic bytes (send what a TimeoutBook's flush produced)";
        /// [`BookError::Version`](super::BookError::Version).
        VERSION = "format version {found} is newer than this package reads ({version}); upgrade edge-deadline where the flushes are merged";
        /// [`BookError::TooLarge`](super::BookError::TooLarge).
        TOO_LARGE = "it is {len} bytes, more than {max}: flush more often or keep fewer buckets";
        /// [`BookError::Truncated`](super::BookError::Truncated).
        TRUNCATED = "it ends inside '{field}' (truncated copy?)";
        /// [`BookError::Invalid`](super::BookError::Invalid) of a batch field.
        INVALID = "'{field}' {detail}";
        /// [`BookError::Invalid`](super::BookError::Invalid) of a bucket's field.
        INVALID_BUCKET = "bucket {bucket}: '{field}' {detail}";
        /// [`BookError::Mismatch`](super::BookError::Mismatch).
        MISMATCH = "bucket {bucket}: its sketch has relative error {theirs}, the batch {ours}: every sketch of a flush has the batch's relative error";
        /// [`BookError::Sketch`](super::BookError::Sketch).
        SKETCH = "bucket {bucket}: {error}";
        /// [`BookError::Trailing`](super::BookError::Trailing).
        TRAILING = "{extra} byte(s) follow the last bucket";
        /// Detail of `version`: 0.
        OLD_VERSION = "is {version}; versions start at 1";
        /// Detail of `relativeError`.
        RELATIVE_ERROR = "is {value}, outside {min} … {max}";
        /// Detail of `buckets`: too many.
        BUCKETS = "is {count}, more than {max}";
        /// Detail of `name`: empty or too long.
        NAME_LENGTH = "is {len} bytes long: a bucket name has 1 … {max}";
        /// Detail of `name`: not UTF-8.
        NAME_UTF8 = "is not UTF-8";
        /// Detail of `name`: a name seen before.
        NAME_DUPLICATE = "repeats bucket {first}'s name";
        /// Detail of `inForceMs`: neither absent (NaN) nor a duration above 0.
        IN_FORCE = "is {value}: a timeout in force is above 0 and at most 9007199254740991 ms";
        /// Detail of a count: above 2^53 − 1.
        COUNT = "is {value}, more than {max}";
    }
}

crate::described_error!(BookError);

impl Described for BookError {
    fn code(&self) -> &'static str {
        match self {
            Self::Foreign => "FOREIGN_BYTES",
            Self::Version { .. } => "NEWER_VERSION",
            Self::TooLarge { .. } => "TOO_LARGE",
            Self::Truncated { .. } => "TRUNCATED_BYTES",
            Self::Invalid { .. } => "CORRUPT_BYTES",
            Self::Mismatch { .. } => "RELATIVE_ERROR_MISMATCH",
            Self::Sketch { error, .. } => error.code(),
            Self::Trailing { .. } => "TRAILING_BYTES",
        }
    }

    fn param(&self) -> Option<String> {
        Some("bytes".into())
    }

    fn message(&self) -> Message {
        let reason = match self {
            Self::Foreign => Message::new(msg::FOREIGN),
            Self::Version { found } => {
                Message::new(msg::VERSION).arg("found", f64::from(*found)).arg("version", f64::from(VERSION))
            }
            Self::TooLarge { len } => Message::new(msg::TOO_LARGE).arg("len", *len).arg("max", MAX_FLUSH_BYTES),
            Self::Truncated { field } => Message::new(msg::TRUNCATED).arg("field", *field),
            Self::Invalid { bucket: None, field, detail } => {
                Message::new(msg::INVALID).arg("field", *field).arg("detail", detail.clone())
            }
            Self::Invalid { bucket: Some(i), field, detail } => {
                Message::new(msg::INVALID_BUCKET).arg("bucket", *i).arg("field", *field).arg("detail", detail.clone())
            }
            Self::Mismatch { bucket, ours, theirs } => {
                Message::new(msg::MISMATCH).arg("bucket", *bucket).arg("ours", *ours).arg("theirs", *theirs)
            }
            Self::Sketch { bucket, error } => {
                Message::new(msg::SKETCH).arg("bucket", *bucket).arg("error", error.message())
            }
            Self::Trailing { extra } => Message::new(msg::TRAILING).arg("extra", *extra),
        };
        Message::new(msg::NOT_A_FLUSH).arg("reason", reason)
    }
}

fn invalid(bucket: Option<usize>, field: &'static str, detail: Message) -> BookError {
    BookError::Invalid { bucket, field, detail }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BookError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(BookError::Truncated { field })?;
        let out = self.bytes.get(self.at..end).ok_or(BookError::Truncated { field })?;
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], BookError> {
        let mut b = [0u8; N];
        b.copy_from_slice(self.take(N, field)?);
        Ok(b)
    }

    fn f64(&mut self, field: &'static str) -> Result<f64, BookError> {
        Ok(f64::from_le_bytes(self.array(field)?))
    }

    fn count(&mut self, bucket: usize, field: &'static str) -> Result<u64, BookError> {
        let v = u64::from_le_bytes(self.array(field)?);
        if v > MAX_COUNT {
            let detail = Message::new(msg::COUNT).arg("value", v as f64).arg("max", MAX_COUNT as f64);
            return Err(invalid(Some(bucket), field, detail));
        }
        Ok(v)
    }
}

/// Whether `v` may be an in-force timeout: above 0 and a duration the
/// derivation takes (`check_ms`: at most 2^53 − 1 ms). The one rule for what
/// a flush may carry there: the flush reader, the stored-window reader
/// (`fleet`) and the writers (which write NaN, absent, for anything else)
/// all call it, so a flush accepted is a window that reads back and derives.
pub fn valid_in_force(v: f64) -> bool {
    v > 0.0 && check_ms("inForceMs", v).is_ok()
}

impl FlushBatch {
    /// An empty batch of sketches of `relative_error`.
    pub fn new(relative_error: f64) -> Self {
        Self { relative_error, buckets: Vec::new() }
    }

    /// The batch in the layout of this module's docs. Writes what it holds:
    /// [`FlushBatch::from_bytes`] refuses a batch past a cap (more than
    /// [`MAX_BUCKETS`] buckets, a bad name, more than [`MAX_FLUSH_BYTES`]);
    /// a book keeps within them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(17 + self.buckets.len() * 64);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.relative_error.to_le_bytes());
        out.extend_from_slice(&(self.buckets.len() as u32).to_le_bytes());
        for b in &self.buckets {
            out.extend_from_slice(&(b.name.len() as u16).to_le_bytes());
            out.extend_from_slice(b.name.as_bytes());
            out.extend_from_slice(&b.in_force_ms.unwrap_or(f64::NAN).to_le_bytes());
            out.extend_from_slice(&b.timeouts.to_le_bytes());
            out.extend_from_slice(&b.errors.to_le_bytes());
            if b.successes.is_empty() {
                out.extend_from_slice(&0u32.to_le_bytes());
            } else {
                let sketch = b.successes.to_bytes();
                out.extend_from_slice(&(sketch.len() as u32).to_le_bytes());
                out.extend_from_slice(&sketch);
            }
        }
        out
    }

    /// Reads what [`FlushBatch::to_bytes`] wrote, checking every field and
    /// cap (invariants 2 and 3).
    pub fn from_bytes(bytes: &[u8]) -> Result<FlushBatch, BookError> {
        if bytes.len() > MAX_FLUSH_BYTES {
            return Err(BookError::TooLarge { len: bytes.len() });
        }
        if bytes.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Err(BookError::Foreign);
        }
        let mut r = Reader { bytes, at: MAGIC.len() };
        let [version] = r.array("version")?;
        if version != VERSION {
            return Err(if version > VERSION {
                BookError::Version { found: version }
            } else {
                invalid(None, "version", Message::new(msg::OLD_VERSION).arg("version", f64::from(version)))
            });
        }
        let alpha = r.f64("relativeError")?;
        if !(MIN_RELATIVE_ERROR..=MAX_RELATIVE_ERROR).contains(&alpha) {
            let detail = Message::new(msg::RELATIVE_ERROR).arg("value", alpha);
            return Err(invalid(
                None,
                "relativeError",
                detail.arg("min", MIN_RELATIVE_ERROR).arg("max", MAX_RELATIVE_ERROR),
            ));
        }
        let n = u32::from_le_bytes(r.array("buckets")?) as usize;
        if n > MAX_BUCKETS {
            let detail = Message::new(msg::BUCKETS).arg("count", n).arg("max", MAX_BUCKETS);
            return Err(invalid(None, "buckets", detail));
        }
        // Every bucket takes at least 31 bytes: a count the rest cannot hold
        // is refused before anything is allocated for it.
        if n.saturating_mul(31) > bytes.len() - r.at {
            return Err(BookError::Truncated { field: "buckets" });
        }
        let mut buckets: Vec<FlushBucket> = Vec::with_capacity(n);
        for i in 0..n {
            let len = u16::from_le_bytes(r.array("name")?) as usize;
            if !(1..=MAX_NAME_BYTES).contains(&len) {
                let detail = Message::new(msg::NAME_LENGTH).arg("len", len).arg("max", MAX_NAME_BYTES);
                return Err(invalid(Some(i), "name", detail));
            }
            let name = std::str::from_utf8(r.take(len, "name")?)
                .map_err(|_| invalid(Some(i), "name", Message::new(msg::NAME_UTF8)))?;
            if let Some(first) = buckets.iter().position(|b| b.name == name) {
                return Err(invalid(Some(i), "name", Message::new(msg::NAME_DUPLICATE).arg("first", first)));
            }
            let in_force = r.f64("inForceMs")?;
            let in_force_ms = if in_force.is_nan() {
                None
            } else if valid_in_force(in_force) {
                Some(in_force)
            } else {
                return Err(invalid(Some(i), "inForceMs", Message::new(msg::IN_FORCE).arg("value", in_force)));
            };
            let timeouts = r.count(i, "timeouts")?;
            let errors = r.count(i, "errors")?;
            let len = u32::from_le_bytes(r.array("sketch")?) as usize;
            let successes = if len == 0 {
                LatencySketch::new(alpha).map_err(|_| BookError::Foreign)?
            } else {
                let s = LatencySketch::from_bytes(r.take(len, "sketch")?)
                    .map_err(|error| BookError::Sketch { bucket: i, error })?;
                if s.relative_error().to_bits() != alpha.to_bits() {
                    return Err(BookError::Mismatch { bucket: i, ours: alpha, theirs: s.relative_error() });
                }
                s
            };
            buckets.push(FlushBucket { name: name.into(), in_force_ms, timeouts, errors, successes });
        }
        if r.at != bytes.len() {
            return Err(BookError::Trailing { extra: bytes.len() - r.at });
        }
        Ok(FlushBatch { relative_error: alpha, buckets })
    }
}
