//! Carrier for end-to-end tests and benches.
