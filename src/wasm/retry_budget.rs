//! Bindings for [`crate::core::retry_budget`] (`js/retry_budget.js`).
//!
//! A [`RetryBudgetJs`] lives as long as the user's `RetryBudget` and is freed
//! by its `dispose()`. The options cross once as [`BudgetOptions`] (the
//! defaults are the core's); the window's counts come back as
//! [`BudgetCounts`](crate::core::retry_budget::BudgetCounts). Nothing here is
//! scalar by necessity: the budget is asked once per failed attempt, through
//! [`super::retry`], inside the same Wasm call; `counts()` is for logs
//! (through serde it measured slower in Node than a positional array, off
//! any hot path).

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, to_js, within_js};
use crate::core::retry_budget::{BudgetOptions, RetryBudget};

/// A shared [`RetryBudget`].
#[wasm_bindgen(js_name = RetryBudgetCore)]
pub struct RetryBudgetJs {
    budget: RetryBudget,
}

impl RetryBudgetJs {
    pub(super) fn budget(&self) -> &RetryBudget {
        &self.budget
    }

    pub(super) fn budget_mut(&mut self) -> &mut RetryBudget {
        &mut self.budget
    }
}

#[wasm_bindgen(js_class = RetryBudgetCore)]
impl RetryBudgetJs {
    /// Errors name the option as the user wrote it (`options.ratio`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "BudgetOptions | undefined")] options: JsValue,
    ) -> Result<RetryBudgetJs, JsValue> {
        let options: BudgetOptions =
            if options.is_undefined() { BudgetOptions::default() } else { from_js(options, "options")? };
        let budget = RetryBudget::from_options(&options).map_err(|e| within_js("options", &e))?;
        Ok(Self { budget })
    }

    /// The window ending at `now_ms`.
    #[wasm_bindgen(unchecked_return_type = "BudgetCounts")]
    pub fn counts(&mut self, now_ms: f64) -> Result<JsValue, JsValue> {
        into_js(&self.budget.window(now_ms).map_err(to_js)?)
    }
}
