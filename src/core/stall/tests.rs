//! Tests of [`super`]: examples, property tests of invariants 1–6 and the
//! simulation of the host's loop against a brute-force oracle (invariant 7).
use super::*;
use crate::core::deadline::any_f64;
use proptest::prelude::*;

/// Plausible instants and limits: fractional, clustered, sometimes huge.
fn time() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.0..1e4f64,
        2 => (0u32..10_000).prop_map(f64::from),
        1 => 0.0..1e12f64,
        1 => Just(MAX_MS),
        1 => (MAX_MS - 1e10)..MAX_MS,
    ]
}

fn limit() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.001..1e4f64,
        2 => (1u32..10_000).prop_map(f64::from),
        1 => Just(MAX_TIMER_MS + 0.5),
        1 => 1e10..MAX_MS,
    ]
}

/// A wait may also be zero (it has run out).
fn wait() -> impl Strategy<Value = f64> {
    prop_oneof![8 => limit(), 1 => Just(0.0)]
}

fn config() -> impl Strategy<Value = StallConfig> {
    (wait(), limit(), proptest::option::of(time())).prop_map(|(f, s, d)| StallConfig::new(f, s, d).unwrap())
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (time(), proptest::option::of(time()), 0u32..1000, 0u32..100_000).prop_map(|(s, l, c, b)| Snapshot {
        started_at: s,
        last_progress_at: l,
        chunks: f64::from(c),
        bytes: f64::from(b),
    })
}

fn clean(v: f64) -> bool {
    v.is_finite() && v >= 0.0 && v.to_bits() != (-0.0f64).to_bits()
}

fn cfg(first: f64, stall: f64, deadline: Option<f64>) -> StallConfig {
    StallConfig::new(first, stall, deadline).unwrap()
}

fn progress(started: f64, last: f64, chunks: f64, bytes: f64) -> Snapshot {
    Snapshot { started_at: started, last_progress_at: Some(last), chunks, bytes }
}

#[test]
fn seed_000_healthy_long_stream_and_dead_short_one() {
    // Seed 000's limits for a short prompt: 5 s to the first chunk, 9 s between chunks.
    let c = cfg(5_000.0, 9_000.0, None);
    // 60 s of steady output, a chunk per second: healthy, next look 9 s after the last one.
    let s = progress(0.0, 60_000.0, 60.0, 960.0);
    assert_eq!(c.decide(&s, 60_500.0), Ok(Decision::Wake { at_ms: 69_000.0, delay_ms: 8_500.0, phase: Phase::Stall }));
    // Started 2 s ago, one chunk, then silence: dead at 9 s of silence, not at some total.
    let s = progress(0.0, 2_000.0, 1.0, 16.0);
    assert!(!c.decide(&s, 10_999.0).unwrap().is_final());
    assert_eq!(
        c.decide(&s, 11_000.0),
        Ok(Decision::End(Verdict::Stalled { phase: Phase::Stall, after_ms: 9_000.0, chunks: 1.0, bytes: 16.0 }))
    );
    // Nothing at all: the first-chunk limit applies, measured from the start.
    let s = Snapshot::started(100.0);
    assert_eq!(c.decide(&s, 100.0), Ok(Decision::Wake { at_ms: 5_100.0, delay_ms: 5_000.0, phase: Phase::FirstChunk }));
    assert_eq!(
        c.decide(&s, 5_112.5),
        Ok(Decision::End(Verdict::Stalled { phase: Phase::FirstChunk, after_ms: 5_012.5, chunks: 0.0, bytes: 0.0 }))
    );
}

#[test]
fn a_zero_first_chunk_wait_has_run_out_at_once() {
    for zero in [0.0, -0.0] {
        let c = cfg(zero, 100.0, None);
        assert_eq!(c.first_chunk_ms().to_bits(), 0.0f64.to_bits());
        assert_eq!(
            c.decide(&Snapshot::started(40.0), 40.0),
            Ok(Decision::End(Verdict::Stalled { phase: Phase::FirstChunk, after_ms: 0.0, chunks: 0.0, bytes: 0.0 }))
        );
    }
    // The deadline still wins a tie.
    let c = cfg(0.0, 100.0, Some(40.0));
    assert_eq!(
        c.decide(&Snapshot::started(40.0), 40.0),
        Ok(Decision::End(Verdict::DeadlineExceeded { late_by_ms: 0.0 }))
    );
    // After progress the wait no longer matters.
    let s = Snapshot { started_at: 0.0, last_progress_at: Some(10.0), chunks: 1.0, bytes: 1.0 };
    assert_eq!(
        cfg(0.0, 100.0, None).decide(&s, 50.0),
        Ok(Decision::Wake { at_ms: 110.0, delay_ms: 60.0, phase: Phase::Stall })
    );
}

#[test]
fn errors_are_described_with_the_callers_names() {
    let js = ["options.firstChunkMs", "options.stallMs"];
    for (first, stall, param, code) in [
        (-1.0, 1.0, "options.firstChunkMs", "NEGATIVE"),
        (f64::NAN, 1.0, "options.firstChunkMs", "NOT_FINITE"),
        (MAX_MS + 2.0, 1.0, "options.firstChunkMs", "TOO_LARGE"),
        (1.0, 0.0, "options.stallMs", "NOT_POSITIVE"),
        (1.0, f64::NEG_INFINITY, "options.stallMs", "NOT_FINITE"),
    ] {
        let e = StallConfig::named(first, stall, None, js).unwrap_err();
        assert_eq!(Described::param(&e).as_deref(), Some(param));
        assert_eq!(e.code(), code, "{e}");
        assert_eq!(e.kind(), Kind::Range);
        assert!(e.to_string().starts_with(&format!("'{param}' must be")), "{e}");
    }
    let c = StallConfig::named(1.0, 1.0, None, js).unwrap();
    let e = c.decide(&Snapshot { chunks: 1.5, ..Snapshot::started(0.0) }, 0.0).unwrap_err();
    assert_eq!((e.param(), e.code()), ("chunks", "NOT_WHOLE"));
    let e = c.decide(&Snapshot::started(0.0), f64::NAN).unwrap_err();
    assert_eq!((e.param(), e.code()), ("nowMs", "NOT_FINITE"));
    // The Rust names stay the default.
    assert_eq!(StallConfig::new(1.0, 0.0, None).unwrap_err().param(), "stallMs");
}

#[test]
fn rejects_each_bad_limit_by_name() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, MAX_MS + 2.0] {
        let e = StallConfig::new(bad, 1.0, None).unwrap_err();
        assert_eq!(e.param(), "firstChunkMs");
        assert!(matches!(e, StallError::Wait { .. }), "{e:?}");
    }
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 0.0, -0.0, MAX_MS + 2.0] {
        let e = StallConfig::new(1.0, bad, None).unwrap_err();
        assert_eq!(e.param(), "stallMs");
        assert!(matches!(e, StallError::Limit { .. }), "{e:?}");
    }
    assert_eq!(
        StallConfig::new(-1.0, 1.0, None).unwrap_err().to_string(),
        "'firstChunkMs' must be a finite number of milliseconds, 0 or more and at most 9007199254740991 \
         (0: the wait has already run out): current value is -1"
    );
    let msg = StallConfig::new(1.0, 0.0, None).unwrap_err().to_string();
    assert_eq!(
        msg,
        "'stallMs' must be a finite number of milliseconds greater than 0 and at most 9007199254740991: \
         current value is 0"
    );
    let e = StallConfig::new(1.0, 1.0, Some(f64::NAN)).unwrap_err();
    assert!(matches!(e, StallError::Instant(DeadlineError::NotFinite { param: "deadline", .. })));
    assert!(StallConfig::new(1.0, 1.0, Some(-0.0)).is_ok());
    assert!(StallConfig::new(MAX_MS, MAX_MS, Some(MAX_MS)).is_ok());
}

#[test]
fn rejects_each_bad_snapshot_field_by_name() {
    let c = cfg(10.0, 10.0, None);
    let ok = Snapshot { started_at: 0.0, last_progress_at: Some(1.0), chunks: 1.0, bytes: 3.0 };
    let cases: [(Snapshot, f64, &str); 6] = [
        (Snapshot { started_at: -1.0, ..ok }, 0.0, "startedAt"),
        (Snapshot { last_progress_at: Some(f64::NAN), ..ok }, 0.0, "lastProgressAt"),
        (Snapshot { chunks: 1.5, ..ok }, 0.0, "chunks"),
        (Snapshot { chunks: -1.0, ..ok }, 0.0, "chunks"),
        (Snapshot { bytes: f64::INFINITY, ..ok }, 0.0, "bytes"),
        (ok, f64::NEG_INFINITY, "nowMs"),
    ];
    for (s, now, param) in cases {
        let e = c.decide(&s, now).unwrap_err();
        assert_eq!(e.param(), param, "{e}");
        assert!(e.to_string().contains(&format!("'{param}'")), "{e}");
    }
    assert_eq!(
        c.decide(&Snapshot { chunks: 2.5, ..ok }, 0.0).unwrap_err().to_string(),
        "'chunks' must be a whole number between 0 and 9007199254740991: current value is 2.5"
    );
}

#[test]
fn stall_longer_than_the_deadline_lets_the_deadline_decide() {
    let c = cfg(50.0, 1_000.0, Some(300.0));
    let s = progress(0.0, 100.0, 4.0, 40.0);
    assert_eq!(c.decide(&s, 120.0), Ok(Decision::Wake { at_ms: 300.0, delay_ms: 180.0, phase: Phase::Deadline }));
    assert_eq!(c.decide(&s, 300.0), Ok(Decision::End(Verdict::DeadlineExceeded { late_by_ms: 0.0 })));
    assert_eq!(c.decide(&s, 5_000.0), Ok(Decision::End(Verdict::DeadlineExceeded { late_by_ms: 4_700.0 })));
    // A tie goes to the deadline too.
    let c = cfg(50.0, 200.0, Some(300.0));
    assert_eq!(c.decide(&s, 300.0), Ok(Decision::End(Verdict::DeadlineExceeded { late_by_ms: 0.0 })));
    // A deadline that already passed before the stream started.
    let c = cfg(50.0, 200.0, Some(0.0));
    assert_eq!(
        c.decide(&Snapshot::started(10.0), 10.0),
        Ok(Decision::End(Verdict::DeadlineExceeded { late_by_ms: 10.0 }))
    );
}

#[test]
fn a_late_timer_reports_the_limit_that_expired_first() {
    let c = cfg(50.0, 100.0, Some(1_000.0));
    let s = progress(0.0, 400.0, 2.0, 2.0);
    // The stall expired at 500; the timer only ran at 1 200, past the deadline.
    assert_eq!(
        c.decide(&s, 1_200.0),
        Ok(Decision::End(Verdict::Stalled { phase: Phase::Stall, after_ms: 800.0, chunks: 2.0, bytes: 2.0 }))
    );
}

#[test]
fn time_going_backwards_is_not_an_error() {
    let c = cfg(100.0, 40.0, None);
    // `now` before the last progress chunk: wake at the absolute expiry.
    let s = progress(0.0, 500.0, 3.0, 9.0);
    assert_eq!(c.decide(&s, 480.0), Ok(Decision::Wake { at_ms: 540.0, delay_ms: 60.0, phase: Phase::Stall }));
    // `now` before the start: the first-chunk limit expires at 600, but a
    // first chunk arriving now could stall as early as 40.
    assert_eq!(
        c.decide(&Snapshot::started(500.0), 0.0),
        Ok(Decision::Wake { at_ms: 40.0, delay_ms: 40.0, phase: Phase::Stall })
    );
    let c = cfg(100.0, 700.0, None);
    assert_eq!(
        c.decide(&Snapshot::started(500.0), 0.0),
        Ok(Decision::Wake { at_ms: 600.0, delay_ms: 600.0, phase: Phase::FirstChunk })
    );
    let c = cfg(100.0, 40.0, None);
    // Progress recorded before the start: the stall limit counts from it.
    let s = progress(500.0, 450.0, 1.0, 1.0);
    assert_eq!(
        c.decide(&s, 490.0),
        Ok(Decision::End(Verdict::Stalled { phase: Phase::Stall, after_ms: 40.0, chunks: 1.0, bytes: 1.0 }))
    );
}

#[test]
fn the_first_progress_chunk_switches_limits() {
    // A generous first-chunk limit, a tight stall limit: the first chunk
    // ends the first-chunk phase, so the silence after it is judged by `stallMs`.
    let c = cfg(10_000.0, 100.0, None);
    assert!(!c.decide(&Snapshot::started(0.0), 500.0).unwrap().is_final());
    assert_eq!(
        c.decide(&progress(0.0, 300.0, 1.0, 5.0), 500.0),
        Ok(Decision::End(Verdict::Stalled { phase: Phase::Stall, after_ms: 200.0, chunks: 1.0, bytes: 5.0 }))
    );
}

#[test]
fn waits_for_the_first_chunk_with_a_guard_when_the_stall_limit_is_shorter() {
    // Seed 000's long-prompt limits: 18 s to the first chunk, 9 s between chunks.
    let c = cfg(18_000.0, 9_000.0, None);
    let quiet = Snapshot::started(0.0);
    // Armed at the start for 18 s, the timer would be late for a first chunk
    // at 1 s followed by silence (stall due at 10 s). So the wake is at 9 s.
    let guard = Decision::Wake { at_ms: 9_000.0, delay_ms: 9_000.0, phase: Phase::Stall };
    assert_eq!(c.decide(&quiet, 0.0), Ok(guard));
    let one = progress(0.0, 1_000.0, 1.0, 12.0);
    let next = Decision::Wake { at_ms: 10_000.0, delay_ms: 1_000.0, phase: Phase::Stall };
    assert_eq!(c.decide(&one, 9_000.0), Ok(next));
    assert!(matches!(c.decide(&one, 10_000.0), Ok(Decision::End(Verdict::Stalled { phase: Phase::Stall, .. }))));
    // Still nothing at 9 s: the next wake is the first-chunk expiry itself.
    assert_eq!(
        c.decide(&quiet, 9_000.0),
        Ok(Decision::Wake { at_ms: 18_000.0, delay_ms: 9_000.0, phase: Phase::FirstChunk })
    );
    // With `stallMs ≥ firstChunkMs` there is no guard wake.
    let c = cfg(5_000.0, 9_000.0, None);
    assert_eq!(
        c.decide(&quiet, 0.0),
        Ok(Decision::Wake { at_ms: 5_000.0, delay_ms: 5_000.0, phase: Phase::FirstChunk })
    );
}

#[test]
fn one_ulp_boundaries() {
    // 12.345 + 0.1 rounds to 12.445, and 12.445 − 12.345 < 0.1 in f64.
    let (start, limit) = (12.345, 0.1);
    assert!((start + limit) - start < limit);
    let c = cfg(limit, 1.0, None);
    let Ok(Decision::Wake { at_ms, delay_ms, .. }) = c.decide(&Snapshot::started(start), start) else {
        panic!("expected a wake");
    };
    assert!(at_ms > start + limit && at_ms - start >= limit);
    assert_eq!(delay_ms, 1.0);
    assert!(!c.decide(&Snapshot::started(start), start + limit).unwrap().is_final());
    match c.decide(&Snapshot::started(start), at_ms) {
        Ok(Decision::End(Verdict::Stalled { after_ms, .. })) => assert!(after_ms >= limit),
        other => panic!("{other:?}"),
    }
    // A gap that is an exact integer needs exactly that delay; a hair more needs one more ms.
    assert_eq!(timer_delay(105.0, 100.0), 5.0);
    assert_eq!(timer_delay(105.000_000_1, 100.0), 6.0);
    assert_eq!(timer_delay(100.000_000_000_1, 100.0), 1.0);
    // Around the cap: a gap just under it fits exactly; just over it is capped.
    assert_eq!(timer_delay(MAX_TIMER_MS - 0.5, 0.0), MAX_TIMER_MS);
    assert_eq!(timer_delay(MAX_TIMER_MS + 0.5, 0.0), MAX_TIMER_MS);
}

#[test]
fn long_limits_are_rearmed_not_truncated() {
    let c = cfg(3.0 * MAX_TIMER_MS + 5.5, MAX_MS, None);
    let s = Snapshot::started(0.25);
    let mut now = 0.25;
    let mut wakes = 0;
    let verdict = loop {
        match c.decide(&s, now).unwrap() {
            Decision::Wake { delay_ms, at_ms, .. } => {
                assert!((1.0..=MAX_TIMER_MS).contains(&delay_ms));
                assert_eq!(at_ms, 0.25 + 3.0 * MAX_TIMER_MS + 5.5);
                now += delay_ms;
                wakes += 1;
            }
            d => break d,
        }
    };
    assert_eq!(wakes, 4);
    assert!(matches!(
        verdict,
        Decision::End(Verdict::Stalled { phase: Phase::FirstChunk, after_ms, .. }) if after_ms == 3.0 * MAX_TIMER_MS + 6.0
    ));
}

#[test]
fn phase_names_match_the_js_api() {
    assert_eq!(Phase::FirstChunk.to_string(), "first-chunk");
    assert_eq!(Phase::Stall.as_str(), "stall");
    assert_eq!(Phase::Deadline.as_str(), "deadline");
}

// ---- Invariants 1–6 -------------------------------------------------------------------

/// Checks invariants 2, 3, 5 and 6 for one answer; returns the verdict's phase if final.
fn check_decision(c: &StallConfig, s: &Snapshot, now: f64, d: Decision) -> Result<(), TestCaseError> {
    let (reference, limit) = match s.last_progress_at {
        None => (s.started_at, c.first_chunk_ms()),
        Some(at) => (at, c.stall_ms()),
    };
    let limit_at = expiry(reference, limit);
    match d {
        Decision::End(Verdict::Stalled { phase, after_ms, chunks, bytes }) => {
            prop_assert_eq!(phase, if s.last_progress_at.is_none() { Phase::FirstChunk } else { Phase::Stall });
            prop_assert!(clean(after_ms) && after_ms >= limit, "after {after_ms} < limit {limit}");
            prop_assert_eq!(after_ms, now - reference);
            prop_assert_eq!((chunks, bytes), (s.chunks, s.bytes));
            if let Some(deadline) = c.deadline_at() {
                prop_assert!(deadline > limit_at, "stall reported although the deadline came first");
            }
        }
        Decision::End(Verdict::DeadlineExceeded { late_by_ms }) => {
            let deadline = c.deadline_at().expect("deadline verdict without a deadline");
            prop_assert!(clean(late_by_ms));
            prop_assert_eq!(late_by_ms, now - deadline);
            prop_assert!(deadline <= limit_at);
        }
        Decision::Wake { at_ms, delay_ms, phase } => {
            prop_assert!(clean(at_ms) && now < at_ms);
            prop_assert!(now - reference < limit || now < reference, "limit elapsed but still waiting");
            let mut want = match c.deadline_at() {
                Some(deadline) if deadline <= limit_at => (Phase::Deadline, deadline),
                _ => (if s.last_progress_at.is_none() { Phase::FirstChunk } else { Phase::Stall }, limit_at),
            };
            if s.last_progress_at.is_none() && expiry(now, c.stall_ms()) < want.1 {
                want = (Phase::Stall, expiry(now, c.stall_ms()));
            }
            prop_assert_eq!((phase, at_ms), want);
            prop_assert!(clean(delay_ms) && delay_ms.fract() == 0.0 && (1.0..=MAX_TIMER_MS).contains(&delay_ms));
            if now + delay_ms >= at_ms {
                prop_assert!(now + delay_ms >= at_ms, "timer early: {now} + {delay_ms} < {at_ms}");
                if at_ms <= MAX_MS {
                    prop_assert!(delay_ms == 1.0 || now + (delay_ms - 1.0) < at_ms, "delay {delay_ms} not minimal");
                }
            } else {
                prop_assert!(delay_ms == MAX_TIMER_MS && at_ms - now > MAX_TIMER_MS);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Invariant 1: garbage in, errors naming a parameter out, never a panic or a bad number.
    #[test]
    fn total_on_any_input(
        f in any_f64(), st in any_f64(), d in proptest::option::of(any_f64()),
        start in any_f64(), last in proptest::option::of(any_f64()),
        chunks in any_f64(), bytes in any_f64(), now in any_f64(),
    ) {
        match StallConfig::new(f, st, d) {
            Err(e) => prop_assert!(["firstChunkMs", "stallMs", "deadline"].contains(&e.param())),
            Ok(c) => {
                let s = Snapshot { started_at: start, last_progress_at: last, chunks, bytes };
                match c.decide(&s, now) {
                    Err(e) => prop_assert!(
                        ["nowMs", "startedAt", "lastProgressAt", "chunks", "bytes"].contains(&e.param()), "{e}"
                    ),
                    Ok(dec) => check_decision(&c, &s, now, dec)?,
                }
            }
        }
    }

    /// Invariants 2, 3, 5, 6 on plausible inputs.
    #[test]
    fn decisions_are_sound(c in config(), s in snapshot(), now in time()) {
        let d = c.decide(&s, now).unwrap();
        check_decision(&c, &s, now, d)?;
    }

    /// Invariant 3: whatever the host records after a wake was planned, nothing
    /// expires before it; with nothing recorded, the wake brings the verdict.
    #[test]
    fn no_expiry_before_the_wake(c in config(), s in snapshot(), now in time(), frac in 0.0..1.0f64) {
        if let Decision::Wake { at_ms, phase, .. } = c.decide(&s, now).unwrap() {
            // `at_ms > now >= 0`: the previous bit pattern is the float just below it.
            let just_before = f64::from_bits(at_ms.to_bits() - 1);
            // Progress at some instant from `now` on; hosts record it in order.
            let t1 = (now + (at_ms - now) * frac).min(just_before).max(s.last_progress_at.unwrap_or(0.0));
            let moved = Snapshot { last_progress_at: Some(t1), chunks: s.chunks + 1.0, ..s };
            if just_before <= MAX_MS {
                for snap in [s, moved] {
                    if t1 <= just_before || snap.last_progress_at == s.last_progress_at {
                        let d = c.decide(&snap, just_before).unwrap();
                        prop_assert!(!d.is_final(), "{d:?} before the wake at {at_ms} ({snap:?})");
                    }
                }
            }
            if at_ms <= MAX_MS {
                match c.decide(&s, at_ms).unwrap() {
                    Decision::End(Verdict::Stalled { phase: p, .. }) => prop_assert_eq!(p, phase),
                    Decision::End(Verdict::DeadlineExceeded { .. }) => prop_assert_eq!(phase, Phase::Deadline),
                    Decision::Wake { at_ms: next, .. } => prop_assert!(
                        phase == Phase::Stall && s.last_progress_at.is_none() && next > at_ms,
                        "no verdict at the wake {at_ms} for {phase}"
                    ),
                }
            }
        }
    }

    /// Invariant 4: a verdict, once reached, is the same however late the timer runs.
    #[test]
    fn verdicts_do_not_depend_on_lag(c in config(), s in snapshot(), now in time(), lag in 0.0..1e9f64) {
        let kind = |d: Decision| match d {
            Decision::Wake { .. } => None,
            Decision::End(Verdict::Stalled { phase, .. }) => Some(phase),
            Decision::End(Verdict::DeadlineExceeded { .. }) => Some(Phase::Deadline),
        };
        let first = kind(c.decide(&s, now).unwrap());
        if first.is_some() && now + lag <= MAX_MS {
            prop_assert_eq!(kind(c.decide(&s, now + lag).unwrap()), first);
        }
    }

    /// Invariant 6 directly: a stall limit reaching past the deadline never yields a stall.
    #[test]
    fn deadline_wins_over_longer_limits(
        start in 0.0..1e6f64, last in 0.0..1e6f64, left in 0.0..1e4f64, extra in 0.0..1e4f64, now in 0.0..2e6f64,
    ) {
        let deadline = last + left;
        let c = cfg(left + extra + 1.0, left + extra + 1e-3, Some(deadline));
        let s = progress(start, last, 1.0, 1.0);
        match c.decide(&s, now).unwrap() {
            Decision::End(Verdict::Stalled { .. }) => prop_assert!(false, "stall although the deadline comes first"),
            Decision::End(Verdict::DeadlineExceeded { late_by_ms }) => prop_assert_eq!(late_by_ms, now - deadline),
            Decision::Wake { phase, at_ms, .. } => prop_assert_eq!((phase, at_ms), (Phase::Deadline, deadline)),
        }
    }
}

// ---- Invariant 7: simulation against a brute-force oracle ----------------------------------

#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: u64,
    progress: bool,
    bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SimVerdict {
    Stalled { phase: Phase, after_ms: u64, chunks: u64, bytes: u64 },
    Deadline { late_by_ms: u64 },
}

#[derive(Debug, Clone)]
struct Sim {
    first: u64,
    stall: u64,
    deadline: Option<u64>,
    start: u64,
    arrivals: Vec<Arrival>,
}

impl Sim {
    fn horizon(&self) -> u64 {
        self.arrivals.last().map_or(self.start, |a| a.at) + self.first.max(self.stall) + 10
    }

    /// Checks every millisecond, in integers, without the core.
    fn oracle(&self) -> (u64, SimVerdict) {
        let (mut next, mut last, mut chunks, mut bytes) = (0, None, 0, 0);
        for t in self.start..=self.horizon() {
            while next < self.arrivals.len() && self.arrivals[next].at <= t {
                let a = self.arrivals[next];
                chunks += 1;
                bytes += a.bytes;
                if a.progress {
                    last = Some(a.at);
                }
                next += 1;
            }
            if let Some(d) = self.deadline {
                if t >= d {
                    return (t, SimVerdict::Deadline { late_by_ms: t - d });
                }
            }
            let (phase, reference, limit) = match last {
                None => (Phase::FirstChunk, self.start, self.first),
                Some(l) => (Phase::Stall, l, self.stall),
            };
            if t - reference >= limit {
                return (t, SimVerdict::Stalled { phase, after_ms: t - reference, chunks, bytes });
            }
        }
        unreachable!("the oracle always reaches a verdict before the horizon")
    }

    /// The host's loop: one timer, fired at its instant plus `jitter()`, the core
    /// consulted only when it fires, chunks only recording a timestamp and counts.
    fn lazy(&self, mut jitter: impl FnMut() -> i64) -> (u64, SimVerdict, usize) {
        let c = cfg(self.first as f64, self.stall as f64, self.deadline.map(|d| d as f64));
        let mut snap = Snapshot::started(self.start as f64);
        let mut calls = 0;
        let mut consult = |snap: &Snapshot, t: u64| -> Result<u64, SimVerdict> {
            calls += 1;
            match c.decide(snap, t as f64).unwrap() {
                Decision::Wake { delay_ms, .. } => {
                    let fire = (t as i64 + delay_ms as i64 + jitter()).max(t as i64 + 1);
                    Ok(fire as u64)
                }
                Decision::End(Verdict::Stalled { phase, after_ms, chunks, bytes }) => Err(SimVerdict::Stalled {
                    phase,
                    after_ms: after_ms as u64,
                    chunks: chunks as u64,
                    bytes: bytes as u64,
                }),
                Decision::End(Verdict::DeadlineExceeded { late_by_ms }) => {
                    Err(SimVerdict::Deadline { late_by_ms: late_by_ms as u64 })
                }
            }
        };
        let mut timer = match consult(&snap, self.start) {
            Ok(at) => at,
            Err(v) => return (self.start, v, 1),
        };
        let mut next = 0;
        for t in self.start..=self.horizon() + 10 {
            while next < self.arrivals.len() && self.arrivals[next].at <= t {
                let a = self.arrivals[next];
                snap.chunks += 1.0;
                snap.bytes += a.bytes as f64;
                if a.progress {
                    snap.last_progress_at = Some(a.at as f64);
                }
                next += 1;
            }
            if t == timer {
                match consult(&snap, t) {
                    Ok(at) => timer = at,
                    Err(v) => {
                        return (t, v, calls);
                    }
                }
            }
        }
        unreachable!("the lazy loop always reaches a verdict")
    }
}

fn sim() -> impl Strategy<Value = Sim> {
    (
        1u64..200,
        1u64..120,
        proptest::option::of(0u64..1_500),
        0u64..50,
        proptest::collection::vec((0u64..150, proptest::bool::weighted(0.7), 0u64..64), 0..25),
    )
        .prop_map(|(first, stall, deadline, start, gaps)| {
            let mut at = start;
            let arrivals = gaps
                .into_iter()
                .map(|(gap, progress, bytes)| {
                    at += gap;
                    Arrival { at, progress, bytes }
                })
                .collect();
            Sim { first, stall, deadline: deadline.map(|d| start + d), start, arrivals }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn lazy_timer_matches_the_per_millisecond_oracle(s in sim()) {
        let (t_oracle, v_oracle) = s.oracle();
        let (t, v, calls) = s.lazy(|| 0);
        prop_assert_eq!((t, v), (t_oracle, v_oracle));
        let progress = s.arrivals.iter().filter(|a| a.progress).count();
        let guards = s.first.div_ceil(s.stall) as usize;
        prop_assert!(calls <= 1 + progress + guards, "{calls} calls for {progress} progress chunks");
    }

    #[test]
    fn jittered_timers_never_declare_early(s in sim(), seed in any::<u64>()) {
        let (t_oracle, _) = s.oracle();
        // A small xorshift: −1 ms (Node fires up to a millisecond early) to +3 ms late.
        let mut x = seed | 1;
        let (t, v, _) = s.lazy(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 5) as i64 - 1
        });
        prop_assert!(t >= t_oracle, "declared at {t}, before the first expiry at {t_oracle}");
        // What was declared is true at `t` with the state the stream had then.
        let upto = |p: bool| s.arrivals.iter().filter(move |a| a.at <= t && (a.progress || !p));
        let last = upto(true).map(|a| a.at).next_back();
        match v {
            SimVerdict::Deadline { late_by_ms } => prop_assert_eq!(Some(t - late_by_ms), s.deadline),
            SimVerdict::Stalled { phase, after_ms, chunks, bytes } => {
                let (want, reference, limit) = match last {
                    None => (Phase::FirstChunk, s.start, s.first),
                    Some(l) => (Phase::Stall, l, s.stall),
                };
                prop_assert_eq!(phase, want);
                prop_assert!(after_ms == t - reference && after_ms >= limit);
                prop_assert_eq!(chunks, upto(false).count() as u64);
                prop_assert_eq!(bytes, upto(false).map(|a| a.bytes).sum::<u64>());
            }
        }
    }
}

#[test]
fn the_default_first_chunk_wait_is_half_of_what_is_left_with_a_floor() {
    // Half of what is left when the wait starts: a retry gets the other half.
    assert_eq!(default_first_chunk_ms(Some(21_000.0), 1_000.0), 10_000.0);
    assert_eq!(default_first_chunk_ms(Some(10_001.5), 0.0), 5_000.0);
    assert_eq!(default_first_chunk_ms(Some(60_000.0), 0.0), 30_000.0);
    // Never below the floor: with little left, the deadline decides.
    assert_eq!(default_first_chunk_ms(Some(8_000.0), 0.0), FIRST_CHUNK_FLOOR_MS);
    assert_eq!(default_first_chunk_ms(Some(100.0), 0.0), FIRST_CHUNK_FLOOR_MS);
    assert_eq!(default_first_chunk_ms(Some(0.0), 500.0), FIRST_CHUNK_FLOOR_MS);
    // No deadline: no limit.
    assert_eq!(default_first_chunk_ms(None, 0.0), NO_LIMIT);
}

proptest! {
    /// Total: any numbers give a wait `StallConfig` accepts, never below the floor.
    #[test]
    fn the_default_first_chunk_wait_is_always_a_valid_wait(at in any_f64(), started in any_f64(), some in any::<bool>()) {
        let wait = default_first_chunk_ms(some.then_some(at), started);
        prop_assert!((FIRST_CHUNK_FLOOR_MS..=MAX_MS).contains(&wait), "{wait}");
        prop_assert_eq!(wait.fract(), 0.0);
        prop_assert!(StallConfig::new(wait, 1.0, None).is_ok());
    }
}
