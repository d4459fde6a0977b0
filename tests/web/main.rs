//! wasm-bindgen-test suites of the `web` feature: the cases in tests/web/cases/
//! in Node (default) and headless Chromium (the runner serves the page with
//! `WASM_BINDGEN_USE_BROWSER=1 NO_HEADLESS=1`; tests/run.mjs drives the
//! browser through playwright-core). Run through `node tests/run.mjs
//! web-node web-chromium`, which also passes the fixture server's URL
//! (`FIXTURE_URL`, read at compile time).
#![cfg(all(target_arch = "wasm32", feature = "web"))]

use wasm_bindgen_test::wasm_bindgen_test;

mod cases;

fn ctx() -> cases::Ctx {
    cases::Ctx { fixture: option_env!("FIXTURE_URL").map(str::to_string) }
}

macro_rules! wasm_bindgen_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[wasm_bindgen_test]
            async fn $name() {
                if let Err(message) = cases::$module::$name(&ctx()).await {
                    panic!("{message}");
                }
            }
        )*
    };
}

for_each_case!(wasm_bindgen_tests);
