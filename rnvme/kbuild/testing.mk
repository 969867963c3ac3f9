# SPDX-License-Identifier: GPL-2.0
#
# Shared Kbuild fragment: the test-only kernel glue (kernel-glue/testing/: checked memory, a user
# mapping, user-page pins, the kernel's own iterators for differential tests), compiled into the
# including directory. Included after crates.mk by the self-test (rnvme/selftest/Kbuild) and the
# benchmark (rnvme/bench/Kbuild), never by the driver, so rnvme.ko links none of it.
#
# Provides: rnvme_testing_objs (kernel_glue_testing.o glue_testing_helpers.o) and the crate's
# metadata for `$(call rnvme_extern,... kernel_glue_testing)`.

rnvme_glue_testing := $(rnvme_glue)/testing
rnvme_testing_objs := kernel_glue_testing.o glue_testing_helpers.o

# ---- kernel-glue-testing: Rust crate + C helpers ----------------------------------------------------
quiet_cmd_glue_testing_bindgen = BINDGEN $@
      cmd_glue_testing_bindgen = \
	$(rnvme_kernel_bindgen_flags); \
	eval $(BINDGEN) $< --blocklist-type "'.*'" --allowlist-var "''" \
		--allowlist-function "'rnvme_glue_.*'" --rust-target 1.68 --use-core \
		--with-derive-default --ctypes-prefix ffi --no-layout-tests --no-debug "'.*'" \
		--enable-function-attribute-detection -o $@ -- "$$flags" -I$(rnvme_glue_testing)

rnvme_glue_testing_gen := $(obj)/glue_testing_helpers_generated.rs
export RNVME_GLUE_TESTING_HELPERS_RS := $(abspath $(rnvme_glue_testing_gen))

$(rnvme_glue_testing_gen): $(rnvme_glue_testing)/helpers.h FORCE
	$(call if_changed,glue_testing_bindgen)
targets += glue_testing_helpers_generated.rs

RUSTFLAGS_kernel_glue_testing.o := --emit=metadata=$(call rnvme_rmeta,kernel_glue_testing) \
	$(call rnvme_extern,bvec iov bio kernel_glue)
$(obj)/kernel_glue_testing.o: $(rnvme_glue_testing)/src/lib.rs $(rnvme_glue_testing_gen) \
		$(obj)/kernel_glue.o FORCE
	+$(call if_changed_rule,rustc_o_rs)
CFLAGS_glue_testing_helpers.o := -I$(rnvme_glue_testing)
$(obj)/glue_testing_helpers.o: $(rnvme_glue_testing)/helpers.c FORCE
	+$(call if_changed_rule,cc_o_c)
