// Every JS test case, one module per concept (same names as src/core/ and js/).
import deadline from "./deadline.js";

export const cases = [...deadline];
