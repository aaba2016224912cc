# Multi-stage build of the `flow` binary: compile with the Rust toolchain, run on a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY migration migration
COPY proto proto
COPY src src
COPY openapi openapi
RUN cargo build --release --locked --bin flow

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/flow /usr/local/bin/flow
USER 65534:65534
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/flow"]
CMD ["serve"]
