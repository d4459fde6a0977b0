//! Bindings for the stall concept (being written).
