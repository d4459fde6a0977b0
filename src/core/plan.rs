//! Pipeline plans: one deadline split between steps, with the tail protected.
//!
//! # Why a plan and not one timeout per step
//! Timeouts add up: four steps at 10 s each are a 40 s worst case behind a
//! caller who may give up at 30 s, and nothing in any single step shows it.
//! A plan takes the one edge deadline and, each time a step is about to
//! start, gives it a *cap* derived from what is left. Mandatory and fallback
//! steps declared later hold their reserve back while earlier steps run, so
//! an optional step can be slow without starving the policy check or the
//! fallback response that must come after it.
//!
//! # How a cap is computed
//! For step `i` of `n`, decided at `now`:
//!
//! ```text
//! remaining = max(0, at − now)
//! held(i)   = Σ (reserve(j) + margin) over mandatory and fallback steps j
//!             declared after i              (one hand-off margin per held step)
//! available = remaining − held(i)
//! cap       = min(preferred, available)    mandatory and optional steps
//! cap       = available                    fallback steps: everything left
//! ```
//!
//! A mandatory or optional step is admitted when `cap ≥ minMs` (within
//! [`ADMIT_EPSILON_MS`] of rounding) and `cap > 0`. Otherwise an optional
//! step is [`Decision::Skip`]ped and a mandatory step is
//! [`Decision::Insufficient`]: it must not start.
//!
//! A fallback step is always admitted, even below its `minMs`, even with
//! nothing left. It is the truthful answer of last resort: refusing it
//! because the step before ended late, or because the caller's budget was
//! smaller than the reserve, would turn a degraded answer into no answer at
//! all. Its `minMs` and `reserveMs` size what is *held* for it; when it runs,
//! it gets whatever is left of that, however late the previous step ended.
//! With nothing left its cap is `0`: the host hands it a signal that is
//! already aborted, so it can answer only from what it has (a cached or
//! static answer).
//!
//! # A shortage is never an error
//! A plan is created whatever the time left, even none: a short incoming
//! deadline (a propagated `grpc-timeout: 50m`) is a runtime condition, not a
//! programmer's mistake. The shortage shows where it can be handled, when a
//! step is decided: optional steps are skipped, mandatory steps are
//! insufficient, and the fallback runs with what is left, if only nothing. Construction
//! refuses only steps that could never be valid at any budget.
//!
//! # The hand-off margin
//! Arithmetic alone does not protect the tail. A step aborted exactly at its
//! cap ends a little *after* its cap: the host timer fires late (armed in
//! whole milliseconds, behind whatever task holds the event loop), the abort
//! travels through promise callbacks, and the next step's bookkeeping runs
//! before it starts. Each of those costs time that was never in any cap.
//!
//! That lateness matters only where a reserve begins. Every step's cap ends
//! at or before the boundary of the next held (mandatory or fallback) step's
//! reserve, so a step that ends late eats into the next step's cap, not into
//! a reserve, unless the time it ate was the reserve itself. Optional steps
//! between two held steps share one boundary: the first to end late past it
//! leaves the rest nothing, and they skip (which costs no time). So the plan
//! holds `margin` (default [`DEFAULT_MARGIN_MS`]) once in front of each held
//! step, not once per step: a margin per step would make a short budget
//! refuse its first step for hand-offs that can never all happen (four later
//! steps at 5 ms each would hold 20 ms of a 50 ms budget).
//!
//! With that margin, a short induction gives invariant 3: if the plan's
//! reserves plus one margin per held step fit in the budget, every step
//! ends at most `margin` after its cap and skips take no time, then at the
//! start of each held step `j` at least `reserve(j) + held(j)` remains, so it
//! is admitted with at least `min(preferred, reserve)`. When a step ends
//! later than that, the margin is not a promise any more, but the fallback
//! still runs (see above).
//!
//! The default is measured, not guessed: `bench/lateness.bench.mjs` times
//! how late a step's successor starts after its cap fires, in Node, Deno,
//! workerd and Chromium, on an idle event loop and on one kept busy by 1 ms
//! and 5 ms tasks (figures in BENCHMARKS.md, "Hand-off lateness"). On an
//! idle loop the p99 was 3.1–5 ms in all four over two runs (workerd's clock
//! ticks in whole milliseconds), and 5 ms covers it. Under load the tail is
//! set by the host's other work, not by this package: p50 stays near the
//! length of one task, but p99 reached 4–51 ms on a shared 2-core machine. A host that
//! knows its tasks run long should pass a larger margin
//! ([`Plan::with_margin`]); the fallback runs either way.
//!
//! # Order
//! "After" means *declared* after, in the order given to [`Plan::new`]. The
//! plan is immutable and stateless: deciding a step twice, or out of order,
//! is allowed and uses the same arithmetic. Recording what actually happened
//! is the [`TraceRecord`]'s job.
//!
//! # Invariants (each is a property test, in `plan/tests.rs`)
//! 1. An admitted step's cap never exceeds `max(0, remaining − held(i))`,
//!    nor its preferred duration; except a fallback's, it is above zero and
//!    at least its minimum.
//! 2. Whether a plan can be built never depends on the time left: valid
//!    steps give a plan at any budget, an expired one included.
//! 3. If the reserves plus one margin per held step fit in the budget and
//!    every step ends at most `margin` after its cap (late abort plus
//!    hand-off), every mandatory and fallback step is admitted with a cap of
//!    at least `min(preferred, reserve)`. However late the steps before it
//!    end, a fallback step is admitted, with everything left after later
//!    held steps (`0` when nothing is).
//! 4. In such a sequential run no step's start plus cap passes the deadline,
//!    and when every step consumes its whole cap the caps sum to at most the
//!    budget (a step that ends early hands its slack to the next one).
//! 5. No decision or trace record contains NaN, an infinity or a negative
//!    duration.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError};
use crate::core::error::{Described, Message};

/// The default hand-off margin per step start: the worst p99 hand-off
/// lateness on an idle event loop across Node, Deno, workerd and Chromium
/// (measured; see the module doc, "The hand-off margin").
pub const DEFAULT_MARGIN_MS: f64 = 5.0;

/// The largest accepted hand-off margin. A margin of a second per step means
/// the host cannot keep time and a plan will not help.
pub const MAX_MARGIN_MS: f64 = 1_000.0;

/// The most steps one plan accepts. Decisions are `O(1)` by index; names are
/// found by a linear scan, which is fastest at the sizes real pipelines have.
pub const MAX_STEPS: usize = 256;

/// The longest accepted step name, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// Admission tolerates this much floating-point error (1 ns): a reserve
/// consumed to the last bit by rounding in `at − now` still admits its step.
pub const ADMIT_EPSILON_MS: f64 = 1e-6;

/// Whether a step's cap, reached at `cap_at`, is the deadline `at` (to
/// [`ADMIT_EPSILON_MS`] of rounding: a cap of "all that is left" can land a
/// few ulps short of `at`): when it fires, the step ended with the deadline
/// (`DeadlineExceeded`, outcome `deadline`), not with its own cap
/// (`StepTimeout`, outcome `timeout`). Both hosts ask this when a cap fires or
/// a streamed step ends; neither keeps a copy.
pub fn cap_is_deadline(cap_at: f64, at: f64) -> bool {
    cap_at >= at - ADMIT_EPSILON_MS
}

/// Why a plan or a decision was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// The plan has no steps. Declare at least one.
    NoSteps,
    /// More than [`MAX_STEPS`] steps. Merge steps or split the pipeline.
    TooManySteps {
        /// The number of steps given.
        count: usize,
    },
    /// Step number `index` (from 0) has an empty name. Give every step a name.
    EmptyName {
        /// The step's position, from 0.
        index: usize,
    },
    /// A name is longer than [`MAX_NAME_LEN`] bytes. Use a shorter name.
    NameTooLong {
        /// The step's position, from 0.
        index: usize,
        /// The name's length, in bytes.
        len: usize,
    },
    /// Two steps share a name. Names identify steps in `run` and the trace.
    DuplicateName {
        /// The shared name.
        name: String,
        /// The first step with it, from 0.
        first: usize,
        /// The second step with it, from 0.
        second: usize,
    },
    /// `run` asked for a step the plan does not declare.
    UnknownStep {
        /// The name asked for (its first [`MAX_NAME_LEN`] characters).
        name: String,
    },
    /// A step index outside the plan.
    IndexOutOfRange {
        /// The index given.
        index: usize,
        /// The plan's number of steps.
        len: usize,
    },
    /// A step kind other than `mandatory`, `optional` or `fallback`.
    UnknownKind {
        /// The kind given (its first 64 characters).
        value: String,
    },
    /// Step number `index` is not a step object (what a binding reports
    /// when the step's fields cannot be read at all), `detail` saying why.
    BadStep {
        /// The step's position, from 0.
        index: usize,
        /// What the binding's reader said of the step.
        detail: String,
    },
    /// A step's duration (`minMs`, `preferredMs`, `reserveMs`) is NaN,
    /// infinite, negative or past [`MAX_MS`](crate::core::deadline::MAX_MS).
    BadStepValue {
        /// The step's position, from 0.
        index: usize,
        /// The step's name.
        step: String,
        /// What is wrong with the duration (its `param` names the field).
        error: DeadlineError,
    },
    /// `minMs` is above `preferredMs`: the step could never be admitted at its
    /// preferred size. Lower `minMs` or raise `preferredMs`.
    MinAbovePreferred {
        /// The step's position, from 0.
        index: usize,
        /// The step's name.
        step: String,
        /// The step's `minMs`.
        min_ms: f64,
        /// The step's `preferredMs`.
        preferred_ms: f64,
    },
    /// A mandatory or fallback step reserves less than its minimum, so holding
    /// the reserve would not guarantee it can start. Raise `reserveMs`.
    ReserveBelowMin {
        /// The step's position, from 0.
        index: usize,
        /// The step's name.
        step: String,
        /// The step's `reserveMs`.
        reserve_ms: f64,
        /// The step's `minMs`.
        min_ms: f64,
    },
    /// `preferredMs` is 0: the step could never be given any time. Remove it
    /// to take whatever is available, or give a positive duration.
    ZeroPreferred {
        /// The step's position, from 0.
        index: usize,
        /// The step's name.
        step: String,
    },
    /// A fallback step gets everything left when it runs, so a preferred
    /// duration contradicts it. Remove `preferredMs` or make the step mandatory.
    PreferredOnFallback {
        /// The step's position, from 0.
        index: usize,
        /// The step's name.
        step: String,
    },
    /// The margin is outside `0 ..= MAX_MARGIN_MS`.
    BadMargin {
        /// The margin given, in ms.
        value: f64,
    },
    /// A time argument (`at`, `now`, trace values) is invalid.
    Time(DeadlineError),
}

/// The plan's message templates.
pub mod msg {
    crate::templates! { "plan";
        /// [`step_timeout`](super::step_timeout).
        STEP_TIMEOUT = "step '{step}' timed out at its {capMs:ms} ms cap; the deadline still has time";
        /// [`PlanError::NoSteps`](super::PlanError::NoSteps).
        NO_STEPS = "'steps' must contain at least one step: current value is empty";
        /// [`PlanError::TooManySteps`](super::PlanError::TooManySteps).
        TOO_MANY_STEPS = "'steps' must contain at most {max} steps: current value has {count}";
        /// [`PlanError::EmptyName`](super::PlanError::EmptyName).
        EMPTY_NAME = "step {index} must have a non-empty 'name'";
        /// [`PlanError::NameTooLong`](super::PlanError::NameTooLong).
        NAME_TOO_LONG = "step {index} must have a 'name' of at most {max} bytes: current value has {len}";
        /// [`PlanError::DuplicateName`](super::PlanError::DuplicateName).
        DUPLICATE_NAME = "step names must be unique: '{name}' is used by steps {first} and {second}";
        /// [`PlanError::UnknownStep`](super::PlanError::UnknownStep).
        UNKNOWN_STEP = "the plan has no step named '{name}'";
        /// [`PlanError::IndexOutOfRange`](super::PlanError::IndexOutOfRange).
        INDEX_OUT_OF_RANGE = "step index must be between 0 and {last}: current value is {index}";
        /// [`PlanError::UnknownKind`](super::PlanError::UnknownKind).
        UNKNOWN_KIND = "'kind' must be one of mandatory, optional, fallback: current value is '{value}'";
        /// `detail`: what the binding's reader said of the step.
        BAD_STEP = "step {index}: {detail}";
        /// `error`: the duration's own message (a nested deadline message).
        STEP_VALUE = "step '{step}': {error}";
        /// [`PlanError::MinAbovePreferred`](super::PlanError::MinAbovePreferred).
        MIN_ABOVE_PREFERRED = "step '{step}': 'minMs' must not exceed 'preferredMs' ({preferredMs}): current value is {minMs}";
        /// [`PlanError::ReserveBelowMin`](super::PlanError::ReserveBelowMin).
        RESERVE_BELOW_MIN = "step '{step}': 'reserveMs' must be at least 'minMs' ({minMs}) for mandatory and fallback steps: current value is {reserveMs}";
        /// [`PlanError::ZeroPreferred`](super::PlanError::ZeroPreferred).
        ZERO_PREFERRED = "step '{step}': 'preferredMs' must be above 0 milliseconds: current value is 0";
        /// [`PlanError::PreferredOnFallback`](super::PlanError::PreferredOnFallback).
        PREFERRED_ON_FALLBACK = "step '{step}': a fallback step gets everything left, so 'preferredMs' must not be set";
        /// [`PlanError::BadMargin`](super::PlanError::BadMargin).
        BAD_MARGIN = "'marginMs' must be between 0 and {max} milliseconds: current value is {value}";
        /// A skipped optional step's reason ([`SkipReason::Expired`](super::SkipReason::Expired)).
        SKIP_EXPIRED = "the deadline has passed";
        /// [`SkipReason::BelowMinimum`](super::SkipReason::BelowMinimum).
        SKIP_BELOW_MINIMUM = "only {availableMs:ms} ms are available after the reserve for later steps but this step needs at least {minMs:ms} ms";
        /// The sentence of [`SkipReason::CircuitOpen`](super::SkipReason::CircuitOpen).
        SKIP_CIRCUIT_OPEN = "its circuit breaker is open (its dependency is failing) and lets a probe through in {retryInMs:ms} ms";
    }
}

/// The message of a `StepTimeout` error, which both hosts raise: step `step`
/// reached its own cap of `cap_ms` while the deadline still had time.
pub fn step_timeout(step: &str, cap_ms: f64) -> Message {
    Message::new(msg::STEP_TIMEOUT).arg("step", step).arg("capMs", cap_ms)
}

crate::described_error!(PlanError);

impl Described for PlanError {
    fn code(&self) -> &'static str {
        match self {
            Self::NoSteps => "NO_STEPS",
            Self::TooManySteps { .. } => "TOO_MANY_STEPS",
            Self::EmptyName { .. } => "EMPTY_NAME",
            Self::NameTooLong { .. } => "NAME_TOO_LONG",
            Self::DuplicateName { .. } => "DUPLICATE_NAME",
            Self::UnknownStep { .. } => "UNKNOWN_STEP",
            Self::IndexOutOfRange { .. } => "INDEX_OUT_OF_RANGE",
            Self::UnknownKind { .. } => "UNKNOWN_KIND",
            Self::BadStep { .. } => "INVALID_STEP",
            Self::BadStepValue { error, .. } | Self::Time(error) => error.code(),
            Self::MinAbovePreferred { .. } => "MIN_ABOVE_PREFERRED",
            Self::ReserveBelowMin { .. } => "RESERVE_BELOW_MIN",
            Self::ZeroPreferred { .. } => "ZERO_PREFERRED",
            Self::PreferredOnFallback { .. } => "PREFERRED_ON_FALLBACK",
            Self::BadMargin { .. } => "MARGIN_OUT_OF_RANGE",
        }
    }

    /// Paths as `plan(deadline, steps, options)` names them: `steps[2].minMs`,
    /// `options.marginMs`; `name` for `p.run(name, fn)`.
    fn param(&self) -> Option<String> {
        let step = |index: &usize, field: &str| Some(format!("steps[{index}].{field}"));
        match self {
            Self::NoSteps | Self::TooManySteps { .. } => Some("steps".into()),
            Self::EmptyName { index } | Self::NameTooLong { index, .. } => step(index, "name"),
            Self::DuplicateName { second, .. } => step(second, "name"),
            Self::UnknownStep { .. } => Some("name".into()),
            Self::IndexOutOfRange { .. } => Some("index".into()),
            Self::UnknownKind { .. } => Some("kind".into()),
            Self::BadStep { index, .. } => Some(format!("steps[{index}]")),
            Self::BadStepValue { index, error, .. } => step(index, error.param().unwrap_or("minMs")),
            Self::MinAbovePreferred { index, .. } => step(index, "minMs"),
            Self::ReserveBelowMin { index, .. } => step(index, "reserveMs"),
            Self::ZeroPreferred { index, .. } | Self::PreferredOnFallback { index, .. } => step(index, "preferredMs"),
            Self::BadMargin { .. } => Some("options.marginMs".into()),
            Self::Time(e) => Described::param(e),
        }
    }

    fn kind(&self) -> crate::core::error::Kind {
        match self {
            Self::Time(e) => e.kind(),
            _ => crate::core::error::Kind::Range,
        }
    }

    fn fields(&self) -> Vec<(&'static str, f64)> {
        match self {
            Self::Time(e) => e.fields(),
            _ => Vec::new(),
        }
    }

    fn message(&self) -> Message {
        let step = |id, step: &str| Message::new(id).arg("step", step);
        match self {
            Self::NoSteps => Message::new(msg::NO_STEPS),
            Self::TooManySteps { count } => {
                Message::new(msg::TOO_MANY_STEPS).arg("max", MAX_STEPS).arg("count", *count)
            }
            Self::EmptyName { index } => Message::new(msg::EMPTY_NAME).arg("index", *index),
            Self::NameTooLong { index, len } => {
                Message::new(msg::NAME_TOO_LONG).arg("index", *index).arg("max", MAX_NAME_LEN).arg("len", *len)
            }
            Self::DuplicateName { name, first, second } => {
                Message::new(msg::DUPLICATE_NAME).arg("name", name.as_str()).arg("first", *first).arg("second", *second)
            }
            Self::UnknownStep { name } => Message::new(msg::UNKNOWN_STEP).arg("name", name.as_str()),
            Self::IndexOutOfRange { index, len } => {
                Message::new(msg::INDEX_OUT_OF_RANGE).arg("last", len.saturating_sub(1)).arg("index", *index)
            }
            Self::UnknownKind { value } => Message::new(msg::UNKNOWN_KIND).arg("value", value.as_str()),
            Self::BadStep { index, detail } => {
                Message::new(msg::BAD_STEP).arg("index", *index).arg("detail", detail.as_str())
            }
            Self::BadStepValue { step: name, error, .. } => step(msg::STEP_VALUE, name).arg("error", error.message()),
            Self::MinAbovePreferred { step: name, min_ms, preferred_ms, .. } => {
                step(msg::MIN_ABOVE_PREFERRED, name).arg("preferredMs", *preferred_ms).arg("minMs", *min_ms)
            }
            Self::ReserveBelowMin { step: name, reserve_ms, min_ms, .. } => {
                step(msg::RESERVE_BELOW_MIN, name).arg("minMs", *min_ms).arg("reserveMs", *reserve_ms)
            }
            Self::ZeroPreferred { step: name, .. } => step(msg::ZERO_PREFERRED, name),
            Self::PreferredOnFallback { step: name, .. } => step(msg::PREFERRED_ON_FALLBACK, name),
            Self::BadMargin { value } => Message::new(msg::BAD_MARGIN).arg("max", MAX_MARGIN_MS).arg("value", *value),
            Self::Time(e) => e.message(),
        }
    }
}

impl From<DeadlineError> for PlanError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// What a step is to the pipeline. Crosses to JavaScript as its name
/// (`"mandatory"`, `"optional"`, `"fallback"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum StepKind {
    /// Must run (a policy check): its reserve is held while earlier steps run;
    /// when it cannot get `minMs` it is [`Decision::Insufficient`].
    Mandatory,
    /// Improves the answer (retrieval, reranking): takes what is left and is
    /// [`Decision::Skip`]ped when that is below `minMs`. Holds nothing.
    Optional,
    /// Produces a truthful terminal response when the work runs out of time:
    /// its reserve is held like a mandatory step's, and when it runs it gets
    /// everything left; it runs whenever anything is left, even below its
    /// minimum.
    Fallback,
}

impl StepKind {
    /// Parses the JS spelling: `mandatory`, `optional` or `fallback`.
    pub fn parse(value: &str) -> Result<Self, PlanError> {
        match value {
            "mandatory" => Ok(Self::Mandatory),
            "optional" => Ok(Self::Optional),
            "fallback" => Ok(Self::Fallback),
            _ => Err(PlanError::UnknownKind { value: value.chars().take(64).collect() }),
        }
    }

    /// The JS spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mandatory => "mandatory",
            Self::Optional => "optional",
            Self::Fallback => "fallback",
        }
    }

    /// Whether later steps' reserves are held for this kind while earlier steps run.
    pub fn holds_reserve(self) -> bool {
        !matches!(self, Self::Optional)
    }
}

/// A step as the caller declares it, before validation (`steps[i]` of
/// `plan(deadline, steps)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct StepSpec {
    /// The step's name: non-empty, at most [`MAX_NAME_LEN`] bytes, unique in
    /// the plan. `run` and the trace know the step by it.
    pub name: String,
    /// The least time in which the step can plausibly succeed (its p95, not its median).
    pub min_ms: f64,
    /// The most the step should be given; absent (`None`): whatever is
    /// available. Not allowed on a fallback step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub preferred_ms: Option<f64>,
    /// Mandatory, optional or fallback: what happens when the step cannot get
    /// its minimum.
    pub kind: StepKind,
    /// What is held back for this step while earlier steps run; absent means
    /// `min_ms`. Only mandatory and fallback steps hold a reserve; on an
    /// optional step the value is validated and otherwise unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub reserve_ms: Option<f64>,
}

impl StepSpec {
    /// A step with no preferred duration and the default reserve (`min_ms`).
    pub fn new(name: impl Into<String>, kind: StepKind, min_ms: f64) -> Self {
        Self { name: name.into(), min_ms, preferred_ms: None, kind, reserve_ms: None }
    }

    /// Sets `preferred_ms`.
    pub fn preferred(mut self, ms: f64) -> Self {
        self.preferred_ms = Some(ms);
        self
    }

    /// Sets `reserve_ms`.
    pub fn reserve(mut self, ms: f64) -> Self {
        self.reserve_ms = Some(ms);
        self
    }
}

/// A validated step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    name: String,
    min_ms: f64,
    preferred_ms: Option<f64>,
    kind: StepKind,
    reserve_ms: f64,
}

/// What a binding keeps of a validated plan, per step: the step's validated
/// numbers and the time held back from it ([`Plan::held_after`]). With these
/// and the deadline, [`step_cap`] and [`decide_step`] need no `Plan`, so a
/// plan object on the host side holds no memory of the core's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct StepInfo {
    /// The step's name.
    pub name: String,
    /// The step's kind.
    pub kind: StepKind,
    /// The least time in which the step can plausibly succeed, in ms (`minMs` in JS).
    pub min_ms: f64,
    /// The most the step is given, in ms (`preferredMs` in JS); absent: whatever
    /// is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub preferred_ms: Option<f64>,
    /// What is held back for the step while earlier steps run, in ms
    /// (`reserveMs` in JS); `min_ms` unless declared.
    pub reserve_ms: f64,
    /// Time held back from this step for the later steps, in ms
    /// (`heldAfterMs` in JS): [`Plan::held_after`].
    pub held_after_ms: f64,
}

/// A validated plan as a binding keeps it: one [`StepInfo`] per step, in
/// declaration order, and the hand-off margin in use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct PlanInfo {
    /// The steps, in declaration order.
    pub steps: Vec<StepInfo>,
    /// The hand-off margin in use, in ms (`marginMs` in JS).
    pub margin_ms: f64,
}

/// Why a step did not start, for a binding: the trace outcome (`skipped` or
/// `insufficient`), the reason as a message (its template and numbers, see
/// [`crate::core::error`]), and the numbers the `InsufficientBudget` error
/// carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Refusal {
    /// `skipped` for an optional step, `insufficient` for a mandatory one.
    pub outcome: Outcome,
    /// Why the step does not start, as a template and its numbers.
    #[cfg_attr(feature = "typescript", tsify(type = "string"))]
    pub reason: Message,
    /// What the step could have had, in ms (`availableMs` in JS): 0 when the
    /// deadline has passed.
    pub available_ms: f64,
    /// The step's declared minimum, in ms (`minMs` in JS).
    pub min_ms: f64,
}

impl Step {
    /// The step's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The least time the step needs, in ms.
    pub fn min_ms(&self) -> f64 {
        self.min_ms
    }
    /// The most the step should be given, in ms; `None`: whatever is available.
    pub fn preferred_ms(&self) -> Option<f64> {
        self.preferred_ms
    }
    /// The step's kind.
    pub fn kind(&self) -> StepKind {
        self.kind
    }
    /// The reserve (default `min_ms`), held only for mandatory and fallback steps.
    pub fn reserve_ms(&self) -> f64 {
        self.reserve_ms
    }
}

/// Why an optional step did not start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SkipReason {
    /// The deadline has passed.
    Expired,
    /// What is available after the later steps' reserves is below the step's minimum.
    BelowMinimum {
        /// What is available to the step after the later steps' reserves, in ms.
        available_ms: f64,
        /// The step's minimum, in ms.
        min_ms: f64,
    },
    /// The step's circuit breaker refused it (its dependency is failing).
    CircuitOpen {
        /// When the breaker lets a probe through, in ms from the refusal.
        retry_in_ms: f64,
    },
}

impl SkipReason {
    /// The reason in words, as a message (see [`crate::core::error`]).
    pub fn message(&self) -> Message {
        match *self {
            Self::Expired => Message::new(msg::SKIP_EXPIRED),
            Self::BelowMinimum { available_ms, min_ms } => {
                Message::new(msg::SKIP_BELOW_MINIMUM).arg("availableMs", available_ms).arg("minMs", min_ms)
            }
            Self::CircuitOpen { retry_in_ms } => Message::new(msg::SKIP_CIRCUIT_OPEN).arg("retryInMs", retry_in_ms),
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message().fmt(f)
    }
}

/// What a step may do now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Start the step and abort it after `cap_ms`.
    Run {
        /// How long the step may run, in ms.
        cap_ms: f64,
        /// What is left before the deadline, in ms.
        remaining_ms: f64,
    },
    /// An optional step that must not start; the pipeline carries on.
    Skip {
        /// Why it does not start.
        reason: SkipReason,
        /// What is left before the deadline, in ms.
        remaining_ms: f64,
    },
    /// A mandatory step that cannot get its minimum: it must not start, and
    /// the host throws `InsufficientBudget`. (A fallback is never refused.)
    Insufficient {
        /// What is left before the deadline, in ms.
        remaining_ms: f64,
        /// What is available to the step after the later steps' reserves, in ms.
        available_ms: f64,
        /// The step's minimum, in ms.
        min_ms: f64,
    },
}

impl Decision {
    /// The cap for [`Decision::Run`], `0` otherwise (what the trace records).
    pub fn cap_ms(&self) -> f64 {
        match *self {
            Self::Run { cap_ms, .. } => cap_ms,
            Self::Skip { .. } | Self::Insufficient { .. } => 0.0,
        }
    }

    /// Time left before the deadline when the decision was made.
    pub fn remaining_ms(&self) -> f64 {
        match *self {
            Self::Run { remaining_ms, .. }
            | Self::Skip { remaining_ms, .. }
            | Self::Insufficient { remaining_ms, .. } => remaining_ms,
        }
    }

    /// The trace outcome of a step that did not start, `None` for [`Decision::Run`].
    pub fn outcome_if_not_run(&self) -> Option<Outcome> {
        match self {
            Self::Run { .. } => None,
            Self::Skip { .. } => Some(Outcome::Skipped),
            Self::Insufficient { .. } => Some(Outcome::Insufficient),
        }
    }
}

/// A validated pipeline plan under one deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    at: f64,
    margin_ms: f64,
    steps: Vec<Step>,
    /// `held_after[i]` = Σ (reserve + margin) over mandatory and fallback steps after `i`.
    held_after: Vec<f64>,
}

impl Plan {
    /// A plan for the deadline `at`, built at `now_ms`, with [`DEFAULT_MARGIN_MS`].
    pub fn new(at: f64, now_ms: f64, steps: Vec<StepSpec>) -> Result<Self, PlanError> {
        Self::with_margin(at, now_ms, steps, DEFAULT_MARGIN_MS)
    }

    /// A plan with an explicit hand-off margin per step start (`0 ..= MAX_MARGIN_MS`).
    /// `now_ms` is validated only: the time left never refuses a plan.
    pub fn with_margin(at: f64, now_ms: f64, specs: Vec<StepSpec>, margin_ms: f64) -> Result<Self, PlanError> {
        let at = check_ms("at", at)?;
        check_ms("now", now_ms)?;
        if !(0.0..=MAX_MARGIN_MS).contains(&margin_ms) {
            return Err(PlanError::BadMargin { value: margin_ms });
        }
        let margin_ms = margin_ms + 0.0;
        if specs.is_empty() {
            return Err(PlanError::NoSteps);
        }
        if specs.len() > MAX_STEPS {
            return Err(PlanError::TooManySteps { count: specs.len() });
        }
        let mut steps: Vec<Step> = Vec::with_capacity(specs.len());
        for (index, spec) in specs.into_iter().enumerate() {
            let step = validate_step(index, spec)?;
            if let Some(first) = steps.iter().position(|s| s.name == step.name) {
                return Err(PlanError::DuplicateName { name: step.name, first, second: index });
            }
            steps.push(step);
        }
        let n = steps.len();
        let mut held_after = vec![0.0; n];
        let mut held = 0.0;
        for i in (0..n).rev() {
            held_after[i] = held;
            if steps[i].kind.holds_reserve() {
                held += steps[i].reserve_ms + margin_ms;
            }
        }
        Ok(Self { at, margin_ms, steps, held_after })
    }

    /// The deadline instant.
    pub fn at(&self) -> f64 {
        self.at
    }

    /// The hand-off margin per step start.
    pub fn margin_ms(&self) -> f64 {
        self.margin_ms
    }

    /// The validated steps, in declaration order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// What a binding keeps of this plan (see [`StepInfo`]).
    pub fn info(&self) -> PlanInfo {
        let steps = self
            .steps
            .iter()
            .zip(&self.held_after)
            .map(|(s, &held_after_ms)| StepInfo {
                name: s.name.clone(),
                kind: s.kind,
                min_ms: s.min_ms,
                preferred_ms: s.preferred_ms,
                reserve_ms: s.reserve_ms,
                held_after_ms,
            })
            .collect();
        PlanInfo { steps, margin_ms: self.margin_ms }
    }

    /// The index of the step called `name`.
    pub fn index_of(&self, name: &str) -> Result<usize, PlanError> {
        self.steps
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| PlanError::UnknownStep { name: name.chars().take(MAX_NAME_LEN).collect() })
    }

    /// Time held back from step `index`: each later held step's reserve and hand-off margin.
    pub fn held_after(&self, index: usize) -> Result<f64, PlanError> {
        self.held_after.get(index).copied().ok_or(PlanError::IndexOutOfRange { index, len: self.steps.len() })
    }

    /// The admission decision and cap for the step called `name` at `now_ms`.
    pub fn decide(&self, name: &str, now_ms: f64) -> Result<Decision, PlanError> {
        self.decide_index(self.index_of(name)?, now_ms)
    }

    /// As [`Plan::decide`], by index (the binding maps names once).
    pub fn decide_index(&self, index: usize, now_ms: f64) -> Result<Decision, PlanError> {
        let step = self.steps.get(index).ok_or(PlanError::IndexOutOfRange { index, len: self.steps.len() })?;
        decide_step(step.kind, step.min_ms, step.preferred_ms, self.held_after[index], self.at, now_ms)
    }
}

/// The decision of [`Plan::decide_index`] from a step's validated parts and
/// its [`Plan::held_after`]: the same arithmetic, for a binding that keeps a
/// plan's validated numbers on its own side instead of a `Plan` (the JS
/// binding does, so a plan holds no Wasm memory). `min_ms`, `preferred_ms`,
/// `held_ms` and `at` must come from a [`Plan`]; only `now_ms` is checked.
pub fn decide_step(
    kind: StepKind,
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<Decision, PlanError> {
    let now = check_ms("now", now_ms)?;
    let remaining = if at > now { at - now } else { 0.0 };
    let available = if remaining > held_ms { remaining - held_ms } else { 0.0 };
    let cap = match (kind, preferred_ms) {
        (StepKind::Fallback, _) | (_, None) => available,
        (_, Some(p)) => p.min(available),
    };
    // A fallback runs in whatever is left, if only nothing (module doc); the
    // others need their minimum.
    if kind == StepKind::Fallback || (cap + ADMIT_EPSILON_MS >= min_ms && cap > 0.0) {
        return Ok(Decision::Run { cap_ms: cap, remaining_ms: remaining });
    }
    Ok(match kind {
        StepKind::Optional => Decision::Skip {
            reason: if remaining <= 0.0 {
                SkipReason::Expired
            } else {
                SkipReason::BelowMinimum { available_ms: available, min_ms }
            },
            remaining_ms: remaining,
        },
        StepKind::Mandatory | StepKind::Fallback => {
            Decision::Insufficient { remaining_ms: remaining, available_ms: available, min_ms }
        }
    })
}

/// The cap [`decide_step`] gives a step: the one number a binding's hot path
/// needs per step, from a [`StepInfo`]'s numbers. `0` means an optional or
/// mandatory step must not start, and a fallback runs with nothing left (an
/// aborted signal). Admission distinguishes only fallback steps (always
/// admitted); optional and mandatory steps differ in what a refusal is, which
/// [`refusal`] says.
pub fn step_cap(
    fallback: bool,
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<f64, PlanError> {
    let kind = if fallback { StepKind::Fallback } else { StepKind::Mandatory };
    decide_step(kind, min_ms, preferred_ms, held_ms, at, now_ms).map(|d| d.cap_ms())
}

/// Why an optional step with these numbers is skipped at `now_ms` (the
/// reason of [`refusal`]), or `None` when it would start: what a binding's
/// skip needs, without building a [`Refusal`] (a skip is a normal outcome,
/// on the request's path).
pub fn skip_reason(
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<Option<SkipReason>, PlanError> {
    Ok(match decide_step(StepKind::Optional, min_ms, preferred_ms, held_ms, at, now_ms)? {
        Decision::Skip { reason, .. } => Some(reason),
        _ => None,
    })
}

/// Why `step` does not start at `now_ms` (the rare path after [`step_cap`]
/// answered `0`); `None` when it would start.
pub fn refusal(step: &StepInfo, at: f64, now_ms: f64) -> Result<Option<Refusal>, PlanError> {
    let decision = decide_step(step.kind, step.min_ms, step.preferred_ms, step.held_after_ms, at, now_ms)?;
    Ok(match decision {
        Decision::Run { .. } => None,
        Decision::Skip { reason, .. } => Some(Refusal {
            outcome: Outcome::Skipped,
            reason: reason.message(),
            available_ms: match reason {
                SkipReason::BelowMinimum { available_ms, .. } => available_ms,
                SkipReason::Expired | SkipReason::CircuitOpen { .. } => 0.0,
            },
            min_ms: step.min_ms,
        }),
        Decision::Insufficient { available_ms, min_ms, remaining_ms } => Some(Refusal {
            outcome: Outcome::Insufficient,
            reason: DeadlineError::Insufficient { remaining_ms, min_ms }.message(),
            available_ms,
            min_ms,
        }),
    })
}

fn validate_step(index: usize, spec: StepSpec) -> Result<Step, PlanError> {
    let StepSpec { name, min_ms, preferred_ms, kind, reserve_ms } = spec;
    if name.is_empty() {
        return Err(PlanError::EmptyName { index });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(PlanError::NameTooLong { index, len: name.len() });
    }
    let bad = |error: DeadlineError| PlanError::BadStepValue { index, step: name.clone(), error };
    let min_ms = check_ms("minMs", min_ms).map_err(bad)?;
    let preferred_ms = match preferred_ms {
        Some(p) => Some(check_ms("preferredMs", p).map_err(bad)?),
        None => None,
    };
    let reserve_ms = match reserve_ms {
        Some(r) => check_ms("reserveMs", r).map_err(bad)?,
        None => min_ms,
    };
    if let Some(preferred_ms) = preferred_ms {
        if kind == StepKind::Fallback {
            return Err(PlanError::PreferredOnFallback { index, step: name });
        }
        if preferred_ms == 0.0 {
            return Err(PlanError::ZeroPreferred { index, step: name });
        }
        if min_ms > preferred_ms {
            return Err(PlanError::MinAbovePreferred { index, step: name, min_ms, preferred_ms });
        }
    }
    if kind.holds_reserve() && reserve_ms < min_ms {
        return Err(PlanError::ReserveBelowMin { index, step: name, reserve_ms, min_ms });
    }
    Ok(Step { name, min_ms, preferred_ms, kind, reserve_ms })
}

pub mod trace;
pub use trace::{Outcome, TraceRecord};

pub mod stream;
pub use stream::{
    fallback_answer, stream_verdict, FallbackAnswer, FallbackCause, FallbackScope, StreamEnd, StreamNext, StreamVerdict,
};

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
