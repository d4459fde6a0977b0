//! Bindings for the pipeline concept (being written).
