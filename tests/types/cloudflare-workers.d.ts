// The one thing the strict check of docs/recipes.md needs from the Workers runtime, which is not
// installed here (@cloudflare/workers-types would be): the `cloudflare:workers` module's
// `WorkerEntrypoint`, declared structurally, as far as the recipes use it.
declare module "cloudflare:workers" {
  export abstract class WorkerEntrypoint<Env = unknown> {
    protected ctx: { waitUntil(promise: Promise<unknown>): void };
    protected env: Env;
    constructor(ctx: { waitUntil(promise: Promise<unknown>): void }, env: Env);
  }
}
