//! Cross-crate tests: end-to-end flows across the platform, the key service and the telephony
//! simulator, and snapshot tests of every shape.

#![warn(missing_docs)]
