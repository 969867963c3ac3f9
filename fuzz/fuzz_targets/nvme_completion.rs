#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| iovstack_tests::fuzz::nvme_completion::run(data));
