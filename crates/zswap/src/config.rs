//! What a zswap instance is built with: the five module parameters of 6.18 (mm/zswap.c
//! `module_param_cb()` / `module_param_named()`: `enabled`, `compressor`, `max_pool_percent`,
//! `accept_threshold_percent`, `shrinker_enabled`) plus what the kernel
//! takes from elsewhere (RAM size, page size, the memcg writeback switch) and the choices older
//! kernels made differently (allocator, incompressible pages).

use zmem_comp::Params;

/// What happens to a page that does not compress below a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incompressible {
    /// 6.18+ (mm/zswap.c `zswap_compress()`): stored uncompressed (object length = page size,
    /// counted in `stored_incompressible_pages`) so it keeps its place in the LRU and writeback
    /// order. Only while the memcg allows writeback; otherwise rejected
    /// (`reject_compress_fail`, or `reject_compress_poor` for a compressor that returns
    /// -ENOSPC; see `crate::engine`).
    StoreAsIs,
    /// Before 6.18: rejected (`reject_compress_poor`), the page goes to the swap device.
    Reject,
}

/// The kernel's default `accept_threshold_percent` (mm/zswap.c `zswap_accept_thr_percent`).
pub const DEFAULT_ACCEPT_THRESHOLD: u32 = 90;

/// zswap's four tunable module parameters (`/sys/module/zswap/parameters`; `enabled` aside):
/// the one shape of them everywhere, the engine's configuration, the live state, a replay's
/// request and the lab's candidates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ZswapParams {
    /// `compressor`: an algorithm of the zmem-comp registry.
    pub compressor: String,
    /// `max_pool_percent` (default 20): the pool's limit, a share of all RAM.
    pub max_pool_percent: u32,
    /// `accept_threshold_percent` (default 90; 100 disables the hysteresis).
    pub accept_threshold_percent: u32,
    /// `shrinker_enabled` (default off unless `CONFIG_ZSWAP_SHRINKER_DEFAULT_ON`).
    pub shrinker_enabled: bool,
}

impl Default for ZswapParams {
    fn default() -> Self {
        Self {
            compressor: "lzo".into(),
            max_pool_percent: 20,
            accept_threshold_percent: DEFAULT_ACCEPT_THRESHOLD,
            shrinker_enabled: false,
        }
    }
}

impl ZswapParams {
    /// The configuration's name in every report: `zswap lzo max_pool_percent=20 shrinker=off`,
    /// with ` accept_threshold_percent=N` where it is not the kernel's default.
    pub fn label(&self) -> String {
        let accept = if self.accept_threshold_percent == DEFAULT_ACCEPT_THRESHOLD {
            String::new()
        } else {
            format!(" accept_threshold_percent={}", self.accept_threshold_percent)
        };
        format!(
            "zswap {} max_pool_percent={} shrinker={}{accept}",
            self.compressor,
            self.max_pool_percent,
            if self.shrinker_enabled { "on" } else { "off" }
        )
    }
}

/// Configuration of a [`crate::Zswap`].
#[derive(Debug, Clone)]
pub struct ZswapConfig {
    /// 4096, 16384 or 65536.
    pub page_size: usize,
    /// The four module parameters: `compressor` (kernel default
    /// `CONFIG_ZSWAP_COMPRESSOR_DEFAULT`, `lzo` unless configured otherwise),
    /// `max_pool_percent` (of `total_ram_pages`), `accept_threshold_percent` and
    /// `shrinker_enabled`, the memory-pressure shrinker ([`crate::Zswap::shrinker_scan`];
    /// kernel default `CONFIG_ZSWAP_SHRINKER_DEFAULT_ON`, off unless configured).
    pub module: ZswapParams,
    /// Compressor parameters (zswap has no knob for them; the algorithm's defaults apply).
    pub params: Params,
    /// Allocator of `zmem_pool::allocators()` (6.18 has only zsmalloc; zbud and z3fold are the
    /// zpool choices of older kernels).
    pub zpool: String,
    /// zsmalloc chain size (`CONFIG_ZSMALLOC_CHAIN_SIZE`, default 8).
    pub chain_size: usize,
    /// `totalram_pages()`: the RAM size the pool limit is a percentage of.
    pub total_ram_pages: u64,
    /// `enabled` (kernel default `CONFIG_ZSWAP_DEFAULT_ON`, off unless configured).
    pub enabled: bool,
    /// `memory.zswap.writeback` of the (single) memcg (`mem_cgroup_zswap_writeback_enabled()`):
    /// 0 disables writeback (`shrink_memcg()` -ENOENT), the shrinker (`zswap_shrinker_count()`
    /// and `_scan()` do nothing) and as-is storage (`zswap_compress()`).
    pub writeback: bool,
    /// `memory.zswap.max` of the (single) memcg, in pages, as mm/memcontrol.c
    /// `obj_cgroup_may_zswap()` applies it in `zswap_store()`: `None` where the file says
    /// `max`, and on cgroup v1, where the check always passes (`!cgroup_subsys_on_dfl()`). With
    /// a hierarchy, the tightest limit of the memcg and its ancestors below the root (each
    /// level compares the same `MEMCG_ZSWAP_B` when this memcg is the only one in zswap).
    pub zswap_max_pages: Option<u64>,
    /// Whether the memcg's zswap statistics count its entries (cgroup v2). 6.18's mm/
    /// memcontrol.c `obj_cgroup_charge_zswap()` returns at once on cgroup v1
    /// (`!cgroup_subsys_on_dfl()`), so `MEMCG_ZSWAPPED` stays 0 there and mm/zswap.c
    /// `zswap_shrinker_count()`, which reads it with memcg on, counts nothing: on v1 the
    /// shrinker never writes back (the pool limit's shrink worker still does).
    pub memcg_charged: bool,
    pub incompressible: Incompressible,
    /// Where the shrink worker runs. 6.18's runs on its own workqueue (mm/zswap.c
    /// `zswap_store()` -> `queue_work(shrink_wq, ...)`), beside the task that stores, and a
    /// `queue_work()` of work already queued does nothing (kernel/workqueue.c
    /// `queue_work_on()` tests and sets `WORK_STRUCT_PENDING`), so the stores rejected while
    /// it waits for a CPU queue it once. `None`: it runs right after the store that queued it
    /// ([`crate::SwapLayer::swap_out`]). `Some(n)`: it stays queued until `n` stores were
    /// rejected since it was queued (the time the kworker takes to wake and run, in the
    /// storing task's rejected stores), or the owner's scheduling point calls
    /// [`crate::Zswap::run_queued_work`] (a replay: the end of each reclaim).
    pub queued_shrink_work: Option<u32>,
}

impl Default for ZswapConfig {
    fn default() -> Self {
        Self {
            page_size: 4096,
            module: ZswapParams::default(),
            params: Params::default(),
            zpool: "zsmalloc".into(),
            chain_size: 8,
            total_ram_pages: 1 << 18,
            enabled: true,
            writeback: true,
            zswap_max_pages: None,
            memcg_charged: true,
            incompressible: Incompressible::StoreAsIs,
            queued_shrink_work: None,
        }
    }
}

/// Parses a kernel bool parameter as kernel/params.c `param_set_bool()` does with lib/kstrtox.c
/// `kstrtobool()`: only the
/// first character counts (`y Y t T e E 1` true, `n N f F d D 0` false), or the first two for
/// `o`: `on`/`off` in either case. "yes", "true", "enable", "disable" all work; nothing else.
pub(crate) fn parse_bool(v: &str) -> Option<bool> {
    let mut c = v.bytes();
    match c.next()? {
        b'y' | b'Y' | b't' | b'T' | b'e' | b'E' | b'1' => Some(true),
        b'n' | b'N' | b'f' | b'F' | b'd' | b'D' | b'0' => Some(false),
        b'o' | b'O' => match c.next()? {
            b'n' | b'N' => Some(true),
            b'f' | b'F' => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Parses a percentage parameter. 6.18 declares `max_pool_percent` and
/// `accept_threshold_percent` as plain `uint` parameters (mm/zswap.c `module_param_named(...,
/// uint, 0644)`: kernel/params.c `param_set_uint()`, `kstrtouint` in
/// base 0): any 32-bit value is taken, 150 included, in decimal, `0x` hex or `0` octal, with
/// an optional `+` and one trailing newline.
pub(crate) fn parse_percent(name: &str, v: &str) -> Result<u32, crate::ZswapError> {
    kstrtouint(v).ok_or_else(|| crate::ZswapError::Config(format!("{name}={v:?} (want a uint)")))
}

/// `kstrtouint(s, 0)`.
fn kstrtouint(v: &str) -> Option<u32> {
    let s = v.strip_suffix('\n').unwrap_or(v);
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lib/kstrtox.c `kstrtobool` as 6.18 has it (checked on a live 6.18.44 kernel's
    /// `/sys/module/zswap/parameters/shrinker_enabled`).
    #[test]
    fn kstrtobool_takes_the_6_18_spellings() {
        for t in ["y", "Y", "yes", "1", "t", "true", "T", "e", "enable", "E", "on", "ON", "oN\n"] {
            assert_eq!(parse_bool(t), Some(true), "{t:?}");
        }
        for f in ["n", "N", "no", "0", "f", "false", "F", "d", "disable", "D", "off", "OfF"] {
            assert_eq!(parse_bool(f), Some(false), "{f:?}");
        }
        for bad in ["", "x", "o", "ox", " y", "2", "-1"] {
            assert_eq!(parse_bool(bad), None, "{bad:?}");
        }
    }

    /// `param_set_uint`: 6.18 bounds neither percentage (a live 6.18.44 kernel takes 150).
    #[test]
    fn percentages_are_plain_uints_as_param_set_uint() {
        for (text, want) in [("150", 150), ("100", 100), ("0", 0), ("0x20", 32), ("010", 8)] {
            assert_eq!(parse_percent("p", text).unwrap(), want, "{text:?}");
        }
        assert_eq!(parse_percent("p", "20\n").unwrap(), 20);
        assert_eq!(parse_percent("p", "4294967295").unwrap(), u32::MAX);
        for bad in ["4294967296", "-1", "abc", " 20", "", "0x", "20\n\n", "1.5"] {
            assert!(parse_percent("p", bad).is_err(), "{bad:?}");
        }
    }
}
