//! Pipeline plans: one deadline split between named steps, the tail protected.
//!
//! Every cap and admission is the core's decision ([`crate::core::plan`], see
//! its module doc for the arithmetic and the hand-off margin); this file owns
//! the clock, one `AbortController` and one timer per running step, the
//! listener on the deadline's signal, and the trace. The JavaScript API's
//! `plan()` (`js/plan.js`) does the same.
//!
//! # Invariants
//! 1. A refused step (optional: skipped; mandatory: `InsufficientBudget`)
//!    never calls its function. A fallback step is never refused: with
//!    nothing left (the deadline passed, the client left, the caller's
//!    budget was below the reserve) it is called at once with an aborted
//!    signal and a budget of 0, and `run` returns what it returns.
//! 2. A running step's signal aborts at its cap (with `StepTimeout` when the
//!    cap is before the deadline's instant, `DeadlineExceeded` when it is the
//!    instant itself) or when the
//!    deadline's signal aborts (its instant or a parent's reason), whichever
//!    comes first; `run` returns in that same turn, whether or not the step
//!    honours the signal (its future is dropped).
//! 3. When `run` returns, its timer is cleared and its listener removed.
//! 4. Every `run`, started or not, appends exactly one trace record and calls
//!    the `on_step` hook with it before returning.
//! 5. Once the deadline's signal has aborted, no further step starts but the
//!    fallback; a departed client's reason wins over a refusal.
//! 6. A step that fails with [`Error::StreamStalled`] is recorded as
//!    `stalled`, not `error`.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::guard::{Ended, Guard};
use super::{timers, Circuit, Deadline, Error};
use crate::core::plan::{self as core, Decision, PlanError};
pub use crate::core::plan::{Outcome, SkipReason, StepKind, StepSpec, TraceRecord};

/// What a step that was allowed to be considered did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepResult<T> {
    /// The step ran and produced `T`.
    Ran(T),
    /// An optional step was not started (the pipeline carries on without it).
    Skipped(SkipReason),
}

impl From<PlanError> for Error {
    fn from(error: PlanError) -> Self {
        let param = match &error {
            PlanError::NoSteps | PlanError::TooManySteps { .. } => "steps",
            PlanError::EmptyName { .. }
            | PlanError::NameTooLong { .. }
            | PlanError::DuplicateName { .. }
            | PlanError::UnknownStep { .. }
            | PlanError::IndexOutOfRange { .. } => "name",
            PlanError::UnknownKind { .. } => "kind",
            PlanError::BadStep { .. } => "steps",
            PlanError::BadStepValue { error, .. } => error.param().unwrap_or("steps"),
            PlanError::MinAbovePreferred { .. } => "minMs",
            PlanError::ReserveBelowMin { .. } => "reserveMs",
            PlanError::ZeroPreferred { .. } | PlanError::PreferredOnFallback { .. } => "preferredMs",
            PlanError::BadMargin { .. } => "marginMs",
            PlanError::Time(e) => return Error::from(*e),
        };
        Error::described(param, &error)
    }
}

/// The `on_step` hook.
type StepHook = Box<dyn FnMut(&TraceRecord)>;

/// Steps planned inside one deadline. Build it with [`Plan::new`], then
/// [`Plan::run`] each step in order.
///
/// ```
/// use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
/// # #[wasm_bindgen_test::wasm_bindgen_test] async fn doc() { demo().await.unwrap() }
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(800.0)?;
/// let plan = Plan::new(
///     &deadline,
///     vec![
///         StepSpec::new("retrieve", StepKind::Optional, 50.0).preferred(300.0),
///         StepSpec::new("generate", StepKind::Mandatory, 200.0).reserve(400.0),
///         StepSpec::new("fallback", StepKind::Fallback, 20.0),
///     ],
/// )?;
/// let docs = plan.run("retrieve", |signal, cap_ms| async move { let _ = (signal, cap_ms); Ok(vec![1, 2]) }).await?;
/// # let _ = docs; Ok(()) }
/// # fn main() {}
/// ```
pub struct Plan<'d> {
    deadline: &'d Deadline,
    plan: core::Plan,
    /// Shared with a streamed step's body, which records its step when it ends.
    records: Rc<RefCell<Vec<TraceRecord>>>,
    on_step: Rc<RefCell<Option<StepHook>>>,
}

impl<'d> Plan<'d> {
    /// Validates `steps` against `deadline` with the default hand-off margin.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the offending field (`steps`, `name`,
    /// `minMs`, `preferredMs`, `reserveMs`). A shortage is never an error
    /// here: a plan is made whatever the time left, and it shows when steps
    /// are decided (skipped, insufficient, or the fallback with what is left).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let plan = Plan::new(&d, vec![StepSpec::new("only", StepKind::Mandatory, 10.0)])?;
    /// # let _ = plan; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(deadline: &'d Deadline, steps: Vec<StepSpec>) -> Result<Self, Error> {
        Self::with_margin(deadline, steps, core::DEFAULT_MARGIN_MS)
    }

    /// As [`Plan::new`] with an explicit hand-off margin per step start
    /// (`0 ..= 1000` ms; hosts whose event loop lags more than 5 ms need more).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let plan = Plan::with_margin(&d, vec![StepSpec::new("a", StepKind::Optional, 10.0)], 20.0)?;
    /// # let _ = plan; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn with_margin(deadline: &'d Deadline, steps: Vec<StepSpec>, margin_ms: f64) -> Result<Self, Error> {
        let plan = core::Plan::with_margin(deadline.instant_ms(), timers::now(), steps, margin_ms)?;
        Ok(Self { deadline, plan, records: Rc::default(), on_step: Rc::default() })
    }

    /// Calls `hook` with every trace record as it is appended.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// # let d = Deadline::in_ms(1_000.0)?;
    /// let plan = Plan::new(&d, vec![StepSpec::new("a", StepKind::Optional, 10.0)])?
    ///     .on_step(|r| eprintln!("{} {:?}", r.step, r.outcome));
    /// # let _ = plan; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn on_step(self, hook: impl FnMut(&TraceRecord) + 'static) -> Self {
        *self.on_step.borrow_mut() = Some(Box::new(hook));
        self
    }

    /// Runs the step `name`: `f(signal, cap_ms)` with the step's cap, or not at
    /// all (an optional step: `Ok(StepResult::Skipped)`; a mandatory step:
    /// `Err(InsufficientBudget)`). A fallback step always runs: with nothing
    /// left, with an aborted signal and a cap of 0.
    ///
    /// # Errors
    /// [`Error::InsufficientBudget`] (not started); [`Error::StepTimeout`] or
    /// [`Error::DeadlineExceeded`] (cut at its cap); the deadline signal's
    /// reason (a parent aborted); `f`'s own error; [`Error::InvalidArgument`]
    /// naming `name` for a step the plan does not declare.
    ///
    /// ```no_run
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec, StepResult};
    /// # async fn demo(d: &Deadline) -> Result<(), edge_deadline::web::Error> {
    /// let plan = Plan::new(d, vec![StepSpec::new("rerank", StepKind::Optional, 30.0)])?;
    /// match plan.run("rerank", |_signal, _cap_ms| async { Ok(()) }).await? {
    ///     StepResult::Ran(()) => {}
    ///     StepResult::Skipped(reason) => eprintln!("skipped: {reason}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn run<F, Fut, T>(&self, name: &str, f: F) -> Result<StepResult<T>, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run_inner(name, None, None, f).await
    }

    /// [`run`](Self::run), recording into `book` under the step's name
    /// (JavaScript's `record: book`): its latency when it succeeds, a timeout
    /// when it is cut by time, an error when it fails; nothing for a step
    /// that did not run or whose client left.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn run_recorded<F, Fut, T>(
        &self,
        name: &str,
        book: &super::TimeoutBook,
        f: F,
    ) -> Result<StepResult<T>, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run_inner(name, None, Some(book), f).await
    }

    /// [`run`](Self::run) guarded by a circuit breaker's key: a step the
    /// breaker refuses is not run (an optional one is skipped with
    /// [`SkipReason::CircuitOpen`](crate::core::plan::SkipReason::CircuitOpen),
    /// a mandatory one fails with [`Error::CircuitOpen`]), and a step that
    /// runs tells the breaker how it ended (cut at its cap: a timeout; a
    /// parent's abort: cancelled).
    ///
    /// # Errors
    /// As [`run`](Self::run), and [`Error::CircuitOpen`] for a refused
    /// mandatory step; [`Error::InvalidType`] naming `circuit` on the
    /// fallback step (a fallback always runs).
    pub async fn run_guarded<F, Fut, T>(&self, name: &str, circuit: &Circuit, f: F) -> Result<StepResult<T>, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run_inner(name, Some(circuit), None, f).await
    }

    async fn run_inner<F, Fut, T>(
        &self,
        name: &str,
        circuit: Option<&Circuit>,
        book: Option<&super::TimeoutBook>,
        f: F,
    ) -> Result<StepResult<T>, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let index = self.plan.index_of(name)?;
        let at = self.plan.at();
        let t0 = timers::now();
        let decision = self.plan.decide_index(index, t0)?;
        let remaining = decision.remaining_ms();
        let parent = self.deadline.signal();
        // A departed client wins over any refusal (invariant 5); the deadline's
        // own expiry does not: a step refused for time is skipped or insufficient.
        let gone = if parent.aborted() { Some(Error::from(parent.reason())) } else { None };
        let departed = gone.as_ref().is_some_and(|r| self.outcome_of(r) == Outcome::Aborted);
        let kind = self.plan.steps()[index].kind();
        let fallback = kind == StepKind::Fallback;
        if fallback && circuit.is_some() {
            return Err(Error::InvalidType {
                param: "circuit",
                code: "INVALID_TYPE",
                message: format!("'circuit' cannot guard the fallback step '{name}': a fallback always runs"),
            });
        }
        if fallback && (decision.cap_ms() == 0.0 || gone.is_some()) {
            // The fallback always runs (invariant 1); with nothing left, at once.
            let reason = match gone {
                Some(reason) => reason,
                None if at <= t0 => Error::DeadlineExceeded { at, late_by_ms: t0 - at },
                None => Error::StepTimeout { step: name.to_string(), cap_ms: 0.0 },
            };
            let controller = web_sys::AbortController::new().map_err(Error::from)?;
            controller.abort_with_reason(&reason.into());
            let result = f(controller.signal(), 0.0).await;
            let outcome = match &result {
                Ok(_) => Outcome::Ok,
                Err(e) => failed(e),
            };
            self.record(name, remaining, 0.0, t0, outcome);
            return result.map(StepResult::Ran);
        }
        let cap = match decision {
            Decision::Skip { reason, .. } if !departed => {
                self.record(name, remaining, 0.0, t0, Outcome::Skipped);
                return Ok(StepResult::Skipped(reason));
            }
            Decision::Insufficient { available_ms, min_ms, .. } if !departed => {
                self.record(name, remaining, 0.0, t0, Outcome::Insufficient);
                return Err(Error::InsufficientBudget { remaining_ms: available_ms, min_ms });
            }
            Decision::Run { cap_ms, .. } => cap_ms,
            Decision::Skip { .. } | Decision::Insufficient { .. } => 0.0,
        };
        if let Some(reason) = gone {
            self.record(name, remaining, 0.0, t0, self.outcome_of(&reason));
            return Err(reason);
        }
        let permit = match circuit.map(|c| c.acquire(None)) {
            None => None,
            Some(Ok(permit)) => Some(permit),
            Some(Err(Error::CircuitOpen { retry_in_ms, .. })) if kind == StepKind::Optional => {
                self.record(name, remaining, 0.0, t0, Outcome::Skipped);
                return Ok(StepResult::Skipped(SkipReason::CircuitOpen { retry_in_ms }));
            }
            Some(Err(refusal)) => {
                self.record(name, remaining, 0.0, t0, Outcome::Error);
                return Err(refusal);
            }
        };
        let step = name.to_string();
        let cap_at = t0 + cap;
        let cap_is_deadline = core::cap_is_deadline(cap_at, at);
        let guard = Guard::new(
            Some(cap_at),
            move || {
                if cap_is_deadline {
                    let t = timers::now();
                    Error::DeadlineExceeded { at, late_by_ms: if t > at { t - at } else { 0.0 } }.into()
                } else {
                    Error::StepTimeout { step, cap_ms: cap }.into()
                }
            },
            &[&parent],
            true,
        );
        let result = guard.race(f(guard.signal(), cap)).await;
        drop(guard);
        // The breaker hears how the step ended; a permit dropped unrecorded
        // (a parent's abort: the client left) counts as cancelled.
        match (&result, permit) {
            (Ok(Ok(_)), Some(p)) => p.success(),
            (Ok(Err(e)), Some(p)) => p.failed_with(e),
            (Err(Ended::Cap(_)), Some(p)) => p.timeout(),
            _ => {}
        }
        if let Some(book) = book {
            let how = match &result {
                Ok(Ok(_)) => Some(super::CallOutcome::Ok),
                Ok(Err(e)) if e.is_timeout() => Some(super::CallOutcome::Timeout),
                Ok(Err(_)) => Some(super::CallOutcome::Error),
                Err(Ended::Cap(_)) => Some(super::CallOutcome::Timeout),
                Err(Ended::Parent(..)) => None,
            };
            let elapsed = timers::now() - t0;
            // A bucket the book refuses (a name past 256 bytes) changes nothing: the step's result stands.
            if let Some(how) = how {
                let _ = book.record(name, if elapsed > 0.0 { elapsed } else { 0.0 }, how);
            }
        }
        let (outcome, answer) = match result {
            Ok(Ok(value)) => (Outcome::Ok, Ok(StepResult::Ran(value))),
            Ok(Err(error)) => (failed(&error), Err(error)),
            Err(Ended::Cap(reason)) => (Outcome::Deadline, Err(Error::from(reason))),
            Err(Ended::Parent(_, reason)) => {
                let reason = Error::from(reason);
                (self.outcome_of(&reason), Err(reason))
            }
        };
        self.record(name, remaining, cap, t0, outcome);
        answer
    }

    /// A `DeadlineExceeded` for this plan's own instant is the deadline; any
    /// other reason came from a parent signal (the client left).
    fn outcome_of(&self, reason: &Error) -> Outcome {
        match reason {
            Error::DeadlineExceeded { at, .. } if *at == self.plan.at() => Outcome::Deadline,
            _ => Outcome::Aborted,
        }
    }

    fn record(&self, step: &str, remaining: f64, cap: f64, t0: f64, outcome: Outcome) {
        Recorder { records: self.records.clone(), on_step: self.on_step.clone() }
            .record(step, remaining, cap, t0, outcome, None);
    }

    /// The trace so far: one record per `run`, in order.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// # let d = Deadline::in_ms(1_000.0)?;
    /// # let plan = Plan::new(&d, vec![StepSpec::new("a", StepKind::Optional, 10.0)])?;
    /// for record in plan.records() {
    ///     let _ = (record.step, record.cap_ms, record.outcome);
    /// }
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn records(&self) -> Vec<TraceRecord> {
        self.records.borrow().clone()
    }

    /// The trace as JSON, the same text the JavaScript API's `trace()` gives:
    /// `[{ "step", "remainingAtStartMs", "capMs", "elapsedMs", "outcome" }]`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// # let d = Deadline::in_ms(1_000.0)?;
    /// # let plan = Plan::new(&d, vec![StepSpec::new("a", StepKind::Optional, 10.0)])?;
    /// assert_eq!(plan.trace_json(), "[]");
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn trace_json(&self) -> String {
        trace_json(&self.records.borrow())
    }

    /// The plan's deadline.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec};
    /// # let d = Deadline::in_ms(1_000.0)?;
    /// # let plan = Plan::new(&d, vec![StepSpec::new("a", StepKind::Optional, 10.0)])?;
    /// assert_eq!(plan.deadline().instant_ms(), d.instant_ms());
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn deadline(&self) -> &Deadline {
        self.deadline
    }
}

/// JSON.stringify of the records, as the JavaScript API's trace() (there
/// rounded to 0.1 ms; here as they are).
fn trace_json(records: &[TraceRecord]) -> String {
    let list = js_sys::Array::new();
    for r in records {
        let o = js_sys::Object::new();
        for (key, value) in [
            ("step", JsValue::from_str(&r.step)),
            ("remainingAtStartMs", JsValue::from_f64(r.remaining_at_start_ms)),
            ("capMs", JsValue::from_f64(r.cap_ms)),
            ("elapsedMs", JsValue::from_f64(r.elapsed_ms)),
            ("outcome", JsValue::from_str(r.outcome.as_str())),
        ] {
            let _ = js_sys::Reflect::set(&o, &JsValue::from_str(key), &value);
        }
        if let Some(ms) = r.first_chunk_ms {
            let _ = js_sys::Reflect::set(&o, &JsValue::from_str("firstChunkMs"), &JsValue::from_f64(ms));
        }
        list.push(&o);
    }
    js_sys::JSON::stringify(&list).ok().and_then(|s| s.as_string()).unwrap_or_else(|| "[]".into())
}

/// The plan's trace and hook, owned apart from the plan so that a streamed
/// step's body (which outlives the call that made it) can record its step.
#[derive(Clone)]
struct Recorder {
    records: Rc<RefCell<Vec<TraceRecord>>>,
    on_step: Rc<RefCell<Option<StepHook>>>,
}

impl Recorder {
    fn record(&self, step: &str, remaining: f64, cap: f64, t0: f64, outcome: Outcome, first_chunk_ms: Option<f64>) {
        let elapsed = timers::now() - t0;
        // Every value is a validated duration: `new` cannot refuse it.
        let Ok(mut record) = TraceRecord::new(step, remaining, cap, if elapsed > 0.0 { elapsed } else { 0.0 }, outcome)
        else {
            return;
        };
        if let Some(ms) = first_chunk_ms {
            record = match record.clone().with_first_chunk(ms) {
                Ok(r) => r,
                Err(_) => record,
            };
        }
        if let Some(hook) = self.on_step.borrow_mut().as_mut() {
            hook(&record);
        }
        self.records.borrow_mut().push(record);
    }
}

/// The outcome of a step that failed: a stall is a timeout of its own kind.
fn failed(error: &Error) -> Outcome {
    match error {
        Error::StreamStalled { .. } => Outcome::Stalled,
        _ => Outcome::Error,
    }
}

impl std::fmt::Debug for Plan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan").field("plan", &self.plan).field("records", &self.records.borrow().len()).finish()
    }
}

mod stream;
pub use stream::StreamStepOptions;
