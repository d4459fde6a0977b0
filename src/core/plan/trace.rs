//! The trace of a plan: what each step was given and how it ended.
//!
//! # Why its own module
//! The arithmetic of a plan (`super`) decides before a step starts; the
//! trace records after it ended, from what only the host saw (a cap timer, a
//! parent's abort, the step's own result). [`Outcome::after_run`] is the one
//! rule that turns those observations into an outcome, so every host names
//! an ending the same way.

use serde::{Deserialize, Serialize};

use super::PlanError;
use crate::core::deadline::check_ms;

/// How a step ended, as recorded in the trace. Crosses to JavaScript as its
/// name ([`Outcome::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
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
    /// The step failed with `StreamStalled`: a stream it read went silent
    /// past its first-chunk or stall limit (a timeout of its own kind, not an
    /// error of the step's).
    Stalled,
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
            Self::Stalled => "stalled",
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
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct TraceRecord {
    /// The step's name.
    pub step: String,
    /// What was left before the deadline when the step started, in ms
    /// (`remainingAtStartMs` in JS).
    pub remaining_at_start_ms: f64,
    /// How long the step was allowed to run, in ms (`capMs` in JS).
    pub cap_ms: f64,
    /// How long the step ran, in ms (`elapsedMs` in JS).
    pub elapsed_ms: f64,
    /// How the step ended.
    pub outcome: Outcome,
    /// For a step that streamed to the client (`p.stream`), when its first
    /// content went out, in ms from the step's start (`firstChunkMs` in JS);
    /// absent when none did, and on every other step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub first_chunk_ms: Option<f64>,
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
            first_chunk_ms: None,
        })
    }

    /// Sets [`first_chunk_ms`](Self::first_chunk_ms), validated like the other durations.
    pub fn with_first_chunk(mut self, first_chunk_ms: f64) -> Result<Self, PlanError> {
        self.first_chunk_ms = Some(check_ms("firstChunkMs", first_chunk_ms)?);
        Ok(self)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

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
            Outcome::Stalled,
        ];
        let names: Vec<_> = all.iter().map(|o| o.as_str()).collect();
        assert_eq!(names, ["ok", "error", "skipped", "insufficient", "deadline", "aborted", "timeout", "stalled"]);
    }
}
