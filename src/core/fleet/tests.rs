use super::*;
use crate::core::book::{FlushBucket, MAX_BUCKETS as MAX_FLUSH_BUCKETS};
use crate::core::rng::SplitMix64;

const HOUR: f64 = 3_600_000.0;
const T0: f64 = 1_800_000_000_000.0;

fn sketch_of(samples: &[f64]) -> LatencySketch {
    let mut s = LatencySketch::new(0.01).unwrap();
    s.add_all(samples).unwrap();
    s
}

fn bucket(name: &str, samples: &[f64], timeouts: u64, in_force_ms: Option<f64>) -> FlushBucket {
    FlushBucket { name: name.into(), in_force_ms, timeouts, errors: 0, successes: sketch_of(samples) }
}

fn flush(buckets: Vec<FlushBucket>) -> Vec<u8> {
    FlushBatch { relative_error: 0.01, buckets }.to_bytes()
}

fn agg() -> Aggregator {
    Aggregator::new(FleetOptions::default()).unwrap()
}

/// Log-normal-ish latencies around `median` ms.
fn latencies(rng: &mut SplitMix64, n: usize, median: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u = (rng.next_f64() + rng.next_f64() + rng.next_f64() - 1.5) * 2.0;
            median * (0.6 * u).exp()
        })
        .collect()
}

fn exact_quantile(samples: &[f64], q: f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    s[crate::core::sketch::rank_index(q, s.len())]
}

#[test]
fn merged_flushes_match_all_samples_in_one_place() {
    let mut rng = SplitMix64::new(7);
    let mut a = agg();
    let mut all = Vec::new();
    for _ in 0..50 {
        let xs = latencies(&mut rng, 2000, 120.0);
        a.merge(&flush(vec![bucket("api", &xs, 0, None)]), T0).unwrap();
        all.extend(xs);
    }
    let t = a.table(T0 + 1.0).unwrap();
    let (name, row) = &t.buckets[0];
    assert_eq!(name, "api");
    assert_eq!(row.n, 100_000);
    let want = exact_quantile(&all, 0.99) * 2.0;
    let got = row.timeout_ms.unwrap();
    assert!((got - want).abs() <= 0.01 * want + 1e-9, "{got} vs {want}");
    assert!(row.warnings.is_empty(), "{:?}", row.warnings);
    assert!(row.false_timeout_rate.unwrap() < 0.001);
    assert_eq!(row.floor_ms, None);
}

#[test]
fn refused_flushes_change_nothing() {
    let mut a = agg();
    let good = flush(vec![bucket("api", &[10.0, 20.0, 30.0], 1, Some(500.0))]);
    a.merge(&good, T0).unwrap();
    let before = a.to_bytes();
    let mut rng = SplitMix64::new(3);
    let mut hostile: Vec<Vec<u8>> = Vec::new();
    for cut in 0..good.len() {
        hostile.push(good[..cut].to_vec());
    }
    for _ in 0..200 {
        let n = (rng.next_f64() * 300.0) as usize;
        hostile.push((0..n).map(|_| (rng.next_f64() * 256.0) as u8).collect());
        let mut g = good.clone();
        let at = (rng.next_f64() * g.len() as f64) as usize;
        g[at] ^= 1 + (rng.next_f64() * 254.0) as u8;
        // A flipped byte may still be a valid flush (a count, a name): only
        // check those that are refused.
        if FlushBatch::from_bytes(&g).is_err() {
            hostile.push(g);
        }
    }
    // Huge counts, NaN relative error, another relative error, trailing bytes, too big.
    let mut huge = flush(vec![bucket("api", &[1.0], 0, None)]);
    let at = 4 + 1 + 8 + 4 + 2 + 3 + 8;
    huge[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    hostile.push(huge);
    let mut nan = good.clone();
    nan[5..13].copy_from_slice(&f64::NAN.to_le_bytes());
    hostile.push(nan);
    let mut nan_force = good.clone();
    nan_force[4 + 1 + 8 + 4 + 2 + 3..][..8].copy_from_slice(&f64::INFINITY.to_le_bytes());
    hostile.push(nan_force);
    let mut other = LatencySketch::new(0.02).unwrap();
    other.add(5.0).unwrap();
    hostile.push(
        FlushBatch {
            relative_error: 0.02,
            buckets: vec![FlushBucket {
                name: "api".into(),
                in_force_ms: None,
                timeouts: 0,
                errors: 0,
                successes: other,
            }],
        }
        .to_bytes(),
    );
    let mut trailing = good.clone();
    trailing.push(0);
    hostile.push(trailing);
    hostile.push(vec![0u8; MAX_FLUSH_BYTES + 1]);
    let mut codes = Vec::new();
    for h in &hostile {
        let e = a.merge(h, T0).unwrap_err();
        codes.push(e.code());
        assert!(!e.to_string().is_empty());
        assert_eq!(a.to_bytes(), before, "{e}");
    }
    for c in ["TRUNCATED_BYTES", "FOREIGN_BYTES", "WRONG_PARAMETERS", "TOO_LARGE", "CORRUPT_BYTES", "TRAILING_BYTES"] {
        assert!(codes.contains(&c), "{c}");
    }
}

#[test]
fn a_count_past_2_53_is_refused_whole() {
    let mut a = agg();
    let big = (1u64 << 53) - 1;
    let b = FlushBucket { name: "x".into(), in_force_ms: None, timeouts: big, errors: 0, successes: sketch_of(&[]) };
    a.merge(&flush(vec![b.clone()]), T0).unwrap();
    let before = a.to_bytes();
    let more = vec![bucket("a-new", &[1.0], 0, None), FlushBucket { timeouts: 1, ..b }];
    assert_eq!(a.merge(&flush(more), T0).unwrap_err().code(), "COUNT_OVERFLOW");
    assert_eq!(a.to_bytes(), before);
}

#[test]
fn windows_age_out_and_are_reported() {
    let mut a = Aggregator::new(FleetOptions { windows: 3, ..FleetOptions::default() }).unwrap();
    for h in 0..5 {
        a.merge(&flush(vec![bucket("api", &[10.0 * (h + 1) as f64], 0, None)]), T0 + h as f64 * HOUR).unwrap();
    }
    assert_eq!(a.window_indexes().len(), 3);
    let c = a.take_changes();
    assert_eq!(c.dropped.len(), 2);
    assert_eq!(c.dirty.len(), 3);
    assert_eq!(a.take_changes(), Changes::default());
    a.expire(T0 + 10.0 * HOUR).unwrap();
    assert!(a.window_indexes().is_empty());
    assert_eq!(a.take_changes().dropped.len(), 3);
}

#[test]
fn a_median_that_doubles_shows_within_two_windows() {
    let mut rng = SplitMix64::new(11);
    let mut a = agg();
    let per_flush = 500;
    let mut t = T0;
    let step = HOUR / 20.0;
    // Ten windows at 100 ms.
    while t < T0 + 10.0 * HOUR {
        a.merge(&flush(vec![bucket("api", &latencies(&mut rng, per_flush, 100.0), 0, None)]), t).unwrap();
        t += step;
    }
    let before = a.table(t).unwrap().buckets[0].1.p50.unwrap();
    assert!((before - 100.0).abs() < 10.0, "{before}");
    // Then 200 ms: by the end of the second window the span is all new.
    let shift = t;
    while t < shift + 2.0 * HOUR {
        a.merge(&flush(vec![bucket("api", &latencies(&mut rng, per_flush, 200.0), 0, None)]), t).unwrap();
        t += step;
    }
    let after = a.table(t - 1.0).unwrap().buckets[0].1.p50.unwrap();
    assert!((after - 200.0).abs() < 20.0, "{after}");
}

#[test]
fn a_quiet_bucket_reaches_back_for_samples() {
    let mut a = agg();
    for h in 0..20 {
        a.merge(&flush(vec![bucket("rare", &[50.0; 100], 0, None)]), T0 + h as f64 * HOUR).unwrap();
    }
    let row = &a.table(T0 + 19.0 * HOUR).unwrap().buckets[0].1;
    // 1 000 are needed for p99: ten windows of 100.
    assert_eq!(row.n, 1000);
    assert!(!row.warnings.iter().any(|w| w.code() == "small-sample"));
    let few = agg();
    let mut few = few;
    few.merge(&flush(vec![bucket("rare", &[50.0; 100], 0, None)]), T0).unwrap();
    assert!(few.table(T0).unwrap().buckets[0].1.warnings.iter().any(|w| w.code() == "small-sample"));
}

#[test]
fn the_floor_is_the_in_force_timeout_of_a_censored_span() {
    let mut rng = SplitMix64::new(5);
    let mut a = agg();
    // 1 000 successes under a 150 ms timeout, 50 timeouts (5% > 1%): censored.
    let xs: Vec<f64> = latencies(&mut rng, 1000, 100.0).into_iter().map(|x| x.min(149.0)).collect();
    a.merge(&flush(vec![bucket("api", &xs, 30, Some(150.0))]), T0).unwrap();
    a.merge(&flush(vec![bucket("api", &[], 20, Some(120.0))]), T0).unwrap();
    let row = &a.table(T0).unwrap().buckets[0].1;
    assert!(row.warnings.iter().any(|w| w.code() == "censored"));
    assert_eq!(row.floor_ms, Some(150.0));
    assert_eq!(row.timeouts, 50);
    // Few timeouts: no floor.
    let mut b = agg();
    b.merge(&flush(vec![bucket("api", &latencies(&mut rng, 2000, 100.0), 3, Some(150.0))]), T0).unwrap();
    let row = &b.table(T0).unwrap().buckets[0].1;
    assert_eq!(row.floor_ms, None);
    // Censored but no in-force value was reported: no floor either.
    let mut c = agg();
    c.merge(&flush(vec![bucket("api", &[10.0; 100], 50, None)]), T0).unwrap();
    assert_eq!(c.table(T0).unwrap().buckets[0].1.floor_ms, None);
}

#[test]
fn drift_against_the_value_in_force() {
    let mut a = agg();
    a.merge(&flush(vec![bucket("api", &[100.0; 2000], 0, Some(30_000.0))]), T0).unwrap();
    let row = &a.table(T0).unwrap().buckets[0].1;
    assert!(row.warnings.iter().any(|w| w.code() == "drift"), "{:?}", row.warnings);
}

#[test]
fn state_and_windows_round_trip() {
    let mut rng = SplitMix64::new(9);
    let mut a = agg();
    for h in 0..4 {
        for name in ["a", "b", "c"] {
            let b = bucket(name, &latencies(&mut rng, 300, 80.0), h, Some(400.0));
            a.merge(&flush(vec![b]), T0 + h as f64 * HOUR).unwrap();
        }
    }
    let now = T0 + 3.5 * HOUR;
    let bytes = a.to_bytes();
    let b = Aggregator::from_bytes(FleetOptions::default(), &bytes).unwrap();
    assert_eq!(b.table(now).unwrap(), a.table(now).unwrap());
    let mut c = agg();
    for i in a.window_indexes() {
        c.load_window(&a.window_bytes(i).unwrap()).unwrap();
    }
    assert_eq!(c.table(now).unwrap(), a.table(now).unwrap());
    // Another window length or relative error is refused; so is every cut.
    let other = FleetOptions { window_ms: 60_000.0, ..FleetOptions::default() };
    assert_eq!(Aggregator::from_bytes(other, &bytes).unwrap_err().code(), "WRONG_PARAMETERS");
    let w = a.window_bytes(a.window_indexes()[0]).unwrap();
    let before = c.to_bytes();
    for cut in 0..w.len() {
        assert!(c.load_window(&w[..cut]).is_err());
        assert_eq!(c.to_bytes(), before);
    }
    for cut in 0..bytes.len() {
        assert!(Aggregator::from_bytes(FleetOptions::default(), &bytes[..cut]).is_err());
    }
}

#[test]
fn too_many_buckets_in_a_window_are_refused() {
    let mut a = agg();
    let names: Vec<FlushBucket> = (0..MAX_FLUSH_BUCKETS).map(|i| bucket(&format!("b{i}"), &[1.0], 0, None)).collect();
    a.merge(&flush(names), T0).unwrap();
    let before = a.to_bytes();
    assert_eq!(a.merge(&flush(vec![bucket("one-more", &[1.0], 0, None)]), T0).unwrap_err().code(), "TOO_MANY_BUCKETS");
    assert_eq!(a.to_bytes(), before);
}

#[test]
fn options_and_now_are_checked() {
    for (o, param) in [
        (FleetOptions { window_ms: 10.0, ..FleetOptions::default() }, "options.windowMs"),
        (FleetOptions { window_ms: f64::NAN, ..FleetOptions::default() }, "options.windowMs"),
        (FleetOptions { windows: 0, ..FleetOptions::default() }, "options.windows"),
        (FleetOptions { q: 1.0, ..FleetOptions::default() }, "options.q"),
        (FleetOptions { safety: 0.5, ..FleetOptions::default() }, "options.safety"),
    ] {
        assert_eq!(Aggregator::new(o).unwrap_err().param().as_deref(), Some(param));
    }
    let mut a = agg();
    assert_eq!(a.merge(&flush(vec![]), f64::NAN).unwrap_err().param().as_deref(), Some("nowMs"));
    assert!(a.table(-1.0).is_err());
}

#[test]
fn iso_dates() {
    assert_eq!(iso_8601(0.0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_8601(951_782_400_123.0), "2000-02-29T00:00:00.123Z");
    assert_eq!(iso_8601(1_800_000_000_000.0), "2027-01-15T08:00:00.000Z");
}

#[test]
fn the_table_serializes_as_the_contract_says() {
    let mut a = agg();
    a.merge(&flush(vec![bucket("api", &[10.0, 20.0], 0, None)]), T0).unwrap();
    let json = serde_json::to_value(a.table(T0).unwrap()).unwrap();
    assert_eq!(json["v"], 1);
    assert_eq!(json["windows"], 24);
    let row = &json["buckets"]["api"];
    for k in ["n", "timeouts", "errors", "timeoutMs", "p50", "p99", "floorMs", "falseTimeoutRate", "warnings"] {
        assert!(row.get(k).is_some(), "{k}");
    }
    assert_eq!(row["floorMs"], serde_json::Value::Null);
    assert_eq!(row["warnings"][0]["code"], "small-sample");
}
