#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support {
    pub mod ops {
        pub fn temporal_address() -> String {
            std::env::var("TEST_TEMPORAL_ADDRESS").unwrap_or_else(|_| "http://127.0.0.1:7233".into())
        }
    }
}
#[path = "it/dev.rs"]
mod dev;
