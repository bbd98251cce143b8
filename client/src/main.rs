//! `redctx`: see [`redctx_client`].

fn main() -> std::process::ExitCode {
    redctx_client::cli::main()
}
