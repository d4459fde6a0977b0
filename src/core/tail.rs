//! Tail shape: is there a gap between a fast body and a slow tail?
//!
//! # Why the shape matters more than a percentile
//! Many dependencies have two populations: most calls are fast, and a small
//! share are slow for a different reason (a GC pause, a cold cache, an
//! unlucky replica). A timeout just above the fast body cuts off only the
//! slow tail, whose calls would have taken 300–1 500 ms anyway; when the slow
//! cases are independent, a retry lands in the body. A percentile alone
//! cannot tell whether it sits in the body, in the gap, or in the tail.
//!
//! # Detection
//! On a log scale, look for the widest stretch between observed values (or
//! sketch bins) that is empty, or holds at most [`STRAGGLERS_PER_SAMPLE`] of
//! the samples (the body's rare extremes at large `n`), such that
//! - the stretch spans at least a factor [`MIN_GAP_RATIO`],
//! - the part above holds at most [`MAX_TAIL_SHARE`] of the samples and at
//!   least `max(`[`MIN_TAIL_COUNT`]`, 0.1% of n)` of them (a handful of
//!   outliers in the body's own tail is not a population),
//! - there are at least [`MIN_SAMPLES`] samples.
//!
//! The recommendation is "just above the body": 10% above its largest value,
//! rounded up to two significant digits, and never past the middle of the
//! gap (on a log scale). Whether the tail is *independent* (a retry avoids
//! it) cannot be seen in the marginal distribution; the caller decides.
//!
//! # Invariants (tested in `derive/tests.rs`)
//! 1. `body_edge_ms < recommended_ms < tail_start_ms`.
//! 2. `0 < tail_share <= MAX_TAIL_SHARE`.
//! 3. Unimodal data (constant, uniform, normal, lognormal) finds no gap.

use crate::core::deadline::check_ms;
use crate::core::sketch::{Bin, LatencySketch, SketchError};

/// The smallest ratio `tail_start / body_edge` that counts as a gap.
pub const MIN_GAP_RATIO: f64 = 1.4;
/// The largest share of samples the slow tail may hold.
pub const MAX_TAIL_SHARE: f64 = 0.2;
/// The fewest samples the slow tail must hold.
pub const MIN_TAIL_COUNT: u64 = 5;
/// The share of samples allowed inside a gap (1 in 100 000): with a million
/// samples the body's own extremes reach into any gap, and a handful of them
/// must not hide it. Below 100 000 samples a gap must be empty.
pub const STRAGGLERS_PER_SAMPLE: f64 = 1e-5;
/// The fewest samples in which a gap is looked for.
pub const MIN_SAMPLES: u64 = 200;

/// A fast body, a gap, and a slow tail.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct TailShape {
    /// The largest value of the fast body.
    pub body_edge_ms: f64,
    /// The smallest value of the slow tail.
    pub tail_start_ms: f64,
    /// `tail_start_ms / body_edge_ms`.
    pub gap_ratio: f64,
    /// Share of samples in the tail: the false-timeout rate of a timeout
    /// placed in the gap.
    pub tail_share: f64,
    /// Number of samples in the tail (`tailCount` in JS).
    pub tail_count: u64,
    /// Samples inside the gap that were set aside (at most
    /// [`STRAGGLERS_PER_SAMPLE`] of all): the extreme end of the body.
    pub stragglers: u64,
    /// A timeout just above the body.
    pub recommended_ms: f64,
}

/// Rounds up to two significant digits: 206.8 → 210, 0.553 → 0.56.
fn ceil_2_digits(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return v;
    }
    // The power of ten that leaves two digits before the point, found by
    // stepping (no `log10`/`powf`, which would add libm code to the Wasm).
    let mut step = 1.0;
    while v / step >= 100.0 {
        step *= 10.0;
    }
    while v / step < 10.0 {
        step /= 10.0;
    }
    (v / step).ceil() * step
}

/// Looks for a gap in increasing, non-empty bins (as from
/// [`crate::core::sketch::LatencySketch::bins`]).
pub fn tail_shape(bins: &[Bin]) -> Option<TailShape> {
    let n: u64 = bins.iter().map(|b| b.count).sum();
    if n < MIN_SAMPLES {
        return None;
    }
    let min_tail = MIN_TAIL_COUNT.max(n.div_ceil(1000));
    let allowed = (n as f64 * STRAGGLERS_PER_SAMPLE).floor() as u64;
    let max_tail = MAX_TAIL_SHARE * n as f64;
    // best: (ratio, body edge index, tail start index, tail count, stragglers)
    let mut best: Option<(f64, usize, usize, u64, u64)> = None;
    let mut below = 0u64;
    for i in 0..bins.len() {
        below += bins[i].count;
        if bins[i].ms <= 0.0 || (n - below) as f64 > max_tail + allowed as f64 {
            continue;
        }
        let mut stragglers = 0u64;
        for j in i + 1..bins.len() {
            let tail = n - below - stragglers;
            if tail < min_tail {
                break;
            }
            let ratio = bins[j].ms / bins[i].ms;
            let better = match best {
                Some((r, ..)) => ratio > r,
                None => true,
            };
            if ratio >= MIN_GAP_RATIO && tail as f64 <= max_tail && better {
                best = Some((ratio, i, j, tail, stragglers));
            }
            stragglers += bins[j].count;
            if stragglers > allowed {
                break;
            }
        }
    }
    let (gap_ratio, i, j, tail_count, stragglers) = best?;
    let (edge, start) = (bins[i].ms, bins[j].ms);
    let middle = (edge * start).sqrt();
    let nice = ceil_2_digits(edge * 1.1);
    Some(TailShape {
        body_edge_ms: edge,
        tail_start_ms: start,
        gap_ratio,
        tail_share: tail_count as f64 / n as f64,
        tail_count,
        stragglers,
        recommended_ms: if nice < middle { nice } else { middle },
    })
}

/// [`tail_shape`] of raw samples (validated; an invalid one is an error
/// naming its index). The samples go through a default [`LatencySketch`]
/// so that the search stays within its 1 536 bins whatever `n` is.
pub fn tail_shape_of(samples: &[f64]) -> Result<Option<TailShape>, SketchError> {
    let mut sketch = LatencySketch::default();
    sketch.add_all(samples)?;
    Ok(tail_shape(&sketch.bins()))
}

/// The share of `samples` strictly above `timeout_ms`: how many healthy
/// calls that timeout would have failed. `None` for no samples.
pub fn false_timeout_rate(samples: &[f64], timeout_ms: f64) -> Result<Option<f64>, SketchError> {
    let above = count_above(samples, timeout_ms)?;
    Ok((!samples.is_empty()).then(|| above as f64 / samples.len() as f64))
}

/// How many of `samples` are strictly above `timeout_ms` (every sample
/// validated; an invalid one is an error naming its index). The numerator
/// of [`false_timeout_rate`], for callers that count in batches.
pub fn count_above(samples: &[f64], timeout_ms: f64) -> Result<usize, SketchError> {
    let t = check_ms("timeoutMs", timeout_ms).map_err(|error| SketchError::Sample {
        root: "samples",
        index: None,
        error,
    })?;
    let mut above = 0usize;
    for (i, &x) in samples.iter().enumerate() {
        let x = check_ms("ms", x).map_err(|error| SketchError::Sample { root: "samples", index: Some(i), error })?;
        if x > t {
            above += 1;
        }
    }
    Ok(above)
}
