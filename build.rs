//! Compiles the C measurement kernels (csrc/) with the system C compiler at -O2: they must have
//! a C compiler's code generation, as the kernel code they re-create does.
fn main() {
    println!("cargo:rerun-if-changed=csrc/audit_replica.c");
    cc::Build::new()
        .file("csrc/audit_replica.c")
        .opt_level(2)
        .flag_if_supported("-fno-strict-aliasing")
        // Keep each variant a function of its own: identical-code folding would merge the
        // nonstatic variant into the baseline, whose bodies are the same C.
        .flag_if_supported("-fno-ipa-icf")
        .warnings(true)
        .compile("audit_replica");
}
