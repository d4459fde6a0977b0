// stall: being written.
export {};
