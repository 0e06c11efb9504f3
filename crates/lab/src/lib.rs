//! zmem-lab: experiments as functions from (workload, configuration) to result structs, and the
//! renderers that print them. Measuring and rendering are kept apart.
