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
//! held(i)   = Σ reserve(j) over mandatory and fallback steps j declared after i
//!           + margin × (n − 1 − i)                (one hand-off per later step)
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
//! A fallback step is admitted whenever `cap > 0`, even below its `minMs`.
//! It is the truthful answer of last resort: refusing it because the step
//! before ended late would turn a degraded answer into no answer at all. Its
//! `minMs` and `reserveMs` size what is *held* for it; when it runs, it gets
//! whatever is left of that, however late the previous step ended, until the
//! deadline itself has passed.
//!
//! # A shortage is never an error
//! A plan is created whatever the time left, even none: a short incoming
//! deadline (a propagated `grpc-timeout: 50m`) is a runtime condition, not a
//! programmer's mistake. The shortage shows where it can be handled, when a
//! step is decided: optional steps are skipped, mandatory steps are
//! insufficient, and the fallback runs with what is left. Construction
//! refuses only steps that could never be valid at any budget.
//!
//! # The hand-off margin
//! Arithmetic alone does not protect the tail. A step aborted exactly at its
//! cap ends a little *after* its cap: the host timer fires late (armed in
//! whole milliseconds, behind whatever task holds the event loop), the abort
//! travels through promise callbacks, and the next step's bookkeeping runs
//! before it starts. Each of those costs time that was never in any cap. The
//! plan therefore holds `margin` (default [`DEFAULT_MARGIN_MS`]) for every
//! step start still to come, including the first.
//!
//! With that margin, a short induction gives invariant 3: if the plan's
//! reserves plus `margin × n` fit in the budget and every step ends at most
//! `margin` after its cap (or is skipped within `margin`), then at the start
//! of step `j` at least `Σ held reserves from j on + margin × (n − 1 − j)`
//! remains, so each mandatory or fallback step is admitted with at least
//! `min(preferred, reserve)`. When a step ends later than that, the margin
//! is not a promise any more, but the fallback still runs (see above).
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
//! # Invariants (each is a property test in this module)
//! 1. An admitted step's cap never exceeds `remaining − held(i)`, nor its
//!    preferred duration, and is above zero and (except a fallback's) at
//!    least its minimum.
//! 2. Whether a plan can be built never depends on the time left: valid
//!    steps give a plan at any budget, an expired one included.
//! 3. If the reserves plus `margin × n` fit in the budget and every step ends
//!    at most `margin` after its cap (late abort plus hand-off), every
//!    mandatory and fallback step is admitted with a cap of at least
//!    `min(preferred, reserve)`. However late the steps before it end, a
//!    fallback step is admitted with everything left after later held steps
//!    whenever that is above zero.
//! 4. In such a sequential run no step's start plus cap passes the deadline,
//!    and when every step consumes its whole cap the caps sum to at most the
//!    budget (a step that ends early hands its slack to the next one).
//! 5. No decision or trace record contains NaN, an infinity or a negative
//!    duration.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError, Ms};
use crate::core::error::Described;

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

/// Why a plan or a decision was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// The plan has no steps. Declare at least one.
    NoSteps,
    /// More than [`MAX_STEPS`] steps. Merge steps or split the pipeline.
    TooManySteps { count: usize },
    /// Step number `index` (from 0) has an empty name. Give every step a name.
    EmptyName { index: usize },
    /// A name is longer than [`MAX_NAME_LEN`] bytes. Use a shorter name.
    NameTooLong { index: usize, len: usize },
    /// Two steps share a name. Names identify steps in `run` and the trace.
    DuplicateName { name: String, first: usize, second: usize },
    /// `run` asked for a step the plan does not declare.
    UnknownStep { name: String },
    /// A step index outside the plan.
    IndexOutOfRange { index: usize, len: usize },
    /// A step kind other than `mandatory`, `optional` or `fallback`.
    UnknownKind { value: String },
    /// Step number `index` is not a step object (what a binding reports
    /// when the step's fields cannot be read at all).
    BadStep { index: usize, message: String },
    /// A step's duration (`minMs`, `preferredMs`, `reserveMs`) is NaN,
    /// infinite, negative or past [`MAX_MS`](crate::core::deadline::MAX_MS).
    BadStepValue { index: usize, step: String, error: DeadlineError },
    /// `minMs` is above `preferredMs`: the step could never be admitted at its
    /// preferred size. Lower `minMs` or raise `preferredMs`.
    MinAbovePreferred { index: usize, step: String, min_ms: f64, preferred_ms: f64 },
    /// A mandatory or fallback step reserves less than its minimum, so holding
    /// the reserve would not guarantee it can start. Raise `reserveMs`.
    ReserveBelowMin { index: usize, step: String, reserve_ms: f64, min_ms: f64 },
    /// `preferredMs` is 0: the step could never be given any time. Remove it
    /// to take whatever is available, or give a positive duration.
    ZeroPreferred { index: usize, step: String },
    /// A fallback step gets everything left when it runs, so a preferred
    /// duration contradicts it. Remove `preferredMs` or make the step mandatory.
    PreferredOnFallback { index: usize, step: String },
    /// The margin is outside `0 ..= MAX_MARGIN_MS`.
    BadMargin { value: f64 },
    /// A time argument (`at`, `now`, trace values) is invalid.
    Time(DeadlineError),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSteps => write!(f, "'steps' must contain at least one step: current value is empty"),
            Self::TooManySteps { count } => {
                write!(f, "'steps' must contain at most {MAX_STEPS} steps: current value has {count}")
            }
            Self::EmptyName { index } => write!(f, "step {index} must have a non-empty 'name'"),
            Self::NameTooLong { index, len } => write!(
                f,
                "step {index} must have a 'name' of at most {MAX_NAME_LEN} bytes: current value has {len}"
            ),
            Self::DuplicateName { name, first, second } => write!(
                f,
                "step names must be unique: '{name}' is used by steps {first} and {second}"
            ),
            Self::UnknownStep { name } => write!(f, "the plan has no step named '{name}'"),
            Self::IndexOutOfRange { index, len } => {
                write!(f, "step index must be between 0 and {}: current value is {index}", len.saturating_sub(1))
            }
            Self::UnknownKind { value } => write!(
                f,
                "'kind' must be one of mandatory, optional, fallback: current value is '{value}'"
            ),
            Self::BadStep { index, message } => write!(f, "step {index}: {message}"),
            Self::BadStepValue { step, error, .. } => write!(f, "step '{step}': {error}"),
            Self::MinAbovePreferred { step, min_ms, preferred_ms, .. } => write!(
                f,
                "step '{step}': 'minMs' must not exceed 'preferredMs' ({preferred_ms}): current value is {min_ms}"
            ),
            Self::ReserveBelowMin { step, reserve_ms, min_ms, .. } => write!(
                f,
                "step '{step}': 'reserveMs' must be at least 'minMs' ({min_ms}) for mandatory and fallback steps: current value is {reserve_ms}"
            ),
            Self::ZeroPreferred { step, .. } => {
                write!(f, "step '{step}': 'preferredMs' must be above 0 milliseconds: current value is 0")
            }
            Self::PreferredOnFallback { step, .. } => write!(
                f,
                "step '{step}': a fallback step gets everything left, so 'preferredMs' must not be set"
            ),
            Self::BadMargin { value } => write!(
                f,
                "'marginMs' must be between 0 and {MAX_MARGIN_MS} milliseconds: current value is {value}"
            ),
            Self::Time(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PlanError {}

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
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct StepSpec {
    pub name: String,
    /// The least time in which the step can plausibly succeed (its p95, not its median).
    pub min_ms: f64,
    /// The most the step should be given; absent (`None`): whatever is
    /// available. Not allowed on a fallback step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub preferred_ms: Option<f64>,
    pub kind: StepKind,
    /// What is held back for this step while earlier steps run; absent means
    /// `min_ms`. Only mandatory and fallback steps hold a reserve; on an
    /// optional step the value is validated and otherwise unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
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
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct StepInfo {
    pub name: String,
    pub kind: StepKind,
    pub min_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub preferred_ms: Option<f64>,
    pub reserve_ms: f64,
    pub held_after_ms: f64,
}

/// A validated plan as a binding keeps it: one [`StepInfo`] per step, in
/// declaration order, and the hand-off margin in use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct PlanInfo {
    pub steps: Vec<StepInfo>,
    pub margin_ms: f64,
}

/// Why a step did not start, for a binding: the trace outcome (`skipped` or
/// `insufficient`), the reason in words, and the numbers the
/// `InsufficientBudget` error carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Refusal {
    pub outcome: Outcome,
    pub reason: String,
    pub available_ms: f64,
    pub min_ms: f64,
}

impl Step {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn min_ms(&self) -> f64 {
        self.min_ms
    }
    pub fn preferred_ms(&self) -> Option<f64> {
        self.preferred_ms
    }
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
    BelowMinimum { available_ms: f64, min_ms: f64 },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Expired => write!(f, "the deadline has passed"),
            Self::BelowMinimum { available_ms, min_ms } => write!(
                f,
                "only {} ms are available after the reserve for later steps but this step needs at least {} ms",
                Ms(available_ms),
                Ms(min_ms)
            ),
        }
    }
}

/// What a step may do now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Start the step and abort it after `cap_ms`.
    Run { cap_ms: f64, remaining_ms: f64 },
    /// An optional step that must not start; the pipeline carries on.
    Skip { reason: SkipReason, remaining_ms: f64 },
    /// A mandatory step that cannot get its minimum, or a fallback step with
    /// nothing left: it must not start, and JS throws `InsufficientBudget`.
    Insufficient { remaining_ms: f64, available_ms: f64, min_ms: f64 },
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
    /// `held_after[i]` = Σ reserves of mandatory and fallback steps after `i`
    /// plus `margin × (n − 1 − i)`.
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
            // `n − 1 − i` ≤ MAX_STEPS, so the conversion is exact.
            held_after[i] = held + margin_ms * (n - 1 - i) as f64;
            if steps[i].kind.holds_reserve() {
                held += steps[i].reserve_ms;
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

    /// Time held back from step `index`: later reserves plus later hand-off margins.
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
    // A fallback runs in whatever is left (module doc); the others need their minimum.
    let enough = kind == StepKind::Fallback || cap + ADMIT_EPSILON_MS >= min_ms;
    if enough && cap > 0.0 {
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

/// The cap [`decide_step`] gives a step, or `0` when it must not start: the
/// one number a binding's hot path needs per step, from a [`StepInfo`]'s
/// numbers. Admission distinguishes only fallback steps (which run below
/// their minimum); optional and mandatory steps differ in what a refusal is,
/// which [`refusal`] says.
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

/// Why `step` does not start at `now_ms` (the rare path after [`step_cap`]
/// answered `0`); `None` when it would start.
pub fn refusal(step: &StepInfo, at: f64, now_ms: f64) -> Result<Option<Refusal>, PlanError> {
    let decision = decide_step(step.kind, step.min_ms, step.preferred_ms, step.held_after_ms, at, now_ms)?;
    Ok(match decision {
        Decision::Run { .. } => None,
        Decision::Skip { reason, .. } => Some(Refusal {
            outcome: Outcome::Skipped,
            reason: reason.to_string(),
            available_ms: match reason {
                SkipReason::BelowMinimum { available_ms, .. } => available_ms,
                SkipReason::Expired => 0.0,
            },
            min_ms: step.min_ms,
        }),
        Decision::Insufficient { available_ms, min_ms, remaining_ms } => Some(Refusal {
            outcome: Outcome::Insufficient,
            reason: DeadlineError::Insufficient { remaining_ms, min_ms }.to_string(),
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

/// How a step ended, as recorded in the trace. Crosses to JavaScript as its
/// name ([`Outcome::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum Outcome {
    /// The step resolved.
    Ok,
    /// The step threw (not because of an abort).
    Error,
    /// An optional step was not started.
    Skipped,
    /// A mandatory or fallback step could not get its minimum and was not started.
    Insufficient,
    /// The deadline itself passed while the step ran, and it was aborted.
    Deadline,
    /// A parent signal (a cancelled client) aborted the step.
    Aborted,
    /// The step's own cap fired while the deadline still had time: it was
    /// aborted with `StepTimeout`.
    Timeout,
}

impl Outcome {
    /// The JS spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Skipped => "skipped",
            Self::Insufficient => "insufficient",
            Self::Deadline => "deadline",
            Self::Aborted => "aborted",
            Self::Timeout => "timeout",
        }
    }

    /// The outcome of a step that started. A parent abort wins over the cap
    /// (the client left, whatever the timer did), the cap wins over the error
    /// it caused, and a step that resolved is `ok` even if a timer fired late.
    /// A cap that is the deadline's own instant (a fallback's, or a step
    /// given everything left) is the deadline; an earlier cap is a timeout.
    pub fn after_run(resolved: bool, cap_fired: bool, cap_is_deadline: bool, parent_aborted: bool) -> Self {
        match (resolved, parent_aborted, cap_fired) {
            (true, _, _) => Self::Ok,
            (false, true, _) => Self::Aborted,
            (false, false, true) if cap_is_deadline => Self::Deadline,
            (false, false, true) => Self::Timeout,
            (false, false, false) => Self::Error,
        }
    }
}

/// One line of a pipeline's trace: what the step was given and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct TraceRecord {
    pub step: String,
    pub remaining_at_start_ms: f64,
    pub cap_ms: f64,
    pub elapsed_ms: f64,
    pub outcome: Outcome,
}

impl TraceRecord {
    /// A validated record: every duration finite, `0 ..= MAX_MS`.
    pub fn new(
        step: impl Into<String>,
        remaining_at_start_ms: f64,
        cap_ms: f64,
        elapsed_ms: f64,
        outcome: Outcome,
    ) -> Result<Self, PlanError> {
        Ok(Self {
            step: step.into(),
            remaining_at_start_ms: check_ms("remainingAtStartMs", remaining_at_start_ms)?,
            cap_ms: check_ms("capMs", cap_ms)?,
            elapsed_ms: check_ms("elapsedMs", elapsed_ms)?,
            outcome,
        })
    }
}

#[cfg(test)]
mod tests {
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
        // Past the deadline, optional steps are skipped and held steps are insufficient.
        assert!(matches!(p.decide("retrieve", 9_000.0), Ok(Decision::Skip { reason: SkipReason::Expired, .. })));
        assert!(matches!(p.decide("respond", 8_000.0), Ok(Decision::Insufficient { .. })));
        assert!(matches!(p.decide("auth", 7_900.0), Ok(Decision::Insufficient { .. })));
    }

    #[test]
    fn a_late_step_leaves_the_fallback_whatever_is_left() {
        let p = seed_002(DEFAULT_MARGIN_MS);
        // Generation ended 60 ms past its cap (far more than the margin):
        // 445 ms remain of the 505 held, below the fallback's 500 ms minimum.
        assert_eq!(p.decide("respond", 7_555.0), Ok(Decision::Run { cap_ms: 445.0, remaining_ms: 445.0 }));
        // Down to the last sliver of time it still runs; at the deadline it cannot.
        assert_eq!(p.decide("respond", 7_999.5), Ok(Decision::Run { cap_ms: 0.5, remaining_ms: 0.5 }));
        assert_eq!(
            p.decide("respond", 8_000.0),
            Ok(Decision::Insufficient { remaining_ms: 0.0, available_ms: 0.0, min_ms: 500.0 })
        );
        // A mandatory step below its minimum is still refused.
        let m = Plan::new(1_000.0, 0.0, vec![opt("a", 10.0), man("check", 200.0)]).unwrap();
        assert!(matches!(m.decide("check", 900.0), Ok(Decision::Insufficient { .. })));
    }

    #[test]
    fn short_budgets_build_a_plan_and_degrade_when_decided() {
        // A propagated 50 ms against 180 ms of reserves.
        let p = Plan::new(
            50.0,
            0.0,
            vec![opt("retrieve", 20.0).preferred(200.0), man("check", 80.0), fb("respond", 100.0)],
        )
        .unwrap();
        assert!(matches!(p.decide("retrieve", 0.0), Ok(Decision::Skip { .. })));
        assert!(matches!(p.decide("check", 0.0), Ok(Decision::Insufficient { .. })));
        assert_eq!(p.decide("respond", 0.0), Ok(Decision::Run { cap_ms: 50.0, remaining_ms: 50.0 }));
        // All optional with 12 ms left: three 5 ms margins do not fit, still a plan.
        let q = Plan::new(12.0, 0.0, vec![opt("a", 1.0), opt("b", 1.0), opt("c", 1.0)]).unwrap();
        assert_eq!(q.decide("a", 0.0).unwrap().cap_ms(), 2.0);
        assert_eq!(q.decide("c", 0.0).unwrap().cap_ms(), 12.0);
        // An expired deadline with a single fallback step.
        let r = Plan::new(100.0, 250.0, vec![fb("respond", 10.0)]).unwrap();
        assert!(matches!(r.decide("respond", 250.0), Ok(Decision::Insufficient { .. })));
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
                assert_eq!(cap == 0.0, refusal.is_some());
            }
        }
        // Generation after a slow retrieval: skipped, with the core's reason and the numbers.
        let r = refusal(&info.steps[2], p.at(), 7_400.0).unwrap().unwrap();
        assert_eq!((r.outcome, r.available_ms, r.min_ms), (Outcome::Skipped, 95.0, 1_000.0));
        assert!(r.reason.starts_with("only 95 ms are available"), "{}", r.reason);
        let r = refusal(&info.steps[3], p.at(), 8_000.0).unwrap().unwrap();
        assert_eq!((r.outcome, r.available_ms, r.min_ms), (Outcome::Insufficient, 0.0, 500.0));
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

    #[test]
    fn trace_records_are_validated() {
        let r = TraceRecord::new("gen", 6_000.0, 5_495.0, 812.5, Outcome::Deadline).unwrap();
        assert_eq!((r.step.as_str(), r.cap_ms, r.outcome.as_str()), ("gen", 5_495.0, "deadline"));
        assert!(TraceRecord::new("a", f64::NAN, 0.0, 0.0, Outcome::Ok).is_err());
        assert!(TraceRecord::new("a", 0.0, 0.0, -1.0, Outcome::Ok).is_err());
    }

    #[test]
    fn outcome_after_run() {
        assert_eq!(Outcome::after_run(true, true, false, true), Outcome::Ok);
        assert_eq!(Outcome::after_run(false, true, false, true), Outcome::Aborted);
        assert_eq!(Outcome::after_run(false, true, true, false), Outcome::Deadline);
        assert_eq!(Outcome::after_run(false, true, false, false), Outcome::Timeout);
        assert_eq!(Outcome::after_run(false, false, false, false), Outcome::Error);
        let all = [
            Outcome::Ok,
            Outcome::Error,
            Outcome::Skipped,
            Outcome::Insufficient,
            Outcome::Deadline,
            Outcome::Aborted,
            Outcome::Timeout,
        ];
        let names: Vec<_> = all.iter().map(|o| o.as_str()).collect();
        assert_eq!(names, ["ok", "error", "skipped", "insufficient", "deadline", "aborted", "timeout"]);
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
                        prop_assert!(cap_ms.is_finite() && cap_ms > 0.0);
                        // A fallback runs in whatever is left; the others get their minimum.
                        prop_assert!(step.kind() == StepKind::Fallback || cap_ms + ADMIT_EPSILON_MS >= step.min_ms());
                        prop_assert!(cap_ms <= remaining - p.held_after(i).unwrap());
                        if let Some(pref) = step.preferred_ms() { prop_assert!(cap_ms <= pref); }
                    }
                    Decision::Skip { reason, .. } => {
                        prop_assert_eq!(step.kind(), StepKind::Optional);
                        if let SkipReason::BelowMinimum { available_ms, min_ms } = reason {
                            prop_assert!(available_ms >= 0.0 && (available_ms + ADMIT_EPSILON_MS < min_ms || available_ms == 0.0));
                        }
                    }
                    Decision::Insufficient { available_ms, .. } => {
                        prop_assert!(step.kind().holds_reserve() && available_ms >= 0.0);
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
        /// fallback is admitted with everything left after later held steps
        /// whenever that is above zero, and refused only when it is not.
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
                    Decision::Run { cap_ms, .. } => prop_assert!(left > 0.0 && cap_ms == left),
                    Decision::Insufficient { .. } => prop_assert!(left <= 0.0),
                    Decision::Skip { .. } => prop_assert!(false, "a fallback was skipped"),
                }
            }
        }

        /// Invariants 3 and 4: a sequential run where every step ends at most
        /// `margin` after its cap (or takes up to `margin` to skip) admits
        /// every mandatory and fallback step with at least
        /// min(preferred, reserve), and never runs past the deadline.
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
            // The guarantee holds for plans whose reserves and margins fit.
            if held + margin * p.steps().len() as f64 > budget {
                return Ok(());
            }
            // A delay of up to one margin before the first step starts, too.
            let mut now = start + margin * late_frac[8];
            let mut caps = 0.0;
            let mut full = true;
            for (i, step) in p.steps().iter().enumerate() {
                // Invariant (induction hypothesis) checked directly, too.
                let left = p.at() - now;
                prop_assert!(left + 1e-6 >= held_from(&p, i) + margin * (p.steps().len() - 1 - i) as f64);
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
                    Decision::Skip { .. } => now += margin * late_frac[i],
                    // A zero reserve guarantees nothing: with the budget spent to
                    // the last bit there is no time to start in.
                    Decision::Insufficient { .. } if step.reserve_ms() == 0.0 => now += margin * late_frac[i],
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
}
