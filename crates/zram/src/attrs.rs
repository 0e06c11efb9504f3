//! The control surface: `store(attr, text)` and `show(attr)` with the attribute names, modes,
//! parse rules, errors and output formats of `/sys/block/zramN` in Linux 6.18: the `*_store()`
//! and `*_show()` handlers of drivers/block/zram/zram_drv.c, each cited where it is modelled.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::device::{MAX_COMPS, ObjectSource, Zram};
use crate::errno::{Errno, ZramError, err};
use crate::parse::{self, kstrto, kstrtoull, memparse, strip_newline, sysfs_streq};
use crate::postprocess::{RecompMode, RecompressRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ro,
    Wo,
    Rw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Always,
    Writeback,
    MultiComp,
}

/// Every attribute, its mode, and the build option it needs: zram_drv.c `zram_disk_attrs[]`
/// and the `DEVICE_ATTR_RO/WO/RW` lines above it (CONFIG_ZRAM_WRITEBACK, CONFIG_ZRAM_MULTI_COMP).
const ATTRS: &[(&str, Mode, Needs)] = &[
    ("disksize", Mode::Rw, Needs::Always),
    ("initstate", Mode::Ro, Needs::Always),
    ("reset", Mode::Wo, Needs::Always),
    ("compact", Mode::Wo, Needs::Always),
    ("mem_limit", Mode::Wo, Needs::Always),
    ("mem_used_max", Mode::Wo, Needs::Always),
    ("idle", Mode::Wo, Needs::Always),
    ("comp_algorithm", Mode::Rw, Needs::Always),
    ("algorithm_params", Mode::Wo, Needs::Always),
    ("io_stat", Mode::Ro, Needs::Always),
    ("mm_stat", Mode::Ro, Needs::Always),
    ("debug_stat", Mode::Ro, Needs::Always),
    ("backing_dev", Mode::Rw, Needs::Writeback),
    ("writeback", Mode::Wo, Needs::Writeback),
    ("writeback_limit", Mode::Rw, Needs::Writeback),
    ("writeback_limit_enable", Mode::Rw, Needs::Writeback),
    ("bd_stat", Mode::Ro, Needs::Writeback),
    ("recomp_algorithm", Mode::Rw, Needs::MultiComp),
    ("recompress", Mode::Wo, Needs::MultiComp),
];

impl Zram {
    /// The attributes this device has (those of its build options).
    pub fn attributes(&self) -> Vec<&'static str> {
        ATTRS.iter().filter(|a| self.has(a.2)).map(|a| a.0).collect()
    }

    fn has(&self, needs: Needs) -> bool {
        match needs {
            Needs::Always => true,
            Needs::Writeback => self.config.features.writeback,
            Needs::MultiComp => self.config.features.multi_comp,
        }
    }

    fn mode(&self, attr: &str) -> Result<Mode, ZramError> {
        match ATTRS.iter().find(|a| a.0 == attr) {
            Some(&(_, mode, needs)) if self.has(needs) => Ok(mode),
            _ => err(Errno::ENOENT, format!("no attribute {attr:?}")),
        }
    }

    /// `echo text > /sys/block/zramN/attr`.
    pub fn store(&self, attr: &str, text: &str) -> Result<(), ZramError> {
        if self.mode(attr)? == Mode::Ro {
            return err(Errno::EACCES, format!("{attr} is read-only"));
        }
        match attr {
            // zram_drv.c `disksize_store()`: `memparse()` of 0 is EINVAL; the rest is `init`.
            "disksize" => {
                let size = memparse(text);
                if size == 0 {
                    return err(Errno::EINVAL, format!("bad disksize {:?}", strip_newline(text)));
                }
                self.init(size)
            }
            // zram_drv.c `reset_store()`: `kstrtou16()`, its error as it is; 0 is EINVAL.
            "reset" => {
                if kstrto::<u16>(text, 10)? == 0 {
                    return err(Errno::EINVAL, "reset needs a non-zero value");
                }
                // `reset_store()`: EBUSY while the disk is open (`disk_openers()`) or claimed;
                // else it sets `zram->claim` (so `zram_open()` is EBUSY) for the time of the
                // reset (`zram_reset_device()`).
                let _claim = self.claim()?;
                self.reset();
                Ok(())
            }
            // zram_drv.c `compact_store()`: EINVAL before `disksize`, else `zs_compact()`.
            "compact" => {
                self.live_or(Errno::EINVAL)?.pool.compact();
                Ok(())
            }
            "mem_limit" => {
                // zram_drv.c `mem_limit_store()`: `memparse()` must consume something
                // (`buf == tmp` is EINVAL, the old limit stays). lib/cmdline.c `memparse()` is
                // `simple_strtoull()` (no sign, no leading space) then one suffix letter, so
                // that is text starting with a decimal digit or a bare suffix (`K`: 0 KiB).
                if !text.starts_with(|c: char| c.is_ascii_digit() || "KMGTPEkmgtpe".contains(c)) {
                    return err(Errno::EINVAL, format!("bad mem_limit {:?}", strip_newline(text)));
                }
                // `PAGE_ALIGN(limit) >> PAGE_SHIFT`: from 2^64 - PAGE_SIZE + 1 on the alignment
                // wraps to 0 pages, which is no limit.
                let ps = self.page_size() as u64;
                let limit = crate::device::page_align(memparse(text), ps);
                self.limit_pages.store(limit / ps, Ordering::Relaxed);
                Ok(())
            }
            // zram_drv.c `mem_used_max_store()`: `kstrtoul(buf, 10)` must read 0, else EINVAL;
            // on an initialised device the maximum restarts at `zs_get_total_pages()`.
            "mem_used_max" => {
                if parse::kstrtou::<u64>(text, 10).ok() != Some(0) {
                    return err(Errno::EINVAL, "mem_used_max only takes 0");
                }
                if let Some(live) = self.live() {
                    self.stats.max_used_pages.store(live.pool.total_pages(), Ordering::Relaxed);
                }
                Ok(())
            }
            // zram_drv.c `idle_store()`: `all`, or (CONFIG_ZRAM_TRACK_ENTRY_ACTIME only) an
            // age in seconds by `kstrtoull(buf, 0)`; anything else is EINVAL before the init
            // check, which is EINVAL too (`mark_idle`).
            "idle" => {
                let age = if sysfs_streq(text, "all") {
                    None
                } else if self.config.features.track_actime {
                    Some(kstrtoull(text, 0).map_err(|_| {
                        ZramError::new(Errno::EINVAL, "idle takes `all` or an age in seconds")
                    })?)
                } else {
                    return err(Errno::EINVAL, "idle takes `all`");
                };
                self.mark_idle(age)
            }
            "comp_algorithm" => self.set_algorithm(0, text),
            // zram_drv.c `recomp_algorithm_store()`: `next_arg()` pairs, each with a value
            // (EINVAL), `priority` by `kstrtoint()`; `algo` required, priority 1..=3, then
            // `__comp_algorithm_store()`.
            "recomp_algorithm" => {
                let (mut algo, mut prio) = (None, 1i64);
                for a in parse::args(text) {
                    let val = match a.val {
                        Some(v) if !v.is_empty() => v,
                        _ => return err(Errno::EINVAL, format!("{} needs a value", a.param)),
                    };
                    match a.param {
                        "algo" => algo = Some(val),
                        "priority" => prio = kstrto::<i32>(val, 10)? as i64,
                        _ => {}
                    }
                }
                let algo =
                    algo.ok_or_else(|| ZramError::new(Errno::EINVAL, "algo= is required"))?;
                if !(1..MAX_COMPS as i64).contains(&prio) {
                    return err(Errno::EINVAL, format!("priority {prio} is not 1..3"));
                }
                self.set_algorithm(prio as usize, algo)
            }
            "algorithm_params" => self.store_params(text),
            // zram_drv.c `backing_dev_store()`: the init check (EBUSY) comes before the path
            // is opened (backing.rs).
            "backing_dev" => {
                if self.is_initialised() {
                    return err(Errno::EBUSY, "backing_dev must be set before disksize");
                }
                let path = PathBuf::from(strip_newline(text));
                let store = crate::backing::FileStore::open_backing_dev(
                    &path,
                    self.config.allow_regular_backing_file,
                )?;
                self.set_backing_store(path, Box::new(store))
            }
            "writeback" => self.writeback(text),
            // zram_drv.c `writeback_limit_store()` / `writeback_limit_enable_store()`: any
            // `kstrtoull(buf, 10)` failure, overflow (ERANGE) included, is EINVAL; neither
            // checks init.
            "writeback_limit" => {
                *self.wb_limit() = kstrtoull(text, 10).map_err(|e| e.with_errno(Errno::EINVAL))?;
                Ok(())
            }
            "writeback_limit_enable" => {
                let v = kstrtoull(text, 10).map_err(|e| e.with_errno(Errno::EINVAL))?;
                self.wb_limit_enable.store(v != 0, Ordering::Relaxed);
                Ok(())
            }
            "recompress" => self.store_recompress(text),
            _ => err(Errno::ENOENT, format!("no attribute {attr:?}")),
        }
    }

    /// `cat /sys/block/zramN/attr`: zram_drv.c `disksize_show()`, `initstate_show()`,
    /// `mm_stat_show()`, `io_stat_show()`, `bd_stat_show()`, `debug_stat_show()`,
    /// `comp_algorithm_show()`, `recomp_algorithm_show()` (`#prio: ` before each secondary's
    /// list), `backing_dev_show()` (the path, or `none`), `writeback_limit_show()`,
    /// `writeback_limit_enable_show()`.
    pub fn show(&self, attr: &str) -> Result<String, ZramError> {
        if self.mode(attr)? == Mode::Wo {
            return err(Errno::EACCES, format!("{attr} is write-only"));
        }
        Ok(match attr {
            "disksize" => format!("{}\n", self.live().map_or(0, |l| l.disksize)),
            "initstate" => format!("{}\n", self.is_initialised() as u32),
            "mm_stat" => self.mm_stat().to_string(),
            "io_stat" => self.io_stat().to_string(),
            "bd_stat" => self.bd_stat().to_string(),
            "debug_stat" => crate::debug_stat(self.miss_free()),
            "comp_algorithm" => {
                let control = self.control();
                self.available_show(control.comp_algs[0].as_deref().unwrap_or(""))
            }
            "recomp_algorithm" => {
                let control = self.control();
                (1..MAX_COMPS)
                    .filter_map(|p| {
                        let a = control.comp_algs[p].as_deref()?;
                        Some(format!("#{p}: {}", self.available_show(a)))
                    })
                    .collect()
            }
            "backing_dev" => {
                let path = match self.live() {
                    Some(l) => l.backing.as_ref().map(|b| b.path.clone()),
                    None => self.control().backing.as_ref().map(|b| b.0.clone()),
                };
                match path {
                    Some(p) => format!("{}\n", p.display()),
                    None => "none\n".into(),
                }
            }
            "writeback_limit" => format!("{}\n", *self.wb_limit()),
            "writeback_limit_enable" => {
                format!("{}\n", self.wb_limit_enable.load(Ordering::Relaxed) as u32)
            }
            _ => return err(Errno::ENOENT, format!("no attribute {attr:?}")),
        })
    }

    /// zram_drv.c `__comp_algorithm_store()`: E2BIG for text of `ZRAM_MAX_ALGO_NAME_SZ` (128)
    /// bytes or more (its trailing newline counted), EINVAL for a name that is not offered
    /// (zcomp.c `zcomp_available_algorithm()`), then EBUSY after init.
    fn set_algorithm(&self, prio: usize, text: &str) -> Result<(), ZramError> {
        if text.len() >= 128 {
            return err(Errno::E2BIG, "algorithm name too long");
        }
        let name = strip_newline(text);
        if !self.config.offers(name) {
            return err(Errno::EINVAL, format!("unknown compression algorithm {name:?}"));
        }
        let mut control = self.control();
        if self.is_initialised() {
            return err(Errno::EBUSY, "the algorithm cannot change after disksize");
        }
        control.comp_algs[prio] = Some(name.to_string());
        Ok(())
    }

    /// zram_drv.c `algorithm_params_store()`: `priority=`/`algo=` select the slot (an `algo`
    /// no priority has is EINVAL), `level=`, `dict=`, `deflate.winbits=` fill it; unknown keys
    /// are skipped; `comp_params_store()` drops the slot's previous params first.
    fn store_params(&self, text: &str) -> Result<(), ZramError> {
        let (mut prio, mut level, mut winbits) = (0i64, None, None);
        let (mut algo, mut dict_path) = (None, None);
        for a in parse::args(text) {
            let val = match a.val {
                Some(v) if !v.is_empty() => v,
                _ => return err(Errno::EINVAL, format!("{} needs a value", a.param)),
            };
            match a.param {
                "priority" => prio = kstrto::<i32>(val, 10)? as i64,
                "level" => level = Some(kstrto::<i32>(val, 10)?),
                "algo" => algo = Some(val),
                "dict" => dict_path = Some(val),
                "deflate.winbits" => winbits = Some(kstrto::<i32>(val, 10)?),
                _ => {}
            }
        }
        let mut control = self.control();
        if let Some(algo) = algo {
            prio = (0..self.max_comps())
                .find(|&p| control.comp_algs[p].as_deref() == Some(algo))
                .map_or(-1, |p| p as i64);
        }
        if !(0..self.max_comps() as i64).contains(&prio) {
            return err(Errno::EINVAL, "no such priority or algorithm");
        }
        // `comp_params_store`: the old parameters go first (`comp_params_reset`), so a
        // dictionary that cannot be read leaves the priority with none at all.
        let params = &mut control.params[prio as usize];
        *params = zmem_comp::Params::default();
        let dict = dict_path.map(read_dict).transpose();
        if let Ok(dict) = &dict {
            params.dict = dict.clone().map(Arc::from);
            params.level = level;
            params.deflate_winbits = winbits;
        }
        // 6.18 has no init check here: on a live device the streams see the new parameters
        // through `comp->params` (zcomp.c `zcomp_compress()`; what each backend makes of them:
        // `Zcomp::update_params`).
        if let Some(live) = self.live()
            && let Some(comp) = &live.comps[prio as usize]
        {
            comp.update_params(params);
        }
        dict.map(|_| ())
    }

    fn store_recompress(&self, text: &str) -> Result<(), ZramError> {
        self.recompress(&parse_recompress(text)?, None)
    }

    /// `echo text > recompress`, taking each secondary's object from `objects` where it has one
    /// instead of compressing the page on the secondary's stream (see [`ObjectSource`]); the
    /// rest (the attribute's checks, the scan, the order, the size-class rule, the flags) is
    /// the attribute's.
    pub fn recompress_with(&self, text: &str, objects: &dyn ObjectSource) -> Result<(), ZramError> {
        if self.mode("recompress")? == Mode::Ro {
            return err(Errno::EACCES, "recompress is read-only");
        }
        self.recompress(&parse_recompress(text)?, Some(objects))
    }
}

/// zram_drv.c `comp_params_store()`'s fs/kernel_read_file.c `kernel_read_file_from_path()`:
/// only a regular file (`kernel_read_file()`: `!S_ISREG` is EINVAL) that is not empty
/// (`i_size <= 0` is EINVAL) is a dictionary; every failure reaches the writer as EINVAL
/// (`if (sz < 0) return -EINVAL`).
fn read_dict(path: &str) -> Result<Vec<u8>, ZramError> {
    let fail = |why: String| ZramError::new(Errno::EINVAL, format!("dict {path}: {why}"));
    let mut file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() == 0 {
        return Err(fail("empty".into()));
    }
    let mut dict = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut file, &mut dict).map_err(|e| fail(e.to_string()))?;
    Ok(dict)
}

/// zram_drv.c `recompress_store()`'s argument parse: `next_arg()` pairs, each with a value
/// (EINVAL), `max_pages` by `kstrtoull()`, `threshold` and `priority` by `kstrtouint()`,
/// their errors as they are; unknown keys skipped. `priority=0` reads as 1 (postprocess.rs).
fn parse_recompress(text: &str) -> Result<RecompressRequest, ZramError> {
    {
        let mut req = RecompressRequest { max_pages: u64::MAX, ..RecompressRequest::default() };
        for a in parse::args(text) {
            let val = match a.val {
                Some(v) if !v.is_empty() => v,
                _ => return err(Errno::EINVAL, format!("{} needs a value", a.param)),
            };
            match a.param {
                // An unknown type leaves the mode as it was (6.18 `recompress_store`).
                "type" => {
                    req.mode = match val {
                        "idle" => RecompMode { idle: true, huge: false },
                        "huge" => RecompMode { idle: false, huge: true },
                        "huge_idle" => RecompMode { idle: true, huge: true },
                        _ => req.mode,
                    }
                }
                "max_pages" => req.max_pages = kstrtoull(val, 10)?,
                "threshold" => req.threshold = parse::kstrtou::<u32>(val, 10)? as usize,
                "algo" => req.algo = Some(val.to_string()),
                "priority" => req.priority = Some(parse::kstrtou::<u32>(val, 10)? as usize),
                _ => {}
            }
        }
        Ok(req)
    }
}

impl Zram {
    /// zcomp.c `zcomp_available_show()`: every built-in backend in `backends[]` order, the
    /// selected one in brackets, each followed by a space, then a newline.
    fn available_show(&self, selected: &str) -> String {
        let mut s = String::new();
        for name in self.config.offered() {
            if name == selected {
                s += &format!("[{name}] ");
            } else {
                s += &format!("{name} ");
            }
        }
        s.push('\n');
        s
    }
}
