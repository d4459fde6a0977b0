//! Hedging: another attempt after a delay, while the first may still answer.
//!
//! # Why a machine
//! A hedge is a loop of small decisions: launch the next attempt on the
//! hedge timer, or at once when one fails; stop launching at `maxAttempts`;
//! the first answer wins and every other attempt in flight is aborted; every
//! attempt failing, or the deadline or the caller's signal aborting, ends it
//! with a [`Stopped`] whose sentence is the same in both hosts. [`HedgeRun`]
//! makes them all, sans-IO: the host (`js/hedge.js`, `src/web/hedge.rs`)
//! reports what happened at `now` (`start`, `wake`, `succeeded`, `failed`,
//! `aborted`) and does what the answer ([`HedgeStep`]) says. The host owns
//! the attempts, their signals, the timer and the race.
//!
//! # Invariants (each is a property test in this module)
//! 1. Attempts are launched numbered `1, 2, …`, at most `maxAttempts` of
//!    them, the first at `start`; a later one only at a wake no earlier than
//!    `delayMs` after the previous launch, or at once after a failure.
//! 2. While attempts remain, the timer is always armed (`wake_at`) `delayMs`
//!    after the latest launch; once none remain, it is cleared.
//! 3. The run ends once, with [`HedgeStep::Won`] (an attempt in flight
//!    answered first) or [`HedgeStep::Stop`]; after that every event is
//!    answered [`HedgeStep::Wait`] and nothing is launched.
//! 4. `Stop(exhausted)` comes only when every launched attempt failed and no
//!    more may be launched; `deadline` / `aborted` only from `aborted`.
//! 5. At the end no record is `running`: the winner is `ok`, failures are
//!    `error`, every other attempt in flight is `aborted` (by the winner or
//!    the caller) or `deadline`; every `elapsed_ms` is ≥ 0.

use serde::{Deserialize, Serialize, Serializer};

use crate::core::deadline::check_ms;
use crate::core::error::Message;
use crate::core::retry::{Ended, Loop, RetryError, StopCode, StopReason, Stopped, MAX_ATTEMPTS};

/// Validates a hedging policy (`hedge` in JS): `delay_ms` before each extra
/// attempt, at most `max_attempts` attempts over the call. Returns the delay
/// (`-0` as `0`).
pub fn check_hedge(delay_ms: f64, max_attempts: u32) -> Result<f64, RetryError> {
    let delay_ms = check_ms("delayMs", delay_ms)?;
    if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
        return Err(RetryError::BadMaxAttempts { value: max_attempts });
    }
    Ok(delay_ms)
}

/// Attempts of a hedge when the caller does not say: the first and one hedge.
pub const DEFAULT_HEDGE_ATTEMPTS: u32 = 2;

/// A hedging policy as the caller writes it (`hedge`'s options): the delay
/// before each extra attempt and the most attempts over the call
/// ([`DEFAULT_HEDGE_ATTEMPTS`] unless given).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HedgeOptions {
    /// Wait before each extra attempt while none has answered.
    pub delay_ms: f64,
    /// 1–100, default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_attempts: Option<u32>,
}

/// A validated hedging policy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HedgePolicy {
    /// Wait before each extra attempt while none has answered, in ms (`delayMs` in JS).
    pub delay_ms: f64,
    /// The most attempts over the call, the first included: 1–100 (`maxAttempts` in JS).
    pub max_attempts: u32,
}

impl HedgeOptions {
    /// The validated policy ([`check_hedge`]), the default filled in; `-0` becomes `0`.
    pub fn policy(&self) -> Result<HedgePolicy, RetryError> {
        let max_attempts = self.max_attempts.unwrap_or(DEFAULT_HEDGE_ATTEMPTS);
        Ok(HedgePolicy { delay_ms: check_hedge(self.delay_ms, max_attempts)?, max_attempts })
    }
}

/// One attempt of a hedge, for the error that carries every attempt's
/// outcome. Crosses to JavaScript as `{ attempt, startedAtMs, elapsedMs, outcome }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HedgeRecord {
    /// The attempt's number, from 1 (`attempt` in JS).
    #[serde(rename = "attempt")]
    pub number: u32,
    /// When it was launched, in ms on the monotonic timeline (`startedAtMs`).
    #[serde(rename = "startedAtMs")]
    pub started_ms: f64,
    /// How long it ran, in ms (0 while it runs).
    pub elapsed_ms: f64,
    /// How it ended (`outcome`): `running` until it does.
    #[serde(rename = "outcome")]
    pub ended: Ended,
}

/// What the host does next. Crosses to JavaScript as `{ do: "launch",
/// number, wakeAt? }`, `{ do: "sleep", at }`, `{ do: "wait" }`, `{ do:
/// "won", number }` or `{ do: "stop", reason, message }` (the stop's word and
/// whole sentence) (src/wasm/hedge.rs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "do", rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum HedgeStep {
    /// Launch attempt `number` now, and arm the hedge timer at `wake_at`
    /// (`None`: clear it, no attempt remains).
    #[serde(rename_all = "camelCase")]
    Launch {
        /// The attempt's number, from 1.
        number: u32,
        /// When to call [`HedgeRun::wake`]; replaces any earlier timer.
        /// Absent in JavaScript when `None`.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "typescript", tsify(optional))]
        wake_at: Option<f64>,
    },
    /// The timer woke early: arm it again at `at`.
    Sleep {
        /// When to call [`HedgeRun::wake`].
        at: f64,
    },
    /// Nothing to do: an attempt in flight may still answer (or the run
    /// has ended and the event came late).
    Wait,
    /// Attempt `number` answered first: settle with its value and abort every
    /// other attempt in flight (recorded `aborted`).
    Won {
        /// The winner.
        number: u32,
    },
    /// Give up: abort every attempt in flight and fail with
    /// [`HedgeRun::stopped`]. Crosses as its word and sentence (`reason`,
    /// `message`).
    Stop(
        #[serde(serialize_with = "stop_fields")]
        #[cfg_attr(feature = "typescript", tsify(type = "{ reason: StopCode; message: string }"))]
        Stopped,
    ),
}

/// The fields of a [`HedgeStep::Stop`] as JavaScript reads them.
#[derive(Serialize)]
struct StopFields {
    /// The stable word (`RetryFailed.reason`).
    reason: StopCode,
    /// The whole sentence ([`Stopped::message`]).
    message: Message,
}

impl From<&Stopped> for StopFields {
    fn from(stop: &Stopped) -> Self {
        Self { reason: stop.reason.stop_code(), message: stop.message() }
    }
}

fn stop_fields<S: Serializer>(stop: &Stopped, s: S) -> Result<S::Ok, S::Error> {
    StopFields::from(stop).serialize(s)
}

/// The message of the `AbortError` every other attempt in flight is aborted
/// with when attempt `number` wins ([`HedgeStep::Won`]).
pub fn answered_first(number: u32) -> Message {
    Message::new(crate::core::retry::msg::HEDGE_ANSWERED_FIRST).arg("number", number)
}

/// One hedge: a policy and every attempt's record. See the module doc.
#[derive(Debug, Clone)]
pub struct HedgeRun {
    policy: HedgePolicy,
    records: Vec<HedgeRecord>,
    wake_at: Option<f64>,
    last_failed: Option<u32>,
    started: bool,
    done: bool,
    stop: Option<Stopped>,
}

impl HedgeRun {
    /// A run of `policy`.
    pub fn new(policy: HedgePolicy) -> Self {
        Self { policy, records: Vec::new(), wake_at: None, last_failed: None, started: false, done: false, stop: None }
    }

    /// The hedge starts at `now_ms`: launch the first attempt.
    pub fn start(&mut self, now_ms: f64) -> Result<HedgeStep, RetryError> {
        let now = check_ms("now", now_ms)?;
        if self.started || self.done {
            return Err(RetryError::OutOfOrder { call: "start", state: self.state() });
        }
        self.started = true;
        Ok(self.launch(now))
    }

    /// The hedge timer fired at `now_ms`: launch the next attempt, or arm
    /// it again if it woke before its instant.
    pub fn wake(&mut self, now_ms: f64) -> Result<HedgeStep, RetryError> {
        let now = check_ms("now", now_ms)?;
        match self.wake_at {
            _ if self.done || !self.started => Ok(HedgeStep::Wait),
            Some(at) if now < at => Ok(HedgeStep::Sleep { at }),
            Some(_) => Ok(self.launch(now)),
            None => Ok(HedgeStep::Wait),
        }
    }

    /// Attempt `number` answered at `now_ms`. An answer of an attempt no
    /// longer in flight (or after the end) is [`HedgeStep::Wait`].
    pub fn succeeded(&mut self, number: u32, now_ms: f64) -> Result<HedgeStep, RetryError> {
        let now = check_ms("now", now_ms)?;
        if self.done || !self.finish(number, now, Ended::Ok) {
            return Ok(HedgeStep::Wait);
        }
        self.end(now, Ended::Aborted, None);
        Ok(HedgeStep::Won { number })
    }

    /// Attempt `number` failed at `now_ms`: launch the next at once while
    /// attempts remain; when none remains and none is in flight, stop.
    pub fn failed(&mut self, number: u32, now_ms: f64) -> Result<HedgeStep, RetryError> {
        let now = check_ms("now", now_ms)?;
        if self.done || !self.finish(number, now, Ended::Error) {
            return Ok(HedgeStep::Wait);
        }
        self.last_failed = Some(number);
        if self.remaining() > 0 {
            return Ok(self.launch(now));
        }
        if self.records.iter().any(|r| r.ended == Ended::Running) {
            return Ok(HedgeStep::Wait);
        }
        let attempts = self.launched();
        let stop = Stopped { kind: Loop::Hedge, attempts, reason: StopReason::Exhausted { attempts } };
        self.end(now, Ended::Aborted, Some(stop));
        Ok(HedgeStep::Stop(stop))
    }

    /// The deadline's signal (`deadline`: with the deadline's own expiry) or
    /// the caller's aborted at `now_ms`: stop, every attempt in flight
    /// recorded `deadline` or `aborted`.
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) -> Result<HedgeStep, RetryError> {
        let now = check_ms("now", now_ms)?;
        if self.done {
            return Ok(HedgeStep::Wait);
        }
        let (reason, ended) = if deadline {
            (StopReason::Deadline { during: None }, Ended::Deadline)
        } else {
            (StopReason::Aborted { during: None }, Ended::Aborted)
        };
        let stop = Stopped { kind: Loop::Hedge, attempts: self.launched(), reason };
        self.end(now, ended, Some(stop));
        Ok(HedgeStep::Stop(stop))
    }

    /// Every attempt launched, in order (a running one with `elapsed_ms` 0).
    pub fn records(&self) -> &[HedgeRecord] {
        &self.records
    }

    /// How the hedge failed, once it has.
    pub fn stopped(&self) -> Option<Stopped> {
        self.stop
    }

    /// The attempt whose error is the failure's cause: the last to fail.
    pub fn last_failed(&self) -> Option<u32> {
        self.last_failed
    }

    /// When the hedge timer is due; `None` when it is not armed.
    pub fn wake_at(&self) -> Option<f64> {
        self.wake_at
    }

    /// Whether the hedge has ended (won or stopped).
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn launched(&self) -> u32 {
        // At most MAX_ATTEMPTS records: the count fits.
        u32::try_from(self.records.len()).unwrap_or(u32::MAX)
    }

    fn remaining(&self) -> u32 {
        self.policy.max_attempts.saturating_sub(self.launched())
    }

    fn state(&self) -> &'static str {
        if self.done {
            "finished"
        } else {
            "running"
        }
    }

    fn launch(&mut self, now: f64) -> HedgeStep {
        let number = self.launched() + 1;
        self.records.push(HedgeRecord { number, started_ms: now + 0.0, elapsed_ms: 0.0, ended: Ended::Running });
        self.wake_at = if self.remaining() > 0 { Some(now + self.policy.delay_ms) } else { None };
        HedgeStep::Launch { number, wake_at: self.wake_at }
    }

    /// Records attempt `number`'s end; false when it is not in flight.
    fn finish(&mut self, number: u32, now: f64, ended: Ended) -> bool {
        let Some(r) = number.checked_sub(1).and_then(|i| self.records.get_mut(i as usize)) else {
            return false;
        };
        if r.ended != Ended::Running {
            return false;
        }
        r.elapsed_ms = if now > r.started_ms { now - r.started_ms } else { 0.0 };
        r.ended = ended;
        true
    }

    /// Ends the run: every attempt still in flight is recorded as `ended`.
    fn end(&mut self, now: f64, ended: Ended, stop: Option<Stopped>) {
        for r in self.records.iter_mut().filter(|r| r.ended == Ended::Running) {
            r.elapsed_ms = if now > r.started_ms { now - r.started_ms } else { 0.0 };
            r.ended = ended;
        }
        self.done = true;
        self.wake_at = None;
        self.stop = stop;
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::deadline::DeadlineError;
    use proptest::prelude::*;

    #[test]
    fn options_default_to_two_attempts_and_errors_name_the_option() {
        use crate::core::error::Described;
        assert_eq!(
            HedgeOptions { delay_ms: -0.0, max_attempts: None }.policy(),
            Ok(HedgePolicy { delay_ms: 0.0, max_attempts: DEFAULT_HEDGE_ATTEMPTS })
        );
        let e = HedgeOptions { delay_ms: 1.0, max_attempts: Some(101) }.policy().unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("maxAttempts"), "MAX_ATTEMPTS_OUT_OF_RANGE"));
        let e = HedgeOptions { delay_ms: -1.0, max_attempts: None }.policy().unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("delayMs"), "NEGATIVE"));
    }

    #[test]
    fn hedge_policy_is_checked_by_name() {
        assert_eq!(check_hedge(50.0, 2), Ok(50.0));
        assert!(check_hedge(-0.0, 1).unwrap().is_sign_positive());
        assert!(matches!(
            check_hedge(f64::NAN, 2),
            Err(RetryError::Time(DeadlineError::NotFinite { param: "delayMs", .. }))
        ));
        assert!(matches!(
            check_hedge(-1.0, 2),
            Err(RetryError::Time(DeadlineError::Negative { param: "delayMs", .. }))
        ));
        assert_eq!(check_hedge(1.0, 0), Err(RetryError::BadMaxAttempts { value: 0 }));
        assert_eq!(check_hedge(1.0, MAX_ATTEMPTS + 1), Err(RetryError::BadMaxAttempts { value: MAX_ATTEMPTS + 1 }));
    }
    /// One event a host may report: `(kind, attempt, time step)`.
    #[derive(Debug, Clone)]
    enum Event {
        Wake,
        Succeeded(u32),
        Failed(u32),
        Aborted(bool),
    }

    fn event() -> impl Strategy<Value = (Event, f64)> {
        let e = prop_oneof![
            4 => Just(Event::Wake),
            2 => (1u32..6).prop_map(Event::Succeeded),
            4 => (1u32..6).prop_map(Event::Failed),
            1 => any::<bool>().prop_map(Event::Aborted),
        ];
        (e, 0.0..50.0f64)
    }

    #[test]
    fn a_failure_launches_the_next_at_once_and_the_first_answer_wins() {
        let mut run = HedgeRun::new(HedgePolicy { delay_ms: 30.0, max_attempts: 3 });
        assert_eq!(run.start(100.0), Ok(HedgeStep::Launch { number: 1, wake_at: Some(130.0) }));
        assert_eq!(run.wake(120.0), Ok(HedgeStep::Sleep { at: 130.0 }));
        assert_eq!(run.wake(130.0), Ok(HedgeStep::Launch { number: 2, wake_at: Some(160.0) }));
        assert_eq!(run.failed(1, 140.0), Ok(HedgeStep::Launch { number: 3, wake_at: None }));
        assert_eq!(run.wake(160.0), Ok(HedgeStep::Wait));
        assert_eq!(run.succeeded(3, 150.0), Ok(HedgeStep::Won { number: 3 }));
        assert_eq!(run.succeeded(2, 151.0), Ok(HedgeStep::Wait));
        let outcomes: Vec<_> = run.records().iter().map(|r| (r.number, r.ended, r.elapsed_ms)).collect();
        assert_eq!(outcomes, [(1, Ended::Error, 40.0), (2, Ended::Aborted, 20.0), (3, Ended::Ok, 10.0)]);
        assert_eq!(run.stopped(), None);
        assert_eq!(run.start(200.0), Err(RetryError::OutOfOrder { call: "start", state: "finished" }));
        assert_eq!(answered_first(3).to_string(), "hedged attempt 3 answered first");
    }

    #[test]
    fn stops_read_in_full_and_name_the_last_failure() {
        let mut run = HedgeRun::new(HedgePolicy { delay_ms: 10.0, max_attempts: 2 });
        run.start(0.0).unwrap();
        run.wake(10.0).unwrap();
        assert_eq!(run.failed(2, 11.0), Ok(HedgeStep::Wait), "attempt 1 may still answer");
        let Ok(HedgeStep::Stop(stop)) = run.failed(1, 12.0) else { panic!("no stop") };
        assert_eq!(stop.code(), "exhausted");
        assert_eq!(stop.to_string(), "hedge stopped after 2 attempts: all 2 attempts failed");
        assert_eq!(run.last_failed(), Some(1), "the cause is the last attempt to fail");
        let StopFields { reason, message } = StopFields::from(&stop);
        assert_eq!((reason, message.to_string()), (StopCode::Exhausted, stop.to_string()));
        let mut run = HedgeRun::new(HedgePolicy { delay_ms: 10.0, max_attempts: 2 });
        assert_eq!(
            run.aborted(0.0, true).map(|s| match s {
                HedgeStep::Stop(s) => s.to_string(),
                _ => String::new(),
            }),
            Ok("hedge stopped after 0 attempts: the deadline passed".into())
        );
        let mut run = HedgeRun::new(HedgePolicy { delay_ms: 10.0, max_attempts: 1 });
        assert_eq!(run.start(0.0), Ok(HedgeStep::Launch { number: 1, wake_at: None }));
        let Ok(HedgeStep::Stop(stop)) = run.aborted(5.0, false) else { panic!("no stop") };
        assert_eq!(
            (stop.code(), stop.to_string().as_str()),
            ("aborted", "hedge stopped after 1 attempt: the operation was aborted")
        );
        assert_eq!(run.records()[0].ended, Ended::Aborted);
        assert!(matches!(run.wake(f64::NAN), Err(RetryError::Time(_))));
    }

    proptest! {
        /// Invariants 1 to 5 over any order of events a host may report.
        #[test]
        fn a_hedge_keeps_its_invariants(
            delay in 0.0..40.0f64,
            max in 1u32..6,
            events in proptest::collection::vec(event(), 0..40),
        ) {
            let mut run = HedgeRun::new(HedgePolicy { delay_ms: delay, max_attempts: max });
            let mut now = 1_000.0;
            let mut launches: Vec<f64> = Vec::new();
            let mut ends = 0;
            let mut check = |step: HedgeStep, now: f64, run: &HedgeRun, launches: &mut Vec<f64>, kind: &str| {
                match step {
                    HedgeStep::Launch { number, wake_at } => {
                        // 1. numbered 1, 2, …, at most max; a wake launches no earlier than delay after the last.
                        prop_assert_eq!(number as usize, launches.len() + 1);
                        prop_assert!(number <= max);
                        if kind == "wake" {
                            prop_assert!(now >= launches.last().unwrap() + delay);
                        }
                        prop_assert!(kind != "succeeded" && kind != "aborted");
                        launches.push(now);
                        // 2. armed delay after the latest launch while attempts remain.
                        prop_assert_eq!(wake_at, if number < max { Some(now + delay) } else { None });
                    }
                    HedgeStep::Won { number } => {
                        ends += 1;
                        prop_assert_eq!(run.records()[number as usize - 1].ended, Ended::Ok);
                    }
                    HedgeStep::Stop(stop) => {
                        ends += 1;
                        // 4. exhausted only when all launched failed and none remain.
                        match stop.reason {
                            StopReason::Exhausted { attempts } => {
                                prop_assert_eq!(kind, "failed");
                                prop_assert_eq!(attempts, max);
                                prop_assert!(run.records().iter().all(|r| r.ended == Ended::Error));
                            }
                            StopReason::Deadline { .. } | StopReason::Aborted { .. } => prop_assert_eq!(kind, "aborted"),
                            _ => prop_assert!(false, "a hedge stopped with {:?}", stop.reason),
                        }
                        prop_assert_eq!(stop.attempts as usize, launches.len());
                        prop_assert_eq!(run.stopped(), Some(stop));
                    }
                    HedgeStep::Sleep { at } => prop_assert!(at > now),
                    HedgeStep::Wait => {}
                }
                // 3. one end at most, and nothing after it.
                prop_assert!(ends <= 1);
                if run.is_done() {
                    prop_assert_eq!(run.wake_at(), None);
                    // 5. no record left running; elapsed never negative.
                    prop_assert!(run.records().iter().all(|r| r.ended != Ended::Running));
                }
                prop_assert!(run.records().iter().all(|r| r.elapsed_ms >= 0.0));
                Ok(())
            };
            let step = run.start(now).unwrap();
            check(step, now, &run, &mut launches, "start")?;
            for (event, dt) in events {
                now += dt;
                let was_done = run.is_done();
                let (step, kind) = match event {
                    Event::Wake => (run.wake(now).unwrap(), "wake"),
                    Event::Succeeded(n) => (run.succeeded(n, now).unwrap(), "succeeded"),
                    Event::Failed(n) => (run.failed(n, now).unwrap(), "failed"),
                    Event::Aborted(d) => (run.aborted(now, d).unwrap(), "aborted"),
                };
                if was_done {
                    prop_assert_eq!(step, HedgeStep::Wait);
                }
                check(step, now, &run, &mut launches, kind)?;
            }
        }
    }
}
