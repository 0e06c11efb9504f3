//! The lab's one answer in words ([`text`], the report's opening block) and as the two
//! scripts a user runs: [`apply_script`] sets up the decision, and nothing else, from the
//! state the machine is in when it runs; [`undo_script`] puts back what it changed.
//!
//! The apply script saves what it changes in a state directory (`$ZMEM_STATE`, default
//! `/var/lib/zmem/undo`) before changing it: the zswap parameters it writes, the zram device
//! it reconfigures or creates, the swap areas it turns off or makes, and every file it writes
//! (backed up if it existed, listed if it did not). The undo script reads that directory, so it
//! is right for whatever state the apply met, even one other than the lab saw; it refuses to run
//! twice, as the apply refuses while an earlier apply is not undone. Never stacked: zram
//! decided turns zswap off (it would otherwise cache in front of the zram device, mm/zswap.c
//! `zswap_store()` runs for every swap-out whatever the device), zswap decided turns the zram
//! swap devices off and puts zswap in front of a disk swap (the one there is, or a swap file it
//! makes). Persistence is for what was decided only: zram-generator's drop-in (and the
//! recompression timer) for zram, tmpfiles.d for zswap's parameters and a swap unit for the
//! swap file it made, a drop-in that sets `zram-size = 0` (no device at boot) for zram
//! devices zram-generator would otherwise make beside zswap. `ZMEM_ROOT` prefixes every file
//! path (tests install into a scratch root), `ZMEM_ZRAM_DEVICE` names the zram device and
//! `ZMEM_SWAPFILE` the swap file.

use zmem_lab::decision::{Decision, Kind, Pick, Reason, TieBreak};
use zmem_lab::zswap::{ZswapCandidate, human_bytes};
use zmem_lab::{LabReport, Policy};

use crate::apply;

/// The decision's opening block for the terminal.
pub fn text(r: &LabReport) -> String {
    let Some(d) = &r.decision else { return String::new() };
    let mut s = String::new();
    let mib = |b: i64| human_bytes(b as f64);
    match d.kind {
        Kind::None => {
            s += &format!("Decision: none. {}.\n", reason_words(d));
            return s + "\n";
        }
        Kind::Keep => s += &format!("Decision: keep {} (change nothing).\n", d.config),
        Kind::Zram => s += &format!("Decision: run {} (and no zswap in front of it).\n", d.config),
        Kind::Zswap => {
            let behind = d.swap_behind.as_ref().map_or("a disk swap".to_string(), |b| {
                match (&b.existing, &b.new_file) {
                    (Some(e), _) => format!("the disk swap {e}"),
                    (None, Some(f)) => {
                        format!("a new {} swap file {f}", human_bytes(b.size_bytes as f64))
                    }
                    _ => "a disk swap".into(),
                }
            });
            s += &format!("Decision: run {} in front of {behind} (no zram swap).\n", d.config)
        }
    }
    if d.kind != Kind::Keep {
        s += &format!(
            "  saves {} [{} .. {}, 95 %] against now ({}: {} for {} pages)\n",
            mib(d.memory_saved_bytes),
            mib(d.memory_saved_ci[0]),
            mib(d.memory_saved_ci[1]),
            d.now_config,
            human_bytes(d.now_bytes as f64),
            d.pages
        );
    }
    s += &format!(
        "  costs {:.3} % of a core; swap-in p99 {:.0} us end to end where memory is full (fault, \
         read, and the reclaim a fault then does)\n",
        100.0 * d.cpu_seconds_per_second,
        d.swap_in_p99_ns as f64 / 1e3
    );
    s += &format!("  why: {}\n", reason_words(d));
    if let Some(ru) = &d.runner_up {
        let tie = if d.tie { "tie" } else { "runner-up" };
        s += &format!(
            "  {tie}: {} saves {} ({} {} the choice; the difference's uncertainty is +-{}){}\n",
            ru.config,
            mib(ru.memory_saved_bytes),
            mib(d.margin_bytes.abs()),
            if d.margin_bytes >= 0 { "less than" } else { "more than" },
            mib(d.uncertainty_bytes),
            if d.tie {
                format!(
                    "; it would tip once the difference exceeds +-{} (a larger --sample narrows it)",
                    mib(d.uncertainty_bytes)
                )
            } else {
                String::new()
            }
        );
    }
    // What the reader must know before acting on it (generated pages; a kernel that cannot
    // run it), said with the answer, not only in the script.
    for w in warnings(r) {
        s += &format!("  WARNING: {w}\n");
    }
    if matches!(d.kind, Kind::Zram | Kind::Zswap) {
        s += "  apply: zmem lab --apply-script apply.sh --undo-script undo.sh, review, then `sudo sh apply.sh`;\n  \
              `sudo sh undo.sh` puts back what it changed\n";
    }
    s + "\n"
}

/// The decision's opening block for the HTML report: the same lines as [`text`], and the apply
/// script in a box (collapsed) to review.
pub fn html(r: &LabReport) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let t = text(r);
    let mut lines = t.lines().filter(|l| !l.trim().is_empty());
    let Some(head) = lines.next() else { return String::new() };
    let mut s = format!("<div class=\"rec\"><h2>{}</h2>", esc(head));
    for l in lines {
        s += &format!("<p>{}</p>", esc(l.trim()));
    }
    if r.decision.as_ref().is_some_and(|d| matches!(d.kind, Kind::Zram | Kind::Zswap)) {
        s += &format!(
            "<details><summary>apply.sh (zmem lab --apply-script apply.sh)</summary><pre>{}</pre></details>",
            esc(&apply_script(r))
        );
    }
    s + "</div>"
}

/// Why, in words.
pub fn reason_words(d: &Decision) -> String {
    match &d.reason {
        Reason::SavesMost => "it saves the most memory within the budgets".into(),
        Reason::Tie { by } => format!(
            "equal to the runner-up within the uncertainty; the tie rule picks it by {}",
            match by {
                TieBreak::LessCpu => "clearly less CPU",
                TieBreak::Simpler => "the simpler setup",
                TieBreak::RunsNow => "running now",
                TieBreak::KernelOrder => {
                    "a fixed order (zram first, the kernel's order of compressors, the lab's list)"
                }
            }
        ),
        Reason::NothingFits => "no configuration fits the budgets: what runs now is kept".into(),
        Reason::NothingFitsFallback => {
            "no configuration fits the budgets: the cheapest in CPU that keeps the memory".into()
        }
        Reason::TooFewPages { measured_pages, min_pages } => format!(
            "the input is too small to advise on ({measured_pages} pages measured, fewer than \
             the {min_pages} the lab needs)"
        ),
        Reason::NothingRuns => "this kernel runs none of the candidates (no zram, no zswap)".into(),
    }
}

/// The index of the zram candidate the decision chose, if it chose one.
pub fn decided_zram(r: &LabReport) -> Option<usize> {
    match r.decision.as_ref()?.chosen.as_ref()?.pick {
        Pick::Zram(i) => Some(i),
        Pick::Zswap(_) => None,
    }
}

/// The zswap candidate the decision chose, if it did.
fn chosen_zswap<'a>(r: &'a LabReport, d: &Decision) -> Option<&'a ZswapCandidate> {
    match d.chosen.as_ref()?.pick {
        Pick::Zswap(i) => r.zswap.as_ref()?.candidates.get(i),
        Pick::Zram(_) => None,
    }
}

/// The zram policy the decision chose, if it did, and its dictionary.
fn chosen_zram<'a>(r: &'a LabReport, d: &Decision) -> Option<(&'a Policy, Option<&'a [u8]>)> {
    match d.chosen.as_ref()?.pick {
        Pick::Zram(i) => r.policies.get(i).map(|p| (&p.policy, p.dict.as_deref())),
        Pick::Zswap(_) => None,
    }
}

/// The apply script for the report's decision.
pub fn apply_script(r: &LabReport) -> String {
    let Some(d) = &r.decision else {
        return refuse("this report has no decision (made before schema 5)");
    };
    match d.kind {
        Kind::None => refuse(&reason_words(d)),
        Kind::Keep => format!(
            "#!/bin/sh\n# zmem lab decision: keep {} ({}). Nothing to change.\nexit 0\n",
            d.config,
            reason_words(d)
        ),
        Kind::Zram => match chosen_zram(r, d) {
            Some((p, dict)) => zram_apply_script(
                d,
                p,
                r.now.as_ref(),
                r.budgets.recompress_period_secs,
                dict,
                &warnings(r),
            ),
            None => refuse("the decision names no zram configuration"),
        },
        Kind::Zswap => match chosen_zswap(r, d) {
            Some(c) => zswap_apply_script(d, c),
            None => refuse("the decision names no zswap configuration"),
        },
    }
}

fn refuse(why: &str) -> String {
    format!(
        "#!/bin/sh\n# zmem lab: nothing to apply: {why}.\necho 'zmem: nothing to apply: {}' >&2\nexit 1\n",
        why.replace('\'', "")
    )
}

/// What the reader must know first (generated pages; a kernel that cannot run it).
fn warnings(r: &LabReport) -> Vec<String> {
    apply::build(r).warnings
}

/// The common head: usage, root, the state directory, the file helpers.
fn head(d: &Decision, changes: &[String], persist: &[String], warnings: &[String]) -> String {
    let mut s = String::from("#!/bin/sh\n");
    for w in warnings {
        s += &format!("# WARNING: {w}.\n");
    }
    s += &format!(
        "# zmem lab decision: {kind} {config}.\n\
         # Saves {saved} [{lo} .. {hi}, 95 %] against now ({now}); {why}.\n\
         #\n\
         # Written by zmem {ver} for you to review; zmem ran none of it. Run it as root:\n\
         #   sh THIS-FILE                 changes the machine now and at every boot\n\
         #   sh THIS-FILE --no-persist    changes it now only\n\
         # It changes, in this order:\n",
        kind = match d.kind {
            Kind::Zram | Kind::Zswap => "run",
            _ => "",
        },
        config = d.config,
        saved = human_bytes(d.memory_saved_bytes as f64),
        lo = human_bytes(d.memory_saved_ci[0] as f64),
        hi = human_bytes(d.memory_saved_ci[1] as f64),
        now = d.now_config,
        why = reason_words(d),
        ver = env!("CARGO_PKG_VERSION"),
    );
    for c in changes {
        s += &format!("#   - {c}\n");
    }
    s += "# and, unless --no-persist, writes (for what was decided only):\n";
    for p in persist {
        s += &format!("#   - {p}\n");
    }
    s += "# Everything it changes is saved first in $ZMEM_STATE (default /var/lib/zmem/undo); the\n\
          # undo script (`zmem lab --undo-script FILE`) puts it back. ZMEM_ROOT prefixes the files.\n\
          set -eu\n\
          ROOT=${ZMEM_ROOT:-}\n\
          STATE=${ZMEM_STATE:-/var/lib/zmem/undo}\n\
          persist=1\n\
          for arg in \"$@\"; do\n\
          \x20 case $arg in\n\
          \x20   --no-persist) persist=0 ;;\n\
          \x20   *) echo \"usage: sh $0 [--no-persist]\" >&2; exit 2 ;;\n\
          \x20 esac\n\
          done\n\
          if [ \"$(id -u)\" != 0 ]; then\n\
          \x20 echo 'zmem: run it as root (sudo sh THIS-FILE): nothing was changed' >&2\n\
          \x20 exit 1\n\
          fi\n\
          if [ -e \"$STATE/applied\" ]; then\n\
          \x20 echo \"zmem: an earlier apply is not undone ($STATE): run its undo script first; nothing was changed\" >&2\n\
          \x20 exit 1\n\
          fi\n\
          mkdir -p \"$STATE\"\n\
          : > \"$STATE/log\"\n\
          # save_file PATH: back PATH up (or note that it did not exist) before writing it.\n\
          save_file() {\n\
          \x20 key=$(printf '%s' \"$1\" | tr '/' '%')\n\
          \x20 if [ -e \"$1\" ]; then cp -p \"$1\" \"$STATE/file.$key\"; else echo \"created $1\" >> \"$STATE/log\"; fi\n\
          \x20 echo \"file $1 $key\" >> \"$STATE/log\"\n\
          }\n\
          # zswap_set NAME VALUE: save zswap's parameter, then write it.\n\
          zswap_set() {\n\
          \x20 p=/sys/module/zswap/parameters/$1\n\
          \x20 grep -q \"^zswap $1 \" \"$STATE/log\" || echo \"zswap $1 $(cat \"$p\")\" >> \"$STATE/log\"\n\
          \x20 echo \"$2\" > \"$p\"\n\
          }\n\
          echo applying > \"$STATE/applied\"\n";
    s
}

/// The systemd reload after files were written into the live root.
const RELOAD: &str = "if [ -z \"$ROOT\" ] && command -v systemctl > /dev/null 2>&1; then\n  systemctl daemon-reload || true\nfi\n";

/// The apply script of a zram decision for policy `p` (`now`: the live device the pages came
/// from, if any; `period_secs`: the recompression timer's).
pub fn zram_apply_script(
    d: &Decision,
    p: &Policy,
    now: Option<&zmem_lab::Now>,
    period_secs: f64,
    dict: Option<&[u8]>,
    warnings: &[String],
) -> String {
    let a = &apply::forms(p, now, period_secs);
    let changes = vec![
        "zswap off where it is on (it would cache in front of the zram device)".to_string(),
        format!(
            "{}: reconfigured to {} (swapped off first, so its pages move back into RAM), or \
             created where it does not exist",
            a.device, d.config
        ),
    ];
    let mut persist = vec![
        "$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf (zram-generator: the device at \
         every boot)"
            .to_string(),
        "$ROOT/etc/tmpfiles.d/zmem-zswap.conf (zswap off at every boot), where zswap was on".into(),
    ];
    if a.timer.is_some() {
        persist.push(format!(
            "$ROOT/etc/systemd/system/{u}.service and .timer (the periodic recompression)",
            u = apply::UNIT
        ));
    }
    if dict.is_some() {
        persist.push(format!("{} (the dictionary)", apply::DICT_PATH));
    }
    let mut s = head(d, &changes, &persist, warnings);
    s += &format!("# Device: {}.\n# Size: {}.\n", a.device_note, a.size_rule);
    s += "# zram-generator versions:\n";
    for v in &a.generator_versions {
        s += &format!("#   {v}\n");
    }
    if let Some(dict) = dict {
        s += &format!(
            "save_file {path}\nmkdir -p {dir}\nbase64 -d > {path} <<'ZMEM_DICT'\n{b64}\nZMEM_DICT\n",
            path = apply::DICT_PATH,
            dir = apply::DICT_PATH.rsplit_once('/').map_or("/etc/zmem", |x| x.0),
            b64 = apply::base64(dict),
        );
    }
    s += "# 1. zswap off: zram decided, nothing cached in front of it.\n\
          zswap_was=N\n\
          if [ -e /sys/module/zswap/parameters/enabled ]; then\n\
          \x20 zswap_was=$(cat /sys/module/zswap/parameters/enabled)\n\
          \x20 [ \"$zswap_was\" = N ] || zswap_set enabled N\n\
          fi\n";
    s += "# 2. The zram device: what it was is saved, then apply_now reconfigures it.\n";
    s += &format!(
        "dev=${{ZMEM_ZRAM_DEVICE:-{dev}}}\n\
         if [ -d \"/sys/block/$dev\" ]; then\n\
         \x20 prio=$(awk -v d=\"/dev/$dev\" '$1 == d {{ print $5 }}' /proc/swaps)\n\
         \x20 echo \"zram $dev was $(cat /sys/block/$dev/disksize) $(sed 's/.*\\[\\(.*\\)\\].*/\\1/' /sys/block/$dev/comp_algorithm) ${{prio:-none}}\" >> \"$STATE/log\"\n\
         \x20 existed=1\n\
         else\n\
         \x20 existed=0\n\
         fi\n",
        dev = a.device
    );
    s += apply::now_function_text(a);
    s += "apply_now\n\
          [ \"$existed\" = 1 ] || echo \"zram $dev created\" >> \"$STATE/log\"\n";
    s += "if [ \"$persist\" = 1 ]; then\n";
    s += "  # 3. At every boot: zram-generator's drop-in for this device.\n";
    s += &format!(
        "  f=$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf\n\
         \x20 mkdir -p \"$(dirname \"$f\")\"\n\
         \x20 save_file \"$f\"\n\
         \x20 sed \"s/^\\[{dev}\\]$/[$dev]/\" > \"$f\" <<'ZMEM_CONF'\n# zmem lab: {config}\n{conf}ZMEM_CONF\n",
        dev = a.device,
        config = d.config,
        conf = a.generator_conf
    );
    s += "  if [ \"$zswap_was\" != N ]; then\n\
          \x20   f=$ROOT/etc/tmpfiles.d/zmem-zswap.conf\n\
          \x20   mkdir -p \"$(dirname \"$f\")\"\n\
          \x20   save_file \"$f\"\n\
          \x20   echo 'w /sys/module/zswap/parameters/enabled - - - - N' > \"$f\"\n\
          \x20 fi\n";
    if let (Some(service), Some(timer)) = (&a.service, &a.timer) {
        s += &format!(
            "  for u in service timer; do\n\
             \x20   mkdir -p \"$ROOT/etc/systemd/system\"\n\
             \x20   save_file \"$ROOT/etc/systemd/system/{u}.$u\"\n\
             \x20 done\n\
             \x20 cat > \"$ROOT/etc/systemd/system/{u}.service\" <<'ZMEM_UNIT'\n{service}ZMEM_UNIT\n\
             \x20 cat > \"$ROOT/etc/systemd/system/{u}.timer\" <<'ZMEM_UNIT'\n{timer}ZMEM_UNIT\n\
             \x20 if [ -z \"$ROOT\" ] && command -v systemctl > /dev/null 2>&1; then\n\
             \x20   systemctl daemon-reload && systemctl enable --now {u}.timer && echo 'unit {u}.timer' >> \"$STATE/log\"\n\
             \x20 fi\n",
            u = apply::UNIT
        );
    }
    s += &format!("  {}", RELOAD.replace('\n', "\n  ").trim_end());
    s += "\nfi\necho done > \"$STATE/applied\"\necho \"zmem: applied; the undo script puts it back\" >&2\n";
    s
}

/// The apply script of a zswap decision for candidate `c`.
pub fn zswap_apply_script(d: &Decision, c: &ZswapCandidate) -> String {
    let b = d.swap_behind.clone().unwrap_or(zmem_lab::decision::SwapBehind {
        existing: None,
        size_bytes: 0,
        new_file: Some(zmem_lab::decision::SWAP_FILE.into()),
    });
    let mib = b.size_bytes.div_ceil(1 << 20).max(64);
    let behind = match &b.existing {
        Some(e) => format!("the disk swap {e} (kept as it is)"),
        None => format!(
            "a {mib} MiB swap file ($ZMEM_SWAPFILE, default {})",
            b.new_file.as_deref().unwrap_or(zmem_lab::decision::SWAP_FILE)
        ),
    };
    let changes = vec![
        format!("zswap in front of {behind}"),
        "every zram swap device swapped off (its pages move back into RAM or to the disk swap): \
         no zswap stacked on zram"
            .into(),
        format!(
            "zswap's parameters: compressor={} max_pool_percent={} accept_threshold_percent={} \
             shrinker_enabled={}, then enabled=Y",
            c.compressor,
            c.max_pool_percent,
            c.accept_threshold_percent,
            if c.shrinker_enabled { "Y" } else { "N" }
        ),
    ];
    let mut persist = vec![
        "$ROOT/etc/tmpfiles.d/zmem-zswap.conf (zswap's parameters at every boot)".to_string(),
        "$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf with zram-size = 0 for each zram \
         swap device swapped off (zram-generator makes none at boot)"
            .into(),
    ];
    if b.existing.is_none() {
        persist
            .push("$ROOT/etc/systemd/system/<swap file>.swap (the swap file at every boot)".into());
    }
    let mut s = head(d, &changes, &persist, &[]);
    s +=
        "# Checks first: zswap present and the compressor offered; nothing is changed otherwise.\n";
    s += &format!(
        "if [ ! -d /sys/module/zswap/parameters ]; then\n\
         \x20 echo 'zmem: this kernel has no zswap (CONFIG_ZSWAP off): nothing was changed' >&2\n\
         \x20 rm -f \"$STATE/applied\"; exit 1\n\
         fi\n\
         if ! awk '$1 == \"name\" {{ print $3 }}' /proc/crypto | grep -qx '{algo}' && ! modprobe -q crypto-{algo} 2> /dev/null; then\n\
         \x20 echo 'zmem: the crypto API offers no {algo} to zswap: nothing was changed' >&2\n\
         \x20 rm -f \"$STATE/applied\"; exit 1\n\
         fi\n",
        algo = c.compressor
    );
    if b.existing.is_none() {
        s += &format!(
            "# 1. The swap file behind zswap: every page zswap stores keeps its slot there\n\
             #    (mm/zswap.c: zswap_store() runs on a page that already has its swap slot).\n\
             swapfile=${{ZMEM_SWAPFILE:-{path}}}\n\
             if grep -q \"^$swapfile \" /proc/swaps; then\n\
             \x20 echo \"zmem: $swapfile is already swap\" >&2\n\
             else\n\
             \x20 if [ -e \"$swapfile\" ]; then\n\
             \x20   echo \"zmem: $swapfile exists and is not swap: nothing was changed\" >&2\n\
             \x20   rm -f \"$STATE/applied\"; exit 1\n\
             \x20 fi\n\
             \x20 mkdir -p \"$(dirname \"$swapfile\")\"\n\
             \x20 echo \"swapfile $swapfile\" >> \"$STATE/log\"\n\
             \x20 # fallocate where the file system has it (ext4, xfs), else zeros.\n\
             \x20 fallocate -l {mib}M \"$swapfile\" 2> /dev/null || dd if=/dev/zero of=\"$swapfile\" bs=1M count={mib} status=none\n\
             \x20 chmod 600 \"$swapfile\"\n\
             \x20 mkswap \"$swapfile\" > /dev/null\n\
             \x20 swapon -p 10 \"$swapfile\"\n\
             fi\n",
            path = b.new_file.as_deref().unwrap_or(zmem_lab::decision::SWAP_FILE),
        );
    } else {
        s += "# 1. The disk swap behind zswap is there already.\n";
    }
    s += "# 2. Every zram swap device off (only $ZMEM_ZRAM_DEVICE where it is set): zswap would\n\
          #    otherwise store in front of it.\n\
          only=${ZMEM_ZRAM_DEVICE:+/dev/$ZMEM_ZRAM_DEVICE}\n\
          for z in $(awk -v only=\"$only\" 'NR > 1 && $1 ~ \"^/dev/zram\" && (only == \"\" || $1 == only) { print $1 \":\" $5 }' /proc/swaps); do\n\
          \x20 d=${z%%:*}\n\
          \x20 echo \"swapoff $d ${z##*:}\" >> \"$STATE/log\"\n\
          \x20 swapoff \"$d\"\n\
          done\n";
    let params = [
        ("compressor", c.compressor.clone()),
        ("max_pool_percent", c.max_pool_percent.to_string()),
        ("accept_threshold_percent", c.accept_threshold_percent.to_string()),
        ("shrinker_enabled", if c.shrinker_enabled { "Y" } else { "N" }.to_string()),
        // Last: zswap starts storing with the other parameters in place.
        ("enabled", "Y".to_string()),
    ];
    s += "# 3. zswap's parameters, enabled last.\n";
    for (k, v) in &params {
        s += &format!("zswap_set {k} {v}\n");
    }
    s += "if [ \"$persist\" = 1 ]; then\n\
          \x20 f=$ROOT/etc/tmpfiles.d/zmem-zswap.conf\n\
          \x20 mkdir -p \"$(dirname \"$f\")\"\n\
          \x20 save_file \"$f\"\n\
          \x20 cat > \"$f\" <<'ZMEM_ZSWAP'\n";
    for (k, v) in &params {
        s += &format!("w /sys/module/zswap/parameters/{k} - - - - {v}\n");
    }
    s += "ZMEM_ZSWAP\n\
          \x20 zram_off=$(awk '$1 == \"swapoff\" { sub(\"/dev/\", \"\", $2); print $2 }' \"$STATE/log\")\n\
          \x20 if [ -n \"$zram_off\" ]; then\n\
          \x20   f=$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf\n\
          \x20   mkdir -p \"$(dirname \"$f\")\"\n\
          \x20   save_file \"$f\"\n\
          \x20   for z in $zram_off; do printf '[%s]\\nzram-size = 0\\n' \"$z\"; done > \"$f\"\n\
          \x20 fi\n";
    if b.existing.is_none() {
        s += "  if grep -q \"^swapfile \" \"$STATE/log\"; then\n\
              \x20   unit=$(systemd-escape -p --suffix=swap \"$swapfile\" 2> /dev/null || echo zmem-swapfile.swap)\n\
              \x20   f=$ROOT/etc/systemd/system/$unit\n\
              \x20   mkdir -p \"$(dirname \"$f\")\" \"$ROOT/etc/systemd/system/swap.target.wants\"\n\
              \x20   save_file \"$f\"\n\
              \x20   printf '[Unit]\\nDescription=zmem lab: the swap file behind zswap\\n\\n[Swap]\\nWhat=%s\\nPriority=10\\n\\n[Install]\\nWantedBy=swap.target\\n' \"$swapfile\" > \"$f\"\n\
              \x20   save_file \"$ROOT/etc/systemd/system/swap.target.wants/$unit\"\n\
              \x20   ln -sf \"../$unit\" \"$ROOT/etc/systemd/system/swap.target.wants/$unit\"\n\
              \x20 fi\n";
    }
    s += &format!("  {}", RELOAD.replace('\n', "\n  ").trim_end());
    s += "\nfi\necho done > \"$STATE/applied\"\necho \"zmem: applied; the undo script puts it back\" >&2\n";
    s
}

/// The undo script: puts back, from `$ZMEM_STATE`, what the apply script changed, last change
/// first. The same for every decision: it reads what the apply did.
pub fn undo_script() -> String {
    format!(
        "#!/bin/sh\n\
         # Undo what zmem lab's apply script changed (written by zmem {ver}). It reads what the\n\
         # apply saved in $ZMEM_STATE (default /var/lib/zmem/undo) and puts it back, last change\n\
         # first: zswap's parameters, the zram device (reconfigured as it was, or removed if the\n\
         # apply created it), the zram swap devices it swapped off, the swap file it made, and the\n\
         # files it wrote (restored, or removed if they did not exist). Run it as root.\n\
         set -eu\n\
         ROOT=${{ZMEM_ROOT:-}}\n\
         STATE=${{ZMEM_STATE:-/var/lib/zmem/undo}}\n\
         if [ \"$(id -u)\" != 0 ]; then\n\
         \x20 echo 'zmem: run it as root: nothing was changed' >&2\n\
         \x20 exit 1\n\
         fi\n\
         if [ ! -e \"$STATE/applied\" ]; then\n\
         \x20 echo \"zmem: nothing to undo ($STATE holds no apply)\" >&2\n\
         \x20 exit 0\n\
         fi\n\
         log=$STATE/log\n\
         # 1. zswap's parameters as they were, enabled last.\n\
         awk '$1 == \"zswap\" && $2 != \"enabled\" {{ print $2, $3 }}' \"$log\" | while read -r k v; do\n\
         \x20 echo \"$v\" > \"/sys/module/zswap/parameters/$k\"\n\
         done\n\
         awk '$1 == \"zswap\" && $2 == \"enabled\" {{ print $3 }}' \"$log\" | while read -r v; do\n\
         \x20 echo \"$v\" > /sys/module/zswap/parameters/enabled\n\
         done\n\
         # 2. The timer it enabled.\n\
         awk '$1 == \"unit\" {{ print $2 }}' \"$log\" | while read -r u; do\n\
         \x20 systemctl disable --now \"$u\" || true\n\
         done\n\
         # 3. The zram device: removed if created, else configured as it was.\n\
         awk '$1 == \"zram\" && $3 == \"created\" {{ print $2 }}' \"$log\" | while read -r dev; do\n\
         \x20 if grep -q \"^/dev/$dev \" /proc/swaps; then swapoff \"/dev/$dev\"; fi\n\
         \x20 echo 1 > \"/sys/block/$dev/reset\"\n\
         \x20 echo \"${{dev#zram}}\" > /sys/class/zram-control/hot_remove\n\
         done\n\
         awk '$1 == \"zram\" && $3 == \"was\" {{ print $2, $4, $5, $6 }}' \"$log\" | while read -r dev size algo prio; do\n\
         \x20 if grep -q \"^/dev/$dev \" /proc/swaps; then swapoff \"/dev/$dev\"; fi\n\
         \x20 echo 1 > \"/sys/block/$dev/reset\"\n\
         \x20 if [ \"$size\" != 0 ]; then\n\
         \x20   echo \"$algo\" > \"/sys/block/$dev/comp_algorithm\"\n\
         \x20   echo \"$size\" > \"/sys/block/$dev/disksize\"\n\
         \x20   if [ \"$prio\" != none ]; then\n\
         \x20     mkswap \"/dev/$dev\" > /dev/null\n\
         \x20     swapon -p \"$prio\" \"/dev/$dev\"\n\
         \x20   fi\n\
         \x20 fi\n\
         done\n\
         # 4. The zram swap devices it swapped off, back on (their pages were moved out, their\n\
         #    swap header is intact).\n\
         awk '$1 == \"swapoff\" {{ print $2, $3 }}' \"$log\" | while read -r d prio; do\n\
         \x20 grep -q \"^$d \" /proc/swaps || swapon -p \"$prio\" \"$d\"\n\
         done\n\
         # 5. The swap file it made: off and removed.\n\
         awk '$1 == \"swapfile\" {{ print $2 }}' \"$log\" | while read -r f; do\n\
         \x20 if grep -q \"^$f \" /proc/swaps; then swapoff \"$f\"; fi\n\
         \x20 rm -f \"$f\"\n\
         done\n\
         # 6. The files it wrote: restored, or removed where they did not exist.\n\
         awk '$1 == \"file\" {{ print $2, $3 }}' \"$log\" | while read -r f key; do\n\
         \x20 if [ -e \"$STATE/file.$key\" ]; then cp -p \"$STATE/file.$key\" \"$f\"; fi\n\
         done\n\
         awk '$1 == \"created\" {{ print $2 }}' \"$log\" | while read -r f; do\n\
         \x20 rm -f \"$f\"\n\
         done\n\
         {reload}\
         rm -rf \"$STATE\"\n\
         echo 'zmem: undone' >&2\n",
        ver = env!("CARGO_PKG_VERSION"),
        reload = RELOAD,
    )
}
