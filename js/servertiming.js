// Server-Timing header values (W3C Server Timing): how a request's budget was
// spent, shown by browser devtools next to the request. One metric per plan
// step; the middleware adds one for the deadline itself.
//
// A metric name is an HTTP token and a description a quoted string, so step
// names are made tokens (other characters become "_") and descriptions are
// escaped: a step named by the user can never break the header or inject a
// second one. Durations are rounded to 0.1 ms, as the trace's are read.

const NOT_TOKEN = /[^!#$%&'*+\-.^_`|~0-9A-Za-z]/g;

/** `name` as an HTTP token ("_" for an empty name). */
export function metricName(name) {
  const token = String(name).replace(NOT_TOKEN, "_");
  return token === "" ? "_" : token;
}

/** One metric: `name;dur=1.2;desc="…"` (`dur` left out when not a finite number). */
export function metric(name, durMs, desc) {
  let out = metricName(name);
  if (Number.isFinite(durMs)) out += `;dur=${Math.round(Math.max(0, durMs) * 10) / 10}`;
  if (desc !== undefined && desc !== "") out += `;desc="${String(desc).replace(/[\\"]/g, "\\$&").replace(/[\r\n]/g, " ")}"`;
  return out;
}
