//! Tests of [`super`]: its invariants, as properties and oracle tests.

use super::*;
use crate::core::error::assert_filled;
use crate::core::prom::{histograms, histograms_in_text, parse_text, Loc, TextHistograms, MAX_TEXT_BYTES};
use crate::core::simulate::{Sampler, Scenario};
use crate::core::sketch::tests::Gen;
use crate::core::sketch::{rank_index, Bin};
use crate::core::tail::{self, false_timeout_rate, tail_shape, tail_shape_of};
use proptest::prelude::*;

fn lognormal(n: usize, seed: u64, sigma: f64) -> Vec<f64> {
    let mut g = Gen::new(seed);
    (0..n).map(|_| 40.0 * (sigma * g.normal()).exp()).collect()
}

fn seed_003(n: usize) -> Vec<f64> {
    let s = Sampler::new(&Scenario::seed_003()).unwrap();
    (0..n as u64).map(|i| s.draw(i, 0)).collect()
}

fn has(r: &BucketResult, code: &str) -> bool {
    r.warnings.iter().any(|w| w.code() == code)
}

#[test]
fn warning_codes_are_the_serde_names_of_warning_code() {
    // WarningCode's TypeScript union comes from its serde names (kebab-case).
    let kebab = |c: WarningCode| {
        let mut out = String::new();
        for (i, ch) in format!("{c:?}").chars().enumerate() {
            if ch.is_ascii_uppercase() && i > 0 {
                out.push('-');
            }
            out.push(ch.to_ascii_lowercase());
        }
        out
    };
    let pairs = [
        (WarningCode::NoSuccesses, Warning::NoSuccesses),
        (WarningCode::SmallSample, Warning::SmallSample { n: 1, needed: 2, q: 0.99 }),
        (WarningCode::Censored, Warning::Censored { timeouts: 1, share: 0.5, q: 0.99 }),
        (WarningCode::PileUp, Warning::PileUp { at_ms: 1.0, count: 1, share: 0.1, configured: true }),
        (WarningCode::Drift, Warning::Drift { configured_ms: 1.0, measured_ms: 3.0, ratio: 3.0, q: 0.99 }),
        (WarningCode::Resolution, Warning::Resolution { q: 0.99, lo_ms: 1.0, hi_ms: 2.0 }),
        (WarningCode::AboveLargestBucket, Warning::AboveLargestBucket { q: 0.99, bound_ms: 1.0 }),
        (WarningCode::UnitAssumed, Warning::UnitAssumed { metric: "m".into() }),
        (WarningCode::Collapsed, Warning::Collapsed { below_ms: 1.0, quantiles: vec![0.5] }),
    ];
    for (code, w) in pairs {
        assert_eq!(kebab(code), w.code());
        assert_filled(&w.message());
    }
    let many = Warning::Collapsed { below_ms: 70.27, quantiles: vec![0.5, 0.9, 0.999] };
    assert_filled(&many.message());
    assert!(many.to_string().starts_with("p50, p90, p99.9 lie at or below 70.27 ms"), "{many}");
    let ratio = |r: f64| Warning::Drift { configured_ms: 1.0, measured_ms: 1.0, ratio: r, q: 0.99 }.to_string();
    assert!(ratio(3.0).contains(" is 3.0x the measured p99 "), "{}", ratio(3.0));
    assert!(ratio(0.125).contains(" is 0.13x the measured p99 "), "{}", ratio(0.125));
}

#[test]
fn errors_name_the_parameter_as_the_js_caller_wrote_it() {
    let opts = |f: fn(&mut DeriveOptions)| {
        let mut o = DeriveOptions::default();
        f(&mut o);
        o.validate().unwrap_err()
    };
    let q = opts(|o| o.q = 1.0);
    assert_eq!((q.code(), q.param().as_deref()), ("OUT_OF_RANGE", Some("options.q")));
    let c = opts(|o| o.configured_ms = Some(-1.0));
    assert_eq!((c.code(), c.param().as_deref()), ("NEGATIVE", Some("options.configuredMs")));
    let r = opts(|o| o.relative_error = 0.0);
    assert_eq!(r.param().as_deref(), Some("options.relativeError"));

    let mut d = Deriver::new(DeriveOptions::default(), vec!["model".into()]).unwrap();
    let e = d.add(&["a"], Outcome::Timeout, Some(f64::NAN)).unwrap_err().at_row(3);
    assert_eq!((e.code(), e.param().as_deref()), ("NOT_FINITE", Some("data[3].ms")));
    assert!(e.to_string().starts_with("row 3: 'ms' must be a finite number"), "{e}");
    let e = Outcome::of_field("result", "maybe").unwrap_err().at_row(7);
    assert_eq!((e.code(), e.param().as_deref()), ("UNKNOWN_OUTCOME", Some("data[7].result")));
    let e = d.add(&[], Outcome::Success, Some(1.0)).unwrap_err().at_row(0);
    assert_eq!((e.code(), e.param().as_deref()), ("LABEL_COUNT", Some("data[0]")));
    let e = derive_samples(&[1.0, -1.0], &DeriveOptions::default()).unwrap_err();
    assert_eq!((e.code(), e.param().as_deref()), ("NEGATIVE", Some("data[1]")));
    assert_eq!(e.kind(), Kind::Range);

    // Every refusal's message has a value for each of its holes.
    let sample = SketchError::Sample {
        root: "samples",
        index: Some(2),
        error: DeadlineError::Negative { param: "ms", value: -1.0 },
    };
    let all = [
        q,
        c,
        r,
        opts(|o| o.safety = 0.5),
        DeriveError::Sketch(sample),
        DeriveError::Labels { expected: 2, got: 1 },
        DeriveError::Groups { limit: MAX_GROUPS },
        DeriveError::MissingDuration,
        DeriveError::Outcome { value: "maybe".into(), series: "x".into() },
        DeriveError::Prom(PromError::MissingInf { series: "x".into() }),
        Outcome::of_field("result", "maybe").unwrap_err().at_row(7),
    ];
    for e in all {
        assert_filled(&e.message());
    }
}

#[test]
fn known_answer_exact_and_sketched() {
    // 1..=100 ms: p99 is the 99th value (rank 98), exactly, below 256 samples.
    let xs: Vec<f64> = (1..=100).map(f64::from).collect();
    let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
    assert_eq!((r.p50_ms, r.p99_ms, r.quantile_ms, r.timeout_ms), (Some(50.0), Some(99.0), Some(99.0), Some(198.0)));
    assert!(has(&r, "small-sample"), "{:?}", r.warnings);
    assert!(r.warnings[0].to_string().contains("p99 needs at least 1000"), "{}", r.warnings[0]);
    // 1..=10 000 ms: p99.9 ≈ 9990 within 1%, timeout = that × 1.5.
    let xs: Vec<f64> = (1..=10_000).map(f64::from).collect();
    let opts = DeriveOptions { safety: 1.5, ..DeriveOptions::background() };
    let r = derive_samples(&xs, &opts).unwrap();
    let q = r.quantile_ms.unwrap();
    assert!((q - 9990.0).abs() <= 99.9, "{q}");
    assert_eq!(r.timeout_ms, Some(q * 1.5));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn every_reported_percentile_is_accurate_or_flagged_as_collapsed() {
    // At α = 0.001 the sketch spans only about 21× before it merges its
    // lowest buckets; seed 003's durations span far more, so the median
    // lands among the merged ones.
    let xs = seed_003(20_000);
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    let exact = |q: f64| sorted[rank_index(q, sorted.len())];
    let opts = DeriveOptions { relative_error: 0.001, ..DeriveOptions::default() };
    let r = derive_samples(&xs, &opts).unwrap();
    let flagged: Vec<f64> = r
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::Collapsed { quantiles, .. } => Some(quantiles.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    let mut wrong = 0;
    for (q, v) in [(0.5, r.p50_ms), (0.9, r.p90_ms), (0.99, r.p99_ms), (0.999, r.p999_ms)] {
        let (v, x) = (v.unwrap(), exact(q));
        if (v - x).abs() > 0.001 * x + 1e-6 {
            wrong += 1;
            assert!(flagged.contains(&q), "p{q}: {v} for an exact {x}, not flagged: {:?}", r.warnings);
        }
    }
    assert!(wrong > 0, "the data no longer makes the sketch collapse: pick a wider range");
    let text = r.warnings.iter().find(|w| w.code() == "collapsed").unwrap().to_string();
    assert!(text.starts_with("p50"), "{text}");
    assert!(text.contains("relativeError"), "{text}");
}

#[test]
fn stall_preset_is_p99_gap_times_five() {
    let gaps: Vec<f64> = (1..=100).map(|i| f64::from(i) * 18.0).collect();
    let r = derive_samples(&gaps, &DeriveOptions::stall()).unwrap();
    assert_eq!(r.timeout_ms, Some(99.0 * 18.0 * 5.0));
}

#[test]
fn rejects_bad_options_and_samples() {
    let e = |o: DeriveOptions| derive_samples(&[1.0], &o).unwrap_err().to_string();
    let d = DeriveOptions::default();
    assert_eq!(
        e(DeriveOptions { q: 1.0, ..d }),
        "'q' must be greater than 0 and less than 1 (0.99 for p99): current value is 1"
    );
    assert!(e(DeriveOptions { q: f64::NAN, ..d }).starts_with("'q' must be greater than 0"));
    assert!(e(DeriveOptions { q: 0.0, ..d }).starts_with("'q'"));
    assert_eq!(e(DeriveOptions { safety: 0.5, ..d }), "'safety' must be between 1 and 100: current value is 0.5");
    assert!(e(DeriveOptions { safety: f64::NAN, ..d }).starts_with("'safety'"));
    assert!(e(DeriveOptions { configured_ms: Some(-5.0), ..d }).starts_with("'configuredMs'"));
    assert!(e(DeriveOptions { relative_error: 0.9, ..d }).starts_with("'relativeError'"));
    let bad = derive_samples(&[1.0, f64::NAN], &d).unwrap_err().to_string();
    assert!(bad.starts_with("'samples[1]' must be a finite number of milliseconds"), "{bad}");
    let mut dv = Deriver::new(d, vec!["model".into()]).unwrap();
    assert_eq!(dv.add(&[], Outcome::Success, Some(1.0)), Err(DeriveError::Labels { expected: 1, got: 0 }));
    assert_eq!(dv.add(&["a"], Outcome::Success, None), Err(DeriveError::MissingDuration));
    assert!(dv.add(&["a"], Outcome::Timeout, Some(-1.0)).is_err());
    assert_eq!(dv.buckets(), 0);
}

#[test]
fn empty_and_all_failures_give_none_and_a_warning() {
    let r = derive_samples(&[], &DeriveOptions::default()).unwrap();
    assert_eq!((r.n, r.timeout_ms, r.p99_ms), (0, None, None));
    assert!(has(&r, "no-successes"));
    let mut d = Deriver::new(DeriveOptions::default(), vec![]).unwrap();
    for _ in 0..10 {
        d.add(&[], Outcome::Timeout, Some(5000.0)).unwrap();
        d.add(&[], Outcome::Error, None).unwrap();
    }
    let r = &d.results()[0];
    assert_eq!((r.n, r.timeout_ms, r.excluded), (0, None, Excluded { timeouts: 10, errors: 10 }));
    assert!(has(r, "no-successes") && has(r, "censored"));
}

#[test]
fn only_successes_count_and_grouping_is_exact() {
    let a = lognormal(5000, 1, 0.35);
    let b: Vec<f64> = lognormal(3000, 2, 0.5).iter().map(|x| x * 3.0).collect();
    let mut d = Deriver::new(DeriveOptions::default(), vec!["model".into(), "size".into()]).unwrap();
    for &x in &a {
        d.add(&["m1", "short"], Outcome::Success, Some(x)).unwrap();
        d.add(&["m1", "short"], Outcome::Error, Some(x * 0.1)).unwrap();
    }
    for &x in &b {
        d.add(&["m1", "long"], Outcome::Success, Some(x)).unwrap();
    }
    for _ in 0..20 {
        d.add(&["m1", "long"], Outcome::Timeout, Some(2000.0)).unwrap();
    }
    let rs = d.results();
    assert_eq!(rs.len(), 2);
    // Ordered by label values: (m1, long) < (m1, short).
    let (long, short) = (&rs[0], &rs[1]);
    assert_eq!(long.labels, vec![("model".into(), "m1".into()), ("size".into(), "long".into())]);
    let alone_a = derive_samples(&a, &DeriveOptions::default()).unwrap();
    let alone_b = derive_samples(&b, &DeriveOptions::default()).unwrap();
    assert_eq!((short.p99_ms, short.timeout_ms, short.n), (alone_a.p99_ms, alone_a.timeout_ms, alone_a.n));
    assert_eq!((long.p99_ms, long.timeout_ms, long.n), (alone_b.p99_ms, alone_b.timeout_ms, alone_b.n));
    assert_eq!(short.excluded, Excluded { timeouts: 0, errors: 5000 });
    assert_eq!(long.excluded, Excluded { timeouts: 20, errors: 0 });
    // 20 timeouts of 3020 calls is 0.66%: under the 1% beyond p99, no censoring warning.
    assert!(!has(long, "censored"), "{:?}", long.warnings);
}

#[test]
fn censoring_warnings() {
    // Many labelled timeouts: the successes are cut off at the timeout.
    let mut d = Deriver::new(DeriveOptions::default(), vec![]).unwrap();
    for x in lognormal(2000, 3, 0.35) {
        d.add(&[], Outcome::Success, Some(x.min(100.0))).unwrap();
    }
    for _ in 0..60 {
        d.add(&[], Outcome::Timeout, Some(100.0)).unwrap();
    }
    let r = &d.results()[0];
    let w = r.warnings.iter().find(|w| w.code() == "censored").expect("censored");
    assert!(w.to_string().starts_with("60 calls (2.913%) timed out, more than the 1% beyond p99"), "{w}");

    // Unlabelled timeouts: successes pile up at the configured timeout.
    let mut xs = lognormal(10_000, 4, 0.35);
    xs.iter_mut().take(300).for_each(|x| *x = 250.0);
    let opts = DeriveOptions { configured_ms: Some(250.0), ..DeriveOptions::default() };
    let r = derive_samples(&xs, &opts).unwrap();
    let w = r.warnings.iter().find(|w| w.code() == "pile-up").expect("pile-up");
    assert!(w.to_string().contains("pile up at 250 ms, the configured timeout"), "{w}");
    // ... and at the maximum when nothing is configured.
    let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
    assert!(has(&r, "pile-up"));
    // No pile-up on clean data of any shape, nor on constant data.
    for clean in [lognormal(10_000, 5, 0.35), seed_003(50_000), vec![42.0; 5000], (1..=5000).map(f64::from).collect()] {
        let r = derive_samples(&clean, &DeriveOptions::default()).unwrap();
        assert!(!has(&r, "pile-up"), "{:?}", r.warnings);
    }
}

#[test]
fn drift_is_flagged_beyond_two_x() {
    let xs = seed_003(20_000);
    for (configured, flagged) in [(30_000.0, true), (150.0, false), (60.0, false), (40.0, true)] {
        let r = derive_samples(&xs, &DeriveOptions { configured_ms: Some(configured), ..DeriveOptions::default() })
            .unwrap();
        assert_eq!(has(&r, "drift"), flagged, "{configured}: {:?}", r.warnings);
    }
    let r = derive_samples(&xs, &DeriveOptions { configured_ms: Some(30_000.0), ..DeriveOptions::default() }).unwrap();
    let text = r.warnings.iter().find(|w| w.code() == "drift").unwrap().to_string();
    assert!(text.starts_with("the configured 30000 ms is 3"), "{text}");
    let c = r.candidates.iter().find(|c| c.name == "configured").unwrap();
    assert_eq!(c.false_timeout_rate, 0.0);
}

#[test]
fn seed_003_tail_shape_and_candidates() {
    // At a million calls the body's extremes reach into the gap: a few
    // stragglers are set aside rather than hiding it.
    for n in [10_000usize, 200_000, 1_000_000] {
        let xs = seed_003(n);
        let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
        let t = r.tail.expect("the seed's mixture has a gap");
        assert!(t.body_edge_ms > 120.0 && t.body_edge_ms < 215.0, "{t:?}");
        assert!(t.tail_start_ms >= 297.0 && t.tail_start_ms < 330.0, "{t:?}");
        assert!((t.tail_share - 0.005).abs() < 0.0015, "{t:?}");
        assert!(t.body_edge_ms < t.recommended_ms && t.recommended_ms < t.tail_start_ms);
        let rate = |name: &str| r.candidates.iter().find(|c| c.name == name).unwrap().false_timeout_rate;
        assert!((rate("p99") - 0.01).abs() < 0.0015, "{}", rate("p99"));
        assert!((rate("2xp99") - 0.005).abs() < 0.0015);
        assert!((rate("p99.9") - 0.001).abs() < 0.0006);
        let extra = rate("above body") - t.tail_share;
        assert!(extra > -1e-12 && extra <= t.stragglers as f64 / n as f64 + 1e-12, "{extra} {t:?}");
        assert!(t.stragglers as f64 <= n as f64 * tail::STRAGGLERS_PER_SAMPLE);
        // The raw-sample path agrees with the sketch path.
        let raw = tail_shape_of(&xs).unwrap().unwrap();
        assert!((raw.tail_share - t.tail_share).abs() < 0.0005);
        assert_eq!(false_timeout_rate(&xs, 1e9).unwrap(), Some(0.0));
    }
}

#[test]
fn unimodal_data_has_no_gap() {
    for seed in 1..=5u64 {
        let sizes: &[usize] = if seed <= 2 { &[1_000, 100_000, 1_000_000] } else { &[1_000, 100_000] };
        for &n in sizes {
            let mut g = Gen::new(seed * 1000 + n as u64);
            let sets: Vec<Vec<f64>> = vec![
                vec![42.0; n],
                (0..n).map(|_| 1.0 + 999.0 * g.unit()).collect(),
                (0..n).map(|_| (200.0 + 30.0 * g.normal()).max(0.0)).collect(),
                lognormal(n, seed, 0.35),
                lognormal(n, seed + 10, 1.0),
            ];
            for xs in sets {
                assert_eq!(tail_shape_of(&xs).unwrap(), None, "seed {seed} n {n}");
                let r = derive_samples(&xs, &DeriveOptions::default()).unwrap();
                assert_eq!(r.tail, None);
            }
        }
    }
    assert!(tail_shape_of(&[1.0, f64::NAN]).is_err());
    assert!(false_timeout_rate(&[1.0], -1.0).is_err());
    assert_eq!(false_timeout_rate(&[], 1.0), Ok(None));
    assert_eq!(
        tail_shape(&[Bin { ms: 1.0, count: 1000 }, Bin { ms: 100.0, count: 10 }]).map(|t| t.recommended_ms),
        Some(1.1)
    );
}

const EXPOSITION: &str = r#"# HELP dependency_latency_seconds Latency of calls to dependencies
# TYPE dependency_latency_seconds histogram
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.025"} 100
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.05"} 600
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.1"} 990
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="+Inf"} 1000
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="ok"} 50.5
dependency_latency_seconds_count{dependency="search",operation="query",outcome="ok"} 1000
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.025"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.05"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.1"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="+Inf"} 7 1700000000000
other_metric{a="x\"y\\z\n"} 3
"#;

#[test]
fn prometheus_text_with_outcomes_and_units() {
    let rs = derive_exposition(EXPOSITION, None, &["dependency"], Some("outcome"), &DeriveOptions::default()).unwrap();
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert_eq!(r.labels, vec![("dependency".to_string(), "search".to_string())]);
    assert_eq!((r.n, r.excluded), (1000, Excluded { timeouts: 7, errors: 0 }));
    // rank 990 is the top of the 0.05..0.1 s bucket: 100 ms exactly.
    assert_eq!(r.p99_ms, Some(100.0));
    // p50: rank 500 in 25..50 ms holding 100..600: 25 + 25 × 400/500 = 45.
    assert_eq!(r.p50_ms, Some(45.0));
    // p99.9 falls in +Inf: reported as the largest bound and flagged.
    assert_eq!(r.p999_ms, Some(100.0));
    assert!(has(r, "resolution"), "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.to_string() == "p99 lies in the bucket 50 ms..100 ms: the interpolated value may be off by up to 50 ms; add bucket bounds around it"), "{:?}", r.warnings);
    let bg = derive_exposition(
        EXPOSITION,
        Some("dependency_latency_seconds_bucket"),
        &[],
        None,
        &DeriveOptions::background(),
    )
    .unwrap();
    // Without the outcome label the timeouts series counts: 1007 calls.
    assert_eq!(bg[0].n, 1007);
    assert!(has(&bg[0], "above-largest-bucket"));
    let samples = parse_text(EXPOSITION).unwrap();
    let other = samples.iter().find(|s| s.name == "other_metric").unwrap();
    assert_eq!(other.labels, vec![("a".to_string(), "x\"y\\z\n".to_string())]);
    let h = &histograms(&samples, None).unwrap()[0];
    assert_eq!((h.unit, h.sum_ms, h.count), (Unit::Seconds, Some(50_500.0), Some(1000.0)));
    assert_eq!(h.bounds_ms, vec![25.0, 50.0, 100.0, f64::INFINITY]);
    // A histogram assembled by hand past `Histogram::new` answers None, never panics.
    let broken = Histogram { bounds_ms: vec![1.0], cumulative: vec![5.0, 6.0], ..h.clone() };
    assert_eq!((broken.quantile(0.5), broken.fraction_above(1.0)), (None, None));
    // Unknown units are read as ms and flagged.
    let text = "req_latency_bucket{le=\"10\"} 5\nreq_latency_bucket{le=\"+Inf\"} 5\n";
    let r = &derive_exposition(text, None, &[], None, &DeriveOptions::default()).unwrap()[0];
    assert!(has(r, "unit-assumed") && r.p50_ms.unwrap() <= 10.0);
}

#[test]
fn streaming_exposition_parse_equals_collecting_every_sample() {
    let texts = [
        EXPOSITION,
        "x_bucket{le=\"1\"} 5\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 9\n",
        "x_bucket{le=\"1\"} 5\n",
        "x_bucket{le=\"abc\"} 5\n",
        "x_bucket{k=\"1\"} 5\nx_bucket{le=\"1\"} 5\nx_bucket{le=\"+Inf\"} 5\n",
        "a_bucket{le=\"1\"} 1\nb_bucket{le=\"1\"} 1\n",
        "up 1\n\n# c\nx_sum 3\nx_count 2\n",
        "x_bucket{le=\"1\"} 5\n9x 1\n",
    ];
    // Series in descending label order: each new one sorts first.
    let mut many = String::new();
    for i in (0..500).rev() {
        many.push_str(&format!(
            "y_bucket{{id=\"{i:04}\",le=\"1\"}} {i}\ny_bucket{{id=\"{i:04}\",le=\"+Inf\"}} {}\n",
            i + 1
        ));
    }
    // In pieces of `k` lines each, as js/derive.js hands text over.
    let in_pieces = |text: &str, metric: Option<&str>, k: usize| {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let pieces: Vec<String> = lines.chunks(k).map(|c| c.concat()).collect();
        let mut parse = TextHistograms::new(metric);
        let mut out = Vec::new();
        if metric.is_none() {
            pieces.iter().try_for_each(|p| parse.scan(p))?;
        }
        pieces.iter().try_for_each(|p| parse.feed(p))?;
        parse.finish(&mut |h| out.push(h)).map(|()| out)
    };
    for text in texts.iter().copied().chain([many.as_str()]) {
        for metric in [None, Some("x"), Some("x_bucket"), Some("a"), Some("y"), Some("zzz")] {
            let collected = parse_text(text).and_then(|s| histograms(&s, metric));
            assert_eq!(histograms_in_text(text, metric), collected, "{metric:?} of {text:?}");
            for k in [1, 2, 7] {
                assert_eq!(in_pieces(text, metric, k), collected, "pieces of {k} lines, {metric:?} of {text:?}");
            }
        }
    }
    let hs = histograms_in_text(&many, None).unwrap();
    assert_eq!(hs.len(), 500);
    assert!(hs.windows(2).all(|w| w[0].labels < w[1].labels));
    // Too long: refused before any parsing (the text need not even be valid).
    let long = "#".repeat(MAX_TEXT_BYTES + 1);
    let e = histograms_in_text(&long, None).unwrap_err();
    assert_eq!(e, PromError::TooLarge { size: MAX_TEXT_BYTES + 1, unit: "bytes" });
    assert!(e.to_string().starts_with("'input' is 16777217 bytes of exposition text: at most 16777216"), "{e}");
    assert!(histograms_in_text(&long[1..], None).unwrap_err().to_string().starts_with("no histogram"));
}

#[test]
fn prometheus_errors_name_line_and_field() {
    let err = |t: &str| {
        let e = derive_exposition(t, None, &[], None, &DeriveOptions::default()).unwrap_err();
        assert_filled(&e.message());
        e.to_string()
    };
    assert_eq!(
        err("x_bucket{le=\"1\"} 5\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 9\n"),
        "line 2: bucket le=\"2\" of x counts 3, fewer than the 5 of a lower bucket: buckets must be cumulative"
    );
    assert_eq!(err("x_bucket{le=\"1\"} 5\n"), "histogram x has no le=\"+Inf\" bucket, so its total count is unknown");
    assert!(err("x_bucket{le=\"+Inf\"} 5\n").contains("only the le=\"+Inf\" bucket"));
    assert_eq!(err("\n\nx_bucket{le=\"1} 5\n"), "line 3: label value: value of 'le' has no closing quote");
    assert_eq!(err("x_bucket{le=\"1\"} five\n"), "line 1: value: 'five' is not a number");
    assert_eq!(err("x_bucket{le=1} 5\n"), "line 1: label value: value of 'le' must be quoted");
    assert_eq!(
        err("x_bucket{le=\"1\"} 5 12.5\n"),
        "line 1: timestamp: '12.5' is not an integer number of milliseconds"
    );
    assert!(err("x_bucket{a=\"\\t\"} 5\n").starts_with("line 1: label value: invalid escape '\\t'"));
    assert!(err("9x 5\n").starts_with("line 1: metric name"));
    assert!(err("x_bucket{le=\"abc\"} 5\n").starts_with("line 1: label value: le=\"abc\""));
    assert!(err("x_bucket{le=\"1\"} -5\nx_bucket{le=\"+Inf\"} 9\n").starts_with("line 1: bucket count of x must be"));
    assert!(err("x_bucket{le=\"1\"} 5\nx_bucket{le=\"1.0\"} 5\nx_bucket{le=\"+Inf\"} 5\n").contains("appears twice"));
    assert_eq!(
        err("a_bucket{le=\"1\"} 1\nb_bucket{le=\"1\"} 1\n"),
        "several histograms are present (a, b): choose one with 'metric'"
    );
    let e = derive_exposition("a_bucket{le=\"1\"} 1\n", Some("zzz"), &[], None, &DeriveOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no histogram named 'zzz' (with *_bucket samples and an le label) was found; histograms present: a"
    );
    assert!(err("up 1\n").starts_with("no histogram"));
    let t = "x_bucket{k=\"a\",le=\"1\"} 1\nx_bucket{k=\"a\",le=\"+Inf\"} 1\nx_bucket{k=\"b\",le=\"2\"} 1\nx_bucket{k=\"b\",le=\"+Inf\"} 1\n";
    assert!(err(t).contains("different bucket bounds"));
    let bad_outcome = "x_bucket{outcome=\"maybe\",le=\"1\"} 1\nx_bucket{outcome=\"maybe\",le=\"+Inf\"} 1\n";
    let e = derive_exposition(bad_outcome, None, &[], Some("outcome"), &DeriveOptions::default()).unwrap_err();
    assert!(e.to_string().starts_with("outcome 'maybe' of x{outcome=\"maybe\"} is not one of"), "{e}");
}

#[test]
fn histogram_agrees_with_raw_within_bucket_resolution() {
    let xs = seed_003(100_000);
    let bounds = [5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 150.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0];
    let mut buckets: Vec<(f64, f64, Loc)> = bounds
        .iter()
        .map(|&b| (b / 1000.0, xs.iter().filter(|&&x| x <= b).count() as f64, Loc { kind: "line", index: 1 }))
        .collect();
    buckets.push((f64::INFINITY, xs.len() as f64, Loc { kind: "line", index: 1 }));
    let h = Histogram::new("lat_seconds", vec![], buckets).unwrap();
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    let from_h = derive_histograms(std::slice::from_ref(&h), &[], None, &DeriveOptions::default()).unwrap().remove(0);
    for (q, got) in [(0.5, from_h.p50_ms), (0.9, from_h.p90_ms), (0.99, from_h.p99_ms), (0.999, from_h.p999_ms)] {
        let exact = sorted[rank_index(q, sorted.len())];
        let b = h.quantile(q).unwrap();
        assert!(exact > b.lo_ms && exact <= b.hi_ms, "q={q}: exact {exact} outside {}..{}", b.lo_ms, b.hi_ms);
        let got = got.unwrap();
        assert!(got >= b.lo_ms && got <= b.hi_ms);
    }
    // false-timeout rates from buckets agree at bucket bounds exactly.
    let above = h.fraction_above(250.0).unwrap();
    assert_eq!(above, xs.iter().filter(|&&x| x > 250.0).count() as f64 / xs.len() as f64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn derived_values_are_consistent(xs in prop::collection::vec(0.0..1e6f64, 0..400),
                                     q in 0.001..0.999f64, safety in 1.0..10.0f64,
                                     configured in prop::option::of(0.0..1e6f64)) {
        let opts = DeriveOptions { q, safety, configured_ms: configured, ..DeriveOptions::default() };
        let r = derive_samples(&xs, &opts).unwrap();
        prop_assert_eq!(r.n, xs.len() as u64);
        match (r.quantile_ms, r.timeout_ms) {
            (Some(v), Some(t)) => prop_assert_eq!(t, v * safety),
            (None, None) => prop_assert!(xs.is_empty()),
            other => prop_assert!(false, "{other:?}"),
        }
        let ps = [r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms];
        for w in ps.windows(2) {
            prop_assert!(w[0] <= w[1]);
        }
        for v in ps.iter().flatten().chain(r.candidates.iter().map(|c| &c.timeout_ms)) {
            prop_assert!(v.is_finite() && *v >= 0.0);
        }
        for c in &r.candidates {
            prop_assert!((0.0..=1.0).contains(&c.false_timeout_rate));
        }
        for w in &r.warnings {
            assert_filled(&w.message());
        }
        if let Some(t) = r.tail {
            prop_assert!(t.body_edge_ms < t.recommended_ms && t.recommended_ms < t.tail_start_ms);
            prop_assert!(t.tail_share > 0.0 && t.tail_share <= tail::MAX_TAIL_SHARE);
        }
    }

    #[test]
    fn parser_never_panics(text in "[a-z_{}=\",.+#\\\\ 0-9\n]{0,200}") {
        if let Err(e) = derive_exposition(&text, None, &["a"], Some("outcome"), &DeriveOptions::default()) {
            assert_filled(&e.message());
        }
    }
}

#[test]
fn outcomes_read_http_status_codes() {
    for (text, want) in [
        ("200", Some(Outcome::Success)),
        ("204", Some(Outcome::Success)),
        (" 299 ", Some(Outcome::Success)),
        ("408", Some(Outcome::Timeout)),
        ("504", Some(Outcome::Timeout)),
        ("404", Some(Outcome::Error)),
        ("429", Some(Outcome::Error)),
        ("500", Some(Outcome::Error)),
        ("599", Some(Outcome::Error)),
        // Not a final answer, or not a status code.
        ("100", None),
        ("302", None),
        ("600", None),
        ("2000", None),
        ("20", None),
        ("+200", None),
        ("2e2", None),
    ] {
        assert_eq!(Outcome::parse(text), want, "{text:?}");
    }
    assert!(Outcome::accepted().to_string().contains("2xx"), "{}", Outcome::accepted());
    // A status as a number (JSON, a JS row) is the same rule.
    for (status, want) in
        [(200.0, Some(Outcome::Success)), (504.0, Some(Outcome::Timeout)), (429.0, Some(Outcome::Error))]
    {
        assert_eq!(Outcome::of_status(status), want, "{status}");
    }
    for not in [302.0, 200.5, 1e300, f64::NAN, -404.0, 0.0] {
        assert_eq!(Outcome::of_status(not), None, "{not}");
    }
}
