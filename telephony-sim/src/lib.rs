//! Simulated telephony: call outcomes (connected, busy, no answer, failed, short calls) from a
//! seeded model or from scripted rules, a journal of every dial, and inbound callers.
