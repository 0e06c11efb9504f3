//! zmem-validate: zmem's models checked against the live kernel, in a room of their own above
//! the lab. `zmem validate replay` ([`replay`]) runs one page set and access trace through zmem's
//! replay and through the kernel (a player process, [`player`], touching the same pages in a
//! memory cgroup over a fresh kernel zram swap, [`kernel_replay`]) and compares swap-outs,
//! swap-ins, the pool and read-ahead; `zmem validate lab` ([`lab`]) does the same for each
//! configuration the lab would recommend and the running kernel can run, beside the lab's
//! prediction, and with zswap configurations asked for, each played under zswap in front of a
//! swap area of ours ([`zswap_kernel`], [`zswap_lab`]; zswap's parameters saved and restored by
//! [`zswap_params`], the swap area by [`zswap_swap`]). [`request`] holds both jobs' requests,
//! which the CLI's flags and Python's keyword arguments map onto. `zmem validate apply`
//! ([`apply`]) proves the lab's decision on the live machine: applies it with a set-up of its
//! own, watches, compares realized with predicted, undoes, and checks the machine is as it was.
//!
//! Not for: measuring or advising (the lab), reading kernel facts (zmem-kernel), rendering
//! (zmem-render).

pub mod apply;
pub mod check;
pub mod kernel_replay;
pub mod lab;
pub mod page_cache;
pub mod player;
pub mod replay;
pub mod request;
pub mod zswap_kernel;
pub mod zswap_lab;
pub mod zswap_params;
pub mod zswap_swap;
