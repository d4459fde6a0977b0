//! Tests of [`super::StallWatcher`]: examples of each event, and the property
//! tests of invariants 8–12, a host loop (holds, bursts, exact or late timers)
//! against a per-millisecond oracle of the time spent waiting on the source.
use super::*;
use proptest::prelude::*;

fn watcher(first: f64, stall: f64, deadline: Option<f64>, at: f64) -> (StallWatcher, Step) {
    StallWatcher::start(StallConfig::new(first, stall, deadline).unwrap(), at, at).unwrap()
}

fn wake(at_ms: f64) -> Step {
    Step::Wake { at_ms }
}

/// A timed progress chunk of 16 bytes at `t`.
fn progress_at(n: &mut Notes, t: f64) -> Option<f64> {
    n.chunk(Some(16.0), true, false, || t)
}

#[test]
fn first_step_validates_and_plans() {
    let (_, step) = watcher(50.0, 100.0, None, 10.0);
    assert_eq!(step, wake(60.0));
    let (_, step) = watcher(0.0, 100.0, None, 10.0);
    assert_eq!(step, Step::End(Verdict::Stalled { phase: Phase::FirstChunk, after_ms: 0.0, chunks: 0.0, bytes: 0.0 }));
    let config = StallConfig::new(1.0, 1.0, None).unwrap();
    assert_eq!(StallWatcher::start(config, -1.0, 0.0).unwrap_err().param(), "startedAt");
    assert_eq!(StallWatcher::start(config, 0.0, f64::NAN).unwrap_err().param(), "nowMs");
    // A deadline already passed ends the stream at once, and wins the tie.
    let (_, step) = watcher(0.0, 100.0, Some(5.0), 10.0);
    assert_eq!(step, Step::End(Verdict::DeadlineExceeded { late_by_ms: 5.0 }));
}

#[test]
fn progress_moves_the_wake_lazily() {
    let (mut w, step) = watcher(100.0, 50.0, None, 0.0);
    // The guard wake: a first chunk right now could stall at 50.
    assert_eq!(step, wake(50.0));
    let mut n = Notes::default();
    assert_eq!(progress_at(&mut n, 30.0), None);
    assert_eq!(w.on_wake(&n, 50.0), Ok(wake(80.0)));
    let stalled = Verdict::Stalled { phase: Phase::Stall, after_ms: 50.0, chunks: 1.0, bytes: 16.0 };
    assert_eq!(w.on_wake(&n, 80.0), Ok(Step::End(stalled)));
}

#[test]
fn held_time_is_not_silence_and_a_parked_stream_waits_for_the_consumer() {
    // The JS suite's "parked" case: firstChunkMs 50, stallMs 50, nobody reads for 120 ms.
    let (mut w, step) = watcher(50.0, 50.0, None, 0.0);
    assert_eq!(step, wake(50.0));
    let mut n = Notes::default();
    progress_at(&mut n, 0.0);
    n.hold(0.0);
    // The wake during the hold parks: without a deadline nothing can expire.
    assert_eq!(w.on_wake(&n, 50.0), Ok(Step::Idle));
    assert!(w.parked());
    assert_eq!(w.wake_at(), None);
    n.resume(120.0);
    assert_eq!(n.held_ms, 120.0);
    // 120 ms held: the stall limit counts from the end of the hold.
    assert_eq!(w.on_resume(&n, 120.0), Ok(wake(170.0)));
    assert!(!w.parked());
    let stalled = Verdict::Stalled { phase: Phase::Stall, after_ms: 50.0, chunks: 1.0, bytes: 16.0 };
    assert_eq!(w.on_wake(&n, 170.0), Ok(Step::End(stalled)));
    // A resume after a hold without a wake changes nothing.
    let (mut w, _) = watcher(50.0, 50.0, None, 0.0);
    let mut n = Notes::default();
    n.hold(10.0);
    n.resume(20.0);
    assert_eq!(w.on_resume(&n, 20.0), Ok(wake(50.0)));
    // Before the first chunk the start moves: 10 ms held, first-chunk stall at 60.
    let stalled = Verdict::Stalled { phase: Phase::FirstChunk, after_ms: 50.0, chunks: 0.0, bytes: 0.0 };
    assert_eq!(w.on_wake(&n, 50.0), Ok(wake(60.0)));
    assert_eq!(w.on_wake(&n, 60.0), Ok(Step::End(stalled)));
}

#[test]
fn parked_only_the_deadline_expires_at_its_instant() {
    let (mut w, _) = watcher(50.0, 50.0, Some(200.0), 0.0);
    let mut n = Notes::default();
    progress_at(&mut n, 0.0);
    n.hold(0.0);
    assert_eq!(w.on_wake(&n, 50.0), Ok(wake(200.0)));
    assert_eq!(w.on_wake(&n, 200.0), Ok(Step::End(Verdict::DeadlineExceeded { late_by_ms: 0.0 })));
}

#[test]
fn a_burst_samples_and_ends_when_progress_thins() {
    let (mut w, _) = watcher(1_000.0, 100.0, None, 0.0);
    assert_eq!(w.sample_ms(), 16.0);
    let mut n = Notes::default();
    // The first chunk is not close to anything; then BURST_RUN close ones start the burst.
    let mut started = None;
    for _ in 0..=BURST_RUN {
        assert_eq!(started, None);
        started = n.chunk(Some(16.0), true, w.sampling(), || 5.0);
    }
    assert_eq!(started, Some(5.0));
    assert_eq!(w.on_burst(n.progress, 5.0), Some(21.0));
    assert!(w.sampling());
    // Sampling: counted, not timed.
    for _ in 0..100 {
        n.chunk(Some(16.0), true, w.sampling(), || unreachable!("a sampled chunk read the clock"));
    }
    assert_eq!(n.last_progress_at, Some(5.0));
    // Many fresh chunks: still a burst, the reference is the wake's own instant.
    assert_eq!(w.on_wake(&n, 21.0), Ok(wake(37.0)));
    assert!(w.sampling());
    n.chunk(Some(16.0), true, true, || unreachable!());
    // One fresh chunk: the burst is over; the stall counts from this wake, never earlier.
    assert_eq!(w.on_wake(&n, 37.0), Ok(wake(137.0)));
    assert!(!w.sampling());
    let stalled = Verdict::Stalled { phase: Phase::Stall, after_ms: 100.0, chunks: 134.0, bytes: 134.0 * 16.0 };
    assert_eq!(w.on_wake(&n, 137.0), Ok(Step::End(stalled)));
    // An armed wake already within sample_ms is kept.
    let (mut w, _) = watcher(10.0, 100.0, None, 0.0);
    assert_eq!(w.on_burst(33.0, 1.0), None);
}

#[test]
fn a_late_wake_yields_at_most_max_yields_times_and_never_for_the_deadline() {
    let (mut w, _) = watcher(100.0, 100.0, None, 0.0);
    let mut n = Notes::default();
    progress_at(&mut n, 0.0);
    // The wake due at 100 runs 200 ms late: it yields instead of declaring.
    let mut t = 300.0;
    for i in 1..=MAX_YIELDS {
        assert_eq!(w.on_wake(&n, t), Ok(wake(t + YIELD_MS)), "yield {i}");
        t += YIELD_MS + 10.0; // late again
    }
    let stalled = Verdict::Stalled { phase: Phase::Stall, after_ms: t, chunks: 1.0, bytes: 16.0 };
    assert_eq!(w.on_wake(&n, t), Ok(Step::End(stalled)));
    // What arrived during the yield is seen: no stall.
    let (mut w, _) = watcher(100.0, 100.0, None, 0.0);
    let mut n = Notes::default();
    progress_at(&mut n, 0.0);
    assert_eq!(w.on_wake(&n, 300.0), Ok(wake(300.0 + YIELD_MS)));
    progress_at(&mut n, 301.0);
    assert_eq!(w.on_wake(&n, 300.0 + YIELD_MS), Ok(wake(401.0)));
    // A yield's own wake on time yields again while nothing arrived: up to MAX_YIELDS in all.
    let (mut w, _) = watcher(100.0, 100.0, None, 0.0);
    let mut n = Notes::default();
    progress_at(&mut n, 0.0);
    let mut t = 300.0;
    for i in 1..=MAX_YIELDS {
        assert_eq!(w.on_wake(&n, t), Ok(wake(t + YIELD_MS)), "yield {i}");
        t += YIELD_MS; // on time
    }
    assert!(matches!(w.on_wake(&n, t), Ok(Step::End(Verdict::Stalled { .. }))));
    // A wake just LATE_MS late is on time; the deadline is never deferred.
    let (mut w, _) = watcher(100.0, 100.0, None, 0.0);
    assert!(matches!(w.on_wake(&Notes::default(), 100.0 + LATE_MS), Ok(Step::End(_))));
    let (mut w, _) = watcher(1_000.0, 1_000.0, Some(200.0), 0.0);
    assert_eq!(w.on_wake(&Notes::default(), 600.0), Ok(Step::End(Verdict::DeadlineExceeded { late_by_ms: 400.0 })));
}

#[test]
fn bad_notes_are_errors_naming_them() {
    let (mut w, _) = watcher(100.0, 100.0, None, 0.0);
    let n = Notes { chunks: 1.5, ..Notes::default() };
    assert_eq!(w.on_wake(&n, 100.0).unwrap_err().param(), "chunks");
    let n = Notes { last_progress_at: Some(f64::NAN), progress: 1.0, ..Notes::default() };
    assert_eq!(w.on_wake(&n, 100.0).unwrap_err().param(), "lastProgressAt");
}

// ---- Invariants 8–12: a host loop against an oracle --------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Chunk {
    /// When the source has it ready, in ms.
    ready: u64,
    progress: bool,
    bytes: u64,
    /// How long it waits for the consumer once delivered (0: a read was waiting).
    hold: u64,
}

#[derive(Debug, Clone)]
struct Scenario {
    first: u64,
    stall: u64,
    deadline: Option<u64>,
    start: u64,
    chunks: Vec<Chunk>,
}

#[derive(Debug)]
struct Outcome {
    at: u64,
    verdict: Verdict,
    /// The oracle's silence at the verdict: ms spent waiting on the source since the last progress chunk.
    silence: u64,
    progressed: bool,
    chunks: u64,
    bytes: u64,
    /// The first instant the oracle has a verdict due (the deadline at a tie), and whether it is the deadline.
    due: Option<(u64, bool)>,
    sampled: bool,
    parked: bool,
    max_yields: u32,
}

impl Scenario {
    fn limit(&self, progressed: bool) -> u64 {
        if progressed {
            self.stall
        } else {
            self.first
        }
    }

    /// The host's loop, one millisecond at a time: the source's deliveries and
    /// the consumer's reads first, then the timer, fired `late()` ms after its
    /// instant. The oracle counts, in integers and without the core, the time
    /// a read was outstanding since the last progress chunk.
    fn run(&self, mut late: impl FnMut() -> u64) -> Outcome {
        let config = StallConfig::new(self.first as f64, self.stall as f64, self.deadline.map(|d| d as f64)).unwrap();
        let (mut w, mut step) = StallWatcher::start(config, self.start as f64, self.start as f64).unwrap();
        let mut n = Notes::default();
        let (mut next, mut outstanding, mut hold_until) = (0, true, None::<u64>);
        let (mut silence, mut progressed, mut chunks, mut bytes) = (0u64, false, 0u64, 0u64);
        let (mut due, mut sampled, mut parked, mut max_yields) = (None, false, false, 0);
        let mut fire = None::<u64>;
        let horizon = self.chunks.last().map_or(0, |c| c.ready)
            + self.chunks.iter().map(|c| c.hold).sum::<u64>()
            + self.start
            + self.first
            + self.stall
            + 500;
        for t in self.start..=horizon {
            if t > self.start && outstanding {
                silence += 1;
            }
            loop {
                if let Step::End(verdict) = step {
                    let deadline_due = self.deadline.is_some_and(|d| t >= d);
                    if due.is_none() && (deadline_due || silence >= self.limit(progressed)) {
                        due = Some((t, deadline_due));
                    }
                    return Outcome {
                        at: t,
                        verdict,
                        silence,
                        progressed,
                        chunks,
                        bytes,
                        due,
                        sampled,
                        parked,
                        max_yields,
                    };
                }
                if let Step::Wake { at_ms } = step {
                    assert_eq!(at_ms.fract(), 0.0, "a wake off the whole milliseconds: {at_ms}");
                    fire = Some(at_ms as u64 + late());
                    step = Step::Idle; // armed
                }
                if hold_until == Some(t) {
                    hold_until = None;
                    outstanding = true;
                    n.resume(t as f64);
                    if w.parked() {
                        fire = None;
                        step = w.on_resume(&n, t as f64).unwrap();
                    }
                    continue;
                }
                let ready = self.chunks.get(next).filter(|c| outstanding && c.ready <= t);
                if let Some(&c) = ready {
                    next += 1;
                    outstanding = false;
                    chunks += 1;
                    bytes += c.bytes;
                    if c.progress {
                        progressed = true;
                        silence = 0;
                    }
                    if let Some(bt) = n.chunk(Some(c.bytes as f64), c.progress, w.sampling(), || t as f64) {
                        if let Some(at) = w.on_burst(n.progress, bt) {
                            step = wake(at);
                        }
                    }
                    sampled |= w.sampling();
                    if c.hold > 0 {
                        n.hold(t as f64);
                        hold_until = Some(t + c.hold);
                    } else {
                        outstanding = true;
                    }
                    continue;
                }
                if fire == Some(t) {
                    fire = None;
                    step = w.on_wake(&n, t as f64).unwrap();
                    max_yields = max_yields.max(w.yields);
                    parked |= w.parked();
                    continue;
                }
                break;
            }
            let deadline_due = self.deadline.is_some_and(|d| t >= d);
            if due.is_none() && (deadline_due || silence >= self.limit(progressed)) {
                due = Some((t, deadline_due));
            }
        }
        panic!("no verdict by {horizon}: {self:?}");
    }
}

fn scenario() -> impl Strategy<Value = Scenario> {
    // Segments of chunks: a gap, then a run at the same instant (a burst when long enough).
    let segment = (0u64..90, 1usize..50, proptest::bool::weighted(0.8), 0u64..40, proptest::bool::weighted(0.2));
    (0u64..200, 1u64..120, proptest::option::of(0u64..400), 0u64..50, proptest::collection::vec(segment, 0..6))
        .prop_map(|(first, stall, deadline, start, segments)| {
            let mut ready = start;
            let mut chunks = Vec::new();
            for (k, (gap, len, progress, hold, holds)) in segments.into_iter().enumerate() {
                ready += gap;
                for i in 0..len {
                    // Holds on some chunks of some segments; an odd chunk that is not progress.
                    let hold = if holds && i % 7 == 3 { hold } else { 0 };
                    chunks.push(Chunk { ready, progress: progress || i % 2 == k % 2, bytes: (i % 5) as u64, hold });
                }
            }
            Scenario { first, stall, deadline: deadline.map(|d| start + d), start, chunks }
        })
}

/// Invariants 9 and 10 with exact timers, and the deadline's tie (invariant 6 of `decide`).
fn check_exact(s: &Scenario, o: &Outcome, sample_ms: u64) -> Result<(), TestCaseError> {
    let limit = s.limit(o.progressed);
    let slack = if o.sampled { sample_ms } else { 0 };
    match o.verdict {
        Verdict::Stalled { phase, after_ms, chunks, bytes } => {
            prop_assert_eq!(phase, if o.progressed { Phase::Stall } else { Phase::FirstChunk });
            // Never early: the source was waited on for at least the limit, and the count is no more than that.
            prop_assert!(o.silence >= limit, "stalled after {} ms of waiting, limit {limit}", o.silence);
            prop_assert!(
                after_ms >= limit as f64 && after_ms <= o.silence as f64,
                "afterMs {after_ms}, waited {}",
                o.silence
            );
            // At most sampleMs late (exact when no burst was sampled).
            prop_assert!(
                o.silence <= limit + slack,
                "stalled after {} ms of waiting, limit {limit} + {slack}",
                o.silence
            );
            if !o.sampled {
                prop_assert_eq!(after_ms, o.silence as f64);
                prop_assert_eq!(o.due, Some((o.at, false)));
            }
            prop_assert_eq!((chunks, bytes), (o.chunks as f64, o.bytes as f64));
            // The deadline wins ties: a stall is declared strictly before it.
            if let Some(d) = s.deadline {
                prop_assert!(o.at < d, "stall at {} although the deadline was at {d}", o.at);
            }
        }
        Verdict::DeadlineExceeded { late_by_ms } => {
            let d = s.deadline.expect("a deadline verdict without a deadline");
            // Exact timers: at its instant, never deferred.
            prop_assert_eq!((o.at, late_by_ms), (d, 0.0));
            if !o.sampled {
                prop_assert_eq!(o.due, Some((d, true)));
            }
        }
    }
    Ok(())
}

/// The scenarios exercise what the invariants are about: bursts that are
/// sampled, wakes during holds, stalls and deadlines.
#[test]
fn scenarios_cover_bursts_parks_and_both_verdicts() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut sampled, mut parked, mut stalls, mut deadlines) = (0, 0, 0, 0);
    for _ in 0..1_000 {
        let o = scenario().new_tree(&mut runner).unwrap().current().run(|| 0);
        sampled += usize::from(o.sampled);
        parked += usize::from(o.parked);
        match o.verdict {
            Verdict::Stalled { .. } => stalls += 1,
            Verdict::DeadlineExceeded { .. } => deadlines += 1,
        }
    }
    for (what, n) in [("sampled", sampled), ("parked", parked), ("stalled", stalls), ("deadline", deadlines)] {
        assert!(n >= 100, "{what}: {n} of 1000 scenarios");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Invariants 8–10: held time never counts, never early, at most `sample_ms` late, the deadline wins ties.
    #[test]
    fn the_host_loop_matches_the_oracle(s in scenario()) {
        let o = s.run(|| 0);
        let sample_ms = (s.stall / 4).clamp(1, MAX_SAMPLE_MS as u64);
        check_exact(&s, &o, sample_ms)?;
        prop_assert_eq!(o.max_yields, 0);
    }

    /// Invariant 11: timers that fire late never make a verdict early; a late
    /// wake yields at most MAX_YIELDS times in a row.
    #[test]
    fn late_timers_yield_a_bounded_number_of_times(s in scenario(), seed in any::<u64>()) {
        let mut x = seed | 1;
        let o = s.run(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // On time, or later than LATE_MS.
            if x % 3 == 0 { 0 } else { LATE_MS as u64 + 1 + x % 30 }
        });
        prop_assert!(o.max_yields <= MAX_YIELDS);
        match o.verdict {
            Verdict::Stalled { after_ms, .. } => {
                let limit = s.limit(o.progressed);
                prop_assert!(o.silence >= limit && after_ms >= limit as f64 && after_ms <= o.silence as f64);
            }
            Verdict::DeadlineExceeded { late_by_ms } => {
                let d = s.deadline.expect("a deadline verdict without a deadline");
                prop_assert!(o.at >= d && late_by_ms == (o.at - d) as f64);
            }
        }
    }

    /// Invariant 11 on a silent stream: every wake late, exactly MAX_YIELDS
    /// yields before the stall; none before the deadline's verdict.
    #[test]
    fn a_silent_stream_yields_exactly_max_yields_times(
        first in 1u64..500, stall in 1u64..500, deadline in proptest::option::of(1u64..2_000), lag in 5u64..100,
    ) {
        let config = StallConfig::new(first as f64, stall as f64, deadline.map(|d| d as f64)).unwrap();
        let (mut w, mut step) = StallWatcher::start(config, 0.0, 0.0).unwrap();
        let n = Notes::default();
        let mut due_wakes = 0;
        let verdict = loop {
            match step {
                Step::Wake { at_ms } => {
                    let t = at_ms + lag as f64;
                    if config.decide(&Snapshot::started(0.0), t).unwrap().is_final() {
                        due_wakes += 1;
                    }
                    step = w.on_wake(&n, t).unwrap();
                }
                Step::End(v) => break v,
                Step::Idle => unreachable!("idle without a hold"),
            }
        };
        match verdict {
            Verdict::Stalled { .. } => prop_assert_eq!(due_wakes, MAX_YIELDS + 1),
            Verdict::DeadlineExceeded { .. } => prop_assert_eq!(due_wakes, 1),
        }
    }

    /// Invariant 8: the machine never panics on any numbers, and every error names a note.
    #[test]
    fn total_on_any_notes(
        chunks in any_f64(), bytes in any_f64(), progress in any_f64(), last in proptest::option::of(any_f64()),
        held in any_f64(), since in proptest::option::of(any_f64()), now in any_f64(), burst_at in any_f64(),
    ) {
        let (mut w, _) = watcher(100.0, 10.0, Some(1e6), 0.0);
        let n = Notes { chunks, bytes, progress, last_progress_at: last, held_ms: held, held_since: since, burst: 0 };
        let _ = w.on_burst(progress, burst_at);
        for r in [w.on_wake(&n, now), w.on_resume(&n, now)] {
            match r {
                Err(e) => prop_assert!(["nowMs", "startedAt", "lastProgressAt", "chunks", "bytes"].contains(&e.param()), "{e}"),
                Ok(Step::Wake { at_ms }) => prop_assert!(!at_ms.is_nan()),
                Ok(_) => {}
            }
        }
    }
}

use crate::core::deadline::any_f64;
