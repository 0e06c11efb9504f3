//! The swap readahead a replay runs with, where the caller did not say: this machine's (its
//! `/sys/kernel/mm/swap/vma_ra_enabled` and `vm.page-cluster`), as both front doors take it.

use zmem_sim::replay::Readahead;

/// The readahead to replay with: what was asked, else this machine's settings, else the
/// kernel's defaults (VMA readahead, `vm.page-cluster` 3). VMA readahead needs no rotational
/// swap area on (6.18 `swap_use_vma_readahead()`): a swap file on `device` that is rotational
/// (the `hdd` profile, or a measured path on a rotational disk) reads by cluster.
pub fn settings(
    mode: Option<Readahead>,
    page_cluster: Option<u32>,
    device: &zmem_sim::swap_device::SwapDevice,
) -> (Readahead, u32) {
    let live = zmem_kernel::stat::swap_readahead().ok();
    let rotational = if device.kind == "profile" {
        device.name == "hdd"
    } else {
        zmem_kernel::stat::rotational(std::path::Path::new(&device.name)).unwrap_or(false)
    };
    let mode = mode.unwrap_or(match live {
        Some(l) if !l.vma_ra_enabled => Readahead::Cluster,
        _ if rotational => Readahead::Cluster,
        _ => Readahead::Vma,
    });
    let page_cluster = page_cluster
        .or(live.map(|l| l.page_cluster))
        .unwrap_or(zmem_sim::replay::DEFAULT_PAGE_CLUSTER);
    (mode, page_cluster)
}
