//! Bindings for [`crate::core::simulate`] (`js/simulate.js`). The scenario,
//! the policies and the result cross through serde, their TypeScript
//! generated from the Rust types; the counts (`n`, `seed`, `retries`) are
//! checked in the core ([`crate::core::simulate::ScenarioSpec`]), with
//! their defaults.

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, to_js};
use crate::core::simulate::{self, PolicySpec, ScenarioSpec, Simulation};

#[wasm_bindgen(unchecked_return_type = "Simulation")]
pub fn simulate(
    #[wasm_bindgen(unchecked_param_type = "ScenarioSpec")] scenario: JsValue,
    #[wasm_bindgen(unchecked_param_type = "PolicySpec[]")] policies: JsValue,
) -> Result<JsValue, JsValue> {
    let scenario: ScenarioSpec = from_js(scenario, "scenario")?;
    let policies: Vec<PolicySpec> = from_js(policies, "policies")?;
    let sim: Simulation = simulate::simulate_spec(&scenario, &policies).map_err(to_js)?;
    into_js(&sim)
}
