// What the strict check of the docs' Deno examples needs from the Deno runtime, which is not
// installed here as types: `Deno.openKv`, `Deno.env` and `Deno.serve`, declared structurally,
// as far as the examples use them.
declare var Deno: {
  openKv(path?: string): Promise<unknown>;
  env: { get(name: string): string | undefined };
  serve(handler: (request: Request) => Response | Promise<Response>): unknown;
};
