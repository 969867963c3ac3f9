//! iov (under construction).
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]
