//! Standard Workload Format reader (placeholder, being written).
