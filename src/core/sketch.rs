//! A mergeable latency sketch with a stated relative error: the data structure
//! every derived timeout is computed from.
//!
//! # Why a sketch and not a sorted array
//! A timeout is read off the tail of a distribution (p99, p99.9), and the
//! samples come from logs with millions of lines or from many workers at
//! once. Sorting needs every sample in memory; averaging per-worker
//! percentiles is wrong. A DDSketch-style sketch keeps one counter per
//! logarithmic bucket, so its memory depends on the *range* of durations, not
//! on how many there are, and two sketches merge by adding counters, which
//! gives exactly the sketch of the combined data.
//!
//! # Accuracy
//! Each bucket `k` holds the durations `x` with `(k − 1)/m < L(x) <= k/m`,
//! where `L` is a cheap, monotone stand-in for `log2` (DDSketch's cubically
//! interpolated mapping): for `x = 2^e · (1 + s)` with `0 <= s < 1`,
//! `L(x) = e + P(s)` and `P(s) = (6/35)s³ − (3/5)s² + (10/7)s`. `P` matches
//! `log2(1 + s)` at both ends, and its slope on a log scale never falls below
//! `10/7` (the exact `log2` has `1/ln 2`), so with the multiplier
//! `m = 0.7 / ln γ`, `γ = (1 + α) / (1 − α)`, every bucket's upper bound is
//! at most `γ` times its lower bound. The bucket reports
//! `2 · lo · hi / (lo + hi)`, which is within a relative error
//! `(hi − lo)/(hi + lo) <= α` of every value in it. The default `α` is
//! [`DEFAULT_RELATIVE_ERROR`] (1%).
//!
//! Why not `ceil(ln x / ln γ)`: a `ln` per sample measured many times the
//! cubic's cost in Wasm (ingest per sample: BENCHMARKS.md, "Derived
//! timeouts"), for about 1% more buckets.
//! `ln`/`exp`-free inversion happens only when a quantile is read.
//!
//! Quantiles are defined by rank: the
//! `q`-quantile of `n` samples is the sample of 0-based rank
//! `⌊q · (n − 1)⌋` in sorted order ([`rank_index`]), so `q = 0` is the minimum
//! and `q = 1` the maximum.
//!
//! While at most [`EXACT_LIMIT`] samples have been added, the raw values are
//! kept as well and quantiles are *exact*: a timeout derived from 40 samples
//! is not blurred by 1% on top of its sampling noise.
//!
//! # Memory
//! Counters are `u64` in one dense array indexed by bucket key, at most
//! [`MAX_BUCKETS`] of them (12 KB), plus the exact buffer (at most 256 `f64`,
//! 2 KB, dropped once exceeded). With the default `α` the array covers a
//! range of about 1.6·10^13 between its smallest and largest bucket, for
//! example 1 ns to 4 h, so 1 ms … 1 h (762 buckets, 6 KB) never comes close. When a
//! wider range arrives, the *lowest* buckets are collapsed into one: the tail,
//! which is what timeouts are made of, keeps its accuracy, and
//! [`LatencySketch::collapsed_below_ms`] says below which value it was lost.
//!
//! # Units and domain
//! Samples are `f64` milliseconds, validated by [`check_ms`]: NaN, ±∞ and
//! negatives are errors. Zero is a valid duration (a cache hit measured with a
//! coarse clock); durations below [`MIN_INDEXABLE_MS`] (1 ns) are counted as
//! exactly 0.
//!
//! # Invariants (each is a property or oracle test in `sketch/tests.rs`)
//! 1. Every quantile of a non-empty sketch is within `[min, max]` and, unless
//!    it lies below [`LatencySketch::collapsed_below_ms`], within
//!    `α · x + MIN_INDEXABLE_MS` of the exact rank-defined quantile `x`.
//! 2. With at most [`EXACT_LIMIT`] samples every quantile is exact.
//! 3. Merging two sketches gives the same quantiles and count as adding all
//!    samples to one sketch; merging different `α` is an error.
//! 4. Quantiles are monotone in `q`; a bad `q` (NaN, outside `0..=1`) is an
//!    error and an empty sketch answers `None`, never `0`.
//! 5. The heap used never exceeds [`MAX_MEMORY_BYTES`] (16 KB), whatever the
//!    input.
//! 6. A rejected sample (or a batch with one) leaves the sketch unchanged.
//! 7. A sketch counts at most [`MAX_COUNT`] (2^53 − 1) samples: an add or a
//!    merge past it is refused and changes nothing, so counters never
//!    saturate and every sketch's `to_bytes` is accepted by `from_bytes`.

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS};
use crate::core::error::{Described, Message};

mod bytes;
pub use bytes::{msg as bytes_msg, BytesError, MAGIC, VERSION};

/// The default relative error: 1%.
pub const DEFAULT_RELATIVE_ERROR: f64 = 0.01;
/// The smallest accepted relative error. At this setting [`MAX_BUCKETS`]
/// spans only a 21× range before the lowest buckets collapse.
pub const MIN_RELATIVE_ERROR: f64 = 0.001;
/// The largest accepted relative error.
pub const MAX_RELATIVE_ERROR: f64 = 0.5;
/// Up to this many samples, quantiles are answered exactly from raw values.
pub const EXACT_LIMIT: usize = 256;
/// The most bucket counters a sketch holds (12 KB of `u64`).
pub const MAX_BUCKETS: usize = 1536;
/// Durations below this (1 ns) are counted as 0 ms.
pub const MIN_INDEXABLE_MS: f64 = 1e-6;
/// The bound on a sketch's heap memory: counters plus the exact buffer.
pub const MAX_MEMORY_BYTES: usize = 16 * 1024;
/// The most samples a sketch counts: 2^53 − 1 (`Number.MAX_SAFE_INTEGER`),
/// so a count is exact as a JS number, and two sketches' counts (at most
/// 2^54) add up in a `u64` with room to spare: a merge or an add past it is
/// refused ([`SketchError::Count`]) before anything changes, and
/// [`LatencySketch::from_bytes`] refuses a larger count, so every sketch's
/// `to_bytes` reads back.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Why a sketch operation was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SketchError {
    /// The relative error must be between [`MIN_RELATIVE_ERROR`] and
    /// [`MAX_RELATIVE_ERROR`]. Use 0.01 (1%) unless you have a reason.
    RelativeError {
        /// The relative error given.
        value: f64,
    },
    /// `q` must be a number between 0 and 1 (p99 is 0.99).
    Quantile {
        /// The `q` given.
        value: f64,
    },
    /// A sample was NaN, infinite, negative or too large. `index` is its
    /// position in a batch, `None` for a single `add`. Nothing was added.
    /// `root` names the batch (`"samples"`) for [`Described::param`].
    Sample {
        /// The batch's name (`"samples"`).
        root: &'static str,
        /// The sample's position in the batch, from 0; `None` for a single `add`.
        index: Option<usize>,
        /// What is wrong with the sample.
        error: DeadlineError,
    },
    /// Only sketches with the same relative error can be merged: create both
    /// with the same `relativeError`.
    Mismatch {
        /// This sketch's relative error.
        ours: f64,
        /// The other sketch's relative error.
        theirs: f64,
    },
    /// The sketch would count more than [`MAX_COUNT`] samples: `adding`
    /// more to the `count` it holds. `param` is what brought them (`other`
    /// for a merge, `ms` or `samples` for an add). Nothing was added.
    Count {
        /// What brought the samples (`other`, `ms` or `samples`).
        param: &'static str,
        /// The samples the sketch holds.
        count: f64,
        /// The samples that would be added.
        adding: f64,
    },
}

/// The sketch's message templates.
pub mod msg {
    crate::templates! { "sketch";
        /// [`SketchError::RelativeError`](super::SketchError::RelativeError).
        RELATIVE_ERROR = "'relativeError' must be between {min} and {max}: current value is {value}";
        /// [`SketchError::Quantile`](super::SketchError::Quantile).
        QUANTILE = "'q' must be between 0 and 1: current value is {value}";
        /// [`SketchError::Mismatch`](super::SketchError::Mismatch).
        MISMATCH = "cannot merge a sketch with relative error {theirs} into one with relative error {ours}: create both with the same 'relativeError'";
        /// [`SketchError::Count`](super::SketchError::Count).
        COUNT = "cannot add {adding} samples to a sketch of {count}: a sketch counts at most {max} (2^53 − 1); nothing was added";
    }
}

crate::described_error!(SketchError);

impl SketchError {
    /// The same error with a batch sample's parameter named `root[i]` (the
    /// array the caller passed: `samples`, `data`), shifted by `base` (the
    /// index of a chunk's first element).
    pub fn in_batch(self, root: &'static str, base: usize) -> SketchError {
        match self {
            Self::Sample { index: Some(i), error, .. } => Self::Sample { root, index: Some(i + base), error },
            other => other,
        }
    }
}

impl Described for SketchError {
    fn code(&self) -> &'static str {
        match self {
            Self::RelativeError { .. } | Self::Quantile { .. } => "OUT_OF_RANGE",
            Self::Sample { error, .. } => error.code(),
            Self::Mismatch { .. } => "RELATIVE_ERROR_MISMATCH",
            Self::Count { .. } => "COUNT_LIMIT",
        }
    }

    fn param(&self) -> Option<String> {
        Some(match self {
            Self::RelativeError { .. } => "options.relativeError".into(),
            Self::Quantile { .. } => "q".into(),
            Self::Sample { root, index: Some(i), .. } => format!("{root}[{i}]"),
            Self::Sample { error, .. } => return Described::param(error),
            Self::Mismatch { .. } => "other".into(),
            Self::Count { param, .. } => (*param).into(),
        })
    }

    fn message(&self) -> Message {
        match *self {
            Self::RelativeError { value } => Message::new(msg::RELATIVE_ERROR)
                .arg("min", MIN_RELATIVE_ERROR)
                .arg("max", MAX_RELATIVE_ERROR)
                .arg("value", value),
            Self::Quantile { value } => Message::new(msg::QUANTILE).arg("value", value),
            Self::Sample { index: None, error, .. } => error.message(),
            // A batch's sample has no name of its own: the message names it
            // as `param` does (`'samples[2]' must be …`), not as `'ms'`.
            Self::Sample { root, index: Some(i), error } => error.message().with_arg("param", format!("{root}[{i}]")),
            Self::Mismatch { ours, theirs } => Message::new(msg::MISMATCH).arg("ours", ours).arg("theirs", theirs),
            Self::Count { count, adding, .. } => {
                Message::new(msg::COUNT).arg("adding", adding).arg("count", count).arg("max", MAX_COUNT as f64)
            }
        }
    }
}

/// The 0-based rank of the `q`-quantile among `n` sorted samples:
/// `⌊q · (n − 1)⌋`, with a 1e-9 allowance so that `0.29 · 100` is rank 29
/// despite binary rounding. `n` must be at least 1.
pub fn rank_index(q: f64, n: usize) -> usize {
    let last = n.saturating_sub(1);
    let r = (q * last as f64 + 1e-9).floor();
    if r <= 0.0 {
        0
    } else if r >= last as f64 {
        last
    } else {
        // In range 0..last, so the conversion is exact.
        r as usize
    }
}

/// Validates a quantile argument: `0 ..= 1`, not NaN.
pub fn check_q(q: f64) -> Result<f64, SketchError> {
    if !(0.0..=1.0).contains(&q) {
        return Err(SketchError::Quantile { value: q });
    }
    Ok(q)
}

/// `P(s) = A·s³ + B·s² + C·s`: DDSketch's cubic stand-in for `log2(1 + s)`
/// on `0..=1` (`P(0) = 0`, `P(1) = 1`, increasing and concave there).
const CUBIC_A: f64 = 6.0 / 35.0;
const CUBIC_B: f64 = -3.0 / 5.0;
const CUBIC_C: f64 = 10.0 / 7.0;
const MANTISSA: u64 = (1 << 52) - 1;
const ONE_BITS: u64 = 0x3FF0_0000_0000_0000;

#[inline(always)]
fn cubic(s: f64) -> f64 {
    ((CUBIC_A * s + CUBIC_B) * s + CUBIC_C) * s
}

/// `L(x) = e + P(s)` for `x = 2^e · (1 + s)`: monotone, within 0.01 of
/// `log2 x`. `x` must be a positive normal number.
#[inline(always)]
fn log_like(x: f64) -> f64 {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7FF) as i32 - 1023;
    let s = f64::from_bits((bits & MANTISSA) | ONE_BITS) - 1.0;
    f64::from(e) + cubic(s)
}

/// The inverse of [`log_like`]: `2^⌊y⌋ · (1 + P⁻¹(y − ⌊y⌋))`. `P⁻¹` is
/// found by Newton's method from `s = t`: `P(t) >= t` and `P` is concave, so
/// the iterates approach the root from below after the first step and
/// converge quadratically; 8 steps reach full precision from any `t`. A
/// step that changes nothing ends the loop: every later step would repeat
/// it, so the result is bit for bit that of the 8 steps.
fn log_like_inverse(y: f64) -> f64 {
    let e = y.floor();
    let t = y - e;
    let mut s = t;
    for _ in 0..8 {
        let slope = (3.0 * CUBIC_A * s + 2.0 * CUBIC_B) * s + CUBIC_C;
        let next = s - (cubic(s) - t) / slope;
        if next.to_bits() == s.to_bits() {
            break;
        }
        s = next;
    }
    let s = s.clamp(0.0, 1.0);
    // |e| < 60 for every key a sketch holds, so the exponent stays normal.
    let e = (e as i32).clamp(-1022, 1023);
    f64::from_bits(((e + 1023) as u64) << 52) * (1.0 + s)
}

/// The value a bucket of bounds `lo` (exclusive) and `hi` reports: within
/// `α` of both ends (see "Accuracy").
#[inline(always)]
fn reported(lo: f64, hi: f64) -> f64 {
    2.0 * lo * hi / (lo + hi)
}

/// Bucket bounds of one multiplier (one relative error), each inverted once
/// and kept: the sketches of one table share their keys, and reading their
/// [`LatencySketch::bins_with`] through one cache inverts each key once for
/// all of them instead of once per sketch. It holds at most
/// [`BoundCache::MAX_KEYS`] consecutive keys; a sketch outside them starts it
/// again on that sketch's own keys.
#[derive(Debug, Clone, Default)]
pub struct BoundCache {
    /// The multiplier the bounds are for.
    multiplier: f64,
    /// The key of `values[0]`.
    offset: i32,
    /// `upper(offset + i)`, NaN until inverted.
    pub(crate) values: Vec<f64>,
}

impl BoundCache {
    /// The most keys kept: four sketches' worth of counters.
    pub const MAX_KEYS: usize = 4 * MAX_BUCKETS;

    /// Makes the cache hold `lo..=hi` of `multiplier` (at most [`MAX_BUCKETS`] + 1 keys).
    fn cover(&mut self, multiplier: f64, lo: i32, hi: i32) {
        let len = |lo: i32, hi: i32| (hi - lo + 1) as usize;
        if self.multiplier.to_bits() != multiplier.to_bits() || self.values.is_empty() {
            *self = BoundCache { multiplier, offset: lo, values: vec![f64::NAN; len(lo, hi)] };
            return;
        }
        let (old_lo, old_hi) = (self.offset, self.offset + self.values.len() as i32 - 1);
        if lo >= old_lo && hi <= old_hi {
            return;
        }
        let (new_lo, new_hi) = (lo.min(old_lo), hi.max(old_hi));
        if len(new_lo, new_hi) > Self::MAX_KEYS {
            *self = BoundCache { multiplier, offset: lo, values: vec![f64::NAN; len(lo, hi)] };
            return;
        }
        let mut values = vec![f64::NAN; len(new_lo, new_hi)];
        let at = (old_lo - new_lo) as usize;
        values[at..at + self.values.len()].copy_from_slice(&self.values);
        *self = BoundCache { multiplier, offset: new_lo, values };
    }

    /// The upper bound of bucket `key`, a key [`BoundCache::cover`] covers.
    #[inline(always)]
    fn upper(&mut self, key: i32) -> f64 {
        let multiplier = self.multiplier;
        match self.values.get_mut((key - self.offset) as usize) {
            Some(v) if v.is_nan() => {
                *v = log_like_inverse(f64::from(key) / multiplier);
                *v
            }
            Some(v) => *v,
            None => log_like_inverse(f64::from(key) / multiplier),
        }
    }
}

/// One non-empty bin of a sketch: a representative duration and how many
/// samples it stands for. Zero durations form a bin at 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// The bin's representative duration, in ms.
    pub ms: f64,
    /// How many samples the bin stands for.
    pub count: u64,
}

/// A mergeable relative-error quantile sketch of durations in milliseconds.
#[derive(Debug, Clone)]
pub struct LatencySketch {
    alpha: f64,
    /// `m`: bucket keys are `ceil(L(x) · m)` (see "Accuracy").
    multiplier: f64,
    /// Counter of bucket key `offset + i` at index `i`.
    counts: Vec<u64>,
    offset: i32,
    zero_count: u64,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    /// Sorted raw samples while `count <= EXACT_LIMIT`.
    exact: Option<Vec<f64>>,
    /// Set once low buckets were collapsed: values up to this bound may be
    /// reported too high.
    collapsed_below: Option<f64>,
}

impl Default for LatencySketch {
    fn default() -> Self {
        Self::build(DEFAULT_RELATIVE_ERROR)
    }
}

impl LatencySketch {
    /// A sketch with relative error `relative_error` (0.01 is 1%).
    pub fn new(relative_error: f64) -> Result<Self, SketchError> {
        if !(MIN_RELATIVE_ERROR..=MAX_RELATIVE_ERROR).contains(&relative_error) {
            return Err(SketchError::RelativeError { value: relative_error });
        }
        Ok(Self::build(relative_error))
    }

    fn build(alpha: f64) -> Self {
        Self {
            alpha,
            multiplier: 0.7 / ((1.0 + alpha) / (1.0 - alpha)).ln(),
            counts: Vec::new(),
            offset: 0,
            zero_count: 0,
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: 0.0,
            exact: Some(Vec::new()),
            collapsed_below: None,
        }
    }

    /// The relative error this sketch was created with.
    pub fn relative_error(&self) -> f64 {
        self.alpha
    }

    /// How many samples were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// `true` when no sample was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The sum of all samples (for the mean), `0` when empty.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The smallest sample, exactly.
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest sample, exactly.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// `true` while quantiles are answered exactly from raw samples.
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// When low buckets were collapsed to bound memory, quantiles at or below
    /// this value may be too high. `None` means the accuracy holds everywhere.
    pub fn collapsed_below_ms(&self) -> Option<f64> {
        self.collapsed_below
    }

    /// Whether `other` holds the same samples as this sketch, as every
    /// answer sees them: the same parameters, totals (bit for bit) and
    /// non-empty counters, whatever the counters' layout.
    pub(crate) fn same_as(&self, other: &LatencySketch) -> bool {
        let bits = |a: f64, b: f64| a.to_bits() == b.to_bits();
        let opt_bits = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => bits(a, b),
            (None, None) => true,
            _ => false,
        };
        let exact_same = match (&self.exact, &other.exact) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(*x, *y)),
            (None, None) => true,
            _ => false,
        };
        fn keyed(s: &LatencySketch) -> impl Iterator<Item = (i32, u64)> + '_ {
            let offset = s.offset;
            s.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(move |(i, c)| (offset + i as i32, *c))
        }
        bits(self.alpha, other.alpha)
            && self.count == other.count
            && self.zero_count == other.zero_count
            && bits(self.sum, other.sum)
            && bits(self.min, other.min)
            && bits(self.max, other.max)
            && opt_bits(self.collapsed_below, other.collapsed_below)
            && exact_same
            && keyed(self).eq(keyed(other))
    }

    /// Heap bytes held by the counters and the exact buffer.
    pub fn memory_bytes(&self) -> usize {
        self.counts.capacity() * 8 + self.exact.as_ref().map_or(0, |v| v.capacity() * 8)
    }

    /// Adds one duration. NaN, ±∞ and negatives are refused, and the sketch
    /// is left unchanged.
    // Per sample: `#[inline]` keeps it, and `insert`, inside the `.wasm`'s
    // `add` export, which the lower inline threshold of the wasm32 build
    // (wasm-pack.toml `rustflags`) would leave as calls.
    #[inline]
    pub fn add(&mut self, ms: f64) -> Result<(), SketchError> {
        let ms = check_ms("ms", ms).map_err(|error| SketchError::Sample { root: "samples", index: None, error })?;
        if self.count >= MAX_COUNT {
            return Err(SketchError::Count { param: "ms", count: self.count as f64, adding: 1.0 });
        }
        self.insert(ms, 1);
        Ok(())
    }

    /// Adds a batch, all or nothing: if any value is invalid the error names
    /// its index and nothing is added (so a retry after fixing the data does
    /// not double-count).
    pub fn add_all(&mut self, samples: &[f64]) -> Result<(), SketchError> {
        for (i, &ms) in samples.iter().enumerate() {
            // Two comparisons (NaN fails both), not `(0.0..=MAX_MS).contains`,
            // which made the whole ingest measurably slower in Node's Wasm;
            // `check_ms` only to word the error.
            #[allow(clippy::manual_range_contains)]
            if !(ms >= 0.0 && ms <= MAX_MS) {
                check_ms("ms", ms).map_err(|error| SketchError::Sample { root: "samples", index: Some(i), error })?;
            }
        }
        if self.count.saturating_add(samples.len() as u64) > MAX_COUNT {
            return Err(SketchError::Count {
                param: "samples",
                count: self.count as f64,
                adding: samples.len() as f64,
            });
        }
        if self.exact.is_some() && self.count.saturating_add(samples.len() as u64) > EXACT_LIMIT as u64 {
            self.exact = None;
        }
        if self.exact.is_some() {
            for &ms in samples {
                self.insert(ms + 0.0, 1);
            }
            return Ok(());
        }
        // The hot loop of a bulk ingest: no exact buffer, no allocation
        // unless the key range grows. (Nothing here relies on inlining: the
        // multiplier, the array and its offset live in locals, and a counter
        // is reached through `get_mut`, not a bounds-checked index call. Measured in Node and Deno: two
        // lanes of sum/min/max and a helper taking `&mut` locals were slower;
        // validating inside this loop (with a copy to roll back to) no faster.)
        let (mut sum, mut min, mut max, mut zeros) = (0.0, self.min, self.max, 0u64);
        let m = self.multiplier;
        let mut offset = self.offset;
        // The counters move into a local for the loop, so their pointer and
        // length stay in registers instead of being reloaded per sample.
        let mut counts = core::mem::take(&mut self.counts);
        for &ms in samples {
            // Validated above; `+ 0.0` normalises -0 as `check_ms` does.
            let ms = ms + 0.0;
            sum += ms;
            min = if ms < min { ms } else { min };
            max = if ms > max { ms } else { max };
            if ms < MIN_INDEXABLE_MS {
                zeros += 1;
                continue;
            }
            let key = (log_like(ms) * m).ceil() as i32;
            if let Some(c) = counts.get_mut(key.wrapping_sub(offset) as u32 as usize) {
                // A u64 counter cannot reach 2^64 one sample at a time.
                *c += 1;
                continue;
            }
            self.counts = counts;
            let i = self.slot(key);
            offset = self.offset;
            counts = core::mem::take(&mut self.counts);
            if let Some(c) = counts.get_mut(i) {
                *c = c.saturating_add(1);
            }
        }
        self.counts = counts;
        self.count = self.count.saturating_add(samples.len() as u64);
        self.sum += sum;
        (self.min, self.max) = (min, max);
        self.zero_count = self.zero_count.saturating_add(zeros);
        Ok(())
    }

    #[inline(always)]
    fn key(&self, ms: f64) -> i32 {
        // ms is in MIN_INDEXABLE_MS..=MAX_MS, so |L(ms)| < 54, and m is at
        // most 0.7 / ln(1.001/0.999) < 351: |key| < 19_000 and the conversion
        // cannot saturate.
        (log_like(ms) * self.multiplier).ceil() as i32
    }

    /// The smallest value of bucket `key` (exclusive).
    fn lower_of(&self, key: i32) -> f64 {
        log_like_inverse(f64::from(key - 1) / self.multiplier)
    }

    /// The largest value of bucket `key` (inclusive).
    fn upper_of(&self, key: i32) -> f64 {
        log_like_inverse(f64::from(key) / self.multiplier)
    }

    /// The value reported for bucket `key`: within `α` of both ends.
    fn value_of(&self, key: i32) -> f64 {
        reported(self.lower_of(key), self.upper_of(key))
    }

    #[inline]
    fn insert(&mut self, ms: f64, n: u64) {
        self.count = self.count.saturating_add(n);
        self.sum += ms * n as f64;
        if ms < self.min {
            self.min = ms;
        }
        if ms > self.max {
            self.max = ms;
        }
        if let Some(exact) = &mut self.exact {
            if self.count as usize <= EXACT_LIMIT {
                let at = exact.partition_point(|&x| x <= ms);
                exact.insert(at, ms);
            } else {
                self.exact = None;
            }
        }
        if ms < MIN_INDEXABLE_MS {
            self.zero_count = self.zero_count.saturating_add(n);
            return;
        }
        let key = self.key(ms);
        let i = self.slot(key);
        self.counts[i] = self.counts[i].saturating_add(n);
    }

    /// Makes this empty exact sketch hold `samples` (sorted, valid, from
    /// `min` to `max`). The counters are sized once: the highest key
    /// is opened first, then the lowest, so the array is allocated at most
    /// twice instead of growing with each new key.
    fn fill_exact(&mut self, samples: Vec<f64>, (min, max): (f64, f64)) {
        let zeros = samples.partition_point(|&v| v < MIN_INDEXABLE_MS);
        if let Some(&lo) = samples.get(zeros) {
            self.slot(self.key(max));
            self.slot(self.key(lo));
            for &v in &samples[zeros..] {
                let i = self.slot(self.key(v));
                self.counts[i] += 1;
            }
        }
        self.zero_count = zeros as u64;
        self.count = samples.len() as u64;
        self.sum = samples.iter().sum();
        (self.min, self.max) = (min, max);
        self.exact = Some(samples);
    }

    /// The index of `key`'s counter, growing (and if needed collapsing) the
    /// array so that it exists.
    fn slot(&mut self, key: i32) -> usize {
        if self.counts.is_empty() {
            self.counts.reserve_exact(16);
            self.counts.push(0);
            self.offset = key;
            return 0;
        }
        let lo = self.offset;
        let hi = self.offset + self.counts.len() as i32 - 1;
        if key >= lo && key <= hi {
            return (key - lo) as usize;
        }
        let (new_lo, new_hi) = (lo.min(key), hi.max(key));
        self.resize(new_lo, new_hi);
        // After resizing the key is either in range or below a collapsed
        // lowest bucket, which then absorbs it.
        if key < self.offset {
            0
        } else {
            (key - self.offset) as usize
        }
    }

    /// Makes the array cover `lo..=hi`, keeping the top [`MAX_BUCKETS`] keys
    /// and folding anything below into the lowest kept bucket.
    fn resize(&mut self, lo: i32, hi: i32) {
        let cap = MAX_BUCKETS as i32;
        let lo_kept = if hi - lo + 1 > cap { hi - cap + 1 } else { lo };
        let len = (hi - lo_kept + 1) as usize;
        // Grow in steps so a slowly widening range does not copy every time,
        // but never past the cap.
        let want = (len + len / 4 + 8).min(MAX_BUCKETS).max(len);
        let mut next = Vec::with_capacity(want);
        next.resize(len, 0u64);
        for (i, &c) in self.counts.iter().enumerate() {
            let k = self.offset + i as i32;
            let j = if k < lo_kept { 0 } else { (k - lo_kept) as usize };
            next[j] = next[j].saturating_add(c);
        }
        if lo_kept > lo {
            let bound = self.upper_of(lo_kept);
            self.collapsed_below = Some(self.collapsed_below.map_or(bound, |b| b.max(bound)));
        }
        self.counts = next;
        self.offset = lo_kept;
    }

    /// Adds every sample of `other` to this sketch. The result answers as if
    /// all samples had been added to one sketch. Refused, with this sketch
    /// unchanged, when the two hold more than [`MAX_COUNT`] samples together.
    /// The sum saturates at the largest finite `f64` (only sums read from
    /// hostile bytes reach it).
    pub fn merge(&mut self, other: &LatencySketch) -> Result<(), SketchError> {
        if self.alpha.to_bits() != other.alpha.to_bits() {
            return Err(SketchError::Mismatch { ours: self.alpha, theirs: other.alpha });
        }
        if other.count == 0 {
            return Ok(());
        }
        // Both counts are at most MAX_COUNT (2^53 − 1): the sum cannot wrap.
        let total = self.count + other.count;
        if total > MAX_COUNT {
            return Err(SketchError::Count { param: "other", count: self.count as f64, adding: other.count as f64 });
        }
        self.exact = match (self.exact.take(), &other.exact) {
            (Some(mut a), Some(b)) if total as usize <= EXACT_LIMIT => {
                for &x in b {
                    let at = a.partition_point(|&y| y <= x);
                    a.insert(at, x);
                }
                Some(a)
            }
            _ => None,
        };
        self.count = total;
        // Honest sums stay far below (at most 2^53 − 1 samples of at most
        // MAX_MS each); sums read from hostile bytes may not: the sum
        // saturates, so a merged sketch always reads back (its sum finite).
        self.sum = match self.sum + other.sum {
            s if s.is_finite() => s,
            _ => f64::MAX,
        };
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.zero_count = self.zero_count.saturating_add(other.zero_count);
        if let Some(b) = other.collapsed_below {
            self.collapsed_below = Some(self.collapsed_below.map_or(b, |a| a.max(b)));
        }
        if !other.counts.is_empty() {
            let other_hi = other.offset + other.counts.len() as i32 - 1;
            // Touch both ends first so the array is resized at most twice.
            self.slot(other_hi);
            self.slot(other.offset);
            if other.offset >= self.offset {
                // Every key of `other` has its counter now, in one run from
                // `at`: added counter by counter, no slot to find.
                let at = (other.offset - self.offset) as usize;
                for (mine, &c) in self.counts[at..].iter_mut().zip(&other.counts) {
                    *mine = mine.saturating_add(c);
                }
            } else {
                // The lowest keys were collapsed into the lowest kept one.
                for (i, &c) in other.counts.iter().enumerate() {
                    if c > 0 {
                        let j = self.slot(other.offset + i as i32);
                        self.counts[j] = self.counts[j].saturating_add(c);
                    }
                }
            }
        }
        Ok(())
    }

    /// The `q`-quantile (`0.99` for p99): `Ok(None)` when empty, an error for
    /// a `q` outside `0..=1` or NaN.
    pub fn quantile(&self, q: f64) -> Result<Option<f64>, SketchError> {
        let q = check_q(q)?;
        if self.count == 0 {
            return Ok(None);
        }
        if let Some(exact) = &self.exact {
            return Ok(exact.get(rank_index(q, exact.len())).copied());
        }
        if q == 0.0 {
            return Ok(Some(self.min));
        }
        if q == 1.0 {
            return Ok(Some(self.max));
        }
        // Ranks are counted in u64; `rank_index` works on usize, which is at
        // least 32 bits: clamp rather than truncate on 32-bit targets.
        let n = usize::try_from(self.count).unwrap_or(usize::MAX);
        let rank = rank_index(q, n) as u64;
        let mut seen = self.zero_count;
        if seen > rank {
            return Ok(Some(self.clamp(0.0)));
        }
        for (i, &c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(c);
            if seen > rank {
                return Ok(Some(self.clamp(self.value_of(self.offset + i as i32))));
            }
        }
        Ok(Some(self.max))
    }

    fn clamp(&self, v: f64) -> f64 {
        v.max(self.min).min(self.max)
    }

    /// The share of samples strictly above `timeout_ms`: the false-timeout
    /// rate that timeout would have had on this data. Exact while the sketch
    /// is exact; otherwise the bucket holding `timeout_ms` contributes the
    /// part of it above `timeout_ms` on a log scale (its samples are assumed
    /// spread evenly in log space), so the error is a fraction of one bucket.
    pub fn fraction_above(&self, timeout_ms: f64) -> Result<Option<f64>, SketchError> {
        let t = check_ms("timeoutMs", timeout_ms).map_err(|error| SketchError::Sample {
            root: "samples",
            index: None,
            error,
        })?;
        if self.count == 0 {
            return Ok(None);
        }
        if let Some(exact) = &self.exact {
            let above = exact.len() - exact.partition_point(|&x| x <= t);
            return Ok(Some(above as f64 / self.count as f64));
        }
        if t < MIN_INDEXABLE_MS {
            return Ok(Some((self.count - self.zero_count) as f64 / self.count as f64));
        }
        let k = self.key(t);
        let mut above = 0.0;
        for (i, &c) in self.counts.iter().enumerate() {
            let key = self.offset + i as i32;
            if key > k {
                above += c as f64;
            } else if key == k && c > 0 {
                // Bucket k spans (k − 1, k] in index space, which is log
                // space up to 1%: the share above t is the share of that
                // span above t's index.
                let part = (f64::from(k) - log_like(t) * self.multiplier).clamp(0.0, 1.0);
                above += c as f64 * part;
            }
        }
        Ok(Some((above / self.count as f64).clamp(0.0, 1.0)))
    }

    /// The non-empty bins in increasing order: raw values while exact
    /// (equal values merged), bucket representatives otherwise.
    pub fn bins(&self) -> Vec<Bin> {
        self.bins_with(&mut BoundCache::default())
    }

    /// [`LatencySketch::bins`], the bucket bounds read through `cache` (and
    /// kept there for the next sketch of the same relative error).
    pub fn bins_with(&self, cache: &mut BoundCache) -> Vec<Bin> {
        let mut out: Vec<Bin> = Vec::new();
        if let Some(exact) = &self.exact {
            for &ms in exact {
                match out.last_mut() {
                    Some(b) if b.ms == ms => b.count += 1,
                    _ => out.push(Bin { ms, count: 1 }),
                }
            }
            return out;
        }
        if self.zero_count > 0 {
            out.push(Bin { ms: 0.0, count: self.zero_count });
        }
        if self.counts.is_empty() {
            return out;
        }
        // A key's lower bound is the key below's upper one (the same
        // inversion as `lower_of`): each key is inverted once, in the cache.
        cache.cover(self.multiplier, self.offset - 1, self.offset + self.counts.len() as i32 - 1);
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                let key = self.offset + i as i32;
                let (lo, hi) = (cache.upper(key - 1), cache.upper(key));
                out.push(Bin { ms: self.clamp(reported(lo, hi)), count: c });
            }
        }
        out
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) mod tests;
