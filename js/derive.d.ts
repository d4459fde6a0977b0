// Types for js/derive.js (being written).
export {};
