//! The web API's cases, shared by the wasm-bindgen-test suites (tests/web/main.rs:
//! Node and headless Chromium) and the Deno build (tests/web/deno/lib.rs,
//! driven by `deno test`). Each case is `async fn(&Ctx) -> Result<(), String>`.
//!
//! Timing: where timing is the subject, fake time ([`FakeTime`], the Rust twin
//! of tests/js/fake-time.js): instants are exact. Cases on real host timers
//! (streams, fetches, the host clock itself) use no sleeps standing in for
//! events where an event exists; "not before" is exact, and lateness is
//! bounded by TIMER_SLACK_MS, which allows for a loaded 2-core machine.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use edge_deadline::web::{set_clock, Clock};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::AbortSignal;

pub mod book;
pub mod breaker;
pub mod conformance;
pub mod deadline;
pub mod errors;
pub mod limiter;
pub mod pipeline;
pub mod request;
pub mod resume;
pub mod stall;

pub const TIMER_SLACK_MS: f64 = 250.0;

/// What a runner hands every case.
pub struct Ctx {
    /// The fixture server's origin (tests/fixtures/server.mjs), e.g. `http://127.0.0.1:4567`.
    pub fixture: Option<String>,
}

impl Ctx {
    pub fn fixture(&self) -> Result<&str, String> {
        self.fixture.as_deref().ok_or_else(|| "FIXTURE_URL was not set: run through `node tests/run.mjs`".to_string())
    }
}

pub type Outcome = Result<(), String>;

pub use edge_deadline::web::now_ms as now;

/// `ensure!(cond, "message {}", x)`: fail the case with the message.
#[macro_export]
macro_rules! ensure {
    ($cond:expr $(,)?) => {{
        let ok: bool = $cond;
        if !ok {
            return Err(format!("assertion failed: {} (line {})", stringify!($cond), line!()));
        }
    }};
    ($cond:expr, $($fmt:tt)+) => {{
        let ok: bool = $cond;
        if !ok {
            return Err(format!("{} (line {})", format!($($fmt)+), line!()));
        }
    }};
}

/// Resolves when `signal` aborts; returns `performance.now()` at that moment.
/// Fails after `ABORT_WAIT_MS`: the wait holds a ref'd timer, which also keeps
/// Node alive while the deadline's own (unref'd) wake-up is pending.
pub async fn aborted(signal: &AbortSignal) -> Result<f64, String> {
    if !signal.aborted() {
        let mut keep = None;
        let promise = Promise::new(&mut |resolve, reject| {
            let _ = signal.add_event_listener_with_callback("abort", &resolve);
            keep = Some(edge_deadline::web::Timeout::new(ABORT_WAIT_MS, move || {
                let _ = reject.call1(&JsValue::NULL, &"the signal did not abort within 5 s".into());
            }));
        });
        let result = JsFuture::from(promise).await;
        drop(keep);
        result.map_err(|e| e.as_string().unwrap_or_default())?;
    }
    Ok(now())
}

pub const ABORT_WAIT_MS: f64 = 5_000.0;

/// Waits `ms` of real time (for "nothing happens by then" checks only).
pub async fn wait(ms: f64) {
    edge_deadline::web::sleep(ms).expect("a valid wait").await;
}

pub fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// The own enumerable keys of `value` (what survives workerd's clone).
pub fn own_keys(value: &JsValue) -> Vec<String> {
    Object::keys(value.unchecked_ref::<Object>()).iter().filter_map(|k| k.as_string()).collect()
}

/// Fake time for cases where timing is the subject: swaps the web API's clock
/// ([`set_clock`]) for one the case advances by hand, and puts the previous
/// one back when dropped. The swap starts fresh wake-up queues, so make the
/// deadlines a case measures after [`FakeTime::install`].
pub struct FakeTime {
    clock: Rc<FakeClock>,
    previous: Option<Option<Rc<dyn Clock>>>,
}

struct FakeClock {
    t: Cell<f64>,
    seq: Cell<u32>,
    /// Pending host timers: (instant, id, callback).
    timers: RefCell<Vec<(f64, u32, js_sys::Function)>>,
    /// Every host timer armed: (when, delay), in order.
    armed: RefCell<Vec<(f64, f64)>>,
}

impl Clock for FakeClock {
    fn now(&self) -> f64 {
        self.t.get()
    }
    fn set_timeout(&self, callback: &js_sys::Function, ms: f64) -> JsValue {
        let id = self.seq.get() + 1;
        self.seq.set(id);
        let delay = if ms > 0.0 { ms } else { 0.0 };
        self.armed.borrow_mut().push((self.t.get(), delay));
        self.timers.borrow_mut().push((self.t.get() + delay, id, callback.clone()));
        JsValue::from(id)
    }
    fn clear_timeout(&self, handle: &JsValue) {
        let id = handle.as_f64().unwrap_or(-1.0);
        self.timers.borrow_mut().retain(|(_, i, _)| f64::from(*i) != id);
    }
}

/// Lets promises and wakers settle (stream reads take several hops).
pub async fn settle() {
    for _ in 0..64 {
        let _ = JsFuture::from(Promise::resolve(&JsValue::UNDEFINED)).await;
    }
}

impl FakeTime {
    /// Installs fake time, starting at the next whole ms of the real clock.
    pub fn install() -> Self {
        let clock = Rc::new(FakeClock {
            t: Cell::new(now().ceil()),
            seq: Cell::new(0),
            timers: RefCell::new(Vec::new()),
            armed: RefCell::new(Vec::new()),
        });
        let previous = set_clock(Some(clock.clone()));
        Self { clock, previous: Some(previous) }
    }

    /// The fake instant.
    pub fn now(&self) -> f64 {
        self.clock.t.get()
    }

    /// Host timers still pending on the fake clock.
    pub fn pending(&self) -> usize {
        self.clock.timers.borrow().len()
    }

    /// The host timers armed so far, `(when, delay)` each.
    pub fn armed(&self) -> Vec<(f64, f64)> {
        self.clock.armed.borrow().clone()
    }

    fn take_next(&self, until: f64) -> Option<(f64, js_sys::Function)> {
        let mut timers = self.clock.timers.borrow_mut();
        let i = (0..timers.len())
            .filter(|&i| timers[i].0 <= until)
            .min_by(|&a, &b| timers[a].0.total_cmp(&timers[b].0).then(timers[a].1.cmp(&timers[b].1)))?;
        let (at, _, f) = timers.remove(i);
        Some((at, f))
    }

    /// Runs every timer due within `ms`, in order, letting promises settle after each.
    pub async fn advance(&self, ms: f64) {
        let end = self.now() + ms;
        settle().await;
        while let Some((at, f)) = self.take_next(end) {
            self.clock.t.set(self.now().max(at));
            let _ = f.call0(&JsValue::NULL);
            settle().await;
        }
        self.clock.t.set(end);
        settle().await;
    }

    /// Moves the clock without running any timer (a host timer that fires late).
    pub fn jump(&self, ms: f64) {
        self.clock.t.set(self.now() + ms);
    }

    /// Fires the pending host timer due soonest, *now*, whatever its instant
    /// (a host that wakes early). False when none is pending.
    pub async fn fire_early(&self) -> bool {
        let Some((_, f)) = self.take_next(f64::INFINITY) else { return false };
        let _ = f.call0(&JsValue::NULL);
        settle().await;
        true
    }
}

impl Drop for FakeTime {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            set_clock(previous);
        }
    }
}

/// Every case, by name, for the runners' macros.
#[macro_export]
macro_rules! for_each_case {
    ($m:ident) => {
        $m! {
            deadline::signal_aborts_at_the_instant_with_the_branded_error,
            deadline::checkpoint_returns_before_the_instant_and_errs_from_it_on,
            deadline::repeated_signal_is_the_same_signal,
            deadline::a_parent_abort_propagates_its_reason,
            deadline::an_aborted_parent_aborts_at_once,
            deadline::a_passed_instant_gives_an_aborted_signal,
            deadline::min_takes_the_earlier_and_links_both_parents,
            deadline::reserve_is_earlier_and_keeps_parents,
            deadline::budget_is_min_of_preferred_and_remaining,
            deadline::bad_input_is_an_error_naming_the_parameter,
            deadline::step_is_not_started_below_its_minimum,
            deadline::dropping_a_deadline_leaves_nothing_pending,
            deadline::deadlines_linked_to_one_parent_share_its_listener_until_the_turn_ends,
            deadline::deadlines_linked_to_one_parent_abort_in_the_order_they_were_linked,
            deadline::shared_wakeups_fire_in_order_and_skip_dropped_ones,
            deadline::the_queue_survives_many_dropped_deadlines,
            deadline::a_host_timer_that_wakes_early_fires_nothing_and_is_re_armed,
            deadline::an_instant_past_the_host_limit_is_reached_in_slices_never_early,
            deadline::timeout_fires_not_before_its_instant_and_drop_clears_it,
            deadline::sleep_resolves_not_before_its_instant,
            deadline::the_host_clock_fires_deadlines_timeouts_and_sleeps_not_before_their_instants,
            deadline::errors_reach_javascript_branded_and_come_back,
            errors::is_timeout_is_true_for_every_time_based_error_directly_or_in_a_cause_chain,
            errors::is_timeout_is_false_for_a_shortage_and_other_failures,
            stall::chunks_pass_through_and_a_close_aborts_nothing,
            stall::no_first_chunk_is_a_first_chunk_stall_that_aborts_and_cancels,
            stall::silence_after_progress_is_a_stall_with_the_counts,
            stall::a_source_error_reaches_a_reader_that_is_not_reading,
            stall::the_wrapper_holds_the_process_only_while_a_read_waits_on_the_source,
            stall::the_deadline_ends_the_stream_with_deadline_exceeded,
            stall::bad_limits_name_the_parameter_and_leave_the_source_unlocked,
            stall::a_consumer_cancel_reaches_the_source_and_the_controller,
            stall::is_progress_decides_and_its_error_fails_the_stream,
            stall::a_slow_consumer_is_not_a_stalled_source,
            stall::a_followed_signal_ends_the_stream_with_its_reason,
            stall::silence_after_a_held_chunk_counts_from_the_read,
            stall::fetch_a_stalled_body_aborts_the_upstream_connection,
            stall::fetch_no_headers_within_first_byte_ms_is_a_first_byte_stall,
            stall::fetch_the_deadline_aborts_a_request_waiting_for_headers,
            stall::fetch_a_caller_signal_aborts_with_its_reason,
            stall::fetch_a_steady_body_arrives_whole,
            stall::fetch_bad_limits_fail_before_any_io,
            stall::sse_progress_counts_events_not_keep_alives,
            stall::fetch_sse_keep_alives_are_silence_by_default,
            stall::fetch_keep_alives_only_are_cut_at_the_default_first_chunk_wait,
            stall::fetch_a_blocked_consumer_is_not_a_stall_of_a_source_that_kept_sending,
            stall::fetch_sends_the_remaining_budget_in_the_packages_header_by_default,
            stall::fetch_propagate_chooses_the_formats_and_an_empty_list_sends_none,
            stall::fetch_keeps_the_callers_headers_and_never_overwrites_a_budget_header_they_set,
            stall::fetch_default_options_work_against_a_server_that_refuses_preflights,
            resume::resume_a_connection_that_fails_before_the_first_byte_is_made_again,
            resume::resume_a_keep_alive_only_attempt_is_cut_at_the_default_first_chunk_wait_and_retried,
            resume::resume_a_stalled_event_stream_continues_after_the_last_event_id,
            resume::resume_last_event_id_carries_the_ids_utf8_bytes,
            resume::resume_an_upstream_that_ignores_last_event_id_delivers_nothing_twice,
            resume::resume_the_hook_is_asked_when_last_event_id_is_ignored,
            resume::resume_a_hooks_response_continues_the_stream,
            resume::resume_a_hooks_200_to_a_byte_stream_is_a_failed_attempt_never_appended,
            resume::resume_a_hook_that_gives_no_response_errors_the_stream_with_a_type_error,
            resume::resume_a_503_with_too_little_time_left_is_the_answer_as_it_is,
            resume::resume_a_failed_connection_with_too_little_time_left_is_the_error,
            resume::resume_an_attempt_timeout_is_refused_before_any_io,
            resume::resume_an_event_past_max_event_bytes_ends_the_stream_at_once,
            resume::resume_an_event_held_past_raised_caps_reaches_the_reader_whole,
            resume::resume_past_the_remembered_ids_a_replay_from_an_older_id_delivers_no_duplicate,
            resume::resume_when_the_attempts_run_out_the_readers_error_is_ours_with_what_was_delivered,
            resume::resume_a_reader_slower_than_the_stall_limit_is_not_a_stall,
            resume::resume_a_shared_retry_budget_bounds_the_reads_attempts,
            resume::resume_a_readers_cancel_releases_the_upstream_and_makes_no_other_attempt,
            resume::resume_the_deadline_mid_stream_is_the_readers_error_as_it_is,
            pipeline::a_plan_caps_each_step_and_traces_it,
            pipeline::a_step_cut_at_its_cap_is_a_step_timeout,
            pipeline::a_short_deadline_skips_or_refuses_steps_never_a_range_error,
            pipeline::bad_plans_name_the_field,
            pipeline::a_parent_abort_ends_the_running_step,
            pipeline::retry_tries_again_until_an_attempt_succeeds,
            pipeline::retry_timeouts_then_exhausted_with_every_attempt_reported,
            pipeline::retry_never_repeats_an_ambiguous_non_idempotent_failure,
            pipeline::retry_ends_at_the_deadline,
            pipeline::retry_bad_options_name_the_option,
            pipeline::retry_refuses_a_server_wait_past_the_deadline_at_once,
            pipeline::hedge_the_first_answer_wins_and_the_others_are_aborted,
            pipeline::hedge_failures_read_as_in_js_and_name_the_last_attempt_to_fail,
            pipeline::headers_carry_what_is_left_and_never_extend_the_local_cap,
            pipeline::headers_every_copy_of_a_repeated_header_counts,
            pipeline::platform_caps_bound_the_deadline,
            pipeline::plan_stream_streams_the_body_and_ends_with_the_trace,
            pipeline::plan_stream_no_first_event_gets_the_fallback_step,
            pipeline::plan_stream_a_stall_after_content_ends_with_an_error_event,
            pipeline::plan_stream_on_error_gets_the_steps_error_while_the_client_gets_our_words,
            pipeline::plan_stream_too_little_time_runs_no_step_and_the_default_fallback_says_why,
            breaker::opens_after_failures_refuses_then_a_probe_closes_it,
            breaker::slow_calls_over_their_timeout_open_it_and_a_slow_probe_reopens,
            breaker::state_crosses_between_breakers_as_bytes_and_bad_bytes_change_nothing,
            breaker::bad_options_name_the_option,
            breaker::retry_waits_for_a_probe_when_the_deadline_allows_else_stops_circuit_open,
            breaker::a_plan_step_guarded_by_a_circuit_is_skipped_or_refused_and_the_fallback_runs,
            breaker::shed_calls_inner_refusals_and_callers_that_left_count_nothing,
            limiter::options_default_as_in_javascript_and_bad_ones_name_the_option,
            limiter::aimd_follows_round_trips_on_the_fake_clock,
            limiter::a_full_limiter_sheds_or_queues_by_budget_and_an_abort_leaves_the_queue,
            limiter::a_queued_caller_whose_budget_ran_out_before_its_turn_is_shed,
            book::a_book_sketches_successes_counts_the_rest_and_a_take_empties_it,
            book::a_book_flushes_to_its_aggregator_and_serves_the_table_within_the_step_and_the_floor,
            book::plan_steps_and_retries_record_into_a_book,
            book::a_flush_answered_with_some_buckets_refused_drops_those_only,
            book::a_refresh_timeout_starts_is_handed_to_its_ctx,
            conformance::the_table_holds_for_the_rust_api,
            request::for_request_takes_the_earliest_limit_and_names_it,
            request::for_request_follows_the_client_and_a_client_gone_is_a_shortage,
            request::the_wire_pair_carries_remaining_reserve_and_limit_capped,
        }
    };
}
