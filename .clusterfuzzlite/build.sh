#!/bin/bash -eu
# Builds every cargo-fuzz target of fuzz/ (fuzz/Cargo.toml's [[bin]]s, as `cargo fuzz list`
# names them) with the sanitizer ClusterFuzzLite asks for, and hands the binaries to it in
# $OUT. Debug assertions stay on: an overflow in the model is a finding.
cd "$SRC/picajit"
cargo fuzz build -O --debug-assertions
release=fuzz/target/x86_64-unknown-linux-gnu/release
for target in $(cargo fuzz list); do
    cp "$release/$target" "$OUT/"
done
