# Multi-stage build of the `flow` binary: compile with the Rust toolchain, run on a slim Debian.
# Every path the build reads is copied below; scripts/docker-replay rebuilds from exactly these
# COPY lines without docker (scripts/test runs it), so a path compiled in but not copied fails CI.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY migration migration
COPY proto proto
COPY src src
COPY assets assets
COPY openapi openapi
RUN cargo build --release --locked --bin flow

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/flow /usr/local/bin/flow
# The default database is SQLite in the working directory (`sqlite://flow.db?mode=rwc`): the
# unprivileged user owns it, and it is a volume so the data outlives the container.
RUN mkdir -p /var/lib/flow && chown 65534:65534 /var/lib/flow
WORKDIR /var/lib/flow
VOLUME /var/lib/flow
USER 65534:65534
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/flow"]
CMD ["serve"]
