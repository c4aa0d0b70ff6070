fn main() {
    // In a campaign's guest syscost is the init (process 1): it measures and powers off.
    if syscost::boot::guest::is_init() {
        syscost::boot::guest::init(syscost::experiments::boots::lava::LAB_CASES);
    }
    std::process::exit(syscost::cli::main());
}
