//! The reader of stored windows' bytes: the same field encodings as a
//! flush's (`crate::core::book`), checked the same way; nothing panics.

use crate::core::sketch::{LatencySketch, MAX_COUNT};

use crate::core::book::{valid_in_force, MAX_NAME_BYTES};

/// Why bytes are not a stored window: the field and what is wrong, for the message.
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

/// An optional timeout (NaN = absent): [`valid_in_force`], as in a flush.
pub(crate) fn in_force(v: f64, field: &'static str) -> Result<Option<f64>, FlushRefusal> {
    if v.is_nan() {
        return Ok(None);
    }
    if !valid_in_force(v) {
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
