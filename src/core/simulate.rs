//! Policy simulation: what a per-attempt timeout and a number of retries do to
//! end-to-end latency, failures and load, before anyone changes production.
//!
//! # Why simulate
//! A timeout's effect depends on which side of the distribution's shape it
//! falls. Seed 003's dependency has a lognormal body (median 40 ms) and an
//! independent 0.5% slow tail (0.3–1.5 s): a timeout at p99 plus one retry
//! turns the 1.2 s tail into a 160 ms one, while waiting up to p99.9 keeps it.
//! Percentile arithmetic cannot show that; a few hundred thousand simulated
//! calls can, deterministically, in a few milliseconds.
//!
//! # Model
//! - Each attempt's latency is an independent draw: with probability
//!   `tail.share` uniform in `tail.lo_ms ..= tail.hi_ms`, otherwise
//!   lognormal with median `body.median_ms` and log-standard-deviation
//!   `body.sigma`.
//! - A policy `{ timeout_ms: T, retries: r }` makes up to `r + 1` attempts.
//!   An attempt whose draw is `<= T` succeeds; otherwise the caller waits `T`
//!   and tries again.
//! - **Convention for failures:** a call fails when every attempt timed out,
//!   and its end-to-end latency is the time the caller actually spent,
//!   `(r + 1) · T`. Failed calls stay in the percentiles: a caller who waited
//!   1.3 s for an error waited 1.3 s.
//! - Common random numbers: attempt `k` of call `i` is the same draw under
//!   every policy, and attempt 0 is the scenario's own sample. A timeout at the
//!   scenario's measured p99 therefore times out exactly 1% of first attempts,
//!   and differences between policies are not sampling noise.
//! - Percentiles use the rank definition of [`crate::core::sketch::rank_index`]
//!   over exact sorted values (no sketch error).
//!
//! # Seed 003, reproduced (`tests::seed_003_table`)
//! With `sigma = 0.348` (the value at which the *mixture*, tail included, has
//! p90 = 63 ms and p99 = 98 ms; 0.3545 fits the body alone) and 200 000 calls,
//! every figure of the seed's table is reproduced within sampling noise (the
//! e2e p99 of "p99 timeout + 1 retry" is the timeout itself here, 1 ms above
//! the seed's, because common random numbers time out exactly 1% of first
//! attempts) but one: for "p99.9 timeout, no retry" the seed reports an end-to-end p99.9 of
//! 1 188 ms. With failed calls counted at their timeout the model gives
//! ≈ 1 250 ms (0.1% of calls sit at or just below the 1 262 ms timeout), and
//! with failed calls dropped it gives ≈ 1 010 ms; 1 188 lies 3–4 standard
//! deviations from both, so no convention reproduces it and this module keeps
//! the honest one. The conclusion (waiting ≈ 1.2 s versus 160 ms with one
//! retry) is unchanged.
//!
//! # Invariants (tested below)
//! 1. The same scenario and seed give bit-identical results.
//! 2. Failure rates are in `0..=1`, extra load in `0..=retries`, and more
//!    retries never raise the failure rate (common random numbers).
//! 3. A timeout at or above every draw never fails and adds no load.
//! 4. Invalid parameters are errors naming the parameter.

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS};
use crate::core::error::{whole_code, Described, Message};
use crate::core::rng::{mix64, SplitMix64, GOLDEN_GAMMA};
use crate::core::sketch::rank_index;

/// The most calls one simulation runs (16 MB of `f64` for the sort).
pub const MAX_CALLS: usize = 2_000_000;
/// The most retries a policy may make.
pub const MAX_RETRIES: u32 = 10;
/// The most policies one simulation compares.
pub const MAX_POLICIES: usize = 32;
/// The largest accepted lognormal sigma.
pub const MAX_SIGMA: f64 = 4.0;

/// The fast population: lognormal.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Body {
    /// The body's median, in ms (`medianMs` in JS): above 0.
    pub median_ms: f64,
    /// The lognormal's shape (the standard deviation of `ln ms`):
    /// `0 ..= MAX_SIGMA`, 0.3–0.6 is typical.
    pub sigma: f64,
}

/// The slow population: uniform between `lo_ms` and `hi_ms`, drawn with
/// probability `share`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Tail {
    /// The probability that a call is drawn from the tail, in `[0, 1]`
    /// (0.005 is 0.5%).
    pub share: f64,
    /// The tail's lower bound, in ms (`loMs` in JS).
    pub lo_ms: f64,
    /// The tail's upper bound, in ms (`hiMs` in JS): at least `lo_ms`.
    pub hi_ms: f64,
}

/// A latency distribution and how many calls to draw from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// The fast population.
    pub body: Body,
    /// The slow population (share 0 for none).
    pub tail: Tail,
    /// How many calls to draw: `1 ..= MAX_CALLS`.
    pub n: usize,
    /// The seed of the draw: the same seed gives the same calls.
    pub seed: u64,
}

impl Scenario {
    /// Seed 003's dependency: median 40 ms, 0.5% tail of 0.3–1.5 s, 200 000
    /// calls.
    pub fn seed_003() -> Self {
        Self {
            body: Body { median_ms: 40.0, sigma: 0.348 },
            tail: Tail { share: 0.005, lo_ms: 300.0, hi_ms: 1500.0 },
            n: 200_000,
            seed: 1,
        }
    }
}

/// A per-attempt timeout and how many times a timed-out call is retried.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Policy {
    /// How long an attempt may run before it is abandoned, in ms (`timeoutMs` in JS).
    pub timeout_ms: f64,
    /// How many times a timed-out call is tried again: `0 ..= MAX_RETRIES`.
    pub retries: u32,
}

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Percentiles {
    /// The median, in ms (`p50Ms` in JS).
    pub p50_ms: f64,
    /// The 90th percentile, in ms (`p90Ms` in JS).
    pub p90_ms: f64,
    /// The 99th percentile, in ms (`p99Ms` in JS).
    pub p99_ms: f64,
    /// The 99.9th percentile, in ms (`p999Ms` in JS).
    pub p999_ms: f64,
}

/// What one policy did to the scenario's calls.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct PolicyResult {
    /// The policy simulated; its fields appear inline in JS (`timeoutMs`, `retries`).
    #[serde(flatten)]
    pub policy: Policy,
    /// End-to-end percentiles over all calls (failed calls at the time spent).
    pub p50_ms: f64,
    /// End-to-end 99th percentile, in ms (`p99Ms` in JS).
    pub p99_ms: f64,
    /// End-to-end 99.9th percentile, in ms (`p999Ms` in JS).
    pub p999_ms: f64,
    /// Share of calls whose every attempt timed out.
    pub failure_rate: f64,
    /// Extra attempts per call: `attempts / n − 1`.
    pub extra_load: f64,
    /// Share of first attempts that timed out: the false-timeout rate of
    /// `timeout_ms` on healthy calls.
    pub first_attempt_timeout_rate: f64,
}

/// A scenario's own percentiles and one result per policy, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify), tsify(hashmap_as_object))]
pub struct Simulation {
    /// The percentiles of the calls without any timeout.
    pub scenario: Percentiles,
    /// One result per policy, in the order given.
    pub policies: Vec<PolicyResult>,
}

/// Calls a [`ScenarioSpec`] draws unless it says otherwise.
pub const DEFAULT_CALLS: f64 = 200_000.0;
/// The seed a [`ScenarioSpec`] uses unless it says otherwise.
pub const DEFAULT_SEED: f64 = 1.0;

/// A [`Scenario`] as a JS caller writes it (`Scenario` in js/simulate.d.ts):
/// numbers as JavaScript has them, the tail and the counts optional.
/// [`ScenarioSpec::scenario`] validates it.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct ScenarioSpec {
    /// The fast population.
    pub body: Body,
    /// No tail when absent.
    #[serde(default)]
    pub tail: Option<Tail>,
    /// Calls, a whole number `1 ..= MAX_CALLS`; [`DEFAULT_CALLS`] when absent.
    #[serde(default)]
    pub n: Option<f64>,
    /// A whole number `0 ..= 2^53 − 1`; [`DEFAULT_SEED`] when absent.
    #[serde(default)]
    pub seed: Option<f64>,
}

/// A [`Policy`] as a JS caller writes it (`Policy` in js/simulate.d.ts).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct PolicySpec {
    /// How long an attempt may run, in ms (`timeoutMs` in JS); NaN when
    /// `timeout_name` says it instead.
    pub timeout_ms: f64,
    /// The timeout as a percentile of the scenario ([`resolve_timeout`]):
    /// js/simulate.js passes a string `timeoutMs` here.
    #[serde(default)]
    pub timeout_name: Option<String>,
    /// A whole number `0 ..= MAX_RETRIES`; 0 when absent.
    #[serde(default)]
    pub retries: Option<f64>,
}

/// `value` if it is a whole number `lo ..= hi`.
fn whole(param: &'static str, index: Option<usize>, value: f64, lo: f64, hi: f64) -> Result<f64, SimulateError> {
    if !(lo..=hi).contains(&value) || value.fract() != 0.0 {
        return Err(SimulateError::Whole { param, index, value, lo, hi });
    }
    Ok(value)
}

impl ScenarioSpec {
    /// The scenario, with the counts checked (the distribution is checked by
    /// [`simulate`]).
    pub fn scenario(&self) -> Result<Scenario, SimulateError> {
        let n = whole("n", None, self.n.unwrap_or(DEFAULT_CALLS), 1.0, MAX_CALLS as f64)?;
        let seed = whole("seed", None, self.seed.unwrap_or(DEFAULT_SEED), 0.0, MAX_MS)?;
        Ok(Scenario {
            body: self.body,
            tail: self.tail.unwrap_or(Tail { share: 0.0, lo_ms: 0.0, hi_ms: 0.0 }),
            // Whole and at most MAX_CALLS / 2^53 − 1: exact conversions.
            n: n as usize,
            seed: seed as u64,
        })
    }
}

impl PolicySpec {
    /// Policy `index`, with its retries checked and its timeout resolved
    /// against `scenario`'s percentiles (`None` when no policy names one).
    pub fn policy(&self, index: usize, scenario: Option<&Percentiles>) -> Result<Policy, SimulateError> {
        let retries = whole("retries", Some(index), self.retries.unwrap_or(0.0), 0.0, f64::from(MAX_RETRIES))?;
        let timeout_ms = match (&self.timeout_name, scenario) {
            (Some(name), Some(p)) => resolve_timeout(name, p)
                .ok_or_else(|| SimulateError::TimeoutName { index, value: name.chars().take(64).collect() })?,
            _ => self.timeout_ms,
        };
        // Whole and at most MAX_RETRIES: exact.
        Ok(Policy { timeout_ms, retries: retries as u32 })
    }
}

/// A policy's timeout as text: milliseconds (`"250"`), or a percentile of
/// the scenario (`p50`, `p90`, `p99`, `p99.9` or `p999`), optionally
/// multiplied (`2xp99`, `1.5*p99.9`). `None` for anything else. The CLI's
/// `--policy` and JS `simulate` read timeouts with this.
pub fn resolve_timeout(text: &str, p: &Percentiles) -> Option<f64> {
    let text = text.trim();
    if let Some(v) = decimal(text) {
        return Some(v);
    }
    let (mult, name) = match text.split_once(['x', '*']) {
        Some((m, n)) => (decimal(m)?, n),
        None => (1.0, text),
    };
    let base = match name {
        "p50" => p.p50_ms,
        "p90" => p.p90_ms,
        "p99" => p.p99_ms,
        "p99.9" | "p999" => p.p999_ms,
        _ => return None,
    };
    Some(mult * base)
}

/// `digits[.digits]` as a number, correctly rounded (at most 15 digits: an
/// exact integer divided by an exact power of ten); `None` for anything else.
/// By hand: a float parser costs the `.wasm` kilobytes.
fn decimal(text: &str) -> Option<f64> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = int.len() + frac.len();
    if int.is_empty() || digits > 15 || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole = int.bytes().chain(frac.bytes()).fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    // At most 15 digits: `whole` and 10^frac.len() are exact f64s.
    Some(whole as f64 / 10f64.powi(frac.len() as i32))
}

/// [`simulate`] of what a JS caller wrote. A timeout given as a percentile
/// is resolved against the scenario's own (a first run without policies,
/// as the CLI does).
pub fn simulate_spec(spec: &ScenarioSpec, policies: &[PolicySpec]) -> Result<Simulation, SimulateError> {
    let scenario = spec.scenario()?;
    let base =
        if policies.iter().any(|p| p.timeout_name.is_some()) { Some(simulate(&scenario, &[])?.scenario) } else { None };
    let policies =
        policies.iter().enumerate().map(|(i, p)| p.policy(i, base.as_ref())).collect::<Result<Vec<_>, _>>()?;
    simulate(&scenario, &policies)
}

/// Why a simulation was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum SimulateError {
    /// A duration parameter was not a valid number of milliseconds.
    Duration(DeadlineError),
    /// The median must be greater than 0 ms (a lognormal has no zero median).
    Median {
        /// The median given, in ms.
        value: f64,
    },
    /// Sigma must be between 0 and [`MAX_SIGMA`]; 0.3–0.6 is typical.
    Sigma {
        /// The sigma given.
        value: f64,
    },
    /// The tail share must be between 0 and 1 (0.005 is 0.5%).
    Share {
        /// The share given.
        value: f64,
    },
    /// The tail's lower bound must not exceed its upper bound.
    TailOrder {
        /// The lower bound given, in ms.
        lo_ms: f64,
        /// The upper bound given, in ms (below `lo_ms`).
        hi_ms: f64,
    },
    /// The number of calls must be between 1 and [`MAX_CALLS`].
    Calls {
        /// The number of calls given.
        value: usize,
    },
    /// Policy `index` asks for more than [`MAX_RETRIES`] retries.
    Retries {
        /// The policy's position, from 0.
        index: usize,
        /// The retries asked for.
        value: u32,
    },
    /// Policy `index` has an invalid timeout.
    Timeout {
        /// The policy's position, from 0.
        index: usize,
        /// What is wrong with the timeout.
        error: DeadlineError,
    },
    /// Policy `index` names its timeout with words [`resolve_timeout`] does not read.
    TimeoutName {
        /// The policy's position, from 0.
        index: usize,
        /// The text given (at most 64 characters of it).
        value: String,
    },
    /// At most [`MAX_POLICIES`] policies can be compared at once.
    Policies {
        /// The number of policies given.
        value: usize,
    },
    /// A count (`n`, `seed`, policy `index`'s `retries`) must be a whole
    /// number `lo ..= hi`.
    Whole {
        /// The count's JS name.
        param: &'static str,
        /// The policy's position, from 0, for a policy's `retries`.
        index: Option<usize>,
        /// The value given.
        value: f64,
        /// The least value accepted.
        lo: f64,
        /// The greatest value accepted.
        hi: f64,
    },
}

impl Described for SimulateError {
    fn code(&self) -> &'static str {
        match self {
            Self::Duration(e) | Self::Timeout { error: e, .. } => e.code(),
            Self::TailOrder { .. } => "TAIL_ORDER",
            Self::Policies { .. } => "TOO_MANY_POLICIES",
            Self::TimeoutName { .. } => "UNKNOWN_TIMEOUT",
            Self::Whole { value, lo, hi, .. } => whole_code(*value, *lo, *hi),
            _ => "OUT_OF_RANGE",
        }
    }

    fn param(&self) -> Option<String> {
        let field = |name: &str| match name {
            "medianMs" | "sigma" => format!("scenario.body.{name}"),
            _ => format!("scenario.tail.{name}"),
        };
        Some(match self {
            Self::Duration(e) => field(e.param().unwrap_or("medianMs")),
            Self::Median { .. } => field("medianMs"),
            Self::Sigma { .. } => field("sigma"),
            Self::Share { .. } => field("share"),
            Self::TailOrder { .. } => field("loMs"),
            Self::Calls { .. } => "scenario.n".into(),
            Self::Retries { index, .. } => format!("policies[{index}].retries"),
            Self::Timeout { index, .. } | Self::TimeoutName { index, .. } => format!("policies[{index}].timeoutMs"),
            Self::Policies { .. } => "policies".into(),
            Self::Whole { param, index: Some(i), .. } => format!("policies[{i}].{param}"),
            Self::Whole { param, index: None, .. } => format!("scenario.{param}"),
        })
    }

    fn message(&self) -> Message {
        let policy = |index: usize, error: Message| Message::new(msg::POLICY).arg("index", index).arg("error", error);
        match *self {
            Self::Duration(e) => e.message(),
            Self::Median { value } => Message::new(msg::MEDIAN).arg("max", MAX_MS).arg("value", value),
            Self::Sigma { value } => Message::new(msg::SIGMA).arg("max", MAX_SIGMA).arg("value", value),
            Self::Share { value } => Message::new(msg::SHARE).arg("value", value),
            Self::TailOrder { lo_ms, hi_ms } => Message::new(msg::TAIL_ORDER).arg("loMs", lo_ms).arg("hiMs", hi_ms),
            Self::Calls { value } => Message::new(msg::CALLS).arg("max", MAX_CALLS).arg("value", value),
            Self::Retries { index, value } => policy(
                index,
                Message::new(msg::RETRIES).arg("max", f64::from(MAX_RETRIES)).arg("value", f64::from(value)),
            ),
            Self::Timeout { index, error } => policy(index, error.message()),
            Self::TimeoutName { index, ref value } => {
                policy(index, Message::new(msg::TIMEOUT_NAME).arg("value", value.as_str()))
            }
            Self::Policies { value } => Message::new(msg::POLICIES).arg("max", MAX_POLICIES).arg("value", value),
            Self::Whole { param, index, value, lo, hi } => {
                let whole =
                    Message::new(msg::WHOLE).arg("param", param).arg("lo", lo).arg("hi", hi).arg("value", value);
                match index {
                    Some(i) => policy(i, whole),
                    None => whole,
                }
            }
        }
    }
}

/// The simulation's message templates.
pub mod msg {
    crate::templates! { "simulate";
        /// [`SimulateError::Median`](super::SimulateError::Median).
        MEDIAN = "'medianMs' must be greater than 0 and at most {max} milliseconds: current value is {value}";
        /// [`SimulateError::Sigma`](super::SimulateError::Sigma).
        SIGMA = "'sigma' must be between 0 and {max}: current value is {value}";
        /// [`SimulateError::Share`](super::SimulateError::Share).
        SHARE = "'share' must be between 0 and 1: current value is {value}";
        /// [`SimulateError::TailOrder`](super::SimulateError::TailOrder).
        TAIL_ORDER = "'loMs' must not exceed 'hiMs': current values are {loMs} and {hiMs}";
        /// [`SimulateError::Calls`](super::SimulateError::Calls).
        CALLS = "'n' must be between 1 and {max}: current value is {value}";
        /// Policy `index` was refused: `error` says why.
        POLICY = "policy {index}: {error}";
        /// [`SimulateError::Retries`](super::SimulateError::Retries).
        RETRIES = "'retries' must be between 0 and {max}: current value is {value}";
        /// [`SimulateError::TimeoutName`](super::SimulateError::TimeoutName).
        TIMEOUT_NAME = "'timeoutMs' must be milliseconds or one of p50, p90, p99, p99.9, optionally multiplied (2xp99): current value is \"{value}\"";
        /// [`SimulateError::Policies`](super::SimulateError::Policies).
        POLICIES = "at most {max} policies can be simulated at once: current count is {value}";
        /// [`SimulateError::Whole`](super::SimulateError::Whole).
        WHOLE = "'{param}' must be a whole number between {lo} and {hi}: current value is {value}";
    }
}

crate::described_error!(SimulateError);

/// Draws attempt latencies from a validated scenario (splitmix64 streams,
/// normal deviates by the polar method). Counter-based: the
/// draw for `(call, attempt)` depends on nothing else, so results do not
/// depend on the order of evaluation.
#[derive(Debug, Clone, Copy)]
pub struct Sampler {
    body: Body,
    tail: Tail,
    seed: u64,
}

impl Sampler {
    /// Validates the distribution (not `n`).
    pub fn new(s: &Scenario) -> Result<Self, SimulateError> {
        let median = check_ms("medianMs", s.body.median_ms).map_err(SimulateError::Duration)?;
        if median <= 0.0 {
            return Err(SimulateError::Median { value: median });
        }
        if !(0.0..=MAX_SIGMA).contains(&s.body.sigma) {
            return Err(SimulateError::Sigma { value: s.body.sigma });
        }
        if !(0.0..=1.0).contains(&s.tail.share) {
            return Err(SimulateError::Share { value: s.tail.share });
        }
        let lo = check_ms("loMs", s.tail.lo_ms).map_err(SimulateError::Duration)?;
        let hi = check_ms("hiMs", s.tail.hi_ms).map_err(SimulateError::Duration)?;
        if lo > hi {
            return Err(SimulateError::TailOrder { lo_ms: lo, hi_ms: hi });
        }
        Ok(Self {
            body: Body { median_ms: median, sigma: s.body.sigma },
            tail: Tail { share: s.tail.share, lo_ms: lo, hi_ms: hi },
            seed: s.seed,
        })
    }

    /// The latency of attempt `attempt` of call `call`, in ms.
    pub fn draw(&self, call: u64, attempt: u32) -> f64 {
        // The stream's seed hashes (seed, call, attempt) with the SplitMix64
        // mixer; the stream itself is the core's one generator.
        let mut rng = SplitMix64::new(
            mix64(self.seed ^ GOLDEN_GAMMA)
                ^ mix64(call.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ (u64::from(attempt) << 56)),
        );
        // (0, 1]: never 0, so ln() is finite.
        let mut unit = || rng.next_f64_nonzero();
        let v = if unit() <= self.tail.share && self.tail.share > 0.0 {
            self.tail.lo_ms + (self.tail.hi_ms - self.tail.lo_ms) * unit()
        } else {
            // Marsaglia's polar form of Box–Muller: a point uniform in the
            // unit disc gives a normal deviate without `cos`, whose argument
            // reduction would add kilobytes to the Wasm build. Accepts with
            // probability π/4; 64 rejections in a row (p < 10^-42) fall back
            // to z = 0, so the loop is bounded.
            let mut z = 0.0;
            for _ in 0..64 {
                let (u, v) = (2.0 * unit() - 1.0, 2.0 * unit() - 1.0);
                let s = u * u + v * v;
                if s > 0.0 && s < 1.0 {
                    z = u * (-2.0 * s.ln() / s).sqrt();
                    break;
                }
            }
            self.body.median_ms * (self.body.sigma * z).exp()
        };
        if v > MAX_MS {
            MAX_MS
        } else {
            v
        }
    }
}

fn percentiles(sorted: &[f64]) -> Percentiles {
    let at = |q| sorted.get(rank_index(q, sorted.len())).copied().unwrap_or(0.0);
    Percentiles { p50_ms: at(0.5), p90_ms: at(0.9), p99_ms: at(0.99), p999_ms: at(0.999) }
}

/// Sorts finite, non-negative (and not `-0`) values ascending: an LSD radix
/// sort on their bits, which for such values order like the values, one byte
/// per pass, skipping bytes every value shares. Linear time, and a few
/// hundred bytes of Wasm where `sort_unstable_by` adds kilobytes. `scratch`
/// is resized to `v.len()` and left holding garbage.
fn sort_non_negative(v: &mut Vec<f64>, scratch: &mut Vec<f64>) {
    let n = v.len();
    let mut counts = [[0u32; 256]; 8];
    for &x in v.iter() {
        let bits = x.to_bits();
        for (d, c) in counts.iter_mut().enumerate() {
            c[((bits >> (8 * d)) & 0xFF) as usize] += 1;
        }
    }
    scratch.clear();
    scratch.resize(n, 0.0);
    for (d, c) in counts.iter_mut().enumerate() {
        if c.iter().any(|&k| k as usize == n) {
            continue;
        }
        let mut at = 0u32;
        for k in c.iter_mut() {
            (*k, at) = (at, at + *k);
        }
        for &x in v.iter() {
            let b = ((x.to_bits() >> (8 * d)) & 0xFF) as usize;
            if let Some(slot) = scratch.get_mut(c[b] as usize) {
                *slot = x;
            }
            c[b] += 1;
        }
        core::mem::swap(v, scratch);
    }
}

/// Runs the scenario and every policy on the same calls.
pub fn simulate(scenario: &Scenario, policies: &[Policy]) -> Result<Simulation, SimulateError> {
    let sampler = Sampler::new(scenario)?;
    if !(1..=MAX_CALLS).contains(&scenario.n) {
        return Err(SimulateError::Calls { value: scenario.n });
    }
    if policies.len() > MAX_POLICIES {
        return Err(SimulateError::Policies { value: policies.len() });
    }
    for (index, p) in policies.iter().enumerate() {
        check_ms("timeoutMs", p.timeout_ms).map_err(|error| SimulateError::Timeout { index, error })?;
        if p.retries > MAX_RETRIES {
            return Err(SimulateError::Retries { index, value: p.retries });
        }
    }
    let n = scenario.n;
    let mut lat: Vec<f64> = (0..n as u64).map(|i| sampler.draw(i, 0)).collect();
    // `first` is the scenario's own sample, sorted; afterwards it is the
    // radix sort's scratch space, so memory stays at two vectors.
    let mut first = lat.clone();
    let mut scratch = Vec::new();
    sort_non_negative(&mut first, &mut scratch);
    let own = percentiles(&first);
    let mut scratch = first;

    let mut results = Vec::with_capacity(policies.len());
    for p in policies {
        let t = p.timeout_ms + 0.0;
        let (mut failures, mut attempts, mut first_timeouts) = (0u64, 0u64, 0u64);
        for (i, slot) in lat.iter_mut().enumerate() {
            let mut spent = 0.0;
            let mut done = false;
            for k in 0..=p.retries {
                attempts += 1;
                let x = sampler.draw(i as u64, k);
                if x <= t {
                    spent += x;
                    done = true;
                    break;
                }
                if k == 0 {
                    first_timeouts += 1;
                }
                spent += t;
            }
            if !done {
                failures += 1;
            }
            // At most 11 × MAX_MS: finite, and reported only as a percentile.
            *slot = spent;
        }
        sort_non_negative(&mut lat, &mut scratch);
        let e2e = percentiles(&lat);
        results.push(PolicyResult {
            policy: Policy { timeout_ms: t, retries: p.retries },
            p50_ms: e2e.p50_ms,
            p99_ms: e2e.p99_ms,
            p999_ms: e2e.p999_ms,
            failure_rate: failures as f64 / n as f64,
            extra_load: attempts as f64 / n as f64 - 1.0,
            first_attempt_timeout_rate: first_timeouts as f64 / n as f64,
        });
    }
    Ok(Simulation { scenario: own, policies: results })
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn specs_take_the_core_defaults_and_name_what_is_wrong() {
        let body = Body { median_ms: 40.0, sigma: 0.3 };
        let spec = ScenarioSpec { body, tail: None, n: None, seed: None };
        let s = spec.scenario().unwrap();
        assert_eq!((s.n as f64, s.seed as f64, s.tail.share), (DEFAULT_CALLS, DEFAULT_SEED, 0.0));
        let p = PolicySpec { timeout_ms: 50.0, timeout_name: None, retries: None }.policy(0, None).unwrap();
        assert_eq!(p, Policy { timeout_ms: 50.0, retries: 0 });

        let param = |e: SimulateError| {
            crate::core::error::assert_filled(&e.message());
            (e.code(), e.param().unwrap(), e.to_string())
        };
        let n = ScenarioSpec { n: Some(1.5), ..spec }.scenario().unwrap_err();
        assert_eq!(
            param(n),
            (
                "NOT_WHOLE",
                "scenario.n".into(),
                "'n' must be a whole number between 1 and 2000000: current value is 1.5".into()
            )
        );
        let r = PolicySpec { timeout_ms: 1.0, timeout_name: None, retries: Some(11.0) }.policy(2, None).unwrap_err();
        assert_eq!(param(r).0, "OUT_OF_RANGE");
        let r =
            PolicySpec { timeout_ms: 1.0, timeout_name: None, retries: Some(f64::NAN) }.policy(2, None).unwrap_err();
        assert_eq!(param(r).1, "policies[2].retries");
        let bad = |body: Body, tail: Option<Tail>| {
            simulate_spec(&ScenarioSpec { body, tail, n: Some(10.0), seed: None }, &[]).unwrap_err()
        };
        assert_eq!(param(bad(Body { median_ms: -1.0, sigma: 0.3 }, None)).1, "scenario.body.medianMs");
        assert_eq!(param(bad(Body { sigma: 9.0, ..body }, None)).1, "scenario.body.sigma");
        let tail = Tail { share: 0.1, lo_ms: 5.0, hi_ms: f64::NAN };
        assert_eq!(param(bad(body, Some(tail))).1, "scenario.tail.hiMs");
        let e =
            simulate_spec(&spec, &[PolicySpec { timeout_ms: -1.0, timeout_name: None, retries: None }]).unwrap_err();
        assert_eq!(param(e).1, "policies[0].timeoutMs");
    }

    fn close(got: f64, want: f64, tol: f64, what: &str) {
        assert!((got - want).abs() <= tol, "{what}: got {got}, seed 003 says {want} (tolerance {tol})");
    }

    /// Seed 003's figures. Tolerances are about 2.5 standard deviations of
    /// the sampling noise at 200 000 calls (binomial for rates, order
    /// statistics for percentiles).
    #[test]
    fn seed_003_table() {
        // Not one lucky seed: the figures hold for every seed tried.
        for seed in 1..=3 {
            let s = Scenario { seed, ..Scenario::seed_003() };
            let own = simulate(&s, &[]).unwrap().scenario;
            close(own.p50_ms, 40.0, 0.5, "p50");
            close(own.p90_ms, 63.0, 1.0, "p90");
            close(own.p99_ms, 98.0, 1.5, "p99");
            close(own.p999_ms, 1262.0, 45.0, "p99.9");

            // False timeouts at the seed's rounded candidates.
            let cands = [
                Policy { timeout_ms: 98.0, retries: 0 },
                Policy { timeout_ms: 196.0, retries: 0 },
                Policy { timeout_ms: 1262.0, retries: 0 },
            ];
            let r = simulate(&s, &cands).unwrap().policies;
            close(r[0].failure_rate, 0.0100, 0.0008, "false timeouts at p99");
            close(r[1].failure_rate, 0.0050, 0.0004, "false timeouts at 2 x p99");
            close(r[2].failure_rate, 0.0010, 0.0002, "false timeouts at p99.9");
            // 2 x p99 times out exactly the slow tail: every body draw is below.
            assert!(r[1].failure_rate <= s.tail.share * 1.1);

            // The strategy table, with timeouts at the measured p99 and p99.9.
            let table = [Policy { timeout_ms: own.p99_ms, retries: 1 }, Policy { timeout_ms: own.p999_ms, retries: 0 }];
            let r = simulate(&s, &table).unwrap().policies;
            let (retry, wait) = (r[0], r[1]);
            // With common random numbers exactly 1% of first attempts time out,
            // so e2e p99 is the largest first-attempt success: the timeout
            // itself. The seed's independent draws put it 1 ms below its p99.
            close(retry.p99_ms, 97.0, 2.0, "retry: e2e p99");
            assert!(retry.p99_ms <= own.p99_ms);
            close(retry.p999_ms, 160.0, 6.0, "retry: e2e p99.9");
            close(retry.failure_rate, 0.00007, 0.00010, "retry: failures");
            close(retry.extra_load, 0.01, 0.0005, "retry: extra load");
            close(wait.p99_ms, 98.0, 1.5, "wait: e2e p99");
            close(wait.failure_rate, 0.00095, 0.0002, "wait: failures");
            // The seed's 1 188 ms is not reproducible (see the module doc): failed
            // calls sit at the timeout, so p99.9 is within the last 0.01% below it.
            assert!(wait.p999_ms > 1188.0 && wait.p999_ms <= own.p999_ms, "{}", wait.p999_ms);
            // Retrying beats waiting by an order of magnitude at p99.9.
            assert!(wait.p999_ms > 7.0 * retry.p999_ms);
            assert!(retry.failure_rate * 5.0 < wait.failure_rate);
        }
    }

    #[test]
    fn radix_sort_matches_the_standard_sort() {
        let mut scratch = Vec::new();
        let sampler = Sampler::new(&Scenario::seed_003()).unwrap();
        for n in [0usize, 1, 2, 255, 1000, 100_000] {
            let mut v: Vec<f64> = (0..n as u64).map(|i| sampler.draw(i, 0)).collect();
            v.extend([0.0, 5e-324, MAX_MS, 40.0, 40.0].iter().take(n.min(5)));
            let mut want = v.clone();
            want.sort_by(f64::total_cmp);
            sort_non_negative(&mut v, &mut scratch);
            assert_eq!(v, want, "n = {n}");
        }
        let mut same = vec![7.0; 300];
        sort_non_negative(&mut same, &mut scratch);
        assert_eq!(same, vec![7.0; 300]);
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        let s = Scenario { n: 5000, ..Scenario::seed_003() };
        let p = [Policy { timeout_ms: 100.0, retries: 2 }];
        assert_eq!(simulate(&s, &p), simulate(&s, &p));
        assert_ne!(simulate(&s, &p), simulate(&Scenario { seed: 2, ..s }, &p));
    }

    #[test]
    fn rejects_bad_parameters_by_name() {
        let s = Scenario::seed_003();
        let bad = |f: fn(&mut Scenario)| {
            let mut t = s;
            f(&mut t);
            let e = simulate(&t, &[]).unwrap_err();
            crate::core::error::assert_filled(&e.message());
            e.to_string()
        };
        assert!(bad(|t| t.body.median_ms = 0.0).starts_with("'medianMs' must be greater than 0"));
        assert!(bad(|t| t.body.median_ms = f64::NAN).starts_with("'medianMs'"));
        assert!(bad(|t| t.body.sigma = -0.1).starts_with("'sigma' must be between 0 and 4"));
        assert!(bad(|t| t.body.sigma = f64::NAN).starts_with("'sigma'"));
        assert!(bad(|t| t.tail.share = 1.5).starts_with("'share' must be between 0 and 1"));
        assert!(bad(|t| t.tail.lo_ms = 2000.0).starts_with("'loMs' must not exceed 'hiMs'"));
        assert!(bad(|t| t.tail.hi_ms = -1.0).starts_with("'hiMs'"));
        assert!(bad(|t| t.n = 0).starts_with("'n' must be between 1 and 2000000"));
        let e = simulate(&s, &[Policy { timeout_ms: 1.0, retries: 0 }, Policy { timeout_ms: -1.0, retries: 0 }])
            .unwrap_err();
        assert!(e.to_string().starts_with("policy 1: 'timeoutMs'"), "{e}");
        let e = simulate(&s, &[Policy { timeout_ms: 1.0, retries: 11 }]).unwrap_err();
        assert_eq!(e.to_string(), "policy 0: 'retries' must be between 0 and 10: current value is 11");
    }

    #[test]
    fn degenerate_scenarios() {
        // No tail, sigma 0: every draw is the median.
        let s = Scenario {
            body: Body { median_ms: 10.0, sigma: 0.0 },
            tail: Tail { share: 0.0, lo_ms: 0.0, hi_ms: 0.0 },
            n: 100,
            seed: 7,
        };
        let r =
            simulate(&s, &[Policy { timeout_ms: 5.0, retries: 2 }, Policy { timeout_ms: 10.0, retries: 0 }]).unwrap();
        assert_eq!(r.scenario, Percentiles { p50_ms: 10.0, p90_ms: 10.0, p99_ms: 10.0, p999_ms: 10.0 });
        assert_eq!((r.policies[0].failure_rate, r.policies[0].extra_load, r.policies[0].p99_ms), (1.0, 2.0, 15.0));
        assert_eq!((r.policies[1].failure_rate, r.policies[1].extra_load), (0.0, 0.0));
        // All tail.
        let s = Scenario { tail: Tail { share: 1.0, lo_ms: 300.0, hi_ms: 300.0 }, ..s };
        assert_eq!(simulate(&s, &[]).unwrap().scenario.p50_ms, 300.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn rates_bounded_and_retries_help(median in 1.0..500.0f64, sigma in 0.0..2.0f64, share in 0.0..0.2f64,
                                          t in 0.0..3000.0f64, seed in any::<u64>()) {
            let s = Scenario { body: Body { median_ms: median, sigma }, tail: Tail { share, lo_ms: 300.0, hi_ms: 1500.0 }, n: 500, seed };
            let ps: Vec<Policy> = (0..4).map(|r| Policy { timeout_ms: t, retries: r }).collect();
            let out = simulate(&s, &ps).unwrap();
            let mut last = 1.0f64;
            for (r, p) in out.policies.iter().enumerate() {
                prop_assert!((0.0..=1.0).contains(&p.failure_rate));
                prop_assert!(p.extra_load >= 0.0 && p.extra_load <= r as f64);
                prop_assert!(p.failure_rate <= last);
                prop_assert!(p.p50_ms <= p.p99_ms && p.p99_ms <= p.p999_ms);
                last = p.failure_rate;
            }
            let never = simulate(&s, &[Policy { timeout_ms: MAX_MS, retries: 3 }]).unwrap().policies[0];
            prop_assert_eq!((never.failure_rate, never.extra_load), (0.0, 0.0));
        }
    }

    #[test]
    fn a_timeout_may_name_a_percentile_of_the_scenario() {
        let p = Percentiles { p50_ms: 40.0, p90_ms: 63.0, p99_ms: 98.0, p999_ms: 1262.0 };
        for (text, want) in [
            ("250", Some(250.0)),
            (" 12.5 ", Some(12.5)),
            ("p50", Some(40.0)),
            ("p90", Some(63.0)),
            ("p99", Some(98.0)),
            ("p99.9", Some(1262.0)),
            ("p999", Some(1262.0)),
            ("2xp99", Some(196.0)),
            ("1.5*p99.9", Some(1893.0)),
            ("p98", None),
            ("xp99", None),
            ("-1", None),
            ("1e3", None),
            ("", None),
            ("1234567890123456", None),
        ] {
            assert_eq!(resolve_timeout(text, &p), want, "{text:?}");
        }
        for v in ["0.1", "0.3", "123.456", "99999999999999.9", "7"] {
            assert_eq!(decimal(v), v.parse::<f64>().ok(), "{v}: as std parses it");
        }
        let spec =
            ScenarioSpec { body: Body { median_ms: 40.0, sigma: 0.3 }, tail: None, n: Some(1_000.0), seed: None };
        let named = |name: &str| PolicySpec { timeout_ms: f64::NAN, timeout_name: Some(name.into()), retries: None };
        let sim = simulate_spec(&spec, &[named("p99")]).unwrap();
        assert_eq!(sim.policies[0].policy.timeout_ms, sim.scenario.p99_ms);
        let e = simulate_spec(&spec, &[named("p99"), named("p98")]).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("UNKNOWN_TIMEOUT", Some("policies[1].timeoutMs")));
    }
}
