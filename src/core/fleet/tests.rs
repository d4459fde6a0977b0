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
fn a_saturated_bucket_is_refused_alone() {
    // A bucket at 2^53 − 1 made every later flush carrying it refused whole
    // (COUNT_OVERFLOW), honest buckets with it. Now only that bucket is.
    let mut a = agg();
    let big = (1u64 << 53) - 1;
    let b = FlushBucket { name: "x".into(), in_force_ms: None, timeouts: 0, errors: 0, successes: sketch_of(&[]) };
    let mut c = agg();
    // Saturate through a stored window (a flush carries at most MAX_FLUSH_CALLS).
    c.merge(&flush(vec![b.clone()]), T0).unwrap();
    let mut w = c.window_bytes(c.window_indexes()[0]).unwrap();
    let at = w.len() - 4 - 16;
    w[at..at + 8].copy_from_slice(&big.to_le_bytes());
    a.load_window(&w).unwrap();
    let more = vec![bucket("a-new", &[1.0], 0, None), FlushBucket { timeouts: 1, ..b }];
    let m = a.merge(&flush(more), T0).unwrap();
    assert_eq!(m.refused.len(), 1);
    assert_eq!(m.refused[0].bucket, "x");
    assert_eq!(m.refused[0].error.code(), "COUNT_OVERFLOW");
    let t = a.table(T0).unwrap();
    assert_eq!(t.buckets.iter().find(|(n, _)| n == "a-new").unwrap().1.n, 1);
    assert_eq!(t.buckets.iter().find(|(n, _)| n == "x").unwrap().1.timeouts, big);
    still_works(&a, T0 + 1.0).unwrap();
}

#[test]
fn counts_past_what_one_isolate_records_in_a_flush_are_refused_per_bucket() {
    let mut a = agg();
    let over = FlushBucket {
        name: "collapse".into(),
        in_force_ms: Some(1000.0),
        timeouts: MAX_FLUSH_CALLS,
        errors: 0,
        successes: sketch_of(&[0.05]),
    };
    let at_cap = FlushBucket { name: "busy".into(), timeouts: MAX_FLUSH_CALLS - 1, ..over.clone() };
    let m = a.merge(&flush(vec![over, at_cap, bucket("api", &[10.0], 0, None)]), T0).unwrap();
    assert_eq!(m.refused.len(), 1);
    assert_eq!((m.refused[0].bucket.as_str(), m.refused[0].error.code()), ("collapse", "TOO_MANY_CALLS"));
    assert!(m.refused[0].error.to_string().contains(&MAX_FLUSH_CALLS.to_string()), "{}", m.refused[0].error);
    let t = a.table(T0).unwrap();
    let names: Vec<&str> = t.buckets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["api", "busy"]);
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
    let mut b = Aggregator::from_bytes(FleetOptions::default(), &bytes).unwrap();
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
fn a_full_window_still_merges_the_buckets_it_has() {
    // 1 024 junk names filled the window and every flush naming a new
    // bucket was refused whole (TOO_MANY_BUCKETS). Now only new names are.
    let mut a = agg();
    let mut names: Vec<FlushBucket> =
        (0..MAX_FLUSH_BUCKETS - 1).map(|i| bucket(&format!("junk{i:04}"), &[1.0], 0, None)).collect();
    names.push(bucket("api", &[10.0], 0, None));
    assert!(a.merge(&flush(names), T0).unwrap().refused.is_empty());
    let before = a.to_bytes();
    // Only new names: nothing changes, each one named with its reason.
    let m =
        a.merge(&flush(vec![bucket("one-more", &[1.0], 0, None), bucket("two-more", &[1.0], 0, None)]), T0).unwrap();
    let refused: Vec<(&str, &str)> = m.refused.iter().map(|r| (r.bucket.as_str(), r.error.code())).collect();
    assert_eq!(refused, [("one-more", "TOO_MANY_BUCKETS"), ("two-more", "TOO_MANY_BUCKETS")]);
    assert_eq!(a.to_bytes(), before);
    assert!(a.take_changes().dirty.len() == 1);
    // An honest flush with a known name and a new one: the known one merges.
    let m = a
        .merge(&flush(vec![bucket("api", &[20.0, 30.0], 1, Some(500.0)), bucket("new", &[1.0], 0, None)]), T0)
        .unwrap();
    assert_eq!(m.refused.len(), 1);
    assert_eq!(m.refused[0].bucket, "new");
    let t = a.table(T0).unwrap();
    let api = &t.buckets.iter().find(|(n, _)| n == "api").unwrap().1;
    assert_eq!((api.n, api.timeouts), (3, 1));
    assert_eq!(a.take_changes().dirty, [a.window_index(T0) as f64]);
    still_works(&a, T0 + 1.0).unwrap();
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

/// What every accepted flush must leave working: the table, a state round
/// trip, every window read back alone, and the same table from both.
fn still_works(a: &Aggregator, now: f64) -> Result<(), String> {
    let mut a = a.clone();
    let t = a.table(now).map_err(|e| format!("table: {e}"))?;
    let mut b = Aggregator::from_bytes(*a.options(), &a.to_bytes()).map_err(|e| format!("read back: {e}"))?;
    let mut c = Aggregator::new(*a.options()).map_err(|e| e.to_string())?;
    for i in a.window_indexes() {
        let w = a.window_bytes(i).ok_or("a kept window has no bytes")?;
        c.load_window(&w).map_err(|e| format!("window {i} read back: {e}"))?;
    }
    for other in [&mut b, &mut c] {
        let u = other.table(now).map_err(|e| format!("table after read back: {e}"))?;
        if u != t {
            return Err("the table read back differs".into());
        }
    }
    for (name, row) in &t.buckets {
        for v in [row.timeout_ms, row.p50, row.p99, row.floor_ms].into_iter().flatten() {
            if !(0.0..=crate::core::deadline::MAX_MS).contains(&v) {
                return Err(format!("bucket {name}: a value {v} no duration has"));
            }
        }
    }
    Ok(())
}

#[test]
fn an_in_force_timeout_no_window_holds_is_refused_with_the_flush() {
    // The flush reader accepted any finite value; windows and the derivation
    // at most 2^53 − 1: table() then failed and the window did not read back.
    for v in [1e300, f64::MAX, crate::core::deadline::MAX_MS + 2.0, 1e16] {
        let mut a = agg();
        a.merge(&flush(vec![bucket("honest", &[10.0; 50], 0, Some(100.0))]), T0).unwrap();
        let before = a.to_bytes();
        let e = a.merge(&flush(vec![bucket("api", &[10.0], 5, Some(v))]), T0).unwrap_err();
        assert_eq!(e.code(), "CORRUPT_BYTES", "{v}: {e}");
        assert_eq!(a.to_bytes(), before);
        still_works(&a, T0 + 1.0).unwrap();
        assert!(FlushBatch::from_bytes(&flush(vec![bucket("api", &[10.0], 5, Some(v))])).is_err());
    }
    // The largest value every reader accepts is accepted by each.
    let mut a = agg();
    a.merge(&flush(vec![bucket("api", &[10.0], 5, Some(crate::core::deadline::MAX_MS))]), T0).unwrap();
    still_works(&a, T0 + 1.0).unwrap();
}

/// Cases of the mutated-flush fuzz: `FLEET_FUZZ_CASES` (100 000 for the long
/// run: `FLEET_FUZZ_CASES=100000 cargo test --lib accepted_flushes`), 512 by default.
fn fuzz_cases() -> u32 {
    std::env::var("FLEET_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
}

/// Values a hostile flush puts where a number goes.
const F64_EDGES: [f64; 14] = [
    1e300,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
    -0.0,
    0.0,
    -1.0,
    f64::INFINITY,
    f64::NAN,
    9_007_199_254_740_991.0,
    9_007_199_254_740_992.0,
    86_400_000.0,
    0.05,
    1e-7,
];
const U64_EDGES: [u64; 6] = [0, 1, (1 << 53) - 1, 1 << 53, u64::MAX, 300_000];

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn honest() -> Vec<u8> {
        let xs: Vec<f64> = (1..=400).map(|i| f64::from(i) * 0.7).collect();
        flush(vec![
            bucket("api", &xs, 3, Some(500.0)),
            FlushBucket { name: "db".into(), in_force_ms: None, timeouts: 0, errors: 2, successes: sketch_of(&[]) },
            bucket("llm", &[1200.0, 900.0, 3000.0], 1, Some(8000.0)),
        ])
    }

    #[derive(Debug, Clone)]
    enum Mutation {
        Flip(usize, u8),
        F64(usize, usize),
        U64(usize, usize),
        Cut(usize),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (any::<usize>(), 1u8..).prop_map(|(i, x)| Mutation::Flip(i, x)),
            (any::<usize>(), 0..F64_EDGES.len()).prop_map(|(i, k)| Mutation::F64(i, k)),
            (any::<usize>(), 0..U64_EDGES.len()).prop_map(|(i, k)| Mutation::U64(i, k)),
            any::<usize>().prop_map(Mutation::Cut),
        ]
    }

    fn apply(mut v: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
        for m in ms {
            let n = v.len();
            if n == 0 {
                break;
            }
            let mut put = |at: usize, b: [u8; 8]| {
                let at = at % n;
                for (k, x) in b.iter().enumerate() {
                    if let Some(slot) = v.get_mut(at + k) {
                        *slot = *x;
                    }
                }
            };
            match *m {
                Mutation::Flip(i, x) => v[i % n] ^= x,
                Mutation::F64(i, k) => put(i, F64_EDGES[k].to_le_bytes()),
                Mutation::U64(i, k) => put(i, U64_EDGES[k].to_le_bytes()),
                Mutation::Cut(i) => v.truncate(i % n + 1),
            }
        }
        v
    }

    /// A bucket built field by field from hostile values (the writer writes
    /// whatever it holds).
    fn hostile_bucket() -> impl Strategy<Value = FlushBucket> {
        (
            prop_oneof![Just("api".to_string()), "[a-z]{1,3}"],
            prop_oneof![any::<f64>(), (0..F64_EDGES.len()).prop_map(|k| F64_EDGES[k])],
            prop_oneof![any::<u64>(), (0..U64_EDGES.len()).prop_map(|k| U64_EDGES[k])],
            prop_oneof![any::<u64>(), (0..U64_EDGES.len()).prop_map(|k| U64_EDGES[k])],
            prop::collection::vec(prop_oneof![0.0..1e7, (0..F64_EDGES.len()).prop_map(|k| F64_EDGES[k])], 0..6),
        )
            .prop_map(|(name, f, t, e, xs)| {
                let mut s = LatencySketch::new(0.01).unwrap();
                for x in xs {
                    let _ = s.add(x);
                }
                FlushBucket { name, in_force_ms: Some(f), timeouts: t, errors: e, successes: s }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: fuzz_cases(), failure_persistence: None, ..ProptestConfig::default() })]

        /// A mutated honest flush, merged after honest data: refused (and then
        /// nothing changed), or accepted and everything still works, also
        /// once it was merged a second time.
        #[test]
        fn accepted_flushes_never_break_a_read(ms in prop::collection::vec(mutation(), 1..4), hours in 0u8..3) {
            let mut a = agg();
            a.merge(&honest(), T0).unwrap();
            let before = a.to_bytes();
            let bytes = apply(honest(), &ms);
            let now = T0 + f64::from(hours) * HOUR;
            match a.merge(&bytes, now) {
                Ok(_) => {
                    prop_assert_eq!(still_works(&a, now + 1.0), Ok(()));
                    // Accepted once, it may come again (a sender that sends it twice): still working.
                    let _ = a.merge(&bytes, now);
                    prop_assert_eq!(still_works(&a, now + 1.0), Ok(()));
                }
                Err(_) => prop_assert_eq!(a.to_bytes(), before),
            }
        }

        /// Buckets of hostile field values, written by the writer as they are.
        #[test]
        fn accepted_hostile_buckets_never_break_a_read(bs in prop::collection::vec(hostile_bucket(), 1..4)) {
            let mut a = agg();
            a.merge(&honest(), T0).unwrap();
            let before = a.to_bytes();
            let mut seen = std::collections::HashSet::new();
            let bs: Vec<FlushBucket> = bs.into_iter().filter(|b| seen.insert(b.name.clone())).collect();
            match a.merge(&flush(bs), T0 + 5.0) {
                Ok(_) => prop_assert_eq!(still_works(&a, T0 + 6.0), Ok(())),
                Err(_) => prop_assert_eq!(a.to_bytes(), before),
            }
        }
    }
}

/// The names whose rows the aggregator keeps derived.
fn kept_rows(a: &Aggregator) -> Vec<&str> {
    a.rows.rows.iter().map(|k| k.name.as_str()).collect()
}

/// The table derived from scratch: a new aggregator holding the same state.
fn from_scratch(a: &Aggregator, now: f64) -> Table {
    Aggregator::from_bytes(*a.options(), &a.to_bytes()).unwrap().table(now).unwrap()
}

#[test]
fn a_flush_derives_again_only_the_rows_it_touched() {
    let mut a = agg();
    let xs: Vec<f64> = (1..=300).map(f64::from).collect();
    a.merge(&flush(vec![bucket("a", &xs, 0, None), bucket("b", &xs, 1, Some(900.0)), bucket("c", &xs, 0, None)]), T0)
        .unwrap();
    a.merge(&flush(vec![bucket("a", &xs, 0, None), bucket("d", &xs, 0, None)]), T0 + HOUR).unwrap();
    let now = T0 + HOUR + 10.0;
    assert_eq!(a.table(now).unwrap(), from_scratch(&a, now));
    assert_eq!(kept_rows(&a), ["a", "b", "c", "d"]);
    // A flush forgets the rows of its buckets only.
    a.merge(&flush(vec![bucket("b", &[5000.0], 2, Some(1200.0)), bucket("e", &[3.0], 0, None)]), now).unwrap();
    assert_eq!(kept_rows(&a), ["a", "c", "d"]);
    assert_eq!(a.table(now + 1.0).unwrap(), from_scratch(&a, now + 1.0));
    assert_eq!(kept_rows(&a), ["a", "b", "c", "d", "e"]);
    // A window loaded as it is forgets nothing; one with a bucket changed forgets that one.
    let mut other = a.clone();
    let w = a.window_bytes(a.window_index(now)).unwrap();
    a.load_window(&w).unwrap();
    assert_eq!(kept_rows(&a), ["a", "b", "c", "d", "e"]);
    other.merge(&flush(vec![bucket("d", &[7.0], 0, None)]), now).unwrap();
    a.load_window(&other.window_bytes(a.window_index(now)).unwrap()).unwrap();
    assert_eq!(kept_rows(&a), ["a", "b", "c", "e"]);
    assert_eq!(a.table(now + 2.0).unwrap(), from_scratch(&a, now + 2.0));
    // The next window: every span moves, every row is derived again.
    let later = now + HOUR;
    assert_eq!(a.table(later).unwrap(), from_scratch(&a, later));
    // A window dropped forgets the rows of its buckets.
    a.expire(T0 + 24.0 * HOUR).unwrap();
    assert_eq!(a.window_indexes(), [a.window_index(T0 + HOUR)]);
    assert_eq!(kept_rows(&a), ["d", "e"]);
    assert_eq!(a.table(later).unwrap(), from_scratch(&a, later));
}

/// A read in a new window derives again the rows whose span moved and
/// keeps the others: a span that reaches back the same windows holds the
/// same cells (no change reached them: a change forgets its rows).
#[test]
fn a_new_window_derives_again_only_the_rows_whose_span_moved() {
    let mut a = agg();
    let many: Vec<f64> = (1..=1200).map(|i| f64::from(i) / 10.0).collect();
    let few: Vec<f64> = (1..=30).map(f64::from).collect();
    for w in 0..3 {
        let at = T0 + f64::from(w) * HOUR;
        a.merge(&flush(vec![bucket("busy", &many, 0, None), bucket("quiet", &few, 1, Some(80.0))]), at).unwrap();
    }
    let now = T0 + 2.0 * HOUR + 10.0;
    assert_eq!(a.table(now).unwrap(), from_scratch(&a, now));
    assert_eq!(a.rows.derived, 2);
    // The next window holds nothing yet: the busy bucket's span moves (the
    // window before the current one is now the last one), the quiet one
    // still reaches back to the first window.
    let next = now + HOUR;
    assert_eq!(a.table(next).unwrap(), from_scratch(&a, next));
    assert_eq!(a.rows.derived, 3, "only the busy row is derived again");
    // Read again in the same window: nothing is derived.
    assert_eq!(a.table(next + 1.0).unwrap(), from_scratch(&a, next + 1.0));
    assert_eq!(a.rows.derived, 3);
    // A clock that went back: the busy span moves back, the quiet one stays.
    assert_eq!(a.table(now).unwrap(), from_scratch(&a, now));
    assert_eq!(a.rows.derived, 4);
    // Once the first window is dropped, the quiet span moves too.
    let later = T0 + 24.0 * HOUR;
    assert_eq!(a.table(later).unwrap(), from_scratch(&a, later));
    assert_eq!(a.rows.derived, 6);
}

proptest::proptest! {
    /// The names of a table are the union of its windows' names, each once, in order.
    #[test]
    fn the_union_of_sorted_names_is_every_name_once_in_order(
        a in proptest::collection::btree_set("[a-d]{0,3}", 0..12),
        b in proptest::collection::btree_set("[a-d]{0,3}", 0..12),
    ) {
        let left: Vec<&str> = a.iter().map(String::as_str).collect();
        let got = union(&left, b.iter().map(String::as_str));
        let want: Vec<&str> = a.union(&b).map(String::as_str).collect();
        proptest::prop_assert_eq!(got, want);
    }
}

mod incremental {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Buckets (name index, samples, timeouts, in-force) flushed `step` ms after the last instant.
        Merge(Vec<(u8, Vec<u16>, u8, Option<u16>)>, u32),
        /// The table, `step` ms on.
        Table(u32),
        /// Expire, `step` ms on.
        Expire(u32),
        /// A window of another aggregator given these flushes, loaded (as from storage).
        Load(Vec<(u8, Vec<u16>, u8, Option<u16>)>, i8),
        /// A clock that went back.
        Back(u32),
        /// A flush refused whole (`0`: bytes cut short, `1`: another relative
        /// error, `2`: a bucket past `MAX_FLUSH_CALLS`, alone), or a damaged window loaded (`3`).
        Refused(Vec<(u8, Vec<u16>, u8, Option<u16>)>, u8),
    }

    const WINDOW: f64 = 1000.0;
    const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

    fn buckets() -> impl Strategy<Value = Vec<(u8, Vec<u16>, u8, Option<u16>)>> {
        prop::collection::vec(
            (0u8..6, prop::collection::vec(1u16..5000, 0..40), 0u8..4, prop::option::of(1u16..3000)),
            1..4,
        )
    }

    fn step() -> impl Strategy<Value = u32> {
        prop_oneof![0u32..50, 0u32..1500, 0u32..9000]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (buckets(), step()).prop_map(|(b, s)| Op::Merge(b, s)),
            3 => step().prop_map(Op::Table),
            1 => step().prop_map(Op::Expire),
            1 => (buckets(), -2i8..2).prop_map(|(b, d)| Op::Load(b, d)),
            1 => (0u32..3000).prop_map(Op::Back),
            1 => (buckets(), 0u8..4).prop_map(|(b, k)| Op::Refused(b, k)),
        ]
    }

    fn to_flush(bs: &[(u8, Vec<u16>, u8, Option<u16>)]) -> Vec<u8> {
        let mut seen = std::collections::HashSet::new();
        let list = bs
            .iter()
            .filter(|b| seen.insert(b.0))
            .map(|(n, xs, t, f)| {
                let xs: Vec<f64> = xs.iter().map(|&x| f64::from(x) / 4.0).collect();
                bucket(NAMES[*n as usize], &xs, u64::from(*t), f.map(f64::from))
            })
            .collect();
        flush(list)
    }

    fn run(ops: Vec<Op>, q: f64) -> Result<(), TestCaseError> {
        let opts = FleetOptions { window_ms: WINDOW, windows: 4, q, ..FleetOptions::default() };
        let mut a = Aggregator::new(opts).unwrap();
        let mut now = T0;
        for op in ops {
            match op {
                Op::Merge(bs, s) => {
                    now += f64::from(s);
                    let _ = a.merge(&to_flush(&bs), now);
                }
                Op::Table(s) => now += f64::from(s),
                Op::Expire(s) => {
                    now += f64::from(s);
                    a.expire(now).unwrap();
                }
                Op::Load(bs, d) => {
                    let at = now + f64::from(d) * WINDOW;
                    let mut other = a.clone();
                    if other.merge(&to_flush(&bs), at).is_ok() {
                        let index = other.window_index(at);
                        if let Some(w) = other.window_bytes(index) {
                            a.load_window(&w).unwrap();
                        }
                    }
                }
                Op::Back(s) => now -= f64::from(s),
                Op::Refused(bs, kind) => {
                    let before = a.to_bytes();
                    let refused = match kind {
                        0 => {
                            let f = to_flush(&bs);
                            a.merge(&f[..f.len() - 1], now).is_err()
                        }
                        1 => {
                            let list = bs.iter().map(|(n, xs, t, f)| {
                                let mut s = LatencySketch::new(0.02).unwrap();
                                s.add_all(&xs.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()).unwrap();
                                FlushBucket {
                                    name: NAMES[*n as usize].into(),
                                    in_force_ms: f.map(f64::from),
                                    timeouts: u64::from(*t),
                                    errors: 0,
                                    successes: s,
                                }
                            });
                            let mut seen = std::collections::HashSet::new();
                            let list = list.filter(|b| seen.insert(b.name.clone())).collect();
                            a.merge(&FlushBatch { relative_error: 0.02, buckets: list }.to_bytes(), now).is_err()
                        }
                        2 => {
                            let (n, xs, _, f) = &bs[0];
                            let xs: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
                            let b = bucket(NAMES[*n as usize], &xs, MAX_FLUSH_CALLS + 1, f.map(f64::from));
                            let m = a.merge(&flush(vec![b]), now).unwrap();
                            m.merged == 0 && m.refused.len() == 1
                        }
                        _ => {
                            let mut other = a.clone();
                            let _ = other.merge(&to_flush(&bs), now);
                            let mut w = other.window_bytes(other.window_index(now)).unwrap_or_default();
                            w.push(0);
                            a.load_window(&w).is_err()
                        }
                    };
                    prop_assert!(refused);
                    prop_assert_eq!(a.to_bytes(), before);
                }
            }
            let kept = a.table(now).unwrap();
            let mut fresh = a.clone();
            fresh.rows = Rows::default();
            prop_assert_eq!(&kept, &fresh.table(now).unwrap());
            prop_assert_eq!(&kept, &from_scratch(&a, now));
        }
        Ok(())
    }

    /// A window loaded more than `windows` ahead of the oldest one dropped
    /// it, as the state read back does (it kept it, while `from_bytes`
    /// dropped it: the table read back differed).
    #[test]
    fn a_window_loaded_ahead_drops_what_the_state_read_back_drops() {
        let b = |n| vec![(n, vec![], 0, None)];
        run(vec![Op::Merge(b(0), 0), Op::Table(3000), Op::Load(b(1), 1), Op::Merge(b(0), 0)], 0.99).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// After any sequence of flushes, reads, expiries, windows loaded and
        /// clocks that went back, the table kept up to date is the table
        /// derived from scratch.
        #[test]
        fn the_kept_table_is_the_table_derived_from_scratch(ops in prop::collection::vec(op(), 1..40), q in prop_oneof![Just(0.99), Just(0.9), Just(0.5)]) {
            run(ops, q)?;
        }
    }
}

/// A sketch whose stored sum is `sum` (a hostile writer's: any finite sum reads).
fn sketch_with_sum(samples: &[f64], sum: f64) -> LatencySketch {
    let s = sketch_of(samples);
    let mut b = s.to_bytes();
    let honest = s.sum().to_le_bytes();
    let at = b.windows(8).position(|w| w == honest).unwrap();
    b[at..at + 8].copy_from_slice(&sum.to_le_bytes());
    LatencySketch::from_bytes(&b).unwrap()
}

#[test]
fn flushes_whose_sums_add_past_the_largest_float_still_read_back() {
    // Each sum reads (finite); merged, they passed f64::MAX: the window held
    // an infinite sum, which no reader takes, so it did not read back.
    let hostile = flush(vec![FlushBucket {
        name: "llm".into(),
        in_force_ms: None,
        timeouts: 0,
        errors: 0,
        successes: sketch_with_sum(&[900.0, 1200.0, 3000.0], f64::MAX),
    }]);
    let mut a = agg();
    for _ in 0..3 {
        a.merge(&hostile, T0).unwrap();
        still_works(&a, T0 + 1.0).unwrap();
    }
    let row = &a.table(T0 + 1.0).unwrap().buckets[0].1;
    assert_eq!((row.n, row.p99), (9, Some(3000.0)));
}
