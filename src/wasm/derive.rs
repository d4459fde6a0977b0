//! Bindings for the derive concept (being written).
