// Types for js/stall.js (being written).
export {};
