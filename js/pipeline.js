// pipeline: being written.
export {};
