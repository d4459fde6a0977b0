// The aggregator's Worker in the fleet test: the package's Durable Object
// class, one instance ("timeouts") answering every request.
import { TimeoutAggregator } from "../../pkg/durable-workerd.js";

export { TimeoutAggregator };

export default {
  fetch(request, env) {
    return env.AGG.get(env.AGG.idFromName("timeouts")).fetch(request);
  },
};
