//! The `wasmgate` command line; see `wasmgate --help`.

fn main() -> std::process::ExitCode {
    wasmgate::run_cli()
}
