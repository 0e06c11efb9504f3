//! zmem-workload: page sets (captured, generated, or read from files) and access traces.
