//! Sets what `--version` says (the commit and the build target): see `build-info`.
fn main() {
    build_info::emit();
}
