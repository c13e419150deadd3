//! The `picajit` command line; see [`picajit::cli`].

fn main() -> std::process::ExitCode {
    picajit::cli::main()
}
