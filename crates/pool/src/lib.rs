//! zmem-pool: the zpool allocators that pack compressed pages (zsmalloc, zbud, z3fold) over a
//! counting page arena. Filled in by the allocator work (issue 3).
