//! The plan's tests and the property tests of its invariants (see the module doc).

use super::*;
use crate::core::deadline::MAX_MS;
use proptest::prelude::*;

fn opt(name: &str, min: f64) -> StepSpec {
    StepSpec::new(name, StepKind::Optional, min)
}
fn man(name: &str, min: f64) -> StepSpec {
    StepSpec::new(name, StepKind::Mandatory, min)
}
fn fb(name: &str, min: f64) -> StepSpec {
    StepSpec::new(name, StepKind::Fallback, min)
}

/// Seed 002: 8 s total, 0.5 s reserved for the response.
fn seed_002(margin: f64) -> Plan {
    Plan::with_margin(
        8_000.0,
        0.0,
        vec![
            man("auth", 100.0).preferred(500.0),
            opt("retrieve", 300.0).preferred(2_000.0),
            opt("generate", 1_000.0),
            fb("respond", 500.0),
        ],
        margin,
    )
    .unwrap()
}

#[test]
fn seed_002_generation_budget() {
    // Auth 0.5 s + retrieval 1.5 s elapsed: generation gets 8 − 2 − 0.5 = 5.5 s.
    let p = seed_002(0.0);
    assert_eq!(p.decide("generate", 2_000.0), Ok(Decision::Run { cap_ms: 5_500.0, remaining_ms: 6_000.0 }));
    // With the default margin, one hand-off (generate → respond) is held too.
    let p = seed_002(DEFAULT_MARGIN_MS);
    assert_eq!(p.decide("generate", 2_000.0).unwrap().cap_ms(), 5_495.0);
    // Auth and retrieval stop at their preferred sizes.
    assert_eq!(p.decide("auth", 0.0).unwrap().cap_ms(), 500.0);
    assert_eq!(p.decide("retrieve", 500.0).unwrap().cap_ms(), 2_000.0);
}

#[test]
fn slow_retrieval_skips_generation_and_keeps_the_fallback() {
    let p = seed_002(DEFAULT_MARGIN_MS);
    // Retrieval ran to 7.4 s: 600 ms left, 505 held, 95 ms available < 1 s.
    let d = p.decide("generate", 7_400.0).unwrap();
    assert_eq!(
        d,
        Decision::Skip {
            reason: SkipReason::BelowMinimum { available_ms: 95.0, min_ms: 1_000.0 },
            remaining_ms: 600.0
        }
    );
    assert_eq!(d.outcome_if_not_run(), Some(Outcome::Skipped));
    // The fallback runs in its reserve and gets everything left.
    assert_eq!(p.decide("respond", 7_401.0), Ok(Decision::Run { cap_ms: 599.0, remaining_ms: 599.0 }));
    // Past the deadline, optional steps are skipped, mandatory steps are
    // insufficient, and the fallback still runs, with nothing.
    assert!(matches!(p.decide("retrieve", 9_000.0), Ok(Decision::Skip { reason: SkipReason::Expired, .. })));
    assert_eq!(p.decide("respond", 8_000.0), Ok(Decision::Run { cap_ms: 0.0, remaining_ms: 0.0 }));
    assert!(matches!(p.decide("auth", 7_900.0), Ok(Decision::Insufficient { .. })));
}

#[test]
fn a_late_step_leaves_the_fallback_whatever_is_left() {
    let p = seed_002(DEFAULT_MARGIN_MS);
    // Generation ended 60 ms past its cap (far more than the margin):
    // 445 ms remain of the 505 held, below the fallback's 500 ms minimum.
    assert_eq!(p.decide("respond", 7_555.0), Ok(Decision::Run { cap_ms: 445.0, remaining_ms: 445.0 }));
    // Down to the last sliver of time it still runs, and past the deadline too, with nothing.
    assert_eq!(p.decide("respond", 7_999.5), Ok(Decision::Run { cap_ms: 0.5, remaining_ms: 0.5 }));
    assert_eq!(p.decide("respond", 8_000.0), Ok(Decision::Run { cap_ms: 0.0, remaining_ms: 0.0 }));
    assert_eq!(p.decide("respond", 9_000.0), Ok(Decision::Run { cap_ms: 0.0, remaining_ms: 0.0 }));
    // A mandatory step below its minimum is still refused.
    let m = Plan::new(1_000.0, 0.0, vec![opt("a", 10.0), man("check", 200.0)]).unwrap();
    assert!(matches!(m.decide("check", 900.0), Ok(Decision::Insufficient { .. })));
}

#[test]
fn short_budgets_build_a_plan_and_degrade_when_decided() {
    // A propagated 50 ms against 180 ms of reserves.
    let p =
        Plan::new(50.0, 0.0, vec![opt("retrieve", 20.0).preferred(200.0), man("check", 80.0), fb("respond", 100.0)])
            .unwrap();
    assert!(matches!(p.decide("retrieve", 0.0), Ok(Decision::Skip { .. })));
    assert!(matches!(p.decide("check", 0.0), Ok(Decision::Insufficient { .. })));
    assert_eq!(p.decide("respond", 0.0), Ok(Decision::Run { cap_ms: 50.0, remaining_ms: 50.0 }));
    // All optional with 12 ms left: no reserve to protect, so no margin is held.
    let q = Plan::new(12.0, 0.0, vec![opt("a", 1.0), opt("b", 1.0), opt("c", 1.0)]).unwrap();
    assert_eq!(q.decide("a", 0.0).unwrap().cap_ms(), 12.0);
    assert_eq!(q.decide("c", 0.0).unwrap().cap_ms(), 12.0);
    // An expired deadline with a single fallback step: it runs, with nothing.
    let r = Plan::new(100.0, 250.0, vec![fb("respond", 10.0)]).unwrap();
    assert_eq!(r.decide("respond", 250.0), Ok(Decision::Run { cap_ms: 0.0, remaining_ms: 0.0 }));
}

#[test]
fn the_margin_is_held_once_per_held_step_not_once_per_step() {
    // 50 ms: a 5 ms auth, three optional steps, a fallback holding 40 ms.
    // One margin guards the fallback's reserve; the optional steps between
    // share its boundary, so their hand-offs cost no extra margin.
    let p = Plan::new(
        50.0,
        0.0,
        vec![
            man("auth", 5.0).preferred(5.0),
            opt("retrieve", 5.0).preferred(100.0),
            opt("generate", 50.0),
            opt("polish", 5.0),
            fb("respond", 40.0),
        ],
    )
    .unwrap();
    assert_eq!(p.held_after(0), Ok(45.0));
    assert_eq!(p.decide("auth", 0.0), Ok(Decision::Run { cap_ms: 5.0, remaining_ms: 50.0 }));
    // Auth cut at its cap and 5 ms late: the optional steps skip, the fallback keeps its 40 ms.
    assert!(matches!(p.decide("retrieve", 10.0), Ok(Decision::Skip { .. })));
    assert!(matches!(p.decide("polish", 10.0), Ok(Decision::Skip { .. })));
    assert_eq!(p.decide("respond", 10.0), Ok(Decision::Run { cap_ms: 40.0, remaining_ms: 40.0 }));
    // Two held steps after a step: two margins.
    let q =
        Plan::new(1_000.0, 0.0, vec![opt("a", 1.0), opt("b", 1.0), man("check", 60.0), fb("respond", 100.0)]).unwrap();
    assert_eq!(
        (q.held_after(0), q.held_after(1), q.held_after(2), q.held_after(3)),
        (Ok(170.0), Ok(170.0), Ok(105.0), Ok(0.0))
    );
}

#[test]
fn mandatory_step_below_minimum_is_insufficient() {
    let p = Plan::new(1_000.0, 0.0, vec![opt("a", 10.0), man("check", 200.0)]).unwrap();
    let d = p.decide("check", 850.0).unwrap();
    assert_eq!(d, Decision::Insufficient { remaining_ms: 150.0, available_ms: 150.0, min_ms: 200.0 });
    assert_eq!(d.outcome_if_not_run(), Some(Outcome::Insufficient));
    assert_eq!(d.cap_ms(), 0.0);
}

#[test]
fn zero_minimum_still_needs_time() {
    let p = Plan::with_margin(100.0, 0.0, vec![opt("a", 0.0)], 0.0).unwrap();
    assert!(matches!(p.decide("a", 100.0), Ok(Decision::Skip { reason: SkipReason::Expired, .. })));
    assert_eq!(p.decide("a", 99.5).unwrap().cap_ms(), 0.5);
}

#[test]
fn rejects_bad_plans_with_clear_errors() {
    let e = Plan::new(1e4, 0.0, vec![opt("a", 1.0), opt("a", 1.0)]).unwrap_err();
    assert_eq!(e, PlanError::DuplicateName { name: "a".into(), first: 0, second: 1 });
    assert!(e.to_string().contains("'a'"), "{e}");
    assert_eq!(Plan::new(1e4, 0.0, vec![opt("", 1.0)]), Err(PlanError::EmptyName { index: 0 }));
    assert_eq!(Plan::new(1e4, 0.0, vec![]), Err(PlanError::NoSteps));
    let long = "x".repeat(MAX_NAME_LEN + 1);
    assert!(matches!(Plan::new(1e4, 0.0, vec![opt(&long, 1.0)]), Err(PlanError::NameTooLong { .. })));
    let many = (0..=MAX_STEPS).map(|i| opt(&i.to_string(), 0.0)).collect();
    assert!(matches!(Plan::new(1e4, 0.0, many), Err(PlanError::TooManySteps { .. })));

    let e = Plan::new(1e4, 0.0, vec![opt("a", f64::NAN)]).unwrap_err();
    assert!(matches!(&e, PlanError::BadStepValue { error: DeadlineError::NotFinite { param: "minMs", .. }, .. }));
    assert!(e.to_string().starts_with("step 'a': 'minMs'"), "{e}");
    assert!(matches!(
        Plan::new(1e4, 0.0, vec![opt("a", -1.0)]),
        Err(PlanError::BadStepValue { error: DeadlineError::Negative { param: "minMs", .. }, .. })
    ));
    assert!(matches!(
        Plan::new(1e4, 0.0, vec![opt("a", 1.0).reserve(f64::INFINITY)]),
        Err(PlanError::BadStepValue { error: DeadlineError::NotFinite { param: "reserveMs", .. }, .. })
    ));
    let e = Plan::new(1e4, 0.0, vec![opt("a", 50.0).preferred(10.0)]).unwrap_err();
    assert_eq!(e, PlanError::MinAbovePreferred { index: 0, step: "a".into(), min_ms: 50.0, preferred_ms: 10.0 });
    assert!(e.to_string().contains("'minMs' must not exceed 'preferredMs' (10): current value is 50"), "{e}");
    assert_eq!(
        Plan::new(1e4, 0.0, vec![man("m", 50.0).reserve(10.0)]),
        Err(PlanError::ReserveBelowMin { index: 0, step: "m".into(), reserve_ms: 10.0, min_ms: 50.0 })
    );
    assert_eq!(
        Plan::new(1e4, 0.0, vec![man("m", 0.0).preferred(0.0)]),
        Err(PlanError::ZeroPreferred { index: 0, step: "m".into() })
    );
    assert_eq!(
        Plan::new(1e4, 0.0, vec![fb("f", 50.0).preferred(100.0)]),
        Err(PlanError::PreferredOnFallback { index: 0, step: "f".into() })
    );
    assert!(matches!(Plan::with_margin(1e4, 0.0, vec![opt("a", 1.0)], f64::NAN), Err(PlanError::BadMargin { .. })));
    assert!(matches!(Plan::with_margin(1e4, 0.0, vec![opt("a", 1.0)], 1e4), Err(PlanError::BadMargin { .. })));
    assert!(matches!(Plan::new(f64::NAN, 0.0, vec![opt("a", 1.0)]), Err(PlanError::Time(_))));
    assert_eq!(StepKind::parse("required"), Err(PlanError::UnknownKind { value: "required".into() }));
    assert_eq!(StepKind::parse("fallback"), Ok(StepKind::Fallback));
}

#[test]
fn errors_name_the_step_field_as_the_caller_wrote_it() {
    use crate::core::error::{Described, Within};
    let param = |steps: Vec<StepSpec>| Plan::new(1e4, 0.0, steps).unwrap_err().param();
    let code = |steps: Vec<StepSpec>| Plan::new(1e4, 0.0, steps).unwrap_err().code();
    assert_eq!(param(vec![opt("a", 1.0), opt("b", f64::NAN)]).as_deref(), Some("steps[1].minMs"));
    assert_eq!(code(vec![opt("a", 1.0), opt("b", f64::NAN)]), "NOT_FINITE");
    assert_eq!(param(vec![opt("a", 1.0).reserve(-1.0)]).as_deref(), Some("steps[0].reserveMs"));
    assert_eq!(param(vec![opt("a", 1.0), opt("a", 1.0)]).as_deref(), Some("steps[1].name"));
    assert_eq!(code(vec![opt("a", 1.0), opt("a", 1.0)]), "DUPLICATE_NAME");
    assert_eq!(param(vec![fb("f", 1.0).preferred(2.0)]).as_deref(), Some("steps[0].preferredMs"));
    assert_eq!(param(vec![man("m", 5.0).reserve(1.0)]).as_deref(), Some("steps[0].reserveMs"));
    assert_eq!(param(vec![]).as_deref(), Some("steps"));
    let margin = Plan::with_margin(1e4, 0.0, vec![opt("a", 1.0)], -1.0).unwrap_err();
    assert_eq!((margin.param().as_deref(), margin.code()), (Some("options.marginMs"), "MARGIN_OUT_OF_RANGE"));
    // A kind the deserializer could not read, reported inside its step.
    let kind = Within::new("steps[2]", StepKind::parse("required").unwrap_err());
    assert_eq!((kind.param().as_deref(), kind.code()), (Some("steps[2].kind"), "UNKNOWN_KIND"));
    assert!(kind.to_string().starts_with("'kind' must be one of mandatory, optional, fallback"));
}

#[test]
fn step_cap_and_refusal_agree_with_decide() {
    let p = seed_002(DEFAULT_MARGIN_MS);
    let info = p.info();
    assert_eq!(info.margin_ms, DEFAULT_MARGIN_MS);
    for now in [0.0, 2_000.0, 7_400.0, 7_555.0, 7_999.5, 8_000.0, 9_000.0] {
        for (i, s) in info.steps.iter().enumerate() {
            let d = p.decide_index(i, now).unwrap();
            let fallback = s.kind == StepKind::Fallback;
            let cap = step_cap(fallback, s.min_ms, s.preferred_ms, s.held_after_ms, p.at(), now).unwrap();
            assert_eq!(cap, d.cap_ms(), "step {i} at {now}");
            let refusal = refusal(s, p.at(), now).unwrap();
            assert_eq!(refusal.as_ref().map(|r| r.outcome), d.outcome_if_not_run(), "step {i} at {now}");
            // A fallback is never refused, even with a cap of 0.
            assert_eq!(cap == 0.0 && !fallback, refusal.is_some(), "step {i} at {now}");
            if s.kind == StepKind::Optional {
                let skip = skip_reason(s.min_ms, s.preferred_ms, s.held_after_ms, p.at(), now).unwrap();
                assert_eq!(skip.map(|r| r.message()), refusal.map(|r| r.reason), "step {i} at {now}");
            }
        }
    }
    // Generation after a slow retrieval: skipped, with the core's reason and the numbers.
    let r = refusal(&info.steps[2], p.at(), 7_400.0).unwrap().unwrap();
    assert_eq!((r.outcome, r.available_ms, r.min_ms), (Outcome::Skipped, 95.0, 1_000.0));
    assert!(r.reason.to_string().starts_with("only 95 ms are available"), "{}", r.reason);
    assert_eq!(refusal(&info.steps[3], p.at(), 8_000.0), Ok(None), "the fallback is never refused");
    let r = refusal(&info.steps[0], p.at(), 7_900.0).unwrap().unwrap();
    assert_eq!((r.outcome, r.available_ms, r.min_ms), (Outcome::Insufficient, 0.0, 100.0));
}

#[test]
fn unknown_step_and_bad_now_at_run_time() {
    let p = seed_002(DEFAULT_MARGIN_MS);
    assert_eq!(p.decide("nope", 0.0), Err(PlanError::UnknownStep { name: "nope".into() }));
    assert!(matches!(p.decide("auth", f64::NAN), Err(PlanError::Time(DeadlineError::NotFinite { .. }))));
    assert!(matches!(p.decide_index(9, 0.0), Err(PlanError::IndexOutOfRange { index: 9, len: 4 })));
    assert!(p.held_after(4).is_err());
}

#[test]
fn optional_reserve_is_not_held() {
    let p = Plan::with_margin(1_000.0, 0.0, vec![opt("a", 1.0), opt("b", 1.0).reserve(900.0)], 0.0).unwrap();
    assert_eq!(p.decide("a", 0.0).unwrap().cap_ms(), 1_000.0);
}

// ---- property tests -------------------------------------------------

#[derive(Debug, Clone)]
struct Gen {
    kind: StepKind,
    min: f64,
    pref_extra: Option<f64>,
    reserve_extra: f64,
}

fn step_gen() -> impl Strategy<Value = Gen> {
    (
        prop_oneof![Just(StepKind::Mandatory), Just(StepKind::Optional), Just(StepKind::Fallback)],
        prop_oneof![Just(0.0), 0.0..2_000.0f64],
        proptest::option::of(0.0..5_000.0f64),
        prop_oneof![Just(0.0), 0.0..1_000.0f64],
    )
        .prop_map(|(kind, min, pref_extra, reserve_extra)| Gen { kind, min, pref_extra, reserve_extra })
}

fn build(gens: &[Gen]) -> Vec<StepSpec> {
    gens.iter()
        .enumerate()
        .map(|(i, g)| {
            let mut s = StepSpec::new(format!("s{i}"), g.kind, g.min).reserve(g.min + g.reserve_extra);
            if g.kind != StepKind::Fallback {
                if let Some(extra) = g.pref_extra {
                    s = s.preferred(g.min + extra);
                }
            }
            s
        })
        .collect()
}

/// Sum of reserves held for steps from `j` on (including `j`).
fn held_from(p: &Plan, j: usize) -> f64 {
    p.steps()[j..].iter().filter(|s| s.kind().holds_reserve()).map(|s| s.reserve_ms()).sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Invariants 1 and 5.
    #[test]
    fn cap_within_remaining_minus_tail(
        gens in proptest::collection::vec(step_gen(), 1..8),
        budget in 0.0..60_000.0f64,
        now_frac in -0.2..1.3f64,
        margin in prop_oneof![Just(0.0), Just(DEFAULT_MARGIN_MS), 0.0..50.0f64],
    ) {
        let Ok(p) = Plan::with_margin(1_000.0 + budget, 1_000.0, build(&gens), margin) else { return Ok(()); };
        let now = (1_000.0 + budget * now_frac).max(0.0);
        for i in 0..gens.len() {
            let d = p.decide_index(i, now).unwrap();
            let remaining = (p.at() - now).max(0.0);
            let step = &p.steps()[i];
            prop_assert!(d.remaining_ms() == remaining);
            match d {
                Decision::Run { cap_ms, .. } => {
                    // A fallback runs in whatever is left, if only nothing; the others get their minimum.
                    let fallback = step.kind() == StepKind::Fallback;
                    prop_assert!(cap_ms.is_finite() && (cap_ms > 0.0 || (fallback && cap_ms == 0.0)));
                    prop_assert!(fallback || cap_ms + ADMIT_EPSILON_MS >= step.min_ms());
                    prop_assert!(cap_ms <= (remaining - p.held_after(i).unwrap()).max(0.0));
                    if let Some(pref) = step.preferred_ms() { prop_assert!(cap_ms <= pref); }
                }
                Decision::Skip { reason, .. } => {
                    prop_assert_eq!(step.kind(), StepKind::Optional);
                    if let SkipReason::BelowMinimum { available_ms, min_ms } = reason {
                        prop_assert!(available_ms >= 0.0 && (available_ms + ADMIT_EPSILON_MS < min_ms || available_ms == 0.0));
                    }
                }
                Decision::Insufficient { available_ms, .. } => {
                    prop_assert!(step.kind() == StepKind::Mandatory && available_ms >= 0.0);
                }
            }
        }
    }

    /// Invariant 2: valid steps give a plan at any budget, expired included.
    #[test]
    fn construction_never_depends_on_the_budget(
        gens in proptest::collection::vec(step_gen(), 1..8),
        budget in -5_000.0..20_000.0f64,
        margin in 0.0..20.0f64,
    ) {
        let built = Plan::with_margin(5_000.0 + budget, 5_000.0, build(&gens), margin);
        prop_assert!(built.is_ok(), "{:?}", built);
    }

    /// Invariant 3, second half: however late the steps before it end, a
    /// fallback is admitted with everything left after later held steps,
    /// `0` when nothing is: it is never refused.
    #[test]
    fn a_fallback_runs_while_anything_is_left(
        gens in proptest::collection::vec(step_gen(), 1..8),
        budget in 0.0..10_000.0f64,
        now_frac in 0.0..1.2f64,
        margin in prop_oneof![Just(DEFAULT_MARGIN_MS), 0.0..30.0f64],
    ) {
        let p = Plan::with_margin(1_000.0 + budget, 1_000.0, build(&gens), margin).unwrap();
        let now = 1_000.0 + budget * now_frac;
        for (i, step) in p.steps().iter().enumerate() {
            if step.kind() != StepKind::Fallback { continue; }
            let left = (p.at() - now).max(0.0) - p.held_after(i).unwrap();
            match p.decide_index(i, now).unwrap() {
                Decision::Run { cap_ms, .. } => prop_assert!(cap_ms == left.max(0.0)),
                d => prop_assert!(false, "a fallback was refused: {:?}", d),
            }
        }
    }

    /// Invariants 3 and 4: a sequential run where every step ends at most
    /// `margin` after its cap (a skip takes no time) admits every mandatory
    /// and fallback step with at least min(preferred, reserve), and never
    /// runs past the deadline.
    #[test]
    fn sequential_run_keeps_the_tail(
        gens in proptest::collection::vec(step_gen(), 1..8),
        budget in 0.0..60_000.0f64,
        margin in prop_oneof![Just(DEFAULT_MARGIN_MS), 0.0..30.0f64],
        use_frac in prop_oneof![
            Just(vec![1.0; 8]),
            proptest::collection::vec(prop_oneof![Just(1.0), Just(0.0), 0.0..1.0f64], 8),
        ],
        late_frac in proptest::collection::vec(prop_oneof![Just(1.0), Just(0.0), 0.0..1.0f64], 9),
    ) {
        let start = 250.0;
        let p = Plan::with_margin(start + budget, start, build(&gens), margin).unwrap();
        let held: f64 = p.steps().iter().filter(|s| s.kind().holds_reserve()).map(|s| s.reserve_ms()).sum();
        let held_steps = |from: usize| p.steps()[from..].iter().filter(|s| s.kind().holds_reserve()).count();
        // The guarantee holds for plans whose reserves and one margin per held step fit.
        if held + margin * held_steps(0) as f64 > budget {
            return Ok(());
        }
        // A delay of up to one margin before the first step starts, too.
        let mut now = start + margin * late_frac[8];
        let mut caps = 0.0;
        let mut full = true;
        for (i, step) in p.steps().iter().enumerate() {
            // The induction hypothesis, checked directly at each held step:
            // its reserve, and every later held step's reserve and margin.
            let left = p.at() - now;
            if step.kind().holds_reserve() {
                prop_assert!(left + 1e-6 >= held_from(&p, i) + margin * held_steps(i + 1) as f64);
            }
            match p.decide_index(i, now).unwrap() {
                Decision::Run { cap_ms, .. } => {
                    if step.kind().holds_reserve() {
                        let floor = step.preferred_ms().map_or(step.reserve_ms(), |pr| pr.min(step.reserve_ms()));
                        prop_assert!(cap_ms + ADMIT_EPSILON_MS >= floor, "step {} got {} < {}", i, cap_ms, floor);
                    }
                    prop_assert!(now + cap_ms <= p.at() + 1e-6);
                    caps += cap_ms;
                    full &= use_frac[i] == 1.0;
                    now += cap_ms * use_frac[i] + margin * late_frac[i];
                }
                Decision::Skip { .. } => {}
                // A zero reserve guarantees nothing: with the budget spent to
                // the last bit there is no time to start in.
                Decision::Insufficient { .. } if step.reserve_ms() == 0.0 => {}
                Decision::Insufficient { .. } => {
                    prop_assert!(false, "held step {} was insufficient at {} (at {})", i, now, p.at());
                }
            }
        }
        // A step that finishes early hands its slack to the next one, so
        // caps only add up to the budget when each consumes its whole cap.
        if full {
            prop_assert!(caps <= budget + 1e-6, "caps {} > budget {}", caps, budget);
        }
    }

    /// Invariant 5 for arbitrary times: decisions never carry NaN or negatives.
    #[test]
    fn decisions_are_finite(
        gens in proptest::collection::vec(step_gen(), 1..6),
        now in prop_oneof![any::<f64>(), 0.0..1e5f64],
    ) {
        let p = Plan::with_margin(MAX_MS, 0.0, build(&gens), 0.0).unwrap();
        for i in 0..gens.len() {
            if let Ok(d) = p.decide_index(i, now) {
                prop_assert!(d.cap_ms().is_finite() && d.cap_ms() >= 0.0);
                prop_assert!(d.remaining_ms().is_finite() && d.remaining_ms() >= 0.0);
            }
        }
    }
}

#[test]
fn a_cap_that_reaches_the_deadline_to_rounding_is_the_deadline_and_an_earlier_one_is_the_steps() {
    for i in 0..10_000u32 {
        // Instants on a process clock: a step started at t0, a deadline well after it.
        let t0 = 0.1 + f64::from(i) * 13.7;
        let at = t0 + 30_000.123 + f64::from(i) * 0.37;
        // All that is left (no preferred share, nothing held after): the deadline.
        let all = step_cap(false, 10.0, None, 0.0, at, t0).unwrap();
        assert!(cap_is_deadline(t0 + all, at), "all that was left, at {at}");
        // A preferred share or a later step's reserve ends earlier: the step's own cap.
        let own = step_cap(false, 10.0, Some(100.0), 0.0, at, t0).unwrap();
        assert!(!cap_is_deadline(t0 + own, at), "a preferred share");
        let held = step_cap(false, 10.0, None, 500.0, at, t0).unwrap();
        assert!(!cap_is_deadline(t0 + held, at), "a later step's reserve");
        // A few ulps short of the deadline (rounding) is the deadline; a microsecond short is not.
        assert!(cap_is_deadline(at - 4.0 * f64::EPSILON * at, at));
        assert!(cap_is_deadline(at + 5.0, at), "past the deadline");
        assert!(!cap_is_deadline(at - 0.001, at), "a microsecond before the deadline");
    }
    assert!(!cap_is_deadline(f64::NAN, 1.0) && !cap_is_deadline(1.0, f64::NAN));
    assert!(cap_is_deadline(f64::INFINITY, f64::INFINITY));
}
