//! The flush bytes an isolate sends to the aggregator, decoded (the
//! layout is the fleet's wire contract; the isolate side writes it).
//!
//! Little-endian: `b"EDTB"`, u8 version 1, f64 relative error, u32 bucket
//! count; per bucket: u16 name length, the name (UTF-8), f64 in-force timeout
//! (NaN = absent), u64 timeouts, u64 errors, u32 sketch length, the sketch's
//! own bytes (length 0 = no successes). Everything is checked; nothing
//! panics; trailing bytes are refused.

use crate::core::deadline::MAX_MS;
use crate::core::sketch::{LatencySketch, MAX_COUNT};

/// The first four bytes of a flush.
pub const FLUSH_MAGIC: [u8; 4] = *b"EDTB";
/// The flush format version read here.
pub const FLUSH_VERSION: u8 = 1;
/// The most bytes one flush may have.
pub const MAX_FLUSH_BYTES: usize = 256 * 1024;
/// The most buckets one flush may carry.
pub const MAX_FLUSH_BUCKETS: usize = 1024;
/// The longest bucket name, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 256;

/// One bucket of a flush.
#[derive(Debug, Clone)]
pub struct FlushBucket {
    /// The bucket's name.
    pub name: String,
    /// The timeout the isolate served for it, when it had one.
    pub in_force_ms: Option<f64>,
    /// Calls that timed out since the last flush.
    pub timeouts: u64,
    /// Calls that failed otherwise.
    pub errors: u64,
    /// Durations of the successes.
    pub successes: LatencySketch,
}

/// One flush: every bucket's news since the isolate's last flush.
#[derive(Debug, Clone)]
pub struct FlushBatch {
    /// The relative error of every sketch in it.
    pub relative_error: f64,
    /// The buckets, as sent.
    pub buckets: Vec<FlushBucket>,
}

/// Why bytes are not a flush: the field and what is wrong, for the message.
#[derive(Debug, Clone, PartialEq)]
pub struct FlushRefusal {
    /// The field being read.
    pub field: &'static str,
    /// What is wrong with it (`truncated`, `not a sketch: …`).
    pub detail: String,
}

pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], FlushRefusal> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        match end {
            Some(e) => {
                let s = self.b.get(self.at..e).unwrap_or_default();
                self.at = e;
                Ok(s)
            }
            None => Err(FlushRefusal { field, detail: "ends here (truncated?)".into() }),
        }
    }
    pub(crate) fn arr<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], FlushRefusal> {
        let s = self.take(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    pub(crate) fn u8(&mut self, f: &'static str) -> Result<u8, FlushRefusal> {
        Ok(self.arr::<1>(f)?[0])
    }
    pub(crate) fn u16(&mut self, f: &'static str) -> Result<u16, FlushRefusal> {
        Ok(u16::from_le_bytes(self.arr(f)?))
    }
    pub(crate) fn u32(&mut self, f: &'static str) -> Result<u32, FlushRefusal> {
        Ok(u32::from_le_bytes(self.arr(f)?))
    }
    pub(crate) fn u64(&mut self, f: &'static str) -> Result<u64, FlushRefusal> {
        Ok(u64::from_le_bytes(self.arr(f)?))
    }
    pub(crate) fn f64(&mut self, f: &'static str) -> Result<f64, FlushRefusal> {
        Ok(f64::from_le_bytes(self.arr(f)?))
    }
}

pub(crate) fn bad(field: &'static str, detail: impl Into<String>) -> FlushRefusal {
    FlushRefusal { field, detail: detail.into() }
}

/// A count field: at most 2^53 − 1.
pub(crate) fn count(v: u64, field: &'static str) -> Result<u64, FlushRefusal> {
    if v > MAX_COUNT {
        return Err(bad(field, format!("is {v}, above 2^53 - 1")));
    }
    Ok(v)
}

/// An optional timeout (NaN = absent): finite, > 0 and at most the largest duration.
pub(crate) fn in_force(v: f64, field: &'static str) -> Result<Option<f64>, FlushRefusal> {
    if v.is_nan() {
        return Ok(None);
    }
    if !(v > 0.0 && v <= MAX_MS) {
        return Err(bad(field, "is not a timeout in ms (finite, greater than 0)"));
    }
    Ok(Some(v))
}

/// A bucket name: 1 to [`MAX_NAME_BYTES`] bytes of UTF-8.
pub(crate) fn name(r: &mut Reader<'_>) -> Result<String, FlushRefusal> {
    let len = r.u16("name length")? as usize;
    if len == 0 || len > MAX_NAME_BYTES {
        return Err(bad("name length", format!("is {len}, not 1 … {MAX_NAME_BYTES}")));
    }
    let raw = r.take(len, "name")?;
    core::str::from_utf8(raw).map(str::to_owned).map_err(|_| bad("name", "is not UTF-8"))
}

/// A sketch of `relative_error` behind a u32 length (0 = empty).
pub(crate) fn sketch(r: &mut Reader<'_>, relative_error: f64) -> Result<LatencySketch, FlushRefusal> {
    let len = r.u32("sketch length")? as usize;
    if len == 0 {
        return LatencySketch::new(relative_error).map_err(|e| bad("relative error", e.to_string()));
    }
    let raw = r.take(len, "sketch")?;
    let s = LatencySketch::from_bytes(raw).map_err(|e| bad("sketch", e.to_string()))?;
    if s.relative_error().to_bits() != relative_error.to_bits() {
        return Err(bad("sketch", "has another relative error than its batch"));
    }
    Ok(s)
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Reader { b, at: 0 }
    }
    pub(crate) fn rest(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }
}

pub(crate) use Reader as ByteReader;

impl FlushBatch {
    /// Decodes and checks a whole flush; trailing bytes are refused.
    pub fn from_bytes(bytes: &[u8]) -> Result<FlushBatch, FlushRefusal> {
        if bytes.len() > MAX_FLUSH_BYTES {
            return Err(bad("bytes", format!("are {} bytes, above {MAX_FLUSH_BYTES}", bytes.len())));
        }
        let mut r = Reader::new(bytes);
        if r.arr::<4>("magic")? != FLUSH_MAGIC {
            return Err(bad("magic", "is not a flush's (pass the isolate's flush bytes)"));
        }
        let v = r.u8("version")?;
        if v != FLUSH_VERSION {
            return Err(bad("version", format!("is {v}; this aggregator reads {FLUSH_VERSION}")));
        }
        let relative_error = r.f64("relative error")?;
        LatencySketch::new(relative_error).map_err(|e| bad("relative error", e.to_string()))?;
        let n = r.u32("bucket count")? as usize;
        if n > MAX_FLUSH_BUCKETS {
            return Err(bad("bucket count", format!("is {n}, above {MAX_FLUSH_BUCKETS}")));
        }
        let mut buckets: Vec<FlushBucket> = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let name = name(&mut r)?;
            if buckets.iter().any(|b| b.name == name) {
                return Err(bad("name", format!("'{name}' appears twice")));
            }
            let in_force_ms = in_force(r.f64("in-force timeout")?, "in-force timeout")?;
            let timeouts = count(r.u64("timeouts")?, "timeouts")?;
            let errors = count(r.u64("errors")?, "errors")?;
            let successes = sketch(&mut r, relative_error)?;
            buckets.push(FlushBucket { name, in_force_ms, timeouts, errors, successes });
        }
        if r.rest() > 0 {
            return Err(bad("bytes", format!("{} byte(s) follow the last bucket", r.rest())));
        }
        Ok(FlushBatch { relative_error, buckets })
    }

    /// The wire form [`FlushBatch::from_bytes`] reads (for tests and benches
    /// of the aggregator; isolates write it with their own book).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&FLUSH_MAGIC);
        out.push(FLUSH_VERSION);
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
                let s = b.successes.to_bytes();
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(&s);
            }
        }
        out
    }
}
