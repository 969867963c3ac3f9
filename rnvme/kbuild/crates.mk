# SPDX-License-Identifier: GPL-2.0
#
# Shared Kbuild fragment: the iovstack crates and the production kernel glue, compiled into the
# including directory ($(obj)). Each module's build directory (rnvme/selftest/, rnvme/driver/)
# includes this file, so every module links its own copy of these objects (Kbuild refuses one
# object in two modules).
#
# Every crate is compiled from its own tree as a separate crate (Kbuild names a crate after its
# object file) with `--cfg kbuild`; dependent crates get `--extern name=lib<name>.rmeta`.
#
# Provides: rnvme_crate_objs (bvec.o iov.o bio.o kernel_glue.o glue_helpers.o glue_passthru.o
# glue_premap.o), rnvme_nvme_objs
# (nvme.o, the NVMe protocol core of rnvme/src/), the helpers rnvme_rmeta/rnvme_extern, and the
# bindgen command rnvme_bindgen_cmd for C helper headers. Needs RNVME_REPO.

rnvme_glue := $(RNVME_REPO)/kernel-glue

rnvme_crate_objs := kernel_glue.o glue_helpers.o glue_passthru.o glue_premap.o bvec.o iov.o bio.o
rnvme_nvme_objs := nvme.o

# ---- warnings are errors, for our objects only --------------------------------------------------
rustflags-y += -Dwarnings
ccflags-y += -Werror -I$(rnvme_glue)

# ---- the no_std crates, from their real trees -----------------------------------------------------
rnvme_rmeta = $(obj)/lib$(1).rmeta
rnvme_extern = -L dependency=$(obj) $(foreach c,$(1),--extern $(c)=$(call rnvme_rmeta,$(c)))

RUSTFLAGS_bvec.o := --cfg kbuild --emit=metadata=$(call rnvme_rmeta,bvec)
RUSTFLAGS_iov.o := --cfg kbuild --emit=metadata=$(call rnvme_rmeta,iov) $(call rnvme_extern,bvec)
RUSTFLAGS_bio.o := --cfg kbuild --emit=metadata=$(call rnvme_rmeta,bio) $(call rnvme_extern,bvec iov)
RUSTFLAGS_nvme.o := --cfg kbuild --emit=metadata=$(call rnvme_rmeta,nvme) \
	$(call rnvme_extern,bvec bio)
RUSTFLAGS_kernel_glue.o := --emit=metadata=$(call rnvme_rmeta,kernel_glue) \
	$(call rnvme_extern,bvec iov bio)

$(obj)/bvec.o: $(RNVME_REPO)/bvec/src/lib.rs FORCE
	+$(call if_changed_rule,rustc_o_rs)
$(obj)/iov.o: $(RNVME_REPO)/iov/src/lib.rs $(obj)/bvec.o FORCE
	+$(call if_changed_rule,rustc_o_rs)
$(obj)/bio.o: $(RNVME_REPO)/bio/src/lib.rs $(obj)/bvec.o $(obj)/iov.o FORCE
	+$(call if_changed_rule,rustc_o_rs)
$(obj)/nvme.o: $(RNVME_REPO)/rnvme/src/lib.rs $(obj)/bvec.o $(obj)/bio.o FORCE
	+$(call if_changed_rule,rustc_o_rs)

# ---- bindgen for C helper headers ---------------------------------------------------------------
# Rust declarations of C helpers, generated from a header with the flags the kernel used for its
# own helper bindings (rust/bindings/.bindings_helpers_generated.rs.cmd), so they match C. Types
# are not generated: the declarations name them from `kernel::bindings` (or a module's own
# bindings). $(1): extra bindgen arguments before `--`, $(2): extra clang arguments.
rnvme_kernel_bindgen_flags = \
	flags=$$(sed -n 's/^savedcmd_[^ ]* := .* -- \(.*\); sed .*/\1/p' \
		$(objtree)/rust/bindings/.bindings_helpers_generated.rs.cmd); \
	[ -n "$$flags" ] || { echo "cannot read the kernel's bindgen flags" >&2; exit 1; }

quiet_cmd_glue_bindgen = BINDGEN $@
      cmd_glue_bindgen = \
	$(rnvme_kernel_bindgen_flags); \
	eval $(BINDGEN) $< --blocklist-type "'.*'" --allowlist-var "'RNVME_URING_.*'" \
		--allowlist-function "'rnvme_glue_.*'" --rust-target 1.68 --use-core \
		--with-derive-default --ctypes-prefix ffi --no-layout-tests --no-debug "'.*'" \
		--enable-function-attribute-detection -o $@ -- "$$flags" -I$(rnvme_glue)

# ---- kernel-glue: Rust crate + C helpers ----------------------------------------------------------
rnvme_glue_gen := $(obj)/glue_helpers_generated.rs
export RNVME_GLUE_HELPERS_RS := $(abspath $(rnvme_glue_gen))

$(rnvme_glue_gen): $(rnvme_glue)/helpers.h $(rnvme_glue)/passthru.h $(rnvme_glue)/premap.h FORCE
	$(call if_changed,glue_bindgen)
targets += glue_helpers_generated.rs

$(obj)/kernel_glue.o: $(rnvme_glue)/src/lib.rs $(rnvme_glue_gen) $(obj)/bvec.o $(obj)/iov.o \
		$(obj)/bio.o FORCE
	+$(call if_changed_rule,rustc_o_rs)
$(obj)/glue_helpers.o: $(rnvme_glue)/helpers.c FORCE
	+$(call if_changed_rule,cc_o_c)
# NVMe passthrough helpers (character devices, user requests, io_uring commands); passthru.h is
# included by helpers.h, so its declarations are generated with the others.
$(obj)/glue_passthru.o: $(rnvme_glue)/passthru.c FORCE
	+$(call if_changed_rule,cc_o_c)
# Premapped registered buffers and debugfs counters; reads io_uring's private
# struct io_mapped_ubuf from the kernel source tree this module is built against (premap.c).
CFLAGS_glue_premap.o := -I$(srctree)
$(obj)/glue_premap.o: $(rnvme_glue)/premap.c FORCE
	+$(call if_changed_rule,cc_o_c)
