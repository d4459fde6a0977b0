use proptest::prelude::*;

use super::*;

fn breaker(o: BreakerOptions) -> Breaker {
    Breaker::new(&o).unwrap()
}

fn opts() -> BreakerOptions {
    BreakerOptions::default()
}

/// Records one closed call's outcome at `now` (no slow threshold).
fn call(b: &mut Breaker, slot: usize, now: f64, failed: bool) -> Option<Change> {
    assert_eq!(b.check(slot, now), Admit::Closed, "closed at {now}");
    b.record(slot, now, false, if failed { Outcome::Failure } else { Outcome::Success }, 1.0, f64::NAN)
}

#[test]
fn opens_after_consecutive_failures_and_refuses_until_the_probe_instant() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(3.0), ..opts() });
    let s = b.key("api", 0.0).index;
    assert_eq!(call(&mut b, s, 1.0, true), None);
    assert_eq!(call(&mut b, s, 2.0, false), None, "a success resets the run");
    assert_eq!(call(&mut b, s, 3.0, true), None);
    assert_eq!(call(&mut b, s, 4.0, true), None);
    assert_eq!(call(&mut b, s, 5.0, true), Some(Change::Opened(OpenReason::ConsecutiveFailures)));
    assert_eq!(b.check(s, 6.0), Admit::Refused { until: 10_005.0 });
    assert_eq!(b.check(s, 10_004.9), Admit::Refused { until: 10_005.0 });
    assert_eq!(b.stats(s, 7.0).state, CircuitState::Open);
    assert_eq!(b.stats(s, 7.0).retry_at, Some(10_005.0));
    assert_eq!(b.stats(s, 10_005.0).state, CircuitState::HalfOpen, "reads half-open once its instant passed");
    assert_eq!(b.check(s, 10_005.0), Admit::Probe { half_opened: true });
    assert_eq!(b.check(s, 10_006.0), Admit::Refused { until: 20_005.0 }, "one probe at a time, for openMs at most");
    assert_eq!(b.record(s, 10_050.0, true, Outcome::Success, 45.0, f64::NAN), Some(Change::Closed));
    assert_eq!(
        b.stats(s, 10_051.0),
        CircuitStats {
            state: CircuitState::Closed,
            retry_at: None,
            consecutive_failures: 0,
            calls: 0,
            failures: 0,
            slow_calls: 0
        }
    );
}

#[test]
fn a_failed_probe_reopens_for_another_open_ms() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(100.0), ..opts() });
    let s = b.key("k", 0.0).index;
    assert_eq!(call(&mut b, s, 0.0, true), Some(Change::Opened(OpenReason::ConsecutiveFailures)));
    assert_eq!(b.check(s, 100.0), Admit::Probe { half_opened: true });
    assert_eq!(
        b.record(s, 130.0, true, Outcome::Failure, 30.0, f64::NAN),
        Some(Change::Opened(OpenReason::ProbeFailed))
    );
    assert_eq!(b.check(s, 131.0), Admit::Refused { until: 230.0 });
    assert_eq!(Change::Opened(OpenReason::ProbeFailed).states(), (CircuitState::HalfOpen, CircuitState::Open));
}

#[test]
fn a_slow_probe_reopens_and_slow_closed_calls_open_by_rate() {
    let mut b = breaker(BreakerOptions {
        consecutive_failures: Some(0.0),
        minimum_calls: Some(4.0),
        slow_call_rate: Some(0.5),
        window_size: Some(4.0),
        ..opts()
    });
    let s = b.key("k", 0.0).index;
    for (i, took) in [10.0, 300.0, 10.0].into_iter().enumerate() {
        assert_eq!(b.check(s, i as f64), Admit::Closed);
        assert_eq!(b.record(s, i as f64, false, Outcome::Success, took, 200.0), None);
    }
    assert_eq!(b.check(s, 3.0), Admit::Closed);
    // Over the step's timeout: slow, though it succeeded.
    assert_eq!(b.record(s, 3.0, false, Outcome::Success, 250.0, 200.0), Some(Change::Opened(OpenReason::SlowCallRate)));
    assert_eq!(b.check(s, 10_003.0), Admit::Probe { half_opened: true });
    assert_eq!(
        b.record(s, 10_004.0, true, Outcome::Success, 201.0, 200.0),
        Some(Change::Opened(OpenReason::ProbeFailed))
    );
}

#[test]
fn slow_call_ms_applies_when_the_step_gave_no_timeout() {
    let mut b = breaker(BreakerOptions { slow_call_ms: Some(50.0), minimum_calls: Some(2.0), ..opts() });
    let s = b.key("k", 0.0).index;
    b.check(s, 0.0);
    assert_eq!(b.record(s, 0.0, false, Outcome::Success, 60.0, f64::INFINITY), None);
    b.check(s, 1.0);
    assert_eq!(
        b.record(s, 1.0, false, Outcome::Success, 51.0, f64::NAN),
        Some(Change::Opened(OpenReason::SlowCallRate))
    );
}

#[test]
fn the_failure_rate_waits_for_minimum_calls() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(0.0), minimum_calls: Some(10.0), ..opts() });
    let s = b.key("k", 0.0).index;
    for i in 0..9 {
        assert_eq!(call(&mut b, s, f64::from(i), i % 2 == 0), None, "{i}");
    }
    assert_eq!(b.stats(s, 9.0).failures, 5, "5 of 9 failed, but 9 calls are too few");
    // 10 calls, 5 failures: 0.5 reaches the default rate.
    assert_eq!(call(&mut b, s, 9.0, false), Some(Change::Opened(OpenReason::FailureRate)));
}

#[test]
fn a_count_window_forgets_the_oldest_call() {
    let mut b = breaker(BreakerOptions {
        consecutive_failures: Some(0.0),
        window_size: Some(3.0),
        minimum_calls: Some(3.0),
        failure_rate: Some(1.0),
        ..opts()
    });
    let s = b.key("k", 0.0).index;
    call(&mut b, s, 0.0, false);
    call(&mut b, s, 1.0, true);
    call(&mut b, s, 2.0, true);
    assert_eq!(b.stats(s, 2.0).failures, 2);
    // The success leaves: three failures in the last three calls.
    assert_eq!(call(&mut b, s, 3.0, true), Some(Change::Opened(OpenReason::FailureRate)));
}

#[test]
fn a_time_window_forgets_old_buckets() {
    let mut b = breaker(BreakerOptions {
        consecutive_failures: Some(0.0),
        window_ms: Some(1_000.0),
        minimum_calls: Some(3.0),
        ..opts()
    });
    let s = b.key("k", 0.0).index;
    call(&mut b, s, 0.0, true);
    call(&mut b, s, 150.0, true);
    assert_eq!(b.stats(s, 999.0).calls, 2);
    assert_eq!(b.stats(s, 1_050.0).calls, 1, "the bucket of 0–99 ms left");
    assert_eq!(b.stats(s, 5_000.0).calls, 0);
    // Two failures left long ago: one new failure is not a majority of three.
    call(&mut b, s, 5_000.0, false);
    call(&mut b, s, 5_001.0, false);
    assert_eq!(call(&mut b, s, 5_002.0, true), None);
}

#[test]
fn half_open_lets_probes_through_and_needs_as_many_successes() {
    let mut b =
        breaker(BreakerOptions { consecutive_failures: Some(1.0), probes: Some(3.0), open_ms: Some(100.0), ..opts() });
    let s = b.key("k", 0.0).index;
    call(&mut b, s, 0.0, true);
    assert_eq!(b.check(s, 100.0), Admit::Probe { half_opened: true });
    assert_eq!(b.check(s, 101.0), Admit::Probe { half_opened: false });
    assert_eq!(b.check(s, 102.0), Admit::Probe { half_opened: false });
    assert_eq!(b.check(s, 103.0), Admit::Refused { until: 202.0 });
    // A call admitted while closed, long ago, changes nothing now.
    assert_eq!(b.record(s, 104.0, false, Outcome::Failure, 1.0, f64::NAN), None);
    assert_eq!(b.record(s, 105.0, true, Outcome::Success, 1.0, f64::NAN), None);
    assert_eq!(b.record(s, 106.0, true, Outcome::Success, 1.0, f64::NAN), None);
    assert_eq!(b.record(s, 107.0, true, Outcome::Success, 1.0, f64::NAN), Some(Change::Closed));
}

#[test]
fn a_shed_call_an_inner_refusal_a_call_refused_for_time_or_a_caller_that_left_is_not_the_dependencys_outcome() {
    use found::*;
    assert_eq!(error_outcome(0), Outcome::Failure, "nothing found: the dependency failed");
    assert_eq!(error_outcome(1 << 20), Outcome::Failure, "unknown flags are ignored");
    for flags in [SHED, CIRCUIT_OPEN, CALLER_LEFT, NOT_STARTED, SHED | CIRCUIT_OPEN | CALLER_LEFT | NOT_STARTED] {
        assert_eq!(error_outcome(flags), Outcome::Cancelled, "flags {flags}");
    }
    for flags in [TIMEOUT, TIMEOUT | SHED, TIMEOUT | CALLER_LEFT] {
        assert_eq!(error_outcome(flags), Outcome::Timeout, "a timeout is one first: flags {flags}");
    }
    // Five shed calls in a row leave a key closed with nothing counted; a
    // shed probe neither closes nor reopens it, and frees its permit.
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(5.0), probes: Some(1.0), ..opts() });
    let s = b.key("k", 0.0).index;
    for t in 0..5 {
        assert_eq!(b.check(s, f64::from(t)), Admit::Closed);
        assert_eq!(b.record(s, f64::from(t), false, error_outcome(SHED), 1.0, f64::NAN), None);
    }
    assert_eq!(b.stats(s, 5.0).consecutive_failures, 0);
    assert_eq!(b.stats(s, 5.0).calls, 0);
    for t in 5..10 {
        b.check(s, f64::from(t));
        b.record(s, f64::from(t), false, Outcome::Failure, 1.0, f64::NAN);
    }
    assert_eq!(b.stats(s, 10.0).state, CircuitState::Open);
    assert_eq!(b.check(s, 10_009.0), Admit::Probe { half_opened: true });
    assert_eq!(b.record(s, 10_010.0, true, error_outcome(CALLER_LEFT), 1.0, f64::NAN), None);
    assert!(b.half_open(s), "a probe the caller left does not close the key");
    assert_eq!(b.check(s, 10_011.0), Admit::Probe { half_opened: false }, "and its permit is free");
}

#[test]
fn a_timeout_is_a_slow_failure_and_a_cancel_counts_nothing_but_frees_a_probe() {
    let mut b = breaker(BreakerOptions {
        consecutive_failures: Some(2.0),
        minimum_calls: Some(1.0),
        slow_call_rate: Some(1.0),
        ..opts()
    });
    let s = b.key("k", 0.0).index;
    b.check(s, 0.0);
    assert_eq!(b.record(s, 0.0, false, Outcome::Cancelled, 5.0, f64::NAN), None);
    assert_eq!(b.stats(s, 0.0).calls, 0, "a cancelled call is not counted");
    b.check(s, 1.0);
    // One call in the window, failed and slow: the failure rate is checked first.
    assert_eq!(
        b.record(s, 1.0, false, Outcome::Timeout, f64::NAN, f64::NAN),
        Some(Change::Opened(OpenReason::FailureRate))
    );
    assert_eq!(b.check(s, 10_001.0), Admit::Probe { half_opened: true });
    assert_eq!(b.check(s, 10_002.0), Admit::Refused { until: 20_001.0 });
    assert_eq!(b.record(s, 10_003.0, true, Outcome::Cancelled, 2.0, f64::NAN), None);
    assert_eq!(b.check(s, 10_004.0), Admit::Probe { half_opened: false }, "the cancelled probe's permit is free");
    assert!(b.half_open(s));
    assert_eq!(
        b.record(s, 10_005.0, true, Outcome::Timeout, 1.0, f64::NAN),
        Some(Change::Opened(OpenReason::ProbeFailed))
    );
}

#[test]
fn a_probe_never_recorded_frees_its_permit_after_open_ms() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(100.0), ..opts() });
    let s = b.key("k", 0.0).index;
    call(&mut b, s, 0.0, true);
    assert_eq!(b.check(s, 100.0), Admit::Probe { half_opened: true });
    assert_eq!(b.check(s, 199.0), Admit::Refused { until: 200.0 });
    assert_eq!(b.stats(s, 199.0).retry_at, Some(200.0));
    assert_eq!(b.check(s, 200.0), Admit::Probe { half_opened: false });
}

#[test]
fn outcomes_recorded_while_open_change_nothing() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), ..opts() });
    let s = b.key("k", 0.0).index;
    assert_eq!(b.check(s, 0.0), Admit::Closed);
    assert_eq!(b.check(s, 0.0), Admit::Closed);
    assert!(b.record(s, 1.0, false, Outcome::Failure, 1.0, f64::NAN).is_some());
    assert_eq!(b.record(s, 2.0, false, Outcome::Success, 1.0, f64::NAN), None);
    assert_eq!(b.check(s, 3.0), Admit::Refused { until: 10_001.0 });
}

#[test]
fn keys_are_independent_and_bounded_by_max_keys() {
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), max_keys: Some(2.0), ..opts() });
    let a = b.key("a", 0.0).index;
    let c = b.key("b", 1.0).index;
    assert_eq!(b.key("a", 2.0), Slot { index: a, evicted: None });
    call(&mut b, a, 3.0, true);
    assert!(matches!(b.check(a, 4.0), Admit::Refused { .. }));
    assert_eq!(b.check(c, 4.0), Admit::Closed, "another key is not affected");
    // "b" was used last at 4, "a" at 4 too but earlier in order: min_by keeps the first.
    b.check(a, 5.0);
    let new = b.key("c", 6.0);
    assert_eq!(new, Slot { index: c, evicted: Some("b".into()) });
    assert_eq!(b.check(new.index, 6.0), Admit::Closed, "a replacing key starts closed");
    assert_eq!(b.names().collect::<Vec<_>>(), ["a", "c"]);
    assert_eq!(b.key("b", 7.0).evicted.as_deref(), Some("a"), "a was used at 5, c made at 6");
}

#[test]
fn a_slot_never_handed_out_reads_closed() {
    let mut b = breaker(opts());
    assert_eq!(b.check(7, 0.0), Admit::Closed);
    assert_eq!(b.record(7, 0.0, false, Outcome::Failure, 1.0, 1.0), None);
    assert_eq!(b.stats(7, 0.0).state, CircuitState::Closed);
}

#[test]
fn export_and_import_carry_open_keys_and_the_time_left() {
    let mut a = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(1_000.0), ..opts() });
    let k = a.key("llm", 0.0).index;
    a.key("ok", 0.0);
    call(&mut a, k, 100.0, true);
    let bytes = a.export(400.0, 1_700_000_000_000.0);
    // Another isolate, its own clock; the bytes spent 200 ms in storage.
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(1_000.0), ..opts() });
    let opened = b.import(&bytes, 50.0, 1_700_000_000_200.0).unwrap();
    let slot = b.key("llm", 50.0).index;
    assert_eq!(opened, [slot]);
    assert_eq!(b.check(slot, 51.0), Admit::Refused { until: 550.0 }, "700 left at export, 200 in storage");
    assert_eq!(b.names().collect::<Vec<_>>(), ["llm"], "a closed key elsewhere is not made here");
    // Importing again changes nothing: the key is open already.
    assert_eq!(b.import(&bytes, 60.0, 1_700_000_000_300.0).unwrap(), Vec::<usize>::new());
    // Bytes older than the time left open nothing.
    let mut c = breaker(opts());
    assert_eq!(c.import(&bytes, 0.0, 1_700_000_001_000.0).unwrap(), Vec::<usize>::new());
}

#[test]
fn an_import_opens_at_most_for_this_breakers_open_ms() {
    let mut a = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(60_000.0), ..opts() });
    let k = a.key("x", 0.0).index;
    call(&mut a, k, 0.0, true);
    let mut b = breaker(BreakerOptions { open_ms: Some(1_000.0), ..opts() });
    b.import(&a.export(0.0, 0.0), 10.0, 0.0).unwrap();
    assert_eq!(b.check(0, 11.0), Admit::Refused { until: 1_010.0 });
}

#[test]
fn refused_bytes_change_nothing() {
    let mut a = breaker(BreakerOptions { consecutive_failures: Some(1.0), ..opts() });
    let k = a.key("x", 0.0).index;
    call(&mut a, k, 0.0, true);
    let good = a.export(0.0, 0.0);
    let mut b = breaker(opts());
    b.key("mine", 0.0);
    let before = b.clone();
    let mut cases: Vec<Vec<u8>> = vec![vec![], b"EDCB".to_vec(), b"XXXX\x01".to_vec()];
    for cut in 1..good.len() {
        cases.push(good[..cut].to_vec());
    }
    let mut extra = good.clone();
    extra.push(0);
    cases.push(extra);
    let mut version = good.clone();
    version[4] = 9;
    cases.push(version);
    let mut huge_count = good.clone();
    huge_count[13..17].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(huge_count);
    let mut nan_left = good.clone();
    let n = nan_left.len();
    nan_left[n - 8..].copy_from_slice(&f64::NAN.to_le_bytes());
    cases.push(nan_left);
    let mut bad_state = good.clone();
    bad_state[n - 13] = 7;
    cases.push(bad_state);
    let mut bad_utf8 = good.clone();
    bad_utf8[19] = 0xff;
    cases.push(bad_utf8);
    for bytes in cases {
        let e = b.import(&bytes, 1.0, 0.0).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("BAD_STATE", Some("bytes")), "{bytes:?}");
        crate::core::error::assert_filled(&e.message());
        assert_eq!(b, before, "{bytes:?}");
    }
}

#[test]
fn options_are_checked_by_name() {
    let cases = [
        (BreakerOptions { consecutive_failures: Some(1.5), ..opts() }, "consecutiveFailures", "NOT_WHOLE"),
        (BreakerOptions { failure_rate: Some(0.0), ..opts() }, "failureRate", "OUT_OF_RANGE"),
        (BreakerOptions { slow_call_rate: Some(f64::NAN), ..opts() }, "slowCallRate", "NOT_FINITE"),
        (BreakerOptions { slow_call_ms: Some(-1.0), ..opts() }, "slowCallMs", "NEGATIVE"),
        (BreakerOptions { window_size: Some(0.0), ..opts() }, "windowSize", "OUT_OF_RANGE"),
        (BreakerOptions { window_ms: Some(0.5), ..opts() }, "windowMs", "OUT_OF_RANGE"),
        (BreakerOptions { window_ms: Some(10.0), window_size: Some(10.0), ..opts() }, "windowMs", "CONFLICT"),
        (BreakerOptions { minimum_calls: Some(0.0), ..opts() }, "minimumCalls", "OUT_OF_RANGE"),
        (BreakerOptions { open_ms: Some(f64::INFINITY), ..opts() }, "openMs", "NOT_FINITE"),
        (BreakerOptions { probes: Some(0.0), ..opts() }, "probes", "OUT_OF_RANGE"),
        (BreakerOptions { max_keys: Some(2e6), ..opts() }, "maxKeys", "OUT_OF_RANGE"),
    ];
    for (o, param, code) in cases {
        let e = Breaker::new(&o).unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some(param), code), "{o:?}");
        crate::core::error::assert_filled(&e.message());
    }
    assert_eq!(
        Breaker::new(&BreakerOptions { failure_rate: Some(2.0), ..opts() }).unwrap_err().to_string(),
        "'failureRate' must be greater than 0 and at most 1 (a share of the calls): current value is 2"
    );
    assert_eq!(
        open_message("llm", 1_500.0).to_string(),
        "circuit 'llm' is open: calls fail at once until it lets a probe through in 1500 ms"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Check(u8),
    Record { key: u8, outcome: u8, took: u8 },
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3).prop_map(Op::Check),
        (0u8..3, 0u8..4, any::<u8>()).prop_map(|(key, outcome, took)| Op::Record { key, outcome, took }),
        (0u16..400).prop_map(Op::Wait),
    ]
}

proptest! {
    /// Invariants 1–3 under any interleaving: open refuses until a later
    /// instant; half-open never has more than `probes` out; the count
    /// window equals an oracle of the outcomes recorded while closed.
    #[test]
    fn invariants_hold_under_any_interleaving(ops in proptest::collection::vec(op(), 1..300), probes in 1u32..4, window in 1u32..8) {
        let mut b = breaker(BreakerOptions {
            consecutive_failures: Some(4.0),
            minimum_calls: Some(3.0),
            window_size: Some(f64::from(window)),
            probes: Some(f64::from(probes)),
            open_ms: Some(300.0),
            slow_call_ms: Some(200.0),
            ..opts()
        });
        let slots: Vec<usize> = ["a", "b", "c"].iter().map(|k| b.key(k, 0.0).index).collect();
        // What each key's caller holds: admitted calls (as probes or not), oldest first.
        let mut held: Vec<Vec<bool>> = vec![Vec::new(); 3];
        let mut oracle: Vec<Vec<(bool, bool)>> = vec![Vec::new(); 3];
        let mut now = 0.0;
        for op in ops {
            match op {
                Op::Wait(ms) => now += f64::from(ms),
                Op::Check(k) => {
                    let k = usize::from(k);
                    match b.check(slots[k], now) {
                        Admit::Closed => held[k].push(false),
                        Admit::Probe { .. } => held[k].push(true),
                        Admit::Refused { until } => prop_assert!(until > now),
                    }
                }
                Op::Record { key, outcome, took } => {
                    let outcome = [Outcome::Success, Outcome::Failure, Outcome::Timeout, Outcome::Cancelled][usize::from(outcome)];
                    let k = usize::from(key);
                    if held[k].is_empty() { continue; }
                    let probe = held[k].remove(0);
                    let took = f64::from(took) * 2.0;
                    let before = b.stats(slots[k], now).state;
                    let change = b.record(slots[k], now, probe, outcome, took, f64::NAN);
                    if before == CircuitState::Closed && !probe && outcome != Outcome::Cancelled {
                        let timeout = outcome == Outcome::Timeout;
                        oracle[k].push((outcome == Outcome::Failure || timeout, timeout || took > 200.0));
                    }
                    if let Some(Change::Opened(_) | Change::Closed) = change {
                        oracle[k].clear();
                    }
                }
            }
            for k in 0..3 {
                let st = b.stats(slots[k], now);
                let last: Vec<_> = oracle[k].iter().rev().take(window as usize).collect();
                prop_assert_eq!(st.calls as usize, last.len());
                prop_assert_eq!(st.failures as usize, last.iter().filter(|(f, _)| *f).count());
                prop_assert_eq!(st.slow_calls as usize, last.iter().filter(|(_, s)| *s).count());
                if let Some(key) = b.keys.get(slots[k]) {
                    if let State::HalfOpen { out, ok, .. } = key.state {
                        prop_assert!(out + ok <= probes);
                    }
                }
            }
        }
    }

    /// Invariant 7: no number makes it panic, and nothing it answers is NaN
    /// where an instant is promised.
    #[test]
    fn never_panics(times in proptest::collection::vec(any::<f64>(), 1..40), failed in any::<bool>()) {
        let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), window_ms: Some(1_000.0), minimum_calls: Some(1.0), ..opts() });
        let s = b.key("k", 0.0).index;
        for &t in &times {
            let admit = b.check(s, t);
            b.record(s, t, matches!(admit, Admit::Probe { .. }), if failed { Outcome::Failure } else { Outcome::Success }, t, t);
            b.stats(s, t);
            let bytes = b.export(t, t);
            let _ = b.import(&bytes, t, t);
        }
    }

    /// Arbitrary bytes are refused or taken, never a panic, and a refusal changes nothing.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut b = breaker(opts());
        let before = b.clone();
        if b.import(&bytes, 0.0, 0.0).is_err() {
            prop_assert_eq!(b, before);
        }
    }
}

/// A breaker whose `n` keys `k0…` are all open (one failure opens).
fn all_open(n: usize, open_ms: f64) -> Breaker {
    let o =
        BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(open_ms), max_keys: Some(n as f64), ..opts() };
    let mut a = breaker(o);
    for i in 0..n {
        let s = a.key(&format!("k{i}"), 0.0).index;
        call(&mut a, s, 0.0, true);
    }
    a
}

#[test]
fn an_import_never_evicts_closes_or_shortens_a_key_open_here() {
    let foreign = all_open(1_000, 60_000.0).export(0.0, 0.0);
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(60_000.0), ..opts() });
    let llm = b.key("llm", 0.0).index;
    call(&mut b, llm, 0.0, true);
    let kv = b.key("kv", 5.0).index;
    call(&mut b, kv, 5.0, false);
    // The imported keys are all newer than `llm`: an eviction by recency would take it.
    let opened = b.import(&foreign, 10.0, 0.0).unwrap();
    assert_eq!(b.check(llm, 11.0), Admit::Refused { until: 60_000.0 }, "llm stays open until its own instant");
    assert!(b.names().any(|n| n == "llm"));
    assert_eq!(b.names().count(), 1_000, "at most maxKeys keys");
    assert!(!b.names().any(|n| n == "kv"), "a closed key makes room");
    assert_eq!(opened.len(), 999, "the keys that found room opened; the rest are not held");
    let mut seen = opened.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), opened.len(), "each slot is answered once");
    for slot in opened {
        assert!(matches!(b.check(slot, 12.0), Admit::Refused { .. }));
    }
    // A key open here with more time left is not shortened by a shorter foreign one.
    let mut c = breaker(BreakerOptions { consecutive_failures: Some(1.0), open_ms: Some(60_000.0), ..opts() });
    let k = c.key("k0", 0.0).index;
    call(&mut c, k, 0.0, true);
    c.import(&all_open(1, 1_000.0).export(0.0, 0.0), 1.0, 0.0).unwrap();
    assert_eq!(c.check(k, 2.0), Admit::Refused { until: 60_000.0 });
}

#[test]
fn an_import_with_the_same_name_twice_opens_one_key() {
    let mut a = breaker(BreakerOptions { consecutive_failures: Some(1.0), ..opts() });
    let s = a.key("x", 0.0).index;
    call(&mut a, s, 0.0, true);
    let one = a.export(0.0, 0.0);
    // The same entry twice, the count said so.
    let entry = &one[17..];
    let mut twice = one[..13].to_vec();
    twice.extend_from_slice(&2u32.to_le_bytes());
    twice.extend_from_slice(entry);
    twice.extend_from_slice(entry);
    let mut b = breaker(opts());
    assert_eq!(b.import(&twice, 0.0, 0.0).unwrap().len(), 1);
    assert_eq!(b.names().collect::<Vec<_>>(), ["x"]);
}

#[test]
fn an_import_into_a_full_breaker_replaces_its_closed_keys_least_recent_first() {
    // (The import's speed, linear in its size: bench/breaker.bench.mjs.)
    let foreign = all_open(1_999, 60_000.0).export(0.0, 0.0);
    let mut b = breaker(BreakerOptions { consecutive_failures: Some(1.0), max_keys: Some(2_001.0), ..opts() });
    for i in 0..2_000 {
        b.key(&format!("mine{i}"), f64::from(i));
    }
    let open = b.key("open", 0.0).index;
    call(&mut b, open, 0.0, true);
    let late = b.key("mine1999", 5_000.0).index;
    assert_eq!(b.import(&foreign, 5_001.0, 0.0).unwrap().len(), 1_999);
    assert_eq!(b.names().count(), 2_001);
    assert!(matches!(b.check(open, 5_002.0), Admit::Refused { .. }));
    assert_eq!(b.names().nth(late), Some("mine1999"), "the most recent closed key is the one kept");
    assert_eq!(b.names().filter(|n| n.starts_with('k')).count(), 1_999);
}

proptest! {
    #[test]
    fn radix_sort_sorts_stably(v in proptest::collection::vec(any::<u64>(), 0..200), small in proptest::collection::vec(0u64..4, 0..50)) {
        for v in [v, small] {
            let mut got: Vec<(u64, usize)> = v.iter().copied().zip(0..).collect();
            radix_sort(&mut got);
            let mut want = got.clone();
            want.sort_by_key(|&(x, i)| (x, i));
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn order_bits_order_as_total_cmp(a in any::<f64>(), b in any::<f64>()) {
        prop_assert_eq!(order_bits(a).cmp(&order_bits(b)), a.total_cmp(&b));
    }
}
