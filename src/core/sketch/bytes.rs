//! The wire form of a [`LatencySketch`]: how sketches recorded in many
//! isolates (Workers, browser tabs, servers) reach one place to be merged.
//!
//! # Why a binary format of our own
//! A sketch is mostly a run of small counters over a contiguous key range, so
//! LEB128 varints make it compact (1 ms … 1 h at 1% is under 2 KB); JSON of
//! the same counters would be several times larger and slower to parse. The
//! buffer is read by code that did not write it, possibly a later version,
//! so it starts with a magic word and a version, and every field is checked
//! on read: a corrupt, truncated or foreign buffer is a [`BytesError`] that
//! names the problem, never a panic or a sketch that breaks later.
//!
//! # Layout (version 1, little-endian)
//! ```text
//! "EDsk"            4 bytes, magic
//! version           1 byte (1)
//! flags             1 byte: bit 0 exact, bit 1 collapsed; other bits 0
//! relative error    f64
//! count             varint
//! if count > 0:     sum f64, min f64, max f64
//! if collapsed:     collapsed-below bound f64
//! if exact:         count × f64, the samples in increasing order
//! else:             zero count varint, first key zigzag varint,
//!                   number of keys varint, one counter varint per key
//! ```
//! An exact sketch (at most [`EXACT_LIMIT`] samples) stores its samples and
//! rebuilds its buckets from them, so the two can never disagree.
//!
//! # Invariants (tested below)
//! 1. `decode(encode(s))` answers every quantile, count, sum, min, max and
//!    `collapsed_below_ms` exactly as `s` does, and merges like `s`.
//! 2. `decode` of any byte string returns `Ok` or `Err`, never panics, and
//!    allocates at most what the input's length justifies.
//! 3. A decoded sketch satisfies every invariant of [`LatencySketch`]
//!    (counters add up to the count, keys within the range samples can
//!    reach, samples valid and sorted, at most [`MAX_BUCKETS`] counters),
//!    and nothing a later operation could not honour: the count is at most
//!    [`MAX_COUNT`] (so a merge of two cannot overflow, and is refused past
//!    the cap), and min, max and the zero count agree with the counters (min
//!    in the lowest non-empty bucket, or below it once collapsed; max in the
//!    highest; a zero count exactly when min is below 1 ns). Bucket
//!    membership allows a relative 10^-9 at the bucket's edges, so a sketch
//!    written by another build (whose `ln` may differ in the last bit) reads.

use super::{
    LatencySketch, EXACT_LIMIT, MAX_BUCKETS, MAX_COUNT, MAX_RELATIVE_ERROR, MIN_INDEXABLE_MS, MIN_RELATIVE_ERROR,
};
use crate::core::deadline::MAX_MS;
use crate::core::error::{Described, Message};

/// The first four bytes of every encoded sketch.
pub const MAGIC: [u8; 4] = *b"EDsk";
/// The format version [`LatencySketch::to_bytes`] writes and the newest
/// [`LatencySketch::from_bytes`] reads.
pub const VERSION: u8 = 1;

const EXACT: u8 = 1;
const COLLAPSED: u8 = 2;

/// Why a byte string is not a sketch.
#[derive(Debug, Clone, PartialEq)]
pub enum BytesError {
    /// It does not start with the magic word: not a sketch from `toBytes()`.
    Foreign,
    /// Written by a newer format version than this package reads.
    Version {
        /// The version the bytes declare.
        found: u8,
    },
    /// It ends before `field` is complete: a cut-off copy.
    Truncated {
        /// The field being read when the bytes ran out.
        field: &'static str,
    },
    /// `field` holds a value no sketch can have; `detail` (a [`msg`]
    /// template) says which.
    Invalid {
        /// The field's name (`count`, `min`, `keys`, …).
        field: &'static str,
        /// What is wrong with it.
        detail: Message,
    },
    /// Bytes left over after the sketch: two buffers run together, or padding.
    Trailing {
        /// How many bytes are left over.
        extra: usize,
    },
}

/// The wire form's message templates: the refusal, and the details of an
/// invalid field (each follows the field's name).
pub mod msg {
    crate::templates! { "sketch.bytes";
        /// Every refusal: `reason` is one of the next five.
        NOT_A_SKETCH = "'bytes' is not a valid LatencySketch: {reason}";
        /// [`BytesError::Foreign`](super::BytesError::Foreign).
        FOREIGN = "it does not start with the sketch format's magic bytes (pass what toBytes() returned)";
        /// [`BytesError::Version`](super::BytesError::Version); `version` is the newest this package reads.
        VERSION = "format version {found} is newer than this package reads ({version}); upgrade edge-deadline where the sketches are merged";
        /// [`BytesError::Truncated`](super::BytesError::Truncated).
        TRUNCATED = "it ends inside '{field}' (truncated copy?)";
        /// [`BytesError::Invalid`](super::BytesError::Invalid); `detail` is one of the templates below.
        INVALID = "'{field}' {detail} (corrupted?)";
        /// [`BytesError::Trailing`](super::BytesError::Trailing).
        TRAILING = "{extra} byte(s) follow the end of the sketch";
        /// Detail: a field read as a duration in ms (`min`, `max`, a sample) that is not one.
        NOT_DURATION = "is {value}, not a duration in ms";
        /// Detail: a varint longer than 64 bits.
        OVERFLOWS = "overflows 64 bits";
        /// Detail of `version`: 0.
        OLD_VERSION = "is {version}; versions start at 1";
        /// Detail of `flags`: bits this version does not define.
        UNKNOWN_FLAGS = "has unknown bits {flags}";
        /// Detail of `relativeError`: out of the accepted range.
        RELATIVE_ERROR = "is {value}, outside {min} … {max}";
        /// Detail of `sum`: not a finite sum of durations.
        SUM = "is {value}, not a finite sum of durations";
        /// Detail of `min`: above `max`.
        MIN_ABOVE_MAX = "is {min}, above max {max}";
        /// Detail of `count`: more samples than an exact sketch keeps.
        EXACT_COUNT = "is {count}, too many for an exact sketch ({limit} at most)";
        /// Detail of an exact sketch's `samples`: out of order or outside min … max.
        UNSORTED = "are not sorted within min … max at {value}";
        /// Detail of `min`: min and max differ from the smallest and largest sample.
        MIN_MAX = "and max differ from the samples";
        /// Detail of `count`: a non-exact sketch small enough to be exact.
        SMALL_COUNT = "is {count}: a sketch this small is always exact";
        /// Detail of `firstKey`: out of range.
        OUT_OF_RANGE = "is out of range";
        /// Detail of `keys`: more buckets than a sketch has.
        KEYS = "is {count}, more than {max}";
        /// Detail of `firstKey`: buckets no duration maps to.
        KEY_RANGE = "{first} … {last} lies outside the keys durations reach";
        /// Detail of `counters`: their sum overflows 64 bits.
        COUNTERS_OVERFLOW = "overflow 64 bits";
        /// Detail of `counters`: their sum is not the count.
        COUNTERS = "add up to {total}, not the count {count}";
        /// Detail of `count`: above what a sketch counts.
        TOO_MANY = "is {count}, more than a sketch counts ({max}): two such sketches could not merge";
        /// Detail of `zeroCount`: it contradicts `min` (a zero count exactly when
        /// min is below 1 ns).
        ZEROS = "is {zeros}, but min is {min}: the zero count is the samples below 1 ns";
        /// Detail of `max`: at or above 1 ns although every sample is a zero.
        ONLY_ZEROS = "is {max}, but every sample is in the zero count (below 1 ns)";
        /// Detail of `min` or `max`: outside the lowest or highest non-empty bucket.
        BUCKET = "is {value}, outside the {end} non-empty bucket ({lo} … {hi} ms)";
    }
}

crate::described_error!(BytesError);

impl Described for BytesError {
    fn code(&self) -> &'static str {
        match self {
            Self::Foreign => "FOREIGN_BYTES",
            Self::Version { .. } => "NEWER_VERSION",
            Self::Truncated { .. } => "TRUNCATED_BYTES",
            Self::Invalid { .. } => "CORRUPT_BYTES",
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
            Self::Truncated { field } => Message::new(msg::TRUNCATED).arg("field", *field),
            Self::Invalid { field, detail } => {
                Message::new(msg::INVALID).arg("field", *field).arg("detail", detail.clone())
            }
            Self::Trailing { extra } => Message::new(msg::TRAILING).arg("extra", *extra),
        };
        Message::new(msg::NOT_A_SKETCH).arg("reason", reason)
    }
}

fn invalid(field: &'static str, detail: Message) -> BytesError {
    BytesError::Invalid { field, detail }
}

/// `0x04`: a byte as `{:#04x}` prints it, without the formatting machinery.
fn hex(b: u8) -> String {
    let digit = |n: u8| char::from(if n < 10 { b'0' + n } else { b'a' + n - 10 });
    ['0', 'x', digit(b >> 4), digit(b & 15)].iter().collect()
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&[u8], BytesError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(BytesError::Truncated { field })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self, field: &'static str) -> Result<u8, BytesError> {
        Ok(self.take(1, field)?[0])
    }

    fn f64(&mut self, field: &'static str) -> Result<f64, BytesError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8, field)?);
        Ok(f64::from_le_bytes(b))
    }

    /// A duration field: finite, `0 ..= MAX_MS`.
    fn ms(&mut self, field: &'static str) -> Result<f64, BytesError> {
        let v = self.f64(field)?;
        if !(0.0..=MAX_MS).contains(&v) {
            return Err(invalid(field, Message::new(msg::NOT_DURATION).arg("value", v)));
        }
        Ok(v + 0.0)
    }

    fn varint(&mut self, field: &'static str) -> Result<u64, BytesError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte(field)?;
            let bits = u64::from(b & 0x7F);
            if shift == 63 && bits > 1 {
                return Err(invalid(field, Message::new(msg::OVERFLOWS)));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(invalid(field, Message::new(msg::OVERFLOWS)))
    }
}

impl LatencySketch {
    /// The sketch in the versioned binary form described in this module;
    /// [`LatencySketch::from_bytes`] reads it back, in any later version too.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.counts.len() * 2);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        let flags =
            if self.exact.is_some() { EXACT } else { 0 } | if self.collapsed_below.is_some() { COLLAPSED } else { 0 };
        out.push(flags);
        out.extend_from_slice(&self.alpha.to_le_bytes());
        put_varint(&mut out, self.count);
        if self.count > 0 {
            for v in [self.sum, self.min, self.max] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        if let Some(bound) = self.collapsed_below {
            out.extend_from_slice(&bound.to_le_bytes());
        }
        if let Some(exact) = &self.exact {
            for v in exact {
                out.extend_from_slice(&v.to_le_bytes());
            }
            return out;
        }
        put_varint(&mut out, self.zero_count);
        // Zigzag: keys are negative below 1 ms.
        put_varint(&mut out, ((self.offset << 1) ^ (self.offset >> 31)) as u32 as u64);
        put_varint(&mut out, self.counts.len() as u64);
        for &c in &self.counts {
            put_varint(&mut out, c);
        }
        out
    }

    /// Whether `x` lies in bucket `key`, allowing 10^-9 of `x` at the edges.
    fn near_key(&self, x: f64, key: i32) -> bool {
        self.key(x * (1.0 - 1e-9)) <= key && key <= self.key(x * (1.0 + 1e-9))
    }

    /// Refuses a min, max or zero count (already read into `self`) that the
    /// counters `counts` (from `self.offset`) contradict; see invariant 3.
    fn check_ends(&self, counts: &[u64], (min, max): (f64, f64), collapsed: bool) -> Result<(), BytesError> {
        let zeros = self.zero_count;
        if (zeros > 0) != (min < MIN_INDEXABLE_MS) {
            let detail = Message::new(msg::ZEROS).arg("zeros", zeros as f64).arg("min", min);
            return Err(invalid("zeroCount", detail));
        }
        let bucket = |field: &'static str, end: &'static str, value: f64, i: usize| {
            let key = self.offset + i as i32;
            let detail = Message::new(msg::BUCKET).arg("value", value).arg("end", end);
            invalid(field, detail.arg("lo", self.lower_of(key)).arg("hi", self.upper_of(key)))
        };
        let (Some(first), Some(last)) = (counts.iter().position(|&c| c > 0), counts.iter().rposition(|&c| c > 0))
        else {
            if max >= MIN_INDEXABLE_MS {
                return Err(invalid("max", Message::new(msg::ONLY_ZEROS).arg("max", max)));
            }
            return Ok(());
        };
        if max < MIN_INDEXABLE_MS || !self.near_key(max, self.offset + last as i32) {
            return Err(bucket("max", "highest", max, last));
        }
        if zeros == 0 {
            let key = self.offset + first as i32;
            // Collapsed: the lowest bucket also holds everything below it.
            let fits = if collapsed { self.key(min * (1.0 - 1e-9)) <= key } else { self.near_key(min, key) };
            if !fits {
                return Err(bucket("min", "lowest", min, first));
            }
        }
        Ok(())
    }

    /// Reads what [`LatencySketch::to_bytes`] wrote, checking every field.
    pub fn from_bytes(bytes: &[u8]) -> Result<LatencySketch, BytesError> {
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            return Err(BytesError::Foreign);
        }
        let mut r = Reader { bytes, at: MAGIC.len() };
        let version = r.byte("version")?;
        if version != VERSION {
            return Err(if version > VERSION {
                BytesError::Version { found: version }
            } else {
                invalid("version", Message::new(msg::OLD_VERSION).arg("version", f64::from(version)))
            });
        }
        let flags = r.byte("flags")?;
        if flags & !(EXACT | COLLAPSED) != 0 {
            return Err(invalid("flags", Message::new(msg::UNKNOWN_FLAGS).arg("flags", hex(flags))));
        }
        let alpha = r.f64("relativeError")?;
        let mut s = LatencySketch::new(alpha).map_err(|_| {
            let detail = Message::new(msg::RELATIVE_ERROR).arg("value", alpha);
            invalid("relativeError", detail.arg("min", MIN_RELATIVE_ERROR).arg("max", MAX_RELATIVE_ERROR))
        })?;
        let count = r.varint("count")?;
        if count > MAX_COUNT {
            let detail = Message::new(msg::TOO_MANY).arg("count", count as f64);
            return Err(invalid("count", detail.arg("max", MAX_COUNT as f64)));
        }
        let (sum, min, max) = if count > 0 {
            // Not a duration: the sum of many may pass MAX_MS.
            let sum = r.f64("sum")?;
            if !(sum.is_finite() && sum >= 0.0) {
                return Err(invalid("sum", Message::new(msg::SUM).arg("value", sum)));
            }
            let (min, max) = (r.ms("min")?, r.ms("max")?);
            if min > max {
                return Err(invalid("min", Message::new(msg::MIN_ABOVE_MAX).arg("min", min).arg("max", max)));
            }
            (sum, min, max)
        } else {
            (0.0, f64::INFINITY, 0.0)
        };
        let collapsed = if flags & COLLAPSED != 0 { Some(r.ms("collapsedBelow")?) } else { None };
        if flags & EXACT != 0 {
            if count > EXACT_LIMIT as u64 {
                let detail = Message::new(msg::EXACT_COUNT).arg("count", count as f64);
                return Err(invalid("count", detail.arg("limit", EXACT_LIMIT)));
            }
            // The samples are read into a buffer reserved once (no more than
            // the rest of the input can hold), not inserted one by one.
            let mut samples = Vec::with_capacity((count as usize).min((bytes.len() - r.at) / 8));
            let mut prev = min;
            for _ in 0..count {
                let v = r.ms("samples")?;
                if v < prev || v > max {
                    return Err(invalid("samples", Message::new(msg::UNSORTED).arg("value", v)));
                }
                prev = v;
                samples.push(v);
            }
            if let (Some(&lo), Some(&hi)) = (samples.first(), samples.last()) {
                if lo != min || hi != max {
                    return Err(invalid("min", Message::new(msg::MIN_MAX)));
                }
                s.fill_exact(samples, (min, max));
            }
        } else {
            if count <= EXACT_LIMIT as u64 {
                return Err(invalid("count", Message::new(msg::SMALL_COUNT).arg("count", count as f64)));
            }
            s.exact = None;
            s.zero_count = r.varint("zeroCount")?;
            let zig = r.varint("firstKey")?;
            let offset = u32::try_from(zig).map_err(|_| invalid("firstKey", Message::new(msg::OUT_OF_RANGE)))?;
            let offset = ((offset >> 1) as i32) ^ -((offset & 1) as i32);
            let len = r.varint("keys")?;
            // Every counter takes at least one byte: a length the rest of the
            // buffer cannot hold is refused before anything is allocated.
            if len > MAX_BUCKETS as u64 {
                return Err(invalid("keys", Message::new(msg::KEYS).arg("count", len as f64).arg("max", MAX_BUCKETS)));
            }
            if len > (bytes.len() - r.at) as u64 {
                return Err(BytesError::Truncated { field: "counters" });
            }
            let (lowest, highest) = (s.key(MIN_INDEXABLE_MS), s.key(MAX_MS));
            let last = i64::from(offset) + len as i64 - 1;
            if len > 0 && (i64::from(offset) < i64::from(lowest) || last > i64::from(highest)) {
                let detail = Message::new(msg::KEY_RANGE).arg("first", f64::from(offset)).arg("last", last as f64);
                return Err(invalid("firstKey", detail));
            }
            let mut counts = Vec::with_capacity(len as usize);
            let mut total = s.zero_count;
            for _ in 0..len {
                let c = r.varint("counters")?;
                total =
                    total.checked_add(c).ok_or_else(|| invalid("counters", Message::new(msg::COUNTERS_OVERFLOW)))?;
                counts.push(c);
            }
            if total != count {
                let detail = Message::new(msg::COUNTERS).arg("total", total as f64).arg("count", count as f64);
                return Err(invalid("counters", detail));
            }
            s.offset = offset;
            s.check_ends(&counts, (min, max), collapsed.is_some())?;
            s.counts = counts;
            s.count = count;
            (s.min, s.max) = (min, max);
        }
        s.sum = sum;
        s.collapsed_below = collapsed;
        if r.at != bytes.len() {
            return Err(BytesError::Trailing { extra: bytes.len() - r.at });
        }
        Ok(s)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::tests::Gen;
    use super::*;
    use proptest::prelude::*;

    const QS: [f64; 9] = [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];

    fn same(a: &LatencySketch, b: &LatencySketch) {
        assert_eq!(a.count(), b.count());
        assert_eq!(a.sum().to_bits(), b.sum().to_bits());
        assert_eq!(a.min(), b.min());
        assert_eq!(a.max(), b.max());
        assert_eq!(a.is_exact(), b.is_exact());
        assert_eq!(a.collapsed_below_ms(), b.collapsed_below_ms());
        assert_eq!(a.relative_error().to_bits(), b.relative_error().to_bits());
        for q in QS {
            assert_eq!(a.quantile(q).unwrap(), b.quantile(q).unwrap(), "q = {q}");
        }
        assert_eq!(a.bins(), b.bins());
    }

    fn round_trip(s: &LatencySketch) -> LatencySketch {
        let back = LatencySketch::from_bytes(&s.to_bytes()).unwrap();
        same(s, &back);
        back
    }

    #[test]
    fn empty_exact_and_bucketed_sketches_round_trip() {
        round_trip(&LatencySketch::default());
        let mut s = LatencySketch::new(0.02).unwrap();
        s.add_all(&[0.0, 3.5, 3.5, 40.0]).unwrap();
        round_trip(&s);
        let mut g = Gen::new(7);
        let xs: Vec<f64> = (0..50_000).map(|_| (3.0 + g.normal()).exp()).collect();
        let mut s = LatencySketch::default();
        s.add_all(&xs).unwrap();
        s.add_all(&[0.0; 10]).unwrap();
        // Only zeros: no counters at all.
        let mut zeros = LatencySketch::default();
        zeros.add_all(&[0.0; 300]).unwrap();
        round_trip(&zeros);
        let bytes = s.to_bytes();
        // 1 ms … 1 h at 1%: well under the 16 KB the sketch may hold.
        assert!(bytes.len() < 2048, "{} bytes", bytes.len());
        let back = round_trip(&s);
        // A decoded sketch keeps working: it merges and grows like the original.
        let (mut a, mut b) = (s.clone(), back);
        a.add_all(&[1e6, 0.001]).unwrap();
        b.add_all(&[1e6, 0.001]).unwrap();
        same(&a, &b);
    }

    #[test]
    fn a_sum_past_the_largest_duration_round_trips() {
        let mut s = LatencySketch::default();
        s.add_all(&[MAX_MS; 300]).unwrap();
        assert!(s.sum() > MAX_MS);
        round_trip(&s);
    }

    #[test]
    fn collapsed_sketches_keep_their_bound() {
        let mut s = LatencySketch::new(0.001).unwrap();
        s.add_all(&[0.01, 1e6]).unwrap();
        assert!(s.collapsed_below_ms().is_some());
        round_trip(&s);
        let mut g = Gen::new(3);
        let xs: Vec<f64> = (0..1000).map(|_| g.unit() * 1e5 + 1e-3).collect();
        s.add_all(&xs).unwrap();
        round_trip(&s);
    }

    #[test]
    fn refusals_name_the_problem() {
        let mut s = LatencySketch::default();
        s.add_all(&(1..=400).map(f64::from).collect::<Vec<_>>()).unwrap();
        let good = s.to_bytes();
        let err = |b: &[u8]| LatencySketch::from_bytes(b).unwrap_err();
        assert_eq!(err(b""), BytesError::Foreign);
        assert_eq!(err(b"{\"count\":3}"), BytesError::Foreign);
        let mut v = good.clone();
        v[4] = 9;
        assert_eq!(err(&v), BytesError::Version { found: 9 });
        assert!(err(&v).to_string().contains("upgrade"));
        assert_eq!(err(&good[..good.len() - 1]), BytesError::Truncated { field: "counters" });
        assert_eq!(err(&good[..10]), BytesError::Truncated { field: "relativeError" });
        let mut v = good.clone();
        v.push(0);
        assert_eq!(err(&v), BytesError::Trailing { extra: 1 });
        let mut v = good.clone();
        v[6..14].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(matches!(err(&v), BytesError::Invalid { field: "relativeError", .. }));
        // One counter more than the count: the totals disagree.
        let mut v = good.clone();
        let last = v.len() - 1;
        v[last] += 1;
        assert!(matches!(err(&v), BytesError::Invalid { field: "counters", .. }), "{}", err(&v));
        let msg = err(&v).to_string();
        assert!(msg.starts_with("'bytes' is not a valid LatencySketch: 'counters' add up to 401"), "{msg}");
    }

    /// A bucketed sketch (relative error 1%) as a forger writes it: any
    /// count, sum, min, max, zero count and counters from `first_key` on.
    fn forged(count: u64, (sum, min, max): (f64, f64, f64), zeros: u64, first_key: i32, counters: &[u64]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[VERSION, 0]);
        out.extend_from_slice(&0.01f64.to_le_bytes());
        put_varint(&mut out, count);
        for v in [sum, min, max] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_varint(&mut out, zeros);
        put_varint(&mut out, ((first_key << 1) ^ (first_key >> 31)) as u32 as u64);
        put_varint(&mut out, counters.len() as u64);
        for &c in counters {
            put_varint(&mut out, c);
        }
        out
    }

    /// `n` samples of 20 ms in one counter.
    fn at_20ms(n: u64) -> Vec<u8> {
        forged(n, (20.0 * n as f64, 20.0, 20.0), 0, LatencySketch::default().key(20.0), &[n])
    }

    /// 2^53 − 1: the most a sketch counts (`MAX_COUNT`).
    const CAP: u64 = (1 << 53) - 1;

    #[test]
    fn counts_that_could_overflow_a_merge_are_refused() {
        let k = LatencySketch::default().key(20.0);
        for bytes in [
            at_20ms(1 << 62),
            at_20ms(CAP + 1),
            // The counters add up to the count, spread over two buckets.
            forged(1 << 63, (1e20, 20.0, 21.0), 0, k, &[1 << 62, 1 << 62]),
        ] {
            let e = LatencySketch::from_bytes(&bytes).unwrap_err();
            assert!(matches!(e, BytesError::Invalid { field: "count", .. }), "{e}");
            assert!(e.to_string().contains("more than a sketch counts (9007199254740991)"), "{e}");
        }
        // At the cap: accepted, and every merge past it is refused with the
        // target unchanged.
        let full = LatencySketch::from_bytes(&at_20ms(CAP)).unwrap();
        assert_eq!(full.count(), CAP);
        let mut target = full.clone();
        let e = target.merge(&full).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("COUNT_LIMIT", Some("other")), "{e}");
        assert!(
            e.to_string().starts_with("cannot add 9007199254740991 samples to a sketch of 9007199254740991"),
            "{e}"
        );
        same(&target, &full);
        let mut one = LatencySketch::default();
        one.add(5.0).unwrap();
        assert_eq!(target.merge(&one).unwrap_err().code(), "COUNT_LIMIT");
        assert_eq!(target.add(20.0).unwrap_err().code(), "COUNT_LIMIT");
        assert_eq!(target.add_all(&[20.0]).unwrap_err().code(), "COUNT_LIMIT");
        same(&target, &full);
        // Up to the cap, what merges reads back from its own bytes.
        let half = LatencySketch::from_bytes(&at_20ms(CAP / 2)).unwrap();
        let mut m = half.clone();
        m.merge(&half).unwrap();
        m.add(20.0).unwrap();
        assert_eq!(m.count(), CAP);
        round_trip(&m);
        assert_eq!(m.quantile(0.99).unwrap(), Some(20.0));
    }

    #[test]
    fn min_max_and_zero_count_must_agree_with_the_counters() {
        let k = LatencySketch::default().key(20.0);
        let n = 300;
        LatencySketch::from_bytes(&at_20ms(n)).unwrap();
        // Samples below 1 ns are the zero count; the rest are at 20 ms.
        LatencySketch::from_bytes(&forged(n, (5000.0, 0.0, 20.0), 50, k, &[n - 50])).unwrap();
        LatencySketch::from_bytes(&forged(n, (0.0, 0.0, 0.0), n, 0, &[])).unwrap();
        for (bytes, field) in [
            // Counters at 20 ms, min and max at 376 ms: every quantile would read 376.
            (forged(n, (376.0 * 300.0, 376.0, 376.0), 0, k, &[n]), "max"),
            (forged(n, (6000.0, 20.0, 376.0), 0, k, &[n]), "max"),
            (forged(n, (6000.0, 5.0, 20.0), 0, k, &[n]), "min"),
            (forged(n, (6000.0, 20.0, 20.5), 0, k, &[n]), "max"),
            // A zero count needs a sample below 1 ns, and a zero min needs a zero count.
            (forged(n, (5000.0, 20.0, 20.0), 50, k, &[n - 50]), "zeroCount"),
            (forged(n, (6000.0, 0.0, 20.0), 0, k, &[n]), "zeroCount"),
            // Only zeros, but a max of 20 ms.
            (forged(n, (20.0, 0.0, 20.0), n, 0, &[]), "max"),
        ] {
            let e = LatencySketch::from_bytes(&bytes).unwrap_err();
            assert!(matches!(&e, BytesError::Invalid { field: f, .. } if *f == field), "{field}: {e}");
            crate::core::error::assert_filled(&e.message());
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let mut g = Gen::new(11);
        let mut s = LatencySketch::default();
        s.add_all(&(0..3000).map(|_| g.unit() * 500.0).collect::<Vec<_>>()).unwrap();
        let seeds = [s.to_bytes(), LatencySketch::default().to_bytes(), {
            let mut e = LatencySketch::default();
            e.add_all(&[1.0, 2.0]).unwrap();
            e.to_bytes()
        }];
        for round in 0..20_000u64 {
            let base = &seeds[(round % 3) as usize];
            let mut v = base.clone();
            match g.next_u64() % 4 {
                0 => {
                    let i = (g.next_u64() as usize) % v.len();
                    v[i] ^= 1 << (g.next_u64() % 8);
                }
                1 => v.truncate((g.next_u64() as usize) % v.len()),
                2 => {
                    let i = (g.next_u64() as usize) % v.len();
                    v[i] = g.next_u64() as u8;
                }
                _ => v = (0..(g.next_u64() % 64)).map(|_| g.next_u64() as u8).collect(),
            }
            let d = LatencySketch::from_bytes(&v);
            if let Err(e) = &d {
                crate::core::error::assert_filled(&e.message());
            }
            if let Ok(d) = d {
                // Whatever decodes is a working sketch.
                for q in QS {
                    let x = d.quantile(q).unwrap();
                    assert!(x.is_none_or(|x| x >= d.min().unwrap() && x <= d.max().unwrap()));
                }
                let mut m = LatencySketch::new(d.relative_error()).unwrap();
                m.merge(&d).unwrap();
                let _ = m.to_bytes();
                // Merged with itself: refused, or a sketch whose bytes read back.
                let mut twice = d.clone();
                match twice.merge(&d) {
                    Ok(()) => drop(LatencySketch::from_bytes(&twice.to_bytes()).unwrap()),
                    Err(e) => assert_eq!(e.code(), "COUNT_LIMIT"),
                }
                assert!(d.memory_bytes() <= super::super::MAX_MEMORY_BYTES);
            }
        }
    }

    fn sample_vec() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(prop_oneof![Just(0.0), 1e-7..1e-3f64, 0.001..10.0f64, 10.0..1e6f64, 1e6..1e12f64], 0..800)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn round_trip_preserves_everything(xs in sample_vec(), alpha in prop_oneof![Just(0.01), 0.001..0.5f64]) {
            let mut s = LatencySketch::new(alpha).unwrap();
            s.add_all(&xs).unwrap();
            round_trip(&s);
        }

        #[test]
        fn merged_copies_equal_merged_originals(xs in sample_vec(), ys in sample_vec()) {
            let (mut a, mut b) = (LatencySketch::default(), LatencySketch::default());
            a.add_all(&xs).unwrap();
            b.add_all(&ys).unwrap();
            let mut from_bytes = LatencySketch::from_bytes(&a.to_bytes()).unwrap();
            from_bytes.merge(&LatencySketch::from_bytes(&b.to_bytes()).unwrap()).unwrap();
            a.merge(&b).unwrap();
            same(&a, &from_bytes);
        }

        #[test]
        fn arbitrary_bytes_never_panic(v in prop::collection::vec(any::<u8>(), 0..200), magic in any::<bool>()) {
            let mut v = v;
            if magic && v.len() >= 5 {
                v[..4].copy_from_slice(&MAGIC);
                v[4] = VERSION;
            }
            if let Err(e) = LatencySketch::from_bytes(&v) {
                crate::core::error::assert_filled(&e.message());
            }
        }
    }
}
