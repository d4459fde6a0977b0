//! Every module's message templates in one catalog, for the checks that every
//! template is well formed, has a unique id and is used.
//!
//! Test-only, and nothing imports it: a [`Message`] carries its own
//! [`Template`], so no module needs the catalog to print a message, and the
//! modules that declare templates never depend on each other through it.

use crate::core::error::{assert_filled, decimals, msg, Arg, Described, Message, ShapeError, Template, Within};

/// The templates of the main entry's errors.
const MAIN: &[&[Template]] = &[
    msg::TEMPLATES,
    crate::core::deadline::msg::TEMPLATES,
    crate::core::plan::msg::TEMPLATES,
    crate::core::retry::msg::TEMPLATES,
    crate::core::retry_budget::msg::TEMPLATES,
    crate::core::headers::msg::TEMPLATES,
    crate::core::caps::msg::TEMPLATES,
    crate::core::request::msg::TEMPLATES,
    crate::core::stall::msg::TEMPLATES,
    crate::core::resume::msg::TEMPLATES,
];

/// The templates only the derive entry's errors use.
const DERIVE: &[&[Template]] = &[
    crate::core::sketch::msg::TEMPLATES,
    crate::core::sketch::bytes_msg::TEMPLATES,
    crate::core::derive::msg::TEMPLATES,
    crate::core::derive::warning_msg::TEMPLATES,
    crate::core::prom::msg::TEMPLATES,
    crate::core::simulate::msg::TEMPLATES,
    crate::core::little::msg::TEMPLATES,
    crate::core::breaker::msg::TEMPLATES,
    crate::core::limiter::msg::TEMPLATES,
    crate::core::book::msg::TEMPLATES,
    crate::core::book::serve_msg::TEMPLATES,
    crate::core::fleet::msg::TEMPLATES,
];

#[test]
fn templates_are_well_formed_and_ids_unique() {
    let all: Vec<_> = MAIN.iter().chain(DERIVE).flat_map(|t| t.iter()).collect();
    for (i, Template { id, text }) in all.iter().enumerate() {
        assert!(all[..i].iter().all(|other| other.id != *id), "duplicate id {id}");
        let mut rest = *text;
        while let Some(at) = rest.find(['{', '}']) {
            let tail = &rest[at..];
            if tail.starts_with("{{") || tail.starts_with("}}") {
                rest = &tail[2..];
                continue;
            }
            assert!(tail.starts_with('{'), "{id}: a lone '}}' in {text:?}");
            let end = tail.find('}').unwrap_or_else(|| panic!("{id}: an unclosed hole in {text:?}"));
            let hole = &tail[1..end];
            let (name, spec) = hole.split_once(':').unwrap_or((hole, ""));
            assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{id}: {hole}");
            assert!(
                spec.is_empty() || spec == "ms" || decimals(spec).is_some(),
                "{id}: unknown format {spec:?} (`ms`, `.N` or none)"
            );
            rest = &tail[end + 1..];
        }
    }
}

/// Every hole of a message's template has a value ([`assert_filled`]),
/// and no value lacks its hole: the names are strings, so a misspelt
/// one would print its hole.
fn assert_fills(m: &Message) {
    assert_filled(m);
    let text = m.text.replace("{{", "");
    for (name, arg) in &m.args {
        let has = text.contains(&format!("{{{name}}}")) || text.contains(&format!("{{{name}:"));
        assert!(has, "{}: a value for '{name}', which {text:?} has no hole for", m.id);
        if let Arg::Msg(inner) = arg {
            assert_fills(inner);
        }
    }
}

/// Each message of the main entry's errors and data, one of every variant.
#[test]
fn main_messages_fill_every_hole() {
    use crate::core::caps::{CapsError, Platform, Trigger};
    use crate::core::deadline::DeadlineError;
    use crate::core::headers::HeaderError;
    use crate::core::plan::{PlanError, SkipReason};
    use crate::core::retry::{During, Loop, RetryError, StopReason, Stopped};
    use crate::core::retry_budget::RetryBudgetError;
    use crate::core::stall::StallError;
    let time = DeadlineError::NotFinite { param: "ms", value: f64::INFINITY };
    let h = "grpc-timeout";
    let step = || "a".to_string();
    let mut all: Vec<Message> = vec![
        time.message(),
        DeadlineError::Negative { param: "ms", value: -1.0 }.message(),
        DeadlineError::TooLarge { param: "ms", value: 1e300 }.message(),
        DeadlineError::TooFar { param: "ms", value: 9e15, max: 7e15 }.message(),
        DeadlineError::Exhausted { at: 1.0, late_by_ms: 2.5 }.message(),
        DeadlineError::Exhausted { at: 1.0, late_by_ms: 0.0 }.message(),
        DeadlineError::Insufficient { remaining_ms: 1.0, min_ms: 2.0 }.message(),
        Message::new(crate::core::deadline::msg::BELOW_RESERVE).arg("budgetMs", 50.0).arg("reserveMs", 300.0),
        ShapeError { param: "x", detail: "y".into() }.message(),
        Within::new("options", RetryBudgetError::BadRatio { value: 2.0 }).message(),
        SkipReason::Expired.message(),
        SkipReason::BelowMinimum { available_ms: 1.5, min_ms: 2.0 }.message(),
        SkipReason::CircuitOpen { retry_in_ms: 250.0 }.message(),
    ];
    all.extend(
        [
            PlanError::NoSteps,
            PlanError::TooManySteps { count: 300 },
            PlanError::EmptyName { index: 1 },
            PlanError::NameTooLong { index: 1, len: 200 },
            PlanError::DuplicateName { name: step(), first: 0, second: 1 },
            PlanError::UnknownStep { name: step() },
            PlanError::IndexOutOfRange { index: 3, len: 2 },
            PlanError::UnknownKind { value: "x".into() },
            PlanError::BadStep { index: 1, detail: "not an object".into() },
            PlanError::BadStepValue { index: 0, step: step(), error: time },
            PlanError::MinAbovePreferred { index: 0, step: step(), min_ms: 2.0, preferred_ms: 1.0 },
            PlanError::ReserveBelowMin { index: 0, step: step(), reserve_ms: 1.0, min_ms: 2.0 },
            PlanError::ZeroPreferred { index: 0, step: step() },
            PlanError::PreferredOnFallback { index: 0, step: step() },
            PlanError::BadMargin { value: 1e9 },
            PlanError::Time(time),
        ]
        .iter()
        .map(Described::message),
    );
    all.extend(
        [
            RetryError::Time(time),
            RetryError::BadJitter { value: 2.0 },
            RetryError::MaxBelowBase { base_ms: 2.0, max_ms: 1.0 },
            RetryError::BadMaxAttempts { value: 0 },
            RetryError::TooManyRetries { value: 101 },
            RetryError::BadAttempt { value: 0 },
            RetryError::UnknownFailure { value: "x".into() },
            RetryError::UnknownJitter { value: "x".into() },
            RetryError::Budget(RetryBudgetError::BadWindow { value: 0.0 }),
            RetryError::OutOfOrder { call: "failed", state: "idle" },
        ]
        .iter()
        .map(Described::message),
    );
    all.extend(
        [
            StopReason::Permanent,
            StopReason::NotIdempotent,
            StopReason::Exhausted { attempts: 3 },
            StopReason::Insufficient { remaining_ms: 1.0, attempt_min_ms: 2.0 },
            StopReason::TimeoutBelowMin { attempt_timeout_ms: 1.0, attempt_min_ms: 2.0 },
            StopReason::BackoffPastDeadline { delay_ms: 1.0, remaining_ms: 2.0, attempt_min_ms: 3.0 },
            StopReason::BudgetExhausted,
            StopReason::RetryAfter {
                retry_after_ms: 1.0,
                remaining_ms: 2.0,
                attempt_min_ms: 3.0,
                max_retry_after_ms: None,
            },
            StopReason::RetryAfter {
                retry_after_ms: 1.0,
                remaining_ms: 2.0,
                attempt_min_ms: 3.0,
                max_retry_after_ms: Some(0.5),
            },
            StopReason::CircuitOpen { wait_ms: 1.0, remaining_ms: 2.0, attempt_min_ms: 3.0 },
            StopReason::Deadline { during: None },
            StopReason::Deadline { during: Some(During::BeforeAttempt) },
            StopReason::Aborted { during: None },
            StopReason::Aborted { during: Some(During::Attempt) },
            StopReason::Aborted { during: Some(During::Backoff) },
        ]
        .iter()
        .map(StopReason::message),
    );
    for attempts in [1, 2] {
        all.push(Stopped { kind: Loop::Hedge, attempts, reason: StopReason::Exhausted { attempts } }.message());
    }
    all.push(crate::core::hedge::answered_first(2));
    for phase in ["first-byte", "first-chunk", "stall"] {
        all.push(crate::core::stall::stalled(phase, 5.0, 2.0, 10.0));
    }
    all.push(crate::core::plan::step_timeout("a", 10.0));
    all.push(crate::core::retry::attempt_timeout(2, 10.0));
    all.extend(
        [
            RetryBudgetError::BadRatio { value: 2.0 },
            RetryBudgetError::BadMinPerSecond { value: -1.0 },
            RetryBudgetError::BadWindow { value: 0.0 },
            RetryBudgetError::Time(time),
        ]
        .iter()
        .map(Described::message),
    );
    all.extend(
        [
            HeaderError::TooLong { header: h, len: 300 },
            HeaderError::Empty { header: h },
            HeaderError::Signed { header: h },
            HeaderError::Whitespace { header: h, at: 1 },
            HeaderError::NonAscii { header: h, at: 1 },
            HeaderError::NotDigit { header: h, at: 1, found: '.' },
            HeaderError::NoDigits { header: h },
            HeaderError::TooManyDigits { header: h, digits: 9, max: 8 },
            HeaderError::MissingUnit { header: h },
            HeaderError::BadUnit { header: h, found: 'x' },
            HeaderError::UnknownFormat { value: "x".into(), param: None },
            HeaderError::Time(time),
        ]
        .iter()
        .map(Described::message),
    );
    all.extend(
        [
            CapsError::UnknownPlatform { value: "x".into() },
            CapsError::UnknownTier { value: "x".into() },
            CapsError::UnknownTrigger { value: "x".into() },
            CapsError::UnsupportedTrigger { platform: Platform::VercelEdge, trigger: Trigger::Fetch },
            CapsError::ZeroCap { param: "wallMs" },
            CapsError::CustomWith { param: "plan" },
            CapsError::Time(time),
        ]
        .iter()
        .map(Described::message),
    );
    all.push(crate::core::request::RequestError::NoBound.message());
    all.push(crate::core::request::UnknownLimit { value: "x".into() }.message());
    all.extend(
        [
            StallError::Limit { param: "stallMs", value: 0.0 },
            StallError::Wait { param: "firstChunkMs", value: -1.0 },
            StallError::Instant(time),
            StallError::Count { param: "chunks", value: 0.5 },
        ]
        .iter()
        .map(Described::message),
    );
    {
        use crate::core::resume::{not_resumable, CapError, CutRefusal};
        all.push(CapError { param: "options.maxEventBytes", value: 0.0 }.message());
        all.push(CutRefusal::EventTooLarge.message(16.0));
        all.push(CutRefusal::LineTooLong.message(8.0));
        all.push(not_resumable(12.0));
    }
    for m in &all {
        assert_fills(m);
        assert!(MAIN.iter().flat_map(|t| t.iter()).any(|t| t.id == m.id), "{} is not in MAIN", m.id);
    }
    // And every template of the main entry is used by one of them.
    let used =
        |id: &str| all.iter().any(|m| m.id == id || m.args.iter().any(|(_, a)| matches!(a, Arg::Msg(i) if i.id == id)));
    for Template { id, .. } in MAIN.iter().flat_map(|t| t.iter()) {
        assert!(used(id) || *id == msg::TEXT.id, "{id} is declared but no variant above uses it");
    }
}
