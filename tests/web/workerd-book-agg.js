// The Rust book Worker's way to the aggregator in tests/web/workerd.test.mjs, as
// the fleet recipe has it: the application's own Worker reaches the
// TimeoutAggregator Durable Object by RPC through its binding (no token, no
// public route). The Rust book's `Aggregator::Fetcher` is a service binding to
// this Worker, which hands its POST /flush and GET /table to the object.
import { aggregatorBinding } from "../../pkg/durable-workerd.js";

export default {
  fetch(request, env) {
    return aggregatorBinding(() => env.TIMEOUTS.get(env.TIMEOUTS.idFromName("timeouts"))).fetch(request);
  },
};
