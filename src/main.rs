fn main() {
    // A worker (one run of a measurement) goes straight to its work.
    if let Some(status) = syscost::cli::worker() {
        std::process::exit(status);
    }
    // In a campaign's guest syscost is the init (process 1): it measures and powers off.
    if syscost::boot::guest::is_init() {
        syscost::boot::guest::init(syscost::experiments::boots::lava::LAB_CASES);
    }
    std::process::exit(syscost::cli::main());
}
