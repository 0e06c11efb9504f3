//! zmem-zram: the zram device engine over `zmem-comp` streams and any `zmem-pool` allocator.
