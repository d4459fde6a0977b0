//! Tests of [`super`]: the flush codec's round trip, every refusal, and
//! arbitrary bytes.

use super::*;
use crate::core::deadline::MAX_MS;
use proptest::prelude::*;
use serve::usable;

fn sketch(alpha: f64, xs: &[f64]) -> LatencySketch {
    let mut s = LatencySketch::new(alpha).unwrap();
    s.add_all(xs).unwrap();
    s
}

fn bucket(name: &str, xs: &[f64]) -> FlushBucket {
    FlushBucket { name: name.into(), in_force_ms: Some(250.0), timeouts: 3, errors: 1, successes: sketch(0.01, xs) }
}

fn batch() -> FlushBatch {
    let many: Vec<f64> = (1..=2000).map(|i| f64::from(i) * 0.37).collect();
    FlushBatch {
        relative_error: 0.01,
        buckets: vec![
            bucket("GET /users", &[12.0, 40.5, 3.25]),
            FlushBucket { in_force_ms: None, timeouts: 0, errors: 0, ..bucket("ümlaut ✓", &many) },
            FlushBucket { timeouts: MAX_COUNT, errors: MAX_COUNT, ..bucket("only-timeouts", &[]) },
        ],
    }
}

/// Bucket by bucket: names, counts and in-force bits, sketches byte for byte.
fn same(a: &FlushBatch, b: &FlushBatch) {
    assert_eq!(a.relative_error.to_bits(), b.relative_error.to_bits());
    assert_eq!(a.buckets.len(), b.buckets.len());
    for (x, y) in a.buckets.iter().zip(&b.buckets) {
        assert_eq!(x.name, y.name);
        assert_eq!(x.in_force_ms.map(f64::to_bits), y.in_force_ms.map(f64::to_bits));
        assert_eq!((x.timeouts, x.errors), (y.timeouts, y.errors));
        assert_eq!(x.successes.to_bytes(), y.successes.to_bytes());
        assert_eq!(x.successes.quantile(0.99).unwrap(), y.successes.quantile(0.99).unwrap());
    }
}

#[test]
fn batches_round_trip() {
    let b = batch();
    let bytes = b.to_bytes();
    assert_eq!(&bytes[..5], b"EDTB\x01");
    same(&b, &FlushBatch::from_bytes(&bytes).unwrap());
    let empty = FlushBatch::new(0.02);
    assert_eq!(empty.to_bytes().len(), 17);
    same(&empty, &FlushBatch::from_bytes(&empty.to_bytes()).unwrap());
}

#[test]
fn the_layout_is_the_documented_one() {
    let b = FlushBatch {
        relative_error: 0.01,
        buckets: vec![FlushBucket {
            name: "ab".into(),
            in_force_ms: None,
            timeouts: 7,
            errors: 2,
            successes: sketch(0.01, &[]),
        }],
    };
    let mut want = b"EDTB\x01".to_vec();
    want.extend_from_slice(&0.01f64.to_le_bytes());
    want.extend_from_slice(&1u32.to_le_bytes());
    want.extend_from_slice(&2u16.to_le_bytes());
    want.extend_from_slice(b"ab");
    assert!(f64::from_le_bytes(b.to_bytes()[21..29].try_into().unwrap()).is_nan());
    want.extend_from_slice(&b.to_bytes()[21..29]);
    want.extend_from_slice(&7u64.to_le_bytes());
    want.extend_from_slice(&2u64.to_le_bytes());
    want.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(b.to_bytes(), want);
}

/// The bytes of `b` with the field at `at` (of `len` bytes) replaced by `with`.
fn patched(b: &FlushBatch, at: usize, with: &[u8]) -> Vec<u8> {
    let mut v = b.to_bytes();
    v[at..at + with.len()].copy_from_slice(with);
    v
}

fn one(name: &str, xs: &[f64]) -> FlushBatch {
    FlushBatch { relative_error: 0.01, buckets: vec![bucket(name, xs)] }
}

#[test]
fn every_refusal_names_its_problem() {
    let err = |v: &[u8]| FlushBatch::from_bytes(v).unwrap_err();
    let good = batch().to_bytes();
    // Not a flush, a sketch, too new, too old, cut off, run on.
    assert_eq!(err(b""), BookError::Foreign);
    assert_eq!(err(&sketch(0.01, &[1.0]).to_bytes()), BookError::Foreign);
    let mut v = good.clone();
    v[4] = 2;
    assert_eq!(err(&v), BookError::Version { found: 2 });
    assert!(err(&v).to_string().contains("upgrade edge-deadline"), "{}", err(&v));
    v[4] = 0;
    assert!(matches!(err(&v), BookError::Invalid { field: "version", bucket: None, .. }));
    assert_eq!(err(&good[..good.len() - 1]), BookError::Truncated { field: "sketch" });
    assert_eq!(err(&good[..7]), BookError::Truncated { field: "relativeError" });
    assert_eq!(err(&good[..15]), BookError::Truncated { field: "buckets" });
    let mut v = good.clone();
    v.extend_from_slice(b"xy");
    assert_eq!(err(&v), BookError::Trailing { extra: 2 });
    // Too large: refused before reading.
    let mut v = good.clone();
    v.resize(MAX_FLUSH_BYTES + 1, 0);
    assert_eq!(err(&v), BookError::TooLarge { len: MAX_FLUSH_BYTES + 1 });
    assert_eq!(err(&v).code(), "TOO_LARGE");
    // The batch's relative error.
    for bad in [f64::NAN, 0.0, 0.6, f64::INFINITY] {
        let v = patched(&batch(), 5, &bad.to_le_bytes());
        assert!(matches!(err(&v), BookError::Invalid { field: "relativeError", .. }), "{bad}");
    }
    // A bucket count past the cap, and one the bytes cannot hold.
    let v = patched(&batch(), 13, &(MAX_BUCKETS as u32 + 1).to_le_bytes());
    assert!(matches!(err(&v), BookError::Invalid { field: "buckets", .. }), "{}", err(&v));
    let v = patched(&batch(), 13, &(MAX_BUCKETS as u32).to_le_bytes());
    assert_eq!(err(&v), BookError::Truncated { field: "buckets" });
    // Names: empty, too long, not UTF-8, repeated.
    let b = one("a", &[1.0]);
    let v = patched(&b, 17, &0u16.to_le_bytes());
    assert!(matches!(err(&v), BookError::Invalid { field: "name", bucket: Some(0), .. }));
    let v = patched(&b, 17, &(MAX_NAME_BYTES as u16 + 1).to_le_bytes());
    assert!(matches!(err(&v), BookError::Invalid { field: "name", .. }));
    let v = patched(&b, 19, &[0xff]);
    let e = err(&v);
    assert!(matches!(e, BookError::Invalid { field: "name", .. }));
    assert_eq!(e.to_string(), "'bytes' is not a valid timeout book flush: bucket 0: 'name' is not UTF-8");
    let long = "x".repeat(MAX_NAME_BYTES);
    assert!(FlushBatch::from_bytes(&one(&long, &[1.0]).to_bytes()).is_ok());
    let mut twice = batch();
    twice.buckets[2].name = twice.buckets[0].name.clone();
    let e = err(&twice.to_bytes());
    assert_eq!(e.to_string(), "'bytes' is not a valid timeout book flush: bucket 2: 'name' repeats bucket 0's name");
    // In force: 0, negative, infinite (NaN is "absent").
    for bad in [0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
        let v = patched(&b, 20, &bad.to_le_bytes());
        assert!(matches!(err(&v), BookError::Invalid { field: "inForceMs", .. }), "{bad}");
    }
    // Counts past 2^53 − 1.
    let v = patched(&b, 28, &(MAX_COUNT + 1).to_le_bytes());
    assert!(matches!(err(&v), BookError::Invalid { field: "timeouts", .. }));
    let v = patched(&b, 36, &u64::MAX.to_le_bytes());
    let e = err(&v);
    assert!(matches!(e, BookError::Invalid { field: "errors", .. }));
    assert_eq!(e.code(), "CORRUPT_BYTES");
    assert_eq!(e.param().as_deref(), Some("bytes"));
    // A sketch of another relative error, a damaged sketch, a sketch length past the end.
    let mut other = one("a", &[]);
    other.buckets[0].successes = sketch(0.02, &[5.0]);
    let e = err(&other.to_bytes());
    assert_eq!(e, BookError::Mismatch { bucket: 0, ours: 0.01, theirs: 0.02 });
    assert_eq!(e.code(), "RELATIVE_ERROR_MISMATCH");
    let mut v = b.to_bytes();
    let last = v.len() - 1;
    v[last] ^= 0x40;
    assert!(matches!(err(&v), BookError::Sketch { bucket: 0, .. }), "{}", err(&v));
    let v = patched(&b, 44, &u32::MAX.to_le_bytes());
    assert_eq!(err(&v), BookError::Truncated { field: "sketch" });
}

#[test]
fn messages_read_as_sentences() {
    let e = BookError::TooLarge { len: 300_000 };
    assert_eq!(
        e.to_string(),
        "'bytes' is not a valid timeout book flush: it is 300000 bytes, more than 262144: flush more often or keep fewer buckets"
    );
    let e = BookError::Mismatch { bucket: 3, ours: 0.01, theirs: 0.02 };
    assert!(e.to_string().contains("bucket 3: its sketch has relative error 0.02, the batch 0.01"), "{e}");
    let e = BookError::Sketch { bucket: 1, error: BytesError::Foreign };
    assert!(e.to_string().contains("bucket 1: 'bytes' is not a valid LatencySketch"), "{e}");
    assert_eq!(e.code(), "FOREIGN_BYTES");
}

fn sample_vec() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![Just(0.0), 0.0..10.0f64, 0.0..1e6f64, Just(MAX_MS)], 0..400)
}

fn bucket_strategy() -> impl Strategy<Value = FlushBucket> {
    ("[a-zé /]{1,12}", prop::option::of(1e-3..1e7f64), 0..=MAX_COUNT, 0..1000u64, sample_vec()).prop_map(
        |(name, in_force_ms, timeouts, errors, xs)| FlushBucket {
            name,
            in_force_ms,
            timeouts,
            errors,
            successes: sketch(0.01, &xs),
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any batch within the caps reads back as it was written.
    #[test]
    fn any_batch_round_trips(mut buckets in prop::collection::vec(bucket_strategy(), 0..8)) {
        let mut seen = std::collections::HashSet::new();
        buckets.retain(|b| seen.insert(b.name.clone()));
        let b = FlushBatch { relative_error: 0.01, buckets };
        same(&b, &FlushBatch::from_bytes(&b.to_bytes()).unwrap());
    }

    /// Arbitrary bytes, and a good batch with bytes flipped, cut or run on:
    /// an error or a batch within every cap, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        raw in prop::collection::vec(any::<u8>(), 0..300),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..5),
        cut in any::<usize>(),
    ) {
        let _ = FlushBatch::from_bytes(&raw);
        let mut prefixed = b"EDTB\x01".to_vec();
        prefixed.extend_from_slice(&raw);
        let _ = FlushBatch::from_bytes(&prefixed);
        let mut v = batch().to_bytes();
        for (i, x) in flips {
            let n = v.len();
            v[i % n] ^= x;
        }
        v.truncate(cut % (v.len() + 1) + 1);
        if let Ok(b) = FlushBatch::from_bytes(&v) {
            prop_assert!(b.buckets.len() <= MAX_BUCKETS);
            for x in &b.buckets {
                prop_assert!((1..=MAX_NAME_BYTES).contains(&x.name.len()));
                prop_assert!(x.timeouts <= MAX_COUNT && x.errors <= MAX_COUNT);
                prop_assert!(x.in_force_ms.map_or(true, valid_in_force));
                prop_assert_eq!(x.successes.relative_error().to_bits(), b.relative_error.to_bits());
                let _ = x.successes.quantile(0.99);
            }
        }
    }
}

fn row(name: &str, timeout_ms: Option<f64>, floor_ms: Option<f64>) -> TableRow {
    TableRow { name: name.into(), timeout_ms, floor_ms, n: 5000.0 }
}

#[test]
fn served_values_move_by_at_most_the_step_factor() {
    let mut s = Schedule::new(ServeOptions::default()).unwrap();
    assert_eq!(s.timeout(0.0, "a", 5000.0), (5000.0, false), "no table yet: the fallback");
    s.table(0.0, 0.99, &[row("a", Some(400.0), None), row("b", None, Some(10.0)), row("c", Some(f64::NAN), None)], 256);
    assert_eq!(s.timeout(1.0, "a", 5000.0), (2500.0, true), "a first value: at most the factor from the fallback");
    assert_eq!(s.timeout(1.0, "b", 5000.0), (5000.0, false), "too few samples: the fallback");
    assert_eq!(s.timeout(1.0, "c", 5000.0), (5000.0, false), "an unusable value is absent");
    // One bad window: the derived value collapses, the served one halves.
    s.table(60_000.0, 0.99, &[row("a", Some(20.0), None)], 256);
    assert_eq!(s.served("a"), Some(1250.0));
    s.table(120_000.0, 0.99, &[row("a", Some(20.0), None)], 256);
    assert_eq!(s.served("a"), Some(625.0));
    s.table(180_000.0, 0.99, &[row("a", Some(20.0), Some(400.0))], 256);
    assert_eq!(s.served("a"), Some(400.0), "the floor raises the target");
    s.table(240_000.0, 0.99, &[row("a", Some(20.0), Some(86_400_000.0))], 256);
    assert_eq!(s.served("a"), Some(800.0), "and is bounded by the step too");
    s.table(300_000.0, 0.99, &[row("a", Some(810.0), None)], 256);
    assert_eq!(s.served("a"), Some(810.0), "within the factor: as derived");
    s.table(330_000.0, 0.99, &[row("a", Some(500.25), None)], 256);
    assert_eq!(s.served("a"), Some(501.0), "a whole number of ms, rounded up");
    // A bucket missing from the table is not served.
    s.table(360_000.0, 0.99, &[row("z", Some(9.0), None)], 256);
    assert_eq!(s.timeout(360_001.0, "a", 77.0), (77.0, false));
}

#[test]
fn one_table_cannot_lift_or_collapse_what_a_new_isolate_serves() {
    // Lift: timeouts in force at a day set the floor; collapse: successes at
    // 0.05 ms make the derived value 0.1 ms. A new isolate served either as
    // derived; a running one served the floor at once.
    let mut s = Schedule::new(ServeOptions::default()).unwrap();
    s.table(0.0, 0.99, &[row("lift", Some(300.0), Some(86_400_000.0)), row("collapse", Some(0.1), None)], 256);
    assert_eq!(s.timeout(1.0, "lift", 1500.0), (3000.0, true));
    assert_eq!(s.timeout(1.0, "collapse", 1500.0), (750.0, true));
    // The largest: a whole number AbortSignal.timeout() and setTimeout take.
    let mut s = Schedule::new(ServeOptions { max_step_factor: 1000.0, ..ServeOptions::default() }).unwrap();
    s.table(0.0, 0.99, &[row("a", Some(MAX_MS), None), row("b", Some(1e-9), None)], 256);
    assert_eq!(s.timeout(1.0, "a", MAX_MS), (MAX_SERVED_MS, true));
    assert_eq!(s.timeout(1.0, "b", 0.5), (1.0, true));
    // A value anchored by its first caller is the served one for every caller.
    assert_eq!(s.timeout(2.0, "a", 10.0), (MAX_SERVED_MS, true));
}

#[test]
fn a_row_is_served_only_once_it_has_the_samples_its_percentile_needs() {
    let few = |name: &str, v: f64, n: f64| TableRow { name: name.into(), timeout_ms: Some(v), floor_ms: None, n };
    let mut s = Schedule::new(ServeOptions::default()).unwrap();
    // p99 needs 1 000 successes, p90 100; a missing count is too few, and so is any count for a q of 1 or NaN.
    s.table(0.0, 0.99, &[few("a", 400.0, 999.0), few("b", 400.0, 1000.0), few("c", 400.0, f64::NAN)], 256);
    assert_eq!(s.timeout(1.0, "a", 5000.0), (5000.0, false), "999 successes for a p99: the fallback");
    assert_eq!(s.timeout(1.0, "b", 500.0), (400.0, true));
    assert_eq!(s.timeout(1.0, "c", 5000.0), (5000.0, false), "no count: the fallback");
    s.table(1.0, 0.9, &[few("a", 400.0, 100.0)], 256);
    assert_eq!(s.timeout(2.0, "a", 500.0), (400.0, true), "100 successes are enough for a p90");
    for q in [1.0, f64::NAN, -0.5] {
        s.table(2.0, q, &[few("a", 400.0, 1e12)], 256);
        assert_eq!(s.timeout(3.0, "a", 5000.0), (5000.0, false), "q {q}");
    }
    // Served, then too few again: not served; once enough, the value is a first value (no step bound).
    s.table(3.0, 0.99, &[few("a", 400.0, 2000.0)], 256);
    s.table(4.0, 0.99, &[few("a", 10.0, 10.0)], 256);
    assert_eq!(s.timeout(5.0, "a", 77.0), (77.0, false));
    s.table(5.0, 0.99, &[few("a", 10.0, 1000.0)], 256);
    assert_eq!(s.timeout(6.0, "a", 77.0), (38.5_f64.ceil(), true), "bounded by the fallback");
}

#[test]
fn a_stale_table_is_not_served_and_refreshes_are_paced() {
    let o =
        ServeOptions { max_step_factor: 1.5, refresh_every_ms: 1000.0, max_stale_ms: 5000.0, flush_every_ms: 200.0 };
    let mut s = Schedule::new(o).unwrap();
    assert!(s.refresh_due(0.0) && s.flush_due(0.0));
    s.refresh_started(0.0);
    assert!(!s.refresh_due(999.0));
    assert!(s.refresh_due(1000.0), "a refresh that never settles does not block the next");
    s.refresh_failed(1000.0);
    assert!(!s.refresh_due(1999.0) && s.refresh_due(2000.0));
    s.table(2000.0, 0.99, &[row("a", Some(100.0), None)], 256);
    assert_eq!(s.stale_at(), 7000.0);
    assert_eq!(s.refresh_at(), 3000.0);
    assert_eq!(s.timeout(6999.0, "a", 100.0), (100.0, true));
    assert_eq!(s.timeout(7000.0, "a", 1.0), (1.0, false));
    s.flush_started(10.0);
    assert!(!s.flush_due(209.0) && s.flush_due(210.0));
}

#[test]
fn a_refresh_that_never_reports_is_lost_after_the_lease() {
    let mut s = Schedule::new(ServeOptions::default()).unwrap();
    assert!(s.refresh_due(0.0));
    assert!(!s.refresh_started(0.0), "nothing was lost before the first");
    assert_eq!(s.refresh_at(), REFRESH_LEASE_MS, "due again after the lease, not after refreshEveryMs");
    assert!(!s.refresh_due(REFRESH_LEASE_MS - 1.0));
    assert!(s.refresh_started(REFRESH_LEASE_MS), "the first never reported: lost");
    s.refresh_failed(REFRESH_LEASE_MS + 5.0);
    assert_eq!(s.refresh_at(), REFRESH_LEASE_MS + 5.0 + 60_000.0, "a reported failure waits refreshEveryMs");
    assert!(!s.refresh_started(s.refresh_at()), "the one before reported");
    s.table(80_000.0, 0.99, &[], 256);
    assert_eq!(s.refresh_at(), 140_000.0);
    assert!(!s.refresh_started(140_000.0), "a table is a report");
    // A refreshEveryMs shorter than the lease keeps its own period.
    let mut quick = Schedule::new(ServeOptions { refresh_every_ms: 2_000.0, ..ServeOptions::default() }).unwrap();
    quick.refresh_started(0.0);
    assert_eq!(quick.refresh_at(), 2_000.0);
}

#[test]
fn bad_options_name_themselves() {
    let d = ServeOptions::default();
    for (o, param) in [
        (ServeOptions { max_step_factor: 0.5, ..d }, "options.maxStepFactor"),
        (ServeOptions { max_step_factor: f64::NAN, ..d }, "options.maxStepFactor"),
        (ServeOptions { refresh_every_ms: 0.0, ..d }, "options.refreshEveryMs"),
        (ServeOptions { max_stale_ms: f64::INFINITY, ..d }, "options.maxStaleMs"),
        (ServeOptions { flush_every_ms: -1.0, ..d }, "options.flushEveryMs"),
    ] {
        let e = Schedule::new(o).unwrap_err();
        assert_eq!(e.param().as_deref(), Some(param));
        assert_eq!(e.kind(), crate::core::error::Kind::Range);
    }
    let e = Schedule::new(ServeOptions { max_step_factor: 0.5, ..d }).unwrap_err();
    assert_eq!(e.to_string(), "'maxStepFactor' must be a number between 1 and 1000: current value is 0.5");
}

proptest! {
    /// Invariants 1 and 2 over arbitrary tables.
    #[test]
    fn refreshes_keep_the_bounds(
        f in 1.0..8.0f64,
        tables in prop::collection::vec(prop::collection::vec((0..3u8, prop::option::of(prop_oneof![Just(f64::NAN), Just(-1.0), Just(f64::INFINITY), 1e-3..1e9f64]), prop::option::of(1e-3..1e6f64)), 0..4), 1..12),
    ) {
        let mut s = Schedule::new(ServeOptions { max_step_factor: f, ..ServeOptions::default() }).unwrap();
        for (t, table) in tables.iter().enumerate() {
            let rows: Vec<TableRow> = table.iter().map(|(n, v, fl)| row(&n.to_string(), *v, *fl)).collect();
            let before = s.served_all().to_vec();
            s.table(t as f64, 0.99, &rows, 256);
            for (i, r) in rows.iter().enumerate() {
                let _ = s.timeout(t as f64, &r.name, 100.0 + i as f64 * 1000.0);
            }
            for (name, v) in s.served_all() {
                prop_assert!(*v >= 1.0 && *v <= MAX_SERVED_MS && v.fract() == 0.0, "{v}");
                let first = |r: &&TableRow| &r.name == name && usable(r.timeout_ms).is_some() && r.n >= 1000.0;
                let r = rows.iter().find(first).unwrap();
                let i = rows.iter().position(|r| &r.name == name).unwrap();
                let old = before.iter().find(|(n, _)| n == name).map_or(100.0 + i as f64 * 1000.0, |(_, o)| *o);
                // Within the step of the value served before (the fallback before the first), rounded up.
                prop_assert!(*v <= (old * f).ceil().min(MAX_SERVED_MS) && *v >= (old / f).ceil().max(1.0), "{old} -> {v}");
                let target = usable(r.timeout_ms).unwrap().max(usable(r.floor_ms).unwrap_or(0.0));
                // Rounded up, except where that would pass the step: then the whole ms below it.
                let (high, up) = (old * f, target.clamp(old / f, old * f).ceil());
                let want = if up > high && high.floor() >= old / f { high.floor() } else { up };
                prop_assert!(*v == want.clamp(1.0, MAX_SERVED_MS), "{old} -> {v}, target {target}");
                prop_assert!(*v <= high || high.floor() < old / f || *v == 1.0, "{old} -> {v} passes the step");
            }
        }
    }
}

#[test]
fn bucket_names_and_warnings() {
    assert!(check_bucket("a").is_ok() && check_bucket(&"é".repeat(128)).is_ok());
    let e = check_bucket("").unwrap_err();
    assert_eq!(e.to_string(), "'bucket' must be a name of 1 … 256 bytes of UTF-8: current value is 0 bytes long");
    assert!(check_bucket(&"é".repeat(129)).is_err());
    for code in [
        "NO_TABLE",
        "FEW_SAMPLES",
        "STALE",
        "BUCKETS_FULL",
        "REFRESH_FAILED",
        "REFRESH_LOST",
        "FLUSH_REFUSED",
        "FLUSH_FAILED",
    ] {
        let m = warning(code, "GET /a", 250.0).unwrap().to_string();
        assert!(!m.contains('{') && (m.contains("GET /a") && m.contains("250")), "{m}");
    }
    assert_eq!(warning("NOPE", "a", 1.0), None);
    assert_eq!(
        warning("NO_TABLE", "db", 800.0).unwrap().to_string(),
        "timeout for 'db': serving the fallback 800 ms until the fleet's table arrives"
    );
}

#[test]
fn max_buckets_and_fallbacks_are_checked() {
    assert_eq!(check_option("options.maxBuckets", 1024.0), Ok(1024.0));
    for bad in [0.0, 1025.0, 1.5, f64::NAN] {
        let e = check_option("options.maxBuckets", bad).unwrap_err();
        assert_eq!(e.param().as_deref(), Some("options.maxBuckets"));
    }
    assert_eq!(
        check_option("options.maxBuckets", 0.0).unwrap_err().to_string(),
        "'maxBuckets' must be a whole number between 1 and 1024: current value is 0"
    );
    assert_eq!(check_option("options.fallbackMs", 250.0), Ok(250.0));
    for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        assert_eq!(check_option("options.fallbackMs", bad).unwrap_err().param().as_deref(), Some("options.fallbackMs"));
    }
}

#[test]
fn a_table_serves_at_most_max_buckets_those_served_already_first_and_no_name_record_refuses() {
    let mut s = Schedule::new(ServeOptions::default()).unwrap();
    let rows: Vec<TableRow> = (0..10).map(|i| row(&format!("b{i}"), Some(400.0), None)).collect();
    s.table(0.0, 0.99, &rows, 3);
    assert_eq!(s.pending_names().collect::<Vec<_>>(), ["b0", "b1", "b2"], "first values, pending until asked for");
    for b in ["b0", "b1", "b2"] {
        s.first_value(b, 400.0);
    }
    assert_eq!(s.served_all().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["b0", "b1", "b2"]);
    let mut later = vec![row(&"y".repeat(300), Some(400.0), None), row("", Some(400.0), None)];
    later.extend(rows.iter().rev().cloned());
    s.table(1.0, 0.99, &later, 3);
    assert_eq!(
        s.served_all().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["b0", "b1", "b2"],
        "the served ones keep their place"
    );
    s.table(2.0, 0.99, &later, 5);
    assert_eq!(s.served_all().len() + s.pending_names().count(), 5);
    assert!(s.served_all().iter().all(|(n, _)| n.len() == 2) && s.pending_names().all(|n| n.len() == 2));
    assert_eq!(names_held(256), 512);
}
