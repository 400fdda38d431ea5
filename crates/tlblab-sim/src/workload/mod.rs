//! Built-in synthetic workloads.
