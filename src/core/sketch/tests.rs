//! Tests of [`super`]: its invariants, as properties and oracle tests.

use super::*;
use crate::core::deadline::MAX_MS;
use crate::core::rng::SplitMix64;
use proptest::prelude::*;

/// The core's generator with the draws the oracle tests need.
pub(crate) struct Gen(SplitMix64);
impl Gen {
    pub fn new(seed: u64) -> Self {
        Self(SplitMix64::new(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in (0, 1]: never 0, so `ln` is finite.
    pub fn unit(&mut self) -> f64 {
        self.0.next_f64_nonzero()
    }
    pub fn normal(&mut self) -> f64 {
        (-2.0 * self.unit().ln()).sqrt() * (core::f64::consts::TAU * self.unit()).cos()
    }
}

fn exact_quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[rank_index(q, sorted.len())]
}

const QS: [f64; 12] = [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0];

fn check_against_oracle(name: &str, samples: &[f64], alpha: f64) {
    let mut s = LatencySketch::new(alpha).unwrap();
    s.add_all(samples).unwrap();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    for q in QS {
        let want = exact_quantile(&sorted, q);
        let got = s.quantile(q).unwrap().unwrap();
        let tol = alpha * want * (1.0 + 1e-9) + MIN_INDEXABLE_MS;
        if want <= s.collapsed_below_ms().unwrap_or(0.0) {
            // Below the collapse bound only the range is guaranteed.
            assert!(got >= want && got <= sorted[sorted.len() - 1], "{name} q={q}");
            continue;
        }
        assert!((got - want).abs() <= tol, "{name} n={} q={q}: got {got}, exact {want}", samples.len());
        if samples.len() <= EXACT_LIMIT {
            assert_eq!(got, want, "{name}: small n must be exact");
        }
    }
    assert_eq!(s.count(), samples.len() as u64);
    assert!(s.memory_bytes() <= MAX_MEMORY_BYTES, "{name}: {} bytes", s.memory_bytes());
}

type Generator = Box<dyn Fn(&mut Gen) -> f64>;

fn generators() -> Vec<(&'static str, Generator)> {
    vec![
        ("constant", Box::new(|_| 42.0)),
        ("uniform", Box::new(|g| 1.0 + 999.0 * g.unit())),
        ("normal", Box::new(|g| (200.0 + 30.0 * g.normal()).max(0.0))),
        ("lognormal", Box::new(|g| 40.0 * (0.35 * g.normal()).exp())),
        (
            "bimodal",
            Box::new(|g| if g.unit() < 0.05 { 300.0 + 1200.0 * g.unit() } else { 40.0 * (0.35 * g.normal()).exp() }),
        ),
        ("with zeros", Box::new(|g| if g.unit() < 0.2 { 0.0 } else { 5.0 * g.unit() })),
        ("1 ms to 1 h", Box::new(|g| (g.unit() * (3_600_000f64).ln()).exp())),
    ]
}

#[test]
fn oracle_across_generators_and_sizes() {
    for (name, f) in generators() {
        for n in [1usize, 10, 256, 257, 1000, 100_000] {
            let mut g = Gen::new(n as u64 * 7919);
            let samples: Vec<f64> = (0..n).map(|_| f(&mut g)).collect();
            check_against_oracle(name, &samples, DEFAULT_RELATIVE_ERROR);
            if n == 1000 {
                check_against_oracle(name, &samples, MIN_RELATIVE_ERROR);
                check_against_oracle(name, &samples, 0.05);
            }
        }
    }
}

#[test]
fn buckets_are_at_most_gamma_wide_and_report_within_alpha() {
    for alpha in [MIN_RELATIVE_ERROR, 0.01, 0.05, MAX_RELATIVE_ERROR] {
        let s = LatencySketch::new(alpha).unwrap();
        let gamma = (1.0 + alpha) / (1.0 - alpha);
        let (first, last) = (s.key(MIN_INDEXABLE_MS), s.key(MAX_MS));
        let step = ((last - first) / 4000).max(1);
        let mut k = first;
        while k <= last {
            let (lo, hi, v) = (s.lower_of(k), s.upper_of(k), s.value_of(k));
            assert!(hi / lo <= gamma * (1.0 + 1e-12), "α={alpha} k={k}: {lo}..{hi}");
            // The bucket's ends map back to it (one part in 10^12 inside).
            assert_eq!(s.key(hi * (1.0 - 1e-12)), k, "α={alpha} k={k}");
            assert_eq!(s.key(hi * (1.0 + 1e-12)), k + 1, "α={alpha} k={k}");
            assert_eq!(s.key(lo * (1.0 + 1e-12)), k, "α={alpha} k={k}");
            for x in [lo, hi] {
                assert!((v - x).abs() <= alpha * x * (1.0 + 1e-9), "α={alpha} k={k}: {v} vs {x}");
            }
            k += step;
        }
    }
    // L is within 0.01 of log2, and its inverse is exact to rounding.
    let mut g = Gen::new(17);
    for _ in 0..10_000 {
        let x = (g.unit() * 70.0 - 20.0).exp();
        assert!((log_like(x) - x.log2()).abs() < 0.01, "{x}");
        let back = log_like_inverse(log_like(x));
        assert!((back - x).abs() <= x * 1e-14, "{x} -> {back}");
    }
}

#[test]
fn merge_equals_single_pass() {
    for (name, f) in generators() {
        for (na, nb) in [(3usize, 5usize), (200, 100), (5000, 7), (40_000, 60_000)] {
            let mut g = Gen::new((na * 31 + nb) as u64);
            let a: Vec<f64> = (0..na).map(|_| f(&mut g)).collect();
            let b: Vec<f64> = (0..nb).map(|_| f(&mut g)).collect();
            let mut one = LatencySketch::default();
            one.add_all(&a).unwrap();
            one.add_all(&b).unwrap();
            let mut sa = LatencySketch::default();
            sa.add_all(&a).unwrap();
            let mut sb = LatencySketch::default();
            sb.add_all(&b).unwrap();
            sa.merge(&sb).unwrap();
            assert_eq!(sa.count(), one.count());
            assert_eq!(sa.is_exact(), one.is_exact());
            for q in QS {
                assert_eq!(sa.quantile(q).unwrap(), one.quantile(q).unwrap(), "{name} {na}+{nb} q={q}");
            }
            assert_eq!(sa.bins(), one.bins());
        }
    }
}

#[test]
fn rejects_bad_input_and_stays_unchanged() {
    let mut s = LatencySketch::default();
    s.add(5.0).unwrap();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, MAX_MS * 2.0] {
        assert!(matches!(s.add(bad), Err(SketchError::Sample { index: None, .. })));
    }
    let e = s.add_all(&[1.0, 2.0, f64::NAN, 4.0]).unwrap_err();
    assert!(matches!(e, SketchError::Sample { index: Some(2), .. }));
    assert!(e.to_string().starts_with("'samples[2]' must be a finite number of milliseconds"), "{e}");
    assert_eq!(s.count(), 1);
    for bad in [f64::NAN, -0.01, 1.01, f64::INFINITY] {
        let e = s.quantile(bad).unwrap_err();
        assert!(matches!(e, SketchError::Quantile { .. }));
        assert!(e.to_string().starts_with("'q' must be between 0 and 1: current value is"), "{e}");
    }
    assert_eq!(
        LatencySketch::new(0.0).unwrap_err().to_string(),
        "'relativeError' must be between 0.001 and 0.5: current value is 0"
    );
    assert!(LatencySketch::new(f64::NAN).is_err());
    let mut other = LatencySketch::new(0.02).unwrap();
    other.add(1.0).unwrap();
    assert_eq!(s.merge(&other), Err(SketchError::Mismatch { ours: 0.01, theirs: 0.02 }));
    let errors = [
        s.merge(&other).unwrap_err(),
        s.quantile(2.0).unwrap_err(),
        s.add(f64::NAN).unwrap_err(),
        s.add_all(&[1.0, -1.0]).unwrap_err(),
        LatencySketch::new(0.0).unwrap_err(),
    ];
    for e in errors {
        crate::core::error::assert_filled(&e.message());
    }
    assert_eq!(s.count(), 1);
}

#[test]
fn large_batches_are_all_or_nothing_even_after_growing_and_collapsing() {
    let mut g = Gen::new(23);
    let mut s = LatencySketch::default();
    s.add_all(&(0..5000).map(|_| 40.0 * (0.35 * g.normal()).exp()).collect::<Vec<_>>()).unwrap();
    let before = (s.count(), s.sum(), s.min(), s.max(), s.bins());
    let memory = s.memory_bytes();
    // Spans 1e-6 .. 9e15 ms (the array grows and collapses), then a NaN.
    let mut batch: Vec<f64> = (0..50_000).map(|_| (g.unit() * 57.0 - 13.8).exp().min(MAX_MS)).collect();
    batch.push(-0.0);
    batch.push(f64::NAN);
    batch.push(1.0);
    let e = s.add_all(&batch).unwrap_err();
    assert!(matches!(e, SketchError::Sample { index: Some(50_001), .. }), "{e}");
    assert_eq!((s.count(), s.sum(), s.min(), s.max(), s.bins()), before);
    assert!(s.memory_bytes() <= memory, "the restored copy holds no spare capacity");
    assert_eq!(s.collapsed_below_ms(), None);
    // The bulk path and one add() at a time agree.
    batch[50_001] = 7.0;
    let mut one = s.clone();
    for &x in &batch {
        one.add(x).unwrap();
    }
    s.add_all(&batch).unwrap();
    assert_eq!((s.count(), s.min(), s.max(), s.bins()), (one.count(), one.min(), one.max(), one.bins()));
    assert!((s.sum() - one.sum()).abs() <= 1e-9 * one.sum());
    assert!(s.collapsed_below_ms().is_some());
}

#[test]
fn empty_is_none_and_zero_works() {
    let mut s = LatencySketch::default();
    assert_eq!(s.quantile(0.5), Ok(None));
    assert_eq!(s.fraction_above(1.0), Ok(None));
    assert_eq!(s.min(), None);
    s.add_all(&vec![0.0; 1000]).unwrap();
    s.add(-0.0).unwrap();
    assert_eq!(s.quantile(0.99), Ok(Some(0.0)));
    assert_eq!(s.quantile(1.0).map(|v| v.map(f64::to_bits)), Ok(Some(0.0f64.to_bits())));
    s.add(10.0).unwrap();
    assert_eq!(s.quantile(1.0), Ok(Some(10.0)));
    assert_eq!(s.fraction_above(0.0), Ok(Some(1.0 / 1002.0)));
}

#[test]
fn memory_stays_bounded_on_extreme_ranges() {
    let mut s = LatencySketch::default();
    let mut g = Gen::new(9);
    for _ in 0..200_000 {
        // log-uniform over the whole accepted domain, 1e-9 .. 9e15 ms
        let v = (g.unit() * 57.0 - 20.7).exp().min(MAX_MS);
        s.add(v).unwrap();
    }
    assert!(s.memory_bytes() <= MAX_MEMORY_BYTES, "{}", s.memory_bytes());
    let below = s.collapsed_below_ms().expect("a 1e25 range must collapse");
    // The tail keeps its accuracy: the top 1536 buckets span 2e13.
    assert!(below > 1e2 && below < 1e3, "{below}");
    let p999 = s.quantile(0.999).unwrap().unwrap();
    assert!(p999 > 1e14);
    // 1 ms .. 1 h never collapses and uses well under the bound.
    let mut s = LatencySketch::default();
    s.add_all(&[1.0, 3_600_000.0]).unwrap();
    for i in 0..1000 {
        s.add(1.0 + i as f64 * 3599.0).unwrap();
    }
    assert_eq!(s.collapsed_below_ms(), None);
    assert!(s.memory_bytes() <= 8 * 1024, "{}", s.memory_bytes());
    // Descending input (the worst case for growth) stays bounded too.
    let mut s = LatencySketch::new(MIN_RELATIVE_ERROR).unwrap();
    let mut v = 3_600_000.0;
    while v > 1.0 {
        s.add(v).unwrap();
        v *= 0.999;
    }
    assert!(s.memory_bytes() <= MAX_MEMORY_BYTES, "{}", s.memory_bytes());
    assert!(s.collapsed_below_ms().is_some());
}

#[test]
fn fraction_above_matches_oracle_within_one_bucket() {
    let mut g = Gen::new(3);
    let xs: Vec<f64> = (0..50_000).map(|_| 40.0 * (0.35 * g.normal()).exp()).collect();
    let mut s = LatencySketch::default();
    s.add_all(&xs).unwrap();
    for t in [10.0, 40.0, 63.0, 98.0, 200.0] {
        let got = s.fraction_above(t).unwrap().unwrap();
        let lo = xs.iter().filter(|&&x| x > t * 1.03).count() as f64 / xs.len() as f64;
        let hi = xs.iter().filter(|&&x| x > t / 1.03).count() as f64 / xs.len() as f64;
        assert!(got >= lo && got <= hi, "t={t}: {lo} <= {got} <= {hi}");
        // Interpolating inside the bucket lands much closer than its width.
        let exact = xs.iter().filter(|&&x| x > t).count() as f64 / xs.len() as f64;
        assert!((got - exact).abs() <= 0.2 * (hi - lo) + 1e-9, "t={t}: {got} vs exact {exact}");
    }
}

fn sample_vec() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![Just(0.0), 0.0..1e-5f64, 0.0..10.0f64, 0.0..1e6f64, 1e6..1e12f64, Just(MAX_MS)],
        1..600,
    )
}

/// Every field, compared bit for bit (NaN-free, so `to_bits` equality is equality).
fn same_state(a: &LatencySketch, b: &LatencySketch) -> bool {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    a.alpha.to_bits() == b.alpha.to_bits()
        && a.multiplier.to_bits() == b.multiplier.to_bits()
        && a.counts == b.counts
        && a.offset == b.offset
        && (a.zero_count, a.count) == (b.zero_count, b.count)
        && bits(&[a.sum, a.min, a.max]) == bits(&[b.sum, b.min, b.max])
        && a.exact.as_deref().map(bits) == b.exact.as_deref().map(bits)
        && a.collapsed_below.map(f64::to_bits) == b.collapsed_below.map(f64::to_bits)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Parking a sketch as bytes and back changes nothing, and the
    /// restored sketch keeps working like the original.
    #[test]
    fn bytes_round_trip(xs in sample_vec(), more in sample_vec(), alpha in prop_oneof![Just(0.01), Just(0.001), 0.001..0.5f64]) {
        let mut s = LatencySketch::new(alpha).unwrap();
        s.add_all(&xs).unwrap();
        let mut back = LatencySketch::from_bytes(&s.to_bytes()).unwrap();
        prop_assert!(same_state(&back, &s));
        s.add_all(&more).unwrap();
        back.add_all(&more).unwrap();
        prop_assert!(same_state(&back, &s));
        let empty = LatencySketch::new(alpha).unwrap();
        prop_assert!(same_state(&LatencySketch::from_bytes(&empty.to_bytes()).unwrap(), &empty));
    }

    /// Any bytes: an error or a sketch whose reads do not panic.
    #[test]
    fn bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..200), xs in sample_vec(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4)) {
        let _ = LatencySketch::from_bytes(&bytes);
        let mut s = LatencySketch::default();
        s.add_all(&xs).unwrap();
        bytes = s.to_bytes();
        for (i, v) in flips {
            let n = bytes.len();
            bytes[i % n] ^= v;
        }
        if let Ok(mut t) = LatencySketch::from_bytes(&bytes) {
            for q in QS {
                let _ = t.quantile(q);
            }
            let _ = (t.fraction_above(10.0), t.bins());
            t.add(1.0).unwrap();
            t.merge(&s).ok();
        }
    }

    #[test]
    fn quantiles_within_error_and_range(xs in sample_vec(), q in 0.0..=1.0f64) {
        let mut s = LatencySketch::default();
        s.add_all(&xs).unwrap();
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        let want = exact_quantile(&sorted, q);
        let got = s.quantile(q).unwrap().unwrap();
        if want > s.collapsed_below_ms().unwrap_or(0.0) {
            prop_assert!((got - want).abs() <= 0.01 * want * (1.0 + 1e-9) + MIN_INDEXABLE_MS, "{got} vs {want}");
        }
        prop_assert!(got >= sorted[0] && got <= sorted[sorted.len() - 1]);
    }

    #[test]
    fn quantiles_are_monotone(xs in sample_vec(), a in 0.0..=1.0f64, b in 0.0..=1.0f64) {
        let mut s = LatencySketch::default();
        s.add_all(&xs).unwrap();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(s.quantile(lo).unwrap() <= s.quantile(hi).unwrap());
    }

    #[test]
    fn merge_is_single_pass(xs in sample_vec(), ys in sample_vec(), q in 0.0..=1.0f64) {
        let mut a = LatencySketch::default();
        a.add_all(&xs).unwrap();
        let mut b = LatencySketch::default();
        b.add_all(&ys).unwrap();
        let mut one = a.clone();
        one.add_all(&ys).unwrap();
        a.merge(&b).unwrap();
        prop_assert_eq!(a.quantile(q).unwrap(), one.quantile(q).unwrap());
        prop_assert_eq!(a.count(), one.count());
    }

    #[test]
    fn never_panics_or_returns_nan(xs in prop::collection::vec(any::<f64>(), 0..50), q in any::<f64>()) {
        let mut s = LatencySketch::default();
        let before = s.count();
        if s.add_all(&xs).is_err() {
            prop_assert_eq!(s.count(), before);
        }
        for &x in &xs {
            let _ = s.add(x);
            let _ = s.fraction_above(x);
        }
        match s.quantile(q) {
            Ok(Some(v)) => prop_assert!(v.is_finite() && v >= 0.0),
            Ok(None) => prop_assert!(s.is_empty()),
            Err(e) => {
                let is_q = matches!(e, SketchError::Quantile { .. });
                prop_assert!(is_q, "{e}");
            }
        }
    }
}

/// [`log_like_inverse`] as it was first written: always eight Newton steps.
fn log_like_inverse_eight_steps(y: f64) -> f64 {
    let e = y.floor();
    let t = y - e;
    let mut s = t;
    for _ in 0..8 {
        let slope = (3.0 * CUBIC_A * s + 2.0 * CUBIC_B) * s + CUBIC_C;
        s -= (cubic(s) - t) / slope;
    }
    let s = s.clamp(0.0, 1.0);
    let e = (e as i32).clamp(-1022, 1023);
    f64::from_bits(((e + 1023) as u64) << 52) * (1.0 + s)
}

/// Stopping Newton's method once a step changes nothing gives every bucket
/// bound bit for bit as the eight steps do: every key of every multiplier
/// a sketch may have, and arbitrary points.
#[test]
fn the_inverse_stops_early_with_the_same_bits() {
    for alpha in [MIN_RELATIVE_ERROR, 0.005, DEFAULT_RELATIVE_ERROR, 0.02, 0.1, MAX_RELATIVE_ERROR] {
        let s = LatencySketch::new(alpha).unwrap();
        let (lo, hi) = (s.key(MIN_INDEXABLE_MS) - 2, s.key(MAX_MS) + 2);
        for k in lo..=hi {
            let y = f64::from(k) / s.multiplier;
            assert_eq!(log_like_inverse(y).to_bits(), log_like_inverse_eight_steps(y).to_bits(), "α={alpha} k={k}");
        }
    }
    let mut g = Gen::new(23);
    for _ in 0..100_000 {
        let y = g.unit() * 120.0 - 40.0;
        assert_eq!(log_like_inverse(y).to_bits(), log_like_inverse_eight_steps(y).to_bits(), "y={y}");
    }
}

/// Each bin of a sketch that is not exact is its key's value ([`LatencySketch::value_of`],
/// clamped), bit for bit, whether its neighbours are empty or not.
#[test]
fn bins_are_their_keys_values() {
    let mut g = Gen::new(29);
    for alpha in [MIN_RELATIVE_ERROR, DEFAULT_RELATIVE_ERROR, 0.1] {
        for spread in [0.05, 1.0, 4.0, 12.0] {
            let mut s = LatencySketch::new(alpha).unwrap();
            let xs: Vec<f64> = (0..3000).map(|_| (50.0 * (spread * g.normal()).exp()).min(MAX_MS)).collect();
            s.add_all(&xs).unwrap();
            s.add_all(&[0.0, 0.0]).unwrap();
            assert!(!s.is_exact());
            let mut want = vec![Bin { ms: 0.0, count: s.zero_count }];
            for (i, &c) in s.counts.iter().enumerate() {
                if c > 0 {
                    let key = s.offset + i as i32;
                    let lo = log_like_inverse_eight_steps(f64::from(key - 1) / s.multiplier);
                    let hi = log_like_inverse_eight_steps(f64::from(key) / s.multiplier);
                    want.push(Bin { ms: s.clamp(2.0 * lo * hi / (lo + hi)), count: c });
                }
            }
            let got = s.bins();
            assert_eq!(got.len(), want.len());
            for (a, b) in got.iter().zip(&want) {
                assert_eq!((a.ms.to_bits(), a.count), (b.ms.to_bits(), b.count), "α={alpha} spread={spread}");
            }
        }
    }
}

/// One [`BoundCache`] shared by sketches of every range and relative error
/// (growing, starting again past its bound, switching multipliers) gives
/// each sketch its own [`LatencySketch::bins`], bit for bit.
#[test]
fn bins_through_a_shared_bound_cache_are_the_bins() {
    let mut g = Gen::new(31);
    let mut cache = BoundCache::default();
    let mut started_again = 0;
    for round in 0..60 {
        let alpha =
            [DEFAULT_RELATIVE_ERROR, DEFAULT_RELATIVE_ERROR, MIN_RELATIVE_ERROR, MIN_RELATIVE_ERROR, 0.1][round % 5];
        let range = |c: &BoundCache| (c.offset, c.offset + c.values.len() as i32);
        let before = (cache.multiplier, range(&cache));
        let (center, spread) = ((g.unit() * 40.0 - 15.0).exp(), [0.02, 0.5, 3.0, 10.0][round % 3 + (round / 30)]);
        let mut s = LatencySketch::new(alpha).unwrap();
        let n = [5, 300, 5000][round % 3];
        let xs: Vec<f64> = (0..n).map(|_| (center * (spread * g.normal()).exp()).min(MAX_MS)).collect();
        s.add_all(&xs).unwrap();
        let (want, got) = (s.bins(), s.bins_with(&mut cache));
        assert_eq!(got.len(), want.len(), "round {round}");
        for (a, b) in got.iter().zip(&want) {
            assert_eq!((a.ms.to_bits(), a.count), (b.ms.to_bits(), b.count), "round {round}");
        }
        assert!(cache.values.len() <= BoundCache::MAX_KEYS, "round {round}: {}", cache.values.len());
        let after = range(&cache);
        if before.0 == cache.multiplier && !(after.0 <= before.1 .0 && after.1 >= before.1 .1) {
            started_again += 1;
        }
    }
    assert!(started_again > 0, "no sketch fell outside the cache's bound");
}

/// A merge whose keys partly fall below what the receiver keeps (its
/// lowest buckets collapsed) folds them into its lowest bucket, as adding
/// the samples to it one by one does.
#[test]
fn merging_below_a_collapsed_range_folds_as_adding_does() {
    let mut g = Gen::new(37);
    for (lo, hi, below) in [(100.0, 2000.0, 1.0), (100.0, 2100.0, 60.0), (300.0, 6000.0, 0.5)] {
        let a: Vec<f64> = (0..4000).map(|_| lo + g.unit() * (hi - lo)).collect();
        let b: Vec<f64> = (0..500).map(|_| below * (1.0 + 4.0 * g.unit())).collect();
        let mut one = LatencySketch::new(MIN_RELATIVE_ERROR).unwrap();
        one.add_all(&a).unwrap();
        one.add_all(&b).unwrap();
        let mut sa = LatencySketch::new(MIN_RELATIVE_ERROR).unwrap();
        sa.add_all(&a).unwrap();
        let mut sb = LatencySketch::new(MIN_RELATIVE_ERROR).unwrap();
        sb.add_all(&b).unwrap();
        sa.merge(&sb).unwrap();
        assert!(sa.collapsed_below_ms().is_some(), "{lo}..{hi} and {below}: nothing collapsed");
        assert!(sa.same_as(&one), "{lo}..{hi} and {below}");
        assert_eq!(sa.bins(), one.bins());
    }
}
