//! SeaORM entities, one per table, in the shape `sea-orm-cli generate entity` produces.

pub mod bmcs;
pub mod components;
pub mod nvl_domains;
pub mod racks;
