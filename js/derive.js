// derive: being written.
export {};
