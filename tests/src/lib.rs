//! Cross-crate tests: end-to-end flows across the platform, the key service and the telephony
//! simulator, and snapshot tests of every shape.

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]
