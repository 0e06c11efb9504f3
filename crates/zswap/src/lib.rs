//! zmem-zswap: the zswap cache engine over `zmem-comp` streams, any `zmem-pool` allocator and a
//! backing swap store.
