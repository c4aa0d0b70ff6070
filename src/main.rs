fn main() {
    std::process::exit(syscost::cli::main());
}
