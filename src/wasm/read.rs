//! Bindings for [`crate::core::read`] (`ReadMachine`): convert, call the
//! machine, convert. Each input is one method with the time; the actions
//! come out one per [`ReadMachineJs::poll`] call, as a [`ReadAction`] (a
//! `#[wasm_bindgen]` enum: a number both sides name, `core.ReadAction` in
//! JavaScript), their fields read with getters (scalars, as the other
//! per-chunk bindings: no object is built per action). The retry loop is a
//! [`RetryRun`](super::retry::RetryRunJs), moved in. A shared retry budget
//! (js/retry_budget.js) is lent around each input ([`ReadMachineJs::lend`],
//! [`ReadMachineJs::give_back`]): wasm-bindgen takes no optional borrowed
//! object, and one pair of calls is smaller than a budgeted twin of each input.

use wasm_bindgen::prelude::*;

use super::retry::RetryRunJs;
use super::retry_budget::RetryBudgetJs;
use crate::core::read::{Action, Cause, Ending, Head, How, Input, Read, ReadOptions};
use crate::core::retry::Failure;
use crate::core::retry_budget::RetryBudget;

/// One streamed read's machine.
#[wasm_bindgen(js_name = ReadMachine)]
pub struct ReadMachineJs {
    read: Read,
    /// The action [`poll`](ReadMachineJs::poll) took last.
    last: Option<Action>,
    /// The shared retry budget while it is lent (a copy, given back after the input).
    budget: Option<RetryBudget>,
    /// The action after the first one an input answered with, if any.
    next: Option<Action>,
}

named_enum! {
    /// An action of the machine ([`Action`]), as [`ReadMachineJs::poll`]
    /// answers it, its fields read with the getters: `Connect` its
    /// [`attempt`](ReadMachineJs::attempt) and [`how`](ReadMachineJs::how),
    /// `Wake` its [`at`](ReadMachineJs::at), `End` its
    /// [`ending`](ReadMachineJs::ending); `Deliver` hands on the next
    /// [`count`](ReadMachineJs::count) bytes kept as one piece, `DeliverPieces`
    /// in the pieces kept, `Discard` drops them; `DeliverChunk` hands on the
    /// chunk just given as it came, `Keep` keeps it.
    ReadAction from &Option<Action> {
        Nothing = None,
        Connect = Some(Action::Connect { .. }),
        Abort = Some(Action::Abort),
        Deliver = Some(Action::Deliver { join: true, .. }),
        Wake = Some(Action::Wake { .. }),
        End = Some(Action::End(_)),
        DeliverChunk = Some(Action::DeliverChunk),
        Keep = Some(Action::Keep),
        Discard = Some(Action::Discard(_)),
        DeliverPieces = Some(Action::Deliver { join: false, .. }),
    }
}

/// The parts of a first action, as [`chunk`](ReadMachineJs::chunk) and
/// [`unhold`](ReadMachineJs::unhold) answer it: its [`ReadAction`] under
/// `Kind`, plus `More` when more follow, plus `Sampling` while the stall
/// watcher samples ([`Read::sampling`]).
#[wasm_bindgen]
pub enum ReadFlag {
    Kind = 15,
    More = 16,
    Sampling = 32,
}

named_enum! {
    /// A connect's way ([`How`]), as [`how`](ReadMachineJs::how) answers it.
    ReadHow from &Option<Action> {
        LastEventId = Some(Action::Connect { how: How::LastEventId(_), .. }),
        Hook = Some(Action::Connect { how: How::Hook { .. }, .. }),
        AsItWas = _,
    }
}

named_enum! {
    /// An end's kind ([`Ending`]), as [`ending`](ReadMachineJs::ending) answers it.
    ReadEnding from &Option<Action> {
        Done = Some(Action::End(Ending::Done)),
        HandBack = Some(Action::End(Ending::HandBack)),
        Cancelled = Some(Action::End(Ending::Cancelled)),
        Failed = _,
    }
}

fn failure(word: &str) -> Result<Failure, JsValue> {
    Failure::parse(word).map_err(super::to_js)
}

impl ReadMachineJs {
    fn handle(&mut self, input: Input<'_>, now_ms: f64) {
        self.read.handle(input, now_ms, self.budget.as_mut());
    }
}

#[wasm_bindgen(js_class = ReadMachine)]
impl ReadMachineJs {
    /// Lends the shared retry budget to the inputs that follow, until
    /// [`give_back`](Self::give_back): the read's attempts are counted in it
    /// and its retries drawn from it.
    pub fn lend(&mut self, budget: &RetryBudgetJs) {
        self.budget = Some(budget.budget().clone());
    }

    /// Gives the lent budget back, as the inputs left it.
    #[wasm_bindgen(js_name = giveBack)]
    pub fn give_back(&mut self, budget: &mut RetryBudgetJs) {
        if let Some(b) = self.budget.take() {
            *budget.budget_mut() = b;
        }
    }

    /// A read whose attempts `run` allows, with the checked options.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)] // scalar: serde options cost the main .wasm most of the Worker's room (BENCHMARKS.md, "Size and start-up")
    pub fn new(
        run: RetryRunJs,
        deadline_at: f64,
        first_byte_ms: Option<f64>,
        first_chunk_ms: Option<f64>,
        stall_ms: Option<f64>,
        from_headers: bool,
        hook: bool,
        max_event_bytes: f64,
        max_line_bytes: f64,
    ) -> ReadMachineJs {
        let o = ReadOptions {
            deadline_at,
            first_byte_ms,
            first_chunk_ms,
            stall_ms,
            from_headers,
            hook,
            max_event_bytes: max_event_bytes as usize,
            max_line_bytes: max_line_bytes as usize,
        };
        Self { read: Read::new(o, run.run), last: None, budget: None, next: None }
    }

    /// [`Input::Start`].
    pub fn start(&mut self, now_ms: f64) {
        self.handle(Input::Start, now_ms);
    }

    /// [`Input::Head`]: `failure`, the caller's `classify` of a non-ok answer.
    #[allow(clippy::too_many_arguments)] // scalar: as `new`
    pub fn head(
        &mut self,
        now_ms: f64,
        status: u16,
        event_stream: bool,
        content_range: Option<String>,
        body: bool,
        failure_word: Option<String>,
        server_wait_ms: Option<f64>,
    ) -> Result<(), JsValue> {
        let failure = failure_word.as_deref().map(failure).transpose()?;
        let head =
            Head { status, event_stream, content_range: content_range.as_deref(), body, failure, server_wait_ms };
        self.handle(Input::Head(head), now_ms);
        Ok(())
    }

    /// [`Input::Chunk`]: `progress`, the caller's predicate's answer; when
    /// `held_from` is a number (not NaN), a hold the host has not told yet
    /// comes first ([`Input::Hold`] at `held_from`, [`Input::Unhold`] at
    /// `held_to`, if a number): the reader kept the last piece meanwhile.
    /// Answers the first action as [`ReadFlag`] parts (with `More`, `poll`
    /// gives the rest; without, it gives none): calls less per chunk. The
    /// instants are numbers, NaN for none, not options: an option crosses
    /// as a JS boolean and a number, and JavaScriptCore (Bun) converts a
    /// boolean argument on a slow path, on every chunk (BENCHMARKS.md,
    /// "Streams that recover").
    pub fn chunk(&mut self, now_ms: f64, bytes: &[u8], progress: Option<bool>, held_from: f64, held_to: f64) -> u8 {
        self.held(held_from, held_to);
        self.handle(Input::Chunk { bytes, progress }, now_ms);
        self.first()
    }

    /// [`Input::Counted`]: a chunk of a body that is not an event stream,
    /// by its length (its bytes do not cross); otherwise as [`chunk`](Self::chunk).
    #[wasm_bindgen(js_name = chunkLen)]
    pub fn chunk_len(&mut self, now_ms: f64, len: f64, progress: Option<bool>, held_from: f64, held_to: f64) -> u8 {
        self.held(held_from, held_to);
        self.handle(Input::Counted { len: len as usize, progress }, now_ms);
        self.first()
    }

    /// A hold the host has not told yet: [`Input::Hold`] at `from`, then
    /// [`Input::Unhold`] at `to`, each if not NaN.
    fn held(&mut self, from: f64, to: f64) {
        if !from.is_nan() {
            self.handle(Input::Hold, from);
            if !to.is_nan() {
                self.handle(Input::Unhold, to);
            }
        }
    }

    /// [`Input::End`].
    pub fn end(&mut self, now_ms: f64) {
        self.handle(Input::End, now_ms);
    }

    /// [`Input::Wake`].
    pub fn wake(&mut self, now_ms: f64) {
        self.handle(Input::Wake, now_ms);
    }

    /// [`Input::Failed`], classified as `failure` (a [`Failure`] word).
    pub fn failed(&mut self, now_ms: f64, failure_word: &str, server_wait_ms: Option<f64>) -> Result<(), JsValue> {
        let failure = failure(failure_word)?;
        self.handle(Input::Failed { failure, server_wait_ms }, now_ms);
        Ok(())
    }

    /// [`Input::HookDeclined`].
    pub fn declined(&mut self, now_ms: f64) {
        self.handle(Input::HookDeclined, now_ms);
    }

    /// [`Input::Hold`].
    pub fn hold(&mut self, now_ms: f64) {
        self.handle(Input::Hold, now_ms);
    }

    /// [`Input::Unhold`]. Answers the first action as [`chunk`](Self::chunk) does.
    pub fn unhold(&mut self, now_ms: f64) -> u8 {
        self.handle(Input::Unhold, now_ms);
        self.first()
    }

    /// Takes the first action, as [`poll`](Self::poll), with its [`ReadFlag`] parts.
    fn first(&mut self) -> u8 {
        let kind = self.poll() as u8;
        self.next = self.read.poll();
        let more = if self.next.is_some() { ReadFlag::More as u8 } else { 0 };
        let sampling = if self.read.sampling() { ReadFlag::Sampling as u8 } else { 0 };
        kind | more | sampling
    }

    /// [`Input::Cancel`].
    pub fn cancel(&mut self, now_ms: f64) {
        self.handle(Input::Cancel, now_ms);
    }

    /// [`Input::Aborted`].
    pub fn aborted(&mut self, now_ms: f64, deadline: bool) {
        self.handle(Input::Aborted { deadline }, now_ms);
    }

    /// Takes the next action; its fields are read with the getters below.
    pub fn poll(&mut self) -> ReadAction {
        self.last = match self.next.take() {
            Some(next) => Some(next),
            None => self.read.poll(),
        };
        ReadAction::from(&self.last)
    }

    /// A connect's attempt number.
    pub fn attempt(&self) -> u32 {
        match self.last {
            Some(Action::Connect { attempt, .. }) => attempt,
            _ => 0,
        }
    }

    /// A connect's way.
    pub fn how(&self) -> ReadHow {
        ReadHow::from(&self.last)
    }

    /// A connect's last event id (by id, or the hook's), if any.
    #[wasm_bindgen(js_name = lastEventId)]
    pub fn last_event_id(&self) -> Option<String> {
        match &self.last {
            Some(Action::Connect { how: How::LastEventId(id), .. }) => Some(id.clone()),
            Some(Action::Connect { how: How::Hook { last_event_id, .. }, .. }) => last_event_id.clone(),
            _ => None,
        }
    }

    /// How many kept bytes a deliver hands on or a discard drops.
    pub fn count(&self) -> f64 {
        match self.last {
            Some(Action::Deliver { len: n, .. } | Action::Discard(n)) => n as f64,
            _ => 0.0,
        }
    }

    /// A wake's instant (`Infinity`: disarm).
    pub fn at(&self) -> f64 {
        match self.last {
            Some(Action::Wake { at_ms }) => at_ms,
            _ => f64::INFINITY,
        }
    }

    /// Bytes that reached the reader (a hook's `bytes`, an error's `deliveredBytes`).
    #[wasm_bindgen(js_name = deliveredBytes)]
    pub fn delivered_bytes(&self) -> f64 {
        self.read.delivered_bytes()
    }

    /// An end's kind ([`error`](Self::error) tells a failed one's).
    pub fn ending(&self) -> ReadEnding {
        ReadEnding::from(&self.last)
    }

    /// A failed end's error, as `[class, detail, message, deliveredBytes,
    /// status, code, reason]` (`message` and `deliveredBytes` `undefined`
    /// where there is none: see [`ReadError`](crate::core::read::ReadError)).
    pub fn error(&self) -> js_sys::Array {
        let Some(Action::End(Ending::Failed(f))) = &self.last else { return js_sys::Array::new() };
        let fallback = f.error.fallback();
        let opt = |v: Option<JsValue>| v.unwrap_or(JsValue::UNDEFINED);
        [
            f.error.class().into(),
            f.error.detail().into(),
            opt(f.error.message().map(JsValue::from)),
            opt(f.delivered_bytes.map(JsValue::from)),
            fallback.status.into(),
            fallback.code.into(),
            fallback.reason.into(),
        ]
        .iter()
        .collect()
    }

    /// What ended the last failed attempt ([`Read::last_cause`]), as
    /// `[kind, detail, afterMs, chunks, bytes, status]`: kind `stalled` (detail
    /// its phase, with the verdict's numbers), `status` (its status),
    /// `refused` (detail the refusal's word, its status), `host` (the host's
    /// own error) or `none`.
    pub fn cause(&self) -> js_sys::Array {
        let (kind, detail, after_ms, chunks, bytes, status) = match self.read.last_cause() {
            None => ("none", "-", 0.0, 0.0, 0.0, 0),
            Some(Cause::Stalled { phase, after_ms, chunks, bytes }) => ("stalled", phase, after_ms, chunks, bytes, 0),
            Some(Cause::Status(status)) => ("status", "-", 0.0, 0.0, 0.0, status),
            Some(Cause::Refused(code, status)) => ("refused", code, 0.0, 0.0, 0.0, status),
            Some(Cause::Host) => ("host", "-", 0.0, 0.0, 0.0, 0),
        };
        [kind.into(), detail.into(), after_ms.into(), chunks.into(), bytes.into(), JsValue::from(status)]
            .iter()
            .collect()
    }

    /// Every finished attempt, oldest first (a `RetryFailed`'s `attempts`).
    #[wasm_bindgen(unchecked_return_type = "AttemptRecord[]")]
    pub fn records(&self) -> Result<js_sys::Array, JsValue> {
        super::array_js(self.read.run().records())
    }

    /// Whether a resume by id can still be checked ([`Read::ids_checkable`]).
    pub fn checkable(&self) -> bool {
        self.read.ids_checkable()
    }

    /// Whether content reached the reader ([`Read::content`]).
    pub fn content(&self) -> bool {
        self.read.content()
    }
}
