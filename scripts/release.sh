#!/usr/bin/env bash
# Builds the release archive of mcpyard for this machine:
#   target/dist/mcpyard-VERSION-TARGET.tar.gz   the stripped binary, README, docs/,
#                                               the systemd user unit
#   target/dist/mcpyard-VERSION-TARGET.tar.gz.sha256
# and prints the archive's path, size and checksum. The binary names the
# commit it was built from (`mcpyard --version`).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p mcpyard
bin=target/release/mcpyard
version=$("$bin" --version | awk '{print $2}')
target=$(rustc -vV | sed -n 's/^host: //p')
name="mcpyard-$version-$target"
stage="target/dist/$name"
rm -rf "$stage"
mkdir -p "$stage"
cp "$bin" README.md "$stage/"
cp -r docs "$stage/"
cp contrib/systemd/mcpyard.service "$stage/"
tar -C target/dist -czf "target/dist/$name.tar.gz" "$name"
rm -rf "$stage"
(cd target/dist && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
ls -l "target/dist/$name.tar.gz"
cat "target/dist/$name.tar.gz.sha256"
echo "binary: $(stat -c %s "$bin") bytes; $("$bin" --version)"
