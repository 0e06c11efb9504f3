//! Allocators by name, as zswap's `zpool` parameter named them.

use std::sync::Arc;

use crate::{PoolConfig, PoolError, Z3foldPool, ZPool, ZbudPool, ZsPool};

type Builder = fn(&PoolConfig) -> Result<Arc<dyn ZPool>, PoolError>;

/// One allocator the registry can build.
#[derive(Debug)]
pub struct Allocator {
    /// The kernel's name.
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// Whether current kernels still ship it (zbud and z3fold were removed in 6.15).
    pub in_kernel: bool,
    build: Builder,
}

impl Allocator {
    /// Builds a pool.
    pub fn create(&self, config: &PoolConfig) -> Result<Arc<dyn ZPool>, PoolError> {
        (self.build)(config)
    }
}

static ALLOCATORS: &[Allocator] = &[
    Allocator {
        name: "zsmalloc",
        summary: "size classes over multi-page zspages; objects may straddle pages; compaction",
        in_kernel: true,
        build: |c| Ok(Arc::new(ZsPool::new(c)?)),
    },
    Allocator {
        name: "zbud",
        summary: "at most two objects (first/last buddy) per page, 1/64-page chunks",
        in_kernel: false,
        build: |c| Ok(Arc::new(ZbudPool::new(c)?)),
    },
    Allocator {
        name: "z3fold",
        summary: "up to three objects (first/middle/last) per page, headless pages for large ones",
        in_kernel: false,
        build: |c| Ok(Arc::new(Z3foldPool::new(c)?)),
    },
];

/// Every allocator, zsmalloc first.
pub fn allocators() -> &'static [Allocator] {
    ALLOCATORS
}

/// Looks an allocator up by name.
pub fn find(name: &str) -> Result<&'static Allocator, PoolError> {
    ALLOCATORS.iter().find(|a| a.name == name).ok_or_else(|| PoolError::UnknownAllocator {
        name: name.to_string(),
        available: ALLOCATORS.iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
    })
}

/// Builds the named allocator.
pub fn create(name: &str, config: &PoolConfig) -> Result<Arc<dyn ZPool>, PoolError> {
    find(name)?.create(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocator_builds_and_reports_its_name() {
        for a in allocators() {
            for ps in crate::PAGE_SIZES {
                let p = a.create(&PoolConfig { page_size: ps, ..PoolConfig::default() }).unwrap();
                assert_eq!((p.name(), p.page_size(), p.total_pages()), (a.name, ps, 0));
            }
            assert!(a.create(&PoolConfig { page_size: 8192, ..PoolConfig::default() }).is_err());
        }
    }

    #[test]
    fn unknown_names_list_the_available_ones() {
        let e = create("zblock", &PoolConfig::default()).unwrap_err().to_string();
        assert!(e.contains("zblock") && e.contains("zsmalloc, zbud, z3fold"), "{e}");
    }
}
