// Types for js/pipeline.js (being written).
export {};
