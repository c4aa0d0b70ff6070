//! Compiles the C measurement kernels (csrc/) with the system C compiler at -O2: they must have
//! a C compiler's code generation, as the kernel code they re-create does. Also links
//! csrc/tiny_exit.c into a freestanding static executable that `run proc --op exec` embeds,
//! and csrc/tcg_count.c into the QEMU TCG plugin (a shared object) that campaigns embed; the
//! plugin's decoding (csrc/x86_decode.h) is linked in too, for its unit tests.
fn main() {
    println!("cargo:rerun-if-changed=csrc/audit_replica.c");
    println!("cargo:rerun-if-changed=csrc/tiny_exit.c");
    println!("cargo:rerun-if-changed=csrc/tcg_count.c");
    println!("cargo:rerun-if-changed=csrc/x86_decode.h");
    println!("cargo:rerun-if-changed=csrc/x86_decode.c");
    // The plugin's x86 decoding, linked in for its unit tests (src/counters/decode.rs).
    cc::Build::new()
        .file("csrc/x86_decode.c")
        .opt_level(2)
        .warnings(true)
        .compile("x86_decode");
    cc::Build::new()
        .file("csrc/audit_replica.c")
        .opt_level(2)
        .flag_if_supported("-fno-strict-aliasing")
        // Keep each variant a function of its own: identical-code folding would merge the
        // nonstatic variant into the baseline, whose bodies are the same C.
        .flag_if_supported("-fno-ipa-icf")
        .warnings(true)
        .compile("audit_replica");

    // The cc crate builds libraries; an executable is linked by its compiler directly.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let exe = out.join("tiny_exit");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args(["-O2", "-static", "-nostdlib", "-fno-pie", "-no-pie", "-o"])
        .arg(&exe)
        .arg("csrc/tiny_exit.c")
        .status()
        .expect("running the C compiler for csrc/tiny_exit.c");
    assert!(status.success(), "compiling csrc/tiny_exit.c failed");

    let plugin = out.join("tcg_count.so");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args([
            "-O2",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-Wall",
            "-o",
        ])
        .arg(&plugin)
        .arg("csrc/tcg_count.c")
        .status()
        .expect("running the C compiler for csrc/tcg_count.c");
    assert!(status.success(), "compiling csrc/tcg_count.c failed");
}
