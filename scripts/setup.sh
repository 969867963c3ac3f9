#!/usr/bin/env bash
# Idempotent machine setup (Debian 12): apt packages, Rust toolchains, bindgen,
# cargo-fuzz, then the test kernels.
#
#   scripts/setup.sh                # everything, builds normal + debug kernels
#   RNVME_SETUP_KERNELS=normal scripts/setup.sh
#   RNVME_SETUP_KERNELS= scripts/setup.sh    # tools only, no kernel build
#   RNVME_SETUP_FUZZ=0 scripts/setup.sh      # skip nightly + cargo-fuzz
#
# Must run as root (or with passwordless sudo) for apt.
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

kernels="${RNVME_SETUP_KERNELS-normal debug}"
want_fuzz="${RNVME_SETUP_FUZZ:-1}"

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

# ---- apt ---------------------------------------------------------------------
stage "apt packages"
pkgs=(
    # kernel build
    build-essential make bc flex bison libelf-dev libssl-dev cpio kmod rsync xz-utils python3
    clang lld llvm libclang-dev
    # guest / QEMU
    qemu-system-x86 busybox-static fio e2fsprogs util-linux
    # passthrough char devices (rnvme/driver/passthru, guest-tests/50-rnvme-passthru.sh)
    nvme-cli
    # misc
    curl ca-certificates git
    # benchmark plots (benches/plot_kernel_iov.py, benches/plot_fio.py)
    python3-matplotlib
    # guest profiles of the fio matrix (scripts/profile-fio.sh copies perf into the guest)
    linux-perf
)
missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
    log "all ${#pkgs[@]} apt packages present"
    # The kernel build needs apt's package lists to resolve linux-source-6.12.
    policy=$(apt-cache policy "$RNVME_KERNEL_PKG" 2>/dev/null || true)
    if ! grep -q 'Candidate: [0-9]' <<<"$policy"; then
        $SUDO apt-get update
    fi
fi

# ---- rustup + toolchains -------------------------------------------------------
stage "rust toolchains"
if ! command -v rustup >/dev/null; then
    log "installing rustup from static.rust-lang.org"
    tmp=$(mktemp)
    curl -sSfL -o "$tmp" https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init
    chmod +x "$tmp"
    "$tmp" -y --profile minimal --default-toolchain none --no-modify-path
    rm -f "$tmp"
fi
have_components() {
    local tc="$1"; shift
    local installed
    installed=$(rustup component list --toolchain "$tc" --installed 2>/dev/null) || return 1
    local c
    for c in "$@"; do
        grep -q "^$c" <<<"$installed" || return 1
    done
}
if have_components "$RNVME_RUST_TOOLCHAIN" rust-src rustfmt clippy rust-std-x86_64-unknown-none; then
    log "toolchain $RNVME_RUST_TOOLCHAIN present"
else
    rustup toolchain install "$RNVME_RUST_TOOLCHAIN" --profile minimal \
        -c rust-src -c rustfmt -c clippy -t x86_64-unknown-none
fi
if [[ "$want_fuzz" == 1 ]]; then
    if have_components nightly rust-src; then
        log "nightly toolchain present"
    else
        rustup toolchain install nightly --profile minimal -c rust-src
    fi
fi

# ---- cargo tools ----------------------------------------------------------------
stage "cargo tools"
if [[ "$(bindgen --version 2>/dev/null)" == "bindgen $RNVME_BINDGEN_VERSION" ]]; then
    log "bindgen $RNVME_BINDGEN_VERSION present"
else
    cargo +"$RNVME_RUST_TOOLCHAIN" install --locked --force bindgen-cli --version "$RNVME_BINDGEN_VERSION"
fi
if [[ "$want_fuzz" == 1 ]]; then
    if cargo fuzz --version >/dev/null 2>&1; then
        log "cargo-fuzz present ($(cargo fuzz --version))"
    else
        cargo +nightly install --locked cargo-fuzz
    fi
fi

# ---- kernels --------------------------------------------------------------------
for v in $kernels; do
    stage "kernel ($v)"
    "$RNVME_REPO/scripts/build-kernel.sh" "$v" >/dev/null
    log "$v kernel build tree: $("$RNVME_REPO/scripts/kernel-path.sh" "$v")"
done
finish
exit
}
