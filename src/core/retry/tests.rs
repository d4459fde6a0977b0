//! The retry policy's and loop's tests, the property tests of the module's
//! invariants 2 to 6, and the seed 004 scenario (a plan whose steps retry).

use super::*;
use crate::core::plan::{Decision, Plan, StepKind, StepSpec};
use crate::core::retry_budget::RetryBudget;
use proptest::prelude::*;

#[test]
fn rejects_bad_settings_with_clear_errors() {
    assert_eq!(Backoff::new(10.0, 5.0, 0.0), Err(RetryError::MaxBelowBase { base_ms: 10.0, max_ms: 5.0 }));
    let e = Backoff::new(10.0, 50.0, 2.0).unwrap_err();
    assert_eq!(e.to_string(), "'jitter' must be between 0 and 1: current value is 2");
    assert!(matches!(Backoff::new(10.0, 50.0, f64::NAN), Err(RetryError::BadJitter { .. })));
    assert!(matches!(
        Backoff::new(-1.0, 50.0, 0.0),
        Err(RetryError::Time(DeadlineError::Negative { param: "baseMs", .. }))
    ));
    let b = Backoff::new(10.0, 50.0, 0.1).unwrap();
    // A timeout of 0, or below the attempt minimum, is a shortage: the
    // policy is valid and its first start stops the loop.
    for (min, timeout) in [(1.0, 0.0), (500.0, 100.0)] {
        let p = RetryPolicy::new(min, Some(timeout), b, 2, true).unwrap();
        let stop = StopReason::TimeoutBelowMin { attempt_timeout_ms: timeout, attempt_min_ms: min };
        assert_eq!(p.start(1, 0.0, 10_000.0), Ok(Start::Stop(stop)));
        assert_eq!(stop.code(), "insufficient");
    }
    assert!(matches!(
        RetryPolicy::new(1.0, Some(f64::NAN), b, 2, true),
        Err(RetryError::Time(DeadlineError::NotFinite { param: "attemptTimeoutMs", .. }))
    ));
    assert_eq!(RetryPolicy::new(1.0, None, b, 0, true), Err(RetryError::BadMaxAttempts { value: 0 }));
    assert_eq!(RetryPolicy::new(1.0, None, b, 101, true), Err(RetryError::BadMaxAttempts { value: 101 }));
    let p = RetryPolicy::new(1.0, None, b, 2, true).unwrap();
    assert_eq!(p.start(0, 0.0, 10.0), Err(RetryError::BadAttempt { value: 0 }));
    assert!(matches!(p.start(1, f64::NAN, 10.0), Err(RetryError::Time(_))));
    assert!(matches!(p.after_failure(1, Failure::NotApplied, false, -1.0, 0.0, 10.0), Err(RetryError::Time(_))));
    assert_eq!(Failure::parse("timeout"), Err(RetryError::UnknownFailure { value: "timeout".into() }));
    assert_eq!(Failure::parse("not-applied"), Ok(Failure::NotApplied));
}

#[test]
fn errors_name_the_option_and_defaults_live_here() {
    use crate::core::error::{Described, Within};
    let named = |o: RetryOptions| {
        let e = Within::new("options", o.policy().unwrap_err());
        (e.param().unwrap(), e.code())
    };
    let bad = |base_ms, max_ms, jitter| RetryOptions {
        backoff: Some(BackoffOptions { base_ms, max_ms, jitter: JitterOption::Fraction(jitter) }),
        ..RetryOptions::default()
    };
    assert_eq!(named(bad(1.0, 2.0, 2.0)), ("options.backoff.jitter".into(), "JITTER_OUT_OF_RANGE"));
    assert_eq!(named(bad(10.0, 2.0, 0.0)), ("options.backoff.maxMs".into(), "MAX_BELOW_BASE"));
    assert_eq!(named(bad(-1.0, 2.0, 0.0)), ("options.backoff.baseMs".into(), "NEGATIVE"));
    let name = RetryOptions {
        backoff: Some(BackoffOptions { base_ms: 1.0, max_ms: 2.0, jitter: JitterOption::Name("half".into()) }),
        ..RetryOptions::default()
    };
    assert_eq!(named(name), ("options.backoff.jitter".into(), "UNKNOWN_JITTER"));
    for (v, code) in [(-1.0, "NEGATIVE"), (f64::NAN, "NOT_FINITE")] {
        let cap = RetryOptions { max_retry_after_ms: Some(v), ..RetryOptions::default() };
        assert_eq!(named(cap), ("options.maxRetryAfterMs".into(), code));
    }
    let attempts = RetryOptions { max_attempts: Some(0), ..RetryOptions::default() };
    assert_eq!(named(attempts), ("options.maxAttempts".into(), "MAX_ATTEMPTS_OUT_OF_RANGE"));
    let min = RetryOptions { attempt_min_ms: Some(f64::NAN), ..RetryOptions::default() };
    assert_eq!(named(min), ("options.attemptMinMs".into(), "NOT_FINITE"));
    let retries = Backoff::new(1.0, 1.0, 0.0).unwrap().schedule(MAX_ATTEMPTS + 1, 0).unwrap_err();
    assert_eq!((retries.param().as_deref(), retries.code()), (Some("retries"), "RETRIES_OUT_OF_RANGE"));
    // Nothing given: the documented defaults.
    let p = RetryOptions::default().policy().unwrap();
    assert_eq!((p.attempt_min_ms(), p.max_attempts(), p.idempotent()), (0.0, DEFAULT_MAX_ATTEMPTS, false));
    assert_eq!(*p.backoff(), Backoff::new(100.0, 2_000.0, 1.0).unwrap());
    assert_eq!(StopReason::BudgetExhausted.stop().reason, StopCode::BudgetExhausted);
    assert_eq!(StopReason::BudgetExhausted.code(), "budget-exhausted");
}

#[test]
fn attempt_timeout_is_min_of_timeout_and_remaining() {
    let b = Backoff::new(100.0, 1_000.0, 0.0).unwrap();
    let p = RetryPolicy::new(200.0, Some(1_000.0), b, 3, true).unwrap();
    assert_eq!(p.start(1, 0.0, 5_000.0), Ok(Start::Attempt { number: 1, timeout_ms: 1_000.0, remaining_ms: 5_000.0 }));
    assert_eq!(p.start(2, 4_500.0, 5_000.0), Ok(Start::Attempt { number: 2, timeout_ms: 500.0, remaining_ms: 500.0 }));
    assert_eq!(
        p.start(2, 4_850.0, 5_000.0),
        Ok(Start::Stop(StopReason::Insufficient { remaining_ms: 150.0, attempt_min_ms: 200.0 }))
    );
    assert_eq!(p.start(4, 0.0, 5_000.0), Ok(Start::Stop(StopReason::Exhausted { attempts: 3 })));
}

#[test]
fn backoff_that_would_pass_the_deadline_is_not_slept() {
    let b = Backoff::new(1_000.0, 4_000.0, 0.0).unwrap();
    let p = RetryPolicy::new(500.0, Some(2_000.0), b, 5, true).unwrap();
    // 1 200 ms left, a 1 000 ms backoff would leave 200 < 500: stop now.
    let d = p.after_failure(1, Failure::NotApplied, false, 1_000.0, 8_800.0, 10_000.0).unwrap();
    assert_eq!(
        d,
        AfterFailure::Stop(StopReason::BackoffPastDeadline {
            delay_ms: 1_000.0,
            remaining_ms: 1_200.0,
            attempt_min_ms: 500.0
        })
    );
    assert_eq!(
        AfterFailure::Stop(StopReason::Permanent),
        p.after_failure(1, Failure::Permanent, true, 1.0, 0.0, 1e4).unwrap()
    );
    // With 1 600 ms left it sleeps, then the decision is recomputed: the
    // sleep overran by 200 ms, so 400 ms remain and no attempt starts.
    assert_eq!(
        p.after_failure(1, Failure::NotApplied, false, 1_000.0, 8_400.0, 10_000.0),
        Ok(AfterFailure::Backoff { delay_ms: 1_000.0 })
    );
    assert!(matches!(p.start(2, 9_600.0, 10_000.0), Ok(Start::Stop(StopReason::Insufficient { .. }))));
}

#[test]
fn ambiguous_failures_need_idempotency_or_a_key() {
    let b = Backoff::new(10.0, 10.0, 0.0).unwrap();
    let post = RetryPolicy::new(0.0, Some(100.0), b, 3, false).unwrap();
    let get = RetryPolicy::new(0.0, Some(100.0), b, 3, true).unwrap();
    let at = 10_000.0;
    assert_eq!(
        post.after_failure(1, Failure::Ambiguous, false, 10.0, 0.0, at),
        Ok(AfterFailure::Stop(StopReason::NotIdempotent))
    );
    assert_eq!(
        post.after_failure(1, Failure::Ambiguous, true, 10.0, 0.0, at),
        Ok(AfterFailure::Backoff { delay_ms: 10.0 })
    );
    assert_eq!(
        post.after_failure(1, Failure::NotApplied, false, 10.0, 0.0, at),
        Ok(AfterFailure::Backoff { delay_ms: 10.0 })
    );
    assert_eq!(
        get.after_failure(1, Failure::Ambiguous, false, 10.0, 0.0, at),
        Ok(AfterFailure::Backoff { delay_ms: 10.0 })
    );
    assert!(StopReason::NotIdempotent.to_string().contains("operation key"));
}

#[test]
fn run_records_every_attempt_and_enforces_order() {
    let b = Backoff::new(100.0, 100.0, 0.0).unwrap();
    let p = RetryPolicy::new(50.0, Some(1_000.0), b, 3, true).unwrap();
    let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
    assert!(matches!(run.failed(0.0, Failure::Ambiguous, None), Err(RetryError::OutOfOrder { call: "failed", .. })));
    assert!(matches!(run.start(0.0, None), Ok(Start::Attempt { number: 1, .. })));
    assert!(matches!(run.start(0.0, None), Err(RetryError::OutOfOrder { call: "start", .. })));
    assert_eq!(run.failed(1_000.0, Failure::Ambiguous, None), Ok(AfterFailure::Backoff { delay_ms: 100.0 }));
    assert!(matches!(run.start(1_100.0, None), Ok(Start::Attempt { number: 2, .. })));
    run.succeeded(1_400.0).unwrap();
    assert!(run.is_done());
    assert!(matches!(run.start(2_000.0, None), Err(RetryError::OutOfOrder { .. })));
    let r = run.records();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].outcome, AttemptOutcome::Failed(Failure::Ambiguous));
    assert_eq!((r[1].number, r[1].started_ms, r[1].elapsed_ms, r[1].outcome), (2, 1_100.0, 300.0, AttemptOutcome::Ok));
}

#[test]
fn run_withdraws_from_the_budget() {
    let b = Backoff::new(10.0, 10.0, 0.0).unwrap();
    let p = RetryPolicy::new(0.0, Some(100.0), b, 5, true).unwrap();
    let mut budget = RetryBudget::new(0.0, 0.0, 1_000.0).unwrap();
    let mut run = RetryRun::new(p, 10_000.0, 3, false).unwrap();
    run.start(0.0, Some(&mut budget)).unwrap();
    assert_eq!(budget.counts(0.0).unwrap(), (1, 0));
    assert_eq!(
        run.failed(100.0, Failure::NotApplied, Some(&mut budget)),
        Ok(AfterFailure::Stop(StopReason::BudgetExhausted))
    );
    assert!(run.is_done());
}

#[test]
fn a_signal_ends_the_run_where_it_is_and_the_message_is_written_once() {
    use crate::core::error::assert_filled;
    let b = Backoff::new(100.0, 100.0, 0.0).unwrap();
    let p = RetryPolicy::new(0.0, Some(1_000.0), b, 3, true).unwrap();
    let stopped = |run: &mut RetryRun, deadline| run.aborted(5.0, deadline).unwrap();
    let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
    let s = stopped(&mut run, true);
    assert_eq!(
        (s.code(), s.to_string()),
        ("deadline", "retry stopped after 0 attempts: the deadline passed before the attempt".into())
    );
    assert!(run.is_done() && run.records().is_empty());
    assert!(matches!(run.aborted(6.0, true), Err(RetryError::OutOfOrder { call: "aborted", .. })));
    // During an attempt: recorded as ambiguous, ended by the signal.
    let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
    run.start(0.0, None).unwrap();
    let s = stopped(&mut run, false);
    assert_eq!(
        (s.code(), s.to_string()),
        ("aborted", "retry stopped after 1 attempt: the operation was aborted during the attempt".into())
    );
    assert_eq!(
        (run.records()[0].ended, run.records()[0].outcome),
        (Ended::Aborted, AttemptOutcome::Failed(Failure::Ambiguous))
    );
    assert_eq!(run.stopped(), Some(s));
    // During the backoff; an attempt cut at its own timeout is a retried ambiguous failure.
    let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
    run.start(0.0, None).unwrap();
    assert_eq!(
        run.attempt_failed(1_000.0, AttemptFailure::Timeout, None),
        Ok(AfterFailure::Backoff { delay_ms: 100.0 })
    );
    assert_eq!(
        (run.records()[0].ended, run.records()[0].outcome),
        (Ended::Timeout, AttemptOutcome::Failed(Failure::Ambiguous))
    );
    let s = stopped(&mut run, true);
    assert_eq!(s.to_string(), "retry stopped after 1 attempt: the deadline passed during the backoff");
    assert_filled(&s.message());
    // The core's own stops read the same way.
    let mut run = RetryRun::new(p, 10_000.0, 1, false).unwrap();
    run.start(0.0, None).unwrap();
    assert_eq!(run.failed(1.0, Failure::Permanent, None), Ok(AfterFailure::Stop(StopReason::Permanent)));
    let s = run.stopped().unwrap();
    assert_eq!(
        (s.code(), s.to_string()),
        ("permanent", "retry stopped after 1 attempt: the failure is permanent, so it was not retried".into())
    );
    assert_eq!(run.records()[0].ended, Ended::Error);
    for reason in [StopReason::Deadline { during: None }, StopReason::Aborted { during: Some(During::Backoff) }] {
        assert_filled(&Stopped { kind: Loop::Hedge, attempts: 2, reason }.message());
    }
}

// ---- the seed 004 scenario on a fake clock ----------------------------

/// How a simulated attempt behaves.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// Never answers: runs until its timeout fires, `late_ms` late.
    Hang,
    /// Fails after `ms` (or at its timeout, if sooner).
    FailAfter(f64, Failure),
    /// Succeeds after `ms` (or times out first).
    SucceedAfter(f64),
}

/// Runs one step's retry loop on a fake clock from `now` with the step
/// deadline `step_at`; returns the clock when the loop ends and the attempts.
fn simulate_step(
    policy: RetryPolicy,
    now: f64,
    step_at: f64,
    seed: u64,
    late_ms: f64,
    behaviour: &mut dyn FnMut(u32) -> Behaviour,
) -> (f64, u32) {
    let mut run = RetryRun::new(policy, step_at, seed, false).unwrap();
    let mut now = now;
    loop {
        let Start::Attempt { number, timeout_ms, .. } = run.start(now, None).unwrap() else {
            return (now, run.records().len() as u32);
        };
        assert!(now + timeout_ms <= step_at + 1e-9, "attempt timeout passes the step deadline");
        let (took, result) = match behaviour(number) {
            Behaviour::Hang => (timeout_ms + late_ms, Err(Failure::Ambiguous)),
            Behaviour::FailAfter(ms, f) if ms < timeout_ms => (ms, Err(f)),
            Behaviour::SucceedAfter(ms) if ms < timeout_ms => (ms, Ok(())),
            _ => (timeout_ms + late_ms, Err(Failure::Ambiguous)),
        };
        now += took;
        match result {
            Ok(()) => {
                run.succeeded(now).unwrap();
                return (now, run.records().len() as u32);
            }
            Err(f) => match run.failed(now, f, None).unwrap() {
                AfterFailure::Backoff { delay_ms } => now += delay_ms + late_ms,
                AfterFailure::Stop(_) => return (now, run.records().len() as u32),
            },
        }
    }
}

/// Seed 004: classify, retrieve, generate, policy check; "sensible" 10 s
/// timeouts and two attempts each; the caller gives up at 30 s.
fn seed_004_plan(now: f64) -> Plan {
    Plan::new(
        now + 30_000.0,
        now,
        vec![
            StepSpec::new("classify", StepKind::Optional, 500.0).preferred(10_000.0),
            StepSpec::new("retrieve", StepKind::Optional, 500.0).preferred(10_000.0),
            StepSpec::new("generate", StepKind::Optional, 1_000.0).preferred(10_000.0),
            StepSpec::new("policy", StepKind::Mandatory, 1_000.0).preferred(10_000.0).reserve(2_000.0),
        ],
    )
    .unwrap()
}

fn seed_004_policy() -> RetryPolicy {
    RetryPolicy::new(500.0, Some(10_000.0), Backoff::new(200.0, 2_000.0, 0.5).unwrap(), 2, true).unwrap()
}

/// Runs the whole pipeline; returns (end, attempts, policy check's cap).
fn run_seed_004(late_ms: f64, behaviour: &mut dyn FnMut(usize, u32) -> Behaviour) -> (f64, u32, f64) {
    let start = 1_000.0;
    let plan = seed_004_plan(start);
    let mut now = start;
    let mut attempts = 0;
    let mut policy_cap = 0.0;
    for i in 0..plan.steps().len() {
        match plan.decide_index(i, now).unwrap() {
            Decision::Run { cap_ms, .. } => {
                if i == 3 {
                    policy_cap = cap_ms;
                }
                let (end, n) =
                    simulate_step(seed_004_policy(), now, now + cap_ms, i as u64, late_ms, &mut |a| behaviour(i, a));
                attempts += n;
                now = end;
            }
            Decision::Skip { .. } => {}
            Decision::Insufficient { .. } => panic!("the mandatory policy check was starved"),
        }
        now += late_ms; // scheduling delay before the next step
    }
    (now - start, attempts, policy_cap)
}

#[test]
fn seed_004_hanging_pipeline_fails_by_30_s_not_80_s() {
    // The per-step-timeout worst case: 4 steps × 2 attempts × 10 s.
    let naive = 4.0 * 2.0 * 10_000.0;
    assert_eq!(naive, 80_000.0);
    // Every attempt hangs until its timeout, timers exactly on time.
    let (elapsed, attempts, policy_cap) = run_seed_004(0.0, &mut |_, _| Behaviour::Hang);
    assert!(elapsed <= 30_000.0, "took {elapsed} ms");
    assert!(policy_cap >= 1_000.0, "policy check got {policy_cap} ms");
    assert!(attempts >= 4);
    // Timers 2 ms late and 2 ms per hand-off (within the 5 ms margin):
    // still done by the deadline plus the final step's lateness.
    let (elapsed, _, policy_cap) = run_seed_004(2.0, &mut |_, _| Behaviour::Hang);
    assert!(elapsed <= 30_000.0 + 2.0 * 2.0, "took {elapsed} ms");
    assert!(policy_cap >= 1_000.0);
}

#[test]
fn seed_004_fast_failures_are_retried_inside_the_deadline() {
    // First attempts fail fast (refused); second attempts succeed.
    let (elapsed, attempts, _) = run_seed_004(0.0, &mut |_, a| {
        if a == 1 {
            Behaviour::FailAfter(300.0, Failure::NotApplied)
        } else {
            Behaviour::SucceedAfter(2_000.0)
        }
    });
    assert_eq!(attempts, 8);
    assert!(elapsed < 30_000.0 && elapsed > 4.0 * 2_300.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Invariants 2, 3 and 4 for single decisions.
    #[test]
    fn decisions_respect_the_deadline(
        min in 0.0..2_000.0f64,
        timeout_extra in proptest::option::of(0.0..10_000.0f64),
        attempts in 1u32..6,
        idempotent in any::<bool>(),
        key in any::<bool>(),
        attempt in 1u32..8,
        now in 0.0..20_000.0f64,
        budget in 0.0..20_000.0f64,
        delay in 0.0..5_000.0f64,
        failure in prop_oneof![Just(Failure::Ambiguous), Just(Failure::NotApplied), Just(Failure::Permanent)],
    ) {
        let timeout = timeout_extra.map(|t| min + t + 1.0);
        let p = RetryPolicy::new(min, timeout, Backoff::new(1.0, 1.0, 0.0).unwrap(), attempts, idempotent).unwrap();
        let at = now + budget;
        let budget = at - now; // what the policy sees, after rounding
        match p.start(attempt, now, at).unwrap() {
            Start::Attempt { timeout_ms, .. } => {
                prop_assert!(budget >= min && budget > 0.0 && attempt <= attempts);
                prop_assert!(timeout_ms <= budget && timeout_ms > 0.0);
                if let Some(t) = timeout { prop_assert!(timeout_ms <= t); }
            }
            Start::Stop(_) => prop_assert!(budget < min || budget <= 0.0 || attempt > attempts),
        }
        match p.after_failure(attempt, failure, key, delay, now, at).unwrap() {
            AfterFailure::Backoff { delay_ms } => {
                prop_assert!(now + delay_ms + min <= at && now + delay_ms < at);
                prop_assert!(failure != Failure::Permanent && attempt < attempts);
                prop_assert!(failure != Failure::Ambiguous || idempotent || key);
            }
            AfterFailure::Stop(StopReason::NotIdempotent) => {
                prop_assert!(failure == Failure::Ambiguous && !idempotent && !key);
            }
            AfterFailure::Stop(_) => {}
        }
    }

    /// Invariant 5: whatever the attempts do, the loop ends by the deadline
    /// plus one timer's lateness, and never exceeds maxAttempts.
    #[test]
    fn retry_loops_end_by_the_deadline(
        budget in 0.0..60_000.0f64,
        min in 0.0..1_000.0f64,
        timeout_extra in 1.0..15_000.0f64,
        attempts in 1u32..8,
        base in 0.0..3_000.0f64,
        jitter in 0.0..=1.0f64,
        seed in any::<u64>(),
        late in 0.0..5.0f64,
        script in proptest::collection::vec((0u8..3, 0.0..20_000.0f64), 8),
    ) {
        let p = RetryPolicy::new(min, Some(min + timeout_extra), Backoff::new(base, base * 8.0, jitter).unwrap(), attempts, true).unwrap();
        let start = 100.0;
        let (end, n) = simulate_step(p, start, start + budget, seed, late, &mut |a| {
            let (kind, ms) = script[(a as usize - 1) % script.len()];
            match kind {
                0 => Behaviour::Hang,
                1 => Behaviour::FailAfter(ms, Failure::NotApplied),
                _ => Behaviour::SucceedAfter(ms),
            }
        });
        prop_assert!(n <= attempts);
        prop_assert!(end <= start + budget + late + 1e-6, "ended {} after the deadline", end - start - budget);
    }

    /// Seed 004 with random behaviour and lateness within the plan margin.
    #[test]
    fn seed_004_never_outlives_the_caller(
        script in proptest::collection::vec((0u8..3, 0.0..12_000.0f64), 8),
        late in 0.0..2.5f64,
    ) {
        let (elapsed, attempts, policy_cap) = run_seed_004(late, &mut |i, a| {
            let (kind, ms) = script[(i * 2 + a as usize - 1) % script.len()];
            match kind {
                0 => Behaviour::Hang,
                1 => Behaviour::FailAfter(ms, Failure::NotApplied),
                _ => Behaviour::SucceedAfter(ms),
            }
        });
        prop_assert!(attempts <= 8);
        prop_assert!(policy_cap >= 1_000.0);
        prop_assert!(elapsed <= 30_000.0 + 2.0 * late + 1e-6, "took {}", elapsed);
    }

}

proptest! {
    /// Invariant 6: a signal ends the run where it is; a running attempt is
    /// recorded as ambiguous and ended by the signal; the budget is not asked;
    /// the stop names the attempts made.
    #[test]
    fn a_signal_ends_the_run_where_it_is(
        steps in proptest::collection::vec((0u8..4, 0.0..300.0f64), 0..12),
        deadline in any::<bool>(),
    ) {
        let b = Backoff::new(10.0, 40.0, 1.0).unwrap();
        let p = RetryPolicy::new(0.0, Some(200.0), b, 5, true).unwrap();
        let mut budget = RetryBudget::new(0.5, 100.0, 10_000.0).unwrap();
        let mut run = RetryRun::new(p, 5_000.0, 7, false).unwrap();
        let mut now = 0.0;
        let mut expect = During::BeforeAttempt;
        for (what, dt) in steps {
            now += dt;
            if run.is_done() {
                break;
            }
            expect = match (expect, what) {
                (During::BeforeAttempt | During::Backoff, _) => match run.start(now, Some(&mut budget)).unwrap() {
                    Start::Attempt { .. } => During::Attempt,
                    Start::Stop(_) => break,
                },
                (During::Attempt, 0) => {
                    run.succeeded(now).unwrap();
                    break;
                }
                (During::Attempt, w) => {
                    let how = if w == 1 { AttemptFailure::Timeout } else { AttemptFailure::Error(Failure::NotApplied) };
                    match run.attempt_failed(now, how, Some(&mut budget)).unwrap() {
                        AfterFailure::Backoff { .. } => During::Backoff,
                        AfterFailure::Stop(_) => break,
                    }
                }
            };
        }
        if run.is_done() {
            prop_assert!(run.aborted(now, deadline).is_err(), "a finished run took a signal");
            return Ok(());
        }
        let before = (budget.counts(now).unwrap(), run.records().len());
        let stop = run.aborted(now + 1.0, deadline).unwrap();
        prop_assert!(run.is_done());
        prop_assert_eq!(budget.counts(now).unwrap(), before.0, "the budget was asked");
        let reason = if deadline { StopReason::Deadline { during: Some(expect) } } else { StopReason::Aborted { during: Some(expect) } };
        prop_assert_eq!(stop.reason, reason);
        prop_assert_eq!(stop.attempts as usize, run.records().len());
        prop_assert_eq!(run.stopped(), Some(stop));
        let last = run.records().last().copied();
        if expect == During::Attempt {
            prop_assert_eq!(run.records().len(), before.1 + 1);
            let ended = if deadline { Ended::Deadline } else { Ended::Aborted };
            prop_assert_eq!(last.map(|r| (r.ended, r.outcome)), Some((ended, AttemptOutcome::Failed(Failure::Ambiguous))));
        } else {
            prop_assert_eq!(run.records().len(), before.1);
        }
        let text = stop.to_string();
        let n = run.records().len();
        prop_assert!(text.starts_with(&format!("retry stopped after {n} attempt{}: ", if n == 1 { "" } else { "s" })), "{}", text);
    }
}

#[test]
fn a_refusing_breaker_is_waited_for_only_when_the_deadline_leaves_an_attempt_after_it() {
    let b = Backoff::new(10.0, 10.0, 0.0).unwrap();
    let p = RetryPolicy::new(50.0, Some(100.0), b, 2, true).unwrap();
    let mut budget = RetryBudget::new(0.0, 0.0, 1_000.0).unwrap();
    let mut run = RetryRun::new(p, 1_000.0, 3, false).unwrap();
    assert!(matches!(run.start(0.0, Some(&mut budget)), Ok(Start::Attempt { number: 1, .. })));
    // 1 000 left, the breaker lets a call through in 900: 100 ≥ 50 remain after, so wait.
    assert_eq!(run.refused(0.0, 900.0), Ok(AfterFailure::Backoff { delay_ms: 900.0 }));
    assert!(matches!(run.refused(1.0, 2.0), Err(RetryError::OutOfOrder { call: "refused", .. })));
    // The refused attempt was not made: the next is number 1 again, and the
    // budget counted one request, not two.
    assert!(matches!(run.start(900.0, Some(&mut budget)), Ok(Start::Attempt { number: 1, .. })));
    assert_eq!(budget.counts(900.0).unwrap(), (1, 0));
    assert!(run.records().is_empty());
    // Refused again until 960: 40 left after it, below the 50 an attempt needs.
    let stop = run.refused(900.0, 960.0).unwrap();
    let AfterFailure::Stop(reason) = stop else { panic!("{stop:?}") };
    assert_eq!(reason, StopReason::CircuitOpen { wait_ms: 60.0, remaining_ms: 100.0, attempt_min_ms: 50.0 });
    let stopped = run.stopped().unwrap();
    assert_eq!(
        (stopped.code(), stopped.to_string()),
        (
            "circuit-open",
            "retry stopped after 0 attempts: the circuit breaker lets no call through for 60 ms, which would leave less than the 50 ms an attempt needs out of the 100 ms remaining".into()
        )
    );
    crate::core::error::assert_filled(&stopped.message());
}

/// Invariant 7: a server's wait is taken only inside the deadline and the cap.
#[test]
fn a_server_wait_is_taken_only_when_an_attempt_still_fits_after_it() {
    let b = Backoff::new(100.0, 1_000.0, 0.0).unwrap();
    let p = RetryPolicy::new(200.0, None, b, 3, true).unwrap();
    // 2 s left, the server asks for 30 s: refused at once, with both figures.
    let refused = p.after_failure_waiting(1, Failure::NotApplied, false, 100.0, Some(30_000.0), 0.0, 2_000.0).unwrap();
    let AfterFailure::Stop(reason) = refused else { panic!("{refused:?}") };
    assert_eq!(reason.code(), "retry-after");
    let stop = reason.stop();
    assert_eq!((stop.retry_after_ms, stop.remaining_ms), (Some(30_000.0), Some(2_000.0)));
    assert_eq!(
        reason.to_string(),
        "the server asked for a 30000 ms wait, which would leave less than the 200 ms an attempt needs out of the 2000 ms remaining"
    );
    // It fits (1 s wait, 200 ms minimum, 2 s left): the delay is the wait, never shortened by the backoff.
    assert_eq!(
        p.after_failure_waiting(1, Failure::NotApplied, false, 100.0, Some(1_000.0), 0.0, 2_000.0),
        Ok(AfterFailure::Backoff { delay_ms: 1_000.0 })
    );
    // A backoff longer than the wait wins: the wait is a floor.
    assert_eq!(
        p.after_failure_waiting(1, Failure::NotApplied, false, 400.0, Some(0.0), 0.0, 2_000.0),
        Ok(AfterFailure::Backoff { delay_ms: 400.0 })
    );
    // Exactly the minimum left after the wait: taken; a hair less: refused.
    assert!(matches!(
        p.after_failure_waiting(1, Failure::NotApplied, false, 0.0, Some(1_800.0), 0.0, 2_000.0),
        Ok(AfterFailure::Backoff { .. })
    ));
    assert!(matches!(
        p.after_failure_waiting(1, Failure::NotApplied, false, 0.0, Some(1_800.5), 0.0, 2_000.0),
        Ok(AfterFailure::Stop(StopReason::RetryAfter { .. }))
    ));
    // Permanent and exhausted still come first; junk waits are no wait.
    assert_eq!(
        p.after_failure_waiting(1, Failure::Permanent, false, 0.0, Some(9e9), 0.0, 2_000.0),
        Ok(AfterFailure::Stop(StopReason::Permanent))
    );
    assert_eq!(
        p.after_failure_waiting(3, Failure::NotApplied, false, 0.0, Some(9e9), 0.0, 2_000.0),
        Ok(AfterFailure::Stop(StopReason::Exhausted { attempts: 3 }))
    );
    for junk in [f64::NAN, -1.0, f64::INFINITY] {
        assert_eq!(
            p.after_failure_waiting(1, Failure::NotApplied, false, 100.0, Some(junk), 0.0, 2_000.0),
            Ok(AfterFailure::Backoff { delay_ms: 100.0 })
        );
    }
    // maxRetryAfterMs: a longer wait is refused even with time to spare.
    let capped = p.with_max_retry_after_ms(Some(500.0)).unwrap();
    let AfterFailure::Stop(r) =
        capped.after_failure_waiting(1, Failure::NotApplied, false, 0.0, Some(600.0), 0.0, 60_000.0).unwrap()
    else {
        panic!()
    };
    assert_eq!(r.code(), "retry-after");
    assert_eq!(r.to_string(), "the server asked for a 600 ms wait, over maxRetryAfterMs (500 ms)");
    assert_eq!(r.stop().remaining_ms, Some(60_000.0));
    assert_eq!(
        capped.after_failure_waiting(1, Failure::NotApplied, false, 0.0, Some(500.0), 0.0, 60_000.0),
        Ok(AfterFailure::Backoff { delay_ms: 500.0 })
    );
}

#[test]
fn a_run_stops_on_a_server_wait_past_the_deadline_and_records_the_attempt() {
    let p = RetryOptions::default().policy().unwrap();
    let mut run = RetryRun::new(p, 2_000.0, 1, false).unwrap();
    assert!(matches!(run.start(0.0, None), Ok(Start::Attempt { .. })));
    let after =
        run.attempt_failed_waiting(10.0, AttemptFailure::Error(Failure::NotApplied), Some(30_000.0), None).unwrap();
    assert!(matches!(after, AfterFailure::Stop(StopReason::RetryAfter { .. })));
    assert!(run.is_done());
    let stopped = run.stopped().unwrap();
    assert_eq!(stopped.code(), "retry-after");
    assert_eq!(stopped.stop().retry_after_ms, Some(30_000.0));
    assert_eq!(stopped.stop().remaining_ms, Some(1_990.0));
    assert_eq!(run.records().len(), 1);
}

proptest! {
    /// Invariant 7: whatever the wait, a backoff that is taken leaves attemptMinMs and is at least the wait.
    #[test]
    fn a_taken_server_wait_never_passes_the_deadline(wait in 0.0..1e7f64, left in 0.0..1e6f64, min in 0.0..1e4f64, delay in 0.0..1e4f64) {
        let p = RetryPolicy::new(min, None, Backoff::new(0.0, 0.0, 0.0).unwrap(), 5, true).unwrap();
        match p.after_failure_waiting(1, Failure::NotApplied, false, delay, Some(wait), 0.0, left).unwrap() {
            AfterFailure::Backoff { delay_ms } => prop_assert!(delay_ms >= wait && left - delay_ms >= min && left - delay_ms > 0.0),
            AfterFailure::Stop(r) => {
                let expected = matches!(r, StopReason::RetryAfter { .. } | StopReason::BackoffPastDeadline { .. });
                prop_assert!(expected, "stopped with {:?}", r);
            }
        }
    }
}

#[test]
fn a_response_failure_is_the_status_rule_for_http_statuses_only() {
    use super::response_failure;
    assert_eq!(response_failure(429.0), Some(Failure::NotApplied));
    assert_eq!(response_failure(503.0), Some(Failure::NotApplied));
    assert_eq!(response_failure(408.0), Some(Failure::Ambiguous));
    assert_eq!(response_failure(500.0), Some(Failure::Ambiguous));
    assert_eq!(response_failure(599.0), Some(Failure::Ambiguous));
    assert_eq!(response_failure(404.0), Some(Failure::Permanent));
    assert_eq!(response_failure(200.0), Some(Failure::Permanent));
    for not_http in [0.0, 99.0, 600.0, 429.5, f64::NAN, f64::INFINITY, -429.0, 65_965.0] {
        assert_eq!(response_failure(not_http), None, "{not_http}");
    }
}

#[test]
fn statuses_as_failures() {
    for (status, failure) in [
        (429, Failure::NotApplied),
        (503, Failure::NotApplied),
        (408, Failure::Ambiguous),
        (500, Failure::Ambiguous),
        (502, Failure::Ambiguous),
        (599, Failure::Ambiguous),
        (400, Failure::Permanent),
        (404, Failure::Permanent),
        (301, Failure::Permanent),
    ] {
        assert_eq!(status_failure(status), failure, "{status}");
    }
}
